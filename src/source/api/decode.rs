//! What the watch decodes of a Pod and an EndpointSlice: only the fields [`convert::pod`]
//! and [`convert::endpoint_slice`] read.
//!
//! A Pod as the API server sends it is mostly what DNS never reads — `managedFields`,
//! annotations, owner references, every container's image, command, environment, probes,
//! volumes and resources, and the status of each container. Decoded into k8s-openapi's
//! `Pod`, all of that is parsed, allocated and dropped again for each of a large cluster's
//! pods, at the first list and at every change; with `pods verified` at 150,000 pods that
//! was most of the sync. [`PodObject`] is the object reduced to the fields read (serde skips
//! the rest without building it), and [`PodObject::into_pod`] gives the k8s-openapi `Pod` that
//! holds just those, for [`convert::pod`] — so a bad field is reported with the same path and
//! words as from a `kubectl get -o json` file.
//!
//!
//! An EndpointSlice is reduced the same way ([`SliceObject`]): its endpoints' hints and
//! deprecated topology, its owner references and `managedFields` are skipped.
//!
//! [`convert::pod`]: crate::model::convert::pod
//! [`convert::endpoint_slice`]: crate::model::convert::endpoint_slice

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Deserializer};

use crate::model::ANNOTATION_TRIGGER_TIME;

/// A Pod, reduced to what [`convert::pod`](crate::model::convert::pod) reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct PodObject {
    /// `metadata`: name, namespace, labels, `deletionTimestamp` and `resourceVersion` (the
    /// watch resumes from it).
    #[serde(default, deserialize_with = "metadata")]
    pub(crate) metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<PodSpec>,
    #[serde(default)]
    status: Option<PodStatus>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    deletion_timestamp: Option<Time>,
    #[serde(default)]
    resource_version: Option<String>,
}

fn metadata<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    let meta = Option::<Metadata>::deserialize(deserializer)?.unwrap_or_default();
    // The one annotation read (an EndpointSlice's trigger time).
    let annotations = meta.annotations.and_then(|mut all| {
        let value = all.remove(ANNOTATION_TRIGGER_TIME)?;
        Some(BTreeMap::from([(
            ANNOTATION_TRIGGER_TIME.to_owned(),
            value,
        )]))
    });
    Ok(ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        labels: meta.labels,
        annotations,
        deletion_timestamp: meta.deletion_timestamp,
        resource_version: meta.resource_version,
        ..ObjectMeta::default()
    })
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodSpec {
    #[serde(default)]
    hostname: Option<String>,
    #[serde(default)]
    subdomain: Option<String>,
    #[serde(default)]
    node_name: Option<String>,
    #[serde(default)]
    host_network: Option<bool>,
    #[serde(default)]
    containers: Option<Vec<Container>>,
    #[serde(default)]
    init_containers: Option<Vec<Container>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Container {
    #[serde(default)]
    name: String,
    #[serde(default)]
    ports: Option<Vec<ContainerPort>>,
    #[serde(default)]
    restart_policy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerPort {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    container_port: i32,
    #[serde(default)]
    protocol: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodStatus {
    #[serde(default)]
    phase: Option<String>,
    #[serde(default, rename = "podIP")]
    pod_ip: Option<String>,
    #[serde(default, rename = "podIPs")]
    pod_ips: Option<Vec<PodIp>>,
    #[serde(default)]
    conditions: Option<Vec<Condition>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct PodIp {
    #[serde(default)]
    ip: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Condition {
    #[serde(default, rename = "type")]
    type_: String,
    #[serde(default)]
    status: String,
}

impl PodObject {
    /// The k8s-openapi Pod holding the fields read, and nothing else (moved, not copied).
    pub(crate) fn into_pod(self) -> core::Pod {
        let container = |c: Container| core::Container {
            name: c.name,
            restart_policy: c.restart_policy,
            ports: c.ports.map(|ports| {
                ports
                    .into_iter()
                    .map(|port| core::ContainerPort {
                        name: port.name,
                        container_port: port.container_port,
                        protocol: port.protocol,
                        ..core::ContainerPort::default()
                    })
                    .collect()
            }),
            ..core::Container::default()
        };
        core::Pod {
            metadata: self.metadata,
            spec: self.spec.map(|spec| core::PodSpec {
                hostname: spec.hostname,
                subdomain: spec.subdomain,
                node_name: spec.node_name,
                host_network: spec.host_network,
                containers: spec
                    .containers
                    .into_iter()
                    .flatten()
                    .map(container)
                    .collect(),
                init_containers: spec
                    .init_containers
                    .map(|containers| containers.into_iter().map(container).collect()),
                ..core::PodSpec::default()
            }),
            status: self.status.map(|status| core::PodStatus {
                phase: status.phase,
                pod_ip: status.pod_ip,
                pod_ips: status.pod_ips.map(|ips| {
                    ips.into_iter()
                        .map(|ip| core::PodIP { ip: ip.ip })
                        .collect()
                }),
                conditions: status.conditions.map(|conditions| {
                    conditions
                        .into_iter()
                        .map(|condition| core::PodCondition {
                            type_: condition.type_,
                            status: condition.status,
                            ..core::PodCondition::default()
                        })
                        .collect()
                }),
                ..core::PodStatus::default()
            }),
        }
    }
}

/// An EndpointSlice, reduced to what
/// [`convert::endpoint_slice`](crate::model::convert::endpoint_slice) reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SliceObject {
    /// `metadata`: name, namespace, labels, the trigger-time annotation and
    /// `resourceVersion`.
    #[serde(default, deserialize_with = "metadata")]
    pub(crate) metadata: ObjectMeta,
    #[serde(default)]
    address_type: String,
    #[serde(default)]
    endpoints: Option<Vec<SliceEndpoint>>,
    #[serde(default)]
    ports: Option<Vec<SlicePort>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SliceEndpoint {
    #[serde(default)]
    addresses: Vec<String>,
    #[serde(default)]
    conditions: Option<SliceConditions>,
    #[serde(default)]
    hostname: Option<String>,
    #[serde(default)]
    node_name: Option<String>,
    #[serde(default)]
    zone: Option<String>,
    #[serde(default)]
    target_ref: Option<TargetRef>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct SliceConditions {
    #[serde(default)]
    ready: Option<bool>,
    #[serde(default)]
    serving: Option<bool>,
    #[serde(default)]
    terminating: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct TargetRef {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct SlicePort {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    protocol: Option<String>,
    #[serde(default)]
    port: Option<i32>,
}

impl SliceObject {
    /// The k8s-openapi EndpointSlice holding the fields read, and nothing else (moved, not
    /// copied).
    pub(crate) fn into_slice(self) -> discovery::EndpointSlice {
        discovery::EndpointSlice {
            metadata: self.metadata,
            address_type: self.address_type,
            endpoints: self.endpoints.map(|endpoints| {
                endpoints
                    .into_iter()
                    .map(|endpoint| discovery::Endpoint {
                        addresses: endpoint.addresses,
                        conditions: endpoint.conditions.map(|c| discovery::EndpointConditions {
                            ready: c.ready,
                            serving: c.serving,
                            terminating: c.terminating,
                        }),
                        hostname: endpoint.hostname,
                        node_name: endpoint.node_name,
                        zone: endpoint.zone,
                        target_ref: endpoint.target_ref.map(|target| core::ObjectReference {
                            kind: target.kind,
                            name: target.name,
                            ..core::ObjectReference::default()
                        }),
                        ..discovery::Endpoint::default()
                    })
                    .collect()
            }),
            ports: self.ports.map(|ports| {
                ports
                    .into_iter()
                    .map(|port| discovery::EndpointPort {
                        name: port.name,
                        protocol: port.protocol,
                        port: port.port,
                        ..discovery::EndpointPort::default()
                    })
                    .collect()
            }),
        }
    }
}

namespaced_resource!(
    SliceObject,
    "EndpointSlice",
    "discovery.k8s.io",
    "v1",
    "endpointslices"
);

namespaced_resource!(PodObject, "Pod", "", "v1", "pods");

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::PathBuf;

    use serde_json::Value;

    use super::*;
    use crate::model::convert;

    /// The items of `kind` in every JSON fixture.
    fn fixture_items(kind: &str) -> Vec<Value> {
        let mut items: Vec<Value> = Vec::new();
        let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        for entry in std::fs::read_dir(&fixtures).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let Ok(document) = serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap())
            else {
                continue;
            };
            let all = document["items"].as_array().cloned().unwrap_or_default();
            items.extend(all.into_iter().filter(|item| item["kind"] == kind));
        }
        items
    }

    /// Every slice of the fixtures, and slices with each field the conversion reads set,
    /// unset or wrong: decoded whole or reduced, they convert alike.
    #[test]
    fn a_reduced_slice_converts_exactly_as_the_whole_one() {
        let mut slices = fixture_items("EndpointSlice");
        assert!(
            slices.len() >= 10,
            "{} slices in the fixtures",
            slices.len()
        );
        let full = serde_json::json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {
                "name": "web-abc", "namespace": "shop", "resourceVersion": "7",
                "labels": {"kubernetes.io/service-name": "web"},
                "annotations": {
                    "endpoints.kubernetes.io/last-change-trigger-time": "2026-12-01T10:00:00Z",
                    "other": "x"},
                "managedFields": [{"manager": "kube-controller-manager"}],
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                     "uid": "1"}],
            },
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.244.1.5"], "hostname": "web-0", "nodeName": "n1",
                 "zone": "a", "conditions": {"ready": true, "serving": true,
                                             "terminating": false},
                 "targetRef": {"kind": "Pod", "name": "web-0", "namespace": "shop",
                               "uid": "2"},
                 "hints": {"forZones": [{"name": "a"}]}},
                {"addresses": ["10.244.2.6"], "targetRef": {"kind": "Node", "name": "n2"}},
            ],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"port": 53,
                       "protocol": "UDP"}],
        });
        slices.push(full.clone());
        let mut edit = |pointer: &str, value: Value| {
            let mut slice = full.clone();
            *slice.pointer_mut(pointer).unwrap() = value;
            slices.push(slice);
        };
        edit("/addressType", "IPv5".into());
        edit("/addressType", "FQDN".into());
        edit("/endpoints/0/addresses/0", "fd00::1".into());
        edit("/endpoints/0/conditions", Value::Null);
        edit("/ports/0/port", 70000.into());
        edit("/ports/1/protocol", "QUIC".into());
        edit(
            "/metadata/annotations/endpoints.kubernetes.io~1last-change-trigger-time",
            "soon".into(),
        );
        edit("/metadata/annotations", Value::Null);
        edit("/endpoints", Value::Null);
        edit("/ports", Value::Null);
        for slice in &slices {
            let whole: discovery::EndpointSlice = serde_json::from_value(slice.clone()).unwrap();
            let reduced: SliceObject = serde_json::from_value(slice.clone()).unwrap();
            assert_eq!(
                convert::endpoint_slice(&reduced.clone().into_slice()),
                convert::endpoint_slice(&whole),
                "{slice:#}"
            );
            assert_eq!(
                reduced.metadata.resource_version,
                whole.metadata.resource_version
            );
        }
    }

    /// Every pod of the fixtures, and pods with each field the conversion reads set,
    /// unset or wrong: decoded whole or reduced, they convert to the same pod or fail with
    /// the same error.
    #[test]
    fn a_reduced_pod_converts_exactly_as_the_whole_one() {
        let mut pods = fixture_items("Pod");
        assert!(pods.len() >= 10, "{} pods in the fixtures", pods.len());
        let full = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "web-0", "namespace": "shop", "labels": {"app": "web"},
                "deletionTimestamp": "2026-12-01T10:00:00Z", "resourceVersion": "42",
                "annotations": {"a": "b"}, "managedFields": [{"manager": "kubelet"}],
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                     "name": "web", "uid": "1"}],
            },
            "spec": {
                "hostname": "web-0", "subdomain": "web", "nodeName": "node-1",
                "hostNetwork": true,
                "containers": [{"name": "app", "image": "nginx", "env": [{"name": "A"}],
                                "ports": [{"name": "http", "containerPort": 8080},
                                          {"containerPort": 53, "protocol": "UDP"}]}],
                "initContainers": [
                    {"name": "sidecar", "restartPolicy": "Always",
                     "ports": [{"name": "metrics", "containerPort": 9090}]},
                    {"name": "init", "ports": [{"name": "no", "containerPort": 1}]}],
                "volumes": [{"name": "data", "emptyDir": {}}],
            },
            "status": {
                "phase": "Running", "podIP": "10.244.1.5",
                "podIPs": [{"ip": "10.244.1.5"}, {"ip": "fd00::5"}],
                "conditions": [{"type": "Ready", "status": "True"},
                               {"type": "PodScheduled", "status": "True"}],
                "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0,
                                       "image": "nginx", "imageID": ""}],
            },
        });
        pods.push(full.clone());
        let mut edit = |pointer: &str, value: Value| {
            let mut pod = full.clone();
            *pod.pointer_mut(pointer).unwrap() = value;
            pods.push(pod);
        };
        edit("/status/phase", "Sleeping".into());
        edit("/status/podIPs/1/ip", "not-an-ip".into());
        edit("/status/podIPs", Value::Array(Vec::new()));
        edit("/status/podIP", "10.244.1.999".into());
        edit("/spec/containers/0/ports/0/containerPort", 70000.into());
        edit("/spec/containers/0/ports/1/protocol", "QUIC".into());
        edit("/status/conditions/0/status", "False".into());
        edit("/metadata/name", "".into());
        edit("/spec", Value::Null);
        edit("/status", Value::Null);
        edit("/metadata/labels", Value::Null);

        for pod in &pods {
            let whole: core::Pod = serde_json::from_value(pod.clone()).unwrap();
            let reduced: PodObject = serde_json::from_value(pod.clone()).unwrap();
            assert_eq!(
                convert::pod(&reduced.clone().into_pod()),
                convert::pod(&whole),
                "{pod:#}"
            );
            assert_eq!(
                reduced.metadata.resource_version,
                whole.metadata.resource_version
            );
        }
    }
}
