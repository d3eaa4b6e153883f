//! `proxy trace` on clusterdns's own iptables rules: the lesson's step nine, a kind node, the
//! JSON contract, exit codes, the proxy fixture's features, determinism, errors naming the file
//! and line, and `iptables -S` input.

use super::{endpoint_list, rendered, trace_json};
use crate::common::cli::{clusterdns, ok};

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
