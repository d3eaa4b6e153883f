//! ExternalName Services whose target lies outside the cluster zone: the server asks the
//! target through its own chain (CoreDNS's `Upstream.Lookup`) and answers the CNAME followed
//! by the target's records — over UDP, over TCP, behind *autopath*, and in `query`.

use std::process::Command;

use crate::common::binary::TestServer;
use crate::common::names::NamesUpstream;
use crate::common::{Offline, Reply, TempCorefile, expect};

/// Namespace `shop`: `mydb` points outside at a name the upstream knows, `gone` at one it
/// does not, `flaky` into a domain that fails; `ping` and `pong` point at each other across
/// the plugin's two zones; `alias` at `web` in the other zone.
const OBJECTS: &str = r#"{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "mydb", "namespace": "shop"},
   "spec": {"type": "ExternalName", "externalName": "db.partner.example.com"}},
  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "gone", "namespace": "shop"},
   "spec": {"type": "ExternalName", "externalName": "gone.partner.example.com"}},
  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "flaky", "namespace": "shop"},
   "spec": {"type": "ExternalName", "externalName": "db.failing.example"}},
  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ping", "namespace": "shop"},
   "spec": {"type": "ExternalName", "externalName": "pong.shop.svc.other.local"}},
  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "pong", "namespace": "shop"},
   "spec": {"type": "ExternalName", "externalName": "ping.shop.svc.cluster.local"}},
  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "alias", "namespace": "shop"},
   "spec": {"type": "ExternalName", "externalName": "web.shop.svc.other.local"}},
  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
   "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.20"],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}}
]}"#;

const SOA: &str = "cluster.local. 30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. SERIAL 7200 1800 86400 30";

/// A Corefile whose block forwards to `upstream` (over UDP, which the test upstream
/// speaks), with *autopath* in query mode; `objects` next to it.
fn corefile(upstream: std::net::SocketAddr) -> TempCorefile {
    let file = TempCorefile::new(&format!(
        ".:0 {{\n    bind 127.0.0.1\n    autopath @kubernetes {{\n        namespace query\n        search\n    }}\n    kubernetes cluster.local other.local {{\n        pods insecure\n        ttl 30\n        objects OBJECTS\n    }}\n    forward . {upstream} {{\n        prefer_udp\n    }}\n}}\n"
    ));
    let objects = file.dir.path().join("objects.json");
    std::fs::write(&objects, OBJECTS).unwrap();
    let text = std::fs::read_to_string(&file.path).unwrap();
    std::fs::write(
        &file.path,
        text.replace("OBJECTS", objects.to_str().unwrap()),
    )
    .unwrap();
    file
}

fn upstream() -> NamesUpstream {
    NamesUpstream::failing(
        "127.0.0.1:0".parse().unwrap(),
        &["db.partner.example.com"],
        &["failing.example"],
    )
}

const MYDB_A: &[&str] = &[
    "mydb.shop.svc.cluster.local. 30 IN CNAME db.partner.example.com.",
    "db.partner.example.com. 60 IN A 192.0.2.10",
];

#[test]
fn the_target_is_asked_upstream_and_follows_the_cname() {
    let upstream = upstream();
    let file = corefile(upstream.addr);
    let server = TestServer::start(&["serve", "--corefile", file.path.to_str().unwrap()]);

    // UDP and TCP: the CNAME, then the upstream's records with the upstream's TTL.
    for (how, reply) in [
        ("udp", server.ask_udp("mydb.shop.svc.cluster.local.", "A")),
        ("tcp", server.ask_tcp("mydb.shop.svc.cluster.local.", "A")),
    ] {
        assert_eq!(
            (reply.rcode.as_str(), reply.authoritative),
            ("NOERROR", true),
            "{how}"
        );
        assert_eq!(reply.answer, expect(MYDB_A), "{how}");
        assert!(reply.authority.is_empty(), "{how}: {:?}", reply.authority);
    }
    let aaaa = server.ask_udp("mydb.shop.svc.cluster.local.", "AAAA");
    assert_eq!(
        aaaa.answer,
        expect(&[
            "mydb.shop.svc.cluster.local. 30 IN CNAME db.partner.example.com.",
            "db.partner.example.com. 60 IN AAAA 2001:db8::10",
        ])
    );
    // TXT is chased too (CoreDNS's plugin.TXT); the upstream has none: the CNAME alone.
    let txt = server.ask_udp("mydb.shop.svc.cluster.local.", "TXT");
    assert_eq!(txt.rcode, "NOERROR");
    assert_eq!(
        txt.answer,
        expect(&["mydb.shop.svc.cluster.local. 30 IN CNAME db.partner.example.com."])
    );
    let asked: Vec<String> = upstream
        .asked()
        .into_iter()
        .map(|(name, qtype)| format!("{qtype} {name}"))
        .collect();
    for want in [
        "A db.partner.example.com.",
        "AAAA db.partner.example.com.",
        "TXT db.partner.example.com.",
    ] {
        assert!(asked.iter().any(|a| a == want), "{want} not in {asked:?}");
    }

    // The upstream's NXDOMAIN is the reply's rcode, behind the CNAME.
    let gone = server.ask_udp("gone.shop.svc.cluster.local.", "A");
    assert_eq!(gone.rcode, "NXDOMAIN");
    assert_eq!(
        gone.answer,
        expect(&["gone.shop.svc.cluster.local. 30 IN CNAME gone.partner.example.com."])
    );

    // An upstream failure: the CNAME alone, NOERROR, as CoreDNS answers.
    let flaky = server.ask_udp("flaky.shop.svc.cluster.local.", "A");
    assert_eq!(flaky.rcode, "NOERROR");
    assert_eq!(
        flaky.answer,
        expect(&["flaky.shop.svc.cluster.local. 30 IN CNAME db.failing.example."])
    );

    // Two names pointing at each other across the zones: NODATA, as an in-zone loop.
    let ping = server.ask_udp("ping.shop.svc.cluster.local.", "A");
    assert_eq!(ping.rcode, "NOERROR");
    assert!(ping.answer.is_empty(), "{:?}", ping.answer);
    assert_eq!(ping.authority, expect(&[SOA]));
    assert_eq!(
        upstream
            .asked()
            .iter()
            .filter(|(n, _)| n.contains("ping"))
            .count(),
        0
    );
}

/// *autopath*: the walk reaches the ExternalName, and the chase runs behind its CNAME.
#[test]
fn autopath_walks_to_an_external_name_and_chases_it() {
    let upstream = upstream();
    let file = corefile(upstream.addr);
    let server = TestServer::start(&["serve", "--corefile", file.path.to_str().unwrap()]);
    // `mydb.shop` typed in namespace shop: the first search name is
    // mydb.shop.shop.svc.cluster.local, and the walk finds mydb.shop.svc.cluster.local.
    let reply = server.ask_udp("mydb.shop.shop.svc.cluster.local.", "A");
    assert_eq!(reply.rcode, "NOERROR");
    assert_eq!(
        reply.answer,
        expect(&[
            "mydb.shop.shop.svc.cluster.local. 30 IN CNAME mydb.shop.svc.cluster.local.",
            MYDB_A[0],
            MYDB_A[1],
        ])
    );
}

/// Offline (the handler without sockets): a target in another of the server's zones is
/// answered at once, a loop across the zones needs no upstream to end, and a target with
/// no forwarder is the CNAME alone.
#[test]
fn a_target_the_server_answers_itself_needs_no_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects.json");
    std::fs::write(&objects, OBJECTS).unwrap();
    let server = Offline::new(&format!(
        ".:53 {{\n    kubernetes cluster.local other.local {{\n        ttl 30\n        objects {}\n    }}\n}}\n",
        objects.display()
    ));
    let alias: Reply = server.ask("alias.shop.svc.cluster.local.", "A");
    assert_eq!(alias.rcode, "NOERROR");
    assert_eq!(
        alias.answer,
        expect(&[
            "alias.shop.svc.cluster.local. 30 IN CNAME web.shop.svc.other.local.",
            "web.shop.svc.other.local. 30 IN A 10.96.0.20",
        ])
    );
    let ping = server.ask("ping.shop.svc.cluster.local.", "A");
    assert_eq!((ping.rcode.as_str(), ping.answer.len()), ("NOERROR", 0));
    assert_eq!(ping.authority, expect(&[SOA]));
    let mydb = server.ask("mydb.shop.svc.cluster.local.", "A");
    assert_eq!(mydb.rcode, "NOERROR");
    assert_eq!(mydb.answer, expect(&MYDB_A[..1]));
}

/// `query` prints the CNAME and says the target goes upstream, which it does not ask.
#[test]
fn query_says_the_target_goes_upstream() {
    let upstream = upstream();
    let file = corefile(upstream.addr);
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args([
            "query",
            "mydb.shop.svc.cluster.local",
            "--corefile",
            file.path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("mydb.shop.svc.cluster.local.\t30\tIN\tCNAME\tdb.partner.example.com."),
        "{text}"
    );
    assert!(
        text.contains("; db.partner.example.com. is outside the cluster zone"),
        "{text}"
    );
}
