//! The zone's lookup, case by case, as CoreDNS's `plugin/file/lookup_test.go` and its
//! delegation, wildcard and glue tests check it: the sections and the outcome.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use hickory_proto::rr::{Name, Record, RecordType};

use super::read::parse_zone;
use super::zone::{Outcome, Zone};

/// CoreDNS's `dbMiekNL`, with a delegation, glue, an empty non-terminal and a looping DNAME
/// added.
const MIEK_NL: &str = r#"
$TTL    30M
$ORIGIN miek.nl.
@       IN      SOA     linode.atoom.net. miek.miek.nl. (
                             1282630057 ; Serial
                             4H         ; Refresh
                             1H         ; Retry
                             7D         ; Expire
                             4H )       ; Negative Cache TTL
                IN      NS      linode.atoom.net.
                IN      NS      ns.miek.nl.

                IN      MX      1  aspmx.l.google.com.
                IN      MX      5  alt1.aspmx.l.google.com.

		IN      A       139.162.196.78
		IN      AAAA    2a01:7e00::f03c:91ff:fef1:6735

ns              IN      A       192.0.2.53
a               IN      A       139.162.196.78
                IN      AAAA    2a01:7e00::f03c:91ff:fef1:6735
www             IN      CNAME   a
loop1           IN      CNAME   loop2
loop2           IN      CNAME   loop1
*.x             IN      CNAME   www
b.x             IN      CNAME   a
*.y             IN      A       139.162.196.78
srv		IN	SRV     10 10 8080 a.miek.nl.
mx		IN	MX      10 a.miek.nl.
		IN	MX      20 a.miek.nl.
txt     IN	TXT     "v=spf1 a mx ~all"
ext-cname   IN   CNAME  example.com.
deep.ent.y      IN      TXT     "below an empty non-terminal"
deep.ent        IN      TXT     "below another"
delegated	IN	NS      a.delegated
		IN	NS      ns-ext.nlnetlabs.nl.
a.delegated     IN      A       139.162.196.79
to-delegated    IN      CNAME   foo.delegated
dname           IN      DNAME   x
self            IN      DNAME   self.miek.nl.
"#;

const SOA: &str =
    "miek.nl. 1800 IN SOA linode.atoom.net. miek.miek.nl. 1282630057 14400 3600 604800 14400";
const NS: [&str; 2] = [
    "miek.nl. 1800 IN NS linode.atoom.net.",
    "miek.nl. 1800 IN NS ns.miek.nl.",
];
const A: &str = "a.miek.nl. 1800 IN A 139.162.196.78";
const AAAA: &str = "a.miek.nl. 1800 IN AAAA 2a01:7e00::f03c:91ff:fef1:6735";
const REFERRAL: [&str; 2] = [
    "delegated.miek.nl. 1800 IN NS a.delegated.miek.nl.",
    "delegated.miek.nl. 1800 IN NS ns-ext.nlnetlabs.nl.",
];
const GLUE: &str = "a.delegated.miek.nl. 1800 IN A 139.162.196.79";

fn zone() -> Zone {
    let origin = Name::from_ascii("miek.nl.").unwrap();
    let records = parse_zone(MIEK_NL, Path::new("db.miek.nl"), &origin).unwrap();
    Zone::new(&origin, records).unwrap()
}

fn text(records: &[Record]) -> Vec<String> {
    records.iter().map(ToString::to_string).collect()
}

/// A case: the question, the outcome, the answer, authority and additional sections, and
/// the name left to ask through the server.
struct Case {
    qname: &'static str,
    qtype: RecordType,
    outcome: Outcome,
    answer: &'static [&'static str],
    authority: &'static [&'static str],
    additional: &'static [&'static str],
    external: Option<&'static str>,
}

const fn case(qname: &'static str, qtype: RecordType, outcome: Outcome) -> Case {
    Case {
        qname,
        qtype,
        outcome,
        answer: &[],
        authority: &[],
        additional: &[],
        external: None,
    }
}

#[test]
fn lookup() {
    use Outcome::*;
    use RecordType as T;
    let cases = [
        Case {
            answer: &["www.miek.nl. 1800 IN CNAME a.miek.nl.", A],
            authority: &NS,
            ..case("www.miek.nl.", T::A, Success)
        },
        Case {
            answer: &["www.miek.nl. 1800 IN CNAME a.miek.nl.", AAAA],
            authority: &NS,
            ..case("www.miek.nl.", T::AAAA, Success)
        },
        Case {
            answer: &["www.miek.nl. 1800 IN CNAME a.miek.nl."],
            authority: &NS,
            ..case("www.miek.nl.", T::CNAME, Success)
        },
        Case {
            answer: &[SOA],
            authority: &NS,
            ..case("miek.nl.", T::SOA, Success)
        },
        Case {
            answer: &NS,
            additional: &["ns.miek.nl. 1800 IN A 192.0.2.53"],
            ..case("miek.nl.", T::NS, Success)
        },
        Case {
            answer: &["miek.nl. 1800 IN AAAA 2a01:7e00::f03c:91ff:fef1:6735"],
            authority: &NS,
            ..case("miek.nl.", T::AAAA, Success)
        },
        Case {
            answer: &[
                "miek.nl. 1800 IN MX 1 aspmx.l.google.com.",
                "miek.nl. 1800 IN MX 5 alt1.aspmx.l.google.com.",
            ],
            authority: &NS,
            ..case("miek.nl.", T::MX, Success)
        },
        Case {
            authority: &[SOA],
            ..case("a.miek.nl.", T::SRV, NoData)
        },
        Case {
            authority: &[SOA],
            ..case("miek.nl.", T::TXT, NoData)
        },
        Case {
            authority: &[SOA],
            ..case("b.miek.nl.", T::A, NameError)
        },
        Case {
            answer: &["srv.miek.nl. 1800 IN SRV 10 10 8080 a.miek.nl."],
            authority: &NS,
            additional: &[A, AAAA],
            ..case("srv.miek.nl.", T::SRV, Success)
        },
        // Two MX records with one target: its addresses once.
        Case {
            answer: &[
                "mx.miek.nl. 1800 IN MX 10 a.miek.nl.",
                "mx.miek.nl. 1800 IN MX 20 a.miek.nl.",
            ],
            authority: &NS,
            additional: &[A, AAAA],
            ..case("mx.miek.nl.", T::MX, Success)
        },
        // A wildcard CNAME, answered for the name asked.
        Case {
            answer: &["asterisk.x.miek.nl. 1800 IN CNAME www.miek.nl."],
            authority: &NS,
            ..case("asterisk.x.miek.nl.", T::CNAME, Success)
        },
        Case {
            answer: &[
                "asterisk.x.miek.nl. 1800 IN CNAME www.miek.nl.",
                "www.miek.nl. 1800 IN CNAME a.miek.nl.",
                A,
            ],
            authority: &NS,
            ..case("asterisk.x.miek.nl.", T::A, Success)
        },
        // A wildcard covers one level of names that do not exist, not those below a name
        // that does (b.x exists).
        Case {
            authority: &[SOA],
            ..case("a.b.x.miek.nl.", T::CNAME, NameError)
        },
        Case {
            answer: &["asterisk.y.miek.nl. 1800 IN A 139.162.196.78"],
            authority: &NS,
            ..case("asterisk.y.miek.nl.", T::A, Success)
        },
        Case {
            authority: &[SOA],
            ..case("asterisk.y.miek.nl.", T::AAAA, NoData)
        },
        // An empty non-terminal is NOERROR without records; a name below it is not
        // covered by the shallower wildcard (which, as in CoreDNS, answers for the empty
        // non-terminal itself).
        Case {
            authority: &[SOA],
            ..case("ent.miek.nl.", T::A, Success)
        },
        Case {
            answer: &["ent.y.miek.nl. 1800 IN A 139.162.196.78"],
            authority: &NS,
            ..case("ent.y.miek.nl.", T::A, Success)
        },
        Case {
            authority: &[SOA],
            ..case("other.ent.y.miek.nl.", T::A, NameError)
        },
        Case {
            answer: &["txt.miek.nl. 1800 IN TXT v=spf1 a mx ~all"],
            authority: &NS,
            ..case("txt.miek.nl.", T::TXT, Success)
        },
        // A target outside the zone is asked through the server.
        Case {
            answer: &["ext-cname.miek.nl. 1800 IN CNAME example.com."],
            authority: &NS,
            external: Some("example.com."),
            ..case("ext-cname.miek.nl.", T::A, Success)
        },
        // A loop ends after CoreDNS's nine CNAMEs.
        Case {
            answer: &[
                "loop1.miek.nl. 1800 IN CNAME loop2.miek.nl.",
                "loop2.miek.nl. 1800 IN CNAME loop1.miek.nl.",
                "loop1.miek.nl. 1800 IN CNAME loop2.miek.nl.",
                "loop2.miek.nl. 1800 IN CNAME loop1.miek.nl.",
                "loop1.miek.nl. 1800 IN CNAME loop2.miek.nl.",
                "loop2.miek.nl. 1800 IN CNAME loop1.miek.nl.",
                "loop1.miek.nl. 1800 IN CNAME loop2.miek.nl.",
                "loop2.miek.nl. 1800 IN CNAME loop1.miek.nl.",
                "loop1.miek.nl. 1800 IN CNAME loop2.miek.nl.",
                "loop2.miek.nl. 1800 IN CNAME loop1.miek.nl.",
            ],
            authority: &NS,
            ..case("loop1.miek.nl.", T::A, Success)
        },
        // Delegations: the NS records and their glue, whatever is below the cut.
        Case {
            authority: &REFERRAL,
            additional: &[GLUE],
            ..case("delegated.miek.nl.", T::A, Delegation)
        },
        Case {
            authority: &REFERRAL,
            additional: &[GLUE],
            ..case("a.delegated.miek.nl.", T::A, Delegation)
        },
        Case {
            authority: &REFERRAL,
            additional: &[GLUE],
            ..case("x.y.delegated.miek.nl.", T::TXT, Delegation)
        },
        // DS at the cut is the parent's: NODATA here.
        Case {
            authority: &[SOA],
            ..case("delegated.miek.nl.", T::DS, NoData)
        },
        // An alias into a delegation: the CNAME, then the referral.
        Case {
            answer: &["to-delegated.miek.nl. 1800 IN CNAME foo.delegated.miek.nl."],
            authority: &REFERRAL,
            additional: &[GLUE],
            ..case("to-delegated.miek.nl.", T::A, Delegation)
        },
        // ANY is not expanded (CoreDNS's *file* answers NODATA).
        Case {
            authority: &[SOA],
            ..case("a.miek.nl.", T::ANY, NoData)
        },
    ];
    let zone = zone();
    for want in &cases {
        let qname = Name::from_ascii(want.qname).unwrap().to_lowercase();
        let found = zone.lookup(&qname, want.qtype);
        let at = format!("{} {}", want.qname, want.qtype);
        assert_eq!(found.outcome, want.outcome, "{at}");
        assert_eq!(text(&found.answer), want.answer, "{at}: answer");
        assert_eq!(text(&found.authority), want.authority, "{at}: authority");
        assert_eq!(text(&found.additional), want.additional, "{at}: additional");
        assert_eq!(
            found.external.map(|name| name.to_string()),
            want.external.map(str::to_owned),
            "{at}: external"
        );
    }
}

/// DNAME (RFC 6672), as CoreDNS's lookup_test.go and dname_test.go check it: the DNAME first,
/// then the CNAME it makes, followed.
#[test]
fn dname() {
    let zone = zone();
    let ask = |qname: &str, qtype| {
        let found = zone.lookup(&Name::from_ascii(qname).unwrap(), qtype);
        let first = found.answer.first().map(Record::record_type);
        (found, first)
    };
    let (found, first) = ask("foo.dname.miek.nl.", RecordType::CNAME);
    assert_eq!(first, Some(RecordType::DNAME));
    assert_eq!(found.answer[0].name.to_string(), "dname.miek.nl.");
    assert_eq!(
        text(&found.answer[1..]),
        ["foo.dname.miek.nl. 1800 IN CNAME foo.x.miek.nl."]
    );
    assert_eq!(text(&found.authority), NS);
    assert_eq!(found.outcome, Outcome::Success);

    // The CNAME is followed: through the zone, or to the server for a name it does not hold.
    let (found, first) = ask("b.dname.miek.nl.", RecordType::A);
    assert_eq!(first, Some(RecordType::DNAME));
    assert_eq!(
        text(&found.answer[1..]),
        [
            "b.dname.miek.nl. 1800 IN CNAME b.x.miek.nl.",
            "b.x.miek.nl. 1800 IN CNAME a.miek.nl.",
            A,
        ]
    );
    let (found, _) = ask("foo.dname.miek.nl.", RecordType::A);
    assert_eq!(
        found.external.map(|name| name.to_string()).as_deref(),
        Some("foo.x.miek.nl.")
    );

    // The DNAME's own name is not rewritten; a substitution that changes nothing fails.
    let (found, _) = ask("dname.miek.nl.", RecordType::A);
    assert_eq!(found.outcome, Outcome::NoData);
    let (found, _) = ask("dname.miek.nl.", RecordType::DNAME);
    assert_eq!(found.answer.len(), 1);
    let (found, _) = ask("a.self.miek.nl.", RecordType::A);
    assert_eq!(found.outcome, Outcome::ServerFailure);
    assert!(found.answer.is_empty());
}

#[test]
fn a_zone_needs_its_soa() {
    let origin = Name::from_ascii("example.org.").unwrap();
    let records = parse_zone("a A 192.0.2.1\n", Path::new("db"), &origin).unwrap();
    let error = Zone::new(&origin, records).unwrap_err();
    assert_eq!(error, "has no SOA record for origin example.org.");
}

#[test]
fn records_outside_the_zone_are_dropped() {
    let origin = Name::from_ascii("example.org.").unwrap();
    let text = "@ SOA ns admin 1 2 3 4 5\nwww.other.net. A 192.0.2.1\n";
    let records = parse_zone(text, Path::new("db"), &origin).unwrap();
    let zone = Zone::new(&origin, records).unwrap();
    assert_eq!(zone.serial(), 1);
    let other = Name::from_ascii("www.other.net.").unwrap();
    assert!(zone.lookup(&other, RecordType::A).answer.is_empty());
}
