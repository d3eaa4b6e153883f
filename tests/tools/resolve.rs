//! `resolv-conf` and `resolve-cost` through the real binary: what a user types and sees.

use crate::common::cli::{clusterdns, fails, ok};
use crate::common::fixture;

#[test]
fn resolv_conf_is_what_the_kubelet_writes() {
    assert_eq!(
        ok(&[
            "resolv-conf",
            "--namespace",
            "shop",
            "--nameserver",
            "10.96.0.10"
        ]),
        "search shop.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("resolv.conf");
    std::fs::write(
        &node,
        "nameserver 172.18.0.1\nsearch us-east-1.compute.internal\noptions edns0\n",
    )
    .unwrap();
    let node = node.to_str().unwrap();
    assert_eq!(
        ok(&[
            "resolv-conf",
            "--namespace",
            "batch",
            "--nameserver",
            "10.96.0.10",
            "--host-resolv-conf",
            node,
            "--dns-config",
            r#"{"options":[{"name":"ndots","value":"2"}]}"#,
        ]),
        "search batch.svc.cluster.local svc.cluster.local cluster.local us-east-1.compute.internal\nnameserver 10.96.0.10\noptions ndots:2\n"
    );
    // hostNetwork with ClusterFirst gets the node's file; ClusterFirstWithHostNet the cluster's.
    let host = [
        "resolv-conf",
        "--namespace",
        "x",
        "--host-resolv-conf",
        node,
        "--host-network",
    ];
    assert_eq!(
        ok(&host),
        "search us-east-1.compute.internal\nnameserver 172.18.0.1\noptions edns0\n"
    );
    let with_host_net = [&host[..], &["--dns-policy", "ClusterFirstWithHostNet"]].concat();
    assert!(ok(&with_host_net).starts_with("search x.svc.cluster.local "));
}

#[test]
fn resolv_conf_errors_say_where() {
    let error = fails(&[
        "resolv-conf",
        "--namespace",
        "shop",
        "--dns-config",
        r#"{"options":[{"name":"ndots","vlue":"2"}]}"#,
    ]);
    assert!(
        error.contains("--dns-config at options[0].vlue: unknown field `vlue`"),
        "{error}"
    );
    let error = fails(&[
        "resolv-conf",
        "--namespace",
        "shop",
        "--dns-config",
        r#"{"nameservers":["dns.google"]}"#,
    ]);
    assert!(
        error.contains("spec.dnsConfig.nameservers[0]: 'dns.google' must be a valid IP address"),
        "{error}"
    );
    let error = fails(&["resolv-conf", "--namespace", "shop", "--dns-policy", "None"]);
    assert!(
        error.contains("must provide `dnsConfig` when `dnsPolicy` is None"),
        "{error}"
    );
    let missing = fixture("no-such-resolv.conf");
    let error = fails(&[
        "resolv-conf",
        "--namespace",
        "shop",
        "--host-resolv-conf",
        missing.to_str().unwrap(),
    ]);
    assert!(error.contains("no-such-resolv.conf"), "{error}");
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("resolv.conf");
    std::fs::write(&node, "search a\nnameserver\n").unwrap();
    let error = fails(&[
        "resolv-conf",
        "--namespace",
        "shop",
        "--host-resolv-conf",
        node.to_str().unwrap(),
    ]);
    assert!(
        error.contains("resolv.conf: line 2: nameserver list is empty"),
        "{error}"
    );
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["--output", "json"]);
    serde_json::from_str(&ok(&all)).unwrap()
}

fn tried(report: &serde_json::Value) -> Vec<&str> {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["name"].as_str().unwrap())
        .collect()
}

/// The seed lesson's figures, from the command a reviewer types.
#[test]
fn resolve_cost_the_seed_figures() {
    let text = ok(&[
        "resolve-cost",
        "api.partner.example.com",
        "--namespace",
        "shop",
    ]);
    assert!(
        text.contains("4 names tried, 3 NXDOMAIN; 8 queries, 6 NXDOMAIN, 2 sent upstream"),
        "{text}"
    );
    assert!(
        text.contains("ask for api.partner.example.com.: 1 name, 2 queries"),
        "{text}"
    );
    for libc in ["glibc", "musl"] {
        let out = json_of(&[
            "resolve-cost",
            "api.partner.example.com",
            "api.partner.example.com.",
            "--namespace",
            "shop",
            "--libc",
            libc,
        ]);
        let report = &out["reports"][0];
        assert_eq!(
            tried(report),
            [
                "api.partner.example.com.shop.svc.cluster.local.",
                "api.partner.example.com.svc.cluster.local.",
                "api.partner.example.com.cluster.local.",
                "api.partner.example.com.",
            ]
        );
        let totals = &report["totals"];
        assert_eq!(
            [
                &totals["names"],
                &totals["nxdomain_names"],
                &totals["queries"],
                &totals["nxdomain_queries"]
            ],
            [4, 3, 8, 6]
        );
        let dotted = &out["reports"][1];
        assert_eq!(tried(dotted), ["api.partner.example.com."]);
        assert_eq!(dotted["totals"]["queries"], 2);
    }
}

/// Cluster names are answered by the zone the server serves: which answer ends the walk
/// differs between glibc and musl.
#[test]
fn resolve_cost_over_the_fixture() {
    let shop = fixture("shop.json");
    let shop = shop.to_str().unwrap();
    let out = json_of(&[
        "resolve-cost",
        "web",
        "web.shop",
        "shop",
        "--namespace",
        "shop",
        "--objects",
        shop,
    ]);
    let reports = out["reports"].as_array().unwrap();
    assert_eq!(tried(&reports[0]), ["web.shop.svc.cluster.local."]);
    assert_eq!(reports[0]["steps"][0]["queries"][0]["rcode"], "NOERROR");
    assert_eq!(reports[0]["steps"][0]["queries"][0]["kind"], "cluster");
    assert_eq!(reports[0]["steps"][0]["queries"][1]["answers"], 0);
    assert_eq!(
        tried(&reports[1]),
        [
            "web.shop.shop.svc.cluster.local.",
            "web.shop.svc.cluster.local."
        ]
    );
    // `shop.svc.cluster.local` is the namespace: NODATA. glibc walks on past it, and ends in
    // EAI_NODATA (the name exists, without addresses), as glibc 2.36's getaddrinfo does.
    assert_eq!(reports[2]["steps"][1]["name"], "shop.svc.cluster.local.");
    assert_eq!(reports[2]["totals"]["names"], 4);
    assert_eq!(reports[2]["error"], "EAI_NODATA");
    let musl = json_of(&[
        "resolve-cost",
        "shop",
        "--namespace",
        "shop",
        "--objects",
        shop,
        "--libc",
        "musl",
    ]);
    assert_eq!(musl["reports"][0]["totals"]["names"], 2);
    // A only.
    let a = json_of(&[
        "resolve-cost",
        "web",
        "--namespace",
        "shop",
        "--objects",
        shop,
        "--families",
        "a",
    ]);
    assert_eq!(a["reports"][0]["totals"]["queries"], 1);
}

/// `--type SRV|PTR|...`: a res_search lookup over the fixture. glibc walks the search list
/// with one query per name; musl's res_search asks the name as given; a failure is an
/// h_errno value; `--type A` is getaddrinfo with A alone, as `--families a`.
#[test]
fn resolve_cost_type_is_a_res_search() {
    let shop = fixture("shop.json");
    let shop = shop.to_str().unwrap();
    let out = json_of(&[
        "resolve-cost",
        "_http._tcp.web",
        "20.0.96.10.in-addr.arpa",
        "_ldap._tcp.web",
        "--namespace",
        "shop",
        "--objects",
        shop,
        "--type",
        "srv",
    ]);
    let reports = out["reports"].as_array().unwrap();
    let srv = &reports[0];
    assert_eq!(srv["function"], "res_search");
    assert_eq!(srv["type"], "SRV");
    assert_eq!(tried(srv), ["_http._tcp.web.shop.svc.cluster.local."]);
    assert_eq!(srv["steps"][0]["queries"].as_array().unwrap().len(), 1);
    assert_eq!(srv["steps"][0]["queries"][0]["type"], "SRV");
    assert_eq!(srv["steps"][0]["queries"][0]["answers"], 1);
    assert_eq!(srv["answered_by"], "_http._tcp.web.shop.svc.cluster.local.");
    assert_eq!(srv["error"], serde_json::Value::Null);
    // The address has no SRV record: NODATA as typed (five dots), then the search list.
    assert_eq!(tried(&reports[1]).len(), 4);
    assert_eq!(reports[1]["error"], "NO_DATA");
    assert_eq!(reports[2]["error"], "HOST_NOT_FOUND");
    assert_eq!(reports[2]["totals"]["queries"], 4);

    let ptr = json_of(&[
        "resolve-cost",
        "20.0.96.10.in-addr.arpa",
        "--namespace",
        "shop",
        "--objects",
        shop,
        "--type",
        "PTR",
    ]);
    assert_eq!(tried(&ptr["reports"][0]), ["20.0.96.10.in-addr.arpa."]);
    assert_eq!(ptr["reports"][0]["steps"][0]["queries"][0]["answers"], 1);

    let musl = json_of(&[
        "resolve-cost",
        "_http._tcp.web",
        "_http._tcp.web.shop.svc.cluster.local",
        "--namespace",
        "shop",
        "--objects",
        shop,
        "--type",
        "SRV",
        "--libc",
        "musl",
    ]);
    assert_eq!(tried(&musl["reports"][0]), ["_http._tcp.web."]);
    assert_eq!(musl["reports"][0]["error"], "HOST_NOT_FOUND");
    assert_eq!(
        musl["reports"][0]["fixes"].as_array().map(Vec::len),
        Some(0)
    );
    assert_eq!(
        tried(&musl["reports"][1]),
        ["_http._tcp.web.shop.svc.cluster.local."]
    );
    assert_eq!(musl["reports"][1]["error"], serde_json::Value::Null);

    let text = ok(&[
        "resolve-cost",
        "_http._tcp.web",
        "--namespace",
        "shop",
        "--objects",
        shop,
        "--type",
        "SRV",
        "--libc",
        "musl",
    ]);
    assert!(
        text.starts_with("_http._tcp.web from namespace shop (musl, res_search SRV)\n"),
        "{text}"
    );
    assert!(
        text.contains("note: musl's res_search is res_query"),
        "{text}"
    );
    assert!(
        text.contains("-> no SRV records (res_search fails with HOST_NOT_FOUND)"),
        "{text}"
    );

    // Offline (`--upstream assume`), a cluster name written short is not taken to exist
    // upstream as typed: with ndots 1, `web.shop` is asked as typed first and walks on.
    let short = json_of(&[
        "resolve-cost",
        "web.shop",
        "--namespace",
        "shop",
        "--objects",
        shop,
        "--ndots",
        "1",
    ]);
    assert_eq!(
        short["reports"][0]["answered_by"],
        "web.shop.svc.cluster.local."
    );
    // --type A: getaddrinfo with A alone, EAI_* errors, as --families a.
    let a = json_of(&[
        "resolve-cost",
        "nowhere",
        "--namespace",
        "shop",
        "--objects",
        shop,
        "--type",
        "a",
    ]);
    assert_eq!(a["reports"][0]["function"], "getaddrinfo");
    assert_eq!(a["reports"][0]["families"], "a");
    assert_eq!(a["reports"][0]["error"], "EAI_NONAME");
    let error = fails(&["resolve-cost", "x", "--namespace", "shop", "--type", "SPF"]);
    assert!(
        error.contains("'SPF': expected one of A, AAAA, SRV, PTR"),
        "{error}"
    );
    let error = fails(&[
        "resolve-cost",
        "x",
        "--namespace",
        "shop",
        "--type",
        "A",
        "--families",
        "a,aaaa",
    ]);
    assert!(error.contains("cannot be used with"), "{error}");
}

#[test]
fn resolve_cost_fixes() {
    let out = json_of(&[
        "resolve-cost",
        "api.partner.example.com",
        "--namespace",
        "shop",
    ]);
    let fixes = out["reports"][0]["fixes"].as_array().unwrap();
    let by = |name: &str| {
        fixes
            .iter()
            .find(|f| f["fix"] == name)
            .unwrap_or_else(|| panic!("{name}: {fixes:?}"))
    };
    assert_eq!(
        by("trailing-dot")["change"],
        "ask for api.partner.example.com."
    );
    assert_eq!(by("trailing-dot")["saves"]["queries"], 6);
    assert_eq!(
        by("ndots")["change"],
        r#"dnsConfig: {"options": [{"name": "ndots", "value": "3"}]}"#
    );
    assert_eq!(by("ndots")["totals"]["names"], 1);
    assert_eq!(by("autopath")["totals"]["queries"], 2);
    assert_eq!(by("autopath")["totals"]["upstream_queries"], 2);
    assert!(fixes.iter().all(|f| f["same_answer"] == true));
    // A cluster name answered at the first search domain needs no fix but the dot.
    let out = json_of(&[
        "resolve-cost",
        "web",
        "--namespace",
        "shop",
        "--objects",
        fixture("shop.json").to_str().unwrap(),
    ]);
    let fixes = out["reports"][0]["fixes"].as_array().unwrap();
    assert_eq!(fixes.len(), 1);
    assert_eq!(fixes[0]["saves"]["queries"], 0);
}

#[test]
fn resolve_cost_autopath_moves_the_walk_to_the_server() {
    let out = json_of(&[
        "resolve-cost",
        "api.partner.example.com",
        "--namespace",
        "shop",
        "--autopath",
    ]);
    let report = &out["reports"][0];
    assert_eq!(
        tried(report),
        ["api.partner.example.com.shop.svc.cluster.local."]
    );
    let query = &report["steps"][0]["queries"][0];
    assert_eq!(query["kind"], "autopath");
    assert_eq!(query["answers"], 2);
    let lookups: Vec<&str> = query["lookups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        lookups,
        [
            "api.partner.example.com.shop.svc.cluster.local.",
            "api.partner.example.com.svc.cluster.local.",
            "api.partner.example.com.cluster.local.",
            "api.partner.example.com.",
        ]
    );
    assert_eq!(
        report["fixes"][0]["change"],
        "ask for api.partner.example.com."
    );
}

#[test]
fn resolve_cost_reads_a_resolv_conf_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("resolv.conf");
    std::fs::write(
        &conf,
        "search shop.svc.cluster.local svc.cluster.local cluster.local us-east-1.compute.internal\nnameserver 10.96.0.10\noptions ndots:5 single-request\n",
    )
    .unwrap();
    let conf = conf.to_str().unwrap();
    let out = json_of(&[
        "resolve-cost",
        "api.partner.example.com",
        "--namespace",
        "shop",
        "--resolv-conf",
        conf,
    ]);
    let report = &out["reports"][0];
    assert_eq!(report["totals"]["names"], 5);
    // The node's search domain is asked upstream; single-request: two round trips a name.
    assert_eq!(report["totals"]["upstream_queries"], 4);
    assert_eq!(report["totals"]["round_trips"], 10);
    // --ndots and --search replace the file's.
    let out = json_of(&[
        "resolve-cost",
        "api.partner.example.com",
        "--namespace",
        "shop",
        "--resolv-conf",
        conf,
        "--ndots",
        "2",
        "--search",
        "a.example",
    ]);
    assert_eq!(tried(&out["reports"][0]), ["api.partner.example.com."]);
    // The kubelet's options: a node file, a dnsConfig.
    let node = dir.path().join("node.conf");
    std::fs::write(
        &node,
        "nameserver 172.18.0.1\nsearch us-east-1.compute.internal\n",
    )
    .unwrap();
    let out = json_of(&[
        "resolve-cost",
        "api.partner.example.com",
        "--namespace",
        "shop",
        "--host-resolv-conf",
        node.to_str().unwrap(),
        "--dns-config",
        r#"{"options":[{"name":"ndots","value":"2"}]}"#,
    ]);
    assert_eq!(tried(&out["reports"][0]), ["api.partner.example.com."]);
}

#[test]
fn resolve_cost_errors() {
    let error = fails(&["resolve-cost", "api.example.com"]);
    assert!(error.contains("--namespace NS is required"), "{error}");
    let error = fails(&["resolve-cost", "a..b", "--namespace", "shop"]);
    assert!(error.contains("not a domain name: 'a..b'"), "{error}");
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("resolv.conf");
    std::fs::write(&conf, "search a\nnameserver dns.example\n").unwrap();
    let error = fails(&[
        "resolve-cost",
        "x",
        "--namespace",
        "shop",
        "--resolv-conf",
        conf.to_str().unwrap(),
    ]);
    assert!(
        error.contains("resolv.conf:2: nameserver 'dns.example' is not an IP address"),
        "{error}"
    );
    let error = fails(&[
        "resolve-cost",
        "x",
        "--namespace",
        "shop",
        "--families",
        "mx",
    ]);
    assert!(error.contains("expected a,aaaa or a or aaaa"), "{error}");
    let error = fails(&[
        "resolve-cost",
        "x",
        "--namespace",
        "shop",
        "--upstream",
        "dns.google",
    ]);
    assert!(error.contains("expected assume, or a server"), "{error}");
    let bad = dir.path().join("objects.json");
    std::fs::write(
        &bad,
        "{\"kind\": \"List\", \"items\": [{\"kind\": \"Service\"}]}",
    )
    .unwrap();
    let error = fails(&[
        "resolve-cost",
        "x",
        "--namespace",
        "shop",
        "--objects",
        bad.to_str().unwrap(),
    ]);
    assert!(error.contains("objects.json"), "{error}");
}

/// `--upstream ADDR` asks a real server for the names outside the cluster zone.
#[test]
fn resolve_cost_asks_a_real_upstream() {
    let upstream = crate::common::names::NamesUpstream::start(
        "127.0.0.1:0".parse().unwrap(),
        &[
            "api.partner.example.com.cluster.local",
            "api.partner.example.com",
        ],
    );
    let addr = upstream.addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("node.conf");
    std::fs::write(&node, "nameserver 172.18.0.1\nsearch corp.example\n").unwrap();
    let out = json_of(&[
        "resolve-cost",
        "api.partner.example.com",
        "--namespace",
        "shop",
        "--upstream",
        &addr,
        "--host-resolv-conf",
        node.to_str().unwrap(),
    ]);
    let report = &out["reports"][0];
    // `...cluster.local.` is the cluster zone's, whatever the upstream says; the node's
    // search domain and the name itself are asked upstream, and the real answers count.
    assert_eq!(report["totals"]["names"], 5);
    assert_eq!(report["steps"][2]["queries"][0]["kind"], "cluster");
    assert_eq!(report["steps"][3]["queries"][0]["kind"], "upstream");
    assert_eq!(report["steps"][3]["queries"][0]["rcode"], "NXDOMAIN");
    assert_eq!(report["steps"][4]["queries"][1]["answers"], 1);
    let asked: Vec<String> = upstream
        .asked()
        .into_iter()
        .map(|(name, qtype)| format!("{name} {qtype}"))
        .collect();
    assert_eq!(
        asked,
        [
            "api.partner.example.com.corp.example. A",
            "api.partner.example.com.corp.example. AAAA",
            "api.partner.example.com. A",
            "api.partner.example.com. AAAA",
        ]
    );
}

/// `--log`: the query log clusterdns wrote while glibc (getent, in shop) and musl (in
/// kube-system) looked names up (fixtures/record-queries.sh records it).
#[test]
fn resolve_cost_reads_a_query_log() {
    let log = crate::common::root().join("fixtures/shop-queries.log");
    let log = log.to_str().unwrap();
    let shop = fixture("shop.json");
    let out = json_of(&[
        "resolve-cost",
        "--log",
        log,
        "--objects",
        shop.to_str().unwrap(),
    ]);
    assert_eq!(out["queries"], 39);
    assert_eq!(out["node_search"][0], "us-east-1.compute.internal.");
    let clients = out["clients"].as_array().unwrap();
    let checkout = clients.iter().find(|c| c["who"] == "10.244.1.9").unwrap();
    assert_eq!(checkout["namespace"], "shop");
    assert_eq!(checkout["namespace_from"], "its pod");
    assert_eq!(checkout["misses"], 16);
    assert_eq!(checkout["upstream_misses"], 4);
    assert_eq!(checkout["behind"][0]["name"], "api.partner.example.com");
    assert_eq!(checkout["behind"][0]["misses"], 8);
    let fixes = checkout["fixes"].as_array().unwrap();
    let names: Vec<&str> = fixes.iter().map(|f| f["fix"].as_str().unwrap()).collect();
    assert_eq!(names, ["trailing-dot", "ndots:3", "autopath"]);
    assert_eq!(fixes[1]["queries"], 12);
    let coredns = clients.iter().find(|c| c["who"] == "10.244.0.2").unwrap();
    assert_eq!(coredns["namespace"], "kube-system");
    assert_eq!(coredns["misses"], 10);
    let namespaces: Vec<&str> = out["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["who"].as_str().unwrap())
        .collect();
    assert_eq!(namespaces, ["shop", "kube-system"]);
    assert_eq!(out["total"]["misses"], 26);
    // Without objects, the namespaces come from the queries, and agree.
    let out = json_of(&["resolve-cost", "--log", log]);
    assert_eq!(out["clients"][0]["namespace_from"], "its queries");
    assert_eq!(out["total"]["misses"], 26);
    // Not a query log.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("app.log");
    std::fs::write(&bad, "starting\nlistening on :8080\n").unwrap();
    let error = fails(&["resolve-cost", "--log", bad.to_str().unwrap()]);
    assert!(
        error.contains("app.log: no query line in CoreDNS's log format"),
        "{error}"
    );
    assert!(error.contains("line 1 is: starting"), "{error}");
    // A log is not a name.
    let run = clusterdns(&["resolve-cost", "web", "--log", log]);
    assert_eq!(run.code, 2);
}
