//! The cluster zone: every name the *kubernetes* plugin answers, prepared when a snapshot is
//! built, and the lookup that answers a question from it.
//!
//! [`build`](build::build) turns a [`Cluster`](crate::model::Cluster) and a
//! [`KubernetesConfig`](crate::config::KubernetesConfig) into a [`Snapshot`]: a hash map
//! from lower-case wire name to `Node`, each node holding its RRsets already in wire
//! format. [`Snapshot::lookup`] is then one hash lookup for every name that exists and for
//! every miss; only pod names under `pods insecure` (an infinite set) and the CNAME chase
//! of ExternalName services are computed per query.
//!
//! A block with *k8s_external* also has its external zones in the snapshot
//! ([`Snapshot::external`], built and updated with the cluster zone from the same objects;
//! see `external.rs`); a block without it holds nothing for them.
//!
//! The DNS semantics are CoreDNS's (`plugin/kubernetes`, `plugin/backend_lookup.go`) with
//! one deliberate difference, RFC 8020: a name that exists answers NODATA for the types it
//! lacks, and a name that does not exist is NXDOMAIN for every type.

mod build;
mod external;
mod multicluster;
mod names;
mod node;
mod records;
pub mod rrset;
mod shards;
mod update;
pub mod why;
mod writer;
pub mod zonefile;

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use smallvec::SmallVec;

use crate::codes::rtype;
use crate::name::{self, WireName, labels, suffix_offset};
pub use build::{BuildContext, DNS_SCHEMA_VERSION, build};
pub use external::External;
use node::Node;
pub use records::{trim, trim_cluster};
use rrset::RrSet;
use shards::Sharded;
pub use update::{Applied, Change, Incremental};

use crate::config::PodMode;

type Map<K, V> = HashMap<K, V, ahash::RandomState>;

/// How deep a chain of in-zone ExternalName CNAMEs is followed (CoreDNS stops at 8).
const MAX_CNAME_CHAIN: usize = 8;

/// An immutable view of the cluster zone, swapped in whole. Built whole at the first sync,
/// and then (by [`Incremental`]) as the previous snapshot with the names a change touched
/// rebuilt: the two share every shard of the index that the change did not touch.
#[derive(Debug, Clone)]
pub struct Snapshot {
    zones: Vec<ServedZone>,
    names: names::Names,
    /// Lower-case namespace labels whose `<ip>.<ns>.pod.<zone>` names `pods insecure` answers.
    pod_namespaces: std::sync::Arc<HashSet<Box<[u8]>, ahash::RandomState>>,
    pods: PodMode,
    /// `pods verified`: each client pod address and its namespace (`None` when pods of two
    /// namespaces claim the address), for *autopath*.
    clients: Sharded<(IpAddr, Option<std::sync::Arc<str>>)>,
    ttl: u32,
    serial: u32,
    /// *k8s_external*'s zones, when the block has the plugin.
    external: Option<External>,
}

/// One zone the plugin is authoritative for.
#[derive(Debug, Clone)]
pub struct ServedZone {
    origin: WireName,
    reverse: bool,
    /// A `multicluster` zone: answered from ServiceImports, not Services.
    multicluster: bool,
    soa: Soa,
    /// The labels of the SOA's MNAME and RNAME in front of the origin, in wire format.
    soa_prefixes: (Cow<'static, [u8]>, Cow<'static, [u8]>),
}

/// The cluster zone's SOA names: `ns.dns.<zone>` and `hostmaster.<zone>` (CoreDNS
/// `plugin/kubernetes`).
pub(crate) const CLUSTER_SOA_PREFIXES: (Cow<'static, [u8]>, Cow<'static, [u8]>) = (
    Cow::Borrowed(b"\x02ns\x03dns"),
    Cow::Borrowed(b"\x0ahostmaster"),
);

/// The SOA fields, as CoreDNS writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Soa {
    /// TTL of the SOA record itself: `min(ttl, 300)`.
    pub ttl: u32,
    /// Serial: the time of the last change, monotonic.
    pub serial: u32,
    /// 7200.
    pub refresh: u32,
    /// 1800.
    pub retry: u32,
    /// 86400.
    pub expire: u32,
    /// The negative-caching TTL: the plugin's `ttl`.
    pub minimum: u32,
}

impl Soa {
    /// The SOA of a zone whose records use `ttl`.
    pub fn new(ttl: u32, serial: u32) -> Self {
        Self {
            ttl: ttl.min(300),
            serial,
            refresh: 7200,
            retry: 1800,
            expire: 86400,
            minimum: ttl,
        }
    }

    /// The five integers that end the SOA RDATA.
    pub fn tail(&self) -> [u8; 20] {
        let mut out = [0u8; 20];
        for (index, value) in [
            self.serial,
            self.refresh,
            self.retry,
            self.expire,
            self.minimum,
        ]
        .into_iter()
        .enumerate()
        {
            out[index * 4..index * 4 + 4].copy_from_slice(&value.to_be_bytes());
        }
        out
    }
}

impl ServedZone {
    /// The zone's apex, lower case.
    pub fn origin(&self) -> &WireName {
        &self.origin
    }

    /// Whether this is a reverse (`in-addr.arpa`/`ip6.arpa`) zone.
    pub fn is_reverse(&self) -> bool {
        self.reverse
    }

    /// Whether this is a `multicluster` zone (its Services are ServiceImports).
    pub fn is_multicluster(&self) -> bool {
        self.multicluster
    }

    /// The zone's SOA fields.
    pub fn soa(&self) -> Soa {
        self.soa
    }

    /// The labels of the SOA's MNAME and RNAME in front of the origin, in wire format
    /// (`ns.dns` and `hostmaster` for the cluster zone).
    pub fn soa_prefixes(&self) -> (&[u8], &[u8]) {
        (&self.soa_prefixes.0, &self.soa_prefixes.1)
    }
}

/// The rcode of an authoritative answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rcode {
    /// NOERROR: records, or NODATA when the answer section is empty.
    NoError,
    /// NXDOMAIN: the name does not exist.
    NxDomain,
}

/// Who owns the records of a [`Run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner<'a> {
    /// The name in the question (written as a pointer to it, so in the query's spelling).
    Question,
    /// Another name, in wire format.
    Name(Cow<'a, [u8]>),
    /// The data holds whole records, each with its owner.
    Embedded,
}

/// A run of records: `count` records that share an owner, in wire format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run<'a> {
    /// Who owns them.
    pub owner: Owner<'a>,
    /// How many records `data` holds.
    pub count: u16,
    /// TYPE CLASS TTL RDLENGTH RDATA per record (owner first when [`Owner::Embedded`]).
    /// SRV and PTR targets and embedded owners are stored names: whole, or ending in a
    /// pointer into `holder` (see [`rrset`]'s "names stored once").
    pub data: RunData<'a>,
    /// The name that held the records (lower-case wire), which the pointers of their
    /// stored names point into; empty for records built for the question.
    pub holder: &'a [u8],
}

/// The bytes of a [`Run`]: the zone's own, or records made for the question — in place when
/// they are short (one address, one PTR), so that answering them does not allocate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunData<'a> {
    /// Bytes the snapshot holds.
    Borrowed(&'a [u8]),
    /// Records made for the question.
    Owned(Vec<u8>),
    /// A short record made for the question.
    Inline(InlineRecord),
}

impl std::ops::Deref for RunData<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Self::Borrowed(bytes) => bytes,
            Self::Owned(bytes) => bytes,
            Self::Inline(record) => record.as_bytes(),
        }
    }
}

/// Up to [`InlineRecord::CAPACITY`] bytes held in place.
#[derive(Clone)]
pub struct InlineRecord {
    len: u8,
    bytes: [u8; InlineRecord::CAPACITY],
}

impl InlineRecord {
    /// The most bytes one holds: a record header, a PTR target's first label (at most 63
    /// bytes, and 40 for a dashed IPv6 address) and a pointer.
    pub const CAPACITY: usize = 80;

    fn new() -> Self {
        Self {
            len: 0,
            bytes: [0; Self::CAPACITY],
        }
    }

    /// Appends `bytes`; `None` (and nothing appended) when they do not fit.
    fn push(&mut self, bytes: &[u8]) -> Option<()> {
        let at = usize::from(self.len);
        let end = at + bytes.len();
        self.bytes.get_mut(at..end)?.copy_from_slice(bytes);
        // CAPACITY is below 256.
        self.len = end as u8;
        Some(())
    }

    /// The bytes held.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl PartialEq for InlineRecord {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for InlineRecord {}

impl std::fmt::Debug for InlineRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("InlineRecord")
            .field(&self.as_bytes())
            .finish()
    }
}

impl<'a> Run<'a> {
    pub(crate) fn answers(set: RrSet<'a>) -> Self {
        Self {
            owner: Owner::Question,
            count: set.count,
            data: RunData::Borrowed(set.body),
            holder: set.owner,
        }
    }

    fn extra(set: RrSet<'a>) -> Option<Self> {
        (set.extra_count > 0).then_some(Self {
            owner: Owner::Embedded,
            count: set.extra_count,
            data: RunData::Borrowed(set.extra),
            holder: set.owner,
        })
    }
}

/// The plugin's answer to one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer<'a> {
    /// NOERROR or NXDOMAIN.
    pub rcode: Rcode,
    /// Index of the served zone the name fell in (its SOA goes in negative answers).
    pub zone: usize,
    /// The answer section.
    pub answer: SmallVec<[Run<'a>; 2]>,
    /// The additional section.
    pub additional: SmallVec<[Run<'a>; 1]>,
    /// An ExternalName target outside the zone, for the server to ask and append.
    pub chase: Option<&'a [u8]>,
}

impl<'a> Answer<'a> {
    fn new(rcode: Rcode, zone: usize) -> Self {
        Self {
            rcode,
            zone,
            answer: SmallVec::new(),
            additional: SmallVec::new(),
            chase: None,
        }
    }

    fn from_set(zone: usize, set: RrSet<'a>) -> Self {
        let mut answer = Self::new(Rcode::NoError, zone);
        answer.answer.push(Run::answers(set));
        answer.additional.extend(Run::extra(set));
        answer
    }

    /// Whether this is a negative answer (NXDOMAIN, or NOERROR with no records), which
    /// carries the zone's SOA in the authority section.
    pub fn is_negative(&self) -> bool {
        self.rcode == Rcode::NxDomain || self.answer.is_empty()
    }
}

impl Snapshot {
    /// The zones this snapshot answers for, in configuration order.
    pub fn zones(&self) -> &[ServedZone] {
        &self.zones
    }

    /// *k8s_external*'s zones and names, when the block has the plugin.
    pub fn external(&self) -> Option<&External> {
        self.external.as_ref()
    }

    /// The SOA serial.
    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// The record TTL (`ttl` option).
    pub fn ttl(&self) -> u32 {
        self.ttl
    }

    /// The namespace of the running pod at `ip` (`pods verified` only; host-network and
    /// terminating pods are not clients, and an address two namespaces claim is nobody's).
    pub fn client_namespace(&self, ip: IpAddr) -> Option<&str> {
        self.clients.get(&ip.to_canonical())?.1.as_deref()
    }

    /// Number of names held (including empty non-terminals).
    pub fn name_count(&self) -> usize {
        self.names.len()
    }

    /// The index of the longest served zone that `qname` (lower-case wire) falls in.
    pub fn zone_of(&self, qname: &[u8]) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (index, zone) in self.zones.iter().enumerate() {
            let origin = zone.origin.as_bytes();
            if suffix_offset(qname, origin).is_some()
                && best.is_none_or(|(_, len)| origin.len() > len)
            {
                best = Some((index, origin.len()));
            }
        }
        best.map(|(index, _)| index)
    }

    /// Answers `qtype` for `qname`, a lower-case wire name. `None` when the name is outside
    /// every served zone (the next plugin's business).
    pub fn lookup(&self, qname: &[u8], qtype: u16) -> Option<Answer<'_>> {
        let zone = self.zone_of(qname)?;
        Some(self.answer(zone, qname, qtype, 0))
    }

    fn answer(&self, zone: usize, qname: &[u8], qtype: u16, depth: usize) -> Answer<'_> {
        if let Some(node) = self.names.get(qname) {
            return self.answer_node(zone, qname, node, qtype, depth);
        }
        if let Some(answer) = self.ptr_answer(zone, qname, qtype) {
            return answer;
        }
        if let Some((ip, shape)) = self.names.address(qname) {
            return self.endpoint_answer(zone, ip, shape, qtype);
        }
        if let Some(node) = self
            .srv_alias(zone, qname)
            .and_then(|key| self.names.get(&key[..]))
        {
            return self.answer_node(zone, qname, node, qtype, depth);
        }
        if let Some(ip) = self.insecure_pod(zone, qname) {
            return self.address_answer(zone, ip, self.ttl, qtype);
        }
        if let Some(answer) = self.zonal_fallback(zone, qname, qtype) {
            return answer;
        }
        Answer::new(Rcode::NxDomain, zone)
    }

    /// `zonal`: `<topology-zone>.pin|prefer._zone.<svc>.<ns>.svc.<zone>` for a zone none of
    /// a headless Service's ready endpoints is in (the zones they are in are names of their
    /// own): NODATA under `pin`; under `prefer`, what the Service's name answers for A, AAAA
    /// and SRV, NODATA for other types (CoreDNS `findServices` with `zonePrefer`).
    fn zonal_fallback(&self, zone: usize, qname: &[u8], qtype: u16) -> Option<Answer<'_>> {
        let relative_end = suffix_offset(qname, self.zones[zone].origin.as_bytes())?;
        // The offset of each label in front of the origin.
        let mut offsets: SmallVec<[usize; 8]> = SmallVec::new();
        let mut at = 0;
        for label in labels(&qname[..relative_end]) {
            offsets.push(at);
            at += 1 + label.len();
        }
        let n = offsets.len();
        // At least one zone label, then pin|prefer, _zone, service, namespace, svc.
        if n < 6 {
            return None;
        }
        let label = |index: usize| {
            let start = offsets[index];
            &qname[start + 1..start + 1 + qname[start] as usize]
        };
        if label(n - 1) != b"svc" || label(n - 4) != records::ZONAL_LABEL.as_bytes() {
            return None;
        }
        let prefer = match label(n - 5) {
            b"pin" => false,
            b"prefer" => true,
            _ => return None,
        };
        // The marker exists for a headless Service with ready endpoints under `zonal`.
        self.names.get(&qname[offsets[n - 5]..])?;
        if !prefer || !matches!(qtype, rtype::A | rtype::AAAA | rtype::SRV) {
            return Some(Answer::new(Rcode::NoError, zone));
        }
        let base = self.names.get(&qname[offsets[n - 3]..])?;
        Some(match base.rrset(qtype) {
            Some(set) => Answer::from_set(zone, set),
            None => Answer::new(Rcode::NoError, zone),
        })
    }

    fn answer_node<'s>(
        &'s self,
        zone: usize,
        qname: &[u8],
        node: &'s Node,
        qtype: u16,
        depth: usize,
    ) -> Answer<'s> {
        if let Some(target) = node.cname()
            && matches!(qtype, rtype::A | rtype::AAAA | rtype::TXT)
        {
            return self.chase_cname(zone, qname, node, target, qtype, depth);
        }
        match node.rrset(qtype) {
            Some(set) => Answer::from_set(zone, set),
            None => Answer::new(Rcode::NoError, zone),
        }
    }

    /// A, AAAA and TXT at an ExternalName Service (CoreDNS `plugin.A`, `AAAA`, `TXT`): the
    /// CNAME, then — for an in-zone target — the target's records, or NODATA without the
    /// CNAME when the target has none; an out-of-zone target is left to the server, which
    /// asks it through the rest of the chain (`chase`, CoreDNS's `Upstream.Lookup`).
    fn chase_cname<'s>(
        &'s self,
        zone: usize,
        qname: &[u8],
        node: &'s Node,
        target: &'s [u8],
        qtype: u16,
        depth: usize,
    ) -> Answer<'s> {
        let nodata = Answer::new(Rcode::NoError, zone);
        let Some(cname) = node.rrset(rtype::CNAME) else {
            return nodata;
        };
        let target_lower = target.to_ascii_lowercase();
        if target_lower == qname || depth >= MAX_CNAME_CHAIN {
            return nodata;
        }
        let mut answer = Answer::from_set(zone, cname);
        let zone_origin = self.zones[zone].origin.as_bytes();
        if suffix_offset(&target_lower, zone_origin).is_none() {
            answer.chase = Some(target);
            return answer;
        }
        let next = self.answer(zone, &target_lower, qtype, depth + 1);
        if next.answer.is_empty() {
            return nodata;
        }
        for run in next.answer {
            let owner = match run.owner {
                Owner::Question => Owner::Name(Cow::Borrowed(target)),
                other => other,
            };
            answer.answer.push(Run { owner, ..run });
        }
        answer.additional.extend(next.additional);
        answer.chase = next.chase;
        answer
    }

    /// An endpoint address's PTR kept as the address ([`names`]): its one record, or NODATA
    /// for another type.
    fn ptr_answer(&self, zone: usize, qname: &[u8], qtype: u16) -> Option<Answer<'_>> {
        if !names::Names::may_be_ptr(qname) {
            return None;
        }
        if qtype != rtype::PTR {
            return self
                .names
                .is_ptr(qname)
                .then(|| Answer::new(Rcode::NoError, zone));
        }
        let (data, suffix) = self.names.ptr_answer(qname)?;
        let mut answer = Answer::new(Rcode::NoError, zone);
        answer.answer.push(Run {
            owner: Owner::Question,
            count: 1,
            data,
            holder: suffix,
        });
        Some(answer)
    }

    /// CoreDNS strips one leading underscore from the port and protocol labels, so
    /// `http.tcp.web.shop.svc.<zone>` is `_http._tcp.web.shop.svc.<zone>`. The key of the
    /// underscored form, when `qname` has that shape and lacks an underscore.
    fn srv_alias(&self, zone: usize, qname: &[u8]) -> Option<Vec<u8>> {
        let [port, proto, _service, _namespace, svc] = self.relative_labels(zone, qname)?;
        if svc != b"svc" || (port.starts_with(b"_") && proto.starts_with(b"_")) {
            return None;
        }
        let mut key = Vec::with_capacity(qname.len() + 2);
        for label in [port, proto] {
            if label.starts_with(b"_") {
                key.push(label.len() as u8);
                key.extend_from_slice(label);
            } else {
                key.push(label.len() as u8 + 1);
                key.push(b'_');
                key.extend_from_slice(label);
            }
        }
        let rest = 2 + port.len() + proto.len();
        key.extend_from_slice(&qname[rest..]);
        (key.len() <= name::MAX_NAME_LEN).then_some(key)
    }

    /// Under `pods insecure`, `<a-b-c-d>.<ns>.pod.<zone>` for an existing namespace: the
    /// address the first label spells (CoreDNS `findPods`).
    fn insecure_pod(&self, zone: usize, qname: &[u8]) -> Option<IpAddr> {
        if self.pods != PodMode::Insecure || self.zones[zone].reverse {
            return None;
        }
        let [label, namespace, pod] = self.relative_labels(zone, qname)?;
        if pod != b"pod" || !self.pod_namespaces.contains(namespace) {
            return None;
        }
        ip_from_dashed(label)
    }

    /// The labels of `qname` in front of `zone`'s origin, when there are exactly `N`.
    fn relative_labels<'q, const N: usize>(
        &self,
        zone: usize,
        qname: &'q [u8],
    ) -> Option<[&'q [u8]; N]> {
        let relative_end = suffix_offset(qname, self.zones[zone].origin.as_bytes())?;
        let mut found = [&qname[..0]; N];
        let mut count = 0;
        for label in labels(&qname[..relative_end]) {
            *found.get_mut(count)? = label;
            count += 1;
        }
        (count == N).then_some(found)
    }

    /// An endpoint's address name kept as its address ([`names`]): its A or AAAA record, its
    /// SRV records with their glue, or NODATA for another type — what its node answers.
    fn endpoint_answer<'s>(
        &'s self,
        zone: usize,
        ip: IpAddr,
        shape: names::Shape<'s>,
        qtype: u16,
    ) -> Answer<'s> {
        let ttl = self.names.ttl();
        if qtype != rtype::SRV || !shape.has_srv() {
            return self.address_answer(zone, ip, ttl, qtype);
        }
        // The target and the glue's owner: the name itself, held by the rest.
        let target = names::stored_endpoint_name(ip);
        let mut records = InlineRecord::new();
        let mut owned = Vec::new();
        let mut count = 0;
        for port in shape.ports() {
            let mut record: SmallVec<[u8; 64]> = SmallVec::new();
            record.extend_from_slice(&rrset::rr_header(rtype::SRV, ttl, 6 + target.len()));
            record.extend_from_slice(&[0, 0]);
            record.extend_from_slice(&shape.weight.to_be_bytes());
            record.extend_from_slice(&port.to_be_bytes());
            record.extend_from_slice(&target);
            if owned.is_empty() && records.push(&record).is_none() {
                owned.extend_from_slice(records.as_bytes());
            }
            if !owned.is_empty() {
                owned.extend_from_slice(&record);
            }
            count += 1;
        }
        let data = match owned.is_empty() {
            true => RunData::Inline(records),
            false => RunData::Owned(owned),
        };
        let mut answer = Answer::new(Rcode::NoError, zone);
        answer.answer.push(Run {
            owner: Owner::Question,
            count,
            data,
            holder: shape.rest,
        });
        let (rtype, rdata) = match &ip {
            IpAddr::V4(v4) => (rtype::A, &v4.octets()[..]),
            IpAddr::V6(v6) => (rtype::AAAA, &v6.octets()[..]),
        };
        let mut glue = InlineRecord::new();
        // A stored label and pointer (at most 43 bytes), a header and an address: 69.
        let _ = glue
            .push(&target)
            .and_then(|()| glue.push(&rrset::rr_header(rtype, ttl, rdata.len())))
            .and_then(|()| glue.push(rdata));
        answer.additional.push(Run {
            owner: Owner::Embedded,
            count: 1,
            data: RunData::Inline(glue),
            holder: shape.rest,
        });
        answer
    }

    /// A name holding exactly the A or AAAA record of `ip` with `ttl` (an insecure pod's, or
    /// an endpoint's address name kept as its address, [`names`]): the record, or NODATA
    /// for another type.
    fn address_answer(&self, zone: usize, ip: IpAddr, ttl: u32, qtype: u16) -> Answer<'_> {
        let mut answer = Answer::new(Rcode::NoError, zone);
        let (rtype, octets): (u16, &[u8]) = match &ip {
            IpAddr::V4(v4) => (rtype::A, &v4.octets()[..]),
            IpAddr::V6(v6) => (rtype::AAAA, &v6.octets()[..]),
        };
        if rtype == qtype {
            let mut data = InlineRecord::new();
            // 10 + 16 bytes fit.
            let _ = data
                .push(&rrset::rr_header(rtype, ttl, octets.len()))
                .and_then(|()| data.push(octets));
            answer.answer.push(Run {
                owner: Owner::Question,
                count: 1,
                data: RunData::Inline(data),
                holder: &[],
            });
        }
        answer
    }

    /// Every name of `zone` that holds records, for zone files and transfers, in no
    /// particular order.
    pub(crate) fn nodes_in(&self, zone: usize) -> impl Iterator<Item = Cow<'_, Node>> + '_ {
        self.names
            .nodes()
            .filter(move |node| node.has_records() && self.zone_of(node.name()) == Some(zone))
    }
}

/// A pod label's address, as CoreDNS decodes it: exactly three `-` and no `--` is IPv4,
/// anything else has every `-` turned into `:` and must parse as IPv6. An IPv4-mapped IPv6
/// address answers as IPv4, as Go's `net.IP.To4` makes it.
pub fn ip_from_dashed(label: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(label).ok()?;
    let dashes = text.bytes().filter(|&b| b == b'-').count();
    // The label with its dashes turned into `separator`, in place (a label is at most 63
    // bytes): a pod's name is answered without allocating.
    let mut buffer = [0u8; 63];
    if dashes == 3 && !text.contains("--") {
        return respelled(label, b'.', &mut buffer)?
            .parse::<Ipv4Addr>()
            .ok()
            .map(IpAddr::V4);
    }
    let v6: Ipv6Addr = respelled(label, b':', &mut buffer)?.parse().ok()?;
    Some(match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    })
}

/// `label` with each `-` turned into `separator`, in `buffer`.
fn respelled<'b>(label: &[u8], separator: u8, buffer: &'b mut [u8; 63]) -> Option<&'b str> {
    let out = buffer.get_mut(..label.len())?;
    for (to, &from) in out.iter_mut().zip(label) {
        *to = if from == b'-' { separator } else { from };
    }
    std::str::from_utf8(out).ok()
}

/// The dashed label CoreDNS gives an endpoint without a hostname: `10-244-1-5`, and for
/// IPv6 every `:` as `-` with a `0` after a trailing `-` (`2001-db8--0`).
pub fn dashed_ip(ip: IpAddr) -> String {
    Dashed::of(ip).as_str().to_owned()
}

/// An address as CoreDNS's dashed label spells it ([`dashed_ip`]), made without allocating.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dashed {
    len: u8,
    bytes: [u8; 47],
}

impl Default for Dashed {
    fn default() -> Self {
        Self {
            len: 0,
            bytes: [0; 47],
        }
    }
}

impl Dashed {
    pub(crate) fn of(ip: IpAddr) -> Self {
        use std::fmt::Write as _;
        let mut dashed = Self::default();
        // An address's text is at most 45 bytes.
        let _ = write!(dashed, "{ip}");
        let separator = if ip.is_ipv4() { b'.' } else { b':' };
        for byte in &mut dashed.bytes[..usize::from(dashed.len)] {
            if *byte == separator {
                *byte = b'-';
            }
        }
        if ip.is_ipv6() && dashed.as_bytes().ends_with(b"-") {
            let _ = dashed.write_str("0");
        }
        dashed
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only whole `str`s are ever written in.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

impl std::fmt::Write for Dashed {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let start = usize::from(self.len);
        let end = start + text.len();
        self.bytes
            .get_mut(start..end)
            .ok_or(std::fmt::Error)?
            .copy_from_slice(text.as_bytes());
        self.len = end as u8;
        Ok(())
    }
}

#[cfg(test)]
mod tests;

/// Helpers for tests elsewhere in the crate.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::{ServedZone, Soa};
    use crate::name::WireName;

    /// A served forward zone with a fixed SOA.
    pub(crate) fn zone(origin: &str) -> ServedZone {
        ServedZone {
            origin: WireName::from_dotted(origin).unwrap_or_else(|_| WireName::root()),
            reverse: false,
            multicluster: false,
            soa: Soa::new(30, 1),
            soa_prefixes: super::CLUSTER_SOA_PREFIXES,
        }
    }
}
