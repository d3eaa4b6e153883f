//! The options that choose what is served: `namespaces`, `namespace_labels`, `labels`,
//! `noendpoints`, `ignore empty_service`.

use super::{Case, NOERROR, NXDOMAIN, ZONES, check, rules_with};

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
