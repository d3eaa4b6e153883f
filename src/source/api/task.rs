//! The watch task: the one task that owns the watched objects, applies the feed's changes to
//! them, publishes a zone for each batch (never in the middle of a re-list) and writes the
//! snapshot file; between two changes it answers the questions asked about the objects.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::Inquiry;
use super::snapshot_file::write_snapshot;
use super::state::{Change, WatchState};
use super::status::ApiStatus;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The most changes taken into one publication beyond the first.
pub(super) const MAX_BATCH: usize = 4096;

/// How long after a publication the snapshot file is written (later publications within it
/// are written together).
pub(super) const SNAPSHOT_DELAY: Duration = Duration::from_secs(1);

/// The shortest time between two writes of the snapshot file: writing it is serialising
/// every object (at 10,000 Services and 30,000 pods about a CPU-second), so under churn it
/// is written four times a minute, not more (at every 5 s that churn cost 0.18 of a core).
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
        let mut writing: Option<tokio::task::JoinHandle<()>> = None;
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
                    last_written = Some(tokio::time::Instant::now());
                    // One write at a time (they are SNAPSHOT_INTERVAL apart: this rarely waits).
                    if let Some(previous) = writing.take() {
                        let _ = previous.await;
                    }
                    let Some((back, write)) = self.snapshot_write(state).await else { return };
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
                // Soon after a change, and at most once per SNAPSHOT_INTERVAL under churn:
                // the file is never older than the interval and its cost stays bounded.
                let soonest = last_written.map(|at| at + SNAPSHOT_INTERVAL);
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

    /// Starts writing the snapshot: the objects are copied on a blocking thread and given
    /// back at once; writing the copy (object by object, and the fsync) goes on in a task of
    /// its own, so that changes arriving meanwhile are published without waiting for the
    /// disk. The copy is of the trimmed objects, a fraction of the JSON they become (which was
    /// built whole here before: at 10,000 Services it was the highest mark of a re-list, and
    /// held changes back for as long as it took). `None` if the objects were lost.
    pub(super) async fn snapshot_write(
        &self,
        state: WatchState,
    ) -> Option<(WatchState, Option<tokio::task::JoinHandle<()>>)> {
        let Some(path) = self.snapshot.clone() else {
            return Some((state, None));
        };
        let (state, copy) = blocking(state, |state| state.publisher.cluster().clone()).await?;
        let Some(copy) = copy else {
            tracing::error!("copying the objects for the snapshot panicked");
            return Some((state, None));
        };
        let write = tokio::task::spawn_blocking(move || {
            if let Err(error) = write_snapshot(&path, &copy) {
                tracing::warn!(
                    "writing the snapshot {}: {error}; the next change tries again",
                    path.display()
                );
            }
        });
        Some((state, Some(write)))
    }
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
