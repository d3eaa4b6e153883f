//! The cluster zone's answers, rule by rule (coredns-behaviour.md §1 and §7), asked through
//! the server's request path and written as zone-file text.

use crate::common::{Offline, Reply, expect};

/// The plugin as kubeadm configures it, on the fixture that exercises every rule.
const RULES: &str = r#"
.:53 {
    bind 127.0.0.1
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        ttl 30
        objects {FIXTURES}/rules.json
    }
}
"#;

/// One question and the whole expected answer. Negative answers must carry exactly the
/// SOA of the zone the name falls in; positive ones an empty authority section.
struct Case {
    what: &'static str,
    name: &'static str,
    qtype: &'static str,
    rcode: &'static str,
    answer: &'static [&'static str],
    additional: &'static [&'static str],
}

const fn case(
    what: &'static str,
    name: &'static str,
    qtype: &'static str,
    rcode: &'static str,
    answer: &'static [&'static str],
    additional: &'static [&'static str],
) -> Case {
    Case {
        what,
        name,
        qtype,
        rcode,
        answer,
        additional,
    }
}

const NXDOMAIN: &str = "NXDOMAIN";
const NOERROR: &str = "NOERROR";
const NONE: &[&str] = &[];

fn soa_for(name: &str, ttl: u32) -> String {
    let lower = name.to_ascii_lowercase();
    let zone = [
        "in-addr.arpa.",
        "ip6.arpa.",
        "cluster.local.",
        "other.example.",
    ]
    .into_iter()
    .find(|zone| lower.ends_with(zone))
    .expect("a served zone");
    // The SOA is owned by the zone as the question spells it.
    let spelled = &name[name.len() - zone.len()..];
    format!(
        "{spelled} {} IN SOA ns.dns.{spelled} hostmaster.{spelled} SERIAL 7200 1800 86400 {ttl}",
        ttl.min(300)
    )
}

fn check(server: &Offline, cases: &[Case], ttl: u32) {
    let mut failures = Vec::new();
    for case in cases {
        let reply: Reply = server.ask(case.name, case.qtype);
        let negative = case.rcode == NXDOMAIN || case.answer.is_empty();
        let authority = if negative {
            vec![soa_for(case.name, ttl)]
        } else {
            Vec::new()
        };
        let want = (
            case.rcode.to_owned(),
            true,
            expect(case.answer),
            expect(&authority.iter().map(String::as_str).collect::<Vec<_>>()),
            expect(case.additional),
        );
        let got = (
            reply.rcode.clone(),
            reply.authoritative,
            reply.answer.clone(),
            reply.authority.clone(),
            reply.additional.clone(),
        );
        if want != got {
            failures.push(format!(
                "{} ({} {}):\n  want rcode {} aa {}\n    answer {:#?}\n    authority {:#?}\n    additional {:#?}\n  got rcode {} aa {}\n    answer {:#?}\n    authority {:#?}\n    additional {:#?}",
                case.what, case.name, case.qtype, want.0, want.1, want.2, want.3, want.4, got.0,
                got.1, got.2, got.3, got.4
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn services_endpoints_and_srv() {
    let server = Offline::new(RULES);
    check(
        &server,
        &[
            case(
                "dual-stack ClusterIP A",
                "dual.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["dual.rules.svc.cluster.local. 30 IN A 10.96.1.1"],
                NONE,
            ),
            case(
                "dual-stack ClusterIP AAAA",
                "dual.rules.svc.cluster.local.",
                "AAAA",
                NOERROR,
                &["dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1"],
                NONE,
            ),
            case(
                "SRV on the bare name: every port, weight over ports x addresses",
                "dual.rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                &[
                    "dual.rules.svc.cluster.local. 30 IN SRV 0 25 80 dual.rules.svc.cluster.local.",
                    "dual.rules.svc.cluster.local. 30 IN SRV 0 25 9090 dual.rules.svc.cluster.local.",
                ],
                &[
                    "dual.rules.svc.cluster.local. 30 IN A 10.96.1.1",
                    "dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1",
                ],
            ),
            case(
                "dual-stack named port: one SRV, weight 50, A and AAAA glue",
                "_http._tcp.dual.rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                &[
                    "_http._tcp.dual.rules.svc.cluster.local. 30 IN SRV 0 50 80 dual.rules.svc.cluster.local.",
                ],
                &[
                    "dual.rules.svc.cluster.local. 30 IN A 10.96.1.1",
                    "dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1",
                ],
            ),
            case(
                "A at an SRV name answers the ClusterIP, as CoreDNS does",
                "_http._tcp.dual.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["_http._tcp.dual.rules.svc.cluster.local. 30 IN A 10.96.1.1"],
                NONE,
            ),
            case(
                "protocol mismatch",
                "_http._udp.dual.rules.svc.cluster.local.",
                "SRV",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "unknown port name",
                "_nope._tcp.dual.rules.svc.cluster.local.",
                "SRV",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "underscores are optional",
                "http.tcp.dual.rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                &[
                    "http.tcp.dual.rules.svc.cluster.local. 30 IN SRV 0 50 80 dual.rules.svc.cluster.local.",
                ],
                &[
                    "dual.rules.svc.cluster.local. 30 IN A 10.96.1.1",
                    "dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1",
                ],
            ),
            case(
                "query case kept; targets lower-case",
                "_HTTP._TCP.Dual.Rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                &[
                    "_HTTP._TCP.Dual.Rules.svc.cluster.local. 30 IN SRV 0 50 80 dual.rules.svc.cluster.local.",
                ],
                &[
                    "dual.rules.svc.cluster.local. 30 IN A 10.96.1.1",
                    "dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1",
                ],
            ),
            case(
                "an empty non-terminal exists (RFC 8020)",
                "_tcp.dual.rules.svc.cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "endpoint name of a ClusterIP service",
                "10-244-3-1.dual.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["10-244-3-1.dual.rules.svc.cluster.local. 30 IN A 10.244.3.1"],
                NONE,
            ),
            case(
                "IPv6 endpoint name",
                "fd00-10-244-3--1.dual.rules.svc.cluster.local.",
                "AAAA",
                NOERROR,
                &["fd00-10-244-3--1.dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:244:3::1"],
                NONE,
            ),
            case(
                "SRV at an endpoint name: its ports",
                "10-244-3-1.dual.rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                &[
                    "10-244-3-1.dual.rules.svc.cluster.local. 30 IN SRV 0 50 8080 10-244-3-1.dual.rules.svc.cluster.local.",
                    "10-244-3-1.dual.rules.svc.cluster.local. 30 IN SRV 0 50 9090 10-244-3-1.dual.rules.svc.cluster.local.",
                ],
                &["10-244-3-1.dual.rules.svc.cluster.local. 30 IN A 10.244.3.1"],
            ),
            case(
                "a ClusterIP service without ports has no name",
                "noports.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "portless headless answers A",
                "portless.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &[
                    "portless.rules.svc.cluster.local. 30 IN A 10.244.3.10",
                    "portless.rules.svc.cluster.local. 30 IN A 10.244.3.11",
                ],
                NONE,
            ),
            case(
                "portless headless: bare SRV is NODATA",
                "portless.rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "portless headless: _port._proto is NXDOMAIN",
                "_http._tcp.portless.rules.svc.cluster.local.",
                "SRV",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "headless: ready endpoints only (missing ready counts as ready)",
                "hl.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &[
                    "hl.rules.svc.cluster.local. 30 IN A 10.244.3.20",
                    "hl.rules.svc.cluster.local. 30 IN A 10.244.3.22",
                ],
                NONE,
            ),
            case(
                "headless SRV: endpoints x ports, weight floor(100/4)",
                "hl.rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                &[
                    "hl.rules.svc.cluster.local. 30 IN SRV 0 25 5353 10-244-3-22.hl.rules.svc.cluster.local.",
                    "hl.rules.svc.cluster.local. 30 IN SRV 0 25 5353 alpha.hl.rules.svc.cluster.local.",
                    "hl.rules.svc.cluster.local. 30 IN SRV 0 25 8080 10-244-3-22.hl.rules.svc.cluster.local.",
                    "hl.rules.svc.cluster.local. 30 IN SRV 0 25 8080 alpha.hl.rules.svc.cluster.local.",
                ],
                &[
                    "10-244-3-22.hl.rules.svc.cluster.local. 30 IN A 10.244.3.22",
                    "alpha.hl.rules.svc.cluster.local. 30 IN A 10.244.3.20",
                ],
            ),
            case(
                "headless named port",
                "_web._tcp.hl.rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                &[
                    "_web._tcp.hl.rules.svc.cluster.local. 30 IN SRV 0 50 8080 10-244-3-22.hl.rules.svc.cluster.local.",
                    "_web._tcp.hl.rules.svc.cluster.local. 30 IN SRV 0 50 8080 alpha.hl.rules.svc.cluster.local.",
                ],
                &[
                    "10-244-3-22.hl.rules.svc.cluster.local. 30 IN A 10.244.3.22",
                    "alpha.hl.rules.svc.cluster.local. 30 IN A 10.244.3.20",
                ],
            ),
            case(
                "headless UDP port",
                "_dns._udp.hl.rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                &[
                    "_dns._udp.hl.rules.svc.cluster.local. 30 IN SRV 0 50 5353 10-244-3-22.hl.rules.svc.cluster.local.",
                    "_dns._udp.hl.rules.svc.cluster.local. 30 IN SRV 0 50 5353 alpha.hl.rules.svc.cluster.local.",
                ],
                &[
                    "10-244-3-22.hl.rules.svc.cluster.local. 30 IN A 10.244.3.22",
                    "alpha.hl.rules.svc.cluster.local. 30 IN A 10.244.3.20",
                ],
            ),
            case(
                "headless port under the wrong protocol",
                "_dns._tcp.hl.rules.svc.cluster.local.",
                "SRV",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "hostname endpoint",
                "alpha.hl.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["alpha.hl.rules.svc.cluster.local. 30 IN A 10.244.3.20"],
                NONE,
            ),
            case(
                "an endpoint with a hostname has no dashed name",
                "10-244-3-20.hl.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "a not-ready endpoint has no name",
                "10-244-3-21.hl.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "three endpoints: weight 33",
                "trio.rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                &[
                    "trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 10-244-3-31.trio.rules.svc.cluster.local.",
                    "trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 10-244-3-32.trio.rules.svc.cluster.local.",
                    "trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 10-244-3-33.trio.rules.svc.cluster.local.",
                ],
                &[
                    "10-244-3-31.trio.rules.svc.cluster.local. 30 IN A 10.244.3.31",
                    "10-244-3-32.trio.rules.svc.cluster.local. 30 IN A 10.244.3.32",
                    "10-244-3-33.trio.rules.svc.cluster.local. 30 IN A 10.244.3.33",
                ],
            ),
            case(
                "a service with no endpoints still answers",
                "vacant.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["vacant.rules.svc.cluster.local. 30 IN A 10.96.1.6"],
                NONE,
            ),
            case(
                "AAAA for an IPv4 service is NODATA",
                "web4.rules.svc.cluster.local.",
                "AAAA",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "MX at a service is NODATA",
                "web4.rules.svc.cluster.local.",
                "MX",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "TXT at a service is NODATA",
                "web4.rules.svc.cluster.local.",
                "TXT",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "SOA below the apex is NODATA for a name that exists",
                "web4.rules.svc.cluster.local.",
                "SOA",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "unknown service",
                "nope.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "SOA at a missing name is NXDOMAIN (RFC 8020)",
                "nope.rules.svc.cluster.local.",
                "SOA",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "too many labels",
                "a.b.c.dual.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "query case kept in owner and SOA",
                "WEB4.Rules.SVC.Cluster.Local.",
                "A",
                NOERROR,
                &["WEB4.Rules.SVC.Cluster.Local. 30 IN A 10.96.1.4"],
                NONE,
            ),
            case(
                "NXDOMAIN SOA spelled as asked",
                "Nope.Rules.svc.Cluster.Local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn external_names() {
    let server = Offline::new(RULES);
    check(
        &server,
        &[
            case(
                "ExternalName: the CNAME (no forwarder to chase it)",
                "ext.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["ext.rules.svc.cluster.local. 30 IN CNAME www.example.com."],
                NONE,
            ),
            case(
                "ExternalName CNAME query",
                "ext.rules.svc.cluster.local.",
                "CNAME",
                NOERROR,
                &["ext.rules.svc.cluster.local. 30 IN CNAME www.example.com."],
                NONE,
            ),
            case(
                "ExternalName SRV on the bare name is NODATA",
                "ext.rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "ExternalName has no port names",
                "_http._tcp.ext.rules.svc.cluster.local.",
                "SRV",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "ExternalName has no endpoint names",
                "x.ext.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "ExternalName TXT is chased like A (CoreDNS plugin.TXT): the CNAME, no forwarder",
                "ext.rules.svc.cluster.local.",
                "TXT",
                NOERROR,
                &["ext.rules.svc.cluster.local. 30 IN CNAME www.example.com."],
                NONE,
            ),
            case(
                "in-zone target: CNAME then the target's A",
                "ext-in.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &[
                    "ext-in.rules.svc.cluster.local. 30 IN CNAME dual.rules.svc.cluster.local.",
                    "dual.rules.svc.cluster.local. 30 IN A 10.96.1.1",
                ],
                NONE,
            ),
            case(
                "in-zone target: CNAME then the target's AAAA",
                "ext-in.rules.svc.cluster.local.",
                "AAAA",
                NOERROR,
                &[
                    "ext-in.rules.svc.cluster.local. 30 IN CNAME dual.rules.svc.cluster.local.",
                    "dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1",
                ],
                NONE,
            ),
            case(
                "AAAA for an IPv4-only in-zone target: NODATA without the CNAME",
                "ext-v4.rules.svc.cluster.local.",
                "AAAA",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "A for an IPv4-only in-zone target",
                "ext-v4.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &[
                    "ext-v4.rules.svc.cluster.local. 30 IN CNAME web4.rules.svc.cluster.local.",
                    "web4.rules.svc.cluster.local. 30 IN A 10.96.1.4",
                ],
                NONE,
            ),
            case(
                "IP-literal externalName is NXDOMAIN",
                "ext-ip.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn reverse_lookups() {
    let server = Offline::new(RULES);
    check(
        &server,
        &[
            case(
                "ClusterIP PTR",
                "1.1.96.10.in-addr.arpa.",
                "PTR",
                NOERROR,
                &["1.1.96.10.in-addr.arpa. 30 IN PTR dual.rules.svc.cluster.local."],
                NONE,
            ),
            case(
                "IPv6 ClusterIP PTR",
                "1.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa.",
                "PTR",
                NOERROR,
                &[
                    "1.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa. 30 IN PTR dual.rules.svc.cluster.local.",
                ],
                NONE,
            ),
            case(
                "an endpoint IP in two services: one PTR each",
                "4.3.244.10.in-addr.arpa.",
                "PTR",
                NOERROR,
                &[
                    "4.3.244.10.in-addr.arpa. 30 IN PTR 10-244-3-4.shared.rules.svc.cluster.local.",
                    "4.3.244.10.in-addr.arpa. 30 IN PTR 10-244-3-4.web4.rules.svc.cluster.local.",
                ],
                NONE,
            ),
            case(
                "hostname endpoint PTR",
                "20.3.244.10.in-addr.arpa.",
                "PTR",
                NOERROR,
                &["20.3.244.10.in-addr.arpa. 30 IN PTR alpha.hl.rules.svc.cluster.local."],
                NONE,
            ),
            case(
                "not-ready endpoint: no PTR",
                "21.3.244.10.in-addr.arpa.",
                "PTR",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "unknown address",
                "9.9.9.9.in-addr.arpa.",
                "PTR",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "A at a name that owns a PTR is NODATA (RFC 8020)",
                "1.1.96.10.in-addr.arpa.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "a partial reverse name above PTRs exists",
                "96.10.in-addr.arpa.",
                "PTR",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "reverse apex SOA",
                "in-addr.arpa.",
                "SOA",
                NOERROR,
                &[
                    "in-addr.arpa. 30 IN SOA ns.dns.in-addr.arpa. hostmaster.in-addr.arpa. SERIAL 7200 1800 86400 30",
                ],
                NONE,
            ),
            case(
                "pods never get PTRs",
                "99.3.244.10.in-addr.arpa.",
                "PTR",
                NXDOMAIN,
                NONE,
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn apex_namespaces_and_pods() {
    let server = Offline::new(RULES);
    check(
        &server,
        &[
            case(
                "apex SOA",
                "cluster.local.",
                "SOA",
                NOERROR,
                &[
                    "cluster.local. 30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. SERIAL 7200 1800 86400 30",
                ],
                NONE,
            ),
            case(
                "apex SOA keeps the query's spelling",
                "Cluster.LOCAL.",
                "SOA",
                NOERROR,
                &[
                    "Cluster.LOCAL. 30 IN SOA ns.dns.Cluster.LOCAL. hostmaster.Cluster.LOCAL. SERIAL 7200 1800 86400 30",
                ],
                NONE,
            ),
            case(
                "apex NS with glue",
                "cluster.local.",
                "NS",
                NOERROR,
                &["cluster.local. 30 IN NS ns.dns.cluster.local."],
                &["ns.dns.cluster.local. 30 IN A 127.0.0.1"],
            ),
            case(
                "apex A is NODATA",
                "cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "apex TXT is NODATA (RFC 8020)",
                "cluster.local.",
                "TXT",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "ns.dns",
                "ns.dns.cluster.local.",
                "A",
                NOERROR,
                &["ns.dns.cluster.local. 30 IN A 127.0.0.1"],
                NONE,
            ),
            case(
                "ns.dns TXT is NODATA (RFC 8020)",
                "ns.dns.cluster.local.",
                "TXT",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "dns is an empty non-terminal",
                "dns.cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "schema version",
                "dns-version.cluster.local.",
                "TXT",
                NOERROR,
                &["dns-version.cluster.local. 28800 IN TXT \"1.1.0\""],
                NONE,
            ),
            case(
                "schema version A is NODATA (RFC 8020)",
                "dns-version.cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "svc.<zone> is NODATA",
                "svc.cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "pod.<zone> is NODATA",
                "pod.cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "label after the zone not svc/pod",
                "x.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "namespace with services",
                "rules.svc.cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "namespace without services is NODATA",
                "quiet.svc.cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "missing namespace",
                "missing.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "service in a missing namespace",
                "dual.missing.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "pods insecure: A from the name",
                "10-244-3-1.rules.pod.cluster.local.",
                "A",
                NOERROR,
                &["10-244-3-1.rules.pod.cluster.local. 30 IN A 10.244.3.1"],
                NONE,
            ),
            case(
                "pods insecure: no pod needed",
                "1-2-3-4.quiet.pod.cluster.local.",
                "A",
                NOERROR,
                &["1-2-3-4.quiet.pod.cluster.local. 30 IN A 1.2.3.4"],
                NONE,
            ),
            case(
                "pods insecure: AAAA of an IPv4 name is NODATA",
                "10-244-3-1.rules.pod.cluster.local.",
                "AAAA",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "pods insecure: IPv6",
                "fd00-10-244-3--1.rules.pod.cluster.local.",
                "AAAA",
                NOERROR,
                &["fd00-10-244-3--1.rules.pod.cluster.local. 30 IN AAAA fd00:10:244:3::1"],
                NONE,
            ),
            case(
                "pods insecure: four dashes is not IPv4 nor IPv6",
                "1-2-3-4-5.rules.pod.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "pods insecure: not an address",
                "blah.rules.pod.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "pods insecure: the namespace must exist",
                "1-2-3-4.missing.pod.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "<ns>.pod is NODATA",
                "rules.pod.cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn names_outside_the_zones_are_refused() {
    let server = Offline::new(RULES);
    let reply = server.ask("www.example.com.", "A");
    assert_eq!(reply.rcode, "REFUSED");
    assert!(reply.answer.is_empty() && reply.authority.is_empty());
}

/// The rules fixture with other plugin options.
fn rules_with(zones: &str, options: &str) -> Offline {
    Offline::new(&format!(
        r#"
.:53 {{
    bind 127.0.0.1
    kubernetes {zones} {{
        {options}
        objects {{FIXTURES}}/rules.json
    }}
}}
"#
    ))
}

const ZONES: &str = "cluster.local in-addr.arpa ip6.arpa";

#[test]
fn pods_disabled_is_the_default() {
    let server = rules_with(ZONES, "ttl 30");
    check(
        &server,
        &[
            case(
                "no pod names",
                "10-244-3-1.rules.pod.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "<ns>.pod is NXDOMAIN",
                "rules.pod.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "pod.<zone> is still NODATA",
                "pod.cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn pods_verified() {
    let server = rules_with(ZONES, "pods verified\nttl 30");
    check(
        &server,
        &[
            case(
                "a running pod",
                "10-244-3-1.rules.pod.cluster.local.",
                "A",
                NOERROR,
                &["10-244-3-1.rules.pod.cluster.local. 30 IN A 10.244.3.1"],
                NONE,
            ),
            case(
                "a finished pod has no name",
                "10-244-3-99.rules.pod.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "a pod of another namespace",
                "10-244-4-1.rules.pod.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "in its own namespace",
                "10-244-4-1.other.pod.cluster.local.",
                "A",
                NOERROR,
                &["10-244-4-1.other.pod.cluster.local. 30 IN A 10.244.4.1"],
                NONE,
            ),
            case(
                "no pod at that address",
                "1-2-3-4.rules.pod.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn endpoint_pod_names() {
    let server = rules_with(ZONES, "endpoint_pod_names\nttl 30");
    check(
        &server,
        &[
            case(
                "pod name as endpoint label",
                "trio-0.trio.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["trio-0.trio.rules.svc.cluster.local. 30 IN A 10.244.3.31"],
                NONE,
            ),
            case(
                "no dashed name then",
                "10-244-3-31.trio.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "a hostname still wins",
                "alpha.hl.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["alpha.hl.rules.svc.cluster.local. 30 IN A 10.244.3.20"],
                NONE,
            ),
            case(
                "SRV targets use pod names",
                "_grpc._tcp.trio.rules.svc.cluster.local.",
                "SRV",
                NOERROR,
                &[
                    "_grpc._tcp.trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 trio-0.trio.rules.svc.cluster.local.",
                    "_grpc._tcp.trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 trio-1.trio.rules.svc.cluster.local.",
                    "_grpc._tcp.trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 trio-2.trio.rules.svc.cluster.local.",
                ],
                &[
                    "trio-0.trio.rules.svc.cluster.local. 30 IN A 10.244.3.31",
                    "trio-1.trio.rules.svc.cluster.local. 30 IN A 10.244.3.32",
                    "trio-2.trio.rules.svc.cluster.local. 30 IN A 10.244.3.33",
                ],
            ),
            case(
                "PTR uses the pod name",
                "31.3.244.10.in-addr.arpa.",
                "PTR",
                NOERROR,
                &["31.3.244.10.in-addr.arpa. 30 IN PTR trio-0.trio.rules.svc.cluster.local."],
                NONE,
            ),
            case(
                "an endpoint without targetRef keeps its dashed name",
                "10-244-3-10.portless.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["10-244-3-10.portless.rules.svc.cluster.local. 30 IN A 10.244.3.10"],
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn namespaces_option() {
    let server = rules_with(ZONES, "namespaces rules quiet\nttl 30");
    check(
        &server,
        &[
            case(
                "listed namespace",
                "web4.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["web4.rules.svc.cluster.local. 30 IN A 10.96.1.4"],
                NONE,
            ),
            case(
                "unlisted namespace's service",
                "api.other.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "unlisted namespace",
                "other.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "unlisted namespace's ClusterIP PTR",
                "1.2.96.10.in-addr.arpa.",
                "PTR",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "unlisted namespace's endpoint PTR",
                "1.4.244.10.in-addr.arpa.",
                "PTR",
                NXDOMAIN,
                NONE,
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn namespace_labels_option() {
    let server = rules_with(ZONES, "namespace_labels team=b\nttl 30");
    check(
        &server,
        &[
            case(
                "matching namespace",
                "api.other.svc.cluster.local.",
                "A",
                NOERROR,
                &["api.other.svc.cluster.local. 30 IN A 10.96.2.1"],
                NONE,
            ),
            case(
                "other namespaces are not exposed",
                "web4.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "nor their namespace names",
                "quiet.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn labels_option() {
    let hidden = "hidden.rules.svc.cluster.local.";
    check(
        &rules_with(ZONES, "ttl 30"),
        &[case(
            "visible without the option",
            hidden,
            "A",
            NOERROR,
            &["hidden.rules.svc.cluster.local. 30 IN A 10.96.1.7"],
            NONE,
        )],
        30,
    );
    check(
        &rules_with(ZONES, "labels visible!=no\nttl 30"),
        &[
            case("filtered out", hidden, "A", NXDOMAIN, NONE, NONE),
            case(
                "others stay",
                "web4.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["web4.rules.svc.cluster.local. 30 IN A 10.96.1.4"],
                NONE,
            ),
            case(
                "its PTR goes too",
                "7.1.96.10.in-addr.arpa.",
                "PTR",
                NXDOMAIN,
                NONE,
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn noendpoints_option() {
    let server = rules_with(ZONES, "noendpoints\nttl 30");
    check(
        &server,
        &[
            case(
                "ClusterIP still answers",
                "dual.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["dual.rules.svc.cluster.local. 30 IN A 10.96.1.1"],
                NONE,
            ),
            case(
                "headless is NXDOMAIN",
                "hl.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "endpoint names are NXDOMAIN",
                "10-244-3-1.dual.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "endpoint PTRs are gone",
                "20.3.244.10.in-addr.arpa.",
                "PTR",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "ClusterIP PTRs stay",
                "1.1.96.10.in-addr.arpa.",
                "PTR",
                NOERROR,
                &["1.1.96.10.in-addr.arpa. 30 IN PTR dual.rules.svc.cluster.local."],
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn ignore_empty_service_option() {
    let server = rules_with(ZONES, "ignore empty_service\nttl 30");
    check(
        &server,
        &[
            case(
                "no ready endpoint: NXDOMAIN",
                "vacant.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "one ready endpoint is enough",
                "web4.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["web4.rules.svc.cluster.local. 30 IN A 10.96.1.4"],
                NONE,
            ),
            case(
                "headless is not affected",
                "portless.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &[
                    "portless.rules.svc.cluster.local. 30 IN A 10.244.3.10",
                    "portless.rules.svc.cluster.local. 30 IN A 10.244.3.11",
                ],
                NONE,
            ),
            case(
                "ExternalName is not affected",
                "ext.rules.svc.cluster.local.",
                "CNAME",
                NOERROR,
                &["ext.rules.svc.cluster.local. 30 IN CNAME www.example.com."],
                NONE,
            ),
        ],
        30,
    );
}

#[test]
fn ttl_option_sets_records_and_soa() {
    check(
        &rules_with(ZONES, ""),
        &[
            case(
                "default ttl 5",
                "web4.rules.svc.cluster.local.",
                "A",
                NOERROR,
                &["web4.rules.svc.cluster.local. 5 IN A 10.96.1.4"],
                NONE,
            ),
            case(
                "negative answers carry SOA minimum 5",
                "nope.rules.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "dns-version keeps 28800",
                "dns-version.cluster.local.",
                "TXT",
                NOERROR,
                &["dns-version.cluster.local. 28800 IN TXT \"1.1.0\""],
                NONE,
            ),
        ],
        5,
    );
    check(
        &rules_with(ZONES, "ttl 600"),
        &[case(
            "SOA record TTL capped at 300, minimum 600",
            "cluster.local.",
            "SOA",
            NOERROR,
            &[
                "cluster.local. 300 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. SERIAL 7200 1800 86400 600",
            ],
            NONE,
        )],
        600,
    );
}

#[test]
fn fallthrough_passes_nxdomain_on() {
    // Nothing follows the plugin in this build's chain, so what falls through is refused;
    // without fallthrough the NXDOMAIN is the answer.
    let with = rules_with(ZONES, "ttl 30\nfallthrough in-addr.arpa ip6.arpa");
    assert_eq!(with.ask("9.9.9.9.in-addr.arpa.", "PTR").rcode, "REFUSED");
    assert_eq!(with.ask("1.1.96.10.in-addr.arpa.", "PTR").rcode, "NOERROR");
    assert_eq!(
        with.ask("nope.rules.svc.cluster.local.", "A").rcode,
        "NXDOMAIN"
    );
    let all = rules_with(ZONES, "ttl 30\nfallthrough");
    assert_eq!(
        all.ask("nope.rules.svc.cluster.local.", "A").rcode,
        "REFUSED"
    );
    assert_eq!(
        all.ask("web4.rules.svc.cluster.local.", "AAAA").rcode,
        "NOERROR",
        "NODATA does not fall through"
    );
    let without = rules_with(ZONES, "ttl 30");
    assert_eq!(
        without.ask("9.9.9.9.in-addr.arpa.", "PTR").rcode,
        "NXDOMAIN"
    );
}

#[test]
fn several_zones_and_the_primary_zone() {
    let server = rules_with("cluster.local other.example in-addr.arpa", "ttl 30");
    check(
        &server,
        &[
            case(
                "names in the second zone",
                "web4.rules.svc.other.example.",
                "A",
                NOERROR,
                &["web4.rules.svc.other.example. 30 IN A 10.96.1.4"],
                NONE,
            ),
            case(
                "its own SOA",
                "nope.rules.svc.other.example.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "SRV targets in the asked zone",
                "_http._tcp.web4.rules.svc.other.example.",
                "SRV",
                NOERROR,
                &[
                    "_http._tcp.web4.rules.svc.other.example. 30 IN SRV 0 100 80 web4.rules.svc.other.example.",
                ],
                &["web4.rules.svc.other.example. 30 IN A 10.96.1.4"],
            ),
            case(
                "PTR targets use the first (primary) zone",
                "4.1.96.10.in-addr.arpa.",
                "PTR",
                NOERROR,
                &["4.1.96.10.in-addr.arpa. 30 IN PTR web4.rules.svc.cluster.local."],
                NONE,
            ),
        ],
        30,
    );
    // ip6.arpa is not served here.
    let v6 = server.ask(
        "1.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa.",
        "PTR",
    );
    assert_eq!(v6.rcode, "REFUSED");
}

#[test]
fn srv_targets_take_the_zone_as_asked() {
    let server = Offline::new(RULES);
    let reply = server.ask("_http._tcp.web4.rules.svc.Cluster.Local.", "SRV");
    assert_eq!(
        reply.answer,
        expect(&[
            "_http._tcp.web4.rules.svc.Cluster.Local. 30 IN SRV 0 100 80 web4.rules.svc.Cluster.Local."
        ])
    );
    assert_eq!(
        reply.additional,
        expect(&["web4.rules.svc.Cluster.Local. 30 IN A 10.96.1.4"])
    );
}

/// `zonal` (CoreDNS ≥ 1.14): a headless Service's endpoints in one topology zone, by name.
#[test]
fn zonal_option() {
    let server = Offline::new(
        r#"
.:53 {
    bind 127.0.0.1
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        zonal
        ttl 30
        objects {FIXTURES}/zonal.json
    }
}
"#,
    );
    check(
        &server,
        &[
            case(
                "pin: that zone's endpoints (zone labels compared in lower case)",
                "us-west-2a.pin._zone.db.prod.svc.cluster.local.",
                "A",
                NOERROR,
                &[
                    "us-west-2a.pin._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.1",
                    "us-west-2a.pin._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.2",
                ],
                NONE,
            ),
            case(
                "prefer: the same while the zone has endpoints",
                "us-west-2a.prefer._zone.db.prod.svc.cluster.local.",
                "A",
                NOERROR,
                &[
                    "us-west-2a.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.1",
                    "us-west-2a.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.2",
                ],
                NONE,
            ),
            case(
                "a zone value with dots spans labels",
                "corp.example.com.pin._zone.db.prod.svc.cluster.local.",
                "A",
                NOERROR,
                &["corp.example.com.pin._zone.db.prod.svc.cluster.local. 30 IN A 10.244.3.1"],
                NONE,
            ),
            case(
                "SRV and glue from the zone's endpoints",
                "us-west-2b.pin._zone.db.prod.svc.cluster.local.",
                "SRV",
                NOERROR,
                &[
                    "us-west-2b.pin._zone.db.prod.svc.cluster.local. 30 IN SRV 0 100 5432 db-2.db.prod.svc.cluster.local.",
                ],
                &["db-2.db.prod.svc.cluster.local. 30 IN A 10.244.2.1"],
            ),
            case(
                "pin: a zone with no ready endpoint is NODATA",
                "us-west-2c.pin._zone.db.prod.svc.cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "pin: so is a mistyped one",
                "nowhere.pin._zone.db.prod.svc.cluster.local.",
                "A",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "prefer: a zone with none falls back to every endpoint",
                "nowhere.prefer._zone.db.prod.svc.cluster.local.",
                "A",
                NOERROR,
                &[
                    "nowhere.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.1",
                    "nowhere.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.2",
                    "nowhere.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.2.1",
                    "nowhere.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.3.1",
                ],
                NONE,
            ),
            case(
                "prefer: other types are NODATA",
                "nowhere.prefer._zone.db.prod.svc.cluster.local.",
                "TXT",
                NOERROR,
                NONE,
                NONE,
            ),
            case(
                "an unknown directive is NXDOMAIN",
                "us-west-2a.nearest._zone.db.prod.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "zonal names are for headless Services only",
                "us-west-2a.pin._zone.web.prod.svc.cluster.local.",
                "A",
                NXDOMAIN,
                NONE,
                NONE,
            ),
            case(
                "the Service's own name is unchanged",
                "db.prod.svc.cluster.local.",
                "A",
                NOERROR,
                &[
                    "db.prod.svc.cluster.local. 30 IN A 10.244.1.1",
                    "db.prod.svc.cluster.local. 30 IN A 10.244.1.2",
                    "db.prod.svc.cluster.local. 30 IN A 10.244.2.1",
                    "db.prod.svc.cluster.local. 30 IN A 10.244.3.1",
                ],
                NONE,
            ),
        ],
        30,
    );

    // Without the option the names are what they always were: too long, NXDOMAIN.
    let plain = Offline::new(
        r#"
.:53 {
    bind 127.0.0.1
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        ttl 30
        objects {FIXTURES}/zonal.json
    }
}
"#,
    );
    for name in [
        "us-west-2a.pin._zone.db.prod.svc.cluster.local.",
        "nowhere.prefer._zone.db.prod.svc.cluster.local.",
    ] {
        assert_eq!(plain.ask(name, "A").rcode, NXDOMAIN, "{name}");
    }
}
