//! `explain NS/NAME`: one Service, joined across the layers a connection meets (the pods and
//! their ports, the EndpointSlices, kube-proxy's endpoint choice, a node's rules, DNS), with
//! every place where two layers disagree reported as a finding.
//!
//! The findings, each with what proves it:
//!
//! - `target-port-unresolved` / `target-port-partial`: a named targetPort that resolves in no
//!   selected pod, or only in some (the payments incident: a renamed container port), with the
//!   pods and the container ports they do have;
//! - `slices-stale`: the EndpointSlices in the input differ from what the EndpointSlice
//!   controller computes from the pods (addresses, conditions, ports);
//! - `no-endpoints`: a port kube-proxy has no endpoint for: connections are rejected;
//! - `missing-from-rules`: an endpoint kube-proxy should use that the node's rules never reach
//!   (kube-proxy not synced, or not running);
//! - `stale-rules`: a DNAT target in the node's rules that no endpoint has, whether the
//!   Service's chain still reaches it or it is a leftover chain;
//! - `unequal-shares`: endpoints of one port that do not get equal shares of new connections
//!   (a cascade that is not 1/n, 1/(n-1), ...);
//! - `dns-mismatch`: a headless Service whose DNS answer differs from its ready endpoints, or
//!   a ClusterIP one whose answer is not its ClusterIPs;
//! - `dns-unresolved`: the Service's name does not resolve (NXDOMAIN, or no address): clients
//!   get "no such host" whatever the other layers say;
//! - `dns-live-differs`: the cluster's running DNS server answers the Service's name
//!   otherwise than the objects say it should (a server that has not caught up, filters
//!   the Service out, or is not clusterdns).

mod facts;
mod finding;
mod rules;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::IpAddr;

use ipnet::IpNet;
use serde::Serialize;

use super::plan::{IpFamily, PlanOptions, Skipped, join_host_port, service_plans, skipped};
use super::ruleset::Ruleset;
use clusterdns_model::endpoints::{reconcile_slices, resolve_target_port, selects};
use clusterdns_model::{Cluster, EndpointSlice, ObjectKey, Pod, Service, ServiceType, TargetPort};
pub use facts::{
    Fix, NamedPort, PodFacts, PodPorts, PortFacts, PortValue, ProxyFacts, Resolved, RuleFacts,
    ServiceFacts, Share, SliceFacts,
};
pub use finding::Finding;
use rules::rules_for_port;

/// What to explain, and the evidence beyond the objects.
#[derive(Debug, Clone)]
pub struct ExplainInput<'a> {
    /// The objects (their EndpointSlices as the API has them).
    pub cluster: &'a Cluster,
    /// The Service.
    pub service: ObjectKey,
    /// The node the rules are from (its endpoints are the local ones).
    pub node: Option<String>,
    /// The pod CIDRs (for kube-proxy's view).
    pub cluster_cidrs: Vec<IpNet>,
    /// A node's ruleset, and what to call it in the report.
    pub ruleset: Option<(&'a Ruleset, String)>,
    /// DNS's answer for the Service's name (A and AAAA), when looked up.
    pub dns: Option<DnsAnswer>,
    /// The input had no EndpointSlice for the Service: its slices were computed from the
    /// pods when the objects were read.
    pub slices_computed: bool,
    /// What the cluster's running DNS server answered for the same name, when asked.
    pub live_dns: Option<LiveDns>,
}

/// The cluster's running DNS server, asked for the Service's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveDns {
    /// Where it was asked (`10.96.0.10:53`).
    pub server: String,
    /// Its answer, or why there is none (not reachable, no answer in time).
    pub answer: Result<DnsAnswer, String>,
}

/// As data: `{"server", "answer"}`, or `{"server", "error"}` when there is none.
impl Serialize for LiveDns {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut state = serializer.serialize_struct("LiveDns", 2)?;
        state.serialize_field("server", &self.server)?;
        match &self.answer {
            Ok(answer) => state.serialize_field("answer", answer)?,
            Err(reason) => state.serialize_field("error", reason)?,
        }
        state.end()
    }
}

/// What DNS answers for the Service's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DnsAnswer {
    /// The name asked.
    pub name: String,
    /// The addresses (A and AAAA), or empty for NXDOMAIN/NODATA.
    pub addresses: Vec<IpAddr>,
    /// The rcode of the A query (`NOERROR`, `NXDOMAIN`, ...).
    pub rcode: String,
    /// The CNAME the name answers with (an ExternalName's target), if any.
    pub cname: Option<String>,
}

/// The fix of a DNS answer that differs from the objects it was built from.
const DNS_BEHIND: &str = "nothing in the Service: the answer is built from these objects; a \
     server that answers otherwise has not caught up with the API server (check its log)";

/// What `explain` found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// `namespace/name`.
    pub service: String,
    /// The Service.
    #[serde(flatten)]
    pub details: ServiceFacts,
    /// The pods the selector picks (`None`: the Service has no selector).
    pub pods: Option<PodFacts>,
    /// The Service's ports and where their targetPorts resolve.
    pub ports: Vec<PortFacts>,
    /// The Service's EndpointSlices.
    pub slices: Vec<SliceFacts>,
    /// The input had no slice for the Service: these are computed from the pods.
    pub slices_computed: bool,
    /// Whether the slices are what the EndpointSlice controller computes from the pods
    /// (`None`: not compared — the Service has no selector, or is an ExternalName).
    pub slices_match_pods: Option<bool>,
    /// What kube-proxy sends each port to, per family.
    pub kube_proxy: Vec<ProxyFacts>,
    /// Each port traced through the node's rules (empty without `--ruleset`).
    pub rules: Vec<RuleFacts>,
    /// What DNS (over these objects) answers for the Service's name.
    pub dns: Option<DnsAnswer>,
    /// What the cluster's running DNS server answered.
    pub live_dns: Option<LiveDns>,
    /// The report's lines, section by section.
    pub sections: Vec<Section>,
    /// The findings; none means every layer agrees.
    pub findings: Vec<Finding>,
}

/// A titled part of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    /// Its title.
    pub title: String,
    /// Its lines.
    pub lines: Vec<String>,
}

/// The container ports of `pods` of `protocol` a targetPort could name instead, as a fix
/// says it: `"web" (or 8080)` for one, a list for several, or that they have none.
fn offered_ports(pods: &[&Pod], protocol: clusterdns_model::Protocol) -> String {
    let offered: BTreeSet<(String, u16)> = pods
        .iter()
        .flat_map(|pod| &pod.details().container_ports)
        .filter(|p| p.protocol == protocol)
        .map(|p| (p.name.clone(), p.port))
        .collect();
    let one = |(name, number): &(String, u16)| {
        if name.is_empty() {
            number.to_string()
        } else {
            format!("{name:?} (or {number})")
        }
    };
    match offered.len() {
        0 => format!("the port the pods listen on (they declare no {protocol} container port)"),
        1 => offered.iter().map(one).collect(),
        _ => format!(
            "one of {}",
            offered.iter().map(one).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A selector as kubectl's `-l` takes it: `app=web,tier=front`.
fn selector_text(labels: &clusterdns_model::Labels) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The command listing the pods `service` selects, when it has a selector.
fn no_endpoint_command(service: &Service) -> Option<String> {
    let selector = service.selector.as_ref()?;
    Some(format!(
        "kubectl -n {} get pods -l {}",
        service.key.namespace,
        selector_text(selector)
    ))
}

/// What gives a port of `service` an endpoint: pods its selector picks, ready.
fn no_endpoint_fix(service: &Service) -> String {
    let key = &service.key;
    match no_endpoint_command(service) {
        Some(command) => format!(
            "make a pod the selector picks Ready: `{command}` lists them (none: fix \
             spec.selector or the pods' labels; not Ready: their readiness probe or their \
             container)"
        ),
        None => format!(
            "Service {key} has no selector: write an EndpointSlice labelled \
             kubernetes.io/service-name={} with ready endpoints, or give it a selector",
            key.name
        ),
    }
}

fn pod_ports(pod: &Pod) -> String {
    if pod.details().container_ports.is_empty() {
        return "no container ports".to_owned();
    }
    pod.details()
        .container_ports
        .iter()
        .map(|p| {
            if p.name.is_empty() {
                format!("{}/{}", p.port, p.protocol)
            } else {
                format!("{}={}/{}", p.name, p.port, p.protocol)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An endpoint as the slices comparison sees it.
type EndpointKey = (IpAddr, bool, bool, bool, Vec<String>);

fn slice_view(slices: &[&EndpointSlice]) -> BTreeMap<IpAddr, (EndpointKey, Option<String>)> {
    let mut out = BTreeMap::new();
    for slice in slices {
        let mut ports: Vec<String> = slice
            .ports
            .iter()
            .map(|p| {
                format!(
                    "{}={}/{}",
                    p.name,
                    p.port.map_or("-".to_owned(), |n| n.to_string()),
                    p.protocol
                )
            })
            .collect();
        ports.sort();
        for endpoint in &slice.endpoints {
            for ip in &endpoint.addresses {
                let c = endpoint.conditions;
                out.insert(
                    *ip,
                    (
                        (*ip, c.ready(), c.serving(), c.terminating(), ports.clone()),
                        endpoint.target_pod().map(str::to_owned),
                    ),
                );
            }
        }
    }
    out
}

fn pod_label(pod: &Option<String>) -> String {
    pod.as_ref().map(|p| format!(" ({p})")).unwrap_or_default()
}

/// Explains one Service. `None` when the Service does not exist.
pub fn explain(input: &ExplainInput<'_>) -> Option<Explanation> {
    let cluster = input.cluster;
    let service = cluster.services.get(&input.service)?;
    let mut report = Report::default();
    let details = service_facts(service);
    report.sections.push(service_section(&details));
    if let Some(selector) = &service.selector {
        let pods: Vec<&Pod> = cluster
            .pods_in(&service.key.namespace)
            .filter(|pod| selects(selector, pod.labels()))
            .collect();
        let candidates = pods_section(&pods, &mut report);
        ports_section(service, &candidates, &mut report);
    } else {
        report.ports = service
            .ports
            .iter()
            .map(|port| port_facts(port, Vec::new(), Vec::new()))
            .collect();
    }
    let slices = slices_section(input, service, &mut report);
    kube_proxy_sections(input, service, &mut report);
    if let Some(dns) = &input.dns {
        dns_section(dns, service, &slices, &mut report);
    }
    if let Some(live) = &input.live_dns {
        live_dns_section(live, input.dns.as_ref(), &mut report);
    }
    Some(Explanation {
        service: service.key.to_string(),
        details,
        pods: report.pods,
        ports: report.ports,
        slices: report.slices,
        slices_computed: input.slices_computed,
        slices_match_pods: report.slices_match_pods,
        kube_proxy: report.kube_proxy,
        rules: report.rules,
        dns: input.dns.clone(),
        live_dns: input.live_dns.clone(),
        sections: report.sections,
        findings: report.findings,
    })
}

/// The report under construction: its sections, its findings and its evidence, in order.
#[derive(Default)]
struct Report {
    sections: Vec<Section>,
    findings: Vec<Finding>,
    pods: Option<PodFacts>,
    ports: Vec<PortFacts>,
    slices: Vec<SliceFacts>,
    slices_match_pods: Option<bool>,
    kube_proxy: Vec<ProxyFacts>,
    rules: Vec<RuleFacts>,
}

/// The Service's slices: the input's, and what the controller computes from the pods.
struct Slices<'c> {
    input: Vec<&'c EndpointSlice>,
    computed: Vec<EndpointSlice>,
}

/// The Service as data.
fn service_facts(service: &Service) -> ServiceFacts {
    let service_type = match service.service_type {
        ServiceType::ClusterIp => "ClusterIP",
        ServiceType::NodePort => "NodePort",
        ServiceType::LoadBalancer => "LoadBalancer",
        ServiceType::ExternalName => "ExternalName",
    };
    ServiceFacts {
        namespace: service.key.namespace.to_string(),
        name: service.key.name.to_string(),
        service_type,
        cluster_ips: service.cluster_ips.clone(),
        headless: service.headless,
        selector: service.selector.clone(),
    }
}

/// The Service: its type, addresses and selector.
fn service_section(facts: &ServiceFacts) -> Section {
    let ips = if facts.headless {
        "None (headless)".to_owned()
    } else {
        facts
            .cluster_ips
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    let selector = facts.selector.as_ref().map_or_else(
        || "<none> (slices are managed by hand)".to_owned(),
        selector_text,
    );
    Section {
        title: "service".to_owned(),
        lines: vec![format!(
            "{}/{}  {}  {ips}  selector {selector}",
            facts.namespace, facts.name, facts.service_type
        )],
    }
}

/// The selected pods, ready, not ready, terminating, finished; returns the candidates (the
/// pods that can be endpoints).
fn pods_section<'c>(pods: &[&'c Pod], report: &mut Report) -> Vec<&'c Pod> {
    let candidates: Vec<&Pod> = pods
        .iter()
        .copied()
        .filter(|p| !p.is_finished() && !p.ips.is_empty())
        .collect();
    let ready: Vec<&str> = candidates
        .iter()
        .filter(|p| p.ready && !p.terminating)
        .map(|p| &*p.key.name)
        .collect();
    let mut line = format!("{} selected, {} ready", candidates.len(), ready.len());
    let not_ready: Vec<&str> = candidates
        .iter()
        .filter(|p| !p.ready)
        .map(|p| &*p.key.name)
        .collect();
    if !not_ready.is_empty() {
        let _ = write!(line, "; not ready: {}", not_ready.join(", "));
    }
    let terminating: Vec<&str> = candidates
        .iter()
        .filter(|p| p.terminating)
        .map(|p| &*p.key.name)
        .collect();
    if !terminating.is_empty() {
        let _ = write!(line, "; terminating: {}", terminating.join(", "));
    }
    let out: Vec<&str> = pods
        .iter()
        .filter(|p| p.is_finished() || p.ips.is_empty())
        .map(|p| &*p.key.name)
        .collect();
    if !out.is_empty() {
        let _ = write!(
            line,
            "; finished or without an IP (not endpoints): {}",
            out.join(", ")
        );
    }
    report.sections.push(Section {
        title: "pods".to_owned(),
        lines: vec![line],
    });
    let names = |pods: &[&str]| pods.iter().map(|name| (*name).to_owned()).collect();
    report.pods = Some(PodFacts {
        selected: candidates.iter().map(|p| p.key.name.to_string()).collect(),
        ready: names(&ready),
        not_ready: names(&not_ready),
        terminating: names(&terminating),
        not_endpoints: names(&out),
    });
    candidates
}

/// A container port as data.
fn container_port(port: &clusterdns_model::ContainerPort) -> NamedPort {
    NamedPort {
        name: port.name.clone(),
        port: Some(port.port),
        protocol: port.protocol.to_string(),
    }
}

/// A Service port as data, with where its targetPort resolves and where it does not.
fn port_facts(
    port: &clusterdns_model::ServicePort,
    resolved: Vec<Resolved>,
    unresolved_in: Vec<PodPorts>,
) -> PortFacts {
    PortFacts {
        name: port.name.clone(),
        port: port.port,
        protocol: port.protocol.to_string(),
        target_port: match &port.target_port {
            TargetPort::Number(number) => PortValue::Number(*number),
            TargetPort::Name(name) => PortValue::Name(name.clone()),
        },
        resolved,
        unresolved_in,
    }
}

/// The values a targetPort may be set to so that every pod of `pods` has it: the names of
/// container ports of `protocol` they all declare, then the numbers they all declare.
fn port_values(pods: &[&Pod], protocol: clusterdns_model::Protocol) -> Vec<PortValue> {
    let Some((first, rest)) = pods.split_first() else {
        return Vec::new();
    };
    let ports_of = |pod: &Pod| -> Vec<(String, u16)> {
        pod.details()
            .container_ports
            .iter()
            .filter(|p| p.protocol == protocol)
            .map(|p| (p.name.clone(), p.port))
            .collect()
    };
    let others: Vec<Vec<(String, u16)>> = rest.iter().map(|pod| ports_of(pod)).collect();
    let mut names = BTreeSet::new();
    let mut numbers = BTreeSet::new();
    for (name, number) in ports_of(first) {
        if !name.is_empty() && others.iter().all(|ports| ports.iter().any(|p| p.0 == name)) {
            names.insert(name.clone());
        }
        if others
            .iter()
            .all(|ports| ports.iter().any(|p| p.1 == number))
        {
            numbers.insert(number);
        }
    }
    names
        .into_iter()
        .map(PortValue::Name)
        .chain(numbers.into_iter().map(PortValue::Number))
        .collect()
}

/// The Service's ports, their targetPort resolved per pod.
fn ports_section(service: &Service, candidates: &[&Pod], report: &mut Report) {
    let mut lines = Vec::new();
    for (index, port) in service.ports.iter().enumerate() {
        let label = format!(
            "{}{}/{}",
            if port.name.is_empty() {
                String::new()
            } else {
                format!("{} ", port.name)
            },
            port.port,
            port.protocol
        );
        match &port.target_port {
            TargetPort::Number(number) => {
                lines.push(format!(
                    "{label} -> targetPort {number} (a number: every pod)"
                ));
                report.ports.push(port_facts(port, Vec::new(), Vec::new()));
            }
            TargetPort::Name(name) => {
                let mut resolved: BTreeMap<u16, Vec<&str>> = BTreeMap::new();
                let mut missing: Vec<&Pod> = Vec::new();
                for pod in candidates {
                    match resolve_target_port(port, pod) {
                        Some(number) => resolved.entry(number).or_default().push(&pod.key.name),
                        None => missing.push(pod),
                    }
                }
                let found: Vec<String> = resolved
                    .iter()
                    .map(|(number, pods)| format!("{number} in {}", pods.join(", ")))
                    .collect();
                lines.push(format!(
                    "{label} -> targetPort {name:?}: {}",
                    if found.is_empty() {
                        "in no pod".to_owned()
                    } else {
                        found.join("; ")
                    }
                ));
                let details: Vec<String> = missing
                    .iter()
                    .map(|pod| format!("{} ({})", pod.key.name, pod_ports(pod)))
                    .collect();
                let path = format!("spec.ports[{index}].targetPort");
                let field = format!("{path} of Service {}", service.key);
                let offered = offered_ports(&missing, port.protocol);
                let change = Fix {
                    object: format!("Service {}", service.key),
                    field: path,
                    values: port_values(&missing, port.protocol),
                };
                if !missing.is_empty() && resolved.is_empty() {
                    report.findings.push(Finding {
                        change: Some(change),
                        ..Finding::new(
                            "target-port-unresolved",
                            format!(
                                "{label}: targetPort {name:?} is a container port of no selected pod: {}",
                                details.join("; ")
                            ),
                            format!(
                                "set {field} to {offered}, or name a container port {name:?} in \
                                 the pods' template again"
                            ),
                        )
                    });
                } else if !missing.is_empty() {
                    let count: usize = resolved.values().map(Vec::len).sum();
                    let everywhere = Fix {
                        values: port_values(candidates, port.protocol),
                        ..change
                    };
                    report.findings.push(Finding {
                        change: Some(everywhere),
                        ..Finding::new(
                            "target-port-partial",
                            format!(
                                "{label}: targetPort {name:?} resolves in {count} of {} pods; not in {}: those pods land in a slice without the port and get no traffic",
                                candidates.len(),
                                details.join("; ")
                            ),
                            format!(
                                "name a container port {name:?} in the pods without it (a \
                                 rollout of a template that renamed it is half done, or two \
                                 Deployments share the selector), or set {field} to a port every \
                                 selected pod has (those without {name:?} have {offered})"
                            ),
                        )
                    });
                }
                report.ports.push(port_facts(
                    port,
                    resolved
                        .into_iter()
                        .map(|(number, pods)| Resolved {
                            port: number,
                            pods: pods.into_iter().map(str::to_owned).collect(),
                        })
                        .collect(),
                    missing
                        .iter()
                        .map(|pod| PodPorts {
                            pod: pod.key.name.to_string(),
                            container_ports: pod
                                .details()
                                .container_ports
                                .iter()
                                .map(container_port)
                                .collect(),
                        })
                        .collect(),
                ));
            }
        }
    }
    report.sections.push(Section {
        title: "ports".to_owned(),
        lines,
    });
}

/// The slices, and whether the EndpointSlice controller computes the same from the pods.
fn slices_section<'c>(
    input: &ExplainInput<'c>,
    service: &Service,
    report: &mut Report,
) -> Slices<'c> {
    let cluster = input.cluster;
    let input_slices: Vec<&EndpointSlice> = cluster.slices_of(&service.key).collect();
    report.slices = input_slices
        .iter()
        .map(|slice| SliceFacts {
            name: slice.key.name.to_string(),
            address_type: slice.address_type.as_str().to_owned(),
            endpoints: slice.endpoints.len(),
            ready: slice
                .endpoints
                .iter()
                .filter(|e| e.conditions.ready())
                .count(),
            ports: slice
                .ports
                .iter()
                .map(|port| NamedPort {
                    name: port.name.clone(),
                    port: port.port,
                    protocol: port.protocol.to_string(),
                })
                .collect(),
        })
        .collect();
    let mut lines: Vec<String> = report
        .slices
        .iter()
        .map(|slice| {
            let ports: Vec<String> = slice
                .ports
                .iter()
                .map(|port| {
                    let number = port
                        .port
                        .map_or_else(|| "any".to_owned(), |n| n.to_string());
                    match &port.name {
                        name if name.is_empty() => format!("{number}/{}", port.protocol),
                        name => format!("{name}={number}/{}", port.protocol),
                    }
                })
                .collect();
            let count = slice.endpoints;
            format!(
                "{} ({}): {count} endpoint{}, {} ready; {}",
                slice.name,
                slice.address_type,
                if count == 1 { "" } else { "s" },
                slice.ready,
                if ports.is_empty() {
                    "no ports (no connection reaches these endpoints through the Service)"
                        .to_owned()
                } else {
                    format!("ports {}", ports.join(", "))
                }
            )
        })
        .collect();
    if input_slices.is_empty() {
        lines.push("none".to_owned());
    }
    if input.slices_computed {
        lines.push(
            "(no EndpointSlice in the input: these are the controller's, from the pods)".to_owned(),
        );
    }
    let computed: Vec<EndpointSlice> = if service.selector.is_some() {
        reconcile_slices(service, cluster.pods_in(&service.key.namespace))
    } else {
        Vec::new()
    };
    if service.selector.is_some() && service.service_type != ServiceType::ExternalName {
        let have = slice_view(&input_slices);
        let want = slice_view(&computed.iter().collect::<Vec<_>>());
        let mut differences = Vec::new();
        for (ip, (key, pod)) in &have {
            match want.get(ip) {
                None => differences.push(format!("{ip}{} is in the slices but no selected pod has it", pod_label(pod))),
                Some((wanted, _)) if wanted != key => differences.push(format!(
                    "{ip}{}: the slices say ready={} serving={} terminating={} ports [{}], the pod gives ready={} serving={} terminating={} ports [{}]",
                    pod_label(pod), key.1, key.2, key.3, key.4.join(" "), wanted.1, wanted.2, wanted.3, wanted.4.join(" ")
                )),
                Some(_) => {}
            }
        }
        for (ip, (_, pod)) in &want {
            if !have.contains_key(ip) {
                differences.push(format!(
                    "{ip}{} is a selected pod missing from the slices",
                    pod_label(pod)
                ));
            }
        }
        report.slices_match_pods = Some(differences.is_empty());
        if differences.is_empty() {
            lines.push("the EndpointSlice controller computes the same from the pods".to_owned());
        } else {
            report.findings.push(Finding {
                kind: "slices-stale",
                message: format!(
                    "the EndpointSlices differ from what the controller computes from the pods: {}",
                    differences.join("; ")
                ),
                fix: "nothing in the Service: the EndpointSlice controller \
                      (kube-controller-manager) has not caught up with the pods; check that it \
                      runs and its log (`kubectl -n kube-system logs -l \
                      component=kube-controller-manager`), and that no other writer owns these \
                      slices (their endpointslice.kubernetes.io/managed-by label)"
                    .to_owned(),
                change: None,
                command: Some(
                    "kubectl -n kube-system logs -l component=kube-controller-manager".to_owned(),
                ),
            });
            lines.push(
                "the EndpointSlice controller computes something else from the pods (see findings)"
                    .to_owned(),
            );
        }
    }
    report.sections.push(Section {
        title: "endpointslices".to_owned(),
        lines,
    });
    Slices {
        input: input_slices,
        computed,
    }
}

/// kube-proxy's view per family and port, and the node's rules traced for each.
fn kube_proxy_sections(input: &ExplainInput<'_>, service: &Service, report: &mut Report) {
    let cluster = input.cluster;
    let mut families: Vec<IpFamily> = service
        .cluster_ips
        .iter()
        .map(|ip| IpFamily::of(*ip))
        .collect();
    families.dedup();
    let mut proxy_lines = Vec::new();
    let mut rule_lines = Vec::new();
    match skipped(service, families.first().copied().unwrap_or_default()) {
        Some(reason) => proxy_lines.push(
            match reason {
                Skipped::Headless => "headless: no rules, clients resolve the endpoints by DNS",
                Skipped::ExternalName => "ExternalName: no rules, DNS answers a CNAME",
                Skipped::OtherFamily => "no ClusterIP of the family: no rules",
            }
            .to_owned(),
        ),
        None => {
            for family in &families {
                let options = PlanOptions {
                    family: *family,
                    node: input.node.clone(),
                    cluster_cidrs: input.cluster_cidrs.clone(),
                };
                for port in service_plans(cluster, service, &options) {
                    let expected = if port.internal_local {
                        &port.local_endpoints
                    } else {
                        &port.cluster_endpoints
                    };
                    let label = format!(
                        "{}{}/{} ({})",
                        if port.name.port.is_empty() {
                            String::new()
                        } else {
                            format!("{} ", port.name.port)
                        },
                        port.port,
                        port.name.protocol,
                        family.as_str()
                    );
                    let list: Vec<String> = expected.iter().map(|e| e.addr_port()).collect();
                    report.kube_proxy.push(ProxyFacts {
                        name: port.name.port.to_string(),
                        port: port.port,
                        protocol: port.name.protocol.to_string(),
                        family: family.as_str().to_owned(),
                        cluster_ip: port.cluster_ip,
                        endpoints: list.clone(),
                        terminating_fallback: port.cluster_fallback,
                    });
                    proxy_lines.push(format!(
                        "{label} -> {}{}",
                        if list.is_empty() {
                            "no endpoints".to_owned()
                        } else {
                            list.join(" ")
                        },
                        if port.cluster_fallback {
                            " (terminating fallback)"
                        } else {
                            ""
                        }
                    ));
                    if !port.has_endpoints {
                        report.findings.push(Finding {
                            kind: "no-endpoints",
                            message: format!(
                                "{label}: kube-proxy has no endpoint: connections to {} are rejected",
                                join_host_port(port.cluster_ip, port.port)
                            ),
                            fix: no_endpoint_fix(service),
                            change: None,
                            command: no_endpoint_command(service),
                        });
                    }
                    if let Some((ruleset, name)) = &input.ruleset {
                        rules_for_port(
                            ruleset,
                            name,
                            &port,
                            &list,
                            &mut rule_lines,
                            &mut report.findings,
                            &mut report.rules,
                        );
                    }
                }
            }
        }
    }
    report.sections.push(Section {
        title: format!(
            "kube-proxy{}",
            input
                .node
                .as_ref()
                .map(|n| format!(" (node {n})"))
                .unwrap_or_default()
        ),
        lines: proxy_lines,
    });
    if let Some((_, name)) = &input.ruleset {
        if rule_lines.is_empty() {
            rule_lines.push("nothing to trace (no ClusterIP of the ruleset's family)".to_owned());
        }
        report.sections.push(Section {
            title: format!("rules ({name})"),
            lines: rule_lines,
        });
    }
}

/// DNS's answer, against the ClusterIPs or the ready endpoints.
fn dns_section(dns: &DnsAnswer, service: &Service, slices: &Slices<'_>, report: &mut Report) {
    let answered: BTreeSet<IpAddr> = dns.addresses.iter().copied().collect();
    let mut lines = vec![format!("{} -> {}", dns.name, answer_text(dns))];
    let external = service.service_type == ServiceType::ExternalName;
    let unresolved = dns.rcode != "NOERROR" || (answered.is_empty() && dns.cname.is_none());
    if unresolved {
        let why = if external {
            " (an externalName must be a DNS name: an IP address is NXDOMAIN, as in CoreDNS)"
        } else if service.headless {
            " (a headless Service's name has its ready endpoints' addresses, and it has none)"
        } else {
            ""
        };
        let fix = if external {
            format!(
                "set spec.externalName of Service {} to a DNS name (for an address, use a \
                 Service without a selector and an EndpointSlice holding it)",
                service.key
            )
        } else if service.headless {
            no_endpoint_fix(service)
        } else {
            "check that the DNS server serves this namespace and Service (the namespaces, \
             labels and ignore options of its kubernetes block)"
                .to_owned()
        };
        report.findings.push(Finding {
            kind: "dns-unresolved",
            message: format!(
                "{}: does not resolve ({}){why}: clients get no address, whatever the other \
                 layers say",
                dns.name,
                no_address(&dns.rcode)
            ),
            fix,
            change: external.then(|| Fix {
                object: format!("Service {}", service.key),
                field: "spec.externalName".to_owned(),
                values: Vec::new(),
            }),
            command: if service.headless {
                no_endpoint_command(service)
            } else {
                None
            },
        });
    } else if !service.headless && !external {
        let want: BTreeSet<IpAddr> = service.cluster_ips.iter().copied().collect();
        if answered != want {
            let list = |set: &BTreeSet<IpAddr>| {
                set.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            report.findings.push(Finding {
                kind: "dns-mismatch",
                message: format!(
                    "{}: DNS answers {}, not the ClusterIPs {}",
                    dns.name,
                    list(&answered),
                    list(&want)
                ),
                fix: DNS_BEHIND.to_owned(),
                change: None,
                command: None,
            });
        }
    }
    if service.headless && !unresolved {
        let source: Vec<&EndpointSlice> = if service.selector.is_some() {
            slices.computed.iter().collect()
        } else {
            slices.input.clone()
        };
        let ready: BTreeSet<IpAddr> = source
            .iter()
            .flat_map(|s| &s.endpoints)
            .filter(|e| e.conditions.ready())
            .flat_map(|e| e.addresses.iter().copied())
            .collect();
        let extra: Vec<String> = answered
            .difference(&ready)
            .map(ToString::to_string)
            .collect();
        let absent: Vec<String> = ready
            .difference(&answered)
            .map(ToString::to_string)
            .collect();
        if extra.is_empty() && absent.is_empty() {
            lines.push("= the ready endpoints".to_owned());
        } else {
            let mut parts = Vec::new();
            if !extra.is_empty() {
                parts.push(format!(
                    "answers {} that no ready endpoint has",
                    extra.join(", ")
                ));
            }
            if !absent.is_empty() {
                parts.push(format!(
                    "does not answer ready endpoint {}",
                    absent.join(", ")
                ));
            }
            report.findings.push(Finding {
                kind: "dns-mismatch",
                message: format!("{}: DNS {}", dns.name, parts.join(", and ")),
                fix: DNS_BEHIND.to_owned(),
                change: None,
                command: None,
            });
        }
    }
    report.sections.push(Section {
        title: "dns".to_owned(),
        lines,
    });
}

/// The running DNS server's answer, against what the objects make of the same name.
fn live_dns_section(live: &LiveDns, expected: Option<&DnsAnswer>, report: &mut Report) {
    let title = format!("dns (live, {})", live.server);
    let answer = match &live.answer {
        Err(reason) => {
            report.sections.push(Section {
                title,
                lines: vec![format!("not asked: {reason}")],
            });
            return;
        }
        Ok(answer) => answer,
    };
    let mut lines = vec![format!("{} -> {}", answer.name, answer_text(answer))];
    if let Some(expected) = expected {
        let same = |a: &DnsAnswer| {
            let addresses: BTreeSet<IpAddr> = a.addresses.iter().copied().collect();
            (a.rcode.clone(), a.cname.clone(), addresses)
        };
        if same(answer) == same(expected) {
            lines.push("= what the objects say".to_owned());
        } else {
            report.findings.push(Finding {
                kind: "dns-live-differs",
                message: format!(
                    "{}: the cluster's DNS at {} answers {}, the objects say {}",
                    answer.name,
                    live.server,
                    answer_text(answer),
                    answer_text(expected)
                ),
                fix: format!(
                    "nothing in the Service: the DNS server at {} is behind the API server or \
                     serves other objects; read its log and its Corefile's kubernetes block \
                     (namespaces, labels), and `/ready` (clusterdns says whether it is synced)",
                    live.server
                ),
                change: None,
                command: None,
            });
        }
    }
    report.sections.push(Section { title, lines });
}

/// An answer in one phrase: `CNAME target` and the addresses, or `no address (NXDOMAIN)`.
fn answer_text(dns: &DnsAnswer) -> String {
    let answered: BTreeSet<IpAddr> = dns.addresses.iter().copied().collect();
    let mut parts: Vec<String> = dns
        .cname
        .iter()
        .map(|target| format!("CNAME {target}"))
        .collect();
    parts.extend(answered.iter().map(ToString::to_string));
    if parts.is_empty() {
        return format!("no address ({})", no_address(&dns.rcode));
    }
    parts.join(" ")
}

/// What an answer without addresses is, in its rcode's words.
fn no_address(rcode: &str) -> &str {
    match rcode {
        "NOERROR" => "NODATA",
        other => other,
    }
}

/// Every Service of a namespace, or of all, explained: those with findings, and the count.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Survey {
    /// The namespace checked; `None`: every namespace.
    pub namespace: Option<String>,
    /// How many Services were checked.
    pub checked: usize,
    /// In how many namespaces.
    pub namespaces: usize,
    /// How many of them have findings.
    pub with_findings: usize,
    /// How many findings they have between them.
    pub findings: usize,
    /// The Services with findings, each explained in full.
    pub services: Vec<Explanation>,
    #[serde(skip)]
    seen: BTreeSet<String>,
}

impl Survey {
    /// An empty survey of `namespace` (`None`: every namespace).
    pub fn new(namespace: Option<String>) -> Self {
        Self {
            namespace,
            ..Self::default()
        }
    }

    /// Counts `explanation`, and keeps it when it has findings.
    pub fn add(&mut self, explanation: Explanation) {
        self.checked += 1;
        if self.seen.insert(explanation.details.namespace.clone()) {
            self.namespaces += 1;
        }
        if !explanation.findings.is_empty() {
            self.with_findings += 1;
            self.findings += explanation.findings.len();
            self.services.push(explanation);
        }
    }
}

/// `n thing` or `n things`.
fn count(n: usize, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// The survey as text: each Service with findings and its findings, then the count.
pub fn survey_text(survey: &Survey) -> String {
    let mut out = String::new();
    for explanation in &survey.services {
        let _ = writeln!(
            out,
            "{}: {}",
            explanation.service,
            count(explanation.findings.len(), "finding")
        );
        findings_text(&explanation.findings, &mut out);
        out.push('\n');
    }
    let scope = match &survey.namespace {
        Some(namespace) => format!("in namespace {namespace}"),
        None => format!("in {}", count(survey.namespaces, "namespace")),
    };
    if survey.checked == 0 {
        let _ = writeln!(out, "no Services {scope}");
    } else if survey.findings == 0 {
        let _ = writeln!(
            out,
            "checked {} {scope}: every layer agrees for each",
            count(survey.checked, "Service")
        );
    } else {
        let _ = writeln!(
            out,
            "checked {} {scope}: {} with findings ({}); `clusterdns explain NS/NAME` shows the \
             evidence for one",
            count(survey.checked, "Service"),
            survey.with_findings,
            count(survey.findings, "finding")
        );
    }
    out
}

/// Findings, two lines each: the kind and what is wrong, then the fix.
fn findings_text(findings: &[Finding], out: &mut String) {
    for finding in findings {
        let _ = writeln!(out, "  {}: {}", finding.kind, finding.message);
        let _ = writeln!(out, "    fix: {}", finding.fix);
    }
}

/// The explanation as text.
pub fn report_text(explanation: &Explanation) -> String {
    let mut out = String::new();
    for section in &explanation.sections {
        if section.lines.len() == 1 && section.title != "service" {
            let _ = writeln!(out, "{}: {}", section.title, section.lines[0]);
            continue;
        }
        if section.title == "service" {
            for line in &section.lines {
                let _ = writeln!(out, "{line}");
            }
            continue;
        }
        let _ = writeln!(out, "{}:", section.title);
        for line in &section.lines {
            let _ = writeln!(out, "  {line}");
        }
    }
    if explanation.findings.is_empty() {
        out.push_str("findings: none, every layer agrees\n");
    } else {
        let _ = writeln!(out, "findings ({}):", explanation.findings.len());
        findings_text(&explanation.findings, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_services_are_none() {
        let cluster = Cluster::default();
        let input = ExplainInput {
            cluster: &cluster,
            service: ObjectKey::new("shop", "nope"),
            node: None,
            cluster_cidrs: Vec::new(),
            ruleset: None,
            dns: None,
            slices_computed: false,
            live_dns: None,
        };
        assert!(explain(&input).is_none());
    }
}
