//! The *loop* plugin: at start, ask our own server a question that only a forwarding loop
//! would bring back to us more than once.
//!
//! CoreDNS sends `HINFO <random>.<random>.<zone>` to itself and exits fatally when it sees
//! the probe three times — which crash-loops the pod (coredns/coredns#2087, kind#1975). Here a
//! detected loop is reported once, with what to do about it, and the block stops forwarding
//! (SERVFAIL for names it would forward) while the cluster zone keeps being answered.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::codes::rtype;
use crate::name::WireName;

/// How many times the probe may be seen before it is a loop (CoreDNS: more than two).
const LOOP_THRESHOLD: u32 = 2;

/// One block's loop probe.
#[derive(Debug)]
pub struct LoopDetect {
    probe: WireName,
    seen: AtomicU32,
    answered: AtomicBool,
    looping: AtomicBool,
}

impl LoopDetect {
    /// A probe under `zone`, with two random labels.
    pub fn new(zone: &WireName) -> Self {
        let probe = zone
            .prepend_all([
                fastrand::u64(..).to_string().as_str(),
                fastrand::u64(..).to_string().as_str(),
            ])
            .unwrap_or_else(|_| zone.clone());
        Self {
            probe,
            seen: AtomicU32::new(0),
            answered: AtomicBool::new(false),
            looping: AtomicBool::new(false),
        }
    }

    /// The probe name (lower-case wire format), asked with type HINFO.
    pub fn probe(&self) -> &WireName {
        &self.probe
    }

    /// Called for every query the block sees; `true` when this query is what reveals a loop
    /// (so it is reported exactly once).
    pub fn observe(&self, qname: &[u8], qtype: u16) -> bool {
        if qtype != rtype::HINFO
            || qname != self.probe.as_bytes()
            || self.answered.load(Ordering::Relaxed)
        {
            return false;
        }
        let seen = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        seen > LOOP_THRESHOLD && !self.looping.swap(true, Ordering::Relaxed)
    }

    /// The probe came back answered: no loop, stop probing.
    pub fn answered(&self) {
        self.answered.store(true, Ordering::Relaxed);
    }

    /// Whether probing is still going.
    pub fn probing(&self) -> bool {
        !self.answered.load(Ordering::Relaxed) && !self.looping.load(Ordering::Relaxed)
    }

    /// Whether a loop was found.
    pub fn looping(&self) -> bool {
        self.looping.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_third_sighting_is_a_loop_reported_once() {
        let zone = WireName::root();
        let detect = LoopDetect::new(&zone);
        let probe = detect.probe().as_bytes().to_vec();
        assert_eq!(detect.probe().label_count(), 2);
        assert!(
            !detect.observe(&probe, rtype::A),
            "other types do not count"
        );
        assert!(
            !detect.observe(b"\x01x\x00", rtype::HINFO),
            "other names do not count"
        );
        assert!(!detect.observe(&probe, rtype::HINFO));
        assert!(!detect.observe(&probe, rtype::HINFO));
        assert!(detect.observe(&probe, rtype::HINFO), "third time");
        assert!(!detect.observe(&probe, rtype::HINFO), "reported once");
        assert!(detect.looping() && !detect.probing());
    }

    #[test]
    fn an_answered_probe_ends_probing() {
        let detect = LoopDetect::new(
            &WireName::from_dotted("cluster.local.").unwrap_or_else(|_| WireName::root()),
        );
        detect.answered();
        let probe = detect.probe().as_bytes().to_vec();
        for _ in 0..5 {
            assert!(!detect.observe(&probe, rtype::HINFO));
        }
        assert!(!detect.probing() && !detect.looping());
    }
}
