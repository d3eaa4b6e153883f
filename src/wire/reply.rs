//! Working on whole replies that came from elsewhere (an upstream, the cache): walking their
//! records, rewriting ID and TTLs in place, fitting them to what the client accepts.
//!
//! Compression pointers only point backwards, so cutting a message at a section boundary
//! never leaves a dangling pointer; rewriting a TTL never moves a byte.

use super::{Edns, FLAG_TC, HEADER_LEN, RCODE_BITS, skip_name};
use crate::codes::rtype;

/// One record's position in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordAt {
    /// Section: 1 answer, 2 authority, 3 additional.
    pub section: u8,
    /// Offset of the owner name.
    pub start: usize,
    /// Offset of TYPE (after the owner name).
    pub fixed: usize,
    /// Offset just past the RDATA.
    pub end: usize,
    /// TYPE.
    pub rtype: u16,
}

/// Why a message could not be walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed DNS message")]
pub struct BadReply;

/// The section counts of a message: question, answer, authority, additional.
pub fn counts(message: &[u8]) -> Result<[u16; 4], BadReply> {
    if message.len() < HEADER_LEN {
        return Err(BadReply);
    }
    let count = |at: usize| u16::from_be_bytes([message[at], message[at + 1]]);
    Ok([count(4), count(6), count(8), count(10)])
}

/// Every record of the message, in order, after the question section.
pub fn records(message: &[u8]) -> Result<Vec<RecordAt>, BadReply> {
    let [questions, answers, authority, additional] = counts(message)?;
    let mut at = HEADER_LEN;
    for _ in 0..questions {
        at = skip_name(message, at).ok_or(BadReply)? + 4;
    }
    let mut out = Vec::with_capacity(usize::from(answers + authority + additional));
    for (section, count) in [(1u8, answers), (2, authority), (3, additional)] {
        for _ in 0..count {
            let start = at;
            let fixed = skip_name(message, at).ok_or(BadReply)?;
            let header = message.get(fixed..fixed + 10).ok_or(BadReply)?;
            let rtype = u16::from_be_bytes([header[0], header[1]]);
            let rdlen = usize::from(u16::from_be_bytes([header[8], header[9]]));
            let end = fixed + 10 + rdlen;
            if end > message.len() {
                return Err(BadReply);
            }
            out.push(RecordAt {
                section,
                start,
                fixed,
                end,
                rtype,
            });
            at = end;
        }
    }
    Ok(out)
}

/// The rcode of a message, with the extended bits of its OPT record.
pub fn rcode(message: &[u8]) -> Result<u16, BadReply> {
    if message.len() < HEADER_LEN {
        return Err(BadReply);
    }
    let low = u16::from(message[3]) & RCODE_BITS;
    let high = records(message)?
        .iter()
        .find(|r| r.section == 3 && r.rtype == rtype::OPT)
        .map_or(0, |opt| u16::from(message[opt.fixed + 4]));
    Ok(high << 4 | low)
}

/// Sets the message ID.
pub fn set_id(message: &mut [u8], id: u16) {
    if message.len() >= 2 {
        message[..2].copy_from_slice(&id.to_be_bytes());
    }
}

/// Sets the TTL of every record but OPT to `ttl`.
pub fn set_ttls(message: &mut [u8], ttl: u32) -> Result<(), BadReply> {
    for record in records(message)? {
        if record.rtype != rtype::OPT {
            message[record.fixed + 4..record.fixed + 8].copy_from_slice(&ttl.to_be_bytes());
        }
    }
    Ok(())
}

/// The smallest TTL of the message's records (OPT aside), and for a negative answer the SOA's
/// MINIMUM when smaller (RFC 2308).
pub fn min_ttl(message: &[u8]) -> Result<Option<u32>, BadReply> {
    let mut min: Option<u32> = None;
    for record in records(message)? {
        if record.rtype == rtype::OPT {
            continue;
        }
        let t = &message[record.fixed + 4..record.fixed + 8];
        let mut ttl = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
        if record.rtype == rtype::SOA && record.section == 2 && record.end >= 4 {
            let m = &message[record.end - 4..record.end];
            ttl = ttl.min(u32::from_be_bytes([m[0], m[1], m[2], m[3]]));
        }
        min = Some(min.map_or(ttl, |min| min.min(ttl)));
    }
    Ok(min)
}

/// Rewrites the reply for a client: its ID, its EDNS (the upstream's OPT replaced by an echo
/// of the client's, or removed), and cut to `limit` bytes — the additional RRsets that do
/// not fit first, then everything but the question with TC set.
pub fn fit_for_client(
    message: &[u8],
    id: u16,
    edns: Option<&Edns>,
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(), BadReply> {
    let records = records(message)?;
    let rcode = rcode(message)?;
    let question_end = records.first().map_or(message.len(), |r| r.start);
    let additional_start = records
        .iter()
        .find(|r| r.section == 3)
        .map_or(message.len(), |r| r.start);
    let [questions, answers, authority, _] = counts(message)?;

    out.clear();
    out.extend_from_slice(&message[..additional_start]);
    let opt_len = if edns.is_some() { 11 } else { 0 };
    // The additional section is optional: the RRsets that fit, in order, without TC
    // (RFC 2181 §9). A record may point at a name in one before it, so what goes is a tail.
    let mut additional = 0u16;
    let mut set_start = (out.len(), additional);
    let mut set_key: Option<(Vec<u8>, u16)> = None;
    for record in records
        .iter()
        .filter(|r| r.section == 3 && r.rtype != rtype::OPT)
    {
        let key = (owner(message, record.start), record.rtype);
        if set_key.as_ref() != Some(&key) {
            set_start = (out.len(), additional);
            set_key = Some(key);
        }
        out.extend_from_slice(&message[record.start..record.end]);
        additional += 1;
        if out.len() + opt_len > limit {
            out.truncate(set_start.0);
            additional = set_start.1;
            break;
        }
    }
    let mut counts = [questions, answers, authority, additional];
    let mut truncated = false;
    if out.len() + opt_len > limit {
        out.truncate(question_end);
        counts = [questions, 0, 0, 0];
        truncated = true;
    }
    if let Some(edns) = edns {
        out.push(0);
        out.extend_from_slice(&rtype::OPT.to_be_bytes());
        out.extend_from_slice(&edns.payload.to_be_bytes());
        let extended = u32::from(rcode >> 4) << 24;
        let dnssec_ok = if edns.dnssec_ok { 0x8000 } else { 0 };
        out.extend_from_slice(&(extended | dnssec_ok).to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        counts[3] += 1;
    }
    set_id(out, id);
    if truncated {
        out[2] |= FLAG_TC.to_be_bytes()[0];
    }
    for (index, count) in counts.iter().enumerate() {
        out[4 + index * 2..6 + index * 2].copy_from_slice(&count.to_be_bytes());
    }
    Ok(())
}

/// The owner name of the record at `at`, pointers followed, lower case (empty when it does
/// not decode).
fn owner(message: &[u8], mut at: usize) -> Vec<u8> {
    let mut name = Vec::new();
    // Each pointer must go backwards, so this ends.
    let mut limit = at;
    loop {
        let Some(&len) = message.get(at) else {
            return Vec::new();
        };
        match len {
            0 => return name,
            1..=63 => {
                let Some(label) = message.get(at..at + 1 + usize::from(len)) else {
                    return Vec::new();
                };
                name.extend(label.iter().map(u8::to_ascii_lowercase));
                at += 1 + usize::from(len);
            }
            0xc0..=0xff => {
                let Some(&low) = message.get(at + 1) else {
                    return Vec::new();
                };
                let target = usize::from(u16::from_be_bytes([len & 0x3f, low]));
                if target >= limit {
                    return Vec::new();
                }
                limit = target;
                at = target;
            }
            _ => return Vec::new(),
        }
    }
}

/// The *loadbalance* plugin on a reply from elsewhere (CoreDNS `roundRobin`, per section):
/// CNAMEs first, then other records, then the A and AAAA records shuffled, then MX shuffled.
/// Decoded and encoded again, since moving compressed records in place could leave a
/// pointer aimed at a name that now comes later. `None` when there is nothing to shuffle
/// (or the message does not decode).
pub fn shuffle(message: &[u8]) -> Option<Vec<u8>> {
    use hickory_proto::rr::RecordType;
    let many = |rtypes: &[RecordType], records: &[hickory_proto::rr::Record]| {
        records
            .iter()
            .filter(|r| rtypes.contains(&r.record_type()))
            .count()
            > 1
    };
    let mut decoded = hickory_proto::op::Message::from_vec(message).ok()?;
    let shufflable = [RecordType::A, RecordType::AAAA, RecordType::MX];
    if ![&decoded.answers, &decoded.authorities, &decoded.additionals]
        .iter()
        .any(|section| many(&shufflable, section))
    {
        return None;
    }
    for section in [
        &mut decoded.answers,
        &mut decoded.authorities,
        &mut decoded.additionals,
    ] {
        let records = std::mem::take(section);
        let (mut cname, mut address, mut mx, mut rest) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for record in records {
            match record.record_type() {
                RecordType::CNAME => cname.push(record),
                RecordType::A | RecordType::AAAA => address.push(record),
                RecordType::MX => mx.push(record),
                _ => rest.push(record),
            }
        }
        fastrand::shuffle(&mut address);
        fastrand::shuffle(&mut mx);
        section.extend(cname.into_iter().chain(rest).chain(address).chain(mx));
    }
    decoded.to_vec().ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::str::FromStr;

    use hickory_proto::op::{Edns as HEdns, Message, MessageType, OpCode, Query};
    use hickory_proto::rr::rdata::{A, CNAME, SOA};
    use hickory_proto::rr::{Name, RData, Record, RecordType};

    use super::*;

    fn reply(answers: usize, with_opt: bool) -> Vec<u8> {
        let name = Name::from_str("www.example.com.").unwrap();
        let mut m = Message::new(7, MessageType::Response, OpCode::Query);
        m.add_query(Query::query(name.clone(), RecordType::A));
        let cname = Name::from_str("edge.example.net.").unwrap();
        m.add_answer(Record::from_rdata(
            name,
            300,
            RData::CNAME(CNAME(cname.clone())),
        ));
        for i in 0..answers {
            m.add_answer(Record::from_rdata(
                cname.clone(),
                60 + i as u32,
                RData::A(A::new(192, 0, 2, i as u8)),
            ));
        }
        m.add_additional(Record::from_rdata(
            cname,
            30,
            RData::A(A::new(198, 51, 100, 1)),
        ));
        if with_opt {
            let mut edns = HEdns::new();
            edns.set_max_payload(4096);
            m.edns = Some(edns);
        }
        m.to_vec().unwrap()
    }

    #[test]
    fn walks_records_through_compression() {
        let bytes = reply(3, true);
        let found = records(&bytes).unwrap();
        let types: Vec<(u8, u16)> = found.iter().map(|r| (r.section, r.rtype)).collect();
        assert_eq!(types, [(1, 5), (1, 1), (1, 1), (1, 1), (3, 1), (3, 41)]);
        assert_eq!(min_ttl(&bytes).unwrap(), Some(30));
    }

    #[test]
    fn ttls_and_id_are_rewritten_in_place() {
        let mut bytes = reply(2, true);
        set_ttls(&mut bytes, 17).unwrap();
        set_id(&mut bytes, 0xabcd);
        let m = Message::from_vec(&bytes).unwrap();
        assert_eq!(m.metadata.id, 0xabcd);
        assert!(m.answers.iter().chain(&m.additionals).all(|r| r.ttl == 17));
        assert_eq!(m.edns.unwrap().max_payload(), 4096, "OPT untouched");
    }

    #[test]
    fn fitting_replaces_opt_and_truncates_safely() {
        let bytes = reply(2, true);
        let mut out = Vec::new();
        let client = Edns {
            payload: 1232,
            version: 0,
            dnssec_ok: true,
        };
        fit_for_client(&bytes, 9, Some(&client), 1232, &mut out).unwrap();
        let m = Message::from_vec(&out).unwrap();
        assert_eq!(
            (m.metadata.id, m.answers.len(), m.additionals.len()),
            (9, 3, 1)
        );
        let edns = m.edns.unwrap();
        assert_eq!((edns.max_payload(), edns.flags().dnssec_ok), (1232, true));

        fit_for_client(&bytes, 9, None, 512, &mut out).unwrap();
        let m = Message::from_vec(&out).unwrap();
        assert!(m.edns.is_none() && !m.metadata.truncation);

        // Too big for 512: the glue goes first, then everything with TC.
        let big = reply(40, false);
        fit_for_client(&big, 9, None, 512, &mut out).unwrap();
        let m = Message::from_vec(&out).unwrap();
        assert!(m.metadata.truncation && m.answers.is_empty());
        assert_eq!(m.queries.len(), 1);
        let medium = reply(24, false);
        fit_for_client(&medium[..], 9, None, medium.len() - 1, &mut out).unwrap();
        let m = Message::from_vec(&out).unwrap();
        assert!(!m.metadata.truncation && m.additionals.is_empty() && m.answers.len() == 25);
    }

    #[test]
    fn fitting_keeps_the_glue_rrsets_that_fit() {
        // Four glue RRsets (one name each, two A records apiece) after one answer.
        let name = Name::from_str("www.example.com.").unwrap();
        let mut m = Message::new(7, MessageType::Response, OpCode::Query);
        m.add_query(Query::query(name.clone(), RecordType::A));
        m.add_answer(Record::from_rdata(name, 60, RData::A(A::new(192, 0, 2, 1))));
        for host in 0..4u8 {
            let owner = Name::from_str(&format!("ns{host}.glue-for-a-long-name.example.")).unwrap();
            for last in 0..2u8 {
                m.add_additional(Record::from_rdata(
                    owner.clone(),
                    30,
                    RData::A(A::new(198, 51, 100, host * 10 + last)),
                ));
            }
        }
        let bytes = m.to_vec().unwrap();
        let mut out = Vec::new();
        // Room for all but the last record: the last RRset goes whole, its first record too.
        fit_for_client(&bytes, 9, None, bytes.len() - 1, &mut out).unwrap();
        let fitted = Message::from_vec(&out).unwrap();
        assert!(!fitted.metadata.truncation);
        assert_eq!((fitted.answers.len(), fitted.additionals.len()), (1, 6));
        assert_eq!(fitted.additionals[..], m.additionals[..6]);
    }

    #[test]
    fn negative_ttl_takes_the_soa_minimum() {
        let zone = Name::from_str("example.com.").unwrap();
        let mut m = Message::new(1, MessageType::Response, OpCode::Query);
        m.add_query(Query::query(
            Name::from_str("x.example.com.").unwrap(),
            RecordType::A,
        ));
        m.add_authority(Record::from_rdata(
            zone.clone(),
            3600,
            RData::SOA(SOA::new(zone.clone(), zone, 1, 7200, 1800, 86400, 60)),
        ));
        assert_eq!(min_ttl(&m.to_vec().unwrap()).unwrap(), Some(60));
    }

    #[test]
    fn shuffle_keeps_cnames_first_and_the_record_set() {
        let bytes = reply(8, true);
        let original = Message::from_vec(&bytes).unwrap();
        let mut orders = std::collections::HashSet::new();
        for _ in 0..20 {
            let shuffled = Message::from_vec(&shuffle(&bytes).unwrap()).unwrap();
            assert_eq!(shuffled.answers[0].record_type(), RecordType::CNAME);
            let mut a: Vec<_> = shuffled
                .answers
                .iter()
                .map(|r| r.data.to_string())
                .collect();
            orders.insert(a.clone());
            let mut b: Vec<_> = original
                .answers
                .iter()
                .map(|r| r.data.to_string())
                .collect();
            a.sort();
            b.sort();
            assert_eq!(a, b);
        }
        assert!(orders.len() > 1, "the order changes");
        assert_eq!(
            shuffle(&reply(1, false)),
            None,
            "one address: nothing to do"
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect();
            let _ = records(&bytes);
            let _ = fit_for_client(&bytes, 1, None, 512, &mut Vec::new());
            let mut copy = bytes.clone();
            let _ = set_ttls(&mut copy, 1);
        }
    }
}
