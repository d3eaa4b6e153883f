use std::net::IpAddr;

use super::{Addresses, Empty, Labels, ObjectKey, Protocol, Rare};

/// A Pod, reduced to what the EndpointSlice controller and `pods verified` read. What
/// `pods verified` reads (the key, the addresses, the phase and the flags) is inline; the rest
/// (labels, names, container ports), which the zone's trim drops, is one [`Rare`] pointer:
/// `pods verified` keeps 150,000 of these, at 80 bytes each rather than 168.
#[derive(Debug, Clone, PartialEq)]
pub struct Pod {
    /// namespace/name.
    pub key: ObjectKey,
    /// `status.podIPs` (or `status.podIP`); the first is the primary `status.podIP`.
    pub ips: Addresses,
    /// `status.phase`.
    pub phase: PodPhase,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// `spec.hostNetwork`.
    pub host_network: bool,
    /// The labels, names and ports.
    pub details: Rare<PodDetails>,
}

/// What of a Pod the EndpointSlice controller reads beside its addresses and state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodDetails {
    /// `metadata.labels`, matched by Service selectors.
    pub labels: Labels,
    /// `spec.hostname`.
    pub hostname: Option<Box<str>>,
    /// `spec.subdomain`.
    pub subdomain: Option<Box<str>>,
    /// `spec.nodeName`.
    pub node_name: Option<Box<str>>,
    /// Every container's `ports`, then every sidecar's (an init container with
    /// `restartPolicy: Always`), in spec order: the ports a named targetPort resolves against,
    /// first match wins. Ordinary init containers are not included.
    pub container_ports: Vec<ContainerPort>,
}

impl Empty for PodDetails {
    const EMPTY: &'static Self = &PodDetails {
        labels: Labels::new(),
        hostname: None,
        subdomain: None,
        node_name: None,
        container_ports: Vec::new(),
    };
}

impl Pod {
    /// A pod with no labels, names or ports (see [`Pod::with_details`]).
    pub fn new(key: ObjectKey, ips: Addresses, phase: PodPhase) -> Self {
        Self {
            key,
            ips,
            phase,
            ready: false,
            terminating: false,
            host_network: false,
            details: Rare::default(),
        }
    }

    /// The pod with these labels, names and ports.
    pub fn with_details(mut self, details: PodDetails) -> Self {
        self.details = Rare::new(details);
        self
    }

    /// Its labels, names and ports.
    pub fn details(&self) -> &PodDetails {
        self.details.get()
    }

    /// Changes its labels, names or ports.
    pub fn edit_details(&mut self, edit: impl FnOnce(&mut PodDetails)) {
        self.details.edit(edit);
    }

    /// `metadata.labels`.
    pub fn labels(&self) -> &Labels {
        &self.details().labels
    }

    /// `status.podIP`, the address `pods verified` matches.
    pub fn primary_ip(&self) -> Option<IpAddr> {
        self.ips.first().copied()
    }

    /// Succeeded or Failed: such a pod is never an endpoint.
    pub fn is_finished(&self) -> bool {
        matches!(self.phase, PodPhase::Succeeded | PodPhase::Failed)
    }
}

/// `status.phase`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodPhase {
    /// Pending.
    Pending,
    /// Running.
    Running,
    /// Succeeded.
    Succeeded,
    /// Failed.
    Failed,
    /// Unknown, or not reported.
    #[default]
    Unknown,
}

/// One entry of a container's `ports`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerPort {
    /// `name` (empty when unnamed).
    pub name: String,
    /// `containerPort`.
    pub port: u16,
    /// `protocol` (TCP when unset).
    pub protocol: Protocol,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_without_details_is_small_and_equal_to_one_with_empty_details() {
        // `pods verified` keeps one of these per pod of the cluster: what it reads is inline,
        // the rest one pointer.
        assert!(
            std::mem::size_of::<Pod>() <= 80,
            "{}",
            std::mem::size_of::<Pod>()
        );
        let bare = Pod::new(
            ObjectKey::new("shop", "web-0"),
            Addresses::new(),
            PodPhase::Running,
        );
        let mut emptied = bare.clone().with_details(PodDetails {
            hostname: Some("web-0".into()),
            ..PodDetails::default()
        });
        assert_ne!(bare, emptied);
        emptied.edit_details(|details| details.hostname = None);
        assert!(emptied.details.is_empty(), "an emptied pod holds no box");
        assert_eq!(bare, emptied);
        assert_eq!(bare.details(), &PodDetails::default());
    }
}
