//! The *reload* plugin's metrics (`plugin/reload/metrics.go`).

use std::sync::Arc;

use arc_swap::ArcSwapOption;

use super::{Collect, Counter, Exposition, MetricType};

/// `coredns_reload_failed_total` and `coredns_reload_version_info{hash,value}`: the
/// reloader counts failed attempts and names the Corefile digest it last loaded
/// (`hash="sha512"`, `value` its hex), as CoreDNS does.
#[derive(Debug, Default)]
pub struct ReloadMetrics {
    failed: Counter,
    version: ArcSwapOption<String>,
}

impl ReloadMetrics {
    /// Nothing reloaded yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reload attempt failed (the old configuration stays).
    pub fn failed(&self) {
        self.failed.inc();
    }

    /// Failed attempts so far.
    pub fn failures(&self) -> u64 {
        self.failed.get()
    }

    /// The Corefile with this SHA-512 digest (lowercase hex) was loaded (or tried).
    pub fn loaded(&self, sha512_hex: &str) {
        self.version.store(Some(Arc::new(sha512_hex.to_owned())));
    }
}

impl Collect for ReloadMetrics {
    fn collect(&self, out: &mut Exposition) {
        out.sample(
            "coredns_reload_failed_total",
            "Counter of the number of failed reload attempts.",
            MetricType::Counter,
            &[],
            self.failed.get() as f64,
        );
        if let Some(digest) = self.version.load().as_deref() {
            out.sample(
                "coredns_reload_version_info",
                "A metric with a constant '1' value labeled by hash, and value which type of \
                 hash generated.",
                MetricType::Gauge,
                &[("hash", "sha512"), ("value", digest)],
                1.0,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_digest_is_the_only_version() {
        let metrics = ReloadMetrics::new();
        metrics.loaded("aa");
        metrics.loaded("bb");
        metrics.failed();
        let mut out = Exposition::new();
        metrics.collect(&mut out);
        assert_eq!(
            out.finish(),
            "# HELP coredns_reload_failed_total Counter of the number of failed reload attempts.\n\
             # TYPE coredns_reload_failed_total counter\ncoredns_reload_failed_total 1\n\
             # HELP coredns_reload_version_info A metric with a constant '1' value labeled by \
             hash, and value which type of hash generated.\n\
             # TYPE coredns_reload_version_info gauge\n\
             coredns_reload_version_info{hash=\"sha512\",value=\"bb\"} 1\n"
        );
    }
}
