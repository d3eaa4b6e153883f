//! The forward metrics under CoreDNS's names.
//!
//! As in CoreDNS, where they are process-wide Prometheus vectors, the series are keyed by
//! upstream (`to`) and shared by every forwarder that uses it: two server blocks forwarding
//! to the same resolver add to the same series, and a reload (which builds new forwarders)
//! carries on counting. Each upstream's counters are found once, when a forwarder is built;
//! the query path only adds to atomics (one histogram per rcode known in advance).

use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use crate::metrics::{Collect, Counter, DURATION_BUCKETS, Exposition, Histogram, MetricType};

/// `proxy_name` of every series: CoreDNS's forward plugin.
const PROXY_NAME: &str = "forward";

/// Rcodes with a histogram of their own (CoreDNS's names, `RcodeToString` of miekg/dns);
/// anything else is rare enough to go through a lock.
const NAMED_RCODES: usize = 24;

/// The rcode label CoreDNS writes: a mnemonic, or the number for codes without one.
fn rcode_label(rcode: u16) -> String {
    const NAMES: [&str; NAMED_RCODES] = [
        "NOERROR",
        "FORMERR",
        "SERVFAIL",
        "NXDOMAIN",
        "NOTIMP",
        "REFUSED",
        "YXDOMAIN",
        "YXRRSET",
        "NXRRSET",
        "NOTAUTH",
        "NOTZONE",
        "11",
        "12",
        "13",
        "14",
        "15",
        "BADSIG",
        "BADKEY",
        "BADTIME",
        "BADMODE",
        "BADNAME",
        "BADALG",
        "BADTRUNC",
        "BADCOOKIE",
    ];
    NAMES
        .get(usize::from(rcode))
        .map_or_else(|| rcode.to_string(), |name| (*name).to_owned())
}

/// Transport of a cached connection: the `proto` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Proto {
    /// `udp`.
    Udp = 0,
    /// `tcp`.
    Tcp = 1,
    /// `tcp-tls`: DNS over TLS, as CoreDNS labels it.
    Tls = 2,
}

impl Proto {
    /// Every transport, in label order.
    const ALL: [Proto; 3] = [Proto::Udp, Proto::Tcp, Proto::Tls];

    pub(super) fn label(self) -> &'static str {
        match self {
            Proto::Udp => "udp",
            Proto::Tcp => "tcp",
            Proto::Tls => "tcp-tls",
        }
    }
}

/// The series of one upstream.
#[derive(Debug)]
pub(super) struct UpstreamMetrics {
    /// The `to` label.
    to: String,
    /// Exchange durations by rcode, for the named rcodes.
    durations: [Histogram; NAMED_RCODES],
    /// Exchange durations for other rcodes.
    other: Mutex<Vec<(u16, Histogram)>>,
    /// Connection cache hits by [`Proto`].
    hits: [Counter; 3],
    /// Connection cache misses by [`Proto`].
    misses: [Counter; 3],
    /// Failed health checks.
    health_check_failures: Counter,
}

impl UpstreamMetrics {
    fn new(to: &str) -> Self {
        Self {
            to: to.to_owned(),
            durations: std::array::from_fn(|_| Histogram::new(&DURATION_BUCKETS)),
            other: Mutex::new(Vec::new()),
            hits: Default::default(),
            misses: Default::default(),
            health_check_failures: Counter::default(),
        }
    }

    /// One exchange that got a reply with `rcode` after `seconds`.
    pub(super) fn observe(&self, rcode: u16, seconds: f64) {
        if let Some(histogram) = self.durations.get(usize::from(rcode)) {
            histogram.observe(seconds);
            return;
        }
        let mut other = self.other.lock().unwrap_or_else(PoisonError::into_inner);
        match other.iter().find(|(code, _)| *code == rcode) {
            Some((_, histogram)) => histogram.observe(seconds),
            None => {
                let histogram = Histogram::new(&DURATION_BUCKETS);
                histogram.observe(seconds);
                other.push((rcode, histogram));
            }
        }
    }

    /// A connection taken from the cache (`hit`) or opened.
    pub(super) fn conn_cache(&self, proto: Proto, hit: bool) {
        let counters = if hit { &self.hits } else { &self.misses };
        counters[proto as usize].inc();
    }

    /// A failed health check.
    pub(super) fn health_check_failed(&self) {
        self.health_check_failures.inc();
    }

    /// Calls `each` with every rcode's label and histogram that has observations.
    fn each_duration(&self, mut each: impl FnMut(&str, &Histogram)) {
        for (rcode, histogram) in self.durations.iter().enumerate() {
            if histogram.count() > 0 {
                each(&rcode_label(rcode as u16), histogram);
            }
        }
        let other = self.other.lock().unwrap_or_else(PoisonError::into_inner);
        for (rcode, histogram) in other.iter() {
            each(&rcode_label(*rcode), histogram);
        }
    }
}

/// Every forward metric of the process: what a forwarder's [`Collect`] writes.
#[derive(Debug, Default)]
pub struct ForwardMetrics {
    /// Every upstream ever forwarded to, in order of first use.
    upstreams: Mutex<Vec<Arc<UpstreamMetrics>>>,
    /// Queries sent to a random upstream because every upstream was down.
    pub(super) healthcheck_broken: Counter,
    /// Queries refused past `max_concurrent`.
    pub(super) max_concurrent_rejects: Counter,
}

/// The process's forward metrics.
pub fn forward_metrics() -> &'static ForwardMetrics {
    static METRICS: LazyLock<ForwardMetrics> = LazyLock::new(ForwardMetrics::default);
    &METRICS
}

impl ForwardMetrics {
    /// The series of upstream `to`, created on first use.
    pub(super) fn upstream(&self, to: &str) -> Arc<UpstreamMetrics> {
        let mut upstreams = self
            .upstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = upstreams.iter().find(|metrics| metrics.to == to) {
            return Arc::clone(found);
        }
        let created = Arc::new(UpstreamMetrics::new(to));
        upstreams.push(Arc::clone(&created));
        created
    }

    /// `coredns_forward_healthcheck_broken_total`.
    pub fn healthcheck_broken(&self) -> u64 {
        self.healthcheck_broken.get()
    }

    /// `coredns_forward_max_concurrent_rejects_total`.
    pub fn max_concurrent_rejects(&self) -> u64 {
        self.max_concurrent_rejects.get()
    }
}

impl Collect for ForwardMetrics {
    fn collect(&self, out: &mut Exposition) {
        let upstreams: Vec<Arc<UpstreamMetrics>> = self
            .upstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for upstream in &upstreams {
            let to = upstream.to.as_str();
            upstream.each_duration(|rcode, histogram| {
                out.histogram(
                    "coredns_proxy_request_duration_seconds",
                    "Histogram of the time each request took.",
                    &[("proxy_name", PROXY_NAME), ("to", to), ("rcode", rcode)],
                    histogram,
                );
            });
        }
        for (name, help, hit) in [
            (
                "coredns_proxy_conn_cache_hits_total",
                "Counter of connection cache hits per upstream and protocol.",
                true,
            ),
            (
                "coredns_proxy_conn_cache_misses_total",
                "Counter of connection cache misses per upstream and protocol.",
                false,
            ),
        ] {
            for upstream in &upstreams {
                let counters = if hit {
                    &upstream.hits
                } else {
                    &upstream.misses
                };
                for proto in Proto::ALL {
                    let value = counters[proto as usize].get();
                    if value > 0 {
                        out.sample(
                            name,
                            help,
                            MetricType::Counter,
                            &[
                                ("proxy_name", PROXY_NAME),
                                ("to", &upstream.to),
                                ("proto", proto.label()),
                            ],
                            value as f64,
                        );
                    }
                }
            }
        }
        for upstream in &upstreams {
            let failures = upstream.health_check_failures.get();
            if failures > 0 {
                out.sample(
                    "coredns_proxy_healthcheck_failures_total",
                    "Counter of the number of failed healthchecks.",
                    MetricType::Counter,
                    &[("proxy_name", PROXY_NAME), ("to", &upstream.to)],
                    failures as f64,
                );
            }
        }
        out.sample(
            "coredns_forward_healthcheck_broken_total",
            "Counter of the number of complete failures of the healthchecks.",
            MetricType::Counter,
            &[],
            self.healthcheck_broken.get() as f64,
        );
        out.sample(
            "coredns_forward_max_concurrent_rejects_total",
            "Counter of the number of queries rejected because the concurrent queries were at maximum.",
            MetricType::Counter,
            &[],
            self.max_concurrent_rejects.get() as f64,
        );
        self.collect_deprecated(&upstreams, out);
    }
}

impl ForwardMetrics {
    /// The `coredns_forward_*` families CoreDNS removed (1.11), still read by older
    /// dashboards and by the coredns-mixin alerts; derived from the same counters.
    fn collect_deprecated(&self, upstreams: &[Arc<UpstreamMetrics>], out: &mut Exposition) {
        for upstream in upstreams {
            let mut requests = 0;
            upstream.each_duration(|_, histogram| requests += histogram.count());
            if requests > 0 {
                out.sample(
                    "coredns_forward_requests_total",
                    "Counter of requests made per upstream.",
                    MetricType::Counter,
                    &[("to", &upstream.to)],
                    requests as f64,
                );
            }
        }
        for upstream in upstreams {
            upstream.each_duration(|rcode, histogram| {
                out.sample(
                    "coredns_forward_responses_total",
                    "Counter of responses received per upstream.",
                    MetricType::Counter,
                    &[("rcode", rcode), ("to", &upstream.to)],
                    histogram.count() as f64,
                );
            });
        }
        for upstream in upstreams {
            upstream.each_duration(|rcode, histogram| {
                out.histogram(
                    "coredns_forward_request_duration_seconds",
                    "Histogram of the time each request took.",
                    &[("to", &upstream.to), ("rcode", rcode)],
                    histogram,
                );
            });
        }
        for upstream in upstreams {
            let failures = upstream.health_check_failures.get();
            if failures > 0 {
                out.sample(
                    "coredns_forward_healthcheck_failures_total",
                    "Counter of the number of failed healthchecks.",
                    MetricType::Counter,
                    &[("to", &upstream.to)],
                    failures as f64,
                );
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn rcode_labels_are_coredns_names() {
        assert_eq!(rcode_label(0), "NOERROR");
        assert_eq!(rcode_label(3), "NXDOMAIN");
        assert_eq!(rcode_label(4), "NOTIMP");
        assert_eq!(rcode_label(12), "12");
        assert_eq!(rcode_label(16), "BADSIG");
        assert_eq!(rcode_label(23), "BADCOOKIE");
        assert_eq!(rcode_label(3841), "3841");
    }

    #[test]
    fn series_are_written_under_coredns_names() {
        let metrics = ForwardMetrics::default();
        let upstream = metrics.upstream("10.0.0.1:53");
        assert!(Arc::ptr_eq(&upstream, &metrics.upstream("10.0.0.1:53")));
        upstream.observe(0, 0.003);
        upstream.observe(3, 0.001);
        upstream.observe(3841, 0.001);
        upstream.conn_cache(Proto::Udp, false);
        upstream.conn_cache(Proto::Udp, true);
        upstream.conn_cache(Proto::Udp, true);
        upstream.health_check_failed();
        metrics.healthcheck_broken.inc();
        let mut out = Exposition::new();
        metrics.collect(&mut out);
        let text = out.finish();
        for line in [
            "coredns_proxy_request_duration_seconds_count{proxy_name=\"forward\",to=\"10.0.0.1:53\",rcode=\"NOERROR\"} 1",
            "coredns_proxy_request_duration_seconds_bucket{proxy_name=\"forward\",to=\"10.0.0.1:53\",rcode=\"NXDOMAIN\",le=\"0.001\"} 1",
            "coredns_proxy_request_duration_seconds_count{proxy_name=\"forward\",to=\"10.0.0.1:53\",rcode=\"3841\"} 1",
            "coredns_proxy_conn_cache_hits_total{proxy_name=\"forward\",to=\"10.0.0.1:53\",proto=\"udp\"} 2",
            "coredns_proxy_conn_cache_misses_total{proxy_name=\"forward\",to=\"10.0.0.1:53\",proto=\"udp\"} 1",
            "coredns_proxy_healthcheck_failures_total{proxy_name=\"forward\",to=\"10.0.0.1:53\"} 1",
            "coredns_forward_healthcheck_broken_total 1",
            "coredns_forward_max_concurrent_rejects_total 0",
            "coredns_forward_requests_total{to=\"10.0.0.1:53\"} 3",
            "coredns_forward_responses_total{rcode=\"NXDOMAIN\",to=\"10.0.0.1:53\"} 1",
            "coredns_forward_request_duration_seconds_count{to=\"10.0.0.1:53\",rcode=\"NOERROR\"} 1",
            "coredns_forward_healthcheck_failures_total{to=\"10.0.0.1:53\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
        }
        assert!(!text.contains("proto=\"tcp\""), "{text}");
        // Each family's samples follow its TYPE line, not interleaved with another's.
        let mut family = "";
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("# TYPE ") {
                family = name.split(' ').next().unwrap();
            } else if !line.starts_with('#') {
                assert!(line.starts_with(family), "{line} outside {family}\n{text}");
            }
        }
        assert_eq!(text.matches("# TYPE ").count(), 10, "{text}");
    }
}
