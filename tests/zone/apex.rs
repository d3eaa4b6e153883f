//! The zone's apex and the names under it that are not Services: SOA, NS, ns.dns, the schema
//! version, svc and pod, namespaces, `pods insecure` names; and names outside the zones.

use super::{Case, NOERROR, NXDOMAIN, RULES, check};
use crate::common::Offline;

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
