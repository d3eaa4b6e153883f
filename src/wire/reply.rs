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
    /// CLASS (an OPT record's: the sender's UDP payload size).
    pub class: u16,
    /// TTL (an OPT record's: the extended rcode, version and flags).
    pub ttl: u32,
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
    let mut out = Vec::new();
    each_record(message, |record| out.push(record))?;
    Ok(out)
}

/// Calls `f` with every record of the message, in order, after the question section: the
/// walk of [`records`] without collecting them, for the paths that must not allocate.
pub fn each_record(message: &[u8], f: impl FnMut(RecordAt)) -> Result<(), BadReply> {
    let [_, answers, authority, additional] = counts(message)?;
    each_record_after(
        message,
        question_end(message)?,
        [answers, authority, additional],
        f,
    )
}

/// Calls `f` with every record of the message from offset `at` on (where the question
/// section ends), `counts` of them in the answer, authority and additional sections: the
/// walk of [`each_record`] for a caller that has read the header and question itself. A
/// record that runs past the end is an error, after `f` has had the ones before it.
pub(crate) fn each_record_after(
    message: &[u8],
    mut at: usize,
    counts: [u16; 3],
    mut f: impl FnMut(RecordAt),
) -> Result<(), BadReply> {
    for (section, count) in [1u8, 2, 3].into_iter().zip(counts) {
        for _ in 0..count {
            let start = at;
            let fixed = skip_name(message, at).ok_or(BadReply)?;
            let header = message.get(fixed..fixed + 10).ok_or(BadReply)?;
            let rdlen = usize::from(u16::from_be_bytes([header[8], header[9]]));
            let end = fixed + 10 + rdlen;
            if end > message.len() {
                return Err(BadReply);
            }
            f(RecordAt {
                section,
                start,
                fixed,
                end,
                rtype: u16::from_be_bytes([header[0], header[1]]),
                class: u16::from_be_bytes([header[2], header[3]]),
                ttl: u32::from_be_bytes([header[4], header[5], header[6], header[7]]),
            });
            at = end;
        }
    }
    Ok(())
}

/// Where the question section ends (the first record, or the end of the message).
pub(crate) fn question_end(message: &[u8]) -> Result<usize, BadReply> {
    let [questions, ..] = counts(message)?;
    let mut at = HEADER_LEN;
    for _ in 0..questions {
        at = skip_name(message, at).ok_or(BadReply)? + 4;
    }
    if at > message.len() {
        return Err(BadReply);
    }
    Ok(at)
}

/// The rcode of a message, with the extended bits of its OPT record.
pub fn rcode(message: &[u8]) -> Result<u16, BadReply> {
    if message.len() < HEADER_LEN {
        return Err(BadReply);
    }
    let low = u16::from(message[3]) & RCODE_BITS;
    let mut high = None;
    each_record(message, |record| {
        if high.is_none() && record.section == 3 && record.rtype == rtype::OPT {
            high = Some(u16::from(record.ttl.to_be_bytes()[0]));
        }
    })?;
    Ok(high.unwrap_or(0) << 4 | low)
}

/// Sets the message ID.
pub fn set_id(message: &mut [u8], id: u16) {
    if message.len() >= 2 {
        message[..2].copy_from_slice(&id.to_be_bytes());
    }
}

/// Makes a reply taken from the cache what CoreDNS's cache sends: the client's question as
/// it was asked, letter case included (the stored one is whoever asked first; resolvers that
/// randomise case check it), and AA set (CoreDNS sets it on every cached answer, for old
/// glibc stubs that drop answers without it).
pub fn answered_from_cache(message: &mut [u8], request: &super::Request<'_>) {
    let name = HEADER_LEN..HEADER_LEN + request.question.name().len();
    if let (Some(ours), Some(asked)) = (message.get(name.clone()), request.bytes.get(name.clone()))
        && ours.eq_ignore_ascii_case(asked)
    {
        message[name].copy_from_slice(asked);
    }
    if let Some(flags) = message.get_mut(2) {
        *flags |= 0x04;
    }
}

/// Sets the TTL of every record but OPT to `ttl`.
pub fn set_ttls(message: &mut [u8], ttl: u32) -> Result<(), BadReply> {
    // Every field is found first and written after, so the walk reads an unchanged message;
    // a TTL moves no byte, so the offsets stay true.
    let mut fields: smallvec::SmallVec<[usize; 32]> = smallvec::SmallVec::new();
    each_record(message, |record| {
        if record.rtype != rtype::OPT {
            fields.push(record.fixed + 4);
        }
    })?;
    for at in fields {
        message[at..at + 4].copy_from_slice(&ttl.to_be_bytes());
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
        let mut ttl = record.ttl;
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
    let rcode = rcode(message)?;
    let question_end = question_end(message)?;
    let mut additional_start = None;
    each_record(message, |record| {
        if record.section == 3 && additional_start.is_none() {
            additional_start = Some(record.start);
        }
    })?;
    let additional_start = additional_start.unwrap_or(message.len());
    let [questions, answers, authority, _] = counts(message)?;

    out.clear();
    out.extend_from_slice(&message[..additional_start]);
    let opt_len = if edns.is_some() { 11 } else { 0 };
    // The additional section is optional: the RRsets that fit, in order, without TC
    // (RFC 2181 §9). A record may point at a name in one before it, so what goes is a tail.
    let mut additional = 0u16;
    let mut set_start = (out.len(), additional);
    // The owner offset and type of the RRset being copied.
    let mut set_key: Option<(usize, u16)> = None;
    let mut full = false;
    each_record(message, |record| {
        if full || record.section != 3 || record.rtype == rtype::OPT {
            return;
        }
        let same_set = set_key.is_some_and(|(owner, rtype)| {
            rtype == record.rtype && same_name(message, owner, record.start)
        });
        if !same_set {
            set_start = (out.len(), additional);
            set_key = Some((record.start, record.rtype));
        }
        out.extend_from_slice(&message[record.start..record.end]);
        additional += 1;
        if out.len() + opt_len > limit {
            out.truncate(set_start.0);
            additional = set_start.1;
            full = true;
        }
    })?;
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

/// The next label of a name being read at `*at` (pointers followed, each only backwards so
/// that the walk ends): `Some(label)`, or `None` at the root or on a name that does not
/// decode (`*at` is then past the message, so that both read as ended, and differ).
fn next_label<'a>(message: &'a [u8], at: &mut usize, limit: &mut usize) -> Option<&'a [u8]> {
    loop {
        let len = *message.get(*at)?;
        match len {
            0 => return None,
            1..=63 => {
                let label = message.get(*at + 1..*at + 1 + usize::from(len))?;
                *at += 1 + usize::from(len);
                return Some(label);
            }
            0xc0..=0xff => {
                let low = *message.get(*at + 1)?;
                let target = usize::from(u16::from_be_bytes([len & 0x3f, low]));
                if target >= *limit {
                    *at = usize::MAX;
                    return None;
                }
                *limit = target;
                *at = target;
            }
            _ => {
                *at = usize::MAX;
                return None;
            }
        }
    }
}

/// Whether the names at offsets `a` and `b` of `message` are the same name (ASCII case
/// aside), compressed or not. A name that does not decode is the same as none.
fn same_name(message: &[u8], a: usize, b: usize) -> bool {
    let (mut at_a, mut limit_a, mut at_b, mut limit_b) = (a, a, b, b);
    loop {
        let left = next_label(message, &mut at_a, &mut limit_a);
        let right = next_label(message, &mut at_b, &mut limit_b);
        match (left, right) {
            (None, None) => return at_a != usize::MAX && at_b != usize::MAX,
            (Some(left), Some(right)) if left.eq_ignore_ascii_case(right) => {}
            _ => return false,
        }
    }
}

/// *loadbalance* in place, for the shapes replies have: in each section, CNAMEs, then other
/// records, then the A or the AAAA records of one owner, then at most one MX — the order
/// CoreDNS's `roundRobin` leaves — so shuffling the addresses' RDATA among their records is
/// the shuffle, and no byte of a name moves. The OPT record is passed over wherever it is.
/// `Ok(false)`: another shape, for [`shuffled`](super::shuffled) (which rebuilds) to do.
pub fn shuffle_in_place(message: &mut [u8]) -> Result<bool, BadReply> {
    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Stage {
        Cname,
        Other,
        Address,
        Mx,
    }
    let mut simple = true;
    // Per section: the stage reached, the address type and first owner, the RDATA offsets.
    let mut stage = Stage::Cname;
    let mut section = 0u8;
    let mut owner = 0usize;
    let mut address_type = 0u16;
    let mut rdata: smallvec::SmallVec<[usize; 16]> = smallvec::SmallVec::new();
    let mut shuffles: smallvec::SmallVec<[(usize, usize, usize); 3]> = smallvec::SmallVec::new();
    let mut positions: smallvec::SmallVec<[usize; 48]> = smallvec::SmallVec::new();
    let mut close = |rdata: &mut smallvec::SmallVec<[usize; 16]>, address_type: u16| {
        if rdata.len() > 1 {
            let start = positions.len();
            positions.extend(rdata.iter().copied());
            let len = if address_type == rtype::A { 4 } else { 16 };
            shuffles.push((start, positions.len(), len));
        }
        rdata.clear();
    };
    let view: &[u8] = message;
    each_record(view, |record| {
        if !simple || record.rtype == rtype::OPT {
            return;
        }
        if record.section != section {
            close(&mut rdata, address_type);
            section = record.section;
            stage = Stage::Cname;
            address_type = 0;
        }
        let this = match record.rtype {
            rtype::CNAME => Stage::Cname,
            rtype::A | rtype::AAAA => Stage::Address,
            rtype::MX => Stage::Mx,
            _ => Stage::Other,
        };
        if this < stage || (this == Stage::Mx && stage == Stage::Mx) {
            simple = false;
            return;
        }
        stage = this;
        if this == Stage::Address {
            let rdlen = record.end - record.fixed - 10;
            let expected = if record.rtype == rtype::A { 4 } else { 16 };
            if address_type == 0 {
                address_type = record.rtype;
                owner = record.start;
            } else if address_type != record.rtype || !same_name(view, owner, record.start) {
                simple = false;
                return;
            }
            if rdlen != expected {
                simple = false;
                return;
            }
            rdata.push(record.fixed + 10);
        }
    })?;
    if !simple {
        return Ok(false);
    }
    close(&mut rdata, address_type);
    for &(start, end, len) in &shuffles {
        let group = &positions[start..end];
        for i in (1..group.len()).rev() {
            let j = fastrand::usize(..=i);
            if i != j {
                let mut held = [0u8; 16];
                held[..len].copy_from_slice(&message[group[i]..group[i] + len]);
                message.copy_within(group[j]..group[j] + len, group[i]);
                message[group[j]..group[j] + len].copy_from_slice(&held[..len]);
            }
        }
    }
    Ok(true)
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

    /// A reply of `records` (owner, type, data) in the answer section, for the shapes
    /// *loadbalance* meets.
    fn answers(records: &[(&str, RData)]) -> Vec<u8> {
        let mut m = Message::new(7, MessageType::Response, OpCode::Query);
        m.add_query(Query::query(
            Name::from_str(records[0].0).unwrap(),
            RecordType::A,
        ));
        for (owner, data) in records {
            m.add_answer(Record::from_rdata(
                Name::from_str(owner).unwrap(),
                60,
                data.clone(),
            ));
        }
        let mut edns = HEdns::new();
        edns.set_max_payload(1232);
        m.edns = Some(edns);
        m.to_vec().unwrap()
    }

    fn a(last: u8) -> RData {
        RData::A(A::new(192, 0, 2, last))
    }

    #[test]
    fn shuffling_in_place_permutes_the_addresses_behind_the_cnames() {
        let original = reply(5, true);
        let decoded = |bytes: &[u8]| {
            let m = Message::from_vec(bytes).unwrap();
            let types: Vec<RecordType> = m.answers.iter().map(Record::record_type).collect();
            let firsts: Vec<String> = m.answers.iter().map(|r| r.data.to_string()).collect();
            (types, firsts, m.additionals.len(), m.edns.is_some())
        };
        let (types, before, additional, opt) = decoded(&original);
        let mut sorted_before = before.clone();
        sorted_before.sort();
        let mut first_seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let mut bytes = original.clone();
            assert_eq!(shuffle_in_place(&mut bytes), Ok(true));
            assert_eq!(bytes.len(), original.len(), "no byte added or lost");
            let (shuffled_types, after, shuffled_additional, shuffled_opt) = decoded(&bytes);
            assert_eq!(shuffled_types, types, "the CNAME stays first");
            assert_eq!((shuffled_additional, shuffled_opt), (additional, opt));
            let mut sorted_after = after.clone();
            sorted_after.sort();
            assert_eq!(sorted_after, sorted_before, "the same record set");
            first_seen.insert(after[1].clone());
        }
        assert_eq!(first_seen.len(), 5, "every address comes first sometimes");
    }

    #[test]
    fn shuffling_in_place_leaves_other_shapes_to_the_decoding_shuffle() {
        let txt = RData::TXT(hickory_proto::rr::rdata::TXT::new(vec!["x".to_owned()]));
        let aaaa = RData::AAAA(hickory_proto::rr::rdata::AAAA::new(
            0x2001, 0xdb8, 0, 0, 0, 0, 0, 1,
        ));
        let mx = |pref| {
            RData::MX(hickory_proto::rr::rdata::MX::new(
                pref,
                Name::from_str("mail.example.com.").unwrap(),
            ))
        };
        let cases: [(&str, Vec<(&str, RData)>); 4] = [
            (
                "a record after the addresses",
                vec![
                    ("w.example.com.", a(1)),
                    ("w.example.com.", a(2)),
                    ("w.example.com.", txt),
                ],
            ),
            (
                "A and AAAA together",
                vec![("w.example.com.", a(1)), ("w.example.com.", aaaa)],
            ),
            (
                "addresses of two owners",
                vec![("w.example.com.", a(1)), ("v.example.com.", a(2))],
            ),
            (
                "two MX",
                vec![("example.com.", mx(10)), ("example.com.", mx(20))],
            ),
        ];
        for (case, records) in cases {
            let mut bytes = answers(&records);
            let original = bytes.clone();
            assert_eq!(shuffle_in_place(&mut bytes), Ok(false), "{case}");
            assert_eq!(bytes, original, "{case}: untouched");
            assert!(
                crate::wire::shuffled(&bytes).is_some(),
                "{case}: the decoding shuffle takes it"
            );
        }
        // Owners spelled in another case, and one compressed and one not, are one owner.
        let mut bytes = answers(&[("w.example.com.", a(1)), ("W.Example.COM.", a(2))]);
        assert_eq!(shuffle_in_place(&mut bytes), Ok(true));
        assert_eq!(shuffle_in_place(&mut [0u8; 5]), Err(BadReply));
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
            let shuffled = Message::from_vec(&crate::wire::shuffled(&bytes).unwrap()).unwrap();
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
            crate::wire::shuffled(&reply(1, false)),
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
