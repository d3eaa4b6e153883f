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
/// SOA of the zone the name falls in; positive ones an empty authority section. A section
/// left out (`..Default::default()`) is empty.
#[derive(Default)]
struct Case {
    /// What the case shows, for the failure message.
    what: &'static str,
    /// The question's name.
    name: &'static str,
    /// The question's type.
    qtype: &'static str,
    /// The answer's rcode.
    rcode: &'static str,
    /// The answer section, as zone-file lines.
    answer: &'static [&'static str],
    /// The additional section, as zone-file lines.
    additional: &'static [&'static str],
}

const NXDOMAIN: &str = "NXDOMAIN";
const NOERROR: &str = "NOERROR";

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
            Case {
                what: "dual-stack ClusterIP A",
                name: "dual.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["dual.rules.svc.cluster.local. 30 IN A 10.96.1.1"],
                ..Default::default()
            },
            Case {
                what: "dual-stack ClusterIP AAAA",
                name: "dual.rules.svc.cluster.local.",
                qtype: "AAAA",
                rcode: NOERROR,
                answer: &["dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1"],
                ..Default::default()
            },
            Case {
                what: "SRV on the bare name: every port, weight over ports x addresses",
                name: "dual.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "dual.rules.svc.cluster.local. 30 IN SRV 0 25 80 dual.rules.svc.cluster.local.",
                    "dual.rules.svc.cluster.local. 30 IN SRV 0 25 9090 dual.rules.svc.cluster.local.",
                ],
                additional: &[
                    "dual.rules.svc.cluster.local. 30 IN A 10.96.1.1",
                    "dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1",
                ],
            },
            Case {
                what: "dual-stack named port: one SRV, weight 50, A and AAAA glue",
                name: "_http._tcp.dual.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "_http._tcp.dual.rules.svc.cluster.local. 30 IN SRV 0 50 80 dual.rules.svc.cluster.local.",
                ],
                additional: &[
                    "dual.rules.svc.cluster.local. 30 IN A 10.96.1.1",
                    "dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1",
                ],
            },
            Case {
                what: "A at an SRV name answers the ClusterIP, as CoreDNS does",
                name: "_http._tcp.dual.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["_http._tcp.dual.rules.svc.cluster.local. 30 IN A 10.96.1.1"],
                ..Default::default()
            },
            Case {
                what: "protocol mismatch",
                name: "_http._udp.dual.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "unknown port name",
                name: "_nope._tcp.dual.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "underscores are optional",
                name: "http.tcp.dual.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "http.tcp.dual.rules.svc.cluster.local. 30 IN SRV 0 50 80 dual.rules.svc.cluster.local.",
                ],
                additional: &[
                    "dual.rules.svc.cluster.local. 30 IN A 10.96.1.1",
                    "dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1",
                ],
            },
            Case {
                what: "query case kept; targets lower-case",
                name: "_HTTP._TCP.Dual.Rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "_HTTP._TCP.Dual.Rules.svc.cluster.local. 30 IN SRV 0 50 80 dual.rules.svc.cluster.local.",
                ],
                additional: &[
                    "dual.rules.svc.cluster.local. 30 IN A 10.96.1.1",
                    "dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1",
                ],
            },
            Case {
                what: "an empty non-terminal exists (RFC 8020)",
                name: "_tcp.dual.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "endpoint name of a ClusterIP service",
                name: "10-244-3-1.dual.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["10-244-3-1.dual.rules.svc.cluster.local. 30 IN A 10.244.3.1"],
                ..Default::default()
            },
            Case {
                what: "IPv6 endpoint name",
                name: "fd00-10-244-3--1.dual.rules.svc.cluster.local.",
                qtype: "AAAA",
                rcode: NOERROR,
                answer: &[
                    "fd00-10-244-3--1.dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:244:3::1",
                ],
                ..Default::default()
            },
            Case {
                what: "SRV at an endpoint name: its ports",
                name: "10-244-3-1.dual.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "10-244-3-1.dual.rules.svc.cluster.local. 30 IN SRV 0 50 8080 10-244-3-1.dual.rules.svc.cluster.local.",
                    "10-244-3-1.dual.rules.svc.cluster.local. 30 IN SRV 0 50 9090 10-244-3-1.dual.rules.svc.cluster.local.",
                ],
                additional: &["10-244-3-1.dual.rules.svc.cluster.local. 30 IN A 10.244.3.1"],
            },
            Case {
                what: "a ClusterIP service without ports has no name",
                name: "noports.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "portless headless answers A",
                name: "portless.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &[
                    "portless.rules.svc.cluster.local. 30 IN A 10.244.3.10",
                    "portless.rules.svc.cluster.local. 30 IN A 10.244.3.11",
                ],
                ..Default::default()
            },
            Case {
                what: "portless headless: bare SRV is NODATA",
                name: "portless.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "portless headless: _port._proto is NXDOMAIN",
                name: "_http._tcp.portless.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "headless: ready endpoints only (missing ready counts as ready)",
                name: "hl.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &[
                    "hl.rules.svc.cluster.local. 30 IN A 10.244.3.20",
                    "hl.rules.svc.cluster.local. 30 IN A 10.244.3.22",
                ],
                ..Default::default()
            },
            Case {
                what: "headless SRV: endpoints x ports, weight floor(100/4)",
                name: "hl.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "hl.rules.svc.cluster.local. 30 IN SRV 0 25 5353 10-244-3-22.hl.rules.svc.cluster.local.",
                    "hl.rules.svc.cluster.local. 30 IN SRV 0 25 5353 alpha.hl.rules.svc.cluster.local.",
                    "hl.rules.svc.cluster.local. 30 IN SRV 0 25 8080 10-244-3-22.hl.rules.svc.cluster.local.",
                    "hl.rules.svc.cluster.local. 30 IN SRV 0 25 8080 alpha.hl.rules.svc.cluster.local.",
                ],
                additional: &[
                    "10-244-3-22.hl.rules.svc.cluster.local. 30 IN A 10.244.3.22",
                    "alpha.hl.rules.svc.cluster.local. 30 IN A 10.244.3.20",
                ],
            },
            Case {
                what: "headless named port",
                name: "_web._tcp.hl.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "_web._tcp.hl.rules.svc.cluster.local. 30 IN SRV 0 50 8080 10-244-3-22.hl.rules.svc.cluster.local.",
                    "_web._tcp.hl.rules.svc.cluster.local. 30 IN SRV 0 50 8080 alpha.hl.rules.svc.cluster.local.",
                ],
                additional: &[
                    "10-244-3-22.hl.rules.svc.cluster.local. 30 IN A 10.244.3.22",
                    "alpha.hl.rules.svc.cluster.local. 30 IN A 10.244.3.20",
                ],
            },
            Case {
                what: "headless UDP port",
                name: "_dns._udp.hl.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "_dns._udp.hl.rules.svc.cluster.local. 30 IN SRV 0 50 5353 10-244-3-22.hl.rules.svc.cluster.local.",
                    "_dns._udp.hl.rules.svc.cluster.local. 30 IN SRV 0 50 5353 alpha.hl.rules.svc.cluster.local.",
                ],
                additional: &[
                    "10-244-3-22.hl.rules.svc.cluster.local. 30 IN A 10.244.3.22",
                    "alpha.hl.rules.svc.cluster.local. 30 IN A 10.244.3.20",
                ],
            },
            Case {
                what: "headless port under the wrong protocol",
                name: "_dns._tcp.hl.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "hostname endpoint",
                name: "alpha.hl.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["alpha.hl.rules.svc.cluster.local. 30 IN A 10.244.3.20"],
                ..Default::default()
            },
            Case {
                what: "an endpoint with a hostname has no dashed name",
                name: "10-244-3-20.hl.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "a not-ready endpoint has no name",
                name: "10-244-3-21.hl.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "three endpoints: weight 33",
                name: "trio.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 10-244-3-31.trio.rules.svc.cluster.local.",
                    "trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 10-244-3-32.trio.rules.svc.cluster.local.",
                    "trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 10-244-3-33.trio.rules.svc.cluster.local.",
                ],
                additional: &[
                    "10-244-3-31.trio.rules.svc.cluster.local. 30 IN A 10.244.3.31",
                    "10-244-3-32.trio.rules.svc.cluster.local. 30 IN A 10.244.3.32",
                    "10-244-3-33.trio.rules.svc.cluster.local. 30 IN A 10.244.3.33",
                ],
            },
            Case {
                what: "a service with no endpoints still answers",
                name: "vacant.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["vacant.rules.svc.cluster.local. 30 IN A 10.96.1.6"],
                ..Default::default()
            },
            Case {
                what: "AAAA for an IPv4 service is NODATA",
                name: "web4.rules.svc.cluster.local.",
                qtype: "AAAA",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "MX at a service is NODATA",
                name: "web4.rules.svc.cluster.local.",
                qtype: "MX",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "TXT at a service is NODATA",
                name: "web4.rules.svc.cluster.local.",
                qtype: "TXT",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "SOA below the apex is NODATA for a name that exists",
                name: "web4.rules.svc.cluster.local.",
                qtype: "SOA",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "unknown service",
                name: "nope.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "SOA at a missing name is NXDOMAIN (RFC 8020)",
                name: "nope.rules.svc.cluster.local.",
                qtype: "SOA",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "too many labels",
                name: "a.b.c.dual.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "query case kept in owner and SOA",
                name: "WEB4.Rules.SVC.Cluster.Local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["WEB4.Rules.SVC.Cluster.Local. 30 IN A 10.96.1.4"],
                ..Default::default()
            },
            Case {
                what: "NXDOMAIN SOA spelled as asked",
                name: "Nope.Rules.svc.Cluster.Local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
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
            Case {
                what: "ExternalName: the CNAME (no forwarder to chase it)",
                name: "ext.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["ext.rules.svc.cluster.local. 30 IN CNAME www.example.com."],
                ..Default::default()
            },
            Case {
                what: "ExternalName CNAME query",
                name: "ext.rules.svc.cluster.local.",
                qtype: "CNAME",
                rcode: NOERROR,
                answer: &["ext.rules.svc.cluster.local. 30 IN CNAME www.example.com."],
                ..Default::default()
            },
            Case {
                what: "ExternalName SRV on the bare name is NODATA",
                name: "ext.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "ExternalName has no port names",
                name: "_http._tcp.ext.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "ExternalName has no endpoint names",
                name: "x.ext.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "ExternalName TXT is chased like A (CoreDNS plugin.TXT): the CNAME, no forwarder",
                name: "ext.rules.svc.cluster.local.",
                qtype: "TXT",
                rcode: NOERROR,
                answer: &["ext.rules.svc.cluster.local. 30 IN CNAME www.example.com."],
                ..Default::default()
            },
            Case {
                what: "in-zone target: CNAME then the target's A",
                name: "ext-in.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &[
                    "ext-in.rules.svc.cluster.local. 30 IN CNAME dual.rules.svc.cluster.local.",
                    "dual.rules.svc.cluster.local. 30 IN A 10.96.1.1",
                ],
                ..Default::default()
            },
            Case {
                what: "in-zone target: CNAME then the target's AAAA",
                name: "ext-in.rules.svc.cluster.local.",
                qtype: "AAAA",
                rcode: NOERROR,
                answer: &[
                    "ext-in.rules.svc.cluster.local. 30 IN CNAME dual.rules.svc.cluster.local.",
                    "dual.rules.svc.cluster.local. 30 IN AAAA fd00:10:96::1:1",
                ],
                ..Default::default()
            },
            Case {
                what: "AAAA for an IPv4-only in-zone target: NODATA without the CNAME",
                name: "ext-v4.rules.svc.cluster.local.",
                qtype: "AAAA",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "A for an IPv4-only in-zone target",
                name: "ext-v4.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &[
                    "ext-v4.rules.svc.cluster.local. 30 IN CNAME web4.rules.svc.cluster.local.",
                    "web4.rules.svc.cluster.local. 30 IN A 10.96.1.4",
                ],
                ..Default::default()
            },
            Case {
                what: "IP-literal externalName is NXDOMAIN",
                name: "ext-ip.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
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
            Case {
                what: "ClusterIP PTR",
                name: "1.1.96.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NOERROR,
                answer: &["1.1.96.10.in-addr.arpa. 30 IN PTR dual.rules.svc.cluster.local."],
                ..Default::default()
            },
            Case {
                what: "IPv6 ClusterIP PTR",
                name: "1.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa.",
                qtype: "PTR",
                rcode: NOERROR,
                answer: &[
                    "1.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa. 30 IN PTR dual.rules.svc.cluster.local.",
                ],
                ..Default::default()
            },
            Case {
                what: "an endpoint IP in two services: one PTR each",
                name: "4.3.244.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NOERROR,
                answer: &[
                    "4.3.244.10.in-addr.arpa. 30 IN PTR 10-244-3-4.shared.rules.svc.cluster.local.",
                    "4.3.244.10.in-addr.arpa. 30 IN PTR 10-244-3-4.web4.rules.svc.cluster.local.",
                ],
                ..Default::default()
            },
            Case {
                what: "hostname endpoint PTR",
                name: "20.3.244.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NOERROR,
                answer: &["20.3.244.10.in-addr.arpa. 30 IN PTR alpha.hl.rules.svc.cluster.local."],
                ..Default::default()
            },
            Case {
                what: "not-ready endpoint: no PTR",
                name: "21.3.244.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "unknown address",
                name: "9.9.9.9.in-addr.arpa.",
                qtype: "PTR",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "A at a name that owns a PTR is NODATA (RFC 8020)",
                name: "1.1.96.10.in-addr.arpa.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "a partial reverse name above PTRs exists",
                name: "96.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "reverse apex SOA",
                name: "in-addr.arpa.",
                qtype: "SOA",
                rcode: NOERROR,
                answer: &[
                    "in-addr.arpa. 30 IN SOA ns.dns.in-addr.arpa. hostmaster.in-addr.arpa. SERIAL 7200 1800 86400 30",
                ],
                ..Default::default()
            },
            Case {
                what: "pods never get PTRs",
                name: "99.3.244.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NXDOMAIN,
                ..Default::default()
            },
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
            Case {
                what: "apex SOA",
                name: "cluster.local.",
                qtype: "SOA",
                rcode: NOERROR,
                answer: &[
                    "cluster.local. 30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. SERIAL 7200 1800 86400 30",
                ],
                ..Default::default()
            },
            Case {
                what: "apex SOA keeps the query's spelling",
                name: "Cluster.LOCAL.",
                qtype: "SOA",
                rcode: NOERROR,
                answer: &[
                    "Cluster.LOCAL. 30 IN SOA ns.dns.Cluster.LOCAL. hostmaster.Cluster.LOCAL. SERIAL 7200 1800 86400 30",
                ],
                ..Default::default()
            },
            Case {
                what: "apex NS with glue",
                name: "cluster.local.",
                qtype: "NS",
                rcode: NOERROR,
                answer: &["cluster.local. 30 IN NS ns.dns.cluster.local."],
                additional: &["ns.dns.cluster.local. 30 IN A 127.0.0.1"],
            },
            Case {
                what: "apex A is NODATA",
                name: "cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "apex TXT is NODATA (RFC 8020)",
                name: "cluster.local.",
                qtype: "TXT",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "ns.dns",
                name: "ns.dns.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["ns.dns.cluster.local. 30 IN A 127.0.0.1"],
                ..Default::default()
            },
            Case {
                what: "ns.dns TXT is NODATA (RFC 8020)",
                name: "ns.dns.cluster.local.",
                qtype: "TXT",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "dns is an empty non-terminal",
                name: "dns.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "schema version",
                name: "dns-version.cluster.local.",
                qtype: "TXT",
                rcode: NOERROR,
                answer: &["dns-version.cluster.local. 28800 IN TXT \"1.1.0\""],
                ..Default::default()
            },
            Case {
                what: "schema version A is NODATA (RFC 8020)",
                name: "dns-version.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "svc.<zone> is NODATA",
                name: "svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "pod.<zone> is NODATA",
                name: "pod.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "label after the zone not svc/pod",
                name: "x.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "namespace with services",
                name: "rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "namespace without services is NODATA",
                name: "quiet.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "missing namespace",
                name: "missing.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "service in a missing namespace",
                name: "dual.missing.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "pods insecure: A from the name",
                name: "10-244-3-1.rules.pod.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["10-244-3-1.rules.pod.cluster.local. 30 IN A 10.244.3.1"],
                ..Default::default()
            },
            Case {
                what: "pods insecure: no pod needed",
                name: "1-2-3-4.quiet.pod.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["1-2-3-4.quiet.pod.cluster.local. 30 IN A 1.2.3.4"],
                ..Default::default()
            },
            Case {
                what: "pods insecure: AAAA of an IPv4 name is NODATA",
                name: "10-244-3-1.rules.pod.cluster.local.",
                qtype: "AAAA",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "pods insecure: IPv6",
                name: "fd00-10-244-3--1.rules.pod.cluster.local.",
                qtype: "AAAA",
                rcode: NOERROR,
                answer: &["fd00-10-244-3--1.rules.pod.cluster.local. 30 IN AAAA fd00:10:244:3::1"],
                ..Default::default()
            },
            Case {
                what: "pods insecure: four dashes is not IPv4 nor IPv6",
                name: "1-2-3-4-5.rules.pod.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "pods insecure: not an address",
                name: "blah.rules.pod.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "pods insecure: the namespace must exist",
                name: "1-2-3-4.missing.pod.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "<ns>.pod is NODATA",
                name: "rules.pod.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
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
            Case {
                what: "no pod names",
                name: "10-244-3-1.rules.pod.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "<ns>.pod is NXDOMAIN",
                name: "rules.pod.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "pod.<zone> is still NODATA",
                name: "pod.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
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
            Case {
                what: "a running pod",
                name: "10-244-3-1.rules.pod.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["10-244-3-1.rules.pod.cluster.local. 30 IN A 10.244.3.1"],
                ..Default::default()
            },
            Case {
                what: "a finished pod has no name",
                name: "10-244-3-99.rules.pod.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "a pod of another namespace",
                name: "10-244-4-1.rules.pod.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "in its own namespace",
                name: "10-244-4-1.other.pod.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["10-244-4-1.other.pod.cluster.local. 30 IN A 10.244.4.1"],
                ..Default::default()
            },
            Case {
                what: "no pod at that address",
                name: "1-2-3-4.rules.pod.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
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
            Case {
                what: "pod name as endpoint label",
                name: "trio-0.trio.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["trio-0.trio.rules.svc.cluster.local. 30 IN A 10.244.3.31"],
                ..Default::default()
            },
            Case {
                what: "no dashed name then",
                name: "10-244-3-31.trio.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "a hostname still wins",
                name: "alpha.hl.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["alpha.hl.rules.svc.cluster.local. 30 IN A 10.244.3.20"],
                ..Default::default()
            },
            Case {
                what: "SRV targets use pod names",
                name: "_grpc._tcp.trio.rules.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "_grpc._tcp.trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 trio-0.trio.rules.svc.cluster.local.",
                    "_grpc._tcp.trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 trio-1.trio.rules.svc.cluster.local.",
                    "_grpc._tcp.trio.rules.svc.cluster.local. 30 IN SRV 0 33 50051 trio-2.trio.rules.svc.cluster.local.",
                ],
                additional: &[
                    "trio-0.trio.rules.svc.cluster.local. 30 IN A 10.244.3.31",
                    "trio-1.trio.rules.svc.cluster.local. 30 IN A 10.244.3.32",
                    "trio-2.trio.rules.svc.cluster.local. 30 IN A 10.244.3.33",
                ],
            },
            Case {
                what: "PTR uses the pod name",
                name: "31.3.244.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NOERROR,
                answer: &[
                    "31.3.244.10.in-addr.arpa. 30 IN PTR trio-0.trio.rules.svc.cluster.local.",
                ],
                ..Default::default()
            },
            Case {
                what: "an endpoint without targetRef keeps its dashed name",
                name: "10-244-3-10.portless.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["10-244-3-10.portless.rules.svc.cluster.local. 30 IN A 10.244.3.10"],
                ..Default::default()
            },
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
            Case {
                what: "listed namespace",
                name: "web4.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["web4.rules.svc.cluster.local. 30 IN A 10.96.1.4"],
                ..Default::default()
            },
            Case {
                what: "unlisted namespace's service",
                name: "api.other.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "unlisted namespace",
                name: "other.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "unlisted namespace's ClusterIP PTR",
                name: "1.2.96.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "unlisted namespace's endpoint PTR",
                name: "1.4.244.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NXDOMAIN,
                ..Default::default()
            },
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
            Case {
                what: "matching namespace",
                name: "api.other.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["api.other.svc.cluster.local. 30 IN A 10.96.2.1"],
                ..Default::default()
            },
            Case {
                what: "other namespaces are not exposed",
                name: "web4.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "nor their namespace names",
                name: "quiet.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
        ],
        30,
    );
}

#[test]
fn labels_option() {
    let hidden = "hidden.rules.svc.cluster.local.";
    check(
        &rules_with(ZONES, "ttl 30"),
        &[Case {
            what: "visible without the option",
            name: hidden,
            qtype: "A",
            rcode: NOERROR,
            answer: &["hidden.rules.svc.cluster.local. 30 IN A 10.96.1.7"],
            ..Default::default()
        }],
        30,
    );
    check(
        &rules_with(ZONES, "labels visible!=no\nttl 30"),
        &[
            Case {
                what: "filtered out",
                name: hidden,
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "others stay",
                name: "web4.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["web4.rules.svc.cluster.local. 30 IN A 10.96.1.4"],
                ..Default::default()
            },
            Case {
                what: "its PTR goes too",
                name: "7.1.96.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NXDOMAIN,
                ..Default::default()
            },
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
            Case {
                what: "ClusterIP still answers",
                name: "dual.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["dual.rules.svc.cluster.local. 30 IN A 10.96.1.1"],
                ..Default::default()
            },
            Case {
                what: "headless is NXDOMAIN",
                name: "hl.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "endpoint names are NXDOMAIN",
                name: "10-244-3-1.dual.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "endpoint PTRs are gone",
                name: "20.3.244.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "ClusterIP PTRs stay",
                name: "1.1.96.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NOERROR,
                answer: &["1.1.96.10.in-addr.arpa. 30 IN PTR dual.rules.svc.cluster.local."],
                ..Default::default()
            },
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
            Case {
                what: "no ready endpoint: NXDOMAIN",
                name: "vacant.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "one ready endpoint is enough",
                name: "web4.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["web4.rules.svc.cluster.local. 30 IN A 10.96.1.4"],
                ..Default::default()
            },
            Case {
                what: "headless is not affected",
                name: "portless.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &[
                    "portless.rules.svc.cluster.local. 30 IN A 10.244.3.10",
                    "portless.rules.svc.cluster.local. 30 IN A 10.244.3.11",
                ],
                ..Default::default()
            },
            Case {
                what: "ExternalName is not affected",
                name: "ext.rules.svc.cluster.local.",
                qtype: "CNAME",
                rcode: NOERROR,
                answer: &["ext.rules.svc.cluster.local. 30 IN CNAME www.example.com."],
                ..Default::default()
            },
        ],
        30,
    );
}

#[test]
fn ttl_option_sets_records_and_soa() {
    check(
        &rules_with(ZONES, ""),
        &[
            Case {
                what: "default ttl 5",
                name: "web4.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["web4.rules.svc.cluster.local. 5 IN A 10.96.1.4"],
                ..Default::default()
            },
            Case {
                what: "negative answers carry SOA minimum 5",
                name: "nope.rules.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "dns-version keeps 28800",
                name: "dns-version.cluster.local.",
                qtype: "TXT",
                rcode: NOERROR,
                answer: &["dns-version.cluster.local. 28800 IN TXT \"1.1.0\""],
                ..Default::default()
            },
        ],
        5,
    );
    check(
        &rules_with(ZONES, "ttl 600"),
        &[Case {
            what: "SOA record TTL capped at 300, minimum 600",
            name: "cluster.local.",
            qtype: "SOA",
            rcode: NOERROR,
            answer: &[
                "cluster.local. 300 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. SERIAL 7200 1800 86400 600",
            ],
            ..Default::default()
        }],
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
            Case {
                what: "names in the second zone",
                name: "web4.rules.svc.other.example.",
                qtype: "A",
                rcode: NOERROR,
                answer: &["web4.rules.svc.other.example. 30 IN A 10.96.1.4"],
                ..Default::default()
            },
            Case {
                what: "its own SOA",
                name: "nope.rules.svc.other.example.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "SRV targets in the asked zone",
                name: "_http._tcp.web4.rules.svc.other.example.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "_http._tcp.web4.rules.svc.other.example. 30 IN SRV 0 100 80 web4.rules.svc.other.example.",
                ],
                additional: &["web4.rules.svc.other.example. 30 IN A 10.96.1.4"],
            },
            Case {
                what: "PTR targets use the first (primary) zone",
                name: "4.1.96.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: NOERROR,
                answer: &["4.1.96.10.in-addr.arpa. 30 IN PTR web4.rules.svc.cluster.local."],
                ..Default::default()
            },
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
            Case {
                what: "pin: that zone's endpoints (zone labels compared in lower case)",
                name: "us-west-2a.pin._zone.db.prod.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &[
                    "us-west-2a.pin._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.1",
                    "us-west-2a.pin._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.2",
                ],
                ..Default::default()
            },
            Case {
                what: "prefer: the same while the zone has endpoints",
                name: "us-west-2a.prefer._zone.db.prod.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &[
                    "us-west-2a.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.1",
                    "us-west-2a.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.2",
                ],
                ..Default::default()
            },
            Case {
                what: "a zone value with dots spans labels",
                name: "corp.example.com.pin._zone.db.prod.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &[
                    "corp.example.com.pin._zone.db.prod.svc.cluster.local. 30 IN A 10.244.3.1",
                ],
                ..Default::default()
            },
            Case {
                what: "SRV and glue from the zone's endpoints",
                name: "us-west-2b.pin._zone.db.prod.svc.cluster.local.",
                qtype: "SRV",
                rcode: NOERROR,
                answer: &[
                    "us-west-2b.pin._zone.db.prod.svc.cluster.local. 30 IN SRV 0 100 5432 db-2.db.prod.svc.cluster.local.",
                ],
                additional: &["db-2.db.prod.svc.cluster.local. 30 IN A 10.244.2.1"],
            },
            Case {
                what: "pin: a zone with no ready endpoint is NODATA",
                name: "us-west-2c.pin._zone.db.prod.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "pin: so is a mistyped one",
                name: "nowhere.pin._zone.db.prod.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "prefer: a zone with none falls back to every endpoint",
                name: "nowhere.prefer._zone.db.prod.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &[
                    "nowhere.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.1",
                    "nowhere.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.1.2",
                    "nowhere.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.2.1",
                    "nowhere.prefer._zone.db.prod.svc.cluster.local. 30 IN A 10.244.3.1",
                ],
                ..Default::default()
            },
            Case {
                what: "prefer: other types are NODATA",
                name: "nowhere.prefer._zone.db.prod.svc.cluster.local.",
                qtype: "TXT",
                rcode: NOERROR,
                ..Default::default()
            },
            Case {
                what: "an unknown directive is NXDOMAIN",
                name: "us-west-2a.nearest._zone.db.prod.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "zonal names are for headless Services only",
                name: "us-west-2a.pin._zone.web.prod.svc.cluster.local.",
                qtype: "A",
                rcode: NXDOMAIN,
                ..Default::default()
            },
            Case {
                what: "the Service's own name is unchanged",
                name: "db.prod.svc.cluster.local.",
                qtype: "A",
                rcode: NOERROR,
                answer: &[
                    "db.prod.svc.cluster.local. 30 IN A 10.244.1.1",
                    "db.prod.svc.cluster.local. 30 IN A 10.244.1.2",
                    "db.prod.svc.cluster.local. 30 IN A 10.244.2.1",
                    "db.prod.svc.cluster.local. 30 IN A 10.244.3.1",
                ],
                ..Default::default()
            },
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
