//! The *kubernetes* plugin's own metric: `coredns_kubernetes_dns_programming_duration_seconds`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{Collect, Exposition, Histogram};
use crate::model::ServiceKind;

/// CoreDNS's programming-latency buckets: `ExponentialBuckets(0.001, 2, 20)`, 1 ms to ~9 min.
pub const PROGRAMMING_BUCKETS: [f64; 20] = [
    0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096,
    8.192, 16.384, 32.768, 65.536, 131.072, 262.144, 524.288,
];

const NAME: &str = "coredns_kubernetes_dns_programming_duration_seconds";
const HELP: &str = "Histogram of the time (in seconds) it took to program a dns instance.";

/// `coredns_kubernetes_dns_programming_duration_seconds{service_kind}`, process-wide as in
/// CoreDNS. Written, for every kind (zero until observed), once a *kubernetes* store with
/// metrics exists, so that dashboards find the series before the first change.
#[derive(Debug)]
pub struct ProgrammingMetrics {
    enabled: AtomicBool,
    /// One per [`ServiceKind::ALL`].
    kinds: [Histogram; 3],
}

impl Default for ProgrammingMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ProgrammingMetrics {
    /// No observations; not written until [`enable`](Self::enable)d.
    pub fn new() -> Self {
        Self {
            enabled: AtomicBool::new(false),
            kinds: std::array::from_fn(|_| Histogram::new(&PROGRAMMING_BUCKETS)),
        }
    }

    /// A store that reports programming latency exists.
    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Relaxed);
    }

    /// Answers reflecting a change to a Service of `kind` were published `latency` after
    /// the change.
    pub fn observe(&self, kind: ServiceKind, latency: Duration) {
        self.kinds[index(kind)].observe(latency.as_secs_f64());
    }

    /// Observations of `kind` so far.
    pub fn count(&self, kind: ServiceKind) -> u64 {
        self.kinds[index(kind)].count()
    }
}

fn index(kind: ServiceKind) -> usize {
    ServiceKind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or_default()
}

impl Collect for ProgrammingMetrics {
    fn collect(&self, out: &mut Exposition) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        for (kind, histogram) in ServiceKind::ALL.iter().zip(&self.kinds) {
            out.histogram(NAME, HELP, &[("service_kind", kind.as_str())], histogram);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_coredns_exponential_ones() {
        for (i, bound) in PROGRAMMING_BUCKETS.iter().enumerate() {
            assert!((bound - 0.001 * 2f64.powi(i as i32)).abs() < 1e-12);
        }
    }

    #[test]
    fn written_once_enabled_with_every_kind() {
        let metrics = ProgrammingMetrics::new();
        let mut out = Exposition::new();
        metrics.collect(&mut out);
        assert!(!out.finish().contains(NAME));
        metrics.enable();
        metrics.observe(ServiceKind::HeadlessWithSelector, Duration::from_millis(3));
        let mut out = Exposition::new();
        metrics.collect(&mut out);
        let text = out.finish();
        assert!(text.contains(&format!("# TYPE {NAME} histogram")), "{text}");
        assert!(text.contains(&format!(
            "{NAME}_bucket{{service_kind=\"headless_with_selector\",le=\"0.004\"}} 1"
        )));
        assert!(text.contains(&format!(
            "{NAME}_bucket{{service_kind=\"headless_with_selector\",le=\"0.002\"}} 0"
        )));
        assert!(text.contains(&format!("{NAME}_count{{service_kind=\"cluster_ip\"}} 0")));
        assert!(text.contains(&format!(
            "{NAME}_count{{service_kind=\"headless_without_selector\"}} 0"
        )));
    }
}
