//! Tests of `file`.

use serde_json::Value;

use super::reader::Reader;
use super::*;
use crate::model::convert;

#[test]
fn error_prefixes() {
    let cases = [
        (
            "items[3]",
            "Service shop/web",
            "spec.type",
            "items[3] (Service shop/web): spec.type: ",
        ),
        ("items[3]", "", "kind", "items[3]: kind: "),
        (
            "",
            "Service shop/web",
            "spec.type",
            "Service shop/web: spec.type: ",
        ),
        ("[1]", "Pod shop/a", "", "[1] (Pod shop/a): "),
        ("", "", "", ""),
    ];
    for (location, object, path, want) in cases {
        let prefix = Prefix {
            location,
            object,
            path,
        };
        assert_eq!(prefix.to_string(), want, "{location:?} {object:?} {path:?}");
    }
}

#[test]
fn json_errors_carry_position_once() {
    let error = parse_objects("{\"a\": }", Path::new("x.json")).expect_err("invalid");
    assert_eq!(
        error.to_string(),
        "x.json:1:7: invalid JSON: expected value"
    );
}

#[test]
fn known_kinds_without_api_version_are_read() {
    let text = r#"[
            {"kind": "Namespace", "metadata": {"name": "shop"}},
            {"kind": "Service", "metadata": {"name": "web", "namespace": "shop"}},
            {"kind": "Pod", "metadata": {"name": "web-a", "namespace": "shop"}},
            {"kind": "EndpointSlice", "metadata": {"name": "web-x", "namespace": "shop"},
             "addressType": "IPv4"}
        ]"#;
    let loaded = parse_objects(text, Path::new("x.json")).expect("valid");
    assert_eq!(loaded.cluster.namespaces.len(), 1);
    assert_eq!(loaded.cluster.services.len(), 1);
    assert_eq!(loaded.cluster.pods.len(), 1);
    assert_eq!(loaded.cluster.endpoint_slices.len(), 1);
    assert!(loaded.ignored.is_empty());
}

#[test]
fn a_loader_accumulates_documents() {
    let mut loader = Loader::new();
    loader
        .add_text(
            r#"{"kind": "Namespace", "metadata": {"name": "a"}}"#,
            Path::new("1.json"),
        )
        .expect("first");
    loader
        .add_text(
            r#"{"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}}"#,
            Path::new("2.json"),
        )
        .expect("second");
    loader
        .add_text(
            r#"{"kind": "List", "apiVersion": "v1"}"#,
            Path::new("3.json"),
        )
        .expect("a List without items is empty");
    let error = loader
        .add_text(
            r#"{"kind": "Pod", "metadata": {"name": 5}}"#,
            Path::new("4.json"),
        )
        .expect_err("a name that is a number");
    assert_eq!(
        error.to_string(),
        "4.json: Pod: metadata.name: expected the object's name, found a number"
    );
    let loaded = loader.finish();
    assert_eq!(loaded.cluster.namespaces.len(), 1);
    assert_eq!(loaded.ignored.get("ConfigMap"), Some(&1));
    assert!(loaded.synthesized_namespaces.is_empty());
}

#[test]
fn service_imports_are_read_with_json_paths_in_errors() {
    let text = r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
             "metadata": {"name": "web", "namespace": "shop"},
             "spec": {"type": "ClusterSetIP", "ips": ["10.42.0.1"], "ports": [{"port": 80}]}},
            {"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
             "metadata": {"name": "future", "namespace": "shop"}}
        ]}"#;
    let loaded = parse_objects(text, Path::new("x.json")).expect("valid");
    assert_eq!(loaded.cluster.service_imports.len(), 1);
    assert_eq!(
        loaded
            .ignored
            .get("ServiceImport (multicluster.x-k8s.io/v1beta1)"),
        Some(&1)
    );
    // Its namespace exists, as for the other kinds.
    assert!(loaded.cluster.namespaces.contains_key("shop"));

    let cases = [
        (
            r#"{"ips": ["10.42.0.1", "ten"]}"#,
            "x.json: items[0] (ServiceImport shop/web): spec.ips[1]: expected an IP \
                 address, found \"ten\"",
        ),
        (
            r#"{"type": "External"}"#,
            "x.json: items[0] (ServiceImport shop/web): spec.type: expected ClusterSetIP \
                 or Headless, found \"External\"",
        ),
        (
            r#"{"ports": [{"port": "http"}]}"#,
            "x.json: items[0] (ServiceImport shop/web): spec.ports[0].port: invalid type: \
                 string \"http\", expected a whole number",
        ),
    ];
    for (spec, want) in cases {
        let text = format!(
            r#"{{"kind": "List", "items": [{{"apiVersion": "multicluster.x-k8s.io/v1alpha1",
                   "kind": "ServiceImport", "metadata": {{"name": "web", "namespace": "shop"}},
                   "spec": {spec}}}]}}"#
        );
        let error = parse_objects(&text, Path::new("x.json")).expect_err(spec);
        assert_eq!(error.to_string(), want, "{spec}");
    }
}

/// A Pod and an EndpointSlice with every field the conversion reads, and some it does not.
fn pod_and_slice() -> (Value, Value) {
    let pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web-0", "namespace": "shop", "labels": {"app": "web"},
            "annotations": {"a": "b"}, "resourceVersion": "42", "uid": "1",
            "managedFields": [{"manager": "kubelet"}],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                 "name": "web", "uid": "1"}],
        },
        "spec": {
            "hostname": "web-0", "subdomain": "web", "nodeName": "node-1",
            "hostNetwork": false,
            "containers": [{"name": "app", "image": "nginx", "env": [{"name": "A"}],
                            "ports": [{"name": "http", "containerPort": 8080},
                                      {"containerPort": 53, "protocol": "UDP"}]}],
            "initContainers": [
                {"name": "sidecar", "restartPolicy": "Always",
                 "ports": [{"name": "metrics", "containerPort": 9090}]}],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
        "status": {
            "phase": "Running", "podIP": "10.244.1.5",
            "podIPs": [{"ip": "10.244.1.5"}, {"ip": "fd00::5"}],
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0,
                                   "image": "nginx", "imageID": ""}],
        },
    });
    let slice = serde_json::json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {
            "name": "web-abc", "namespace": "shop",
            "labels": {"kubernetes.io/service-name": "web"},
            "annotations": {
                "endpoints.kubernetes.io/last-change-trigger-time": "2026-12-01T10:00:00Z"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                 "uid": "1"}],
        },
        "addressType": "IPv4",
        "endpoints": [
            {"addresses": ["10.244.1.5"], "hostname": "web-0", "nodeName": "n1", "zone": "a",
             "conditions": {"ready": true, "serving": true, "terminating": false},
             "targetRef": {"kind": "Pod", "name": "web-0", "namespace": "shop"},
             "hints": {"forZones": [{"name": "a"}]}},
        ],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    });
    (pod, slice)
}

/// What a file holding `object` with `value` at `pointer` loads to: the error's text after
/// the file, item and object (`spec.hostNetwork: invalid type: ...`), or "ok".
fn load_edited(object: &Value, pointer: &str, value: Value) -> String {
    let mut object = object.clone();
    let (parent, last) = pointer.rsplit_once('/').expect(pointer);
    match object.pointer_mut(parent).expect(pointer) {
        Value::Object(map) => {
            map.insert(last.replace("~1", "/"), value);
        }
        parent => {
            *parent
                .get_mut(last.parse::<usize>().expect(pointer))
                .expect(pointer) = value
        }
    }
    let text = serde_json::json!({"kind": "List", "items": [object]}).to_string();
    match parse_objects(&text, Path::new("x.json")) {
        Ok(_) => "ok".to_owned(),
        Err(error) => {
            let text = error.to_string();
            let object = text
                .split_once("): ")
                .map_or(text.as_str(), |(_, rest)| rest);
            object.to_owned()
        }
    }
}

/// The errors of a Pod's and an EndpointSlice's fields, and the fields that are not read:
/// a wrong value in a field the conversion reads is reported with its JSON path and what was
/// expected; a field it does not read is not looked at.
#[test]
fn pod_and_slice_fields_read_are_checked_with_their_paths() {
    use serde_json::json;
    let (pod, slice) = pod_and_slice();
    let cases = [
        (
            &pod,
            "/spec/containers",
            json!("x"),
            "spec.containers: invalid type: string \"x\", expected a sequence",
        ),
        (
            &pod,
            "/spec/containers/0",
            json!("app"),
            "spec.containers[0]: invalid type: string \"app\", expected Container",
        ),
        (
            &pod,
            "/spec/containers/0",
            json!(["app"]),
            "spec.containers[0]: invalid type: sequence, expected Container",
        ),
        (
            &pod,
            "/spec/containers/0",
            json!([]),
            "spec.containers[0]: invalid type: sequence, expected Container",
        ),
        (&pod, "/spec/containers/0/name", json!(null), "ok"),
        (
            &pod,
            "/spec/containers/0/name",
            json!(5),
            "spec.containers[0].name: invalid type: integer `5`, expected a string",
        ),
        (
            &pod,
            "/spec/containers/0/ports/0/containerPort",
            json!("80"),
            "spec.containers[0].ports[0].containerPort: invalid type: string \"80\", expected a whole number",
        ),
        (
            &pod,
            "/spec/containers/0/ports/0/containerPort",
            json!(null),
            "spec.containers[0].ports[0].containerPort: expected a port number 1-65535, found 0",
        ),
        (
            &pod,
            "/spec/containers/0/ports/0/protocol",
            json!(6),
            "spec.containers[0].ports[0].protocol: invalid type: integer `6`, expected a string",
        ),
        (
            &pod,
            "/spec/initContainers/0/restartPolicy",
            json!(true),
            "spec.initContainers[0].restartPolicy: invalid type: boolean `true`, expected a string",
        ),
        (
            &pod,
            "/spec/hostNetwork",
            json!("yes"),
            "spec.hostNetwork: invalid type: string \"yes\", expected a boolean",
        ),
        (
            &pod,
            "/spec/nodeName",
            json!(5),
            "spec.nodeName: invalid type: integer `5`, expected a string",
        ),
        (
            &pod,
            "/spec",
            json!([]),
            "spec: invalid type: sequence, expected PodSpec",
        ),
        (
            &pod,
            "/status",
            json!(5),
            "status: invalid type: integer `5`, expected PodStatus",
        ),
        (&pod, "/status/phase", json!(null), "ok"),
        (
            &pod,
            "/status/podIPs/0",
            json!("10.244.1.5"),
            "status.podIPs[0]: invalid type: string \"10.244.1.5\", expected PodIP",
        ),
        (
            &pod,
            "/status/podIPs/0/ip",
            json!(null),
            "status.podIPs[0].ip: expected an IP address, found nothing",
        ),
        (
            &pod,
            "/status/conditions/0/type",
            json!(5),
            "status.conditions[0].type: invalid type: integer `5`, expected a string",
        ),
        (&pod, "/status/conditions/0/status", json!(null), "ok"),
        (
            &pod,
            "/metadata/labels",
            json!([]),
            "metadata.labels: invalid type: sequence, expected a map",
        ),
        (
            &pod,
            "/metadata/labels/app",
            json!(5),
            "metadata.labels.app: invalid type: integer `5`, expected a string",
        ),
        (
            &pod,
            "/metadata/annotations/a",
            json!(5),
            "metadata.annotations.a: invalid type: integer `5`, expected a string",
        ),
        (
            &pod,
            "/metadata/resourceVersion",
            json!(5),
            "metadata.resourceVersion: invalid type: integer `5`, expected a string",
        ),
        (&pod, "/metadata/deletionTimestamp", json!(null), "ok"),
        (&pod, "/metadata/uid", json!(5), "ok"),
        (&pod, "/metadata/ownerReferences", json!(5), "ok"),
        (&pod, "/metadata/managedFields/0", json!("x"), "ok"),
        (&pod, "/spec/volumes", json!("x"), "ok"),
        (&pod, "/spec/containers/0/image", json!(5), "ok"),
        (&pod, "/spec/containers/0/env", json!(5), "ok"),
        (
            &pod,
            "/status/containerStatuses/0/ready",
            json!("yes"),
            "ok",
        ),
        (
            &slice,
            "/addressType",
            json!(null),
            "addressType: expected IPv4, IPv6 or FQDN, found nothing",
        ),
        (
            &slice,
            "/addressType",
            json!(4),
            "addressType: invalid type: integer `4`, expected a string",
        ),
        (
            &slice,
            "/endpoints",
            json!({}),
            "endpoints: invalid type: map, expected a sequence",
        ),
        (
            &slice,
            "/endpoints/0",
            json!(5),
            "endpoints[0]: invalid type: integer `5`, expected Endpoint",
        ),
        (&slice, "/endpoints/0/addresses", json!(null), "ok"),
        (
            &slice,
            "/endpoints/0/addresses",
            json!("10.244.1.5"),
            "endpoints[0].addresses: invalid type: string \"10.244.1.5\", expected a sequence",
        ),
        (
            &slice,
            "/endpoints/0/addresses/0",
            json!(5),
            "endpoints[0].addresses[0]: invalid type: integer `5`, expected a string",
        ),
        (
            &slice,
            "/endpoints/0/conditions",
            json!([]),
            "endpoints[0].conditions: invalid type: sequence, expected EndpointConditions",
        ),
        (
            &slice,
            "/endpoints/0/conditions/ready",
            json!("yes"),
            "endpoints[0].conditions.ready: invalid type: string \"yes\", expected a boolean",
        ),
        (
            &slice,
            "/endpoints/0/targetRef",
            json!("web-0"),
            "endpoints[0].targetRef: invalid type: string \"web-0\", expected ObjectReference",
        ),
        (
            &slice,
            "/endpoints/0/targetRef/kind",
            json!(5),
            "endpoints[0].targetRef.kind: invalid type: integer `5`, expected a string",
        ),
        (&slice, "/endpoints/0/targetRef/namespace", json!(5), "ok"),
        (
            &slice,
            "/endpoints/0/hostname",
            json!(5),
            "endpoints[0].hostname: invalid type: integer `5`, expected a string",
        ),
        (
            &slice,
            "/endpoints/0/zone",
            json!(false),
            "endpoints[0].zone: invalid type: boolean `false`, expected a string",
        ),
        (&slice, "/endpoints/0/hints", json!(5), "ok"),
        (
            &slice,
            "/ports/0",
            json!(["http"]),
            "ports[0]: invalid type: sequence, expected EndpointPort",
        ),
        (
            &slice,
            "/ports/0/port",
            json!("80"),
            "ports[0].port: invalid type: string \"80\", expected a whole number",
        ),
        (&slice, "/ports/0/appProtocol", json!(5), "ok"),
        (
            &slice,
            "/metadata/annotations",
            json!([]),
            "metadata.annotations: invalid type: sequence, expected a map",
        ),
        (&slice, "/metadata/ownerReferences", json!(5), "ok"),
    ];
    let mut failed = Vec::new();
    for (object, pointer, value, want) in cases {
        let got = load_edited(object, pointer, value.clone());
        if got != want {
            failed.push(format!("{pointer} = {value}: {got}"));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// A known object's model object, or the loader's error, decoded by the loader (Pods and
/// EndpointSlices into `source::decode`'s types) when `whole` is false, or as the loader
/// decoded every kind before, into k8s-openapi's types, when it is true.
fn decoded(kind: &str, value: &Value, whole: bool) -> Result<Object, String> {
    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::api::discovery::v1 as discovery;

    let mut staged = Loader::new();
    let reader = Reader {
        file: Path::new("x.json"),
        staged: &mut staged,
        failure: None,
    };
    let (location, object) = ("items[0]", "the object");
    let value = value.clone();
    let result = match (kind, whole) {
        (_, false) => reader.convert(kind, value, location, object),
        ("Pod", true) => reader
            .typed::<core::Pod>(value, location, object)
            .and_then(|pod| {
                convert::pod(&pod)
                    .map_err(|error| reader.conversion_error(location, object, &error))
            })
            .map(Object::Pod),
        (_, true) => reader
            .typed::<discovery::EndpointSlice>(value, location, object)
            .and_then(|slice| {
                convert::endpoint_slice(&slice)
                    .map_err(|error| reader.conversion_error(location, object, &error))
            })
            .map(Object::EndpointSlice),
    };
    result.map_err(|error| error.to_string())
}

/// The Pods and EndpointSlices of every JSON file under `fixtures/` and `tests/fixtures/`,
/// without their `kind` and `apiVersion` (as the loader converts them).
fn fixture_pods_and_slices() -> Vec<(String, Value)> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    fn collect(value: Value, out: &mut Vec<(String, Value)>) {
        match value {
            Value::Array(items) => items.into_iter().for_each(|item| collect(item, out)),
            Value::Object(mut map) => {
                if let Some(items) = map.remove("items") {
                    return collect(items, out);
                }
                let kind = map
                    .remove("kind")
                    .and_then(|k| k.as_str().map(str::to_owned));
                map.remove("apiVersion");
                if let Some(kind) = kind.filter(|k| k == "Pod" || k == "EndpointSlice") {
                    out.push((kind, Value::Object(map)));
                }
            }
            _ => {}
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(&root.join("fixtures"), &mut files);
    walk(&root.join("tests/fixtures"), &mut files);
    let mut objects = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("fixture");
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            collect(value, &mut objects);
        }
    }
    objects
}

/// Every Pod and EndpointSlice of the fixtures converts to the same model object decoded
/// whole or as the loader decodes it.
#[test]
fn fixture_pods_and_slices_load_as_decoded_whole() {
    let objects = fixture_pods_and_slices();
    let count = |kind: &str| objects.iter().filter(|(k, _)| k == kind).count();
    assert!(
        count("Pod") >= 20 && count("EndpointSlice") >= 20,
        "{} pods, {} slices",
        count("Pod"),
        count("EndpointSlice")
    );
    for (kind, value) in &objects {
        let reduced = decoded(kind, value, false);
        assert!(reduced.is_ok(), "{reduced:?}: {value:#}");
        assert_eq!(reduced, decoded(kind, value, true), "{value:#}");
    }
}

/// Whether the field at `pointer` of a Pod or an EndpointSlice is one the conversion reads:
/// array indices are `[]`, and every key of a map it reads (labels, annotations) is read.
fn is_read(kind: &str, pointer: &str) -> bool {
    const POD: &[&str] = &[
        "/metadata",
        "/metadata/name",
        "/metadata/namespace",
        "/metadata/labels",
        "/metadata/annotations",
        "/metadata/deletionTimestamp",
        "/metadata/resourceVersion",
        "/spec",
        "/spec/hostname",
        "/spec/subdomain",
        "/spec/nodeName",
        "/spec/hostNetwork",
        "/spec/containers",
        "/spec/containers/[]",
        "/spec/containers/[]/name",
        "/spec/containers/[]/restartPolicy",
        "/spec/containers/[]/ports",
        "/spec/containers/[]/ports/[]",
        "/spec/containers/[]/ports/[]/name",
        "/spec/containers/[]/ports/[]/containerPort",
        "/spec/containers/[]/ports/[]/protocol",
        "/spec/initContainers",
        "/spec/initContainers/[]",
        "/spec/initContainers/[]/name",
        "/spec/initContainers/[]/restartPolicy",
        "/spec/initContainers/[]/ports",
        "/spec/initContainers/[]/ports/[]",
        "/spec/initContainers/[]/ports/[]/name",
        "/spec/initContainers/[]/ports/[]/containerPort",
        "/spec/initContainers/[]/ports/[]/protocol",
        "/status",
        "/status/phase",
        "/status/podIP",
        "/status/podIPs",
        "/status/podIPs/[]",
        "/status/podIPs/[]/ip",
        "/status/conditions",
        "/status/conditions/[]",
        "/status/conditions/[]/type",
        "/status/conditions/[]/status",
    ];
    const SLICE: &[&str] = &[
        "/metadata",
        "/metadata/name",
        "/metadata/namespace",
        "/metadata/labels",
        "/metadata/annotations",
        "/metadata/deletionTimestamp",
        "/metadata/resourceVersion",
        "/addressType",
        "/endpoints",
        "/endpoints/[]",
        "/endpoints/[]/addresses",
        "/endpoints/[]/addresses/[]",
        "/endpoints/[]/conditions",
        "/endpoints/[]/conditions/ready",
        "/endpoints/[]/conditions/serving",
        "/endpoints/[]/conditions/terminating",
        "/endpoints/[]/hostname",
        "/endpoints/[]/nodeName",
        "/endpoints/[]/zone",
        "/endpoints/[]/targetRef",
        "/endpoints/[]/targetRef/kind",
        "/endpoints/[]/targetRef/name",
        "/ports",
        "/ports/[]",
        "/ports/[]/name",
        "/ports/[]/protocol",
        "/ports/[]/port",
    ];
    let shape: Vec<&str> = pointer
        .split('/')
        .map(|part| {
            if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
                "[]"
            } else {
                part
            }
        })
        .collect();
    let shape = shape.join("/");
    let in_map = ["/metadata/labels/", "/metadata/annotations/"]
        .iter()
        .any(|map| shape.starts_with(map) && shape[map.len()..].split('/').count() == 1);
    in_map || if kind == "Pod" { POD } else { SLICE }.contains(&shape.as_str())
}

/// Every JSON pointer into `value`, but the root.
fn pointers(value: &Value, at: &str, out: &mut Vec<String>) {
    let children: Vec<(String, &Value)> = match value {
        Value::Object(map) => map
            .iter()
            .map(|(key, child)| (key.replace('~', "~0").replace('/', "~1"), child))
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, child)| (index.to_string(), child))
            .collect(),
        _ => Vec::new(),
    };
    for (key, child) in children {
        let pointer = format!("{at}/{key}");
        out.push(pointer.clone());
        pointers(child, &pointer, out);
    }
}

/// `value` with the field at `pointer` set to `to`, or removed.
fn edited(value: &Value, pointer: &str, to: Option<&Value>) -> Value {
    let mut value = value.clone();
    let (parent, last) = pointer.rsplit_once('/').expect(pointer);
    let last = last.replace("~1", "/").replace("~0", "~");
    match (value.pointer_mut(parent).expect(pointer), to) {
        (Value::Object(map), Some(to)) => {
            map.insert(last, to.clone());
        }
        (Value::Object(map), None) => {
            map.remove(&last);
        }
        (Value::Array(items), to) => {
            let index = last.parse::<usize>().expect(pointer);
            match to {
                Some(to) => items[index] = to.clone(),
                None => {
                    items.remove(index);
                }
            }
        }
        _ => panic!("{pointer} is not in an object or an array"),
    }
    value
}

/// A Pod and an EndpointSlice with each of their fields, in turn, set to a value of every JSON
/// type or removed: a field the conversion reads gives what the whole decoding gives (the same
/// object, or the same error with the same path and words); a field it does not read is not
/// looked at (the result is the whole decoding's of the object without it).
#[test]
fn every_field_wrong_loads_as_decoded_whole_or_is_not_read() {
    let (mut pod, mut slice) = pod_and_slice();
    for object in [&mut pod, &mut slice] {
        let map = object.as_object_mut().expect("an object");
        map.remove("kind");
        map.remove("apiVersion");
    }
    pod["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z".into();
    let values = [
        Value::Null,
        5.into(),
        (-1.5).into(),
        "x".into(),
        "10.244.1.5".into(),
        true.into(),
        serde_json::json!([]),
        serde_json::json!([5]),
        serde_json::json!(["x"]),
        serde_json::json!({}),
        serde_json::json!([{}]),
        serde_json::json!({"name": "x"}),
    ];
    let mut checked = (0, 0);
    for (kind, object) in [("Pod", &pod), ("EndpointSlice", &slice)] {
        let mut all = Vec::new();
        pointers(object, "", &mut all);
        for pointer in all {
            let read = is_read(kind, &pointer);
            for to in values.iter().map(Some).chain([None]) {
                let value = edited(object, &pointer, to);
                let want = if read {
                    checked.0 += 1;
                    decoded(kind, &value, true)
                } else {
                    checked.1 += 1;
                    decoded(kind, &edited(object, &pointer, None), true)
                };
                assert_eq!(
                    decoded(kind, &value, false),
                    want,
                    "{kind} {pointer} = {to:?} ({})",
                    if read { "read" } else { "not read" }
                );
            }
        }
    }
    assert!(checked.0 > 500 && checked.1 > 200, "{checked:?}");
}

/// Every objects file of the fixtures loaded for a zone (each object trimmed as it is read)
/// holds, once trimmed whole, exactly what it holds loaded whole and trimmed after: the same
/// objects, Namespaces synthesized and EndpointSlices computed — under each option that
/// changes what is trimmed.
#[test]
fn loading_for_a_zone_keeps_what_the_zone_reads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files: Vec<PathBuf> = ["fixtures", "tests/fixtures"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(root.join(dir)).expect("fixtures"))
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    let zone = |name: &str| hickory_proto::rr::Name::from_ascii(name).expect("zone");
    let base = KubernetesConfig::new(vec![zone("cluster.local.")], 0, 1);
    let mut configs = vec![base.clone()];
    for edit in [
        |c: &mut KubernetesConfig| c.endpoint_pod_names = true,
        |c: &mut KubernetesConfig| c.zonal = true,
        |c: &mut KubernetesConfig| {
            c.labels = Some(crate::selector::LabelSelector::parse("app=web").expect("selector"));
        },
        |c: &mut KubernetesConfig| {
            c.multicluster =
                vec![hickory_proto::rr::Name::from_ascii("clusterset.local.").expect("zone")];
        },
    ] {
        let mut config = base.clone();
        edit(&mut config);
        configs.push(config);
    }
    let mut compared = 0;
    for file in &files {
        let Ok(whole) = read_objects(std::slice::from_ref(file)) else {
            continue;
        };
        for config in &configs {
            let mut expected = whole.clone();
            crate::zone::trim_cluster(&mut expected.cluster, config);
            let mut loaded = read_objects_for(std::slice::from_ref(file), config)
                .unwrap_or_else(|error| panic!("{error}"));
            crate::zone::trim_cluster(&mut loaded.cluster, config);
            assert_eq!(loaded, expected, "{}", file.display());
            compared += 1;
        }
    }
    assert!(compared >= 5 * 5, "{compared}");
    // And the fixture with Services and pods but no EndpointSlices computes them.
    let computed = read_objects_for(&[root.join("fixtures/shop.json")], &base).expect("shop");
    assert!(!computed.cluster.endpoint_slices.is_empty());
}
