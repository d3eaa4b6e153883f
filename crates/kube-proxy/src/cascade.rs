//! The probability cascade: how iptables chooses one of n endpoints, and what each one really
//! gets.
//!
//! iptables has no "pick one of n": kube-proxy writes n rules, the k-th (from 0) matching
//! with probability 1/(n-k) and the last with no statistic match at all, so each endpoint
//! receives 1/n. kube-proxy writes each probability with ten decimals (`%0.10f`); the
//! `statistic` match stores it as a 31-bit fraction, `lround(p * 2^31)`, and the kernel
//! matches a packet when `(random & 0x7fffffff) < stored`; `iptables-save` prints the stored
//! fraction back with eleven decimals (`%.11f`). So 1/3 is written `0.3333333333`, stored as
//! 715827883, matched with probability 715827883 / 2^31 and printed `0.33333333349`.

/// 2^31: the statistic match's denominator.
pub const STATISTIC_SCALE: f64 = 2_147_483_648.0;

/// A probability as the statistic match stores it: `stored / 2^31`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stored(pub u32);

impl Stored {
    /// What `iptables` stores for a probability given on its command line (`lround`, which
    /// rounds halves away from zero, as `f64::round` does). Values outside 0..=1 are clamped,
    /// as the option parser refuses them.
    pub fn from_probability(probability: f64) -> Self {
        let scaled = (probability.clamp(0.0, 1.0) * STATISTIC_SCALE).round();
        // 1.0 stores 2^31, one more than any 31-bit random value: it always matches.
        Self(scaled as u32)
    }

    /// What `iptables-save` prints: `%.11f` of the stored fraction.
    pub fn printed(self) -> String {
        format!("{:.11}", self.probability())
    }

    /// The probability a packet matches: `stored / 2^31`.
    pub fn probability(self) -> f64 {
        f64::from(self.0) / STATISTIC_SCALE
    }

    /// Whether a 32-bit random draw matches, as the kernel decides.
    pub fn matches(self, random: u32) -> bool {
        (random & 0x7fff_ffff) < self.0
    }
}

/// What kube-proxy writes for 1/n (`computeProbability`: `%0.10f`).
pub fn written(n: usize) -> String {
    format!("{:.10}", 1.0 / n as f64)
}

/// The cascade for n endpoints: the stored probability of each rule, `None` for the last
/// (unconditional) one. Empty for n = 0.
pub fn cascade(n: usize) -> Vec<Option<Stored>> {
    (0..n)
        .map(|index| {
            (index + 1 < n).then(|| {
                let text = written(n - index);
                Stored::from_probability(text.parse().unwrap_or(0.0))
            })
        })
        .collect()
}

/// The share of new connections each rule of a cascade really receives: rule k gets its own
/// probability times what every earlier rule left over; a rule without a probability takes
/// everything left, and nothing reaches the rules after it.
pub fn shares(cascade: &[Option<Stored>]) -> Vec<f64> {
    let mut remaining = 1.0_f64;
    cascade
        .iter()
        .map(|probability| {
            let share = match probability {
                Some(stored) => remaining * stored.probability(),
                None => remaining,
            };
            remaining -= share;
            share
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(n: usize) -> Vec<Option<String>> {
        cascade(n)
            .into_iter()
            .map(|p| p.map(Stored::printed))
            .collect()
    }

    #[test]
    fn cascade_prints_as_iptables_save_does() {
        assert_eq!(
            printed(3),
            [
                Some("0.33333333349".to_owned()),
                Some("0.50000000000".to_owned()),
                None
            ]
        );
        assert_eq!(printed(5)[0].as_deref(), Some("0.20000000019"));
        assert_eq!(printed(1), [None]);
        assert!(printed(0).is_empty());
        // 1/4 is exact in 31 bits; 1/7 and 1/10 round down and up.
        assert_eq!(printed(4)[0].as_deref(), Some("0.25000000000"));
        assert_eq!(printed(7)[0].as_deref(), Some("0.14285714272"));
        assert_eq!(printed(10)[0].as_deref(), Some("0.10000000009"));
    }

    #[test]
    fn printed_values_store_the_same_fraction() {
        for n in 1..=50 {
            for stored in cascade(n).into_iter().flatten() {
                let reparsed: f64 = stored.printed().parse().unwrap_or(-1.0);
                assert_eq!(Stored::from_probability(reparsed), stored, "n={n}");
            }
        }
    }

    /// The property: every endpoint of a cascade of n gets 1/n, within what 31-bit rounding
    /// of n-1 probabilities can move it.
    #[test]
    fn shares_are_one_nth_up_to_twenty() {
        for n in 1..=20 {
            let shares = shares(&cascade(n));
            assert_eq!(shares.len(), n);
            let total: f64 = shares.iter().sum();
            assert!((total - 1.0).abs() < 1e-12, "n={n} total={total}");
            for (index, share) in shares.iter().enumerate() {
                // Each stored probability is within 2^-32 of 1/(n-k); errors compound over
                // at most n-1 rules.
                let bound = n as f64 / STATISTIC_SCALE;
                assert!(
                    (share - 1.0 / n as f64).abs() <= bound,
                    "n={n} rule {index}: {share} vs {}",
                    1.0 / n as f64
                );
            }
        }
    }

    #[test]
    fn a_bad_cascade_is_visible() {
        // Three rules of 1/3: the classic misreading written as rules.
        let third = Stored::from_probability(1.0 / 3.0);
        let shares = shares(&[Some(third), Some(third), None]);
        assert!((shares[0] - 1.0 / 3.0).abs() < 1e-9);
        assert!((shares[1] - 2.0 / 9.0).abs() < 1e-9);
        assert!((shares[2] - 4.0 / 9.0).abs() < 1e-9);
    }

    #[test]
    fn kernel_comparison() {
        let half = Stored::from_probability(0.5);
        assert!(half.matches(0));
        assert!(half.matches(0x3fff_ffff));
        assert!(!half.matches(0x4000_0000));
        // The top bit is masked off.
        assert!(half.matches(0x8000_0000));
        assert!(Stored::from_probability(1.0).matches(u32::MAX));
        assert!(!Stored::from_probability(0.0).matches(0));
    }
}
