//! The order in which one query tries the upstreams (CoreDNS's `policy`), and the random
//! numbers behind it and behind the message IDs sent upstream.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use smallvec::SmallVec;

use crate::config::ForwardPolicy;

/// Upstream indexes in the order one query tries them (CoreDNS allows at most 15).
pub(super) type Order = SmallVec<[usize; 16]>;

/// Chooses the order of the upstreams for each query.
#[derive(Debug)]
pub(super) enum Policy {
    /// A fresh random permutation per query (CoreDNS's default).
    Random,
    /// The starting upstream rotates by one per query, the rest follow in file order.
    RoundRobin(AtomicU32),
    /// Always file order: the first upstream takes everything while it is healthy.
    Sequential,
}

impl Policy {
    pub(super) fn new(policy: ForwardPolicy) -> Self {
        match policy {
            ForwardPolicy::Random => Policy::Random,
            ForwardPolicy::RoundRobin => Policy::RoundRobin(AtomicU32::new(0)),
            ForwardPolicy::Sequential => Policy::Sequential,
        }
    }

    /// The order for one query over `n` upstreams.
    pub(super) fn order(&self, n: usize) -> Order {
        let mut order: Order = (0..n).collect();
        match self {
            Policy::Sequential => {}
            Policy::Random => shuffle(&mut order),
            Policy::RoundRobin(robin) => {
                if n > 0 {
                    // As CoreDNS: the counter is incremented first, so the first query
                    // starts at the second upstream; [i, 0..i, i+1..].
                    let first =
                        (robin.fetch_add(1, Ordering::Relaxed).wrapping_add(1)) as usize % n;
                    order[..=first].rotate_right(1);
                }
            }
        }
        order
    }
}

/// A uniformly random permutation (Fisher–Yates).
fn shuffle(items: &mut [usize]) {
    for i in (1..items.len()).rev() {
        let j = below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

/// A random number below `bound` (> 0); the bias of the modulo is negligible for the
/// small bounds used here.
pub(super) fn below(bound: u64) -> u64 {
    random_u64() % bound.max(1)
}

/// A random message ID.
pub(super) fn random_id() -> u16 {
    random_u64() as u16
}

/// 64 unpredictable bits: SipHash, keyed once from the operating system's randomness (std's
/// `RandomState`), of a counter. Good enough for message IDs and upstream order without a
/// dependency on a random number crate.
fn random_u64() -> u64 {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    KEYS.get_or_init(RandomState::new)
        .hash_one(COUNTER.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sequential_is_file_order() {
        let policy = Policy::new(ForwardPolicy::Sequential);
        for _ in 0..3 {
            assert_eq!(policy.order(3).as_slice(), &[0, 1, 2]);
        }
    }

    #[test]
    fn round_robin_rotates_the_first_and_keeps_the_rest_in_order() {
        let policy = Policy::new(ForwardPolicy::RoundRobin);
        let orders: Vec<Vec<usize>> = (0..4).map(|_| policy.order(3).to_vec()).collect();
        assert_eq!(
            orders,
            [vec![1, 0, 2], vec![2, 0, 1], vec![0, 1, 2], vec![1, 0, 2]]
        );
        assert_eq!(policy.order(1).as_slice(), &[0]);
        assert!(policy.order(0).is_empty());
    }

    #[test]
    fn random_is_a_permutation_that_varies() {
        let policy = Policy::new(ForwardPolicy::Random);
        let mut first = [0usize; 4];
        for _ in 0..400 {
            let order = policy.order(4);
            let mut sorted = order.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3]);
            first[order[0]] += 1;
        }
        // Each upstream leads about 100 times; 40 is far outside chance.
        assert!(first.iter().all(|&count| count > 40), "{first:?}");
        let two: Vec<usize> = (0..100).map(|_| policy.order(2)[0]).collect();
        assert!(two.contains(&0) && two.contains(&1));
        assert_eq!(policy.order(1).as_slice(), &[0]);
    }

    #[test]
    fn ids_vary() {
        let ids: std::collections::HashSet<u16> = (0..1000).map(|_| random_id()).collect();
        assert!(ids.len() > 950, "{}", ids.len());
    }
}
