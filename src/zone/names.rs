//! The names of a snapshot: packed [`Node`]s, except the PTRs of endpoint addresses, which
//! are kept as their address and a share of their target.
//!
//! A cluster's reverse zone is mostly the PTRs of endpoint addresses: at 10,000 Services and
//! 150,000 pods, 150,000 of the zone's 339,000 names, each
//! `5.1.244.10.in-addr.arpa. PTR 10-244-1-5.<service>.<namespace>.svc.cluster.local.`. As a
//! node, such a name is about 110 bytes (its owner, a set header, a record header and the
//! whole target) and a slot of its shard, about 140 bytes in all. It says nothing that its
//! address and its Service's name do not: the owner is the address reversed, the target's
//! first label the address dashed. So a node of exactly that shape — one PTR record with
//! the zone's TTL, whose target is the dashed address in front of any name — is kept as the
//! address and a pointer to the target's rest, shared by every endpoint of that Service
//! ([`Suffixes`]): 16 bytes (IPv4) or 24 (IPv6) a name in its table. Anything else (a
//! ClusterIP's PTR, an endpoint with a hostname, an address two Services' endpoints share)
//! stays a node.
//!
//! The representation is invisible: [`Names::nodes`] gives every name as a node, the one it
//! would have been, and an answer is written from the address and the shared rest without
//! allocating (the target as a stored name: the dashed label in front of a pointer into the
//! rest, [`Names::ptr_answer`]), byte for byte what the node would have answered.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::node::Node;
use super::rrset::{self, RrSetBuilder};
use super::shards::{Keyed, Sharded};
use super::{InlineRecord, Map, RunData};
use crate::codes::rtype;

/// The rest of a PTR target after its first label, lower-case wire, shared.
pub(crate) type Suffix = Arc<Box<[u8]>>;

/// An endpoint address's PTR, kept as the address and its target's rest.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ptr<const N: usize> {
    octets: [u8; N],
    suffix: Suffix,
}

impl<const N: usize> Keyed for Ptr<N> {
    type Key = [u8; N];
    fn key(&self) -> &[u8; N] {
        &self.octets
    }
}

/// Every name of a snapshot (see the [module](self) documentation).
#[derive(Debug, Clone)]
pub(crate) struct Names {
    nodes: Sharded<Node>,
    v4: Sharded<Ptr<4>>,
    v6: Sharded<Ptr<16>>,
    /// The TTL of the PTRs kept as addresses (a PTR with another stays a node).
    ttl: u32,
    suffixes: Arc<Suffixes>,
}

impl Names {
    /// No names yet, with tables sized for `total` names, about `ptrs` of them endpoint
    /// PTRs; `ttl` the zone's.
    pub(crate) fn sized(total: usize, ptrs: usize, ttl: u32) -> Self {
        Self::sharing(total, ptrs, ttl, Arc::default())
    }

    /// [`sized`](Self::sized), sharing the targets' rests of `suffixes`.
    pub(crate) fn sharing(total: usize, ptrs: usize, ttl: u32, suffixes: Arc<Suffixes>) -> Self {
        Self {
            nodes: Sharded::for_count(total.saturating_sub(ptrs)),
            v4: Sharded::for_count(ptrs),
            v6: Sharded::default(),
            ttl,
            suffixes,
        }
    }

    /// Puts in the name `name` (lower-case wire) holding exactly the one PTR `record` (TYPE
    /// CLASS TTL RDLENGTH RDATA) if it is of the shape kept as an address, without making
    /// its node; whether it was (when not, the caller puts its node in).
    pub(crate) fn insert_ptr_record(&mut self, name: &[u8], record: &[u8]) -> bool {
        let Some((ip, suffix)) = self.compact_record(name, record) else {
            return false;
        };
        let suffix = self.suffixes.share(suffix);
        self.put_ptr(ip, suffix);
        true
    }

    /// Puts in the endpoint PTR of `ip` to its dashed address in front of `suffix` (one
    /// [`Suffixes::share`] gave), the zone's TTL, without its node being made; whether the
    /// address had one.
    pub(crate) fn put_ptr(&mut self, ip: IpAddr, suffix: Suffix) -> bool {
        match ip {
            IpAddr::V4(v4) => self
                .v4
                .insert(Ptr {
                    octets: v4.octets(),
                    suffix,
                })
                .is_some(),
            IpAddr::V6(v6) => self
                .v6
                .insert(Ptr {
                    octets: v6.octets(),
                    suffix,
                })
                .is_some(),
        }
    }

    /// Whether `name` (lower-case wire) might be an endpoint PTR kept as its address: for
    /// sizing, before the nodes are made.
    pub(crate) fn may_be_ptr(name: &[u8]) -> bool {
        name.ends_with(b"\x07in-addr\x04arpa\x00") || name.ends_with(b"\x03ip6\x04arpa\x00")
    }

    /// The node of `name`, when it is kept as a node.
    pub(crate) fn get(&self, name: &[u8]) -> Option<&Node> {
        self.nodes.get(name)
    }

    /// Whether `name` exists.
    pub(crate) fn contains_key(&self, name: &[u8]) -> bool {
        self.nodes.contains_key(name) || self.ptr(name).is_some()
    }

    /// Whether `node` is held, exactly.
    pub(crate) fn holds(&self, node: &Node) -> bool {
        match self.compact(node) {
            Some((ip, suffix)) => self.ptr_at(ip).is_some_and(|held| held[..] == *suffix),
            None => self.nodes.get(node.name()) == Some(node),
        }
    }

    /// Puts `node` in, in place of the name's node; whether the name was there.
    pub(crate) fn insert(&mut self, node: Node) -> bool {
        let Some((ip, suffix)) = self.compact(&node) else {
            let present = self.remove_ptr(node.name());
            return self.nodes.insert(node).is_some() || present;
        };
        let present = self.nodes.remove(node.name()).is_some();
        let suffix = self.suffixes.share(suffix);
        self.put_ptr(ip, suffix) || present
    }

    /// Removes `name`; whether it was there.
    pub(crate) fn remove(&mut self, name: &[u8]) -> bool {
        self.nodes.remove(name).is_some() || self.remove_ptr(name)
    }

    fn remove_ptr(&mut self, name: &[u8]) -> bool {
        match rrset::address_of_reverse_wire(name) {
            Some(IpAddr::V4(v4)) => self.v4.remove(&v4.octets()).is_some(),
            Some(IpAddr::V6(v6)) => self.v6.remove(&v6.octets()).is_some(),
            None => false,
        }
    }

    /// How many names there are.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len() + self.v4.len() + self.v6.len()
    }

    /// Every name as its node, in no particular order (an endpoint PTR's node made again).
    pub(crate) fn nodes(&self) -> impl Iterator<Item = Cow<'_, Node>> + '_ {
        let v4 = self
            .v4
            .iter()
            .map(|ptr| Cow::Owned(self.node_of(IpAddr::from(ptr.octets), &ptr.suffix)));
        let v6 = self
            .v6
            .iter()
            .map(|ptr| Cow::Owned(self.node_of(IpAddr::from(ptr.octets), &ptr.suffix)));
        self.nodes.iter().map(Cow::Borrowed).chain(v4).chain(v6)
    }

    /// Every name, in no particular order.
    pub(crate) fn names(&self) -> impl Iterator<Item = Cow<'_, [u8]>> + '_ {
        let reversed = |ip: IpAddr| Cow::Owned(ReverseName::of(ip).as_bytes().to_vec());
        let v4 = self
            .v4
            .iter()
            .map(move |ptr| reversed(IpAddr::from(ptr.octets)));
        let v6 = self
            .v6
            .iter()
            .map(move |ptr| reversed(IpAddr::from(ptr.octets)));
        self.nodes
            .iter()
            .map(|node| Cow::Borrowed(node.name()))
            .chain(v4)
            .chain(v6)
    }

    /// The PTR of `qname` (lower-case wire) when it is kept as an address: the address, and
    /// the rest of its target.
    fn ptr(&self, qname: &[u8]) -> Option<(IpAddr, &[u8])> {
        let ip = rrset::address_of_reverse_wire(qname)?;
        // `address_of_reverse_wire` reads `+5` as the octet 5: only the one name an address
        // gives is its PTR's.
        if ReverseName::of(ip).as_bytes() != qname {
            return None;
        }
        let suffix = self.ptr_at(ip)?;
        Some((ip, &suffix[..]))
    }

    fn ptr_at(&self, ip: IpAddr) -> Option<&Suffix> {
        match ip {
            IpAddr::V4(v4) => self.v4.get(&v4.octets()).map(|ptr| &ptr.suffix),
            IpAddr::V6(v6) => self.v6.get(&v6.octets()).map(|ptr| &ptr.suffix),
        }
    }

    /// For `qname` (lower-case wire) when it is an endpoint PTR kept as its address: the one
    /// record the node would answer PTR with, as a stored name (the dashed address in front
    /// of a pointer into the returned rest of the target), and that rest.
    pub(crate) fn ptr_answer(&self, qname: &[u8]) -> Option<(RunData<'static>, &[u8])> {
        let (ip, suffix) = self.ptr(qname)?;
        let label = Dashed::of(ip);
        let mut record = InlineRecord::new();
        record.push(&rrset::rr_header(
            rtype::PTR,
            self.ttl,
            1 + label.as_bytes().len() + 2,
        ))?;
        // A dashed address is at most 40 bytes: a label.
        record.push(&[label.as_bytes().len() as u8])?;
        record.push(label.as_bytes())?;
        // A pointer to the holder's start (a stored name's pointer: offset 12 + 0).
        record.push(&[0xc0, 12])?;
        Some((RunData::Inline(record), suffix))
    }

    /// Whether the name of `qname` is kept as an address (then it has exactly a PTR).
    pub(crate) fn is_ptr(&self, qname: &[u8]) -> bool {
        self.ptr(qname).is_some()
    }

    /// The address and target's rest of `node` when it is an endpoint PTR of the shape kept
    /// as an address (see the [module](self) documentation).
    fn compact<'n>(&self, node: &'n Node) -> Option<(IpAddr, &'n [u8])> {
        if node.cname().is_some() {
            return None;
        }
        let mut sets = node.rrsets();
        let set = sets.next()?;
        if sets.next().is_some()
            || set.rtype != rtype::PTR
            || set.count != 1
            || set.extra_count != 0
        {
            return None;
        }
        self.compact_record(node.name(), set.body)
    }

    /// [`compact`](Self::compact) of a name and its one PTR record.
    fn compact_record<'r>(&self, name: &[u8], record: &'r [u8]) -> Option<(IpAddr, &'r [u8])> {
        let (header, target) = record.split_at_checked(10)?;
        if header != rrset::rr_header(rtype::PTR, self.ttl, target.len()) {
            return None;
        }
        let ip = rrset::address_of_reverse_wire(name)?;
        if ReverseName::of(ip).as_bytes() != name {
            return None;
        }
        let label = Dashed::of(ip);
        let (&first, rest) = target.split_first()?;
        let first = usize::from(first);
        if rest.get(..first)? != label.as_bytes() {
            return None;
        }
        let suffix = &rest[first..];
        // The rest must be a whole name (no pointer): it is written out as one.
        is_whole_name(suffix).then_some((ip, suffix))
    }

    /// The node an endpoint PTR kept as `ip` and `suffix` stands for.
    fn node_of(&self, ip: IpAddr, suffix: &[u8]) -> Node {
        ptr_node(ip, suffix, self.ttl)
    }

    /// The index of nodes, for tests of its sharing.
    #[cfg(test)]
    pub(crate) fn node_index(&self) -> &Sharded<Node> {
        &self.nodes
    }

    /// How many names are kept as addresses.
    #[cfg(test)]
    pub(crate) fn ptr_count(&self) -> usize {
        self.v4.len() + self.v6.len()
    }
}

impl Default for Names {
    fn default() -> Self {
        Self::sized(0, 0, 0)
    }
}

/// An address's reverse name ([`rrset::reverse_name`]), made without allocating.
pub(crate) struct ReverseName {
    len: usize,
    bytes: [u8; 74],
}

impl ReverseName {
    pub(crate) fn of(ip: IpAddr) -> Self {
        let mut name = Self {
            len: 0,
            bytes: [0; 74],
        };
        match ip {
            IpAddr::V4(v4) => {
                for octet in v4.octets().iter().rev() {
                    let mut digits = Dashed {
                        len: 0,
                        bytes: [0; 48],
                    };
                    let _ = write!(digits, "{octet}");
                    // At most three digits.
                    name.push(&[digits.len as u8]);
                    name.push(digits.as_bytes());
                }
                name.push(b"\x07in-addr\x04arpa\x00");
            }
            IpAddr::V6(v6) => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                for byte in v6.octets().iter().rev() {
                    name.push(&[
                        1,
                        HEX[usize::from(byte & 0x0f)],
                        1,
                        HEX[usize::from(byte >> 4)],
                    ]);
                }
                name.push(b"\x03ip6\x04arpa\x00");
            }
        }
        name
    }

    fn push(&mut self, bytes: &[u8]) {
        // At most 4 labels of 3 digits or 32 of one nibble, and the zone: 74 bytes.
        let end = self.len + bytes.len();
        self.bytes[self.len..end].copy_from_slice(bytes);
        self.len = end;
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The node of the endpoint PTR of `ip` to its dashed address in front of `suffix`, with
/// `ttl`.
pub(crate) fn ptr_node(ip: IpAddr, suffix: &[u8], ttl: u32) -> Node {
    let target = ptr_target(ip, suffix);
    let mut set = RrSetBuilder::new(rtype::PTR, ttl);
    let mut record = Vec::with_capacity(10 + target.len());
    rrset::write_rr_header(&mut record, rtype::PTR, ttl, target.len());
    record.extend_from_slice(&target);
    set.push_record(&record);
    Node::pack(ReverseName::of(ip).as_bytes(), None, &[set])
}

/// The target of the endpoint PTR of `ip`: its dashed address in front of `suffix`.
pub(crate) fn ptr_target(ip: IpAddr, suffix: &[u8]) -> Vec<u8> {
    let label = Dashed::of(ip);
    let mut target = Vec::with_capacity(1 + label.as_bytes().len() + suffix.len());
    // A dashed address is at most 40 bytes: a label.
    target.push(label.as_bytes().len() as u8);
    target.extend_from_slice(label.as_bytes());
    target.extend_from_slice(suffix);
    target
}

/// Whether `label` is `ip` dashed.
pub(crate) fn is_dashed(ip: IpAddr, label: &str) -> bool {
    Dashed::of(ip).as_bytes() == label.as_bytes()
}

/// Whether `bytes` is exactly one uncompressed wire name.
fn is_whole_name(bytes: &[u8]) -> bool {
    let mut at = 0;
    while let Some(&len) = bytes.get(at) {
        match len {
            0 => return at + 1 == bytes.len(),
            1..=63 => at += 1 + usize::from(len),
            _ => return false,
        }
    }
    false
}

/// The PTR targets' rests, each held once for every name and snapshot that uses it (the
/// names of one Service's endpoints share theirs). Used while names are put in, never while
/// answering; a rest nothing holds any more is dropped when the table has doubled since it
/// was last swept.
#[derive(Debug, Default)]
pub(crate) struct Suffixes {
    held: Mutex<SuffixTable>,
}

#[derive(Debug, Default)]
struct SuffixTable {
    by_name: Map<Box<[u8]>, Weak<Box<[u8]>>>,
    swept_at: usize,
}

impl Suffixes {
    /// The one shared copy of `suffix`.
    pub(crate) fn share(&self, suffix: &[u8]) -> Suffix {
        let mut table = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = table.by_name.get(suffix).and_then(Weak::upgrade) {
            return held;
        }
        let held: Suffix = Arc::new(suffix.into());
        table.by_name.insert(suffix.into(), Arc::downgrade(&held));
        if table.by_name.len() >= 2 * table.swept_at.max(512) {
            table.by_name.retain(|_, weak| weak.strong_count() > 0);
            table.swept_at = table.by_name.len();
        }
        held
    }
}

/// An address as CoreDNS's dashed label spells it ([`super::dashed_ip`]), made without
/// allocating.
struct Dashed {
    len: usize,
    bytes: [u8; 48],
}

impl Dashed {
    fn of(ip: IpAddr) -> Self {
        let mut dashed = Self {
            len: 0,
            bytes: [0; 48],
        };
        // An address's text is at most 45 bytes.
        let _ = write!(dashed, "{ip}");
        let separator = if ip.is_ipv4() { b'.' } else { b':' };
        for byte in &mut dashed.bytes[..dashed.len] {
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
        &self.bytes[..self.len]
    }
}

impl std::fmt::Write for Dashed {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let end = self.len + text.len();
        self.bytes
            .get_mut(self.len..end)
            .ok_or(std::fmt::Error)?
            .copy_from_slice(text.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
