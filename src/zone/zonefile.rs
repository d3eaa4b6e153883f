//! The whole zone, listed: RFC 1035 zone-file text (what `records --format zone` prints and
//! knotd or hickory can load), JSON, and the record list a zone transfer sends.
//!
//! Records are decoded from the same prepared bytes the server answers with, so the listing
//! is what the server says, record for record.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Write as _;

use hickory_proto::op::Message;
use hickory_proto::rr::{RData, Record, RecordType};
use serde::Serialize;

use super::node::Node;
use super::rrset::RrSet;
use super::{Owner, Run, Snapshot};
use crate::codes::{class, rtype};
use crate::name::{WireName, canonical_cmp};

/// Every record of `zone` (an index into [`Snapshot::zones`]): the SOA first, then names in
/// canonical order, types in numeric order, and the records of a set in text order.
pub fn zone_records(snapshot: &Snapshot, zone: usize) -> Vec<Record> {
    let mut nodes: Vec<Cow<'_, Node>> = snapshot.nodes_in(zone).collect();
    nodes.sort_by(|a, b| canonical_cmp(a.name(), b.name()));
    let mut soa = Vec::new();
    let mut rest = Vec::new();
    for node in nodes {
        let name = node.name();
        for set in node.rrsets() {
            let mut records = decode_rrset(name, set);
            records.sort_by(compare_text);
            if set.rtype == rtype::SOA {
                soa.extend(records);
            } else {
                rest.extend(records);
            }
        }
    }
    soa.extend(rest);
    soa
}

fn compare_text(a: &Record, b: &Record) -> Ordering {
    rdata_text(&a.data).cmp(&rdata_text(&b.data))
}

/// Decodes one prepared RRset into records owned by `name`, through a message shaped like
/// the answer to a query for it (so pointers to the question resolve).
fn decode_rrset(name: &[u8], set: RrSet<'_>) -> Vec<Record> {
    let mut bytes = Vec::with_capacity(64 + set.body.len());
    bytes.extend_from_slice(&[0, 0, 0x84, 0, 0, 1]);
    bytes.extend_from_slice(&set.count.to_be_bytes());
    bytes.extend_from_slice(&[0, 0, 0, 0]);
    bytes.extend_from_slice(name);
    bytes.extend_from_slice(&set.rtype.to_be_bytes());
    bytes.extend_from_slice(&class::IN.to_be_bytes());
    let run = Run::answers(set);
    debug_assert_eq!(run.owner, Owner::Question);
    let mut at = 0;
    while at + 10 <= set.body.len() {
        let rdlen = u16::from_be_bytes([set.body[at + 8], set.body[at + 9]]) as usize;
        bytes.extend_from_slice(&[0xc0, 0x0c]);
        bytes.extend_from_slice(&set.body[at..at + 10 + rdlen]);
        at += 10 + rdlen;
    }
    match Message::from_vec(&bytes) {
        Ok(message) => message.answers,
        Err(error) => {
            tracing::error!(%error, name = %WireName::from_wire_unchecked(name.to_vec()), "prepared records do not decode");
            Vec::new()
        }
    }
}

/// The RDATA in zone-file syntax. TXT strings are quoted (hickory prints them bare).
pub fn rdata_text(data: &RData) -> String {
    match data {
        RData::TXT(txt) => {
            let mut out = String::new();
            for (index, chunk) in txt.txt_data.iter().enumerate() {
                if index > 0 {
                    out.push(' ');
                }
                out.push('"');
                for &byte in chunk.iter() {
                    match byte {
                        b'"' | b'\\' => {
                            out.push('\\');
                            out.push(byte as char);
                        }
                        0x20..=0x7e => out.push(byte as char),
                        _ => {
                            let _ = write!(out, "\\{byte:03}");
                        }
                    }
                }
                out.push('"');
            }
            out
        }
        other => other.to_string(),
    }
}

/// One record in zone-file syntax: `name TTL IN TYPE RDATA`, tab-separated.
pub fn record_line(record: &Record) -> String {
    format!(
        "{}\t{}\tIN\t{}\t{}",
        record.name,
        record.ttl,
        record.record_type(),
        rdata_text(&record.data)
    )
}

/// Zone-file text of every served zone (or only `only`), each section opening with
/// `$ORIGIN` and its SOA, so that one zone's section loads on its own.
pub fn zone_file(snapshot: &Snapshot, only: Option<usize>) -> String {
    let mut out = String::new();
    for (index, zone) in snapshot.zones().iter().enumerate() {
        if only.is_some_and(|only| only != index) {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(out, "$ORIGIN {}", zone.origin());
        for record in zone_records(snapshot, index) {
            out.push_str(&record_line(&record));
            out.push('\n');
        }
    }
    out
}

/// The JSON form of [`zone_file`].
#[derive(Debug, Serialize)]
pub struct JsonZone {
    /// The zone's apex.
    pub zone: String,
    /// Its records, in zone-file order.
    pub records: Vec<JsonRecord>,
}

/// One record in JSON.
#[derive(Debug, Serialize)]
pub struct JsonRecord {
    /// Owner name, fully qualified.
    pub name: String,
    /// TTL in seconds.
    pub ttl: u32,
    /// Always `IN`.
    pub class: &'static str,
    /// Record type mnemonic.
    #[serde(rename = "type")]
    pub rtype: String,
    /// RDATA in zone-file syntax.
    pub data: String,
}

impl JsonRecord {
    /// `record` as JSON (as [`record_line`] writes it, field by field).
    pub fn of(record: &Record) -> Self {
        Self {
            name: record.name.to_string(),
            ttl: record.ttl,
            class: "IN",
            rtype: record_type_text(record.record_type()),
            data: rdata_text(&record.data),
        }
    }
}

/// Every served zone (or only `only`) as JSON values.
pub fn zone_json(snapshot: &Snapshot, only: Option<usize>) -> Vec<JsonZone> {
    snapshot
        .zones()
        .iter()
        .enumerate()
        .filter(|(index, _)| only.is_none_or(|only| only == *index))
        .map(|(index, zone)| JsonZone {
            zone: zone.origin().to_string(),
            records: zone_records(snapshot, index)
                .iter()
                .map(JsonRecord::of)
                .collect(),
        })
        .collect()
}

fn record_type_text(rtype: RecordType) -> String {
    rtype.to_string()
}
