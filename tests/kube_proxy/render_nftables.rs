//! `proxy render --mode nftables` and traces of nft rulesets: goldens, a node's shape, a trace
//! of an nft node, iptables-nft and nft read into the same behaviour, and nft errors naming
//! the line.

use super::{Golden, assert_goldens, endpoint_list, render, render_in, trace_json};
use crate::common::cli::clusterdns;

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
