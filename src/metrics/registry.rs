//! The process's collectors, rendered together for `/metrics`.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::{Collect, Exposition};

/// The collectors of the process. Cloning gives another handle on the same set: the server
/// creates one at start and hands clones to whatever registers or renders.
///
/// Collectors a configuration owns (per-block cache or forward metrics) are registered when
/// it is loaded and unregistered when their [`Registration`] is dropped, so a reload
/// replaces them; process-wide ones (DNS counters, process, health, reload) are registered
/// once and their registration kept for the life of the process.
#[derive(Clone, Default)]
pub struct Registry {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    collectors: Mutex<Collectors>,
}

#[derive(Default)]
struct Collectors {
    next_id: u64,
    entries: Vec<(u64, Arc<dyn Collect>)>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("collectors", &self.len())
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `collector`; it is written by every render until the returned handle is dropped.
    #[must_use = "dropping the registration unregisters the collector"]
    pub fn register(&self, collector: Arc<dyn Collect>) -> Registration {
        let mut collectors = self.lock();
        let id = collectors.next_id;
        collectors.next_id += 1;
        collectors.entries.push((id, collector));
        Registration {
            registry: Arc::downgrade(&self.inner),
            id,
        }
    }

    /// How many collectors are registered.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes every collector into `out`, in registration order.
    pub fn collect_into(&self, out: &mut Exposition) {
        // Collect outside the lock: a collector may take a while (it reads /proc), and
        // registering must not wait for a scrape.
        let collectors: Vec<Arc<dyn Collect>> = self
            .lock()
            .entries
            .iter()
            .map(|(_, collector)| Arc::clone(collector))
            .collect();
        for collector in collectors {
            collector.collect(out);
        }
    }

    /// The text exposition of every collector (content type [`super::CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut out = Exposition::new();
        self.collect_into(&mut out);
        out.finish()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Collectors> {
        self.inner
            .collectors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A registered collector; dropping it unregisters the collector.
#[derive(Debug)]
pub struct Registration {
    registry: Weak<Inner>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(inner) = self.registry.upgrade() {
            inner
                .collectors
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entries
                .retain(|(id, _)| *id != self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Counter, MetricType};

    struct Named(&'static str, Counter);

    impl Collect for Named {
        fn collect(&self, out: &mut Exposition) {
            out.sample(
                self.0,
                "A test counter.",
                MetricType::Counter,
                &[],
                self.1.get() as f64,
            );
        }
    }

    #[test]
    fn registrations_come_and_go() {
        let registry = Registry::new();
        let first = Arc::new(Named("first_total", Counter::new()));
        first.1.add(3);
        let kept = registry.register(first);
        let dropped = registry.register(Arc::new(Named("second_total", Counter::new())));
        assert_eq!(registry.len(), 2);
        let text = registry.render();
        assert!(text.contains("first_total 3\n"));
        assert!(text.contains("second_total 0\n"));

        drop(dropped);
        assert_eq!(registry.len(), 1);
        assert_eq!(
            registry.render(),
            "# HELP first_total A test counter.\n# TYPE first_total counter\nfirst_total 3\n"
        );

        // A registration may outlive its registry.
        drop(registry);
        drop(kept);
    }

    #[test]
    fn clones_share_the_collectors() {
        let registry = Registry::new();
        let clone = registry.clone();
        let _registration = clone.register(Arc::new(Named("x_total", Counter::new())));
        assert!(registry.render().contains("x_total 0"));
    }
}
