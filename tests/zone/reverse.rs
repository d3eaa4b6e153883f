//! Reverse lookups under in-addr.arpa and ip6.arpa: PTRs of ClusterIPs and endpoints, names
//! without one, the reverse apex.

use super::{Case, NOERROR, NXDOMAIN, RULES, check};
use crate::common::Offline;

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
