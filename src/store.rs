//! The published state: one [`Snapshot`] per *kubernetes* block, swapped whole.
//!
//! Readers take a cheap guard on the current snapshot for the length of one query and never
//! block; a writer builds the next snapshot off the query path and publishes it in one
//! atomic swap, so no reader ever sees half an update (kube-rs `reflector::Store`, CoreDNS
//! `file` plugin's `snapshot()`/`setData()`).

use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};

use crate::zone::Snapshot;

/// The current snapshot of one *kubernetes* block.
#[derive(Debug)]
pub struct Store {
    current: ArcSwap<Snapshot>,
}

impl Store {
    /// A store holding `snapshot`.
    pub fn new(snapshot: Snapshot) -> Self {
        Self {
            current: ArcSwap::from_pointee(snapshot),
        }
    }

    /// A store holding a snapshot already shared (another store's, carried over a reload).
    pub fn from_shared(snapshot: Arc<Snapshot>) -> Self {
        Self {
            current: ArcSwap::new(snapshot),
        }
    }

    /// The current snapshot, for the duration of one query.
    pub fn load(&self) -> Guard<Arc<Snapshot>> {
        self.current.load()
    }

    /// The current snapshot, to keep.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Replaces the snapshot; queries already running finish on the old one.
    pub fn publish(&self, snapshot: Snapshot) {
        self.current.store(Arc::new(snapshot));
    }
}
