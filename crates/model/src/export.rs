//! The model written back out as Kubernetes objects: the inverse of [`super::convert`].
//!
//! A [`Cluster`] becomes a `kubectl get -o json` style `List` holding only the fields the
//! model keeps, so that reading it back with the objects loader gives the same `Cluster`.
//! This is the format of the `snapshot` file (the API watch's last known state, persisted),
//! which is therefore also a valid `objects` file and `--objects` input.

use std::collections::BTreeMap;
use std::time::SystemTime;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use super::serviceimport;
use super::{
    ANNOTATION_TRIGGER_TIME, AddressType, Cluster, EndpointSlice, Kind, LABEL_SERVICE_NAME, Labels,
    Namespace, ObjectKey, ObjectRef, Pod, PodPhase, Service, ServiceType, SessionAffinity,
    TargetPort, TrafficPolicy,
};

/// Writes `cluster` as a `v1` `List` of Namespaces, Services, EndpointSlices, Pods and
/// ServiceImports, in that order and in key order within each kind, to `out`. `now` stamps
/// the deletion time of terminating pods (the model keeps only that they are terminating).
///
/// Each object is turned into its Kubernetes form and written as it comes, so writing costs
/// one object's worth of memory, not a JSON tree of the whole cluster (at 10,000 Services
/// that tree was several times the cluster itself, and the highest mark of a re-list).
pub fn write_list(
    cluster: &Cluster,
    now: SystemTime,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    out.write_all(
        br#"{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":["#,
    )?;
    let mut first = true;
    for ns in cluster.namespaces.values() {
        write_item(out, &mut first, &namespace(ns))?;
    }
    for svc in cluster.services.values() {
        write_item(out, &mut first, &service(svc))?;
    }
    for slice in cluster.endpoint_slices.values() {
        write_item(out, &mut first, &endpoint_slice(slice))?;
    }
    for p in cluster.pods.values() {
        write_item(out, &mut first, &pod(p, now))?;
    }
    for import in cluster.service_imports.values() {
        write_item(out, &mut first, &service_import(import))?;
    }
    out.write_all(b"]}")
}

/// Writes one object as [`write_list`] writes it among the items (`now` as there).
pub fn write_object(
    object: ObjectRef<'_>,
    now: SystemTime,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut first = true;
    match object {
        ObjectRef::Namespace(ns) => write_item(out, &mut first, &namespace(ns)),
        ObjectRef::Service(svc) => write_item(out, &mut first, &service(svc)),
        ObjectRef::EndpointSlice(slice) => write_item(out, &mut first, &endpoint_slice(slice)),
        ObjectRef::Pod(p) => write_item(out, &mut first, &pod(p, now)),
        ObjectRef::ServiceImport(import) => write_item(out, &mut first, &service_import(import)),
    }
}

/// Writes the identity of the object of `kind` at `key` alone: its `apiVersion`, `kind`
/// and `metadata` name and namespace (the object of a watch's `DELETED` event, trimmed).
pub fn write_reference(
    kind: Kind,
    key: &ObjectKey,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut metadata = serde_json::Map::new();
    metadata.insert("name".into(), json!(&*key.name));
    if !key.namespace.is_empty() {
        metadata.insert("namespace".into(), json!(&*key.namespace));
    }
    let reference =
        json!({"apiVersion": kind.api_version(), "kind": kind.name(), "metadata": metadata});
    serde_json::to_writer(out, &reference).map_err(std::io::Error::other)
}

/// One item of the list (k8s-openapi writes its `apiVersion` and `kind`), after a comma
/// unless it is the `first`.
fn write_item<T: serde::Serialize>(
    out: &mut dyn std::io::Write,
    first: &mut bool,
    object: &T,
) -> std::io::Result<()> {
    if !std::mem::take(first) {
        out.write_all(b",")?;
    }
    serde_json::to_writer(out, object).map_err(std::io::Error::other)
}

/// A ServiceImport as JSON, with its `apiVersion` and `kind`.
fn service_import(import: &crate::ServiceImport) -> Value {
    let mut value = serde_json::to_value(serviceimport::to_object(import)).unwrap_or_default();
    if let Value::Object(map) = &mut value {
        map.insert("apiVersion".into(), json!(serviceimport::API_VERSION));
        map.insert("kind".into(), json!("ServiceImport"));
    }
    value
}

fn meta(key: Option<&ObjectKey>, name: &str, labels: &Labels) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: key.map(|key| key.namespace.to_string()),
        labels: (!labels.is_empty()).then(|| labels.clone()),
        ..ObjectMeta::default()
    }
}

fn namespace(ns: &Namespace) -> core::Namespace {
    core::Namespace {
        metadata: meta(None, &ns.name, &ns.labels),
        ..core::Namespace::default()
    }
}

fn service(svc: &Service) -> core::Service {
    let (cluster_ip, cluster_ips) = if svc.headless {
        (Some("None".to_owned()), Some(vec!["None".to_owned()]))
    } else if svc.cluster_ips.is_empty() {
        (None, None)
    } else {
        let ips: Vec<String> = svc.cluster_ips.iter().map(ToString::to_string).collect();
        (ips.first().cloned(), Some(ips))
    };
    let ports: Vec<core::ServicePort> = svc
        .ports
        .iter()
        .map(|port| core::ServicePort {
            name: (!port.name.is_empty()).then(|| port.name.clone()),
            protocol: Some(port.protocol.as_str().to_owned()),
            port: i32::from(port.port),
            target_port: Some(match &port.target_port {
                TargetPort::Number(number) => IntOrString::Int(i32::from(*number)),
                TargetPort::Name(name) => IntOrString::String(name.clone()),
            }),
            node_port: port.node_port.map(i32::from),
            ..core::ServicePort::default()
        })
        .collect();
    let type_ = match svc.service_type {
        ServiceType::ClusterIp => "ClusterIP",
        ServiceType::NodePort => "NodePort",
        ServiceType::LoadBalancer => "LoadBalancer",
        ServiceType::ExternalName => "ExternalName",
    };
    let policy = |policy: TrafficPolicy| match policy {
        TrafficPolicy::Cluster => "Cluster".to_owned(),
        TrafficPolicy::Local => "Local".to_owned(),
    };
    let (session_affinity, session_affinity_config) = match svc.session_affinity {
        SessionAffinity::None => ("None", None),
        SessionAffinity::ClientIp { timeout_seconds } => (
            "ClientIP",
            Some(core::SessionAffinityConfig {
                client_ip: Some(core::ClientIPConfig {
                    timeout_seconds: i32::try_from(timeout_seconds).ok(),
                }),
            }),
        ),
    };
    let strings = |ips: &[std::net::IpAddr]| {
        (!ips.is_empty()).then(|| ips.iter().map(ToString::to_string).collect::<Vec<_>>())
    };
    let ingress: Vec<core::LoadBalancerIngress> = svc
        .load_balancer_ips
        .iter()
        .map(|ip| core::LoadBalancerIngress {
            ip: Some(ip.to_string()),
            ..core::LoadBalancerIngress::default()
        })
        .chain(
            svc.load_balancer_hostnames
                .iter()
                .map(|host| core::LoadBalancerIngress {
                    hostname: Some(host.clone()),
                    ..core::LoadBalancerIngress::default()
                }),
        )
        .collect();
    let status = (!ingress.is_empty()).then(|| core::ServiceStatus {
        load_balancer: Some(core::LoadBalancerStatus {
            ingress: Some(ingress),
        }),
        ..core::ServiceStatus::default()
    });
    core::Service {
        metadata: meta(Some(&svc.key), &svc.key.name, &svc.labels),
        spec: Some(core::ServiceSpec {
            type_: Some(type_.to_owned()),
            selector: svc.selector.clone(),
            cluster_ip,
            cluster_ips,
            external_name: svc.external_name.clone(),
            ports: (!ports.is_empty()).then_some(ports),
            publish_not_ready_addresses: svc.publish_not_ready_addresses.then_some(true),
            ip_families: (!svc.ip_families.is_empty()).then(|| {
                svc.ip_families
                    .iter()
                    .map(|family| family_name(*family).to_owned())
                    .collect()
            }),
            external_traffic_policy: Some(policy(svc.external_traffic_policy)),
            internal_traffic_policy: Some(policy(svc.internal_traffic_policy)),
            session_affinity: Some(session_affinity.to_owned()),
            session_affinity_config,
            external_ips: strings(&svc.external_ips),
            load_balancer_source_ranges: (!svc.load_balancer_source_ranges.is_empty()).then(|| {
                svc.load_balancer_source_ranges
                    .iter()
                    .map(ToString::to_string)
                    .collect()
            }),
            health_check_node_port: svc.health_check_node_port.map(i32::from),
            ..core::ServiceSpec::default()
        }),
        status,
    }
}

fn family_name(family: AddressType) -> &'static str {
    match family {
        AddressType::IPv4 => "IPv4",
        AddressType::IPv6 => "IPv6",
        AddressType::Fqdn => "FQDN",
    }
}

fn endpoint_slice(slice: &EndpointSlice) -> discovery::EndpointSlice {
    let mut labels = slice.labels.clone();
    if let Some(service) = &slice.service_name {
        labels.insert(LABEL_SERVICE_NAME.to_owned(), service.clone());
    }
    let mut metadata = meta(Some(&slice.key), &slice.key.name, &labels);
    if let Some(time) = slice.trigger_time
        && let Ok(stamp) = jiff::Timestamp::try_from(time)
    {
        metadata.annotations = Some(BTreeMap::from([(
            ANNOTATION_TRIGGER_TIME.to_owned(),
            stamp.to_string(),
        )]));
    }
    let endpoints = slice
        .endpoints
        .iter()
        .map(|endpoint| discovery::Endpoint {
            addresses: endpoint.addresses.iter().map(ToString::to_string).collect(),
            conditions: Some(discovery::EndpointConditions {
                ready: endpoint.conditions.ready,
                serving: endpoint.conditions.serving,
                terminating: endpoint.conditions.terminating,
            }),
            hostname: endpoint.hostname.as_deref().map(str::to_owned),
            node_name: endpoint.node_name().map(str::to_owned),
            zone: endpoint.zone().map(str::to_owned),
            target_ref: endpoint.target_pod().map(|pod| core::ObjectReference {
                kind: Some("Pod".to_owned()),
                name: Some(pod.to_string()),
                namespace: Some(slice.key.namespace.to_string()),
                ..core::ObjectReference::default()
            }),
            ..discovery::Endpoint::default()
        })
        .collect::<Vec<_>>();
    let ports = slice
        .ports
        .iter()
        .map(|port| discovery::EndpointPort {
            name: Some(port.name.clone()),
            protocol: Some(port.protocol.as_str().to_owned()),
            port: port.port.map(i32::from),
            ..discovery::EndpointPort::default()
        })
        .collect::<Vec<_>>();
    discovery::EndpointSlice {
        metadata,
        address_type: family_name(slice.address_type).to_owned(),
        endpoints: Some(endpoints),
        ports: Some(ports),
    }
}

fn pod(pod: &Pod, now: SystemTime) -> core::Pod {
    let details = pod.details();
    let mut metadata = meta(Some(&pod.key), &pod.key.name, &details.labels);
    if pod.terminating {
        metadata.deletion_timestamp = jiff::Timestamp::try_from(now).ok().map(Time);
    }
    let phase = match pod.phase {
        PodPhase::Pending => "Pending",
        PodPhase::Running => "Running",
        PodPhase::Succeeded => "Succeeded",
        PodPhase::Failed => "Failed",
        PodPhase::Unknown => "Unknown",
    };
    let ports: Vec<core::ContainerPort> = details
        .container_ports
        .iter()
        .map(|port| core::ContainerPort {
            name: (!port.name.is_empty()).then(|| port.name.clone()),
            container_port: i32::from(port.port),
            protocol: Some(port.protocol.as_str().to_owned()),
            ..core::ContainerPort::default()
        })
        .collect();
    core::Pod {
        metadata,
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                name: "main".to_owned(),
                ports: (!ports.is_empty()).then_some(ports),
                ..core::Container::default()
            }],
            hostname: details.hostname.as_deref().map(str::to_owned),
            subdomain: details.subdomain.as_deref().map(str::to_owned),
            node_name: details.node_name.as_deref().map(str::to_owned),
            host_network: pod.host_network.then_some(true),
            ..core::PodSpec::default()
        }),
        status: Some(core::PodStatus {
            phase: Some(phase.to_owned()),
            pod_ip: pod.ips.first().map(ToString::to_string),
            pod_ips: (!pod.ips.is_empty()).then(|| {
                pod.ips
                    .iter()
                    .map(|ip| core::PodIP { ip: ip.to_string() })
                    .collect()
            }),
            conditions: Some(vec![core::PodCondition {
                type_: "Ready".to_owned(),
                status: if pod.ready { "True" } else { "False" }.to_owned(),
                ..core::PodCondition::default()
            }]),
            ..core::PodStatus::default()
        }),
    }
}
