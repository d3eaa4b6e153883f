//! kube-proxy in the toolbox, through the real binary: `endpoints`, `proxy render`,
//! `proxy trace`, `explain`.

use crate::common::cli::{clusterdns, ok};
use crate::common::fixture;
use crate::common::golden::assert_golden;

// --- endpoints ------------------------------------------------------------------------------

/// One golden file under `tests/golden/proxy/`, and the command line that prints it.
struct Golden {
    /// The file's name.
    file: &'static str,
    /// The objects (`--objects`).
    objects: &'static str,
    /// The rest of the command line.
    args: &'static [&'static str],
}

/// Each case's output, as `print` runs it, is its golden file.
fn assert_goldens(cases: &[Golden], print: impl Fn(&Golden) -> String) {
    for case in cases {
        assert_golden(&format!("tests/golden/proxy/{}", case.file), &print(case));
    }
}

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

// --- proxy render --mode iptables -----------------------------------------------------------

/// `proxy render --mode MODE --objects FIXTURE` with kind's dual-stack cluster CIDRs.
fn render_in(mode: &str, fixture: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "proxy",
        "render",
        "--mode",
        mode,
        "--objects",
        fixture,
        "--cluster-cidr",
        "10.244.0.0/16,fd00:10:244::/56",
    ];
    args.extend_from_slice(extra);
    ok(&args)
}

fn render(fixture: &str, extra: &[&str]) -> String {
    render_in("iptables", fixture, extra)
}

#[test]
fn iptables_renders_are_golden() {
    let cases = [
        Golden {
            file: "iptables-shop-kind-worker.txt",
            objects: "fixtures/shop.json",
            args: &["--node", "kind-worker", "--kube-proxy-names"],
        },
        Golden {
            file: "iptables-shop-hex.txt",
            objects: "fixtures/shop.json",
            args: &["--node", "kind-worker"],
        },
        Golden {
            file: "iptables-proxy-kind-worker.txt",
            objects: "fixtures/proxy.json",
            args: &["--node", "kind-worker", "--kube-proxy-names"],
        },
        Golden {
            file: "iptables-proxy-kind-control-plane.txt",
            objects: "fixtures/proxy.json",
            args: &["--node", "kind-control-plane", "--kube-proxy-names"],
        },
        Golden {
            file: "ip6tables-proxy-kind-worker.txt",
            objects: "fixtures/proxy.json",
            args: &[
                "--node",
                "kind-worker",
                "--kube-proxy-names",
                "--family",
                "ipv6",
            ],
        },
    ];
    assert_goldens(&cases, |case| render(case.objects, case.args));
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

    // The lesson's Easy exercise: internalTrafficPolicy Local on a two-node fixture.
    let node_cache = |rules: &str| -> (usize, usize) {
        let lines: Vec<&str> = rules
            .lines()
            .filter(|l| l.contains("\"edge/node-cache:dns"))
            .collect();
        (
            lines
                .iter()
                .filter(|l| l.starts_with("-A KUBE-SEP-") && l.contains("DNAT"))
                .count(),
            lines
                .iter()
                .filter(|l| l.starts_with("-A KUBE-SVC-"))
                .count(),
        )
    };
    assert_eq!(
        node_cache(&worker),
        (1, 0),
        "kind-worker: one KUBE-SEP-, no KUBE-SVC-"
    );
    let control = render(
        "fixtures/proxy.json",
        &["--node", "kind-control-plane", "--kube-proxy-names"],
    );
    assert_eq!(
        node_cache(&control),
        (0, 0),
        "kind-control-plane: no chain at all"
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

/// kube-proxy 1.29+ on a kernel with nfacct counts INVALID drops and localhost NodePort
/// connections (pkg/proxy/iptables/proxier.go): `--nfacct` renders both, as iptables-save
/// prints them, and the localhost NodePort rule is the one a node's own `curl
/// 127.0.0.1:NODEPORT` takes.
#[test]
fn iptables_render_with_nfacct_has_kube_proxys_counters() {
    let plain = render(
        "fixtures/shop.json",
        &["--node", "kind-worker", "--kube-proxy-names"],
    );
    let counted = render(
        "fixtures/shop.json",
        &["--node", "kind-worker", "--kube-proxy-names", "--nfacct"],
    );
    assert!(!plain.contains("nfacct"));
    let added: Vec<&str> = counted
        .lines()
        .filter(|line| !plain.lines().any(|p| p == *line))
        .collect();
    assert_eq!(
        added,
        [
            "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP",
            "-A KUBE-NODEPORTS -d 127.0.0.0/8 -p tcp -m comment --comment \"shop/checkout:http\" -m tcp --dport 30080 -m nfacct --nfacct-name  localhost_nps_accepted_pkts -j KUBE-EXT-FAXFPGMJVQWLKPGL",
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nfacct.txt");
    std::fs::write(&path, &counted).unwrap();
    let (code, json) = trace_json(
        path.to_str().unwrap(),
        &["--to", "127.0.0.1:30080", "--local"],
    );
    assert_eq!(code, 0, "{json}");
    assert!(
        json["path"].as_array().unwrap().iter().any(|s| s["rule"]
            .as_str()
            .unwrap()
            .contains("localhost_nps_accepted_pkts")),
        "{json}"
    );
    // IPv6 has no localhost NodePorts.
    let v6 = render("fixtures/dualstack.json", &["--family", "ipv6", "--nfacct"]);
    assert!(!v6.contains("localhost_nps_accepted_pkts"));
    assert!(v6.contains("ct_state_invalid_dropped_pkts"));
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

// --- proxy trace ----------------------------------------------------------------------------

/// A rendered ruleset in a temporary file.
struct Rendered {
    _dir: tempfile::TempDir,
    path: String,
}

fn rendered(fixture: &str, extra: &[&str]) -> Rendered {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rules.txt");
    std::fs::write(&path, render(fixture, extra)).unwrap();
    Rendered {
        path: path.to_str().unwrap().to_owned(),
        _dir: dir,
    }
}

fn trace_json(ruleset: &str, args: &[&str]) -> (i32, serde_json::Value) {
    let mut full = vec!["proxy", "trace", "--ruleset", ruleset, "--output", "json"];
    full.extend_from_slice(args);
    let run = clusterdns(&full);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    (run.code, serde_json::from_str(&run.stdout).unwrap())
}

fn endpoint_list(json: &serde_json::Value) -> Vec<(String, u64, f64)> {
    json["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["address"].as_str().unwrap().to_owned(),
                e["port"].as_u64().unwrap(),
                e["share"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// The lesson's Step 9, on clusterdns's own rules for kind-worker.
#[test]
fn trace_the_lessons_step_nine() {
    let rules = rendered("fixtures/shop.json", &["--node", "kind-worker"]);

    let (code, web) = trace_json(&rules.path, &["--to", "10.96.0.20:80"]);
    assert_eq!(code, 0);
    assert_eq!(web["verdict"], "dnat");
    let endpoints = endpoint_list(&web);
    let addresses: Vec<&str> = endpoints.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(addresses, ["10.244.1.5", "10.244.1.6", "10.244.2.7"]);
    for (_, port, share) in &endpoints {
        assert_eq!(*port, 8080);
        assert!((share - 1.0 / 3.0).abs() < 1e-9, "{share}");
    }
    assert_eq!(web["endpoints"][0]["probability"], "0.33333333349");
    assert_eq!(web["endpoints"][1]["probability"], "0.50000000000");
    assert!(web["endpoints"][2]["probability"].is_null());
    let masquerade = web["masquerade"].as_array().unwrap();
    assert!(
        masquerade
            .iter()
            .any(|m| m["when"] == "the source is not in 10.244.0.0/16")
    );

    let empty = clusterdns(&[
        "proxy",
        "trace",
        "--ruleset",
        &rules.path,
        "--to",
        "10.96.0.40:80",
    ]);
    assert_eq!(empty.code, 1);
    assert!(
        empty.stdout.starts_with(
            "10.96.0.40:80/tcp from the network (PREROUTING), source unknown: reject\n"
        ),
        "{}",
        empty.stdout
    );
    assert!(empty.stdout.contains("filter KUBE-SERVICES line"));
    assert!(
        empty
            .stdout
            .contains("\"shop/empty:http has no endpoints\"")
    );

    // NodePort on kind-worker: NODEPORTS -> EXT -> SVL, only kind-worker's checkout pod.
    let (code, nodeport) = trace_json(&rules.path, &["--to", "172.18.0.3:30080", "--node-local"]);
    assert_eq!(code, 0);
    assert_eq!(
        endpoint_list(&nodeport),
        [("10.244.1.9".to_owned(), 8080, 1.0)]
    );
    let chains: Vec<String> = nodeport["endpoints"][0]["path"]
        .as_array()
        .unwrap()
        .iter()
        .chain(nodeport["path"].as_array().unwrap())
        .map(|s| s["chain"].as_str().unwrap().to_owned())
        .collect();
    assert!(chains.contains(&"KUBE-NODEPORTS".to_owned()), "{chains:?}");
    assert!(
        chains.iter().any(|c| c.starts_with("KUBE-EXT-")),
        "{chains:?}"
    );
    assert!(
        chains.iter().any(|c| c.starts_with("KUBE-SVL-")),
        "{chains:?}"
    );
    // externalTrafficPolicy Local: the client's address is kept (unless the pod calls
    // itself through the node port: the hairpin).
    let masquerade = nodeport["masquerade"].as_array().unwrap();
    assert_eq!(masquerade.len(), 1, "{nodeport}");
    assert_eq!(masquerade[0]["when"], "the source is 10.244.1.9");
    // Without --node-local the node's address is just forwarded.
    let (code, elsewhere) = trace_json(&rules.path, &["--to", "172.18.0.3:30080"]);
    assert_eq!((code, elsewhere["verdict"].as_str()), (1, Some("no-match")));
}

#[test]
fn trace_a_kind_node_with_docker_and_kind_chains() {
    let (code, dns) = trace_json(
        "fixtures/node-nat.txt",
        &["--to", "10.96.0.10:53", "--proto", "udp"],
    );
    assert_eq!(code, 0);
    assert_eq!(
        endpoint_list(&dns),
        [
            ("10.244.0.2".to_owned(), 53, 0.5),
            ("10.244.0.3".to_owned(), 53, 0.5)
        ]
    );
    assert_eq!(
        dns["endpoints"][0]["dnat"]["chain"], "KUBE-SEP-YIL6JZP7A3QYXJU2",
        "kube-proxy's own chain names"
    );
    assert!(dns["warnings"].as_array().unwrap().is_empty(), "{dns}");
    // Docker's embedded DNS, from a process on the node: DOCKER_OUTPUT, not a Service.
    let (code, docker) = trace_json(
        "fixtures/node-nat.txt",
        &["--to", "172.18.0.1:53", "--proto", "udp", "--local"],
    );
    assert_eq!(code, 0);
    assert_eq!(
        endpoint_list(&docker),
        [("127.0.0.11".to_owned(), 52883, 1.0)]
    );
    // The kind masq agent leaves pod destinations alone: a pod client is not masqueraded.
    let (_, from_pod) = trace_json(
        "fixtures/node-nat.txt",
        &["--to", "10.96.0.20:80", "--from", "10.244.0.7"],
    );
    assert!(
        from_pod["masquerade"].as_array().unwrap().is_empty(),
        "{from_pod}"
    );
    let (_, from_outside) = trace_json(
        "fixtures/node-nat.txt",
        &["--to", "10.96.0.20:80", "--from", "172.18.0.9"],
    );
    let masquerade = from_outside["masquerade"].as_array().unwrap();
    assert_eq!(masquerade.len(), 1);
    assert!(masquerade[0]["when"].is_null());
    assert!(
        masquerade[0]["marked_by"]["chain"]
            .as_str()
            .unwrap()
            .starts_with("KUBE-SVC-")
    );
    assert_eq!(masquerade[0]["masqueraded_by"]["chain"], "KUBE-POSTROUTING");
}

#[test]
fn trace_json_is_the_contract() {
    let (_, json) = trace_json("fixtures/node-nat.txt", &["--to", "10.96.0.20:80"]);
    for key in ["verdict", "path", "endpoints", "masquerade"] {
        assert!(json.get(key).is_some(), "missing {key}: {json}");
    }
    for endpoint in json["endpoints"].as_array().unwrap() {
        assert!(endpoint["address"].is_string());
        assert!(endpoint["port"].is_u64());
        assert!(endpoint["share"].is_f64());
    }
    for step in json["path"].as_array().unwrap() {
        assert!(step["chain"].is_string() && step["line"].is_u64() && step["rule"].is_string());
    }
    let verdicts: Vec<String> = [
        &["--to", "10.96.0.20:80"][..],
        &["--to", "10.96.0.99:80"][..],
    ]
    .iter()
    .map(|args| {
        trace_json("fixtures/node-nat.txt", args).1["verdict"]
            .as_str()
            .unwrap()
            .to_owned()
    })
    .collect();
    assert_eq!(verdicts, ["dnat", "no-match"]);
}

#[test]
fn trace_exit_codes() {
    let control = rendered(
        "fixtures/proxy.json",
        &["--node", "kind-control-plane", "--kube-proxy-names"],
    );
    /// A trace, and the exit status and verdict it ends with.
    struct Case {
        args: &'static [&'static str],
        code: i32,
        verdict: &'static str,
    }
    let cases = [
        Case {
            args: &["--to", "10.96.2.20:80"],
            code: 0,
            verdict: "dnat",
        },
        Case {
            args: &["--to", "10.96.2.50:53", "--proto", "udp"],
            code: 1,
            verdict: "drop",
        },
        Case {
            args: &["--to", "10.96.0.40:80"],
            code: 1,
            verdict: "no-match",
        },
        Case {
            args: &["--to", "172.18.0.2:31080", "--node-local"],
            code: 1,
            verdict: "drop",
        },
    ];
    for Case {
        args,
        code,
        verdict,
    } in &cases
    {
        let (got, json) = trace_json(&control.path, args);
        assert_eq!(
            (got, json["verdict"].as_str().unwrap()),
            (*code, *verdict),
            "{args:?}: {json}"
        );
    }
    let (_, dropped) = trace_json(&control.path, &["--to", "10.96.2.50:53", "--proto", "udp"]);
    assert!(
        dropped["terminal"]["rule"]
            .as_str()
            .unwrap()
            .contains("\"edge/node-cache:dns has no local endpoints\""),
        "{dropped}"
    );
}

#[test]
fn trace_the_proxy_fixture_features() {
    let worker = rendered(
        "fixtures/proxy.json",
        &["--node", "kind-worker", "--kube-proxy-names"],
    );
    // LoadBalancer source ranges: allowed sources reach the endpoints (masqueraded,
    // externalTrafficPolicy Cluster); others are dropped by KUBE-PROXY-FIREWALL.
    let (code, allowed) = trace_json(
        &worker.path,
        &["--to", "172.18.255.200:443", "--from", "10.1.2.3"],
    );
    assert_eq!(code, 0);
    assert_eq!(endpoint_list(&allowed).len(), 2);
    assert!(
        allowed["masquerade"][0]["why"]
            .as_str()
            .unwrap()
            .contains("externalTrafficPolicy Cluster")
    );
    let (code, denied) = trace_json(
        &worker.path,
        &["--to", "172.18.255.200:443", "--from", "203.0.113.7"],
    );
    assert_eq!((code, denied["verdict"].as_str()), (1, Some("drop")));
    assert_eq!(denied["terminal"]["chain"], "KUBE-PROXY-FIREWALL");
    // Without --from, the firewall's source tests are conditions.
    let (_, unknown) = trace_json(&worker.path, &["--to", "172.18.255.200:443"]);
    assert!(
        unknown["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c.as_str().unwrap().contains("the source is in 10.0.0.0/8"))
    );

    // ClientIP affinity: a new client matches no recent list; the cascade decides.
    let (_, sticky) = trace_json(&worker.path, &["--to", "10.96.2.40:80"]);
    assert_eq!(endpoint_list(&sticky).len(), 2);
    assert!(sticky["conditions"].as_array().unwrap().iter().any(|c| {
        c.as_str()
            .unwrap()
            .contains("session affinity: a new client is not in the recent list KUBE-SEP-")
    }));

    // externalIPs.
    let (_, external) = trace_json(&worker.path, &["--to", "192.0.2.10:80"]);
    assert_eq!(
        endpoint_list(&external),
        [("10.244.2.50".to_owned(), 8080, 1.0)]
    );

    // The terminating fallback.
    let (_, draining) = trace_json(&worker.path, &["--to", "10.96.2.60:80"]);
    assert_eq!(
        endpoint_list(&draining),
        [("10.244.1.80".to_owned(), 8080, 1.0)]
    );

    // payments: one endpoint left.
    let (_, payments) = trace_json(&worker.path, &["--to", "10.96.1.10:80"]);
    assert_eq!(
        endpoint_list(&payments),
        [("10.244.1.20".to_owned(), 8080, 1.0)]
    );

    // Five endpoints, one fifth each.
    let (_, five) = trace_json(&worker.path, &["--to", "10.96.2.90:80"]);
    assert_eq!(five["endpoints"][0]["probability"], "0.20000000019");
    for (_, _, share) in endpoint_list(&five) {
        assert!((share - 0.2).abs() < 1e-9);
    }

    // IPv6, on ip6tables rules.
    let v6 = rendered(
        "fixtures/proxy.json",
        &[
            "--node",
            "kind-worker",
            "--kube-proxy-names",
            "--family",
            "ipv6",
        ],
    );
    let (code, dual) = trace_json(&v6.path, &["--to", "[fd00:10:96::2:70]:80"]);
    assert_eq!(code, 0);
    assert_eq!(
        endpoint_list(&dual)
            .iter()
            .map(|e| e.0.as_str())
            .collect::<Vec<_>>(),
        ["fd00:10:244:1::90", "fd00:10:244:2::90"]
    );
}

#[test]
fn trace_simulation_is_deterministic() {
    let args = [
        "proxy",
        "trace",
        "--ruleset",
        "fixtures/node-nat.txt",
        "--to",
        "10.96.0.20:80",
        "--simulate",
        "3000",
    ];
    let first = ok(&args);
    assert_eq!(first, ok(&args));
    let mut seeded = args.to_vec();
    seeded.extend(["--seed", "2"]);
    assert_ne!(first, ok(&seeded));
    let simulated = first
        .split("simulated 3000 connections (seed 1):\n")
        .nth(1)
        .unwrap();
    let counts: Vec<u64> = simulated
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 3);
    assert_eq!(counts.iter().sum::<u64>(), 3000);
    assert!(
        counts.iter().all(|c| (850..=1150).contains(c)),
        "{counts:?}"
    );
}

#[test]
fn trace_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(
        &bad,
        "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j KUBE-NOWHERE\nCOMMIT\n",
    )
    .unwrap();
    let run = clusterdns(&[
        "proxy",
        "trace",
        "--ruleset",
        bad.to_str().unwrap(),
        "--to",
        "10.96.0.1:80",
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains(&format!(
            "{}:3: -j KUBE-NOWHERE: no chain KUBE-NOWHERE",
            bad.display()
        )),
        "{}",
        run.stderr
    );
    let run = clusterdns(&[
        "proxy",
        "trace",
        "--ruleset",
        "fixtures/node-nat.txt",
        "--to",
        "10.96.0.1",
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("expected IP:PORT"), "{}", run.stderr);
    let run = clusterdns(&[
        "proxy",
        "trace",
        "--ruleset",
        "fixtures/none.txt",
        "--to",
        "10.96.0.1:80",
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("fixtures/none.txt"), "{}", run.stderr);
}

#[test]
fn trace_iptables_dash_s_output() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.txt");
    let text = "-P PREROUTING ACCEPT\n-P INPUT ACCEPT\n-P OUTPUT ACCEPT\n-P POSTROUTING ACCEPT\n-N KUBE-SERVICES\n-N KUBE-SVC-L65ENXXZWWSAPRCR\n-N KUBE-SEP-TIQJFJVSHRJZTTZW\n-N KUBE-SEP-MEZP33SDGZXSPSO5\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n-A KUBE-SERVICES -d 10.96.86.215/32 -p tcp -m comment --comment \"default/my-nginx cluster IP\" -m tcp --dport 80 -j KUBE-SVC-L65ENXXZWWSAPRCR\n-A KUBE-SVC-L65ENXXZWWSAPRCR -m comment --comment \"default/my-nginx -> 10.244.2.3:80\" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-TIQJFJVSHRJZTTZW\n-A KUBE-SVC-L65ENXXZWWSAPRCR -m comment --comment \"default/my-nginx -> 10.244.3.3:80\" -j KUBE-SEP-MEZP33SDGZXSPSO5\n-A KUBE-SEP-MEZP33SDGZXSPSO5 -p tcp -m comment --comment \"default/my-nginx\" -m tcp -j DNAT --to-destination 10.244.3.3:80\n-A KUBE-SEP-TIQJFJVSHRJZTTZW -p tcp -m comment --comment \"default/my-nginx\" -m tcp -j DNAT --to-destination 10.244.2.3:80\n";
    std::fs::write(&path, text).unwrap();
    let (code, json) = trace_json(path.to_str().unwrap(), &["--to", "10.96.86.215:80"]);
    assert_eq!(code, 0);
    assert_eq!(
        endpoint_list(&json),
        [
            ("10.244.2.3".to_owned(), 80, 0.5),
            ("10.244.3.3".to_owned(), 80, 0.5)
        ]
    );
}

/// kube-proxy writes its rules for iptables-restore with the match modules before the
/// protocol and the port options after the addresses (`-m tcp -p tcp -d 10.96.0.20 --dport
/// 80`); tests/fixtures/kube-proxy-restore-shop.txt is the kind-worker golden in that order
/// (iptables-restore and iptables-save 1.8.9 print the golden back from it). Traced, the two
/// agree.
#[test]
fn trace_reads_rules_in_the_order_kube_proxy_writes_them() {
    let golden = "tests/golden/proxy/iptables-shop-kind-worker.txt";
    let restore = "tests/fixtures/kube-proxy-restore-shop.txt";
    let probes: &[&[&str]] = &[
        &["--to", "10.96.0.20:80"],
        &["--to", "10.96.0.20:80", "--from", "172.18.0.9"],
        &["--to", "10.96.0.40:80"],
        &["--to", "10.96.0.10:53", "--proto", "udp"],
        &["--to", "172.18.0.3:30080", "--node-local"],
        &[
            "--to",
            "172.18.0.3:30080",
            "--node-local",
            "--from",
            "10.244.1.9",
        ],
    ];
    for probe in probes {
        let (code, saved) = trace_json(golden, probe);
        let (restore_code, written) = trace_json(restore, probe);
        assert_eq!(code, restore_code, "{probe:?}");
        assert_eq!(saved["verdict"], written["verdict"], "{probe:?}: {written}");
        assert_eq!(endpoint_list(&saved), endpoint_list(&written), "{probe:?}");
        let when = |json: &serde_json::Value| -> Vec<String> {
            json["masquerade"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["when"].to_string())
                .collect()
        };
        assert_eq!(when(&saved), when(&written), "{probe:?}");
    }
    let (_, web) = trace_json(restore, &["--to", "10.96.0.20:80"]);
    assert_eq!(web["verdict"], "dnat");
    assert_eq!(endpoint_list(&web).len(), 3);
}

/// kube-proxy's iptables-restore input (what its tests expect, what it logs at high
/// verbosity) holds only its own chains: it installs the jumps from PREROUTING, INPUT,
/// FORWARD, OUTPUT and POSTROUTING apart. Traced, such a text goes where the node's whole
/// ruleset goes, through kube-proxy's standard jumps, and says that it assumed them.
#[test]
fn trace_assumes_kube_proxys_jumps_when_the_text_has_none() {
    let built_in = ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"];
    let whole = std::fs::read_to_string(
        crate::common::root().join("tests/fixtures/kube-proxy-restore-shop.txt"),
    )
    .unwrap();
    let own: String = whole
        .lines()
        .filter(|line| {
            !built_in.iter().any(|chain| {
                line.starts_with(&format!(":{chain} ")) || line.starts_with(&format!("-A {chain} "))
            })
        })
        .map(|line| format!("{line}\n"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("restore.txt");
    std::fs::write(&path, &own).unwrap();
    let own = path.to_str().unwrap();
    let restore = "tests/fixtures/kube-proxy-restore-shop.txt";
    let probes: &[&[&str]] = &[
        &["--to", "10.96.0.20:80"],
        &["--to", "10.96.0.20:80", "--local"],
        &["--to", "10.96.0.40:80"],
        &["--to", "10.96.0.40:80", "--local"],
        &["--to", "10.96.0.10:53", "--proto", "udp"],
        &["--to", "172.18.0.3:30080", "--node-local"],
        &["--to", "172.18.0.3:30080", "--node-local", "--local"],
    ];
    for probe in probes {
        let (code, node) = trace_json(restore, probe);
        let (own_code, assumed) = trace_json(own, probe);
        assert_eq!(code, own_code, "{probe:?}: {assumed}");
        assert_eq!(node["verdict"], assumed["verdict"], "{probe:?}: {assumed}");
        assert_eq!(endpoint_list(&node), endpoint_list(&assumed), "{probe:?}");
        assert_eq!(
            node["masquerade"].as_array().map(Vec::len),
            assumed["masquerade"].as_array().map(Vec::len)
        );
        assert!(node.get("assumed_jumps").is_none(), "{probe:?}: {node}");
        assert_eq!(
            assumed["assumed_jumps"].as_array().unwrap().len(),
            14,
            "{assumed}"
        );
    }
    let (_, empty) = trace_json(own, &["--to", "10.96.0.40:80"]);
    assert_eq!(empty["verdict"], "reject", "{empty}");
    let text = ok(&["proxy", "trace", "--ruleset", own, "--to", "10.96.0.20:80"]);
    assert!(
        text.contains("note: no built-in chain jumps into kube-proxy's chains"),
        "{text}"
    );
    assert!(
        text.contains("  nat PREROUTING assumed: -A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"),
        "{text}"
    );
}

/// kube-proxy 1.36's nftables mode picks the endpoint in the Service chain (`dnat ip to
/// numgen random mod N map { ... }`) and masquerades hairpin connections through the
/// `@hairpin-connections` set: the real kube-proxy's dumps (tests/fixtures/kube-proxy/),
/// both forms, traced.
#[test]
fn trace_reads_kube_proxy_136s_nftables_rules() {
    let three = [
        ("10.244.0.1".to_owned(), 8080, 1.0 / 3.0),
        ("10.244.1.1".to_owned(), 8080, 1.0 / 3.0),
        ("10.244.2.1".to_owned(), 8080, 1.0 / 3.0),
    ];
    for ruleset in [
        "tests/fixtures/kube-proxy/nft-list.nft",
        "tests/fixtures/kube-proxy/nft-transaction.nft",
    ] {
        let (code, json) = trace_json(ruleset, &["--to", "10.96.100.10:80"]);
        assert_eq!(code, 0, "{json}");
        let endpoints = endpoint_list(&json);
        assert_eq!(endpoints.len(), 3, "{json}");
        for (got, want) in endpoints.iter().zip(&three) {
            assert_eq!((&got.0, got.1), (&want.0, want.1));
            assert!((got.2 - want.2).abs() < 1e-9, "{json}");
        }
        assert_eq!(json["endpoints"][0]["probability"], "1/3");
        assert!(json["warnings"].as_array().unwrap().is_empty(), "{json}");
        let masquerade = json["masquerade"].as_array().unwrap();
        let hairpin = masquerade
            .iter()
            .find(|m| m["why"].as_str().unwrap().starts_with("hairpin"))
            .unwrap_or_else(|| panic!("no hairpin masquerade: {json}"));
        assert_eq!(hairpin["when"], "the source is 10.244.0.1");
        assert_eq!(hairpin["endpoints"][0], "10.244.0.1:8080");
        assert!(
            masquerade
                .iter()
                .any(|m| m["when"] == "the source is not in 10.244.0.0/16"
                    && m["why"]
                        .as_str()
                        .unwrap()
                        .contains("outside the cluster's pod CIDR")),
            "{json}"
        );
        // From the endpoint itself, to itself: masqueraded; to the others: not.
        let (_, own) = trace_json(
            ruleset,
            &["--to", "10.96.100.10:80", "--from", "10.244.0.1"],
        );
        assert_eq!(
            own["masquerade"][0]["endpoints"][0], "10.244.0.1:8080",
            "{own}"
        );
        assert_eq!(own["masquerade"].as_array().unwrap().len(), 1, "{own}");
    }
}

/// A packet from the network rewritten to a loopback address is a martian: the kernel drops
/// it unless route_localnet is set, which kube-proxy's nftables mode never does (the kernel
/// agrees: tests/netfilter/kernel.rs).
#[test]
fn trace_drops_a_packet_from_the_network_rewritten_to_loopback_in_nftables_mode() {
    let render = ok(&[
        "proxy",
        "render",
        "--mode",
        "nftables",
        "--objects",
        "fixtures/external.json",
        "--cluster-cidr",
        "10.244.0.0/16",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rules.nft");
    std::fs::write(&path, render).unwrap();
    let path = path.to_str().unwrap();
    let probe = ["--to", "10.96.0.10:53", "--proto", "udp"];
    let (code, json) = trace_json(path, &probe);
    assert_eq!(
        (code, json["verdict"].as_str()),
        (1, Some("drop")),
        "{json}"
    );
    assert!(
        json["notes"][0]
            .as_str()
            .unwrap()
            .contains("a loopback address: the kernel drops"),
        "{json}"
    );
    let mut local = probe.to_vec();
    local.push("--local");
    assert_eq!(trace_json(path, &local).1["verdict"], "dnat");
}

/// `iptables-save -t nat` (what the lesson takes) has no filter table, where kube-proxy's
/// REJECT and the firewall are: the trace says so instead of a bare no-match, and a
/// masquerade without kube-proxy's mark says which rule did it.
#[test]
fn trace_a_nat_only_dump_says_the_filter_table_is_missing() {
    let empty = clusterdns(&[
        "proxy",
        "trace",
        "--ruleset",
        "fixtures/node-nat.txt",
        "--to",
        "10.96.0.40:80",
    ]);
    assert_eq!(empty.code, 1);
    let mut lines = empty.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("10.96.0.40:80/tcp from the network (PREROUTING), source unknown: no-match")
    );
    assert!(
        lines.next().is_some_and(|l| l.starts_with(
            "note: the ruleset has no filter table (`iptables-save -t nat`): kube-proxy's REJECT"
        )),
        "{}",
        empty.stdout
    );
    // kind's masq agent masquerades without a mark: no empty "marked by".
    assert!(
        !empty.stdout.contains("    ; masqueraded"),
        "{}",
        empty.stdout
    );
    assert!(
        empty
            .stdout
            .contains("    masqueraded by nat KIND-MASQ-AGENT line 46\n"),
        "{}",
        empty.stdout
    );
    let (_, json) = trace_json("fixtures/node-nat.txt", &["--to", "10.96.0.40:80"]);
    assert!(
        json["masquerade"][0]["why"]
            .as_str()
            .unwrap()
            .contains("kind-masq-agent: outbound traffic is subject to MASQUERADE")
    );
    assert!(
        json["notes"][0]
            .as_str()
            .unwrap()
            .contains("no filter table")
    );
    // With the filter table: the REJECT, and no such note.
    let whole = rendered("fixtures/shop.json", &["--node", "kind-worker"]);
    let (code, json) = trace_json(&whole.path, &["--to", "10.96.0.40:80"]);
    assert_eq!((code, json["verdict"].as_str()), (1, Some("reject")));
    assert!(json.get("notes").is_none(), "{json}");
    // explain says the same of its rule trace, instead of "no-match" beside "rejected".
    let explain = clusterdns(&[
        "explain",
        "shop/empty",
        "--objects",
        "fixtures/shop.json",
        "--ruleset",
        "fixtures/node-nat.txt",
    ]);
    assert!(
        explain.stdout.contains(
            "rules (fixtures/node-nat.txt): 10.96.0.40:80/tcp -> no-match in the nat table; the dump has no filter table, where kube-proxy rejects connections to a Service without endpoints\n"
        ),
        "{}",
        explain.stdout
    );
}

/// A NodePort probe to the node's own address: `--node-ip`, or the addresses kube-proxy's
/// rules name (`--nodeport-addresses`: nft's nodeport-ips set, iptables' `-d NODE-IP -j
/// KUBE-NODEPORTS`), decide `--dst-type LOCAL` and `fib daddr type local` without
/// `--node-local`.
#[test]
fn trace_knows_the_nodes_addresses() {
    let worker = rendered("fixtures/shop.json", &["--node", "kind-worker"]);
    let (_, local) = trace_json(&worker.path, &["--to", "172.18.0.3:30080", "--node-local"]);
    let (code, given) = trace_json(
        &worker.path,
        &["--to", "172.18.0.3:30080", "--node-ip", "172.18.0.3"],
    );
    assert_eq!(
        (code, given["verdict"].as_str()),
        (0, Some("dnat")),
        "{given}"
    );
    assert_eq!(endpoint_list(&given), endpoint_list(&local));
    assert_eq!(given["node_ips"], serde_json::json!(["172.18.0.3"]));
    // Another node's address is still forwarded.
    let (code, other) = trace_json(
        &worker.path,
        &["--to", "172.18.0.4:30080", "--node-ip", "172.18.0.3"],
    );
    assert_eq!((code, other["verdict"].as_str()), (1, Some("no-match")));
    // nft: the nodeport-ips set names kind-control-plane's address; lb-local has no local
    // endpoint there, so its NodePort drops, as iptables' does with --node-local.
    let (code, nft) = trace_json(
        "tests/golden/proxy/nftables-proxy-kind-control-plane.nft",
        &["--to", "172.18.0.2:31080"],
    );
    assert_eq!((code, nft["verdict"].as_str()), (1, Some("drop")), "{nft}");
    assert_eq!(nft["node_ips"], serde_json::json!(["172.18.0.2"]));
    // iptables with --nodeport-addresses: the last KUBE-SERVICES rule names the address
    // (iptables-save 1.8.9 prints kube-proxy's `-m comment ... -d 172.18.0.3` so), and no
    // localhost NodePort rule is written.
    let text = render(
        "fixtures/shop.json",
        &[
            "--node",
            "kind-worker",
            "--node-ip",
            "172.18.0.3",
            "--nfacct",
        ],
    );
    assert!(text.contains("\n-A KUBE-SERVICES -d 172.18.0.3/32 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -j KUBE-NODEPORTS\n"), "{text}");
    assert!(!text.contains("--dst-type LOCAL -j KUBE-NODEPORTS"));
    assert!(!text.contains("localhost_nps_accepted_pkts"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nodeport-addresses.txt");
    std::fs::write(&path, text).unwrap();
    let (code, named) = trace_json(path.to_str().unwrap(), &["--to", "172.18.0.3:30080"]);
    assert_eq!(
        (code, named["verdict"].as_str()),
        (0, Some("dnat")),
        "{named}"
    );
    assert_eq!(endpoint_list(&named), endpoint_list(&local));
    let text = clusterdns(&[
        "proxy",
        "trace",
        "--ruleset",
        path.to_str().unwrap(),
        "--to",
        "172.18.0.3:30080",
    ]);
    assert!(
        text.stdout.contains(
            "note: 172.18.0.3 is this node's address (named by the ruleset's NodePort rules)"
        ),
        "{}",
        text.stdout
    );
}

/// `ping` to a ClusterIP gets nothing: kube-proxy DNATs only the Service's ports, and no
/// interface owns the address. `--proto icmp` traces it and says so; so does a port the
/// Service does not expose.
#[test]
fn trace_icmp_and_ports_a_service_does_not_expose() {
    let worker = rendered("fixtures/shop.json", &["--node", "kind-worker"]);
    let ping = clusterdns(&[
        "proxy",
        "trace",
        "--ruleset",
        &worker.path,
        "--to",
        "10.96.0.20",
        "--proto",
        "icmp",
    ]);
    assert_eq!(ping.code, 1);
    assert!(
        ping.stdout.starts_with("10.96.0.20/icmp from the network (PREROUTING), source unknown: no-match\nnote: 10.96.0.20 is a Service address (shop/web:http cluster IP): kube-proxy's rules rewrite only tcp/80 to it; no interface on any node owns the address, so nothing answers an ICMP echo (ping)"),
        "{}",
        ping.stdout
    );
    let (code, other_port) = trace_json(&worker.path, &["--to", "10.96.0.20:81"]);
    assert_eq!(
        (code, other_port["verdict"].as_str()),
        (1, Some("no-match"))
    );
    assert!(
        other_port["notes"][0]
            .as_str()
            .unwrap()
            .contains("rewrite only tcp/80 to it; no interface on any node owns the address, so nothing answers tcp/81"),
        "{other_port}"
    );
    // kube-dns: every port the rules name.
    let (_, dns) = trace_json(&worker.path, &["--to", "10.96.0.10", "--proto", "icmp"]);
    assert!(
        dns["notes"][0]
            .as_str()
            .unwrap()
            .contains("rewrite only tcp/53, tcp/9153, udp/53 to it"),
        "{dns}"
    );
    // kube-proxy's nftables mode rejects what a ClusterIP does not serve, ICMP included
    // (`ip daddr @cluster-ips reject`): the ping gets "port unreachable".
    let (code, nft) = trace_json(
        "tests/golden/proxy/nftables-shop-kind-worker.nft",
        &["--to", "10.96.0.20", "--proto", "icmp"],
    );
    assert_eq!(
        (code, nft["verdict"].as_str()),
        (1, Some("reject")),
        "{nft}"
    );
    assert!(
        nft["terminal"]["rule"]
            .as_str()
            .unwrap()
            .contains("Reject traffic to invalid ports of ClusterIPs"),
        "{nft}"
    );
    // An address that is no Service's: no such note.
    let (_, nowhere) = trace_json(&worker.path, &["--to", "10.96.0.99:80"]);
    assert!(nowhere.get("notes").is_none(), "{nowhere}");
    // A port with ICMP, or none without it, is an error.
    let with_port = clusterdns(&[
        "proxy",
        "trace",
        "--ruleset",
        &worker.path,
        "--to",
        "10.96.0.20:80",
        "--proto",
        "icmp",
    ]);
    assert_eq!(with_port.code, 2);
    assert!(
        with_port.stderr.contains("an ICMP packet has no port"),
        "{}",
        with_port.stderr
    );
    let without = clusterdns(&[
        "proxy",
        "trace",
        "--ruleset",
        &worker.path,
        "--to",
        "10.96.0.20",
    ]);
    assert_eq!(without.code, 2);
    assert!(
        without
            .stderr
            .contains("expected IP:PORT (an address alone is for --proto icmp)"),
        "{}",
        without.stderr
    );
}

// --- proxy render --mode nftables and nft traces --------------------------------------------

fn render_nft(fixture: &str, extra: &[&str]) -> String {
    render_in("nftables", fixture, extra)
}

#[test]
fn nftables_renders_are_golden() {
    let cases = [
        Golden {
            file: "nftables-shop-kind-worker.nft",
            objects: "fixtures/shop.json",
            args: &["--node", "kind-worker", "--kube-proxy-names"],
        },
        Golden {
            file: "nftables-proxy-kind-worker.nft",
            objects: "fixtures/proxy.json",
            args: &["--node", "kind-worker", "--kube-proxy-names"],
        },
        Golden {
            file: "nftables-proxy-kind-control-plane.nft",
            objects: "fixtures/proxy.json",
            args: &[
                "--node",
                "kind-control-plane",
                "--kube-proxy-names",
                "--node-ip",
                "172.18.0.2",
                "--service-cidr",
                "10.96.0.0/16",
            ],
        },
        Golden {
            file: "nftables6-proxy-kind-worker.nft",
            objects: "fixtures/proxy.json",
            args: &[
                "--node",
                "kind-worker",
                "--kube-proxy-names",
                "--family",
                "ipv6",
            ],
        },
        Golden {
            file: "nftables-proxy-kind-worker-endpoint-chains.nft",
            objects: "fixtures/proxy.json",
            args: &[
                "--node",
                "kind-worker",
                "--kube-proxy-names",
                "--nft-layout",
                "endpoint-chains",
            ],
        },
        Golden {
            file: "nftables-proxy-kind-worker.tx",
            objects: "fixtures/proxy.json",
            args: &[
                "--node",
                "kind-worker",
                "--kube-proxy-names",
                "--nft-format",
                "transaction",
            ],
        },
    ];
    assert_goldens(&cases, |case| render_nft(case.objects, case.args));
}

#[test]
fn nftables_reads_like_a_node() {
    let shop = render_nft(
        "fixtures/shop.json",
        &["--node", "kind-worker", "--kube-proxy-names"],
    );
    assert!(shop.starts_with("table ip kube-proxy {\n\tcomment \"rules for kube-proxy\"\n"));
    // numgen instead of a cascade: kube-proxy 1.36 DNATs in the Service chain.
    assert!(shop.contains("\t\tmeta l4proto tcp dnat ip to numgen random mod 3 map { 0 : 10.244.1.5 . 8080, 1 : 10.244.1.6 . 8080, 2 : 10.244.2.7 . 8080 }\n"));
    assert!(!shop.contains("chain endpoint-"));
    // Before 1.36, through a chain per endpoint.
    let before = render_nft(
        "fixtures/shop.json",
        &[
            "--node",
            "kind-worker",
            "--kube-proxy-names",
            "--nft-layout",
            "endpoint-chains",
        ],
    );
    assert!(before.contains("\t\tnumgen random mod 3 vmap { 0 : goto endpoint-FDH7QP7U-shop/web/tcp/http__10.244.1.5/8080, 1 : goto endpoint-SH75W6A6-shop/web/tcp/http__10.244.1.6/8080, 2 : goto endpoint-W7KABZCH-shop/web/tcp/http__10.244.2.7/8080 }\n"));
    assert!(before.contains("\t\tmeta mark set meta mark | 0x00004000\n"));
    assert!(before.contains("\t\tmeta mark & 0x00004000 == 0x00000000 return\n"));
    // Names as on real nodes.
    assert!(
        shop.contains("10.96.0.1 . tcp . 443 : goto service-2QRHZV4L-default/kubernetes/tcp/https")
    );
    assert!(
        shop.contains("10.96.0.10 . udp . 53 : goto service-FY5PMXPG-kube-system/kube-dns/udp/dns")
    );
    // No endpoints: the no-endpoint-services map sends to the reject chain.
    assert!(shop.contains(
        "elements = { 10.96.0.40 . tcp . 80 comment \"shop/empty:http\" : goto reject-chain }"
    ));
    // Masquerading (marks set inline, hairpin connections by set), NodePorts.
    assert!(shop.contains("\t\tip daddr @cluster-ips ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000 comment \"masquerade clusterIP traffic from outside cluster\"\n"));
    assert!(shop.contains("\t\tct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random\n"));
    assert!(
        shop.contains("elements = { tcp . 30080 : goto external-2EUJKCR2-shop/checkout/tcp/http }")
    );
    assert!(shop.contains("\t\tfib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports\n"));
    // Sets and maps come before chains.
    let first_chain = shop.find("\tchain ").unwrap();
    assert!(shop[first_chain..].find("\tmap ").is_none());

    let proxy = render_nft(
        "fixtures/proxy.json",
        &["--node", "kind-worker", "--kube-proxy-names"],
    );
    assert!(proxy.contains("\t\tip saddr != { 10.0.0.0/8, 192.168.0.0/16 } drop\n"));
    assert!(proxy.contains(" : goto firewall-"));
    assert!(proxy.contains("\t\tflags dynamic,timeout\n\t\ttimeout 10m\n"));
    assert!(proxy.contains("\t\tupdate @affinity-"));
    assert!(proxy.contains("\t\tip saddr @affinity-"));
    assert!(proxy.contains("comment \"short-circuit pod traffic\""));
    let control = render_nft(
        "fixtures/proxy.json",
        &[
            "--node",
            "kind-control-plane",
            "--kube-proxy-names",
            "--node-ip",
            "172.18.0.2",
            "--service-cidr",
            "10.96.0.0/16",
        ],
    );
    assert!(control.contains("10.96.2.50 . udp . 53 comment \"edge/node-cache:dns\" : drop"));
    assert!(control.contains("tcp . 31080 comment \"edge/lb-local:http\" : drop"));
    assert!(control.contains("\tset nodeport-ips {\n\t\ttype ipv4_addr\n\t\tcomment \"IPs that accept NodePort traffic\"\n\t\telements = { 172.18.0.2 }\n\t}\n"));
    assert!(control.contains(
        "\t\tip daddr 10.96.0.0/16 drop comment \"Drop traffic to unallocated ClusterIPs\"\n"
    ));
    let v6 = render_nft(
        "fixtures/proxy.json",
        &[
            "--node",
            "kind-worker",
            "--family",
            "ipv6",
            "--kube-proxy-names",
        ],
    );
    assert!(v6.starts_with("table ip6 kube-proxy {"));
    assert!(v6.contains("meta l4proto tcp dnat ip6 to numgen random mod 2 map { 0 : fd00:10:244:1::90 . 8080, 1 : fd00:10:244:2::90 . 8080 }"));
    assert!(v6.contains(
        "ip6 daddr @cluster-ips ip6 saddr != fd00:10:244::/56 meta mark set meta mark | 0x00004000"
    ));
}

#[test]
fn trace_an_nft_node() {
    let (code, dns) = trace_json(
        "fixtures/node.nft",
        &["--to", "10.96.0.10:53", "--proto", "udp"],
    );
    assert_eq!(code, 0);
    assert_eq!(
        endpoint_list(&dns),
        [
            ("10.244.0.2".to_owned(), 53, 0.5),
            ("10.244.0.3".to_owned(), 53, 0.5)
        ]
    );
    assert_eq!(dns["endpoints"][0]["probability"], "1/2");
    assert!(dns["warnings"].as_array().unwrap().is_empty(), "{dns}");
    let (code, empty) = trace_json("fixtures/node.nft", &["--to", "10.96.0.40:80"]);
    assert_eq!((code, empty["verdict"].as_str()), (1, Some("reject")));
    assert_eq!(empty["terminal"]["chain"], "reject-chain");
    // An unused port of a ClusterIP is rejected by cluster-ips-check; an unallocated
    // ClusterIP is dropped.
    let (_, port) = trace_json("fixtures/node.nft", &["--to", "10.96.0.20:81"]);
    assert_eq!(
        (port["verdict"].as_str(), port["terminal"]["chain"].as_str()),
        (Some("reject"), Some("cluster-ips-check"))
    );
    let (_, unallocated) = trace_json("fixtures/node.nft", &["--to", "10.96.0.99:80"]);
    assert_eq!(unallocated["verdict"], "drop");
    // checkout has no endpoint on the control plane: its NodePort drops.
    let (code, nodeport) = trace_json(
        "fixtures/node.nft",
        &["--to", "172.18.0.2:30080", "--node-local"],
    );
    assert_eq!((code, nodeport["verdict"].as_str()), (1, Some("drop")));
    // From a process on the node, the web Service.
    let (code, local) = trace_json(
        "fixtures/node.nft",
        &["--to", "10.96.0.20:80", "--local", "--from", "172.18.0.2"],
    );
    assert_eq!(code, 0);
    assert_eq!(endpoint_list(&local).len(), 3);
    assert_eq!(local["origin"], "node");
    assert!(local["masquerade"][0]["when"].is_null(), "{local}");
}

/// The same Services, three renderings, one answer: the tracer reads iptables-save, nft
/// list output and nft transactions into the same behaviour.
#[test]
fn iptables_nft_list_and_transaction_trace_the_same() {
    let base = ["--node", "kind-worker", "--kube-proxy-names"];
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let iptables = write("rules.txt", render("fixtures/proxy.json", &base));
    let list = write("rules.nft", render_nft("fixtures/proxy.json", &base));
    let mut transaction_args = base.to_vec();
    transaction_args.extend(["--nft-format", "transaction"]);
    let transaction = write(
        "rules.tx",
        render_nft("fixtures/proxy.json", &transaction_args),
    );

    let cases: &[&[&str]] = &[
        &["--to", "10.96.1.10:80"],
        &["--to", "10.96.2.10:443", "--from", "10.244.1.7"],
        &["--to", "172.18.255.200:443", "--from", "10.1.2.3"],
        &["--to", "172.18.255.200:443", "--from", "203.0.113.7"],
        &[
            "--to",
            "172.18.0.3:31443",
            "--node-local",
            "--from",
            "203.0.113.7",
        ],
        &["--to", "172.18.255.201:80", "--from", "203.0.113.7"],
        &[
            "--to",
            "172.18.0.3:31080",
            "--node-local",
            "--from",
            "203.0.113.7",
        ],
        &["--to", "192.0.2.10:80", "--from", "203.0.113.7"],
        &["--to", "10.96.2.40:80", "--from", "10.244.2.9"],
        &[
            "--to",
            "10.96.2.50:53",
            "--proto",
            "udp",
            "--from",
            "10.244.1.9",
        ],
        &["--to", "10.96.2.60:80"],
        &["--to", "10.96.2.70:80"],
        &["--to", "10.96.2.80:5432", "--from", "10.244.1.9"],
        &["--to", "10.96.2.90:80", "--from", "10.244.1.9"],
        &[
            "--to",
            "172.18.0.3:30090",
            "--node-local",
            "--from",
            "203.0.113.7",
        ],
        &["--to", "10.96.2.90:80", "--local", "--from", "172.18.0.3"],
    ];
    for args in cases {
        let summary = |ruleset: &str| {
            let (code, json) = trace_json(ruleset, args);
            let mut endpoints: Vec<(String, u64, i64)> = endpoint_list(&json)
                .into_iter()
                .map(|(a, p, s)| (a, p, (s * 1e6).round() as i64))
                .collect();
            endpoints.sort();
            let masqueraded = json["masquerade"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["when"].is_null());
            (
                code,
                json["verdict"].as_str().unwrap().to_owned(),
                endpoints,
                masqueraded,
            )
        };
        let want = summary(&iptables);
        assert_eq!(summary(&list), want, "nft list, {args:?}");
        assert_eq!(summary(&transaction), want, "nft transaction, {args:?}");
    }
}

#[test]
fn nft_errors_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.nft");
    std::fs::write(&bad, "table ip kube-proxy {\n\tchain services {\n\t\tip daddr . meta l4proto . th dport vmap @service-ips\n\t\tjump nowhere\n\t}\n}\n").unwrap();
    let run = clusterdns(&[
        "proxy",
        "trace",
        "--ruleset",
        bad.to_str().unwrap(),
        "--to",
        "10.96.0.1:80",
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains(":4: jump or goto to nowhere: no chain nowhere in table kube-proxy"),
        "{}",
        run.stderr
    );
    let tx = dir.path().join("bad.tx");
    std::fs::write(&tx, "add table ip kube-proxy\nadd chain ip kube-proxy services\nadd rule ip kube-proxy services ip daddr 10.96.0.300 accept\n").unwrap();
    let run = clusterdns(&[
        "proxy",
        "trace",
        "--ruleset",
        tx.to_str().unwrap(),
        "--to",
        "10.96.0.1:80",
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains(":3: ip daddr: expected an address or prefix, found \"10.96.0.300\""),
        "{}",
        run.stderr
    );
}

// --- explain --------------------------------------------------------------------------------

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
    assert!(
        run.stderr.contains("no Service shop/nope in the objects"),
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

/// The offline tools say only what they were asked on stdout and, unless something is
/// wrong, nothing on stderr: the server's INFO lines ("zone loaded") are not for them
/// (`RUST_LOG` still turns them on).
#[test]
fn the_tools_are_quiet_on_stderr_by_default() {
    let run = |args: &[&str], log: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_clusterdns"));
        command
            .args(args)
            .current_dir(crate::common::root())
            .env_remove("RUST_LOG");
        if let Some(log) = log {
            command.env("RUST_LOG", log);
        }
        command.output().unwrap()
    };
    let explain = ["explain", "shop/web", "--objects", "fixtures/shop.json"];
    let records = ["records", "--objects", "fixtures/shop.json"];
    for args in [&explain[..], &records[..]] {
        let out = run(args, None);
        assert!(out.status.code().is_some_and(|c| c <= 1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
    let loud = run(&explain, Some("info"));
    assert!(String::from_utf8_lossy(&loud.stderr).contains("zone loaded"));
}
