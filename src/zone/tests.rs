//! Unit tests of the snapshot against the shop fixture, through the wire writer.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::str::FromStr;

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

use super::*;
use crate::config::{KubernetesConfig, PodMode};
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

/// The multicluster zone's options, each on a small cluster: (what, options, name, rcode,
/// answer lines).
#[test]
fn multicluster_options() {
    let objects = r#"{"kind": "List", "items": [
        {"kind": "Namespace", "metadata": {"name": "a"}},
        {"kind": "Namespace", "metadata": {"name": "b"}},
        {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
         "metadata": {"name": "web", "namespace": "a"},
         "spec": {"ips": ["10.42.0.1"], "ports": [{"name": "http", "port": 80}]}},
        {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
         "metadata": {"name": "idle", "namespace": "a"},
         "spec": {"ips": ["10.42.0.2"], "ports": [{"port": 80}]}},
        {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
         "metadata": {"name": "db", "namespace": "b", "labels": {"tier": "db"}},
         "spec": {"type": "Headless"}},
        {"kind": "EndpointSlice", "addressType": "IPv4",
         "metadata": {"name": "web-1", "namespace": "a",
                      "labels": {"multicluster.kubernetes.io/service-name": "web",
                                 "multicluster.kubernetes.io/source-cluster": "East"}},
         "endpoints": [{"addresses": ["10.1.0.1"]}]},
        {"kind": "EndpointSlice", "addressType": "IPv4",
         "metadata": {"name": "db-1", "namespace": "b",
                      "labels": {"multicluster.kubernetes.io/service-name": "db",
                                 "multicluster.kubernetes.io/source-cluster": "east",
                                 "tier": "db"}},
         "endpoints": [{"addresses": ["10.1.0.2"], "hostname": "db-0"}]},
        {"kind": "EndpointSlice", "addressType": "IPv4",
         "metadata": {"name": "db-2", "namespace": "b",
                      "labels": {"multicluster.kubernetes.io/service-name": "db",
                                 "multicluster.kubernetes.io/source-cluster": "us.west"}},
         "endpoints": [{"addresses": ["10.1.0.3"], "hostname": "db-0"}]}
    ]}"#;
    let cluster = crate::source::file::parse_objects(objects, std::path::Path::new("x.json"))
        .unwrap()
        .cluster;
    let ctx = BuildContext {
        local_ips: vec!["127.0.0.1".parse().unwrap()],
        serial: 1,
    };
    type Options = fn(&mut KubernetesConfig);
    let none: Options = |_| {};
    let cases: &[(&str, Options, &str, &str, &[&str])] = &[
        (
            "cluster ids compare without case",
            none,
            "10-1-0-1.east.web.a.svc.clusterset.local.",
            "No Error",
            &["10-1-0-1.east.web.a.svc.clusterset.local.\t30\tIN\tA\t10.1.0.1"],
        ),
        (
            "a cluster id that is not one label gives no endpoint",
            none,
            "db.b.svc.clusterset.local.",
            "No Error",
            &["db.b.svc.clusterset.local.\t30\tIN\tA\t10.1.0.2"],
        ),
        (
            "an import without ready endpoints still answers",
            none,
            "idle.a.svc.clusterset.local.",
            "No Error",
            &["idle.a.svc.clusterset.local.\t30\tIN\tA\t10.42.0.2"],
        ),
        (
            "ignore empty_service: not without endpoints",
            |k| k.ignore_empty_service = true,
            "idle.a.svc.clusterset.local.",
            "Non-Existent Domain",
            &[],
        ),
        (
            "ignore empty_service: with endpoints",
            |k| k.ignore_empty_service = true,
            "web.a.svc.clusterset.local.",
            "No Error",
            &["web.a.svc.clusterset.local.\t30\tIN\tA\t10.42.0.1"],
        ),
        (
            "namespaces hides the imports of the others",
            |k| k.namespaces = vec!["a".into()],
            "db.b.svc.clusterset.local.",
            "Non-Existent Domain",
            &[],
        ),
        (
            "labels selects the slices",
            |k| k.labels = Some(crate::selector::LabelSelector::parse("tier=db").unwrap()),
            "web.a.svc.clusterset.local.",
            "No Error",
            &["web.a.svc.clusterset.local.\t30\tIN\tA\t10.42.0.1"],
        ),
        (
            "labels does not select the imports",
            |k| k.labels = Some(crate::selector::LabelSelector::parse("tier=db").unwrap()),
            "10-1-0-1.east.web.a.svc.clusterset.local.",
            "Non-Existent Domain",
            &[],
        ),
        (
            "no multicluster: the zone has Services only",
            |k| k.multicluster.clear(),
            "web.a.svc.clusterset.local.",
            "Non-Existent Domain",
            &[],
        ),
    ];
    for (what, options, name, rcode, answer) in cases {
        let mut config = config(&["cluster.local.", "clusterset.local."]);
        config.multicluster = vec![Name::from_str("clusterset.local.").unwrap()];
        options(&mut config);
        let mut trimmed = cluster.clone();
        crate::zone::trim_cluster(&mut trimmed, &config);
        let snapshot = build(&trimmed, &config, &ctx);
        let (got_rcode, lines) = ask(&snapshot, name, RecordType::A);
        let answers: Vec<&String> = lines.iter().filter(|l| !l.contains("\tSOA\t")).collect();
        assert_eq!(
            (got_rcode.as_str(), answers),
            (
                *rcode,
                answer
                    .iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .iter()
                    .collect()
            ),
            "{what}"
        );
    }
}
