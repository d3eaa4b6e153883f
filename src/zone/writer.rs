//! Accumulating the names of a zone while it is built: each name's RRsets and CNAME target,
//! packed into [`Node`]s at the end. The full build and the update both write through a
//! [`NameWriter`], and the record writers of `records` and `build` take one.
//!
//! A full build of a large cluster holds hundreds of thousands of names here at once, beside
//! the objects, so a name being built is one allocation too: its name, then its records as
//! they come, each tagged with the type of the set it belongs to; [`NameWriter::finish`] sorts
//! them into sets.
//!
//! ```text
//! name length (1) | name | per entry: kind (1) | set type (2) | length (2) | bytes
//! kind: 0 a record of the set (TYPE CLASS TTL RDLENGTH RDATA), 1 a whole record for the
//! set's additional section, 2 the name's CNAME target (the last one counts)
//! ```

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use hashbrown::HashTable;
use smallvec::SmallVec;

use super::ServedZone;
use super::names::{self, Names, Sizes, Suffix, Suffixes};
use super::node::Node;
use super::rrset::{self, RrSetBuilder};
use crate::codes::rtype;
use crate::name::{WireName, parent};

const RECORD: u8 = 0;
const EXTRA: u8 = 1;
const CNAME: u8 = 2;
/// Kind, set type, length.
const ENTRY_HEADER: usize = 5;

/// A set of wire names, hashed with ahash (a full build asks it once per name and ancestor).
pub(crate) type NameSet = HashSet<Box<[u8]>, ahash::RandomState>;

/// Accumulates nodes while a snapshot is built.
#[derive(Debug)]
pub(crate) struct NameWriter {
    pub(crate) ttl: u32,
    /// The TTL of SRV records (and CNAMEs to load balancers): `ttl`, except in
    /// *k8s_external*'s zones, where CoreDNS gives them the *kubernetes* plugin's.
    pub(crate) srv_ttl: u32,
    hasher: ahash::RandomState,
    /// One name each (see the [module](self) documentation for the layout).
    nodes: HashTable<Vec<u8>>,
    /// The endpoint PTRs of the shape a snapshot keeps as an address (`names.rs`), held as
    /// that from the start: an address and its target's rest, not a name being built (a
    /// full build writes 150,000 of them at 10,000 Services). A second target, or a record of
    /// any other kind at the name, makes it a name being built like any other.
    ptrs: HashMap<IpAddr, Suffix, ahash::RandomState>,
    /// The endpoints' address names of the shape a snapshot keeps as an address, held as
    /// that once written ([`settle_endpoint_name`](Self::settle_endpoint_name)): the address
    /// and the shared [`names::Shape`] bytes. Writing to the name again makes it a name
    /// being built.
    addresses: HashMap<IpAddr, Suffix, ahash::RandomState>,
    /// The targets' rests, one copy each, shared with the snapshot built.
    suffixes: Arc<Suffixes>,
    /// Whether endpoints' address names are held as addresses once written: for a full
    /// build, packed by [`into_names`](Self::into_names). A part's names, handed out whole
    /// by [`finish`](Self::finish), stay names: holding one would only pack it, check its
    /// shape and make it again at the end.
    settle: bool,
}

/// The name an entry of [`NameWriter::nodes`] is built for.
fn name_of(node: &[u8]) -> &[u8] {
    &node[1..1 + usize::from(node[0])]
}

/// Where one name's records go: the set of one type ([`NameWriter::set`]).
#[derive(Debug)]
pub(crate) struct SetWriter<'b> {
    node: &'b mut Vec<u8>,
    rtype: u16,
    ttl: u32,
}

impl SetWriter<'_> {
    fn entry(&mut self, kind: u8, len: usize) {
        self.node.push(kind);
        self.node.extend_from_slice(&self.rtype.to_be_bytes());
        // A record is at most a name and a few integers: far below 65535 bytes.
        self.node.extend_from_slice(&(len as u16).to_be_bytes());
    }

    /// Adds one record with `rdata`.
    pub(crate) fn push(&mut self, rdata: &[u8]) {
        self.entry(RECORD, 10 + rdata.len());
        rrset::write_rr_header(self.node, self.rtype, self.ttl, rdata.len());
        self.node.extend_from_slice(rdata);
    }

    /// [`push`](Self::push), unless the set holds a record with `rdata` already.
    pub(crate) fn push_unique(&mut self, rdata: &[u8]) {
        let held = entries(self.node).any(|(kind, rtype, record)| {
            kind == RECORD && rtype == self.rtype && record.get(10..) == Some(rdata)
        });
        if !held {
            self.push(rdata);
        }
    }

    /// Adds an A or AAAA record for `ip` owned by `owner` to the additional section.
    pub(crate) fn push_extra_address(&mut self, owner: &WireName, ttl: u32, ip: IpAddr) {
        self.push_extra_address_stored(owner.as_bytes(), ttl, ip);
    }

    /// [`push_extra_address`](Self::push_extra_address) with the owner as stored (whole, or
    /// in front of a pointer into the holding name: [`rrset::stored_name`]).
    pub(crate) fn push_extra_address_stored(&mut self, owner: &[u8], ttl: u32, ip: IpAddr) {
        let (rtype, rdata) = rrset::address_rdata(ip);
        self.entry(EXTRA, owner.len() + 10 + rdata.len());
        self.node.extend_from_slice(owner);
        rrset::write_rr_header(self.node, rtype, ttl, rdata.len());
        self.node.extend_from_slice(&rdata);
    }
}

impl NameWriter {
    pub(crate) fn new(ttl: u32) -> Self {
        Self {
            ttl,
            srv_ttl: ttl,
            hasher: ahash::RandomState::new(),
            nodes: HashTable::new(),
            ptrs: HashMap::default(),
            addresses: HashMap::default(),
            suffixes: Arc::default(),
            settle: true,
        }
    }

    /// A writer for a part of a zone (an update's, *k8s_external*'s), whose nodes
    /// [`finish`](Self::finish) hands out: no endpoint name is held as an address.
    pub(crate) fn for_part(ttl: u32) -> Self {
        Self {
            settle: false,
            ..Self::new(ttl)
        }
    }

    /// The one shared copy of a PTR target's rest (lower-case wire), for
    /// [`endpoint_ptr`](Self::endpoint_ptr).
    pub(crate) fn suffix(&self, suffix: &WireName) -> Suffix {
        self.suffixes.share(suffix.as_bytes())
    }

    /// Adds the PTR at `name`, the reverse name of `ip`, to `label` in front of `suffix`
    /// (unless the name holds that target already), with the writer's TTL.
    pub(crate) fn endpoint_ptr(&mut self, name: &[u8], ip: IpAddr, label: &str, suffix: &Suffix) {
        if names::is_dashed(ip, label) && !self.contains_node(name) {
            match self.ptrs.get(&ip) {
                None => {
                    self.ptrs.insert(ip, Arc::clone(suffix));
                    return;
                }
                Some(held) if held == suffix => return,
                Some(_) => {}
            }
        }
        let mut target = Vec::with_capacity(1 + label.len() + suffix.len());
        // An endpoint's label is a DNS label (at most 63 bytes).
        target.push(label.len() as u8);
        target.extend_from_slice(label.as_bytes());
        target.extend_from_slice(suffix);
        let ttl = self.ttl;
        push_record_unique(self.node_of(name), rtype::PTR, ttl, &target);
    }

    fn node(&mut self, name: &WireName) -> &mut Vec<u8> {
        // Names are built from lower-case object names, so the key is usually the name as
        // is.
        let bytes = name.as_bytes();
        let key: Cow<'_, [u8]> = if bytes.iter().any(u8::is_ascii_uppercase) {
            Cow::Owned(bytes.to_ascii_lowercase())
        } else {
            Cow::Borrowed(bytes)
        };
        self.node_of(&key)
    }

    /// The entry of lower-case wire `name`, made if new (an endpoint PTR held as an address
    /// at it becomes its first record).
    fn node_of(&mut self, name: &[u8]) -> &mut Vec<u8> {
        let held = match self.ptrs.is_empty() || !Names::may_be_ptr(name) {
            true => None,
            false => rrset::address_of_reverse_wire(name)
                .filter(|ip| names::ReverseName::of(*ip).as_bytes() == name)
                .and_then(|ip| Some((ip, self.ptrs.remove(&ip)?))),
        };
        let address = match self.addresses.is_empty() {
            true => None,
            false => self.held_address(name),
        };
        let ttl = self.ttl;
        let node = self.node_entry(name);
        if let Some((ip, suffix)) = held {
            let target = names::ptr_target(ip, &suffix);
            push_record(node, rtype::PTR, ttl, &target);
        }
        if let Some((ip, shape)) = address {
            // Its records as `records::add_entries` wrote them.
            let packed = names::address_node(ip, &shape, ttl);
            for set in packed.rrsets() {
                for record in records_of(set.body) {
                    push_record(node, set.rtype, ttl, &record[10..]);
                }
                if set.extra_count > 0 {
                    let mut extra = SetWriter {
                        node: &mut *node,
                        rtype: set.rtype,
                        ttl,
                    };
                    extra.entry(EXTRA, set.extra.len());
                    extra.node.extend_from_slice(set.extra);
                }
            }
        }
        node
    }

    /// The address of the endpoint's address name `name`, if it is held as that address.
    fn held_address_of(&self, name: &[u8]) -> Option<IpAddr> {
        let (ip, rest) = names::dashed_first_label(name)?;
        let shape = self.addresses.get(&ip)?;
        (names::Shape::of(shape).rest == rest).then_some(ip)
    }

    /// The endpoint's address name `name` held as an address, taken out to be built again.
    fn held_address(&mut self, name: &[u8]) -> Option<(IpAddr, Suffix)> {
        let ip = self.held_address_of(name)?;
        self.addresses.remove_entry(&ip)
    }

    /// Holds the endpoint's address name `name`, just written, as its address when it is of
    /// the shape a snapshot keeps as one and no other name holds the address that way: a
    /// full build writes 150,000 of them at 10,000 Services, which need not all be names
    /// being built at once.
    pub(crate) fn settle_endpoint_name(&mut self, name: &WireName) {
        if !self.settle {
            return;
        }
        let name = name.as_bytes();
        let Some((ip, _)) = names::dashed_first_label(name) else {
            return;
        };
        if self.addresses.contains_key(&ip) {
            return;
        }
        let hash = self.hasher.hash_one(name);
        let Ok(entry) = self.nodes.find_entry(hash, |node| name_of(node) == name) else {
            return;
        };
        let Some((ip, shape)) = names::address_shape(&pack(entry.get()), self.ttl) else {
            return;
        };
        entry.remove();
        self.addresses.insert(ip, self.suffixes.share(&shape));
    }

    fn node_entry(&mut self, name: &[u8]) -> &mut Vec<u8> {
        let hasher = &self.hasher;
        let hash = hasher.hash_one(name);
        self.nodes
            .entry(
                hash,
                |node| name_of(node) == name,
                |node| hasher.hash_one(name_of(node)),
            )
            .or_insert_with(|| {
                // Exactly the name: most names get one record, which then takes the buffer
                // to its exact size too.
                let mut node = Vec::with_capacity(1 + name.len());
                // Wire names are at most 255 bytes.
                node.push(name.len() as u8);
                node.extend_from_slice(name);
                node
            })
            .into_mut()
    }

    fn contains_node(&self, name: &[u8]) -> bool {
        let hash = self.hasher.hash_one(name);
        self.nodes
            .find(hash, |node| name_of(node) == name)
            .is_some()
    }

    fn contains(&self, name: &[u8]) -> bool {
        self.contains_node(name)
            || (!self.addresses.is_empty() && self.held_address_of(name).is_some())
            || (!self.ptrs.is_empty()
                && Names::may_be_ptr(name)
                && rrset::address_of_reverse_wire(name).is_some_and(|ip| {
                    self.ptrs.contains_key(&ip) && names::ReverseName::of(ip).as_bytes() == name
                }))
    }

    /// Makes sure `name` exists (NODATA for every type it has no records of).
    pub(crate) fn touch(&mut self, name: &WireName) {
        self.node(name);
    }

    /// The RRset of `rtype` at `name`, which exists from now on. Its records have the TTL
    /// of its first record (RFC 2181 §5.2: one TTL a set), `ttl` if it has none yet.
    pub(crate) fn set(&mut self, name: &WireName, rtype: u16, ttl: u32) -> SetWriter<'_> {
        SetWriter {
            node: self.node(name),
            rtype,
            ttl,
        }
    }

    /// Marks `name` as a CNAME to `target`, followed for A and AAAA.
    pub(crate) fn cname(&mut self, name: &WireName, target: WireName) {
        let target = target.as_bytes();
        let mut entry = self.set(name, 0, 0);
        entry.entry(CNAME, target.len());
        entry.node.extend_from_slice(target);
    }

    /// Adds every ancestor of every name, up to its zone's apex, as an empty non-terminal:
    /// a name with names below it exists (RFC 8020). The names it added.
    pub(crate) fn fill_empty_non_terminals(&mut self, zones: &[ServedZone]) -> NameSet {
        let mut missing = NameSet::default();
        let held: Vec<names::ReverseName> = self
            .ptrs
            .keys()
            .map(|ip| names::ReverseName::of(*ip))
            .collect();
        // Each name, and its parent: where the walk up starts. A held address name's parent
        // is the rest of its name (the name itself is not made for this).
        let all = self
            .nodes
            .iter()
            .map(|node| name_of(node))
            .chain(held.iter().map(names::ReverseName::as_bytes))
            .map(|name| (name, parent(name), false));
        let rests = self.addresses.values().map(|shape| {
            let rest = names::Shape::of(shape).rest;
            (rest, Some(rest), true)
        });
        for (name, up, below) in all.chain(rests) {
            let (Some(origin), Some(mut up)) = (zone_origin(zones, name), up) else {
                continue;
            };
            // Up to the origin, and not past it (a name that is the origin has none).
            while (below || name.len() > origin.len()) && up.len() >= origin.len() {
                if !self.contains(up) && !missing.contains(up) {
                    missing.insert(up.to_vec().into_boxed_slice());
                }
                match parent(up) {
                    Some(next) if up.len() > origin.len() => up = next,
                    _ => break,
                }
            }
        }
        for name in &missing {
            self.node_of(name);
        }
        missing
    }

    /// The names built, as a snapshot holds them: an endpoint PTR or an endpoint's address
    /// name of the shape kept as an address goes in as one without its node ever being made
    /// (see `names.rs`), every other name as its node ([`finish`](Self::finish)).
    pub(crate) fn into_names(self) -> Names {
        let mut sizes = Sizes {
            total: self.nodes.len() + self.ptrs.len() + self.addresses.len(),
            ..Sizes::default()
        };
        for ip in self.ptrs.keys() {
            sizes.ptrs[usize::from(ip.is_ipv6())] += 1;
        }
        for ip in self.addresses.keys() {
            sizes.addresses[usize::from(ip.is_ipv6())] += 1;
        }
        for node in &self.nodes {
            let name = name_of(node);
            if Names::may_be_ptr(name) {
                sizes.ptrs[usize::from(name.ends_with(b"\x03ip6\x04arpa\x00"))] += 1;
            } else if let Some(ip) = Names::may_be_address(name) {
                sizes.addresses[usize::from(ip.is_ipv6())] += 1;
            }
        }
        let mut names = Names::sharing(sizes, self.ttl, self.suffixes);
        for (ip, suffix) in self.ptrs {
            names.put_ptr(ip, suffix);
        }
        for (ip, shape) in self.addresses {
            names.put_address_shared(ip, shape);
        }
        for node in self.nodes {
            let name = name_of(&node);
            let mut all = entries(&node);
            if let (Some((RECORD, rtype::PTR, record)), None) = (all.next(), all.next())
                && names.insert_ptr_record(name, record)
            {
                continue;
            }
            // An endpoint's address name is kept as its address from its node.
            names.insert(pack(&node));
        }
        names
    }

    /// The nodes built, each with its RRsets sorted by type (records in the order they
    /// came), each name's buffer freed as its node is packed; the endpoint PTRs held as
    /// addresses made nodes.
    pub(crate) fn finish(self) -> Vec<Node> {
        let ttl = self.ttl;
        let mut nodes =
            Vec::with_capacity(self.nodes.len() + self.ptrs.len() + self.addresses.len());
        nodes.extend(self.nodes.into_iter().map(|node| pack(&node)));
        nodes.extend(
            self.ptrs
                .into_iter()
                .map(|(ip, suffix)| names::ptr_node(ip, &suffix, ttl)),
        );
        nodes.extend(
            self.addresses
                .into_iter()
                .map(|(ip, shape)| names::address_node(ip, &shape, ttl)),
        );
        nodes
    }
}

/// Adds one record with `rdata` to the set of `rtype` of the name being built `node`.
fn push_record(node: &mut Vec<u8>, rtype: u16, ttl: u32, rdata: &[u8]) {
    SetWriter { node, rtype, ttl }.push(rdata);
}

/// [`push_record`], unless the set holds a record with `rdata` already.
fn push_record_unique(node: &mut Vec<u8>, rtype: u16, ttl: u32, rdata: &[u8]) {
    SetWriter { node, rtype, ttl }.push_unique(rdata);
}

/// The records of a set's body (TYPE CLASS TTL RDLENGTH RDATA each).
fn records_of(body: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let len = u16::from_be_bytes([*body.get(at + 8)?, *body.get(at + 9)?]);
        let record = body.get(at..at + 10 + usize::from(len))?;
        at += record.len();
        Some(record)
    })
}

/// The entries after the name of a node being built: (kind, set type, bytes).
fn entries(node: &[u8]) -> impl Iterator<Item = (u8, u16, &[u8])> + '_ {
    let mut at = 1 + usize::from(node[0]);
    std::iter::from_fn(move || {
        let header = node.get(at..at + ENTRY_HEADER)?;
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        let bytes = &node[at + ENTRY_HEADER..at + ENTRY_HEADER + len];
        at += ENTRY_HEADER + len;
        Some((header[0], u16::from_be_bytes([header[1], header[2]]), bytes))
    })
}

/// A node being built, packed.
fn pack(node: &[u8]) -> Node {
    let mut types: SmallVec<[u16; 4]> = SmallVec::new();
    let mut cname = None;
    for (kind, rtype, bytes) in entries(node) {
        match kind {
            CNAME => cname = Some(bytes),
            _ if !types.contains(&rtype) => types.push(rtype),
            _ => {}
        }
    }
    types.sort_unstable();
    let sets: SmallVec<[RrSetBuilder; 2]> = types
        .iter()
        .filter_map(|&rtype| {
            let mut set: Option<RrSetBuilder> = None;
            let mut extra = Vec::new();
            for (kind, of, bytes) in entries(node) {
                if of != rtype {
                    continue;
                }
                match kind {
                    RECORD => set
                        .get_or_insert_with(|| RrSetBuilder::new(rtype, rrset::record_ttl(bytes)))
                        .push_record(bytes),
                    EXTRA => extra.push(bytes),
                    _ => {}
                }
            }
            // Additional records of a set with no records go with it.
            let mut set = set?;
            for record in extra {
                set.push_extra_record(record);
            }
            Some(set)
        })
        .collect();
    Node::pack(name_of(node), cname, &sets)
}

/// The origin of the longest of `zones` that `name` falls in.
pub(crate) fn zone_origin<'z>(zones: &'z [ServedZone], name: &[u8]) -> Option<&'z [u8]> {
    zones
        .iter()
        .map(|zone| zone.origin.as_bytes())
        .filter(|origin| crate::name::suffix_offset(name, origin).is_some())
        .max_by_key(|origin| origin.len())
}
