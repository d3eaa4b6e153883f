//! `explain`: one Service across pods, slices, kube-proxy, a node's rules and DNS — layers that
//! agree, the zone asked, drift, a node no pod runs on, the payments incident, a port no pod
//! has, and errors.

use crate::common::cli::{clusterdns, ok};

fn explain_json(args: &[&str]) -> (i32, serde_json::Value) {
    let mut full = vec!["explain"];
    full.extend_from_slice(args);
    full.extend(["--output", "json"]);
    let run = clusterdns(&full);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    (run.code, serde_json::from_str(&run.stdout).unwrap())
}

fn finding_kinds(json: &serde_json::Value) -> Vec<String> {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_owned())
        .collect()
}

fn finding(json: &serde_json::Value, kind: &str) -> String {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == kind)
        .map(|f| f["message"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no {kind} finding in {json}"))
}

#[test]
fn explain_agreeing_layers_exit_zero() {
    for ruleset in ["fixtures/node-nat.txt", "fixtures/node.nft"] {
        let (code, json) = explain_json(&[
            "shop/web",
            "--objects",
            "fixtures/shop.json",
            "--ruleset",
            ruleset,
            "--node",
            "kind-control-plane",
        ]);
        assert_eq!(code, 0, "{json}");
        assert!(finding_kinds(&json).is_empty());
    }
    let text = ok(&["explain", "shop/web", "--objects", "fixtures/shop.json"]);
    assert!(
        text.ends_with("findings: none, every layer agrees\n"),
        "{text}"
    );
    assert!(text.contains("dns: web.shop.svc.cluster.local. -> 10.96.0.20\n"));
    // A headless Service whose DNS answers its ready endpoints.
    let (code, headless) = explain_json(&["shop/web-headless", "--objects", "fixtures/shop.json"]);
    assert_eq!(code, 0, "{headless}");
}

/// `--zone` is the zone explain's DNS lookup is served from, not only the name it asks: a
/// cluster whose domain is not cluster.local agrees with itself, and the ExternalName's
/// CNAME is the same as under the default zone.
#[test]
fn explain_asks_dns_in_the_zone_given() {
    for zone in ["example.internal", "example.internal."] {
        let text = ok(&[
            "explain",
            "shop/web",
            "--objects",
            "fixtures/shop.json",
            "--zone",
            zone,
        ]);
        assert!(
            text.contains("dns: web.shop.svc.example.internal. -> 10.96.0.20\n"),
            "--zone {zone}: {text}"
        );
        assert!(
            text.ends_with("findings: none, every layer agrees\n"),
            "--zone {zone}: {text}"
        );
    }
    let (code, json) = explain_json(&[
        "rules/ext",
        "--objects",
        "fixtures/rules.json",
        "--zone",
        "example.internal",
    ]);
    assert_eq!(code, 0, "{json}");
    // Not a zone name: an error saying so, before any lookup.
    let run = clusterdns(&[
        "explain",
        "shop/web",
        "--objects",
        "fixtures/shop.json",
        "--zone",
        "bad zone {",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--zone"), "{}", run.stderr);
}

/// A Service whose name DNS does not answer is drift, whatever the other layers say.
#[test]
fn explain_a_name_that_does_not_resolve_is_drift() {
    // An IP address as externalName: NXDOMAIN, as in CoreDNS.
    let (code, json) = explain_json(&["rules/ext-ip", "--objects", "fixtures/rules.json"]);
    assert_eq!(code, 1, "{json}");
    assert_eq!(finding_kinds(&json), ["dns-unresolved"]);
    let message = finding(&json, "dns-unresolved");
    assert!(
        message.starts_with("ext-ip.rules.svc.cluster.local.: does not resolve (NXDOMAIN)"),
        "{message}"
    );
    // A headless Service with no ready endpoint: its name is NXDOMAIN.
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("empty-headless.json");
    std::fs::write(
        &objects,
        r#"{"apiVersion":"v1","kind":"List","items":[
        {"apiVersion":"v1","kind":"Service","metadata":{"name":"db","namespace":"shop"},
         "spec":{"clusterIP":"None","selector":{"app":"db"},"ports":[{"name":"pg","port":5432}]}}]}"#,
    )
    .unwrap();
    let (code, json) = explain_json(&["shop/db", "--objects", objects.to_str().unwrap()]);
    assert_eq!(code, 1, "{json}");
    assert!(
        finding_kinds(&json).contains(&"dns-unresolved".to_owned()),
        "{json}"
    );
    let text = clusterdns(&["explain", "shop/db", "--objects", objects.to_str().unwrap()]);
    assert!(
        text.stdout
            .contains("dns: db.shop.svc.cluster.local. -> no address (NXDOMAIN)"),
        "{}",
        text.stdout
    );
    assert!(
        !text.stdout.contains("every layer agrees"),
        "{}",
        text.stdout
    );
    // An ExternalName to a DNS name resolves (to its CNAME): no finding.
    let (code, json) = explain_json(&["rules/ext", "--objects", "fixtures/rules.json"]);
    assert_eq!(code, 0, "{json}");
}

/// `--node` naming a node no pod or endpoint is on is a warning, in each command taking it.
#[test]
fn a_node_no_pod_runs_on_is_a_warning() {
    let want = "warning: --node kind-wrker: no pod or endpoint in the objects is on that node \
                (the nodes in them: kind-control-plane, kind-worker, kind-worker2)";
    for args in [
        &[
            "endpoints",
            "--objects",
            "fixtures/shop.json",
            "--node",
            "kind-wrker",
        ][..],
        &[
            "proxy",
            "render",
            "--mode",
            "iptables",
            "--objects",
            "fixtures/shop.json",
            "--cluster-cidr",
            "10.244.0.0/16",
            "--node",
            "kind-wrker",
        ],
        &[
            "explain",
            "shop/web",
            "--objects",
            "fixtures/shop.json",
            "--node",
            "kind-wrker",
        ],
    ] {
        let run = clusterdns(args);
        assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
        let known = clusterdns(
            &args
                .iter()
                .map(|a| if *a == "kind-wrker" { "kind-worker" } else { a })
                .collect::<Vec<_>>(),
        );
        assert!(
            !known.stderr.contains("warning: --node"),
            "{args:?}: {}",
            known.stderr
        );
    }
}

#[test]
fn explain_the_payments_incident() {
    let (code, json) = explain_json(&["pay/payments", "--objects", "fixtures/proxy.json"]);
    assert_eq!(code, 1);
    assert_eq!(finding_kinds(&json), ["target-port-partial"]);
    let message = finding(&json, "target-port-partial");
    assert!(message.contains("resolves in 1 of 3 pods"), "{message}");
    assert!(
        message.contains("payments-v2-5d4b6-b (web=8080/TCP)"),
        "{message}"
    );
    assert!(
        message.contains("payments-v2-5d4b6-c (web=8080/TCP)"),
        "{message}"
    );
    // What to change, by field and value.
    let fix = fix(&json, "target-port-partial");
    assert!(
        fix.contains(
            "or set spec.ports[0].targetPort of Service pay/payments to a port every \
             selected pod has (those without \"http\" have \"web\" (or 8080))"
        ),
        "{fix}"
    );
    assert!(fix.contains("name a container port \"http\""), "{fix}");
}

/// The fix of the finding of `kind`.
fn fix(json: &serde_json::Value, kind: &str) -> String {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == kind)
        .map(|f| f["fix"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no {kind} finding in {json}"))
}

#[test]
fn explain_a_port_no_pod_has() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("objects.json");
    std::fs::write(
        &path,
        r#"{"kind": "List", "items": [
          {"kind": "Service", "apiVersion": "v1", "metadata": {"name": "metrics", "namespace": "mon"},
           "spec": {"clusterIP": "10.96.9.9", "selector": {"app": "exporter"},
                    "ports": [{"name": "metrics", "port": 9100, "targetPort": "metrics"}]}},
          {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "exporter-a", "namespace": "mon", "labels": {"app": "exporter"}},
           "spec": {"nodeName": "kind-worker", "containers": [{"name": "e", "ports": [{"name": "http-metrics", "containerPort": 9100}]}]},
           "status": {"phase": "Running", "podIP": "10.244.1.99", "conditions": [{"type": "Ready", "status": "True"}]}}
        ]}"#,
    )
    .unwrap();
    let (code, json) = explain_json(&["mon/metrics", "--objects", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(
        finding_kinds(&json),
        ["target-port-unresolved", "no-endpoints"]
    );
    assert!(
        finding(&json, "target-port-unresolved").contains("exporter-a (http-metrics=9100/TCP)")
    );
    assert!(finding(&json, "no-endpoints").contains("connections to 10.96.9.9:9100 are rejected"));
    assert_eq!(
        fix(&json, "target-port-unresolved"),
        "set spec.ports[0].targetPort of Service mon/metrics to \"http-metrics\" (or 9100), or \
         name a container port \"metrics\" in the pods' template again"
    );
    assert!(
        fix(&json, "no-endpoints").contains("`kubectl -n mon get pods -l app=exporter`"),
        "{json}"
    );
}

#[test]
fn explain_drift_between_slices_rules_and_dns() {
    let (code, api) = explain_json(&[
        "drift/api",
        "--objects",
        "fixtures/explain/drift.json",
        "--ruleset",
        "fixtures/explain/drift-node-nat.txt",
        "--node",
        "kind-worker",
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        finding_kinds(&api),
        [
            "missing-from-rules",
            "stale-rules",
            "stale-rules",
            "unequal-shares"
        ]
    );
    assert!(finding(&api, "missing-from-rules").contains("10.244.2.31:8080"));
    let stale: Vec<String> = api["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "stale-rules")
        .map(|f| f["message"].as_str().unwrap().to_owned())
        .collect();
    assert!(stale[0].contains("send to 10.244.1.29:8080"), "{stale:?}");
    assert!(
        stale[1].contains("10.244.1.28:8080 (KUBE-SEP-FEWK65Z7VFPROLAM line 25)"),
        "{stale:?}"
    );
    assert!(finding(&api, "unequal-shares").contains("10.244.1.30:8080 22.22%"));

    let (code, db) = explain_json(&["drift/db", "--objects", "fixtures/explain/drift.json"]);
    assert_eq!(code, 1);
    assert_eq!(finding_kinds(&db), ["slices-stale", "dns-mismatch"]);
    assert!(
        finding(&db, "dns-mismatch").contains("answers 10.244.2.41 that no ready endpoint has")
    );
    assert!(finding(&db, "dns-mismatch").contains("does not answer ready endpoint 10.244.2.42"));
    assert!(
        finding(&db, "slices-stale")
            .contains("10.244.2.42 (db-1) is a selected pod missing from the slices")
    );
}

#[test]
fn explain_errors() {
    let run = clusterdns(&["explain", "shop/nope", "--objects", "fixtures/shop.json"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr, "clusterdns: no Service shop/nope in the objects\n",
        "{}",
        run.stderr
    );
    // The namespace it is in, when it is in another; else the name meant.
    let run = clusterdns(&["explain", "default/web", "--objects", "fixtures/shop.json"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("no Service default/web in the objects; there is shop/web\n"),
        "{}",
        run.stderr
    );
    let run = clusterdns(&["explain", "shop/wbe", "--objects", "fixtures/shop.json"]);
    assert_eq!(run.code, 2);
    let endpoints = clusterdns(&[
        "endpoints",
        "--service",
        "shop/wbe",
        "--objects",
        "fixtures/shop.json",
    ]);
    assert!(
        endpoints
            .stderr
            .contains("--service shop/wbe: no such Service in the objects; did you mean shop/web?"),
        "{}",
        endpoints.stderr
    );
    assert!(
        run.stderr
            .contains("no Service shop/wbe in the objects; did you mean shop/web?"),
        "{}",
        run.stderr
    );
    let run = clusterdns(&["explain", "web", "--objects", "fixtures/shop.json"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("expected NAMESPACE/NAME"),
        "{}",
        run.stderr
    );
    let run = clusterdns(&[
        "endpoints",
        "--objects",
        "fixtures/shop.json",
        "--service",
        "shop/nope",
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("--service shop/nope: no such Service"),
        "{}",
        run.stderr
    );
}
