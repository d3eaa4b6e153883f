//! `proxy trace` on what real nodes hold: kube-proxy's own iptables-restore text (its order,
//! without the jumps), kube-proxy 1.36's nftables rules, martian packets, a nat-only dump, the
//! node's own addresses, ICMP and ports a Service does not expose.

use super::{endpoint_list, render, rendered, trace_json};
use crate::common::cli::{clusterdns, ok};

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
/// agrees: tests/kube_proxy/netfilter/kernel.rs).
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
