//! The *ready* plugin's check: whether every plugin that reports readiness is ready.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::ArcSwap;

use crate::metrics::PANICS;

/// The server's readiness check: `Ok` when every plugin that reports readiness is ready,
/// else the names of those that are not (`kubernetes` until its store is loaded).
pub type ReadinessCheck = Arc<dyn Fn() -> Result<(), Vec<String>> + Send + Sync>;

/// What `/ready` says beside its verdict (how the API watch is doing): one line each.
pub type ReadinessNotes = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// *ready*'s `monitor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Monitor {
    /// `until-ready` (the default): once the check passes, `/ready` stays 200 (until
    /// lameduck) without asking again.
    #[default]
    UntilReady,
    /// `continuously`: every request asks the check.
    Continuously,
}

impl Monitor {
    /// From *ready*'s `continuously` flag.
    pub fn from_continuously(continuously: bool) -> Self {
        if continuously {
            Self::Continuously
        } else {
            Self::UntilReady
        }
    }
}

/// The current check and monitor mode, swapped whole on a configuration reload; the latch
/// (the first success) outlives reloads, so a reload never makes `/ready` blink.
pub struct Readiness {
    current: ArcSwap<Current>,
    notes: ArcSwap<Notes>,
    latched: AtomicBool,
}

struct Notes(Option<ReadinessNotes>);

struct Current {
    check: ReadinessCheck,
    monitor: Monitor,
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readiness")
            .field("monitor", &self.current.load().monitor)
            .field("latched", &self.is_latched())
            .finish()
    }
}

impl Default for Readiness {
    fn default() -> Self {
        Self::always_ready()
    }
}

impl Readiness {
    /// A readiness given by `check`, watched as `monitor` says.
    pub fn new(check: ReadinessCheck, monitor: Monitor) -> Self {
        Self {
            current: ArcSwap::from_pointee(Current { check, monitor }),
            notes: ArcSwap::from_pointee(Notes(None)),
            latched: AtomicBool::new(false),
        }
    }

    /// Ready from the start (no plugin reports readiness).
    pub fn always_ready() -> Self {
        Self::new(Arc::new(|| Ok(())), Monitor::UntilReady)
    }

    /// Replaces the check and the mode (a configuration was reloaded). An earlier success
    /// stays latched: with `until-ready`, `/ready` stays 200 across the reload.
    pub fn set(&self, check: ReadinessCheck, monitor: Monitor) {
        self.current.store(Arc::new(Current { check, monitor }));
    }

    /// Replaces what `/ready` says beside its verdict.
    pub fn set_notes(&self, notes: ReadinessNotes) {
        self.notes.store(Arc::new(Notes(Some(notes))));
    }

    /// What `/ready` says beside its verdict, now. A note provider that panics says nothing.
    pub fn notes(&self) -> Vec<String> {
        let notes = self.notes.load();
        notes.0.as_ref().map_or_else(Vec::new, |notes| {
            catch_unwind(AssertUnwindSafe(|| notes())).unwrap_or_default()
        })
    }

    /// The mode in force.
    pub fn monitor(&self) -> Monitor {
        self.current.load().monitor
    }

    /// Whether the check has passed at least once.
    pub fn is_latched(&self) -> bool {
        self.latched.load(Ordering::Acquire)
    }

    /// Asks the check (unless `until-ready` has latched). The names of the plugins that are
    /// not ready come back sorted and without duplicates, as CoreDNS lists them. A check
    /// that panics counts as not ready (`ready` is named) and in `coredns_panics_total`.
    pub fn check(&self) -> Result<(), Vec<String>> {
        let current = self.current.load();
        if current.monitor == Monitor::UntilReady && self.is_latched() {
            return Ok(());
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| (current.check)())).unwrap_or_else(|_| {
            PANICS.inc();
            Err(vec!["ready".to_owned()])
        });
        match outcome {
            Ok(()) => {
                self.latched.store(true, Ordering::Release);
                Ok(())
            }
            Err(mut names) => {
                names.sort_unstable();
                names.dedup();
                Err(names)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    fn flag_check(ready: &Arc<AtomicBool>, calls: &Arc<AtomicUsize>) -> ReadinessCheck {
        let (ready, calls) = (Arc::clone(ready), Arc::clone(calls));
        Arc::new(move || {
            calls.fetch_add(1, Ordering::SeqCst);
            if ready.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err(vec![
                    "kubernetes".to_owned(),
                    "forward".to_owned(),
                    "kubernetes".to_owned(),
                ])
            }
        })
    }

    #[test]
    fn until_ready_latches_the_first_success() {
        let ready = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicUsize::new(0));
        let readiness = Readiness::new(flag_check(&ready, &calls), Monitor::UntilReady);
        assert_eq!(
            readiness.check(),
            Err(vec!["forward".to_owned(), "kubernetes".to_owned()])
        );
        ready.store(true, Ordering::SeqCst);
        assert_eq!(readiness.check(), Ok(()));
        ready.store(false, Ordering::SeqCst);
        assert_eq!(readiness.check(), Ok(()));
        assert_eq!(calls.load(Ordering::SeqCst), 2, "not asked once latched");
    }

    #[test]
    fn continuously_asks_every_time() {
        let ready = Arc::new(AtomicBool::new(true));
        let calls = Arc::new(AtomicUsize::new(0));
        let readiness = Readiness::new(flag_check(&ready, &calls), Monitor::Continuously);
        assert_eq!(readiness.check(), Ok(()));
        ready.store(false, Ordering::SeqCst);
        assert!(readiness.check().is_err());
    }

    #[test]
    fn a_reload_keeps_the_latch() {
        let ready = Arc::new(AtomicBool::new(true));
        let calls = Arc::new(AtomicUsize::new(0));
        let readiness = Readiness::new(flag_check(&ready, &calls), Monitor::UntilReady);
        assert_eq!(readiness.check(), Ok(()));
        // The new configuration's store is not loaded yet: still ready.
        readiness.set(
            Arc::new(|| Err(vec!["kubernetes".to_owned()])),
            Monitor::UntilReady,
        );
        assert_eq!(readiness.check(), Ok(()));
        // ... unless the new configuration asks continuously.
        readiness.set(
            Arc::new(|| Err(vec!["kubernetes".to_owned()])),
            Monitor::Continuously,
        );
        assert!(readiness.check().is_err());
    }

    #[test]
    fn a_panicking_check_is_not_ready() {
        let readiness = Readiness::new(
            Arc::new(|| -> Result<(), Vec<String>> { panic!("boom") }),
            Monitor::UntilReady,
        );
        let before = PANICS.get();
        assert_eq!(readiness.check(), Err(vec!["ready".to_owned()]));
        assert!(PANICS.get() > before);
    }
}
