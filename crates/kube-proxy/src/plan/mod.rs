//! kube-proxy's view of the objects: which Service ports it programs, which endpoints each
//! one uses, and the per-port decisions the iptables and nftables renderers turn into rules.
//!
//! Everything here follows `pkg/proxy` of kube-proxy, one proxier per IP family:
//!
//! - **Services** (`ServiceChangeTracker`): headless and ExternalName Services get nothing;
//!   a Service without a ClusterIP of the family is left out of that family's rules;
//!   externalIPs, load-balancer ingress IPs and `loadBalancerSourceRanges` keep only the
//!   family's addresses. A port is identified by its [`ServicePortName`]: the Service, the
//!   port's name and its protocol.
//! - **Endpoints** (`EndpointSliceCache`): the Service's slices (by the
//!   `kubernetes.io/service-name` label) of the family's address type; a slice port without a
//!   number is ignored; an endpoint is its first address and the slice port's number, matched
//!   to the Service port by **name and protocol**; the same `ip:port` in two slices is one
//!   endpoint (the local copy wins); the list is sorted by its `ip:port` text, which is the
//!   order of the probability cascade.
//! - **Choice** (`CategorizeEndpoints`): Cluster policy uses the ready endpoints, and only if
//!   there are none the serving-and-terminating ones (the terminating fallback); Local policy
//!   does the same with this node's endpoints, independently. Topology hints are not modelled
//!   (the model keeps no hints), so every ready endpoint is a Cluster endpoint.

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use clusterdns_model::{
    AddressType, Cluster, ObjectKey, Protocol, Service, ServiceType, SessionAffinity, TrafficPolicy,
};

/// The IP family a proxier programs (kube-proxy runs one per family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum IpFamily {
    /// IPv4 (`iptables`, `table ip kube-proxy`).
    #[default]
    V4,
    /// IPv6 (`ip6tables`, `table ip6 kube-proxy`).
    V6,
}

impl IpFamily {
    /// The family of `ip`.
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(_) => Self::V4,
            IpAddr::V6(_) => Self::V6,
        }
    }

    /// Whether `ip` is of this family.
    pub fn contains(self, ip: IpAddr) -> bool {
        Self::of(ip) == self
    }

    /// The EndpointSlice address type of the family.
    pub fn address_type(self) -> AddressType {
        match self {
            Self::V4 => AddressType::IPv4,
            Self::V6 => AddressType::IPv6,
        }
    }

    /// `IPv4` / `IPv6`.
    pub fn as_str(self) -> &'static str {
        self.address_type().as_str()
    }
}

/// A Service port as kube-proxy keys it: namespace, Service name, port name, protocol. Its
/// text (`Display`) is `namespace/name:port`, or `namespace/name` for an unnamed port: what
/// kube-proxy's rule comments and chain-name hashes use.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServicePortName {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// The port's name (empty for an unnamed port).
    pub port: String,
    /// The port's protocol.
    pub protocol: Protocol,
}

impl ServicePortName {
    /// The Service this port belongs to.
    pub fn service(&self) -> ObjectKey {
        ObjectKey::new(self.namespace.clone(), self.name.clone())
    }
}

impl fmt::Display for ServicePortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)?;
        if !self.port.is_empty() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

/// One endpoint of a Service port, as kube-proxy holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyEndpoint {
    /// The endpoint's first address.
    pub ip: IpAddr,
    /// The slice port's number.
    pub port: u16,
    /// `nodeName`.
    pub node: Option<String>,
    /// The pod (`targetRef`), for reports.
    pub pod: Option<String>,
    /// `conditions.ready` (missing = true).
    pub ready: bool,
    /// `conditions.serving` (missing = ready).
    pub serving: bool,
    /// `conditions.terminating` (missing = false).
    pub terminating: bool,
    /// On the node the rules are for.
    pub local: bool,
}

/// `ip:port`, with IPv6 in brackets (Go's `net.JoinHostPort`).
pub fn join_host_port(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    }
}

impl ProxyEndpoint {
    /// `ip:port` (`[ip]:port` for IPv6): the endpoint's identity and sort key.
    pub fn addr_port(&self) -> String {
        join_host_port(self.ip, self.port)
    }
}

/// What the renders are asked for.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// The family (one proxier's rules).
    pub family: IpFamily,
    /// This node's name (`--hostname-override`): its endpoints are local. With `None`, no
    /// endpoint is local, as for a kube-proxy that does not know its node.
    pub node: Option<String>,
    /// The cluster's pod CIDRs (`--cluster-cidr`); the one of the family makes the "not a pod"
    /// test. Without one, off-cluster sources are not told apart (no masquerade rule), as
    /// kube-proxy does when local-traffic detection is off.
    pub cluster_cidrs: Vec<IpNet>,
}

impl PlanOptions {
    /// The cluster CIDR of the family, if given.
    pub fn cluster_cidr(&self) -> Option<IpNet> {
        self.cluster_cidrs
            .iter()
            .copied()
            .find(|net| self.family.contains(net.addr()))
    }
}

/// One Service port's rules, decided.
#[derive(Debug, Clone)]
pub struct PortPlan {
    /// The port's identity.
    pub name: ServicePortName,
    /// The ClusterIP of the family.
    pub cluster_ip: IpAddr,
    /// `port`.
    pub port: u16,
    /// `nodePort`.
    pub node_port: Option<u16>,
    /// `healthCheckNodePort` (LoadBalancer with externalTrafficPolicy Local).
    pub health_check_node_port: Option<u16>,
    /// `externalIPs` of the family.
    pub external_ips: Vec<IpAddr>,
    /// `status.loadBalancer.ingress[].ip` of the family.
    pub load_balancer_ips: Vec<IpAddr>,
    /// `loadBalancerSourceRanges` of the family.
    pub source_ranges: Vec<IpNet>,
    /// internalTrafficPolicy is Local.
    pub internal_local: bool,
    /// externalTrafficPolicy is Local (and the Service is NodePort, LoadBalancer or has
    /// externalIPs, the only cases the field means anything).
    pub external_local: bool,
    /// `sessionAffinity: ClientIP` timeout, in seconds.
    pub affinity_timeout: Option<u32>,
    /// Every endpoint from the slices, sorted by `ip:port`.
    pub endpoints: Vec<ProxyEndpoint>,
    /// The Cluster-policy endpoints (empty when the port never uses Cluster policy).
    pub cluster_endpoints: Vec<ProxyEndpoint>,
    /// The Local-policy endpoints (empty when the port never uses Local policy).
    pub local_endpoints: Vec<ProxyEndpoint>,
    /// The endpoints this node can send to: the union of the two, sorted.
    pub reachable: Vec<ProxyEndpoint>,
    /// The Cluster endpoints are serving-and-terminating ones (no endpoint is ready).
    pub cluster_fallback: bool,
    /// The Local endpoints are serving-and-terminating ones.
    pub local_fallback: bool,
    /// Some endpoint anywhere in the cluster can take traffic.
    pub has_endpoints: bool,
}

impl PortPlan {
    /// NodePort, load-balancer IPs or externalIPs: traffic can arrive "from outside".
    pub fn externally_accessible(&self) -> bool {
        self.node_port.is_some()
            || !self.load_balancer_ips.is_empty()
            || !self.external_ips.is_empty()
    }

    /// The port ever sends traffic by Cluster policy.
    pub fn uses_cluster_endpoints(&self) -> bool {
        !self.internal_local || (self.externally_accessible() && !self.external_local)
    }

    /// The port ever sends traffic by Local policy.
    pub fn uses_local_endpoints(&self) -> bool {
        self.internal_local || (self.external_local && self.externally_accessible())
    }

    /// ClusterIP traffic has somewhere to go.
    pub fn has_internal_endpoints(&self) -> bool {
        if self.internal_local {
            self.has_endpoints && !self.local_endpoints.is_empty()
        } else {
            self.has_endpoints
        }
    }

    /// External traffic has somewhere to go.
    pub fn has_external_endpoints(&self) -> bool {
        if self.external_local {
            self.has_endpoints && !self.local_endpoints.is_empty()
        } else {
            self.has_endpoints
        }
    }

    /// The Cluster-policy chain exists.
    pub fn uses_cluster_chain(&self) -> bool {
        !self.cluster_endpoints.is_empty() && self.uses_cluster_endpoints()
    }

    /// The Local-policy chain exists.
    pub fn uses_local_chain(&self) -> bool {
        !self.local_endpoints.is_empty() && self.uses_local_endpoints()
    }

    /// The external chain exists (even without external endpoints, for the short-circuit
    /// rules of traffic from the node and its pods).
    pub fn uses_external_chain(&self) -> bool {
        self.has_endpoints && self.externally_accessible()
    }
}

/// Every Service port kube-proxy programs for one family, in a stable order (by port name,
/// then protocol; kube-proxy itself walks a Go map).
#[derive(Debug, Clone)]
pub struct Plan {
    /// What was asked.
    pub options: PlanOptions,
    /// The ports.
    pub ports: Vec<PortPlan>,
}

/// Why a Service has no rules at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// `clusterIP: None`.
    Headless,
    /// `type: ExternalName`.
    ExternalName,
    /// No ClusterIP of the family.
    OtherFamily,
}

/// Why kube-proxy leaves `service` out of `family`'s rules, if it does.
pub fn skipped(service: &Service, family: IpFamily) -> Option<Skipped> {
    if service.service_type == ServiceType::ExternalName {
        Some(Skipped::ExternalName)
    } else if service.headless || service.cluster_ips.is_empty() {
        Some(Skipped::Headless)
    } else if !service.cluster_ips.iter().any(|ip| family.contains(*ip)) {
        Some(Skipped::OtherFamily)
    } else {
        None
    }
}

/// kube-proxy's endpoints of `service` for `family`, keyed by port name and protocol, each
/// list sorted by `ip:port` (`EndpointSliceCache`).
pub fn endpoints_map(
    cluster: &Cluster,
    service: &ObjectKey,
    family: IpFamily,
    node: Option<&str>,
) -> BTreeMap<(String, Protocol), Vec<ProxyEndpoint>> {
    let mut by_port: BTreeMap<(String, Protocol), BTreeMap<String, ProxyEndpoint>> =
        BTreeMap::new();
    for slice in cluster.slices_of(service) {
        if slice.address_type != family.address_type() {
            continue;
        }
        for port in &slice.ports {
            let Some(number) = port.port else {
                continue;
            };
            let set = by_port
                .entry((port.name.clone(), port.protocol))
                .or_default();
            for endpoint in &slice.endpoints {
                let Some(ip) = endpoint.addresses.first().copied() else {
                    continue;
                };
                if !family.contains(ip) {
                    continue;
                }
                let local = node.is_some() && endpoint.node_name() == node;
                let info = ProxyEndpoint {
                    ip,
                    port: number,
                    node: endpoint.node_name().map(str::to_owned),
                    pod: endpoint.target_pod().map(str::to_owned),
                    ready: endpoint.conditions.ready(),
                    serving: endpoint.conditions.serving(),
                    terminating: endpoint.conditions.terminating(),
                    local,
                };
                let key = info.addr_port();
                if !set.contains_key(&key) || local {
                    set.insert(key, info);
                }
            }
        }
    }
    by_port
        .into_iter()
        .map(|(key, set)| (key, set.into_values().collect()))
        .collect()
}

/// The plan of one Service port from its Service and its endpoints.
fn port_plan(
    service: &Service,
    index: usize,
    family: IpFamily,
    endpoints: Vec<ProxyEndpoint>,
) -> Option<PortPlan> {
    let port = service.ports.get(index)?;
    let cluster_ip = service
        .cluster_ips
        .iter()
        .copied()
        .find(|ip| family.contains(*ip))?;
    let external_accessible_type = matches!(
        service.service_type,
        ServiceType::NodePort | ServiceType::LoadBalancer
    );
    let external_local = service.external_traffic_policy == TrafficPolicy::Local
        && (external_accessible_type || !service.external_ips.is_empty());
    let health_check_node_port =
        if service.service_type == ServiceType::LoadBalancer && external_local {
            service.health_check_node_port
        } else {
            None
        };
    let mut plan = PortPlan {
        name: ServicePortName {
            namespace: service.key.namespace.to_string(),
            name: service.key.name.to_string(),
            port: port.name.clone(),
            protocol: port.protocol,
        },
        cluster_ip,
        port: port.port,
        node_port: port.node_port,
        health_check_node_port,
        external_ips: family_only(&service.external_ips, family),
        load_balancer_ips: family_only(&service.load_balancer_ips, family),
        source_ranges: service
            .load_balancer_source_ranges
            .iter()
            .copied()
            .filter(|net| family.contains(net.addr()))
            .collect(),
        internal_local: service.internal_traffic_policy == TrafficPolicy::Local,
        external_local,
        affinity_timeout: match service.session_affinity {
            SessionAffinity::None => None,
            SessionAffinity::ClientIp { timeout_seconds } => Some(timeout_seconds),
        },
        endpoints,
        cluster_endpoints: Vec::new(),
        local_endpoints: Vec::new(),
        reachable: Vec::new(),
        cluster_fallback: false,
        local_fallback: false,
        has_endpoints: false,
    };
    categorize(&mut plan);
    Some(plan)
}

fn family_only(ips: &[IpAddr], family: IpFamily) -> Vec<IpAddr> {
    ips.iter()
        .copied()
        .filter(|ip| family.contains(*ip))
        .collect()
}

/// `CategorizeEndpoints`, without topology hints.
fn categorize(plan: &mut PortPlan) {
    let usable = |endpoint: &ProxyEndpoint| endpoint.ready;
    let fallback = |endpoint: &ProxyEndpoint| endpoint.serving && endpoint.terminating;

    if plan.uses_cluster_endpoints() {
        plan.cluster_endpoints = plan
            .endpoints
            .iter()
            .filter(|e| usable(e))
            .cloned()
            .collect();
        if plan.cluster_endpoints.is_empty() {
            plan.cluster_endpoints = plan
                .endpoints
                .iter()
                .filter(|e| fallback(e))
                .cloned()
                .collect();
            plan.cluster_fallback = !plan.cluster_endpoints.is_empty();
        }
        plan.has_endpoints = !plan.cluster_endpoints.is_empty();
    }
    if !plan.uses_local_endpoints() {
        plan.reachable = plan.cluster_endpoints.clone();
        return;
    }
    if plan.endpoints.iter().any(|e| usable(e) || fallback(e)) {
        plan.has_endpoints = true;
    }
    let local_ready: Vec<ProxyEndpoint> = plan
        .endpoints
        .iter()
        .filter(|e| e.local && usable(e))
        .cloned()
        .collect();
    if local_ready.is_empty() {
        plan.local_endpoints = plan
            .endpoints
            .iter()
            .filter(|e| e.local && fallback(e))
            .cloned()
            .collect();
        plan.local_fallback = !plan.local_endpoints.is_empty();
    } else {
        plan.local_endpoints = local_ready;
    }
    if !plan.uses_cluster_endpoints() {
        plan.reachable = plan.local_endpoints.clone();
        return;
    }
    let mut union: BTreeMap<String, ProxyEndpoint> = BTreeMap::new();
    for endpoint in plan.cluster_endpoints.iter().chain(&plan.local_endpoints) {
        union.insert(endpoint.addr_port(), endpoint.clone());
    }
    plan.reachable = union.into_values().collect();
}

/// The plan of every port of `service` (empty when kube-proxy skips it).
pub fn service_plans(cluster: &Cluster, service: &Service, options: &PlanOptions) -> Vec<PortPlan> {
    if skipped(service, options.family).is_some() {
        return Vec::new();
    }
    let mut map = endpoints_map(
        cluster,
        &service.key,
        options.family,
        options.node.as_deref(),
    );
    (0..service.ports.len())
        .filter_map(|index| {
            let port = &service.ports[index];
            let endpoints = map
                .remove(&(port.name.clone(), port.protocol))
                .unwrap_or_default();
            port_plan(service, index, options.family, endpoints)
        })
        .collect()
}

/// The whole plan: every Service port of `cluster` kube-proxy programs for the family.
pub fn plan(cluster: &Cluster, options: &PlanOptions) -> Plan {
    let mut ports: Vec<PortPlan> = cluster
        .services
        .values()
        .flat_map(|service| service_plans(cluster, service, options))
        .collect();
    ports.sort_by(|a, b| {
        (a.name.to_string(), a.name.protocol).cmp(&(b.name.to_string(), b.name.protocol))
    });
    Plan {
        options: options.clone(),
        ports,
    }
}
