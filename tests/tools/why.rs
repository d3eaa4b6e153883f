//! `clusterdns query --why` and `/debug/why`: one reason per case — the record's Service,
//! EndpointSlice or Pod, no such Service, no such namespace, a namespace not exposed, no
//! ready endpoints under `ignore empty_service`, a Service filtered by `labels`, not a valid
//! pod name, pods verified, a name forwarded upstream, served from the cache — as the user
//! reads them, exactly; from objects files, and from the objects an API watch holds.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::apiserver::{ApiServer, Kind};
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
    why_in(&corefile(options), name, qtype)
}

/// The WHY section `query --why` prints with `corefile`.
fn why_in(corefile: &TempCorefile, name: &str, qtype: &str) -> String {
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
fn why_follows_a_rewrite_into_the_cluster_zone() {
    let corefile = TempCorefile::new(&format!(
        ".:0 {{\n    bind 127.0.0.1\n    prometheus 127.0.0.1:0\n    rewrite name shop.example.com web.shop.svc.cluster.local\n    kubernetes cluster.local {{\n        objects \"{}\"\n    }}\n    forward . 10.255.255.53\n}}\n",
        fixture("shop.json").display()
    ));
    assert_eq!(
        why_in(&corefile, "shop.example.com", "A"),
        ";; WHY SECTION:\n;; kubernetes (zone cluster.local.)\n\
         ;; rewrite: asked on as web.shop.svc.cluster.local. A\n\
         ;; 10.96.0.20: the cluster IP of Service shop/web (spec.clusterIPs)"
    );
    // A name no rule matches is explained as it is.
    assert_eq!(
        why_in(&corefile, "example.com", "A"),
        ";; WHY SECTION:\n;; forward (zone .)\n;; outside the cluster zone: forwarded upstream to 10.255.255.53:53"
    );
    // The running server says the same.
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    assert_eq!(server.ask_udp("shop.example.com.", "A").rcode, "NOERROR");
    assert_eq!(
        debug_why(&server, "shop.example.com", "A"),
        "shop.example.com. A: kubernetes (zone cluster.local.)\n  rewrite: asked on as web.shop.svc.cluster.local. A\n  10.96.0.20: the cluster IP of Service shop/web (spec.clusterIPs)\n"
    );
}

/// A name of the cluster zone *kubernetes* does not have, under `fallthrough`, is answered by
/// the plugins after it (here *forward*): the explanation says so, not "kubernetes".
#[test]
fn why_asks_the_chain_fallthrough_and_hosts_in_the_cluster_zone() {
    assert_eq!(
        why("fallthrough", "nosuch.shop.svc.cluster.local", "A"),
        ";; WHY SECTION:\n;; forward (zone .)\n\
         ;; not in the cluster zone's objects, and kubernetes falls through: forwarded upstream to 10.255.255.53:53"
    );
    // *hosts* comes before *kubernetes* (plugin.cfg): a name of the cluster zone it has is
    // its answer.
    let hosts = TempCorefile::new(&format!(
        ".:53 {{\n    kubernetes cluster.local {{\n        objects \"{}\"\n        fallthrough\n    }}\n    hosts {{\n        10.1.2.3 legacy.shop.svc.cluster.local\n        fallthrough\n    }}\n    forward . 10.255.255.53\n}}\n",
        fixture("shop.json").display()
    ));
    assert_eq!(
        why_in(&hosts, "legacy.shop.svc.cluster.local", "A"),
        ";; WHY SECTION:\n;; hosts (zone .)\n;; answered by the block's hosts: NOERROR"
    );
    // A name it has is its own.
    assert_eq!(
        why("fallthrough", "web.shop.svc.cluster.local", "A"),
        ";; WHY SECTION:\n;; kubernetes (zone cluster.local.)\n\
         ;; 10.96.0.20: the cluster IP of Service shop/web (spec.clusterIPs)"
    );
}

/// *autopath*'s walk that goes on beyond the block — upstream, or (with no *forward*) to an
/// ExternalName's target asked through the server again — is explained as the walk.
#[test]
fn why_explains_an_autopath_walk_that_goes_on() {
    let search = tempfile::tempdir().unwrap();
    let conf = search.path().join("search.conf");
    std::fs::write(
        &conf,
        "search other.svc.cluster.local svc.cluster.local cluster.local\n",
    )
    .unwrap();
    let block = |objects: &str, forward: &str| {
        TempCorefile::new(&format!(
            ".:53 {{\n    autopath {}\n    kubernetes cluster.local {{\n        objects \"{}\"\n    }}\n{forward}}}\n",
            conf.display(),
            fixture(objects).display()
        ))
    };
    assert_eq!(
        why_in(
            &block("shop.json", "    forward . 10.255.255.53\n"),
            "example.com.other.svc.cluster.local",
            "A"
        ),
        ";; WHY SECTION:\n;; autopath (zone .)\n\
         ;; autopath: the client's search path is walked here, name 4 of it (example.com.) \
         goes upstream"
    );
    assert_eq!(
        why_in(
            &block("rules.json", ""),
            "ext.rules.other.svc.cluster.local",
            "A"
        ),
        ";; WHY SECTION:\n;; autopath (zone .)\n\
         ;; autopath: the client's search path is walked here, name 2 of it \
         (ext.rules.svc.cluster.local.) goes upstream"
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
    // Forwarded, then cached: the remaining TTL, the cached rcode and answer count.
    let (_, before) = get("/debug/why?name=example.com");
    assert_eq!(
        before,
        format!(
            "example.com. A: forward (zone .)\n  outside the cluster zone: forwarded upstream to {}\n  not in the cache: the next query goes upstream\n",
            upstream.addr
        )
    );
    assert_eq!(server.ask_udp("example.com.", "A").rcode, "NOERROR");
    let (_, after) = get("/debug/why?name=example.com");
    let ttl = cached_ttl(&after, ": NOERROR, 1 answer record");
    assert!((27..=30).contains(&ttl), "{after}");
    assert_eq!(
        after,
        format!(
            "example.com. A: cache (zone .)\n  outside the cluster zone: forwarded upstream to {}\n  served from the cache, {ttl} s of its TTL left: NOERROR, 1 answer record\n",
            upstream.addr
        )
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

/// The seconds left that a `/debug/why` page says its cached answer has, on the line that
/// ends with `tail`.
fn cached_ttl(page: &str, tail: &str) -> u32 {
    page.lines()
        .find_map(|line| {
            line.trim()
                .strip_prefix("served from the cache, ")?
                .strip_suffix(tail)?
                .strip_suffix(" s of its TTL left")?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no cached answer ending {tail:?} in\n{page}"))
}

#[test]
fn debug_why_says_which_forward_takes_a_name_and_what_the_cache_holds() {
    let internet = NamesUpstream::start("127.0.0.1:0".parse().unwrap(), &["example.com"]);
    let corp = NamesUpstream::start("127.0.0.1:0".parse().unwrap(), &["intranet.corp"]);
    // Two forwards: corp. to its own upstream (but not public.corp.), the rest to the
    // internet's; the cache is for corp. only.
    let corefile = TempCorefile::new(&format!(
        ".:0 {{\n    bind 127.0.0.1\n    prometheus 127.0.0.1:0\n    cache 30 corp\n    forward corp {corp} {{\n        except public.corp\n    }}\n    forward . {internet}\n}}\n",
        corp = corp.addr,
        internet = internet.addr,
    ));
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    let get = |path: &str| {
        let (status, body) = server.http_get("metrics", path);
        assert_eq!(status, 200, "{path}: {body}");
        body
    };
    let corp_line = format!(
        "  outside the cluster zone: forwarded upstream to {} (the block's forward number 1 of 2, the first that takes the name)\n",
        corp.addr
    );
    let internet_line = format!(
        "  outside the cluster zone: forwarded upstream to {} (the block's forward number 2 of 2, the first that takes the name)\n",
        internet.addr
    );
    let not_covered = "  the cache does not cover this name: every query goes upstream\n";
    let miss = "  not in the cache: the next query goes upstream\n";
    assert_eq!(
        get("/debug/why?name=intranet.corp"),
        format!("intranet.corp. A: forward (zone .)\n{corp_line}{miss}")
    );
    assert_eq!(
        get("/debug/why?name=www.public.corp&type=AAAA"),
        format!("www.public.corp. AAAA: forward (zone .)\n{internet_line}{miss}")
    );
    assert_eq!(
        get("/debug/why?name=example.com"),
        format!("example.com. A: forward (zone .)\n{internet_line}{not_covered}")
    );
    // Asking /debug/why asks no upstream.
    assert_eq!(corp.asked(), []);
    assert_eq!(internet.asked(), []);

    // Cached: a positive answer and a denial, each with what it holds.
    assert_eq!(server.ask_udp("intranet.corp.", "A").rcode, "NOERROR");
    assert_eq!(server.ask_udp("nope.corp.", "A").rcode, "NXDOMAIN");
    let page = get("/debug/why?name=intranet.corp");
    let ttl = cached_ttl(&page, ": NOERROR, 1 answer record");
    assert!((27..=30).contains(&ttl), "{page}");
    assert_eq!(
        page,
        format!(
            "intranet.corp. A: cache (zone .)\n{corp_line}  served from the cache, {ttl} s of its TTL left: NOERROR, 1 answer record\n"
        )
    );
    let page = get("/debug/why?name=nope.corp&format=json");
    let json: serde_json::Value = serde_json::from_str(&page).unwrap();
    assert_eq!(json["plugin"], "cache", "{page}");
    let reasons = json["reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 2, "{page}");
    assert_eq!(reasons[0], corp_line.trim());
    let cached = reasons[1].as_str().unwrap();
    assert!(
        cached.starts_with("served from the cache, ")
            && cached.ends_with(" s of its TTL left: NXDOMAIN, 0 answer records"),
        "{page}"
    );
    // Reading the cache is not using it: its counters stay as they were.
    let counters = |metrics: String| -> Vec<String> {
        metrics
            .lines()
            .filter(|line| line.starts_with("coredns_cache_") && !line.contains("entries"))
            .map(str::to_owned)
            .collect()
    };
    let before = counters(get("/metrics"));
    assert!(
        before
            .iter()
            .any(|l| l.starts_with("coredns_cache_hits_total")),
        "{before:?}"
    );
    get("/debug/why?name=intranet.corp");
    get("/debug/why?name=nope.corp");
    get("/debug/why?name=other.corp");
    assert_eq!(counters(get("/metrics")), before);
    // The AAAA of the cached name is another entry: not in the cache.
    assert_eq!(
        get("/debug/why?name=intranet.corp&type=AAAA"),
        format!("intranet.corp. AAAA: forward (zone .)\n{corp_line}{miss}")
    );
    assert_eq!(corp.asked().len(), 2, "{:?}", corp.asked());
}

#[test]
fn debug_why_with_no_forward_for_the_name() {
    let corp = NamesUpstream::start("127.0.0.1:0".parse().unwrap(), &["intranet.corp"]);
    let corefile = TempCorefile::new(&format!(
        ".:0 {{\n    bind 127.0.0.1\n    prometheus 127.0.0.1:0\n    forward corp {}\n}}\n",
        corp.addr
    ));
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    assert_eq!(
        server.http_get("metrics", "/debug/why?name=example.com"),
        (
            200,
            "example.com. A: none (zone .)\n  no plugin of the block makes this name and no forward of it takes the name (outside its FROM, or an except name): REFUSED\n"
                .to_owned()
        )
    );
    assert_eq!(server.ask_udp("example.com.", "A").rcode, "REFUSED");
}

/// `/debug/why`'s text for `name` `qtype`.
fn debug_why(server: &TestServer, name: &str, qtype: &str) -> String {
    let (status, body) =
        server.http_get("metrics", &format!("/debug/why?name={name}&type={qtype}"));
    assert_eq!(status, 200, "{name} {qtype}: {body}");
    body
}

/// The reasons `/debug/why` gives for a name of the cluster zone, checked one by one.
fn check_reasons(server: &TestServer, cases: &[(&str, &str, &[&str])]) {
    let mut failures = Vec::new();
    for (name, qtype, reasons) in cases {
        let mut expected = format!("{name}. {qtype}: kubernetes (zone cluster.local.)\n");
        for reason in *reasons {
            expected.push_str(&format!("  {reason}\n"));
        }
        let got = debug_why(server, name, qtype);
        if got != expected {
            failures.push(format!(
                "{name} {qtype}:\n  expected {expected:?}\n  got      {got:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Polls `/debug/why` until it says `expected` (a change takes a moment to reach the watch).
fn until_why(server: &TestServer, name: &str, qtype: &str, expected: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = debug_why(server, name, qtype);
        if got == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name} {qtype}: never {expected:?}; last {got:?}\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A server watching `api` with `options` in its *kubernetes* block.
fn watching(api: &ApiServer, options: &str) -> (TempCorefile, TestServer) {
    let corefile = crate::sources::live::corefile(&format!("endpoint {}", api.url()), options, "");
    let server = crate::sources::live::serve(&corefile);
    (corefile, server)
}

/// Stand-in: it holds the shop fixture's EndpointSlices as written (ready and not, hand-made
/// names), which the real EndpointSlice controller would replace with its own.
#[test]
fn debug_why_from_the_api_watch() {
    let api = ApiServer::start();
    api.apply_file(fixture("shop.json"));
    let (_corefile, server) = watching(&api, "ignore empty_service\n        pods verified");
    check_reasons(
        &server,
        &[
            (
                "web.shop.svc.cluster.local",
                "A",
                &["10.96.0.20: the cluster IP of Service shop/web (spec.clusterIPs)"],
            ),
            (
                "web.shop.svc.cluster.local",
                "AAAA",
                &["no IPv6 address (the name has only IPv4 ones): NODATA"],
            ),
            (
                "nope.shop.svc.cluster.local",
                "A",
                &["no such Service shop/nope: NXDOMAIN"],
            ),
            (
                "web.nope.svc.cluster.local",
                "A",
                &["no such namespace nope: NXDOMAIN"],
            ),
            (
                "empty.shop.svc.cluster.local",
                "A",
                &[
                    "Service shop/empty has no ready endpoints and the plugin says ignore empty_service: NXDOMAIN",
                ],
            ),
            (
                "web-headless.shop.svc.cluster.local",
                "A",
                &[
                    "10.244.1.5: a ready endpoint of EndpointSlice shop/web-headless-b2hkp (headless Service shop/web-headless)",
                    "10.244.1.6: a ready endpoint of EndpointSlice shop/web-headless-b2hkp (headless Service shop/web-headless)",
                    "10.244.2.7: a ready endpoint of EndpointSlice shop/web-headless-b2hkp (headless Service shop/web-headless)",
                ],
            ),
            (
                "not-an-ip.shop.pod.cluster.local",
                "A",
                &[
                    "not-an-ip is not a valid pod name (an address with dashes, 10-244-1-5): NXDOMAIN",
                ],
            ),
            (
                "10-244-1-5.shop.pod.cluster.local",
                "A",
                &["10.244.1.5: Pod shop/web-7d9c6b8f5d-4hx2k has it (pods verified)"],
            ),
            (
                "10-9-9-9.shop.pod.cluster.local",
                "A",
                &["pods verified: no Pod in namespace shop has 10.9.9.9 (10-9-9-9): NXDOMAIN"],
            ),
        ],
    );
    // The explanation follows the watch: the headless Service loses its endpoints, a
    // Service appears (with no endpoints: ignore empty_service), then its endpoints.
    api.delete(Kind::EndpointSlice, "shop", "web-headless-b2hkp");
    until_why(
        &server,
        "web-headless.shop.svc.cluster.local",
        "A",
        "web-headless.shop.svc.cluster.local. A: kubernetes (zone cluster.local.)\n  headless Service shop/web-headless has no ready endpoints: its name has no addresses\n",
    );
    api.apply(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "nope", "namespace": "shop"},
        "spec": {"clusterIP": "10.96.0.77", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    }));
    until_why(
        &server,
        "nope.shop.svc.cluster.local",
        "A",
        "nope.shop.svc.cluster.local. A: kubernetes (zone cluster.local.)\n  Service shop/nope has no ready endpoints and the plugin says ignore empty_service: NXDOMAIN\n",
    );
    assert_eq!(
        server.ask_udp("nope.shop.svc.cluster.local.", "A").rcode,
        "NXDOMAIN"
    );
    api.apply(json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "nope-x1",
            "namespace": "shop",
            "labels": {"kubernetes.io/service-name": "nope"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.1.9"], "conditions": {"ready": true}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }));
    until_why(
        &server,
        "nope.shop.svc.cluster.local",
        "A",
        "nope.shop.svc.cluster.local. A: kubernetes (zone cluster.local.)\n  10.96.0.77: the cluster IP of Service shop/nope (spec.clusterIPs)\n",
    );
    // What the server answers agrees.
    assert_eq!(
        server.ask_udp("nope.shop.svc.cluster.local.", "A").answer,
        crate::common::expect(&["nope.shop.svc.cluster.local. 5 IN A 10.96.0.77"])
    );
    // JSON, as for objects files.
    let (status, body) = server.http_get(
        "metrics",
        "/debug/why?name=empty.shop.svc.cluster.local&format=json",
    );
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["plugin"], "kubernetes");
    assert_eq!(json["zone"], "cluster.local.");
}

/// Stand-in: the shop fixture's EndpointSlices as written (see above).
#[test]
fn debug_why_from_an_api_watch_the_api_server_filters() {
    let api = ApiServer::start();
    api.apply_file(fixture("shop.json"));
    // labels: the API server sends only the Services (and slices) they select.
    let (_labels, server) = watching(&api, "labels app=db");
    check_reasons(
        &server,
        &[
            (
                "web.shop.svc.cluster.local",
                "A",
                &[
                    "no Service shop/web in the watch: there is none, or it is filtered by labels app=db (the API server sends only the Services they select): NXDOMAIN",
                ],
            ),
            (
                "_postgres._tcp.db.shop.svc.cluster.local",
                "SRV",
                &["Service shop/db has no port named postgres with protocol tcp: NXDOMAIN"],
            ),
        ],
    );
    drop(server);
    // One namespace: the watch lists no other.
    let (_namespaces, server) = watching(&api, "namespaces kube-system");
    check_reasons(
        &server,
        &[
            (
                "web.shop.svc.cluster.local",
                "A",
                &["namespace shop is not exposed (namespaces kube-system): NXDOMAIN"],
            ),
            (
                "kube-dns.kube-system.svc.cluster.local",
                "A",
                &["10.96.0.10: the cluster IP of Service kube-system/kube-dns (spec.clusterIPs)"],
            ),
        ],
    );
    drop(server);
    // namespace_labels: the API server sends only the namespaces they select.
    let (_namespace_labels, server) =
        watching(&api, "namespace_labels kubernetes.io/metadata.name=default");
    check_reasons(
        &server,
        &[(
            "web.shop.svc.cluster.local",
            "A",
            &[
                "no namespace shop in the watch: there is none, or namespace_labels kubernetes.io/metadata.name=default does not match it (the API server sends only the namespaces they select): NXDOMAIN",
            ],
        )],
    );
}

/// Stand-in only: Services failing with 500 while namespaces list is a fault the real API
/// server cannot be asked for.
#[test]
fn debug_why_before_the_api_watch_has_synced() {
    let api = ApiServer::start();
    api.apply_file(fixture("shop.json"));
    // The Services cannot be listed: the server starts unsynced after startup_timeout.
    api.fail_requests(|r| r.kind == Some(Kind::Service), 500, usize::MAX);
    let (_corefile, server) = watching(&api, "startup_timeout 1s");
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "SERVFAIL"
    );
    // The namespaces are listed, the Services not yet.
    until_why(
        &server,
        "web.shop.svc.cluster.local",
        "A",
        "web.shop.svc.cluster.local. A: kubernetes (zone cluster.local.)\n  not synced with the API server yet: from the objects listed so far; a name not found is answered SERVFAIL until the sync\n  no such Service shop/web: NXDOMAIN\n",
    );
    api.clear_failures();
    until_why(
        &server,
        "web.shop.svc.cluster.local",
        "A",
        "web.shop.svc.cluster.local. A: kubernetes (zone cluster.local.)\n  10.96.0.20: the cluster IP of Service shop/web (spec.clusterIPs)\n",
    );
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
}

#[test]
fn debug_why_of_an_expired_answer_under_serve_stale() {
    let upstream = NamesUpstream::start("127.0.0.1:0".parse().unwrap(), &["example.com"]);
    for (mode, expected) in [
        (
            "immediate",
            "example.com. A: cache (zone .)\n  outside the cluster zone: forwarded upstream to {upstream}\n  served stale from the cache (serve_stale; its TTL ran out): NOERROR, 1 answer record; it is fetched again upstream\n",
        ),
        (
            "verify",
            "example.com. A: forward (zone .)\n  outside the cluster zone: forwarded upstream to {upstream}\n  in the cache but expired: NOERROR, 1 answer record; serve_stale verify: the upstream is asked, the stale answer is served only if it fails\n",
        ),
    ] {
        // Answers live for a second.
        let corefile = TempCorefile::new(&format!(
            ".:0 {{\n    bind 127.0.0.1\n    prometheus 127.0.0.1:0\n    cache {{\n        success 1000 1 0\n        serve_stale 1h {mode}\n    }}\n    forward . {}\n}}\n",
            upstream.addr
        ));
        let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
        assert_eq!(server.ask_udp("example.com.", "A").rcode, "NOERROR");
        std::thread::sleep(Duration::from_millis(1300));
        assert_eq!(
            server.http_get("metrics", "/debug/why?name=example.com"),
            (
                200,
                expected.replace("{upstream}", &upstream.addr.to_string())
            ),
            "{mode}"
        );
    }
}
