//! `clusterdns query --why` and `/debug/why`: one reason per case — the record's Service,
//! EndpointSlice or Pod, no such Service, no such namespace, a namespace not exposed, no
//! ready endpoints under `ignore empty_service`, a Service filtered by `labels`, not a valid
//! pod name, pods verified, a name forwarded upstream, served from the cache — as the user
//! reads them, exactly.

use crate::common::binary::TestServer;
use crate::common::names::NamesUpstream;
use crate::common::{TempCorefile, fixture};

/// A Corefile serving the shop fixture with `options` in the *kubernetes* block.
fn corefile(options: &str) -> TempCorefile {
    TempCorefile::new(&format!(
        ".:53 {{\n    kubernetes cluster.local {{\n        objects \"{}\"\n        {options}\n    }}\n    forward . 10.255.255.53\n}}\n",
        fixture("shop.json").display()
    ))
}

/// The WHY section `query --why` prints.
fn why(options: &str, name: &str, qtype: &str) -> String {
    let corefile = corefile(options);
    let out = crate::common::cli::ok(&[
        "query",
        name,
        "-t",
        qtype,
        "--why",
        "--corefile",
        corefile.path.to_str().unwrap(),
    ]);
    let at = out
        .find(";; WHY SECTION:")
        .unwrap_or_else(|| panic!("no WHY section:\n{out}"));
    out[at..].trim_end().to_owned()
}

#[test]
fn query_why_gives_the_reason_for_each_answer() {
    let k8s = ";; WHY SECTION:\n;; kubernetes (zone cluster.local.)\n;; ";
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "",
            "web.shop.svc.cluster.local",
            "A",
            "10.96.0.20: the cluster IP of Service shop/web (spec.clusterIPs)",
        ),
        (
            "",
            "web.shop.svc.cluster.local",
            "AAAA",
            "no IPv6 address (the name has only IPv4 ones): NODATA",
        ),
        (
            "",
            "nope.shop.svc.cluster.local",
            "A",
            "no such Service shop/nope: NXDOMAIN",
        ),
        (
            "",
            "web.nope.svc.cluster.local",
            "A",
            "no such namespace nope: NXDOMAIN",
        ),
        (
            "namespaces kube-system",
            "web.shop.svc.cluster.local",
            "A",
            "namespace shop is not exposed (namespaces kube-system): NXDOMAIN",
        ),
        (
            "ignore empty_service",
            "empty.shop.svc.cluster.local",
            "A",
            "Service shop/empty has no ready endpoints and the plugin says ignore empty_service: NXDOMAIN",
        ),
        (
            "labels app=db",
            "web.shop.svc.cluster.local",
            "A",
            "Service shop/web is filtered by labels app=db: NXDOMAIN",
        ),
        (
            "",
            "_http._tcp.web.shop.svc.cluster.local",
            "SRV",
            "SRV: port http/tcp 80 of Service shop/web",
        ),
        (
            "",
            "_ftp._tcp.web.shop.svc.cluster.local",
            "SRV",
            "Service shop/web has no port named ftp with protocol tcp: NXDOMAIN",
        ),
        (
            "",
            "10-244-1-5.web-headless.shop.svc.cluster.local",
            "A",
            "10.244.1.5: endpoint 10-244-1-5 of EndpointSlice shop/web-headless-b2hkp (ready)",
        ),
        (
            "",
            "10-244-1-5.shop.pod.cluster.local",
            "A",
            "pods disabled (the default): no pod records: NXDOMAIN",
        ),
        (
            "pods verified",
            "not-an-ip.shop.pod.cluster.local",
            "A",
            "not-an-ip is not a valid pod name (an address with dashes, 10-244-1-5): NXDOMAIN",
        ),
        (
            "pods verified",
            "10-244-1-5.shop.pod.cluster.local",
            "A",
            "10.244.1.5: Pod shop/web-7d9c6b8f5d-4hx2k has it (pods verified)",
        ),
        (
            "pods verified",
            "10-9-9-9.shop.pod.cluster.local",
            "A",
            "pods verified: no Pod in namespace shop has 10.9.9.9 (10-9-9-9): NXDOMAIN",
        ),
        (
            "",
            "shop.svc.cluster.local",
            "A",
            "namespace shop is exposed: shop.svc.cluster.local. exists, with no records of its own (NODATA)",
        ),
    ];
    let mut failures = Vec::new();
    for (options, name, qtype, reason) in cases {
        let expected = format!("{k8s}{reason}");
        let got = why(options, name, qtype);
        if got != expected {
            failures.push(format!(
                "{options:?} {name} {qtype}:\n  expected {expected:?}\n  got      {got:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // A headless Service: one line per ready endpoint.
    assert_eq!(
        why("", "web-headless.shop.svc.cluster.local", "A"),
        format!(
            "{k8s}10.244.1.5: a ready endpoint of EndpointSlice shop/web-headless-b2hkp (headless Service shop/web-headless)\n\
             ;; 10.244.1.6: a ready endpoint of EndpointSlice shop/web-headless-b2hkp (headless Service shop/web-headless)\n\
             ;; 10.244.2.7: a ready endpoint of EndpointSlice shop/web-headless-b2hkp (headless Service shop/web-headless)"
        )
    );
    // Outside the cluster zone.
    assert_eq!(
        why("", "example.com", "A"),
        ";; WHY SECTION:\n;; forward (zone .)\n;; outside the cluster zone: forwarded upstream to 10.255.255.53:53"
    );
}

#[test]
fn debug_why_on_the_running_server() {
    let upstream = NamesUpstream::start("127.0.0.1:0".parse().unwrap(), &["example.com"]);
    let corefile = TempCorefile::new(&format!(
        ".:0 {{\n    bind 127.0.0.1\n    prometheus 127.0.0.1:0\n    kubernetes cluster.local {{\n        objects \"{}\"\n        ignore empty_service\n    }}\n    cache 30\n    forward . {}\n}}\n",
        fixture("shop.json").display(),
        upstream.addr
    ));
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    let get = |path: &str| server.http_get("metrics", path);
    assert_eq!(
        get("/debug/why?name=empty.shop.svc.cluster.local&type=A"),
        (
            200,
            "empty.shop.svc.cluster.local. A: kubernetes (zone cluster.local.)\n  Service shop/empty has no ready endpoints and the plugin says ignore empty_service: NXDOMAIN\n".to_owned()
        )
    );
    let (status, json) = get("/debug/why?name=web.shop.svc.cluster.local.&format=json");
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["plugin"], "kubernetes");
    assert_eq!(json["type"], "A");
    assert_eq!(
        json["reasons"][0],
        "10.96.0.20: the cluster IP of Service shop/web (spec.clusterIPs)"
    );
    // Forwarded, then cached: the remaining TTL.
    let (_, before) = get("/debug/why?name=example.com");
    assert_eq!(
        before,
        format!(
            "example.com. A: forward (zone .)\n  outside the cluster zone: forwarded upstream to {}\n",
            upstream.addr
        )
    );
    assert_eq!(server.ask_udp("example.com.", "A").rcode, "NOERROR");
    let (_, after) = get("/debug/why?name=example.com");
    assert!(
        after.starts_with("example.com. A: cache (zone .)\n  served from the cache, "),
        "{after}"
    );
    // Malformed requests are a 400 with the reason, never a crash.
    for (path, message) in [
        (
            "/debug/why",
            "name: missing (/debug/why?name=web.shop.svc.cluster.local&type=A)\n",
        ),
        ("/debug/why?name=%zz", "bad percent-encoding in '%zz'\n"),
        (
            "/debug/why?name=web&type=BOGUS",
            "not a record type: BOGUS\n",
        ),
        ("/debug/why?name=a..b", "not a domain name: a..b\n"),
        (
            "/debug/why?name=web&format=xml",
            "format: 'xml' is not json or text\n",
        ),
    ] {
        assert_eq!(get(path), (400, message.to_owned()), "{path}");
    }
    assert_eq!(get("/debug/nothing").0, 404);
    // The server is still there.
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
}
