//! `multicluster ZONES...` (Multi-Cluster Services): names under a multicluster zone are
//! answered from ServiceImports and their imported EndpointSlices, names under the cluster
//! zone from Services, never the other way round — asked through the request path, the
//! real binary and the API watch, written as zone-file text.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::apiserver::{ApiServer, Kind, Verb};
use crate::common::binary::TestServer;
use crate::common::{Offline, Reply, TempCorefile, expect, fixture};

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

/// One question and the whole expected answer; a negative answer carries its zone's SOA. A
/// section left out (`..Default::default()`) is empty.
#[derive(Default)]
struct Case {
    /// What the case shows, for the failure message.
    what: &'static str,
    /// The question's name.
    name: &'static str,
    /// The question's type.
    qtype: &'static str,
    /// The answer's rcode.
    rcode: &'static str,
    /// The answer section, as zone-file lines.
    answer: &'static [&'static str],
    /// The additional section, as zone-file lines.
    additional: &'static [&'static str],
}

fn check(server: &Offline, cases: &[Case]) {
    let mut failures = Vec::new();
    for Case {
        what,
        name,
        qtype,
        rcode,
        answer,
        additional,
    } in cases
    {
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
            failures.push(format!(
                "{what} ({name} {qtype}):\n  want {want:#?}\n  got {got:#?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn service_imports_answer_under_the_multicluster_zone() {
    let server = Offline::new(MCS);
    check(
        &server,
        &[
            Case {
                what: "ClusterSetIP import",
                name: "web.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NOERROR",
                answer: &["web.shop.svc.clusterset.local. 5 IN A 10.42.0.20"],
                ..Default::default()
            },
            Case {
                what: "ClusterSetIP import, other family",
                name: "web.shop.svc.clusterset.local.",
                qtype: "AAAA",
                rcode: "NOERROR",
                ..Default::default()
            },
            Case {
                what: "ClusterSetIP import, SRV of its named port",
                name: "_http._tcp.web.shop.svc.clusterset.local.",
                qtype: "SRV",
                rcode: "NOERROR",
                answer: &[
                    "_http._tcp.web.shop.svc.clusterset.local. 5 IN SRV 0 100 80 web.shop.svc.clusterset.local.",
                ],
                additional: &["web.shop.svc.clusterset.local. 5 IN A 10.42.0.20"],
            },
            Case {
                what: "ClusterSetIP import, IPv6",
                name: "api.edge.svc.clusterset.local.",
                qtype: "AAAA",
                rcode: "NOERROR",
                answer: &["api.edge.svc.clusterset.local. 5 IN AAAA fd00:42::1"],
                ..Default::default()
            },
            Case {
                what: "ClusterSetIP import, an imported endpoint's name",
                name: "10-1-0-9.east.web.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NOERROR",
                answer: &["10-1-0-9.east.web.shop.svc.clusterset.local. 5 IN A 10.1.0.9"],
                ..Default::default()
            },
            Case {
                what: "headless import: the ready endpoints of every cluster",
                name: "db.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NOERROR",
                answer: &[
                    "db.shop.svc.clusterset.local. 5 IN A 10.1.0.5",
                    "db.shop.svc.clusterset.local. 5 IN A 10.2.0.7",
                ],
                ..Default::default()
            },
            Case {
                what: "headless import SRV: per-cluster endpoint names",
                name: "_pg._tcp.db.shop.svc.clusterset.local.",
                qtype: "SRV",
                rcode: "NOERROR",
                answer: &[
                    "_pg._tcp.db.shop.svc.clusterset.local. 5 IN SRV 0 50 5432 db-0.east.db.shop.svc.clusterset.local.",
                    "_pg._tcp.db.shop.svc.clusterset.local. 5 IN SRV 0 50 5432 db-0.west.db.shop.svc.clusterset.local.",
                ],
                additional: &[
                    "db-0.east.db.shop.svc.clusterset.local. 5 IN A 10.1.0.5",
                    "db-0.west.db.shop.svc.clusterset.local. 5 IN A 10.2.0.7",
                ],
            },
            Case {
                what: "headless import, one cluster's endpoint",
                name: "db-0.west.db.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NOERROR",
                answer: &["db-0.west.db.shop.svc.clusterset.local. 5 IN A 10.2.0.7"],
                ..Default::default()
            },
            Case {
                what: "a not-ready endpoint has no name",
                name: "db-1.west.db.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NXDOMAIN",
                ..Default::default()
            },
            Case {
                what: "an endpoint needs its cluster label",
                name: "db-0.db.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NXDOMAIN",
                ..Default::default()
            },
            Case {
                what: "headless import without endpoints",
                name: "idle.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NXDOMAIN",
                ..Default::default()
            },
            Case {
                what: "ClusterSetIP import without ports",
                name: "portless.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NXDOMAIN",
                ..Default::default()
            },
            Case {
                what: "no import of that name",
                name: "nope.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NXDOMAIN",
                ..Default::default()
            },
            Case {
                what: "a namespace",
                name: "shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NOERROR",
                ..Default::default()
            },
            Case {
                what: "pods insecure answer there as in the cluster zone",
                name: "10-1-0-9.shop.pod.clusterset.local.",
                qtype: "A",
                rcode: "NOERROR",
                answer: &["10-1-0-9.shop.pod.clusterset.local. 5 IN A 10.1.0.9"],
                ..Default::default()
            },
            Case {
                what: "the apex",
                name: "clusterset.local.",
                qtype: "SOA",
                rcode: "NOERROR",
                answer: &[
                    "clusterset.local. 5 IN SOA ns.dns.clusterset.local. hostmaster.clusterset.local. SERIAL 7200 1800 86400 5",
                ],
                ..Default::default()
            },
        ],
    );
}

#[test]
fn services_and_imports_keep_to_their_zones() {
    let server = Offline::new(MCS);
    check(
        &server,
        &[
            Case {
                what: "a Service under the cluster zone",
                name: "web.shop.svc.cluster.local.",
                qtype: "A",
                rcode: "NOERROR",
                answer: &["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"],
                ..Default::default()
            },
            Case {
                what: "a Service without an import is not under the multicluster zone",
                name: "cart.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NXDOMAIN",
                ..Default::default()
            },
            Case {
                what: "a ServiceImport is not under the cluster zone",
                name: "db.shop.svc.cluster.local.",
                qtype: "A",
                rcode: "NXDOMAIN",
                ..Default::default()
            },
            Case {
                what: "nor are imported endpoints",
                name: "10-1-0-9.east.web.shop.svc.cluster.local.",
                qtype: "A",
                rcode: "NXDOMAIN",
                ..Default::default()
            },
            Case {
                what: "an import's IP has no PTR",
                name: "20.0.42.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: "NXDOMAIN",
                ..Default::default()
            },
            Case {
                what: "a Service's IP still has its PTR",
                name: "20.0.96.10.in-addr.arpa.",
                qtype: "PTR",
                rcode: "NOERROR",
                answer: &["20.0.96.10.in-addr.arpa. 5 IN PTR web.shop.svc.cluster.local."],
                ..Default::default()
            },
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
            Case {
                what: "a Service under the second zone",
                name: "web.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NOERROR",
                answer: &["web.shop.svc.clusterset.local. 5 IN A 10.96.0.20"],
                ..Default::default()
            },
            Case {
                what: "the import is not read",
                name: "db.shop.svc.clusterset.local.",
                qtype: "A",
                rcode: "NXDOMAIN",
                ..Default::default()
            },
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

/// How long a change may take to reach the answers.
const PATIENCE: Duration = Duration::from_secs(40);

/// A Corefile watching `api` with `clusterset.local` as a multicluster zone when
/// `multicluster`.
fn watching(api: &ApiServer, multicluster: bool) -> TempCorefile {
    let option = if multicluster {
        "multicluster clusterset.local"
    } else {
        ""
    };
    TempCorefile::new(&format!(
        ".:0 {{\n bind 127.0.0.1\n kubernetes cluster.local clusterset.local {{\n  endpoint {}\n  {option}\n }}\n}}\n",
        api.url()
    ))
}

/// Asks until `done` holds for the reply.
fn until(server: &TestServer, name: &str, done: impl Fn(&Reply) -> bool) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let reply = server.ask_udp(name, "A");
        if done(&reply) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: never as expected; last {reply:?}\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn serviceimport_requests(api: &ApiServer) -> Vec<Verb> {
    api.requests()
        .iter()
        .filter(|r| r.kind == Some(Kind::ServiceImport))
        .map(|r| r.verb)
        .collect()
}

/// Stand-in: the ServiceImport CRD and its MCS slices as the fixture writes them, with no
/// MCS controller to make them (none is among the peers).
#[test]
fn a_service_import_added_live_becomes_answerable() {
    let api = ApiServer::start();
    api.apply_file(fixture("mcs.json"));
    let corefile = watching(&api, true);
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    server.wait_log("synced with the API server", PATIENCE);
    let reply = server.ask_udp("db.shop.svc.clusterset.local.", "A");
    assert_eq!(
        reply.answer,
        expect(&[
            "db.shop.svc.clusterset.local. 5 IN A 10.1.0.5",
            "db.shop.svc.clusterset.local. 5 IN A 10.2.0.7",
        ])
    );
    // The imports' state was read (by a streaming list, the default).
    assert!(
        api.requests()
            .iter()
            .any(|r| r.kind == Some(Kind::ServiceImport) && r.reads_state()),
        "{:?}",
        serviceimport_requests(&api)
    );

    api.apply(json!({
        "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
        "metadata": {"name": "live", "namespace": "shop"},
        "spec": {"type": "ClusterSetIP", "ips": ["10.42.0.99"],
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    }));
    until(&server, "live.shop.svc.clusterset.local.", |reply| {
        reply.answer == expect(&["live.shop.svc.clusterset.local. 5 IN A 10.42.0.99"])
    });
    // Imported endpoints follow their slices; the import itself its object.
    api.delete(Kind::EndpointSlice, "shop", "imported-db-west");
    until(&server, "db.shop.svc.clusterset.local.", |reply| {
        reply.answer == expect(&["db.shop.svc.clusterset.local. 5 IN A 10.1.0.5"])
    });
    api.delete(Kind::ServiceImport, "shop", "live");
    until(&server, "live.shop.svc.clusterset.local.", |reply| {
        reply.rcode == "NXDOMAIN"
    });
    // Never a Service under the multicluster zone, never an import under the cluster zone.
    assert_eq!(
        server.ask_udp("cart.shop.svc.clusterset.local.", "A").rcode,
        "NXDOMAIN"
    );
    assert_eq!(
        server.ask_udp("db.shop.svc.cluster.local.", "A").rcode,
        "NXDOMAIN"
    );
}

/// Stand-in: it records every request by kind, which is what is asserted.
#[test]
fn without_multicluster_service_imports_are_not_watched() {
    let api = ApiServer::start();
    api.apply_file(fixture("mcs.json"));
    let corefile = watching(&api, false);
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    server.wait_log("synced with the API server", PATIENCE);
    let reply = server.ask_udp("web.shop.svc.clusterset.local.", "A");
    assert_eq!(
        reply.answer,
        expect(&["web.shop.svc.clusterset.local. 5 IN A 10.96.0.20"])
    );
    assert_eq!(serviceimport_requests(&api), []);
}

/// Stand-in: a CRD missing, then there between two retries, is a 404 it can stop giving at
/// once; the real API server needs a CRD manifest we do not carry.
#[test]
fn a_missing_crd_is_logged_once_and_serves_no_imports_until_installed() {
    let api = ApiServer::start();
    api.apply_file(fixture("mcs.json"));
    api.fail_requests(|r| r.kind == Some(Kind::ServiceImport), 404, usize::MAX);
    let corefile = watching(&api, true);
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    // The block syncs without the CRD, and serves its Services.
    server.wait_log("synced with the API server", PATIENCE);
    let reply = server.ask_udp("web.shop.svc.cluster.local.", "A");
    assert_eq!(
        reply.answer,
        expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"])
    );
    assert_eq!(
        server.ask_udp("web.shop.svc.clusterset.local.", "A").rcode,
        "NXDOMAIN"
    );
    let absent = "the Multi-Cluster Services CRD is not installed";
    server.wait_log(absent, PATIENCE);
    // The watcher retries; each 404 is not logged again, nor taken for an outage.
    let deadline = Instant::now() + PATIENCE;
    while serviceimport_requests(&api).len() < 2 {
        assert!(Instant::now() < deadline, "no retry of the list");
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = server.log();
    assert_eq!(log.matches(absent).count(), 1, "{log}");
    assert!(!log.contains("API server request failed"), "{log}");

    // The CRD is installed: the next retry lists the imports.
    api.clear_failures();
    until(&server, "web.shop.svc.clusterset.local.", |reply| {
        reply.answer == expect(&["web.shop.svc.clusterset.local. 5 IN A 10.42.0.20"])
    });
}
