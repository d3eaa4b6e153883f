//! `endpoints`: the EndpointSlice controller's view and kube-proxy's choice — golden reports,
//! the lesson's and the payments incident's views, terminating fallback and local sets, JSON,
//! and bad input.

use super::{Golden, assert_goldens};
use crate::common::cli::{clusterdns, ok};
use crate::common::fixture;

#[test]
fn endpoints_reports_are_golden() {
    let cases = [
        Golden {
            file: "endpoints-shop.txt",
            objects: "fixtures/shop.json",
            args: &[],
        },
        Golden {
            file: "endpoints-shop-computed.txt",
            objects: "fixtures/shop.json",
            args: &["--slices", "computed"],
        },
        Golden {
            file: "endpoints-proxy-kind-worker.txt",
            objects: "fixtures/proxy.json",
            args: &["--node", "kind-worker"],
        },
        Golden {
            file: "endpoints-proxy-kind-control-plane.txt",
            objects: "fixtures/proxy.json",
            args: &["--node", "kind-control-plane"],
        },
        Golden {
            file: "endpoints-proxy.json",
            objects: "fixtures/proxy.json",
            args: &["--node", "kind-worker", "--output", "json"],
        },
    ];
    assert_goldens(&cases, |case| {
        let mut full = vec!["endpoints", "--objects", case.objects];
        full.extend_from_slice(case.args);
        ok(&full)
    });
}

#[test]
fn endpoints_show_what_the_lesson_says() {
    let out = ok(&["endpoints", "--objects", "fixtures/shop.json"]);
    // web: 4 endpoints listed, the unready canary included; kube-proxy uses three.
    let web = out.split("shop/web  ").nth(1).unwrap();
    let web = web.split("\n\n").next().unwrap();
    assert_eq!(web.matches("10.244.").count(), 4 + 3, "{web}");
    assert!(web.contains("10.244.2.8  false  false    false"), "{web}");
    assert!(web.contains("http 80/TCP (IPv4): 10.244.1.5:8080 10.244.1.6:8080 10.244.2.7:8080"));
    // empty: one slice without ports, and a REJECT.
    let empty = out.split("shop/empty  ").nth(1).unwrap();
    assert!(
        empty.contains("ports <unset>\n    (no endpoints)"),
        "{empty}"
    );
    assert!(empty.contains("no endpoints, REJECT"));
    // headless Services get no rules.
    assert!(out.contains("shop/db  ClusterIP  None"));
    assert!(out.contains("kube-proxy: headless, no rules"));
}

#[test]
fn endpoints_payments_incident() {
    let out = ok(&[
        "endpoints",
        "--objects",
        "fixtures/proxy.json",
        "--slices",
        "computed",
    ]);
    let payments = out.split("pay/payments  ").nth(1).unwrap();
    // The v2 pods, whose container port is named web, land in a slice without the port.
    assert!(
        payments.contains("ports <unset>\n    ADDRESS      READY  SERVING  TERMINATING  NODE          POD\n    10.244.1.21"),
        "{payments}"
    );
    assert!(
        payments.contains("http 80/TCP (IPv4): 10.244.1.20:8080\n"),
        "{payments}"
    );
}

#[test]
fn endpoints_terminating_fallback_and_local_sets() {
    let worker = ok(&[
        "endpoints",
        "--objects",
        "fixtures/proxy.json",
        "--node",
        "kind-worker",
    ]);
    assert!(worker.contains(
        "http 80/TCP (IPv4): 10.244.1.80:8080 (terminating fallback: no endpoint is ready)"
    ));
    assert!(
        worker.contains(
            "http 80/TCP (IPv4) external traffic, local to kind-worker: 10.244.1.40:8080"
        )
    );
    assert!(
        worker
            .contains("dns 53/UDP (IPv4) ClusterIP traffic, local to kind-worker: 10.244.1.70:53")
    );
    let control = ok(&[
        "endpoints",
        "--objects",
        "fixtures/proxy.json",
        "--node",
        "kind-control-plane",
    ]);
    assert!(
        control.contains(
            "http 80/TCP (IPv4) external traffic, local to kind-control-plane: none, DROP"
        )
    );
    assert!(
        control.contains(
            "dns 53/UDP (IPv4) ClusterIP traffic, local to kind-control-plane: none, DROP"
        )
    );
}

#[test]
fn endpoints_json_is_the_same_view() {
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "endpoints",
        "--objects",
        "fixtures/shop.json",
        "--output",
        "json",
    ]))
    .unwrap();
    let web = json["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "web")
        .unwrap();
    assert_eq!(web["slices"][0]["endpoints"].as_array().unwrap().len(), 4);
    assert_eq!(
        web["proxy"]["ports"][0]["endpoints"],
        serde_json::json!(["10.244.1.5:8080", "10.244.1.6:8080", "10.244.2.7:8080"])
    );
    assert_eq!(json["slices"], "input");
}

#[test]
fn endpoints_bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(
        &path,
        r#"{"kind": "List", "items": [{"kind": "Service", "apiVersion": "v1",
            "metadata": {"name": "x", "namespace": "a"}, "spec": {"ports": [{"port": 0}]}}]}"#,
    )
    .unwrap();
    let run = clusterdns(&["endpoints", "--objects", path.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("items[0] (Service a/x): spec.ports[0].port: expected a port number"),
        "{}",
        run.stderr
    );
    let missing = clusterdns(&["endpoints", "--objects", "fixtures/nope.json"]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("fixtures/nope.json"),
        "{}",
        missing.stderr
    );
    let _ = fixture("shop.json");
}
