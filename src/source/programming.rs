//! DNS programming latency: how long after a change in the cluster (a Pod turning ready, a
//! Service's selector changing) the answers that reflect it were published.
//!
//! The EndpointSlice controller stamps every slice it writes with
//! `endpoints.kubernetes.io/last-change-trigger-time`: when the change it reflects happened.
//! Each time a snapshot is published, every slice whose stamp is new since the previous
//! publication contributes one observation, `published - stamp`, labelled with the kind of
//! its Service. CoreDNS observes headless Services only (coredns/coredns#7644); here every
//! kind is, so the SLI covers ClusterIP Services too.
//!
//! Stamps older than the tracker (the process, or the configuration) are not observed: the
//! first listing after a start holds every slice of the cluster, most changed hours ago, and
//! counting them would bury real latencies under start-up noise. kube-proxy's
//! `network_programming_duration_seconds` draws the same line.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use crate::model::{Cluster, ObjectKey, ServiceKind};

/// One stamped slice of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceTrigger {
    /// The slice's namespace/name.
    pub slice: ObjectKey,
    /// The kind of the Service it belongs to.
    pub kind: ServiceKind,
    /// Its `last-change-trigger-time`.
    pub at: SystemTime,
}

/// The stamped slices of `cluster` whose Service exists (a slice of an unknown Service
/// programs no answer). ExternalName Services have no slices that matter, and are skipped.
pub fn triggers(cluster: &Cluster) -> Vec<SliceTrigger> {
    cluster
        .endpoint_slices
        .values()
        .filter_map(|slice| trigger(cluster, slice))
        .collect()
}

/// The stamped slices among `keys` (those still in `cluster`), as [`triggers`] gives them.
pub fn triggers_of(cluster: &Cluster, keys: &[&ObjectKey]) -> Vec<SliceTrigger> {
    keys.iter()
        .filter_map(|key| cluster.endpoint_slices.get(*key))
        .filter_map(|slice| trigger(cluster, slice))
        .collect()
}

fn trigger(cluster: &Cluster, slice: &crate::model::EndpointSlice) -> Option<SliceTrigger> {
    let at = slice.trigger_time?;
    let name = slice.service_name.as_ref()?;
    let service = cluster
        .services
        .get(&ObjectKey::new(&*slice.key.namespace, name.as_str()))?;
    if service.external_name.is_some() {
        return None;
    }
    Some(SliceTrigger {
        slice: slice.key.clone(),
        kind: ServiceKind::of(service),
        at,
    })
}

/// What the last publication's slices were stamped with.
#[derive(Debug)]
pub struct SliceStamps {
    since: SystemTime,
    seen: HashMap<ObjectKey, SystemTime>,
}

impl SliceStamps {
    /// A tracker that ignores stamps before the second of `since`, starting from the slices of the
    /// snapshot being served (`initial`), which are not observed.
    pub fn new(since: SystemTime, initial: &[SliceTrigger]) -> Self {
        // Stamps are whole seconds (RFC 3339 without a fraction): a change made in the
        // second the server started reads as that second's start.
        let since = since
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(since, |after| {
                SystemTime::UNIX_EPOCH + Duration::from_secs(after.as_secs())
            });
        Self {
            since,
            seen: initial
                .iter()
                .map(|trigger| (trigger.slice.clone(), trigger.at))
                .collect(),
        }
    }

    /// A snapshot with `triggers` was published at `now`: the latencies to observe, one per
    /// slice whose stamp changed (or that is new) and is not older than the tracker. A
    /// stamp in the future (clock skew between the controller and this host) counts as 0.
    pub fn published(
        &mut self,
        triggers: &[SliceTrigger],
        now: SystemTime,
    ) -> Vec<(ServiceKind, Duration)> {
        let mut seen = HashMap::with_capacity(triggers.len());
        let mut latencies = Vec::new();
        for trigger in triggers {
            let before = self.seen.get(&trigger.slice);
            if before != Some(&trigger.at) && trigger.at >= self.since {
                let latency = now.duration_since(trigger.at).unwrap_or_default();
                latencies.push((trigger.kind, latency));
            }
            seen.insert(trigger.slice.clone(), trigger.at);
        }
        self.seen = seen;
        latencies
    }

    /// A snapshot in which only the slices `changed` changed was published at `now`:
    /// `triggers` are the stamps of those still there (as [`SliceStamps::published`] would
    /// observe them, without walking every slice).
    pub fn changed(
        &mut self,
        triggers: &[SliceTrigger],
        changed: &[&ObjectKey],
        now: SystemTime,
    ) -> Vec<(ServiceKind, Duration)> {
        for key in changed {
            if !triggers.iter().any(|trigger| trigger.slice == **key) {
                self.seen.remove(*key);
            }
        }
        let mut latencies = Vec::new();
        for trigger in triggers {
            let before = self.seen.insert(trigger.slice.clone(), trigger.at);
            if before != Some(trigger.at) && trigger.at >= self.since {
                let latency = now.duration_since(trigger.at).unwrap_or_default();
                latencies.push((trigger.kind, latency));
            }
        }
        latencies
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
    }

    fn trigger(name: &str, kind: ServiceKind, seconds: u64) -> SliceTrigger {
        SliceTrigger {
            slice: ObjectKey::new("shop", name),
            kind,
            at: at(seconds),
        }
    }

    #[test]
    fn a_stamp_in_the_second_the_server_started_is_observed() {
        // The controller stamps whole seconds: a change made 0.6 s after the start, in the
        // same second, reads as before it.
        let started = at(1000) + Duration::from_millis(400);
        let mut tracker = SliceStamps::new(started, &[]);
        let stamped = [trigger("web-1", ServiceKind::HeadlessWithSelector, 1000)];
        assert_eq!(
            tracker.published(&stamped, at(1001)),
            vec![(ServiceKind::HeadlessWithSelector, Duration::from_secs(1))]
        );
    }

    #[test]
    fn only_new_stamps_since_the_start_are_observed() {
        let initial = [trigger("web-1", ServiceKind::ClusterIp, 900)];
        let mut tracker = SliceStamps::new(at(1000), &initial);
        // Unchanged: nothing. A slice stamped before the start: nothing.
        let unchanged = [
            trigger("web-1", ServiceKind::ClusterIp, 900),
            trigger("old-1", ServiceKind::ClusterIp, 950),
        ];
        assert!(tracker.published(&unchanged, at(1010)).is_empty());
        // A new stamp on a known slice, and a new slice.
        let changed = [
            trigger("web-1", ServiceKind::ClusterIp, 1005),
            trigger("old-1", ServiceKind::ClusterIp, 950),
            trigger("db-1", ServiceKind::HeadlessWithSelector, 1008),
        ];
        assert_eq!(
            tracker.published(&changed, at(1010)),
            vec![
                (ServiceKind::ClusterIp, Duration::from_secs(5)),
                (ServiceKind::HeadlessWithSelector, Duration::from_secs(2)),
            ]
        );
        // Published again without a change: nothing more.
        assert!(tracker.published(&changed, at(1020)).is_empty());
        // A slice that went away and came back with the same stamp is observed again.
        assert!(tracker.published(&changed[..1], at(1030)).is_empty());
        assert_eq!(
            tracker.published(&changed, at(1040)),
            vec![(ServiceKind::HeadlessWithSelector, Duration::from_secs(32))]
        );
    }

    #[test]
    fn a_stamp_from_the_future_is_zero() {
        let mut tracker = SliceStamps::new(at(1000), &[]);
        assert_eq!(
            tracker.published(&[trigger("web-1", ServiceKind::ClusterIp, 2000)], at(1500)),
            vec![(ServiceKind::ClusterIp, Duration::ZERO)]
        );
    }
}
