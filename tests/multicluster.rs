//! `multicluster ZONES...` (Multi-Cluster Services): names under a multicluster zone are
//! answered from ServiceImports and their imported EndpointSlices, names under the cluster
//! zone from Services, never the other way round — asked through the request path, the
//! real binary and the API watch, written as zone-file text.

use crate::common::binary::TestServer;
use crate::common::{Offline, TempCorefile, expect};

/// The fixture served with `clusterset.local` as the multicluster zone.
const MCS: &str = r#"
.:53 {
    bind 127.0.0.1
    kubernetes cluster.local clusterset.local in-addr.arpa {
        multicluster clusterset.local
        pods insecure
        objects {FIXTURES}/mcs.json
    }
}
"#;

/// The SOA a negative answer under `zone` carries (default ttl 5).
fn soa(zone: &str) -> String {
    format!("{zone} 5 IN SOA ns.dns.{zone} hostmaster.{zone} SERIAL 7200 1800 86400 5")
}

/// (what, name, type, rcode, answer, additional); a negative answer carries its zone's SOA.
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

fn check(server: &Offline, cases: &[Case]) {
    let mut failures = Vec::new();
    for (what, name, qtype, rcode, answer, additional) in cases {
        let reply = server.ask(name, qtype);
        let zone = ["clusterset.local.", "cluster.local.", "in-addr.arpa."]
            .into_iter()
            .find(|zone| name.ends_with(zone))
            .unwrap();
        let authority = if answer.is_empty() {
            vec![soa(zone)]
        } else {
            Vec::new()
        };
        let want = (
            (*rcode).to_owned(),
            expect(answer),
            expect(&authority.iter().map(String::as_str).collect::<Vec<_>>()),
            expect(additional),
        );
        let got = (
            reply.rcode.clone(),
            reply.answer.clone(),
            reply.authority.clone(),
            reply.additional.clone(),
        );
        if want != got {
            failures.push(format!("{what} ({name} {qtype}):\n  want {want:#?}\n  got {got:#?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

const NONE: &[&str] = &[];

#[test]
fn service_imports_answer_under_the_multicluster_zone() {
    let server = Offline::new(MCS);
    check(
        &server,
        &[
            (
                "ClusterSetIP import",
                "web.shop.svc.clusterset.local.",
                "A",
                "NOERROR",
                &["web.shop.svc.clusterset.local. 5 IN A 10.42.0.20"],
                NONE,
            ),
            (
                "ClusterSetIP import, other family",
                "web.shop.svc.clusterset.local.",
                "AAAA",
                "NOERROR",
                NONE,
                NONE,
            ),
            (
                "ClusterSetIP import, SRV of its named port",
                "_http._tcp.web.shop.svc.clusterset.local.",
                "SRV",
                "NOERROR",
                &["_http._tcp.web.shop.svc.clusterset.local. 5 IN SRV 0 100 80 web.shop.svc.clusterset.local."],
                &["web.shop.svc.clusterset.local. 5 IN A 10.42.0.20"],
            ),
            (
                "ClusterSetIP import, IPv6",
                "api.edge.svc.clusterset.local.",
                "AAAA",
                "NOERROR",
                &["api.edge.svc.clusterset.local. 5 IN AAAA fd00:42::1"],
                NONE,
            ),
            (
                "ClusterSetIP import, an imported endpoint's name",
                "10-1-0-9.east.web.shop.svc.clusterset.local.",
                "A",
                "NOERROR",
                &["10-1-0-9.east.web.shop.svc.clusterset.local. 5 IN A 10.1.0.9"],
                NONE,
            ),
            (
                "headless import: the ready endpoints of every cluster",
                "db.shop.svc.clusterset.local.",
                "A",
                "NOERROR",
                &[
                    "db.shop.svc.clusterset.local. 5 IN A 10.1.0.5",
                    "db.shop.svc.clusterset.local. 5 IN A 10.2.0.7",
                ],
                NONE,
            ),
            (
                "headless import SRV: per-cluster endpoint names",
                "_pg._tcp.db.shop.svc.clusterset.local.",
                "SRV",
                "NOERROR",
                &[
                    "_pg._tcp.db.shop.svc.clusterset.local. 5 IN SRV 0 50 5432 db-0.east.db.shop.svc.clusterset.local.",
                    "_pg._tcp.db.shop.svc.clusterset.local. 5 IN SRV 0 50 5432 db-0.west.db.shop.svc.clusterset.local.",
                ],
                &[
                    "db-0.east.db.shop.svc.clusterset.local. 5 IN A 10.1.0.5",
                    "db-0.west.db.shop.svc.clusterset.local. 5 IN A 10.2.0.7",
                ],
            ),
            (
                "headless import, one cluster's endpoint",
                "db-0.west.db.shop.svc.clusterset.local.",
                "A",
                "NOERROR",
                &["db-0.west.db.shop.svc.clusterset.local. 5 IN A 10.2.0.7"],
                NONE,
            ),
            (
                "a not-ready endpoint has no name",
                "db-1.west.db.shop.svc.clusterset.local.",
                "A",
                "NXDOMAIN",
                NONE,
                NONE,
            ),
            (
                "an endpoint needs its cluster label",
                "db-0.db.shop.svc.clusterset.local.",
                "A",
                "NXDOMAIN",
                NONE,
                NONE,
            ),
            (
                "headless import without endpoints",
                "idle.shop.svc.clusterset.local.",
                "A",
                "NXDOMAIN",
                NONE,
                NONE,
            ),
            (
                "ClusterSetIP import without ports",
                "portless.shop.svc.clusterset.local.",
                "A",
                "NXDOMAIN",
                NONE,
                NONE,
            ),
            (
                "no import of that name",
                "nope.shop.svc.clusterset.local.",
                "A",
                "NXDOMAIN",
                NONE,
                NONE,
            ),
            (
                "a namespace",
                "shop.svc.clusterset.local.",
                "A",
                "NOERROR",
                NONE,
                NONE,
            ),
            (
                "pods insecure answer there as in the cluster zone",
                "10-1-0-9.shop.pod.clusterset.local.",
                "A",
                "NOERROR",
                &["10-1-0-9.shop.pod.clusterset.local. 5 IN A 10.1.0.9"],
                NONE,
            ),
            (
                "the apex",
                "clusterset.local.",
                "SOA",
                "NOERROR",
                &["clusterset.local. 5 IN SOA ns.dns.clusterset.local. hostmaster.clusterset.local. SERIAL 7200 1800 86400 5"],
                NONE,
            ),
        ],
    );
}

#[test]
fn services_and_imports_keep_to_their_zones() {
    let server = Offline::new(MCS);
    check(
        &server,
        &[
            (
                "a Service under the cluster zone",
                "web.shop.svc.cluster.local.",
                "A",
                "NOERROR",
                &["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"],
                NONE,
            ),
            (
                "a Service without an import is not under the multicluster zone",
                "cart.shop.svc.clusterset.local.",
                "A",
                "NXDOMAIN",
                NONE,
                NONE,
            ),
            (
                "a ServiceImport is not under the cluster zone",
                "db.shop.svc.cluster.local.",
                "A",
                "NXDOMAIN",
                NONE,
                NONE,
            ),
            (
                "nor are imported endpoints",
                "10-1-0-9.east.web.shop.svc.cluster.local.",
                "A",
                "NXDOMAIN",
                NONE,
                NONE,
            ),
            (
                "an import's IP has no PTR",
                "20.0.42.10.in-addr.arpa.",
                "PTR",
                "NXDOMAIN",
                NONE,
                NONE,
            ),
            (
                "a Service's IP still has its PTR",
                "20.0.96.10.in-addr.arpa.",
                "PTR",
                "NOERROR",
                &["20.0.96.10.in-addr.arpa. 5 IN PTR web.shop.svc.cluster.local."],
                NONE,
            ),
        ],
    );
}

#[test]
fn without_multicluster_a_zone_serves_services() {
    let server = Offline::new(
        "cluster.local clusterset.local {\n bind 127.0.0.1\n kubernetes {\n  objects {FIXTURES}/mcs.json\n }\n}\n",
    );
    check(
        &server,
        &[
            (
                "a Service under the second zone",
                "web.shop.svc.clusterset.local.",
                "A",
                "NOERROR",
                &["web.shop.svc.clusterset.local. 5 IN A 10.96.0.20"],
                NONE,
            ),
            (
                "the import is not read",
                "db.shop.svc.clusterset.local.",
                "A",
                "NXDOMAIN",
                NONE,
                NONE,
            ),
        ],
    );
}

#[test]
fn the_binary_answers_imports_over_udp_and_tcp() {
    let corefile = TempCorefile::new(
        ".:0 {\n bind 127.0.0.1\n kubernetes cluster.local clusterset.local {\n  multicluster clusterset.local\n  objects {FIXTURES}/mcs.json\n }\n}\n",
    );
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    let reply = server.ask_udp("db.shop.svc.clusterset.local.", "A");
    assert_eq!(reply.rcode, "NOERROR");
    assert_eq!(
        reply.answer,
        expect(&[
            "db.shop.svc.clusterset.local. 5 IN A 10.1.0.5",
            "db.shop.svc.clusterset.local. 5 IN A 10.2.0.7",
        ])
    );
    let reply = server.ask_tcp("web.shop.svc.clusterset.local.", "A");
    assert_eq!(
        reply.answer,
        expect(&["web.shop.svc.clusterset.local. 5 IN A 10.42.0.20"])
    );
    let reply = server.ask_udp("web.shop.svc.cluster.local.", "A");
    assert_eq!(
        reply.answer,
        expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"])
    );
    let reply = server.ask_udp("db.shop.svc.cluster.local.", "A");
    assert_eq!(reply.rcode, "NXDOMAIN");
}
