//! Parsing and writing at the byte level.

#![allow(clippy::unwrap_used)]

use super::*;

fn header(id: u16, flags: u16, counts: [u16; 4]) -> Vec<u8> {
    let mut out = id.to_be_bytes().to_vec();
    out.extend_from_slice(&flags.to_be_bytes());
    for count in counts {
        out.extend_from_slice(&count.to_be_bytes());
    }
    out
}

fn question(name: &[u8], qtype: u16) -> Vec<u8> {
    let mut out = name.to_vec();
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out
}

const WEB: &[u8] = b"\x03Web\x04shop\x03svc\x07cluster\x05local\x00";

#[test]
fn parses_a_plain_query() {
    let mut packet = header(0xbeef, 0x0100, [1, 0, 0, 0]);
    packet.extend(question(WEB, 1));
    let request = Request::parse(&packet).unwrap();
    assert_eq!(request.id, 0xbeef);
    assert_eq!(
        request.question.name(),
        b"\x03web\x04shop\x03svc\x07cluster\x05local\x00"
    );
    assert_eq!(request.question.qtype, 1);
    assert_eq!(request.edns, None);
    assert_eq!(request.udp_limit(), 512);
}

#[test]
fn parses_edns() {
    let mut packet = header(1, 0, [1, 0, 0, 1]);
    packet.extend(question(WEB, 1));
    // OPT: root owner, payload 4096, version 0, DO set.
    packet.extend([0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 0]);
    let request = Request::parse(&packet).unwrap();
    let edns = request.edns.unwrap();
    assert_eq!(
        (edns.payload, edns.version, edns.dnssec_ok),
        (4096, 0, true)
    );
    // A payload below 512 counts as 512.
    let at = packet.len() - 8;
    packet[at..at + 2].copy_from_slice(&100u16.to_be_bytes());
    assert_eq!(Request::parse(&packet).unwrap().udp_limit(), 512);
}

#[test]
fn rejects_what_is_not_a_query() {
    let mut ok = header(9, 0, [1, 0, 0, 0]);
    ok.extend(question(WEB, 1));
    let formerr = Malformed::Reply {
        id: 9,
        opcode: 0,
        flags: 0,
        rcode: rcode::FORMERR,
    };
    let cases: Vec<(&str, Vec<u8>, Malformed)> = vec![
        ("shorter than a header", vec![0; 11], Malformed::Ignore),
        (
            "a response",
            {
                let mut p = ok.clone();
                p[2] |= 0x80;
                p
            },
            Malformed::Ignore,
        ),
        ("no question", header(9, 0, [0, 0, 0, 0]), formerr),
        (
            "two questions",
            {
                let mut p = header(9, 0, [2, 0, 0, 0]);
                p.extend(question(WEB, 1));
                p.extend(question(WEB, 1));
                p
            },
            formerr,
        ),
        ("truncated name", ok[..20].to_vec(), formerr),
        ("missing type", ok[..ok.len() - 2].to_vec(), formerr),
        (
            "pointer in the question",
            {
                let mut p = header(9, 0, [1, 0, 0, 0]);
                p.extend(question(b"\xc0\x0c", 1));
                p
            },
            formerr,
        ),
        (
            "additional count past the end",
            {
                let mut p = ok.clone();
                p[11] = 1;
                p
            },
            formerr,
        ),
        (
            "two OPT records",
            {
                let mut p = ok.clone();
                p[11] = 2;
                p.extend([0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 0]);
                p.extend([0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 0]);
                p
            },
            formerr,
        ),
        (
            "OPT not at the root",
            {
                let mut p = ok.clone();
                p[11] = 1;
                p.extend([1, b'x', 0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 0]);
                p
            },
            formerr,
        ),
        (
            "NOTIFY",
            {
                let mut p = ok.clone();
                p[2] = 4 << 3;
                p
            },
            Malformed::Reply {
                id: 9,
                opcode: 4,
                flags: 0x2000,
                rcode: rcode::NOTIMP,
            },
        ),
    ];
    for (what, packet, want) in cases {
        assert_eq!(Request::parse(&packet).err(), Some(want), "{what}");
    }
}

#[test]
fn garbage_never_panics() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for len in 0..600 {
        let mut packet = Vec::with_capacity(len);
        for _ in 0..len {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            packet.push(seed as u8);
        }
        if packet.len() > 2 {
            packet[2] &= 0x7f;
        }
        let _ = Request::parse(&packet);
    }
}

#[test]
fn malformed_reply_echoes_header() {
    let mut out = Vec::new();
    write_malformed(0x1234, 0x0100, rcode::FORMERR, &mut out);
    assert_eq!(out, [0x12, 0x34, 0x81, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn loadbalance_shuffles_prepared_address_runs() {
    use crate::zone::RunData;
    use crate::zone::{Answer, Owner, Rcode, Run};
    let mut data = Vec::new();
    for i in 0..10u8 {
        crate::zone::rrset::write_rr_header(&mut data, 1, 30, 4);
        data.extend_from_slice(&[10, 0, 0, i]);
    }
    let mut answer = Answer {
        rcode: Rcode::NoError,
        zone: 0,
        answer: Default::default(),
        additional: Default::default(),
        chase: None,
    };
    answer.answer.push(Run {
        owner: Owner::Question,
        count: 10,
        data: RunData::Owned(data),
        holder: &[],
    });
    let mut packet = header(1, 0, [1, 0, 0, 0]);
    packet.extend(question(WEB, 1));
    let request = Request::parse(&packet).unwrap();
    let zone = crate::zone::tests_support::zone("cluster.local.");
    let mut seen = std::collections::HashSet::new();
    for _ in 0..20 {
        let mut out = Vec::new();
        write_answer(&request, &answer, &zone, 4096, true, &mut out);
        let reply = hickory_proto::op::Message::from_vec(&out).unwrap();
        let order: Vec<String> = reply.answers.iter().map(|r| r.data.to_string()).collect();
        assert_eq!(order.len(), 10);
        assert!(
            reply
                .answers
                .iter()
                .all(|r| r.name.to_string() == "Web.shop.svc.cluster.local.")
        );
        seen.insert(order);
    }
    assert!(seen.len() > 1);
    let mut out = Vec::new();
    write_answer(&request, &answer, &zone, 4096, false, &mut out);
    let reply = hickory_proto::op::Message::from_vec(&out).unwrap();
    assert_eq!(
        reply.answers[0].data.to_string(),
        "10.0.0.0",
        "no shuffle: prepared order"
    );
}

/// Bytes that look like nothing in particular, the same every run.
fn garbage(len: usize, seed: &mut u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed as u8
        })
        .collect()
}

#[test]
fn reads_the_header_and_the_question_name() {
    let mut packet = header(0xbeef, 0x7901, [1, 2, 3, 4]);
    packet.extend(question(WEB, 1));
    let read = Header::read(&packet).unwrap();
    assert_eq!(
        (read.id, read.flags, read.counts),
        (0xbeef, 0x7901, [1, 2, 3, 4])
    );
    assert_eq!((read.opcode(), read.rcode()), (15, 1));
    assert_eq!(Header::read(&packet[..11]), None);
    assert_eq!(question_name_end(&packet), Some(HEADER_LEN + WEB.len()));

    // Cut inside the name, a pointer, a reserved label type: no name.
    assert_eq!(question_name_end(&packet[..HEADER_LEN + 5]), None);
    assert_eq!(
        question_name_end(&packet[..HEADER_LEN + WEB.len() - 1]),
        None
    );
    for first in [0xc0, 0x40, 0x80] {
        let mut bent = packet.clone();
        bent[HEADER_LEN] = first;
        assert_eq!(question_name_end(&bent), None, "{first:#x}");
    }
    // 255 bytes is the longest name; 257 is too long.
    let mut longest = header(1, 0, [1, 0, 0, 0]);
    for _ in 0..4 {
        longest.push(62);
        longest.extend([b'a'; 62]);
    }
    longest.extend([1, b'b', 0]);
    assert_eq!(question_name_end(&longest), Some(HEADER_LEN + 255));
    let mut too_long = header(1, 0, [1, 0, 0, 0]);
    for _ in 0..4 {
        too_long.push(63);
        too_long.extend([b'a'; 63]);
    }
    too_long.push(0);
    assert_eq!(question_name_end(&too_long), None);
}

#[test]
fn a_query_is_asked_again_for_another_name() {
    // ID, flags with RD, CD and the Z bit, an OPT with payload 1232, DO and a cookie option.
    let mut packet = header(0x4242, 0x0150, [1, 0, 0, 1]);
    packet.extend(question(WEB, 28));
    let opt = [
        0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 12, 0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8,
    ];
    packet.extend(opt);
    let other = b"\x03web\x03svc\x07cluster\x05local\x00";
    let asked = query_for_name(&packet, other).unwrap();
    let mut expected = header(0x4242, 0x0150, [1, 0, 0, 1]);
    expected.extend(question(other, 28));
    expected.extend(opt);
    assert_eq!(asked, expected);
    let request = Request::parse(&asked).unwrap();
    assert_eq!(request.question.name(), other);
    assert_eq!(request.edns.unwrap().payload, 1232);

    // Without EDNS; a record in another section is left out.
    let mut plain = header(7, 0x0100, [1, 1, 0, 0]);
    plain.extend(question(WEB, 1));
    plain.extend([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 1]);
    let mut expected = header(7, 0x0100, [1, 0, 0, 0]);
    expected.extend(question(other, 1));
    assert_eq!(query_for_name(&plain, other).unwrap(), expected);

    // Not one readable question, or a record past the end: no query.
    let mut two = plain.clone();
    two[5] = 2;
    assert_eq!(query_for_name(&two, other), None);
    assert_eq!(query_for_name(&plain[..plain.len() - 1], other), None);
    assert_eq!(
        query_for_name(&plain[..HEADER_LEN + WEB.len() + 3], other),
        None
    );
}

#[test]
fn records_after_the_question_are_walked_with_their_fields() {
    let mut packet = header(1, 0x8180, [1, 1, 0, 1]);
    packet.extend(question(WEB, 1));
    packet.extend([0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 0, 0, 4, 10, 0, 0, 1]);
    packet.extend([0, 0, 41, 0x04, 0xd0, 0x01, 0, 0x80, 0, 0, 0]);
    let mut seen = Vec::new();
    let end = HEADER_LEN + WEB.len() + 4;
    reply::each_record_after(&packet, end, [1, 0, 1], |r| {
        seen.push((r.section, r.rtype, r.class, r.ttl));
    })
    .unwrap();
    assert_eq!(seen, [(1, 1, 1, 256), (3, 41, 1232, 0x0100_8000)]);
    // Cut: the records before the cut, then the error.
    seen.clear();
    let cut = reply::each_record_after(&packet[..packet.len() - 1], end, [1, 0, 1], |r| {
        seen.push((r.section, r.rtype, r.class, r.ttl));
    });
    assert_eq!((cut, seen.len()), (Err(reply::BadReply), 1));
}

#[test]
fn garbage_reads_as_nothing_without_a_panic() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let name = b"\x01x\x00";
    for len in 0..400 {
        let mut bytes = garbage(len, &mut seed);
        for qdcount in [None, Some(1u8)] {
            if let (Some(count), true) = (qdcount, bytes.len() >= HEADER_LEN) {
                bytes[4] = 0;
                bytes[5] = count;
            }
            let _ = Header::read(&bytes);
            let _ = question_name_end(&bytes);
            let _ = query_for_name(&bytes, name);
            let _ = Request::parse(&bytes);
            for at in [0, HEADER_LEN, len / 2, len, len + 3] {
                let _ = reply::each_record_after(&bytes, at, [3, 3, 3], |_| {});
            }
        }
    }
}

mod reply_for_another_question {
    use std::str::FromStr;

    use hickory_proto::op::{Edns as HEdns, Message, MessageType, OpCode, Query};
    use hickory_proto::rr::rdata::{A, CNAME, MX, NS, PTR, SOA, SRV, TXT};
    use hickory_proto::rr::{Name, RData, Record, RecordType};

    use super::super::{HEADER_LEN, query_for_name, reply_for_question};
    use super::garbage;

    fn name(text: &str) -> Name {
        Name::from_str(text).unwrap()
    }

    /// What autopath did before with hickory's codec: the reference the bytes are read
    /// against.
    fn decoded_reference(found: &[u8], query: &[u8], cname: bool) -> Message {
        let original = Message::from_vec(query).unwrap();
        let question = original.queries[0].clone();
        let mut message = Message::from_vec(found).unwrap();
        if cname
            && let Some(first) = message.answers.first()
            && first.name.to_lowercase() != question.name().to_lowercase()
        {
            let cname = Record::from_rdata(
                question.name().clone(),
                first.ttl,
                RData::CNAME(CNAME(first.name.clone())),
            );
            message.answers.insert(0, cname);
        }
        message.queries = vec![question];
        message
    }

    fn query(asked: &str) -> Vec<u8> {
        let mut m = Message::new(0x3131, MessageType::Query, OpCode::Query);
        m.metadata.recursion_desired = true;
        m.add_query(Query::query(name(asked), RecordType::A));
        let mut edns = HEdns::new();
        edns.set_max_payload(1232);
        m.edns = Some(edns);
        m.to_vec().unwrap()
    }

    fn reply(asked: &str, answers: Vec<Record>, authority: Vec<Record>, rcode: u16) -> Vec<u8> {
        let mut m = Message::new(0x3131, MessageType::Response, OpCode::Query);
        m.metadata.recursion_desired = true;
        m.metadata.response_code = hickory_proto::op::ResponseCode::from_low(rcode as u8);
        m.add_query(Query::query(name(asked), RecordType::A));
        for record in answers {
            m.add_answer(record);
        }
        for record in authority {
            m.add_authority(record);
        }
        let mut edns = HEdns::new();
        edns.set_max_payload(1232);
        m.edns = Some(edns);
        m.to_vec().unwrap()
    }

    fn record(owner: &str, data: RData) -> Record {
        Record::from_rdata(name(owner), 30, data)
    }

    #[test]
    fn reads_as_the_hickory_rewrite_did() {
        let client = "Web.Prod.svc.cluster.local.";
        let found_name = "web.svc.cluster.local.";
        let soa = RData::SOA(SOA::new(
            name("ns.dns.cluster.local."),
            name("hostmaster.cluster.local."),
            7,
            7200,
            1800,
            86400,
            5,
        ));
        let cases: Vec<(Vec<Record>, Vec<Record>, u16)> = vec![
            (
                vec![
                    record(found_name, RData::A(A::new(10, 0, 0, 1))),
                    record(found_name, RData::A(A::new(10, 0, 0, 2))),
                ],
                vec![],
                0,
            ),
            (
                vec![
                    record(found_name, RData::CNAME(CNAME(name("edge.example.net.")))),
                    record("edge.example.net.", RData::A(A::new(192, 0, 2, 1))),
                ],
                vec![record(
                    "example.net.",
                    RData::NS(NS(name("ns1.example.net."))),
                )],
                0,
            ),
            (vec![], vec![record("cluster.local.", soa)], 0),
            (
                vec![
                    record(
                        found_name,
                        RData::MX(MX::new(10, name("mail.svc.cluster.local."))),
                    ),
                    record(
                        found_name,
                        RData::SRV(SRV::new(0, 100, 80, name("web.svc.cluster.local."))),
                    ),
                    record(found_name, RData::PTR(PTR(name("WEB.svc.cluster.local.")))),
                    record(found_name, RData::TXT(TXT::new(vec!["hi".to_owned()]))),
                ],
                vec![],
                0,
            ),
            // The asked name answered itself, in another case: no CNAME.
            (
                vec![record(client, RData::A(A::new(10, 0, 0, 3)))],
                vec![],
                0,
            ),
        ];
        let query = query(client);
        for (case, (answers, authority, rcode)) in cases.into_iter().enumerate() {
            let found = reply(found_name, answers, authority, rcode);
            for cname in [false, true] {
                let ours = reply_for_question(&found, &query, cname).unwrap();
                let decoded = Message::from_vec(&ours).unwrap();
                let reference = decoded_reference(&found, &query, cname);
                assert_eq!(decoded.metadata, reference.metadata, "{case} {cname}");
                assert_eq!(decoded.queries, reference.queries, "{case} {cname}");
                assert_eq!(decoded.answers, reference.answers, "{case} {cname}");
                assert_eq!(decoded.authorities, reference.authorities, "{case} {cname}");
                assert_eq!(decoded.additionals, reference.additionals, "{case} {cname}");
                assert_eq!(decoded.edns, reference.edns, "{case} {cname}");
                // The client's question as asked, letter case included.
                assert_eq!(
                    &ours[HEADER_LEN..HEADER_LEN + 28],
                    &query[HEADER_LEN..HEADER_LEN + 28]
                );
                // Compressed no worse than hickory's own writing.
                let hickory = reference.to_vec().unwrap();
                assert!(
                    ours.len() <= hickory.len(),
                    "{case} {cname}: {} > {}",
                    ours.len(),
                    hickory.len()
                );
            }
        }
    }

    #[test]
    fn broken_replies_are_none_and_nothing_panics() {
        let query = query("web.prod.svc.cluster.local.");
        let found = reply(
            "web.svc.cluster.local.",
            vec![
                record(
                    "web.svc.cluster.local.",
                    RData::CNAME(CNAME(name("a.example."))),
                ),
                record("a.example.", RData::A(A::new(10, 0, 0, 1))),
            ],
            vec![],
            0,
        );
        assert!(reply_for_question(&found, &query, true).is_some());
        for len in 0..found.len() {
            assert_eq!(
                reply_for_question(&found[..len], &query, true),
                None,
                "{len}"
            );
        }
        for at in HEADER_LEN..found.len() {
            for byte in [0, 1, 5, 63, 64, 0xc0, 0xff] {
                let mut bent = found.clone();
                bent[at] = byte;
                let _ = reply_for_question(&bent, &query, true);
            }
        }
        // A pointer aimed forwards (or at itself) is not followed.
        let mut forwards = found.clone();
        let owner = forwards.iter().rposition(|&b| b == 0xc0).unwrap();
        forwards[owner + 1] = owner as u8;
        assert_eq!(reply_for_question(&forwards, &query, true), None);
        let mut seed = 0x1234_5678_9abc_def1u64;
        for len in 0..300 {
            let bytes = garbage(len, &mut seed);
            let _ = reply_for_question(&bytes, &query, true);
            let _ = reply_for_question(&found, &bytes, true);
            let _ = query_for_name(&bytes, b"\x00");
        }
    }
}

#[test]
fn a_record_that_does_not_read_leaves_the_rebuilt_message_as_it_was() {
    // A reply: question web..., a CNAME to edge.example. (written whole), an A for it.
    let mut found = header(5, 0x8180, [1, 2, 0, 0]);
    found.extend(question(WEB, 1));
    found.extend([0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 14]);
    let target = found.len();
    found.extend(b"\x04edge\x07example\x00");
    found.extend([
        0xc0,
        target as u8,
        0,
        1,
        0,
        1,
        0,
        0,
        0,
        60,
        0,
        4,
        10,
        0,
        0,
        1,
    ]);
    let records = reply::records(&found).unwrap();
    let question = &found[HEADER_LEN..HEADER_LEN + WEB.len() + 4];

    let mut whole = Rebuilt::new(&found, question, 1, 0).unwrap();
    whole.copy_section(&found, &records, 1).unwrap();
    let whole = whole.finish();
    let decoded = hickory_proto::op::Message::from_vec(&whole).unwrap();
    assert_eq!(decoded.answers.len(), 2);

    // The A record's owner points forwards at itself: the section goes in not at all, and
    // what follows is written (and compressed) as if it had never been tried.
    let mut bent = found.clone();
    let owner = bent.len() - 16;
    bent[owner + 1] = owner as u8;
    let bent_records = reply::records(&bent).unwrap();
    let mut rebuilt = Rebuilt::new(&found, question, 1, 0).unwrap();
    assert_eq!(rebuilt.copy_section(&bent, &bent_records, 1), None);
    rebuilt.copy_section(&found, &records, 1).unwrap();
    assert_eq!(rebuilt.finish(), whole);
}

#[test]
fn a_reply_written_from_records_echoes_the_query_and_ends_with_opt() {
    use hickory_proto::rr::rdata::{A, CNAME};
    use hickory_proto::rr::{Name, RData, Record};
    // RD and CD asked, a query with EDNS (payload 4096).
    let mut packet = header(0x1234, 0x0110, [1, 0, 0, 1]);
    packet.extend(question(WEB, 1));
    packet.extend([0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0]);
    let request = Request::parse(&packet).unwrap();
    let name = |text: &str| Name::from_ascii(text).unwrap();
    let alias = Record::from_rdata(
        name("Web.shop.svc.cluster.local."),
        30,
        RData::CNAME(CNAME(name("db.shop.svc.cluster.local."))),
    );
    let address = Record::from_rdata(
        name("db.shop.svc.cluster.local."),
        30,
        RData::A(A::new(10, 0, 0, 7)),
    );
    // BADVERS (16): the low bits in the header, the rest in OPT.
    let mut reply = Rebuilt::reply_to(&request, true, 16);
    reply.push_record(&alias, 1).unwrap();
    reply.push_record(&address, 1).unwrap();
    let bytes = reply.finish();
    let flags = u16::from_be_bytes([bytes[2], bytes[3]]);
    assert_eq!(
        flags,
        FLAG_QR | 0x0400 | 0x0110,
        "QR, AA, RD and CD; rcode 0 low"
    );
    assert_eq!(reply::counts(&bytes).unwrap(), [1, 2, 0, 1]);
    assert_eq!(
        &bytes[HEADER_LEN..HEADER_LEN + WEB.len()],
        WEB,
        "asked as spelt"
    );
    assert_eq!(reply::rcode(&bytes).unwrap(), 16);
    let decoded = hickory_proto::op::Message::from_vec(&bytes).unwrap();
    assert_eq!(decoded.answers, [alias, address]);
    // The answer's names point at the question's and at each other: compressed.
    assert!(bytes.len() < 12 + WEB.len() + 4 + 2 * 12 + 4 + 2 + 4 + 11 + 8);
    // Without EDNS in the query, no OPT; without_opt drops it.
    let plain = {
        let mut packet = header(1, 0, [1, 0, 0, 0]);
        packet.extend(question(WEB, 1));
        packet
    };
    let plain = Request::parse(&plain).unwrap();
    assert_eq!(
        reply::counts(&Rebuilt::reply_to(&plain, false, 3).finish()).unwrap(),
        [1, 0, 0, 0]
    );
    let without = Rebuilt::reply_to(&request, false, 0).without_opt().finish();
    assert_eq!(reply::counts(&without).unwrap(), [1, 0, 0, 0]);
    // What is not one record is refused, and leaves nothing behind.
    let mut reply = Rebuilt::reply_to(&plain, false, 0);
    assert_eq!(reply.push(&[3, b'w', b'e', b'b', 0, 0, 1], 1), None);
    assert_eq!(reply::counts(&reply.finish()).unwrap(), [1, 0, 0, 0]);
}

#[test]
fn an_edited_copy_changes_the_owner_the_value_and_the_ttl() {
    use hickory_proto::rr::rdata::{MX, NAPTR, SRV, TXT};
    use hickory_proto::rr::{Name, RData, Record};
    let name = |text: &str| Name::from_ascii(text).unwrap();
    let records = [
        RData::SRV(SRV::new(0, 0, 80, name("web.old."))),
        RData::MX(MX::new(10, name("mail.old."))),
        RData::NAPTR(NAPTR::new(
            100,
            10,
            b"S".to_vec().into_boxed_slice(),
            b"SIP+D2U".to_vec().into_boxed_slice(),
            Box::default(),
            name("_sip._udp.old."),
        )),
        RData::TXT(TXT::new(vec!["x.old.".to_owned()])),
    ];
    let new_owner = b"\x01n\x07example\x00";
    let new_value = b"\x03new\x00";
    for rdata in records {
        let record = Record::from_rdata(name("q.example."), 60, rdata.clone());
        let mut plain = header(1, 0, [1, 0, 0, 0]);
        plain.extend(question(b"\x01q\x07example\x00", 1));
        let request = Request::parse(&plain).unwrap();
        let mut from = Rebuilt::reply_to(&request, false, 0);
        from.push_record(&record, 1).unwrap();
        let from = from.finish();
        let at = reply::records(&from).unwrap()[0];
        let mut copy = Rebuilt::new(&from, &from[HEADER_LEN..HEADER_LEN + 15], 1, 0).unwrap();
        let edit = Edit {
            owner: Some(new_owner),
            value: Some(new_value),
            ttl: Some(5),
        };
        copy.copy_edited(&from, &at, 2, &edit).unwrap();
        let copy = copy.finish();
        assert_eq!(reply::counts(&copy).unwrap(), [1, 0, 1, 0]);
        let decoded = hickory_proto::op::Message::from_vec(&copy).unwrap();
        let got = &decoded.authorities[0];
        assert_eq!((got.name.to_ascii(), got.ttl), ("n.example.".to_owned(), 5));
        let expected = match rdata {
            RData::SRV(srv) => RData::SRV(SRV::new(0, 0, srv.port, name("new."))),
            RData::MX(mx) => RData::MX(MX::new(mx.preference, name("new."))),
            RData::NAPTR(naptr) => RData::NAPTR(NAPTR::new(
                naptr.order,
                naptr.preference,
                naptr.flags,
                naptr.services,
                naptr.regexp,
                name("new."),
            )),
            // A type without a value keeps its RDATA.
            other => other,
        };
        assert_eq!(got.data, expected);
    }
}

#[test]
fn our_own_queries_ask_one_question_in_class_in() {
    let query = write_query(0x4c50, 0x0100, WEB, 13);
    let request = Request::parse(&query).unwrap();
    assert_eq!((request.id, request.flags), (0x4c50, 0x0100));
    assert_eq!(request.question.qtype, 13);
    assert_eq!(request.question.qclass, 1);
    assert_eq!(request.question_bytes(), question(WEB, 13));
}
