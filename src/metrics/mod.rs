//! Prometheus metrics: lock-free counters and histograms that the query path updates with a
//! few atomic adds, and the text exposition `/metrics` serves.
//!
//! Components keep their own metrics (a [`Counter`] or [`Histogram`] per label combination
//! they know in advance, so the hot path never hashes a label set) and implement [`Collect`]
//! to write them out at scrape time. A [`Registry`] holds the collectors of the process and
//! renders them for `/metrics`.
//!
//! The building blocks are in files of their own, re-exported here: `counter.rs` ([`Counter`],
//! [`Gauge`]), `histogram.rs` ([`Histogram`] and CoreDNS's bucket bounds) and `exposition.rs`
//! (the text format, [`Exposition`], and [`Collect`]). The public modules:
//!
//! - [`dns`]: CoreDNS's `coredns_dns_*` families, one [`ServerMetrics`] per (server, zone).
//! - [`process`]: `process_*`, `coredns_build_info`, `coredns_panics_total`,
//!   `coredns_plugin_enabled`, and clusterdns's own store metrics.
//! - [`health`]: the *health* plugin's self-probe metrics.
//! - [`reload`]: the *reload* plugin's metrics.
//! - [`registry`]: the [`Registry`].

mod counter;
pub mod dns;
mod exposition;
pub mod health;
mod histogram;
pub mod kubernetes;
pub mod process;
pub mod registry;
pub mod reload;

pub use counter::{Counter, Gauge};
pub use dns::{DnsMetrics, Family, Observation, Proto, ServerMetrics, Writer};
pub use exposition::{CONTENT_TYPE, Collect, Exposition, MetricType};
pub use health::HealthMetrics;
pub use histogram::{DURATION_BUCKETS, Histogram, SIZE_BUCKETS, SLIM_DURATION_BUCKETS};
pub use kubernetes::ProgrammingMetrics;
pub use process::{
    BuildInfo, EnabledPlugin, ObjectCounts, PANICS, PluginEnabled, ProcessMetrics, StoreMetrics,
};
pub use registry::{Registration, Registry};
pub use reload::ReloadMetrics;
