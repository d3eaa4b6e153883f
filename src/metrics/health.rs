//! The *health* plugin's self-probe metrics (`plugin/health/overloaded.go`): once a second
//! the process fetches its own `/health` and records how long that took. A slow local
//! `/health` is the sign of an overloaded process.

use super::{Collect, Counter, Exposition, Histogram, SLIM_DURATION_BUCKETS};

/// `coredns_health_request_duration_seconds` (no labels; CoreDNS's slim buckets, 0.25 ms to
/// 2.5 s) and `coredns_health_request_failures_total`. Written whether or not *health* is
/// configured, as CoreDNS's are.
#[derive(Debug)]
pub struct HealthMetrics {
    duration: Histogram,
    failures: Counter,
}

impl Default for HealthMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl HealthMetrics {
    /// Zeroed metrics.
    pub fn new() -> Self {
        Self {
            duration: Histogram::new(&SLIM_DURATION_BUCKETS),
            failures: Counter::new(),
        }
    }

    /// A probe answered after `seconds`.
    pub fn observe(&self, seconds: f64) {
        self.duration.observe(seconds);
    }

    /// A probe failed after `seconds` (CoreDNS observes the duration of failures too).
    pub fn failed(&self, seconds: f64) {
        self.duration.observe(seconds);
        self.failures.inc();
    }

    /// Probes made.
    pub fn probes(&self) -> u64 {
        self.duration.count()
    }

    /// Probes failed.
    pub fn failures(&self) -> u64 {
        self.failures.get()
    }
}

impl Collect for HealthMetrics {
    fn collect(&self, out: &mut Exposition) {
        out.histogram(
            "coredns_health_request_duration_seconds",
            "Histogram of the time (in seconds) each request took.",
            &[],
            &self.duration,
        );
        out.sample(
            "coredns_health_request_failures_total",
            "The number of times the health check failed.",
            super::MetricType::Counter,
            &[],
            self.failures.get() as f64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_are_written_with_the_slim_buckets() {
        let metrics = HealthMetrics::new();
        metrics.observe(0.001);
        metrics.failed(3.0);
        let mut out = Exposition::new();
        metrics.collect(&mut out);
        assert_eq!(
            out.finish(),
            "# HELP coredns_health_request_duration_seconds Histogram of the time (in seconds) \
             each request took.\n# TYPE coredns_health_request_duration_seconds histogram\n\
             coredns_health_request_duration_seconds_bucket{le=\"0.00025\"} 0\n\
             coredns_health_request_duration_seconds_bucket{le=\"0.0025\"} 1\n\
             coredns_health_request_duration_seconds_bucket{le=\"0.025\"} 1\n\
             coredns_health_request_duration_seconds_bucket{le=\"0.25\"} 1\n\
             coredns_health_request_duration_seconds_bucket{le=\"2.5\"} 1\n\
             coredns_health_request_duration_seconds_bucket{le=\"+Inf\"} 2\n\
             coredns_health_request_duration_seconds_sum 3.001\n\
             coredns_health_request_duration_seconds_count 2\n\
             # HELP coredns_health_request_failures_total The number of times the health check \
             failed.\n# TYPE coredns_health_request_failures_total counter\n\
             coredns_health_request_failures_total 1\n"
        );
    }
}
