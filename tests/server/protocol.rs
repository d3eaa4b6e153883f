//! The DNS protocol around the zone: EDNS, truncation, error rcodes, zone transfers.

use clusterdns::server::Transport;
use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name, RecordType};

use crate::common::{Offline, Reply, query, rcode_name};

/// A headless Service with `count` ready endpoints (named port `p`), in kubectl's JSON.
fn big_headless(count: usize) -> String {
    let endpoints: Vec<String> = (0..count)
        .map(|i| {
            format!(
                r#"{{"addresses":["10.1.{}.{}"],"conditions":{{"ready":true}}}}"#,
                i / 250,
                i % 250 + 1
            )
        })
        .collect();
    format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[
        {{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"big"}}}},
        {{"apiVersion":"v1","kind":"Service","metadata":{{"name":"many","namespace":"big"}},
          "spec":{{"clusterIP":"None","ports":[{{"name":"p","port":80}}]}}}},
        {{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
          "metadata":{{"name":"many-a","namespace":"big","labels":{{"kubernetes.io/service-name":"many"}}}},
          "addressType":"IPv4","ports":[{{"name":"p","port":8080,"protocol":"TCP"}}],
          "endpoints":[{}]}}]}}"#,
        endpoints.join(",")
    )
}

fn big_server(count: usize, extra: &str) -> (Offline, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("big.json");
    std::fs::write(&objects, big_headless(count)).unwrap();
    let server = Offline::new(&format!(
        ".:53 {{\n bind 127.0.0.1\n kubernetes cluster.local {{\n  objects {}\n }}\n {extra}\n}}\n",
        objects.display()
    ));
    (server, dir)
}

const SHOP: &str = ".:53 {\n bind 127.0.0.1\n kubernetes cluster.local in-addr.arpa {\n  pods insecure\n  ttl 30\n  objects {FIXTURES}/shop.json\n }\n}\n";

#[test]
fn header_flags_and_id() {
    let server = Offline::new(SHOP);
    let reply = server.ask("web.shop.svc.cluster.local.", "A");
    let meta = &reply.message.metadata;
    assert_eq!(meta.id, 4321);
    assert_eq!(meta.message_type, MessageType::Response);
    assert!(meta.authoritative, "AA");
    assert!(meta.recursion_desired, "RD copied");
    assert!(!meta.recursion_available, "no recursion offered");
    assert!(!meta.truncation);
    assert_eq!(
        reply.message.queries[0].name().to_string(),
        "web.shop.svc.cluster.local."
    );
}

#[test]
fn edns_is_echoed_and_absent_when_not_asked() {
    let server = Offline::new(SHOP);
    let reply = server.ask_with(
        &query("web.shop.svc.cluster.local.", "A", Some(4000)),
        Transport::Udp,
    );
    let edns = reply.message.edns.as_ref().expect("OPT in the reply");
    assert_eq!(edns.max_payload(), 4000);
    assert_eq!(edns.version(), 0);
    let reply = server.ask_with(
        &query("web.shop.svc.cluster.local.", "A", None),
        Transport::Udp,
    );
    assert!(reply.message.edns.is_none());
    assert_eq!(reply.answer.len(), 1);
}

#[test]
fn dnssec_ok_bit_is_echoed() {
    let server = Offline::new(SHOP);
    let mut message = Message::new(1, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(
        Name::from_ascii("web.shop.svc.cluster.local.").unwrap(),
        RecordType::A,
    ));
    let mut edns = hickory_proto::op::Edns::new();
    edns.set_dnssec_ok(true);
    message.edns = Some(edns);
    let reply = server.ask_with(&message.to_vec().unwrap(), Transport::Udp);
    assert!(reply.message.edns.unwrap().flags().dnssec_ok);
}

#[test]
fn unknown_edns_version_is_badvers() {
    let server = Offline::new(SHOP);
    let mut packet = query("web.shop.svc.cluster.local.", "A", Some(1232));
    // The OPT record is last: its TTL's second byte is the version.
    let at = packet.len() - 5;
    packet[at] = 1;
    let reply = server.ask_with(&packet, Transport::Udp);
    assert_eq!(
        rcode_name(u16::from(reply.message.metadata.response_code)),
        "BADVERS"
    );
    assert!(reply.answer.is_empty());
}

#[test]
fn udp_answers_that_do_not_fit_are_truncated() {
    let (server, _dir) = big_server(100, "");
    // 100 A records do not fit in 512 bytes: TC, nothing half-sent.
    let reply = server.ask_with(
        &query("many.big.svc.cluster.local.", "A", None),
        Transport::Udp,
    );
    assert!(reply.truncated, "TC set");
    assert!(reply.answer.is_empty() && reply.additional.is_empty());
    // Nor in 1232, the most a UDP answer carries whatever payload the client offers (DNS
    // Flag Day 2020): 4096 does not make room for them.
    let packet = query("many.big.svc.cluster.local.", "A", Some(4096));
    let raw = server.raw(&packet, Transport::Udp).unwrap();
    assert!(raw.len() <= 1232, "{} bytes", raw.len());
    let reply = Reply::decode(&raw);
    assert!(reply.truncated, "TC set at 1232 bytes");
    assert!(reply.answer.is_empty());
    // Fewer do.
    let (fewer, _fewer_dir) = big_server(60, "");
    let reply = fewer.ask_with(
        &query("many.big.svc.cluster.local.", "A", Some(4096)),
        Transport::Udp,
    );
    assert!(!reply.truncated);
    assert_eq!(reply.answer.len(), 60);
    // Over TCP everything fits.
    let reply = server.ask_with(
        &query("many.big.svc.cluster.local.", "SRV", None),
        Transport::Tcp,
    );
    assert!(!reply.truncated);
    assert_eq!((reply.answer.len(), reply.additional.len()), (100, 100));
}

#[test]
fn glue_that_fits_is_kept_without_tc() {
    let (server, _dir) = big_server(20, "");
    // 20 SRV records fit in 1232 bytes, with their 20 glue records (compressed to a pointer and
    // an address each) they do not: the answer goes out whole with as much glue as fits, whole
    // RRsets, and without TC (RFC 2181 §9).
    let packet = query("many.big.svc.cluster.local.", "SRV", Some(1232));
    let bytes = server.raw(&packet, Transport::Udp).unwrap();
    let reply = Reply::decode(&bytes);
    assert!(!reply.truncated);
    assert_eq!(reply.answer.len(), 20);
    let glue = reply.message.additionals.len();
    assert!((1..20).contains(&glue), "{glue} glue records");
    assert!(bytes.len() <= 1232, "{} bytes", bytes.len());
    // Each glue record is one of the whole reply's, and the next one would not have fit.
    let whole = Reply::decode(&server.raw(&packet, Transport::Tcp).unwrap());
    assert_eq!(whole.additional.len(), 20);
    for line in &reply.additional {
        assert!(whole.additional.contains(line), "{line}");
    }
    // A glue record: a pointer to its SRV target, the header, the address.
    let record = 2 + 10 + 4;
    assert!(
        bytes.len() + record > 1232,
        "{} bytes, room for more",
        bytes.len()
    );
    // Without EDNS (512 bytes) the SRV records alone do not fit: TC, nothing half-sent.
    let plain = server.ask_with(
        &query("many.big.svc.cluster.local.", "SRV", None),
        Transport::Udp,
    );
    assert!(plain.truncated && plain.answer.is_empty() && plain.additional.is_empty());
}

#[test]
fn malformed_queries_get_formerr() {
    let server = Offline::new(SHOP);
    let mut two = Message::new(77, MessageType::Query, OpCode::Query);
    for name in ["a.cluster.local.", "b.cluster.local."] {
        two.add_query(Query::query(Name::from_ascii(name).unwrap(), RecordType::A));
    }
    let reply = Reply::decode(&server.raw(&two.to_vec().unwrap(), Transport::Udp).unwrap());
    assert_eq!(
        (reply.rcode.as_str(), reply.message.metadata.id),
        ("FORMERR", 77)
    );
    let cut = query("web.shop.svc.cluster.local.", "A", None);
    let reply = Reply::decode(&server.raw(&cut[..cut.len() - 3], Transport::Udp).unwrap());
    assert_eq!(reply.rcode, "FORMERR");
}

#[test]
fn other_opcodes_are_not_implemented() {
    let server = Offline::new(SHOP);
    for opcode in [OpCode::Notify, OpCode::Update, OpCode::Status] {
        let mut message = Message::new(5, MessageType::Query, opcode);
        message.add_query(Query::query(
            Name::from_ascii("cluster.local.").unwrap(),
            RecordType::SOA,
        ));
        let reply = Reply::decode(
            &server
                .raw(&message.to_vec().unwrap(), Transport::Udp)
                .unwrap(),
        );
        assert_eq!(reply.rcode, "NOTIMP", "{opcode:?}");
        assert_eq!(reply.message.metadata.op_code, opcode);
    }
}

#[test]
fn responses_and_runts_get_no_reply() {
    let server = Offline::new(SHOP);
    let mut packet = query("web.shop.svc.cluster.local.", "A", None);
    packet[2] |= 0x80;
    assert!(server.raw(&packet, Transport::Udp).is_none());
    assert!(server.raw(&[0, 1, 2], Transport::Udp).is_none());
}

#[test]
fn other_classes_are_refused() {
    let server = Offline::new(SHOP);
    let mut message = Message::new(5, MessageType::Query, OpCode::Query);
    let mut question = Query::query(
        Name::from_ascii("web.shop.svc.cluster.local.").unwrap(),
        RecordType::A,
    );
    question.set_query_class(DNSClass::CH);
    message.add_query(question);
    let reply = Reply::decode(
        &server
            .raw(&message.to_vec().unwrap(), Transport::Udp)
            .unwrap(),
    );
    assert_eq!(reply.rcode, "REFUSED");
}

#[test]
fn zone_transfers_need_a_transfer_block_and_tcp() {
    let server = Offline::new(SHOP);
    let refused = server.ask_with(&query("cluster.local.", "AXFR", None), Transport::Tcp);
    assert_eq!(refused.rcode, "REFUSED", "no transfer block");

    let allowed = Offline::new(&SHOP.replace("\n}\n", "\n transfer {\n  to 127.0.0.1\n }\n}\n"));
    let over_udp = allowed.ask_with(&query("cluster.local.", "AXFR", None), Transport::Udp);
    assert_eq!(over_udp.rcode, "REFUSED", "AXFR over UDP");

    let others = Offline::new(&SHOP.replace("\n}\n", "\n transfer {\n  to 10.0.0.0/8\n }\n}\n"));
    let refused = others.ask_with(&query("cluster.local.", "AXFR", None), Transport::Tcp);
    assert_eq!(refused.rcode, "REFUSED", "client not in `to`");

    let not_apex = allowed.ask_with(
        &query("shop.svc.cluster.local.", "AXFR", None),
        Transport::Tcp,
    );
    assert_eq!(not_apex.rcode, "REFUSED", "not a zone apex");
}

/// The records of a reply as raw slices: (section, owner as written, type, RDATA as
/// written).
fn raw_records(reply: &[u8]) -> Vec<(usize, Vec<u8>, u16, Vec<u8>)> {
    let count = |at: usize| usize::from(u16::from_be_bytes([reply[at], reply[at + 1]]));
    let skip = |mut at: usize| loop {
        match reply[at] {
            0 => return at + 1,
            len if len >= 0xc0 => return at + 2,
            len => at += 1 + usize::from(len),
        }
    };
    let mut at = skip(12) + 4;
    let mut records = Vec::new();
    for (section, n) in [(1, count(6)), (2, count(8)), (3, count(10))] {
        for _ in 0..n {
            let owner_end = skip(at);
            let owner = reply[at..owner_end].to_vec();
            let rtype = u16::from_be_bytes([reply[owner_end], reply[owner_end + 1]]);
            let rdlen = count(owner_end + 8);
            let rdata = reply[owner_end + 10..owner_end + 10 + rdlen].to_vec();
            records.push((section, owner, rtype, rdata));
            at = owner_end + 10 + rdlen;
        }
    }
    assert_eq!(at, reply.len(), "the records fill the message");
    records
}

/// `count` headless Services in namespace `big`, each with the one endpoint 10.2.0.1.
fn one_ip_many_services(count: usize) -> String {
    let mut items =
        vec![r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"big"}}"#.to_owned()];
    for n in 0..count {
        items.push(format!(
            r#"{{"apiVersion":"v1","kind":"Service","metadata":{{"name":"s{n}","namespace":"big"}},
              "spec":{{"clusterIP":"None","ports":[{{"name":"p","port":80}}]}}}}"#
        ));
        items.push(format!(
            r#"{{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
              "metadata":{{"name":"s{n}-a","namespace":"big","labels":{{"kubernetes.io/service-name":"s{n}"}}}},
              "addressType":"IPv4","ports":[{{"name":"p","port":80,"protocol":"TCP"}}],
              "endpoints":[{{"addresses":["10.2.0.1"],"conditions":{{"ready":true}}}}]}}"#
        ));
    }
    format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
        items.join(",")
    )
}

#[test]
fn answers_compress_owner_names_and_the_rdata_names_rfc_3597_allows() {
    // SRV: the glue's owners point at the SRV targets; the targets stay whole (RFC 2782).
    let (server, _dir) = big_server(10, "");
    for transport in [Transport::Udp, Transport::Tcp] {
        let packet = query("many.big.svc.cluster.local.", "SRV", Some(1232));
        let raw = server.raw(&packet, transport).unwrap();
        let records = raw_records(&raw);
        let glue: Vec<_> = records.iter().filter(|r| r.0 == 3 && r.2 == 1).collect();
        assert_eq!(glue.len(), 10, "{transport:?}");
        for (_, owner, _, _) in &glue {
            assert_eq!(owner.len(), 2, "{transport:?}: a pointer: {owner:?}");
            assert_eq!(owner[0] & 0xc0, 0xc0);
        }
        for (_, _, _, rdata) in records.iter().filter(|r| r.2 == 33) {
            let target = &rdata[6..];
            assert_eq!(
                target.last(),
                Some(&0),
                "{transport:?}: an SRV target is whole"
            );
        }
        let reply = Reply::decode(&raw);
        assert_eq!((reply.answer.len(), reply.additional.len()), (10, 10));
    }
    // PTR: one address behind many Services; the names share `big.svc.cluster.local.`.
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("ptr.json");
    std::fs::write(&objects, one_ip_many_services(20)).unwrap();
    let server = Offline::new(&format!(
        ".:53 {{\n kubernetes cluster.local in-addr.arpa {{\n  objects {}\n }}\n}}\n",
        objects.display()
    ));
    let packet = query("1.0.2.10.in-addr.arpa.", "PTR", Some(1232));
    let raw = server.raw(&packet, Transport::Udp).unwrap();
    let records = raw_records(&raw);
    assert_eq!(records.len(), 21, "20 PTRs and the OPT");
    let mut whole = 0;
    for (_, _, _, rdata) in records.iter().filter(|r| r.2 == 12) {
        // `10-2-0-1.sN.` then a pointer, after the first.
        if rdata.last() == Some(&0) {
            whole += 1;
        } else {
            assert_eq!(rdata[rdata.len() - 2] & 0xc0, 0xc0, "{rdata:?}");
        }
    }
    assert_eq!(whole, 1, "only the first target is written whole");
    let reply = Reply::decode(&raw);
    let mut targets: Vec<String> = reply
        .answer
        .iter()
        .map(|line| line.rsplit(' ').next().unwrap().to_owned())
        .collect();
    targets.sort();
    assert_eq!(targets.len(), 20);
    assert!(
        targets
            .iter()
            .all(|t| t.starts_with("10-2-0-1.s") && t.ends_with(".big.svc.cluster.local.")),
        "{targets:?}"
    );
}
