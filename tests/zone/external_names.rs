//! ExternalName Services: the CNAME, chased in the zone or not, no port or endpoint names, an
//! IP-literal externalName.

use super::{Case, NOERROR, NXDOMAIN, RULES, check};
use crate::common::Offline;

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
