//! The process's shutdown state, shared by the DNS listeners and the HTTP endpoints.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::metrics::{Collect, Exposition, MetricType};

use tokio_util::sync::CancellationToken;

/// Where the process is in its life: serving, in lameduck (still answering DNS and
/// `/health`, but `/ready` says 503 so the endpoint is taken out of the Service), or
/// stopped (listeners closed).
///
/// On SIGTERM the server calls [`Lifecycle::shut_down`] with *health*'s `lameduck`
/// duration, which is [`Lifecycle::begin_lameduck`], a sleep, then [`Lifecycle::stop`].
/// A configuration reload does not touch it.
#[derive(Debug, Default)]
pub struct Lifecycle {
    lameduck: AtomicBool,
    /// When lameduck began (`clusterdns_lameduck_seconds`).
    since: Mutex<Option<Instant>>,
    stop: CancellationToken,
}

impl Lifecycle {
    /// A serving process.
    pub fn new() -> Self {
        Self::default()
    }

    /// From now on `/ready` answers 503; everything else keeps serving.
    pub fn begin_lameduck(&self) {
        self.lameduck.store(true, Ordering::SeqCst);
        self.since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(Instant::now);
    }

    /// How long the process has been in lameduck (zero while it serves).
    pub fn lameduck_for(&self) -> Duration {
        self.since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map_or(Duration::ZERO, |since| since.elapsed())
    }

    /// Whether lameduck has begun (also true once stopped).
    pub fn is_lameduck(&self) -> bool {
        self.lameduck.load(Ordering::SeqCst) || self.stop.is_cancelled()
    }

    /// Closes the listeners: connections finish the request they are on, then close.
    pub fn stop(&self) {
        self.begin_lameduck();
        self.stop.cancel();
    }

    /// Whether [`Lifecycle::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Resolves once [`Lifecycle::stop`] is called.
    pub async fn stopped(&self) {
        self.stop.cancelled().await;
    }

    /// A token cancelled by [`Lifecycle::stop`] (and cancellable on its own, without
    /// stopping the rest).
    pub fn child_token(&self) -> CancellationToken {
        self.stop.child_token()
    }

    /// Lameduck for `lameduck`, then stop: what SIGTERM does.
    pub async fn shut_down(&self, lameduck: Duration) {
        self.begin_lameduck();
        if !lameduck.is_zero() {
            tracing::info!("going into lameduck mode for {lameduck:?}");
            tokio::select! {
                () = tokio::time::sleep(lameduck) => {}
                () = self.stopped() => {}
            }
        }
        self.stop();
    }
}

/// `clusterdns_lameduck_seconds`: a process that stays in lameduck far past *health*'s
/// `lameduck` is stuck on its way out.
impl Collect for Lifecycle {
    fn collect(&self, out: &mut Exposition) {
        out.sample(
            "clusterdns_lameduck_seconds",
            "Seconds since the process entered lameduck (SIGTERM); 0 while it serves.",
            MetricType::Gauge,
            &[],
            self.lameduck_for().as_secs_f64(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lameduck_then_stop() {
        let lifecycle = Lifecycle::new();
        assert!(!lifecycle.is_lameduck());
        lifecycle.begin_lameduck();
        assert!(lifecycle.is_lameduck());
        assert!(!lifecycle.is_stopped());
        let token = lifecycle.child_token();
        lifecycle.stop();
        assert!(lifecycle.is_stopped());
        assert!(token.is_cancelled());
    }

    #[tokio::test]
    async fn shutting_down_waits_out_the_lameduck() {
        let lifecycle = std::sync::Arc::new(Lifecycle::new());
        let start = std::time::Instant::now();
        let task = tokio::spawn({
            let lifecycle = std::sync::Arc::clone(&lifecycle);
            async move { lifecycle.shut_down(Duration::from_millis(300)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(lifecycle.is_lameduck());
        assert!(!lifecycle.is_stopped() || start.elapsed() >= Duration::from_millis(300));
        task.await.expect("shut down");
        assert!(lifecycle.is_stopped());
        assert!(start.elapsed() >= Duration::from_millis(300));
    }
}
