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

// --- proxy render --mode iptables -----------------------------------------------------------

fn render(fixture: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "proxy",
        "render",
        "--mode",
        "iptables",
        "--objects",
        fixture,
        "--cluster-cidr",
        "10.244.0.0/16,fd00:10:244::/56",
    ];
    args.extend_from_slice(extra);
    ok(&args)
}

#[test]
fn iptables_renders_are_golden() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "iptables-shop-kind-worker.txt",
            "fixtures/shop.json",
            &["--node", "kind-worker", "--kube-proxy-names"],
        ),
        (
            "iptables-shop-hex.txt",
            "fixtures/shop.json",
            &["--node", "kind-worker"],
        ),
        (
            "iptables-proxy-kind-worker.txt",
            "fixtures/proxy.json",
            &["--node", "kind-worker", "--kube-proxy-names"],
        ),
        (
            "iptables-proxy-kind-control-plane.txt",
            "fixtures/proxy.json",
            &["--node", "kind-control-plane", "--kube-proxy-names"],
        ),
        (
            "ip6tables-proxy-kind-worker.txt",
            "fixtures/proxy.json",
            &[
                "--node",
                "kind-worker",
                "--kube-proxy-names",
                "--family",
                "ipv6",
            ],
        ),
    ];
    for (golden, fixture, extra) in cases {
        assert_golden(
            &format!("tests/golden/proxy/{golden}"),
            &render(fixture, extra),
        );
    }
}

/// The lines the lesson greps for, in iptables-save's shape.
#[test]
fn iptables_web_reads_like_a_node() {
    let rules = render(
        "fixtures/shop.json",
        &["--node", "kind-worker", "--kube-proxy-names"],
    );
    let web: Vec<&str> = rules
        .lines()
        .filter(|l| l.contains("shop/web:http"))
        .collect();
    assert!(web.contains(
        &"-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp -m comment --comment \"shop/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-67NZLRHBNDSAWJRO"
    ));
    let cascade: Vec<&str> = web
        .iter()
        .filter(|l| l.starts_with("-A KUBE-SVC-67NZLRHBNDSAWJRO -m comment"))
        .copied()
        .collect();
    assert_eq!(cascade.len(), 3);
    assert!(cascade[0].contains("--probability 0.33333333349"));
    assert!(cascade[1].contains("--probability 0.50000000000"));
    assert!(!cascade[2].contains("statistic"));
    assert!(web.contains(
        &"-A KUBE-SVC-67NZLRHBNDSAWJRO ! -s 10.244.0.0/16 -d 10.96.0.20/32 -p tcp -m comment --comment \"shop/web:http cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ"
    ));
    assert_eq!(
        web.iter()
            .filter(|l| l.contains("-j DNAT --to-destination"))
            .count(),
        3
    );
    assert!(rules.contains("-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n"));
    // The two chains every cluster has.
    assert!(rules.contains(":KUBE-SVC-NPX46M4PTMTKRN6Y - [0:0]\n"));
    assert!(rules.contains(":KUBE-SVC-TCOU7JCQXEZGVUNU - [0:0]\n"));
    // No endpoints: a REJECT in filter, nothing in nat.
    assert!(rules.contains(
        "-A KUBE-SERVICES -d 10.96.0.40/32 -p tcp -m comment --comment \"shop/empty:http has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable\n"
    ));
    let nat = rules.split("*nat").nth(1).unwrap();
    assert!(!nat.contains("shop/empty"));
    // Headless Services have no rules.
    assert!(!rules.contains("shop/db"));
}

#[test]
fn iptables_hex_names_are_not_kube_proxys() {
    let hex = render("fixtures/shop.json", &["--node", "kind-worker"]);
    assert!(!hex.contains("KUBE-SVC-NPX46M4PTMTKRN6Y"));
    let svc = hex
        .lines()
        .find(|l| l.contains("default/kubernetes:https cluster IP\" -m tcp --dport 443 -j "))
        .unwrap();
    let chain = svc.rsplit(' ').next().unwrap();
    assert!(chain.starts_with("KUBE-SVC-"), "{chain}");
    assert!(chain[9..].bytes().all(|b| b.is_ascii_hexdigit()), "{chain}");
}

#[test]
fn iptables_features_of_the_proxy_fixture() {
    let worker = render(
        "fixtures/proxy.json",
        &["--node", "kind-worker", "--kube-proxy-names"],
    );
    // 1/5 as the statistic match stores it.
    assert!(worker.contains("\"edge/web-np:http -> 10.244.2.100:8080\" -m statistic --mode random --probability 0.20000000019 "));
    // NodePort, reached from the last KUBE-SERVICES rule for local destinations.
    assert!(worker.contains("-A KUBE-NODEPORTS -p tcp -m comment --comment \"edge/web-np:http\" -m tcp --dport 30090 -j KUBE-EXT-"));
    assert!(worker.contains(
        "\"masquerade traffic for edge/web-np:http external destinations\" -j KUBE-MARK-MASQ"
    ));
    // LoadBalancer with source ranges: KUBE-FW, and a DROP in KUBE-PROXY-FIREWALL.
    assert!(worker.contains("\"edge/lb:https loadbalancer IP\" -m tcp --dport 443 -j KUBE-FW-"));
    assert!(worker.contains(
        "-s 10.0.0.0/8 -m comment --comment \"edge/lb:https loadbalancer IP\" -j KUBE-EXT-"
    ));
    assert!(worker.contains(
        "-s 192.168.0.0/16 -m comment --comment \"edge/lb:https loadbalancer IP\" -j KUBE-EXT-"
    ));
    assert!(worker.contains("-A KUBE-PROXY-FIREWALL -d 172.18.255.200/32 -p tcp -m comment --comment \"edge/lb:https traffic not accepted by KUBE-FW-"));
    assert!(
        worker.contains(
            "\"other traffic to edge/lb:https will be dropped by KUBE-PROXY-FIREWALL\"\n"
        )
    );
    // externalTrafficPolicy Local: KUBE-SVL with the local endpoint only; health check port.
    assert!(worker.contains("-A KUBE-NODEPORTS -p tcp -m comment --comment \"edge/lb-local:http health check node port\" -m tcp --dport 32001 -j ACCEPT"));
    let svl: Vec<&str> = worker
        .lines()
        .filter(|l| l.starts_with("-A KUBE-SVL-") && l.contains("edge/lb-local:http ->"))
        .collect();
    assert_eq!(svl.len(), 1, "{svl:?}");
    assert!(svl[0].contains("10.244.1.40:8080"));
    // externalIPs.
    assert!(worker.contains("-A KUBE-SERVICES -d 192.0.2.10/32 -p tcp -m comment --comment \"edge/ext:http external IP\" -m tcp --dport 80 -j KUBE-EXT-"));
    // ClientIP affinity: a recent check per endpoint before the cascade, and a recent set.
    assert!(worker.contains("-m comment --comment \"edge/sticky:http -> 10.244.1.60:8080\" -m recent --rcheck --seconds 600 --reap --name KUBE-SEP-"));
    assert!(worker.contains(
        "-p tcp -m comment --comment \"edge/sticky:http\" -m recent --set --name KUBE-SEP-"
    ));
    // internalTrafficPolicy Local with a local endpoint: the ClusterIP goes to KUBE-SVL.
    assert!(worker.contains("\"edge/node-cache:dns cluster IP\" -m udp --dport 53 -j KUBE-SVL-"));
    // The terminating fallback: the serving endpoint is used.
    assert!(worker.contains("--to-destination 10.244.1.80:8080"));
    assert!(!worker.contains("--to-destination 10.244.2.80:8080"));
    // payments: only the pod whose port is still called http.
    assert!(worker.contains("--to-destination 10.244.1.20:8080"));
    assert!(!worker.contains("10.244.1.21"));

    let control = render(
        "fixtures/proxy.json",
        &["--node", "kind-control-plane", "--kube-proxy-names"],
    );
    // No local endpoint: ClusterIP traffic to node-cache is dropped, and no KUBE-SVL/SEP.
    assert!(control.contains("-A KUBE-SERVICES -d 10.96.2.50/32 -p udp -m comment --comment \"edge/node-cache:dns has no local endpoints\" -m udp --dport 53 -j DROP"));
    assert!(
        !control
            .lines()
            .any(|l| l.starts_with("-A KUBE-SEP-") && l.contains("edge/node-cache"))
    );
    // External traffic to lb-local is dropped, but the EXT chain keeps its short-circuits.
    assert!(control.contains("-A KUBE-EXTERNAL-SERVICES -p tcp -m comment --comment \"edge/lb-local:http has no local endpoints\" -m addrtype --dst-type LOCAL -m tcp --dport 31080 -j DROP"));
    assert!(
        control.contains("\"route LOCAL traffic for edge/lb-local:http external destinations\"")
    );
}

#[test]
fn ip6tables_render_uses_the_ipv6_addresses() {
    let v6 = render(
        "fixtures/proxy.json",
        &[
            "--node",
            "kind-worker",
            "--kube-proxy-names",
            "--family",
            "ipv6",
        ],
    );
    assert!(v6.contains("-A KUBE-SERVICES -d fd00:10:96::2:70/128 -p tcp -m comment --comment \"edge/dual:http cluster IP\""));
    assert!(v6.contains("-j DNAT --to-destination [fd00:10:244:1::90]:8080"));
    assert!(v6.contains("! -s fd00:10:244::/56 -d fd00:10:96::2:70/128"));
    assert!(v6.contains(
        "-A KUBE-SERVICES ! -d ::1/128 -m comment --comment \"kubernetes service nodeports;"
    ));
    // Single-stack IPv4 Services are not in the IPv6 rules.
    assert!(!v6.contains("edge/web-np"));
    assert!(!v6.contains("KUBE-FIREWALL !"));
}

#[test]
fn render_errors() {
    let run = clusterdns(&[
        "proxy",
        "render",
        "--mode",
        "iptables",
        "--objects",
        "fixtures/shop.json",
        "--cluster-cidr",
        "10.244.0.0/16",
        "--family",
        "ipv6",
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("--cluster-cidr: no IPv6 CIDR among 10.244.0.0/16"),
        "{}",
        run.stderr
    );
    let run = clusterdns(&[
        "proxy",
        "render",
        "--mode",
        "iptables",
        "--objects",
        "fixtures/shop.json",
        "--cluster-cidr",
        "10.244.0.0/33",
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--cluster-cidr"), "{}", run.stderr);
}
