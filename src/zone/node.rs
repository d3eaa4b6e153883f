//! One name of the zone, packed: its lower-case wire name, its CNAME target (an ExternalName
//! Service's) and its RRsets in one allocation.
//!
//! A zone of a large cluster is hundreds of thousands of small names (an A record, a PTR):
//! kept as a name, a vector of sets and a buffer per set, each name cost four allocations
//! and about 290 bytes. Packed, it is one allocation holding the bytes an answer copies,
//! and the index stores nothing else.
//!
//! ```text
//! name length (1) | name | CNAME length (1, 0: none) | CNAME | set count (1)
//! per set: type (2) | records (2) | additional records (2) | body length (4) | extra length (4)
//! per set, in the same order: body | extra
//! ```

use std::fmt;

use super::rrset::{RrSet, RrSetBuilder};
use super::shards::Keyed;
use crate::name::WireName;

/// The bytes of one set's header.
const SET_HEADER: usize = 14;

/// One name and its records (see the [module](self) documentation for the layout).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Node(Box<[u8]>);

impl Node {
    /// A name without records: an empty non-terminal.
    pub(crate) fn empty(name: &[u8]) -> Self {
        Self::pack(name, None, &[])
    }

    /// Packs `name` (lower-case wire, at most 255 bytes), its CNAME target and its sets (in
    /// type order, none empty).
    pub(crate) fn pack(name: &[u8], cname: Option<&[u8]>, sets: &[RrSetBuilder]) -> Self {
        let cname = cname.unwrap_or_default();
        let data: usize = sets
            .iter()
            .map(|set| SET_HEADER + set.body().len() + set.extra().len())
            .sum();
        let mut bytes = Vec::with_capacity(3 + name.len() + cname.len() + data);
        // Wire names and so CNAME targets are at most 255 bytes; a node holds a handful of
        // types.
        bytes.push(name.len() as u8);
        bytes.extend_from_slice(name);
        bytes.push(cname.len() as u8);
        bytes.extend_from_slice(cname);
        bytes.push(sets.len() as u8);
        for set in sets {
            bytes.extend_from_slice(&set.rtype().to_be_bytes());
            bytes.extend_from_slice(&set.count().to_be_bytes());
            bytes.extend_from_slice(&set.extra_count().to_be_bytes());
            bytes.extend_from_slice(&(set.body().len() as u32).to_be_bytes());
            bytes.extend_from_slice(&(set.extra().len() as u32).to_be_bytes());
        }
        for set in sets {
            bytes.extend_from_slice(set.body());
            bytes.extend_from_slice(set.extra());
        }
        Self(bytes.into_boxed_slice())
    }

    /// The name, lower-case wire format.
    pub(crate) fn name(&self) -> &[u8] {
        let len = self.0[0] as usize;
        &self.0[1..1 + len]
    }

    fn cname_at(&self) -> usize {
        1 + self.0[0] as usize
    }

    /// For an ExternalName Service: the CNAME target, followed for A, AAAA and TXT.
    pub(crate) fn cname(&self) -> Option<&[u8]> {
        let at = self.cname_at();
        let len = self.0[at] as usize;
        (len > 0).then(|| &self.0[at + 1..at + 1 + len])
    }

    /// The RRsets, in type order.
    pub(crate) fn rrsets(&self) -> RrSets<'_> {
        let cname_at = self.cname_at();
        let count_at = cname_at + 1 + self.0[cname_at] as usize;
        let count = self.0[count_at] as usize;
        let headers = count_at + 1;
        RrSets {
            owner: self.name(),
            bytes: &self.0,
            header: headers,
            end: headers + count * SET_HEADER,
            data: headers + count * SET_HEADER,
        }
    }

    /// The RRset of `rtype`.
    pub(crate) fn rrset(&self, rtype: u16) -> Option<RrSet<'_>> {
        self.rrsets().find(|set| set.rtype == rtype)
    }

    /// Whether the name holds records (an empty non-terminal does not).
    pub(crate) fn has_records(&self) -> bool {
        let sets = self.rrsets();
        sets.header != sets.end
    }
}

impl Keyed for Node {
    type Key = [u8];
    fn key(&self) -> &[u8] {
        self.name()
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("Node");
        out.field(
            "name",
            &WireName::from_wire_unchecked(self.name().to_vec()).to_string(),
        );
        if let Some(cname) = self.cname() {
            out.field(
                "cname",
                &WireName::from_wire_unchecked(cname.to_vec()).to_string(),
            );
        }
        out.field("rrsets", &self.rrsets().collect::<Vec<_>>());
        out.finish()
    }
}

/// The RRsets of a [`Node`].
#[derive(Debug, Clone)]
pub(crate) struct RrSets<'a> {
    /// The node's name.
    owner: &'a [u8],
    bytes: &'a [u8],
    /// The next set's header.
    header: usize,
    /// Where the headers end.
    end: usize,
    /// The next set's body.
    data: usize,
}

impl<'a> Iterator for RrSets<'a> {
    type Item = RrSet<'a>;

    fn next(&mut self) -> Option<RrSet<'a>> {
        if self.header >= self.end {
            return None;
        }
        let h = &self.bytes[self.header..self.header + SET_HEADER];
        let u16_at = |at: usize| u16::from_be_bytes([h[at], h[at + 1]]);
        let u32_at = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        let body_len = u32_at(6) as usize;
        let extra_len = u32_at(10) as usize;
        let body_at = self.data;
        let extra_at = body_at + body_len;
        self.header += SET_HEADER;
        self.data = extra_at + extra_len;
        Some(RrSet {
            owner: self.owner,
            rtype: u16_at(0),
            count: u16_at(2),
            body: &self.bytes[body_at..extra_at],
            extra_count: u16_at(4),
            extra: &self.bytes[extra_at..self.data],
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::codes::rtype;

    #[test]
    fn packs_and_reads_back_every_part() {
        let name = WireName::from_dotted("web.shop.svc.cluster.local.").unwrap();
        let target = WireName::from_dotted("example.com.").unwrap();
        let mut a = RrSetBuilder::new(rtype::A, 30);
        a.push(&[10, 0, 0, 1]);
        a.push(&[10, 0, 0, 2]);
        let mut srv = RrSetBuilder::new(rtype::SRV, 30);
        srv.push(&[0, 0, 0, 1, 0, 80, 0]);
        srv.push_extra_address(&name, 30, [10, 0, 0, 1].into());
        let node = Node::pack(name.as_bytes(), Some(target.as_bytes()), &[a, srv]);
        assert_eq!(node.name(), name.as_bytes());
        assert_eq!(node.cname(), Some(target.as_bytes()));
        assert!(node.has_records());
        let sets: Vec<_> = node.rrsets().collect();
        assert_eq!(sets.len(), 2);
        assert_eq!(
            (sets[0].rtype, sets[0].count, sets[0].body.len()),
            (1, 2, 28)
        );
        assert_eq!(&sets[0].body[10..14], &[10, 0, 0, 1]);
        assert_eq!(
            (sets[1].rtype, sets[1].count, sets[1].extra_count),
            (33, 1, 1)
        );
        assert_eq!(sets[1].body.len(), 17);
        assert_eq!(sets[1].extra.len(), name.as_bytes().len() + 14);
        assert_eq!(node.rrset(rtype::SRV), Some(sets[1]));
        assert_eq!(node.rrset(rtype::AAAA), None);

        let empty = Node::empty(name.as_bytes());
        assert_eq!(empty.name(), name.as_bytes());
        assert_eq!(empty.cname(), None);
        assert!(!empty.has_records());
        assert_eq!(empty.rrsets().count(), 0);
    }
}
