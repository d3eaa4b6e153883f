//! The one place that turns cluster changes into published zones.
//!
//! A [`Publisher`] owns the objects of one *kubernetes* block (the only copy the process
//! keeps) and the store they are published to. The objects files, the API watch and
//! start-up all go through it: it applies changes, builds the next zone (only the names the
//! changes touched, or whole after a list), picks the SOA serial, observes programming
//! latency and keeps the store metrics.
//!
//! The serial is the time of the last change in Unix seconds, never behind the previous
//! one and never ahead of the clock: publications within one second share it, as CoreDNS's
//! `Modified()` does.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::programming::{self, SliceStamps, SliceTrigger};
use crate::config::KubernetesConfig;
use crate::metrics::process::{ObjectCounts, StoreMetrics};
use crate::model::{Cluster, Kind, Object, ObjectKey};
use crate::store::Store;
use crate::zone::{self, Applied, BuildContext, Change, Incremental, Snapshot};

/// The longest TTL of answers from a restored snapshot file, until the API server is synced.
pub const RESTORED_TTL: u32 = 5;

/// Owns a block's objects and publishes its zone.
#[derive(Debug)]
pub struct Publisher {
    config: KubernetesConfig,
    local_ips: Vec<IpAddr>,
    cluster: Cluster,
    /// What updates follow; `None` until the first publication, which builds the zone whole
    /// (after it, [`Incremental`] alone decides when a change is too large to update).
    zone: Option<Incremental>,
    /// Changes not published yet.
    pending: Vec<Change>,
    /// The kind and key of each change in `pending`, and whether the last of them leaves
    /// the object present (an upsert) or not (a delete).
    pending_keys: HashMap<(Kind, ObjectKey), bool>,
    store: Arc<Store>,
    metrics: Option<Arc<StoreMetrics>>,
    tracker: Option<SliceStamps>,
    /// What changed since the snapshot file last took the objects, when one is kept.
    unwritten: Unwritten,
}

/// What changed in the objects since the snapshot file last took them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Unwritten {
    /// Nothing is recorded (no snapshot file is kept).
    #[default]
    Untracked,
    /// The objects were replaced or edited whole (a list): the file is written whole.
    Whole,
    /// The kind and key of each object published as changed (added, modified or deleted).
    Keys(std::collections::HashSet<(Kind, ObjectKey)>),
}

/// What one publication did.
#[derive(Debug, Clone, Copy)]
pub struct Publication {
    /// The SOA serial published.
    pub serial: u32,
    /// Names in the zone.
    pub names: usize,
    /// Whether the zone was built whole.
    pub whole: bool,
    /// How long building took.
    pub build_time: Duration,
    /// The objects the zone was built from.
    pub counts: ObjectCounts,
}

impl Publisher {
    /// A publisher of `config`'s zone to `store`, with no objects yet.
    pub fn new(
        config: KubernetesConfig,
        local_ips: Vec<IpAddr>,
        store: Arc<Store>,
        metrics: Option<Arc<StoreMetrics>>,
    ) -> Self {
        Self {
            config,
            local_ips,
            cluster: Cluster::default(),
            zone: None,
            pending: Vec::new(),
            pending_keys: HashMap::new(),
            store,
            metrics,
            tracker: None,
            unwritten: Unwritten::Untracked,
        }
    }

    /// Builds the first zone of `cluster` whole (its serial from `changed`, the time of the
    /// last change) and a store holding it, with a publisher for what follows.
    pub fn start(
        config: KubernetesConfig,
        local_ips: Vec<IpAddr>,
        cluster: Cluster,
        changed: SystemTime,
        metrics: Option<Arc<StoreMetrics>>,
    ) -> (Self, Publication) {
        let mut cluster = needed(cluster, &config);
        cluster.compact();
        let ctx = BuildContext {
            local_ips: local_ips.clone(),
            serial: unix_seconds(changed),
        };
        let started = Instant::now();
        let (snapshot, zone) = Incremental::build(&cluster, &config, &ctx);
        let build_time = started.elapsed();
        let store = Arc::new(Store::new(snapshot));
        let mut publisher = Self::new(config, local_ips, store, metrics);
        publisher.cluster = cluster;
        publisher.zone = Some(zone);
        let snapshot = publisher.store.load();
        let published = Publication {
            serial: snapshot.serial(),
            names: snapshot.name_count(),
            whole: true,
            build_time,
            counts: publisher.counts(),
        };
        drop(snapshot);
        publisher.counts_published(published.serial, SystemTime::now());
        (publisher, published)
    }

    /// The store the zone is published to.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The block the zone is built for.
    pub fn config(&self) -> &KubernetesConfig {
        &self.config
    }

    /// The objects, as last changed.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Programming latency is observed from now on by `tracker`.
    pub fn track(&mut self, tracker: SliceStamps) {
        self.tracker = Some(tracker);
    }

    /// Records from now on what changes for the snapshot file ([`take_unwritten`]); the first
    /// write is whole.
    ///
    /// [`take_unwritten`]: Self::take_unwritten
    pub fn record_unwritten(&mut self) {
        self.unwritten = Unwritten::Whole;
    }

    /// What changed since the last call (the snapshot file takes it), recording afresh.
    pub fn take_unwritten(&mut self) -> Unwritten {
        match self.unwritten {
            Unwritten::Untracked => Unwritten::Untracked,
            _ => std::mem::replace(&mut self.unwritten, Unwritten::Keys(Default::default())),
        }
    }

    /// Whether the snapshot file is to be written whole next (not only what changed).
    pub fn unwritten_whole(&self) -> bool {
        self.unwritten == Unwritten::Whole
    }

    /// Takes `change`: applied to the objects at once before the first publication (which
    /// builds the zone whole), queued for the next update after it. A change of nothing the
    /// zone reads is dropped.
    pub fn change(&mut self, mut change: Change) {
        if let Change::Upsert(object) = &mut change {
            zone::trim(object, &self.config);
        }
        if self.zone.is_none() {
            apply(&mut self.cluster, change);
            return;
        }
        let (kind, key) = (change.kind(), change.key());
        let queued = self.pending_keys.get(&(kind, key.clone())).copied();
        match &change {
            // A change of nothing the zone reads (a pod's conditions, an object's
            // annotations) is no change.
            Change::Upsert(object) => {
                if queued.is_none() && self.cluster.get(kind, &key) == Some(object.borrowed()) {
                    return;
                }
            }
            // Deleting what is not there (or already going) is no change.
            Change::Delete(..) => {
                if !queued.unwrap_or_else(|| self.cluster.get(kind, &key).is_some()) {
                    return;
                }
            }
        }
        let present = matches!(change, Change::Upsert(_));
        self.pending_keys.insert((kind, key), present);
        self.pending.push(change);
    }

    /// Whether the object of `kind` at `key` is there once the queued changes are applied.
    pub fn holds(&self, kind: Kind, key: &ObjectKey) -> bool {
        match self.pending_keys.get(&(kind, key.clone())) {
            Some(present) => *present,
            None => self.cluster.get(kind, key).is_some(),
        }
    }

    /// The keys of the objects of `kind` there once the queued changes are applied.
    pub fn keys_held(&self, kind: Kind) -> Vec<ObjectKey> {
        let mut keys: Vec<ObjectKey> = self
            .cluster
            .keys_of(kind)
            .filter(|key| self.pending_keys.get(&(kind, key.clone())) != Some(&false))
            .collect();
        keys.extend(
            self.pending_keys
                .iter()
                .filter(|((queued, key), present)| {
                    *queued == kind && **present && self.cluster.get(kind, key).is_none()
                })
                .map(|((_, key), _)| key.clone()),
        );
        keys
    }

    /// Queues the changes that turn the objects into `cluster` (an objects file read again).
    pub fn replace(&mut self, cluster: Cluster) {
        let changes = diff(&self.cluster, needed(cluster, &self.config));
        for change in changes {
            self.change(change);
        }
    }

    /// Whether the next publication builds the zone whole (worth a blocking thread).
    pub fn needs_whole(&self) -> bool {
        self.zone.is_none()
    }

    /// Whether there is anything to publish.
    pub fn is_dirty(&self) -> bool {
        self.zone.is_none() || !self.pending.is_empty()
    }

    /// Publishes the zone of the objects as changed, with a serial for a change at `at`
    /// (`None` when nothing changed since the last publication).
    pub fn publish(&mut self, at: SystemTime) -> Option<Publication> {
        if !self.is_dirty() {
            return None;
        }
        let previous = self.store.snapshot();
        let serial = unix_seconds(at).max(previous.serial());
        let started = Instant::now();
        let changes = std::mem::take(&mut self.pending);
        self.pending_keys.clear();
        if let Unwritten::Keys(keys) = &mut self.unwritten {
            keys.extend(changes.iter().map(|change| (change.kind(), change.key())));
        }
        let touched: Vec<(Kind, crate::model::ObjectKey)> = changes
            .iter()
            .filter(|change| change.kind() == Kind::EndpointSlice)
            .map(|change| (change.kind(), change.key()))
            .collect();
        let (snapshot, whole) = match &mut self.zone {
            Some(zone) => {
                let (snapshot, applied) = zone.apply(&mut self.cluster, changes, &previous, serial);
                (snapshot, applied == Applied::Whole)
            }
            None => {
                // The first sync, or the end of a list the objects were edited through:
                // held from now on, so packed first.
                self.cluster.compact();
                let ctx = BuildContext {
                    local_ips: self.local_ips.clone(),
                    serial,
                };
                let (snapshot, zone) = Incremental::build(&self.cluster, &self.config, &ctx);
                self.zone = Some(zone);
                (snapshot, true)
            }
        };
        drop(previous);
        let build_time = started.elapsed();
        let now = SystemTime::now();
        // Metrics first: whoever sees the new answers finds them counted.
        let published = {
            let slices: Vec<_> = touched.iter().map(|(_, key)| key).collect();
            self.observe(whole, now, &slices);
            self.counts_published(serial, now);
            Publication {
                serial,
                names: snapshot.name_count(),
                whole,
                build_time,
                counts: self.counts(),
            }
        };
        self.store.publish(snapshot);
        Some(published)
    }

    fn counts_published(&self, serial: u32, now: SystemTime) {
        if let Some(metrics) = &self.metrics {
            metrics.published(serial, self.counts(), now);
        }
    }

    /// Programming latency of the slices changed (all of them after a whole build).
    fn observe(&mut self, whole: bool, now: SystemTime, slices: &[&crate::model::ObjectKey]) {
        let Some(tracker) = &mut self.tracker else {
            return;
        };
        let latencies = if whole {
            tracker.published(&programming::triggers(&self.cluster), now)
        } else {
            let triggers: Vec<SliceTrigger> = programming::triggers_of(&self.cluster, slices);
            tracker.changed(&triggers, slices, now)
        };
        if let Some(metrics) = &self.metrics {
            metrics.programmed(&latencies);
        }
    }

    /// The objects by kind.
    pub fn counts(&self) -> ObjectCounts {
        counts(&self.cluster)
    }
}

/// The objects of `cluster` by kind.
pub fn counts(cluster: &Cluster) -> ObjectCounts {
    ObjectCounts {
        namespaces: cluster.namespaces.len() as u64,
        services: cluster.services.len() as u64,
        endpoint_slices: cluster.endpoint_slices.len() as u64,
        pods: cluster.pods.len() as u64,
    }
}

/// The zone of a snapshot file written at `written`, served until the API server is
/// synced: its answers live at most [`RESTORED_TTL`], so clients ask again soon after.
pub fn restored(
    cluster: &Cluster,
    config: &KubernetesConfig,
    local_ips: &[IpAddr],
    written: SystemTime,
) -> Snapshot {
    let mut short = config.clone();
    short.ttl = short.ttl.min(RESTORED_TTL);
    standalone(cluster, &short, local_ips, written)
}

/// The zone of `cluster` built whole, for a store that no publisher feeds yet.
pub fn standalone(
    cluster: &Cluster,
    config: &KubernetesConfig,
    local_ips: &[IpAddr],
    at: SystemTime,
) -> Snapshot {
    let ctx = BuildContext {
        local_ips: local_ips.to_vec(),
        serial: unix_seconds(at),
    };
    zone::build(cluster, config, &ctx)
}

/// What of `cluster` the zone of `config` is built from: pods only for `pods verified` (an
/// objects file holds them for the other commands; kept, they would only cost memory), and
/// of each object only what the zone reads ([`zone::trim`]).
fn needed(mut cluster: Cluster, config: &KubernetesConfig) -> Cluster {
    if config.pods != crate::config::PodMode::Verified {
        cluster.pods.clear();
    }
    if config.multicluster.is_empty() {
        cluster.service_imports.clear();
    }
    zone::trim_cluster(&mut cluster, config);
    cluster
}

fn apply(cluster: &mut Cluster, change: Change) {
    match change {
        Change::Upsert(object) => {
            cluster.replace(*object);
        }
        Change::Delete(kind, key) => {
            cluster.remove(kind, &key);
        }
    }
}

/// The changes that turn `old` into `new`.
pub fn diff(old: &Cluster, new: Cluster) -> Vec<Change> {
    let mut changes = Vec::new();
    let Cluster {
        namespaces,
        services,
        endpoint_slices,
        pods,
        service_imports,
    } = new;
    for name in old.namespaces.keys() {
        if !namespaces.contains_key(name) {
            changes.push(Change::Delete(
                Kind::Namespace,
                crate::model::ObjectKey::new("", name.as_str()),
            ));
        }
    }
    macro_rules! keyed {
        ($old:expr, $new:expr, $kind:expr, $variant:path) => {
            for key in $old.keys() {
                if !$new.contains_key(key) {
                    changes.push(Change::Delete($kind, key.clone()));
                }
            }
            for (key, object) in $new {
                if $old.get(&key) != Some(&object) {
                    changes.push(Change::Upsert(Box::new($variant(object))));
                }
            }
        };
    }
    for (name, namespace) in namespaces {
        if old.namespaces.get(&name) != Some(&namespace) {
            changes.push(Change::Upsert(Box::new(Object::Namespace(namespace))));
        }
    }
    keyed!(old.services, services, Kind::Service, Object::Service);
    keyed!(
        old.endpoint_slices,
        endpoint_slices,
        Kind::EndpointSlice,
        Object::EndpointSlice
    );
    keyed!(old.pods, pods, Kind::Pod, Object::Pod);
    keyed!(
        old.service_imports,
        service_imports,
        Kind::ServiceImport,
        Object::ServiceImport
    );
    changes
}

/// Unix seconds of `at` (0 before the epoch).
pub fn unix_seconds(at: SystemTime) -> u32 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u32::try_from(since.as_secs()).unwrap_or(u32::MAX)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::PathBuf;

    use super::*;
    use crate::source::read_objects;

    fn shop() -> Cluster {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/shop.json");
        read_objects(&[path]).unwrap().cluster
    }

    fn config() -> KubernetesConfig {
        let zones = ["cluster.local.", "in-addr.arpa.", "ip6.arpa."]
            .iter()
            .map(|z| z.parse().unwrap())
            .collect();
        KubernetesConfig::new(zones, 0, 1)
    }

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn the_serial_follows_the_clock_and_never_runs_ahead_of_it() {
        let (mut publisher, first) =
            Publisher::start(config(), Vec::new(), shop(), at(1_000), None);
        assert_eq!(first.serial, 1_000);
        let mut cluster = shop();
        for round in 0..50u64 {
            // Fifty changes within one second share its serial.
            let service = cluster.services.values_mut().next().unwrap();
            service.cluster_ips = vec![format!("10.96.9.{round}").parse().unwrap()];
            publisher.replace(cluster.clone());
            let published = publisher.publish(at(2_000)).unwrap();
            assert_eq!(published.serial, 2_000);
            assert!(!published.whole);
        }
        // A clock that steps back keeps the serial where it was.
        publisher.replace(shop());
        assert_eq!(publisher.publish(at(1_500)).unwrap().serial, 2_000);
        assert_eq!(publisher.store().load().serial(), 2_000);
        assert!(publisher.publish(at(3_000)).is_none(), "nothing changed");
    }

    #[test]
    fn a_change_of_nothing_the_zone_reads_publishes_nothing() {
        let cluster = shop();
        let (mut publisher, _) =
            Publisher::start(config(), Vec::new(), cluster.clone(), at(1), None);
        let mut service = cluster
            .services
            .values()
            .find(|service| service.selector.is_some() && !service.ports.is_empty())
            .unwrap()
            .clone();
        service.labels.insert("release".into(), "2".into());
        service.selector = Some([("app".to_owned(), "other".to_owned())].into());
        publisher.change(Change::Upsert(Box::new(Object::Service(service.clone()))));
        assert!(!publisher.is_dirty());
        assert!(publisher.publish(at(2)).is_none());
        let mut slice = cluster.endpoint_slices.values().next().unwrap().clone();
        for endpoint in &mut slice.endpoints {
            endpoint
                .details
                .edit(|d| d.node_name = Some("elsewhere".into()));
        }
        publisher.change(Change::Upsert(Box::new(Object::EndpointSlice(slice))));
        assert!(publisher.publish(at(3)).is_none());
        // A port is read: published.
        service.ports[0].port += 1;
        publisher.change(Change::Upsert(Box::new(Object::Service(service))));
        let published = publisher.publish(at(4)).unwrap();
        assert!(!published.whole);
        assert_eq!(published.serial, 4);
    }

    #[test]
    fn a_changed_file_is_applied_as_a_diff_of_objects() {
        let old = shop();
        let mut new = shop();
        let first = new.services.keys().next().unwrap().clone();
        new.services.remove(&first);
        let slice = new.endpoint_slices.values_mut().next().unwrap();
        slice.endpoints.clear();
        let changes = diff(&old, new.clone());
        assert_eq!(changes.len(), 2, "{changes:#?}");
        let (mut publisher, _) = Publisher::start(config(), Vec::new(), old, at(1), None);
        publisher.replace(new.clone());
        let published = publisher.publish(at(2)).unwrap();
        assert!(!published.whole);
        let mut kept = new.clone();
        kept.pods.clear();
        crate::zone::trim_cluster(&mut kept, &config());
        assert_eq!(
            publisher.cluster(),
            &kept,
            "pods are kept for `pods verified` only, and of the objects what the zone reads"
        );
        assert!(
            publisher
                .cluster()
                .services
                .values()
                .all(|service| service.selector.as_ref().is_none_or(|s| s.is_empty())),
            "trimmed"
        );
        let full = standalone(&new, &config(), &[], at(2));
        let zone_file = |snapshot: &Snapshot| {
            let mut lines: Vec<String> = crate::zone::zonefile::zone_file(snapshot, None)
                .lines()
                .map(str::to_owned)
                .collect();
            lines.sort_unstable();
            lines
        };
        assert_eq!(zone_file(&publisher.store().load()), zone_file(&full));
    }
}
