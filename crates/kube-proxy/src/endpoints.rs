//! The `endpoints` report: the EndpointSlice controller's view of each Service (its slices,
//! their ports and every endpoint's conditions) and kube-proxy's choice from it (which
//! endpoints each port sends to, the terminating fallback, the node-local set).

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::plan::{IpFamily, PlanOptions, PortPlan, Skipped, service_plans, skipped};
use clusterdns_model::compute_slices;
use clusterdns_model::{Cluster, EndpointSlice, ObjectKey, Service, ServiceType, TrafficPolicy};

/// Where the EndpointSlices come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SliceSource {
    /// The slices in the input (for a Service with a selector and no slice in the input, the
    /// loader has already computed them).
    #[default]
    Input,
    /// The EndpointSlice controller's, computed from the pods for every Service with a
    /// selector; a Service without one keeps its input slices (they are someone else's).
    Computed,
}

/// `cluster` with its slices taken from `source`.
pub fn with_slices(cluster: &Cluster, source: SliceSource) -> Cluster {
    let mut out = cluster.clone();
    if source == SliceSource::Input {
        return out;
    }
    let managed: Vec<ObjectKey> = out
        .services
        .values()
        .filter(|service| {
            service.selector.is_some() && service.service_type != ServiceType::ExternalName
        })
        .map(|service| service.key.clone())
        .collect();
    out.endpoint_slices.retain(|key, slice| {
        !slice.service_name.as_ref().is_some_and(|name| {
            managed.contains(&ObjectKey::new(key.namespace.clone(), name.clone()))
        })
    });
    for mut slice in compute_slices(cluster) {
        let base = slice.key.name.clone();
        let mut n = 1;
        while out.endpoint_slices.contains_key(&slice.key) {
            slice.key.name = format!("{base}-{n}").into();
            n += 1;
        }
        out.endpoint_slices.insert(slice.key.clone(), slice);
    }
    out
}

/// The families a Service has rules for (or would, were it not headless): its ClusterIPs'.
fn families(service: &Service) -> Vec<IpFamily> {
    let mut families: Vec<IpFamily> = service
        .cluster_ips
        .iter()
        .map(|ip| IpFamily::of(*ip))
        .collect();
    families.dedup();
    if families.is_empty() {
        families.push(IpFamily::V4);
    }
    families
}

fn service_type(service: &Service) -> &'static str {
    match service.service_type {
        ServiceType::ClusterIp => "ClusterIP",
        ServiceType::NodePort => "NodePort",
        ServiceType::LoadBalancer => "LoadBalancer",
        ServiceType::ExternalName => "ExternalName",
    }
}

fn selector_text(service: &Service) -> String {
    match &service.selector {
        None => "<none>".to_owned(),
        Some(labels) => labels
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn slice_ports(slice: &EndpointSlice) -> String {
    if slice.ports.is_empty() {
        return "<unset>".to_owned();
    }
    slice
        .ports
        .iter()
        .map(|port| {
            let number = port.port.map_or("<unset>".to_owned(), |n| n.to_string());
            if port.name.is_empty() {
                format!("{number}/{}", port.protocol)
            } else {
                format!("{}={number}/{}", port.name, port.protocol)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Aligned columns, two spaces apart, each row indented by `indent`.
fn table(out: &mut String, indent: &str, rows: &[Vec<String>]) {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|column| {
            rows.iter()
                .filter_map(|row| row.get(column))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let mut line = String::from(indent);
        for (column, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if column + 1 < row.len() {
                let pad = widths[column] - cell.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

fn port_label(port: &PortPlan) -> String {
    let name = if port.name.port.is_empty() {
        String::new()
    } else {
        format!("{} ", port.name.port)
    };
    format!("{name}{}/{}", port.port, port.name.protocol)
}

fn list(endpoints: &[super::plan::ProxyEndpoint]) -> String {
    endpoints
        .iter()
        .map(super::plan::ProxyEndpoint::addr_port)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The lines kube-proxy's choice for one port reads as.
fn proxy_lines(port: &PortPlan, family: IpFamily, node: Option<&str>) -> Vec<String> {
    let label = format!("{} ({})", port_label(port), family.as_str());
    let mut lines = Vec::new();
    if port.uses_cluster_endpoints() {
        let line = if !port.has_endpoints {
            format!("{label}: no endpoints, REJECT")
        } else if port.cluster_fallback {
            format!(
                "{label}: {} (terminating fallback: no endpoint is ready)",
                list(&port.cluster_endpoints)
            )
        } else {
            format!("{label}: {}", list(&port.cluster_endpoints))
        };
        lines.push(line);
    } else if !port.has_endpoints {
        lines.push(format!("{label}: no endpoints, REJECT"));
    }
    if port.uses_local_endpoints() && port.has_endpoints {
        let node = node.unwrap_or("<no --node>");
        let what = match (port.internal_local, port.external_local) {
            (true, true) => "ClusterIP and external traffic",
            (true, false) => "ClusterIP traffic",
            _ => "external traffic",
        };
        let line = if port.local_endpoints.is_empty() {
            format!("{label} {what}, local to {node}: none, DROP")
        } else if port.local_fallback {
            format!(
                "{label} {what}, local to {node}: {} (terminating fallback: no local endpoint is ready)",
                list(&port.local_endpoints)
            )
        } else {
            format!(
                "{label} {what}, local to {node}: {}",
                list(&port.local_endpoints)
            )
        };
        lines.push(line);
    }
    lines
}

/// The report as text.
pub fn report_text(
    cluster: &Cluster,
    node: Option<&str>,
    cluster_cidrs: &[ipnet::IpNet],
) -> String {
    let mut out = String::new();
    for service in cluster.services.values() {
        if !out.is_empty() {
            out.push('\n');
        }
        let ips = if service.cluster_ips.is_empty() {
            "None".to_owned()
        } else {
            service
                .cluster_ips
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut header = format!(
            "{}  {}  {}  selector {}",
            service.key,
            service_type(service),
            ips,
            selector_text(service)
        );
        if service.external_traffic_policy == TrafficPolicy::Local {
            header.push_str("  externalTrafficPolicy=Local");
        }
        if service.internal_traffic_policy == TrafficPolicy::Local {
            header.push_str("  internalTrafficPolicy=Local");
        }
        if service.publish_not_ready_addresses {
            header.push_str("  publishNotReadyAddresses");
        }
        let _ = writeln!(out, "{header}");

        let slices: Vec<&EndpointSlice> = cluster.slices_of(&service.key).collect();
        if slices.is_empty() && service.service_type != ServiceType::ExternalName {
            out.push_str("  no EndpointSlice\n");
        }
        for slice in slices {
            let _ = writeln!(
                out,
                "  EndpointSlice {}  {}  ports {}",
                slice.key.name,
                slice.address_type.as_str(),
                slice_ports(slice)
            );
            if slice.endpoints.is_empty() {
                out.push_str("    (no endpoints)\n");
                continue;
            }
            let mut rows = vec![
                ["ADDRESS", "READY", "SERVING", "TERMINATING", "NODE", "POD"]
                    .map(str::to_owned)
                    .to_vec(),
            ];
            for endpoint in &slice.endpoints {
                let c = endpoint.conditions;
                rows.push(vec![
                    endpoint
                        .addresses
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                    c.ready().to_string(),
                    c.serving().to_string(),
                    c.terminating().to_string(),
                    endpoint.node_name().unwrap_or("-").to_owned(),
                    endpoint.target_pod().unwrap_or("-").to_owned(),
                ]);
            }
            table(&mut out, "    ", &rows);
        }

        match skipped(service, families(service)[0]) {
            Some(Skipped::Headless) => {
                out.push_str("  kube-proxy: headless, no rules (DNS answers the endpoints)\n");
                continue;
            }
            Some(Skipped::ExternalName) => {
                out.push_str("  kube-proxy: ExternalName, no rules (DNS answers a CNAME)\n");
                continue;
            }
            _ => {}
        }
        out.push_str("  kube-proxy\n");
        for family in families(service) {
            let options = PlanOptions {
                family,
                node: node.map(str::to_owned),
                cluster_cidrs: cluster_cidrs.to_vec(),
            };
            for port in service_plans(cluster, service, &options) {
                for line in proxy_lines(&port, family, node) {
                    let _ = writeln!(out, "    {line}");
                }
            }
        }
    }
    out
}

fn endpoints_json(endpoints: &[super::plan::ProxyEndpoint]) -> Value {
    Value::Array(
        endpoints
            .iter()
            .map(|e| Value::String(e.addr_port()))
            .collect(),
    )
}

/// The report as JSON.
pub fn report_json(
    cluster: &Cluster,
    source: SliceSource,
    node: Option<&str>,
    cluster_cidrs: &[ipnet::IpNet],
) -> Value {
    let services: Vec<Value> = cluster
        .services
        .values()
        .map(|service| {
            let slices: Vec<Value> = cluster
                .slices_of(&service.key)
                .map(|slice| {
                    json!({
                        "name": slice.key.name,
                        "addressType": slice.address_type.as_str(),
                        "ports": slice.ports.iter().map(|port| json!({
                            "name": port.name,
                            "port": port.port,
                            "protocol": port.protocol.as_str(),
                        })).collect::<Vec<_>>(),
                        "endpoints": slice.endpoints.iter().map(|e| json!({
                            "addresses": e.addresses.iter().map(ToString::to_string).collect::<Vec<_>>(),
                            "ready": e.conditions.ready(),
                            "serving": e.conditions.serving(),
                            "terminating": e.conditions.terminating(),
                            "node": e.node_name(),
                            "pod": e.target_pod(),
                            "hostname": e.hostname,
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            let proxy = match skipped(service, families(service)[0]) {
                Some(Skipped::Headless) => json!({"skipped": "headless"}),
                Some(Skipped::ExternalName) => json!({"skipped": "ExternalName"}),
                _ => {
                    let mut ports = Vec::new();
                    for family in families(service) {
                        let options = PlanOptions {
                            family,
                            node: node.map(str::to_owned),
                            cluster_cidrs: cluster_cidrs.to_vec(),
                        };
                        for port in service_plans(cluster, service, &options) {
                            let local = (port.uses_local_endpoints() && port.has_endpoints)
                                .then(|| {
                                    json!({
                                        "node": node,
                                        "endpoints": endpoints_json(&port.local_endpoints),
                                        "terminatingFallback": port.local_fallback,
                                    })
                                });
                            ports.push(json!({
                                "name": port.name.port,
                                "protocol": port.name.protocol.as_str(),
                                "port": port.port,
                                "family": family.as_str(),
                                "clusterIP": port.cluster_ip.to_string(),
                                "endpoints": endpoints_json(&port.cluster_endpoints),
                                "terminatingFallback": port.cluster_fallback,
                                "hasEndpoints": port.has_endpoints,
                                "local": local,
                            }));
                        }
                    }
                    json!({"ports": ports})
                }
            };
            json!({
                "namespace": service.key.namespace,
                "name": service.key.name,
                "type": service_type(service),
                "clusterIPs": service.cluster_ips.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "selector": service.selector,
                "slices": slices,
                "proxy": proxy,
            })
        })
        .collect();
    json!({
        "slices": match source {
            SliceSource::Input => "input",
            SliceSource::Computed => "computed",
        },
        "node": node,
        "services": services,
    })
}
