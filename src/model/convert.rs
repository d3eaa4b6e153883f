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
    ANNOTATION_TRIGGER_TIME, AddressType, ContainerPort, Endpoint, EndpointConditions,
    EndpointPort, EndpointSlice, LABEL_SERVICE_NAME, Labels, Namespace, ObjectKey, Pod, PodPhase,
    Protocol, Service, ServicePort, ServiceType, SessionAffinity, TargetPort, TrafficPolicy,
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
            .collect::<Result<Vec<_>>>()?,
        _ => match status.pod_ip.as_deref() {
            Some(ip) if !ip.is_empty() => vec![parse_ip(ip, "status.podIP")?],
            _ => Vec::new(),
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

    Ok(Pod {
        key,
        labels: labels(&object.metadata),
        ips,
        phase,
        ready,
        terminating: object.metadata.deletion_timestamp.is_some(),
        hostname,
        subdomain,
        node_name,
        host_network,
        container_ports,
    })
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
        .collect::<Result<Vec<_>>>()?;

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
        .collect::<Result<Vec<_>>>()?;

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
        AddressType::Fqdn => Vec::new(),
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
            .collect::<Result<Vec<_>>>()?,
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
    Ok(Endpoint {
        addresses,
        conditions,
        hostname: non_empty(endpoint.hostname.as_deref()),
        node_name: non_empty(endpoint.node_name.as_deref()),
        zone: non_empty(endpoint.zone.as_deref()),
        target_pod,
    })
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
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use std::time::Duration;

    fn svc(spec: Value) -> std::result::Result<Service, String> {
        let object: core::Service = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
            "spec": spec,
        }))
        .expect("test Service");
        service(&object).map_err(|error| error.to_string())
    }

    fn pod_of(value: Value) -> std::result::Result<Pod, String> {
        let mut object = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "shop"},
        });
        if let (Some(target), Some(source)) = (object.as_object_mut(), value.as_object()) {
            target.extend(source.clone());
        }
        let object: core::Pod = serde_json::from_value(object).expect("test Pod");
        pod(&object).map_err(|error| error.to_string())
    }

    fn slice_of(value: Value) -> std::result::Result<EndpointSlice, String> {
        let mut object = json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "web-abcde",
                "namespace": "shop",
                "labels": {"kubernetes.io/service-name": "web"},
            },
        });
        if let (Some(target), Some(source)) = (object.as_object_mut(), value.as_object()) {
            target.extend(source.clone());
        }
        let object: discovery::EndpointSlice =
            serde_json::from_value(object).expect("test EndpointSlice");
        endpoint_slice(&object).map_err(|error| error.to_string())
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("test IP")
    }

    #[test]
    fn service_errors_name_the_field() {
        let cases: &[(&str, Value, &str)] = &[
            (
                "port out of range",
                json!({"ports": [{"port": 80}, {"port": 70000}]}),
                "spec.ports[1].port: expected a port number 1-65535, found 70000",
            ),
            (
                "port missing",
                json!({"ports": [{"name": "http"}]}),
                "spec.ports[0].port: expected a port number 1-65535, found 0",
            ),
            (
                "targetPort out of range",
                json!({"ports": [{"port": 80}, {"port": 81, "targetPort": -1}]}),
                "spec.ports[1].targetPort: expected a port number 1-65535, found -1",
            ),
            (
                "numeric string targetPort out of range",
                json!({"ports": [{"port": 80, "targetPort": "99999"}]}),
                "spec.ports[0].targetPort: expected a port number 1-65535, found \"99999\"",
            ),
            (
                "nodePort out of range",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 65536}]}),
                "spec.ports[0].nodePort: expected a port number 1-65535, found 65536",
            ),
            (
                "unknown protocol",
                json!({"ports": [{"port": 80, "protocol": "tcp"}]}),
                "spec.ports[0].protocol: expected TCP, UDP or SCTP, found \"tcp\"",
            ),
            (
                "unknown type",
                json!({"type": "Headless"}),
                "spec.type: expected ClusterIP, NodePort, LoadBalancer or ExternalName, found \"Headless\"",
            ),
            (
                "bad clusterIP",
                json!({"clusterIP": "10.96.0.300"}),
                "spec.clusterIP: expected an IP address, found \"10.96.0.300\"",
            ),
            (
                "bad second clusterIP",
                json!({"clusterIP": "10.96.0.50", "clusterIPs": ["10.96.0.50", "fd00::zz"]}),
                "spec.clusterIPs[1]: expected an IP address, found \"fd00::zz\"",
            ),
            (
                "unknown ipFamily",
                json!({"ipFamilies": ["IPv4", "IPv5"]}),
                "spec.ipFamilies[1]: expected IPv4 or IPv6, found \"IPv5\"",
            ),
            (
                "unknown externalTrafficPolicy",
                json!({"externalTrafficPolicy": "Global"}),
                "spec.externalTrafficPolicy: expected Cluster or Local, found \"Global\"",
            ),
            (
                "unknown internalTrafficPolicy",
                json!({"internalTrafficPolicy": "PreferLocal"}),
                "spec.internalTrafficPolicy: expected Cluster or Local, found \"PreferLocal\"",
            ),
            (
                "unknown sessionAffinity",
                json!({"sessionAffinity": "Cookie"}),
                "spec.sessionAffinity: expected None or ClientIP, found \"Cookie\"",
            ),
            (
                "affinity timeout out of range",
                json!({"sessionAffinity": "ClientIP",
                       "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}}}),
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds: expected seconds 1-86400, found 0",
            ),
            (
                "bad externalIP",
                json!({"externalIPs": ["example.com"]}),
                "spec.externalIPs[0]: expected an IP address, found \"example.com\"",
            ),
            (
                "bad source range",
                json!({"loadBalancerSourceRanges": ["10.0.0.0/33"]}),
                "spec.loadBalancerSourceRanges[0]: expected a CIDR such as 10.0.0.0/8, found \"10.0.0.0/33\"",
            ),
        ];
        for (name, spec, want) in cases {
            assert_eq!(
                svc(spec.clone()).err().as_deref(),
                Some(*want),
                "case: {name}"
            );
        }
    }

    #[test]
    fn service_fields_and_defaults() {
        let service = svc(json!({
            "type": "NodePort",
            "clusterIP": "10.96.0.30",
            "clusterIPs": ["10.96.0.30"],
            "ipFamilies": ["IPv4"],
            "selector": {"app": "checkout"},
            "externalTrafficPolicy": "Local",
            "sessionAffinity": "ClientIP",
            "ports": [
                {"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30080},
                {"name": "grpc", "port": 9090, "targetPort": "grpc", "protocol": "TCP"},
                {"name": "num", "port": 81, "targetPort": "8081"},
                {"name": "dns", "port": 53, "protocol": "UDP"},
                {"name": "zero", "port": 82, "targetPort": 0},
            ],
        }))
        .expect("valid Service");
        assert_eq!(service.key, ObjectKey::new("shop", "web"));
        assert_eq!(service.service_type, ServiceType::NodePort);
        assert_eq!(service.cluster_ips, vec![ip("10.96.0.30")]);
        assert!(!service.headless);
        assert_eq!(service.ip_families, vec![AddressType::IPv4]);
        assert_eq!(service.external_traffic_policy, TrafficPolicy::Local);
        assert_eq!(service.internal_traffic_policy, TrafficPolicy::Cluster);
        assert_eq!(
            service.session_affinity,
            SessionAffinity::ClientIp {
                timeout_seconds: 10_800
            }
        );
        let targets: Vec<(&str, &TargetPort, Protocol, Option<u16>)> = service
            .ports
            .iter()
            .map(|port| {
                (
                    port.name.as_str(),
                    &port.target_port,
                    port.protocol,
                    port.node_port,
                )
            })
            .collect();
        assert_eq!(
            targets,
            vec![
                (
                    "http",
                    &TargetPort::Number(8080),
                    Protocol::Tcp,
                    Some(30080)
                ),
                (
                    "grpc",
                    &TargetPort::Name("grpc".to_owned()),
                    Protocol::Tcp,
                    None
                ),
                ("num", &TargetPort::Number(8081), Protocol::Tcp, None),
                ("dns", &TargetPort::Number(53), Protocol::Udp, None),
                ("zero", &TargetPort::Number(82), Protocol::Tcp, None),
            ]
        );
    }

    #[test]
    fn service_cluster_ips() {
        let cases: &[(&str, Value, Vec<IpAddr>, bool)] = &[
            (
                "clusterIPs win",
                json!({"clusterIP": "10.96.0.50", "clusterIPs": ["10.96.0.50", "fd00:10:96::50"]}),
                vec![ip("10.96.0.50"), ip("fd00:10:96::50")],
                false,
            ),
            (
                "clusterIP alone",
                json!({"clusterIP": "10.96.0.50"}),
                vec![ip("10.96.0.50")],
                false,
            ),
            (
                "None is headless",
                json!({"clusterIP": "None"}),
                vec![],
                true,
            ),
            (
                "None in clusterIPs is headless",
                json!({"clusterIP": "None", "clusterIPs": ["None"]}),
                vec![],
                true,
            ),
            (
                "ExternalName has none",
                json!({"type": "ExternalName", "externalName": "db.example.com"}),
                vec![],
                false,
            ),
            (
                "IPv4-mapped IPv6 reads as IPv4, like Go",
                json!({"clusterIP": "::ffff:10.96.0.9"}),
                vec![ip("10.96.0.9")],
                false,
            ),
        ];
        for (name, spec, ips, headless) in cases {
            let service = svc(spec.clone()).expect(name);
            assert_eq!(&service.cluster_ips, ips, "case: {name}");
            assert_eq!(service.headless, *headless, "case: {name}");
        }
    }

    #[test]
    fn service_selector_and_external_name() {
        let none = svc(json!({"clusterIP": "10.96.0.1"})).expect("no selector");
        assert_eq!(none.selector, None);
        let empty = svc(json!({"selector": {}})).expect("empty selector");
        assert_eq!(empty.selector, None, "an empty selector is no selector");
        let external = svc(json!({"type": "ExternalName", "externalName": "db.example.com"}))
            .expect("ExternalName");
        assert_eq!(external.external_name.as_deref(), Some("db.example.com"));
        let stale = svc(json!({"type": "ClusterIP", "externalName": "db.example.com"}))
            .expect("stale externalName");
        assert_eq!(stale.external_name, None);
        let lb = svc(json!({"type": "LoadBalancer"})).expect("LoadBalancer");
        assert_eq!(lb.service_type, ServiceType::LoadBalancer);
    }

    #[test]
    fn service_health_check_node_port() {
        let lb = svc(
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                            "healthCheckNodePort": 32123}),
        )
        .expect("valid");
        assert_eq!(lb.health_check_node_port, Some(32123));
        assert_eq!(svc(json!({})).expect("valid").health_check_node_port, None);
        assert_eq!(
            svc(json!({"healthCheckNodePort": 0}))
                .expect("valid")
                .health_check_node_port,
            None
        );
        assert_eq!(
            svc(json!({"healthCheckNodePort": 70000})).err().as_deref(),
            Some("spec.healthCheckNodePort: expected a port number 1-65535, found 70000")
        );
    }

    #[test]
    fn service_load_balancer_status() {
        let object: core::Service = serde_json::from_value(json!({
            "metadata": {"name": "lb"},
            "spec": {"type": "LoadBalancer", "loadBalancerSourceRanges": [" 10.0.0.0/8 "]},
            "status": {"loadBalancer": {"ingress": [
                {"ip": "172.18.255.200"}, {"hostname": "lb.example.com"}
            ]}},
        }))
        .expect("test Service");
        let service = service(&object).expect("valid");
        assert_eq!(service.key, ObjectKey::new("default", "lb"));
        assert_eq!(service.load_balancer_ips, vec![ip("172.18.255.200")]);
        assert_eq!(service.load_balancer_hostnames, vec!["lb.example.com"]);
        assert_eq!(
            service.load_balancer_source_ranges,
            vec!["10.0.0.0/8".parse::<IpNet>().expect("net")]
        );

        let object: core::Service = serde_json::from_value(json!({
            "metadata": {"name": "lb"},
            "status": {"loadBalancer": {"ingress": [{"hostname": "x"}, {"ip": "nope"}]}},
        }))
        .expect("test Service");
        assert_eq!(
            service_error(&object),
            "status.loadBalancer.ingress[1].ip: expected an IP address, found \"nope\""
        );
    }

    fn service_error(object: &core::Service) -> String {
        service(object)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn missing_name_is_an_error() {
        let object: core::Service =
            serde_json::from_value(json!({"metadata": {"namespace": "shop"}})).expect("test");
        assert_eq!(
            service_error(&object),
            "metadata.name: expected the object's name, found nothing"
        );
        let object: core::Namespace =
            serde_json::from_value(json!({"metadata": {}})).expect("test");
        assert!(namespace(&object).is_err());
    }

    #[test]
    fn pod_fields() {
        let pod = pod_of(json!({
            "metadata": {
                "name": "db-0", "namespace": "shop", "labels": {"app": "db"},
                "deletionTimestamp": "2026-01-02T03:04:05Z",
            },
            "spec": {
                "hostname": "db-0", "subdomain": "db", "nodeName": "kind-worker",
                "initContainers": [
                    {"name": "init", "ports": [{"name": "init", "containerPort": 1}]},
                    {"name": "proxy", "restartPolicy": "Always",
                     "ports": [{"name": "proxy", "containerPort": 15001}]},
                ],
                "containers": [
                    {"name": "pg", "ports": [{"name": "pg", "containerPort": 5432}]},
                    {"name": "metrics", "ports": [
                        {"name": "metrics", "containerPort": 9187, "protocol": "TCP"},
                        {"containerPort": 53, "protocol": "UDP"},
                    ]},
                ],
            },
            "status": {
                "phase": "Running",
                "podIP": "10.244.1.11",
                "podIPs": [{"ip": "10.244.1.11"}, {"ip": "fd00:10:244:1::b"}],
                "conditions": [
                    {"type": "Initialized", "status": "True"},
                    {"type": "Ready", "status": "True"},
                ],
            },
        }))
        .expect("valid Pod");
        assert_eq!(pod.key, ObjectKey::new("shop", "db-0"));
        assert_eq!(pod.ips, vec![ip("10.244.1.11"), ip("fd00:10:244:1::b")]);
        assert_eq!(pod.primary_ip(), Some(ip("10.244.1.11")));
        assert_eq!(pod.phase, PodPhase::Running);
        assert!(pod.ready);
        assert!(pod.terminating);
        assert_eq!(pod.hostname.as_deref(), Some("db-0"));
        assert_eq!(pod.subdomain.as_deref(), Some("db"));
        assert_eq!(pod.node_name.as_deref(), Some("kind-worker"));
        let ports: Vec<(&str, u16, Protocol)> = pod
            .container_ports
            .iter()
            .map(|port| (port.name.as_str(), port.port, port.protocol))
            .collect();
        assert_eq!(
            ports,
            vec![
                ("pg", 5432, Protocol::Tcp),
                ("metrics", 9187, Protocol::Tcp),
                ("", 53, Protocol::Udp),
                ("proxy", 15001, Protocol::Tcp),
            ]
        );
    }

    #[test]
    fn pod_readiness_and_ips() {
        let cases: &[(&str, Value, bool, Vec<IpAddr>, PodPhase)] = &[
            (
                "podIP fallback, Ready False",
                json!({"status": {"phase": "Running", "podIP": "10.244.2.8",
                       "conditions": [{"type": "Ready", "status": "False"}]}}),
                false,
                vec![ip("10.244.2.8")],
                PodPhase::Running,
            ),
            (
                "no status at all",
                json!({}),
                false,
                vec![],
                PodPhase::Unknown,
            ),
            (
                "first Ready condition wins",
                json!({"status": {"phase": "Pending", "conditions": [
                    {"type": "Ready", "status": "Unknown"}, {"type": "Ready", "status": "True"}]}}),
                false,
                vec![],
                PodPhase::Pending,
            ),
            (
                "Succeeded",
                json!({"status": {"phase": "Succeeded", "podIPs": [{"ip": "10.244.1.3"}],
                       "conditions": [{"type": "Ready", "status": "True"}]}}),
                true,
                vec![ip("10.244.1.3")],
                PodPhase::Succeeded,
            ),
        ];
        for (name, value, ready, ips, phase) in cases {
            let pod = pod_of(value.clone()).expect(name);
            assert_eq!(pod.ready, *ready, "case: {name}");
            assert_eq!(&pod.ips, ips, "case: {name}");
            assert_eq!(pod.phase, *phase, "case: {name}");
            assert!(!pod.terminating, "case: {name}");
        }
    }

    #[test]
    fn pod_errors_name_the_field() {
        let cases: &[(&str, Value, &str)] = &[
            (
                "bad podIPs entry",
                json!({"status": {"podIPs": [{"ip": "10.244.1.5"}, {"ip": "fd00::g"}]}}),
                "status.podIPs[1].ip: expected an IP address, found \"fd00::g\"",
            ),
            (
                "bad podIP",
                json!({"status": {"podIP": "10.244.1"}}),
                "status.podIP: expected an IP address, found \"10.244.1\"",
            ),
            (
                "unknown phase",
                json!({"status": {"phase": "Evicted"}}),
                "status.phase: expected Pending, Running, Succeeded, Failed or Unknown, found \"Evicted\"",
            ),
            (
                "container port out of range",
                json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "ports": [
                    {"containerPort": 80}, {"containerPort": 0}]}]}}),
                "spec.containers[1].ports[1].containerPort: expected a port number 1-65535, found 0",
            ),
            (
                "container port protocol",
                json!({"spec": {"containers": [{"name": "a", "ports": [
                    {"containerPort": 80, "protocol": "HTTP"}]}]}}),
                "spec.containers[0].ports[0].protocol: expected TCP, UDP or SCTP, found \"HTTP\"",
            ),
            (
                "sidecar port",
                json!({"spec": {"containers": [], "initContainers": [
                    {"name": "a", "restartPolicy": "Always", "ports": [{"containerPort": 70000}]}]}}),
                "spec.initContainers[0].ports[0].containerPort: expected a port number 1-65535, found 70000",
            ),
        ];
        for (name, value, want) in cases {
            assert_eq!(
                pod_of(value.clone()).err().as_deref(),
                Some(*want),
                "case: {name}"
            );
        }
    }

    #[test]
    fn endpoint_slice_fields() {
        let slice = slice_of(json!({
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.244.1.5"],
                 "conditions": {"ready": true, "serving": true, "terminating": false},
                 "nodeName": "kind-worker", "zone": "a", "hostname": "web-0",
                 "targetRef": {"kind": "Pod", "name": "web-0", "namespace": "shop"}},
                {"addresses": ["172.18.0.2"], "conditions": {},
                 "targetRef": {"kind": "Node", "name": "kind-control-plane"}},
            ],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {}],
        }))
        .expect("valid slice");
        assert_eq!(slice.key, ObjectKey::new("shop", "web-abcde"));
        assert_eq!(slice.service_name.as_deref(), Some("web"));
        assert_eq!(slice.address_type, AddressType::IPv4);
        assert_eq!(slice.endpoints.len(), 2);
        let first = &slice.endpoints[0];
        assert_eq!(first.addresses, vec![ip("10.244.1.5")]);
        assert_eq!(first.hostname.as_deref(), Some("web-0"));
        assert_eq!(first.node_name.as_deref(), Some("kind-worker"));
        assert_eq!(first.zone.as_deref(), Some("a"));
        assert_eq!(first.target_pod.as_deref(), Some("web-0"));
        let second = &slice.endpoints[1];
        assert_eq!(second.target_pod, None, "a Node targetRef is not a pod");
        assert!(second.conditions.ready() && second.conditions.serving());
        assert!(!second.conditions.terminating());
        assert_eq!(
            slice.ports,
            vec![
                EndpointPort {
                    name: "http".to_owned(),
                    protocol: Protocol::Tcp,
                    port: Some(8080)
                },
                EndpointPort {
                    name: String::new(),
                    protocol: Protocol::Tcp,
                    port: None
                },
            ]
        );
    }

    #[test]
    fn endpoint_slice_kinds() {
        let fqdn = slice_of(json!({
            "addressType": "FQDN",
            "endpoints": [{"addresses": ["db.example.com"]}],
        }))
        .expect("FQDN slice");
        assert_eq!(fqdn.address_type, AddressType::Fqdn);
        assert!(fqdn.endpoints[0].addresses.is_empty());

        let placeholder =
            slice_of(json!({"addressType": "IPv6", "endpoints": null, "ports": null}))
                .expect("placeholder");
        assert!(placeholder.endpoints.is_empty() && placeholder.ports.is_empty());

        let object: discovery::EndpointSlice = serde_json::from_value(json!({
            "metadata": {"name": "mirror", "namespace": "shop"}, "addressType": "IPv4",
        }))
        .expect("test");
        assert_eq!(endpoint_slice(&object).expect("valid").service_name, None);
    }

    #[test]
    fn endpoint_slice_trigger_time_annotation() {
        let stamped = |stamp: &str| {
            let object: discovery::EndpointSlice = serde_json::from_value(json!({
                "metadata": {
                    "name": "web-abcde", "namespace": "shop",
                    "annotations": {ANNOTATION_TRIGGER_TIME: stamp},
                },
                "addressType": "IPv4",
            }))
            .expect("test");
            endpoint_slice(&object).expect("valid").trigger_time
        };
        let epoch = |nanos: u64| Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos));
        assert_eq!(
            stamped("2024-01-01T00:00:00Z"),
            epoch(1_704_067_200_000_000_000)
        );
        assert_eq!(
            stamped("2024-01-01T01:00:00.5+01:00"),
            epoch(1_704_067_200_500_000_000)
        );
        // Free-form to the API server: a value that does not parse is no stamp, not an error.
        assert_eq!(stamped("yesterday"), None);
        assert_eq!(
            slice_of(json!({"addressType": "IPv4"}))
                .expect("valid")
                .trigger_time,
            None
        );
    }

    #[test]
    fn endpoint_slice_errors_name_the_field() {
        let cases: &[(&str, Value, &str)] = &[
            (
                "unknown addressType",
                json!({"addressType": "IP"}),
                "addressType: expected IPv4, IPv6 or FQDN, found \"IP\"",
            ),
            (
                "missing addressType",
                json!({}),
                "addressType: expected IPv4, IPv6 or FQDN, found nothing",
            ),
            (
                "bad address",
                json!({"addressType": "IPv4", "endpoints": [
                    {"addresses": ["10.244.1.5"]}, {"addresses": ["10.244.1.256"]}]}),
                "endpoints[1].addresses[0]: expected an IP address, found \"10.244.1.256\"",
            ),
            (
                "wrong family",
                json!({"addressType": "IPv4", "endpoints": [{"addresses": ["fd00::1"]}]}),
                "endpoints[0].addresses[0]: expected an IPv4 address (addressType IPv4), found fd00::1",
            ),
            (
                "port out of range",
                json!({"addressType": "IPv4", "ports": [{"port": 65536}]}),
                "ports[0].port: expected a port number 1-65535, found 65536",
            ),
            (
                "port protocol",
                json!({"addressType": "IPv4", "ports": [{"port": 53, "protocol": "udp"}]}),
                "ports[0].protocol: expected TCP, UDP or SCTP, found \"udp\"",
            ),
        ];
        for (name, value, want) in cases {
            assert_eq!(
                slice_of(value.clone()).err().as_deref(),
                Some(*want),
                "case: {name}"
            );
        }
    }

    #[test]
    fn namespace_labels() {
        let object: core::Namespace = serde_json::from_value(json!({
            "metadata": {"name": "shop", "labels": {"kubernetes.io/metadata.name": "shop"}},
        }))
        .expect("test");
        let namespace = namespace(&object).expect("valid");
        assert_eq!(namespace.name, "shop");
        assert_eq!(
            namespace
                .labels
                .get("kubernetes.io/metadata.name")
                .map(String::as_str),
            Some("shop")
        );
    }
}
