//! Helpers for the chain's table tests: a block from a Corefile, asked offline.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name, RecordType};

use crate::server::chain::DryRun;
use crate::server::{Block, Local};

/// The repository's `fixtures/` directory.
pub(crate) fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The first block of `corefile` (`{FIXTURES}` is the fixtures directory), loaded; the
/// Corefile's directory is `dir` (for relative files).
pub(crate) fn block_in(dir: &std::path::Path, corefile: &str) -> Arc<Block> {
    let text = corefile.replace("{FIXTURES}", &fixtures().display().to_string());
    let env = crate::config::Environment::system()
        .with_file("/etc/resolv.conf", "nameserver 192.0.2.53\n");
    let config = crate::config::parse_corefile_in(&text, &dir.join("Corefile"), &env)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut blocks = crate::server::load(&config).unwrap_or_else(|e| panic!("{e}"));
    blocks.remove(0).block
}

/// [`block_in`] with the Corefile in the current directory.
pub(crate) fn block(corefile: &str) -> Arc<Block> {
    block_in(std::path::Path::new("."), corefile)
}

/// A query for `name` and `qtype` (class IN), with EDNS (payload 1232).
pub(crate) fn query(name: &str, qtype: RecordType) -> Vec<u8> {
    query_class(name, qtype, DNSClass::IN)
}

/// A query for `name`, `qtype` and `class`, with EDNS (payload 1232), RD set.
pub(crate) fn query_class(name: &str, qtype: RecordType, class: DNSClass) -> Vec<u8> {
    let mut query = Query::query(Name::from_ascii(name).unwrap(), qtype);
    query.set_query_class(class);
    let mut message = Message::new(42, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(query);
    let mut edns = Edns::new();
    edns.set_max_payload(1232);
    message.edns = Some(edns);
    message.to_vec().unwrap()
}

/// What `block` answers for `packet` from what it holds, as a client's query its plugins
/// count: the reply, or `None` when the name would go upstream.
pub(crate) fn ask_packet(block: &Arc<Block>, packet: &[u8]) -> Option<Message> {
    match block
        .run_from_loopback(packet, false)
        .and_then(DryRun::local)
    {
        Some(Local::Reply(bytes)) => Some(Message::from_vec(&bytes).unwrap()),
        Some(Local::Upstream) | None => None,
    }
}

/// [`ask_packet`] for `name` and `qtype`.
pub(crate) fn ask(block: &Arc<Block>, name: &str, qtype: RecordType) -> Option<Message> {
    ask_packet(block, &query(name, qtype))
}

/// The rcode's mnemonic.
pub(crate) fn rcode(reply: &Message) -> &'static str {
    crate::wire::rcode_name(u16::from(reply.metadata.response_code))
}

/// Records as zone-file lines, words separated by one space (the class is always `IN`).
pub(crate) fn lines(records: &[hickory_proto::rr::Record]) -> Vec<String> {
    records
        .iter()
        .map(|record| {
            crate::zone::zonefile::record_line(record)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// The answer section as [`lines`].
pub(crate) fn answers(reply: &Message) -> Vec<String> {
    lines(&reply.answers)
}
