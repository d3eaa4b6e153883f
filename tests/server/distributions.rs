//! The distributions' default Corefiles, run by the real binary: kubeadm, kind, k3s, RKE2,
//! minikube, MicroK8s, AKS, EKS, OpenShift, Talos and NodeLocal DNSCache, each taken unchanged
//! from its public source (the comment at the top of each
//! `tests/fixtures/corefiles/distributions/NAME.Corefile` says where).
//!
//! A test moves only what a test must: the ports (`:53` and `:5353` to a free one on
//! 127.0.0.1, the health, ready and metrics endpoints to `127.0.0.1:0`), the upstream
//! (`/etc/resolv.conf`, or NodeLocal's kube-dns Service, to a stand-in on loopback), files
//! under `/etc/coredns` (to a temporary directory), and, in the *kubernetes* block, an
//! `objects` line in place of the API server (fixtures/shop.json). Each asks the cluster zone
//! and what that distribution adds.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name, RData, RecordType};

use crate::common::binary::TestServer;
use crate::common::upstream::{Behaviour, TestUpstream};
use crate::common::{Reply, TempCorefile, expect, read, root, runtime};

/// A distribution's Corefile running, with the stand-in upstreams it forwards to.
struct Running {
    server: TestServer,
    /// What `/etc/resolv.conf` became (the first of them when there are several).
    upstreams: Vec<TestUpstream>,
    _corefile: TempCorefile,
    _runtime: tokio::runtime::Runtime,
}

/// The fixture's text.
fn fixture(name: &str) -> String {
    read(format!(
        "tests/fixtures/corefiles/distributions/{name}.Corefile"
    ))
}

/// The directives of a Corefile without its comments and blank lines, for comparing two.
fn directives(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim_end())
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// The test's moves (see the module doc), line by line so the rest stays as written.
/// `resolv_conf` replaces `/etc/resolv.conf`; `etc_coredns` replaces `/etc/coredns`.
fn localize(text: &str, resolv_conf: &str, etc_coredns: &Path) -> String {
    let etc = etc_coredns.display().to_string();
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        let block = trimmed.ends_with('{');
        let brace = if block { " {" } else { "" };
        let moved = match words.first().copied() {
            // A server block key: `.:53 {`, `hostname.bind:5353 {`.
            Some(key) if indent.is_empty() && block && (key.contains(':') || words.len() == 2) => {
                let key = key
                    .trim_end_matches('{')
                    .replace(":5353", ":0")
                    .replace(":53", ":0");
                let bind = if text.contains("\n    bind ") {
                    ""
                } else {
                    "\n    bind 127.0.0.1"
                };
                format!("{key} {{{bind}")
            }
            Some("bind") => format!("{indent}bind 127.0.0.1 127.0.0.2"),
            Some("health") => format!("{indent}health 127.0.0.1:0{brace}"),
            Some("ready") => format!("{indent}ready 127.0.0.1:0"),
            Some("prometheus") => format!("{indent}prometheus 127.0.0.1:0"),
            Some("kubernetes") => {
                format!("{line}\n{indent}    objects {{FIXTURES}}/shop.json")
            }
            Some("forward") if words.get(2) == Some(&"/etc/resolv.conf") => {
                line.replace("/etc/resolv.conf", resolv_conf)
            }
            _ => line.replace("/etc/coredns", &etc),
        };
        out.push_str(&moved);
        out.push('\n');
    }
    out
}

/// Runs distribution `name` with `upstreams` stand-ins for `/etc/resolv.conf`; `prepare`
/// may edit the localized text and add files beside it (its directory is the Corefile's).
fn run(name: &str, upstreams: usize, prepare: impl FnOnce(&mut String, &Path)) -> Running {
    let runtime = runtime(1);
    let upstreams: Vec<TestUpstream> = (0..upstreams)
        .map(|i| {
            runtime.block_on(TestUpstream::answering(Ipv4Addr::new(
                192,
                0,
                2,
                1 + i as u8,
            )))
        })
        .collect();
    let resolv_conf = upstreams
        .iter()
        .map(|upstream| upstream.addr.to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let corefile = TempCorefile::new("");
    let etc = corefile.dir.path().join("etc-coredns");
    std::fs::create_dir_all(etc.join("custom")).unwrap();
    let mut text = localize(&fixture(name), &resolv_conf, &etc);
    prepare(&mut text, corefile.dir.path());
    let text = text.replace("{FIXTURES}", &root().join("fixtures").display().to_string());
    std::fs::write(&corefile.path, &text).unwrap();
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    Running {
        server,
        upstreams,
        _corefile: corefile,
        _runtime: runtime,
    }
}

impl Running {
    /// The cluster zone answers from the objects with `ttl`, reverse names too, and other
    /// names go to the first upstream, their TTL (60) capped by the cache at `cached`.
    fn answers_the_cluster_zone(&self, ttl: u32, cached: u32) {
        let web = self.server.ask_udp("web.shop.svc.cluster.local.", "A");
        assert_eq!(
            (web.rcode.as_str(), web.authoritative),
            ("NOERROR", true),
            "{}",
            self.server.log()
        );
        assert_eq!(
            web.answer,
            expect(&[&format!(
                "web.shop.svc.cluster.local. {ttl} IN A 10.96.0.20"
            )])
        );
        let tcp = self
            .server
            .ask_tcp("kubernetes.default.svc.cluster.local.", "A");
        assert_eq!(
            tcp.answer,
            expect(&[&format!(
                "kubernetes.default.svc.cluster.local. {ttl} IN A 10.96.0.1"
            )])
        );
        let ptr = self.server.ask_udp("20.0.96.10.in-addr.arpa.", "PTR");
        assert_eq!(
            ptr.answer,
            expect(&[&format!(
                "20.0.96.10.in-addr.arpa. {ttl} IN PTR web.shop.svc.cluster.local."
            )])
        );
        let missing = self.server.ask_udp("nope.shop.svc.cluster.local.", "A");
        assert_eq!(missing.rcode, "NXDOMAIN");
        let outside = self.server.ask_udp("www.example.com.", "A");
        assert_eq!(outside.rcode, "NOERROR");
        assert_eq!(
            outside.answer,
            expect(&[&format!("www.example.com. {cached} IN A 192.0.2.1")])
        );
        assert_eq!(self.upstreams[0].queries_for("www.example.com."), 1);
        assert_eq!(
            self.upstreams[0].queries_for("web.shop.svc.cluster.local."),
            0,
            "the cluster zone is not forwarded"
        );
    }

    /// `/health` and `/ready` answer 200 (once ready), `/metrics` has CoreDNS's series.
    fn serves_health_ready_and_metrics(&self) {
        assert_eq!(self.server.http_get("health", "/health").0, 200);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.server.http_get("ready", "/ready").0 != 200 {
            assert!(Instant::now() < deadline, "never ready");
            std::thread::sleep(Duration::from_millis(50));
        }
        let (status, metrics) = self.server.http_get("metrics", "/metrics");
        assert_eq!(status, 200);
        assert!(metrics.contains("coredns_dns_requests_total"), "{metrics}");
    }

    /// The server's standard output (the *log* and *errors* plugins) after `settle`.
    fn stdout_after(&self, settle: Duration) -> String {
        std::thread::sleep(settle);
        self.server.stdout()
    }
}

/// A query in class CH.
fn chaos_query(name: &str) -> Vec<u8> {
    let mut message = Message::new(77, MessageType::Query, OpCode::Query);
    let mut query = Query::query(Name::from_ascii(name).unwrap(), RecordType::TXT);
    query.set_query_class(DNSClass::CH);
    message.add_query(query);
    message.to_vec().unwrap()
}

/// `name A` with an EDNS payload of `payload`.
fn query_with_payload(name: &str, payload: u16) -> Vec<u8> {
    let mut message = Message::new(78, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(Name::from_ascii(name).unwrap(), RecordType::A));
    let mut edns = Edns::new();
    edns.set_max_payload(payload);
    message.set_edns(edns);
    message.to_vec().unwrap()
}

/// The machine's host name, as the *chaos* plugin reports it.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned()
}

#[test]
fn every_fixture_says_where_it_comes_from() {
    for name in [
        "kubeadm",
        "kind",
        "k3s",
        "rke2",
        "minikube",
        "microk8s",
        "aks",
        "eks",
        "openshift",
        "talos",
        "nodelocaldns",
    ] {
        let text = fixture(name);
        let header: String = text
            .lines()
            .take_while(|line| line.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            header.contains("commit") || header.contains("issue"),
            "{name}: no source in its header:\n{header}"
        );
        assert!(!directives(&text).is_empty(), "{name}");
    }
}

#[test]
fn kubeadm() {
    let running = run("kubeadm", 1, |_, _| {});
    running.answers_the_cluster_zone(30, 30);
    running.serves_health_ready_and_metrics();
}

#[test]
fn kind_runs_kubeadms_corefile() {
    assert_eq!(
        directives(&fixture("kind")),
        directives(&fixture("kubeadm")),
        "kind installs kubeadm's addon"
    );
    let running = run("kind", 1, |_, _| {});
    running.answers_the_cluster_zone(30, 30);
    running.serves_health_ready_and_metrics();
}

#[test]
fn k3s() {
    // The NodeHosts file where k3s mounts its ConfigMap key (/etc/coredns, moved).
    let running = run("k3s", 1, |_, dir| {
        std::fs::copy(
            root().join("tests/fixtures/corefiles/distributions/k3s/NodeHosts"),
            dir.join("etc-coredns/NodeHosts"),
        )
        .unwrap();
    });
    running.answers_the_cluster_zone(5, 30);
    running.serves_health_ready_and_metrics();
    // hosts: the nodes by name and address, TTL 60, and the rest falls through.
    assert_eq!(
        running.server.ask_udp("k3s-server.", "A").answer,
        expect(&["k3s-server. 60 IN A 10.0.0.5"])
    );
    assert_eq!(
        running
            .server
            .ask_udp("5.0.0.10.in-addr.arpa.", "PTR")
            .answer,
        expect(&["5.0.0.10.in-addr.arpa. 60 IN PTR k3s-server."])
    );
    assert_eq!(
        running.server.ask_udp("k3s-agent-1.", "A").answer,
        expect(&["k3s-agent-1. 60 IN A 10.0.0.6"])
    );
    // The empty coredns-custom directory: two warnings, no error.
    let log = running.server.log();
    assert_eq!(
        log.matches("No files matching import glob pattern").count(),
        2,
        "{log}"
    );
}

#[test]
fn rke2_with_its_runs_of_spaces() {
    assert!(fixture("rke2").contains("kubernetes  cluster.local  in-addr.arpa"));
    let running = run("rke2", 1, |_, _| {});
    running.answers_the_cluster_zone(30, 30);
    running.serves_health_ready_and_metrics();
}

#[test]
fn minikube() {
    let running = run("minikube", 1, |_, _| {});
    running.answers_the_cluster_zone(30, 30);
    running.serves_health_ready_and_metrics();
    // hosts: host.minikube.internal is the host (hosts' default TTL, 3600).
    let host = running.server.ask_udp("host.minikube.internal.", "A");
    assert_eq!(
        host.answer,
        expect(&["host.minikube.internal. 3600 IN A 192.168.49.1"])
    );
    assert_eq!(
        running.upstreams[0].queries_for("host.minikube.internal."),
        0
    );
    // log: every query is logged.
    let stdout = running.stdout_after(Duration::from_millis(300));
    assert!(
        stdout.contains("[INFO]") && stdout.contains("\"A IN web.shop.svc.cluster.local. udp"),
        "{stdout}"
    );
}

#[test]
fn microk8s_logs_only_errors() {
    let running = run("microk8s", 1, |_, _| {});
    running.answers_the_cluster_zone(5, 30);
    running.serves_health_ready_and_metrics();
    running.upstreams[0].set(Behaviour::Rcode(2));
    assert_eq!(
        running.server.ask_udp("broken.example.com.", "A").rcode,
        "SERVFAIL"
    );
    // log . { class error }: the SERVFAIL is logged, the answers before it are not.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !running.server.stdout().contains("broken.example.com.") {
        assert!(Instant::now() < deadline, "{}", running.server.stdout());
        std::thread::sleep(Duration::from_millis(20));
    }
    let stdout = running.server.stdout();
    let logged: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("[INFO]"))
        .collect();
    assert_eq!(logged.len(), 1, "{stdout}");
    assert!(
        logged[0].contains("\"A IN broken.example.com. udp") && logged[0].contains("SERVFAIL"),
        "{stdout}"
    );
}

#[test]
fn aks() {
    let running = run("aks", 1, |_, dir| {
        // The coredns-custom ConfigMap, mounted as custom/ beside the Corefile: empty.
        std::fs::create_dir_all(dir.join("custom")).unwrap();
    });
    running.answers_the_cluster_zone(30, 30);
    running.serves_health_ready_and_metrics();
    // template: search-path completions under internal.cloudapp.net with four labels or
    // more, and anything under reddog.microsoft.com, are NXDOMAIN without asking upstream.
    for name in [
        "web.shop.svc.cluster.local.internal.cloudapp.net.",
        "a.b.c.d.internal.cloudapp.net.",
        "www.example.com.reddog.microsoft.com.",
        "reddog.microsoft.com.",
    ] {
        let reply = running.server.ask_udp(name, "A");
        assert_eq!(reply.rcode, "NXDOMAIN", "{name}");
        assert!(reply.answer.is_empty(), "{name}");
        assert_eq!(running.upstreams[0].queries_for(name), 0, "{name}");
    }
    // Fewer labels fall through to forward (a VM's own name).
    let vm = running
        .server
        .ask_udp("aks-nodepool1.abc.internal.cloudapp.net.", "A");
    assert_eq!(
        vm.answer,
        expect(&["aks-nodepool1.abc.internal.cloudapp.net. 30 IN A 192.0.2.1"])
    );
    let log = running.server.log();
    assert_eq!(
        log.matches("No files matching import glob pattern").count(),
        2,
        "{log}"
    );
}

#[test]
fn eks_has_the_default_ttl() {
    let running = run("eks", 1, |_, _| {});
    running.answers_the_cluster_zone(5, 30);
    running.serves_health_ready_and_metrics();
}

#[test]
fn openshift() {
    let running = run("openshift", 2, |_, _| {});
    running.answers_the_cluster_zone(5, 60);
    running.serves_health_ready_and_metrics();
    // policy sequential: the first upstream takes every query while it answers.
    for i in 0..5 {
        let name = format!("host{i}.example.org.");
        assert_eq!(
            running.server.ask_udp(&name, "A").answer,
            expect(&[&format!("{name} 60 IN A 192.0.2.1")])
        );
    }
    assert_eq!(running.upstreams[1].queries(), 0);
    // bufsize 1232: a client's larger EDNS payload goes upstream as 1232.
    let reply = Reply::decode(
        &running
            .server
            .udp(&query_with_payload("big.example.org.", 4096)),
    );
    assert_eq!(reply.rcode, "NOERROR");
    let forwarded = Message::from_vec(&running.upstreams[0].last_query().unwrap()).unwrap();
    assert_eq!(forwarded.edns.unwrap().max_payload(), 1232);
    // hostname.bind:5353 { chaos }: the server's host name in class CH.
    let chaos = Reply::decode(&running.server.udp(&chaos_query("hostname.bind.")));
    assert_eq!(chaos.rcode, "NOERROR");
    let texts: Vec<String> = chaos
        .message
        .answers
        .iter()
        .filter_map(|record| match &record.data {
            RData::TXT(txt) => Some(txt.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, [hostname()]);
    assert_eq!(chaos.message.answers[0].dns_class, DNSClass::CH);
    // log . { class error }: answers are not logged.
    let stdout = running.stdout_after(Duration::from_millis(300));
    assert!(!stdout.contains("[INFO]"), "{stdout}");
}

#[test]
fn talos() {
    let running = run("talos", 1, |_, _| {});
    running.answers_the_cluster_zone(30, 30);
    running.serves_health_ready_and_metrics();
    let stdout = running.stdout_after(Duration::from_millis(300));
    assert!(
        !stdout.contains("[INFO]"),
        "class error logs no answer: {stdout}"
    );
}

/// NodeLocal DNSCache has no kubernetes plugin: it caches and forwards the cluster zone to
/// kube-dns over TCP and everything else to the node's resolvers, on two addresses.
#[test]
fn nodelocaldns() {
    // The kube-dns Service's stand-in, answering the names NodeLocal sends it.
    let runtime = runtime(1);
    let kube_dns = runtime.block_on(TestUpstream::answering(Ipv4Addr::new(10, 96, 0, 20)));
    let running = run("nodelocaldns", 1, |text, _| {
        *text = text.replace(
            "forward . 10.96.0.11",
            &format!("forward . {}", kube_dns.addr),
        );
    });
    // The cluster zone, the reverse zones: from kube-dns, over TCP (force_tcp).
    let web = running.server.ask_udp("web.shop.svc.cluster.local.", "A");
    assert_eq!(
        web.answer,
        expect(&["web.shop.svc.cluster.local. 30 IN A 10.96.0.20"]),
        "{}",
        running.server.log()
    );
    let reverse = running.server.ask_udp("20.0.96.10.in-addr.arpa.", "A");
    assert_eq!(reverse.rcode, "NOERROR");
    assert_eq!(kube_dns.queries_for("20.0.96.10.in-addr.arpa."), 1);
    // force_tcp: nothing reaches kube-dns over UDP (the loop plugin's probes included).
    assert_eq!(kube_dns.udp(), 0);
    assert!(kube_dns.tcp() >= 2);
    // cache: the second ask is answered from the cache.
    let again = running.server.ask_udp("web.shop.svc.cluster.local.", "A");
    assert_eq!(again.rcode, "NOERROR");
    assert_eq!(kube_dns.queries_for("web.shop.svc.cluster.local."), 1);
    // Everything else goes to the node's resolvers (over the client's transport).
    let outside = running.server.ask_udp("www.example.com.", "A");
    assert_eq!(
        outside.answer,
        expect(&["www.example.com. 30 IN A 192.0.2.1"])
    );
    assert_eq!(kube_dns.queries_for("www.example.com."), 0);
    // Both bind addresses answer (NodeLocal's link-local IP and kube-dns's ClusterIP).
    // The second listener may log a moment after the first answered.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let bound = loop {
        let log = running.server.log();
        let bound: Vec<SocketAddr> = log
            .lines()
            .filter_map(|line| line.split("listening on udp ").nth(1))
            .map(|addr| addr.trim().parse().unwrap())
            .collect();
        let ips: Vec<String> = bound.iter().map(|addr| addr.ip().to_string()).collect();
        if ips.contains(&"127.0.0.1".to_owned()) && ips.contains(&"127.0.0.2".to_owned()) {
            break bound;
        }
        assert!(std::time::Instant::now() < deadline, "{log}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    for addr in bound {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        socket
            .send_to(
                &crate::common::query("www.example.com.", "A", Some(1232)),
                addr,
            )
            .unwrap();
        let mut buffer = vec![0; 4096];
        let (len, _) = socket.recv_from(&mut buffer).unwrap();
        assert_eq!(Reply::decode(&buffer[..len]).rcode, "NOERROR", "{addr}");
    }
    assert_eq!(running.server.http_get("health", "/health").0, 200);
    drop(runtime);
}
