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
