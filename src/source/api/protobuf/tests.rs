//! The protobuf decoder against the JSON one: every object of the fixtures, and generated
//! ones, encoded as the API server's Go code encodes them (every plain field written, empty
//! or not; a pointer field only when set; fields the zone never reads in between), decode
//! to the same model as their JSON does.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::model::convert;
use crate::source::decode::{PodObject, SliceObject};

/// A message being written, as gogo-protobuf's generated `Marshal` writes one.
#[derive(Default)]
struct Out(Vec<u8>);

impl Out {
    fn varint(&mut self, mut value: u64) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }
    fn key(&mut self, number: u32, wire: u8) {
        self.varint(u64::from(number) << 3 | u64::from(wire));
    }
    fn bytes(&mut self, number: u32, bytes: &[u8]) -> &mut Self {
        self.key(number, 2);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
        self
    }
    /// A plain Go string: written even when empty.
    fn string(&mut self, number: u32, value: Option<&str>) -> &mut Self {
        self.bytes(number, value.unwrap_or_default().as_bytes())
    }
    /// A pointer: written only when set.
    fn some(&mut self, number: u32, value: Option<&str>) -> &mut Self {
        if let Some(value) = value {
            self.bytes(number, value.as_bytes());
        }
        self
    }
    fn int(&mut self, number: u32, value: i64) -> &mut Self {
        self.key(number, 0);
        self.varint(value as u64);
        self
    }
    fn message(&mut self, number: u32, message: Out) -> &mut Self {
        self.bytes(number, &message.0)
    }
    fn map(&mut self, number: u32, map: Option<&BTreeMap<String, String>>) -> &mut Self {
        for (key, value) in map.into_iter().flatten() {
            let mut entry = Out::default();
            entry.string(1, Some(key)).string(2, Some(value));
            self.message(number, entry);
        }
        self
    }
    /// What the zone never reads: a string, a number, a fixed64 and a nested message.
    fn noise(&mut self, number: u32) -> &mut Self {
        self.string(number, Some("skipped"));
        self.int(number, -5);
        self.key(number, 1);
        self.0.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let mut inner = Out::default();
        inner.string(1, Some("deep")).int(2, 300);
        self.message(number, inner)
    }
}

fn meta(meta: &ObjectMeta) -> Out {
    let mut out = Out::default();
    out.string(1, meta.name.as_deref())
        .string(2, None)
        .string(3, meta.namespace.as_deref())
        .string(5, Some("0c6c4a36-uid"))
        .string(6, meta.resource_version.as_deref())
        .map(11, meta.labels.as_ref())
        .map(12, meta.annotations.as_ref())
        .noise(17);
    if meta.deletion_timestamp.is_some() {
        let mut time = Out::default();
        time.int(1, 1_700_000_000).int(2, 5);
        out.message(9, time);
    }
    out
}

fn strings(out: &mut Out, number: u32, values: Option<&Vec<String>>) {
    for value in values.into_iter().flatten() {
        out.string(number, Some(value));
    }
}

fn encode_service(service: &core::Service) -> Vec<u8> {
    let mut out = Out::default();
    out.message(1, meta(&service.metadata));
    let default = core::ServiceSpec::default();
    let spec = service.spec.as_ref().unwrap_or(&default);
    let mut s = Out::default();
    for port in spec.ports.iter().flatten() {
        let mut p = Out::default();
        p.string(1, port.name.as_deref())
            .string(2, port.protocol.as_deref())
            .int(3, port.port.into());
        let mut target = Out::default();
        match &port.target_port {
            Some(IntOrString::String(name)) => target.int(1, 1).int(2, 0).string(3, Some(name)),
            Some(IntOrString::Int(number)) => {
                target.int(1, 0).int(2, (*number).into()).string(3, None)
            }
            None => target.int(1, 0).int(2, 0).string(3, None),
        };
        p.message(4, target)
            .int(5, port.node_port.unwrap_or(0).into())
            .some(6, port.app_protocol.as_deref());
        s.message(1, p);
    }
    s.map(2, spec.selector.as_ref())
        .string(3, spec.cluster_ip.as_deref())
        .string(4, spec.type_.as_deref());
    strings(&mut s, 5, spec.external_ips.as_ref());
    s.string(7, spec.session_affinity.as_deref())
        .string(8, spec.load_balancer_ip.as_deref());
    strings(&mut s, 9, spec.load_balancer_source_ranges.as_ref());
    s.string(10, spec.external_name.as_deref())
        .string(11, spec.external_traffic_policy.as_deref())
        .int(12, spec.health_check_node_port.unwrap_or(0).into())
        .int(13, spec.publish_not_ready_addresses.unwrap_or(false).into());
    if let Some(config) = &spec.session_affinity_config {
        let mut c = Out::default();
        if let Some(client_ip) = &config.client_ip {
            let mut ip = Out::default();
            if let Some(timeout) = client_ip.timeout_seconds {
                ip.int(1, timeout.into());
            }
            c.message(1, ip);
        }
        s.message(14, c);
    }
    s.some(17, spec.ip_family_policy.as_deref());
    strings(&mut s, 18, spec.cluster_ips.as_ref());
    strings(&mut s, 19, spec.ip_families.as_ref());
    s.some(22, spec.internal_traffic_policy.as_deref())
        .noise(23);
    out.message(2, s);
    let mut status = Out::default();
    if let Some(lb) = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
    {
        let mut l = Out::default();
        for ingress in lb.ingress.iter().flatten() {
            let mut i = Out::default();
            i.string(1, ingress.ip.as_deref())
                .string(2, ingress.hostname.as_deref());
            l.message(1, i);
        }
        status.message(1, l);
    }
    out.message(3, status);
    out.0
}

fn encode_slice(slice: &discovery::EndpointSlice) -> Vec<u8> {
    let mut out = Out::default();
    out.message(1, meta(&slice.metadata));
    for endpoint in slice.endpoints.iter().flatten() {
        let mut e = Out::default();
        strings(&mut e, 1, Some(&endpoint.addresses));
        let mut c = Out::default();
        if let Some(conditions) = &endpoint.conditions {
            for (number, value) in [
                (1, conditions.ready),
                (2, conditions.serving),
                (3, conditions.terminating),
            ] {
                if let Some(value) = value {
                    c.int(number, value.into());
                }
            }
        }
        e.message(2, c).some(3, endpoint.hostname.as_deref());
        if let Some(target) = &endpoint.target_ref {
            let mut t = Out::default();
            t.string(1, target.kind.as_deref())
                .string(2, target.namespace.as_deref())
                .string(3, target.name.as_deref())
                .string(4, Some("uid"));
            e.message(4, t);
        }
        e.some(6, endpoint.node_name.as_deref())
            .some(7, endpoint.zone.as_deref())
            .noise(8);
        out.message(2, e);
    }
    for port in slice.ports.iter().flatten() {
        let mut p = Out::default();
        p.some(1, port.name.as_deref())
            .some(2, port.protocol.as_deref());
        if let Some(number) = port.port {
            p.int(3, number.into());
        }
        out.message(3, p);
    }
    out.string(4, Some(&slice.address_type));
    out.0
}

fn encode_container(container: &core::Container) -> Out {
    let mut c = Out::default();
    c.string(1, Some(&container.name)).noise(2);
    for port in container.ports.iter().flatten() {
        let mut p = Out::default();
        p.string(1, port.name.as_deref())
            .int(2, 0)
            .int(3, port.container_port.into())
            .string(4, port.protocol.as_deref())
            .string(5, None);
        c.message(6, p);
    }
    c.noise(7).some(24, container.restart_policy.as_deref());
    c
}

fn encode_pod(pod: &core::Pod) -> Vec<u8> {
    let mut out = Out::default();
    out.message(1, meta(&pod.metadata));
    if let Some(spec) = &pod.spec {
        let mut s = Out::default();
        s.noise(1);
        for container in &spec.containers {
            s.message(2, encode_container(container));
        }
        s.string(10, spec.node_name.as_deref())
            .int(11, spec.host_network.unwrap_or(false).into())
            .string(16, spec.hostname.as_deref())
            .string(17, spec.subdomain.as_deref());
        for container in spec.init_containers.iter().flatten() {
            s.message(20, encode_container(container));
        }
        out.message(2, s);
    }
    if let Some(status) = &pod.status {
        let mut s = Out::default();
        s.string(1, status.phase.as_deref());
        for condition in status.conditions.iter().flatten() {
            let mut c = Out::default();
            c.string(1, Some(&condition.type_))
                .string(2, Some(&condition.status))
                .noise(4);
            s.message(2, c);
        }
        s.string(6, status.pod_ip.as_deref());
        for ip in status.pod_ips.iter().flatten() {
            let mut i = Out::default();
            i.string(1, Some(&ip.ip));
            s.message(12, i);
        }
        s.noise(8);
        out.message(3, s);
    }
    out.0
}

fn encode_namespace(namespace: &core::Namespace) -> Vec<u8> {
    let mut out = Out::default();
    out.message(1, meta(&namespace.metadata)).noise(2);
    out.0
}

/// The items of `kind` in every JSON fixture.
fn fixture_items(kind: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(document) = serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap()) else {
            continue;
        };
        let all = document["items"].as_array().cloned().unwrap_or_default();
        items.extend(all.into_iter().filter(|item| item["kind"] == kind));
    }
    items
}

/// The JSON and protobuf of `json` (an object of its kind), decoded each way and converted.
fn both_ways(kind: &str, json: &Value) {
    let text = json.to_string();
    match kind {
        "Service" => {
            let object: core::Service = serde_json::from_str(&text).unwrap();
            let decoded = service(&encode_service(&object)).unwrap();
            assert_eq!(
                convert::service(&decoded),
                convert::service(&object),
                "{text}"
            );
        }
        "EndpointSlice" => {
            let whole: discovery::EndpointSlice = serde_json::from_str(&text).unwrap();
            let reduced: SliceObject = serde_json::from_str(&text).unwrap();
            let decoded = endpoint_slice(&encode_slice(&whole)).unwrap();
            assert_eq!(
                convert::endpoint_slice(&decoded),
                convert::endpoint_slice(&reduced.into_slice()),
                "{text}"
            );
        }
        "Pod" => {
            let whole: core::Pod = serde_json::from_str(&text).unwrap();
            let reduced: PodObject = serde_json::from_str(&text).unwrap();
            let decoded = pod(&encode_pod(&whole)).unwrap();
            assert_eq!(
                convert::pod(&decoded),
                convert::pod(&reduced.into_pod()),
                "{text}"
            );
        }
        "Namespace" => {
            let object: core::Namespace = serde_json::from_str(&text).unwrap();
            let decoded = namespace(&encode_namespace(&object)).unwrap();
            assert_eq!(
                convert::namespace(&decoded),
                convert::namespace(&object),
                "{text}"
            );
        }
        other => panic!("{other}"),
    }
}

#[test]
fn every_fixture_object_decodes_from_protobuf_to_the_model_its_json_gives() {
    for kind in ["Service", "EndpointSlice", "Pod", "Namespace"] {
        let items = fixture_items(kind);
        assert!(items.len() >= 5, "{kind}: {} in the fixtures", items.len());
        for item in &items {
            both_ways(kind, item);
        }
    }
}

#[test]
fn envelopes_lists_and_watch_frames_are_opened() {
    let shop = core::Namespace {
        metadata: ObjectMeta {
            name: Some("shop".into()),
            resource_version: Some("17".into()),
            ..ObjectMeta::default()
        },
        ..core::Namespace::default()
    };
    let raw = encode_namespace(&shop);
    // A list: metadata (resourceVersion, continue) and two items, in its envelope.
    let mut list_meta = Out::default();
    list_meta
        .string(1, None)
        .string(2, Some("42"))
        .string(3, Some("next"));
    let mut list_out = Out::default();
    list_out.message(1, list_meta).bytes(2, &raw).bytes(2, &raw);
    let mut type_meta = Out::default();
    type_meta
        .string(1, Some("v1"))
        .string(2, Some("NamespaceList"));
    let mut unknown = Out::default();
    unknown
        .message(1, type_meta)
        .bytes(2, &list_out.0)
        .string(3, None)
        .string(4, None);
    let body = [b"k8s\0".as_slice(), &unknown.0].concat();
    let opened = envelope(&body).unwrap();
    assert_eq!(opened.kind, "NamespaceList");
    let listed = list(opened.raw).unwrap();
    assert_eq!(
        (
            listed.resource_version.as_str(),
            listed.continue_token.as_str()
        ),
        ("42", "next")
    );
    assert_eq!(listed.items.len(), 2);
    assert_eq!(namespace_of(listed.items[1]), "shop");

    // A watch event: its type and, in object.raw, the object's envelope.
    let mut raw_extension = Out::default();
    raw_extension.bytes(1, &body);
    let mut event = Out::default();
    event.string(1, Some("ADDED")).message(2, raw_extension);
    let (kind, object) = watch_event(&event.0).unwrap();
    assert_eq!(kind, "ADDED");
    assert_eq!(envelope(object).unwrap().kind, "NamespaceList");

    // Wrong bytes are errors, never a panic: no magic, a length past the end, a group.
    assert!(envelope(b"{\"kind\":\"Status\"}").is_err());
    assert!(namespace(&[0x0a, 0x05, 0x01]).is_err());
    assert!(namespace(&[0x0b]).is_err());
    assert!(
        namespace(&[
            0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01
        ])
        .is_err()
    );
}

fn namespace_of(raw: &[u8]) -> String {
    namespace(raw).unwrap().metadata.name.unwrap()
}

#[test]
fn a_status_and_a_bookmark_are_read() {
    let mut status_out = Out::default();
    status_out
        .noise(1)
        .string(2, Some("Failure"))
        .string(3, Some("too old resource version: 5 (9)"))
        .string(4, Some("Expired"))
        .int(6, 410);
    let read = status(&status_out.0).unwrap();
    assert_eq!(
        read,
        Status {
            code: 410,
            reason: "Expired".into(),
            message: "too old resource version: 5 (9)".into()
        }
    );
    let bookmark = ObjectMeta {
        resource_version: Some("99".into()),
        annotations: Some(BTreeMap::from([
            (INITIAL_EVENTS_END.to_owned(), "true".to_owned()),
            ("other".to_owned(), "x".to_owned()),
        ])),
        ..ObjectMeta::default()
    };
    let mut pod_out = Out::default();
    pod_out.message(1, meta(&bookmark));
    let read = metadata_of(&pod_out.0).unwrap();
    assert_eq!(read.resource_version.as_deref(), Some("99"));
    assert_eq!(
        read.annotations.unwrap().keys().collect::<Vec<_>>(),
        [INITIAL_EVENTS_END]
    );
}

fn word() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        "[a-z][a-z0-9-]{0,8}".prop_map(Some),
        Just(Some("TCP".to_owned())),
        Just(Some("UDP".to_owned())),
    ]
}

fn ip() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u8..255, 0u8..255).prop_map(|(a, b)| format!("10.{a}.{b}.7")),
        (1u16..0xffff).prop_map(|a| format!("fd00::{a:x}")),
        Just("None".to_owned()),
        Just("not-an-ip".to_owned()),
    ]
}

fn labels() -> impl Strategy<Value = Option<BTreeMap<String, String>>> {
    proptest::option::of(proptest::collection::btree_map(
        "[a-z./-]{1,12}",
        "[a-z0-9]{0,6}",
        0..3,
    ))
}

fn object_meta() -> impl Strategy<Value = ObjectMeta> {
    ("[a-z][a-z0-9-]{0,10}", word(), labels(), any::<bool>()).prop_map(
        |(name, namespace, labels, deleted)| ObjectMeta {
            name: Some(name),
            namespace,
            labels,
            deletion_timestamp: deleted.then(|| {
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    jiff::Timestamp::from_second(1_700_000_000).unwrap(),
                )
            }),
            resource_version: Some("5".into()),
            ..ObjectMeta::default()
        },
    )
}

fn service_strategy() -> impl Strategy<Value = core::Service> {
    let port = (
        word(),
        word(),
        -2i32..70000,
        prop_oneof![
            Just(None),
            (0i32..70000).prop_map(|n| Some(IntOrString::Int(n))),
            "[a-z0-9]{0,5}".prop_map(|s| Some(IntOrString::String(s))),
        ],
        proptest::option::of(0i32..70000),
    )
        .prop_map(
            |(name, protocol, port, target_port, node_port)| core::ServicePort {
                name,
                protocol,
                port,
                target_port,
                node_port,
                ..core::ServicePort::default()
            },
        );
    let kind = prop_oneof![
        Just(None),
        Just(Some("ClusterIP".to_owned())),
        Just(Some("NodePort".to_owned())),
        Just(Some("LoadBalancer".to_owned())),
        Just(Some("ExternalName".to_owned())),
        Just(Some("Other".to_owned())),
    ];
    (
        object_meta(),
        proptest::option::of(proptest::collection::vec(port, 0..3)),
        (
            kind,
            proptest::option::of(ip()),
            proptest::option::of(proptest::collection::vec(ip(), 0..3)),
        ),
        (
            labels(),
            word(),
            proptest::option::of(proptest::collection::vec(ip(), 0..2)),
        ),
        (
            proptest::option::of(0i32..40000),
            proptest::option::of(any::<bool>()),
            word(),
        ),
        proptest::option::of(proptest::collection::vec(
            (proptest::option::of(ip()), word()),
            0..3,
        )),
    )
        .prop_map(
            |(
                metadata,
                ports,
                (type_, cluster_ip, cluster_ips),
                (selector, affinity, external),
                (health, publish, policy),
                ingress,
            )| {
                core::Service {
                    metadata,
                    spec: Some(core::ServiceSpec {
                        ports,
                        type_,
                        cluster_ip,
                        cluster_ips,
                        selector,
                        session_affinity: affinity,
                        external_ips: external,
                        health_check_node_port: health,
                        publish_not_ready_addresses: publish,
                        external_traffic_policy: policy.clone(),
                        internal_traffic_policy: policy,
                        external_name: Some("db.example.org".into()),
                        ..core::ServiceSpec::default()
                    }),
                    status: Some(core::ServiceStatus {
                        load_balancer: Some(core::LoadBalancerStatus {
                            ingress: ingress.map(|all| {
                                all.into_iter()
                                    .map(|(ip, hostname)| core::LoadBalancerIngress {
                                        ip,
                                        hostname,
                                        ..core::LoadBalancerIngress::default()
                                    })
                                    .collect()
                            }),
                        }),
                        ..core::ServiceStatus::default()
                    }),
                }
            },
        )
}

fn slice_strategy() -> impl Strategy<Value = discovery::EndpointSlice> {
    let endpoint = (
        proptest::collection::vec(ip(), 0..3),
        proptest::option::of((
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<bool>()),
        )),
        word(),
        proptest::option::of((prop_oneof![Just("Pod"), Just("Node")], word())),
        word(),
        word(),
    )
        .prop_map(
            |(addresses, conditions, hostname, target, node_name, zone)| {
                discovery::Endpoint {
                    addresses,
                    // Go writes the conditions struct always: JSON has at least `{}`.
                    conditions: Some(
                        conditions
                            .map(
                                |(ready, serving, terminating)| discovery::EndpointConditions {
                                    ready,
                                    serving,
                                    terminating,
                                },
                            )
                            .unwrap_or_default(),
                    ),
                    hostname,
                    target_ref: target.map(|(kind, name)| core::ObjectReference {
                        kind: Some(kind.to_owned()),
                        name,
                        ..core::ObjectReference::default()
                    }),
                    node_name,
                    zone,
                    ..discovery::Endpoint::default()
                }
            },
        );
    let port =
        (word(), word(), proptest::option::of(-1i32..70000)).prop_map(|(name, protocol, port)| {
            discovery::EndpointPort {
                name,
                protocol,
                port,
                ..discovery::EndpointPort::default()
            }
        });
    (
        object_meta(),
        prop_oneof![Just("IPv4"), Just("IPv6"), Just("FQDN"), Just("IPX")],
        proptest::option::of(proptest::collection::vec(endpoint, 0..4)),
        proptest::option::of(proptest::collection::vec(port, 0..3)),
        proptest::option::of("20[0-9]{2}-0[1-9]-1[0-9]T10:00:00Z"),
    )
        .prop_map(|(mut metadata, address_type, endpoints, ports, trigger)| {
            metadata.annotations = trigger.map(|at| {
                BTreeMap::from([
                    (crate::model::ANNOTATION_TRIGGER_TIME.to_owned(), at),
                    (
                        "kubectl.kubernetes.io/last-applied".to_owned(),
                        "{}".to_owned(),
                    ),
                ])
            });
            discovery::EndpointSlice {
                metadata,
                address_type: address_type.to_owned(),
                endpoints,
                ports,
            }
        })
}

fn pod_strategy() -> impl Strategy<Value = core::Pod> {
    let container = || {
        (
            "[a-z]{1,6}",
            proptest::option::of(proptest::collection::vec(
                (word(), -1i32..70000, word()).prop_map(|(name, container_port, protocol)| {
                    core::ContainerPort {
                        name,
                        container_port,
                        protocol,
                        ..core::ContainerPort::default()
                    }
                }),
                0..3,
            )),
            prop_oneof![Just(None), Just(Some("Always".to_owned()))],
        )
            .prop_map(|(name, ports, restart_policy)| core::Container {
                name,
                ports,
                restart_policy,
                ..core::Container::default()
            })
    };
    (
        object_meta(),
        proptest::option::of((
            proptest::collection::vec(container(), 0..3),
            proptest::option::of(proptest::collection::vec(container(), 0..2)),
            (word(), word(), word(), proptest::option::of(any::<bool>())),
        )),
        proptest::option::of((
            prop_oneof![
                Just(None),
                Just(Some("Running".to_owned())),
                Just(Some("Pending".to_owned())),
                Just(Some("Lost".to_owned()))
            ],
            proptest::option::of(ip()),
            proptest::option::of(proptest::collection::vec(ip(), 0..3)),
            proptest::option::of(proptest::collection::vec(
                (
                    prop_oneof![Just("Ready"), Just("PodScheduled")],
                    prop_oneof![Just("True"), Just("False")],
                ),
                0..3,
            )),
        )),
    )
        .prop_map(|(metadata, spec, status)| core::Pod {
            metadata,
            spec: spec.map(
                |(containers, init_containers, (hostname, subdomain, node_name, host_network))| {
                    core::PodSpec {
                        containers,
                        init_containers,
                        hostname,
                        subdomain,
                        node_name,
                        host_network,
                        ..core::PodSpec::default()
                    }
                },
            ),
            status: status.map(|(phase, pod_ip, pod_ips, conditions)| core::PodStatus {
                phase,
                pod_ip,
                pod_ips: pod_ips.map(|ips| ips.into_iter().map(|ip| core::PodIP { ip }).collect()),
                conditions: conditions.map(|all| {
                    all.into_iter()
                        .map(|(type_, status)| core::PodCondition {
                            type_: type_.to_owned(),
                            status: status.to_owned(),
                            ..core::PodCondition::default()
                        })
                        .collect()
                }),
                ..core::PodStatus::default()
            }),
        })
}

/// The JSON the API server would send for `object`: Go omits empty strings, `false` and
/// zero where the field says `omitempty`; k8s-openapi's serializer writes what is set.
fn as_json<T: serde::Serialize>(object: &T) -> Value {
    fn prune(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.retain(|key, value| {
                    let keep_empty = matches!(key.as_str(), "status" | "type" | "ip" | "name");
                    let empty = matches!(value, Value::String(s) if s.is_empty()) && !keep_empty;
                    let zero =
                        matches!(key.as_str(), "healthCheckNodePort" | "nodePort") && value == 0;
                    !empty && !zero
                });
                map.values_mut().for_each(prune);
            }
            Value::Array(items) => items.iter_mut().for_each(prune),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(object).unwrap();
    prune(&mut value);
    value
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn generated_services_decode_alike(service in service_strategy()) {
        both_ways("Service", &as_json(&service));
    }

    #[test]
    fn generated_slices_decode_alike(slice in slice_strategy()) {
        both_ways("EndpointSlice", &as_json(&slice));
    }

    #[test]
    fn generated_pods_decode_alike(pod in pod_strategy()) {
        both_ways("Pod", &as_json(&pod));
    }

    /// Any bytes: an error or an object, never a panic.
    #[test]
    fn any_bytes_are_an_error_or_an_object(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = service(&bytes);
        let _ = pod(&bytes);
        let _ = endpoint_slice(&bytes);
        let _ = envelope(&bytes).and_then(|e| list(e.raw).map(|l| l.items.len()));
        let _ = watch_event(&bytes);
    }
}
