//! The Corefile plugins of kubeadm's configuration, end to end against the real binary:
//! forward (to a test upstream on loopback), cache, errors, log, loadbalance, health, ready,
//! prometheus, lameduck, reload, loop.

mod autopath;
mod external_name;
mod file;
mod forward;
mod forward_tls;
mod k8s_external;
mod multicluster;
mod rewrite;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use crate::common::binary::{TestServer, http_get};
use crate::common::ports::on_free_ports;
use crate::common::upstream::{Behaviour, TestUpstream};
use crate::common::{Reply, TempCorefile, expect, query, read, runtime};

fn upstream(runtime: &tokio::runtime::Runtime, behaviour: Behaviour) -> TestUpstream {
    runtime.block_on(TestUpstream::start(behaviour))
}

fn serve(corefile: &TempCorefile) -> TestServer {
    TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()])
}

/// kubeadm's Corefile with the objects store and loopback ports, plus `extra` lines.
fn kubeadm(upstream: SocketAddr, extra: &str) -> TempCorefile {
    TempCorefile::new(&format!(
        ".:0 {{
    bind 127.0.0.1
    errors
    health 127.0.0.1:0 {{
       lameduck 1s
    }}
    ready 127.0.0.1:0
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
       objects {{FIXTURES}}/shop.json
    }}
    prometheus 127.0.0.1:0
    forward . {upstream} {{
       max_concurrent 1000
    }}
    cache 30 {{
       disable success cluster.local
       disable denial cluster.local
    }}
    loop
    loadbalance
    {extra}
}}
"
    ))
}

fn ttl_of(reply: &Reply) -> u32 {
    reply.message.answers[0].ttl
}

#[test]
fn names_outside_the_cluster_are_forwarded_and_cached() {
    let rt = runtime(2);
    let up = upstream(&rt, Behaviour::Answer);
    let corefile = kubeadm(up.addr, "");
    let server = serve(&corefile);
    let first = server.ask_udp("www.example.com.", "A");
    assert_eq!(first.rcode, "NOERROR");
    assert_eq!(
        first.answer,
        expect(&["www.example.com. 30 IN A 192.0.2.1"]),
        "what the cache keeps it for (30 s), as CoreDNS's cache sends it, not the upstream's 60"
    );
    assert!(!first.authoritative, "an upstream answer is not ours");
    assert_eq!(up.queries_for("www.example.com."), 1);
    std::thread::sleep(Duration::from_millis(1100));
    let cached = server.ask_udp("WWW.example.com.", "A");
    assert_eq!(
        up.queries_for("www.example.com."),
        1,
        "the second answer came from the cache"
    );
    assert_eq!(ttl_of(&cached), 29, "one whole second gone");
    assert!(
        cached.authoritative,
        "CoreDNS's cache sets AA on every answer it holds"
    );
    assert_eq!(
        cached.message.queries[0].name().to_string(),
        "WWW.example.com.",
        "the question as this client asked it"
    );
    // The cluster zone never goes upstream, nor into the cache.
    let web = server.ask_udp("web.shop.svc.cluster.local.", "A");
    assert_eq!(
        web.answer,
        expect(&["web.shop.svc.cluster.local. 30 IN A 10.96.0.20"])
    );
    assert_eq!(up.queries_for("web.shop.svc.cluster.local."), 0);
    // An unknown pod IP falls through the reverse zone to the upstream.
    let ptr = server.ask_udp("9.9.9.9.in-addr.arpa.", "PTR");
    assert_eq!(
        ptr.rcode, "NOERROR",
        "forwarded (the test upstream has no PTR: NODATA)"
    );
    assert_eq!(up.queries_for("9.9.9.9.in-addr.arpa."), 1);
    // Over TCP too.
    assert_eq!(
        server.ask_tcp("tcp.example.com.", "A").answer,
        expect(&["tcp.example.com. 30 IN A 192.0.2.1"])
    );
}

#[test]
fn a_dead_upstream_is_servfail_in_time_and_an_error_line() {
    let rt = runtime(2);
    let up = upstream(&rt, Behaviour::Silent);
    let corefile = kubeadm(up.addr, "");
    let server = serve(&corefile);
    let started = Instant::now();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    socket
        .send_to(&query("gone.example.com.", "A", Some(1232)), server.addr)
        .unwrap();
    let mut buf = [0u8; 4096];
    let (len, _) = socket.recv_from(&mut buf).unwrap();
    let elapsed = started.elapsed();
    assert_eq!(Reply::decode(&buf[..len]).rcode, "SERVFAIL");
    assert!(
        elapsed < Duration::from_secs(5),
        "before the client's own 5 s timeout: {elapsed:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(2);
    while !server
        .stdout()
        .contains("[ERROR] plugin/errors: 2 gone.example.com. A:")
    {
        assert!(
            Instant::now() < deadline,
            "no error line in: {}",
            server.stdout()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The cluster zone is unaffected.
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
}

#[test]
fn max_concurrent_refuses_past_the_limit() {
    let rt = runtime(2);
    let up = upstream(&rt, Behaviour::Delay(Duration::from_millis(800)));
    let corefile = TempCorefile::new(&format!(
        ".:0 {{\n bind 127.0.0.1\n forward . {} {{\n  max_concurrent 2\n }}\n}}\n",
        up.addr
    ));
    let server = serve(&corefile);
    let sockets: Vec<UdpSocket> = (0..6)
        .map(|i| {
            let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            socket
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            socket
                .send_to(
                    &query(&format!("q{i}.example.com."), "A", None),
                    server.addr,
                )
                .unwrap();
            socket
        })
        .collect();
    let rcodes: Vec<String> = sockets
        .iter()
        .map(|socket| {
            let mut buf = [0u8; 1024];
            let (len, _) = socket.recv_from(&mut buf).unwrap();
            Reply::decode(&buf[..len]).rcode
        })
        .collect();
    assert_eq!(
        rcodes.iter().filter(|r| *r == "NOERROR").count(),
        2,
        "{rcodes:?}"
    );
    assert_eq!(
        rcodes.iter().filter(|r| *r == "REFUSED").count(),
        4,
        "{rcodes:?}"
    );
}

#[test]
fn a_truncated_upstream_answer_is_retried_over_tcp() {
    let rt = runtime(2);
    let up = upstream(&rt, Behaviour::Truncate);
    let corefile = TempCorefile::new(&format!(
        ".:0 {{\n bind 127.0.0.1\n forward . {}\n}}\n",
        up.addr
    ));
    let server = serve(&corefile);
    let reply = server.ask_udp("big.example.com.", "A");
    assert!(!reply.truncated);
    assert_eq!(
        reply.answer,
        expect(&["big.example.com. 60 IN A 192.0.2.1"])
    );
    assert!(up.tcp() >= 1, "the retry went over TCP");
}

#[test]
fn health_ready_and_metrics_over_http() {
    let rt = runtime(2);
    let up = upstream(&rt, Behaviour::Answer);
    let corefile = kubeadm(up.addr, "");
    let server = serve(&corefile);
    assert_eq!(server.http_get("health", "/health"), (200, "OK".to_owned()));
    // Wait for the loop probe to have gone round (it is counted too).
    let deadline = Instant::now() + Duration::from_secs(5);
    while up.queries() < 1 {
        assert!(Instant::now() < deadline, "no loop probe");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.http_get("ready", "/ready"), (200, "OK".to_owned()));
    assert_eq!(server.http_get("health", "/nope").0, 404);
    server.ask_udp("web.shop.svc.cluster.local.", "A");
    server.ask_udp("nope.shop.svc.cluster.local.", "A");
    server.ask_udp("www.example.com.", "A");
    server.ask_udp("www.example.com.", "A");
    let (status, metrics) = server.http_get("metrics", "/metrics");
    assert_eq!(status, 200);
    let server_label = "dns://127.0.0.1:0";
    for needle in [
        format!(
            "coredns_dns_requests_total{{family=\"1\",proto=\"udp\",server=\"{server_label}\",type=\"A\",view=\"\",zone=\".\"}} 4"
        ),
        format!(
            "coredns_dns_responses_total{{plugin=\"kubernetes\",rcode=\"NOERROR\",server=\"{server_label}\",view=\"\",zone=\".\"}} 1"
        ),
        format!(
            "coredns_dns_responses_total{{plugin=\"kubernetes\",rcode=\"NXDOMAIN\",server=\"{server_label}\",view=\"\",zone=\".\"}} 1"
        ),
        // The loop plugin's HINFO probe went upstream too.
        format!(
            "coredns_dns_responses_total{{plugin=\"forward\",rcode=\"NOERROR\",server=\"{server_label}\",view=\"\",zone=\".\"}} 2"
        ),
        format!(
            "coredns_dns_responses_total{{plugin=\"cache\",rcode=\"NOERROR\",server=\"{server_label}\",view=\"\",zone=\".\"}} 1"
        ),
        "# TYPE coredns_dns_request_duration_seconds histogram".to_owned(),
        "# TYPE coredns_dns_request_size_bytes histogram".to_owned(),
        "# TYPE coredns_dns_response_size_bytes histogram".to_owned(),
        format!(
            "coredns_cache_hits_total{{server=\"{server_label}\",type=\"success\",view=\"\",zones=\".\"}} 1"
        ),
        "coredns_cache_misses_total".to_owned(),
        "coredns_cache_entries".to_owned(),
        "coredns_proxy_request_duration_seconds_count{proxy_name=\"forward\",to=\"127.0.0.1:"
            .to_owned(),
        "coredns_forward_requests_total".to_owned(),
        "coredns_health_request_duration_seconds".to_owned(),
        "coredns_build_info{".to_owned(),
        "coredns_panics_total 0".to_owned(),
        format!(
            "coredns_plugin_enabled{{name=\"kubernetes\",server=\"{server_label}\",view=\"\",zone=\".\"}} 1"
        ),
        "coredns_reload_failed_total".to_owned(),
        "process_resident_memory_bytes".to_owned(),
        "process_cpu_seconds_total".to_owned(),
        "clusterdns_store_serial{zone=\"cluster.local.\"}".to_owned(),
        "# TYPE coredns_kubernetes_dns_programming_duration_seconds histogram".to_owned(),
    ] {
        assert!(metrics.contains(&needle), "missing {needle} in:\n{metrics}");
    }
}

#[test]
fn sigterm_goes_through_lameduck() {
    let rt = runtime(2);
    let up = upstream(&rt, Behaviour::Answer);
    let corefile = kubeadm(up.addr, "");
    let mut server = serve(&corefile);
    let (health, ready) = (server.http_addr("health"), server.http_addr("ready"));
    assert_eq!(http_get(ready, "/ready").0, 200);
    let started = Instant::now();
    server.terminate();
    server.wait_log("lameduck", Duration::from_secs(5));
    // During lameduck: not ready, still healthy, still answering.
    assert_eq!(http_get(ready, "/ready").0, 503);
    assert_eq!(http_get(health, "/health").0, 200);
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("exits after lameduck");
    assert!(status.success(), "{status:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "lameduck 1s was served"
    );
}

#[test]
fn the_query_log_writes_coredns_common_log_format() {
    let rt = runtime(2);
    let up = upstream(&rt, Behaviour::Answer);
    let corefile = kubeadm(up.addr, "log");
    let server = serve(&corefile);
    server.ask_udp("web.shop.svc.cluster.local.", "A");
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let out = server.stdout();
        if let Some(line) = out
            .lines()
            .find(|l| l.contains("web.shop.svc.cluster.local."))
        {
            assert!(line.starts_with("[INFO] 127.0.0.1:"), "{line}");
            assert!(
                line.contains(" - 4321 \"A IN web.shop.svc.cluster.local. udp "),
                "{line}"
            );
            assert!(line.contains(" false 1232\" NOERROR qr,aa,rd "), "{line}");
            break;
        }
        assert!(Instant::now() < deadline, "no log line in: {out}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The answer section's data, in the order the reply gives it.
fn order(reply: &Reply) -> Vec<String> {
    reply
        .message
        .answers
        .iter()
        .map(|r| r.data.to_string())
        .collect()
}

#[test]
fn loadbalance_shuffles_headless_answers() {
    let rt = runtime(2);
    let up = upstream(&rt, Behaviour::Answer);
    let corefile = kubeadm(up.addr, "");
    let server = serve(&corefile);
    let orders: std::collections::HashSet<Vec<String>> = (0..20)
        .map(|_| order(&server.ask_udp("web-headless.shop.svc.cluster.local.", "A")))
        .collect();
    assert!(orders.len() > 1, "20 answers, always in one order");
}

#[test]
fn loadbalance_shuffles_an_expired_answer_served_under_serve_stale_verify() {
    let rt = runtime(2);
    let up = upstream(&rt, Behaviour::Answer);
    up.set_records(4);
    // Answers live a second; once the upstream is gone, `verify` serves the expired one.
    let corefile = TempCorefile::new(&format!(
        ".:0 {{\n    bind 127.0.0.1\n    cache {{\n        success 1000 1 0\n        serve_stale 1h verify\n    }}\n    loadbalance\n    forward . {}\n}}\n",
        up.addr
    ));
    let server = serve(&corefile);
    assert_eq!(order(&server.ask_udp("example.com.", "A")).len(), 4);
    drop(up);
    std::thread::sleep(Duration::from_millis(1300));
    let orders: std::collections::HashSet<Vec<String>> = (0..20)
        .map(|_| {
            let reply = server.ask_udp("example.com.", "A");
            assert_eq!(reply.rcode, "NOERROR", "{}", server.log());
            assert!(
                reply.message.answers.iter().all(|r| r.ttl == 0),
                "the expired answer: {:?}",
                reply.message.answers
            );
            order(&reply)
        })
        .collect();
    assert!(
        orders.len() > 1,
        "20 stale answers of 4 addresses, always in one order: {orders:?}"
    );
}

#[test]
fn reload_applies_a_changed_corefile_and_keeps_the_running_one_on_error() {
    let rt = runtime(2);
    let up = upstream(&rt, Behaviour::Answer);
    let corefile = kubeadm(up.addr, "reload 2s 1s");
    let server = serve(&corefile);
    let ready = server.http_addr("ready");
    let ttl = |server: &TestServer| ttl_of(&server.ask_udp("web.shop.svc.cluster.local.", "A"));
    assert_eq!(ttl(&server), 30);
    let text = std::fs::read_to_string(&corefile.path).unwrap();
    std::fs::write(&corefile.path, text.replace("ttl 30", "ttl 7")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while ttl(&server) != 7 {
        assert!(Instant::now() < deadline, "not reloaded:\n{}", server.log());
        assert_eq!(
            http_get(ready, "/ready").0,
            200,
            "ready must not blink on reload"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(server.addr, server.addr, "same listener");
    std::fs::write(
        &corefile.path,
        text.replace("ttl 30", "ttl 7")
            .replace("loop", "loop\n    bogus_directive"),
    )
    .unwrap();
    server.wait_log("Corefile reload failed", Duration::from_secs(10));
    assert_eq!(ttl(&server), 7, "the running configuration stays");
    assert_eq!(http_get(ready, "/ready").0, 200);
    let (_, metrics) = server.http_get("metrics", "/metrics");
    assert!(
        metrics.contains("coredns_reload_failed_total 1"),
        "{metrics}"
    );
    // A Corefile without `reload` is applied, and then no longer checked, as in CoreDNS.
    let unreloaded = text.replace("ttl 30", "ttl 9").replace("reload 2s 1s", "");
    std::fs::write(&corefile.path, &unreloaded).unwrap();
    server.wait_log("no longer in the Corefile", Duration::from_secs(10));
    assert_eq!(ttl(&server), 9);
    std::fs::write(&corefile.path, unreloaded.replace("ttl 9", "ttl 11")).unwrap();
    // Past the longest wait of the old schedule (2 s + 1 s of jitter).
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(ttl(&server), 9, "not checked any more");
}

/// A resolver that sends every query back to clusterdns: a forwarding loop.
fn relay_to(target: SocketAddr) -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok((len, from)) = socket.recv_from(&mut buf) {
            let query = buf[..len].to_vec();
            let back = UdpSocket::bind("127.0.0.1:0").unwrap();
            back.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            let socket = socket.try_clone().unwrap();
            std::thread::spawn(move || {
                let _ = back.send_to(&query, target);
                let mut reply = [0u8; 4096];
                if let Ok((len, _)) = back.recv_from(&mut reply) {
                    let _ = socket.send_to(&reply[..len], from);
                }
            });
        }
    });
    addr
}

#[test]
fn a_forwarding_loop_is_reported_and_the_cluster_zone_still_answers() {
    // The port is known before the server starts, so the relay can point at it.
    let (server, _corefile) = on_free_ports(|[port]| {
        let relay = relay_to(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
        let corefile = TempCorefile::new(&format!(
            ".:{port} {{\n bind 127.0.0.1\n kubernetes cluster.local {{\n  objects {{FIXTURES}}/shop.json\n }}\n forward . {relay}\n loop\n}}\n"
        ));
        TestServer::try_start(&["serve", "--corefile", corefile.path.to_str().unwrap()])
            .map(|server| (server, corefile))
    });
    server.wait_log("loop detected", Duration::from_secs(20));
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    assert_eq!(server.ask_udp("www.example.com.", "A").rcode, "SERVFAIL");
}

#[test]
fn kubeadms_corefile_runs_with_only_its_ports_moved() {
    // coredns-behaviour.md §2a, verbatim but for the objects line and the ports (a test
    // cannot take :53, :8080, :8181 and :9153); .ci/smoke runs it on the real ports.
    let kubeadm = read("tests/fixtures/corefiles/kubeadm.Corefile");
    let text = kubeadm
        .replace(".:53 {", ".:0 {\n    bind 127.0.0.1")
        .replace("    health {", "    health 127.0.0.1:0 {")
        .replace("    ready\n", "    ready 127.0.0.1:0\n")
        .replace("prometheus :9153", "prometheus 127.0.0.1:0")
        .replace("ttl 30\n", "ttl 30\n       objects {FIXTURES}/shop.json\n");
    assert_ne!(text, kubeadm);
    let corefile = TempCorefile::new(&text);
    let server = serve(&corefile);
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        expect(&["web.shop.svc.cluster.local. 30 IN A 10.96.0.20"])
    );
    assert_eq!(server.http_get("ready", "/ready").0, 200);
    assert_eq!(server.http_get("health", "/health").0, 200);
}

/// Three Services, one of each kind, with one ready endpoint each in a slice stamped
/// `stamp` (RFC 3339); `last` is the last octet of every endpoint address.
fn stamped_objects(stamp: &str, last: u8) -> String {
    let service = |name: &str, cluster_ip: &str, selector: bool| {
        let selector = if selector {
            format!(r#","selector":{{"app":"{name}"}}"#)
        } else {
            String::new()
        };
        format!(
            r#"{{"apiVersion":"v1","kind":"Service","metadata":{{"name":"{name}","namespace":"shop"}},
               "spec":{{"clusterIP":"{cluster_ip}","ports":[{{"name":"http","port":80}}]{selector}}}}}"#
        )
    };
    let slice = |name: &str, third: u8| {
        format!(
            r#"{{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
               "metadata":{{"name":"{name}-abcde","namespace":"shop",
                 "labels":{{"kubernetes.io/service-name":"{name}"}},
                 "annotations":{{"endpoints.kubernetes.io/last-change-trigger-time":"{stamp}"}}}},
               "addressType":"IPv4",
               "endpoints":[{{"addresses":["10.244.{third}.{last}"],"conditions":{{"ready":true}}}}],
               "ports":[{{"name":"http","port":8080,"protocol":"TCP"}}]}}"#
        )
    };
    format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{},{},{},{},{},{}]}}"#,
        service("web", "10.96.0.20", true),
        service("db", "None", true),
        service("ext", "None", false),
        slice("web", 1),
        slice("db", 2),
        slice("ext", 3),
    )
}

/// The `_count` and `_sum` of `coredns_kubernetes_dns_programming_duration_seconds` for
/// `kind`, from a scrape.
fn programming(metrics: &str, kind: &str) -> (u64, f64) {
    let value = |suffix: &str| {
        let prefix = format!(
            "coredns_kubernetes_dns_programming_duration_seconds_{suffix}{{service_kind=\"{kind}\"}} "
        );
        let line = metrics
            .lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no {prefix} in\n{metrics}"));
        line.parse::<f64>().unwrap()
    };
    (value("count") as u64, value("sum"))
}

#[test]
fn programming_latency_is_measured_for_every_service_kind() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects.json");
    // Stamped long before the start: the first listing is not programming latency.
    std::fs::write(&objects, stamped_objects("2020-01-01T00:00:00Z", 10)).unwrap();
    let corefile = TempCorefile::new(&format!(
        ".:0 {{
    bind 127.0.0.1
    kubernetes cluster.local {{
       objects {}
    }}
    prometheus 127.0.0.1:0
}}
",
        objects.display()
    ));
    let server = serve(&corefile);
    let (_, metrics) = server.http_get("metrics", "/metrics");
    for kind in [
        "cluster_ip",
        "headless_with_selector",
        "headless_without_selector",
    ] {
        assert_eq!(programming(&metrics, kind), (0, 0.0), "{kind}");
    }

    // The controller stamped a change half a second ago (after the start); the file lands
    // now.
    std::thread::sleep(Duration::from_millis(1000));
    let stamp = jiff::Timestamp::now() - jiff::SignedDuration::from_millis(500);
    let staged = dir.path().join(".objects.json.tmp");
    std::fs::write(&staged, stamped_objects(&stamp.to_string(), 11)).unwrap();
    std::fs::rename(&staged, &objects).unwrap();
    let want = expect(&["db.shop.svc.cluster.local. 5 IN A 10.244.2.11"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.ask_udp("db.shop.svc.cluster.local.", "A").answer != want {
        assert!(
            Instant::now() < deadline,
            "never reloaded:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, metrics) = server.http_get("metrics", "/metrics");
    for kind in [
        "cluster_ip",
        "headless_with_selector",
        "headless_without_selector",
    ] {
        let (count, sum) = programming(&metrics, kind);
        assert_eq!(count, 1, "{kind}");
        assert!((0.5..60.0).contains(&sum), "{kind}: {sum} s");
    }
    assert!(
        metrics.contains(
            "coredns_kubernetes_dns_programming_duration_seconds_bucket{service_kind=\"cluster_ip\",le=\"0.256\"} 0\n"
        ),
        "{metrics}"
    );
}
