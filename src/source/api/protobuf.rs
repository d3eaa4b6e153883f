//! The API server's protobuf (`application/vnd.kubernetes.protobuf`), decoded in one pass
//! into the fields the zone reads and nothing else.
//!
//! A response body is the `k8s\0` magic and a `runtime.Unknown` envelope (its type, then the
//! object's own bytes in `raw`); a watch (`;stream=watch`) is a stream of frames, each a
//! four-byte big-endian length and a `metav1.WatchEvent` (the event's type and, in
//! `object.raw`, an envelope again). The messages are declared here by hand with only the
//! field numbers read (from the upstream `generated.proto` files of k8s.io/api and
//! k8s.io/apimachinery): every other field is stepped over by its length, never decoded or
//! allocated — a Pod's containers' images, environment, probes and volumes, its
//! `managedFields` and annotations, are bytes skipped.
//!
//! What is read is built as the k8s-openapi objects (holding just those fields) that
//! [`convert`](crate::model::convert) takes from the JSON decoder too, so both encodings
//! become the same model. Where Go's protobuf writes a field JSON omits when empty (a plain
//! string, a number, `false`), the empty value is read as absent, as JSON would give it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::model::ANNOTATION_TRIGGER_TIME;

/// The media type, as asked for in `Accept` and answered in `Content-Type`.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The magic that starts every protobuf body (and every object inside a watch event).
const MAGIC: &[u8; 4] = b"k8s\0";

/// The annotation of the bookmark that ends a streaming list.
pub(super) const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Why bytes are not the message they should be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("protobuf {message}: {why}")]
pub struct ProtoError {
    /// The message being decoded (`Service`, `WatchEvent`, …).
    pub message: &'static str,
    /// What was wrong.
    pub why: String,
}

type Result<T> = std::result::Result<T, ProtoError>;

fn error(message: &'static str, why: impl Into<String>) -> ProtoError {
    ProtoError {
        message,
        why: why.into(),
    }
}

/// A field's value as the wire has it.
#[derive(Clone, Copy)]
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    /// A fixed 32- or 64-bit value (no field read here has one).
    Fixed,
}

/// The fields of one message, in wire order: `(number, value)`.
struct Fields<'a> {
    rest: &'a [u8],
    message: &'static str,
}

fn fields<'a>(bytes: &'a [u8], message: &'static str) -> Fields<'a> {
    Fields {
        rest: bytes,
        message,
    }
}

impl<'a> Fields<'a> {
    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for (index, byte) in self.rest.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte & 0x80 == 0 {
                self.rest = &self.rest[index + 1..];
                return Ok(value);
            }
        }
        Err(error(
            self.message,
            "a varint runs past the end or 10 bytes",
        ))
    }

    fn take(&mut self, length: u64) -> Result<&'a [u8]> {
        let length = usize::try_from(length)
            .ok()
            .filter(|length| *length <= self.rest.len())
            .ok_or_else(|| {
                error(
                    self.message,
                    format!(
                        "a field of {length} bytes where {} are left",
                        self.rest.len()
                    ),
                )
            })?;
        let (taken, rest) = self.rest.split_at(length);
        self.rest = rest;
        Ok(taken)
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let item = (|| {
            let key = self.varint()?;
            let number = u32::try_from(key >> 3)
                .ok()
                .filter(|number| *number != 0)
                .ok_or_else(|| error(self.message, format!("field number {}", key >> 3)))?;
            let value = match key & 7 {
                0 => Value::Varint(self.varint()?),
                1 => {
                    self.take(8)?;
                    Value::Fixed
                }
                2 => {
                    let length = self.varint()?;
                    Value::Bytes(self.take(length)?)
                }
                5 => {
                    self.take(4)?;
                    Value::Fixed
                }
                wire => {
                    return Err(error(
                        self.message,
                        format!("field {number} has wire type {wire} (groups are not used)"),
                    ));
                }
            };
            Ok((number, value))
        })();
        if item.is_err() {
            self.rest = &[];
        }
        Some(item)
    }
}

fn bytes<'a>(value: Value<'a>, message: &'static str, field: &str) -> Result<&'a [u8]> {
    match value {
        Value::Bytes(bytes) => Ok(bytes),
        _ => Err(error(
            message,
            format!("{field} should be length-delimited"),
        )),
    }
}

fn string(value: Value<'_>, message: &'static str, field: &str) -> Result<String> {
    let bytes = bytes(value, message, field)?;
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|_| error(message, format!("{field} is not UTF-8")))
}

/// A string JSON omits when empty: empty is absent.
fn optional(value: Value<'_>, message: &'static str, field: &str) -> Result<Option<String>> {
    string(value, message, field).map(|value| (!value.is_empty()).then_some(value))
}

fn varint(value: Value<'_>, message: &'static str, field: &str) -> Result<u64> {
    match value {
        Value::Varint(value) => Ok(value),
        _ => Err(error(message, format!("{field} should be a varint"))),
    }
}

/// An int32 (negative numbers are sign-extended to ten bytes on the wire).
fn int32(value: Value<'_>, message: &'static str, field: &str) -> Result<i32> {
    varint(value, message, field).map(|value| value as i64 as i32)
}

fn boolean(value: Value<'_>, message: &'static str, field: &str) -> Result<bool> {
    varint(value, message, field).map(|value| value != 0)
}

/// One `map<string, string>` entry.
fn entry(value: Value<'_>, message: &'static str) -> Result<(String, String)> {
    let mut key = String::new();
    let mut item = String::new();
    for field in fields(bytes(value, message, "a map entry")?, message) {
        match field? {
            (1, value) => key = string(value, message, "a map key")?,
            (2, value) => item = string(value, message, "a map value")?,
            _ => {}
        }
    }
    Ok((key, item))
}

/// The `k8s\0` envelope: the kind it names and the object's bytes.
pub(super) struct Envelope<'a> {
    pub(super) kind: &'a str,
    pub(super) raw: &'a [u8],
}

/// Opens the `k8s\0` envelope of a body or of a watch event's object.
pub(super) fn envelope(body: &[u8]) -> Result<Envelope<'_>> {
    const M: &str = "Unknown";
    let inner = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| error(M, "the body does not start with the k8s\\0 magic"))?;
    let mut kind = "";
    let mut raw: &[u8] = &[];
    for field in fields(inner, M) {
        match field? {
            (1, value) => {
                for field in fields(bytes(value, M, "typeMeta")?, M) {
                    if let (2, value) = field? {
                        kind = std::str::from_utf8(bytes(value, M, "typeMeta.kind")?)
                            .map_err(|_| error(M, "typeMeta.kind is not UTF-8"))?;
                    }
                }
            }
            (2, value) => raw = bytes(value, M, "raw")?,
            (3, value) => {
                let encoding = bytes(value, M, "contentEncoding")?;
                if !encoding.is_empty() {
                    return Err(error(
                        M,
                        format!(
                            "content encoding {:?} (none is expected)",
                            String::from_utf8_lossy(encoding)
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(Envelope { kind, raw })
}

/// A list's `metadata` and its items' bytes.
pub(super) struct List<'a> {
    pub(super) resource_version: String,
    pub(super) continue_token: String,
    pub(super) items: Vec<&'a [u8]>,
}

/// A `…List` message: `metadata` (ListMeta) is field 1 and `items` field 2 in all of them.
pub(super) fn list(raw: &[u8]) -> Result<List<'_>> {
    const M: &str = "List";
    let mut list = List {
        resource_version: String::new(),
        continue_token: String::new(),
        items: Vec::new(),
    };
    for field in fields(raw, M) {
        match field? {
            (1, value) => {
                for field in fields(bytes(value, M, "metadata")?, M) {
                    match field? {
                        (2, value) => {
                            list.resource_version = string(value, M, "metadata.resourceVersion")?;
                        }
                        (3, value) => list.continue_token = string(value, M, "metadata.continue")?,
                        _ => {}
                    }
                }
            }
            (2, value) => list.items.push(bytes(value, M, "items")?),
            _ => {}
        }
    }
    Ok(list)
}

/// A watch event: its type (`ADDED`, `BOOKMARK`, …) and the envelope of its object.
pub(super) fn watch_event(frame: &[u8]) -> Result<(&str, &[u8])> {
    const M: &str = "WatchEvent";
    let mut kind = "";
    let mut object: &[u8] = &[];
    for field in fields(frame, M) {
        match field? {
            (1, value) => {
                kind = std::str::from_utf8(bytes(value, M, "type")?)
                    .map_err(|_| error(M, "type is not UTF-8"))?;
            }
            (2, value) => {
                for field in fields(bytes(value, M, "object")?, M) {
                    if let (1, value) = field? {
                        object = bytes(value, M, "object.raw")?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok((kind, object))
}

/// What is read of a `Status` (an error's body, a watch's ERROR event).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Status {
    pub(super) code: u16,
    pub(super) reason: String,
    pub(super) message: String,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

pub(super) fn status(raw: &[u8]) -> Result<Status> {
    const M: &str = "Status";
    let mut status = Status::default();
    for field in fields(raw, M) {
        match field? {
            (3, value) => status.message = string(value, M, "message")?,
            (4, value) => status.reason = string(value, M, "reason")?,
            (6, value) => status.code = int32(value, M, "code")?.clamp(0, 999) as u16,
            _ => {}
        }
    }
    Ok(status)
}

/// What `metadata` keeps: which annotations (none but the ones named).
fn object_meta(bytes_: &[u8], annotations: &[&str]) -> Result<ObjectMeta> {
    const M: &str = "ObjectMeta";
    let mut meta = ObjectMeta::default();
    for field in fields(bytes_, M) {
        match field? {
            (1, value) => meta.name = optional(value, M, "name")?,
            (3, value) => meta.namespace = optional(value, M, "namespace")?,
            (6, value) => meta.resource_version = optional(value, M, "resourceVersion")?,
            (9, value) => {
                meta.deletion_timestamp = Some(time(bytes(value, M, "deletionTimestamp")?)?)
            }
            (11, value) => {
                let (key, item) = entry(value, M)?;
                meta.labels
                    .get_or_insert_with(BTreeMap::new)
                    .insert(key, item);
            }
            (12, value) if !annotations.is_empty() => {
                let (key, item) = entry(value, M)?;
                if annotations.contains(&key.as_str()) {
                    meta.annotations
                        .get_or_insert_with(BTreeMap::new)
                        .insert(key, item);
                }
            }
            _ => {}
        }
    }
    Ok(meta)
}

/// A `Time`: seconds and nanoseconds since the epoch.
fn time(bytes_: &[u8]) -> Result<Time> {
    const M: &str = "Time";
    let (mut seconds, mut nanos) = (0i64, 0i32);
    for field in fields(bytes_, M) {
        match field? {
            (1, value) => seconds = varint(value, M, "seconds")? as i64,
            (2, value) => nanos = int32(value, M, "nanos")?,
            _ => {}
        }
    }
    jiff::Timestamp::new(seconds, nanos)
        .map(Time)
        .map_err(|e| error(M, format!("{seconds}.{nanos:09}: {e}")))
}

/// The metadata of a watch event's object when only it is read (a bookmark, a deletion):
/// `metadata` is field 1 of every object watched.
pub(super) fn metadata_of(raw: &[u8]) -> Result<ObjectMeta> {
    for field in fields(raw, "object") {
        if let (1, value) = field? {
            return object_meta(bytes(value, "object", "metadata")?, &[INITIAL_EVENTS_END]);
        }
    }
    Ok(ObjectMeta::default())
}

/// A Namespace: its name and labels.
pub fn namespace(raw: &[u8]) -> Result<core::Namespace> {
    const M: &str = "Namespace";
    let mut namespace = core::Namespace::default();
    for field in fields(raw, M) {
        if let (1, value) = field? {
            namespace.metadata = object_meta(bytes(value, M, "metadata")?, &[])?;
        }
    }
    Ok(namespace)
}

/// A Service: what [`convert::service`](crate::model::convert::service) reads.
pub fn service(raw: &[u8]) -> Result<core::Service> {
    const M: &str = "Service";
    let mut service = core::Service::default();
    for field in fields(raw, M) {
        match field? {
            (1, value) => service.metadata = object_meta(bytes(value, M, "metadata")?, &[])?,
            (2, value) => service.spec = Some(service_spec(bytes(value, M, "spec")?)?),
            (3, value) => {
                let mut status = core::ServiceStatus::default();
                for field in fields(bytes(value, M, "status")?, M) {
                    if let (1, value) = field? {
                        status.load_balancer =
                            Some(load_balancer(bytes(value, M, "status.loadBalancer")?)?);
                    }
                }
                service.status = Some(status);
            }
            _ => {}
        }
    }
    Ok(service)
}

fn service_spec(raw: &[u8]) -> Result<core::ServiceSpec> {
    const M: &str = "ServiceSpec";
    let mut spec = core::ServiceSpec::default();
    let push = |list: &mut Option<Vec<String>>, value, field| -> Result<()> {
        list.get_or_insert_with(Vec::new)
            .push(string(value, M, field)?);
        Ok(())
    };
    for field in fields(raw, M) {
        match field? {
            (1, value) => spec
                .ports
                .get_or_insert_with(Vec::new)
                .push(service_port(bytes(value, M, "ports")?)?),
            (2, value) => {
                let (key, item) = entry(value, M)?;
                spec.selector
                    .get_or_insert_with(BTreeMap::new)
                    .insert(key, item);
            }
            (3, value) => spec.cluster_ip = optional(value, M, "clusterIP")?,
            (4, value) => spec.type_ = optional(value, M, "type")?,
            (5, value) => push(&mut spec.external_ips, value, "externalIPs")?,
            (7, value) => spec.session_affinity = optional(value, M, "sessionAffinity")?,
            (9, value) => push(
                &mut spec.load_balancer_source_ranges,
                value,
                "loadBalancerSourceRanges",
            )?,
            (10, value) => spec.external_name = optional(value, M, "externalName")?,
            (11, value) => {
                spec.external_traffic_policy = optional(value, M, "externalTrafficPolicy")?;
            }
            (12, value) => {
                spec.health_check_node_port =
                    Some(int32(value, M, "healthCheckNodePort")?).filter(|port| *port != 0);
            }
            (13, value) => {
                spec.publish_not_ready_addresses =
                    Some(boolean(value, M, "publishNotReadyAddresses")?);
            }
            (14, value) => {
                let mut config = core::SessionAffinityConfig::default();
                for field in fields(bytes(value, M, "sessionAffinityConfig")?, M) {
                    if let (1, value) = field? {
                        let mut client_ip = core::ClientIPConfig::default();
                        for field in fields(bytes(value, M, "clientIP")?, M) {
                            if let (1, value) = field? {
                                client_ip.timeout_seconds =
                                    Some(int32(value, M, "clientIP.timeoutSeconds")?);
                            }
                        }
                        config.client_ip = Some(client_ip);
                    }
                }
                spec.session_affinity_config = Some(config);
            }
            (18, value) => push(&mut spec.cluster_ips, value, "clusterIPs")?,
            (19, value) => push(&mut spec.ip_families, value, "ipFamilies")?,
            (22, value) => {
                spec.internal_traffic_policy = optional(value, M, "internalTrafficPolicy")?;
            }
            _ => {}
        }
    }
    Ok(spec)
}

fn service_port(raw: &[u8]) -> Result<core::ServicePort> {
    const M: &str = "ServicePort";
    let mut port = core::ServicePort::default();
    for field in fields(raw, M) {
        match field? {
            (1, value) => port.name = optional(value, M, "name")?,
            (2, value) => port.protocol = optional(value, M, "protocol")?,
            (3, value) => port.port = int32(value, M, "port")?,
            (4, value) => port.target_port = Some(int_or_string(bytes(value, M, "targetPort")?)?),
            (5, value) => port.node_port = Some(int32(value, M, "nodePort")?).filter(|p| *p != 0),
            _ => {}
        }
    }
    Ok(port)
}

fn int_or_string(raw: &[u8]) -> Result<IntOrString> {
    const M: &str = "IntOrString";
    let (mut kind, mut number, mut text) = (0, 0, String::new());
    for field in fields(raw, M) {
        match field? {
            (1, value) => kind = varint(value, M, "type")?,
            (2, value) => number = int32(value, M, "intVal")?,
            (3, value) => text = string(value, M, "strVal")?,
            _ => {}
        }
    }
    Ok(if kind == 1 {
        IntOrString::String(text)
    } else {
        IntOrString::Int(number)
    })
}

fn load_balancer(raw: &[u8]) -> Result<core::LoadBalancerStatus> {
    const M: &str = "LoadBalancerStatus";
    let mut status = core::LoadBalancerStatus::default();
    for field in fields(raw, M) {
        if let (1, value) = field? {
            let mut ingress = core::LoadBalancerIngress::default();
            for field in fields(bytes(value, M, "ingress")?, M) {
                match field? {
                    (1, value) => ingress.ip = optional(value, M, "ingress.ip")?,
                    (2, value) => ingress.hostname = optional(value, M, "ingress.hostname")?,
                    _ => {}
                }
            }
            status.ingress.get_or_insert_with(Vec::new).push(ingress);
        }
    }
    Ok(status)
}

/// An EndpointSlice: what [`convert::endpoint_slice`](crate::model::convert::endpoint_slice)
/// reads (of the annotations, the trigger time only).
pub fn endpoint_slice(raw: &[u8]) -> Result<discovery::EndpointSlice> {
    const M: &str = "EndpointSlice";
    let mut slice = discovery::EndpointSlice::default();
    for field in fields(raw, M) {
        match field? {
            (1, value) => {
                slice.metadata =
                    object_meta(bytes(value, M, "metadata")?, &[ANNOTATION_TRIGGER_TIME])?;
            }
            (2, value) => slice
                .endpoints
                .get_or_insert_with(Vec::new)
                .push(slice_endpoint(bytes(value, M, "endpoints")?)?),
            (3, value) => {
                let mut port = discovery::EndpointPort::default();
                for field in fields(bytes(value, M, "ports")?, M) {
                    match field? {
                        (1, value) => port.name = Some(string(value, M, "ports.name")?),
                        (2, value) => port.protocol = optional(value, M, "ports.protocol")?,
                        (3, value) => port.port = Some(int32(value, M, "ports.port")?),
                        _ => {}
                    }
                }
                slice.ports.get_or_insert_with(Vec::new).push(port);
            }
            (4, value) => slice.address_type = string(value, M, "addressType")?,
            _ => {}
        }
    }
    Ok(slice)
}

fn slice_endpoint(raw: &[u8]) -> Result<discovery::Endpoint> {
    const M: &str = "Endpoint";
    let mut endpoint = discovery::Endpoint::default();
    for field in fields(raw, M) {
        match field? {
            (1, value) => endpoint.addresses.push(string(value, M, "addresses")?),
            (2, value) => {
                let mut conditions = discovery::EndpointConditions::default();
                for field in fields(bytes(value, M, "conditions")?, M) {
                    match field? {
                        (1, value) => conditions.ready = Some(boolean(value, M, "ready")?),
                        (2, value) => conditions.serving = Some(boolean(value, M, "serving")?),
                        (3, value) => {
                            conditions.terminating = Some(boolean(value, M, "terminating")?);
                        }
                        _ => {}
                    }
                }
                endpoint.conditions = Some(conditions);
            }
            (3, value) => endpoint.hostname = optional(value, M, "hostname")?,
            (4, value) => {
                let mut target = core::ObjectReference::default();
                for field in fields(bytes(value, M, "targetRef")?, M) {
                    match field? {
                        (1, value) => target.kind = optional(value, M, "targetRef.kind")?,
                        (3, value) => target.name = optional(value, M, "targetRef.name")?,
                        _ => {}
                    }
                }
                endpoint.target_ref = Some(target);
            }
            (6, value) => endpoint.node_name = optional(value, M, "nodeName")?,
            (7, value) => endpoint.zone = optional(value, M, "zone")?,
            _ => {}
        }
    }
    Ok(endpoint)
}

/// A Pod: what [`convert::pod`](crate::model::convert::pod) reads.
pub fn pod(raw: &[u8]) -> Result<core::Pod> {
    const M: &str = "Pod";
    let mut pod = core::Pod::default();
    for field in fields(raw, M) {
        match field? {
            (1, value) => pod.metadata = object_meta(bytes(value, M, "metadata")?, &[])?,
            (2, value) => pod.spec = Some(pod_spec(bytes(value, M, "spec")?)?),
            (3, value) => pod.status = Some(pod_status(bytes(value, M, "status")?)?),
            _ => {}
        }
    }
    Ok(pod)
}

fn pod_spec(raw: &[u8]) -> Result<core::PodSpec> {
    const M: &str = "PodSpec";
    let mut spec = core::PodSpec::default();
    for field in fields(raw, M) {
        match field? {
            (2, value) => spec
                .containers
                .push(container(bytes(value, M, "containers")?)?),
            (10, value) => spec.node_name = optional(value, M, "nodeName")?,
            (11, value) => spec.host_network = Some(boolean(value, M, "hostNetwork")?),
            (16, value) => spec.hostname = optional(value, M, "hostname")?,
            (17, value) => spec.subdomain = optional(value, M, "subdomain")?,
            (20, value) => spec
                .init_containers
                .get_or_insert_with(Vec::new)
                .push(container(bytes(value, M, "initContainers")?)?),
            _ => {}
        }
    }
    Ok(spec)
}

fn container(raw: &[u8]) -> Result<core::Container> {
    const M: &str = "Container";
    let mut container = core::Container::default();
    for field in fields(raw, M) {
        match field? {
            (1, value) => container.name = string(value, M, "name")?,
            (6, value) => {
                let mut port = core::ContainerPort::default();
                for field in fields(bytes(value, M, "ports")?, M) {
                    match field? {
                        (1, value) => port.name = optional(value, M, "ports.name")?,
                        (3, value) => port.container_port = int32(value, M, "ports.containerPort")?,
                        (4, value) => port.protocol = optional(value, M, "ports.protocol")?,
                        _ => {}
                    }
                }
                container.ports.get_or_insert_with(Vec::new).push(port);
            }
            (24, value) => container.restart_policy = optional(value, M, "restartPolicy")?,
            _ => {}
        }
    }
    Ok(container)
}

fn pod_status(raw: &[u8]) -> Result<core::PodStatus> {
    const M: &str = "PodStatus";
    let mut status = core::PodStatus::default();
    for field in fields(raw, M) {
        match field? {
            (1, value) => status.phase = optional(value, M, "phase")?,
            (2, value) => {
                let mut condition = core::PodCondition::default();
                for field in fields(bytes(value, M, "conditions")?, M) {
                    match field? {
                        (1, value) => condition.type_ = string(value, M, "conditions.type")?,
                        (2, value) => condition.status = string(value, M, "conditions.status")?,
                        _ => {}
                    }
                }
                status
                    .conditions
                    .get_or_insert_with(Vec::new)
                    .push(condition);
            }
            (6, value) => status.pod_ip = optional(value, M, "podIP")?,
            (12, value) => {
                let mut ip = core::PodIP::default();
                for field in fields(bytes(value, M, "podIPs")?, M) {
                    if let (1, value) = field? {
                        ip.ip = string(value, M, "podIPs.ip")?;
                    }
                }
                status.pod_ips.get_or_insert_with(Vec::new).push(ip);
            }
            _ => {}
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests;
