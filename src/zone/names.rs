//! The names of a snapshot: packed [`Node`]s, except the names of endpoint addresses, which
//! are kept as their address and a share of what their Service's endpoints have in common.
//!
//! A cluster zone is mostly endpoint names: at 10,000 Services and 150,000 pods, 300,000 of
//! its 339,000 names are the two each ready endpoint address gives,
//!
//! ```text
//! 10-244-1-5.<service>.<namespace>.svc.cluster.local.  A    10.244.1.5
//!                                                      SRV  0 100 8080 10-244-1-5.<service>...
//! 5.1.244.10.in-addr.arpa.                             PTR  10-244-1-5.<service>...
//! ```
//!
//! As a node, such a name is about 100 bytes (its owner, set headers, the records) and a slot
//! of its shard. It says nothing that its address and what the Service's endpoints share do
//! not: the endpoint's name is the address dashed in front of the Service's name, its SRV
//! records (one per port of its slice, with the weight CoreDNS gives, the name itself as
//! target and its address as glue) the same for every endpoint of the slice, and the PTR's
//! owner is the address reversed. So a node of exactly one of these shapes is kept as the
//! address and an `Arc` shared by every endpoint of the Service ([`Suffixes`]) — for a PTR the
//! rest of its target, for an endpoint's name its [`Shape`] (weight, ports and the rest of
//! the name): 16 bytes (IPv4) or 24 (IPv6) a name in its table. Anything else (a ClusterIP's
//! PTR, an endpoint with a hostname, a PTR an address two Services' endpoints share, the
//! second Service's name of an address the first holds) stays a node; a node is of a kept
//! shape only when the node made again from what is kept is byte for byte the node.
//!
//! The representation is invisible: [`Names::nodes`] gives every name as a node, the one it
//! would have been, and an answer is written from the address and the shared part without
//! allocating (names as stored names: the dashed label in front of a pointer into the shared
//! rest, [`Names::ptr_answer`], `Snapshot::endpoint_answer`), byte for byte what the node
//! would have answered.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use smallvec::SmallVec;

use super::map::Map;
use super::node::Node;
use super::rrset::{self, RrSetBuilder};
use super::shards::{Keyed, Sharded};
use super::{Dashed, InlineRecord, RunData};
use crate::codes::rtype;

/// The rest of a PTR target or of an endpoint's name after its first label, lower-case
/// wire, shared.
pub(crate) type Suffix = Arc<Box<[u8]>>;

/// A name kept as an address and a shared rest: an endpoint PTR (the rest of its target) or
/// an endpoint's address name (the rest of the name itself).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Held<const N: usize> {
    octets: [u8; N],
    suffix: Suffix,
}

impl<const N: usize> Keyed for Held<N> {
    type Key = [u8; N];
    fn key(&self) -> &[u8; N] {
        &self.octets
    }
}

/// The names of one form kept as addresses, by address family.
#[derive(Debug, Clone, Default)]
struct ByAddress {
    v4: Sharded<Held<4>>,
    v6: Sharded<Held<16>>,
}

impl ByAddress {
    fn sized(v4: usize, v6: usize) -> Self {
        Self {
            v4: Sharded::for_count(v4),
            v6: Sharded::for_count(v6),
        }
    }

    fn get(&self, ip: IpAddr) -> Option<&Suffix> {
        match ip {
            IpAddr::V4(v4) => self.v4.get(&v4.octets()).map(|held| &held.suffix),
            IpAddr::V6(v6) => self.v6.get(&v6.octets()).map(|held| &held.suffix),
        }
    }

    /// Puts `ip` in with `suffix`; whether it had one.
    fn put(&mut self, ip: IpAddr, suffix: Suffix) -> bool {
        match ip {
            IpAddr::V4(v4) => self
                .v4
                .insert(Held {
                    octets: v4.octets(),
                    suffix,
                })
                .is_some(),
            IpAddr::V6(v6) => self
                .v6
                .insert(Held {
                    octets: v6.octets(),
                    suffix,
                })
                .is_some(),
        }
    }

    fn remove(&mut self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(v4) => self.v4.remove(&v4.octets()).is_some(),
            IpAddr::V6(v6) => self.v6.remove(&v6.octets()).is_some(),
        }
    }

    fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    fn iter(&self) -> impl Iterator<Item = (IpAddr, &Suffix)> + '_ {
        let v4 = self
            .v4
            .iter()
            .map(|held| (IpAddr::from(held.octets), &held.suffix));
        let v6 = self
            .v6
            .iter()
            .map(|held| (IpAddr::from(held.octets), &held.suffix));
        v4.chain(v6)
    }
}

/// How many names of each form a [`Names`] is sized for.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sizes {
    /// All names.
    pub(crate) total: usize,
    /// Endpoint PTRs, IPv4 and IPv6.
    pub(crate) ptrs: [usize; 2],
    /// Endpoints' address names, IPv4 and IPv6.
    pub(crate) addresses: [usize; 2],
}

/// What a node of a shape kept as an address is kept as.
enum Compact<'n> {
    /// An endpoint PTR: the address, and the rest of the target.
    Ptr(IpAddr, &'n [u8]),
    /// An endpoint's address name: the address, and its [`Shape`] bytes.
    Address(IpAddr, Vec<u8>),
}

/// Every name of a snapshot (see the [module](self) documentation).
#[derive(Debug, Clone)]
pub(crate) struct Names {
    nodes: Sharded<Node>,
    ptrs: ByAddress,
    addresses: ByAddress,
    /// The TTL of the names kept as addresses (one with another stays a node).
    ttl: u32,
    suffixes: Arc<Suffixes>,
}

impl Names {
    /// No names yet, with tables sized for `sizes`; `ttl` the zone's.
    pub(crate) fn sized(sizes: Sizes, ttl: u32) -> Self {
        Self::sharing(sizes, ttl, Arc::default())
    }

    /// [`sized`](Self::sized), sharing the rests of `suffixes`.
    pub(crate) fn sharing(sizes: Sizes, ttl: u32, suffixes: Arc<Suffixes>) -> Self {
        let compact: usize = sizes.ptrs.iter().chain(&sizes.addresses).sum();
        Self {
            nodes: Sharded::for_count(sizes.total.saturating_sub(compact)),
            ptrs: ByAddress::sized(sizes.ptrs[0], sizes.ptrs[1]),
            addresses: ByAddress::sized(sizes.addresses[0], sizes.addresses[1]),
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
        self.ptrs.put(ip, suffix)
    }

    /// Puts in the address name of `ip` of `shape` (shared [`Shape`] bytes) that no other
    /// name holds, without its node being made.
    pub(crate) fn put_address_shared(&mut self, ip: IpAddr, shape: Suffix) {
        self.addresses.put(ip, shape);
    }

    /// Puts in the address name of `ip` of `shape` ([`Shape`] bytes), unless another name
    /// (another Service's endpoint at the same address) holds the address: then `None`, and
    /// the name is to be a node. Whether the name was there.
    fn put_address(&mut self, ip: IpAddr, shape: &[u8]) -> Option<bool> {
        let present = match self.addresses.get(ip) {
            Some(held) if held[..] == *shape => return Some(true),
            // The same name, holding other records.
            Some(held) if Shape::of(held).rest == Shape::of(shape).rest => true,
            Some(_) => return None,
            None => false,
        };
        let shape = self.suffixes.share(shape);
        self.addresses.put(ip, shape);
        Some(present)
    }

    /// Whether `name` (lower-case wire) might be an endpoint PTR kept as its address: for
    /// sizing, before the nodes are made.
    pub(crate) fn may_be_ptr(name: &[u8]) -> bool {
        name.ends_with(b"\x07in-addr\x04arpa\x00") || name.ends_with(b"\x03ip6\x04arpa\x00")
    }

    /// The address `name` (lower-case wire) would be kept as were it an endpoint's address
    /// name: its first label, undashed. For sizing, before the nodes are made.
    pub(crate) fn may_be_address(name: &[u8]) -> Option<IpAddr> {
        let (ip, _) = dashed_first_label(name)?;
        Some(ip)
    }

    /// The node of `name`, when it is kept as a node.
    pub(crate) fn get(&self, name: &[u8]) -> Option<&Node> {
        self.nodes.get(name)
    }

    /// Whether `name` exists.
    pub(crate) fn contains_key(&self, name: &[u8]) -> bool {
        self.nodes.contains_key(name) || self.ptr(name).is_some() || self.address(name).is_some()
    }

    /// Whether `node` is held, exactly.
    pub(crate) fn holds(&self, node: &Node) -> bool {
        match self.compact(node) {
            Some(Compact::Ptr(ip, suffix)) => {
                self.ptrs.get(ip).is_some_and(|held| held[..] == *suffix)
            }
            Some(Compact::Address(ip, suffix))
                if self
                    .addresses
                    .get(ip)
                    .is_some_and(|held| held[..] == *suffix) =>
            {
                true
            }
            _ => self.nodes.get(node.name()) == Some(node),
        }
    }

    /// Puts `node` in, in place of the name's node; whether the name was there.
    pub(crate) fn insert(&mut self, node: Node) -> bool {
        match self.compact(&node) {
            Some(Compact::Ptr(ip, suffix)) => {
                let present = self.nodes.remove(node.name()).is_some();
                let suffix = self.suffixes.share(suffix);
                self.put_ptr(ip, suffix) || present
            }
            Some(Compact::Address(ip, shape)) => match self.put_address(ip, &shape) {
                Some(held) => self.nodes.remove(node.name()).is_some() || held,
                None => self.nodes.insert(node).is_some(),
            },
            None => {
                let present = self.remove_compact(node.name());
                self.nodes.insert(node).is_some() || present
            }
        }
    }

    /// Removes `name`; whether it was there.
    pub(crate) fn remove(&mut self, name: &[u8]) -> bool {
        self.nodes.remove(name).is_some() || self.remove_compact(name)
    }

    /// Removes `name` when it is kept as an address; whether it was.
    fn remove_compact(&mut self, name: &[u8]) -> bool {
        if let Some((ip, _)) = self.ptr(name) {
            return self.ptrs.remove(ip);
        }
        match self.address(name) {
            Some((ip, _)) => self.addresses.remove(ip),
            None => false,
        }
    }

    /// How many names there are.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len() + self.ptrs.len() + self.addresses.len()
    }

    /// Every name as its node, in no particular order (a name kept as an address made a
    /// node again).
    pub(crate) fn nodes(&self) -> impl Iterator<Item = Cow<'_, Node>> + '_ {
        let ptrs = self
            .ptrs
            .iter()
            .map(|(ip, suffix)| Cow::Owned(ptr_node(ip, suffix, self.ttl)));
        let addresses = self
            .addresses
            .iter()
            .map(|(ip, shape)| Cow::Owned(address_node(ip, shape, self.ttl)));
        self.nodes
            .iter()
            .map(Cow::Borrowed)
            .chain(ptrs)
            .chain(addresses)
    }

    /// Every name, in no particular order.
    pub(crate) fn names(&self) -> impl Iterator<Item = Cow<'_, [u8]>> + '_ {
        let ptrs = self
            .ptrs
            .iter()
            .map(|(ip, _)| Cow::Owned(ReverseName::of(ip).as_bytes().to_vec()));
        let addresses = self
            .addresses
            .iter()
            .map(|(ip, shape)| Cow::Owned(ptr_target(ip, Shape::of(shape).rest)));
        self.nodes
            .iter()
            .map(|node| Cow::Borrowed(node.name()))
            .chain(ptrs)
            .chain(addresses)
    }

    /// The PTR of `qname` (lower-case wire) when it is kept as an address: the address, and
    /// the rest of its target.
    fn ptr(&self, qname: &[u8]) -> Option<(IpAddr, &[u8])> {
        let ip = rrset::address_of_reverse_wire(qname)?;
        // Only the one name an address gives is its PTR's.
        if ReverseName::of(ip).as_bytes() != qname {
            return None;
        }
        let suffix = self.ptrs.get(ip)?;
        Some((ip, &suffix[..]))
    }

    /// The TTL of the names kept as addresses.
    pub(crate) fn ttl(&self) -> u32 {
        self.ttl
    }

    /// The address and [`Shape`] of `qname` (lower-case wire) when it is an endpoint's
    /// address name kept as an address.
    pub(crate) fn address(&self, qname: &[u8]) -> Option<(IpAddr, Shape<'_>)> {
        let (ip, rest) = dashed_first_label(qname)?;
        let shape = Shape::of(self.addresses.get(ip)?);
        (shape.rest == rest).then_some((ip, shape))
    }

    /// For `qname` (lower-case wire) when it is an endpoint PTR kept as its address: the one
    /// record the node would answer PTR with, as a stored name (the dashed address in front
    /// of a pointer into the returned rest of the target), and that rest.
    pub(crate) fn ptr_answer(&self, qname: &[u8]) -> Option<(RunData<'static>, &[u8])> {
        let (ip, suffix) = self.ptr(qname)?;
        let target = stored_endpoint_name(ip);
        let mut record = InlineRecord::new();
        record.push(&rrset::rr_header(rtype::PTR, self.ttl, target.len()))?;
        record.push(&target)?;
        Some((RunData::Inline(record), suffix))
    }

    /// Whether the name of `qname` is kept as an address (then it has exactly a PTR).
    pub(crate) fn is_ptr(&self, qname: &[u8]) -> bool {
        self.ptr(qname).is_some()
    }

    /// What `node` is kept as when it is of a shape kept as an address (see the
    /// [module](self) documentation).
    fn compact<'n>(&self, node: &'n Node) -> Option<Compact<'n>> {
        if node.cname().is_some() {
            return None;
        }
        let set = node.rrsets().next()?;
        match set.rtype {
            rtype::PTR => {
                let mut sets = node.rrsets();
                sets.next();
                if sets.next().is_some() || set.count != 1 || set.extra_count != 0 {
                    return None;
                }
                let (ip, suffix) = self.compact_record(node.name(), set.body)?;
                Some(Compact::Ptr(ip, suffix))
            }
            rtype::A | rtype::AAAA => {
                let (ip, shape) = self.compact_address(node)?;
                Some(Compact::Address(ip, shape))
            }
            _ => None,
        }
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

    /// [`compact`](Self::compact) of an endpoint's address name ([`address_shape`]).
    fn compact_address(&self, node: &Node) -> Option<(IpAddr, Vec<u8>)> {
        address_shape(node, self.ttl)
    }

    /// The index of nodes, for tests of its sharing.
    #[cfg(test)]
    pub(crate) fn node_index(&self) -> &Sharded<Node> {
        &self.nodes
    }

    /// How many PTRs are kept as addresses.
    #[cfg(test)]
    pub(crate) fn ptr_count(&self) -> usize {
        self.ptrs.len()
    }

    /// How many endpoints' address names are kept as addresses.
    #[cfg(test)]
    pub(crate) fn address_count(&self) -> usize {
        self.addresses.len()
    }
}

/// The address and [`Shape`] bytes of `node` when it is an endpoint's address name of the
/// shape kept as an address with `ttl`: the address dashed in front of any name, holding
/// exactly what [`address_node`] makes of them.
pub(crate) fn address_shape(node: &Node, ttl: u32) -> Option<(IpAddr, Vec<u8>)> {
    let (ip, rest) = dashed_first_label(node.name())?;
    let (mut weight, mut ports) = (0, Vec::new());
    for set in node.rrsets() {
        match set.rtype {
            rtype::A | rtype::AAAA => {}
            rtype::SRV => {
                // Each record: a header, priority, weight, port and a 2-byte target.
                for record in set.body.chunks(SRV_RECORD_LEN) {
                    let fixed = record.get(10..16)?;
                    weight = u16::from_be_bytes([fixed[2], fixed[3]]);
                    ports.push(u16::from_be_bytes([fixed[4], fixed[5]]));
                }
            }
            _ => return None,
        }
    }
    let shape = Shape::bytes(weight, &ports, rest)?;
    (address_node(ip, &shape, ttl) == *node).then_some((ip, shape))
}

/// The address whose dashed spelling is exactly the first label of `name` (lower-case
/// wire), as the name is looked up again ([`super::ip_from_dashed`] reads more spellings
/// than one address has), and the rest of the name.
pub(crate) fn dashed_first_label(name: &[u8]) -> Option<(IpAddr, &[u8])> {
    let (&len, rest) = name.split_first()?;
    let (label, rest) = rest.split_at_checked(usize::from(len))?;
    if len == 0 || len > 63 || rest.is_empty() {
        return None;
    }
    let ip = super::ip_from_dashed(label)?;
    (Dashed::of(ip).as_bytes() == label).then_some((ip, rest))
}

impl Default for Names {
    fn default() -> Self {
        Self::sized(Sizes::default(), 0)
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
                for octet in v4.octets().into_iter().rev() {
                    let mut digits = [0u8; 3];
                    let len = super::dashed::decimal(octet, &mut digits);
                    name.push(&[len as u8]);
                    name.push(&digits[..len]);
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

/// An SRV record at an endpoint's address name: a header, priority, weight and port, and
/// the target, the name itself (a pointer to the holder).
const SRV_RECORD_LEN: usize = 10 + 6 + 2;

/// The stored name of the name that holds it: a pointer to the holder's start.
const HOLDER: [u8; 2] = [0xc0, 12];

/// The node of an endpoint's address name: `ip` dashed in front of the rest of `shape`
/// ([`Shape`] bytes), holding the A or AAAA record of `ip` and, for each of the shape's
/// ports, an SRV record to itself with the shape's weight, with its address as glue — what
/// `records::add_entries` writes at an endpoint's name; all with `ttl`.
pub(crate) fn address_node(ip: IpAddr, shape: &[u8], ttl: u32) -> Node {
    let shape = Shape::of(shape);
    let (rtype, rdata) = rrset::address_rdata(ip);
    let mut address = Vec::with_capacity(10 + rdata.len());
    rrset::write_rr_header(&mut address, rtype, ttl, rdata.len());
    address.extend_from_slice(&rdata);
    let mut sets = vec![RrSetBuilder::new(rtype, ttl)];
    sets[0].push_record(&address);
    if !shape.ports.is_empty() {
        let mut srv = RrSetBuilder::new(rtype::SRV, ttl);
        for port in shape.ports() {
            let mut record = Vec::with_capacity(SRV_RECORD_LEN);
            rrset::write_rr_header(&mut record, rtype::SRV, ttl, SRV_RECORD_LEN - 10);
            record.extend_from_slice(&rrset::srv_rdata_stored(0, shape.weight, port, &HOLDER));
            srv.push_record(&record);
        }
        let mut glue = HOLDER.to_vec();
        glue.extend_from_slice(&address);
        srv.push_extra_record(&glue);
        sets.push(srv);
    }
    sets.sort_by_key(RrSetBuilder::rtype);
    Node::pack(&ptr_target(ip, shape.rest), None, &sets)
}

/// What an endpoint's address name kept as its address holds beside the address, shared by
/// the endpoints of one slice: its SRV records' weight and ports, and the rest of the name
/// after the dashed address. As bytes: the number of ports, the weight, each port, then the
/// rest (lower-case wire).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape<'a> {
    pub(crate) weight: u16,
    /// The ports, two bytes each, in the order of the SRV records.
    ports: &'a [u8],
    /// The rest of the name.
    pub(crate) rest: &'a [u8],
}

impl<'a> Shape<'a> {
    /// The bytes of a shape; `None` past 255 ports.
    fn bytes(weight: u16, ports: &[u16], rest: &[u8]) -> Option<Vec<u8>> {
        let mut bytes = Vec::with_capacity(3 + 2 * ports.len() + rest.len());
        bytes.push(u8::try_from(ports.len()).ok()?);
        bytes.extend_from_slice(&weight.to_be_bytes());
        for port in ports {
            bytes.extend_from_slice(&port.to_be_bytes());
        }
        bytes.extend_from_slice(rest);
        Some(bytes)
    }

    /// The shape of `bytes` that [`bytes`](Self::bytes) made.
    pub(crate) fn of(bytes: &'a [u8]) -> Self {
        let count = usize::from(bytes.first().copied().unwrap_or_default());
        let ports_end = (3 + 2 * count).min(bytes.len());
        Self {
            weight: u16::from_be_bytes([
                bytes.get(1).copied().unwrap_or_default(),
                bytes.get(2).copied().unwrap_or_default(),
            ]),
            ports: bytes.get(3..ports_end).unwrap_or_default(),
            rest: &bytes[ports_end..],
        }
    }

    /// The ports, in the order of the SRV records.
    pub(crate) fn ports(&self) -> impl Iterator<Item = u16> + 'a {
        self.ports
            .chunks_exact(2)
            .map(|port| u16::from_be_bytes([port[0], port[1]]))
    }

    /// Whether the name holds SRV records.
    pub(crate) fn has_srv(&self) -> bool {
        !self.ports.is_empty()
    }
}

/// The name of the endpoint at `ip` as a record held by its rest stores it: the dashed
/// address in front of a pointer to the holder's start (a stored name's pointer, offset
/// 12 + 0).
pub(crate) fn stored_endpoint_name(ip: IpAddr) -> SmallVec<[u8; 48]> {
    let label = Dashed::of(ip);
    let mut stored = SmallVec::new();
    // A dashed address is at most 40 bytes: a label.
    stored.push(label.as_bytes().len() as u8);
    stored.extend_from_slice(label.as_bytes());
    stored.extend_from_slice(&HOLDER);
    stored
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

/// The PTR targets' rests and the endpoint names' [`Shape`]s, each held once for every name
/// and snapshot that uses it (the names of one Service's endpoints share theirs). Used while names are put in, never while
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

#[cfg(test)]
mod tests;
