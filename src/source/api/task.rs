//! The watch task: the one task that owns the watched objects, applies the feed's changes to
//! them, publishes a zone for each batch (never in the middle of a re-list) and writes the
//! snapshot file; between two changes it answers the questions asked about the objects.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::snapshot_file::{append_changes, change_lines, lengths, write_snapshot};
use super::state::{Change, WatchState};
use super::status::ApiStatus;
use crate::model::Cluster;
use crate::source::publish::Unwritten;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A question about the watched objects, run by the watch task on them and whether
/// they are a whole state (every resource listed, none being re-listed).
pub(crate) type Inquiry = Box<dyn FnOnce(&Cluster, bool) + Send>;

/// The most changes taken into one publication beyond the first.
pub(super) const MAX_BATCH: usize = 4096;

/// How long after a publication the snapshot file is written (later publications within it
/// are written together).
pub(super) const SNAPSHOT_DELAY: Duration = Duration::from_secs(1);

/// The shortest time between two writes of what changed (appended to the changes file):
/// under churn the file is never more than this behind, and one sync in five seconds is all
/// it costs the disk.
pub(super) const CHANGES_INTERVAL: Duration = Duration::from_secs(5);

/// The shortest time between two writes of the whole snapshot file (after a list, or when
/// the changes file has grown to half of it): writing it is serialising every object (at
/// 10,000 Services and 30,000 pods about a CPU-second).
pub(super) const SNAPSHOT_INTERVAL: Duration = Duration::from_secs(15);

/// Feeds the watches' changes to the publisher as they come, and writes the snapshot file.
pub(super) struct WatchTask {
    pub(super) status: Arc<ApiStatus>,
    pub(super) snapshot: Option<PathBuf>,
}

impl WatchTask {
    pub(super) async fn run(
        self,
        mut state: WatchState,
        mut rx: mpsc::UnboundedReceiver<Change>,
        mut inquiries: mpsc::Receiver<Inquiry>,
        stop: CancellationToken,
    ) {
        let mut snapshot_due: Option<tokio::time::Instant> = None;
        let mut last_written: Option<tokio::time::Instant> = None;
        let mut last_whole: Option<tokio::time::Instant> = None;
        let mut writing: Option<tokio::task::JoinHandle<bool>> = None;
        if self.snapshot.is_some() {
            state.publisher.record_unwritten();
        }
        loop {
            let due = snapshot_due;
            tokio::select! {
                change = rx.recv() => {
                    let Some(change) = change else { return };
                    state.apply(change, &self.status);
                    // Whatever else has arrived meanwhile goes into the same publication: a
                    // burst is coalesced as far as publishing lags behind it, no further.
                    for _ in 0..MAX_BATCH {
                        let Ok(change) = rx.try_recv() else { break };
                        state.apply(change, &self.status);
                    }
                }
                () = sleep_until(due) => {
                    snapshot_due = None;
                    let now = tokio::time::Instant::now();
                    // One write at a time (they are seconds apart: this rarely waits). What a
                    // failed write held is written again, whole.
                    if let Some(previous) = writing.take()
                        && !previous.await.unwrap_or(false)
                    {
                        state.publisher.record_unwritten();
                    }
                    let whole = state.publisher.unwritten_whole() || self.changes_outgrown();
                    if whole {
                        if let Some(soonest) = last_whole.map(|at| at + SNAPSHOT_INTERVAL)
                            && soonest > now
                        {
                            snapshot_due = Some(soonest);
                            continue;
                        }
                        last_whole = Some(now);
                    }
                    last_written = Some(now);
                    let Some((back, write)) = self.snapshot_write(state, whole).await else {
                        return;
                    };
                    state = back;
                    writing = write;
                    continue;
                }
                Some(inquiry) = inquiries.recv() => {
                    let complete = state.complete();
                    inquiry(state.publisher.cluster(), complete);
                    continue;
                }
                () = stop.cancelled() => return,
            }
            if !state.complete() || !state.publisher.is_dirty() {
                continue;
            }
            let Some(back) = self.publish(state).await else {
                return;
            };
            state = back;
            if self.snapshot.is_some() && snapshot_due.is_none() {
                // Soon after a change, and at most once per CHANGES_INTERVAL under churn:
                // the file is never older than the interval and its cost stays bounded.
                let soonest = last_written.map(|at| at + CHANGES_INTERVAL);
                let after_delay = tokio::time::Instant::now() + SNAPSHOT_DELAY;
                snapshot_due = Some(soonest.map_or(after_delay, |at| at.max(after_delay)));
            }
        }
    }

    /// Publishes the zone of the objects: at once for an update, on a blocking thread when
    /// it is built whole. `None` if the objects were lost (the runtime is shutting down).
    pub(super) async fn publish(&self, mut state: WatchState) -> Option<WatchState> {
        let first = !self.status.is_synced();
        let published = if state.publisher.needs_whole() {
            let (back, published) =
                blocking(state, |state| state.publisher.publish(SystemTime::now())).await?;
            state = back;
            match published {
                Some(published) => published,
                None => {
                    tracing::error!("building the zone panicked; still serving the last one");
                    return Some(state);
                }
            }
        } else {
            state.publisher.publish(SystemTime::now())
        };
        let Some(published) = published else {
            return Some(state);
        };
        if first {
            tracing::info!(
                zone = %self.status.zone,
                serial = published.serial,
                names = published.names,
                services = published.counts.services,
                endpoint_slices = published.counts.endpoint_slices,
                build_ms = published.build_time.as_millis(),
                encoding = %self.status.encodings(),
                "synced with the API server; zone published"
            );
            // After the log line: whoever waits for the sync logs after it.
            self.status.mark_synced(SystemTime::now());
        } else {
            tracing::debug!(
                serial = published.serial,
                names = published.names,
                whole = published.whole,
                build_us = published.build_time.as_micros(),
                "objects changed; new zone published"
            );
        }
        Some(state)
    }

    /// Whether the changes file has grown to half the snapshot file (or there is no
    /// snapshot file to add changes to): then it is written whole.
    fn changes_outgrown(&self) -> bool {
        let Some(path) = &self.snapshot else {
            return false;
        };
        lengths(path).is_none_or(|(snapshot, changes)| changes >= snapshot / 2)
    }

    /// Starts writing the snapshot, `whole` or only what changed since the last write. For
    /// a whole write the objects are copied on a blocking thread and given back at once;
    /// writing the copy (object by object, and the fsync) goes on in a task of its own, so
    /// that changes arriving meanwhile are published without waiting for the disk. The copy
    /// is of the trimmed objects, a fraction of the JSON they become (which was built whole
    /// here before: at 10,000 Services it was the highest mark of a re-list, and held changes
    /// back for as long as it took). What changed is written as lines on the blocking thread
    /// and appended in the task. The task says whether the write succeeded. `None` if the
    /// objects were lost.
    pub(super) async fn snapshot_write(
        &self,
        state: WatchState,
        whole: bool,
    ) -> Option<(WatchState, Option<tokio::task::JoinHandle<bool>>)> {
        let Some(path) = self.snapshot.clone() else {
            return Some((state, None));
        };
        if whole {
            let (state, copy) = blocking(state, |state| {
                state.publisher.take_unwritten();
                state.publisher.cluster().clone()
            })
            .await?;
            let Some(copy) = copy else {
                tracing::error!("copying the objects for the snapshot panicked");
                return Some((state, None));
            };
            let write = tokio::task::spawn_blocking(move || {
                write_snapshot(&path, &copy)
                    .inspect_err(|error| warn_unwritten(&path, error))
                    .is_ok()
            });
            return Some((state, Some(write)));
        }
        let (mut state, lines) = blocking(state, |state| match state.publisher.take_unwritten() {
            Unwritten::Keys(keys) => {
                change_lines(state.publisher.cluster(), keys, SystemTime::now())
            }
            Unwritten::Untracked | Unwritten::Whole => Vec::new(),
        })
        .await?;
        let Some(lines) = lines else {
            tracing::error!("writing the changes for the snapshot panicked");
            state.publisher.record_unwritten();
            return Some((state, None));
        };
        if lines.is_empty() {
            return Some((state, None));
        }
        let write = tokio::task::spawn_blocking(move || {
            append_changes(&path, &lines)
                .inspect_err(|error| warn_unwritten(&path, error))
                .is_ok()
        });
        Some((state, Some(write)))
    }
}

fn warn_unwritten(path: &std::path::Path, error: &std::io::Error) {
    tracing::warn!(
        "writing the snapshot {}: {error}; the next change tries again",
        path.display()
    );
}

/// Runs `work` on the objects on a blocking thread and gives them back with its result
/// (`None` if it panicked: the objects are still given back). `None` altogether when the
/// runtime shuts down under it.
pub(super) async fn blocking<T, F>(
    mut state: WatchState,
    work: F,
) -> Option<(WatchState, Option<T>)>
where
    T: Send + 'static,
    F: FnOnce(&mut WatchState) -> T + Send + 'static,
{
    let joined = tokio::task::spawn_blocking(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&mut state)));
        (state, result.ok())
    })
    .await;
    match joined {
        Ok(done) => Some(done),
        Err(error) => {
            tracing::error!("blocking task failed: {error}");
            None
        }
    }
}

pub(super) async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
