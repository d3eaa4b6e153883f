//! *k8s_external* end to end: the real binary over loopback sockets, answering the external
//! zone from the objects of the block's *kubernetes* plugin (fixtures/external.json; a live
//! change is tests/cluster.rs's, on the real API server), and the plugin page's examples.

use crate::common::binary::TestServer;
use crate::common::upstream::{Behaviour, TestUpstream};
use crate::common::{Reply, TempCorefile, expect};

const SOA: &str = "example.org. 5 IN SOA ns1.dns.example.org. hostmaster.dns.example.org. SERIAL 7200 1800 86400 5";

fn serve(corefile: &TempCorefile) -> TestServer {
    TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()])
}

/// The fixture's cluster (*kubernetes* `ttl 30`) with *k8s_external* for example.org,
/// `options` in its block and `extra` lines in the server block.
fn external_corefile(options: &str, extra: &str) -> TempCorefile {
    TempCorefile::new(&format!(
        ".:0 {{
    bind 127.0.0.1
    kubernetes cluster.local {{
        namespaces default shop kube-system
        ttl 30
        objects {{FIXTURES}}/external.json
    }}
    k8s_external example.org {{
        {options}
    }}
    {extra}
}}
"
    ))
}

fn assert_negative(reply: &Reply, rcode: &str) {
    assert_eq!(reply.rcode, rcode, "{reply:?}");
    assert!(reply.authoritative, "{reply:?}");
    assert!(reply.answer.is_empty(), "{reply:?}");
    assert_eq!(reply.authority, expect(&[SOA]), "{reply:?}");
}

#[test]
fn services_answer_their_external_addresses() {
    let corefile = external_corefile(
        "headless",
        "hosts {\n        198.51.100.7 lb.cloud.example.net\n        fallthrough\n    }",
    );
    let server = serve(&corefile);

    // A LoadBalancer: its ingress IPs, over UDP and TCP. Addresses have k8s_external's TTL,
    // SRV records and CNAMEs the kubernetes plugin's (as CoreDNS writes them).
    let a = server.ask_udp("lb.shop.example.org.", "A");
    assert_eq!(a.rcode, "NOERROR");
    assert!(a.authoritative);
    assert_eq!(
        a.answer,
        expect(&["lb.shop.example.org. 5 IN A 203.0.113.10"])
    );
    let aaaa = server.ask_tcp("lb.shop.example.org.", "AAAA");
    assert_eq!(
        aaaa.answer,
        expect(&["lb.shop.example.org. 5 IN AAAA 2001:db8::10"])
    );
    let srv = server.ask_udp("_https._tcp.lb.shop.example.org.", "SRV");
    assert_eq!(
        srv.answer,
        expect(&["_https._tcp.lb.shop.example.org. 30 IN SRV 0 50 443 lb.shop.example.org."])
    );
    assert_eq!(
        srv.additional,
        expect(&[
            "lb.shop.example.org. 5 IN A 203.0.113.10",
            "lb.shop.example.org. 5 IN AAAA 2001:db8::10",
        ])
    );
    let every_port = server.ask_udp("lb.shop.example.org.", "SRV");
    assert_eq!(
        every_port.answer,
        expect(&[
            "lb.shop.example.org. 30 IN SRV 0 25 80 lb.shop.example.org.",
            "lb.shop.example.org. 30 IN SRV 0 25 443 lb.shop.example.org.",
        ])
    );

    // spec.externalIPs of a ClusterIP Service; NODATA for a type it lacks.
    let ext = server.ask_udp("ext.default.example.org.", "A");
    assert_eq!(
        ext.answer,
        expect(&["ext.default.example.org. 5 IN A 192.0.2.30"])
    );
    assert_negative(
        &server.ask_udp("ext.default.example.org.", "AAAA"),
        "NOERROR",
    );
    assert_negative(
        &server.ask_udp("ext.default.example.org.", "TXT"),
        "NOERROR",
    );

    // A hostname-only load balancer: the CNAME, and its target asked through the server.
    let cloud = server.ask_udp("cloud.shop.example.org.", "A");
    assert_eq!(cloud.rcode, "NOERROR");
    assert_eq!(
        cloud.answer,
        expect(&[
            "cloud.shop.example.org. 30 IN CNAME lb.cloud.example.net.",
            "lb.cloud.example.net. 3600 IN A 198.51.100.7",
        ])
    );

    // `headless`: a headless Service's ready endpoints.
    let headless = server.ask_udp("headless.default.example.org.", "A");
    assert_eq!(
        headless.answer,
        expect(&[
            "headless.default.example.org. 5 IN A 10.244.1.5",
            "headless.default.example.org. 5 IN A 10.244.1.6",
        ])
    );
    let srv = server.ask_udp("_http._tcp.headless.default.example.org.", "SRV");
    assert_eq!(
        srv.answer,
        expect(&[
            "_http._tcp.headless.default.example.org. 30 IN SRV 0 50 8080 web-0.headless.default.example.org.",
            "_http._tcp.headless.default.example.org. 30 IN SRV 0 50 8080 10-244-1-6.headless.default.example.org.",
        ])
    );
    assert_eq!(
        srv.additional,
        expect(&[
            "web-0.headless.default.example.org. 5 IN A 10.244.1.5",
            "10-244-1-6.headless.default.example.org. 5 IN A 10.244.1.6",
        ])
    );
    let endpoint = server.ask_udp("web-0.headless.default.example.org.", "A");
    assert_eq!(
        endpoint.answer,
        expect(&["web-0.headless.default.example.org. 5 IN A 10.244.1.5"])
    );

    // No external address, a namespace the kubernetes block hides, no such Service.
    assert_negative(
        &server.ask_udp("internal.default.example.org.", "A"),
        "NXDOMAIN",
    );
    assert_negative(
        &server.ask_udp("secret.hidden.example.org.", "A"),
        "NXDOMAIN",
    );
    assert_negative(&server.ask_udp("nope.shop.example.org.", "A"), "NXDOMAIN");

    // The apex: SOA, NS with the name server at kube-dns's external address (its endpoint
    // holds this server's 127.0.0.1), and ns1.dns.
    let soa = server.ask_udp("example.org.", "SOA");
    assert_eq!(soa.answer, expect(&[SOA]));
    let ns = server.ask_udp("example.org.", "NS");
    assert_eq!(
        ns.answer,
        expect(&["example.org. 5 IN NS ns1.dns.example.org."])
    );
    assert_eq!(
        ns.additional,
        expect(&["ns1.dns.example.org. 5 IN A 192.0.2.53"])
    );
    let glue = server.ask_udp("ns1.dns.example.org.", "A");
    assert_eq!(
        glue.answer,
        expect(&["ns1.dns.example.org. 5 IN A 192.0.2.53"])
    );
    assert_negative(&server.ask_udp("dns.example.org.", "A"), "NOERROR");
    assert_negative(&server.ask_udp("ns2.dns.example.org.", "A"), "NXDOMAIN");

    // The cluster zone is the kubernetes plugin's, as before.
    let cluster = server.ask_udp("lb.shop.svc.cluster.local.", "A");
    assert_eq!(
        cluster.answer,
        expect(&["lb.shop.svc.cluster.local. 30 IN A 10.96.0.20"])
    );
}

#[test]
fn fallthrough_hands_unknown_services_on() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let upstream = rt.block_on(TestUpstream::start(Behaviour::Answer));
    let forward = format!("forward . {}", upstream.addr);

    // Without fallthrough, an unknown Service is ours: NXDOMAIN, nothing asked upstream.
    let strict = serve(&external_corefile("", &forward));
    assert_negative(&strict.ask_udp("nope.shop.example.org.", "A"), "NXDOMAIN");
    assert_eq!(upstream.queries_for("nope.shop.example.org."), 0);
    drop(strict);

    let server = serve(&external_corefile("fallthrough", &forward));
    let passed = server.ask_udp("nope.shop.example.org.", "A");
    assert_eq!(passed.rcode, "NOERROR");
    assert_eq!(
        passed.answer,
        expect(&["nope.shop.example.org. 60 IN A 192.0.2.1"])
    );
    assert_eq!(upstream.queries_for("nope.shop.example.org."), 1);
    // A Service that exists is still answered; the apex's names never fall through.
    let lb = server.ask_udp("lb.shop.example.org.", "A");
    assert_eq!(
        lb.answer,
        expect(&["lb.shop.example.org. 5 IN A 203.0.113.10"])
    );
    assert_negative(&server.ask_udp("ns2.dns.example.org.", "A"), "NXDOMAIN");
    assert_eq!(upstream.queries_for("ns2.dns.example.org."), 0);
    // A load balancer's hostname is asked upstream.
    let cloud = server.ask_udp("cloud.shop.example.org.", "A");
    assert_eq!(
        cloud.answer,
        expect(&[
            "cloud.shop.example.org. 30 IN CNAME lb.cloud.example.net.",
            "lb.cloud.example.net. 60 IN A 192.0.2.1",
        ])
    );
}

#[test]
fn without_kubernetes_the_corefile_is_refused() {
    let corefile =
        TempCorefile::new(".:0 {\n    bind 127.0.0.1\n    k8s_external example.org\n}\n");
    let error = clusterdns::config::read_corefile(&corefile.path).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}:3: plugin/k8s_external: kubernetes plugin not loaded",
            corefile.path.display()
        )
    );
}
