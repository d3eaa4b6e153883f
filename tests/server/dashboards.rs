//! `deploy/dashboards/`: the Grafana dashboard and the Prometheus alert rules query only
//! metrics the running server exports. Both files are loaded, every metric name their
//! expressions use is extracted, and a server with everything the panels show (an API
//! watch serving its snapshot file, *forward* with an upstream that answers, *cache*,
//! search-path walks) must list each one in `/metrics`.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use crate::common::apiserver::ApiServer;
use crate::common::names::NamesUpstream;
use crate::common::{fixture, read};
use crate::sources::live::{corefile, serve};

/// `alerts.yaml`: rule groups.
#[derive(Debug, Deserialize)]
struct Rules {
    groups: Vec<Group>,
}

/// One group of rules.
#[derive(Debug, Deserialize)]
struct Group {
    name: String,
    rules: Vec<Rule>,
}

/// One alert rule.
#[derive(Debug, Deserialize)]
struct Rule {
    alert: String,
    expr: String,
    #[serde(rename = "for")]
    for_: Option<String>,
}

/// The metric names in a PromQL expression (a histogram's `_bucket` series as its family).
fn metric_names(expr: &str) -> Vec<String> {
    let pattern = regex::Regex::new(r"\b((?:coredns|clusterdns|process)_[a-z_]+)").unwrap();
    pattern
        .captures_iter(expr)
        .map(|caps| caps[1].trim_end_matches("_bucket").to_owned())
        .collect()
}

/// Every expression of the dashboard's panels, with the panel's title.
fn dashboard_queries() -> Vec<(String, String)> {
    let dashboard: Value = serde_json::from_str(&read("deploy/dashboards/clusterdns.json"))
        .expect("deploy/dashboards/clusterdns.json is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    panels
        .iter()
        .flat_map(|panel| {
            let title = panel["title"].as_str().unwrap_or("?").to_owned();
            panel["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |target| (title.clone(), target["expr"].as_str().unwrap().to_owned()))
        })
        .collect()
}

fn rules() -> Rules {
    serde_saphyr::from_str(&read("deploy/dashboards/alerts.yaml"))
        .expect("deploy/dashboards/alerts.yaml is YAML of rule groups")
}

#[test]
fn the_dashboard_and_the_rules_have_what_operators_look_for() {
    let titles: Vec<String> = dashboard_queries().into_iter().map(|(t, _)| t).collect();
    for wanted in [
        "Requests by type",
        "Responses by rcode",
        "Request latency",
        "Cache hit rate",
        "Forward: health",
        "DNS programming latency",
        "API watch health",
        "Snapshot age",
        "Search-path waste per namespace",
    ] {
        assert!(
            titles.iter().any(|t| t == wanted),
            "no panel {wanted}: {titles:?}"
        );
    }
    let rules = rules();
    assert_eq!(rules.groups[0].name, "clusterdns");
    let alerts: Vec<&str> = rules.groups[0]
        .rules
        .iter()
        .map(|r| r.alert.as_str())
        .collect();
    assert_eq!(
        alerts,
        [
            "ClusterDNSServfailRate",
            "ClusterDNSKubernetesAPIDown",
            "ClusterDNSNotSynced",
            "ClusterDNSForwardFailures",
            "ClusterDNSForwardAllUpstreamsDown",
            "ClusterDNSLameduckStuck",
        ]
    );
    assert!(rules.groups[0].rules.iter().all(|r| r.for_.is_some()));
}

#[test]
fn every_metric_the_dashboard_and_the_rules_query_is_exported() {
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    for (_, expr) in dashboard_queries() {
        wanted.extend(metric_names(&expr));
    }
    for group in rules().groups {
        for rule in group.rules {
            wanted.extend(metric_names(&rule.expr));
        }
    }
    assert!(wanted.len() >= 25, "{wanted:?}");

    // Synced with the API stand-in: forward with an upstream that answers, the cache, a
    // search-path walk, a re-list (410 Gone). Stand-in: the re-list comes from an ERROR 410
    // sent into the open watches on demand, which the real API server cannot be asked for.
    let api = ApiServer::start();
    api.apply_file(fixture("shop.json"));
    let upstream = NamesUpstream::start("127.0.0.1:0".parse().unwrap(), &["example.com"]);
    let synced = serve(&corefile(
        &format!("endpoint {}", api.url()),
        "",
        &format!(
            "health 127.0.0.1:0 {{\n        lameduck 1s\n    }}\n    cache 30\n    forward . {}",
            upstream.addr
        ),
    ));
    api.wait_for_watches(3);
    for name in [
        "web.shop.shop.svc.cluster.local.",
        "web.shop.svc.cluster.local.",
        "example.com.",
        "example.com.",
    ] {
        synced.ask_udp(name, "A");
    }
    api.send_gone();
    synced.wait_log("re-listing", Duration::from_secs(10));
    // Serving its snapshot file, the API server away; an upstream that does not answer
    // (its health checks fail).
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("snapshot.json");
    let loaded = clusterdns::source::read_objects(&[fixture("shop.json")]).unwrap();
    clusterdns::source::api::write_snapshot(&snapshot, &loaded.cluster).unwrap();
    let restored = serve(&corefile(
        &format!("endpoint {}", dead_endpoint()),
        &format!(
            "startup_timeout 60s\n        snapshot {}",
            snapshot.display()
        ),
        &format!(
            "forward . {}",
            dead_endpoint().trim_start_matches("http://")
        ),
    ));
    restored.wait_log("serving the snapshot", Duration::from_secs(10));
    restored.ask_udp("example.com.", "A");

    let deadline = Instant::now() + Duration::from_secs(20);
    let missing = loop {
        let mut exported: BTreeSet<String> = BTreeSet::new();
        for server in [&synced, &restored] {
            let (status, metrics) = server.http_get("metrics", "/metrics");
            assert_eq!(status, 200);
            exported.extend(
                metrics
                    .lines()
                    .filter_map(|line| line.strip_prefix("# TYPE "))
                    .filter_map(|line| line.split(' ').next())
                    .map(str::to_owned),
            );
        }
        let missing: Vec<&String> = wanted
            .iter()
            .filter(|name| !exported.contains(*name))
            .collect();
        // Health-check failures come a moment after the first failed forward.
        if missing.is_empty() || Instant::now() > deadline {
            break missing;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        missing.is_empty(),
        "queried by deploy/dashboards/ but in neither server's /metrics: {missing:?}"
    );
}

/// A loopback URL where nothing listens.
fn dead_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// `promtool check rules` accepts the rules, where promtool is installed (`.ci/run`
/// installs Debian's `prometheus` package when it can).
#[test]
fn promtool_accepts_the_rules() {
    let Ok(output) = std::process::Command::new("promtool")
        .args(["check", "rules"])
        .arg(crate::common::root().join("deploy/dashboards/alerts.yaml"))
        .output()
    else {
        eprintln!("promtool is not installed: the rules are checked by the test above only");
        return;
    };
    assert!(
        output.status.success(),
        "promtool check rules: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `.ci/run` installs promtool where it can and runs it on the rules.
#[test]
fn ci_checks_the_rules_with_promtool() {
    let ci = read(".ci/run");
    assert!(
        ci.contains("want+=(prometheus)"),
        ".ci/run must try to install prometheus"
    );
    assert!(
        ci.contains("promtool check rules deploy/dashboards/alerts.yaml"),
        ".ci/run must run promtool on the rules"
    );
}
