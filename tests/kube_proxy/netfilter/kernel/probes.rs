//! The probes of one ruleset, read from its objects (`kubectl get -o json` output) with
//! serde_json, not from clusterdns's model: for every Service port, its ClusterIP, its
//! NodePort on the node's address, its external IPs and its load-balancer IPs, each sent from
//! the client and from the node itself; for a load balancer with source ranges, once from a
//! source inside them and once from one outside; and per ClusterIP a port it does not expose.

use std::net::Ipv4Addr;
use std::path::Path;

use ipnet::Ipv4Net;
use serde_json::Value;

use crate::common::netns::Proto;

/// A port no fixture's Service exposes (discard): the ClusterIP probe of a port kube-proxy
/// has no rule for.
const UNEXPOSED_PORT: u16 = 9;

/// One connection to try, and what it stands for.
#[derive(Clone, Debug)]
pub(super) struct Probe {
    /// `namespace/name:port kind IP:PORT/proto from SOURCE`, as summaries print it.
    pub label: String,
    pub proto: Proto,
    pub dst: Ipv4Addr,
    pub dport: u16,
    pub src: Ipv4Addr,
    /// Sent by a process on the node (`proxy trace --local`) instead of the client.
    pub local: bool,
    /// The Service has ClientIP session affinity: after the first connection from a source
    /// every other goes to the same endpoint, so shares are not measured.
    pub affinity: bool,
}

/// What the objects ask of a topology and the probes to run through it.
pub(super) struct Plan {
    pub probes: Vec<Probe>,
    /// Every IPv4 endpoint and pod address.
    pub endpoints: Vec<Ipv4Addr>,
    /// Client addresses besides the main one (inside load-balancer source ranges).
    pub extra_sources: Vec<Ipv4Addr>,
}

/// Where a probe is sent from.
#[derive(Clone, Copy)]
enum From {
    Client(Ipv4Addr),
    Node,
}

/// One address and port of a Service port, and how kube-proxy names it.
struct Destination {
    kind: &'static str,
    ip: Ipv4Addr,
    port: u16,
}

/// The plan for the objects in `file`, sent to a node at `node_ip` from a client at
/// `client_ip`.
pub(super) fn plan(file: &Path, node_ip: Ipv4Addr, client_ip: Ipv4Addr) -> Plan {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("read the objects {}: {e}", file.display()));
    let json: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the objects {} are not JSON: {e}", file.display()));
    let items = json["items"]
        .as_array()
        .or(json.as_array())
        .unwrap_or_else(|| panic!("{}: no items", file.display()));
    let mut plan = Plan {
        probes: Vec::new(),
        endpoints: endpoints(items),
        extra_sources: Vec::new(),
    };
    for service in items.iter().filter(|i| i["kind"] == "Service") {
        service_probes(service, node_ip, client_ip, &mut plan);
    }
    plan.extra_sources.sort();
    plan.extra_sources.dedup();
    plan
}

/// The IPv4 addresses of every EndpointSlice's endpoints and every Pod.
fn endpoints(items: &[Value]) -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    for item in items {
        let addresses: Vec<&Value> = match item["kind"].as_str() {
            Some("EndpointSlice") => array(&item["endpoints"])
                .flat_map(|e| array(&e["addresses"]))
                .collect(),
            Some("Pod") => array(&item["status"]["podIPs"])
                .map(|p| &p["ip"])
                .chain([&item["status"]["podIP"]])
                .collect(),
            _ => Vec::new(),
        };
        out.extend(addresses.into_iter().filter_map(ipv4));
    }
    out.sort();
    out.dedup();
    out
}

/// The probes of one Service, added to `plan`.
fn service_probes(service: &Value, node_ip: Ipv4Addr, client_ip: Ipv4Addr, plan: &mut Plan) {
    let spec = &service["spec"];
    let Some(cluster_ip) = ipv4(&spec["clusterIP"]) else {
        return; // headless, ExternalName, or IPv6 only
    };
    let meta = &service["metadata"];
    let name = format!(
        "{}/{}",
        meta["namespace"].as_str().unwrap_or("default"),
        meta["name"].as_str().unwrap_or("?")
    );
    let affinity = spec["sessionAffinity"] == "ClientIP";
    let ranges: Vec<Ipv4Net> = array(&spec["loadBalancerSourceRanges"])
        .filter_map(|r| r.as_str()?.parse().ok())
        .collect();
    let mut tcp_ports = Vec::new();
    for port in array(&spec["ports"]) {
        let Some(proto) = protocol(port) else {
            continue;
        };
        let Some(number) = port["port"].as_u64().and_then(|p| u16::try_from(p).ok()) else {
            continue;
        };
        if proto == Proto::Tcp {
            tcp_ports.push(number);
        }
        let port_name = format!("{name}:{}", port["name"].as_str().unwrap_or(""));
        for dst in destinations(service, port, cluster_ip, number, node_ip) {
            let sources = sources(&dst, &ranges, client_ip, &mut plan.extra_sources);
            for from in sources {
                plan.probes
                    .push(probe(&port_name, &dst, proto, from, node_ip, affinity));
            }
        }
    }
    if !tcp_ports.contains(&UNEXPOSED_PORT) {
        let dst = Destination {
            kind: "cluster IP, a port it does not expose",
            ip: cluster_ip,
            port: UNEXPOSED_PORT,
        };
        let from = From::Client(client_ip);
        plan.probes
            .push(probe(&name, &dst, Proto::Tcp, from, node_ip, affinity));
    }
}

/// The addresses one Service port is reached at.
fn destinations(
    service: &Value,
    port: &Value,
    cluster_ip: Ipv4Addr,
    number: u16,
    node_ip: Ipv4Addr,
) -> Vec<Destination> {
    let at = |kind, ip| Destination {
        kind,
        ip,
        port: number,
    };
    let mut out = vec![at("cluster IP", cluster_ip)];
    if let Some(node_port) = port["nodePort"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
    {
        out.push(Destination {
            kind: "node port",
            ip: node_ip,
            port: node_port,
        });
    }
    let spec = &service["spec"];
    out.extend(
        array(&spec["externalIPs"])
            .filter_map(ipv4)
            .map(|ip| at("external IP", ip)),
    );
    let ingress = array(&service["status"]["loadBalancer"]["ingress"]);
    out.extend(
        ingress
            .filter_map(|i| ipv4(&i["ip"]))
            .map(|ip| at("load-balancer IP", ip)),
    );
    out
}

/// Where a destination is probed from: the client and the node; for a load-balancer IP
/// with source ranges, the client from inside the first range (an address added to
/// `extra`) and from its main address, which must be outside them all.
fn sources(
    dst: &Destination,
    ranges: &[Ipv4Net],
    client_ip: Ipv4Addr,
    extra: &mut Vec<Ipv4Addr>,
) -> Vec<From> {
    if dst.kind != "load-balancer IP" || ranges.is_empty() {
        return vec![From::Client(client_ip), From::Node];
    }
    assert!(
        !ranges.iter().any(|r| r.contains(&client_ip)),
        "the client's address {client_ip} is inside the source ranges {ranges:?}"
    );
    let inside = inside(&ranges[0]);
    extra.push(inside);
    vec![From::Client(inside), From::Client(client_ip), From::Node]
}

/// An address inside `range`: its 77th host, or the last one of a smaller range.
fn inside(range: &Ipv4Net) -> Ipv4Addr {
    let host_bits = 32 - u32::from(range.prefix_len());
    let offset = match host_bits {
        0 | 1 => 0,
        bits => 77u32.min((1u32 << bits.min(31)) - 2),
    };
    Ipv4Addr::from(u32::from(range.network()) + offset)
}

/// The probe of `dst` from `from`.
fn probe(
    name: &str,
    dst: &Destination,
    proto: Proto,
    from: From,
    node_ip: Ipv4Addr,
    affinity: bool,
) -> Probe {
    let (src, local, source) = match from {
        From::Client(ip) => (ip, false, format!("client {ip}")),
        From::Node => (node_ip, true, "the node".to_owned()),
    };
    Probe {
        label: format!(
            "{name} {} {}:{}/{} from {source}",
            dst.kind,
            dst.ip,
            dst.port,
            proto.name()
        ),
        proto,
        dst: dst.ip,
        dport: dst.port,
        src,
        local,
        affinity,
    }
}

/// A Service port's protocol (TCP when absent); `None` for SCTP, which is not probed.
fn protocol(port: &Value) -> Option<Proto> {
    match port["protocol"].as_str().unwrap_or("TCP") {
        "TCP" => Some(Proto::Tcp),
        "UDP" => Some(Proto::Udp),
        _ => None,
    }
}

/// The elements of a JSON array (none for anything else).
fn array(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

/// A JSON string holding an IPv4 address.
fn ipv4(value: &Value) -> Option<Ipv4Addr> {
    value.as_str()?.parse().ok()
}
