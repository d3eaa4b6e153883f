use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use super::{Labels, ObjectKey};

/// A Service (`v1/Service`), as DNS and kube-proxy read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    /// namespace/name.
    pub key: ObjectKey,
    /// `metadata.labels` (matched by the `labels` option; copied onto computed slices).
    pub labels: Labels,
    /// `spec.selector`; `None` when the Service has no selector (its slices are user-made).
    pub selector: Option<Labels>,
    /// `spec.type`.
    pub service_type: ServiceType,
    /// `spec.clusterIPs` (or `spec.clusterIP`): empty for headless and ExternalName Services.
    pub cluster_ips: Vec<IpAddr>,
    /// `spec.clusterIP: None`.
    pub headless: bool,
    /// `spec.externalName`, for `type: ExternalName`.
    pub external_name: Option<String>,
    /// `spec.ports`, in spec order.
    pub ports: Vec<ServicePort>,
    /// `spec.publishNotReadyAddresses`.
    pub publish_not_ready_addresses: bool,
    /// `spec.ipFamilies` as address types (empty when unset).
    pub ip_families: Vec<AddressType>,
    /// `spec.externalTrafficPolicy` (Cluster when unset).
    pub external_traffic_policy: TrafficPolicy,
    /// `spec.internalTrafficPolicy` (Cluster when unset).
    pub internal_traffic_policy: TrafficPolicy,
    /// `spec.sessionAffinity`.
    pub session_affinity: SessionAffinity,
    /// `spec.externalIPs`.
    pub external_ips: Vec<IpAddr>,
    /// `status.loadBalancer.ingress[].ip`.
    pub load_balancer_ips: Vec<IpAddr>,
    /// `status.loadBalancer.ingress[].hostname` of the entries without an `ip` (cloud load
    /// balancers known by name; *k8s_external* answers them with a CNAME).
    pub load_balancer_hostnames: Vec<String>,
    /// `spec.loadBalancerSourceRanges`.
    pub load_balancer_source_ranges: Vec<IpNet>,
    /// `spec.healthCheckNodePort`: the node port kube-proxy answers health checks on, set by
    /// the API server for a LoadBalancer Service with `externalTrafficPolicy: Local`.
    pub health_check_node_port: Option<u16>,
}

impl Service {
    /// The port named `name` (the empty name is the single unnamed port).
    pub fn port_named(&self, name: &str) -> Option<&ServicePort> {
        self.ports.iter().find(|port| port.name == name)
    }
}

/// What kind of Service a Service is, as the `service_kind` label of
/// `coredns_kubernetes_dns_programming_duration_seconds` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceKind {
    /// A Service with a ClusterIP.
    ClusterIp,
    /// A headless Service whose slices the controller computes from its selector.
    HeadlessWithSelector,
    /// A headless Service without a selector (slices written by someone else).
    HeadlessWithoutSelector,
}

#[cfg(test)]
impl Service {
    /// A ClusterIP Service `shop/<name>` at 10.96.0.20 with one port, http 80/TCP → `target`,
    /// no selector, every policy at its default: the base of the unit tests' Services.
    pub(crate) fn for_test(name: &str, target: TargetPort) -> Self {
        Self {
            key: ObjectKey::new("shop", name),
            labels: Labels::new(),
            selector: None,
            service_type: ServiceType::ClusterIp,
            cluster_ips: vec![[10, 96, 0, 20].into()],
            headless: false,
            external_name: None,
            ports: vec![ServicePort {
                name: "http".to_owned(),
                protocol: Protocol::Tcp,
                port: 80,
                target_port: target,
                node_port: None,
            }],
            publish_not_ready_addresses: false,
            ip_families: vec![AddressType::IPv4],
            external_traffic_policy: TrafficPolicy::Cluster,
            internal_traffic_policy: TrafficPolicy::Cluster,
            session_affinity: SessionAffinity::None,
            external_ips: Vec::new(),
            load_balancer_ips: Vec::new(),
            load_balancer_hostnames: Vec::new(),
            load_balancer_source_ranges: Vec::new(),
            health_check_node_port: None,
        }
    }
}

impl ServiceKind {
    /// Every kind, in label order.
    pub const ALL: [Self; 3] = [
        Self::ClusterIp,
        Self::HeadlessWithSelector,
        Self::HeadlessWithoutSelector,
    ];

    /// The label value, as CoreDNS spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClusterIp => "cluster_ip",
            Self::HeadlessWithSelector => "headless_with_selector",
            Self::HeadlessWithoutSelector => "headless_without_selector",
        }
    }

    /// The kind of `service`.
    pub fn of(service: &Service) -> Self {
        match (service.headless, service.selector.is_some()) {
            (false, _) => Self::ClusterIp,
            (true, true) => Self::HeadlessWithSelector,
            (true, false) => Self::HeadlessWithoutSelector,
        }
    }
}

/// An EndpointSlice's `addressType`, and the family of a Service's `spec.ipFamilies`.
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

/// `spec.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceType {
    /// `ClusterIP` (the default).
    ClusterIp,
    /// `NodePort`.
    NodePort,
    /// `LoadBalancer`.
    LoadBalancer,
    /// `ExternalName`: a CNAME, no virtual IP, no endpoints.
    ExternalName,
}

/// One entry of `spec.ports`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServicePort {
    /// `name` (empty for the single unnamed port).
    pub name: String,
    /// `protocol` (TCP when unset).
    pub protocol: Protocol,
    /// `port`.
    pub port: u16,
    /// `targetPort`: a number, or the name of a container port resolved per pod.
    pub target_port: TargetPort,
    /// `nodePort`, for NodePort and LoadBalancer Services.
    pub node_port: Option<u16>,
}

/// `targetPort`: the API stores a number or a string, and a string is a name to look up in
/// each pod. The one exception is a string of digits (`"8080"`, which the API server would
/// refuse as a port name since a name needs a letter): it is read as the number it spells.
/// An unset, `0` or `""` targetPort is the Service port itself, as the API server defaults it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetPort {
    /// A container port number.
    Number(u16),
    /// The name of a container port.
    Name(String),
}

/// A port's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// SCTP.
    Sctp,
}

impl Protocol {
    /// The API spelling: `TCP`, `UDP`, `SCTP`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tcp => "TCP",
            Self::Udp => "UDP",
            Self::Sctp => "SCTP",
        }
    }

    /// The lower-case spelling used in SRV names (`_tcp`) and iptables (`-p tcp`).
    pub fn lower(self) -> &'static str {
        match self {
            Self::Tcp => "tcp",
            Self::Udp => "udp",
            Self::Sctp => "sctp",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `externalTrafficPolicy` / `internalTrafficPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrafficPolicy {
    /// Any ready endpoint in the cluster.
    #[default]
    Cluster,
    /// Only endpoints on the node that received the traffic.
    Local,
}

/// `spec.sessionAffinity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionAffinity {
    /// No affinity.
    #[default]
    None,
    /// `ClientIP`, with `sessionAffinityConfig.clientIP.timeoutSeconds` (10800 when unset).
    ClientIp {
        /// Seconds a client sticks to its endpoint.
        timeout_seconds: u32,
    },
}
