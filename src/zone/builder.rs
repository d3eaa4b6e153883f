//! Accumulating the names of a zone while it is built: each name's RRsets and CNAME target,
//! packed into [`Node`]s at the end. The full build and the update both write through a
//! [`Builder`], and the record writers of `records` and `build` take one.

use std::borrow::Cow;
use std::collections::HashSet;

use smallvec::SmallVec;

use super::name::{WireName, parent};
use super::node::Node;
use super::rrset::RrSetBuilder;
use super::{Map, ServedZone};

/// Accumulates nodes while a snapshot is built.
#[derive(Debug)]
pub(crate) struct Builder {
    pub(crate) ttl: u32,
    /// The TTL of SRV records (and CNAMEs to load balancers): `ttl`, except in
    /// *k8s_external*'s zones, where CoreDNS gives them the *kubernetes* plugin's.
    pub(crate) srv_ttl: u32,
    nodes: Map<Box<[u8]>, NodeBuilder>,
}

#[derive(Debug, Default)]
struct NodeBuilder {
    /// A name holds a handful of types, most names one: inline, not a map (nor a vector's
    /// four-set first allocation for each of a zone's hundreds of thousands of names).
    sets: SmallVec<[RrSetBuilder; 1]>,
    cname: Option<Box<[u8]>>,
}

impl Builder {
    pub(crate) fn new(ttl: u32) -> Self {
        Self {
            ttl,
            srv_ttl: ttl,
            nodes: Map::default(),
        }
    }

    fn node(&mut self, name: &WireName) -> &mut NodeBuilder {
        // Names are built from lower-case object names, so the key is usually the name as
        // is; only a new node allocates its key.
        let bytes = name.as_bytes();
        let key: Cow<'_, [u8]> = if bytes.iter().any(u8::is_ascii_uppercase) {
            Cow::Owned(bytes.to_ascii_lowercase())
        } else {
            Cow::Borrowed(bytes)
        };
        if !self.nodes.contains_key(&key[..]) {
            self.nodes
                .insert(key.to_vec().into_boxed_slice(), NodeBuilder::default());
        }
        // Just inserted if it was missing.
        self.nodes
            .get_mut(&key[..])
            .unwrap_or_else(|| unreachable!())
    }

    /// Makes sure `name` exists (NODATA for every type it has no records of).
    pub(crate) fn touch(&mut self, name: &WireName) {
        self.node(name);
    }

    /// The RRset of `rtype` at `name`, created with `ttl` if new.
    pub(crate) fn set(&mut self, name: &WireName, rtype: u16, ttl: u32) -> &mut RrSetBuilder {
        let sets = &mut self.node(name).sets;
        let index = match sets.iter().position(|set| set.rtype() == rtype) {
            Some(index) => index,
            None => {
                sets.push(RrSetBuilder::new(rtype, ttl));
                sets.len() - 1
            }
        };
        &mut sets[index]
    }

    /// Marks `name` as a CNAME to `target`, followed for A and AAAA.
    pub(crate) fn cname(&mut self, name: &WireName, target: WireName) {
        self.node(name).cname = Some(target.as_bytes().into());
    }

    /// Adds every ancestor of every name, up to its zone's apex, as an empty non-terminal:
    /// a name with names below it exists (RFC 8020). The names it added.
    pub(crate) fn fill_empty_non_terminals(&mut self, zones: &[ServedZone]) -> HashSet<Box<[u8]>> {
        let mut missing = HashSet::new();
        for name in self.nodes.keys() {
            let Some(origin) = zone_origin(zones, name) else {
                continue;
            };
            let mut at: &[u8] = name;
            while at.len() > origin.len() {
                let Some(up) = parent(at) else { break };
                if !self.nodes.contains_key(up) && !missing.contains(up) {
                    missing.insert(up.to_vec().into_boxed_slice());
                }
                at = up;
            }
        }
        for key in &missing {
            self.nodes.entry(key.clone()).or_default();
        }
        missing
    }

    /// The nodes built, each with its RRsets sorted by type and the empty ones dropped.
    pub(crate) fn finish(self) -> Vec<Node> {
        self.nodes
            .into_iter()
            .map(|(key, mut node)| {
                node.sets.retain(|set| !set.is_empty());
                node.sets.sort_by_key(RrSetBuilder::rtype);
                Node::pack(&key, node.cname.as_deref(), &node.sets)
            })
            .collect()
    }
}

/// The origin of the longest of `zones` that `name` falls in.
pub(crate) fn zone_origin<'z>(zones: &'z [ServedZone], name: &[u8]) -> Option<&'z [u8]> {
    zones
        .iter()
        .map(|zone| zone.origin.as_bytes())
        .filter(|origin| super::name::suffix_offset(name, origin).is_some())
        .max_by_key(|origin| origin.len())
}
