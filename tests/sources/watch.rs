//! The API watch, end to end: the real binary with a *kubernetes* block without `objects`.
//! Here, what needs no API server: start-up before any sync, the snapshot file served at
//! start, and connection settings that are wrong.

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{TempCorefile, expect, fixture};
use crate::sources::live::serve;

/// How long a log line may take to appear.
const LOG_WAIT: Duration = Duration::from_secs(10);

/// A loopback URL where nothing listens (a port just bound and released).
fn dead_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// A Corefile whose *kubernetes* block watches `endpoint`, with `options` added.
fn watching(endpoint: &str, options: &str) -> TempCorefile {
    crate::sources::live::corefile(&format!("endpoint {endpoint}"), options, "")
}

/// Writes the shop fixture as the watch would have persisted it.
fn write_snapshot(path: &Path) {
    let loaded = clusterdns::source::read_objects(&[fixture("shop.json")]).unwrap();
    clusterdns::source::api::write_snapshot(path, &loaded.cluster).unwrap();
}

#[test]
fn before_the_first_sync_unknown_names_are_servfail_never_nxdomain() {
    let corefile = watching(&dead_endpoint(), "startup_timeout 1s");
    let server = serve(&corefile);
    server.wait_log(
        "waiting for Kubernetes API before starting server",
        LOG_WAIT,
    );
    server.wait_log("starting server with unsynced Kubernetes API", LOG_WAIT);
    for (name, qtype) in [
        ("web.shop.svc.cluster.local.", "A"),
        ("web.shop.svc.cluster.local.", "AAAA"),
        ("nope.cluster.local.", "A"),
    ] {
        let reply = server.ask_udp(name, qtype);
        assert_eq!(reply.rcode, "SERVFAIL", "{name} {qtype}: {reply:?}");
    }
    // Names the zone has whatever the objects (the apex) answer as usual.
    let apex = server.ask_udp("cluster.local.", "SOA");
    assert_eq!(apex.rcode, "NOERROR");
    assert!(apex.authoritative);
    // fallthrough comes first: an unknown PTR goes on down the chain (which ends here).
    let ptr = server.ask_udp("9.9.9.10.in-addr.arpa.", "PTR");
    assert_eq!(ptr.rcode, "REFUSED", "{ptr:?}");

    let (status, body) = server.http_get("ready", "/ready");
    assert_eq!(status, 503, "{body}");
    let mut lines = body.lines();
    assert_eq!(lines.next(), Some("kubernetes"));
    assert!(
        body.contains("not synced with the API server yet"),
        "{body}"
    );
    assert!(body.contains("API server failing for"), "{body}");

    let (_, metrics) = server.http_get("metrics", "/metrics");
    for line in [
        "clusterdns_kubernetes_synced{zone=\"cluster.local.\"} 0",
        "clusterdns_kubernetes_api_up{zone=\"cluster.local.\"} 0",
    ] {
        assert!(metrics.contains(line), "{line} not in:\n{metrics}");
    }
    assert!(
        metrics.contains("clusterdns_kubernetes_api_requests_total{code=\"error\""),
        "{metrics}"
    );
    assert!(
        metrics.contains("clusterdns_kubernetes_watch_errors_total{resource=\"services\""),
        "{metrics}"
    );
}

#[test]
fn a_snapshot_file_is_served_at_once_while_the_api_server_does_not_answer() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("snapshot.json");
    write_snapshot(&snapshot);
    // A minute of startup_timeout: the server must not wait for it, having a state to serve.
    let corefile = watching(
        &dead_endpoint(),
        &format!(
            "startup_timeout 60s\n        ttl 30\n        snapshot {}",
            snapshot.display()
        ),
    );
    let server = serve(&corefile);
    server.wait_log("serving the snapshot", LOG_WAIT);
    assert!(
        !server.log().contains("waiting for Kubernetes API"),
        "{}",
        server.log()
    );
    // From the snapshot, with a short TTL (5 s, though the block says 30) until synced.
    let web = server.ask_udp("web.shop.svc.cluster.local.", "A");
    assert_eq!(web.rcode, "NOERROR");
    assert_eq!(
        web.answer,
        expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"])
    );
    let srv = server.ask_tcp("_http._tcp.web.shop.svc.cluster.local.", "SRV");
    assert_eq!(srv.rcode, "NOERROR", "{srv:?}");
    assert!(!srv.answer.is_empty());
    // What the snapshot does not know may exist by now: SERVFAIL, never NXDOMAIN.
    let unknown = server.ask_udp("new.shop.svc.cluster.local.", "A");
    assert_eq!(unknown.rcode, "SERVFAIL", "{unknown:?}");

    let (status, body) = server.http_get("ready", "/ready");
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("OK\n"), "{body}");
    assert!(body.contains("serving the snapshot file (age"), "{body}");
    let (_, metrics) = server.http_get("metrics", "/metrics");
    assert!(
        metrics.contains("clusterdns_kubernetes_snapshot_age_seconds{zone=\"cluster.local.\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("clusterdns_kubernetes_synced{zone=\"cluster.local.\"} 0"),
        "{metrics}"
    );
}

/// The changes appended since FILE was written whole are served with it, as the watch left
/// them: a Service gone, another moved.
#[test]
fn a_snapshot_file_is_served_with_the_changes_written_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("snapshot.json");
    write_snapshot(&snapshot);
    let web = r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"shop"},"spec":{"clusterIP":"10.96.0.99","clusterIPs":["10.96.0.99"],"ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":8080}],"type":"ClusterIP"}}"#;
    let db = r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"db","namespace":"shop"}}"#;
    std::fs::write(
        clusterdns::source::api::changes_path(&snapshot),
        format!(
            "{{\"type\":\"DELETED\",\"object\":{db}}}\n{{\"type\":\"MODIFIED\",\"object\":{web}}}\n"
        ),
    )
    .unwrap();
    let corefile = watching(
        &dead_endpoint(),
        &format!(
            "startup_timeout 60s\n        snapshot {}",
            snapshot.display()
        ),
    );
    let server = serve(&corefile);
    server.wait_log("serving the snapshot", LOG_WAIT);
    let web = server.ask_udp("web.shop.svc.cluster.local.", "A");
    assert_eq!(
        web.answer,
        expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.99"])
    );
    let db = server.ask_udp("db.shop.svc.cluster.local.", "A");
    assert_eq!(db.rcode, "SERVFAIL", "{db:?}");
    let checkout = server.ask_udp("checkout.shop.svc.cluster.local.", "A");
    assert_eq!(checkout.rcode, "NOERROR", "{checkout:?}");
}

#[test]
fn a_broken_snapshot_file_is_reported_and_the_server_starts_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("snapshot.json");
    std::fs::write(&snapshot, "{\"kind\": \"List\", \"items\": [").unwrap();
    let corefile = watching(
        &dead_endpoint(),
        &format!(
            "startup_timeout 1s\n        snapshot {}",
            snapshot.display()
        ),
    );
    let server = serve(&corefile);
    server.wait_log("starting without it", LOG_WAIT);
    assert!(server.log().contains("snapshot.json"), "{}", server.log());
    let web = server.ask_udp("web.shop.svc.cluster.local.", "A");
    assert_eq!(web.rcode, "SERVFAIL");
}

fn start_error(corefile: &TempCorefile) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["serve", "--corefile", corefile.path.to_str().unwrap()])
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn wrong_connection_settings_stop_the_start_with_what_is_wrong() {
    let missing = TempCorefile::new(
        ".:0 {\n    kubernetes cluster.local {\n        kubeconfig /nonexistent/kubeconfig\n    }\n}\n",
    );
    let (code, stderr) = start_error(&missing);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("kubernetes (line 2): kubeconfig /nonexistent/kubeconfig: no such file"),
        "{stderr}"
    );
    assert!(!stderr.contains("'\""), "kube's quoting: {stderr}");

    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\n\
         users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: kind\n  context:\n    cluster: c\n    user: u\n\
         current-context: kind\n",
    )
    .unwrap();
    let no_context = TempCorefile::new(&format!(
        ".:0 {{\n    kubernetes cluster.local {{\n        kubeconfig {} other\n    }}\n}}\n",
        kubeconfig.display()
    ));
    let (code, stderr) = start_error(&no_context);
    assert_ne!(code, 0);
    // In the tools' words, with the context meant.
    assert!(
        stderr.contains("no context \"other\" (it has kind)"),
        "{stderr}"
    );
    let misspelt = TempCorefile::new(&format!(
        ".:0 {{\n    kubernetes cluster.local {{\n        kubeconfig {} knd\n    }}\n}}\n",
        kubeconfig.display()
    ));
    let (code, stderr) = start_error(&misspelt);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("no context \"knd\" (it has kind); did you mean \"kind\"?"),
        "{stderr}"
    );

    let bad_url = TempCorefile::new(
        ".:0 {\n    kubernetes cluster.local {\n        endpoint not-a-url\n    }\n}\n",
    );
    let (code, stderr) = start_error(&bad_url);
    assert_ne!(code, 0);
    assert!(stderr.contains("endpoint \"not-a-url\""), "{stderr}");

    let missing_cert = TempCorefile::new(
        ".:0 {\n    kubernetes cluster.local {\n        endpoint https://127.0.0.1:6443\n        tls /nope/cert.pem /nope/key.pem /nope/ca.pem\n    }\n}\n",
    );
    let (code, stderr) = start_error(&missing_cert);
    assert_ne!(code, 0);
    assert!(stderr.contains("tls CERT /nope/cert.pem"), "{stderr}");

    // Neither kubeconfig nor endpoint, and not in a pod.
    let in_cluster = TempCorefile::new(".:0 {\n    kubernetes cluster.local\n}\n");
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["serve", "--corefile", in_cluster.path.to_str().unwrap()])
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not running in a Kubernetes pod"),
        "{stderr}"
    );
}
