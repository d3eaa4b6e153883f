//! DNS messages on the wire: parsing a query, writing an answer from a
//! [`zone::Answer`](crate::zone::Answer).
//!
//! The hot path of the server. Parsing reads the header, the one question (lower-casing its
//! name into a stack buffer) and the OPT record; writing copies the prepared record bytes
//! behind a pointer to the question. Neither allocates beyond the output buffer.
//! `header.rs` holds the header's constants and reads it, `request.rs` the parsed query's
//! types, `owned.rs` a query owned with its parse (carried while it waits for its upstream);
//! `parse.rs` reads a query, `write.rs` writes the reply, [`reply`] rewrites a whole reply.

mod header;
mod owned;
mod parse;
pub mod reply;
mod request;
mod write;

pub(crate) use header::{FLAG_CD, FLAG_QR, FLAG_RD, FLAG_TC, Header, OPCODE_BITS, RCODE_BITS};
pub use header::{HEADER_LEN, OPCODE_QUERY};
pub use owned::OwnedRequest;
pub(crate) use parse::{question_name_end, skip_name};
pub use request::{
    Edns, MAX_UDP_REPLY, Malformed, Question, Request, Transport, UDP_MIN_PAYLOAD,
    is_internet_class,
};
pub(crate) use write::{Edit, Rebuilt, name_at, query_for_name, reply_for_question, value_name_at};
pub use write::{
    QuestionAnswers, clamp_payload, shuffled, write_answer, write_malformed, write_query,
    write_rcode,
};

pub use crate::codes::{rcode, rcode_name};

#[cfg(test)]
mod tests;
