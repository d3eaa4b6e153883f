#![allow(clippy::unwrap_used)]

use std::str::FromStr;

use hickory_proto::op::{Edns as HEdns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::*;
use crate::config::{LogClasses, LogConfig};

const COMMON: &str = "{remote}:{port} - {>id} \"{type} {class} {name} {proto} {size} {>do} {>bufsize}\" {rcode} {>rflags} {rsize} {duration}";

fn config(names: &[&str], format: &str, classes: LogClasses) -> LogConfig {
    LogConfig {
        names: names.iter().map(|n| Name::from_str(n).unwrap()).collect(),
        format: format.to_owned(),
        classes,
        min_duration: None,
    }
}

fn query(name: &str) -> Vec<u8> {
    let mut m = Message::new(29008, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(Name::from_ascii(name).unwrap(), RecordType::A));
    let mut edns = HEdns::new();
    edns.set_max_payload(4096);
    m.edns = Some(edns);
    m.to_vec().unwrap()
}

fn reply(rcode: ResponseCode, answers: usize) -> Vec<u8> {
    let mut m = Message::new(29008, MessageType::Response, OpCode::Query);
    m.metadata.response_code = rcode;
    m.metadata.recursion_desired = true;
    m.metadata.authoritative = true;
    let name = Name::from_str("example.org.").unwrap();
    m.add_query(Query::query(name.clone(), RecordType::A));
    for _ in 0..answers {
        m.add_answer(Record::from_rdata(
            name.clone(),
            30,
            RData::A(A::new(192, 0, 2, 1)),
        ));
    }
    m.to_vec().unwrap()
}

fn line(log: &QueryLog, name: &str, reply: &[u8], duration: Duration) -> Option<String> {
    let packet = query(name);
    let request = Request::parse(&packet).unwrap();
    log.line(&Entry {
        remote: "[::1]:50759".parse().unwrap(),
        local: "127.0.0.1:53".parse().unwrap(),
        proto: "udp",
        request: &request,
        reply,
        duration,
    })
}

#[test]
fn common_log_format_as_coredns_writes_it() {
    let log = QueryLog::new(&config(&["."], COMMON, LogClasses::ALL));
    let reply = reply(ResponseCode::NoError, 1);
    assert_eq!(
        line(&log, "Example.org.", &reply, Duration::from_micros(37990)).unwrap(),
        format!(
            "[::1]:50759 - 29008 \"A IN example.org. udp {} false 4096\" NOERROR qr,aa,rd {} 0.03799s",
            query("Example.org.").len(),
            reply.len()
        )
    );
}

#[test]
fn classes_names_and_slow_queries() {
    let denial_only = LogClasses {
        success: false,
        denial: true,
        error: false,
    };
    let log = QueryLog::new(&config(&["example.org."], "{name} {rcode}", denial_only));
    let ms = Duration::from_millis(1);
    assert_eq!(
        line(
            &log,
            "x.example.org.",
            &reply(ResponseCode::NXDomain, 0),
            ms
        )
        .as_deref(),
        Some("x.example.org. NXDOMAIN")
    );
    assert_eq!(
        line(&log, "x.example.org.", &reply(ResponseCode::NoError, 0), ms).as_deref(),
        Some("x.example.org. NOERROR"),
        "NODATA is a denial"
    );
    assert_eq!(
        line(&log, "x.example.org.", &reply(ResponseCode::NoError, 1), ms),
        None,
        "success not logged"
    );
    assert_eq!(
        line(
            &log,
            "x.example.org.",
            &reply(ResponseCode::ServFail, 0),
            ms
        ),
        None,
        "error not logged"
    );
    assert_eq!(
        line(&log, "example.com.", &reply(ResponseCode::NXDomain, 0), ms),
        None,
        "other names"
    );
    let mut slow = config(&["."], "{name} {duration}", denial_only);
    slow.min_duration = Some(Duration::from_secs(1));
    let log = QueryLog::new(&slow);
    assert!(
        line(
            &log,
            "a.",
            &reply(ResponseCode::NoError, 1),
            Duration::from_secs(2)
        )
        .is_some(),
        "slow is logged"
    );
    assert!(line(&log, "a.", &reply(ResponseCode::NoError, 1), ms).is_none());
}

#[test]
fn formats_compile_placeholders_and_keep_unknown_ones() {
    let log = QueryLog::new(&config(
        &["."],
        "{proto} Request: {name} {type} {>id} {/kubernetes/namespace} {nope}",
        LogClasses::ALL,
    ));
    assert_eq!(
        line(
            &log,
            "example.org.",
            &reply(ResponseCode::NoError, 1),
            Duration::ZERO
        )
        .unwrap(),
        "udp Request: example.org. A 29008 - {nope}"
    );
}

#[test]
fn errors_are_printed_or_consolidated() {
    let plain = ErrorLog::new(&ErrorsConfig {
        consolidate: Vec::new(),
        stacktrace: false,
    });
    let t0 = Instant::now();
    assert_eq!(
        plain.lines(
            "2 example.org. A: read udp 127.0.0.1:1->10.0.0.1:53: i/o timeout",
            "read udp 127.0.0.1:1->10.0.0.1:53: i/o timeout",
            t0
        ),
        ["[ERROR] plugin/errors: 2 example.org. A: read udp 127.0.0.1:1->10.0.0.1:53: i/o timeout"]
    );
    let consolidating = ErrorLog::new(&ErrorsConfig {
        consolidate: vec![Consolidate {
            period: Duration::from_secs(30),
            pattern: regex::Regex::new("^read udp .* i/o timeout$").unwrap(),
            level: LogLevel::Warning,
            show_first: false,
        }],
        stacktrace: false,
    });
    let timeout = "read udp 127.0.0.1:1->10.0.0.1:53: i/o timeout";
    assert!(consolidating.lines("m", timeout, t0).is_empty());
    assert!(
        consolidating
            .lines("m", timeout, t0 + Duration::from_secs(10))
            .is_empty()
    );
    assert_eq!(
        consolidating.flush(t0 + Duration::from_secs(30)),
        ["[WARNING] 2 errors like '^read udp .* i/o timeout$' occurred in last 30s"]
    );
    assert!(
        consolidating.flush(t0 + Duration::from_secs(61)).is_empty(),
        "nothing new"
    );
    assert_eq!(
        consolidating.lines("2 x. A: other", "other", t0).len(),
        1,
        "unmatched errors print at once"
    );
}

#[test]
fn durations_print_like_go() {
    for (secs, millis, want) in [
        (30, 0, "30s"),
        (300, 0, "5m0s"),
        (3600, 0, "1h0m0s"),
        (1, 500, "1.5s"),
        (90, 0, "1m30s"),
    ] {
        assert_eq!(
            go_duration(Duration::from_secs(secs) + Duration::from_millis(millis)),
            want
        );
    }
}
