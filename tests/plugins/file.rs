//! The *file* plugin end to end against the real binary: a zone file served
//! authoritatively (NXDOMAIN and NODATA with the SOA, CNAMEs, wildcards, a delegation with
//! glue, MX additionals), beside *kubernetes* and *forward* in one block (a CNAME into the
//! cluster zone chased, `fallthrough` to the upstream, the `plugin` label), reloads on a SOA
//! serial change (a broken file keeps the zone), and a bad file at start named with its line.

use std::time::{Duration, Instant};

use crate::common::binary::TestServer;
use crate::common::cli::clusterdns;
use crate::common::upstream::{Behaviour, TestUpstream};
use crate::common::{TempCorefile, expect, read};

const SOA: &str = "example.org. 3600 IN SOA ns.example.org. hostmaster.example.org. 2024010101 7200 3600 1209600 300";
const NS: &str = "example.org. 3600 IN NS ns.example.org.";

/// A Corefile of `text` with the fixture zone file next to it, as `db.example.org`.
fn with_zone(text: &str) -> TempCorefile {
    let corefile = TempCorefile::new(text);
    std::fs::write(
        corefile.dir.path().join("db.example.org"),
        read("fixtures/db.example.org"),
    )
    .unwrap();
    corefile
}

fn serve(corefile: &TempCorefile) -> TestServer {
    TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()])
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_zone_file_is_served_authoritatively() {
    // A relative DBFILE is next to the Corefile.
    let corefile = with_zone("example.org:0 {\n    bind 127.0.0.1\n    file db.example.org\n}\n");
    let server = serve(&corefile);

    let apex = server.ask_udp("example.org.", "A");
    assert_eq!(apex.rcode, "NOERROR");
    assert!(apex.authoritative);
    assert_eq!(apex.answer, expect(&["example.org. 3600 IN A 192.0.2.1"]));
    assert_eq!(
        apex.authority,
        expect(&[NS]),
        "the apex NS with a positive answer"
    );

    let soa = server.ask_udp("example.org.", "SOA");
    assert_eq!(soa.answer, expect(&[SOA]));
    let ns = server.ask_udp("example.org.", "NS");
    assert_eq!(ns.answer, expect(&[NS]));
    assert_eq!(
        ns.additional,
        expect(&["ns.example.org. 3600 IN A 192.0.2.53"])
    );

    // A CNAME followed inside the zone, over TCP too.
    for reply in [
        server.ask_udp("www.example.org.", "A"),
        server.ask_tcp("WWW.Example.ORG.", "A"),
    ] {
        assert!(reply.authoritative);
        assert_eq!(
            reply.answer,
            expect(&[
                "www.example.org. 3600 IN CNAME web.example.org.",
                "web.example.org. 60 IN A 192.0.2.80",
                "web.example.org. 60 IN A 192.0.2.81",
            ])
        );
    }

    // NXDOMAIN and NODATA, with the SOA.
    let missing = server.ask_udp("nope.example.org.", "A");
    assert_eq!(missing.rcode, "NXDOMAIN");
    assert!(missing.authoritative);
    assert!(missing.answer.is_empty());
    assert_eq!(missing.authority, expect(&[SOA]));
    let nodata = server.ask_udp("web.example.org.", "AAAA");
    assert_eq!(nodata.rcode, "NOERROR");
    assert!(nodata.answer.is_empty());
    assert_eq!(nodata.authority, expect(&[SOA]));

    // A wildcard answers for the name asked.
    assert_eq!(
        server.ask_udp("anything.apps.example.org.", "A").answer,
        expect(&["anything.apps.example.org. 3600 IN A 192.0.2.100"])
    );

    // MX: the in-zone exchange's addresses in additional.
    let mx = server.ask_udp("example.org.", "MX");
    assert_eq!(
        mx.answer,
        expect(&["example.org. 3600 IN MX 10 mail.example.org."])
    );
    assert_eq!(
        mx.additional,
        expect(&[
            "mail.example.org. 3600 IN A 192.0.2.25",
            "mail.example.org. 3600 IN AAAA 2001:db8::25",
        ])
    );

    // A delegation: a referral with glue, not authoritative.
    let referral = server.ask_udp("host.sub.example.org.", "A");
    assert_eq!(referral.rcode, "NOERROR");
    assert!(!referral.authoritative);
    assert!(referral.answer.is_empty());
    assert_eq!(
        referral.authority,
        expect(&["sub.example.org. 3600 IN NS ns1.sub.example.org."])
    );
    assert_eq!(
        referral.additional,
        expect(&["ns1.sub.example.org. 3600 IN A 192.0.2.54"])
    );

    // A DNAME: itself, the CNAME it makes, and that followed (here into the wildcard).
    let dname = server.ask_udp("x.alias.example.org.", "A");
    assert_eq!(dname.rcode, "NOERROR");
    let answers = &dname.message.answers;
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0].name.to_string(), "alias.example.org.");
    assert_eq!(
        answers[0].record_type(),
        hickory_proto::rr::RecordType::DNAME
    );
    // Its target on the wire (the test's decoder keeps a DNAME's data raw).
    let hickory_proto::rr::RData::Unknown { rdata, .. } = &answers[0].data else {
        panic!("{answers:?}");
    };
    assert_eq!(rdata.anything, b"\x04apps\x07example\x03org\x00");
    assert_eq!(
        dname.answer[1..],
        expect(&[
            "x.alias.example.org. 3600 IN CNAME x.apps.example.org.",
            "x.apps.example.org. 3600 IN A 192.0.2.100",
        ])
    );

    assert_eq!(
        server.ask_udp("txt.example.org.", "TXT").answer,
        expect(&["txt.example.org. 3600 IN TXT \"hello from a zone file\""])
    );
    // Zone transfers are refused (no *transfer* of file zones).
    assert_eq!(server.ask_tcp("example.org.", "AXFR").rcode, "REFUSED");
}

#[test]
fn a_custom_zone_beside_the_cluster_zone() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let up = rt.block_on(TestUpstream::start(Behaviour::Answer));
    let corefile = with_zone(&format!(
        ".:0 {{
    bind 127.0.0.1
    prometheus 127.0.0.1:0
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
        objects {{FIXTURES}}/shop.json
    }}
    file db.example.org example.org {{
        fallthrough
    }}
    forward . {}
    cache 30
}}
",
        up.addr
    ));
    let server = serve(&corefile);

    assert_eq!(
        server.ask_udp("web.example.org.", "A").answer,
        expect(&[
            "web.example.org. 60 IN A 192.0.2.80",
            "web.example.org. 60 IN A 192.0.2.81",
        ])
    );
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        expect(&["web.shop.svc.cluster.local. 30 IN A 10.96.0.20"])
    );
    // A CNAME out of the zone file into the cluster zone: its target asked through the
    // server.
    let shop = server.ask_udp("shop.example.org.", "A");
    assert_eq!(shop.rcode, "NOERROR");
    assert_eq!(
        shop.answer,
        expect(&[
            "shop.example.org. 3600 IN CNAME web.shop.svc.cluster.local.",
            "web.shop.svc.cluster.local. 30 IN A 10.96.0.20",
        ])
    );
    assert_eq!(up.queries_for("web.shop.svc.cluster.local."), 0);
    // `fallthrough`: a name the zone file does not have goes on to *forward*.
    let passed = server.ask_udp("elsewhere.example.org.", "A");
    assert_eq!(
        passed.answer,
        expect(&["elsewhere.example.org. 30 IN A 192.0.2.1"])
    );
    assert_eq!(up.queries_for("elsewhere.example.org."), 1);
    // Names outside both zones are forwarded; file's own answers never are.
    assert_eq!(up.queries_for("web.example.org."), 0);

    let (_, metrics) = server.http_get("metrics", "/metrics");
    assert!(
        metrics.contains("coredns_dns_responses_total{plugin=\"file\",rcode=\"NOERROR\""),
        "{metrics}"
    );
    assert!(
        metrics.contains("coredns_plugin_enabled{name=\"file\""),
        "{metrics}"
    );
}

#[test]
fn the_zone_is_reloaded_when_its_serial_changes() {
    let corefile = with_zone(
        "example.org:0 {\n    bind 127.0.0.1\n    file db.example.org {\n        reload 200ms\n    }\n}\n",
    );
    let zone = corefile.dir.path().join("db.example.org");
    let server = serve(&corefile);
    let web = |server: &TestServer| server.ask_udp("new.example.org.", "A");
    assert_eq!(web(&server).rcode, "NXDOMAIN");

    // The same serial: not read again.
    let original = read("fixtures/db.example.org");
    let added = format!("{original}new IN A 192.0.2.200\n");
    std::fs::write(&zone, &added).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(web(&server).rcode, "NXDOMAIN", "the serial did not change");

    // A new serial: the new zone.
    std::fs::write(&zone, added.replace("2024010101", "2024010102")).unwrap();
    wait_for("the new serial to be read", || {
        web(&server).answer == expect(&["new.example.org. 3600 IN A 192.0.2.200"])
    });
    server.wait_log("2024010102", Duration::from_secs(5));

    // A broken file with a newer serial: the zone last read stays, and the log says why.
    let broken = format!(
        "{}bad IN A 300.0.0.1\n",
        added.replace("2024010101", "2024010103")
    );
    std::fs::write(&zone, broken).unwrap();
    server.wait_log("keeping the zone last read", Duration::from_secs(5));
    let line = added.lines().count() + 1;
    assert!(
        server.log().contains(&format!("db.example.org:{line}:")),
        "the file and line of the error:\n{}",
        server.log()
    );
    assert_eq!(
        web(&server).answer,
        expect(&["new.example.org. 3600 IN A 192.0.2.200"])
    );
}

#[test]
fn a_bad_zone_file_at_start_names_the_file_and_line() {
    let corefile =
        TempCorefile::new("example.org:0 {\n    bind 127.0.0.1\n    file db.example.org\n}\n");
    let zone = corefile.dir.path().join("db.example.org");
    std::fs::write(
        &zone,
        "$ORIGIN example.org.\n@ SOA ns admin 1 2 3 4 5\nwww A 192.0.2.1\nmail MX ten mail\n",
    )
    .unwrap();
    let corefile_path = corefile.path.to_str().unwrap();
    let run = clusterdns(&["query", "--corefile", corefile_path, "www.example.org."]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("file (line 3): ") && run.stderr.contains("db.example.org:4: "),
        "{}",
        run.stderr
    );
    // A missing file is an error too with `reload 0` (it would never be read).
    std::fs::remove_file(&zone).unwrap();
    let never = TempCorefile::new(
        "example.org:0 {\n    bind 127.0.0.1\n    file nowhere.db {\n        reload 0\n    }\n}\n",
    );
    let run = clusterdns(&[
        "query",
        "--corefile",
        never.path.to_str().unwrap(),
        "www.example.org.",
    ]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("nowhere.db"), "{}", run.stderr);
    // With a reload period it is a warning, and SERVFAIL until the file can be read.
    let later = TempCorefile::new("example.org:0 {\n    bind 127.0.0.1\n    file later.db\n}\n");
    let server = serve(&later);
    assert_eq!(server.ask_udp("www.example.org.", "A").rcode, "SERVFAIL");
    assert!(server.log().contains("later.db"), "{}", server.log());
}
