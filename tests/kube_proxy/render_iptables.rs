//! `proxy render --mode iptables` (and ip6tables): kube-proxy's rules as iptables-save prints
//! them — goldens, a node's shape, the proxy fixture's features, nfacct counters — and the
//! errors of `proxy render`.

use super::{Golden, assert_goldens, render, trace_json};
use crate::common::cli::clusterdns;

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
