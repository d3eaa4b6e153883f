//! Services under the cluster zone: ClusterIP A and AAAA, SRV on the bare name and on
//! `_port._proto`, endpoint names, portless and headless Services.

use super::{Case, NOERROR, NXDOMAIN, RULES, check};
use crate::common::Offline;

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
