//! *autopath*: the server walks the client's search path, CoreDNS's way (namespace from the
//! client's pod, `pods verified`) and clusterdns's (namespace from the query).

use std::net::IpAddr;

use clusterdns::server::{self, Handler, Outcome, Transport};

use crate::common::binary::TestServer;
use crate::common::names::NamesUpstream;
use crate::common::{Reply, TempCorefile, expect, query, root};

/// A Corefile's blocks, asked from any client address.
struct Server {
    handler: Handler,
    _file: TempCorefile,
}

impl Server {
    fn new(corefile: &str) -> Self {
        let file = TempCorefile::new(
            &corefile.replace(
                "{CLIENTS}",
                &root()
                    .join("tests/fixtures/autopath-clients.json")
                    .display()
                    .to_string(),
            ),
        );
        let config = clusterdns::config::read_corefile(&file.path)
            .unwrap_or_else(|e| panic!("{e}\n{corefile}"));
        let blocks = server::load(&config).unwrap();
        Self {
            handler: Handler::new(blocks.into_iter().map(|b| b.block).collect()),
            _file: file,
        }
    }

    fn ask_from(&self, client: &str, name: &str, qtype: &str) -> Reply {
        let ip: IpAddr = client.parse().unwrap();
        let mut out = Vec::new();
        match self.handler.respond(
            &query(name, qtype, Some(1232)),
            (ip, 40000).into(),
            Transport::Udp,
            &mut out,
        ) {
            Outcome::Reply => Reply::decode(&out),
            other => panic!("{name} {qtype}: no reply: {other:?}"),
        }
    }
}

const POD_MODE: &str = ".:53 {
    autopath @kubernetes {
        search
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods verified
        ttl 30
        objects {FIXTURES}/shop.json {CLIENTS}
    }
}
";

const QUERY_MODE: &str = ".:53 {
    autopath @kubernetes {
        namespace query
        search
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        ttl 30
        objects {FIXTURES}/shop.json
    }
}
";

const SOA: &str = "cluster.local. 30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. SERIAL 7200 1800 86400 30";

#[test]
fn a_name_further_down_the_search_path_answers_behind_a_cname() {
    for (mode, corefile) in [("pod", POD_MODE), ("query", QUERY_MODE)] {
        let server = Server::new(corefile);
        let reply = server.ask_from(
            "127.0.0.1",
            "kube-dns.kube-system.shop.svc.cluster.local.",
            "A",
        );
        assert_eq!(reply.rcode, "NOERROR", "{mode}");
        assert_eq!(
            reply.message.queries[0].name().to_ascii(),
            "kube-dns.kube-system.shop.svc.cluster.local.",
            "{mode}: the client's question"
        );
        let answers: Vec<String> = reply
            .message
            .answers
            .iter()
            .map(|r| crate::common::normalize(&clusterdns::zone::zonefile::record_line(r)))
            .collect();
        assert_eq!(
            answers,
            [
                "kube-dns.kube-system.shop.svc.cluster.local. 30 IN CNAME kube-dns.kube-system.svc.cluster.local.",
                "kube-dns.kube-system.svc.cluster.local. 30 IN A 10.96.0.10",
            ],
            "{mode}: the CNAME comes first"
        );
        // AAAA ends at the same name: it exists there (NODATA), so the walk stops.
        let reply = server.ask_from(
            "127.0.0.1",
            "kube-dns.kube-system.shop.svc.cluster.local.",
            "AAAA",
        );
        assert_eq!(reply.rcode, "NOERROR", "{mode}");
        assert!(reply.answer.is_empty(), "{mode}: {:?}", reply.answer);
        // The asked name exists: answered as without autopath.
        let reply = server.ask_from("127.0.0.1", "web.shop.svc.cluster.local.", "A");
        assert_eq!(
            reply.answer,
            expect(&["web.shop.svc.cluster.local. 30 IN A 10.96.0.20"]),
            "{mode}"
        );
        // A case-insensitive client keeps its spelling in the question.
        let reply = server.ask_from(
            "127.0.0.1",
            "Kube-DNS.kube-system.Shop.svc.cluster.local.",
            "A",
        );
        assert_eq!(
            reply.message.queries[0].name().to_ascii(),
            "Kube-DNS.kube-system.Shop.svc.cluster.local."
        );
        assert_eq!(reply.answer.len(), 2, "{mode}");
        // Every name NXDOMAIN (no forward here: the name as typed is refused at the end of
        // the chain, which ends the walk).
        let reply = server.ask_from("127.0.0.1", "nope.shop.svc.cluster.local.", "A");
        assert_eq!(reply.rcode, "REFUSED", "{mode}");
    }
}

#[test]
fn the_client_s_pod_decides_in_pod_mode() {
    let server = Server::new(POD_MODE);
    let name = "kube-dns.kube-system.shop.svc.cluster.local.";
    // 127.0.0.3: a terminating pod of `default` left it, a running pod of `shop` has it.
    assert_eq!(server.ask_from("127.0.0.3", name, "A").answer.len(), 2);
    // Not a pod, a host-network pod, an address two namespaces claim: no autopath, the name
    // is NXDOMAIN as asked.
    for client in ["10.9.9.9", "127.0.0.2", "127.0.0.4"] {
        let reply = server.ask_from(client, name, "A");
        assert_eq!(reply.rcode, "NXDOMAIN", "client {client}");
        assert_eq!(reply.authority, expect(&[SOA]), "client {client}");
    }
    // A query under another namespace's first search domain is not this client's walk.
    let reply = server.ask_from(
        "127.0.0.1",
        "kube-dns.kube-system.default.svc.cluster.local.",
        "A",
    );
    assert_eq!(reply.rcode, "NXDOMAIN");
}

#[test]
fn the_query_decides_in_query_mode() {
    let server = Server::new(QUERY_MODE);
    // Any client: the namespace is the query's.
    let reply = server.ask_from(
        "10.9.9.9",
        "kube-dns.kube-system.default.svc.cluster.local.",
        "A",
    );
    assert_eq!(reply.answer.len(), 2);
    // No such namespace: no autopath.
    let reply = server.ask_from(
        "10.9.9.9",
        "kube-dns.kube-system.payments.svc.cluster.local.",
        "A",
    );
    assert_eq!(reply.rcode, "NXDOMAIN");
}

#[test]
fn a_search_list_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("search.conf");
    std::fs::write(&conf, "search shop.svc.cluster.local svc.cluster.local\n").unwrap();
    let server = Server::new(&format!(
        ".:53 {{\n    autopath {}\n    kubernetes cluster.local {{\n        ttl 30\n        objects {{FIXTURES}}/shop.json\n    }}\n}}\n",
        conf.display()
    ));
    let reply = server.ask_from(
        "10.9.9.9",
        "kube-dns.kube-system.shop.svc.cluster.local.",
        "A",
    );
    assert_eq!(reply.answer.len(), 2);
}

/// Through the real binary: the walk goes upstream for the node's search domain and the
/// name as typed; A and AAAA come back the same way; the log has the client's query only.
#[test]
fn the_walk_continues_upstream() {
    let upstream =
        NamesUpstream::start("127.0.0.1:0".parse().unwrap(), &["api.partner.example.com"]);
    let corefile = TempCorefile::new(&format!(
        ".:0 {{\n    bind 127.0.0.1\n    log\n    autopath @kubernetes {{\n        namespace query\n        search corp.example\n    }}\n    kubernetes cluster.local in-addr.arpa ip6.arpa {{\n        pods insecure\n        ttl 30\n        objects {{FIXTURES}}/shop.json\n    }}\n    forward . {}\n}}\n",
        upstream.addr
    ));
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    let name = "api.partner.example.com.shop.svc.cluster.local.";
    let a = server.ask_udp(name, "A");
    assert_eq!(
        a.answer,
        expect(&[
            "api.partner.example.com.shop.svc.cluster.local. 60 IN CNAME api.partner.example.com.",
            "api.partner.example.com. 60 IN A 192.0.2.10",
        ])
    );
    let aaaa = server.ask_udp(name, "AAAA");
    assert_eq!(aaaa.answer.len(), 2);
    assert!(
        aaaa.answer
            .iter()
            .any(|l| l.ends_with("IN AAAA 2001:db8::10")),
        "{:?}",
        aaaa.answer
    );
    let asked: Vec<String> = upstream
        .asked()
        .into_iter()
        .map(|(name, qtype)| format!("{qtype} {name}"))
        .collect();
    assert_eq!(
        asked,
        [
            "A api.partner.example.com.corp.example.",
            "A api.partner.example.com.",
            "AAAA api.partner.example.com.corp.example.",
            "AAAA api.partner.example.com.",
        ]
    );
    // Nothing anywhere: the asked name's NXDOMAIN, and the client walks on.
    let nope = server.ask_udp("nope.shop.svc.cluster.local.", "A");
    assert_eq!(nope.rcode, "NXDOMAIN");
    assert_eq!(nope.authority, expect(&[SOA]));
    let log = stdout_with(&server, "nope.shop.svc.cluster.local.");
    let lines: Vec<&str> = log.lines().filter(|l| l.starts_with("[INFO]")).collect();
    assert_eq!(lines.len(), 3, "one line per client query: {log}");
    assert!(
        lines[0].contains("\"A IN api.partner.example.com.shop.svc.cluster.local. udp")
            && lines[0].contains("NOERROR"),
        "{}",
        lines[0]
    );
}

/// The server's stdout once it holds `text` (log lines arrive through a pipe).
fn stdout_with(server: &TestServer, text: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let out = server.stdout();
        if out.contains(text) || std::time::Instant::now() > deadline {
            return out;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
