//! Histograms over fixed bucket bounds, and CoreDNS's bounds.

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

/// A histogram over fixed bucket bounds (`le`), cumulative at exposition time.
#[derive(Debug)]
pub struct Histogram {
    pub(super) bounds: &'static [f64],
    /// One count per bound, plus one for +Inf.
    pub(super) buckets: Box<[AtomicU64]>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
