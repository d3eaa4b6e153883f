//! One zone of the *file* plugin, read from its file, and CoreDNS's lookup in it
//! (`plugin/file/lookup.go`): what goes in the answer, authority and additional sections.
//!
//! As CoreDNS: the names from the apex down to the question are walked, and the first with
//! NS records (below the apex) is a delegation: its NS records in authority, their glue (A
//! and AAAA of NS targets below the cut) in additional, not authoritative. A name with a
//! CNAME answers it and the chain is followed inside the zone (at most 8 more); a target the
//! zone does not hold is asked through the server (CoreDNS's upstream). A name without the
//! type is NODATA, one that does not exist NXDOMAIN (NOERROR for an empty non-terminal),
//! both with the SOA in authority; a positive answer has the apex NS records in authority
//! and, for MX, SRV, SVCB and HTTPS, the A and AAAA records of in-zone targets in
//! additional. A wildcard one label below the closest existing name answers for names that
//! do not exist (its records take the question's name), unless an empty non-terminal lies
//! closer (RFC 4592). The apex's SOA and NS answer SOA and NS questions there. A DNAME above
//! the question (RFC 6672) answers with itself and a CNAME it makes for the question, which
//! is followed as any CNAME.

use std::collections::{HashMap, HashSet};

use hickory_proto::rr::rdata::CNAME;
use hickory_proto::rr::{Name, RData, Record, RecordType};

/// How many more CNAMEs are followed inside the zone after the first (CoreDNS's).
const MAX_CNAMES: usize = 8;

/// What a lookup came to (CoreDNS's `Result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// An answer (or an empty non-terminal: NOERROR without records).
    Success,
    /// The name exists without the type.
    NoData,
    /// The name does not exist.
    NameError,
    /// The name is below a zone cut.
    Delegation,
    /// The zone cannot answer: a DNAME substitution that loops on itself or makes a name
    /// too long (CNAME loops end after [`MAX_CNAMES`]).
    ServerFailure,
}

/// The sections of a reply.
#[derive(Debug)]
pub(crate) struct Found {
    pub(crate) answer: Vec<Record>,
    pub(crate) authority: Vec<Record>,
    pub(crate) additional: Vec<Record>,
    pub(crate) outcome: Outcome,
    /// The last CNAME's target when the zone does not hold it: asked through the server.
    pub(crate) external: Option<Name>,
}

impl Found {
    fn new(answer: Vec<Record>, authority: Vec<Record>, outcome: Outcome) -> Self {
        Self {
            answer,
            authority,
            additional: Vec::new(),
            outcome,
            external: None,
        }
    }
}

/// The records of one name, by type, in file order.
#[derive(Debug, Default)]
struct Node {
    sets: Vec<(RecordType, Vec<Record>)>,
}

impl Node {
    fn get(&self, rtype: RecordType) -> &[Record] {
        self.sets
            .iter()
            .find(|(t, _)| *t == rtype)
            .map_or(&[], |(_, records)| records.as_slice())
    }

    fn insert(&mut self, record: Record) {
        let rtype = record.record_type();
        match self.sets.iter_mut().find(|(t, _)| *t == rtype) {
            Some((_, records)) => {
                if !records.iter().any(|r| r.data == record.data) {
                    records.push(record);
                }
            }
            None => self.sets.push((rtype, vec![record])),
        }
    }
}

/// A zone read from its file.
#[derive(Debug)]
pub(crate) struct Zone {
    origin: Name,
    soa: Record,
    ns: Vec<Record>,
    nodes: HashMap<Name, Node>,
    /// Every name strictly above a node, down from the apex: where a name has descendants
    /// (an empty non-terminal when it is not a node itself).
    above: HashSet<Name>,
}

/// The target of a DNAME record (kept as wire data, which hickory-proto does not read).
fn dname_target(record: &Record) -> Option<Name> {
    let RData::Unknown { code, rdata } = &record.data else {
        return None;
    };
    if *code != RecordType::DNAME {
        return None;
    }
    let mut labels = Vec::new();
    let mut rest = rdata.anything.as_slice();
    while let Some((&len, after)) = rest.split_first() {
        if len == 0 {
            return Name::from_labels(labels).ok();
        }
        let label = after.get(..usize::from(len))?;
        labels.push(label);
        rest = &after[usize::from(len)..];
    }
    None
}

/// The name of an RR's data that additional processing or a chase follows.
fn target(data: &RData) -> Option<&Name> {
    match data {
        RData::CNAME(cname) => Some(&cname.0),
        RData::MX(mx) => Some(&mx.exchange),
        RData::SRV(srv) => Some(&srv.target),
        RData::SVCB(svcb) => Some(&svcb.target_name),
        RData::HTTPS(https) => Some(&https.0.target_name),
        _ => None,
    }
}

impl Zone {
    /// The zone `origin` (lower case) of `records`: those outside it are dropped; the SOA
    /// must be there.
    pub(crate) fn new(origin: &Name, records: Vec<Record>) -> Result<Self, String> {
        let origin = origin.to_lowercase();
        let mut soa = None;
        let mut ns = Vec::new();
        let mut nodes: HashMap<Name, Node> = HashMap::new();
        for mut record in records {
            record.name = record.name.to_lowercase();
            if !origin.zone_of(&record.name) {
                continue;
            }
            let at_apex = record.name == origin;
            match record.record_type() {
                RecordType::SOA if at_apex => soa = Some(record),
                RecordType::NS if at_apex => {
                    if !ns.iter().any(|r: &Record| r.data == record.data) {
                        ns.push(record);
                    }
                }
                _ => nodes.entry(record.name.clone()).or_default().insert(record),
            }
        }
        let Some(soa) = soa else {
            return Err(format!("has no SOA record for origin {origin}"));
        };
        let mut above = HashSet::new();
        for name in nodes.keys() {
            let mut parent = name.base_name();
            while origin.zone_of(&parent) && above.insert(parent.clone()) && parent != origin {
                parent = parent.base_name();
            }
        }
        Ok(Self {
            origin,
            soa,
            ns,
            nodes,
            above,
        })
    }

    /// The SOA's serial.
    pub(crate) fn serial(&self) -> u32 {
        match &self.soa.data {
            RData::SOA(soa) => soa.serial,
            _ => 0,
        }
    }

    fn soa(&self) -> Vec<Record> {
        vec![self.soa.clone()]
    }

    /// The answer to `qname` (lower case, in the zone) and `qtype`.
    pub(crate) fn lookup(&self, qname: &Name, qtype: RecordType) -> Found {
        if *qname == self.origin {
            match qtype {
                RecordType::SOA => {
                    return Found::new(self.soa(), self.ns.clone(), Outcome::Success);
                }
                RecordType::NS => {
                    let mut found = Found::new(self.ns.clone(), Vec::new(), Outcome::Success);
                    found.additional = self.glue(&self.ns);
                    return found;
                }
                _ => {}
            }
        }
        let apex = usize::from(self.origin.num_labels());
        let labels = usize::from(qname.num_labels());
        // The deepest wildcard met (owner, and its node unless it is an empty non-terminal).
        let mut wildcard: Option<(Name, Option<&Node>)> = None;
        for depth in apex..=labels {
            let name = qname.trim_to(depth);
            match self.nodes.get(&name) {
                Some(node) => {
                    if name != *qname
                        && let Some(dname) = node.get(RecordType::DNAME).first()
                    {
                        return self.substitute(dname, &name, qname, qtype);
                    }
                    if depth == apex {
                        continue;
                    }
                    if let Some(found) = self.delegation(node, &name, qname, qtype) {
                        return found;
                    }
                }
                None if depth == apex => {}
                None => {
                    let star = name.clone().into_wildcard();
                    if let Some(node) = self.nodes.get(&star) {
                        wildcard = Some((star, Some(node)));
                    } else if self.above.contains(&star) {
                        wildcard = Some((star, None));
                    }
                }
            }
        }
        if let Some(node) = self.nodes.get(qname) {
            return self.answer_at(node, qname, qtype);
        }
        if *qname == self.origin {
            return Found::new(Vec::new(), self.soa(), Outcome::NoData);
        }
        if let Some((star, node)) = wildcard
            && !self.closer_empty_non_terminal(qname, &star)
        {
            let Some(node) = node else {
                return Found::new(Vec::new(), self.soa(), Outcome::NoData);
            };
            return self.answer_at(node, qname, qtype);
        }
        // An empty non-terminal: NOERROR, as CoreDNS answers it.
        let outcome = if self.above.contains(qname) {
            Outcome::Success
        } else {
            Outcome::NameError
        };
        Found::new(Vec::new(), self.soa(), outcome)
    }

    /// The answer from `node`, the question's (or the wildcard's that stands for it: its
    /// records take `qname`).
    fn answer_at(&self, node: &Node, qname: &Name, qtype: RecordType) -> Found {
        let owned = |records: &[Record]| -> Vec<Record> {
            records
                .iter()
                .map(|record| {
                    let mut record = record.clone();
                    record.name = qname.clone();
                    record
                })
                .collect()
        };
        let cname = node.get(RecordType::CNAME);
        if !cname.is_empty() && qtype != RecordType::CNAME {
            return self.follow(owned(cname), qtype);
        }
        let records = node.get(qtype);
        if records.is_empty() {
            return Found::new(Vec::new(), self.soa(), Outcome::NoData);
        }
        let answer = owned(records);
        let mut found = Found::new(Vec::new(), self.ns.clone(), Outcome::Success);
        found.additional = self.additional(&answer);
        found.answer = answer;
        found
    }

    /// The answer of `dname`, the DNAME at `owner` above `qname`: itself, and the CNAME it
    /// makes for `qname`, followed (RFC 6672). A substitution that changes nothing, or makes
    /// a name too long, is a server failure (as CoreDNS's).
    fn substitute(&self, dname: &Record, owner: &Name, qname: &Name, qtype: RecordType) -> Found {
        let failure = || Found::new(Vec::new(), Vec::new(), Outcome::ServerFailure);
        let Some(target) = dname_target(dname) else {
            return failure();
        };
        let keep = usize::from(qname.num_labels()) - usize::from(owner.num_labels());
        let Some(new) = Name::from_labels(qname.iter().take(keep))
            .ok()
            .and_then(|prefix| prefix.append_domain(&target).ok())
        else {
            return failure();
        };
        if new == *qname {
            return failure();
        }
        let cname = Record::from_rdata(qname.clone(), dname.ttl, RData::CNAME(CNAME(new)));
        let mut found = if qtype == RecordType::CNAME {
            Found::new(vec![cname], self.ns.clone(), Outcome::Success)
        } else {
            self.follow(vec![cname], qtype)
        };
        found.answer.insert(0, dname.clone());
        found
    }

    /// A referral at `node` (`name`, on the way to `qname`), when it has NS records; a DS
    /// question at the cut itself is the parent's to answer.
    fn delegation(
        &self,
        node: &Node,
        name: &Name,
        qname: &Name,
        qtype: RecordType,
    ) -> Option<Found> {
        let ns = node.get(RecordType::NS);
        if ns.is_empty() || (qtype == RecordType::DS && name == qname) {
            return None;
        }
        let mut found = Found::new(Vec::new(), ns.to_vec(), Outcome::Delegation);
        found.additional = self.glue(ns);
        Some(found)
    }

    /// The first zone cut between the apex and `name`.
    fn cut(&self, name: &Name, qtype: RecordType) -> Option<Found> {
        if !self.origin.zone_of(name) {
            return None;
        }
        let apex = usize::from(self.origin.num_labels());
        (apex + 1..=usize::from(name.num_labels())).find_map(|depth| {
            let at = name.trim_to(depth);
            self.delegation(self.nodes.get(&at)?, &at, name, qtype)
        })
    }

    /// Follows the CNAMEs of `answer` inside the zone (CoreDNS's `externalLookup`).
    fn follow(&self, mut answer: Vec<Record>, qtype: RecordType) -> Found {
        let mut next = answer.first().and_then(|r| target(&r.data)).cloned();
        for _ in 0..=MAX_CNAMES {
            let Some(name) = next.take().map(|name| name.to_lowercase()) else {
                break;
            };
            if let Some(mut cut) = self.cut(&name, qtype) {
                cut.answer = answer;
                return cut;
            }
            let node = self.nodes.get(&name);
            let external =
                qtype == RecordType::NS || (qtype == RecordType::SOA && name == self.origin);
            let Some(node) = node.filter(|_| !external) else {
                let mut found = Found::new(answer, self.ns.clone(), Outcome::Success);
                found.external = Some(name);
                return found;
            };
            let cname = node.get(RecordType::CNAME);
            if !cname.is_empty() {
                answer.extend_from_slice(cname);
                next = target(&cname[0].data).cloned();
                continue;
            }
            answer.extend_from_slice(node.get(qtype));
            break;
        }
        let mut found = Found::new(Vec::new(), self.ns.clone(), Outcome::Success);
        found.additional = self.additional(&answer);
        found.answer = answer;
        found
    }

    /// Whether an empty non-terminal lies between the wildcard `star`'s parent and `qname`:
    /// then it, not the wildcard, is the closest encloser (RFC 4592).
    fn closer_empty_non_terminal(&self, qname: &Name, star: &Name) -> bool {
        let parent = star.base_name();
        let mut name = qname.base_name();
        while name != parent && parent.zone_of(&name) {
            if self.above.contains(&name) {
                return true;
            }
            name = name.base_name();
        }
        false
    }

    /// The A and AAAA records of `name`, when the zone has it.
    fn addresses(&self, name: &Name, out: &mut Vec<Record>) {
        if let Some(node) = self.nodes.get(&name.to_lowercase()) {
            out.extend_from_slice(node.get(RecordType::A));
            out.extend_from_slice(node.get(RecordType::AAAA));
        }
    }

    /// Glue for `ns`: the addresses of targets below their NS owner.
    fn glue(&self, ns: &[Record]) -> Vec<Record> {
        let mut glue = Vec::new();
        for record in ns {
            if let RData::NS(target) = &record.data
                && record.name.zone_of(&target.0)
            {
                self.addresses(&target.0, &mut glue);
            }
        }
        glue
    }

    /// Additional section processing: the addresses of in-zone MX, SRV, SVCB and HTTPS
    /// targets in `answer`, each target once.
    fn additional(&self, answer: &[Record]) -> Vec<Record> {
        let mut seen: Vec<Name> = Vec::new();
        let mut extra = Vec::new();
        for record in answer {
            if matches!(record.data, RData::CNAME(_)) {
                continue;
            }
            let Some(name) = target(&record.data) else {
                continue;
            };
            if !self.origin.zone_of(name) || seen.contains(name) {
                continue;
            }
            seen.push(name.clone());
            self.addresses(name, &mut extra);
        }
        extra
    }
}
