#![allow(clippy::unwrap_used)]

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query as HQuery};
use hickory_proto::rr::{DNSClass, Name, RecordType};

use super::testing::{answers, ask, block, query, query_class, rcode};
use super::*;
use crate::plugin::COREDNS_DIRECTIVES;
use crate::server::{Handler, Outcome};

/// Every step a block can have, and the order a query meets them: CoreDNS's, whatever the
/// order in the Corefile.
#[test]
fn steps_are_in_plugin_cfg_order() {
    let every = block(
        ". {
    forward . 192.0.2.1
    loop
    cache 30
    loadbalance
    k8s_external example.org
    file {FIXTURES}/db.example.org example.org
    kubernetes cluster.local {
        objects {FIXTURES}/shop.json
    }
    hosts {
        10.0.0.1 a.example
        fallthrough
    }
    template IN A example { rcode NXDOMAIN }
    autopath @kubernetes {
        namespace query
    }
    rewrite name exact a.example b.example
    chaos
    any
    bufsize 1232
}",
    );
    let order = every.chain_directives();
    assert_eq!(
        order,
        [
            "bufsize",
            "any",
            "chaos",
            "loadbalance",
            "rewrite",
            "autopath",
            "cache",
            "template",
            "transfer",
            "hosts",
            "k8s_external",
            "kubernetes",
            "file",
            "loop",
            "forward"
        ]
    );
    let position = |name: &str| COREDNS_DIRECTIVES.iter().position(|d| *d == name).unwrap();
    assert!(
        order
            .windows(2)
            .all(|pair| position(pair[0]) < position(pair[1])),
        "{order:?}"
    );
    // kubeadm's Corefile: its *cache* and *loadbalance* steps are where plugin.cfg puts
    // them (doing their work where the upstream is and where replies are written), *loop*
    // right before *forward*.
    let kubeadm = block(
        ".:53 {
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        objects {FIXTURES}/shop.json
    }
    prometheus 127.0.0.1:0
    forward . 192.0.2.1
    cache 30
    loop
    loadbalance
}",
    );
    assert_eq!(
        kubeadm.chain_directives(),
        [
            "loadbalance",
            "cache",
            "transfer",
            "kubernetes",
            "loop",
            "forward"
        ]
    );
}

fn edns_query(name: &str, payload: u16) -> Vec<u8> {
    let mut message = Message::new(9, MessageType::Query, OpCode::Query);
    message.add_query(HQuery::query(
        Name::from_ascii(name).unwrap(),
        RecordType::A,
    ));
    let mut edns = Edns::new();
    edns.set_max_payload(payload);
    message.edns = Some(edns);
    message.to_vec().unwrap()
}

/// *bufsize* lowers the payload the chain (and the upstream) sees, and is the UDP cap.
#[test]
fn bufsize() {
    let cases: &[(&str, u16, usize, u16)] = &[
        // Corefile line, client payload, UDP limit, payload sent upstream.
        ("", 4096, 1232, 4096),
        ("", 1000, 1000, 1000),
        ("bufsize", 4096, 1232, 1232),
        ("bufsize 512", 4096, 512, 512),
        ("bufsize 512", 400, 512, 512),
        ("bufsize 4096", 4096, 4096, 4096),
        ("bufsize 1500", 1400, 1400, 1400),
    ];
    for (line, payload, limit, upstream) in cases {
        let block = block(&format!(". {{\n {line}\n forward . 192.0.2.1\n}}"));
        let packet = edns_query("example.org.", *payload);
        let request = Request::parse(&packet).unwrap();
        assert_eq!(
            block.chain.limit(&request, Transport::Udp),
            *limit,
            "{line} {payload}"
        );
        assert_eq!(block.chain.limit(&request, Transport::Tcp), 65535);
        let ctx = Ctx {
            block: &block,
            zone: 0,
            client: ([127, 0, 0, 1], 5353).into(),
            transport: Transport::Udp,
            started: Instant::now(),
            request: &request,
            chased: false,
            dry: false,
        };
        let mut q = Query::new(&block.chain, &packet, &request, Transport::Udp);
        let mut out = Vec::new();
        let End::Forward(pending) = block.chain.run(&ctx, 0, &mut q, &mut out) else {
            panic!("{line}: not upstream");
        };
        let asked = pending.asked.as_ref().unwrap_or(&pending.query);
        let sent = Request::parse(asked.bytes()).unwrap().edns.unwrap().payload;
        let carried = asked.request().edns.unwrap().payload;
        assert_eq!(
            carried, sent,
            "{line} {payload}: the parse carried is the message's"
        );
        // A payload under 512 reads as 512 (RFC 6891).
        assert_eq!(sent, (*upstream).max(512), "{line} {payload}");
        assert_eq!(
            pending.query.bytes(),
            packet,
            "the client's query is kept as received"
        );
    }
}

/// *any* answers ANY with RFC 8482's HINFO; other types go on.
#[test]
fn any() {
    let block = block(
        ". {
    any
    kubernetes cluster.local {
        objects {FIXTURES}/shop.json
    }
}",
    );
    let reply = ask(&block, "web.shop.svc.cluster.local.", RecordType::ANY).unwrap();
    let [record] = reply.answers.as_slice() else {
        panic!("{reply:?}");
    };
    let hickory_proto::rr::RData::HINFO(hinfo) = &record.data else {
        panic!("{record:?}");
    };
    assert_eq!(
        (&*hinfo.cpu, &*hinfo.os, record.ttl, record.name.to_ascii()),
        (
            &b"ANY obsoleted"[..],
            &b"See RFC 8482"[..],
            8482,
            "web.shop.svc.cluster.local.".to_owned()
        )
    );
    assert!(!reply.metadata.authoritative);
    let a = ask(&block, "web.shop.svc.cluster.local.", RecordType::A).unwrap();
    assert_eq!(
        answers(&a),
        ["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"]
    );
}

fn handler_reply(handler: &Handler, packet: &[u8]) -> Message {
    let mut out = Vec::new();
    match handler.respond(
        packet,
        ([127, 0, 0, 1], 5353).into(),
        Transport::Udp,
        &mut out,
    ) {
        Outcome::Reply => Message::from_vec(&out).unwrap(),
        other => panic!("no reply: {other:?}"),
    }
}

/// Classes other than IN reach the plugins that answer them (*chaos*, *template*); the
/// cluster zone, *hosts* and *forward* refuse them, as before the chain.
#[test]
fn other_classes() {
    let block = block(
        ". {
    chaos clusterdns-test
    kubernetes cluster.local {
        objects {FIXTURES}/shop.json
    }
    forward . 192.0.2.1
}",
    );
    let handler = Handler::new(vec![Arc::clone(&block)]);
    let version = handler_reply(
        &handler,
        &query_class("version.bind.", RecordType::TXT, DNSClass::CH),
    );
    assert_eq!(
        answers(&version),
        ["version.bind. 0 IN TXT \"clusterdns-test\""],
        "(record_line prints IN for every class)"
    );
    assert_eq!(version.answers[0].dns_class, DNSClass::CH);
    for (name, class) in [
        ("web.shop.svc.cluster.local.", DNSClass::CH),
        ("example.org.", DNSClass::HS),
        ("nothing.bind.", DNSClass::CH),
    ] {
        let reply = handler_reply(&handler, &query_class(name, RecordType::TXT, class));
        assert_eq!(rcode(&reply), "REFUSED", "{name} {class:?}");
    }
}

/// k3s's chain: *hosts* with `fallthrough` in front of the cluster zone and *forward*.
#[test]
fn hosts_falls_through_to_the_cluster_zone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("NodeHosts"), "172.18.0.2 k3s-server\n").unwrap();
    let block = super::testing::block_in(
        dir.path(),
        ".:53 {
    hosts NodeHosts {
        ttl 60
        reload 15s
        fallthrough
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        objects {FIXTURES}/shop.json
    }
    forward . 192.0.2.1
}",
    );
    let node = ask(&block, "k3s-server.", RecordType::A).unwrap();
    assert_eq!(answers(&node), ["k3s-server. 60 IN A 172.18.0.2"]);
    let ptr = ask(&block, "2.0.18.172.in-addr.arpa.", RecordType::PTR).unwrap();
    assert_eq!(
        answers(&ptr),
        ["2.0.18.172.in-addr.arpa. 60 IN PTR k3s-server."]
    );
    let web = ask(&block, "web.shop.svc.cluster.local.", RecordType::A).unwrap();
    assert_eq!(
        answers(&web),
        ["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"]
    );
    assert!(
        ask(&block, "www.example.com.", RecordType::A).is_none(),
        "forwarded"
    );
    // A type the node has not: NODATA from hosts, not the upstream.
    let aaaa = ask(&block, "k3s-server.", RecordType::AAAA).unwrap();
    assert_eq!((rcode(&aaaa), answers(&aaaa).len()), ("NOERROR", 0));
}

/// *rewrite* in front of a query that goes upstream: the upstream is asked the rewritten
/// name, the client's query is kept for its reply.
#[test]
fn rewritten_queries_go_upstream_rewritten() {
    let block = block(
        ". {
    rewrite name suffix .corp.example .example.net answer auto
    forward . 192.0.2.1
}",
    );
    let handler = Handler::new(vec![Arc::clone(&block)]);
    let packet = query("db.corp.example.", RecordType::A);
    let mut out = Vec::new();
    let Outcome::Forward(pending) = handler.respond(
        &packet,
        ([127, 0, 0, 1], 5353).into(),
        Transport::Udp,
        &mut out,
    ) else {
        panic!("not forwarded");
    };
    assert_eq!(pending.query.bytes(), packet);
    let asked = pending.asked.as_ref().unwrap();
    let carried = asked.request();
    assert_eq!(carried.question.name(), b"\x02db\x07example\x03net\x00");
    let asked = Message::from_vec(asked.bytes()).unwrap();
    assert_eq!(asked.queries[0].name().to_ascii(), "db.example.net.");
    assert_eq!(asked.metadata.id, 42);
    assert!(asked.edns.is_some(), "the client's OPT goes along");
    // The upstream's answer, turned back.
    let mut reply = Message::new(42, MessageType::Response, OpCode::Query);
    reply.add_query(asked.queries[0].clone());
    reply.add_answer(hickory_proto::rr::Record::from_rdata(
        Name::from_ascii("db.example.net.").unwrap(),
        30,
        hickory_proto::rr::RData::A("192.0.2.7".parse().unwrap()),
    ));
    let mut bytes = reply.to_vec().unwrap();
    pending.revert.as_ref().unwrap().apply(&mut bytes);
    let turned = Message::from_vec(&bytes).unwrap();
    assert_eq!(turned.queries[0].name().to_ascii(), "db.corp.example.");
    assert_eq!(answers(&turned), ["db.corp.example. 30 IN A 192.0.2.7"]);
}

/// A template's CNAME: its target is asked through the server, and its records follow.
#[test]
fn template_cnames_are_chased() {
    let block = block(
        r#". {
    template IN ANY foogle.com {
        match "^foogle\.com\.$"
        answer "foogle.com 60 IN CNAME google.com"
    }
    hosts {
        10.0.0.7 google.com
        fallthrough
    }
}"#,
    );
    let handler = Handler::new(vec![Arc::clone(&block)]);
    let reply = handler_reply(&handler, &query("foogle.com.", RecordType::A));
    assert_eq!(
        answers(&reply),
        [
            "foogle.com. 60 IN CNAME google.com.",
            "google.com. 3600 IN A 10.0.0.7"
        ]
    );
    assert_eq!(rcode(&reply), "NOERROR");
    // Not for other types: the CNAME alone.
    let txt = handler_reply(&handler, &query("foogle.com.", RecordType::TXT));
    assert_eq!(answers(&txt), ["foogle.com. 60 IN CNAME google.com."]);
}
