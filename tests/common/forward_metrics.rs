//! The process's *forward* metrics as a test reads them. Every forwarder in this test binary
//! writes one registry (as every block of a server process does), keyed by the upstream's
//! address, and a port one test's upstream had may be another's a moment later: a test reads
//! only what its own queries added, the change since a [`Reading`] it took before them.

use clusterdns::forward::forward_metrics;
use clusterdns::metrics::{Collect, Exposition};

/// The forward metrics at one moment, as exposed.
pub struct Reading(String);

impl Reading {
    /// The metrics now.
    pub fn now() -> Self {
        let mut out = Exposition::new();
        forward_metrics().collect(&mut out);
        Self(out.finish())
    }

    /// The value of `series` (name and labels as exposed) in this reading; 0 when absent.
    pub fn value(&self, series: &str) -> f64 {
        self.0
            .lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .map_or(0.0, |value| value.parse().unwrap())
    }

    /// What `series` gained from this reading to now.
    pub fn since(&self, series: &str) -> f64 {
        Self::now().value(series) - self.value(series)
    }

    /// The text of the reading.
    pub fn text(&self) -> &str {
        &self.0
    }
}
