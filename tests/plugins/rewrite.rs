//! *rewrite*'s `cname` and `edns0` rules end to end against the real binary: a CNAME target
//! rewritten and the new target asked through the server (a zone file's own CNAME, a CNAME
//! its chase brought back from the upstream, a forwarded reply's CNAME), and the EDNS0
//! options the upstream receives.

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::rdata::opt::{ClientSubnet, EdnsCode, EdnsOption};
use hickory_proto::rr::{Name, RecordType};

use crate::common::binary::TestServer;
use crate::common::upstream::{Behaviour, TestUpstream};
use crate::common::{Reply, TempCorefile, expect, read};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A block with `rules`, the fixture zone file (and `extra` records) for example.org, the
/// cluster zone, and a forward to `upstream`.
fn corefile(rules: &str, extra: &str, upstream: std::net::SocketAddr) -> TempCorefile {
    let corefile = TempCorefile::new(&format!(
        ".:0 {{
    bind 127.0.0.1
    {rules}
    file db.example.org example.org
    kubernetes cluster.local {{
        objects {{FIXTURES}}/shop.json
        ttl 30
    }}
    forward . {upstream}
}}
"
    ));
    let zone = format!("{}{extra}", read("fixtures/db.example.org"));
    std::fs::write(corefile.dir.path().join("db.example.org"), zone).unwrap();
    corefile
}

fn serve(corefile: &TempCorefile) -> TestServer {
    TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()])
}

#[test]
fn a_cname_target_is_rewritten_and_the_new_target_asked() {
    let rt = runtime();
    let up = rt.block_on(TestUpstream::start(Behaviour::Answer));

    // The zone file's own CNAME (answered at once).
    let exact = corefile(
        "rewrite cname exact web.example.org. mail.example.org.",
        "",
        up.addr,
    );
    let server = serve(&exact);
    let www = server.ask_udp("www.example.org.", "A");
    assert_eq!(www.rcode, "NOERROR");
    assert_eq!(
        www.answer,
        expect(&[
            "www.example.org. 3600 IN CNAME mail.example.org.",
            "mail.example.org. 3600 IN A 192.0.2.25",
        ])
    );
    // A reply without a CNAME the rule takes is as it was.
    assert_eq!(
        server.ask_udp("mail.example.org.", "A").answer,
        expect(&["mail.example.org. 3600 IN A 192.0.2.25"])
    );
    drop(server);

    // A CNAME the zone file's chase brought back from the upstream: retargeted into the
    // cluster zone.
    let suffix = corefile(
        "rewrite cname suffix .cdn.example.net. .shop.svc.cluster.local.",
        "cdn-web IN CNAME web.cdn.example.net.\n",
        up.addr,
    );
    let server = serve(&suffix);
    let chased = server.ask_udp("cdn-web.example.org.", "A");
    assert_eq!(chased.rcode, "NOERROR");
    assert_eq!(
        chased.answer,
        expect(&[
            "cdn-web.example.org. 3600 IN CNAME web.shop.svc.cluster.local.",
            "web.shop.svc.cluster.local. 30 IN A 10.96.0.20",
        ])
    );
}

#[test]
fn a_forwarded_replys_cname_is_rewritten() {
    // The upstream is another clusterdns serving a zone file with a CNAME.
    let zone = TempCorefile::new("example.net:0 {\n    bind 127.0.0.1\n    file db\n}\n");
    std::fs::write(
        zone.dir.path().join("db"),
        "$ORIGIN example.net.\n@ SOA ns admin 1 2 3 4 5\nweb CNAME web.cdn.example.net.\n\
         web.cdn A 192.0.2.7\n",
    )
    .unwrap();
    let upstream = serve(&zone);
    assert_eq!(
        upstream.ask_udp("web.example.net.", "A").answer,
        expect(&[
            "web.example.net. 3600 IN CNAME web.cdn.example.net.",
            "web.cdn.example.net. 3600 IN A 192.0.2.7",
        ])
    );
    let corefile = corefile(
        "rewrite cname regex ^(.*)\\.cdn\\.example\\.net\\.$ {1}.shop.svc.cluster.local.",
        "",
        upstream.addr,
    );
    let server = serve(&corefile);
    let reply = server.ask_udp("web.example.net.", "A");
    assert_eq!(reply.rcode, "NOERROR");
    assert_eq!(
        reply.answer,
        expect(&[
            "web.example.net. 3600 IN CNAME web.shop.svc.cluster.local.",
            "web.shop.svc.cluster.local. 30 IN A 10.96.0.20",
        ])
    );
    // Over TCP too, and from the cache (the upstream's reply is what is cached).
    assert_eq!(server.ask_tcp("web.example.net.", "A").answer, reply.answer);
}

/// The EDNS0 options of `packet`'s OPT record.
fn options(packet: &[u8]) -> Vec<(u16, EdnsOption)> {
    let message = Message::from_vec(packet).unwrap();
    let edns = message.edns.expect("an OPT record");
    edns.options()
        .as_ref()
        .iter()
        .map(|(code, option)| (u16::from(*code), option.clone()))
        .collect()
}

#[test]
fn edns0_rules_change_the_query_passed_upstream() {
    let rt = runtime();
    let up = rt.block_on(TestUpstream::start(Behaviour::Answer));
    let corefile = corefile(
        "rewrite continue edns0 local set 0xffee abcd\n    \
         rewrite continue edns0 local set 0xffed {qname}\n    \
         rewrite edns0 subnet set 24 56",
        "",
        up.addr,
    );
    let server = serve(&corefile);
    // A query without EDNS gets an OPT record with the options.
    let reply = Reply::decode(&server.udp(&crate::common::query("www.example.com.", "A", None)));
    assert_eq!(
        reply.answer,
        expect(&["www.example.com. 60 IN A 192.0.2.1"])
    );
    assert!(
        reply.message.edns.is_none(),
        "the client asked without EDNS"
    );
    let sent = up.last_query().unwrap();
    let subnet = ClientSubnet::new("127.0.0.0".parse().unwrap(), 24, 0);
    assert_eq!(
        options(&sent),
        [
            (0xffee, EdnsOption::Unknown(0xffee, b"abcd".to_vec())),
            (
                0xffed,
                EdnsOption::Unknown(0xffed, b"www.example.com.".to_vec())
            ),
            (u16::from(EdnsCode::Subnet), EdnsOption::Subnet(subnet)),
        ]
    );
    // Names the block answers itself are answered as before.
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        expect(&["web.shop.svc.cluster.local. 30 IN A 10.96.0.20"])
    );
    // `unset` takes an option the client sent out.
    drop(server);
    let corefile = self::corefile("rewrite edns0 local unset 0xffee", "", up.addr);
    let server = serve(&corefile);
    let mut query = Message::new(99, MessageType::Query, OpCode::Query);
    query.metadata.recursion_desired = true;
    query.queries = vec![Query::query(
        Name::from_ascii("other.example.com.").unwrap(),
        RecordType::A,
    )];
    let mut edns = hickory_proto::op::Edns::new();
    edns.set_max_payload(1232);
    edns.options_mut()
        .insert(EdnsOption::Unknown(0xffee, b"secret".to_vec()));
    edns.options_mut()
        .insert(EdnsOption::Unknown(0xfff0, b"kept".to_vec()));
    query.edns = Some(edns);
    let reply = Reply::decode(&server.udp(&query.to_vec().unwrap()));
    assert_eq!(
        reply.answer,
        expect(&["other.example.com. 60 IN A 192.0.2.1"])
    );
    assert_eq!(
        options(&up.last_query().unwrap()),
        [(0xfff0, EdnsOption::Unknown(0xfff0, b"kept".to_vec()))]
    );
}
