//! The UDP request path allocates nothing for names that exist and for misses: answers are
//! prepared when the zone is built; nor does counting a query in the metrics. Measured with
//! a counting allocator, so this is its own test binary.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use clusterdns::metrics::{DnsMetrics, Family, Observation, Proto, Writer};
use clusterdns::plugin::Plugin;
use clusterdns::server::{self, Handler, Outcome, Transport};
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

fn allocations() -> u64 {
    dhat::HeapStats::get().total_blocks
}

/// The allocation counts are process-wide and dhat profiles one test at a time: the tests
/// take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn query(name: &str, qtype: RecordType) -> Vec<u8> {
    let mut message = Message::new(1, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(Name::from_ascii(name).expect("name"), qtype));
    let mut edns = Edns::new();
    edns.set_max_payload(1232);
    message.edns = Some(edns);
    message.to_vec().expect("encode")
}

/// The allocations of `measure` over up to three tries, stopping at the first that makes
/// none. The counts are process-wide: the test harness's own threads (reporting the other
/// test) can allocate during a measurement. Code that allocates does so every time, so it
/// fails all three tries; noise from elsewhere does not repeat.
fn tries(mut measure: impl FnMut()) -> Vec<u64> {
    let mut counts = Vec::new();
    for _ in 0..3 {
        let before = allocations();
        measure();
        counts.push(allocations() - before);
        if counts.last() == Some(&0) {
            break;
        }
    }
    counts
}

/// The blocks of the shorthand's Corefile over the shop fixture.
fn shop_blocks() -> Vec<std::sync::Arc<server::Block>> {
    let shop = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/shop.json");
    let config = clusterdns::config::shorthand(&[shop], "127.0.0.1:1053".parse().expect("addr"))
        .expect("config");
    server::load(&config)
        .expect("load")
        .into_iter()
        .map(|loaded| loaded.block)
        .collect()
}

#[test]
fn answering_from_the_prepared_zone_does_not_allocate() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let _profiler = dhat::Profiler::builder().testing().build();
    let handler = Handler::new(shop_blocks());
    let questions = [
        ("web.shop.svc.cluster.local.", "A"),
        ("Web.Shop.svc.cluster.local.", "A"),
        ("web-headless.shop.svc.cluster.local.", "A"),
        ("_pg._tcp.db.shop.svc.cluster.local.", "SRV"),
        ("db-0.db.shop.svc.cluster.local.", "A"),
        ("20.0.96.10.in-addr.arpa.", "PTR"),
        // An endpoint's PTR, kept as its address: the record is made for the question.
        ("9.1.244.10.in-addr.arpa.", "PTR"),
        ("9.1.244.10.in-addr.arpa.", "A"),
        // An endpoint's name, kept as its address: its records are made for the question.
        ("10-244-1-9.checkout.shop.svc.cluster.local.", "A"),
        ("10-244-1-9.checkout.shop.svc.cluster.local.", "SRV"),
        ("10-244-1-9.checkout.shop.svc.cluster.local.", "TXT"),
        // `pods insecure`: the address is made for the question too.
        ("10-244-1-5.shop.pod.cluster.local.", "A"),
        ("web.shop.svc.cluster.local.", "AAAA"),
        ("api.partner.example.com.shop.svc.cluster.local.", "A"),
        ("nope.shop.svc.cluster.local.", "AAAA"),
        ("cluster.local.", "SOA"),
    ];
    let mut out = Vec::with_capacity(4096);
    // Warm up: the first snapshot load on a thread registers it with arc-swap (once per
    // thread, not per query).
    handler.respond(
        &query("web.shop.svc.cluster.local.", RecordType::A),
        ([127, 0, 0, 1], 5353).into(),
        Transport::Udp,
        &mut out,
    );
    for (name, qtype) in questions {
        let packet = query(name, RecordType::from_str(qtype).expect("type"));
        let counts = tries(|| {
            let outcome = handler.respond(
                &packet,
                ([127, 0, 0, 1], 5353).into(),
                Transport::Udp,
                &mut out,
            );
            assert!(matches!(outcome, Outcome::Reply));
        });
        assert_eq!(
            counts.last(),
            Some(&0),
            "{name} {qtype} allocated on every try: {counts:?}"
        );
    }
}

/// With the search-path tracker on, a walk through the search list (starting, continuing,
/// ending, in a namespace seen for the first time) allocates nothing more than it does with
/// the tracker off. (The zone lookup of a miss under `svc` whose namespace label is a
/// stem's last label allocates once either way: `api.partner.example.com.svc.<zone>`.)
#[test]
fn following_search_path_walks_does_not_allocate() {
    use clusterdns::search_tracker::live::{Tracker, Watch};
    use std::sync::Arc;
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let _profiler = dhat::Profiler::builder().testing().build();
    let blocks = shop_blocks();
    let tracker = Arc::new(Tracker::new());
    let zone = b"\x07cluster\x05local\x00";
    let node: &[u8] = b"\x04corp\x07example\x00";
    let plain = Handler::new(blocks.clone());
    let tracking =
        Handler::new(blocks).with_search_path(Watch::new(Arc::clone(&tracker), zone, &[node]));
    let walk = [
        "api.partner.example.com.shop.svc.cluster.local.",
        "api.partner.example.com.svc.cluster.local.",
        "api.partner.example.com.cluster.local.",
        "api.partner.example.com.corp.example.",
        "web.payments.shop.svc.cluster.local.",
        "web.shop.shop.svc.cluster.local.",
        "web.shop.svc.cluster.local.",
        "kube-dns.kube-system.svc.cluster.local.",
    ];
    let packets: Vec<Vec<u8>> = walk.iter().map(|name| query(name, RecordType::A)).collect();
    let mut out = Vec::with_capacity(4096);
    let round = |handler: &Handler, out: &mut Vec<u8>| {
        let before = allocations();
        for packet in &packets {
            handler.respond(packet, ([10, 244, 1, 7], 40000).into(), Transport::Udp, out);
        }
        allocations() - before
    };
    // Warm up both (arc-swap's per-thread registration).
    round(&plain, &mut out);
    round(&tracking, &mut out);
    let mut counts = Vec::new();
    for _ in 0..3 {
        let without = round(&plain, &mut out);
        let with = round(&tracking, &mut out);
        counts.push((without, with));
        if with <= without {
            break;
        }
    }
    let (without, with) = counts.last().copied().unwrap_or_default();
    assert!(
        with <= without,
        "following the walks allocated on every try (without, with the tracker): {counts:?}"
    );
    // The walks were followed: shop's misses (four of api.partner, one of web.payments, one
    // of web.shop per round; the name under corp.example has no block and is REFUSED, so
    // it is no miss), kube-system's answer.
    let view = tracker.view();
    let shop = view.iter().find(|ns| ns.namespace == "shop").expect("shop");
    assert_eq!(shop.wasted, 5 * (counts.len() as u64 + 1), "{view:?}");
    assert!(
        view.iter()
            .any(|ns| ns.namespace == "kube-system" && ns.answered > 0)
    );
}

#[test]
fn counting_a_query_in_the_metrics_does_not_allocate() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let _profiler = dhat::Profiler::builder().testing().build();
    let set = DnsMetrics::new();
    let metrics = set.server_zone("dns://:53", ".", "");
    let dropped = set.dropped("dns://:53");
    let base = Observation {
        proto: Proto::Udp,
        family: Family::V4,
        qtype: 1,
        rcode: 0,
        plugin: Plugin::Kubernetes.into(),
        request_size: 57,
        response_size: 120,
        duration: Duration::from_micros(250),
        dnssec_ok: false,
    };
    let observations = [
        base,
        Observation {
            qtype: 28,
            rcode: 3,
            ..base
        },
        Observation {
            proto: Proto::Tcp,
            family: Family::V6,
            qtype: 65280,
            rcode: 2,
            plugin: Plugin::Forward.into(),
            request_size: 70_000,
            response_size: 0,
            duration: Duration::from_secs(30),
            dnssec_ok: true,
        },
        Observation {
            rcode: 23,
            plugin: Plugin::Cache.into(),
            ..base
        },
    ];
    let counts = tries(|| {
        for _ in 0..1000 {
            for observation in &observations {
                metrics.record(observation);
            }
            dropped.record(&Observation {
                rcode: 5,
                plugin: Writer::Server,
                ..base
            });
        }
    });
    assert_eq!(
        counts.last(),
        Some(&0),
        "recording allocated on every try: {counts:?}"
    );
    let rounds = counts.len() as u64;
    assert_eq!(metrics.requests(Proto::Udp, Family::V4, 1), 2000 * rounds);
}

/// A cached upstream answer is served like a cluster-zone one: found, fitted to the client,
/// its TTLs counted down and its addresses shuffled (*loadbalance*, kubeadm's Corefile) in
/// the output buffer, with no allocation.
#[test]
fn answering_from_the_cache_does_not_allocate() {
    use hickory_proto::rr::rdata::{A, CNAME};
    use hickory_proto::rr::{RData, Record};
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // The upstream: a CNAME to a name with three addresses, for any question.
    let upstream = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let upstream_addr = upstream.local_addr().expect("addr");
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok((len, peer)) = upstream.recv_from(&mut buf) {
            let Ok(asked) = Message::from_vec(&buf[..len]) else {
                continue;
            };
            let mut reply = Message::new(asked.metadata.id, MessageType::Response, OpCode::Query);
            reply.metadata.recursion_desired = true;
            reply.metadata.recursion_available = true;
            reply.add_queries(asked.queries.iter().cloned());
            let name = asked.queries[0].name().clone();
            let edge = Name::from_ascii("edge.example.net.").expect("name");
            reply.add_answer(Record::from_rdata(
                name,
                300,
                RData::CNAME(CNAME(edge.clone())),
            ));
            for last in 1..=3 {
                reply.add_answer(Record::from_rdata(
                    edge.clone(),
                    300,
                    RData::A(A::new(192, 0, 2, last)),
                ));
            }
            reply.edns = asked.edns.clone();
            let _ = upstream.send_to(&reply.to_vec().expect("encode"), peer);
        }
    });
    let dir = tempfile::tempdir().expect("dir");
    let corefile = dir.path().join("Corefile");
    std::fs::write(
        &corefile,
        format!(".:1053 {{\n forward . {upstream_addr}\n cache 30\n loadbalance\n}}\n"),
    )
    .expect("write");
    let config = clusterdns::config::read_corefile(&corefile).expect("config");
    let handler = Handler::new(
        server::load(&config)
            .expect("load")
            .into_iter()
            .map(|loaded| loaded.block)
            .collect(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = ([127, 0, 0, 1], 5353).into();
    let packet = query("www.example.com.", RecordType::A);
    let mut out = Vec::with_capacity(4096);
    // The first query goes upstream and fills the cache.
    match handler.respond(&packet, client, Transport::Udp, &mut out) {
        Outcome::Forward(pending) => runtime.block_on(handler.complete(pending, &mut out)),
        other => panic!("the first query should go upstream: {other:?}"),
    }
    assert_eq!(Message::from_vec(&out).expect("reply").answers.len(), 4);
    let _profiler = dhat::Profiler::builder().testing().build();
    let _runtime = runtime.enter();
    // Warm up (arc-swap's per-thread registration), then measure.
    assert!(matches!(
        handler.respond(&packet, client, Transport::Udp, &mut out),
        Outcome::Reply
    ));
    let counts = tries(|| {
        let outcome = handler.respond(&packet, client, Transport::Udp, &mut out);
        assert!(matches!(outcome, Outcome::Reply), "a cache hit");
    });
    assert_eq!(
        counts.last(),
        Some(&0),
        "a cache hit allocated on every try: {counts:?}"
    );
    let reply = Message::from_vec(&out).expect("reply");
    assert_eq!(reply.answers.len(), 4, "CNAME and the three addresses");
    assert!(reply.answers.iter().all(|r| r.ttl <= 30), "counted down");
}
