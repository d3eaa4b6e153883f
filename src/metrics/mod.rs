//! Prometheus metrics: lock-free counters and histograms that the query path updates with a
//! few atomic adds, and the text exposition `/metrics` serves.
//!
//! Components keep their own metrics (a [`Counter`] or [`Histogram`] per label combination
//! they know in advance, so the hot path never hashes a label set) and implement [`Collect`]
//! to write them out at scrape time. A [`Registry`] holds the collectors of the process and
//! renders them for `/metrics`.
//!
//! - [`dns`]: CoreDNS's `coredns_dns_*` families, one [`ServerMetrics`] per (server, zone).
//! - [`process`]: `process_*`, `coredns_build_info`, `coredns_panics_total`,
//!   `coredns_plugin_enabled`, and clusterdns's own store metrics.
//! - [`health`]: the *health* plugin's self-probe metrics.
//! - [`reload`]: the *reload* plugin's metrics.
//! - [`registry`]: the [`Registry`].

pub mod dns;
pub mod health;
pub mod kubernetes;
pub mod process;
pub mod registry;
pub mod reload;

pub use dns::{DnsMetrics, Family, Observation, Proto, ServerMetrics, Writer};
pub use health::HealthMetrics;
pub use kubernetes::ProgrammingMetrics;
pub use process::{
    BuildInfo, EnabledPlugin, ObjectCounts, PANICS, PluginEnabled, ProcessMetrics, StoreMetrics,
};
pub use registry::{Registration, Registry};
pub use reload::ReloadMetrics;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// CoreDNS's DNS duration buckets: `ExponentialBuckets(0.00025, 2, 16)`, 0.25 ms to 8.2 s.
pub const DURATION_BUCKETS: [f64; 16] = [
    0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024,
    2.048, 4.096, 8.192,
];

/// CoreDNS's message size buckets (`plugin.SizeBuckets`).
pub const SIZE_BUCKETS: [f64; 14] = [
    0.0, 100.0, 200.0, 300.0, 400.0, 511.0, 1023.0, 2047.0, 4095.0, 8291.0, 16000.0, 32000.0,
    48000.0, 64000.0,
];

/// CoreDNS's slim duration buckets (`plugin.SlimTimeBuckets`, `ExponentialBuckets(0.00025,
/// 10, 5)`), 0.25 ms to 2.5 s: the *health* self-probe's.
pub const SLIM_DURATION_BUCKETS: [f64; 5] = [0.00025, 0.0025, 0.025, 0.25, 2.5];

/// The content type of the text exposition, as Prometheus's Go client sends it.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A monotonic counter.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// A counter at zero (usable in a `static`).
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down.
#[derive(Debug, Default)]
pub struct Gauge(AtomicU64);

impl Gauge {
    /// A gauge at zero (usable in a `static`).
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Sets the value.
    pub fn set(&self, value: f64) {
        self.0.store(value.to_bits(), Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// A histogram over fixed bucket bounds (`le`), cumulative at exposition time.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// One count per bound, plus one for +Inf.
    buckets: Box<[AtomicU64]>,
    /// Sum of observations as an integer number of `1 / scale` units, so that adding is one
    /// atomic add.
    sum: AtomicU64,
    /// Units per 1.0 of an observation.
    scale: f64,
}

impl Histogram {
    /// A histogram over `bounds` (ascending) whose sum keeps millionths: right for
    /// durations in seconds (a microsecond resolution; the sum wraps after 584,000 years of
    /// observed time).
    pub fn new(bounds: &'static [f64]) -> Self {
        Self::with_resolution(bounds, 1e-6)
    }

    /// A histogram over `bounds` whose observations are whole numbers (sizes, counts): the
    /// sum is kept exactly, and wraps only after 2^64 units.
    pub fn integral(bounds: &'static [f64]) -> Self {
        Self::with_resolution(bounds, 1.0)
    }

    /// A histogram over `bounds` whose sum is kept in units of `resolution` (an observation
    /// is rounded to the nearest multiple of it).
    pub fn with_resolution(bounds: &'static [f64], resolution: f64) -> Self {
        Self {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            scale: 1.0 / resolution,
        }
    }

    /// Records one observation: two relaxed atomic adds. It is on every query's path (sizes,
    /// durations, search-path walks), so the bounds are read from the lowest up, where most
    /// observations fall, and the sum is rounded without a call into libm.
    pub fn observe(&self, value: f64) {
        // The first bound not below the value; NaN in the first bucket.
        let index = if value.is_nan() {
            0
        } else {
            self.bounds
                .iter()
                .position(|bound| value <= *bound)
                .unwrap_or(self.bounds.len())
        };
        if let Some(bucket) = self.buckets.get(index) {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        // Not negative, so a half added then cut off rounds it. `as` saturates: NaN counts
        // as 0, an absurdly large value as u64::MAX.
        self.sum.fetch_add(
            (value.max(0.0) * self.scale + 0.5) as u64,
            Ordering::Relaxed,
        );
    }

    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.buckets
            .iter()
            .map(|bucket| bucket.load(Ordering::Relaxed))
            .sum()
    }

    /// Sum of observations.
    pub fn sum(&self) -> f64 {
        self.sum.load(Ordering::Relaxed) as f64 / self.scale
    }

    /// The bucket bounds (`le`), without +Inf.
    pub fn bounds(&self) -> &'static [f64] {
        self.bounds
    }

    /// A zeroed histogram with the same bounds and resolution.
    pub fn empty_like(&self) -> Self {
        Self {
            bounds: self.bounds,
            buckets: (0..self.buckets.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            scale: self.scale,
        }
    }

    /// Adds `other`'s observations to this histogram's (merging shards at scrape time).
    /// Both must have the same bounds; buckets beyond the shorter are ignored.
    pub fn absorb(&self, other: &Histogram) {
        for (mine, theirs) in self.buckets.iter().zip(other.buckets.iter()) {
            mine.fetch_add(theirs.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        let units = if self.scale == other.scale {
            other.sum.load(Ordering::Relaxed)
        } else {
            (other.sum() * self.scale).round() as u64
        };
        self.sum.fetch_add(units, Ordering::Relaxed);
    }
}

/// Something that writes metrics at scrape time.
pub trait Collect: Send + Sync {
    /// Writes this component's families into `out`.
    fn collect(&self, out: &mut Exposition);
}

/// The Prometheus text format (version 0.0.4) being written.
///
/// A family may be written by several components (one [`ServerMetrics`] per server block,
/// say): its samples are kept together under one HELP/TYPE header, as the format requires,
/// and families come out in the order they were first written.
#[derive(Debug, Default)]
pub struct Exposition {
    families: Vec<FamilyText>,
    /// Family name to its index in `families`.
    index: HashMap<String, usize>,
}

/// One family's header and samples.
#[derive(Debug)]
struct FamilyText {
    header: String,
    samples: String,
}

/// A metric family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// counter.
    Counter,
    /// gauge.
    Gauge,
    /// histogram.
    Histogram,
}

impl Exposition {
    /// An empty exposition.
    pub fn new() -> Self {
        Self::default()
    }

    /// The text so far.
    pub fn finish(self) -> String {
        let len = self
            .families
            .iter()
            .map(|family| family.header.len() + family.samples.len())
            .sum();
        let mut text = String::with_capacity(len);
        for family in &self.families {
            text.push_str(&family.header);
            text.push_str(&family.samples);
        }
        text
    }

    /// The sample text of family `name`, introducing it with HELP and TYPE the first time.
    fn family(&mut self, name: &str, help: &str, kind: MetricType) -> &mut String {
        let index = match self.index.get(name) {
            Some(&index) => index,
            None => {
                let kind = match kind {
                    MetricType::Counter => "counter",
                    MetricType::Gauge => "gauge",
                    MetricType::Histogram => "histogram",
                };
                let mut header = String::new();
                header.push_str("# HELP ");
                header.push_str(name);
                header.push(' ');
                escape_help(help, &mut header);
                header.push('\n');
                let _ = writeln!(header, "# TYPE {name} {kind}");
                self.families.push(FamilyText {
                    header,
                    samples: String::new(),
                });
                self.index.insert(name.to_owned(), self.families.len() - 1);
                self.families.len() - 1
            }
        };
        &mut self.families[index].samples
    }

    /// One sample of a counter or gauge family.
    pub fn sample(
        &mut self,
        name: &str,
        help: &str,
        kind: MetricType,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        let out = self.family(name, help, kind);
        line(out, name, "", labels, None, value);
    }

    /// One labelled histogram of a histogram family.
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        histogram: &Histogram,
    ) {
        let out = self.family(name, help, MetricType::Histogram);
        let mut cumulative = 0;
        for (bound, bucket) in histogram.bounds.iter().zip(histogram.buckets.iter()) {
            cumulative += bucket.load(Ordering::Relaxed);
            let le = format_value(*bound);
            line(out, name, "_bucket", labels, Some(&le), cumulative as f64);
        }
        if let Some(inf) = histogram.buckets.last() {
            cumulative += inf.load(Ordering::Relaxed);
        }
        line(
            out,
            name,
            "_bucket",
            labels,
            Some("+Inf"),
            cumulative as f64,
        );
        line(out, name, "_sum", labels, None, histogram.sum());
        line(out, name, "_count", labels, None, cumulative as f64);
    }
}

/// Writes one sample line, `name` + `suffix`, its labels (then `le`, if any) and the value.
fn line(
    out: &mut String,
    name: &str,
    suffix: &str,
    labels: &[(&str, &str)],
    le: Option<&str>,
    value: f64,
) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() || le.is_some() {
        out.push('{');
        let mut first = true;
        for (key, value) in labels.iter().copied().chain(le.map(|le| ("le", le))) {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(key);
            out.push_str("=\"");
            for c in value.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '"' => out.push_str("\\\""),
                    '\n' => out.push_str("\\n"),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        out.push('}');
    }
    let _ = writeln!(out, " {}", format_value(value));
}

/// A HELP text as the format wants it: backslash and newline escaped.
fn escape_help(help: &str, out: &mut String) {
    for c in help.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A sample value as Prometheus writes it (integers without a fraction).
fn format_value(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative_with_inf_sum_and_count() {
        static BOUNDS: [f64; 3] = [0.1, 0.5, 1.0];
        let histogram = Histogram::new(&BOUNDS);
        for value in [0.05, 0.1, 0.3, 2.0] {
            histogram.observe(value);
        }
        let mut out = Exposition::new();
        out.histogram("x_seconds", "An x.", &[("server", "dns://:53")], &histogram);
        assert_eq!(
            out.finish(),
            "# HELP x_seconds An x.\n# TYPE x_seconds histogram\n\
             x_seconds_bucket{server=\"dns://:53\",le=\"0.1\"} 2\n\
             x_seconds_bucket{server=\"dns://:53\",le=\"0.5\"} 3\n\
             x_seconds_bucket{server=\"dns://:53\",le=\"1\"} 3\n\
             x_seconds_bucket{server=\"dns://:53\",le=\"+Inf\"} 4\n\
             x_seconds_sum{server=\"dns://:53\"} 2.45\n\
             x_seconds_count{server=\"dns://:53\"} 4\n"
        );
    }

    #[test]
    fn a_family_written_twice_stays_together_under_one_header() {
        let mut out = Exposition::new();
        out.sample("a_total", "An a.", MetricType::Counter, &[("k", "1")], 1.0);
        out.sample("b_total", "A b.", MetricType::Counter, &[("k", "1")], 2.0);
        out.sample("a_total", "An a.", MetricType::Counter, &[("k", "2")], 3.0);
        assert_eq!(
            out.finish(),
            "# HELP a_total An a.\n# TYPE a_total counter\na_total{k=\"1\"} 1\na_total{k=\"2\"} 3\n\
             # HELP b_total A b.\n# TYPE b_total counter\nb_total{k=\"1\"} 2\n"
        );
    }

    #[test]
    fn help_text_and_label_values_are_escaped() {
        let mut out = Exposition::new();
        out.sample(
            "c",
            "Back\\slash and\nnewline.",
            MetricType::Gauge,
            &[("k", "a\\b\nc\"d")],
            1.0,
        );
        assert_eq!(
            out.finish(),
            "# HELP c Back\\\\slash and\\nnewline.\n# TYPE c gauge\nc{k=\"a\\\\b\\nc\\\"d\"} 1\n"
        );
    }

    #[test]
    fn integral_histograms_sum_exactly_and_durations_to_the_microsecond() {
        let sizes = Histogram::integral(&SIZE_BUCKETS);
        for _ in 0..1000 {
            sizes.observe(65535.0);
        }
        assert_eq!(sizes.sum(), 65_535_000.0);
        assert_eq!(sizes.count(), 1000);
        let durations = Histogram::new(&DURATION_BUCKETS);
        durations.observe(0.29);
        durations.observe(0.000_000_4);
        assert_eq!(durations.sum(), 0.29);
        durations.observe(0.000_001_6);
        assert_eq!(durations.sum(), 0.290_002, "to the nearest microsecond");
        durations.observe(f64::NAN);
        assert_eq!(durations.count(), 4);
        assert_eq!(durations.sum(), 0.290_002, "NaN adds nothing");
        let first = durations.buckets[0].load(Ordering::Relaxed);
        assert_eq!(first, 3, "below the first bound, and NaN");
    }

    #[test]
    fn absorbing_merges_buckets_and_sums() {
        let total = Histogram::new(&DURATION_BUCKETS);
        let shard = Histogram::new(&DURATION_BUCKETS);
        shard.observe(0.001);
        shard.observe(10.0);
        total.observe(0.5);
        total.absorb(&shard);
        assert_eq!(total.count(), 3);
        assert_eq!(total.sum(), 10.501);
        let coarse = Histogram::integral(&DURATION_BUCKETS);
        coarse.absorb(&shard);
        assert_eq!(coarse.sum(), 10.0);
    }

    #[test]
    fn values_are_written_as_prometheus_reads_them() {
        assert_eq!(format_value(3.0), "3");
        assert_eq!(format_value(0.00025), "0.00025");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NAN), "NaN");
    }

    #[test]
    fn families_are_introduced_once_and_labels_escaped() {
        let mut out = Exposition::new();
        out.sample(
            "a_total",
            "An a.",
            MetricType::Counter,
            &[("k", "x\"y")],
            1.0,
        );
        out.sample("a_total", "An a.", MetricType::Counter, &[("k", "z")], 2.0);
        out.sample("b", "A b.", MetricType::Gauge, &[], 0.5);
        assert_eq!(
            out.finish(),
            "# HELP a_total An a.\n# TYPE a_total counter\na_total{k=\"x\\\"y\"} 1\na_total{k=\"z\"} 2\n\
             # HELP b A b.\n# TYPE b gauge\nb 0.5\n"
        );
    }
}
