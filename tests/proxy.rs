//! kube-proxy in the toolbox, through the real binary: `endpoints`, `proxy render`,
//! `proxy trace`, `explain`.

use std::process::Command;

use crate::common::fixture;
use crate::common::golden::assert_golden;

/// What one run of the binary printed, and how it ended.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `clusterdns ARGS...` from the repository root.
pub fn clusterdns(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// Runs and expects exit status 0.
pub fn ok(args: &[&str]) -> String {
    let run = clusterdns(args);
    assert_eq!(run.code, 0, "clusterdns {args:?} failed:\n{}", run.stderr);
    run.stdout
}

// --- endpoints ------------------------------------------------------------------------------

#[test]
fn endpoints_reports_are_golden() {
    let cases: &[(&str, &[&str])] = &[
        ("endpoints-shop.txt", &["--objects", "fixtures/shop.json"]),
        (
            "endpoints-shop-computed.txt",
            &["--objects", "fixtures/shop.json", "--slices", "computed"],
        ),
        (
            "endpoints-proxy-kind-worker.txt",
            &["--objects", "fixtures/proxy.json", "--node", "kind-worker"],
        ),
        (
            "endpoints-proxy-kind-control-plane.txt",
            &[
                "--objects",
                "fixtures/proxy.json",
                "--node",
                "kind-control-plane",
            ],
        ),
        (
            "endpoints-proxy.json",
            &[
                "--objects",
                "fixtures/proxy.json",
                "--node",
                "kind-worker",
                "--output",
                "json",
            ],
        ),
    ];
    for (golden, args) in cases {
        let mut full = vec!["endpoints"];
        full.extend_from_slice(args);
        assert_golden(&format!("tests/golden/proxy/{golden}"), &ok(&full));
    }
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
