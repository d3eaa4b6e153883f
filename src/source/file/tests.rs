//! Tests of `file`.

use super::*;

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
