use std::net::IpAddr;

use super::{Addresses, Labels, ObjectKey, Protocol};

/// A Pod, reduced to what the EndpointSlice controller and `pods verified` read (its one or
/// two addresses inline, its names as boxed strings: `pods verified` keeps 150,000 of these).
#[derive(Debug, Clone, PartialEq)]
pub struct Pod {
    /// namespace/name.
    pub key: ObjectKey,
    /// `metadata.labels`, matched by Service selectors.
    pub labels: Labels,
    /// `status.podIPs` (or `status.podIP`); the first is the primary `status.podIP`.
    pub ips: Addresses,
    /// `status.phase`.
    pub phase: PodPhase,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// `spec.hostname`.
    pub hostname: Option<Box<str>>,
    /// `spec.subdomain`.
    pub subdomain: Option<Box<str>>,
    /// `spec.nodeName`.
    pub node_name: Option<Box<str>>,
    /// `spec.hostNetwork`.
    pub host_network: bool,
    /// Every container's `ports`, then every sidecar's (an init container with
    /// `restartPolicy: Always`), in spec order: the ports a named targetPort resolves against,
    /// first match wins. Ordinary init containers are not included.
    pub container_ports: Vec<ContainerPort>,
}

impl Pod {
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
