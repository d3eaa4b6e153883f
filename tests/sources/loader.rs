//! The objects-file loader: fixtures, input shapes, ignored kinds, every error shape, the
//! synthesized Namespaces and computed EndpointSlices, and garbage.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use clusterdns::model::compute_slices;
use clusterdns::model::{
    AddressType, Cluster, Endpoint, EndpointPort, EndpointSlice, Labels, ObjectKey,
};
use clusterdns::source::{Error, Loaded, Loader, parse_objects, read_objects};
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

fn load(name: &str) -> Loaded {
    read_objects(&[fixture(name)]).unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn parse(value: &Value) -> Result<Loaded, Error> {
    parse_objects(&value.to_string(), Path::new("shop.json"))
}

fn parse_err(value: &Value) -> String {
    match parse(value) {
        Ok(loaded) => panic!("expected an error, loaded {loaded:?}"),
        Err(error) => error.to_string(),
    }
}

fn list(items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items})
}

fn web_service() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {
            "clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.20"], "ipFamilies": ["IPv4"],
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"}],
        },
    })
}

fn web_pod(name: &str, ip: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": {"app": "web"}},
        "spec": {
            "nodeName": "kind-worker",
            "containers": [{"name": "web", "ports": [{"name": "http", "containerPort": 8080}]}],
        },
        "status": {
            "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    })
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("test IP")
}

// ---------------------------------------------------------------------------------------------
// Fixtures.
// ---------------------------------------------------------------------------------------------

#[test]
fn every_fixture_loads() {
    let mut names: Vec<String> = std::fs::read_dir(fixture(""))
        .expect("fixtures/")
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.len() >= 2, "fixtures: {names:?}");
    for name in &names {
        let loaded = load(name);
        assert!(!loaded.cluster.services.is_empty(), "{name}: no Service");
        assert!(
            loaded.ignored.is_empty(),
            "{name}: ignored {:?}",
            loaded.ignored
        );
    }
}

#[test]
fn shop_fixture_holds_the_kind_cluster() {
    let loaded = load("shop.json");
    let cluster = &loaded.cluster;
    assert_eq!(
        cluster.namespaces.keys().collect::<Vec<_>>(),
        ["default", "kube-system", "shop"]
    );
    assert_eq!(
        cluster
            .services
            .keys()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [
            "default/kubernetes",
            "kube-system/kube-dns",
            "shop/checkout",
            "shop/db",
            "shop/empty",
            "shop/web",
            "shop/web-headless",
        ]
    );
    assert_eq!(cluster.endpoint_slices.len(), 7);
    assert_eq!(cluster.pods.len(), 9);
    assert!(loaded.synthesized_namespaces.is_empty());
    assert!(
        loaded.computed_slices.is_empty(),
        "every Service has its slices in the input"
    );

    let web: Vec<&EndpointSlice> = cluster.slices_of(&ObjectKey::new("shop", "web")).collect();
    assert_eq!(web.len(), 1);
    let rows: Vec<(IpAddr, bool)> = web[0]
        .endpoints
        .iter()
        .map(|endpoint| (endpoint.addresses[0], endpoint.conditions.ready()))
        .collect();
    assert_eq!(
        rows,
        [
            (ip("10.244.1.5"), true),
            (ip("10.244.1.6"), true),
            (ip("10.244.2.7"), true),
            (ip("10.244.2.8"), false),
        ]
    );

    let kubernetes = &cluster.endpoint_slices[&ObjectKey::new("default", "kubernetes")];
    assert_eq!(kubernetes.endpoints[0].addresses[..], [ip("172.18.0.2")]);
    assert_eq!(kubernetes.ports[0].port, Some(6443));

    let empty: Vec<&EndpointSlice> = cluster
        .slices_of(&ObjectKey::new("shop", "empty"))
        .collect();
    assert!(empty[0].endpoints.is_empty() && empty[0].ports.is_empty());

    let db = cluster.slices_of(&ObjectKey::new("shop", "db")).next();
    let hostnames: Vec<Option<&str>> = db
        .map(|slice| {
            slice
                .endpoints
                .iter()
                .map(|endpoint| endpoint.hostname.as_deref())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(hostnames, [Some("db-0"), Some("db-1")]);
}

/// A slice's content, without its name or metadata, endpoints in address order.
#[derive(Debug, PartialEq)]
struct Content {
    address_type: AddressType,
    labels: Labels,
    ports: Vec<EndpointPort>,
    endpoints: Vec<Endpoint>,
}

fn contents<'a>(slices: impl Iterator<Item = &'a EndpointSlice>) -> Vec<Content> {
    let mut contents: Vec<Content> = slices
        .map(|slice| {
            let mut endpoints = slice.endpoints.clone();
            endpoints.sort_by(|a, b| {
                (&a.addresses, a.target_pod()).cmp(&(&b.addresses, b.target_pod()))
            });
            Content {
                address_type: slice.address_type,
                labels: slice.labels.clone(),
                ports: slice.ports.clone(),
                endpoints,
            }
        })
        .collect();
    contents.sort_by_key(|content| {
        (
            content.address_type,
            content.endpoints.first().map(|e| e.addresses.clone()),
        )
    });
    contents
}

fn assert_computed_equals_input(cluster: &Cluster) -> usize {
    let computed = compute_slices(cluster);
    let mut compared = 0;
    for service in cluster.services.values() {
        if service.selector.is_none() {
            continue;
        }
        let input = contents(cluster.slices_of(&service.key));
        let ours = contents(
            computed
                .iter()
                .filter(|slice| slice.service_name.as_deref() == Some(&*service.key.name))
                .filter(|slice| slice.key.namespace == service.key.namespace),
        );
        assert_eq!(ours, input, "slices of {}", service.key);
        compared += 1;
    }
    compared
}

#[test]
fn shop_computed_slices_equal_the_input_slices() {
    let loaded = load("shop.json");
    assert_eq!(assert_computed_equals_input(&loaded.cluster), 6);
}

#[test]
fn dualstack_computed_slices_equal_the_input_slices() {
    let loaded = load("dualstack.json");
    assert_eq!(assert_computed_equals_input(&loaded.cluster), 2);
    let families: Vec<AddressType> = loaded
        .cluster
        .slices_of(&ObjectKey::new("dual", "web"))
        .map(|slice| slice.address_type)
        .collect();
    assert_eq!(families, [AddressType::IPv4, AddressType::IPv6]);
    let web = &loaded.cluster.services[&ObjectKey::new("dual", "web")];
    assert_eq!(web.cluster_ips, [ip("10.96.0.50"), ip("fd00:10:96::50")]);
}

#[test]
fn slices_are_computed_when_the_input_has_none() {
    let mut shop: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("shop.json")).expect("shop.json"))
            .expect("JSON");
    let items = shop["items"].as_array_mut().expect("items");
    items.retain(|item| item["kind"] != "EndpointSlice");
    let loaded = parse(&shop).expect("shop without slices");
    assert_eq!(
        loaded
            .computed_slices
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [
            "kube-system/kube-dns",
            "shop/checkout",
            "shop/db",
            "shop/empty",
            "shop/web",
            "shop/web-headless",
        ]
    );
    assert!(
        loaded
            .cluster
            .slices_of(&ObjectKey::new("default", "kubernetes"))
            .next()
            .is_none(),
        "a Service without a selector gets no computed slice"
    );
    let original = load("shop.json");
    for key in original.cluster.services.keys() {
        if &*key.name == "kubernetes" {
            continue;
        }
        assert_eq!(
            contents(loaded.cluster.slices_of(key)),
            contents(original.cluster.slices_of(key)),
            "{key}"
        );
    }
    assert!(
        loaded
            .cluster
            .endpoint_slices
            .contains_key(&ObjectKey::new("shop", "web-ipv4-0"))
    );
}

// ---------------------------------------------------------------------------------------------
// Input shapes.
// ---------------------------------------------------------------------------------------------

#[test]
fn list_single_object_and_array_load_the_same() {
    let objects = vec![web_service(), web_pod("web-a", "10.244.1.5")];
    let from_list = parse(&list(objects.clone())).expect("List");
    let from_array = parse(&Value::Array(objects)).expect("array");
    assert_eq!(from_list, from_array);

    let single = parse(&web_service()).expect("single object");
    assert_eq!(single.cluster.services, from_list.cluster.services);
    assert_eq!(single.cluster.pods.len(), 0);

    let nested = parse(&json!([
        list(vec![web_service()]),
        web_pod("web-a", "10.244.1.5")
    ]))
    .expect("a List inside an array");
    assert_eq!(nested, from_list);
}

#[test]
fn typed_lists_lend_their_kind_to_their_items() {
    let service_list = json!({
        "apiVersion": "v1", "kind": "ServiceList", "metadata": {"resourceVersion": "1234"},
        "items": [{"metadata": {"name": "web", "namespace": "shop"},
                   "spec": {"clusterIP": "10.96.0.20", "ports": [{"port": 80}]}}],
    });
    let loaded = parse(&service_list).expect("ServiceList");
    assert!(
        loaded
            .cluster
            .services
            .contains_key(&ObjectKey::new("shop", "web"))
    );
}

#[test]
fn other_kinds_are_counted_not_read() {
    let dump = list(vec![
        web_service(),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}),
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-1", "namespace": "shop"}}),
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-2", "namespace": "shop"}}),
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": "shop"},
               "subsets": "not even checked"}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "coredns", "namespace": "kube-system"}}),
        json!({"apiVersion": "serving.knative.dev/v1", "kind": "Service",
               "metadata": {"name": "hello", "namespace": "shop"}, "spec": {"template": {}}}),
        json!({"apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
               "metadata": {"name": "old", "namespace": "shop"}}),
    ]);
    let loaded = parse(&dump).expect("kubectl get all");
    let ignored: Vec<(&str, usize)> = loaded
        .ignored
        .iter()
        .map(|(kind, count)| (kind.as_str(), *count))
        .collect();
    assert_eq!(
        ignored,
        [
            ("ConfigMap", 1),
            ("Deployment", 1),
            ("EndpointSlice (discovery.k8s.io/v1beta1)", 1),
            ("Endpoints", 1),
            ("ReplicaSet", 2),
            ("Service (serving.knative.dev/v1)", 1),
        ]
    );
    assert_eq!(loaded.cluster.services.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Errors.
// ---------------------------------------------------------------------------------------------

#[test]
fn invalid_json_names_file_line_and_column() {
    let text = "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\"\n  \"items\": []\n}\n";
    let error = parse_objects(text, Path::new("shop.json")).expect_err("invalid JSON");
    match &error {
        Error::Json {
            file, line, column, ..
        } => {
            assert_eq!(file, Path::new("shop.json"));
            assert_eq!((*line, *column), (4, 3));
        }
        other => panic!("expected a JSON error, got {other:?}"),
    }
    assert_eq!(
        error.to_string(),
        "shop.json:4:3: invalid JSON: expected `,` or `}`"
    );

    let truncated = parse_objects("[{\"kind\": \"Pod\"", Path::new("dump.json"))
        .expect_err("truncated")
        .to_string();
    assert_eq!(
        truncated,
        "dump.json:1:15: invalid JSON: EOF while parsing an object"
    );
}

#[test]
fn object_errors_name_file_item_object_and_field() {
    let mut bad_port = web_service();
    bad_port["spec"]["ports"][0]["port"] = json!(70000);
    let mut bad_ip = web_pod("web-b", "10.244.1.6");
    bad_ip["status"]["podIPs"] = json!([{"ip": "10.244.1.6"}, {"ip": "fd00::xyz"}]);
    let mut bad_protocol = web_service();
    bad_protocol["spec"]["ports"][0]["protocol"] = json!("HTTP");
    let mut bad_type = web_service();
    bad_type["spec"]["ports"][0]["port"] = json!("eighty");
    let mut bad_address = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-abcde", "namespace": "shop"},
        "addressType": "IPv4", "endpoints": [{"addresses": ["10.244.1.5"]}],
    });
    bad_address["endpoints"][0]["addresses"][0] = json!("10.244.1.500");
    let bad_namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": []}});

    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "bad port",
            bad_port,
            "shop.json: items[3] (Service shop/web): spec.ports[0].port: expected a port number 1-65535, found 70000",
        ),
        (
            "bad IP",
            bad_ip,
            "shop.json: items[3] (Pod shop/web-b): status.podIPs[1].ip: expected an IP address, found \"fd00::xyz\"",
        ),
        (
            "unknown protocol",
            bad_protocol,
            "shop.json: items[3] (Service shop/web): spec.ports[0].protocol: expected TCP, UDP or SCTP, found \"HTTP\"",
        ),
        (
            "wrong JSON type",
            bad_type,
            "shop.json: items[3] (Service shop/web): spec.ports[0].port: invalid type: string \"eighty\", expected a whole number",
        ),
        (
            "bad slice address",
            bad_address,
            "shop.json: items[3] (EndpointSlice shop/web-abcde): endpoints[0].addresses[0]: expected an IP address, found \"10.244.1.500\"",
        ),
        (
            "cluster-scoped object",
            bad_namespace,
            "shop.json: items[3] (Namespace shop): metadata.labels: invalid type: sequence, expected a map",
        ),
        (
            "missing kind",
            json!({"apiVersion": "v1", "metadata": {"name": "web"}}),
            "shop.json: items[3]: kind: expected the object's kind, found nothing",
        ),
        (
            "kind not a string",
            json!({"kind": 7, "metadata": {"name": "web"}}),
            "shop.json: items[3]: kind: expected the object's kind, found a number",
        ),
        (
            "missing name",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "shop"}}),
            "shop.json: items[3] (Service): metadata.name: expected the object's name, found nothing",
        ),
        (
            "missing name of an ignored kind",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}}),
            "shop.json: items[3] (Deployment): metadata.name: expected the object's name, found nothing",
        ),
        (
            "not an object",
            json!("web"),
            "shop.json: items[3]: expected an object, found a string",
        ),
    ];
    for (name, bad, want) in cases {
        let items = vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
            web_service(),
            web_pod("web-a", "10.244.1.5"),
            bad,
        ];
        assert_eq!(parse_err(&list(items)), want, "case: {name}");
    }
}

#[test]
fn error_locations_follow_the_document_shape() {
    let mut bad = web_service();
    bad["spec"]["ports"][0]["port"] = json!(0);
    let tail = "(Service shop/web): spec.ports[0].port: expected a port number 1-65535, found 0";
    assert_eq!(
        parse_err(&bad),
        "shop.json: Service shop/web: spec.ports[0].port: expected a port number 1-65535, found 0"
    );
    assert_eq!(
        parse_err(&json!([web_pod("a", "10.244.1.5"), bad])),
        format!("shop.json: [1] {tail}")
    );
    assert_eq!(
        parse_err(&json!([web_pod("a", "10.244.1.5"), list(vec![bad])])),
        format!("shop.json: [1].items[0] {tail}")
    );
    assert_eq!(
        parse_err(&json!(42)),
        "shop.json: expected a List, an object or an array of objects, found a number"
    );
    assert_eq!(
        parse_err(&json!({"kind": "List", "items": {"a": 1}})),
        "shop.json: List: items: expected an array of objects, found an object"
    );
    let mut no_namespace = web_service();
    no_namespace["metadata"]
        .as_object_mut()
        .map(|metadata| metadata.remove("namespace"));
    no_namespace["spec"]["clusterIP"] = json!("10.96.0.256");
    no_namespace["spec"]["clusterIPs"] = json!(null);
    assert_eq!(
        parse_err(&no_namespace),
        "shop.json: Service default/web: spec.clusterIP: expected an IP address, found \"10.96.0.256\""
    );
}

#[test]
fn a_missing_file_is_named() {
    let missing = fixture("does-not-exist.json");
    let error = read_objects(std::slice::from_ref(&missing)).expect_err("missing file");
    assert!(matches!(&error, Error::Read { file, .. } if *file == missing));
    assert!(
        error
            .to_string()
            .starts_with(&missing.display().to_string()),
        "{error}"
    );
}

/// A file is parsed as it is read (not held whole): its JSON errors still name the line and
/// column, bytes that are not UTF-8 in a string too, and a file that stops short is named.
#[test]
fn a_file_read_through_names_line_and_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: [(&str, &[u8], &str); 3] = [
        (
            "comma.json",
            b"{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\"\n  \"items\": []\n}\n",
            "comma.json:4:3: invalid JSON: expected `,` or `}`",
        ),
        (
            "latin1.json",
            b"{\"kind\": \"Namespace\",\n \"metadata\": {\"name\": \"caf\xe9\"}}",
            "latin1.json:2:27: invalid JSON: invalid unicode code point",
        ),
        (
            "short.json",
            b"[{\"kind\": \"Pod\"",
            "short.json:1:15: invalid JSON: EOF while parsing an object",
        ),
    ];
    for (name, bytes, want) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        let error = read_objects(std::slice::from_ref(&path)).expect_err(name);
        let text = error.to_string();
        let text = text.strip_prefix(&format!("{}/", dir.path().display()));
        assert_eq!(text, Some(want), "{error}");
    }
}

#[test]
fn a_failing_file_adds_nothing() {
    let mut loader = Loader::new();
    loader
        .add_text(&list(vec![web_service()]).to_string(), Path::new("a.json"))
        .expect("a.json");
    let mut bad = web_service();
    bad["metadata"]["name"] = json!("other");
    bad["spec"]["ports"][0]["port"] = json!(-1);
    let second = list(vec![web_pod("web-a", "10.244.1.5"), bad]).to_string();
    assert!(loader.add_text(&second, Path::new("b.json")).is_err());
    let loaded = loader.finish();
    assert!(loaded.cluster.pods.is_empty(), "b.json's pod was not kept");
    assert_eq!(loaded.cluster.services.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Merging and completion.
// ---------------------------------------------------------------------------------------------

#[test]
fn files_merge_and_the_later_object_wins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = dir.path().join("base.json");
    let second = dir.path().join("override.json");
    std::fs::write(
        &first,
        list(vec![web_service(), web_pod("web-a", "10.244.1.5")]).to_string(),
    )
    .expect("write");
    let mut changed = web_service();
    changed["spec"]["clusterIP"] = json!("10.96.0.21");
    changed["spec"]["clusterIPs"] = json!(["10.96.0.21"]);
    std::fs::write(
        &second,
        json!([changed, web_pod("web-b", "10.244.1.6")]).to_string(),
    )
    .expect("write");

    let loaded = read_objects(&[first.clone(), second.clone()]).expect("both files");
    let web = &loaded.cluster.services[&ObjectKey::new("shop", "web")];
    assert_eq!(web.cluster_ips, [ip("10.96.0.21")]);
    assert_eq!(loaded.cluster.pods.len(), 2);
    let computed: Vec<&EndpointSlice> = loaded
        .cluster
        .slices_of(&ObjectKey::new("shop", "web"))
        .collect();
    assert_eq!(computed.len(), 1);
    assert_eq!(
        computed[0].endpoints.len(),
        2,
        "pods of both files are used"
    );

    let reversed = read_objects(&[second, first]).expect("both files");
    let web = &reversed.cluster.services[&ObjectKey::new("shop", "web")];
    assert_eq!(web.cluster_ips, [ip("10.96.0.20")]);
}

#[test]
fn namespaces_the_input_does_not_list_are_synthesized() {
    let mut other = web_pod("job-1", "10.244.1.7");
    other["metadata"]["namespace"] = json!("batch");
    let loaded = parse(&list(vec![
        web_service(),
        web_pod("web-a", "10.244.1.5"),
        other.clone(),
    ]))
    .expect("no Namespace objects");
    assert_eq!(loaded.synthesized_namespaces, ["batch", "shop"]);
    assert!(
        loaded.unlisted_namespaces.is_empty(),
        "no Namespace objects at all: nothing to say"
    );
    let shop = &loaded.cluster.namespaces["shop"];
    assert_eq!(
        shop.labels
            .get("kubernetes.io/metadata.name")
            .map(String::as_str),
        Some("shop")
    );

    let with_one = parse(&list(vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
        web_service(),
        other,
    ]))
    .expect("one Namespace object");
    // `batch` is not listed, but a pod lives there: CoreDNS serves its Services whatever
    // their Namespace object, so it exists, and the loader says it was not in the input.
    assert_eq!(with_one.synthesized_namespaces, ["batch"]);
    assert_eq!(with_one.unlisted_namespaces, ["batch"]);
    assert_eq!(
        with_one.cluster.namespaces.keys().collect::<Vec<_>>(),
        ["batch", "shop"]
    );
}

#[test]
fn computed_slices_skip_external_name_and_selectorless_services() {
    let external = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "partner", "namespace": "shop"},
        "spec": {"type": "ExternalName", "externalName": "api.partner.example.com",
                 "selector": {"app": "web"}},
    });
    let manual = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "legacy", "namespace": "shop"},
        "spec": {"clusterIP": "10.96.0.99", "ports": [{"port": 5432}]},
    });
    let loaded = parse(&list(vec![
        web_service(),
        external,
        manual,
        web_pod("web-a", "10.244.1.5"),
    ]))
    .expect("services");
    assert_eq!(loaded.computed_slices, [ObjectKey::new("shop", "web")]);
    assert_eq!(loaded.cluster.endpoint_slices.len(), 1);
}

#[test]
fn a_computed_name_never_replaces_an_input_slice() {
    let foreign = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-ipv4-0", "namespace": "shop",
                     "labels": {"kubernetes.io/service-name": "legacy"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["192.168.10.5"]}],
    });
    let loaded = parse(&list(vec![
        web_service(),
        foreign,
        web_pod("web-a", "10.244.1.5"),
    ]))
    .expect("clash");
    let names: Vec<&str> = loaded
        .cluster
        .endpoint_slices
        .keys()
        .map(|key| &*key.name)
        .collect();
    assert_eq!(names, ["web-ipv4-0", "web-ipv4-0-1"]);
    assert_eq!(
        loaded.cluster.endpoint_slices[&ObjectKey::new("shop", "web-ipv4-0")]
            .service_name
            .as_deref(),
        Some("legacy")
    );
}

// ---------------------------------------------------------------------------------------------
// Garbage.
// ---------------------------------------------------------------------------------------------

#[test]
fn garbage_never_panics() {
    let texts = [
        "",
        " ",
        "null",
        "[]",
        "{}",
        "[[[]]]",
        "[null, 1, \"x\", true]",
        "{\"kind\": \"List\"}",
        "{\"kind\": \"List\", \"items\": null}",
        "{\"kind\": \"List\", \"items\": [{\"kind\": \"List\", \"items\": [{}]}]}",
        "{\"kind\": \"Pod\", \"metadata\": null}",
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": 5}}",
        "{\"kind\": \"Service\", \"metadata\": {\"name\": \"a\"}, \"spec\": []}",
        "{\"kind\": \"Service\", \"metadata\": {\"name\": \"a\"}, \"spec\": {\"ports\": [{\"port\": 1e99}]}}",
        "{\"kind\": \"EndpointSlice\", \"metadata\": {\"name\": \"a\"}, \"endpoints\": [{}]}",
        "\u{feff}{}",
        "\u{0}",
    ];
    for text in texts {
        let _ = parse_objects(text, Path::new("garbage.json"));
    }
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(parse_objects(&deep, Path::new("deep.json")).is_err());
    let bytes: Vec<u8> = (0..4096u32)
        .map(|n| (n.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let _ = parse_objects(&String::from_utf8_lossy(&bytes), Path::new("noise.json"));
}

/// Every prefix of a fixture, and every scalar of every object replaced by values of the
/// wrong type or range: an error or a result, never a panic.
#[test]
fn mutated_fixtures_never_panic() {
    let text = std::fs::read_to_string(fixture("dualstack.json")).expect("dualstack.json");
    for end in (0..text.len()).step_by(97) {
        if text.is_char_boundary(end) {
            let _ = parse_objects(&text[..end], Path::new("cut.json"));
        }
    }

    let shop: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("shop.json")).expect("shop.json"))
            .expect("JSON");
    let replacements = [
        json!(null),
        json!(-1),
        json!(70000),
        json!("x"),
        json!([]),
        json!({}),
    ];
    let mut parsed = 0usize;
    for item in shop["items"].as_array().expect("items") {
        let mut paths = Vec::new();
        scalar_paths(item, &mut Vec::new(), &mut paths);
        for path in &paths {
            for replacement in &replacements {
                let mut mutated = item.clone();
                if let Some(slot) = pointer_mut(&mut mutated, path) {
                    *slot = replacement.clone();
                }
                let _ = parse(&mutated);
                parsed += 1;
            }
        }
    }
    assert!(parsed > 1000, "mutations: {parsed}");
}

fn scalar_paths(value: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                prefix.push(key.clone());
                scalar_paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                prefix.push(index.to_string());
                scalar_paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => out.push(prefix.clone()),
    }
}

fn pointer_mut<'a>(value: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |value, step| match value {
        Value::Object(map) => map.get_mut(step),
        Value::Array(items) => step.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
        _ => None,
    })
}
