//! The live search-path tracker against real resolvers: glibc's `getent ahosts` walks the
//! kubelet's search list (with a node search domain) against clusterdns in a private network
//! and mount namespace (as `real_resolvers.rs` does), and what the server exports —
//! `clusterdns_search_path_queries_total`, `clusterdns_search_path_walk_length` and
//! `/debug/search-path` — must be what `resolve-cost --log` computes from the same server's
//! query log: the misses per namespace, the names behind them, where they were found, and
//! what each fix would save.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::binary::TestServer;
use crate::common::fixture;
use crate::common::names::NamesUpstream;
use crate::common::netns::{Fresh, Missing, in_fresh};
use crate::tools::real_resolvers::{EXTERNAL, must};

/// The node's search domain: names under it are NXDOMAIN upstream.
const NODE: &str = "corp.example";

/// Found with the first domain, with the second after a miss, as typed after four misses
/// (one upstream), nowhere; twice, to count more than one walk per name.
const NAMES: &[&str] = &[
    "web",
    "web.shop",
    "api.partner.example.com",
    "nope",
    "db-0.db",
];

#[test]
fn live_search_path_counts_are_what_resolve_cost_computes() {
    in_fresh(
        &crate::common::libtest_name(
            module_path!(),
            "live_search_path_counts_are_what_resolve_cost_computes",
        ),
        Fresh::NetMount,
        Missing::Fail,
        inside,
    );
}

fn inside() {
    must("ip", &["link", "set", "lo", "up"]);
    let dir = tempfile::tempdir().unwrap();
    let upstream = NamesUpstream::start("127.0.0.1:5300".parse().unwrap(), EXTERNAL);
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "127.0.0.1 localhost\n::1 localhost\n").unwrap();
    let nsswitch = dir.path().join("nsswitch.conf");
    std::fs::write(&nsswitch, "hosts: files dns\n").unwrap();
    for (file, over) in [(&hosts, "/etc/hosts"), (&nsswitch, "/etc/nsswitch.conf")] {
        must("mount", &["--bind", file.to_str().unwrap(), over]);
    }
    let node = dir.path().join("node-resolv.conf");
    std::fs::write(&node, format!("nameserver 172.18.0.1\nsearch {NODE}\n")).unwrap();
    let resolv = dir.path().join("resolv.conf");
    let written = crate::common::cli::ok(&[
        "resolv-conf",
        "--namespace",
        "shop",
        "--nameserver",
        "127.0.0.1",
        "--host-resolv-conf",
        node.to_str().unwrap(),
    ]);
    std::fs::write(&resolv, &written).unwrap();
    must(
        "mount",
        &["--bind", resolv.to_str().unwrap(), "/etc/resolv.conf"],
    );
    let corefile = dir.path().join("Corefile");
    std::fs::write(
        &corefile,
        format!(
            ".:53 {{\n    bind 127.0.0.1\n    log\n    prometheus 127.0.0.1:0 {{\n        search_path_domains {NODE}\n    }}\n    kubernetes cluster.local {{\n        pods insecure\n        objects \"{}\"\n    }}\n    forward . {}\n}}\n",
            fixture("shop.json").display(),
            upstream.addr
        ),
    )
    .unwrap();
    let server = TestServer::start(&["serve", "--corefile", corefile.to_str().unwrap()]);
    for _ in 0..2 {
        for name in NAMES {
            // Found or not, the walk is what is counted.
            let _ = std::process::Command::new("getent")
                .args(["ahosts", name])
                .output()
                .unwrap();
        }
    }
    // A marker after the walks: the log holds every query before it.
    let _ = std::process::Command::new("getent")
        .args(["ahosts", "marker.example.com."])
        .output()
        .unwrap();
    let log = wait_for(&server, "marker.example.com.");
    let log_file = dir.path().join("queries.log");
    std::fs::write(&log_file, &log).unwrap();

    let (status, live) = server.http_get("metrics", "/debug/search-path?format=json");
    assert_eq!(status, 200, "{live}");
    let live: Value = serde_json::from_str(&live).unwrap();
    let offline: Value = serde_json::from_str(&crate::common::cli::ok(&[
        "resolve-cost",
        "--log",
        log_file.to_str().unwrap(),
        "--output",
        "json",
    ]))
    .unwrap();
    let live_shop = one(&live["namespaces"], "namespace", "shop");
    let offline_shop = one(&offline["namespaces"], "who", "shop");

    // Not vacuous: the walks above miss, upstream too, and find names every way.
    assert_eq!(
        live_shop["wasted"], offline_shop["misses"],
        "{live:#}\n{offline:#}"
    );
    assert!(live_shop["wasted"].as_u64().unwrap() >= 20, "{live:#}");
    assert_eq!(live_shop["upstream"], offline_shop["upstream_misses"]);
    assert!(live_shop["upstream"].as_u64().unwrap() >= 2, "{live:#}");
    let stems = |list: &Value, misses_key: &str| -> Vec<(String, u64, u64, Value)> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap().to_owned(),
                    s[misses_key].as_u64().unwrap(),
                    s["upstream"].as_u64().unwrap(),
                    s["found_as"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(
        stems(&live_shop["stems"], "misses"),
        stems(&offline_shop["behind"], "misses"),
        "the names behind the misses differ"
    );
    assert_eq!(
        live_shop["fixes"], offline_shop["fixes"],
        "the fixes' savings differ"
    );
    let nope = one(&live_shop["stems"], "name", "nope");
    assert_eq!(nope["found_as"], Value::Null);
    let api = one(&live_shop["stems"], "name", "api.partner.example.com");
    assert_eq!(api["found_as"], "api.partner.example.com.");

    // The counters say the same.
    let (_, metrics) = server.http_get("metrics", "/metrics");
    let wasted = format!(
        "clusterdns_search_path_queries_total{{namespace=\"shop\",outcome=\"wasted\"}} {}\n",
        live_shop["wasted"]
    );
    assert!(metrics.contains(&wasted), "{wasted} not in:\n{metrics}");
    let walks = live_shop["answered"].as_u64().unwrap() + live_shop["unanswered"].as_u64().unwrap();
    let count = format!("clusterdns_search_path_walk_length_count {walks}\n");
    assert!(metrics.contains(&count), "{count} not in:\n{metrics}");
    assert!(walks > 0);
}

/// The element of `list` whose `key` is `value`.
fn one<'v>(list: &'v Value, key: &str, value: &str) -> &'v Value {
    list.as_array()
        .and_then(|list| list.iter().find(|item| item[key] == value))
        .unwrap_or_else(|| panic!("no {key} {value} in {list:#}"))
}

/// The server's stdout once it holds `text`.
fn wait_for(server: &TestServer, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = server.stdout();
        if out.contains(text) {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "the server never logged {text}:\n{out}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The server asks an ExternalName's target through itself (CoreDNS's `Upstream.Lookup`),
/// with the client's address; that lookup is the server's, not a step of the client's walk.
/// A client whose walk for the target's name is under way (a pod that asked
/// `www.example.com` and is trying its search list, or whose walk's next steps went to
/// another replica) then asks the ExternalName: its walk must neither end nor count as
/// answered by the server's own lookup.
#[test]
fn a_cname_chase_is_not_a_step_of_the_clients_walk() {
    let upstream = NamesUpstream::start("127.0.0.1:0".parse().unwrap(), &["www.example.com"]);
    let dir = tempfile::tempdir().unwrap();
    let corefile = dir.path().join("Corefile");
    std::fs::write(
        &corefile,
        format!(
            ".:0 {{\n    bind 127.0.0.1\n    prometheus 127.0.0.1:0\n    kubernetes cluster.local {{\n        objects \"{}\"\n    }}\n    forward . {}\n}}\n",
            fixture("rules.json").display(),
            upstream.addr
        ),
    )
    .unwrap();
    let server = TestServer::start(&["serve", "--corefile", corefile.to_str().unwrap()]);
    // The first step of a walk for www.example.com from namespace rules: NXDOMAIN.
    let first = server.ask_udp("www.example.com.rules.svc.cluster.local.", "A");
    assert_eq!(first.rcode, "NXDOMAIN");
    // The ExternalName rules/ext, a CNAME to www.example.com, chased upstream.
    let ext = server.ask_udp("ext.rules.svc.cluster.local.", "A");
    assert_eq!(ext.rcode, "NOERROR");
    assert!(
        ext.answer
            .iter()
            .any(|r| r.contains("CNAME www.example.com.")),
        "{:?}",
        ext.answer
    );
    assert_eq!(upstream.asked().len(), 1, "the target went upstream");
    let (_, metrics) = server.http_get("metrics", "/metrics");
    for (outcome, count) in [("wasted", 1), ("answered", 1), ("unanswered", 0)] {
        let series = format!(
            "clusterdns_search_path_queries_total{{namespace=\"rules\",outcome=\"{outcome}\"}} {count}\n"
        );
        assert!(metrics.contains(&series), "{series} not in:\n{metrics}");
    }
}
