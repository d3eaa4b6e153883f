//! Why a name of the cluster zone answers what it does: the Namespace, Service,
//! EndpointSlice or Pod (or the missing one, or the option) behind each record, NXDOMAIN or
//! NODATA — for `clusterdns query --why` and `/debug/why`.
//!
//! Nothing is stored per record for this: the explanation is worked out on demand from the
//! objects and the options, by the rules the zone is built with ([`super::records`]), so the
//! zone and its lookups carry no provenance and cost nothing more.

use std::net::IpAddr;

use super::records::{Filter, exposes, ready_addresses};
use super::{dashed_ip, ip_from_dashed};
use crate::config::{KubernetesConfig, PodMode};
use crate::model::{Cluster, Protocol, Service, ServiceType};

/// Where the objects come from: what an object missing from them may mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// Every object (objects files): a Service filtered by `labels` is there, and said so.
    All,
    /// What the API watch was sent: the API server lists only the Services and
    /// EndpointSlices `labels` selects, the Namespaces `namespace_labels` selects, and with
    /// one `namespaces` name only that namespace — an object missing may be filtered out.
    Selected,
}

/// Why `qname` (dotted, any case, with or without its final dot) of zone `zone` (dotted)
/// answers what it does to a `qtype` query (`A`, `AAAA`, `SRV`, ...) under `config`, one
/// line per reason, from `cluster`'s objects (all of them, as objects files give them).
pub fn explain(
    config: &KubernetesConfig,
    cluster: &Cluster,
    zone: &str,
    qname: &str,
    qtype: &str,
) -> Vec<String> {
    explain_listed(config, cluster, Listing::All, zone, qname, qtype)
}

/// [`explain`] from objects listed as `listing` says.
pub fn explain_listed(
    config: &KubernetesConfig,
    cluster: &Cluster,
    listing: Listing,
    zone: &str,
    qname: &str,
    qtype: &str,
) -> Vec<String> {
    let seen = Seen {
        config,
        cluster,
        listing,
    };
    let mut reasons = explain_name(&seen, zone, qname);
    // Addresses of the other family than asked for are not in the answer.
    let family = match qtype.to_ascii_uppercase().as_str() {
        "A" => Some(true),
        "AAAA" => Some(false),
        _ => None,
    };
    if let Some(v4) = family {
        let total = reasons.len();
        reasons.retain(|reason| {
            reason
                .split(':')
                .next()
                .and_then(|head| head.parse::<IpAddr>().ok())
                .is_none_or(|ip| ip.is_ipv4() == v4)
        });
        if reasons.is_empty() && total > 0 {
            reasons.push(format!(
                "no {} address (the name has only {}): NODATA",
                if v4 { "IPv4" } else { "IPv6" },
                if v4 { "IPv6 ones" } else { "IPv4 ones" }
            ));
        }
    }
    reasons
}

/// The objects and the options, and how the objects were listed.
struct Seen<'a> {
    config: &'a KubernetesConfig,
    cluster: &'a Cluster,
    listing: Listing,
}

/// [`explain`] for any type.
fn explain_name(seen: &Seen<'_>, zone: &str, qname: &str) -> Vec<String> {
    let (config, cluster) = (seen.config, seen.cluster);
    let zone = zone.trim_end_matches('.').to_ascii_lowercase();
    let name = qname.trim_end_matches('.').to_ascii_lowercase();
    let relative = if name == zone {
        Some("")
    } else {
        name.strip_suffix(&zone)
            .and_then(|rest| rest.strip_suffix('.'))
    };
    let Some(relative) = relative else {
        return vec![format!("{qname} is not in the zone {zone}.")];
    };
    if relative.is_empty() {
        return vec![format!(
            "{zone}. is the zone apex: its SOA and NS records are the kubernetes plugin's own"
        )];
    }
    let labels: Vec<&str> = relative.split('.').collect();
    let filter = Filter::new(cluster, config);
    match labels.as_slice() {
        ["svc"] => vec![format!(
            "svc.{zone}. has names below it and no records of its own: NODATA"
        )],
        ["pod"] => vec![format!(
            "pod.{zone}. has names below it and no records of its own: NODATA"
        )],
        [namespace, "svc"] => match namespace_problem(seen, namespace) {
            Some(problem) => vec![format!("{problem}: NXDOMAIN")],
            None => vec![format!(
                "namespace {namespace} is exposed: {namespace}.svc.{zone}. exists, with no \
                 records of its own (NODATA)"
            )],
        },
        [rest @ .., service, namespace, "svc"] => {
            if let Some(problem) = namespace_problem(seen, namespace) {
                return vec![format!("{problem}: NXDOMAIN")];
            }
            let key = crate::model::ObjectKey::new(*namespace, *service);
            let Some(found) = cluster.services.get(&key) else {
                return vec![match (&config.labels, seen.listing) {
                    (Some(selector), Listing::Selected) => format!(
                        "no Service {namespace}/{service} in the watch: there is none, or it \
                         is filtered by labels {selector} (the API server sends only the \
                         Services they select): NXDOMAIN"
                    ),
                    _ => format!("no such Service {namespace}/{service}: NXDOMAIN"),
                }];
            };
            if !filter.service(found) {
                let selector = config
                    .labels
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                return vec![format!(
                    "Service {namespace}/{service} is filtered by labels {selector}: NXDOMAIN"
                )];
            }
            service_reasons(config, cluster, &filter, found, rest)
        }
        [pod, namespace, "pod"] => pod_reasons(seen, pod, namespace),
        _ => vec![format!(
            "{relative} is no name the kubernetes plugin makes under {zone}. (<service>.<namespace>.svc, <endpoint>.<service>.<namespace>.svc, _<port>._<proto>.<service>.<namespace>.svc, <ip>.<namespace>.pod): NXDOMAIN"
        )],
    }
}

/// Why namespace `namespace` has no names, if it has none.
fn namespace_problem(seen: &Seen<'_>, namespace: &str) -> Option<String> {
    let config = seen.config;
    // Before whether it exists: the watch of one namespace lists no other.
    if !config.namespaces.is_empty() && !config.namespaces.iter().any(|n| n == namespace) {
        return Some(format!(
            "namespace {namespace} is not exposed (namespaces {})",
            config.namespaces.join(" ")
        ));
    }
    let Some(ns) = seen.cluster.namespaces.get(namespace) else {
        return Some(match (&config.namespace_labels, seen.listing) {
            (Some(selector), Listing::Selected) => format!(
                "no namespace {namespace} in the watch: there is none, or namespace_labels \
                 {selector} does not match it (the API server sends only the namespaces they \
                 select)"
            ),
            _ => format!("no such namespace {namespace}"),
        });
    };
    if exposes(config, ns) {
        return None;
    }
    let selector = config
        .namespace_labels
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    Some(format!(
        "namespace {namespace} is not exposed (namespace_labels {selector} does not match it)"
    ))
}

/// The reasons for a name of a visible Service: the Service itself (`rest` empty), an SRV
/// name (`_port._proto`), an endpoint's name.
fn service_reasons(
    config: &KubernetesConfig,
    cluster: &Cluster,
    filter: &Filter<'_, '_>,
    service: &Service,
    rest: &[&str],
) -> Vec<String> {
    let key = &service.key;
    // The Service's ready endpoints, each with the slice it comes from.
    let ready: Vec<(String, IpAddr, String)> = cluster
        .endpoint_slices
        .values()
        .filter(|slice| {
            slice.key.namespace == key.namespace
                && slice.service_name.as_deref() == Some(&*key.name)
                && filter.slice(slice)
        })
        .flat_map(|slice| {
            ready_addresses(slice, config.endpoint_pod_names).map(move |ready| {
                (
                    slice.key.name.to_string(),
                    ready.ip,
                    ready.label().to_string(),
                )
            })
        })
        .collect();
    let headless = service.headless && service.service_type != ServiceType::ExternalName;
    match rest {
        [] => match service.service_type {
            ServiceType::ExternalName => vec![format!(
                "Service {key} is an ExternalName: CNAME {}",
                service.external_name.as_deref().unwrap_or("(none)")
            )],
            _ if headless && ready.is_empty() => vec![format!(
                "headless Service {key} has no ready endpoints: its name has no addresses"
            )],
            _ if headless => ready
                .iter()
                .map(|(slice, ip, _)| {
                    format!("{ip}: a ready endpoint of EndpointSlice {}/{slice} (headless Service {key})", key.namespace)
                })
                .collect(),
            _ if config.ignore_empty_service && ready.is_empty() => vec![format!(
                "Service {key} has no ready endpoints and the plugin says ignore empty_service: NXDOMAIN"
            )],
            _ => service
                .cluster_ips
                .iter()
                .map(|ip| format!("{ip}: the cluster IP of Service {key} (spec.clusterIPs)"))
                .collect(),
        },
        [port, proto] if port.starts_with('_') && proto.starts_with('_') => {
            let (port, proto) = (&port[1..], &proto[1..]);
            let found = service.ports.iter().find(|p| {
                p.name == port && protocol_name(p.protocol).eq_ignore_ascii_case(proto)
            });
            match found {
                Some(p) => vec![format!(
                    "SRV: port {}/{} {} of Service {key}{}",
                    p.name,
                    protocol_name(p.protocol),
                    p.port,
                    if headless { ", one record per ready endpoint" } else { "" }
                )],
                None => vec![format!(
                    "Service {key} has no port named {port} with protocol {proto}: NXDOMAIN"
                )],
            }
        }
        [endpoint] => {
            let named: Vec<String> = ready
                .iter()
                .filter(|(_, _, label)| label == endpoint)
                .map(|(slice, ip, _)| {
                    format!(
                        "{ip}: endpoint {endpoint} of EndpointSlice {}/{slice} (ready)",
                        key.namespace
                    )
                })
                .collect();
            if named.is_empty() {
                vec![format!(
                    "Service {key} has no ready endpoint named {endpoint}: NXDOMAIN"
                )]
            } else {
                named
            }
        }
        _ => vec![format!(
            "{} under Service {key} is no name the plugin makes: NXDOMAIN",
            rest.join(".")
        )],
    }
}

/// `<ip>.<namespace>.pod`.
fn pod_reasons(seen: &Seen<'_>, pod: &str, namespace: &str) -> Vec<String> {
    let (config, cluster) = (seen.config, seen.cluster);
    if config.pods == PodMode::Disabled {
        return vec!["pods disabled (the default): no pod records: NXDOMAIN".to_owned()];
    }
    let Some(ip) = ip_from_dashed(pod.as_bytes()) else {
        return vec![format!(
            "{pod} is not a valid pod name (an address with dashes, 10-244-1-5): NXDOMAIN"
        )];
    };
    if let Some(problem) = namespace_problem(seen, namespace) {
        return vec![format!("{problem}: NXDOMAIN")];
    }
    if config.pods == PodMode::Insecure {
        return vec![format!(
            "{ip}: pods insecure answers the address written in the name, with no Pod looked up"
        )];
    }
    let found = cluster
        .pods
        .values()
        .find(|p| &*p.key.namespace == namespace && p.ips.contains(&ip));
    match found {
        Some(found) => vec![format!("{ip}: Pod {} has it (pods verified)", found.key)],
        None => vec![format!(
            "pods verified: no Pod in namespace {namespace} has {ip} ({}): NXDOMAIN",
            dashed_ip(ip)
        )],
    }
}

fn protocol_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Tcp => "tcp",
        Protocol::Udp => "udp",
        Protocol::Sctp => "sctp",
    }
}
