//! Conversion from `k8s-openapi` types into the model. Parse, don't validate: a bad IP or
//! port is an error here, never later.
//!
//! Every function takes the typed object that `kubectl get -o json` output and the API watch
//! both deserialize into, and either returns the model object or a [`ConvertError`] that names
//! the field path (`spec.ports[1].targetPort`), what was expected there, and what was found.
//! Fields the model does not keep are not looked at, so they cannot fail.
//!
//! Defaults are the API server's: a missing protocol is TCP, a missing `targetPort` (or `0`, or
//! `""`) is the port itself, a missing service type is ClusterIP, a missing traffic policy is
//! Cluster, a missing `sessionAffinityConfig.clientIP.timeoutSeconds` is 10800, a missing
//! `metadata.namespace` is `default`.
//!
//! Annotations are free-form to the API server: one this module reads
//! ([`ANNOTATION_TRIGGER_TIME`]) is ignored, not an error, when it does not parse.

use std::net::IpAddr;
use std::time::SystemTime;

use ipnet::IpNet;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{
    ANNOTATION_TRIGGER_TIME, AddressType, Addresses, ContainerPort, Endpoint, EndpointConditions,
    EndpointDetails, EndpointPort, EndpointSlice, LABEL_SERVICE_NAME, Labels, Namespace, ObjectKey,
    Pod, PodDetails, PodPhase, Protocol, Service, ServicePort, ServiceType, SessionAffinity,
    TargetPort, TrafficPolicy,
};

/// The namespace of an object whose `metadata.namespace` is unset (what `kubectl apply` uses).
pub const DEFAULT_NAMESPACE: &str = "default";

/// `sessionAffinityConfig.clientIP.timeoutSeconds` when unset: three hours.
pub const DEFAULT_SESSION_AFFINITY_TIMEOUT: u32 = 10_800;

/// The largest `sessionAffinityConfig.clientIP.timeoutSeconds` the API accepts: one day.
pub const MAX_SESSION_AFFINITY_TIMEOUT: u32 = 86_400;

/// A field of an object that does not hold what the model needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: expected {expected}, found {found}")]
pub struct ConvertError {
    /// The field path inside the object, e.g. `spec.ports[0].port`.
    pub path: String,
    /// What the field must hold, e.g. `a port number 1-65535`.
    pub expected: String,
    /// What it held, as written (`nothing` when absent or empty).
    pub found: String,
}

impl ConvertError {
    pub(super) fn new(
        path: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        let found = found.into();
        Self {
            path: path.into(),
            expected: expected.into(),
            found: if found.is_empty() {
                "nothing".to_owned()
            } else {
                found
            },
        }
    }
}

type Result<T> = std::result::Result<T, ConvertError>;

/// A Namespace.
pub fn namespace(object: &core::Namespace) -> Result<Namespace> {
    Ok(Namespace {
        name: name(&object.metadata)?,
        labels: labels(&object.metadata),
    })
}

/// A Service.
///
/// `spec.clusterIPs` is read (falling back to `spec.clusterIP`); `None` there makes the
/// Service headless with no IPs. An empty `spec.selector` is no selector, as the API
/// documents ("if empty or not present, the service is assumed to have an external process
/// managing its endpoints").
pub fn service(object: &core::Service) -> Result<Service> {
    let key = key(&object.metadata)?;
    let default_spec = core::ServiceSpec::default();
    let spec = object.spec.as_ref().unwrap_or(&default_spec);

    let service_type = match spec.type_.as_deref() {
        None | Some("" | "ClusterIP") => ServiceType::ClusterIp,
        Some("NodePort") => ServiceType::NodePort,
        Some("LoadBalancer") => ServiceType::LoadBalancer,
        Some("ExternalName") => ServiceType::ExternalName,
        Some(other) => {
            return Err(ConvertError::new(
                "spec.type",
                "ClusterIP, NodePort, LoadBalancer or ExternalName",
                quote(other),
            ));
        }
    };

    let (cluster_ips, headless) = cluster_ips(spec)?;

    let ports = spec
        .ports
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, port)| service_port(port, &format!("spec.ports[{index}]")))
        .collect::<Result<Vec<_>>>()?;

    let ip_families = spec
        .ip_families
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, family)| match family.as_str() {
            "IPv4" => Ok(AddressType::IPv4),
            "IPv6" => Ok(AddressType::IPv6),
            other => Err(ConvertError::new(
                format!("spec.ipFamilies[{index}]"),
                "IPv4 or IPv6",
                quote(other),
            )),
        })
        .collect::<Result<Vec<_>>>()?;

    let session_affinity = match spec.session_affinity.as_deref() {
        None | Some("" | "None") => SessionAffinity::None,
        Some("ClientIP") => {
            let timeout = spec
                .session_affinity_config
                .as_ref()
                .and_then(|config| config.client_ip.as_ref())
                .and_then(|client_ip| client_ip.timeout_seconds);
            let timeout_seconds = match timeout {
                None => DEFAULT_SESSION_AFFINITY_TIMEOUT,
                Some(seconds) => u32::try_from(seconds)
                    .ok()
                    .filter(|seconds| (1..=MAX_SESSION_AFFINITY_TIMEOUT).contains(seconds))
                    .ok_or_else(|| {
                        ConvertError::new(
                            "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                            format!("seconds 1-{MAX_SESSION_AFFINITY_TIMEOUT}"),
                            seconds.to_string(),
                        )
                    })?,
            };
            SessionAffinity::ClientIp { timeout_seconds }
        }
        Some(other) => {
            return Err(ConvertError::new(
                "spec.sessionAffinity",
                "None or ClientIP",
                quote(other),
            ));
        }
    };

    let external_ips = spec
        .external_ips
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, ip)| parse_ip(ip, &format!("spec.externalIPs[{index}]")))
        .collect::<Result<Vec<_>>>()?;

    let load_balancer_ips = object
        .status
        .as_ref()
        .and_then(|status| status.load_balancer.as_ref())
        .and_then(|load_balancer| load_balancer.ingress.as_ref())
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(index, ingress)| {
            let ip = ingress.ip.as_deref().filter(|ip| !ip.is_empty())?;
            Some(parse_ip(
                ip,
                &format!("status.loadBalancer.ingress[{index}].ip"),
            ))
        })
        .collect::<Result<Vec<_>>>()?;

    // CoreDNS takes an ingress entry's hostname when it has no IP.
    let load_balancer_hostnames = object
        .status
        .as_ref()
        .and_then(|status| status.load_balancer.as_ref())
        .and_then(|load_balancer| load_balancer.ingress.as_ref())
        .into_iter()
        .flatten()
        .filter(|ingress| ingress.ip.as_deref().is_none_or(str::is_empty))
        .filter_map(|ingress| ingress.hostname.clone().filter(|host| !host.is_empty()))
        .collect();

    let load_balancer_source_ranges = spec
        .load_balancer_source_ranges
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, range)| {
            range.trim().parse::<IpNet>().map_err(|_| {
                ConvertError::new(
                    format!("spec.loadBalancerSourceRanges[{index}]"),
                    "a CIDR such as 10.0.0.0/8",
                    quote(range),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;

    let health_check_node_port = match spec.health_check_node_port {
        None | Some(0) => None,
        Some(value) => Some(port_number(i64::from(value), "spec.healthCheckNodePort")?),
    };

    let external_name = if service_type == ServiceType::ExternalName {
        spec.external_name.clone().filter(|name| !name.is_empty())
    } else {
        None
    };

    Ok(Service {
        key,
        labels: labels(&object.metadata),
        selector: spec
            .selector
            .clone()
            .filter(|selector| !selector.is_empty()),
        service_type,
        cluster_ips,
        headless,
        external_name,
        ports,
        publish_not_ready_addresses: spec.publish_not_ready_addresses.unwrap_or(false),
        ip_families,
        external_traffic_policy: traffic_policy(
            spec.external_traffic_policy.as_deref(),
            "spec.externalTrafficPolicy",
        )?,
        internal_traffic_policy: traffic_policy(
            spec.internal_traffic_policy.as_deref(),
            "spec.internalTrafficPolicy",
        )?,
        session_affinity,
        external_ips,
        load_balancer_ips,
        load_balancer_hostnames,
        load_balancer_source_ranges,
        health_check_node_port,
    })
}

/// `spec.clusterIPs` (or `spec.clusterIP`), and whether the Service is headless.
fn cluster_ips(spec: &core::ServiceSpec) -> Result<(Vec<IpAddr>, bool)> {
    let (values, field): (Vec<&str>, &str) = match spec.cluster_ips.as_deref() {
        Some(ips) if !ips.is_empty() => (ips.iter().map(String::as_str).collect(), "clusterIPs"),
        _ => (
            spec.cluster_ip.as_deref().into_iter().collect(),
            "clusterIP",
        ),
    };
    if values.first() == Some(&"None") || spec.cluster_ip.as_deref() == Some("None") {
        return Ok((Vec::new(), true));
    }
    let mut ips = Vec::with_capacity(values.len());
    for (index, value) in values.into_iter().enumerate() {
        if value.is_empty() {
            continue;
        }
        let path = if field == "clusterIPs" {
            format!("spec.clusterIPs[{index}]")
        } else {
            "spec.clusterIP".to_owned()
        };
        ips.push(parse_ip(value, &path)?);
    }
    Ok((ips, false))
}

fn service_port(port: &core::ServicePort, path: &str) -> Result<ServicePort> {
    let number = port_number(i64::from(port.port), &format!("{path}.port"))?;
    let target_port = match &port.target_port {
        None | Some(IntOrString::Int(0)) => TargetPort::Number(number),
        Some(IntOrString::Int(value)) => TargetPort::Number(port_number(
            i64::from(*value),
            &format!("{path}.targetPort"),
        )?),
        Some(IntOrString::String(value)) if value.is_empty() => TargetPort::Number(number),
        Some(IntOrString::String(value)) if value.bytes().all(|byte| byte.is_ascii_digit()) => {
            let parsed = value.parse::<i64>().unwrap_or(i64::MAX);
            TargetPort::Number(port_number(parsed, &format!("{path}.targetPort")).map_err(
                |error| ConvertError {
                    found: quote(value),
                    ..error
                },
            )?)
        }
        Some(IntOrString::String(value)) => TargetPort::Name(value.clone()),
    };
    let node_port = match port.node_port {
        None | Some(0) => None,
        Some(value) => Some(port_number(i64::from(value), &format!("{path}.nodePort"))?),
    };
    Ok(ServicePort {
        name: port.name.clone().unwrap_or_default(),
        protocol: protocol(port.protocol.as_deref(), &format!("{path}.protocol"))?,
        port: number,
        target_port,
        node_port,
    })
}

fn traffic_policy(value: Option<&str>, path: &str) -> Result<TrafficPolicy> {
    match value {
        None | Some("" | "Cluster") => Ok(TrafficPolicy::Cluster),
        Some("Local") => Ok(TrafficPolicy::Local),
        Some(other) => Err(ConvertError::new(path, "Cluster or Local", quote(other))),
    }
}

/// A Pod.
///
/// IPs come from `status.podIPs` (falling back to `status.podIP`), the first being the
/// primary. `ready` is the first `Ready` condition having status `True`; `terminating` is a
/// set `metadata.deletionTimestamp`. Container ports are read from every container, then from
/// every sidecar (an init container with `restartPolicy: Always`), in spec order: exactly the
/// ports the EndpointSlice controller's `FindPort` searches for a named `targetPort`. Ordinary
/// init containers are left out.
pub fn pod(object: &core::Pod) -> Result<Pod> {
    let key = key(&object.metadata)?;
    let default_status = core::PodStatus::default();
    let status = object.status.as_ref().unwrap_or(&default_status);

    let ips = match status.pod_ips.as_deref() {
        Some(pod_ips) if !pod_ips.is_empty() => pod_ips
            .iter()
            .enumerate()
            .map(|(index, pod_ip)| parse_ip(&pod_ip.ip, &format!("status.podIPs[{index}].ip")))
            .collect::<Result<Addresses>>()?,
        _ => match status.pod_ip.as_deref() {
            Some(ip) if !ip.is_empty() => [parse_ip(ip, "status.podIP")?].into(),
            _ => Addresses::new(),
        },
    };

    let phase = match status.phase.as_deref() {
        None | Some("" | "Unknown") => PodPhase::Unknown,
        Some("Pending") => PodPhase::Pending,
        Some("Running") => PodPhase::Running,
        Some("Succeeded") => PodPhase::Succeeded,
        Some("Failed") => PodPhase::Failed,
        Some(other) => {
            return Err(ConvertError::new(
                "status.phase",
                "Pending, Running, Succeeded, Failed or Unknown",
                quote(other),
            ));
        }
    };

    let ready = status
        .conditions
        .iter()
        .flatten()
        .find(|condition| condition.type_ == "Ready")
        .is_some_and(|condition| condition.status == "True");

    let mut container_ports = Vec::new();
    let (mut hostname, mut subdomain, mut node_name, mut host_network) = (None, None, None, false);
    if let Some(spec) = &object.spec {
        hostname = non_empty(spec.hostname.as_deref());
        subdomain = non_empty(spec.subdomain.as_deref());
        node_name = non_empty(spec.node_name.as_deref());
        host_network = spec.host_network.unwrap_or(false);
        for (index, container) in spec.containers.iter().enumerate() {
            add_container_ports(
                &mut container_ports,
                container,
                &format!("spec.containers[{index}]"),
            )?;
        }
        for (index, container) in spec.init_containers.iter().flatten().enumerate() {
            if container.restart_policy.as_deref() == Some("Always") {
                add_container_ports(
                    &mut container_ports,
                    container,
                    &format!("spec.initContainers[{index}]"),
                )?;
            }
        }
    }

    container_ports.shrink_to_fit();
    let mut pod = Pod::new(key, ips, phase).with_details(PodDetails {
        labels: labels(&object.metadata),
        hostname: hostname.map(String::into_boxed_str),
        subdomain: subdomain.map(String::into_boxed_str),
        node_name: node_name.map(String::into_boxed_str),
        container_ports,
    });
    pod.ready = ready;
    pod.terminating = object.metadata.deletion_timestamp.is_some();
    pod.host_network = host_network;
    Ok(pod)
}

fn add_container_ports(
    ports: &mut Vec<ContainerPort>,
    container: &core::Container,
    path: &str,
) -> Result<()> {
    for (index, port) in container.ports.iter().flatten().enumerate() {
        let path = format!("{path}.ports[{index}]");
        ports.push(ContainerPort {
            name: port.name.clone().unwrap_or_default(),
            port: port_number(
                i64::from(port.container_port),
                &format!("{path}.containerPort"),
            )?,
            protocol: protocol(port.protocol.as_deref(), &format!("{path}.protocol"))?,
        });
    }
    Ok(())
}

/// An EndpointSlice (`discovery.k8s.io/v1`).
///
/// `service_name` is the `kubernetes.io/service-name` label. Addresses must be of the slice's
/// `addressType`; an FQDN slice keeps its endpoints (conditions, names) but no addresses.
/// `target_pod` is kept only when `targetRef.kind` is `Pod`.
pub fn endpoint_slice(object: &discovery::EndpointSlice) -> Result<EndpointSlice> {
    let key = key(&object.metadata)?;
    let labels = labels(&object.metadata);
    let address_type = match object.address_type.as_str() {
        "IPv4" => AddressType::IPv4,
        "IPv6" => AddressType::IPv6,
        "FQDN" => AddressType::Fqdn,
        other => {
            return Err(ConvertError::new(
                "addressType",
                "IPv4, IPv6 or FQDN",
                quote(other),
            ));
        }
    };

    let endpoints = object
        .endpoints
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, endpoint)| {
            slice_endpoint(endpoint, address_type, &format!("endpoints[{index}]"))
        })
        .collect::<Result<Vec<_>>>()
        .map(exact)?;

    let ports = object
        .ports
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, port)| {
            let path = format!("ports[{index}]");
            Ok(EndpointPort {
                name: port.name.clone().unwrap_or_default(),
                protocol: protocol(port.protocol.as_deref(), &format!("{path}.protocol"))?,
                port: port
                    .port
                    .map(|number| port_number(i64::from(number), &format!("{path}.port")))
                    .transpose()?,
            })
        })
        .collect::<Result<Vec<_>>>()
        .map(exact)?;

    Ok(EndpointSlice {
        key,
        service_name: labels
            .get(LABEL_SERVICE_NAME)
            .filter(|name| !name.is_empty())
            .cloned(),
        labels,
        address_type,
        endpoints,
        ports,
        trigger_time: trigger_time(&object.metadata),
    })
}

/// The [`ANNOTATION_TRIGGER_TIME`] annotation, an RFC 3339 timestamp; `None` when it is
/// absent or does not parse (the API server does not validate annotations, so neither
/// should a reader refuse a whole object over one).
fn trigger_time(metadata: &ObjectMeta) -> Option<SystemTime> {
    let value = metadata
        .annotations
        .as_ref()?
        .get(ANNOTATION_TRIGGER_TIME)?;
    value.parse::<jiff::Timestamp>().ok().map(SystemTime::from)
}

fn slice_endpoint(
    endpoint: &discovery::Endpoint,
    address_type: AddressType,
    path: &str,
) -> Result<Endpoint> {
    let addresses = match address_type {
        AddressType::Fqdn => Addresses::new(),
        AddressType::IPv4 | AddressType::IPv6 => endpoint
            .addresses
            .iter()
            .enumerate()
            .map(|(index, address)| {
                let path = format!("{path}.addresses[{index}]");
                let ip = parse_ip(address, &path)?;
                if AddressType::of(ip) == address_type {
                    Ok(ip)
                } else {
                    let expected = match address_type {
                        AddressType::IPv4 => "an IPv4 address (addressType IPv4)",
                        _ => "an IPv6 address (addressType IPv6)",
                    };
                    Err(ConvertError::new(path, expected, address.clone()))
                }
            })
            .collect::<Result<Addresses>>()?,
    };
    let conditions = endpoint
        .conditions
        .as_ref()
        .map(|conditions| EndpointConditions {
            ready: conditions.ready,
            serving: conditions.serving,
            terminating: conditions.terminating,
        })
        .unwrap_or_default();
    let target_pod = endpoint
        .target_ref
        .as_ref()
        .filter(|target| target.kind.as_deref() == Some("Pod"))
        .and_then(|target| non_empty(target.name.as_deref()));
    let boxed = |value: Option<String>| value.map(String::into_boxed_str);
    let mut converted = Endpoint::new(addresses, conditions).with_details(EndpointDetails {
        node_name: boxed(non_empty(endpoint.node_name.as_deref())),
        zone: boxed(non_empty(endpoint.zone.as_deref())),
        target_pod: boxed(target_pod),
    });
    converted.hostname = boxed(non_empty(endpoint.hostname.as_deref()));
    Ok(converted)
}

/// `metadata.name`, which must be set.
pub(super) fn name(metadata: &ObjectMeta) -> Result<String> {
    match metadata.name.as_deref() {
        Some(name) if !name.is_empty() => Ok(name.to_owned()),
        _ => Err(ConvertError::new("metadata.name", "the object's name", "")),
    }
}

/// namespace/name; a missing namespace is `default`.
pub(super) fn key(metadata: &ObjectMeta) -> Result<ObjectKey> {
    let namespace =
        non_empty(metadata.namespace.as_deref()).unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
    Ok(ObjectKey::new(namespace, name(metadata)?))
}

pub(super) fn labels(metadata: &ObjectMeta) -> Labels {
    metadata.labels.clone().unwrap_or_default()
}

/// `items` without spare capacity. Collecting a short list from an iterator of unknown
/// length reserves room for four: for the one address of an endpoint that is 68 bytes
/// instead of 17, and the objects of a large cluster are kept for as long as it runs.
fn exact<T>(mut items: Vec<T>) -> Vec<T> {
    items.shrink_to_fit();
    items
}

fn non_empty(value: Option<&str>) -> Option<String> {
    value.filter(|value| !value.is_empty()).map(str::to_owned)
}

pub(super) fn quote(value: &str) -> String {
    if value.is_empty() {
        String::new()
    } else {
        format!("{value:?}")
    }
}

/// A protocol; unset means TCP.
pub(super) fn protocol(value: Option<&str>, path: &str) -> Result<Protocol> {
    match value {
        None | Some("" | "TCP") => Ok(Protocol::Tcp),
        Some("UDP") => Ok(Protocol::Udp),
        Some("SCTP") => Ok(Protocol::Sctp),
        Some(other) => Err(ConvertError::new(path, "TCP, UDP or SCTP", quote(other))),
    }
}

/// A port number, 1-65535.
pub(super) fn port_number(value: i64, path: &str) -> Result<u16> {
    u16::try_from(value)
        .ok()
        .filter(|port| *port != 0)
        .ok_or_else(|| ConvertError::new(path, "a port number 1-65535", value.to_string()))
}

/// An IP address, as Go's parser reads it: an IPv4-mapped IPv6 address is IPv4.
pub(super) fn parse_ip(value: &str, path: &str) -> Result<IpAddr> {
    value
        .parse::<IpAddr>()
        .map(|ip| ip.to_canonical())
        .map_err(|_| ConvertError::new(path, "an IP address", quote(value)))
}

#[cfg(test)]
mod tests;
