//! Just enough of a DNS message to forward it: the query's question and EDNS payload size,
//! and whether a reply answers that question (ID, QR, opcode, question) with which rcode.
//!
//! The client's bytes are forwarded as they are; nothing here builds or rewrites a message
//! beyond its ID and, for a reply too big for the client, a truncated header. Every read is
//! bounds-checked: garbage from an upstream is a mismatch or [`ReplyCheck::Malformed`], never a
//! panic.
//!
//! The reading itself is [`crate::wire`]'s: the header, the question's name, the walk over
//! the records; what is forward's own is matching a reply to the query it answers.

use crate::codes::rtype::{NS as TYPE_NS, OPT as TYPE_OPT};
use crate::wire::reply::each_record_after;
pub(super) use crate::wire::reply::set_id;
use crate::wire::{
    FLAG_CD, FLAG_QR, FLAG_RD, FLAG_TC, HEADER_LEN, Header, OPCODE_BITS, RCODE_BITS, Request,
    UDP_MIN_PAYLOAD, question_name_end,
};

/// What forwarding needs to know about a client's query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct QueryInfo {
    /// The client's message ID, restored in the reply.
    pub id: u16,
    /// The opcode, which a reply must echo.
    pub opcode: u8,
    /// End of the question section: `query[HEADER_LEN..question_end]` is the question.
    pub question_end: usize,
    /// The largest reply the client takes over UDP (its EDNS payload size, at least 512).
    pub udp_limit: usize,
}

impl QueryInfo {
    /// What [`parse_query`] reads, from a query the server has parsed.
    pub(super) fn of(request: &Request<'_>) -> Self {
        Self {
            id: request.id,
            opcode: request.opcode,
            question_end: request.question.end(),
            udp_limit: request.edns.map_or(UDP_MIN_PAYLOAD, |edns| {
                edns.payload
                    .clamp(UDP_MIN_PAYLOAD, crate::wire::MAX_UDP_REPLY)
            }) as usize,
        }
    }
}

/// Parses the header, the single question and the OPT record of a query; `None` when it is
/// not a query with exactly one question (the server rejects those before forwarding).
pub(super) fn parse_query(query: &[u8]) -> Option<QueryInfo> {
    let header = Header::read(query)?;
    if header.flags & FLAG_QR != 0 || header.counts[0] != 1 {
        return None;
    }
    let question_end = question_name_end(query)? + 4;
    if question_end > query.len() {
        return None;
    }
    let mut udp_limit = UDP_MIN_PAYLOAD;
    let [_, answers, authority, additional] = header.counts;
    each_record_after(
        query,
        question_end,
        [answers, authority, additional],
        |record| {
            if record.section == 3 && record.rtype == TYPE_OPT {
                // The client's payload, within what clusterdns sends over UDP at all.
                udp_limit = record
                    .class
                    .clamp(UDP_MIN_PAYLOAD, crate::wire::MAX_UDP_REPLY);
            }
        },
    )
    .ok()?;
    Some(QueryInfo {
        id: header.id,
        opcode: header.opcode(),
        question_end,
        udp_limit: usize::from(udp_limit),
    })
}

/// What a reply read from an upstream is, for the query it was meant to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReplyCheck {
    /// Not the reply to this query (another ID, not a response, another question): discard
    /// it and keep reading.
    Mismatch,
    /// The reply, with its (extended) rcode and TC bit.
    Match(ReplyInfo),
    /// The header and question match but the records do not parse.
    Malformed,
    /// The upstream could not read the query: an error rcode, no question echoed (RFC 1035
    /// §4.1.1 lets a FORMERR leave it out). The client is answered with this rcode and its
    /// own question ([`error_reply`]), at once, as CoreDNS does.
    Questionless(ReplyInfo),
}

/// The parts of a matching reply that decide what happens next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ReplyInfo {
    /// The rcode, extended with the OPT record's upper bits (RFC 6891).
    pub rcode: u16,
    /// The TC bit.
    pub truncated: bool,
}

/// Whether `reply` answers `query` (sent with ID `id`): same ID, QR set, same opcode, one
/// question equal to the query's (the name compared case-insensitively, as CoreDNS does).
pub(super) fn check_reply(reply: &[u8], id: u16, query: &[u8], info: &QueryInfo) -> ReplyCheck {
    let Some(header) = Header::read(reply) else {
        return ReplyCheck::Mismatch;
    };
    if header.id != id || header.flags & FLAG_QR == 0 || header.opcode() != info.opcode {
        return ReplyCheck::Mismatch;
    }
    let rcode = header.rcode();
    if header.counts[0] == 0 && rcode != 0 {
        return ReplyCheck::Questionless(ReplyInfo {
            rcode,
            truncated: false,
        });
    }
    if header.counts[0] != 1 {
        return ReplyCheck::Mismatch;
    }
    let question = &query[HEADER_LEN..info.question_end];
    match reply.get(HEADER_LEN..info.question_end) {
        Some(echoed) if echoed.eq_ignore_ascii_case(question) => {}
        _ => return ReplyCheck::Mismatch,
    }
    let truncated = header.flags & FLAG_TC != 0;
    let mut rcode = header.rcode();
    let [_, answers, authority, additional] = header.counts;
    let walked = each_record_after(
        reply,
        info.question_end,
        [answers, authority, additional],
        |record| {
            if record.section == 3 && record.rtype == TYPE_OPT {
                rcode |= u16::from(record.ttl.to_be_bytes()[0]) << 4;
            }
        },
    );
    // A truncated reply may be cut anywhere; it is retried over TCP or handed back as
    // truncated, so its records do not matter.
    if walked.is_err() && !truncated {
        return ReplyCheck::Malformed;
    }
    ReplyCheck::Match(ReplyInfo { rcode, truncated })
}

/// A reply to `query` (sent with ID `id`) with `rcode` and nothing but the question: what a
/// [`ReplyCheck::Questionless`] upstream reply becomes.
pub(super) fn error_reply(query: &[u8], info: &QueryInfo, id: u16, rcode: u16) -> Vec<u8> {
    let mut reply = query[..info.question_end].to_vec();
    set_id(&mut reply, id);
    let flags = u16::from_be_bytes([query[2], query[3]]);
    // QR, the query's opcode and RD (and CD), the rcode; no AA, TC, RA or AD.
    let flags = FLAG_QR
        | (flags & OPCODE_BITS)
        | (flags & FLAG_RD)
        | (flags & FLAG_CD)
        | (rcode & RCODE_BITS);
    reply[2..4].copy_from_slice(&flags.to_be_bytes());
    reply[4..12].copy_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    reply
}

/// Whether `reply` is any response to the health check sent with ID `id`: CoreDNS counts
/// every response (SERVFAIL, REFUSED, ...) as a healthy upstream.
pub(super) fn is_response_to(reply: &[u8], id: u16) -> bool {
    Header::read(reply).is_some_and(|header| header.id == id && header.flags & FLAG_QR != 0)
}

/// The health check query: `name IN NS`, RD when `recursion_desired`; the ID is set per
/// check. `name` is in wire format.
pub(super) fn health_check_query(name: &[u8], recursion_desired: bool) -> Vec<u8> {
    let flags = if recursion_desired { FLAG_RD } else { 0 };
    crate::wire::write_query(0, flags, name, TYPE_NS)
}

/// Cuts a matching reply down to its header and question with TC set, for a UDP client
/// whose payload size it exceeds (the client retries over TCP).
pub(super) fn truncate(reply: &mut Vec<u8>, info: &QueryInfo) {
    reply.truncate(info.question_end);
    if let Some(flags) = reply.get_mut(2) {
        *flags |= (FLAG_TC >> 8) as u8;
    }
    if let Some(counts) = reply.get_mut(6..HEADER_LEN) {
        counts.fill(0);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// `www.example.org. A`, ID 0x1234, RD, with an OPT record (payload 1232, DO) when
    /// `edns`.
    fn query(edns: bool) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, u8::from(edns)];
        q.extend_from_slice(b"\x03www\x07example\x03org\x00\x00\x01\x00\x01");
        if edns {
            q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0]);
        }
        q
    }

    /// A reply to `query(false)` with ID `id`, rcode `rcode` and one A record (compressed
    /// owner), plus an OPT with extended rcode bits `ext` when given.
    fn reply(id: u16, rcode: u8, ext: Option<u8>) -> Vec<u8> {
        let mut r = query(false);
        r[..2].copy_from_slice(&id.to_be_bytes());
        r[2] = 0x81;
        r[3] = 0x80 | rcode;
        r[7] = 1;
        r.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]);
        if let Some(ext) = ext {
            r[11] = 1;
            r.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, ext, 0, 0, 0, 0, 0]);
        }
        r
    }

    #[test]
    fn query_info_reads_the_question_and_payload() {
        let plain = parse_query(&query(false)).unwrap();
        assert_eq!(plain.id, 0x1234);
        assert_eq!(plain.question_end, 12 + 17 + 4);
        assert_eq!(plain.udp_limit, 512);
        assert_eq!(parse_query(&query(true)).unwrap().udp_limit, 1232);
    }

    #[test]
    fn bad_queries_are_refused() {
        assert_eq!(parse_query(&[0; 11]), None);
        let mut response = query(false);
        response[2] |= 0x80;
        assert_eq!(parse_query(&response), None);
        let mut cut = query(true);
        cut.pop();
        assert_eq!(parse_query(&cut), None);
    }

    #[test]
    fn replies_match_on_id_response_and_question() {
        let q = query(false);
        let info = parse_query(&q).unwrap();
        let ok = ReplyCheck::Match(ReplyInfo {
            rcode: 0,
            truncated: false,
        });
        assert_eq!(check_reply(&reply(7, 0, None), 7, &q, &info), ok);
        assert_eq!(
            check_reply(&reply(8, 0, None), 7, &q, &info),
            ReplyCheck::Mismatch
        );
        let mut upper = reply(7, 0, None);
        upper[13..16].copy_from_slice(b"WWW");
        assert_eq!(check_reply(&upper, 7, &q, &info), ok);
        let mut other = reply(7, 0, None);
        other[13] = b'x';
        assert_eq!(check_reply(&other, 7, &q, &info), ReplyCheck::Mismatch);
        let mut aaaa = reply(7, 0, None);
        aaaa[31] = 28;
        assert_eq!(check_reply(&aaaa, 7, &q, &info), ReplyCheck::Mismatch);
        let mut not_response = reply(7, 0, None);
        not_response[2] &= 0x7f;
        assert_eq!(
            check_reply(&not_response, 7, &q, &info),
            ReplyCheck::Mismatch
        );
    }

    #[test]
    fn the_rcode_includes_the_opt_upper_bits() {
        let q = query(false);
        let info = parse_query(&q).unwrap();
        let ReplyCheck::Match(got) = check_reply(&reply(7, 0, Some(1)), 7, &q, &info) else {
            panic!("no match");
        };
        assert_eq!(got.rcode, 16);
        let ReplyCheck::Match(got) = check_reply(&reply(7, 3, None), 7, &q, &info) else {
            panic!("no match");
        };
        assert_eq!(got.rcode, 3);
    }

    #[test]
    fn broken_records_are_malformed_unless_truncated() {
        let q = query(false);
        let info = parse_query(&q).unwrap();
        let mut cut = reply(7, 0, None);
        cut.truncate(cut.len() - 2);
        assert_eq!(check_reply(&cut, 7, &q, &info), ReplyCheck::Malformed);
        cut[2] |= 0x02;
        assert!(matches!(
            check_reply(&cut, 7, &q, &info),
            ReplyCheck::Match(ReplyInfo {
                truncated: true,
                ..
            })
        ));
    }

    #[test]
    fn no_input_panics() {
        let q = query(true);
        let info = parse_query(&q).unwrap();
        let full = reply(7, 0, Some(0));
        for len in 0..=full.len() {
            let _ = check_reply(&full[..len], 7, &q, &info);
            let _ = parse_query(&full[..len]);
            let _ = is_response_to(&full[..len], 7);
        }
        for byte in 0..=255u8 {
            let mut bent = full.clone();
            for at in 0..bent.len() {
                bent[at] = byte;
                let _ = check_reply(&bent, 7, &q, &info);
            }
        }
    }

    #[test]
    fn truncation_keeps_the_question_and_sets_tc() {
        let q = query(false);
        let info = parse_query(&q).unwrap();
        let mut r = reply(7, 0, None);
        truncate(&mut r, &info);
        assert_eq!(r.len(), info.question_end);
        assert_eq!(r[2] & 0x02, 0x02);
        assert_eq!(&r[6..12], &[0; 6]);
    }

    #[test]
    fn health_check_query_is_ns_with_or_without_rd() {
        let rd = health_check_query(b"\x00", true);
        assert_eq!(rd, [0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1]);
        assert_eq!(health_check_query(b"\x00", false)[2], 0);
    }
}
