#![allow(clippy::unwrap_used)]

use std::str::FromStr;

use hickory_proto::op::{Edns as HEdns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::{A, SOA};
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::*;
use crate::config::CacheConfig;

fn config() -> CacheConfig {
    CacheConfig {
        zones: vec![Name::root()],
        success: CacheClass {
            capacity: 9984,
            max_ttl: 3600,
            min_ttl: 5,
        },
        denial: CacheClass {
            capacity: 9984,
            max_ttl: 1800,
            min_ttl: 5,
        },
        disable_success: Vec::new(),
        disable_denial: Vec::new(),
        prefetch: None,
        serve_stale: None,
        servfail: Duration::from_secs(5),
        keepttl: false,
    }
}

fn query(name: &str, dnssec_ok: bool) -> Vec<u8> {
    let mut m = Message::new(42, MessageType::Query, OpCode::Query);
    m.add_query(Query::query(Name::from_ascii(name).unwrap(), RecordType::A));
    let mut edns = HEdns::new();
    edns.set_max_payload(1232);
    edns.set_dnssec_ok(dnssec_ok);
    m.edns = Some(edns);
    m.to_vec().unwrap()
}

fn answer(name: &str, ttl: u32, rcode: ResponseCode) -> Vec<u8> {
    let name = Name::from_ascii(name).unwrap();
    let mut m = Message::new(1, MessageType::Response, OpCode::Query);
    m.metadata.response_code = rcode;
    m.add_query(Query::query(name.clone(), RecordType::A));
    if rcode == ResponseCode::NoError {
        m.add_answer(Record::from_rdata(
            name,
            ttl,
            RData::A(A::new(192, 0, 2, 1)),
        ));
    } else if rcode == ResponseCode::NXDomain {
        let zone = Name::from_str("example.com.").unwrap();
        m.add_authority(Record::from_rdata(
            zone.clone(),
            3600,
            RData::SOA(SOA::new(zone.clone(), zone, 1, 7200, 1800, 86400, ttl)),
        ));
    }
    m.to_vec().unwrap()
}

/// The TTLs of a hit, or `None` on a miss.
fn ttls(cache: &Cache, name: &str, now: Instant) -> Option<(Hit, Vec<u32>, u16)> {
    let packet = query(name, false);
    let request = Request::parse(&packet).unwrap();
    let mut out = Vec::new();
    let hit = cache.get(&request, now, 1232, &mut out)?;
    let m = Message::from_vec(&out).unwrap();
    let ttls = m
        .answers
        .iter()
        .chain(&m.authorities)
        .map(|r| r.ttl)
        .collect();
    Some((hit, ttls, m.metadata.id))
}

fn store(cache: &Cache, name: &str, reply: &[u8], now: Instant) {
    let packet = query(name, false);
    cache.put(&Request::parse(&packet).unwrap(), &mut reply.to_vec(), now);
}

#[test]
fn hits_count_the_ttl_down_and_carry_the_clients_id() {
    let cache = Cache::new(&config(), "dns://:53");
    let t0 = Instant::now();
    store(
        &cache,
        "www.example.com.",
        &answer("www.example.com.", 300, ResponseCode::NoError),
        t0,
    );
    assert_eq!(
        ttls(&cache, "www.example.com.", t0),
        Some((Hit::Fresh, vec![300], 42))
    );
    assert_eq!(
        ttls(&cache, "WWW.Example.COM.", t0 + Duration::from_secs(100))
            .unwrap()
            .1,
        [200]
    );
    assert_eq!(
        ttls(&cache, "www.example.com.", t0 + Duration::from_secs(300)),
        None,
        "expired"
    );
    assert_eq!(ttls(&cache, "other.example.com.", t0), None);
}

#[test]
fn hits_are_sent_as_coredns_sends_them() {
    let cache = Cache::new(&config(), "dns://:53");
    let t0 = Instant::now();
    // What the client is sent on the miss is what is kept: the TTL clamped (3600 at most).
    let packet = query("www.example.com.", false);
    let mut reply = answer("www.example.com.", 7200, ResponseCode::NoError);
    cache.put(&Request::parse(&packet).unwrap(), &mut reply, t0);
    let sent = Message::from_vec(&reply).unwrap();
    assert_eq!(sent.answers[0].ttl, 3600);
    assert!(
        !sent.metadata.authoritative,
        "the miss passes the upstream's flags on"
    );

    // A hit within the entry's first second says the whole TTL; whole seconds count down.
    let within = t0 + Duration::from_millis(999);
    assert_eq!(ttls(&cache, "www.example.com.", within).unwrap().1, [3600]);
    let later = t0 + Duration::from_millis(2500);
    assert_eq!(ttls(&cache, "www.example.com.", later).unwrap().1, [3598]);

    // The question as this client asked it (its letter case), and AA, as CoreDNS's cache.
    let packet = query("WWW.Example.COM.", false);
    let mut out = Vec::new();
    cache.get(&Request::parse(&packet).unwrap(), within, 1232, &mut out);
    let hit = Message::from_vec(&out).unwrap();
    assert_eq!(hit.queries[0].name().to_string(), "WWW.Example.COM.");
    assert!(hit.metadata.authoritative);
}

#[test]
fn ttls_are_clamped_per_class() {
    let cache = Cache::new(&config(), "dns://:53");
    let t0 = Instant::now();
    store(
        &cache,
        "long.example.com.",
        &answer("long.example.com.", 86400, ResponseCode::NoError),
        t0,
    );
    store(
        &cache,
        "short.example.com.",
        &answer("short.example.com.", 1, ResponseCode::NoError),
        t0,
    );
    store(
        &cache,
        "nx.example.com.",
        &answer("nx.example.com.", 60, ResponseCode::NXDomain),
        t0,
    );
    assert_eq!(ttls(&cache, "long.example.com.", t0).unwrap().1, [3600]);
    assert_eq!(ttls(&cache, "short.example.com.", t0).unwrap().1, [5]);
    assert_eq!(
        ttls(&cache, "nx.example.com.", t0).unwrap().1,
        [60],
        "SOA minimum"
    );
}

#[test]
fn servfail_is_kept_briefly_and_other_errors_not_at_all() {
    let cache = Cache::new(&config(), "dns://:53");
    let t0 = Instant::now();
    store(
        &cache,
        "sf.example.com.",
        &answer("sf.example.com.", 0, ResponseCode::ServFail),
        t0,
    );
    store(
        &cache,
        "rf.example.com.",
        &answer("rf.example.com.", 0, ResponseCode::Refused),
        t0,
    );
    assert!(ttls(&cache, "sf.example.com.", t0 + Duration::from_secs(4)).is_some());
    assert!(ttls(&cache, "sf.example.com.", t0 + Duration::from_secs(6)).is_none());
    assert!(ttls(&cache, "rf.example.com.", t0).is_none());
    let mut truncated = answer("tc.example.com.", 60, ResponseCode::NoError);
    truncated[2] |= 0x02;
    store(&cache, "tc.example.com.", &truncated, t0);
    assert!(
        ttls(&cache, "tc.example.com.", t0).is_none(),
        "TC replies are not cached"
    );
}

#[test]
fn disabled_zones_and_uncovered_names() {
    let mut config = config();
    config.disable_success = vec![Name::from_str("cluster.local.").unwrap()];
    config.disable_denial = vec![Name::from_str("cluster.local.").unwrap()];
    let cache = Cache::new(&config, "dns://:53");
    let t0 = Instant::now();
    store(
        &cache,
        "a.cluster.local.",
        &answer("a.cluster.local.", 60, ResponseCode::NoError),
        t0,
    );
    store(
        &cache,
        "b.cluster.local.",
        &answer("b.cluster.local.", 60, ResponseCode::NXDomain),
        t0,
    );
    assert!(ttls(&cache, "a.cluster.local.", t0).is_none());
    assert!(ttls(&cache, "b.cluster.local.", t0).is_none());
    let mut narrow = super::tests::config();
    narrow.zones = vec![Name::from_str("example.org.").unwrap()];
    let cache = Cache::new(&narrow, "dns://:53");
    assert!(cache.covers(b"\x03www\x07example\x03org\x00"));
    assert!(!cache.covers(b"\x03www\x07example\x03com\x00"));
}

#[test]
fn the_dnssec_ok_bit_is_part_of_the_key() {
    let cache = Cache::new(&config(), "dns://:53");
    let t0 = Instant::now();
    let packet = query("do.example.com.", true);
    cache.put(
        &Request::parse(&packet).unwrap(),
        &mut answer("do.example.com.", 60, ResponseCode::NoError),
        t0,
    );
    assert!(ttls(&cache, "do.example.com.", t0).is_none());
}

#[test]
fn serve_stale_answers_expired_entries_with_ttl_zero() {
    let mut config = config();
    config.serve_stale = Some(ServeStale {
        duration: Duration::from_secs(3600),
        verified: false,
    });
    let cache = Cache::new(&config, "dns://:53");
    let t0 = Instant::now();
    store(
        &cache,
        "s.example.com.",
        &answer("s.example.com.", 60, ResponseCode::NoError),
        t0,
    );
    assert_eq!(
        ttls(&cache, "s.example.com.", t0 + Duration::from_secs(61))
            .unwrap()
            .0,
        Hit::Stale
    );
    assert_eq!(
        ttls(&cache, "s.example.com.", t0 + Duration::from_secs(61))
            .unwrap()
            .1,
        [0]
    );
    assert!(
        ttls(
            &cache,
            "s.example.com.",
            t0 + Duration::from_secs(60 + 3601)
        )
        .is_none()
    );
}

#[test]
fn prefetch_popular_entries_near_expiry() {
    let mut config = config();
    config.prefetch = Some(Prefetch {
        amount: 3,
        duration: Duration::from_secs(60),
        percentage: 10,
    });
    let cache = Cache::new(&config, "dns://:53");
    let t0 = Instant::now();
    store(
        &cache,
        "p.example.com.",
        &answer("p.example.com.", 100, ResponseCode::NoError),
        t0,
    );
    let at = |s| t0 + Duration::from_secs(s);
    assert_eq!(
        ttls(&cache, "p.example.com.", at(10)).unwrap().0,
        Hit::Fresh
    );
    assert_eq!(
        ttls(&cache, "p.example.com.", at(20)).unwrap().0,
        Hit::Fresh
    );
    assert_eq!(
        ttls(&cache, "p.example.com.", at(30)).unwrap().0,
        Hit::Fresh,
        "popular, but 70 s left"
    );
    assert_eq!(
        ttls(&cache, "p.example.com.", at(85)).unwrap().0,
        Hit::Fresh,
        "15 s left"
    );
    assert_eq!(
        ttls(&cache, "p.example.com.", at(91)).unwrap().0,
        Hit::Prefetch,
        "popular, 9 s left"
    );
    let cold = Cache::new(&config, "dns://:53");
    store(
        &cold,
        "p.example.com.",
        &answer("p.example.com.", 100, ResponseCode::NoError),
        t0,
    );
    assert_eq!(
        ttls(&cold, "p.example.com.", at(91)).unwrap().0,
        Hit::Fresh,
        "near expiry, but not popular"
    );
}

#[test]
fn full_shards_evict() {
    let mut config = config();
    config.success.capacity = 256;
    let cache = Cache::new(&config, "dns://:53");
    let t0 = Instant::now();
    for i in 0..2000 {
        let name = format!("n{i}.example.com.");
        store(&cache, &name, &answer(&name, 60, ResponseCode::NoError), t0);
    }
    assert!(cache.success.len() <= 256);
    assert!(cache.metrics.evictions[0].get() >= 2000 - 256);
    let mut out = Exposition::new();
    cache.collect(&mut out);
    let text = out.finish();
    assert!(
        text.contains(
            "coredns_cache_entries{server=\"dns://:53\",type=\"success\",view=\"\",zones=\".\"}"
        ),
        "{text}"
    );
}
