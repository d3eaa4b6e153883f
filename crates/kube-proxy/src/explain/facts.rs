//! The evidence of an explanation as typed data: what `explain -o json|yaml` gives a program
//! beside the report's lines (the Service, its pods and ports, the slices, kube-proxy's
//! endpoints, the node's rules, the DNS answers), and the change each finding suggests.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Serialize;

/// The Service as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceFacts {
    pub namespace: String,
    pub name: String,
    /// `ClusterIP`, `NodePort`, `LoadBalancer` or `ExternalName`.
    #[serde(rename = "type")]
    pub service_type: &'static str,
    /// `spec.clusterIPs` (empty for a headless or ExternalName Service).
    #[serde(rename = "clusterIPs")]
    pub cluster_ips: Vec<IpAddr>,
    pub headless: bool,
    /// `spec.selector`; `None` when the Service has none (its slices are written by hand).
    pub selector: Option<BTreeMap<String, String>>,
}

/// The pods the selector picks, by state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodFacts {
    /// The selected pods that can be endpoints (running or pending, with an IP).
    pub selected: Vec<String>,
    pub ready: Vec<String>,
    pub not_ready: Vec<String>,
    pub terminating: Vec<String>,
    /// Selected but finished, or without an IP: never endpoints.
    pub not_endpoints: Vec<String>,
}

/// A `targetPort`: a number, or a container port's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum PortValue {
    Number(u16),
    Name(String),
}

/// A container port (or an EndpointSlice port: its number may be absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedPort {
    /// Empty when unnamed.
    pub name: String,
    /// `None`: an EndpointSlice port without a number (every port).
    pub port: Option<u16>,
    pub protocol: String,
}

/// One port of the Service, its targetPort resolved in each selected pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PortFacts {
    pub name: String,
    pub port: u16,
    pub protocol: String,
    pub target_port: PortValue,
    /// Where a named targetPort resolves: the number and the pods it resolves to it in.
    pub resolved: Vec<Resolved>,
    /// The selected pods where a named targetPort does not resolve, with the container ports
    /// they have.
    pub unresolved_in: Vec<PodPorts>,
}

/// A targetPort number and the pods it resolves to it in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolved {
    pub port: u16,
    pub pods: Vec<String>,
}

/// A pod and its container ports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodPorts {
    pub pod: String,
    pub container_ports: Vec<NamedPort>,
}

/// One EndpointSlice of the Service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SliceFacts {
    pub name: String,
    /// `IPv4`, `IPv6` or `FQDN`.
    pub address_type: String,
    pub endpoints: usize,
    pub ready: usize,
    /// Empty: no connection through the Service reaches these endpoints.
    pub ports: Vec<NamedPort>,
}

/// What kube-proxy sends one port of one family to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxyFacts {
    /// The Service port's name (empty when unnamed).
    pub name: String,
    pub port: u16,
    pub protocol: String,
    /// `IPv4` or `IPv6`.
    pub family: String,
    #[serde(rename = "clusterIP")]
    pub cluster_ip: IpAddr,
    /// `ip:port` of each endpoint new connections go to; empty: they are rejected.
    pub endpoints: Vec<String>,
    /// The endpoints are serving-and-terminating ones: no endpoint is ready.
    pub terminating_fallback: bool,
}

/// One port's ClusterIP traced through the node's rules.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleFacts {
    /// The ruleset file.
    pub ruleset: String,
    /// `ip:port` traced.
    pub to: String,
    pub protocol: String,
    /// The trace's verdict (`dnat`, `reject`, `no-match`, ...).
    pub verdict: String,
    /// Where the rules send new connections, and each one's share (0 to 1).
    pub endpoints: Vec<Share>,
}

/// A DNAT target and its share of new connections.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Share {
    pub endpoint: String,
    pub share: f64,
}

/// The change a finding suggests in an object: set `field` to one of `values`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// `Service NS/NAME`.
    pub object: String,
    /// The field, as a JSON path (`spec.ports[0].targetPort`).
    pub field: String,
    /// What it may be set to, most likely first; empty when the value is the user's choice.
    pub values: Vec<PortValue>,
}
