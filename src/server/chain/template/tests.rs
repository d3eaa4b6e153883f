#![allow(clippy::unwrap_used)]

use hickory_proto::rr::RecordType;

use super::*;
use crate::server::chain::testing::{answers, ask, block, lines, rcode};

/// CoreDNS's template_test.go cases, as blocks of one Corefile: the question, and the rcode
/// and records expected (`None`: passed on to the rest of the chain).
#[test]
fn answers_as_coredns() {
    let block = block(
        r#". {
    template IN A example {
        match (^|[.])ip-10-(?P<b>[0-9]*)-(?P<c>[0-9]*)-(?P<d>[0-9]*)[.]example[.]$
        answer "{{ .Name }} 60 IN A 10.{{ .Group.b }}.{{ .Group.c }}.{{ .Group.d }}"
        fallthrough
    }
    template IN A example {
        match "^ip0a(?P<b>[a-f0-9]{2})(?P<c>[a-f0-9]{2})(?P<d>[a-f0-9]{2})[.]example[.]$"
        answer "{{ .Name }} 60 IN A 10.{{ parseInt .Group.b 16 8 }}.{{ parseInt .Group.c 16 8 }}.{{ parseInt .Group.d 16 8 }}"
        fallthrough
    }
    template IN MX example {
        match (^|[.])ip-10-(?P<b>[0-9]*)-(?P<c>[0-9]*)-(?P<d>[0-9]*)[.]example[.]$
        answer "{{ .Name }} 60 MX 10 {{ .Name }}"
        additional "{{ .Name }} 60 IN A 10.{{ .Group.b }}.{{ .Group.c }}.{{ .Group.d }}"
        authority "example. IN NS ns0.example.com."
    }
    template IN A example {
        match ^remote[.]example[.]$
        answer "{{ .Name }} 60 IN A {{ .Remote }}"
    }
    template ANY ANY invalid {
        rcode NXDOMAIN
        authority "invalid. 60 {{ .Class }} SOA ns.invalid. hostmaster.invalid. (1 60 60 60 60)"
    }
    template IN TXT broken.test {
        answer "{{ index .Match 9 }} 60 IN TXT x"
    }
    template IN TXT notrr.test {
        answer "not a record"
    }
    template ANY ANY servfail.test {
        rcode SERVFAIL
    }
}"#,
    );
    type Case<'a> = (&'a str, RecordType, Option<(&'a str, &'a [&'a str])>);
    let cases: &[Case<'_>] = &[
        (
            "ip-10-95-12-8.example.",
            RecordType::A,
            Some(("NOERROR", &["ip-10-95-12-8.example. 60 IN A 10.95.12.8"])),
        ),
        (
            "a.ip-10-95-12-8.example.",
            RecordType::A,
            Some(("NOERROR", &["a.ip-10-95-12-8.example. 60 IN A 10.95.12.8"])),
        ),
        (
            "ip0a5f0c09.example.",
            RecordType::A,
            Some(("NOERROR", &["ip0a5f0c09.example. 60 IN A 10.95.12.9"])),
        ),
        (
            "ip-10-95-12-8.example.",
            RecordType::MX,
            Some((
                "NOERROR",
                &["ip-10-95-12-8.example. 60 IN MX 10 ip-10-95-12-8.example."],
            )),
        ),
        (
            "remote.example.",
            RecordType::A,
            Some(("NOERROR", &["remote.example. 60 IN A 127.0.0.1"])),
        ),
        ("test.invalid.", RecordType::A, Some(("NXDOMAIN", &[]))),
        ("test.invalid.", RecordType::MX, Some(("NXDOMAIN", &[]))),
        // The A templates fall through: the last one, with no fallthrough, is SERVFAIL.
        ("test.example.", RecordType::A, Some(("SERVFAIL", &[]))),
        // The MX template has no fallthrough.
        ("test.example.", RecordType::MX, Some(("SERVFAIL", &[]))),
        // No template of that type, or outside every zone: passed on.
        ("test.example.", RecordType::AAAA, None),
        ("example.org.", RecordType::A, None),
        ("x.broken.test.", RecordType::TXT, Some(("SERVFAIL", &[]))),
        ("x.notrr.test.", RecordType::TXT, Some(("SERVFAIL", &[]))),
        ("x.servfail.test.", RecordType::A, Some(("SERVFAIL", &[]))),
    ];
    for (name, qtype, want) in cases {
        let reply = ask(&block, name, *qtype);
        match (want, reply) {
            (None, None) => {}
            (Some((want_rcode, records)), Some(reply)) => {
                let want: Vec<String> = records.iter().map(|r| (*r).to_owned()).collect();
                assert_eq!(
                    (rcode(&reply), answers(&reply)),
                    (*want_rcode, want),
                    "{name} {qtype}"
                );
                if *want_rcode != "SERVFAIL" {
                    assert!(reply.metadata.authoritative, "{name} {qtype}");
                }
            }
            (want, reply) => panic!("{name} {qtype}: want {want:?}, got {reply:?}"),
        }
    }
    // The sections of the MX template.
    let mx = ask(&block, "ip-10-95-12-8.example.", RecordType::MX).unwrap();
    assert_eq!(
        lines(&mx.additionals),
        ["ip-10-95-12-8.example. 60 IN A 10.95.12.8"]
    );
    assert_eq!(
        lines(&mx.authorities),
        ["example. 3600 IN NS ns0.example.com."]
    );
    let invalid = ask(&block, "test.invalid.", RecordType::A).unwrap();
    assert_eq!(
        lines(&invalid.authorities),
        ["invalid. 60 IN SOA ns.invalid. hostmaster.invalid. 1 60 60 60 60"]
    );
    let metrics = block.chain.get::<crate::server::chain::template::Template>().unwrap().metrics();
    assert_eq!(metrics.matches("example.", "IN", "A"), 4);
    assert_eq!(metrics.matches("invalid.", "IN", "MX"), 1);
    let mut exposition = Exposition::new();
    metrics.collect(&mut exposition);
    let text = exposition.finish();
    for want in [
        "coredns_template_matches_total{server=\"dns://:53\",zone=\"example.\",view=\"\",class=\"IN\",type=\"A\"} 4",
        "coredns_template_template_failures_total{server=\"dns://:53\",zone=\"broken.test.\",view=\"\",class=\"IN\",type=\"TXT\",section=\"answer\",template=\"{{ index .Match 9 }} 60 IN TXT x\"} 1",
        "coredns_template_rr_failures_total{server=\"dns://:53\",zone=\"notrr.test.\",view=\"\",class=\"IN\",type=\"TXT\",section=\"answer\",template=\"not a record\"} 1",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
}

/// AKS's templates: search-path junk under internal.cloudapp.net and reddog.microsoft.com
/// is NXDOMAIN at once; a real VM name falls through (here to the end of the chain).
#[test]
fn aks() {
    let block = block(
        r#".:53 {
    template ANY ANY internal.cloudapp.net {
        match "^(?:[^.]+\.){4,}internal\.cloudapp\.net\.$"
        rcode NXDOMAIN
        fallthrough
    }
    template ANY ANY reddog.microsoft.com {
        rcode NXDOMAIN
    }
}"#,
    );
    let cases: &[(&str, RecordType, Option<&str>)] = &[
        (
            "web.default.svc.cluster.local.internal.cloudapp.net.",
            RecordType::A,
            Some("NXDOMAIN"),
        ),
        (
            "a.b.c.d.internal.cloudapp.net.",
            RecordType::AAAA,
            Some("NXDOMAIN"),
        ),
        ("vm-1.internal.cloudapp.net.", RecordType::A, None),
        (
            "web.default.svc.cluster.local.reddog.microsoft.com.",
            RecordType::A,
            Some("NXDOMAIN"),
        ),
        ("reddog.microsoft.com.", RecordType::SOA, Some("NXDOMAIN")),
        ("example.com.", RecordType::A, None),
    ];
    for (name, qtype, want) in cases {
        let got = ask(&block, name, *qtype).map(|reply| rcode(&reply));
        assert_eq!(got, *want, "{name} {qtype}");
    }
}

/// `ederror` adds RFC 8914's option to the OPT record.
#[test]
fn extended_dns_error() {
    let block = block(
        r#". {
    template ANY ANY invalid {
        rcode NXDOMAIN
        ederror 21 "Blocked according to RFC2606"
    }
}"#,
    );
    let packet = crate::server::chain::testing::query("x.invalid.", RecordType::A);
    let Some(crate::server::Local::Reply(bytes)) = block.answer_locally(&packet) else {
        panic!("no reply");
    };
    let mut option = vec![0, 15, 0, 30, 0, 21];
    option.extend_from_slice(b"Blocked according to RFC2606");
    assert!(
        bytes.windows(option.len()).any(|w| w == option),
        "{bytes:?}"
    );
    assert!(hickory_proto::op::Message::from_vec(&bytes).is_ok());
}

/// RRs as the templates write them, as miekg/dns's `NewRR` reads them.
#[test]
fn rr_text() {
    let cases: &[(&str, Result<&str, &str>)] = &[
        ("example. 60 IN A 10.0.0.1", Ok("example. 60 IN A 10.0.0.1")),
        ("example. IN A 10.0.0.1", Ok("example. 3600 IN A 10.0.0.1")),
        ("example. 60 A 10.0.0.1", Ok("example. 60 IN A 10.0.0.1")),
        ("example. IN 60 A 10.0.0.1", Ok("example. 60 IN A 10.0.0.1")),
        ("example A 10.0.0.1", Ok("example. 3600 IN A 10.0.0.1")),
        ("example. 1h AAAA ::1", Ok("example. 3600 IN AAAA ::1")),
        (
            "foogle.com 60 IN CNAME google.com",
            Ok("foogle.com. 60 IN CNAME google.com."),
        ),
        ("x. 60 IN MX 10 mail", Ok("x. 60 IN MX 10 mail.")),
        (
            "_s._tcp.x. 60 IN SRV 0 100 80 t.x.",
            Ok("_s._tcp.x. 60 IN SRV 0 100 80 t.x."),
        ),
        (
            "invalid. 60 IN SOA ns.invalid. hostmaster.invalid. (1 60 60 60 60)",
            Ok("invalid. 60 IN SOA ns.invalid. hostmaster.invalid. 1 60 60 60 60"),
        ),
        ("@ 60 IN NS ns.example.", Ok(". 60 IN NS ns.example.")),
        ("x. 60 IN A 10.0.0", Err("bad A")),
        ("x. 60 IN FOO 1", Err("unknown type")),
        ("x. 60 IN", Err("no type")),
        ("", Err("empty RR")),
    ];
    for (text, want) in cases {
        let got = parse_rr(text).map(|record| lines(&[record]).remove(0));
        match (want, got) {
            (Ok(want), Ok(got)) => assert_eq!(got, *want, "{text}"),
            (Err(want), Err(got)) => assert!(got.contains(want), "{text}: {got}"),
            (want, got) => panic!("{text}: want {want:?}, got {got:?}"),
        }
    }
    let ch = parse_rr("version.bind. 0 CH TXT \"clusterdns\"").unwrap();
    assert_eq!(ch.dns_class, DNSClass::CH);
}
