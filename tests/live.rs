//! The API watch against the API server stand-in (tests/common/apiserver.rs), end to end:
//! the real binary lists and watches it with kube-rs, and is asked over DNS and HTTP while
//! objects change and the stand-in misbehaves.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use crate::common::apiserver::{ApiServer, Cut, Down, Kind};
use crate::common::binary::TestServer;
use crate::common::{Reply, TempCorefile, expect, fixture};

/// How long a change may take to show in the answers (it takes milliseconds; the margin is
/// for a loaded machine).
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

/// Asks until `done` holds for the reply; the last reply.
pub(crate) fn until(
    server: &TestServer,
    name: &str,
    qtype: &str,
    done: impl Fn(&Reply) -> bool,
) -> Reply {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let reply = server.ask_udp(name, qtype);
        if done(&reply) {
            return reply;
        }
        assert!(
            Instant::now() < deadline,
            "{name} {qtype} never changed as expected; last reply {reply:?}\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls `check` until it holds.
pub(crate) fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A Corefile watching the stand-in through `connection` (the connection options), with
/// `options` added to the *kubernetes* block and `extra` lines to the server block.
pub(crate) fn corefile(connection: &str, options: &str, extra: &str) -> TempCorefile {
    TempCorefile::new(&format!(
        ".:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    prometheus 127.0.0.1:0
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        {connection}
        fallthrough in-addr.arpa ip6.arpa
        {options}
    }}
    {extra}
}}
"
    ))
}

pub(crate) fn serve(corefile: &TempCorefile) -> TestServer {
    TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()])
}

/// The stand-in holding the shop fixture.
fn shop() -> ApiServer {
    let api = ApiServer::start();
    api.apply_file(fixture("shop.json"));
    api
}

/// The stored object `kind` `namespace/name`, changed by `change`, applied again.
fn modify(api: &ApiServer, kind: Kind, namespace: &str, name: &str, change: impl Fn(&mut Value)) {
    let mut object = api
        .get(kind, namespace, name)
        .unwrap_or_else(|| panic!("no {kind:?} {namespace}/{name}"));
    change(&mut object);
    api.apply(object);
}

pub(crate) fn addresses(reply: &Reply) -> Vec<String> {
    let mut ips: Vec<String> = reply
        .answer
        .iter()
        .filter_map(|line| line.split_whitespace().last().map(str::to_owned))
        .collect();
    ips.sort();
    ips
}

pub(crate) fn metric(metrics: &str, prefix: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix} in\n{metrics}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn answers_follow_the_objects_on_the_api_server() {
    let api = shop();
    let corefile = corefile(&format!("endpoint {}", api.url()), "", "");
    let server = serve(&corefile);
    // The server waited for the sync before it listened.
    assert!(
        server.log().contains("synced with the API server"),
        "{}",
        server.log()
    );

    let web = server.ask_udp("web.shop.svc.cluster.local.", "A");
    assert_eq!(
        web.answer,
        expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"])
    );
    let headless = server.ask_udp("web-headless.shop.svc.cluster.local.", "A");
    assert_eq!(
        addresses(&headless),
        ["10.244.1.5", "10.244.1.6", "10.244.2.7"]
    );

    // A pod turns unready: its endpoint leaves the headless answer.
    modify(
        &api,
        Kind::EndpointSlice,
        "shop",
        "web-headless-b2hkp",
        |slice| {
            slice["endpoints"][1]["conditions"]["ready"] = json!(false);
        },
    );
    until(
        &server,
        "web-headless.shop.svc.cluster.local.",
        "A",
        |reply| addresses(reply) == ["10.244.1.5", "10.244.2.7"],
    );

    // A Service deleted is NXDOMAIN (synced: not SERVFAIL), for every type.
    api.delete(Kind::Service, "shop", "web");
    until(&server, "web.shop.svc.cluster.local.", "A", |reply| {
        reply.rcode == "NXDOMAIN"
    });
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "AAAA").rcode,
        "NXDOMAIN"
    );

    // A Service created answers, and so does its reverse name.
    api.apply(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "cart", "namespace": "shop"},
        "spec": {"clusterIP": "10.96.0.77", "clusterIPs": ["10.96.0.77"],
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    }));
    until(&server, "cart.shop.svc.cluster.local.", "A", |reply| {
        reply.answer == expect(&["cart.shop.svc.cluster.local. 5 IN A 10.96.0.77"])
    });
    let ptr = server.ask_udp("77.0.96.10.in-addr.arpa.", "PTR");
    assert_eq!(
        ptr.answer,
        expect(&["77.0.96.10.in-addr.arpa. 5 IN PTR cart.shop.svc.cluster.local."])
    );

    // A namespace deleted takes its names with it.
    api.delete(Kind::Namespace, "shop", "shop");
    until(&server, "cart.shop.svc.cluster.local.", "A", |reply| {
        reply.rcode == "NXDOMAIN"
    });

    let (status, body) = server.http_get("ready", "/ready");
    assert_eq!((status, body.as_str()), (200, "OK"));
    let (_, metrics) = server.http_get("metrics", "/metrics");
    assert_eq!(
        metric(
            &metrics,
            "clusterdns_kubernetes_synced{zone=\"cluster.local.\"} "
        ),
        1.0
    );
    assert_eq!(
        metric(
            &metrics,
            "clusterdns_kubernetes_api_up{zone=\"cluster.local.\"} "
        ),
        1.0
    );
    // pods disabled: the pods are neither listed nor watched.
    let requests = api.requests();
    assert!(
        !requests.iter().any(|r| r.kind == Some(Kind::Pod)),
        "{requests:?}"
    );
    for kind in [Kind::Namespace, Kind::Service, Kind::EndpointSlice] {
        assert!(
            requests
                .iter()
                .any(|r| r.kind == Some(kind) && r.is_list() && r.namespace.is_none()),
            "no list of {kind:?}"
        );
    }
}

#[test]
fn a_410_gone_relists_and_applies_what_the_watch_missed() {
    let api = shop();
    let corefile = corefile(&format!("endpoint {}", api.url()), "", "");
    let server = serve(&corefile);
    api.wait_for_watches(3);
    assert_eq!(
        server.ask_udp("db.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );

    // While the server is away, a Service goes and the history is compacted: resuming the
    // watch from where it was gets 410 Gone, and only a re-list can tell the deletion.
    api.set_down(Down::Refuse);
    api.delete(Kind::Service, "shop", "db");
    api.compact();
    // Meanwhile the last state is served.
    assert_eq!(
        server.ask_udp("db.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    api.set_up();
    until(&server, "db.shop.svc.cluster.local.", "A", |reply| {
        reply.rcode == "NXDOMAIN"
    });
    server.wait_log("re-listing", PATIENCE);
    let (_, metrics) = server.http_get("metrics", "/metrics");
    assert!(
        metric(
            &metrics,
            "clusterdns_kubernetes_relists_total{resource=\"services\",zone=\"cluster.local.\"} "
        ) >= 1.0
    );
    // An ERROR 410 inside an open watch does the same.
    api.wait_for_watches(3);
    api.clear_requests();
    api.send_gone();
    eventually("a re-list after the ERROR event", || {
        api.requests().iter().any(|r| r.is_list())
    });
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
}

#[test]
fn watches_cut_mid_stream_resume_without_losing_a_change() {
    let api = shop();
    let corefile = corefile(&format!("endpoint {}", api.url()), "", "");
    let server = serve(&corefile);
    for (round, cut) in [Cut::MidLine, Cut::Abort, Cut::NextEvent, Cut::Clean]
        .into_iter()
        .enumerate()
    {
        api.wait_for_watches(3);
        api.drop_watches(cut);
        // With NextEvent this very change is the event cut in half: it must be replayed.
        let ip = format!("10.96.1.{round}");
        api.apply(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("svc{round}"), "namespace": "shop"},
            "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"port": 80}]},
        }));
        let name = format!("svc{round}.shop.svc.cluster.local.");
        until(&server, &name, "A", |reply| {
            reply.answer == expect(&[&format!("{name} 5 IN A {ip}")])
        });
    }
}

#[test]
fn an_outage_keeps_the_last_state_and_says_so() {
    let api = shop();
    let corefile = corefile(&format!("endpoint {}", api.url()), "", "");
    let server = serve(&corefile);
    api.wait_for_watches(3);

    api.set_down(Down::Refuse);
    server.wait_log("API server request failed", PATIENCE);
    for _ in 0..3 {
        let web = server.ask_udp("web.shop.svc.cluster.local.", "A");
        assert_eq!(
            web.answer,
            expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"])
        );
        assert_eq!(
            server.ask_udp("nope.shop.svc.cluster.local.", "A").rcode,
            "NXDOMAIN",
            "synced once: what does not exist is still NXDOMAIN"
        );
    }
    let (status, body) = server.http_get("ready", "/ready");
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("OK\n"), "{body}");
    assert!(body.contains("API server failing for"), "{body}");
    assert!(body.contains("serving the last known state"), "{body}");
    let (_, metrics) = server.http_get("metrics", "/metrics");
    assert_eq!(
        metric(
            &metrics,
            "clusterdns_kubernetes_api_up{zone=\"cluster.local.\"} "
        ),
        0.0
    );
    assert!(
        metric(
            &metrics,
            "clusterdns_kubernetes_api_requests_total{code=\"error\",zone=\"cluster.local.\"} "
        ) >= 1.0
    );

    // Back: changes flow again and /ready says nothing more.
    api.set_up();
    api.delete(Kind::Service, "shop", "web");
    until(&server, "web.shop.svc.cluster.local.", "A", |reply| {
        reply.rcode == "NXDOMAIN"
    });
    server.wait_log("API server answers again", PATIENCE);
    let (status, body) = server.http_get("ready", "/ready");
    assert_eq!((status, body.as_str()), (200, "OK"));
}

#[test]
fn credentials_come_from_the_kubeconfig_context() {
    let api = shop();
    api.require_token(Some("s3cret"));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.kubeconfig(
        dir.path(),
        &[("stale", Some("expired")), ("kind-kind", Some("s3cret"))],
    );

    let right = corefile(
        &format!("kubeconfig {} kind-kind", kubeconfig.display()),
        "",
        "",
    );
    let server = serve(&right);
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    assert!(
        api.requests()
            .iter()
            .all(|r| r.authorization.as_deref() == Some("Bearer s3cret")),
        "every request carries the context's token"
    );
    drop(server);

    // The current context ("stale") has a token the server refuses.
    let wrong = corefile(
        &format!("kubeconfig {}", kubeconfig.display()),
        "startup_timeout 1s",
        "",
    );
    let server = serve(&wrong);
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "SERVFAIL"
    );
    let (status, body) = server.http_get("ready", "/ready");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("401 Unauthorized"), "{body}");
    assert!(
        server.log().contains("the credentials were refused"),
        "{}",
        server.log()
    );
}

#[test]
fn tls_client_certificates_reach_an_https_api_server() {
    let api = ApiServer::start_tls();
    api.apply_file(fixture("shop.json"));
    let tls = api.tls_files().unwrap();
    let corefile = corefile(
        &format!(
            "endpoint {}\n        tls {} {} {}",
            api.url(),
            tls.cert.display(),
            tls.key.display(),
            tls.ca.display()
        ),
        "",
        "",
    );
    let server = serve(&corefile);
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"])
    );
    // A certificate the server does not trust: never synced.
    let stranger = corefile_with_cert(&api, &tls.stranger_cert, &tls.stranger_key, &tls.ca);
    let server = serve(&stranger);
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "SERVFAIL"
    );
}

fn corefile_with_cert(api: &ApiServer, cert: &Path, key: &Path, ca: &Path) -> TempCorefile {
    corefile(
        &format!(
            "endpoint {}\n        tls {} {} {}",
            api.url(),
            cert.display(),
            key.display(),
            ca.display()
        ),
        "startup_timeout 1s",
        "",
    )
}

#[test]
fn filters_are_sent_as_server_side_selectors() {
    let api = shop();
    api.apply(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "internal", "namespace": "shop", "labels": {"tier": "internal"}},
        "spec": {"clusterIP": "10.96.0.88", "ports": [{"port": 80}]},
    }));
    modify(&api, Kind::Service, "shop", "web", |svc| {
        svc["metadata"]["labels"] = json!({"tier": "public"});
    });
    let corefile = corefile(
        &format!("endpoint {}", api.url()),
        "namespaces shop\n        labels tier=public",
        "",
    );
    let server = serve(&corefile);
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    for name in [
        "internal.shop.svc.cluster.local.",
        "kubernetes.default.svc.cluster.local.",
    ] {
        assert_eq!(server.ask_udp(name, "A").rcode, "NXDOMAIN", "{name}");
    }
    let watches = api.watches();
    let service_watch = watches
        .iter()
        .find(|w| w.kind == Kind::Service)
        .expect("a services watch");
    assert_eq!(service_watch.namespace.as_deref(), Some("shop"));
    assert_eq!(service_watch.label_selector.as_deref(), Some("tier=public"));
    let namespace_watch = watches
        .iter()
        .find(|w| w.kind == Kind::Namespace)
        .expect("a namespaces watch");
    assert_eq!(
        namespace_watch.field_selector.as_deref(),
        Some("metadata.name=shop")
    );
}

#[test]
fn pods_verified_watches_the_pods() {
    let api = shop();
    let corefile = corefile(&format!("endpoint {}", api.url()), "pods verified", "");
    let server = serve(&corefile);
    assert_eq!(
        server
            .ask_udp("10-244-1-5.shop.pod.cluster.local.", "A")
            .answer,
        expect(&["10-244-1-5.shop.pod.cluster.local. 5 IN A 10.244.1.5"])
    );
    assert_eq!(
        server
            .ask_udp("10-9-9-9.shop.pod.cluster.local.", "A")
            .rcode,
        "NXDOMAIN"
    );
    api.delete(Kind::Pod, "shop", pod_with_ip(&api, "10.244.1.5").as_str());
    until(
        &server,
        "10-244-1-5.shop.pod.cluster.local.",
        "A",
        |reply| reply.rcode == "NXDOMAIN",
    );
}

fn pod_with_ip(api: &ApiServer, ip: &str) -> String {
    api.objects(Kind::Pod)
        .into_iter()
        .find(|pod| pod["status"]["podIP"] == ip)
        .and_then(|pod| pod["metadata"]["name"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no pod with IP {ip}"))
}

#[test]
fn a_restart_serves_the_snapshot_before_the_api_server_answers() {
    let api = shop();
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("snapshot.json");
    let corefile = corefile(
        &format!("endpoint {}", api.url()),
        &format!(
            "snapshot {}\n        startup_timeout 30s",
            snapshot.display()
        ),
        "",
    );
    let server = serve(&corefile);
    eventually("the snapshot file is written", || snapshot.exists());
    // A change is written too.
    api.delete(Kind::Service, "shop", "db");
    eventually("the deletion reaches the snapshot file", || {
        std::fs::read_to_string(&snapshot).is_ok_and(|text| !text.contains("\"name\":\"db\""))
    });
    drop(server);

    // The API server is down when the server restarts: the snapshot answers at once.
    api.set_down(Down::Refuse);
    let server = serve(&corefile);
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"])
    );
    assert_eq!(
        server.ask_udp("db.shop.svc.cluster.local.", "A").rcode,
        "SERVFAIL",
        "not in the snapshot: unknown until synced, never NXDOMAIN"
    );
    let (status, body) = server.http_get("ready", "/ready");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("serving the snapshot file"), "{body}");

    // The API server comes back: synced, the snapshot age metric goes away.
    api.set_up();
    server.wait_log("synced with the API server", PATIENCE);
    until(&server, "db.shop.svc.cluster.local.", "A", |reply| {
        reply.rcode == "NXDOMAIN"
    });
    let (_, metrics) = server.http_get("metrics", "/metrics");
    assert!(!metrics.contains("snapshot_age"), "{metrics}");
}

#[test]
fn under_churn_the_snapshot_file_is_rewritten_every_few_seconds_not_every_change() {
    let api = shop();
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("snapshot.json");
    let corefile = corefile(
        &format!("endpoint {}", api.url()),
        &format!("snapshot {}", snapshot.display()),
        "",
    );
    let server = serve(&corefile);
    eventually("the snapshot file is written", || snapshot.exists());
    // A change every 100 ms for 8 s: 80 publications.
    let written = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let mut writes = std::collections::BTreeSet::new();
    let started = Instant::now();
    let mut n = 0u32;
    while started.elapsed() < Duration::from_secs(8) {
        // A change the zone reads (the watch keeps no more of an object than that).
        modify(&api, Kind::Service, "shop", "web", |object| {
            object["spec"]["ports"][0]["port"] = json!(10_000 + n);
        });
        n += 1;
        for _ in 0..4 {
            writes.extend(written(&snapshot));
            std::thread::sleep(Duration::from_millis(25));
        }
    }
    // Each write replaced the file whole (the stand-in's 80 changes were answered at once).
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    assert!(
        (1..=3).contains(&writes.len()),
        "{} writes in 8 s of a change every 100 ms: at most one per 5 s",
        writes.len()
    );
    // The last change reaches the file within the interval.
    let last = format!("\"port\":{}", 10_000 + n - 1);
    let deadline = Instant::now() + Duration::from_secs(7);
    while !std::fs::read_to_string(&snapshot).is_ok_and(|text| text.contains(&last)) {
        assert!(
            Instant::now() < deadline,
            "the last change never reached the file"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn programming_latency_is_measured_from_the_watch() {
    let api = shop();
    let corefile = corefile(&format!("endpoint {}", api.url()), "", "");
    let server = serve(&corefile);
    let count = |kind: &str| {
        let (_, metrics) = server.http_get("metrics", "/metrics");
        metric(
            &metrics,
            &format!(
                "coredns_kubernetes_dns_programming_duration_seconds_count{{service_kind=\"{kind}\"}} "
            ),
        )
    };
    assert_eq!(count("cluster_ip"), 0.0, "the first listing is not latency");
    let stamp = jiff::Timestamp::try_from(SystemTime::now())
        .unwrap()
        .to_string();
    for (slice, kind) in [
        ("web-6tq8z", "cluster_ip"),
        ("web-headless-b2hkp", "headless_with_selector"),
    ] {
        modify(&api, Kind::EndpointSlice, "shop", slice, |object| {
            object["metadata"]["annotations"] =
                json!({"endpoints.kubernetes.io/last-change-trigger-time": stamp});
            object["endpoints"][3]["conditions"]["ready"] = json!(true);
        });
        eventually(&format!("a {kind} observation"), || count(kind) >= 1.0);
    }
}

#[test]
fn slow_api_responses_and_tight_client_limits_still_sync() {
    let api = shop();
    api.set_latency(Duration::from_millis(400));
    // One request at a time, two per second: three long-lived watches must not hold the
    // only slot (a watch counts until its response headers arrive).
    let corefile = corefile(
        &format!("endpoint {}", api.url()),
        "apiserver_qps 2\n        apiserver_burst 1\n        apiserver_max_inflight 1",
        "",
    );
    let server = serve(&corefile);
    assert!(
        server.log().contains("synced with the API server"),
        "{}",
        server.log()
    );
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    api.wait_for_watches(3);
    api.delete(Kind::Service, "shop", "web");
    until(&server, "web.shop.svc.cluster.local.", "A", |reply| {
        reply.rcode == "NXDOMAIN"
    });
}

#[test]
fn a_reload_that_keeps_the_block_keeps_the_watch() {
    let api = shop();
    let corefile = corefile(&format!("endpoint {}", api.url()), "", "reload 2s 1s");
    let server = serve(&corefile);
    api.wait_for_watches(3);
    api.clear_requests();
    // Change the Corefile outside the kubernetes block.
    let text = std::fs::read_to_string(&corefile.path).unwrap();
    std::fs::write(
        &corefile.path,
        text.replace("reload 2s 1s", "reload 2s 1s\n    loadbalance"),
    )
    .unwrap();
    server.wait_log("Corefile reloaded", PATIENCE);
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    assert!(
        !api.requests().iter().any(|r| r.is_list()),
        "the watch was kept: no re-list\n{:?}",
        api.requests()
    );
    assert_eq!(api.open_watches(), 3);
}

/// `VmHWM` and `VmRSS` of a process, in MB.
fn memory_mb(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// The server watching the stand-in `api` (a synthetic cluster loaded) with `pods MODE`,
/// and how long it took to sync.
fn serve_at_scale(api: &ApiServer, pods: &str) -> (TestServer, TempCorefile, Duration) {
    let corefile = corefile(
        &format!("endpoint {}", api.url()),
        &format!("pods {pods}\n        startup_timeout 600s"),
        "",
    );
    let started = Instant::now();
    let server = serve(&corefile);
    (server, corefile, started.elapsed())
}

/// Memory of the watch at scale: `bench/watch-memory.sh` runs it (release build) on a
/// cluster from `examples/gencluster`, named by `CLUSTERDNS_SCALE_FILE`; with
/// `CLUSTERDNS_SCALE_PODS=verified` the pods are watched too. Prints the figures.
#[test]
#[ignore = "a measurement, run by bench/watch-memory.sh"]
fn watch_memory_at_scale() {
    let file = std::env::var("CLUSTERDNS_SCALE_FILE").expect("CLUSTERDNS_SCALE_FILE");
    let pods = std::env::var("CLUSTERDNS_SCALE_PODS").unwrap_or_else(|_| "disabled".into());
    let api = ApiServer::start();
    let started = Instant::now();
    api.apply_file(&file);
    eprintln!(
        "stand-in loaded {file} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let (server, _corefile, synced) = serve_at_scale(&api, &pods);
    assert!(
        server.log().contains("synced with the API server"),
        "{}",
        server.log()
    );
    let (peak, after_sync) = memory_mb(server.pid());
    // Let the allocator return what the lists used.
    std::thread::sleep(Duration::from_secs(10));
    let (_, steady) = memory_mb(server.pid());
    // One re-list of everything (410 Gone): in place, never a second copy.
    api.send_gone();
    server.wait_log("re-listing", PATIENCE);
    std::thread::sleep(Duration::from_secs(10));
    let (peak_after_relist, after_relist) = memory_mb(server.pid());
    let line = server
        .log()
        .lines()
        .find(|l| l.contains("synced with the API server"))
        .unwrap_or_default()
        .to_owned();
    eprintln!(
        "pods {pods}: synced in {:.1} s; RSS peak {peak:.0} MB, after sync {after_sync:.0} MB, \
         steady {steady:.0} MB; after a full re-list: peak {peak_after_relist:.0} MB, RSS \
         {after_relist:.0} MB\n{line}",
        synced.as_secs_f64()
    );
}

/// Server CPU time (user + system) of a process so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

/// How long after the stand-in is told of a new Service its name answers, asked over UDP
/// every 200 µs: the programming latency a client sees. `n` picks the Service's name and
/// ClusterIP (10.111.x.y, outside gencluster's range).
fn new_service_latency(api: &ApiServer, server: &TestServer, n: u32) -> Duration {
    let name = format!("churn-probe-{n}");
    let ip = format!("10.111.{}.{}", n / 250, n % 250 + 1);
    let packet = crate::common::query(&format!("{name}.default.svc.cluster.local."), "A", None);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let addr = server.addr;
    let started = Instant::now();
    api.apply(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"name": "http", "port": 80}]},
    }));
    let mut buf = [0u8; 512];
    loop {
        socket.send_to(&packet, addr).unwrap();
        if let Ok((len, _)) = socket.recv_from(&mut buf) {
            // NOERROR with one answer.
            if len > 12 && buf[3] & 0x0f == 0 && u16::from_be_bytes([buf[6], buf[7]]) == 1 {
                return started.elapsed();
            }
        }
        assert!(started.elapsed() < PATIENCE, "{name} never answered");
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let at = |p: f64| {
        let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
        samples[index].as_secs_f64() * 1000.0
    };
    format!(
        "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples)",
        at(0.5),
        at(0.99),
        at(1.0),
        samples.len()
    )
}

/// dnsperf against the server for `seconds` (pinned to CPU 1): queries answered and the
/// server's CPU time meanwhile.
fn dnsperf(server: &TestServer, queries: &str, seconds: u32) -> Option<(f64, Duration)> {
    let before = cpu_time(server.pid());
    let output = std::process::Command::new("taskset")
        .args(["-c", "1", "dnsperf", "-s", "127.0.0.1", "-p"])
        .arg(server.addr.port().to_string())
        .args([
            "-d",
            queries,
            "-l",
            &seconds.to_string(),
            "-T",
            "2",
            "-c",
            "8",
            "-q",
            "200",
        ])
        .output()
        .ok()?;
    let cpu = cpu_time(server.pid()) - before;
    let text = String::from_utf8_lossy(&output.stdout);
    let completed = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Queries completed:"))?
        .split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()?;
    Some((completed, cpu))
}

/// The watch under churn at scale: `bench/churn.sh` runs it (release build) on a cluster
/// from `examples/gencluster` named by `CLUSTERDNS_SCALE_FILE` (dnsperf queries in
/// `CLUSTERDNS_SCALE_QUERIES`, churn rate in `CLUSTERDNS_CHURN_RATE`, slice updates per
/// second). Prints sync time, RSS, programming latency idle and under churn, the server's CPU
/// spent on the churn and its query capacity during it against idle.
#[test]
#[ignore = "a measurement, run by bench/churn.sh"]
fn churn_at_scale() {
    let file = std::env::var("CLUSTERDNS_SCALE_FILE").expect("CLUSTERDNS_SCALE_FILE");
    let queries = std::env::var("CLUSTERDNS_SCALE_QUERIES").ok();
    let rate: u32 = std::env::var("CLUSTERDNS_CHURN_RATE")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(100);
    let pods = std::env::var("CLUSTERDNS_SCALE_PODS").unwrap_or_else(|_| "insecure".into());
    let api = std::sync::Arc::new(ApiServer::start());
    api.apply_file(&file);
    let (server, _corefile, synced) = serve_at_scale(&api, &pods);
    let pin = |cpu: &str, pid: u32| {
        let _ = std::process::Command::new("taskset")
            .args(["-a", "-cp", cpu, &pid.to_string()])
            .output();
    };
    pin("0", server.pid());
    pin("1", std::process::id());
    let (peak_sync, _) = memory_mb(server.pid());
    std::thread::sleep(Duration::from_secs(5));
    let (_, steady) = memory_mb(server.pid());
    eprintln!(
        "sync {:.1} s; RSS peak during sync {peak_sync:.0} MB, steady {steady:.0} MB",
        synced.as_secs_f64()
    );

    let samples = 40;
    let idle: Vec<Duration> = (0..samples)
        .map(|n| {
            std::thread::sleep(Duration::from_millis(20));
            new_service_latency(&api, &server, n)
        })
        .collect();
    eprintln!("programming latency, idle: {}", percentiles(idle));
    let idle_capacity = queries
        .as_deref()
        .and_then(|q| dnsperf(&server, q, 10))
        .map(|(done, cpu)| done / cpu.as_secs_f64().max(0.001));

    // Churn: `rate` slice updates a second, each flipping one endpoint's readiness.
    let slices: Vec<Value> = api
        .objects(Kind::EndpointSlice)
        .into_iter()
        .filter(|s| s["endpoints"].as_array().is_some_and(|e| !e.is_empty()))
        .collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let (api, stop) = (std::sync::Arc::clone(&api), std::sync::Arc::clone(&stop));
        std::thread::spawn(move || {
            let period = Duration::from_secs_f64(1.0 / f64::from(rate));
            let mut next = Instant::now();
            let mut updates = 0u64;
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mut slice = slices[n % slices.len()].clone();
                let flip = (n / slices.len()).is_multiple_of(2);
                slice["endpoints"][0]["conditions"]["ready"] = json!(!flip);
                let stamp = jiff::Timestamp::now().to_string();
                slice["metadata"]["annotations"] =
                    json!({"endpoints.kubernetes.io/last-change-trigger-time": stamp});
                api.apply(slice);
                updates += 1;
                n += 1;
                next += period;
                if let Some(wait) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
            updates
        })
    };
    std::thread::sleep(Duration::from_secs(2));
    let window = Instant::now();
    let cpu_before = cpu_time(server.pid());
    let mut rss_max: f64 = 0.0;
    let mut busy: Vec<Duration> = Vec::new();
    for n in 0..samples {
        busy.push(new_service_latency(&api, &server, 1000 + n));
        rss_max = rss_max.max(memory_mb(server.pid()).1);
        std::thread::sleep(Duration::from_millis(200));
    }
    let cpu = cpu_time(server.pid()) - cpu_before;
    let elapsed = window.elapsed();
    let churn_capacity = queries
        .as_deref()
        .and_then(|q| dnsperf(&server, q, 10))
        .map(|(done, cpu)| done / cpu.as_secs_f64().max(0.001));
    rss_max = rss_max.max(memory_mb(server.pid()).1);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let updates = churn.join().unwrap();
    eprintln!(
        "programming latency, {rate} slice updates/s: {}",
        percentiles(busy)
    );
    eprintln!(
        "server CPU during churn: {:.1} % of a core ({:.2} s over {:.1} s, probes included); \
         RSS max {rss_max:.0} MB ({:.2} x steady); {updates} updates sent",
        cpu.as_secs_f64() / elapsed.as_secs_f64() * 100.0,
        cpu.as_secs_f64(),
        elapsed.as_secs_f64(),
        rss_max / steady
    );
    if let (Some(idle), Some(churn)) = (idle_capacity, churn_capacity) {
        eprintln!(
            "queries per server CPU-second: idle {idle:.0}, during churn {churn:.0} ({:.0} %)",
            churn / idle * 100.0
        );
    }
}
