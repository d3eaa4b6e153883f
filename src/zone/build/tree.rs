//! The shape of the name tree, kept beside a built zone so that an update adds and removes
//! empty non-terminals as a full build would.

use crate::name::parent;
use crate::zone::ServedZone;
use crate::zone::map::Map;
use crate::zone::names::Names;
use crate::zone::node::Node;
use crate::zone::writer::zone_origin;

/// The shape of the zone's name tree that an update needs to add and remove empty
/// non-terminals as a full build would: for every name with names directly below it, how
/// many, and whether it would exist without them (a built name, not an empty non-terminal).
/// A name that is absent here has no name below it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tree {
    parents: Map<Box<[u8]>, Parent>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parent {
    children: u32,
    built: bool,
}

impl Tree {
    /// The tree of `names` (every name of a zone, `filled` the empty non-terminals among
    /// them).
    pub(super) fn of(
        zones: &[ServedZone],
        names: impl Iterator<Item = impl AsRef<[u8]>>,
        filled: &crate::zone::writer::NameSet,
    ) -> Self {
        let mut parents: Map<Box<[u8]>, Parent> = Map::default();
        for name in names {
            let Some(up) = Self::parent_in(zones, name.as_ref()) else {
                continue;
            };
            parents
                .entry(up.into())
                .or_insert_with(|| Parent {
                    children: 0,
                    built: !filled.contains(up),
                })
                .children += 1;
        }
        Self { parents }
    }

    /// The parent of `name` inside its zone (none for an apex or a name outside the zones).
    fn parent_in<'n>(zones: &[ServedZone], name: &'n [u8]) -> Option<&'n [u8]> {
        let origin = zone_origin(zones, name)?;
        if name.len() <= origin.len() {
            return None;
        }
        parent(name)
    }

    /// Whether `name` is in `nodes` as a built name (not only as an empty non-terminal).
    pub(crate) fn is_built(&self, nodes: &Names, name: &[u8]) -> bool {
        match self.parents.get(name) {
            Some(parent) => parent.built,
            None => nodes.contains_key(name),
        }
    }

    /// Puts the built name `node` in `nodes`, adding the empty non-terminals it needs above
    /// it.
    pub(crate) fn insert(&mut self, zones: &[ServedZone], nodes: &mut Names, node: Node) {
        if let Some(parent) = self.parents.get_mut(node.name()) {
            parent.built = true;
        }
        // The name outlives the node moved in; on the stack, as almost every name fits (an
        // update replaces names far more often than it adds one).
        let key: smallvec::SmallVec<[u8; 96]> = smallvec::SmallVec::from_slice(node.name());
        if !nodes.insert(node) {
            self.link(zones, nodes, &key);
        }
    }

    /// `name` (new in `nodes`) counts as a child of its parent, which exists from now on.
    fn link(&mut self, zones: &[ServedZone], nodes: &mut Names, name: &[u8]) {
        let Some(up) = Self::parent_in(zones, name) else {
            return;
        };
        if let Some(parent) = self.parents.get_mut(up) {
            parent.children += 1;
            return;
        }
        let existed = nodes.contains_key(up);
        self.parents.insert(
            up.into(),
            Parent {
                children: 1,
                built: existed,
            },
        );
        if !existed {
            nodes.insert(Node::empty(up));
            self.link(zones, nodes, up);
        }
    }

    /// `name` is no longer built: it leaves `nodes`, unless names below it keep it as an
    /// empty non-terminal; parents left with neither go too.
    pub(crate) fn remove(&mut self, zones: &[ServedZone], nodes: &mut Names, name: &[u8]) {
        if let Some(parent) = self.parents.get_mut(name) {
            parent.built = false;
            nodes.insert(Node::empty(name));
            return;
        }
        if nodes.remove(name) {
            self.unlink(zones, nodes, name);
        }
    }

    fn unlink(&mut self, zones: &[ServedZone], nodes: &mut Names, name: &[u8]) {
        let Some(up) = Self::parent_in(zones, name) else {
            return;
        };
        let Some(parent) = self.parents.get_mut(up) else {
            return;
        };
        parent.children -= 1;
        if parent.children > 0 {
            return;
        }
        let built = parent.built;
        self.parents.remove(up);
        if !built {
            nodes.remove(up);
            self.unlink(zones, nodes, up);
        }
    }
}
