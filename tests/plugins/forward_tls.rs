//! *forward* to `tls://` upstreams (DNS over TLS, RFC 7858), and `policy`: the engine driven
//! against a DoT stand-in on loopback (rustls, a CA and certificate made by the test), and
//! the real binary configured by a Corefile forwarding through it.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use clusterdns::config::{ForwardConfig, ForwardPolicy, parse_corefile};
use clusterdns::forward::{ForwardError, Forwarded, Forwarder, Timeouts};
use clusterdns::server::Transport;
use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, RecordType};

use crate::common::binary::TestServer;
use crate::common::dot::{DotFiles, SERVER_NAME};
use crate::common::forward_metrics::Reading;
use crate::common::upstream::{Behaviour, TestUpstream, WRONG_IP};
use crate::common::{TempCorefile, expect};

/// The forward of a Corefile's first block (parsed, so TLS files are read as in a real
/// start).
fn forward_of(corefile: &str) -> ForwardConfig {
    let file = TempCorefile::new(corefile);
    let text = std::fs::read_to_string(&file.path).unwrap();
    let config = parse_corefile(&text, &file.path)
        .unwrap_or_else(|e| panic!("does not parse: {e}\n{corefile}"));
    config.servers[0].plugins.forward[0].clone()
}

/// `forward . tls://ADDR { tls CA; tls_servername NAME; EXTRA }`.
fn dot_config(addr: SocketAddr, files: &DotFiles, server_name: &str, extra: &str) -> ForwardConfig {
    forward_of(&format!(
        ". {{\n forward . tls://{addr} {{\n  tls {}\n  tls_servername {server_name}\n  {extra}\n }}\n}}\n",
        files.ca.display()
    ))
}

fn short() -> Timeouts {
    Timeouts {
        read: Duration::from_millis(500),
        deadline: Duration::from_secs(2),
        health_check: Duration::from_millis(300),
    }
}

fn query(name: &str, id: u16) -> Vec<u8> {
    let mut message = Message::new(id, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(Name::from_ascii(name).unwrap(), RecordType::A));
    message.to_vec().unwrap()
}

fn answer(outcome: Forwarded) -> (u16, Vec<Ipv4Addr>) {
    let Forwarded::Reply(bytes) = outcome else {
        panic!("not a reply: {outcome:?}");
    };
    let message = Message::from_vec(&bytes).unwrap();
    let ips = message
        .answers
        .iter()
        .filter_map(|record| match &record.data {
            RData::A(a) => Some(a.0),
            _ => None,
        })
        .collect();
    (message.metadata.id, ips)
}

/// Polls `condition` every 10 ms for up to 5 s (the stand-in counts on its own tasks).
async fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !condition() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "timed out: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn queries_go_over_tls_and_reuse_one_connection() {
    let (upstream, files) = TestUpstream::start_tls(Behaviour::Answer, false).await;
    let config = dot_config(upstream.addr, &files, SERVER_NAME, "");
    let forwarder = Forwarder::with_timeouts(&config, &[], short());
    let before = Reading::now();
    for i in 0..20u16 {
        // A UDP client too: a tls:// upstream is asked over TLS whatever the client used.
        let client = if i % 2 == 0 {
            Transport::Udp
        } else {
            Transport::Tcp
        };
        let (id, ips) = answer(
            forwarder
                .forward(&query("www.example.org.", i), client)
                .await,
        );
        assert_eq!((id, ips), (i, vec![Ipv4Addr::new(192, 0, 2, 1)]));
    }
    assert_eq!(upstream.tcp(), 20, "every query over the TLS port");
    assert_eq!(upstream.udp(), 0, "nothing in the clear");
    assert_eq!(
        (upstream.connections(), upstream.handshakes()),
        (1, 1),
        "one connection and one handshake for twenty queries in a row"
    );
    let to = upstream.addr.to_string();
    let labels = format!("proxy_name=\"forward\",to=\"{to}\",proto=\"tcp-tls\"");
    for (series, value) in [
        (
            format!("coredns_proxy_conn_cache_misses_total{{{labels}}}"),
            1.0,
        ),
        (
            format!("coredns_proxy_conn_cache_hits_total{{{labels}}}"),
            19.0,
        ),
        (
            format!(
                "coredns_proxy_request_duration_seconds_count{{proxy_name=\"forward\",to=\"{to}\",rcode=\"NOERROR\"}}"
            ),
            20.0,
        ),
    ] {
        assert_eq!(
            before.since(&series),
            value,
            "{series}\n{}",
            Reading::now().text()
        );
    }
}

#[tokio::test]
async fn concurrent_queries_open_a_connection_each_and_then_share_them() {
    let (upstream, files) =
        TestUpstream::start_tls(Behaviour::Delay(Duration::from_millis(100)), false).await;
    let config = dot_config(upstream.addr, &files, SERVER_NAME, "");
    let forwarder = std::sync::Arc::new(Forwarder::with_timeouts(&config, &[], short()));
    let burst = |base: u16| {
        let tasks: Vec<_> = (0..4u16)
            .map(|i| {
                let forwarder = std::sync::Arc::clone(&forwarder);
                tokio::spawn(async move {
                    answer(
                        forwarder
                            .forward(&query("www.example.org.", base + i), Transport::Udp)
                            .await,
                    )
                })
            })
            .collect();
        futures::future::join_all(tasks)
    };
    for result in burst(0).await {
        assert_eq!(result.unwrap().1, [Ipv4Addr::new(192, 0, 2, 1)]);
    }
    // As CoreDNS: one query at a time per connection, so four at once open four.
    assert_eq!(upstream.handshakes(), 4);
    for result in burst(10).await {
        assert_eq!(result.unwrap().1, [Ipv4Addr::new(192, 0, 2, 1)]);
    }
    assert_eq!(upstream.handshakes(), 4, "the second burst reuses them");
    assert_eq!(upstream.tcp(), 8);
}

#[tokio::test]
async fn a_connection_idle_past_expire_is_not_reused() {
    let (upstream, files) = TestUpstream::start_tls(Behaviour::Answer, false).await;
    let config = dot_config(upstream.addr, &files, SERVER_NAME, "expire 200ms");
    let forwarder = Forwarder::with_timeouts(&config, &[], short());
    for i in 0..3u16 {
        answer(
            forwarder
                .forward(&query("a.example.org.", i), Transport::Udp)
                .await,
        );
    }
    assert_eq!(upstream.handshakes(), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    answer(
        forwarder
            .forward(&query("b.example.org.", 9), Transport::Udp)
            .await,
    );
    assert_eq!(upstream.handshakes(), 2, "a new session after expire");
}

#[tokio::test]
async fn a_cached_connection_the_upstream_closed_is_replaced() {
    let (upstream, files) = TestUpstream::start_tls(Behaviour::Answer, false).await;
    upstream.close_tcp_after_reply(true);
    let config = dot_config(upstream.addr, &files, SERVER_NAME, "");
    let forwarder = Forwarder::with_timeouts(&config, &[], short());
    for i in 0..4u16 {
        let (id, ips) = answer(
            forwarder
                .forward(&query("a.example.org.", i), Transport::Udp)
                .await,
        );
        assert_eq!((id, ips), (i, vec![Ipv4Addr::new(192, 0, 2, 1)]));
    }
    // Each query after the first found its cached session closed and opened another, at
    // once and without counting as a failure.
    assert_eq!(upstream.handshakes(), 4);
    assert!(forwarder.health().iter().all(|health| health.fails == 0));
}

#[tokio::test]
async fn a_reply_too_big_for_a_udp_client_is_truncated() {
    let (upstream, files) = TestUpstream::start_tls(Behaviour::Answer, false).await;
    upstream.set_records(60);
    let config = dot_config(upstream.addr, &files, SERVER_NAME, "");
    let forwarder = Forwarder::with_timeouts(&config, &[], short());
    // No EDNS: the client takes 512 bytes; the TLS reply holds sixty A records.
    let Forwarded::Reply(bytes) = forwarder
        .forward(&query("big.example.org.", 5), Transport::Udp)
        .await
    else {
        panic!("no reply");
    };
    let message = Message::from_vec(&bytes).unwrap();
    assert!(message.metadata.truncation && message.answers.is_empty());
    assert_eq!(message.metadata.id, 5);
    // Over TCP the client gets all of it.
    let (_, ips) = answer(
        forwarder
            .forward(&query("big.example.org.", 6), Transport::Tcp)
            .await,
    );
    assert_eq!(ips.len(), 60);
}

#[tokio::test]
async fn replies_are_matched_by_id_and_question_over_tls() {
    let (upstream, files) = TestUpstream::start_tls(Behaviour::WrongFirst, false).await;
    let config = dot_config(upstream.addr, &files, SERVER_NAME, "");
    let forwarder = Forwarder::with_timeouts(&config, &[], short());
    for id in [7u16, 8] {
        let (got, ips) = answer(
            forwarder
                .forward(&query("www.example.org.", id), Transport::Tcp)
                .await,
        );
        assert_eq!(got, id);
        assert!(!ips.contains(&WRONG_IP), "{ips:?}");
        assert_eq!(ips, [Ipv4Addr::new(192, 0, 2, 1)]);
    }
    assert_eq!(upstream.handshakes(), 1);
}

#[tokio::test]
async fn a_certificate_for_another_name_fails_the_query() {
    let (upstream, files) = TestUpstream::start_tls(Behaviour::Answer, false).await;
    let config = dot_config(upstream.addr, &files, "wrong.example", "max_fails 0");
    let forwarder = Forwarder::with_timeouts(&config, &[], short());
    let Forwarded::Failed(ForwardError::Net(error)) = forwarder
        .forward(&query("www.example.org.", 1), Transport::Udp)
        .await
    else {
        panic!("a wrong server name must fail");
    };
    let text = error.to_string();
    assert!(
        text.starts_with(&format!("dial tcp-tls {}: tls: ", upstream.addr)),
        "{text}"
    );
    assert!(text.contains("certificate"), "{text}");
    assert_eq!(
        upstream.tcp(),
        0,
        "no query is sent to an unverified server"
    );
    wait_until("the stand-in sees the handshake fail", || {
        upstream.failed_handshakes() == 1
    })
    .await;
}

#[tokio::test]
async fn an_untrusted_ca_fails_and_the_ip_is_the_default_server_name() {
    let (upstream, files) = TestUpstream::start_tls(Behaviour::Answer, false).await;
    // The certificate is also valid for 127.0.0.1: no tls_servername needed.
    let by_ip = forward_of(&format!(
        ". {{\n forward . tls://{} {{\n  tls {}\n }}\n}}\n",
        upstream.addr,
        files.ca.display()
    ));
    let forwarder = Forwarder::with_timeouts(&by_ip, &[], short());
    let (_, ips) = answer(
        forwarder
            .forward(&query("www.example.org.", 1), Transport::Udp)
            .await,
    );
    assert_eq!(ips, [Ipv4Addr::new(192, 0, 2, 1)]);

    let untrusted = dot_config(upstream.addr, &files, SERVER_NAME, "max_fails 0");
    let mut untrusted = untrusted;
    untrusted.tls = forward_of(&format!(
        ". {{\n forward . tls://{} {{\n  tls {}\n }}\n}}\n",
        upstream.addr,
        files.other_ca.display()
    ))
    .tls;
    let forwarder = Forwarder::with_timeouts(&untrusted, &[], short());
    assert!(matches!(
        forwarder
            .forward(&query("www.example.org.", 2), Transport::Udp)
            .await,
        Forwarded::Failed(ForwardError::Net(_))
    ));
    wait_until("the stand-in sees the handshake fail", || {
        upstream.failed_handshakes() == 1
    })
    .await;
}

#[tokio::test]
async fn a_client_certificate_is_presented_with_tls_cert_key_ca() {
    let (upstream, files) = TestUpstream::start_tls(Behaviour::Answer, true).await;
    let with_cert = forward_of(&format!(
        ". {{\n forward . tls://{}%{SERVER_NAME} {{\n  tls {} {} {}\n }}\n}}\n",
        upstream.addr,
        files.cert.display(),
        files.key.display(),
        files.ca.display()
    ));
    let forwarder = Forwarder::with_timeouts(&with_cert, &[], short());
    let (_, ips) = answer(
        forwarder
            .forward(&query("www.example.org.", 1), Transport::Udp)
            .await,
    );
    assert_eq!(ips, [Ipv4Addr::new(192, 0, 2, 1)]);

    let mut without = dot_config(upstream.addr, &files, SERVER_NAME, "max_fails 0");
    without.max_connect_attempts = 1;
    let forwarder = Forwarder::with_timeouts(&without, &[], short());
    assert!(matches!(
        forwarder
            .forward(&query("www.example.org.", 2), Transport::Udp)
            .await,
        Forwarded::Failed(_)
    ));
    assert_eq!(upstream.tcp(), 1, "only the query with the certificate");
}

#[tokio::test]
async fn health_checks_use_tls_too() {
    let (upstream, files) = TestUpstream::start_tls(Behaviour::Silent, false).await;
    let config = dot_config(upstream.addr, &files, SERVER_NAME, "health_check 50ms");
    let forwarder = Forwarder::with_timeouts(&config, &[], short());
    let outcome = forwarder
        .forward(&query("www.example.org.", 1), Transport::Udp)
        .await;
    assert!(matches!(outcome, Forwarded::Failed(_)), "{outcome:?}");
    // The failure starts health checks, each on a TLS connection of its own; the silent
    // upstream fails them and is marked down.
    let start = std::time::Instant::now();
    while !forwarder.health()[0].down {
        assert!(start.elapsed() < Duration::from_secs(5), "never down");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        upstream.health_checks() >= 2,
        "{}",
        upstream.health_checks()
    );
    assert_eq!(upstream.udp(), 0, "no health check in the clear");
    assert!(upstream.handshakes() >= 3, "{}", upstream.handshakes());
    // Answering again: the next check succeeds and the upstream is back.
    upstream.set(Behaviour::Answer);
    let start = std::time::Instant::now();
    while forwarder.health()[0].down {
        assert!(start.elapsed() < Duration::from_secs(5), "never up again");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Which of three upstreams answers each of `n` queries under `policy`, by the address each
/// answers with.
async fn answered_by(policy: &str, n: u16, down_first: bool) -> Vec<usize> {
    let first = TestUpstream::answering(Ipv4Addr::new(192, 0, 2, 10)).await;
    let second = TestUpstream::answering(Ipv4Addr::new(192, 0, 2, 11)).await;
    let third = TestUpstream::answering(Ipv4Addr::new(192, 0, 2, 12)).await;
    if down_first {
        first.set(Behaviour::Rcode(2));
    }
    let extra = if down_first { "failover SERVFAIL" } else { "" };
    let config = forward_of(&format!(
        ". {{\n forward . {} {} {} {{\n  policy {policy}\n  {extra}\n }}\n}}\n",
        first.addr, second.addr, third.addr
    ));
    assert_eq!(
        config.policy,
        match policy {
            "random" => ForwardPolicy::Random,
            "round_robin" => ForwardPolicy::RoundRobin,
            _ => ForwardPolicy::Sequential,
        }
    );
    let forwarder = Forwarder::with_timeouts(&config, &[], short());
    let mut who = Vec::new();
    for i in 0..n {
        let (_, ips) = answer(
            forwarder
                .forward(&query("www.example.org.", i), Transport::Udp)
                .await,
        );
        who.push(usize::from(ips[0].octets()[3] - 10));
    }
    who
}

#[tokio::test]
async fn policies() {
    // sequential: always the first while it answers.
    assert_eq!(answered_by("sequential", 6, false).await, [0; 6]);
    // ... and the next in file order when it fails over.
    assert_eq!(answered_by("sequential", 4, true).await, [1; 4]);
    // round_robin: the first upstream asked rotates (CoreDNS starts at the second).
    assert_eq!(
        answered_by("round_robin", 6, false).await,
        [1, 2, 0, 1, 2, 0]
    );
    // random: spread over all three (90 queries, each upstream expected 30 times; below 10
    // is far outside chance).
    let who = answered_by("random", 90, false).await;
    let counts: Vec<usize> = (0..3)
        .map(|i| who.iter().filter(|w| **w == i).count())
        .collect();
    assert!(counts.iter().all(|&count| count >= 10), "{counts:?}");
}

#[tokio::test]
async fn the_default_policy_is_random() {
    let config = forward_of(". {\n forward . 10.0.0.1 10.0.0.2\n}\n");
    assert_eq!(config.policy, ForwardPolicy::Random);
}

#[test]
fn tls_corefile_errors_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    let cases = [
        (
            "bad CA path",
            "forward . tls://10.0.0.1 {\n  tls /nonexistent/ca.crt\n }",
            3,
            "forward: tls: error reading CA file /nonexistent/ca.crt",
        ),
        (
            "not PEM",
            &format!(
                "forward . tls://10.0.0.1 {{\n  tls {}\n }}",
                not_pem.display()
            ),
            3,
            "holds no PEM certificate",
        ),
        (
            "relative key",
            "forward . tls://10.0.0.1 {\n  tls client.crt client.key\n }",
            3,
            "error reading certificate file DIR/client.crt",
        ),
        (
            "four arguments",
            "forward . tls://10.0.0.1 {\n  tls a b c d\n }",
            3,
            "expected at most 3 arguments",
        ),
        (
            "servername without tls://",
            "forward . 10.0.0.1 {\n  tls_servername dns.google\n }",
            3,
            "forward: tls_servername: no upstream of this forward is tls://",
        ),
        (
            "tls without tls://",
            "forward . 10.0.0.1 {\n  tls\n }",
            3,
            "forward: tls: no upstream of this forward is tls://",
        ),
        (
            "two server names",
            "forward . tls://10.0.0.1%dns.quad9.net {\n  tls_servername dns.google\n }",
            2,
            "both forward ('dns.google') and proxy level ('dns.quad9.net') TLS servernames \
             are set for upstream proxy 'tls://10.0.0.1:853'",
        ),
        (
            "bad server name",
            "forward . tls://10.0.0.1 {\n  tls_servername a..b\n }",
            3,
            "'a..b' is not a host name or IP address",
        ),
        (
            "tls host name",
            "forward . tls://dns.google",
            2,
            "is not an IP address (tls:// takes IP[:PORT]",
        ),
        (
            "empty server name",
            "forward . tls://10.0.0.1%",
            2,
            "empty server name",
        ),
        (
            "doh",
            "forward . https://10.0.0.1",
            2,
            "DNS over HTTPS is not supported",
        ),
    ];
    for (what, directive, line, want) in cases {
        let corefile = dir.path().join("Corefile");
        let text = format!(". {{\n {directive}\n}}\n");
        let error = parse_corefile(&text, &corefile)
            .err()
            .unwrap_or_else(|| panic!("{what}: parsed"))
            .to_string();
        let want = want.replace("DIR", &dir.path().display().to_string());
        let at = format!("{}:{line}: ", corefile.display());
        assert!(error.starts_with(&at), "{what}: {error}");
        assert!(error.contains(&want), "{what}: {error}");
    }
}

#[test]
fn tls_upstream_addresses() {
    let cases = [
        ("tls://10.0.0.1", "10.0.0.1:853", "10.0.0.1"),
        ("tls://10.0.0.1:8853", "10.0.0.1:8853", "10.0.0.1"),
        ("TLS://10.0.0.1%dns.example", "10.0.0.1:853", "dns.example"),
        (
            "tls://9.9.9.9%dns.quad9.net:10853",
            "9.9.9.9:10853",
            "dns.quad9.net",
        ),
        ("tls://[2620:fe::fe]", "[2620:fe::fe]:853", "2620:fe::fe"),
        (
            "tls://[2620:fe::fe%dns.quad9.net]:10853",
            "[2620:fe::fe]:10853",
            "dns.quad9.net",
        ),
        ("tls://2620:fe::9", "[2620:fe::9]:853", "2620:fe::9"),
    ];
    for (to, name, server_name) in cases {
        let config = forward_of(&format!(". {{\n forward . {to} 10.0.0.2\n}}\n"));
        let upstream = &config.to[0];
        assert_eq!(upstream.name, name, "{to}");
        assert_eq!(
            upstream.transport,
            clusterdns::config::UpstreamTransport::Tls {
                server_name: server_name.to_owned()
            },
            "{to}"
        );
        assert!(config.tls.is_some(), "{to}: system roots");
        assert_eq!(
            config.to[1].transport,
            clusterdns::config::UpstreamTransport::Dns
        );
    }
}

/// The real binary forwarding through the DoT stand-in: answers, one handshake for many
/// queries, and SERVFAIL for a certificate that is not for the configured name.
#[test]
fn the_binary_forwards_over_tls() {
    let runtime = crate::common::runtime(1);
    let (upstream, files) = runtime.block_on(TestUpstream::start_tls(Behaviour::Answer, false));
    let corefile = TempCorefile::new(&format!(
        ".:0 {{
    bind 127.0.0.1
    errors
    forward example.org tls://{addr} {{
        tls {ca}
        tls_servername {SERVER_NAME}
        health_check 5s
    }}
    forward . tls://{addr} {{
        tls {ca}
        tls_servername wrong.example
        max_fails 0
    }}
}}
",
        addr = upstream.addr,
        ca = files.ca.display()
    ));
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    for i in 0..10 {
        let name = format!("host{i}.example.org.");
        let reply = if i % 2 == 0 {
            server.ask_udp(&name, "A")
        } else {
            server.ask_tcp(&name, "A")
        };
        assert_eq!(reply.rcode, "NOERROR", "{name}");
        assert_eq!(
            reply.answer,
            expect(&[&format!("{name} 60 IN A 192.0.2.1")])
        );
    }
    assert_eq!(upstream.tcp(), 10);
    assert_eq!(
        upstream.connections(),
        1,
        "one TLS connection for ten queries"
    );
    assert_eq!(upstream.handshakes(), 1);

    let failed = server.ask_udp("www.example.com.", "A");
    assert_eq!(failed.rcode, "SERVFAIL");
    assert_eq!(upstream.tcp(), 10, "nothing sent to a server not verified");
    // The errors plugin says why, as CoreDNS's would.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !server.stdout().contains("tls: ") && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stdout = server.stdout();
    assert!(
        stdout.contains("www.example.com. A: dial tcp-tls") && stdout.contains("certificate"),
        "{stdout}"
    );
    drop(runtime);
}

#[test]
fn a_bad_tls_file_stops_the_binary_with_the_line() {
    let corefile = TempCorefile::new(
        ".:0 {\n    forward . tls://127.0.0.1 {\n        tls missing-ca.crt\n    }\n}\n",
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["serve", "--corefile", corefile.path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let want = format!(
        "{}:3: forward: tls: error reading CA file {}",
        corefile.path.display(),
        Path::new(&corefile.dir.path().join("missing-ca.crt")).display()
    );
    assert!(stderr.contains(&want), "{stderr}");
}
