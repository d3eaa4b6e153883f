//! *forward*: the engine driven directly against test upstreams on loopback.
//!
//! Timings use CoreDNS's real timeouts where the behaviour is about them (2 s per attempt,
//! the query's deadline) and short ones elsewhere; only generous bounds are asserted.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clusterdns::config::{ForwardConfig, ForwardPolicy, Upstream, UpstreamTransport};
use clusterdns::forward::{ForwardError, Forwarded, Forwarder, Timeouts, forward_metrics};
use clusterdns::metrics::{Collect, Exposition};
use clusterdns::server::Transport;
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use tokio_util::sync::CancellationToken;

use crate::common::forward_metrics::Reading;
use crate::common::upstream::{Behaviour, TestUpstream, WRONG_IP, dead_addr};

const CLIENT_ID: u16 = 4321;
const NAME: &str = "www.example.org.";

/// `forward . TO...` with `policy sequential` (so tests know who is asked first) and
/// CoreDNS's other defaults.
fn config(to: &[SocketAddr]) -> ForwardConfig {
    let to = to.iter().copied().map(Upstream::dns).collect();
    ForwardConfig {
        policy: ForwardPolicy::Sequential,
        ..ForwardConfig::new(Name::root(), to)
    }
}

/// Short timeouts, for tests about something else than the timeouts.
fn short() -> Timeouts {
    Timeouts {
        read: Duration::from_millis(300),
        deadline: Duration::from_secs(1),
        health_check: Duration::from_millis(100),
    }
}

/// `name A` with ID [`CLIENT_ID`], RD, and EDNS `(payload, DO)` when given.
fn query_for(name: &str, edns: Option<(u16, bool)>) -> Vec<u8> {
    let mut message = Message::new(CLIENT_ID, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(Name::from_ascii(name).unwrap(), RecordType::A));
    if let Some((payload, dnssec_ok)) = edns {
        let mut edns = Edns::new();
        edns.set_max_payload(payload);
        edns.set_dnssec_ok(dnssec_ok);
        message.set_edns(edns);
    }
    message.to_vec().unwrap()
}

fn query() -> Vec<u8> {
    query_for(NAME, Some((1232, false)))
}

/// The reply of an outcome that must be one.
fn reply(outcome: Forwarded) -> Message {
    match outcome {
        Forwarded::Reply(bytes) => Message::from_vec(&bytes).unwrap(),
        other => panic!("not a reply: {other:?}"),
    }
}

/// The error of an outcome that must be a failure.
fn failure(outcome: Forwarded) -> ForwardError {
    match outcome {
        Forwarded::Failed(error) => error,
        other => panic!("not a failure: {other:?}"),
    }
}

/// The A records' addresses.
fn ips(message: &Message) -> Vec<Ipv4Addr> {
    message
        .answers
        .iter()
        .filter_map(|record| match &record.data {
            RData::A(a) => Some(a.0),
            _ => None,
        })
        .collect()
}

fn forwarder(config: &ForwardConfig) -> Forwarder {
    Forwarder::with_timeouts(config, &[], short())
}

/// Polls `condition` every 10 ms for up to 5 s.
async fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "timed out: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn udp_and_tcp_replies_carry_the_clients_id() {
    let upstream = TestUpstream::start(Behaviour::Answer).await;
    let forwarder = forwarder(&config(&[upstream.addr]));
    for transport in [Transport::Udp, Transport::Tcp] {
        let message = reply(forwarder.forward(&query(), transport).await);
        assert_eq!(message.metadata.id, CLIENT_ID);
        assert_eq!(message.metadata.response_code, ResponseCode::NoError);
        assert_eq!(ips(&message), [Ipv4Addr::new(192, 0, 2, 1)]);
        assert_eq!(message.queries[0].name().to_ascii(), NAME);
    }
    assert_eq!((upstream.udp(), upstream.tcp()), (1, 1));
}

#[tokio::test]
async fn the_query_goes_upstream_as_is_but_for_a_random_id() {
    let upstream = TestUpstream::start(Behaviour::Answer).await;
    let forwarder = forwarder(&config(&[upstream.addr]));
    let sent = query_for("Mixed.Example.ORG.", Some((4000, true)));
    let mut ids = Vec::new();
    for _ in 0..4 {
        let message = reply(forwarder.forward(&sent, Transport::Udp).await);
        assert_eq!(message.metadata.id, CLIENT_ID);
        let received = upstream.last_query().unwrap();
        assert_eq!(received[2..], sent[2..], "only the ID may change");
        ids.push(u16::from_be_bytes([received[0], received[1]]));
        let edns = Message::from_vec(&received).unwrap().edns.unwrap();
        assert_eq!((edns.max_payload(), edns.flags().dnssec_ok), (4000, true));
    }
    assert!(ids.iter().any(|id| *id != CLIENT_ID), "{ids:?}");
    ids.dedup();
    assert!(ids.len() > 1, "the ID is chosen per attempt: {ids:?}");
}

#[tokio::test]
async fn a_truncated_udp_reply_is_asked_again_over_tcp() {
    let upstream = TestUpstream::start(Behaviour::Truncate).await;
    let forwarder = forwarder(&config(&[upstream.addr]));
    let message = reply(forwarder.forward(&query(), Transport::Udp).await);
    assert!(!message.metadata.truncation);
    assert_eq!(ips(&message), [Ipv4Addr::new(192, 0, 2, 1)]);
    assert_eq!((upstream.udp(), upstream.tcp()), (1, 1));
}

#[tokio::test]
async fn a_tcp_reply_too_big_for_the_udp_client_goes_back_truncated() {
    let upstream = TestUpstream::start(Behaviour::Truncate).await;
    upstream.set_records(40);
    let forwarder = forwarder(&config(&[upstream.addr]));
    // 40 A records do not fit in 512 bytes: the client gets TC and retries over TCP.
    let small = reply(
        forwarder
            .forward(&query_for(NAME, None), Transport::Udp)
            .await,
    );
    assert!(small.metadata.truncation);
    assert!(small.answers.is_empty());
    assert_eq!(small.metadata.id, CLIENT_ID);
    // With room for them, the client gets them all at once.
    let big = reply(
        forwarder
            .forward(&query_for(NAME, Some((4096, false))), Transport::Udp)
            .await,
    );
    assert!(!big.metadata.truncation);
    assert_eq!(big.answers.len(), 40);
    // A TCP client always gets the full reply.
    let tcp = reply(
        forwarder
            .forward(&query_for(NAME, None), Transport::Tcp)
            .await,
    );
    assert_eq!(tcp.answers.len(), 40);
}

#[tokio::test]
async fn a_reply_bigger_than_the_udp_client_takes_is_truncated() {
    // An upstream that ignores the client's payload size (no TC over UDP).
    let upstream = TestUpstream::start(Behaviour::Answer).await;
    upstream.set_records(40);
    let forwarder = forwarder(&config(&[upstream.addr]));
    let message = reply(
        forwarder
            .forward(&query_for(NAME, None), Transport::Udp)
            .await,
    );
    assert!(message.metadata.truncation);
    assert!(message.answers.is_empty());
    assert_eq!(message.queries[0].name().to_ascii(), NAME);
}

#[tokio::test]
async fn force_tcp_and_prefer_udp_choose_the_upstream_transport() {
    let upstream = TestUpstream::start(Behaviour::Answer).await;
    let mut tcp = config(&[upstream.addr]);
    tcp.force_tcp = true;
    reply(forwarder(&tcp).forward(&query(), Transport::Udp).await);
    assert_eq!((upstream.udp(), upstream.tcp()), (0, 1));

    let mut udp = config(&[upstream.addr]);
    udp.prefer_udp = true;
    reply(forwarder(&udp).forward(&query(), Transport::Tcp).await);
    assert_eq!((upstream.udp(), upstream.tcp()), (1, 1));

    // prefer_udp still retries over TCP when the UDP reply is truncated.
    upstream.set(Behaviour::Truncate);
    let message = reply(forwarder(&udp).forward(&query(), Transport::Tcp).await);
    assert!(!message.metadata.truncation);
    assert_eq!(ips(&message).len(), 1);
    assert_eq!((upstream.udp(), upstream.tcp()), (2, 2));

    // Both: force_tcp wins, as in CoreDNS.
    tcp.prefer_udp = true;
    upstream.set(Behaviour::Answer);
    reply(forwarder(&tcp).forward(&query(), Transport::Udp).await);
    assert_eq!((upstream.udp(), upstream.tcp()), (2, 3));
}

#[tokio::test]
async fn connections_are_reused_and_counted() {
    let upstream = TestUpstream::start(Behaviour::Answer).await;
    let forwarder = forwarder(&config(&[upstream.addr]));
    let before = Reading::now();
    for _ in 0..3 {
        reply(forwarder.forward(&query(), Transport::Udp).await);
        reply(forwarder.forward(&query(), Transport::Tcp).await);
    }
    assert_eq!(upstream.connections(), 1);
    let to = upstream.addr;
    for (series, value) in [
        ("coredns_proxy_conn_cache_hits_total", "udp", 2.0),
        ("coredns_proxy_conn_cache_misses_total", "udp", 1.0),
        ("coredns_proxy_conn_cache_hits_total", "tcp", 2.0),
        ("coredns_proxy_conn_cache_misses_total", "tcp", 1.0),
    ]
    .map(|(name, proto, value)| {
        (
            format!("{name}{{proxy_name=\"forward\",to=\"{to}\",proto=\"{proto}\"}}"),
            value,
        )
    }) {
        assert_eq!(
            before.since(&series),
            value,
            "{series}\n{}",
            Reading::now().text()
        );
    }
}

#[tokio::test]
async fn expire_zero_and_max_idle_conns_limit_reuse() {
    let upstream = TestUpstream::start(Behaviour::Answer).await;
    let mut never = config(&[upstream.addr]);
    never.expire = Duration::ZERO;
    let forwarder = forwarder(&never);
    for _ in 0..3 {
        reply(forwarder.forward(&query(), Transport::Tcp).await);
    }
    assert_eq!(upstream.connections(), 3);

    // One idle connection kept: two queries at once need two, one is closed after.
    let other = TestUpstream::start(Behaviour::Delay(Duration::from_millis(100))).await;
    let mut one = config(&[other.addr]);
    one.max_idle_conns = 1;
    let forwarder = self::forwarder(&one);
    let sent = query();
    let (a, b) = tokio::join!(
        forwarder.forward(&sent, Transport::Tcp),
        forwarder.forward(&sent, Transport::Tcp)
    );
    reply(a);
    reply(b);
    let (a, b) = tokio::join!(
        forwarder.forward(&sent, Transport::Tcp),
        forwarder.forward(&sent, Transport::Tcp)
    );
    reply(a);
    reply(b);
    assert_eq!(other.connections(), 3);
}

#[tokio::test]
async fn idle_connections_are_closed_after_expire_and_at_shutdown() {
    let upstream = TestUpstream::start(Behaviour::Answer).await;
    let mut config = config(&[upstream.addr]);
    config.expire = Duration::from_millis(200);
    let forwarder = Arc::new(forwarder(&config));
    let shutdown = CancellationToken::new();
    forwarder.start(shutdown.clone());
    reply(forwarder.forward(&query(), Transport::Tcp).await);
    assert_eq!(upstream.open_connections(), 1);
    wait_until("the idle connection expired", || {
        upstream.open_connections() == 0
    })
    .await;

    reply(forwarder.forward(&query(), Transport::Tcp).await);
    assert_eq!(upstream.open_connections(), 1);
    shutdown.cancel();
    wait_until("closed at shutdown", || upstream.open_connections() == 0).await;
    assert_eq!(upstream.connections(), 2);
}

#[tokio::test]
async fn a_cached_tcp_connection_the_upstream_closed_is_replaced() {
    let upstream = TestUpstream::start(Behaviour::Answer).await;
    upstream.close_tcp_after_reply(true);
    let forwarder = forwarder(&config(&[upstream.addr]));
    for _ in 0..3 {
        let message = reply(forwarder.forward(&query(), Transport::Tcp).await);
        assert_eq!(ips(&message).len(), 1);
        // Let the close reach our side of the idle connection.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(upstream.connections(), 3);
    assert_eq!(upstream.tcp(), 3);
}

#[tokio::test]
async fn a_dead_upstream_is_passed_over_at_once() {
    let good = TestUpstream::answering(Ipv4Addr::new(192, 0, 2, 77)).await;
    let dead = dead_addr().await;
    let forwarder = Forwarder::new(&config(&[dead, good.addr]), &[]);
    for transport in [Transport::Udp, Transport::Tcp] {
        let start = Instant::now();
        let message = reply(forwarder.forward(&query(), transport).await);
        assert_eq!(ips(&message), [Ipv4Addr::new(192, 0, 2, 77)]);
        eprintln!("dead then good over {transport:?}: {:?}", start.elapsed());
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}

#[tokio::test]
async fn all_upstreams_refusing_fails_at_once() {
    let forwarder = Forwarder::new(&config(&[dead_addr().await, dead_addr().await]), &[]);
    let start = Instant::now();
    let error = failure(forwarder.forward(&query(), Transport::Udp).await);
    eprintln!("two refusing upstreams: {:?}: {error}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(1));
    let text = error.to_string();
    assert!(text.starts_with("read udp 127.0.0.1:"), "{text}");
    assert!(text.ends_with(": read: connection refused"), "{text}");
    let error = failure(forwarder.forward(&query(), Transport::Tcp).await);
    assert!(
        error.to_string().ends_with(": connect: connection refused"),
        "{error}"
    );
}

#[tokio::test]
async fn silent_upstreams_fail_within_the_deadline() {
    let a = TestUpstream::start(Behaviour::Silent).await;
    let b = TestUpstream::start(Behaviour::Silent).await;
    let forwarder = Forwarder::new(&config(&[a.addr, b.addr]), &[]);
    let start = Instant::now();
    let error = failure(forwarder.forward(&query(), Transport::Udp).await);
    let elapsed = start.elapsed();
    eprintln!("two silent upstreams: SERVFAIL after {elapsed:?}: {error}");
    assert!(elapsed < Duration::from_secs(6), "{elapsed:?}");
    assert!(error.to_string().ends_with(": i/o timeout"), "{error}");
    assert!(a.queries() >= 1 && b.queries() >= 1);
}

#[tokio::test]
async fn a_slow_upstream_is_left_for_the_next_after_the_read_timeout() {
    let slow = TestUpstream::start(Behaviour::Delay(Duration::from_millis(2500))).await;
    let fast = TestUpstream::answering(Ipv4Addr::new(192, 0, 2, 99)).await;
    let forwarder = Forwarder::new(&config(&[slow.addr, fast.addr]), &[]);
    let start = Instant::now();
    let message = reply(forwarder.forward(&query(), Transport::Udp).await);
    let elapsed = start.elapsed();
    eprintln!("slow (2.5 s) then fast: answered after {elapsed:?}");
    assert_eq!(ips(&message), [Ipv4Addr::new(192, 0, 2, 99)]);
    assert!(elapsed < Duration::from_secs(6), "{elapsed:?}");
    assert_eq!((slow.queries(), fast.queries()), (1, 1));
}

#[tokio::test]
async fn past_max_concurrent_queries_are_refused_without_asking_upstream() {
    // Replies held back long enough for all five queries to be in flight.
    let upstream = TestUpstream::start(Behaviour::Delay(Duration::from_millis(150))).await;
    let mut config = config(&[upstream.addr]);
    config.max_concurrent = Some(2);
    let forwarder = Arc::new(forwarder(&config));
    let rejects = forward_metrics().max_concurrent_rejects();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..5 {
        let forwarder = Arc::clone(&forwarder);
        tasks.spawn(async move { forwarder.forward(&query(), Transport::Udp).await });
    }
    let (mut replies, mut refused) = (0, 0);
    while let Some(outcome) = tasks.join_next().await {
        match outcome.unwrap() {
            Forwarded::Reply(_) => replies += 1,
            Forwarded::Refused => refused += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((replies, refused), (2, 3));
    assert_eq!(upstream.udp(), 2);
    assert_eq!(forward_metrics().max_concurrent_rejects() - rejects, 3);
    // The slots are free again.
    reply(forwarder.forward(&query(), Transport::Udp).await);
}

#[tokio::test]
async fn a_failing_upstream_is_health_checked_down_and_back_up() {
    let flaky = TestUpstream::answering(Ipv4Addr::new(192, 0, 2, 10)).await;
    let steady = TestUpstream::answering(Ipv4Addr::new(192, 0, 2, 20)).await;
    let mut config = config(&[flaky.addr, steady.addr]);
    config.health_check = Duration::from_millis(50);
    let forwarder = Arc::new(forwarder(&config));
    let shutdown = CancellationToken::new();
    let before = Reading::now();
    forwarder.start(shutdown.clone());

    // Healthy: no health checks at all (CoreDNS checks only after a failure).
    let message = reply(forwarder.forward(&query(), Transport::Udp).await);
    assert_eq!(ips(&message), [Ipv4Addr::new(192, 0, 2, 10)]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(flaky.health_checks(), 0);

    // It stops answering: the query moves on after the read timeout, and the checks
    // (`. IN NS` every 50 ms) mark it down after max_fails = 2 failures.
    flaky.set(Behaviour::Silent);
    let message = reply(forwarder.forward(&query(), Transport::Udp).await);
    assert_eq!(ips(&message), [Ipv4Addr::new(192, 0, 2, 20)]);
    wait_until("flaky is down", || forwarder.health()[0].down).await;
    assert!(flaky.health_checks() >= 2);
    let failures = format!(
        "coredns_proxy_healthcheck_failures_total{{proxy_name=\"forward\",to=\"{}\"}}",
        flaky.addr
    );
    assert!(before.since(&failures) >= 2.0);

    // Down: skipped without a wait.
    let asked = flaky.queries();
    let start = Instant::now();
    let message = reply(forwarder.forward(&query(), Transport::Udp).await);
    assert_eq!(ips(&message), [Ipv4Addr::new(192, 0, 2, 20)]);
    assert!(start.elapsed() < Duration::from_millis(250));
    assert_eq!(flaky.queries(), asked);

    // Any reply to a check brings it back, and the checks stop.
    flaky.set(Behaviour::Rcode(5));
    wait_until("flaky is up", || !forwarder.health()[0].down).await;
    assert_eq!(forwarder.health()[0].fails, 0);
    flaky.set(Behaviour::Answer);
    let message = reply(forwarder.forward(&query(), Transport::Udp).await);
    assert_eq!(ips(&message), [Ipv4Addr::new(192, 0, 2, 10)]);
    let checks = flaky.health_checks();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(flaky.health_checks(), checks);
    shutdown.cancel();
}

#[tokio::test]
async fn health_checks_ask_the_configured_domain_with_or_without_rd() {
    // A socket that never answers, to read what is sent to it.
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let mut config = config(&[socket.local_addr().unwrap()]);
    config.health_check_no_rec = true;
    config.health_check_domain = Name::from_ascii("health.example.").unwrap();
    let forwarder = forwarder(&config);
    let _ = forwarder.forward(&query(), Transport::Udp).await;
    // The query's attempts, then the first health check.
    let mut buffer = vec![0; 512];
    let mut check = None;
    for _ in 0..20 {
        let len = tokio::time::timeout(Duration::from_secs(2), socket.recv(&mut buffer))
            .await
            .unwrap()
            .unwrap();
        let message = Message::from_vec(&buffer[..len]).unwrap();
        if message.queries[0].query_type() == RecordType::NS {
            check = Some(message);
            break;
        }
    }
    let check = check.expect("a health check");
    assert_eq!(check.queries[0].name().to_ascii(), "health.example.");
    assert!(!check.metadata.recursion_desired);
}

#[tokio::test]
async fn when_every_upstream_is_down_one_is_tried_anyway_unless_failfast() {
    let a = TestUpstream::start(Behaviour::Silent).await;
    let b = TestUpstream::start(Behaviour::Silent).await;
    let mut config = config(&[a.addr, b.addr]);
    config.health_check = Duration::from_millis(50);
    config.max_fails = 1;
    let forwarder = forwarder(&config);
    failure(forwarder.forward(&query(), Transport::Udp).await);
    wait_until("both down", || forwarder.health().iter().all(|h| h.down)).await;

    let broken = forward_metrics().healthcheck_broken();
    let asked = a.queries() + b.queries();
    let error = failure(forwarder.forward(&query(), Transport::Udp).await);
    assert!(error.to_string().ends_with("i/o timeout"), "{error}");
    assert_eq!(a.queries() + b.queries(), asked + 1, "one random upstream");
    assert!(forward_metrics().healthcheck_broken() > broken);

    let mut failfast = config.clone();
    failfast.failfast_all_unhealthy_upstreams = true;
    let forwarder = self::forwarder(&failfast);
    failure(forwarder.forward(&query(), Transport::Udp).await);
    wait_until("both down", || forwarder.health().iter().all(|h| h.down)).await;
    let asked = a.queries() + b.queries();
    let start = Instant::now();
    let error = failure(forwarder.forward(&query(), Transport::Udp).await);
    assert!(start.elapsed() < Duration::from_millis(100));
    assert!(matches!(error, ForwardError::NoHealthy));
    assert_eq!(error.to_string(), "no healthy proxies");
    assert_eq!(a.queries() + b.queries(), asked);
}

#[tokio::test]
async fn max_fails_zero_never_marks_down_nor_checks() {
    let silent = TestUpstream::start(Behaviour::Silent).await;
    let mut config = config(&[silent.addr]);
    config.max_fails = 0;
    config.health_check = Duration::from_millis(20);
    let forwarder = forwarder(&config);
    failure(forwarder.forward(&query(), Transport::Udp).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(silent.health_checks(), 0);
    assert!(!forwarder.health()[0].down);
}

#[tokio::test]
async fn max_connect_attempts_caps_the_failed_attempts() {
    let upstreams = [
        TestUpstream::start(Behaviour::Silent).await,
        TestUpstream::start(Behaviour::Silent).await,
        TestUpstream::start(Behaviour::Silent).await,
    ];
    let mut config = config(&upstreams.each_ref().map(|u| u.addr));
    config.max_connect_attempts = 2;
    let forwarder = forwarder(&config);
    failure(forwarder.forward(&query(), Transport::Udp).await);
    let asked: Vec<usize> = upstreams.iter().map(TestUpstream::queries).collect();
    assert_eq!(asked, [1, 1, 0]);
}

#[tokio::test]
async fn failover_rcodes_move_on_and_the_last_reply_stands() {
    let failing = TestUpstream::start(Behaviour::Rcode(2)).await;
    let good = TestUpstream::answering(Ipv4Addr::new(192, 0, 2, 55)).await;
    // Without failover, SERVFAIL is an answer like any other.
    let forwarder = self::forwarder(&config(&[failing.addr, good.addr]));
    let message = reply(forwarder.forward(&query(), Transport::Udp).await);
    assert_eq!(message.metadata.response_code, ResponseCode::ServFail);
    assert_eq!(good.queries(), 0);

    let mut failover = config(&[failing.addr, good.addr]);
    failover.failover = vec![2, 5];
    let message = reply(
        self::forwarder(&failover)
            .forward(&query(), Transport::Udp)
            .await,
    );
    assert_eq!(ips(&message), [Ipv4Addr::new(192, 0, 2, 55)]);

    // Every upstream fails over: the last reply is the answer.
    let refusing = TestUpstream::start(Behaviour::Rcode(5)).await;
    failover.to.truncate(1);
    failover.to.push(Upstream {
        addr: refusing.addr,
        name: refusing.addr.to_string(),
        from_file: None,
        transport: UpstreamTransport::Dns,
    });
    let asked = failing.queries();
    let message = reply(
        self::forwarder(&failover)
            .forward(&query(), Transport::Udp)
            .await,
    );
    assert_eq!(message.metadata.response_code, ResponseCode::Refused);
    assert_eq!(message.metadata.id, CLIENT_ID);
    assert_eq!((failing.queries() - asked, refusing.queries()), (1, 1));
}

#[tokio::test]
async fn next_rcodes_hand_the_query_to_the_next_forward() {
    let upstream = TestUpstream::start(Behaviour::Rcode(3)).await;
    let mut config = config(&[upstream.addr]);
    config.next = vec![3];
    let forwarder = forwarder(&config);
    match forwarder.forward(&query(), Transport::Udp).await {
        Forwarded::Next(bytes) => {
            let message = Message::from_vec(&bytes).unwrap();
            assert_eq!(message.metadata.response_code, ResponseCode::NXDomain);
            assert_eq!(message.metadata.id, CLIENT_ID);
        }
        other => panic!("not next: {other:?}"),
    }
    upstream.set(Behaviour::Answer);
    reply(forwarder.forward(&query(), Transport::Udp).await);
}

#[tokio::test]
async fn replies_with_another_id_or_question_are_ignored() {
    let upstream = TestUpstream::start(Behaviour::WrongFirst).await;
    let forwarder = forwarder(&config(&[upstream.addr]));
    for transport in [Transport::Udp, Transport::Tcp] {
        let message = reply(forwarder.forward(&query(), transport).await);
        assert_eq!(
            ips(&message),
            [Ipv4Addr::new(192, 0, 2, 1)],
            "{transport:?}"
        );
        assert!(!ips(&message).contains(&WRONG_IP));
        assert_eq!(message.queries[0].name().to_ascii(), NAME);
    }
}

#[tokio::test]
async fn policies_spread_or_keep_the_order() {
    let upstreams = [
        TestUpstream::start(Behaviour::Answer).await,
        TestUpstream::start(Behaviour::Answer).await,
        TestUpstream::start(Behaviour::Answer).await,
    ];
    let addrs = upstreams.each_ref().map(|u| u.addr);
    let asked = |upstreams: &[TestUpstream; 3]| upstreams.each_ref().map(TestUpstream::queries);

    let mut round_robin = config(&addrs);
    round_robin.policy = ForwardPolicy::RoundRobin;
    let forwarder = forwarder(&round_robin);
    for _ in 0..6 {
        reply(forwarder.forward(&query(), Transport::Udp).await);
    }
    assert_eq!(asked(&upstreams), [2, 2, 2]);

    let forwarder = self::forwarder(&config(&addrs));
    for _ in 0..3 {
        reply(forwarder.forward(&query(), Transport::Udp).await);
    }
    assert_eq!(asked(&upstreams), [5, 2, 2]);

    let mut random = config(&addrs);
    random.policy = ForwardPolicy::Random;
    let forwarder = self::forwarder(&random);
    for _ in 0..60 {
        reply(forwarder.forward(&query(), Transport::Udp).await);
    }
    let after = asked(&upstreams);
    assert!(
        after[1] > 2 && after[2] > 2 && after[0] > 5,
        "random spreads: {after:?}"
    );
}

#[tokio::test]
async fn except_names_are_not_matched() {
    let mut config = config(&[dead_addr().await]);
    config.except = vec![Name::from_ascii("example.org.").unwrap()];
    let forwarder = forwarder(&config);
    assert!(forwarder.matches(b"\x07example\x03com\x00"));
    assert!(!forwarder.matches(b"\x03www\x07example\x03org\x00"));
    assert!(!forwarder.matches(b"\x07example\x03org\x00"));
    assert!(forwarder.matches(b"\x00"));
}

#[tokio::test]
async fn an_upstream_that_is_this_server_is_dropped_with_a_warning() {
    // "This server": a socket on a loopback port, listening on 0.0.0.0 as far as the
    // forwarder is told.
    let this = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = this.local_addr().unwrap().port();
    let good = TestUpstream::answering(Ipv4Addr::new(192, 0, 2, 3)).await;
    let other_port = SocketAddr::from(([127, 0, 0, 1], good.addr.port()));
    let listen = SocketAddr::from(([0, 0, 0, 0], port));
    let mut to = vec![SocketAddr::from(([127, 0, 0, 1], port)), other_port];
    // One of this host's own addresses on the same port loops too.
    let host_ip = if_addrs::get_if_addrs()
        .unwrap()
        .into_iter()
        .map(|interface| interface.ip())
        .find(|ip| ip.is_ipv4() && !ip.is_loopback());
    if let Some(ip) = host_ip {
        to.push(SocketAddr::new(ip, port));
    }
    let forwarder = Forwarder::new(&config(&to), &[listen]);
    let warnings = forwarder.warnings();
    assert_eq!(warnings.len(), to.len() - 1, "{warnings:?}");
    assert!(warnings[0].contains(&format!("127.0.0.1:{port} is this server")));
    assert!(warnings[0].contains(&format!("listening on 0.0.0.0:{port}")));
    let kept: Vec<SocketAddr> = forwarder.health().iter().map(|h| h.addr).collect();
    assert_eq!(
        kept,
        [other_port],
        "a loopback upstream on another port is fine"
    );
    let message = reply(forwarder.forward(&query(), Transport::Udp).await);
    assert_eq!(ips(&message), [Ipv4Addr::new(192, 0, 2, 3)]);

    // Nothing left: SERVFAIL for everything, said once at start.
    let alone = Forwarder::new(
        &config(&[SocketAddr::from((IpAddr::from([127, 0, 0, 53]), port))]),
        &[listen],
    );
    assert_eq!(alone.warnings().len(), 2, "{:?}", alone.warnings());
    assert!(alone.warnings()[0].contains("systemd-resolved"));
    assert!(alone.warnings()[1].contains("SERVFAIL"));
    let error = failure(alone.forward(&query(), Transport::Udp).await);
    assert!(matches!(error, ForwardError::NoUpstream));
    let mut buffer = [0; 512];
    assert!(
        this.try_recv(&mut buffer).is_err(),
        "nothing was sent to ourselves"
    );
}

#[tokio::test]
async fn metrics_are_written_under_coredns_names() {
    let upstream = TestUpstream::start(Behaviour::Answer).await;
    let forwarder = forwarder(&config(&[upstream.addr]));
    let before = Reading::now();
    reply(forwarder.forward(&query(), Transport::Udp).await);
    upstream.set(Behaviour::Rcode(3));
    reply(forwarder.forward(&query(), Transport::Udp).await);
    let mut out = Exposition::new();
    forwarder.collect(&mut out);
    let text = out.finish();
    let to = upstream.addr;
    for (series, value) in [
        (
            format!(
                "coredns_proxy_request_duration_seconds_count{{proxy_name=\"forward\",to=\"{to}\",rcode=\"NOERROR\"}}"
            ),
            1.0,
        ),
        (
            format!(
                "coredns_proxy_request_duration_seconds_count{{proxy_name=\"forward\",to=\"{to}\",rcode=\"NXDOMAIN\"}}"
            ),
            1.0,
        ),
        (
            format!("coredns_forward_requests_total{{to=\"{to}\"}}"),
            2.0,
        ),
        (
            format!("coredns_forward_responses_total{{rcode=\"NXDOMAIN\",to=\"{to}\"}}"),
            1.0,
        ),
        (
            format!(
                "coredns_forward_request_duration_seconds_count{{to=\"{to}\",rcode=\"NOERROR\"}}"
            ),
            1.0,
        ),
    ] {
        assert_eq!(before.since(&series), value, "{series}\n{text}");
    }
    for family in [
        "coredns_forward_healthcheck_broken_total",
        "coredns_forward_max_concurrent_rejects_total",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} counter")),
            "{family}"
        );
    }
}

#[tokio::test]
async fn an_upstream_formerr_without_a_question_is_answered_at_once() {
    // A server that could not read the query says FORMERR and echoes no question: the
    // client hears FORMERR now (as from CoreDNS), with its own question, not a SERVFAIL
    // after the deadline.
    for transport in [Transport::Udp, Transport::Tcp] {
        let upstream = TestUpstream::start(Behaviour::Questionless(1)).await;
        let forwarder = forwarder(&config(&[upstream.addr]));
        let started = Instant::now();
        let message = reply(forwarder.forward(&query(), transport).await);
        assert!(started.elapsed() < Duration::from_secs(1), "{transport:?}");
        assert_eq!(message.metadata.response_code, ResponseCode::FormErr);
        assert_eq!(message.metadata.id, CLIENT_ID);
        assert_eq!(
            message.queries.len(),
            1,
            "{transport:?}: the client's question"
        );
        assert_eq!(upstream.queries(), 1, "{transport:?}: asked once");
    }
    // Without a question, only an error is taken: a NOERROR is still someone else's.
    let upstream = TestUpstream::start(Behaviour::Questionless(0)).await;
    let forwarder = forwarder(&config(&[upstream.addr]));
    failure(forwarder.forward(&query(), Transport::Udp).await);
}
