//! A query owned with its parse ([`OwnedRequest`]): what a query waiting for its upstream
//! carries, so that finishing it needs no second parse.

use super::{Edns, Question, Request, clamp_payload};

/// A query message and its parse, owned: carried while the query waits (for an upstream)
/// and seen again as a [`Request`] ([`request`](Self::request)) without parsing it again.
#[derive(Clone, Debug)]
pub struct OwnedRequest {
    bytes: Vec<u8>,
    id: u16,
    opcode: u8,
    flags: u16,
    question: Question,
    edns: Option<Edns>,
    soa_serial: Option<u32>,
}

impl OwnedRequest {
    /// `request` with a copy of its bytes.
    pub fn new(request: &Request<'_>) -> Self {
        Self {
            bytes: request.bytes.to_vec(),
            id: request.id,
            opcode: request.opcode,
            flags: request.flags,
            question: request.question.clone(),
            edns: request.edns,
            soa_serial: request.soa_serial,
        }
    }

    /// The query, as [`Request::parse`] read it.
    pub fn request(&self) -> Request<'_> {
        Request {
            bytes: &self.bytes,
            id: self.id,
            opcode: self.opcode,
            flags: self.flags,
            question: self.question.clone(),
            edns: self.edns,
            soa_serial: self.soa_serial,
        }
    }

    /// The message.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Lowers the payload size its OPT record advertises to at most `size` (512 or more),
    /// in the message and in its parse alike ([`clamp_payload`]).
    pub fn clamp_payload(&mut self, size: u16) {
        clamp_payload(&mut self.bytes, size);
        if let Some(edns) = &mut self.edns {
            edns.payload = edns.payload.min(size);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn query(payload: Option<u16>) -> Vec<u8> {
        let mut bytes = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0];
        bytes.push(u8::from(payload.is_some()));
        bytes.extend_from_slice(b"\x03WeB\x04shop\x03svc\x07cluster\x05local\x00\x00\x01\x00\x01");
        if let Some(payload) = payload {
            bytes.extend_from_slice(&[0, 0, 41]);
            bytes.extend_from_slice(&payload.to_be_bytes());
            bytes.extend_from_slice(&[0, 0, 0x80, 0, 0, 0]);
        }
        bytes
    }

    /// What a request shows, field by field (its `Debug`).
    fn shown(request: &Request<'_>) -> String {
        format!("{request:?}")
    }

    #[test]
    fn the_request_is_the_parse_it_was_made_from() {
        for payload in [None, Some(4096), Some(512)] {
            let bytes = query(payload);
            let parsed = Request::parse(&bytes).unwrap();
            let owned = OwnedRequest::new(&parsed);
            assert_eq!(owned.bytes(), &bytes[..]);
            assert_eq!(shown(&owned.request()), shown(&parsed));
        }
    }

    #[test]
    fn clamping_changes_the_message_and_its_parse_as_a_second_parse_would_read_it() {
        for (payload, size) in [
            (Some(4096), 1232),
            (Some(600), 1232),
            (None, 1232),
            (Some(1232), 512),
        ] {
            let bytes = query(payload);
            let mut owned = OwnedRequest::new(&Request::parse(&bytes).unwrap());
            owned.clamp_payload(size);
            let again = owned.bytes().to_vec();
            assert_eq!(
                shown(&owned.request()),
                shown(&Request::parse(&again).unwrap())
            );
            let expected = payload.map(|p| p.min(size).max(512));
            assert_eq!(owned.request().edns.map(|e| e.payload), expected);
        }
    }
}
