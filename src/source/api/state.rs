//! The watched state: the objects as the watches last reported them, each resource's listing
//! in progress, and the changes that move them.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Debug;

use super::Resource;
use super::status::ApiStatus;
use crate::model::{Kind, Object, ObjectKey};
use crate::source::publish::Publisher;
use crate::zone;

/// The resource an object comes from.
pub(super) fn resource_of(object: &Object) -> Resource {
    match object {
        Object::Namespace(_) => Resource::Namespaces,
        Object::Service(_) => Resource::Services,
        Object::EndpointSlice(_) => Resource::EndpointSlices,
        Object::Pod(_) => Resource::Pods,
        Object::ServiceImport(_) => Resource::ServiceImports,
    }
}

pub(super) fn namespace_key(name: &str) -> ObjectKey {
    ObjectKey::new("", name)
}

/// What a resource's watch saw.
#[derive(Debug)]
pub(super) enum Change {
    /// A (re-)list starts.
    Init(Resource),
    /// An object was listed, added or modified.
    Upsert(Box<Object>),
    /// An object was deleted (or no longer converts).
    Delete(Resource, ObjectKey),
    /// The list is complete: objects not seen in it are gone.
    InitDone(Resource),
    /// The list or watch failed; the watcher backs off and retries.
    Failed(Resource, String),
    /// The API server has no such resource (404: a CRD not installed): as a complete list
    /// of nothing. The watcher backs off and retries.
    Absent(Resource),
}

/// The objects the watches have seen (kept by the block's [`Publisher`]), and where each
/// resource's list stands.
#[derive(Debug)]
pub(super) struct Watched {
    pub(super) publisher: Publisher,
    pub(super) needed: Vec<Resource>,
    /// Resources listed completely at least once.
    pub(super) listed: HashSet<Resource>,
    /// Resources being (re-)listed, with the keys seen so far.
    pub(super) listing: BTreeMap<Resource, HashSet<ObjectKey>>,
}

impl Watched {
    pub(super) fn new(needed: Vec<Resource>, publisher: Publisher) -> Self {
        Self {
            publisher,
            needed,
            listed: HashSet::new(),
            listing: BTreeMap::new(),
        }
    }

    /// Whether every resource has been listed and none is being re-listed: the objects are
    /// a whole state of the cluster.
    pub(super) fn complete(&self) -> bool {
        self.listing.is_empty() && self.needed.iter().all(|r| self.listed.contains(r))
    }

    /// Applies `change`; whether the objects changed. While a list is under way objects
    /// are edited in place (the zone is built whole once the state is complete again);
    /// otherwise each change goes to the publisher as it is.
    pub(super) fn apply(&mut self, change: Change, status: &ApiStatus) -> bool {
        match change {
            Change::Init(resource) => {
                if self.listed.contains(&resource) {
                    status.relisted(resource);
                }
                self.listing.insert(resource, HashSet::new());
                false
            }
            Change::Upsert(object) => {
                let resource = resource_of(&object);
                if let Some(seen) = self.listing.get_mut(&resource) {
                    seen.insert(object.key());
                }
                if self.as_changes(resource) {
                    self.publisher.change(zone::Change::Upsert(object));
                } else {
                    self.publisher.insert_listed(*object);
                }
                true
            }
            Change::Delete(resource, key) => {
                let kind = kind_of(resource);
                if !self.publisher.holds(kind, &key) {
                    return false;
                }
                if self.as_changes(resource) {
                    self.publisher.change(zone::Change::Delete(kind, key));
                } else {
                    self.publisher.edit().remove(kind, &key);
                }
                true
            }
            Change::InitDone(resource) => {
                let seen = self.listing.remove(&resource).unwrap_or_default();
                let relist = self.listed.contains(&resource);
                self.listed.insert(resource);
                let kind = kind_of(resource);
                if relist {
                    let held = self.publisher.keys_held(kind);
                    for key in held.into_iter().filter(|key| !seen.contains(key)) {
                        self.publisher.change(zone::Change::Delete(kind, key));
                    }
                } else {
                    let gone: Vec<ObjectKey> = self
                        .keys(resource)
                        .filter(|key| !seen.contains(key))
                        .collect();
                    if !gone.is_empty() {
                        let cluster = self.publisher.edit();
                        for key in &gone {
                            cluster.remove(kind, key);
                        }
                    }
                }
                // The end of a list always counts: it may complete the state.
                true
            }
            Change::Failed(resource, error) => {
                status.watch_failed(resource, &error);
                false
            }
            Change::Absent(resource) => {
                status.absent(resource);
                let first = !self.listed.contains(&resource);
                let was_listing = self.listing.remove(&resource).is_some();
                self.listed.insert(resource);
                let kind = kind_of(resource);
                let gone: Vec<ObjectKey> = self.keys(resource).collect();
                for key in gone {
                    if self.complete() && !was_listing {
                        self.publisher.change(zone::Change::Delete(kind, key));
                    } else {
                        self.publisher.edit().remove(kind, &key);
                    }
                }
                first || was_listing
            }
        }
    }

    /// Whether what the watch of `resource` reports goes to the publisher as changes: always
    /// once it has been listed, a re-list included — a re-list is a diff against the objects
    /// held, published (when it is complete) as an update of the names it touched, never a
    /// second whole build beside the served zone. Only a resource's first list edits the
    /// objects directly, for the whole build that the first sync is.
    fn as_changes(&self, resource: Resource) -> bool {
        self.listed.contains(&resource)
    }

    pub(super) fn keys(&self, resource: Resource) -> Box<dyn Iterator<Item = ObjectKey> + '_> {
        self.publisher.cluster().keys_of(kind_of(resource))
    }
}

/// The model's kind of the objects of `resource`.
pub(super) fn kind_of(resource: Resource) -> Kind {
    match resource {
        Resource::Namespaces => Kind::Namespace,
        Resource::Services => Kind::Service,
        Resource::EndpointSlices => Kind::EndpointSlice,
        Resource::Pods => Kind::Pod,
        Resource::ServiceImports => Kind::ServiceImport,
    }
}
