//! Keeping a store current with its objects files: read them, and on every change hand the
//! difference to the block's [`Publisher`]. A file that fails to load leaves the last good
//! zone in place.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::file::{self, Loaded};
use super::publish::Publisher;
use crate::config::KubernetesConfig;

/// How long a burst of file events settles before the files are read again.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// The objects files as read once.
#[derive(Debug)]
pub struct LoadedObjects {
    /// The objects.
    pub cluster: crate::model::Cluster,
    /// Objects of kinds the zone does not use, by kind.
    pub ignored: std::collections::BTreeMap<String, usize>,
    /// How long reading and converting the files took.
    pub read_time: Duration,
    /// The newest file modification time: the time of the last change.
    pub modified: SystemTime,
    /// Namespaces objects live in that the files do not list although they list others.
    pub unlisted_namespaces: Vec<String>,
    fingerprint: u64,
}

/// Reads the objects files `paths`.
pub fn load(paths: &[PathBuf], config: &KubernetesConfig) -> Result<LoadedObjects, file::Error> {
    let fingerprint = fingerprint(paths);
    let started = Instant::now();
    let Loaded {
        cluster,
        ignored,
        unlisted_namespaces,
        ..
    } = file::read_objects_for(paths, config)?;
    let modified = paths
        .iter()
        .filter_map(|path| std::fs::metadata(path).and_then(|m| m.modified()).ok())
        .max()
        .unwrap_or_else(SystemTime::now);
    Ok(LoadedObjects {
        cluster,
        ignored,
        read_time: started.elapsed(),
        modified,
        unlisted_namespaces,
        fingerprint,
    })
}

impl LoadedObjects {
    /// Says (once per set) that objects live in namespaces the files do not list: they are
    /// served all the same, as CoreDNS serves a Service whatever its Namespace object.
    pub fn report_unlisted(&self, before: &[String]) {
        if !self.unlisted_namespaces.is_empty() && self.unlisted_namespaces != before {
            tracing::warn!(
                namespaces = ?self.unlisted_namespaces,
                "objects in namespaces that are not in the input (it lists other Namespace \
                 objects); served as if their Namespace existed"
            );
        }
    }
}

impl LoadedObjects {
    /// The on-disk fingerprint of the files the objects were read from.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
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

/// Watches the objects files `paths` and applies every change of their content to
/// `publisher`, until `shutdown`. Directories are watched rather than files, so that
/// replacing a file by rename (editors, Kubernetes ConfigMap volumes) is seen too. A file
/// that fails to load leaves the last good zone in place.
pub fn watch(
    paths: Vec<PathBuf>,
    publisher: Publisher,
    initial_fingerprint: u64,
    initial_unlisted: Vec<String>,
    shutdown: CancellationToken,
) -> notify::Result<()> {
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
        let mut publisher = Some(publisher);
        let mut fingerprint = initial_fingerprint;
        let mut unlisted = initial_unlisted;
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
            let Some(mut owned) = publisher.take() else {
                return;
            };
            let paths = paths.clone();
            let before = std::mem::take(&mut unlisted);
            let done = tokio::task::spawn_blocking(move || {
                let result = load(&paths, owned.config()).map(|loaded| {
                    loaded.report_unlisted(&before);
                    let read_time = loaded.read_time;
                    owned.replace(loaded.cluster);
                    (
                        owned.publish(loaded.modified),
                        read_time,
                        loaded.unlisted_namespaces,
                    )
                });
                (owned, result)
            })
            .await;
            let Ok((owned, result)) = done else {
                tracing::error!("objects reload panicked; the zone is no longer updated");
                return;
            };
            publisher = Some(owned);
            let result = result.map(|(published, read_time, now_unlisted)| {
                unlisted = now_unlisted;
                (published, read_time)
            });
            match result {
                Ok((Some(published), read_time)) => tracing::info!(
                    serial = published.serial,
                    names = published.names,
                    whole = published.whole,
                    read_ms = read_time.as_millis(),
                    build_ms = published.build_time.as_millis(),
                    "objects changed; new zone published"
                ),
                Ok((None, _)) => tracing::debug!("objects files rewritten without a change"),
                Err(error) => {
                    tracing::error!(%error, "objects reload failed; still serving the last good zone");
                }
            }
        }
    });
    Ok(())
}
