//! Reading a query: the header, the one question (lower-cased into a stack buffer), the OPT
//! record and an IXFR's SOA, every name and count bounds-checked.

use super::{
    Edns, FLAG_QR, HEADER_LEN, Header, MAX_UDP_REPLY, Malformed, OPCODE_QUERY, Question, Request,
    UDP_MIN_PAYLOAD,
};
use crate::codes::{rcode, rtype};
use crate::name::MAX_NAME_LEN;

impl<'a> Request<'a> {
    /// Parses a query. Anything else is [`Malformed`]: too short or a response is ignored;
    /// an opcode other than QUERY is NOTIMP; a broken question, a count that runs past the
    /// end, a compression pointer in the question or a second OPT record is FORMERR.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Malformed> {
        let Some(header) = Header::read(bytes) else {
            return Err(Malformed::Ignore);
        };
        let (id, flags) = (header.id, header.flags);
        if flags & FLAG_QR != 0 {
            return Err(Malformed::Ignore);
        }
        let opcode = header.opcode();
        let reply = |rcode| Malformed::Reply {
            id,
            opcode,
            flags,
            rcode,
        };
        if opcode != OPCODE_QUERY {
            return Err(reply(rcode::NOTIMP));
        }
        let [qdcount, ancount, nscount, arcount] = header.counts.map(usize::from);
        if qdcount != 1 {
            return Err(reply(rcode::FORMERR));
        }
        let formerr = || reply(rcode::FORMERR);
        let mut at = question_name_end(bytes).ok_or_else(formerr)?;
        let mut lower = [0u8; MAX_NAME_LEN];
        // Length bytes (at most 63) are below 'A': lower-casing the whole name leaves them.
        for (dst, src) in lower.iter_mut().zip(&bytes[HEADER_LEN..at]) {
            *dst = src.to_ascii_lowercase();
        }
        let len = at - HEADER_LEN;
        let fixed = bytes.get(at..at + 4).ok_or_else(formerr)?;
        let question = Question {
            lower,
            len,
            qtype: u16::from_be_bytes([fixed[0], fixed[1]]),
            qclass: u16::from_be_bytes([fixed[2], fixed[3]]),
        };
        at += 4;

        let mut edns = None;
        let mut soa_serial = None;
        for section in 0..3 {
            let records = [ancount, nscount, arcount][section];
            for _ in 0..records {
                let owner_root = bytes.get(at) == Some(&0);
                // A name that cannot be read (a compression loop, a pointer past the end) makes
                // the whole message unreadable: FORMERR, over UDP as over TCP.
                at = skip_checked_name(bytes, at).ok_or_else(formerr)?;
                let fixed = bytes.get(at..at + 10).ok_or_else(formerr)?;
                let rr_type = u16::from_be_bytes([fixed[0], fixed[1]]);
                let class = u16::from_be_bytes([fixed[2], fixed[3]]);
                let ttl = u32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
                let rdlen = u16::from_be_bytes([fixed[8], fixed[9]]) as usize;
                let rdata_at = at + 10;
                at = rdata_at + rdlen;
                if at > bytes.len() {
                    return Err(formerr());
                }
                match (section, rr_type) {
                    (2, rtype::OPT) => {
                        // One OPT, owned by the root, its options within its RDATA
                        // (RFC 6891 §6.1.1-2). Options are not otherwise read: those
                        // clusterdns does not implement (ECS, cookies) are ignored, as §6.1.2
                        // says unknown ones must be.
                        if edns.is_some()
                            || !owner_root
                            || !options_fit(&bytes[rdata_at..rdata_at + rdlen])
                        {
                            return Err(formerr());
                        }
                        edns = Some(Edns {
                            payload: class.max(UDP_MIN_PAYLOAD),
                            version: (ttl >> 16) as u8,
                            dnssec_ok: ttl & 0x8000 != 0,
                        });
                    }
                    // OPT belongs in the additional section only (RFC 6891 §6.1.1).
                    (_, rtype::OPT) => return Err(formerr()),
                    (1, rtype::SOA) => soa_serial = soa_serial_of(bytes, rdata_at),
                    _ => {}
                }
            }
        }
        Ok(Self {
            bytes,
            id,
            opcode,
            flags,
            question,
            edns,
            soa_serial,
        })
    }

    /// The question as received (original case), for echoing.
    pub(crate) fn question_bytes(&self) -> &[u8] {
        &self.bytes[HEADER_LEN..self.question.end()]
    }

    /// The largest reply sent to this requestor over UDP: its payload size, at most
    /// [`MAX_UDP_REPLY`].
    pub fn udp_limit(&self) -> usize {
        self.edns
            .map_or(UDP_MIN_PAYLOAD, |edns| edns.payload.min(MAX_UDP_REPLY)) as usize
    }
}

/// The end of the first question's name, which starts right after the header: uncompressed
/// (nothing precedes it to point at), labels of at most 63 bytes, at most 255 bytes in all,
/// within the message. `None` for anything else.
pub(crate) fn question_name_end(message: &[u8]) -> Option<usize> {
    let mut at = HEADER_LEN;
    loop {
        let len = usize::from(*message.get(at)?);
        if len > 63 {
            return None;
        }
        at += 1 + len;
        if at - HEADER_LEN > MAX_NAME_LEN || at > message.len() {
            return None;
        }
        if len == 0 {
            return Some(at);
        }
    }
}

/// Skips a (possibly compressed) name starting at `at`; the offset after it.
pub(crate) fn skip_name(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *bytes.get(at)? as usize;
        match len {
            0 => return Some(at + 1),
            1..=63 => at += 1 + len,
            0xc0..=0xff => return (at + 2 <= bytes.len()).then_some(at + 2),
            _ => return None,
        }
    }
}

/// The most compression pointers one name may follow (a name has at most 127 labels).
pub(super) const MAX_POINTERS: usize = 127;

/// [`skip_name`] for a name in a received message, whose pointers are followed too: each
/// must land inside the message on a name that ends, within [`MAX_POINTERS`] jumps and 255
/// bytes (no loop).
fn skip_checked_name(bytes: &[u8], at: usize) -> Option<usize> {
    let end = skip_name(bytes, at)?;
    let mut cursor = at;
    let mut jumps = 0;
    let mut length = 0usize;
    loop {
        let len = *bytes.get(cursor)? as usize;
        match len {
            0 => return Some(end),
            1..=63 => {
                length += 1 + len;
                if length > MAX_NAME_LEN {
                    return None;
                }
                cursor += 1 + len;
            }
            0xc0..=0xff => {
                jumps += 1;
                if jumps > MAX_POINTERS {
                    return None;
                }
                let low = *bytes.get(cursor + 1)? as usize;
                cursor = ((len & 0x3f) << 8) | low;
            }
            _ => return None,
        }
    }
}

/// Whether the options in an OPT record's RDATA each fit in it.
fn options_fit(mut rdata: &[u8]) -> bool {
    while !rdata.is_empty() {
        let Some(header) = rdata.get(..4) else {
            return false;
        };
        let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
        let Some(rest) = rdata.get(4 + len..) else {
            return false;
        };
        rdata = rest;
    }
    true
}

fn soa_serial_of(bytes: &[u8], rdata_at: usize) -> Option<u32> {
    let at = skip_name(bytes, skip_name(bytes, rdata_at)?)?;
    let serial = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([
        serial[0], serial[1], serial[2], serial[3],
    ]))
}
