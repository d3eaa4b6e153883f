//! DNS messages on the wire: parsing a query, writing an answer from a
//! [`zone::Answer`](crate::zone::Answer).
//!
//! The hot path of the server. Parsing reads the header, the one question (lower-casing its
//! name into a stack buffer) and the OPT record; writing copies the prepared record bytes
//! behind a pointer to the question. Neither allocates beyond the output buffer. This file
//! holds the header's constants and the parsed query's types; `parse.rs` reads a query,
//! `write.rs` writes the reply, [`reply`] rewrites a whole reply.

mod owned;
mod parse;
pub mod reply;
mod write;

pub use owned::OwnedRequest;
pub(crate) use parse::{Header, question_name_end, skip_name};
pub use write::{QuestionAnswers, clamp_payload, write_answer, write_malformed, write_rcode};
pub(crate) use write::{Rebuilt, query_for_name, reply_for_question};

use crate::codes::class;
use crate::name::MAX_NAME_LEN;

/// Size of the DNS header.
pub const HEADER_LEN: usize = 12;
/// Largest UDP answer without EDNS (RFC 1035 §4.2.1).
pub const UDP_MIN_PAYLOAD: u16 = 512;
/// The most a UDP reply carries, whatever payload the requestor offers: DNS Flag Day 2020's
/// 1232 bytes, which fit an IPv6 packet in a 1280-byte MTU without fragments and bound what
/// one spoofed query can make the server send (a block's *bufsize* sets another cap). Larger
/// answers are truncated and asked again over TCP.
pub const MAX_UDP_REPLY: u16 = 1232;

/// Which transport a query came over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// UDP: replies limited to the requestor's payload size.
    Udp,
    /// TCP: replies up to 65535 bytes; zone transfers allowed.
    Tcp,
}

/// Opcode QUERY.
pub const OPCODE_QUERY: u8 = 0;

pub use crate::codes::{rcode, rcode_name};

/// Header flags: a response (QR), authoritative (AA), truncated (TC), recursion desired (RD).
pub(crate) const FLAG_QR: u16 = 0x8000;
const FLAG_AA: u16 = 0x0400;
pub(crate) const FLAG_TC: u16 = 0x0200;
pub(crate) const FLAG_RD: u16 = 0x0100;
pub(crate) const FLAG_CD: u16 = 0x0010;
/// The opcode's four bits in the flag word.
pub(crate) const OPCODE_BITS: u16 = 0x7800;
/// The rcode's four bits in the flag word (an extended rcode's high bits are in OPT).
pub(crate) const RCODE_BITS: u16 = 0x000f;

/// A parsed query.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// The whole message as received.
    pub bytes: &'a [u8],
    /// Message ID.
    pub id: u16,
    /// Opcode.
    pub opcode: u8,
    /// The header's flag word as received.
    pub flags: u16,
    /// The question (exactly one; its absence is a format error).
    pub question: Question,
    /// EDNS0, when the query carried an OPT record.
    pub edns: Option<Edns>,
    /// The serial of the SOA in the authority section (an IXFR query's current version).
    pub soa_serial: Option<u32>,
}

/// The question of a query.
#[derive(Clone)]
pub struct Question {
    lower: [u8; MAX_NAME_LEN],
    len: usize,
    /// QTYPE.
    pub qtype: u16,
    /// QCLASS.
    pub qclass: u16,
}

impl std::fmt::Debug for Question {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut name = String::new();
        let _ = crate::name::write_dotted(self.name(), &mut name);
        f.debug_struct("Question")
            .field("name", &name)
            .field("qtype", &self.qtype)
            .field("qclass", &self.qclass)
            .finish()
    }
}

impl Question {
    /// The name in lower case, wire format.
    pub fn name(&self) -> &[u8] {
        &self.lower[..self.len]
    }

    /// Offset of the question section's end in the message.
    fn end(&self) -> usize {
        HEADER_LEN + self.len + 4
    }
}

/// The EDNS0 parameters of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edns {
    /// The requestor's UDP payload size (at least 512).
    pub payload: u16,
    /// EDNS version.
    pub version: u8,
    /// The DO bit.
    pub dnssec_ok: bool,
}

/// Why a message is not a query we can answer normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// Not worth a reply: shorter than a header, or a response (answering responses invites
    /// reflection loops).
    Ignore,
    /// Answer with this rcode, the header echoed and no question.
    Reply {
        /// The query's ID.
        id: u16,
        /// The query's opcode.
        opcode: u8,
        /// The query's flags.
        flags: u16,
        /// FORMERR, or NOTIMP for an opcode other than QUERY.
        rcode: u16,
    },
}

/// Whether `qclass` is one the cluster zone answers (IN, or ANY).
pub fn is_internet_class(qclass: u16) -> bool {
    qclass == class::IN || qclass == class::ANY
}

#[cfg(test)]
mod tests;
