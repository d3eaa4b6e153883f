//! Unit tests of the snapshot against the shop fixture, through the wire writer.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::str::FromStr;

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

use super::*;
use crate::config::KubernetesConfig;
use crate::source::read_objects;
use crate::wire::{Request, write_answer};
use crate::zone::zonefile::record_line;

pub(crate) fn config(zones: &[&str]) -> KubernetesConfig {
    let zones = zones
        .iter()
        .map(|z| hickory_proto::rr::Name::from_str(z).unwrap())
        .collect();
    KubernetesConfig {
        ttl: 30,
        pods: PodMode::Insecure,
        ..KubernetesConfig::new(zones, 0, 1)
    }
}

fn shop() -> Snapshot {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/shop.json");
    let loaded = read_objects(&[path]).unwrap();
    let ctx = BuildContext {
        local_ips: vec!["127.0.0.1".parse().unwrap()],
        serial: 1700000000,
    };
    build(
        &loaded.cluster,
        &config(&["cluster.local.", "in-addr.arpa.", "ip6.arpa."]),
        &ctx,
    )
}

fn ask(snapshot: &Snapshot, name: &str, qtype: RecordType) -> (String, Vec<String>) {
    let mut query = Message::new(7, MessageType::Query, OpCode::Query);
    query.add_query(Query::query(Name::from_str(name).unwrap(), qtype));
    let packet = query.to_vec().unwrap();
    let request = Request::parse(&packet).unwrap();
    let answer = snapshot
        .lookup(request.question.name(), request.question.qtype)
        .unwrap();
    let mut out = Vec::new();
    write_answer(
        &request,
        &answer,
        &snapshot.zones()[answer.zone],
        512,
        false,
        &mut out,
    );
    let reply = Message::from_vec(&out).unwrap();
    let mut lines: Vec<String> = reply
        .answers
        .iter()
        .chain(&reply.authorities)
        .chain(&reply.additionals)
        .map(record_line)
        .collect();
    lines.sort();
    (reply.metadata.response_code.to_string(), lines)
}

#[test]
fn shop_seed_questions() {
    let snapshot = shop();
    let (rcode, lines) = ask(
        &snapshot,
        "web-headless.shop.svc.cluster.local.",
        RecordType::A,
    );
    assert_eq!(rcode, "No Error");
    assert_eq!(lines.len(), 3, "{lines:#?}");
    let (_, lines) = ask(
        &snapshot,
        "_pg._tcp.db.shop.svc.cluster.local.",
        RecordType::SRV,
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("db-0.db.shop.svc.cluster.local.")),
        "{lines:#?}"
    );
    let (_, lines) = ask(&snapshot, "20.0.96.10.in-addr.arpa.", RecordType::PTR);
    assert_eq!(
        lines,
        ["20.0.96.10.in-addr.arpa.\t30\tIN\tPTR\tweb.shop.svc.cluster.local."]
    );
    let (rcode, lines) = ask(&snapshot, "nope.shop.svc.cluster.local.", RecordType::A);
    assert_eq!(rcode, "Non-Existent Domain");
    assert_eq!(
        lines,
        [
            "cluster.local.\t30\tIN\tSOA\tns.dns.cluster.local. hostmaster.cluster.local. 1700000000 7200 1800 86400 30"
        ]
    );
}
