//! Prepared RRsets: the records of one name and type, already in wire format.
//!
//! Records whose owner is the queried name are stored without their owner: the response
//! writer puts a compression pointer to the question in front of each one, so the answer
//! carries the query's own spelling of the name for free. Records with another owner (SRV
//! and NS glue) are stored whole, owner included.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::name::WireName;
use crate::codes::{class, rtype};

/// The records of one name for one type, in wire format, as a [`Node`](super::node::Node)
/// holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RrSet<'a> {
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

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub(crate) fn rtype(&self) -> u16 {
        self.rtype
    }

    /// Adds one record with `rdata`; records past 65535 are dropped (no message could carry
    /// them).
    pub(crate) fn push(&mut self, rdata: &[u8]) {
        if self.count == u16::MAX {
            return;
        }
        write_rr_header(&mut self.body, self.rtype, self.ttl, rdata.len());
        self.body.extend_from_slice(rdata);
        self.count += 1;
    }

    /// Adds an A or AAAA record for `ip` owned by `owner` to the additional section.
    pub(crate) fn push_extra_address(&mut self, owner: &WireName, ttl: u32, ip: IpAddr) {
        if self.extra_count == u16::MAX {
            return;
        }
        self.extra.extend_from_slice(owner.as_bytes());
        let (rtype, rdata) = address_rdata(ip);
        write_rr_header(&mut self.extra, rtype, ttl, rdata.len());
        self.extra.extend_from_slice(&rdata);
        self.extra_count += 1;
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
    out.extend_from_slice(&rtype.to_be_bytes());
    out.extend_from_slice(&class::IN.to_be_bytes());
    out.extend_from_slice(&ttl.to_be_bytes());
    // Every rdata built here is far below 65535 bytes (at most one name and a few integers).
    out.extend_from_slice(&(rdlen as u16).to_be_bytes());
}

/// The record type and RDATA of an address.
pub(crate) fn address_rdata(ip: IpAddr) -> (u16, Vec<u8>) {
    match ip {
        IpAddr::V4(v4) => (rtype::A, v4.octets().to_vec()),
        IpAddr::V6(v6) => (rtype::AAAA, v6.octets().to_vec()),
    }
}

/// SRV RDATA: priority, weight, port, target (never compressed, RFC 2782).
pub(crate) fn srv_rdata(priority: u16, weight: u16, port: u16, target: &WireName) -> Vec<u8> {
    let mut rdata = Vec::with_capacity(6 + target.as_bytes().len());
    rdata.extend_from_slice(&priority.to_be_bytes());
    rdata.extend_from_slice(&weight.to_be_bytes());
    rdata.extend_from_slice(&port.to_be_bytes());
    rdata.extend_from_slice(target.as_bytes());
    rdata
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
    for label in super::name::labels(qname) {
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
                if text.len() > 1 && text.starts_with('0') {
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
    fn partial_or_odd_reverse_names_are_not_addresses() {
        for text in [
            "96.10.in-addr.arpa.",
            "x.0.96.10.in-addr.arpa.",
            "020.0.96.10.in-addr.arpa.",
            "300.0.96.10.in-addr.arpa.",
            "1.0.ip6.arpa.",
            "web.shop.svc.cluster.local.",
        ] {
            let name = WireName::from_dotted(text).unwrap();
            assert_eq!(address_from_reverse(&name), None, "{text}");
        }
    }
}
