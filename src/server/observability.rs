//! What every generation shares for observing the server: the metrics registry and the
//! process's own collectors, the readiness checks, lameduck, the search-path tracker.

use std::sync::Arc;
use std::time::SystemTime;

use crate::metrics::Collect;
use crate::metrics::dns::DnsMetrics;
use crate::metrics::health::HealthMetrics;
use crate::metrics::kubernetes::ProgrammingMetrics;
use crate::metrics::process::{PluginEnabled, ProcessMetrics};
use crate::metrics::registry::{Registration, Registry};
use crate::metrics::reload::ReloadMetrics;
use crate::search_tracker::live::Tracker as SearchPathTracker;

/// The process's metrics: one registry for its whole life, so counters carry on across
/// reloads as CoreDNS's do.
#[derive(Debug)]
pub struct Observability {
    /// What `/metrics` renders.
    pub registry: Registry,
    /// `coredns_dns_*`.
    pub dns: Arc<DnsMetrics>,
    /// The *health* self-probe's metrics.
    pub health: Arc<HealthMetrics>,
    /// The *reload* plugin's metrics.
    pub reload: Arc<ReloadMetrics>,
    /// `coredns_plugin_enabled`.
    pub plugins: Arc<PluginEnabled>,
    /// `coredns_kubernetes_dns_programming_duration_seconds`.
    pub programming: Arc<ProgrammingMetrics>,
    /// The search-path tracker (`clusterdns_search_path_*`, `/debug/search-path`).
    pub search_path: Arc<SearchPathTracker>,
    /// When the process started: older change stamps are not programming latency.
    pub started: SystemTime,
    _registrations: Vec<Registration>,
}

impl Observability {
    /// The registry with the process-wide collectors in it, and `plugins'` (the step plugins'
    /// own, for the process's life).
    pub fn new(plugins_collectors: Vec<Arc<dyn Collect>>) -> Self {
        let registry = Registry::new();
        let dns = Arc::new(DnsMetrics::new());
        let health = Arc::new(HealthMetrics::new());
        let reload = Arc::new(ReloadMetrics::new());
        let plugins = Arc::new(PluginEnabled::new());
        let programming = Arc::new(ProgrammingMetrics::new());
        let search_path = Arc::new(SearchPathTracker::new());
        let mut registrations = vec![
            registry.register(Arc::clone(&search_path) as Arc<dyn Collect>),
            registry.register(Arc::clone(&programming) as Arc<dyn Collect>),
            registry.register(Arc::clone(&dns) as Arc<dyn Collect>),
            registry.register(Arc::new(ProcessMetrics::new())),
            registry.register(Arc::clone(&health) as Arc<dyn Collect>),
            registry.register(Arc::clone(&reload) as Arc<dyn Collect>),
            registry.register(Arc::clone(&plugins) as Arc<dyn Collect>),
            registry.register(Arc::new(crate::limits::LimitsCollector)),
        ];
        registrations.extend(
            plugins_collectors
                .into_iter()
                .map(|collector| registry.register(collector)),
        );
        Self {
            registry,
            dns,
            health,
            reload,
            plugins,
            programming,
            search_path,
            started: SystemTime::now(),
            _registrations: registrations,
        }
    }
}
