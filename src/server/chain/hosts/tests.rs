#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use hickory_proto::op::Message;
use hickory_proto::rr::{Name, RecordType};

use super::*;
use crate::server::chain::End;
use crate::server::chain::testing::{lines, query};

/// CoreDNS's `hostsExample` (hosts_test.go), with a reload line that is not an entry.
const HOSTS_EXAMPLE: &str = "
127.0.0.1 localhost localhost.domain
::1 localhost localhost.domain
10.0.0.1 example.org
::FFFF:10.0.0.2 example.com
10.0.0.3 fallthrough-example.org
1.2.3.4 aa.example.com
5.6.7.8 *.apps.example.com
reload 5s
timeout 3600
";

fn config(path: PathBuf) -> HostsConfig {
    HostsConfig {
        path,
        zones: vec![Name::root()],
        inline: Vec::new(),
        ttl: 3600,
        reload: Duration::from_secs(5),
        no_reverse: false,
        fallthrough: None,
        fallthrough_unsupported: false,
        line: 1,
    }
}

/// The plugin over a file holding `text` (kept in `dir`).
fn hosts_with(dir: &tempfile::TempDir, text: &str, tweak: impl FnOnce(&mut HostsConfig)) -> Hosts {
    let path = dir.path().join("hosts");
    std::fs::write(&path, text).unwrap();
    let mut config = config(path);
    tweak(&mut config);
    Hosts::load(&config)
}

/// What the plugin does with a question: `None` passed on, else (rcode, authoritative,
/// answers).
fn ask(hosts: &Hosts, name: &str, qtype: RecordType) -> Option<(String, bool, Vec<String>)> {
    let packet = query(name, qtype);
    let request = Request::parse(&packet).unwrap();
    let mut out = Vec::new();
    match hosts.respond(&request, 1232, &mut out) {
        Flow::Pass => None,
        Flow::Done(End::Reply(_)) => {
            let reply = Message::from_vec(&out).unwrap();
            Some((
                crate::wire::rcode_name(u16::from(reply.metadata.response_code)).to_owned(),
                reply.metadata.authoritative,
                lines(&reply.answers),
            ))
        }
        other => panic!("hosts answers or passes on, not {other:?}"),
    }
}

type Case<'a> = (&'a str, RecordType, Option<(&'a str, &'a [&'a str])>);

fn check(hosts: &Hosts, cases: &[Case<'_>]) {
    for (name, qtype, want) in cases {
        let got = ask(hosts, name, *qtype);
        match (want, got) {
            (None, None) => {}
            (Some((rcode, records)), Some((got_rcode, authoritative, got_records))) => {
                assert_eq!(
                    (got_rcode.as_str(), got_records),
                    (*rcode, records.iter().map(|r| (*r).to_owned()).collect()),
                    "{name} {qtype}"
                );
                if *rcode == "NOERROR" {
                    assert!(authoritative, "{name} {qtype}: authoritative");
                }
            }
            (want, got) => panic!("{name} {qtype}: want {want:?}, got {got:?}"),
        }
    }
}

/// CoreDNS's `hostsTestCases`, and the wildcard and no-fallthrough rules.
#[test]
fn lookups() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = hosts_with(&dir, HOSTS_EXAMPLE, |_| {});
    let cases: &[Case<'_>] = &[
        (
            "example.org.",
            RecordType::A,
            Some(("NOERROR", &["example.org. 3600 IN A 10.0.0.1"])),
        ),
        (
            "Example.ORG.",
            RecordType::A,
            Some(("NOERROR", &["Example.ORG. 3600 IN A 10.0.0.1"])),
        ),
        (
            "example.com.",
            RecordType::A,
            Some(("NOERROR", &["example.com. 3600 IN A 10.0.0.2"])),
        ),
        (
            "localhost.",
            RecordType::AAAA,
            Some(("NOERROR", &["localhost. 3600 IN AAAA ::1"])),
        ),
        (
            "1.0.0.10.in-addr.arpa.",
            RecordType::PTR,
            Some((
                "NOERROR",
                &["1.0.0.10.in-addr.arpa. 3600 IN PTR example.org."],
            )),
        ),
        (
            "2.0.0.10.in-addr.arpa.",
            RecordType::PTR,
            Some((
                "NOERROR",
                &["2.0.0.10.in-addr.arpa. 3600 IN PTR example.com."],
            )),
        ),
        (
            "1.0.0.127.in-addr.arpa.",
            RecordType::PTR,
            Some((
                "NOERROR",
                &[
                    "1.0.0.127.in-addr.arpa. 3600 IN PTR localhost.",
                    "1.0.0.127.in-addr.arpa. 3600 IN PTR localhost.domain.",
                ],
            )),
        ),
        (
            "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa.",
            RecordType::PTR,
            Some((
                "NOERROR",
                &[
                    "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa. 3600 IN PTR localhost.",
                    "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa. 3600 IN PTR localhost.domain.",
                ],
            )),
        ),
        // The name exists: NODATA for the other types.
        ("example.org.", RecordType::AAAA, Some(("NOERROR", &[]))),
        ("example.org.", RecordType::MX, Some(("NOERROR", &[]))),
        (
            "fallthrough-example.org.",
            RecordType::AAAA,
            Some(("NOERROR", &[])),
        ),
        // A wildcard matches one label, no more, not the apex; it gives no PTR.
        // (CoreDNS's table expects 5.6.7.8 here, but its SERVFAIL writes no message, so the
        // case is never checked.)
        ("apps.example.com.", RecordType::A, Some(("SERVFAIL", &[]))),
        (
            "web.apps.example.com.",
            RecordType::A,
            Some(("NOERROR", &["web.apps.example.com. 3600 IN A 5.6.7.8"])),
        ),
        (
            "a.web.apps.example.com.",
            RecordType::A,
            Some(("SERVFAIL", &[])),
        ),
        (
            "aa.example.com.",
            RecordType::A,
            Some(("NOERROR", &["aa.example.com. 3600 IN A 1.2.3.4"])),
        ),
        ("8.7.6.5.in-addr.arpa.", RecordType::PTR, None),
        // Unknown names: SERVFAIL without fallthrough; "reload 5s" is not an entry.
        (
            "missing.example.org.",
            RecordType::A,
            Some(("SERVFAIL", &[])),
        ),
        ("reload.", RecordType::A, Some(("SERVFAIL", &[]))),
        // An address no entry has passes on, whatever fallthrough says.
        ("9.9.9.9.in-addr.arpa.", RecordType::PTR, None),
    ];
    check(&hosts, cases);
}

#[test]
fn zones_and_fallthrough() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = hosts_with(&dir, HOSTS_EXAMPLE, |config| {
        config.zones = vec![Name::from_ascii("example.org.").unwrap()];
        config.fallthrough = Some(vec![]);
    });
    let cases: &[Case<'_>] = &[
        (
            "example.org.",
            RecordType::A,
            Some(("NOERROR", &["example.org. 3600 IN A 10.0.0.1"])),
        ),
        // Outside the zones: passed on; entries outside them are not even read.
        ("example.com.", RecordType::A, None),
        ("localhost.", RecordType::AAAA, None),
        // PTR zones need not be listed, but only names in the zones give PTRs.
        (
            "1.0.0.10.in-addr.arpa.",
            RecordType::PTR,
            Some((
                "NOERROR",
                &["1.0.0.10.in-addr.arpa. 3600 IN PTR example.org."],
            )),
        ),
        ("2.0.0.10.in-addr.arpa.", RecordType::PTR, None),
        // In the zones, unknown, with fallthrough: passed on.
        ("missing.example.org.", RecordType::A, None),
        ("example.org.", RecordType::TXT, Some(("NOERROR", &[]))),
    ];
    check(&hosts, cases);
}

/// CoreDNS's `TestFallthroughUnsupportedType`.
#[test]
fn fallthrough_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, Option<Vec<Name>>, bool, bool)] = &[
        ("example.org.", Some(vec![]), false, false),
        ("example.org.", Some(vec![]), true, true),
        (
            "example.org.",
            Some(vec![Name::from_ascii("example.net.").unwrap()]),
            true,
            false,
        ),
        ("missing.example.org.", Some(vec![]), false, true),
    ];
    for (name, fallthrough, unsupported, passes) in cases {
        let hosts = hosts_with(&dir, HOSTS_EXAMPLE, |config| {
            config.fallthrough = fallthrough.clone();
            config.fallthrough_unsupported = *unsupported;
        });
        let got = ask(&hosts, name, RecordType::TXT);
        if *passes {
            assert_eq!(got, None, "{name} {fallthrough:?} {unsupported}");
        } else {
            assert_eq!(
                got,
                Some(("NOERROR".to_owned(), true, vec![])),
                "{name} {fallthrough:?} {unsupported}"
            );
        }
    }
}

#[test]
fn inline_entries_follow_the_file_and_options_apply() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = hosts_with(&dir, "10.0.0.1 example.org\n", |config| {
        config.inline = vec![
            "10.0.0.9 example.org".to_owned(),
            "192.168.49.1 host.minikube.internal".to_owned(),
        ];
        config.ttl = 60;
        config.no_reverse = true;
    });
    let cases: &[Case<'_>] = &[
        (
            "example.org.",
            RecordType::A,
            Some((
                "NOERROR",
                &[
                    "example.org. 60 IN A 10.0.0.1",
                    "example.org. 60 IN A 10.0.0.9",
                ],
            )),
        ),
        (
            "host.minikube.internal.",
            RecordType::A,
            Some(("NOERROR", &["host.minikube.internal. 60 IN A 192.168.49.1"])),
        ),
        // no_reverse: no PTRs.
        ("1.49.168.192.in-addr.arpa.", RecordType::PTR, None),
    ];
    check(&hosts, cases);
}

/// The file is read again when it changes; one that goes missing or turns into a directory
/// keeps the entries last read; the inline ones are served throughout.
#[test]
fn reload_keeps_the_last_good_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosts");
    let mut config = config(path.clone());
    config.inline = vec!["10.9.9.9 inline.example".to_owned()];
    config.fallthrough = Some(vec![]);
    // Missing at start: a warning, the inline entries only.
    let hosts = Hosts::load(&config);
    let a = |hosts: &Hosts, name: &str| ask(hosts, name, RecordType::A).map(|(_, _, r)| r);
    assert_eq!(a(&hosts, "node-1."), None);
    assert_eq!(
        a(&hosts, "inline.example."),
        Some(vec!["inline.example. 3600 IN A 10.9.9.9".to_owned()])
    );
    std::fs::write(&path, "172.18.0.2 node-1\n").unwrap();
    hosts.reload();
    assert_eq!(
        a(&hosts, "node-1."),
        Some(vec!["node-1. 3600 IN A 172.18.0.2".to_owned()])
    );
    // A change of size is seen whatever the modification time says.
    std::fs::write(&path, "172.18.0.3 node-1\n172.18.0.4 node-2\n").unwrap();
    hosts.reload();
    assert_eq!(
        a(&hosts, "node-2."),
        Some(vec!["node-2. 3600 IN A 172.18.0.4".to_owned()])
    );
    std::fs::remove_file(&path).unwrap();
    hosts.reload();
    assert_eq!(
        a(&hosts, "node-2."),
        Some(vec!["node-2. 3600 IN A 172.18.0.4".to_owned()]),
        "a missing file keeps the last entries"
    );
    std::fs::create_dir(&path).unwrap();
    hosts.reload();
    assert!(a(&hosts, "node-1.").is_some(), "so does a directory");
    assert!(a(&hosts, "inline.example.").is_some());
    let mut exposition = Exposition::new();
    HostsCollector.collect(&mut exposition);
    let text = exposition.finish();
    // CoreDNS's count: every address and every PTR name, the file's and the inline ones.
    let entries = format!(
        "coredns_hosts_entries{{hostsfile=\"{}\"}} 6",
        path.display()
    );
    assert!(text.contains(&entries), "{text}");
    assert!(
        text.contains("coredns_hosts_reload_timestamp_seconds "),
        "{text}"
    );
}

#[test]
fn reverse_names() {
    let cases: &[(&str, Option<&str>)] = &[
        ("4.3.2.1.in-addr.arpa.", Some("1.2.3.4")),
        ("3.2.1.in-addr.arpa.", None),
        ("04.3.2.1.in-addr.arpa.", None),
        ("256.3.2.1.in-addr.arpa.", None),
        (
            "b.a.9.8.7.6.5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.",
            Some("2001:db8::567:89ab"),
        ),
        ("b.a.ip6.arpa.", None),
        ("example.org.", None),
    ];
    for (name, want) in cases {
        let wire = WireName::from_dotted(name).unwrap();
        let got =
            crate::zone::rrset::address_of_reverse_wire(wire.as_bytes()).map(|ip| ip.to_string());
        assert_eq!(got.as_deref(), *want, "{name}");
    }
}

/// A reply larger than the client takes goes out without its records, with TC.
#[test]
fn large_answers_are_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=40)
        .map(|i| format!("fd00::{i:x} many.example\n"))
        .collect();
    let hosts = hosts_with(&dir, &text, |_| {});
    let packet = query("many.example.", RecordType::AAAA);
    let request = Request::parse(&packet).unwrap();
    for (limit, truncated, count) in [(512, true, 0), (1232, false, 40)] {
        let mut out = Vec::new();
        assert!(matches!(
            hosts.respond(&request, limit, &mut out),
            Flow::Done(End::Reply(_))
        ));
        let reply = Message::from_vec(&out).unwrap();
        assert_eq!(
            (reply.metadata.truncation, reply.answers.len()),
            (truncated, count),
            "limit {limit}"
        );
        assert!(out.len() <= limit);
        assert!(reply.edns.is_some(), "the OPT record stays");
    }
}
