//! A parsed query: its question and EDNS0 parameters, the transport it came over and the
//! reply sizes that allows, and why a message is not one.

use super::HEADER_LEN;
use crate::codes::class;
use crate::name::MAX_NAME_LEN;

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
    pub(super) lower: [u8; MAX_NAME_LEN],
    pub(super) len: usize,
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
    pub(crate) fn end(&self) -> usize {
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
