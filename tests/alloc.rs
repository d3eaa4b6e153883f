//! The UDP request path allocates nothing for names that exist and for misses: answers are
//! prepared when the zone is built. Measured with a counting allocator, so this is its own
//! test binary.

use std::path::PathBuf;
use std::str::FromStr;

use clusterdns::server::{self, Handler, Outcome, Transport};
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

fn allocations() -> u64 {
    dhat::HeapStats::get().total_blocks
}

fn query(name: &str, qtype: RecordType) -> Vec<u8> {
    let mut message = Message::new(1, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(Name::from_ascii(name).expect("name"), qtype));
    let mut edns = Edns::new();
    edns.set_max_payload(1232);
    message.edns = Some(edns);
    message.to_vec().expect("encode")
}

#[test]
fn answering_from_the_prepared_zone_does_not_allocate() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let shop = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/shop.json");
    let config = clusterdns::config::shorthand(&[shop], "127.0.0.1:1053".parse().expect("addr"))
        .expect("config");
    let blocks = server::load(&config).expect("load");
    let handler = Handler::new(blocks.into_iter().map(|loaded| loaded.block).collect());
    let questions = [
        ("web.shop.svc.cluster.local.", "A"),
        ("Web.Shop.svc.cluster.local.", "A"),
        ("web-headless.shop.svc.cluster.local.", "A"),
        ("_pg._tcp.db.shop.svc.cluster.local.", "SRV"),
        ("db-0.db.shop.svc.cluster.local.", "A"),
        ("20.0.96.10.in-addr.arpa.", "PTR"),
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
        let before = allocations();
        let outcome = handler.respond(
            &packet,
            ([127, 0, 0, 1], 5353).into(),
            Transport::Udp,
            &mut out,
        );
        let allocated = allocations() - before;
        assert!(matches!(outcome, Outcome::Reply));
        assert_eq!(allocated, 0, "{name} {qtype} allocated {allocated} times");
    }
}
