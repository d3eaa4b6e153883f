//! Keeping a store current with its objects files: load, build, publish, and again on every
//! change. A file that fails to load leaves the last good snapshot in place.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::file::{self, Loaded};
use super::programming::{self, SliceTrigger, Tracker};
use crate::config::KubernetesConfig;
use crate::metrics::process::{ObjectCounts, StoreMetrics};
use crate::store::Store;
use crate::zone::{self, BuildContext, Snapshot};

/// How long a burst of file events settles before the files are read again.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// One loaded state of the objects files: the zone, and what it was built from.
#[derive(Debug)]
pub struct LoadedZone {
    /// The zone built from the files.
    pub snapshot: Snapshot,
    /// Objects of kinds the zone does not use, by kind.
    pub ignored: std::collections::BTreeMap<String, usize>,
    /// How long reading and converting the files took.
    pub read_time: Duration,
    /// How long building the zone took.
    pub build_time: Duration,
    /// The objects the zone was built from, by kind.
    pub counts: ObjectCounts,
    /// The change stamps of its EndpointSlices, for programming latency.
    pub triggers: Vec<SliceTrigger>,
    fingerprint: u64,
}

/// Reads `paths` and builds the zone of `config`. The SOA serial is the newest file
/// modification time (the time of the last change), and always above `previous`.
pub fn load(
    paths: &[PathBuf],
    config: &KubernetesConfig,
    local_ips: &[std::net::IpAddr],
    previous: Option<u32>,
) -> Result<LoadedZone, file::Error> {
    let fingerprint = fingerprint(paths);
    let started = Instant::now();
    let Loaded {
        cluster, ignored, ..
    } = file::read_objects(paths)?;
    let modified = paths
        .iter()
        .filter_map(|path| std::fs::metadata(path).and_then(|m| m.modified()).ok())
        .max()
        .unwrap_or_else(SystemTime::now);
    let mut serial = modified.duration_since(UNIX_EPOCH).map_or(0, |elapsed| {
        u32::try_from(elapsed.as_secs()).unwrap_or(u32::MAX)
    });
    if let Some(previous) = previous
        && serial <= previous
    {
        serial = previous.wrapping_add(1);
    }
    let ctx = BuildContext {
        local_ips: local_ips.to_vec(),
        serial,
    };
    let read_time = started.elapsed();
    let counts = ObjectCounts {
        namespaces: cluster.namespaces.len() as u64,
        services: cluster.services.len() as u64,
        endpoint_slices: cluster.endpoint_slices.len() as u64,
        pods: cluster.pods.len() as u64,
    };
    let started = Instant::now();
    let snapshot = zone::build(&cluster, config, &ctx);
    let build_time = started.elapsed();
    let triggers = programming::triggers(&cluster);
    // The objects are dropped here, before the snapshot is published: only the zone stays.
    drop(cluster);
    Ok(LoadedZone {
        snapshot,
        ignored,
        read_time,
        build_time,
        counts,
        triggers,
        fingerprint,
    })
}

/// What the files look like on disk (size, modification time, inode — through symlinks, so
/// a ConfigMap's swapped `..data` link counts), to skip rebuilding when an event in the
/// directory changed none of them. Reading metadata, not content: objects files of a large
/// cluster are hundreds of megabytes.
fn fingerprint(paths: &[PathBuf]) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for path in paths {
        path.hash(&mut hasher);
        match std::fs::metadata(path) {
            Ok(meta) => (
                meta.len(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ino(),
                meta.dev(),
            )
                .hash(&mut hasher),
            Err(error) => error.kind().hash(&mut hasher),
        }
    }
    hasher.finish()
}

/// Watches the objects files of `config` and republishes `store` whenever their content
/// changes, until `shutdown`. Directories are watched rather than files, so that replacing a
/// file by rename (editors, Kubernetes ConfigMap volumes) is seen too.
pub fn watch(
    config: KubernetesConfig,
    local_ips: Vec<std::net::IpAddr>,
    store: Arc<Store>,
    initial_fingerprint: u64,
    mut programming: Tracker,
    metrics: Option<Arc<StoreMetrics>>,
    shutdown: CancellationToken,
) -> notify::Result<()> {
    let paths = config.objects.clone();
    let (tx, mut rx) = mpsc::unbounded_channel();
    // One look at the files as soon as the watch is in place: a change made after they were
    // read and before the directories were watched would otherwise wait for the next event.
    let _ = tx.send(());
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|event| !event.kind.is_access()) {
            let _ = tx.send(());
        }
    })?;
    let mut dirs: Vec<&Path> = paths
        .iter()
        .map(|path| {
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
    }
    tokio::spawn(async move {
        // The watcher lives as long as this task.
        let _watcher = watcher;
        let mut fingerprint = initial_fingerprint;
        loop {
            tokio::select! {
                event = rx.recv() => if event.is_none() { return },
                () = shutdown.cancelled() => return,
            }
            // Let a burst of events (write, then rename, then chmod) settle.
            tokio::time::sleep(DEBOUNCE).await;
            while rx.try_recv().is_ok() {}
            // A failed load also moves `fingerprint` on: the same broken files are not read
            // (nor reported) again until they change.
            let now = self::fingerprint(&paths);
            if now == fingerprint {
                continue;
            }
            fingerprint = now;
            let previous = store.load().serial();
            let (paths2, config2, ips2) = (paths.clone(), config.clone(), local_ips.clone());
            let loaded =
                tokio::task::spawn_blocking(move || load(&paths2, &config2, &ips2, Some(previous)))
                    .await;
            match loaded {
                Ok(Ok(loaded)) => {
                    let serial = loaded.snapshot.serial();
                    tracing::info!(
                        serial = loaded.snapshot.serial(),
                        names = loaded.snapshot.name_count(),
                        read_ms = loaded.read_time.as_millis(),
                        build_ms = loaded.build_time.as_millis(),
                        "objects changed; new zone published"
                    );
                    // Metrics first: whoever sees the new answers finds them counted.
                    let now = SystemTime::now();
                    let latencies = programming.published(&loaded.triggers, now);
                    if let Some(metrics) = &metrics {
                        metrics.published(serial, loaded.counts, now);
                        metrics.programmed(&latencies);
                    }
                    store.publish(loaded.snapshot);
                }
                Ok(Err(error)) => {
                    tracing::error!(%error, "objects reload failed; still serving the last good zone");
                }
                Err(error) => tracing::error!(%error, "objects reload panicked"),
            }
        }
    });
    Ok(())
}

impl LoadedZone {
    /// The on-disk fingerprint of the files the snapshot was built from.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
}
