//! Prepared RRsets: the records of one name and type, already in wire format.
//!
//! Records whose owner is the queried name are stored without their owner: the response
//! writer puts a compression pointer to the question in front of each one, so the answer
//! carries the query's own spelling of the name for free. Records with another owner (SRV
//! and NS glue) are stored whole, owner included.
//!
//! # Names stored once
//!
//! An SRV target and the owner of its glue are nearly always the name that holds them or a
//! name below one of its suffixes: an endpoint name's SRV points at itself, a headless
//! Service's at `<endpoint>.<its own name>`, `_http._tcp.<svc>`'s at `<endpoint>.<svc>`. Such a
//! name is stored as its labels in front of that suffix and a pointer to it,
//! `0xc000 | (12 + k)` where `k` is where the suffix starts in the holding name: the offset
//! the holding name would have as the question of a message. [`expand_name`] writes it out
//! whole again from the holding name (the [`RrSet::owner`]), so answers are byte for byte
//! what they were with whole names; the zone-file listing decodes the sets inside a message
//! whose question is the holding name, where the pointer is an ordinary one. No other
//! stored name holds a pointer but the SOA's, which points at the question itself and is
//! written as it is, and the target of an endpoint PTR kept as its address (`names.rs`),
//! whose record is made for the question: its dashed label in front of a pointer to the
//! start of its holder, the rest of the target, which the snapshot holds once for the
//! Service.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use smallvec::SmallVec;

use crate::codes::{class, rtype};
use crate::name::WireName;

/// The records of one name for one type, in wire format, as a [`Node`](super::node::Node)
/// holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RrSet<'a> {
    /// The name that holds the set (lower-case wire): where its stored names' pointers
    /// point ([`expand_name`]).
    pub(crate) owner: &'a [u8],
    pub(crate) rtype: u16,
    pub(crate) count: u16,
    /// `count` records without owner: TYPE CLASS TTL RDLENGTH RDATA, back to back.
    pub(crate) body: &'a [u8],
    pub(crate) extra_count: u16,
    /// `extra_count` whole records (owner first) for the additional section.
    pub(crate) extra: &'a [u8],
}

impl RrSet<'_> {
    /// The record type.
    pub fn rtype(&self) -> u16 {
        self.rtype
    }

    /// How many records the set holds.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the set is empty (never true for a set stored in the zone).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Accumulates the records of one RRset.
#[derive(Debug)]
pub(crate) struct RrSetBuilder {
    rtype: u16,
    ttl: u32,
    count: u16,
    body: Vec<u8>,
    extra_count: u16,
    extra: Vec<u8>,
}

impl RrSetBuilder {
    pub(crate) fn new(rtype: u16, ttl: u32) -> Self {
        Self {
            rtype,
            ttl,
            count: 0,
            body: Vec::new(),
            extra_count: 0,
            extra: Vec::new(),
        }
    }

    pub(crate) fn rtype(&self) -> u16 {
        self.rtype
    }

    /// Adds one record already written (TYPE CLASS TTL RDLENGTH RDATA), with the set's TTL;
    /// records past 65535 are dropped (no message could carry them).
    pub(crate) fn push_record(&mut self, record: &[u8]) {
        if self.count == u16::MAX || record.len() < 10 {
            return;
        }
        let at = self.body.len();
        self.body.extend_from_slice(record);
        self.body[at + 4..at + 8].copy_from_slice(&self.ttl.to_be_bytes());
        self.count += 1;
    }

    /// Adds one whole record already written (owner first) to the additional section.
    pub(crate) fn push_extra_record(&mut self, record: &[u8]) {
        if self.extra_count == u16::MAX {
            return;
        }
        self.extra.extend_from_slice(record);
        self.extra_count += 1;
    }

    /// Adds one record with `rdata` (the zone's writers go through
    /// [`NameWriter`](super::writer::NameWriter), which keeps a name's records in one buffer).
    #[cfg(test)]
    pub(crate) fn push(&mut self, rdata: &[u8]) {
        let mut record = Vec::with_capacity(10 + rdata.len());
        write_rr_header(&mut record, self.rtype, self.ttl, rdata.len());
        record.extend_from_slice(rdata);
        self.push_record(&record);
    }

    /// Adds an A or AAAA record for `ip` owned by `owner` to the additional section.
    #[cfg(test)]
    pub(crate) fn push_extra_address(&mut self, owner: &WireName, ttl: u32, ip: IpAddr) {
        let mut record = owner.as_bytes().to_vec();
        let (rtype, rdata) = address_rdata(ip);
        write_rr_header(&mut record, rtype, ttl, rdata.len());
        record.extend_from_slice(&rdata);
        self.push_extra_record(&record);
    }

    pub(crate) fn count(&self) -> u16 {
        self.count
    }

    pub(crate) fn body(&self) -> &[u8] {
        &self.body
    }

    pub(crate) fn extra_count(&self) -> u16 {
        self.extra_count
    }

    pub(crate) fn extra(&self) -> &[u8] {
        &self.extra
    }
}

/// TYPE CLASS TTL RDLENGTH.
pub(crate) fn write_rr_header(out: &mut Vec<u8>, rtype: u16, ttl: u32, rdlen: usize) {
    out.extend_from_slice(&rr_header(rtype, ttl, rdlen));
}

/// TYPE CLASS TTL RDLENGTH, in place.
pub(crate) fn rr_header(rtype: u16, ttl: u32, rdlen: usize) -> [u8; 10] {
    let mut header = [0; 10];
    header[..2].copy_from_slice(&rtype.to_be_bytes());
    header[2..4].copy_from_slice(&class::IN.to_be_bytes());
    header[4..8].copy_from_slice(&ttl.to_be_bytes());
    // Every rdata built here is far below 65535 bytes (at most one name and a few integers).
    header[8..].copy_from_slice(&(rdlen as u16).to_be_bytes());
    header
}

/// The TTL of a record written by [`write_rr_header`] and its RDATA (0 if it is cut short).
pub(crate) fn record_ttl(record: &[u8]) -> u32 {
    match record.get(4..8) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// The record type and RDATA of an address.
pub(crate) fn address_rdata(ip: IpAddr) -> (u16, Vec<u8>) {
    match ip {
        IpAddr::V4(v4) => (rtype::A, v4.octets().to_vec()),
        IpAddr::V6(v6) => (rtype::AAAA, v6.octets().to_vec()),
    }
}

/// SRV RDATA: priority, weight, port, target (never compressed on the wire, RFC 2782).
pub(crate) fn srv_rdata(priority: u16, weight: u16, port: u16, target: &WireName) -> Vec<u8> {
    srv_rdata_stored(priority, weight, port, target.as_bytes())
}

/// [`srv_rdata`] with the target as stored ([`stored_name`]).
pub(crate) fn srv_rdata_stored(priority: u16, weight: u16, port: u16, target: &[u8]) -> Vec<u8> {
    let mut rdata = Vec::with_capacity(6 + target.len());
    rdata.extend_from_slice(&priority.to_be_bytes());
    rdata.extend_from_slice(&weight.to_be_bytes());
    rdata.extend_from_slice(&port.to_be_bytes());
    rdata.extend_from_slice(target);
    rdata
}

/// The offset a holding name has as the question of a message, which a stored name's
/// pointer adds to the suffix's offset in it.
const QUESTION_AT: usize = 12;

/// `name` as a set held by `holder` stores it: its labels in front of the longest suffix of
/// `holder` it ends with (at a label boundary of both), then a pointer to that suffix; the
/// whole name when they share no more than the root.
pub(crate) fn stored_name(name: &WireName, holder: &WireName) -> SmallVec<[u8; 64]> {
    let name = name.as_bytes();
    let holder = holder.as_bytes();
    let mut suffix_at = 0;
    while let Some(&len) = holder.get(suffix_at) {
        if len == 0 {
            break;
        }
        let suffix = &holder[suffix_at..];
        if let Some(prefix) = name.len().checked_sub(suffix.len())
            && &name[prefix..] == suffix
            && is_label_start(name, prefix)
        {
            let mut out = SmallVec::from_slice(&name[..prefix]);
            out.extend_from_slice(&(0xc000 | (QUESTION_AT + suffix_at) as u16).to_be_bytes());
            return out;
        }
        suffix_at += 1 + usize::from(len);
    }
    SmallVec::from_slice(name)
}

fn is_label_start(name: &[u8], at: usize) -> bool {
    let mut i = 0;
    while i < at {
        i += 1 + usize::from(name[i]);
    }
    i == at
}

/// Writes the stored name at the start of `stored` (whole, or labels and a pointer into
/// `holder`, [`stored_name`]) whole at the end of `out`; the stored length, or `None` when
/// `stored` does not start with a stored name.
pub(crate) fn expand_name(stored: &[u8], holder: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let mut at = 0;
    loop {
        let len = usize::from(*stored.get(at)?);
        match len {
            0 => {
                out.extend_from_slice(&stored[..=at]);
                return Some(at + 1);
            }
            1..=63 => at += 1 + len,
            0xc0..=0xff => {
                let low = usize::from(*stored.get(at + 1)?);
                let suffix = (((len & 0x3f) << 8) | low).checked_sub(QUESTION_AT)?;
                out.extend_from_slice(&stored[..at]);
                out.extend_from_slice(holder.get(suffix..)?);
                return Some(at + 2);
            }
            _ => return None,
        }
    }
}

/// TXT RDATA of one character-string.
pub(crate) fn txt_rdata(text: &str) -> Vec<u8> {
    let bytes = &text.as_bytes()[..text.len().min(255)];
    let mut rdata = Vec::with_capacity(1 + bytes.len());
    rdata.push(bytes.len() as u8);
    rdata.extend_from_slice(bytes);
    rdata
}

/// The reverse-lookup name of an address: `4.3.2.1.in-addr.arpa.` or 32 nibbles under
/// `ip6.arpa.`.
pub fn reverse_name(ip: IpAddr) -> WireName {
    let mut labels: Vec<String> = Vec::with_capacity(34);
    match ip {
        IpAddr::V4(v4) => {
            labels.extend(v4.octets().iter().rev().map(u8::to_string));
            labels.extend(["in-addr".to_owned(), "arpa".to_owned()]);
        }
        IpAddr::V6(v6) => {
            for byte in v6.octets().iter().rev() {
                labels.push(format!("{:x}", byte & 0x0f));
                labels.push(format!("{:x}", byte >> 4));
            }
            labels.extend(["ip6".to_owned(), "arpa".to_owned()]);
        }
    }
    // At most 34 labels of one to seven bytes: always a valid name.
    WireName::from_labels(labels.iter().map(String::as_str)).unwrap_or_else(|_| WireName::root())
}

/// The address a reverse-lookup name stands for, if it is a complete one.
pub fn address_from_reverse(name: &WireName) -> Option<IpAddr> {
    address_of_reverse_wire(&name.as_bytes().to_ascii_lowercase())
}

/// The address a complete reverse name (lower case, wire) stands for, without allocating.
pub(crate) fn address_of_reverse_wire(qname: &[u8]) -> Option<IpAddr> {
    let mut labels: [&[u8]; 34] = [&[]; 34];
    let mut count = 0;
    for label in crate::name::labels(qname) {
        if count == labels.len() {
            return None;
        }
        labels[count] = label;
        count += 1;
    }
    match &labels[..count] {
        [d, c, b, a, b"in-addr", b"arpa"] => {
            let octet = |label: &[u8]| -> Option<u8> {
                let text = std::str::from_utf8(label).ok()?;
                // Digits only (Rust's parse would take `+5`), and no leading zero.
                if !text.bytes().all(|b| b.is_ascii_digit())
                    || (text.len() > 1 && text.starts_with('0'))
                {
                    return None;
                }
                text.parse().ok()
            };
            Some(IpAddr::V4(Ipv4Addr::new(
                octet(a)?,
                octet(b)?,
                octet(c)?,
                octet(d)?,
            )))
        }
        [nibbles @ .., b"ip6", b"arpa"] if nibbles.len() == 32 => {
            let mut octets = [0u8; 16];
            for (index, label) in nibbles.iter().enumerate() {
                let [digit] = label else { return None };
                let value = (*digit as char).to_digit(16)? as u8;
                let byte = 15 - index / 2;
                octets[byte] |= if index % 2 == 0 { value } else { value << 4 };
            }
            Some(IpAddr::V6(Ipv6Addr::from(octets)))
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reverse_names_round_trip() {
        for text in ["10.96.0.20", "0.0.0.0", "fd00:10:96::50", "2001:db8::1"] {
            let ip: IpAddr = text.parse().unwrap();
            let name = reverse_name(ip);
            assert_eq!(address_from_reverse(&name), Some(ip), "{text} via {name}");
        }
        assert_eq!(
            reverse_name("10.96.0.20".parse().unwrap()).to_string(),
            "20.0.96.10.in-addr.arpa."
        );
        assert!(
            reverse_name("fd00::1".parse().unwrap())
                .to_string()
                .starts_with("1.0.0.0.0.0.0.0.")
        );
    }

    #[test]
    fn stored_names_point_into_their_holder_and_expand_whole() {
        let name = |dotted: &str| WireName::from_dotted(dotted).unwrap();
        let base = name("web.shop.svc.cluster.local.");
        let srv = name("_http._tcp.web.shop.svc.cluster.local.");
        let endpoint = name("10-244-1-5.web.shop.svc.cluster.local.");
        let elsewhere = name("example.com.");
        let cases = [
            // (name, holder, labels kept in front of the pointer, suffix offset in holder)
            (&endpoint, &endpoint, 0, Some(0)),
            (&endpoint, &base, 1, Some(0)),
            (&endpoint, &srv, 1, Some(11)),
            (&base, &srv, 0, Some(11)),
            // Only the zone in common: `10-244-1-5.web.shop.svc` in front of it.
            (&endpoint, &name("other.cluster.local."), 4, Some(6)),
            (&elsewhere, &base, 2, None),
        ];
        for (stored_of, holder, kept, suffix) in cases {
            let stored = stored_name(stored_of, holder);
            let mut at = 0;
            for _ in 0..kept {
                at += 1 + usize::from(stored[at]);
            }
            match suffix {
                Some(k) => assert_eq!(
                    &stored[at..],
                    &(0xc000u16 | (12 + k) as u16).to_be_bytes(),
                    "{stored_of} in {holder}"
                ),
                None => assert_eq!(&stored[..], stored_of.as_bytes()),
            }
            let mut out = vec![0xaa];
            let mut tail = stored.to_vec();
            tail.extend_from_slice(b"rest");
            assert_eq!(
                expand_name(&tail, holder.as_bytes(), &mut out),
                Some(stored.len())
            );
            assert_eq!(&out[1..], stored_of.as_bytes(), "{stored_of} in {holder}");
        }
        // A label that only looks like the holder's suffix is not one.
        let stored = stored_name(&name("xweb.shop.svc.cluster.local."), &base);
        assert_eq!(
            stored.len(),
            5 + 2,
            "xweb and a pointer to shop.svc.cluster.local"
        );
        let mut out = Vec::new();
        assert_eq!(expand_name(&[0xc0, 0x05], base.as_bytes(), &mut out), None);
        assert_eq!(expand_name(&[3, b'a'], base.as_bytes(), &mut out), None);
    }

    #[test]
    fn partial_or_odd_reverse_names_are_not_addresses() {
        for text in [
            "96.10.in-addr.arpa.",
            "x.0.96.10.in-addr.arpa.",
            "020.0.96.10.in-addr.arpa.",
            "300.0.96.10.in-addr.arpa.",
            // An octet in digits only.
            "+5.1.244.10.in-addr.arpa.",
            "05.1.244.10.in-addr.arpa.",
            "5.1.244.256.in-addr.arpa.",
            "5.1.2 4.10.in-addr.arpa.",
            "1.0.ip6.arpa.",
            "web.shop.svc.cluster.local.",
        ] {
            let name = WireName::from_dotted(text).unwrap();
            assert_eq!(address_from_reverse(&name), None, "{text}");
        }
    }
}
