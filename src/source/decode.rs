//! What is decoded of a Pod and an EndpointSlice, by the API watch and by the objects files
//! alike: only the fields [`convert::pod`] and [`convert::endpoint_slice`] read.
//!
//! A Pod as the API server sends it (and as `kubectl get -o json` prints it) is mostly what DNS
//! never reads — `managedFields`, annotations, owner references, every container's image,
//! command, environment, probes, volumes and resources, and the status of each container.
//! Decoded into k8s-openapi's `Pod`, all of that is parsed, allocated and dropped again for
//! each of a large cluster's pods, at the first list and at every change; with `pods verified`
//! at 150,000 pods that was most of the sync. [`PodObject`] is the object reduced to the fields
//! read (serde skips the rest without building it), and [`PodObject::into_pod`] gives the
//! k8s-openapi `Pod` that holds just those, for [`convert::pod`].
//!
//! An EndpointSlice is reduced the same way ([`SliceObject`]): its endpoints' hints and
//! deprecated topology, its owner references and `managedFields` are skipped.
//!
//! The fields read are decoded exactly as k8s-openapi decodes them, so a bad one is reported
//! with the same JSON path and words: only a JSON object is a struct (serde's derive would also
//! take an array of the fields in order), a field that is null or missing takes its default
//! (k8s-openapi's `containers`, `addresses` or a condition's `status` too), and a struct of the
//! wrong type is "expected Container", k8s-openapi's name, not "expected struct Container". A
//! field that is not read is not looked at: a `kubectl` file whose `spec.volumes` is wrong
//! loads, as it would if the field were absent.
//!
//! [`convert::pod`]: crate::model::convert::pod
//! [`convert::endpoint_slice`]: crate::model::convert::endpoint_slice

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::model::ANNOTATION_TRIGGER_TIME;

/// A struct of the fields read of a JSON object, with `impl Deserialize` as k8s-openapi
/// writes its own (see the module documentation): `expecting` names it in errors; each field
/// is `name: Type = "jsonName"`, or `... via Other` for one decoded as `Other` and converted
/// with `From`.
macro_rules! object {
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident expecting $expecting:literal {
            $(
                $(#[$field_attr:meta])*
                $field_vis:vis $field:ident: $type:ty = $json:literal $(via $via:ty)?,
            )*
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Default)]
        $vis struct $name {
            $(
                $(#[$field_attr])*
                $field_vis $field: $type,
            )*
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                #[allow(non_camel_case_types)]
                enum Field {
                    $($field,)*
                    Other,
                }

                impl<'de> serde::Deserialize<'de> for Field {
                    fn deserialize<D: serde::Deserializer<'de>>(
                        deserializer: D,
                    ) -> Result<Self, D::Error> {
                        struct Name;

                        impl serde::de::Visitor<'_> for Name {
                            type Value = Field;

                            fn expecting(
                                &self,
                                f: &mut std::fmt::Formatter<'_>,
                            ) -> std::fmt::Result {
                                f.write_str("field identifier")
                            }

                            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Field, E> {
                                Ok(match name {
                                    $($json => Field::$field,)*
                                    _ => Field::Other,
                                })
                            }
                        }

                        deserializer.deserialize_identifier(Name)
                    }
                }

                struct Fields;

                impl<'de> serde::de::Visitor<'de> for Fields {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($expecting)
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<$name, A::Error> {
                        let mut object = $name::default();
                        while let Some(field) = map.next_key::<Field>()? {
                            match field {
                                $(Field::$field => {
                                    object.$field = object!(@value map, $type $(, $via)?);
                                })*
                                Field::Other => {
                                    map.next_value::<serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(object)
                    }
                }

                deserializer.deserialize_struct(stringify!($name), &[$($json),*], Fields)
            }
        }
    };
    (@value $map:ident, $type:ty) => {
        $map.next_value::<Option<$type>>()?.unwrap_or_default()
    };
    (@value $map:ident, $type:ty, $via:ty) => {
        $map.next_value::<Option<$via>>()?.map(<$type>::from).unwrap_or_default()
    };
}

object! {
    /// A Pod, reduced to what [`convert::pod`](crate::model::convert::pod) reads.
    pub(crate) struct PodObject expecting "Pod" {
        /// `metadata`: name, namespace, labels, `deletionTimestamp` and `resourceVersion`
        /// (the watch resumes from it).
        pub(crate) metadata: ObjectMeta = "metadata" via Metadata,
        spec: Option<PodSpec> = "spec",
        status: Option<PodStatus> = "status",
    }
}

object! {
    /// The fields read of `metadata`: the trigger-time annotation is the only one kept.
    struct Metadata expecting "ObjectMeta" {
        name: Option<String> = "name",
        namespace: Option<String> = "namespace",
        labels: Option<BTreeMap<String, String>> = "labels",
        annotations: Option<BTreeMap<String, String>> = "annotations",
        deletion_timestamp: Option<Time> = "deletionTimestamp",
        resource_version: Option<String> = "resourceVersion",
    }
}

impl From<Metadata> for ObjectMeta {
    fn from(meta: Metadata) -> Self {
        // The one annotation read (an EndpointSlice's trigger time).
        let annotations = meta.annotations.and_then(|mut all| {
            let value = all.remove(ANNOTATION_TRIGGER_TIME)?;
            Some(BTreeMap::from([(
                ANNOTATION_TRIGGER_TIME.to_owned(),
                value,
            )]))
        });
        ObjectMeta {
            name: meta.name,
            namespace: meta.namespace,
            labels: meta.labels,
            annotations,
            deletion_timestamp: meta.deletion_timestamp,
            resource_version: meta.resource_version,
            ..ObjectMeta::default()
        }
    }
}

object! {
    struct PodSpec expecting "PodSpec" {
        hostname: Option<String> = "hostname",
        subdomain: Option<String> = "subdomain",
        node_name: Option<String> = "nodeName",
        host_network: Option<bool> = "hostNetwork",
        containers: Vec<Container> = "containers",
        init_containers: Option<Vec<Container>> = "initContainers",
    }
}

object! {
    struct Container expecting "Container" {
        name: String = "name",
        ports: Option<Vec<ContainerPort>> = "ports",
        restart_policy: Option<String> = "restartPolicy",
    }
}

object! {
    struct ContainerPort expecting "ContainerPort" {
        name: Option<String> = "name",
        container_port: i32 = "containerPort",
        protocol: Option<String> = "protocol",
    }
}

object! {
    struct PodStatus expecting "PodStatus" {
        phase: Option<String> = "phase",
        pod_ip: Option<String> = "podIP",
        pod_ips: Option<Vec<PodIp>> = "podIPs",
        conditions: Option<Vec<Condition>> = "conditions",
    }
}

object! {
    struct PodIp expecting "PodIP" {
        ip: String = "ip",
    }
}

object! {
    struct Condition expecting "PodCondition" {
        type_: String = "type",
        status: String = "status",
    }
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
                containers: spec.containers.into_iter().map(container).collect(),
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

object! {
    /// An EndpointSlice, reduced to what
    /// [`convert::endpoint_slice`](crate::model::convert::endpoint_slice) reads.
    pub(crate) struct SliceObject expecting "EndpointSlice" {
        /// `metadata`: name, namespace, labels, the trigger-time annotation and
        /// `resourceVersion`.
        pub(crate) metadata: ObjectMeta = "metadata" via Metadata,
        address_type: String = "addressType",
        endpoints: Option<Vec<SliceEndpoint>> = "endpoints",
        ports: Option<Vec<SlicePort>> = "ports",
    }
}

object! {
    struct SliceEndpoint expecting "Endpoint" {
        addresses: Vec<String> = "addresses",
        conditions: Option<SliceConditions> = "conditions",
        hostname: Option<String> = "hostname",
        node_name: Option<String> = "nodeName",
        zone: Option<String> = "zone",
        target_ref: Option<TargetRef> = "targetRef",
    }
}

object! {
    struct SliceConditions expecting "EndpointConditions" {
        ready: Option<bool> = "ready",
        serving: Option<bool> = "serving",
        terminating: Option<bool> = "terminating",
    }
}

object! {
    struct TargetRef expecting "ObjectReference" {
        kind: Option<String> = "kind",
        name: Option<String> = "name",
    }
}

object! {
    struct SlicePort expecting "EndpointPort" {
        name: Option<String> = "name",
        protocol: Option<String> = "protocol",
        port: Option<i32> = "port",
    }
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
