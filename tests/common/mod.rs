//! Helpers shared by the integration tests: fixtures, an offline server built from a
//! Corefile, replies rendered as zone-file text, the real binary started on port 0, and
//! its command line run once.

#![allow(dead_code, clippy::unwrap_used, clippy::print_stdout)]

pub mod apiserver;
pub mod binary;
pub mod certs;
pub mod cli;
pub mod cluster;
pub mod coredns;
pub mod dot;
pub mod forward_metrics;
pub mod golden;
pub mod helm;
pub mod names;
pub mod netns;
pub mod partition;
pub mod ports;
pub mod upstream;

use std::path::{Path, PathBuf};
use std::str::FromStr;

use clusterdns::server::{self, Handler, Outcome, Transport};
use clusterdns::zone::zonefile::record_line;
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, Record, RecordType};

/// A runtime of `workers` threads for the test's own servers (upstreams, the API server
/// stand-in), kept alive by the test.
pub fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

/// The name libtest gives test `function` of `module` (a `module_path!()`): the module path
/// without the crate's name, as `--exact` takes it to run that one test again.
pub fn libtest_name(module: &str, function: &str) -> String {
    let path = module.split_once("::").map_or("", |(_, rest)| rest);
    if path.is_empty() {
        function.to_owned()
    } else {
        format!("{path}::{function}")
    }
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file under `fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    root().join("fixtures").join(name)
}

/// A Corefile written to a temporary directory; `{FIXTURES}` in the text becomes the
/// fixtures directory.
pub struct TempCorefile {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl TempCorefile {
    pub fn new(text: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Corefile");
        let text = text.replace("{FIXTURES}", &root().join("fixtures").display().to_string());
        std::fs::write(&path, text).unwrap();
        Self { dir, path }
    }
}

/// The request path of a server, without sockets: a Corefile's blocks loaded and asked
/// directly.
pub struct Offline {
    handler: Handler,
    _corefile: TempCorefile,
}

impl Offline {
    pub fn new(corefile: &str) -> Self {
        let file = TempCorefile::new(corefile);
        let config = clusterdns::config::read_corefile(&file.path)
            .unwrap_or_else(|e| panic!("Corefile does not parse: {e}\n{corefile}"));
        let blocks = server::load(&config).unwrap_or_else(|e| panic!("does not load: {e}"));
        let handler = Handler::new(blocks.into_iter().map(|loaded| loaded.block).collect());
        Self {
            handler,
            _corefile: file,
        }
    }

    /// Asks over "UDP" (EDNS payload 1232) from 127.0.0.1.
    pub fn ask(&self, name: &str, qtype: &str) -> Reply {
        self.ask_with(&query(name, qtype, Some(1232)), Transport::Udp)
    }

    pub fn ask_with(&self, packet: &[u8], transport: Transport) -> Reply {
        let mut out = Vec::new();
        match self
            .handler
            .respond(packet, ([127, 0, 0, 1], 5353).into(), transport, &mut out)
        {
            Outcome::Reply => Reply::decode(&out),
            other => panic!("no reply: {other:?}"),
        }
    }

    /// The raw reply bytes.
    pub fn raw(&self, packet: &[u8], transport: Transport) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        match self
            .handler
            .respond(packet, ([127, 0, 0, 1], 5353).into(), transport, &mut out)
        {
            Outcome::Reply => Some(out),
            _ => None,
        }
    }
}

/// A query message, with EDNS when `payload` is given.
pub fn query(name: &str, qtype: &str, payload: Option<u16>) -> Vec<u8> {
    let mut message = Message::new(4321, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    let qtype = match qtype {
        "IXFR" => RecordType::IXFR,
        other => RecordType::from_str(other).unwrap(),
    };
    message.add_query(Query::query(Name::from_ascii(name).unwrap(), qtype));
    if let Some(payload) = payload {
        let mut edns = Edns::new();
        edns.set_max_payload(payload);
        message.edns = Some(edns);
    }
    message.to_vec().unwrap()
}

/// A reply, its records as zone-file lines (whitespace collapsed, the SOA serial written
/// `SERIAL`), each section sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub rcode: String,
    pub authoritative: bool,
    pub truncated: bool,
    pub answer: Vec<String>,
    pub authority: Vec<String>,
    pub additional: Vec<String>,
    pub message: Message,
}

impl Reply {
    pub fn decode(bytes: &[u8]) -> Self {
        let message = Message::from_vec(bytes).unwrap();
        Self {
            rcode: rcode_name(u16::from(message.metadata.response_code)).to_owned(),
            authoritative: message.metadata.authoritative,
            truncated: message.metadata.truncation,
            answer: lines(&message.answers),
            authority: lines(&message.authorities),
            additional: lines(&message.additionals),
            message,
        }
    }
}

pub use clusterdns::wire::rcode_name;

pub fn lines(records: &[Record]) -> Vec<String> {
    let mut lines: Vec<String> = records.iter().map(|r| normalize(&record_line(r))).collect();
    lines.sort();
    lines
}

/// Collapses whitespace and hides the SOA serial.
pub fn normalize(line: &str) -> String {
    let mut words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    if words.get(3).is_some_and(|t| t == "SOA") && words.len() >= 7 {
        words[6] = "SERIAL".to_owned();
    }
    words.join(" ")
}

/// Expected lines, normalized and sorted.
pub fn expect(lines: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = lines.iter().map(|line| normalize(line)).collect();
    out.sort();
    out
}

/// Reads a file relative to the repository root.
pub fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}
