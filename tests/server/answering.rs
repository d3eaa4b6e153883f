//! The plugins that answer in front of the cluster zone, end to end against the real binary:
//! *hosts* (k3s's NodeHosts file with reload, minikube's inline entry), *template* (AKS's
//! NXDOMAIN templates, answers from regular expression groups), *rewrite* (into the cluster
//! zone, and out to the upstream and back), *bufsize*, *chaos* and *any*, in one chain with
//! *kubernetes*, *cache* and *forward*; their metrics and the query log.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name, RData, RecordType};

use crate::common::binary::TestServer;
use crate::common::upstream::{Behaviour, TestUpstream};
use crate::common::{Offline, Reply, TempCorefile, expect, runtime};

/// A block with every answering plugin in front of kubeadm's (in no particular order: the
/// chain runs them in CoreDNS's), its hosts file next to the Corefile.
fn corefile(upstream: SocketAddr) -> TempCorefile {
    let corefile = TempCorefile::new(&format!(
        r#".:0 {{
    bind 127.0.0.1
    errors
    log . {{
        class denial error
    }}
    prometheus 127.0.0.1:0
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
        objects {{FIXTURES}}/shop.json
    }}
    hosts NodeHosts {{
        192.168.49.1 host.minikube.internal
        ttl 60
        reload 200ms
        fallthrough
    }}
    template ANY ANY reddog.microsoft.com {{
        rcode NXDOMAIN
    }}
    template IN A ip.example {{
        match ^ip-(?P<a>[0-9]+)-(?P<b>[0-9]+)[.]ip[.]example[.]$
        answer "{{{{ .Name }}}} 60 IN A 10.0.{{{{ .Group.a }}}}.{{{{ .Group.b }}}}"
    }}
    rewrite name exact db.corp.example web.shop.svc.cluster.local
    rewrite name suffix .upstream.example .example.net answer auto
    forward . {upstream}
    cache 30 {{
        disable success cluster.local
        disable denial cluster.local
    }}
    chaos clusterdns-e2e
    any
    bufsize 1232
}}
"#
    ));
    std::fs::write(
        corefile.dir.path().join("NodeHosts"),
        "172.18.0.2 k3s-server\n172.18.0.3 k3s-agent\n",
    )
    .unwrap();
    corefile
}

fn packet(name: &str, qtype: RecordType, class: DNSClass, payload: u16) -> Vec<u8> {
    let mut query = Query::query(Name::from_ascii(name).unwrap(), qtype);
    query.set_query_class(class);
    let mut message = Message::new(77, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(query);
    let mut edns = Edns::new();
    edns.set_max_payload(payload);
    message.edns = Some(edns);
    message.to_vec().unwrap()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_answering_plugins_in_one_chain() {
    let rt = runtime(2);
    let up = rt.block_on(TestUpstream::start(Behaviour::Answer));
    let corefile = corefile(up.addr);
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);

    // hosts: the file's entries, the inline one, PTRs, NODATA, and fallthrough to the
    // cluster zone and the upstream.
    let node = server.ask_udp("k3s-server.", "A");
    assert_eq!(node.answer, expect(&["k3s-server. 60 IN A 172.18.0.2"]));
    assert!(node.authoritative);
    assert_eq!(
        server.ask_udp("host.minikube.internal.", "A").answer,
        expect(&["host.minikube.internal. 60 IN A 192.168.49.1"])
    );
    assert_eq!(
        server.ask_udp("3.0.18.172.in-addr.arpa.", "PTR").answer,
        expect(&["3.0.18.172.in-addr.arpa. 60 IN PTR k3s-agent."])
    );
    let nodata = server.ask_udp("k3s-server.", "AAAA");
    assert_eq!((nodata.rcode.as_str(), nodata.answer.len()), ("NOERROR", 0));
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        expect(&["web.shop.svc.cluster.local. 30 IN A 10.96.0.20"])
    );
    assert_eq!(
        server.ask_udp("www.example.com.", "A").answer,
        expect(&["www.example.com. 30 IN A 192.0.2.1"])
    );

    // The file changes: read again at the next reload; gone, the last entries stay.
    let hosts = corefile.dir.path().join("NodeHosts");
    std::fs::write(&hosts, "172.18.0.9 k3s-server\n").unwrap();
    wait_for("the hosts file to be read again", || {
        server.ask_udp("k3s-server.", "A").answer == expect(&["k3s-server. 60 IN A 172.18.0.9"])
    });
    std::fs::remove_file(&hosts).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        server.ask_udp("k3s-server.", "A").answer,
        expect(&["k3s-server. 60 IN A 172.18.0.9"]),
        "a missing file keeps the entries last read"
    );
    wait_for("the warning", || {
        server.log().contains("keeping the entries last read")
    });

    // template: AKS's NXDOMAIN, an answer from the name's groups.
    let reddog = server.ask_udp("web.default.svc.cluster.local.reddog.microsoft.com.", "A");
    assert_eq!(
        (reddog.rcode.as_str(), reddog.authoritative),
        ("NXDOMAIN", true)
    );
    assert_eq!(
        server.ask_udp("ip-7-9.ip.example.", "A").answer,
        expect(&["ip-7-9.ip.example. 60 IN A 10.0.7.9"])
    );
    assert_eq!(server.ask_udp("nope.ip.example.", "A").rcode, "SERVFAIL");

    // rewrite: into the cluster zone; and out to the upstream, which is asked the
    // rewritten name, with the answer turned back.
    assert_eq!(
        server.ask_udp("db.corp.example.", "A").answer,
        expect(&["db.corp.example. 30 IN A 10.96.0.20"])
    );
    let out = server.ask_udp("www.upstream.example.", "A");
    assert_eq!(
        out.answer,
        expect(&["www.upstream.example. 30 IN A 192.0.2.1"])
    );
    assert_eq!(
        out.message.queries[0].name().to_ascii(),
        "www.upstream.example."
    );
    assert_eq!(up.queries_for("www.example.net."), 1);
    assert_eq!(up.queries_for("www.upstream.example."), 0);

    // bufsize: the upstream is offered 1232 bytes, whatever the client offered.
    let reply = server.udp(&packet(
        "big.example.org.",
        RecordType::A,
        DNSClass::IN,
        4096,
    ));
    assert_eq!(Reply::decode(&reply).rcode, "NOERROR");
    let asked = Message::from_vec(&up.last_query().unwrap()).unwrap();
    assert_eq!(asked.queries[0].name().to_ascii(), "big.example.org.");
    assert_eq!(asked.edns.map(|edns| edns.max_payload()), Some(1232));

    // chaos and any.
    let version = Reply::decode(&server.udp(&packet(
        "version.bind.",
        RecordType::TXT,
        DNSClass::CH,
        1232,
    )));
    let RData::TXT(txt) = &version.message.answers[0].data else {
        panic!("{version:?}");
    };
    assert_eq!(&*txt.txt_data[0], b"clusterdns-e2e");
    assert_eq!(version.message.answers[0].dns_class, DNSClass::CH);
    let any = server.ask_udp("web.shop.svc.cluster.local.", "ANY");
    assert_eq!(
        any.message.answers[0].record_type(),
        RecordType::HINFO,
        "{any:?}"
    );

    // Metrics, as CoreDNS names them, and the log's classes.
    let (status, metrics) = server.http_get("metrics", "/metrics");
    assert_eq!(status, 200);
    let server_label = "dns://127.0.0.1:0";
    for needle in [
        // CoreDNS's count (addresses and PTR names) of the last file read, and the inline
        // entry's two.
        format!(
            "coredns_hosts_entries{{hostsfile=\"{}\"}} 4",
            hosts.display()
        ),
        "coredns_hosts_reload_timestamp_seconds ".to_owned(),
        format!(
            "coredns_template_matches_total{{server=\"{server_label}\",zone=\"reddog.microsoft.com.\",view=\"\",class=\"IN\",type=\"A\"}} 1"
        ),
        format!(
            "coredns_template_matches_total{{server=\"{server_label}\",zone=\"ip.example.\",view=\"\",class=\"IN\",type=\"A\"}} 1"
        ),
        format!(
            "coredns_dns_responses_total{{plugin=\"hosts\",rcode=\"NOERROR\",server=\"{server_label}\",view=\"\",zone=\".\"}} "
        ),
        format!(
            "coredns_dns_responses_total{{plugin=\"template\",rcode=\"NXDOMAIN\",server=\"{server_label}\",view=\"\",zone=\".\"}} 1"
        ),
        format!(
            "coredns_dns_responses_total{{plugin=\"chaos\",rcode=\"NOERROR\",server=\"{server_label}\",view=\"\",zone=\".\"}} 1"
        ),
        format!(
            "coredns_dns_responses_total{{plugin=\"any\",rcode=\"NOERROR\",server=\"{server_label}\",view=\"\",zone=\".\"}} 1"
        ),
        format!(
            "coredns_plugin_enabled{{name=\"hosts\",server=\"{server_label}\",view=\"\",zone=\".\"}} 1"
        ),
        format!(
            "coredns_plugin_enabled{{name=\"rewrite\",server=\"{server_label}\",view=\"\",zone=\".\"}} 1"
        ),
    ] {
        assert!(metrics.contains(&needle), "missing {needle} in:\n{metrics}");
    }
    wait_for("the log lines", || {
        let log = server.stdout();
        log.contains("\"A IN web.default.svc.cluster.local.reddog.microsoft.com. udp")
            && log.contains("NXDOMAIN")
    });
    let log = server.stdout();
    assert!(
        log.contains("\"A IN nope.ip.example. udp") && log.contains("SERVFAIL"),
        "errors are logged: {log}"
    );
    assert!(
        !log.contains("\"A IN k3s-server. udp"),
        "successes are not (class denial error): {log}"
    );
}

/// OpenShift's generated Corefile: the cluster block and a `hostname.bind` block with
/// *chaos* on the same port; `bufsize 1232` and `policy sequential` in front.
#[test]
fn openshift_hostname_bind() {
    let offline = Offline::new(
        ".:5353 {
    bufsize 1232
    errors
    log . {
        class error
    }
    health {
        lameduck 20s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        objects {FIXTURES}/shop.json
    }
    prometheus 127.0.0.1:9153
    forward . 192.0.2.1
    cache 900 {
        denial 9984 30
    }
    reload
}
hostname.bind:5353 {
    chaos
}
",
    );
    let reply = offline.ask_with(
        &packet("hostname.bind.", RecordType::TXT, DNSClass::CH, 1232),
        clusterdns::server::Transport::Udp,
    );
    let RData::TXT(txt) = &reply.message.answers[0].data else {
        panic!("{reply:?}");
    };
    assert!(!txt.txt_data[0].is_empty(), "the host name");
    assert_eq!(reply.message.answers[0].ttl, 0);
    assert_eq!(
        offline.ask("web.shop.svc.cluster.local.", "A").answer,
        expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"])
    );
    // The chaos block's other names: the end of its chain.
    assert_eq!(offline.ask("hostname.bind.", "A").rcode, "REFUSED");
}
