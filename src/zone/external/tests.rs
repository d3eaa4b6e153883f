//! *k8s_external*'s names against the external fixture, through the wire writer, as CoreDNS's
//! `external_test.go` cases are: question, rcode, and every record as zone-file text.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::str::FromStr;

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

use crate::config::{K8sExternalConfig, KubernetesConfig};
use crate::source::read_objects;
use crate::wire::{Request, write_answer};
use crate::zone::zonefile::record_line;
use crate::zone::{BuildContext, Snapshot, build, trim_cluster};

const SOA: &str = "example.org.\t5\tIN\tSOA\tns1.dns.example.org. hostmaster.dns.example.org. 42 7200 1800 86400 5";

fn names(zones: &[&str]) -> Vec<Name> {
    zones.iter().map(|z| Name::from_str(z).unwrap()).collect()
}

fn external(headless: bool) -> K8sExternalConfig {
    K8sExternalConfig {
        zones: names(&["example.org."]),
        apex: "dns".into(),
        ttl: 5,
        headless,
        fallthrough: None,
    }
}

fn config(external: Option<K8sExternalConfig>) -> KubernetesConfig {
    KubernetesConfig {
        namespaces: vec!["default".into(), "shop".into(), "kube-system".into()],
        external,
        ..KubernetesConfig::new(names(&["cluster.local."]), 0, 1)
    }
}

/// The fixture's zone under `config`, from trimmed objects as the publisher keeps them.
fn snapshot(config: &KubernetesConfig, local: &str) -> Snapshot {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/external.json");
    let mut cluster = read_objects(&[path]).unwrap().cluster;
    trim_cluster(&mut cluster, config);
    let ctx = BuildContext {
        local_ips: vec![local.parse().unwrap()],
        serial: 42,
    };
    build(&cluster, config, &ctx)
}

/// The rcode, whether a CNAME target is to be chased, and every record (sorted).
fn ask(snapshot: &Snapshot, name: &str, qtype: RecordType) -> (String, bool, Vec<String>) {
    let mut query = Message::new(7, MessageType::Query, OpCode::Query);
    query.add_query(Query::query(Name::from_str(name).unwrap(), qtype));
    let packet = query.to_vec().unwrap();
    let request = Request::parse(&packet).unwrap();
    let external = snapshot.external().unwrap();
    let answer = external
        .lookup(request.question.name(), request.question.qtype)
        .unwrap();
    let mut out = Vec::new();
    let zone = &external.zones()[answer.zone];
    write_answer(&request, &answer, zone, 4096, false, &mut out);
    let reply = Message::from_vec(&out).unwrap();
    assert!(reply.metadata.authoritative, "{name}: not authoritative");
    let mut lines: Vec<String> = reply
        .answers
        .iter()
        .chain(&reply.authorities)
        .chain(&reply.additionals)
        .map(record_line)
        .collect();
    lines.sort();
    let rcode = reply.metadata.response_code.to_string();
    (rcode, answer.chase.is_some(), lines)
}

type Case<'a> = (&'a str, RecordType, &'a str, &'a [&'a str]);

fn check(snapshot: &Snapshot, cases: &[Case<'_>]) {
    for (name, qtype, rcode, want) in cases {
        let (got_rcode, _, got) = ask(snapshot, name, *qtype);
        let mut want: Vec<String> = want.iter().map(|line| line.replace(' ', "\t")).collect();
        // The SOA's RDATA keeps its spaces.
        for line in &mut want {
            if let Some(at) = line.find("\tSOA\t") {
                let (head, tail) = line.split_at(at + 5);
                *line = format!("{head}{}", tail.replace('\t', " "));
            }
            if let Some(at) = line.find("\tSRV\t") {
                let (head, tail) = line.split_at(at + 5);
                *line = format!("{head}{}", tail.replace('\t', " "));
            }
        }
        want.sort();
        assert_eq!(
            (got_rcode.as_str(), &got),
            (*rcode, &want),
            "{name} {qtype}"
        );
    }
}

const OK: &str = "No Error";
const NX: &str = "Non-Existent Domain";

#[test]
fn services_answer_their_external_addresses() {
    let snapshot = snapshot(&config(Some(external(false))), "127.0.0.1");
    check(
        &snapshot,
        &[
            // A LoadBalancer's ingress IPs.
            (
                "lb.shop.example.org.",
                RecordType::A,
                OK,
                &["lb.shop.example.org. 5 IN A 203.0.113.10"],
            ),
            (
                "lb.shop.example.org.",
                RecordType::AAAA,
                OK,
                &["lb.shop.example.org. 5 IN AAAA 2001:db8::10"],
            ),
            (
                "lb.shop.example.org.",
                RecordType::SRV,
                OK,
                &[
                    "lb.shop.example.org. 5 IN SRV 0 25 80 lb.shop.example.org.",
                    "lb.shop.example.org. 5 IN SRV 0 25 443 lb.shop.example.org.",
                    "lb.shop.example.org. 5 IN A 203.0.113.10",
                    "lb.shop.example.org. 5 IN AAAA 2001:db8::10",
                ],
            ),
            (
                "_https._tcp.lb.shop.example.org.",
                RecordType::SRV,
                OK,
                &[
                    "_https._tcp.lb.shop.example.org. 5 IN SRV 0 50 443 lb.shop.example.org.",
                    "lb.shop.example.org. 5 IN A 203.0.113.10",
                    "lb.shop.example.org. 5 IN AAAA 2001:db8::10",
                ],
            ),
            // CoreDNS strips one underscore from each label.
            (
                "https.tcp.lb.shop.example.org.",
                RecordType::SRV,
                OK,
                &[
                    "https.tcp.lb.shop.example.org. 5 IN SRV 0 50 443 lb.shop.example.org.",
                    "lb.shop.example.org. 5 IN A 203.0.113.10",
                    "lb.shop.example.org. 5 IN AAAA 2001:db8::10",
                ],
            ),
            (
                "_http._udp.lb.shop.example.org.",
                RecordType::SRV,
                NX,
                &[SOA],
            ),
            // Only A, AAAA and SRV: NODATA for the rest.
            ("lb.shop.example.org.", RecordType::TXT, OK, &[SOA]),
            ("lb.shop.example.org.", RecordType::PTR, OK, &[SOA]),
            // spec.externalIPs of a ClusterIP Service.
            (
                "ext.default.example.org.",
                RecordType::A,
                OK,
                &["ext.default.example.org. 5 IN A 192.0.2.30"],
            ),
            ("ext.default.example.org.", RecordType::AAAA, OK, &[SOA]),
            (
                "_dns._udp.ext.default.example.org.",
                RecordType::SRV,
                OK,
                &[
                    "_dns._udp.ext.default.example.org. 5 IN SRV 0 100 53 ext.default.example.org.",
                    "ext.default.example.org. 5 IN A 192.0.2.30",
                ],
            ),
            // No external address, a headless Service without `headless`, a namespace the
            // kubernetes block does not expose: no name.
            ("internal.default.example.org.", RecordType::A, NX, &[SOA]),
            ("headless.default.example.org.", RecordType::A, NX, &[SOA]),
            ("secret.hidden.example.org.", RecordType::A, NX, &[SOA]),
            ("hidden.example.org.", RecordType::A, NX, &[SOA]),
            // An exposed namespace exists, with nothing of its own.
            ("shop.example.org.", RecordType::A, OK, &[SOA]),
            ("a.b.lb.shop.example.org.", RecordType::A, NX, &[SOA]),
        ],
    );
}

#[test]
fn a_load_balancer_hostname_is_a_cname() {
    let snapshot = snapshot(&config(Some(external(false))), "127.0.0.1");
    let (rcode, chase, lines) = ask(&snapshot, "cloud.shop.example.org.", RecordType::A);
    assert_eq!(rcode, OK);
    assert!(chase, "the target is asked through the server");
    assert_eq!(
        lines,
        ["cloud.shop.example.org.\t5\tIN\tCNAME\tlb.cloud.example.net."]
    );
    check(
        &snapshot,
        &[
            (
                "cloud.shop.example.org.",
                RecordType::SRV,
                OK,
                &["cloud.shop.example.org. 5 IN SRV 0 100 80 lb.cloud.example.net."],
            ),
            ("cloud.shop.example.org.", RecordType::CNAME, OK, &[SOA]),
        ],
    );
}

#[test]
fn the_apex_has_soa_ns_and_the_name_server() {
    // 127.0.0.1 is kube-dns's endpoint: the name server is at kube-dns's external address.
    let snapshot = snapshot(&config(Some(external(false))), "127.0.0.1");
    check(
        &snapshot,
        &[
            ("example.org.", RecordType::SOA, OK, &[SOA]),
            (
                "example.org.",
                RecordType::NS,
                OK,
                &[
                    "example.org. 5 IN NS ns1.dns.example.org.",
                    "ns1.dns.example.org. 5 IN A 192.0.2.53",
                ],
            ),
            ("example.org.", RecordType::A, OK, &[SOA]),
            (
                "ns1.dns.example.org.",
                RecordType::A,
                OK,
                &["ns1.dns.example.org. 5 IN A 192.0.2.53"],
            ),
            ("ns1.dns.example.org.", RecordType::AAAA, OK, &[SOA]),
            ("dns.example.org.", RecordType::A, OK, &[SOA]),
            ("ns2.dns.example.org.", RecordType::A, NX, &[SOA]),
            ("a.ns1.dns.example.org.", RecordType::A, NX, &[SOA]),
        ],
    );
    // Elsewhere, no endpoint holds this server's address: the name server is at it.
    let elsewhere = snapshot_at("192.0.2.200");
    check(
        &elsewhere,
        &[(
            "ns1.dns.example.org.",
            RecordType::A,
            OK,
            &["ns1.dns.example.org. 5 IN A 192.0.2.200"],
        )],
    );
}

fn snapshot_at(local: &str) -> Snapshot {
    snapshot(&config(Some(external(false))), local)
}

#[test]
fn apex_ttl_and_fall_through() {
    let mut directive = external(false);
    directive.apex = "testdns".into();
    directive.ttl = 60;
    let snapshot = snapshot(&config(Some(directive)), "127.0.0.1");
    let soa = "example.org.\t60\tIN\tSOA\tns1.testdns.example.org. hostmaster.testdns.example.org. 42 7200 1800 86400 60";
    let (_, _, lines) = ask(&snapshot, "nope.shop.example.org.", RecordType::A);
    assert_eq!(lines, [soa]);
    let (_, _, lines) = ask(&snapshot, "lb.shop.example.org.", RecordType::A);
    assert_eq!(lines, ["lb.shop.example.org.\t60\tIN\tA\t203.0.113.10"]);
    // SRV records and CNAMEs have the kubernetes plugin's TTL (5 here), as CoreDNS writes
    // them; addresses and glue k8s_external's.
    let (_, _, lines) = ask(
        &snapshot,
        "_https._tcp.lb.shop.example.org.",
        RecordType::SRV,
    );
    assert_eq!(
        lines,
        [
            "_https._tcp.lb.shop.example.org.\t5\tIN\tSRV\t0 50 443 lb.shop.example.org.",
            "lb.shop.example.org.\t60\tIN\tA\t203.0.113.10",
            "lb.shop.example.org.\t60\tIN\tAAAA\t2001:db8::10",
        ]
    );
    let (_, _, lines) = ask(&snapshot, "cloud.shop.example.org.", RecordType::A);
    assert_eq!(
        lines,
        ["cloud.shop.example.org.\t5\tIN\tCNAME\tlb.cloud.example.net."]
    );
    let external = snapshot.external().unwrap();
    let wire = |name: &str| {
        crate::name::WireName::from_dotted(name)
            .unwrap()
            .as_bytes()
            .to_vec()
    };
    assert!(external.may_fall_through(0, &wire("nope.shop.example.org.")));
    assert!(!external.may_fall_through(0, &wire("x.testdns.example.org.")));
    assert!(!external.may_fall_through(0, &wire("example.org.")));
    assert!(external.lookup(&wire("cluster.local."), 1).is_none());
}

#[test]
fn headless_services_answer_their_endpoints_under_headless() {
    let snapshot = snapshot(&config(Some(external(true))), "127.0.0.1");
    check(
        &snapshot,
        &[
            (
                "headless.default.example.org.",
                RecordType::A,
                OK,
                &[
                    "headless.default.example.org. 5 IN A 10.244.1.5",
                    "headless.default.example.org. 5 IN A 10.244.1.6",
                ],
            ),
            (
                "web-0.headless.default.example.org.",
                RecordType::A,
                OK,
                &["web-0.headless.default.example.org. 5 IN A 10.244.1.5"],
            ),
            (
                "_http._tcp.headless.default.example.org.",
                RecordType::SRV,
                OK,
                &[
                    "_http._tcp.headless.default.example.org. 5 IN SRV 0 50 8080 web-0.headless.default.example.org.",
                    "_http._tcp.headless.default.example.org. 5 IN SRV 0 50 8080 10-244-1-6.headless.default.example.org.",
                    "web-0.headless.default.example.org. 5 IN A 10.244.1.5",
                    "10-244-1-6.headless.default.example.org. 5 IN A 10.244.1.6",
                ],
            ),
            // A ClusterIP Service without external addresses still has none.
            ("internal.default.example.org.", RecordType::A, NX, &[SOA]),
        ],
    );
}

#[test]
fn without_k8s_external_nothing_is_built_or_kept() {
    let config = config(None);
    let snapshot = snapshot(&config, "127.0.0.1");
    assert!(snapshot.external().is_none());
    let with = self::snapshot(&self::config(Some(external(false))), "127.0.0.1");
    assert_eq!(snapshot.name_count(), with.name_count());
    // The publisher keeps no external address for a block without the plugin.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/external.json");
    let mut cluster = read_objects(&[path]).unwrap().cluster;
    trim_cluster(&mut cluster, &config);
    assert!(cluster.services.values().all(|service| {
        service.external_ips.is_empty()
            && service.load_balancer_ips.is_empty()
            && service.load_balancer_hostnames.is_empty()
    }));
    let mut kept =
        read_objects(&[PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/external.json")])
            .unwrap()
            .cluster;
    trim_cluster(&mut kept, &self::config(Some(external(false))));
    let lb = kept
        .services
        .get(&crate::model::ObjectKey::new("shop", "cloud"))
        .unwrap();
    assert_eq!(lb.load_balancer_hostnames, ["lb.cloud.example.net"]);
}
