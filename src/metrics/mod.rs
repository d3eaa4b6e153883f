//! Prometheus metrics: lock-free counters and histograms that the query path updates with a
//! few atomic adds, and the text exposition `/metrics` serves.
//!
//! Components keep their own metrics (a [`Counter`] or [`Histogram`] per label combination
//! they know in advance, so the hot path never hashes a label set) and implement [`Collect`]
//! to write them out at scrape time.

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

/// A monotonic counter.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
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
    /// Sum of observations, in micro-units to stay integral (see [`Histogram::SCALE`]).
    sum: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    /// Observations are summed as integers in millionths.
    const SCALE: f64 = 1_000_000.0;

    /// A histogram over `bounds` (ascending).
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    /// Records one observation.
    pub fn observe(&self, value: f64) {
        let index = self.bounds.partition_point(|bound| *bound < value);
        self.buckets[index].fetch_add(1, Ordering::Relaxed);
        self.sum
            .fetch_add((value.max(0.0) * Self::SCALE) as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Sum of observations.
    pub fn sum(&self) -> f64 {
        self.sum.load(Ordering::Relaxed) as f64 / Self::SCALE
    }
}

/// Something that writes metrics at scrape time.
pub trait Collect: Send + Sync {
    /// Writes this component's families into `out`.
    fn collect(&self, out: &mut Exposition);
}

/// The Prometheus text format (version 0.0.4) being written.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
    /// Families already introduced with HELP/TYPE (a family may be written by several
    /// components, e.g. one per server block).
    seen: std::collections::HashSet<String>,
}

/// A metric family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
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
        self.text
    }

    fn header(&mut self, name: &str, help: &str, kind: Kind) {
        if !self.seen.insert(name.to_owned()) {
            return;
        }
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// One sample of a counter or gauge family.
    pub fn sample(
        &mut self,
        name: &str,
        help: &str,
        kind: Kind,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        self.header(name, help, kind);
        self.line(name, labels, None, value);
    }

    /// One labelled histogram of a histogram family.
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        histogram: &Histogram,
    ) {
        self.header(name, help, Kind::Histogram);
        let mut cumulative = 0;
        let bucket = format!("{name}_bucket");
        for (index, bound) in histogram.bounds.iter().enumerate() {
            cumulative += histogram.buckets[index].load(Ordering::Relaxed);
            self.line(
                &bucket,
                labels,
                Some(&format_value(*bound)),
                cumulative as f64,
            );
        }
        cumulative += histogram.buckets[histogram.bounds.len()].load(Ordering::Relaxed);
        self.line(&bucket, labels, Some("+Inf"), cumulative as f64);
        self.line(&format!("{name}_sum"), labels, None, histogram.sum());
        self.line(&format!("{name}_count"), labels, None, cumulative as f64);
    }

    fn line(&mut self, name: &str, labels: &[(&str, &str)], le: Option<&str>, value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() || le.is_some() {
            self.text.push('{');
            let mut first = true;
            for (key, value) in labels.iter().copied().chain(le.map(|le| ("le", le))) {
                if !first {
                    self.text.push(',');
                }
                first = false;
                let _ = write!(self.text, "{key}=\"");
                for c in value.chars() {
                    match c {
                        '\\' => self.text.push_str("\\\\"),
                        '"' => self.text.push_str("\\\""),
                        '\n' => self.text.push_str("\\n"),
                        c => self.text.push(c),
                    }
                }
                self.text.push('"');
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {}", format_value(value));
    }
}

/// A sample value as Prometheus writes it (integers without a fraction).
fn format_value(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
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
    fn families_are_introduced_once_and_labels_escaped() {
        let mut out = Exposition::new();
        out.sample("a_total", "An a.", Kind::Counter, &[("k", "x\"y")], 1.0);
        out.sample("a_total", "An a.", Kind::Counter, &[("k", "z")], 2.0);
        out.sample("b", "A b.", Kind::Gauge, &[], 0.5);
        assert_eq!(
            out.finish(),
            "# HELP a_total An a.\n# TYPE a_total counter\na_total{k=\"x\\\"y\"} 1\na_total{k=\"z\"} 2\n\
             # HELP b A b.\n# TYPE b gauge\nb 0.5\n"
        );
    }
}
