//! The watch's state: the objects as the watches last reported them, each kind's listing
//! in progress, and the changes that move them.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Debug;

use super::status::ApiStatus;
use crate::model::{Kind, Object, ObjectKey};
use crate::source::publish::Publisher;
use crate::zone;

/// The keys a list has seen.
pub(super) type Seen = HashSet<ObjectKey, ahash::RandomState>;

pub(super) fn namespace_key(name: &str) -> ObjectKey {
    ObjectKey::new("", name)
}

/// What a kind's watch saw.
#[derive(Debug)]
pub(super) enum Change {
    /// A (re-)list starts.
    Init(Kind),
    /// An object was listed, added or modified.
    Upsert(Box<Object>),
    /// An object was deleted (or no longer converts).
    Delete(Kind, ObjectKey),
    /// The list is complete: objects not seen in it are gone.
    InitDone(Kind),
    /// The list or watch failed; the watcher backs off and retries.
    Failed(Kind, String),
    /// The API server refused a streaming list (why): the kind is listed in pages from now
    /// on. Nothing was listed by the refused request.
    ListFallback(Kind, String),
    /// The API server has no such kind (404: a CRD not installed): as a complete list
    /// of nothing. The watcher backs off and retries.
    Absent(Kind),
}

/// The objects the watches have seen (kept by the block's [`Publisher`]), and where each
/// kind's list stands.
#[derive(Debug)]
pub(super) struct WatchState {
    pub(super) publisher: Publisher,
    pub(super) needed: Vec<Kind>,
    /// Resources listed completely at least once.
    pub(super) listed: HashSet<Kind>,
    /// Resources being (re-)listed, with the keys seen so far: `None` when no object of
    /// the kind was held as the list began (the first list of a start without a snapshot
    /// file), when nothing can be gone at its end and no key is kept (150,000 of them for
    /// the pods of a large cluster).
    pub(super) listing: BTreeMap<Kind, Option<Seen>>,
}

impl WatchState {
    pub(super) fn new(needed: Vec<Kind>, publisher: Publisher) -> Self {
        Self {
            publisher,
            needed,
            listed: HashSet::new(),
            listing: BTreeMap::new(),
        }
    }

    /// Whether every kind has been listed and none is being re-listed: the objects are
    /// a whole state of the cluster.
    pub(super) fn complete(&self) -> bool {
        self.listing.is_empty() && self.needed.iter().all(|r| self.listed.contains(r))
    }

    /// Applies `change`; whether the objects changed. Every object listed, added, modified or
    /// found gone goes to the publisher as a change: the publisher alone decides whether the
    /// next zone is built whole (the first sync) or updated (everything after, a re-list's diff
    /// included).
    pub(super) fn apply(&mut self, change: Change, status: &ApiStatus) -> bool {
        match change {
            Change::Init(kind) => {
                if self.listed.contains(&kind) {
                    status.relisted(kind);
                }
                let held = self.keys(kind).next().is_some();
                self.listing.insert(kind, held.then(Seen::default));
                false
            }
            Change::Upsert(object) => {
                let kind = object.kind();
                if let Some(Some(seen)) = self.listing.get_mut(&kind) {
                    seen.insert(object.key());
                }
                self.publisher.change(zone::Change::Upsert(object));
                true
            }
            Change::Delete(kind, key) => {
                if !self.publisher.holds(kind, &key) {
                    return false;
                }
                self.publisher.change(zone::Change::Delete(kind, key));
                true
            }
            Change::InitDone(kind) => {
                let seen = self.listing.remove(&kind).flatten();
                self.listed.insert(kind);
                // Nothing was held as the list began: all held now, it listed.
                let Some(seen) = seen else {
                    return true;
                };
                let held = self.publisher.keys_held(kind);
                for key in held.into_iter().filter(|key| !seen.contains(key)) {
                    self.publisher.change(zone::Change::Delete(kind, key));
                }
                // The end of a list always counts: it may complete the state.
                true
            }
            Change::Failed(kind, error) => {
                status.watch_failed(kind, &error);
                false
            }
            Change::ListFallback(kind, why) => {
                status.list_fallback(kind, &why);
                false
            }
            Change::Absent(kind) => {
                status.absent(kind);
                let first = !self.listed.contains(&kind);
                let was_listing = self.listing.remove(&kind).is_some();
                self.listed.insert(kind);
                for key in self.publisher.keys_held(kind) {
                    self.publisher.change(zone::Change::Delete(kind, key));
                }
                first || was_listing
            }
        }
    }

    pub(super) fn keys(&self, kind: Kind) -> Box<dyn Iterator<Item = ObjectKey> + '_> {
        self.publisher.cluster().keys_of(kind)
    }
}
