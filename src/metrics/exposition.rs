//! The Prometheus text format (version 0.0.4) `/metrics` serves, and [`Collect`], what
//! writes into it at scrape time.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::histogram::Histogram;

/// The content type of the text exposition, as Prometheus's Go client sends it.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Something that writes metrics at scrape time.
pub trait Collect: Send + Sync {
    /// Writes this component's families into `out`.
    fn collect(&self, out: &mut Exposition);
}

/// The Prometheus text format (version 0.0.4) being written.
///
/// A family may be written by several components (one
/// [`ServerMetrics`](super::ServerMetrics) per server block, say): its samples are kept
/// together under one HELP/TYPE header, as the format requires, and families come out in the
/// order they were first written.
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
