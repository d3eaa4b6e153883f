//! EndpointSlices, and the EndpointSlice controller that computes them from Pods.

use std::net::IpAddr;

use super::{Labels, ObjectKey, Protocol};

/// An EndpointSlice (`discovery.k8s.io/v1`).
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointSlice {
    /// namespace/name.
    pub key: ObjectKey,
    /// The `kubernetes.io/service-name` label: the Service this slice belongs to.
    pub service_name: Option<String>,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `addressType`.
    pub address_type: AddressType,
    /// `endpoints`, in slice order.
    pub endpoints: Vec<Endpoint>,
    /// `ports`, in slice order. Empty means the slice carries no port.
    pub ports: Vec<EndpointPort>,
}

/// `addressType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AddressType {
    /// IPv4 addresses.
    IPv4,
    /// IPv6 addresses.
    IPv6,
    /// Fully qualified domain names (deprecated; ignored by DNS and kube-proxy).
    Fqdn,
}

impl AddressType {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IPv4 => "IPv4",
            Self::IPv6 => "IPv6",
            Self::Fqdn => "FQDN",
        }
    }

    /// The address type of one IP.
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(_) => Self::IPv4,
            IpAddr::V6(_) => Self::IPv6,
        }
    }
}

/// One entry of `endpoints`.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// `addresses` (FQDN slices keep none).
    pub addresses: Vec<IpAddr>,
    /// `conditions`.
    pub conditions: EndpointConditions,
    /// `hostname`.
    pub hostname: Option<String>,
    /// `nodeName`.
    pub node_name: Option<String>,
    /// `zone`.
    pub zone: Option<String>,
    /// `targetRef.name` when `targetRef.kind` is Pod.
    pub target_pod: Option<String>,
}

/// `conditions`, with the API's defaults applied by the accessors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EndpointConditions {
    /// `ready` as written (`None` when absent).
    pub ready: Option<bool>,
    /// `serving` as written.
    pub serving: Option<bool>,
    /// `terminating` as written.
    pub terminating: Option<bool>,
}

impl EndpointConditions {
    /// A missing `ready` means ready.
    pub fn ready(self) -> bool {
        self.ready.unwrap_or(true)
    }

    /// A missing `serving` means "same as ready".
    pub fn serving(self) -> bool {
        self.serving.unwrap_or_else(|| self.ready())
    }

    /// A missing `terminating` means false.
    pub fn terminating(self) -> bool {
        self.terminating.unwrap_or(false)
    }
}

/// One entry of `ports`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPort {
    /// `name` (empty when unnamed).
    pub name: String,
    /// `protocol` (TCP when unset).
    pub protocol: Protocol,
    /// `port`; `None` means the slice does not restrict ports.
    pub port: Option<u16>,
}
