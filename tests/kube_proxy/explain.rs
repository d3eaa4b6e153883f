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

/// Service mon/metrics, whose targetPort "metrics" no pod has: its one pod names the port
/// "http-metrics". The objects file, written in `dir`.
fn port_no_pod_has(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("objects.json");
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
    path
}

#[test]
fn explain_a_port_no_pod_has() {
    let dir = tempfile::tempdir().unwrap();
    let path = port_no_pod_has(dir.path());
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

/// `-o json` gives the evidence as typed fields beside the report's lines: the pods, the
/// ports and where their targetPorts resolve, the slices and their ports, kube-proxy's
/// endpoints, the node's rules, and each finding's change or command.
#[test]
fn explain_json_has_typed_fields() {
    let (code, json) = explain_json(&["pay/payments", "--objects", "fixtures/proxy.json"]);
    assert_eq!(code, 1);
    assert_eq!(json["service"], "pay/payments");
    assert_eq!(json["type"], "ClusterIP");
    assert_eq!(json["clusterIPs"], serde_json::json!(["10.96.1.10"]));
    assert_eq!(json["selector"], serde_json::json!({"app": "payments"}));
    assert_eq!(json["pods"]["ready"].as_array().unwrap().len(), 3);
    let port = &json["ports"][0];
    assert_eq!(port["targetPort"], "http");
    assert_eq!(
        port["resolved"],
        serde_json::json!([{"port": 8080, "pods": ["payments-v1-7c9f8-a"]}])
    );
    assert_eq!(
        port["unresolvedIn"][1],
        serde_json::json!({"pod": "payments-v2-5d4b6-c",
            "containerPorts": [{"name": "web", "port": 8080, "protocol": "TCP"}]})
    );
    // The key evidence: the second slice has endpoints but no ports.
    assert_eq!(json["slices"][1]["endpoints"], 2);
    assert_eq!(json["slices"][1]["ports"], serde_json::json!([]));
    assert_eq!(
        json["kubeProxy"][0]["endpoints"],
        serde_json::json!(["10.244.1.20:8080"])
    );
    assert_eq!(json["dns"]["addresses"], serde_json::json!(["10.96.1.10"]));
    // The port every selected pod has (by number: they name it differently).
    assert_eq!(
        json["findings"][0]["change"],
        serde_json::json!({"object": "Service pay/payments",
            "field": "spec.ports[0].targetPort", "values": [8080]})
    );

    // A port no pod has: the name and the number the pods offer; the command listing them.
    let dir = tempfile::tempdir().unwrap();
    let path = port_no_pod_has(dir.path());
    let (_, json) = explain_json(&["mon/metrics", "--objects", path.to_str().unwrap()]);
    assert_eq!(
        json["findings"][0]["change"]["values"],
        serde_json::json!(["http-metrics", 9100])
    );
    assert_eq!(json["findings"][1]["kind"], "no-endpoints");
    assert_eq!(
        json["findings"][1]["command"],
        "kubectl -n mon get pods -l app=exporter"
    );
    assert_eq!(json["findings"][1]["change"], serde_json::Value::Null);

    // The node's rules, traced: each DNAT target and its share.
    let (_, api) = explain_json(&[
        "drift/api",
        "--objects",
        "fixtures/explain/drift.json",
        "--ruleset",
        "fixtures/explain/drift-node-nat.txt",
        "--node",
        "kind-worker",
    ]);
    let rules = &api["rules"][0];
    assert_eq!(rules["ruleset"], "fixtures/explain/drift-node-nat.txt");
    assert_eq!(rules["verdict"], "dnat", "{rules}");
    let shares: f64 = rules["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["share"].as_f64().unwrap())
        .sum();
    assert!((shares - 1.0).abs() < 1e-9, "{rules}");
    let stale = api["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "stale-rules")
        .unwrap();
    assert_eq!(
        stale["command"],
        "kubectl -n kube-system logs -l k8s-app=kube-proxy"
    );
}

/// Without a Service, `explain` checks every Service of the namespace (`-n`), or of every
/// namespace (the objects files' default, `-A` on a cluster), and lists only those with
/// findings, with the count; exit 1 when there is any.
#[test]
fn explain_every_service_lists_those_with_findings() {
    let run = clusterdns(&["explain", "--objects", "fixtures/proxy.json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(
            "pay/payments: 1 finding\n  target-port-partial: http 80/TCP: targetPort \"http\" \
             resolves in 1 of 3 pods;"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("\n    fix: name a container port \"http\""),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.ends_with(
            "\n\nchecked 10 Services in 2 namespaces: 1 with findings (1 finding); \
             `clusterdns explain NS/NAME` shows the evidence for one\n"
        ),
        "{}",
        run.stdout
    );
    let every = clusterdns(&["explain", "-A", "--objects", "fixtures/proxy.json"]);
    assert_eq!((every.code, &every.stdout), (run.code, &run.stdout));

    let json: serde_json::Value = serde_json::from_str(
        &clusterdns(&["explain", "--objects", "fixtures/proxy.json", "-o", "json"]).stdout,
    )
    .unwrap();
    assert_eq!(
        (&json["checked"], &json["withFindings"], &json["findings"]),
        (&10.into(), &1.into(), &1.into())
    );
    assert_eq!(json["services"].as_array().unwrap().len(), 1);
    assert_eq!(json["services"][0]["service"], "pay/payments");

    // A namespace where every layer agrees: exit 0.
    let edge = clusterdns(&["explain", "-n", "edge", "--objects", "fixtures/proxy.json"]);
    assert_eq!(edge.code, 0, "{}{}", edge.stdout, edge.stderr);
    assert_eq!(
        edge.stdout,
        "checked 9 Services in namespace edge: every layer agrees for each\n"
    );

    // A Service and -A: one or the other.
    let both = clusterdns(&[
        "explain",
        "-A",
        "pay/payments",
        "--objects",
        "fixtures/proxy.json",
    ]);
    assert_eq!(both.code, 2);
    assert!(
        both.stderr.contains("cannot be used with"),
        "{}",
        both.stderr
    );
}

/// A namespace that is nowhere in the objects: said, with the one meant.
#[test]
fn a_misspelt_namespace_is_named_with_the_one_meant() {
    for args in [
        &["explain", "shpo/nothing", "--objects", "fixtures/shop.json"][..],
        &["explain", "-n", "shpo", "--objects", "fixtures/shop.json"],
        &["endpoints", "-n", "shpo", "--objects", "fixtures/shop.json"],
    ] {
        let run = clusterdns(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stdout);
        assert!(
            run.stderr
                .ends_with("no namespace shpo in the objects; did you mean shop?\n"),
            "{args:?}: {}",
            run.stderr
        );
    }
    // The same Service name in another namespace says where it is, whatever the namespace.
    let run = clusterdns(&["explain", "shpo/web", "--objects", "fixtures/shop.json"]);
    assert!(
        run.stderr
            .ends_with("no Service shpo/web in the objects; there is shop/web\n"),
        "{}",
        run.stderr
    );
}

/// Checking every Service, a DNS server that does not answer is waited for once, not once a
/// Service: the rest say why they were not asked.
#[test]
fn explain_every_service_waits_for_a_silent_dns_server_once() {
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    let started = std::time::Instant::now();
    let run = clusterdns(&[
        "explain",
        "--objects",
        "fixtures/shop.json",
        "--dns-server",
        &address,
        "-o",
        "json",
    ]);
    let took = started.elapsed();
    assert_eq!(run.code, 1, "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(json["checked"], 7, "{json}");
    // Seven Services, two questions each, 2 s a question: 28 s if each were waited for.
    assert!(took < std::time::Duration::from_secs(8), "{took:?}");
    let live = &json["services"][0]["liveDns"];
    assert_eq!(live["server"], address.as_str());
    assert!(
        live["error"]
            .as_str()
            .unwrap()
            .starts_with("no answer in 2 s"),
        "{live}"
    );
}
