//! The options that give pods names: `pods` (disabled by default, verified) and
//! `endpoint_pod_names`.

use super::{Case, NOERROR, NXDOMAIN, ZONES, check, rules_with};

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
