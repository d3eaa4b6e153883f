//! The other options: `ttl`, `fallthrough`, several zones and the primary one, SRV targets in
//! the zone as asked, `zonal`.

use super::{Case, NOERROR, NXDOMAIN, RULES, ZONES, check, rules_with};
use crate::common::{Offline, expect};

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
