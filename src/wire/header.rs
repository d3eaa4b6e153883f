//! The message header: its size, the flag word's bits, and reading it.

/// Size of the DNS header.
pub const HEADER_LEN: usize = 12;
/// Opcode QUERY.
pub const OPCODE_QUERY: u8 = 0;

/// Header flags: a response (QR), authoritative (AA), truncated (TC), recursion desired (RD).
pub(crate) const FLAG_QR: u16 = 0x8000;
pub(super) const FLAG_AA: u16 = 0x0400;
pub(crate) const FLAG_TC: u16 = 0x0200;
pub(crate) const FLAG_RD: u16 = 0x0100;
pub(crate) const FLAG_CD: u16 = 0x0010;
/// The opcode's four bits in the flag word.
pub(crate) const OPCODE_BITS: u16 = 0x7800;
/// The rcode's four bits in the flag word (an extended rcode's high bits are in OPT).
pub(crate) const RCODE_BITS: u16 = 0x000f;

/// The fixed header of a message, query or reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// Message ID.
    pub(crate) id: u16,
    /// The flag word.
    pub(crate) flags: u16,
    /// QDCOUNT, ANCOUNT, NSCOUNT, ARCOUNT.
    pub(crate) counts: [u16; 4],
}

impl Header {
    /// The header of `message`; `None` when it is shorter than one.
    pub(crate) fn read(message: &[u8]) -> Option<Self> {
        let bytes = message.get(..HEADER_LEN)?;
        let word = |at: usize| u16::from_be_bytes([bytes[at], bytes[at + 1]]);
        Some(Self {
            id: word(0),
            flags: word(2),
            counts: [word(4), word(6), word(8), word(10)],
        })
    }

    /// The opcode.
    pub(crate) fn opcode(&self) -> u8 {
        ((self.flags & OPCODE_BITS) >> 11) as u8
    }

    /// The rcode's low four bits (the OPT record holds the rest).
    pub(crate) fn rcode(&self) -> u16 {
        self.flags & RCODE_BITS
    }
}
