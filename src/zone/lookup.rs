//! The lookup: a question answered from a [`Snapshot`] — one hash lookup for a name that
//! exists and for a miss; `pods insecure` names and the ExternalName CNAME chase computed per
//! query.

use std::borrow::Cow;
use std::net::IpAddr;

use smallvec::SmallVec;

use super::node::Node;
use super::{
    Answer, External, InlineRecord, Owner, Rcode, Run, RunData, ServedZone, Snapshot,
    ip_from_dashed, names, records, rrset,
};
use crate::codes::rtype;
use crate::config::PodMode;
use crate::name::{self, labels, suffix_offset};

/// How deep a chain of in-zone ExternalName CNAMEs is followed (CoreDNS stops at 8).
const MAX_CNAME_CHAIN: usize = 8;

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
