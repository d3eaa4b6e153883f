//! node-cache on a "node" that is a network namespace of the test's own: the interface and
//! the rules appear once it serves, come back after something deletes them, and go at exit
//! (or stay, with `-skipteardown`); a client in a second namespace resolves through
//! 169.254.20.10 and the kube-dns ClusterIP, over UDP and TCP, with no conntrack entry, while
//! a query to an address the rules do not cover is tracked (the control that the listener
//! sees what conntrack confirms).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::{Files, binary, installed_template};
use crate::common::binary::TestServer;
use crate::common::fixture;
use crate::common::netns::{self, Conn, Events, Missing, Netns, Proto};

/// The manifest's two addresses: the link-local one and kube-dns's ClusterIP.
const LOCAL_IPS: &str = "169.254.20.10,10.96.0.10";
/// `kube-dns-upstream`'s ClusterIP, where the kube-dns stand-in listens in the node.
const UPSTREAM_IP: &str = "10.96.0.11";

/// node-cache's rules for 169.254.20.10 and 10.96.0.10 as `iptables-save` lists them after
/// node-cache has written them, written by hand from kubernetes/dns
/// cmd/node-cache/app/cache_app.go (`initIptables`: twelve rules per address, each inserted
/// at the top of its chain by `EnsureRule(Prepend, ...)`, so a chain lists them last first).
const NODE_CACHE_RULES: &str = r#"
raw -A PREROUTING -d 10.96.0.10/32 -p udp -m udp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A PREROUTING -d 10.96.0.10/32 -p tcp -m tcp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A PREROUTING -d 169.254.20.10/32 -p udp -m udp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A PREROUTING -d 169.254.20.10/32 -p tcp -m tcp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -s 10.96.0.10/32 -p tcp -m tcp --sport 8080 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -d 10.96.0.10/32 -p tcp -m tcp --dport 8080 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -d 10.96.0.10/32 -p udp -m udp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -d 10.96.0.10/32 -p tcp -m tcp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -s 10.96.0.10/32 -p udp -m udp --sport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -s 10.96.0.10/32 -p tcp -m tcp --sport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -s 169.254.20.10/32 -p tcp -m tcp --sport 8080 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -d 169.254.20.10/32 -p tcp -m tcp --dport 8080 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -d 169.254.20.10/32 -p udp -m udp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -d 169.254.20.10/32 -p tcp -m tcp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -s 169.254.20.10/32 -p udp -m udp --sport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -s 169.254.20.10/32 -p tcp -m tcp --sport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
filter -A INPUT -d 10.96.0.10/32 -p udp -m udp --dport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
filter -A INPUT -d 10.96.0.10/32 -p tcp -m tcp --dport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
filter -A INPUT -d 169.254.20.10/32 -p udp -m udp --dport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
filter -A INPUT -d 169.254.20.10/32 -p tcp -m tcp --dport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
filter -A OUTPUT -s 10.96.0.10/32 -p udp -m udp --sport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
filter -A OUTPUT -s 10.96.0.10/32 -p tcp -m tcp --sport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
filter -A OUTPUT -s 169.254.20.10/32 -p udp -m udp --sport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
filter -A OUTPUT -s 169.254.20.10/32 -p tcp -m tcp --sport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
"#;

/// `web.shop`'s A record as kube-dns (the stand-in serving fixtures/shop.json) has it, as
/// dig prints the answer with `+nottlid`.
const WEB_SHOP: &str = "web.shop.svc.cluster.local. IN A 10.96.0.20\n";

/// Whether this machine has what these tests need; else says so by the one rule.
fn unavailable(test: &str) -> bool {
    if netns::skip(test) {
        return true;
    }
    if let Some(problem) = netns::missing_tools(&["dig", "iptables", "curl"]) {
        netns::unavailable(test, &problem, Missing::SkipUnlessRequired);
        return true;
    }
    false
}

/// node-cache's rules in `node` as `iptables-save` lists them: `TABLE RULE` per line, in
/// the listing's order.
pub(super) fn iptables_rules(node: &Netns) -> Vec<String> {
    rules_in(node, "iptables-save")
}

/// node-cache's rules in `node` as `save` (an `iptables-save` of one mode) lists them.
fn rules_in(node: &Netns, save: &str) -> Vec<String> {
    let save = node.exec_ok(save, &[]);
    let mut table = "";
    let mut out = Vec::new();
    for line in save.lines() {
        if let Some(name) = line.strip_prefix('*') {
            table = name;
        } else if line.contains("NodeLocal DNS Cache") {
            out.push(format!("{table} {line}"));
        }
    }
    out
}

/// The interface's addresses in `node` (`None`: no such link).
pub(super) fn link_addresses(node: &Netns, name: &str) -> Option<Vec<String>> {
    let out = node.exec("ip", &["-o", "addr", "show", "dev", name]);
    if !out.status.success() {
        return None;
    }
    let mut addresses: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "inet" || *w == "inet6")?;
            words.get(at + 1).map(|w| (*w).to_owned())
        })
        .collect();
    addresses.sort();
    Some(addresses)
}

/// Waits up to `timeout` for `check`; whether it came true.
fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn expected_rules() -> Vec<String> {
    NODE_CACHE_RULES
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A node and a client namespace joined by a veth (node 10.0.0.1, client 10.0.0.2, the
/// local addresses and the Service range routed to the node), kube-dns's stand-in serving
/// fixtures/shop.json on `kube-dns-upstream`'s ClusterIP in the node, and a rule that has
/// conntrack track the node's traffic as a real node's rules do.
struct Cluster {
    // Processes before their namespaces.
    kube_dns: TestServer,
    client: Netns,
    node: Netns,
}

impl Cluster {
    fn new() -> Self {
        let node = Netns::new("node").unwrap();
        let client = Netns::new("client").unwrap();
        node.veth("nc0", &client, "eth0");
        node.ip(&[
            "addr add 10.0.0.1/24 dev nc0",
            &format!("addr add {UPSTREAM_IP}/32 dev lo"),
        ]);
        client.ip(&[
            "addr add 10.0.0.2/24 dev eth0",
            "route add 169.254.20.10/32 via 10.0.0.1",
            "route add 10.96.0.0/16 via 10.0.0.1",
        ]);
        node.exec_ok(
            "iptables",
            &[
                "-A",
                "INPUT",
                "-m",
                "conntrack",
                "--ctstate",
                "INVALID",
                "-j",
                "DROP",
            ],
        );
        let shop = fixture("shop.json").display().to_string();
        let listen = format!("{UPSTREAM_IP}:53");
        let kube_dns = TestServer::start_with(
            node.command(binary(), &[]),
            &["serve", "--objects", &shop, "--listen", &listen],
        );
        Self {
            kube_dns,
            client,
            node,
        }
    }

    /// `dig` in the client: the answer section as zone-file text (one space between fields,
    /// no TTL), from source port `sport`.
    fn dig(&self, server: &str, sport: u16, tcp: bool, name: &str) -> String {
        let at = format!("@{server}");
        let bind = format!("10.0.0.2#{sport}");
        let mut args = vec![
            at.as_str(),
            "-b",
            &bind,
            "+noall",
            "+answer",
            "+nottlid",
            "+tries=1",
            "+time=5",
        ];
        if tcp {
            args.push("+tcp");
        }
        args.extend([name, "A"]);
        let out = self.client.exec_ok("dig", &args);
        out.lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" ") + "\n")
            .collect()
    }

    /// Starts node-cache in the node with `files`, the manifest's flags, `extra` ones and
    /// `kube-dns-upstream`'s environment; returns once it has written its rules.
    fn node_cache(&self, files: &Files, extra: &[&str]) -> TestServer {
        let mut args = files.args(LOCAL_IPS);
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut command = self.node.command(binary(), &[]);
        command.env("KUBE_DNS_UPSTREAM_SERVICE_HOST", UPSTREAM_IP);
        let server = TestServer::start_with(command, &args);
        server.wait_log("node-cache rules in place", Duration::from_secs(30));
        server
    }
}

fn conn(proto: Proto, sport: u16, dst: &str) -> Conn {
    Conn {
        proto,
        src: "10.0.0.2".parse().unwrap(),
        sport,
        dst: dst.parse::<IpAddr>().unwrap(),
        dport: 53,
    }
}

#[test]
fn node_cache_interface_and_rules_appear_resolve_untracked_come_back_and_vanish() {
    let test = "node_cache_interface_and_rules_appear_resolve_untracked_come_back_and_vanish";
    if unavailable(test) {
        return;
    }
    let cluster = Cluster::new();
    let files = Files::new(&installed_template());
    let events = Events::start(&cluster.node);
    let mut cache = cluster.node_cache(&files, &["-syncinterval", "1", "--link-kind", "bridge"]);

    // The interface with both addresses, and node-cache's rules, rule for rule.
    assert_eq!(
        link_addresses(&cluster.node, "nodelocaldns"),
        Some(vec![
            "10.96.0.10/32".to_owned(),
            "169.254.20.10/32".to_owned()
        ])
    );
    assert_eq!(iptables_rules(&cluster.node), expected_rules());
    // The Corefile node-cache wrote: the manifest's, filled.
    let written = std::fs::read_to_string(files.path("Corefile")).unwrap();
    assert_eq!(
        written,
        installed_template()
            .replace("__PILLAR__CLUSTER__DNS__", UPSTREAM_IP)
            .replace("__PILLAR__UPSTREAM__SERVERS__", "/etc/resolv.conf")
    );
    assert!(written.contains("    forward . 10.96.0.11 {\n            force_tcp\n"));

    // The Corefile's health listener on the local address, as the DaemonSet's liveness probe
    // asks it (the -health-port rules cover it).
    assert_eq!(
        cluster
            .node
            .exec_ok("curl", &["-sf", "http://169.254.20.10:8080/health"]),
        "OK"
    );

    // The control: a query to kube-dns's stand-in, which no rule covers, is tracked.
    let control = conn(Proto::Udp, 40100, UPSTREAM_IP);
    assert_eq!(
        cluster.dig(UPSTREAM_IP, 40100, false, "web.shop.svc.cluster.local"),
        WEB_SHOP
    );
    assert!(
        events.wait_for(&control, Duration::from_secs(5)),
        "no conntrack event for the control query: the listener sees nothing"
    );
    // Through both local addresses, over UDP and TCP: the answer, and no conntrack entry.
    let mut sport = 40200;
    for server in ["169.254.20.10", "10.96.0.10"] {
        for tcp in [false, true] {
            sport += 1;
            let answer = cluster.dig(server, sport, tcp, "web.shop.svc.cluster.local");
            assert_eq!(answer, WEB_SHOP, "through {server} (tcp: {tcp})");
            let proto = if tcp { Proto::Tcp } else { Proto::Udp };
            let through = conn(proto, sport, server);
            assert!(
                !events.wait_for(&through, Duration::from_millis(500)),
                "conntrack tracked {through:?}: {:?}",
                events.find(&through)
            );
        }
    }
    assert!(!events.lost(), "conntrack events were lost");

    // A rule deleted by hand is back within the sync interval, at the top of its chain.
    cluster.node.exec_ok(
        "iptables",
        &[
            "-t",
            "raw",
            "-D",
            "PREROUTING",
            "-p",
            "udp",
            "-d",
            "169.254.20.10",
            "--dport",
            "53",
            "-j",
            "NOTRACK",
            "-m",
            "comment",
            "--comment",
            "NodeLocal DNS Cache: skip conntrack",
        ],
    );
    assert_eq!(iptables_rules(&cluster.node).len(), 23);
    let mut sorted = expected_rules();
    sorted.sort();
    assert!(
        eventually(Duration::from_secs(10), || {
            let mut now = iptables_rules(&cluster.node);
            now.sort();
            now == sorted
        }),
        "the deleted rule did not come back: {:#?}",
        iptables_rules(&cluster.node)
    );
    assert!(
        iptables_rules(&cluster.node)[0]
            .starts_with("raw -A PREROUTING -d 169.254.20.10/32 -p udp -m udp --dport 53")
    );
    cache.wait_log(
        "Added back nodelocaldns rule - raw PREROUTING -p udp -d 169.254.20.10",
        Duration::from_secs(5),
    );

    // So is the interface.
    cluster.node.ip(&["link del nodelocaldns"]);
    assert!(
        eventually(Duration::from_secs(10), || {
            link_addresses(&cluster.node, "nodelocaldns").is_some_and(|a| a.len() == 2)
        }),
        "the deleted interface did not come back"
    );

    // At exit both go.
    cache.terminate();
    let status = cache
        .wait_exit(Duration::from_secs(30))
        .expect("node-cache exits");
    assert!(status.success(), "{status}\n{}", cache.log());
    assert_eq!(link_addresses(&cluster.node, "nodelocaldns"), None);
    assert_eq!(iptables_rules(&cluster.node), Vec::<String>::new());
    drop(cluster.kube_dns);
}

/// On a node whose kubelet runs iptables in legacy mode (its `KUBE-IPTABLES-HINT` chain in
/// the legacy mangle table), `--netfilter auto` writes node-cache's rules there, as
/// kube-proxy's and node-cache's images pick the mode, and none in the nft tables; a client
/// through the local address is answered untracked; at exit the rules go.
#[test]
fn node_cache_writes_its_rules_in_the_iptables_mode_of_the_kubelets_chains() {
    let test = "node_cache_writes_its_rules_in_the_iptables_mode_of_the_kubelets_chains";
    if unavailable(test) {
        return;
    }
    if let Some(problem) = netns::missing_tools(&["iptables-legacy", "iptables-legacy-save"]) {
        netns::unavailable(test, &problem, Missing::SkipUnlessRequired);
        return;
    }
    let cluster = Cluster::new();
    cluster.node.exec_ok(
        "iptables-legacy",
        &["-t", "mangle", "-N", "KUBE-IPTABLES-HINT"],
    );
    let files = Files::new(&installed_template());
    let events = Events::start(&cluster.node);
    let mut cache = cluster.node_cache(&files, &["--link-kind", "bridge"]);
    cache.wait_log("iptables' legacy mode", Duration::from_secs(5));
    // iptables-legacy-save lists its tables in the kernel's order, filter before raw; each
    // chain's rules in node-cache's order.
    let by_table = |mut rules: Vec<String>| {
        rules.sort_by_key(|rule| rule.split(' ').next().map(str::to_owned));
        rules
    };
    assert_eq!(
        by_table(rules_in(&cluster.node, "iptables-legacy-save")),
        by_table(expected_rules())
    );
    assert_eq!(
        rules_in(&cluster.node, "iptables-nft-save"),
        Vec::<String>::new()
    );
    assert_eq!(
        cluster.dig("169.254.20.10", 40401, false, "web.shop.svc.cluster.local"),
        WEB_SHOP
    );
    let through = conn(Proto::Udp, 40401, "169.254.20.10");
    assert!(
        !events.wait_for(&through, Duration::from_millis(500)),
        "conntrack tracked {through:?}: {:?}",
        events.find(&through)
    );
    cache.terminate();
    let status = cache
        .wait_exit(Duration::from_secs(30))
        .expect("node-cache exits");
    assert!(status.success(), "{status}\n{}", cache.log());
    assert_eq!(
        rules_in(&cluster.node, "iptables-legacy-save"),
        Vec::<String>::new()
    );
}

#[test]
fn node_cache_skipteardown_leaves_interface_and_rules() {
    let test = "node_cache_skipteardown_leaves_interface_and_rules";
    if unavailable(test) {
        return;
    }
    let cluster = Cluster::new();
    let files = Files::new(&installed_template());
    let mut cache = cluster.node_cache(&files, &["-skipteardown", "--link-kind", "bridge"]);
    cache.terminate();
    let status = cache
        .wait_exit(Duration::from_secs(30))
        .expect("node-cache exits");
    assert!(status.success(), "{status}\n{}", cache.log());
    assert!(link_addresses(&cluster.node, "nodelocaldns").is_some());
    assert_eq!(iptables_rules(&cluster.node), expected_rules());
}

#[test]
fn node_cache_nftables_table_is_kept_up_and_removed() {
    let test = "node_cache_nftables_table_is_kept_up_and_removed";
    if unavailable(test) {
        return;
    }
    let cluster = Cluster::new();
    let files = Files::new(&installed_template());
    let mut cache = cluster.node_cache(
        &files,
        &[
            "-syncinterval",
            "1",
            "--netfilter",
            "nftables",
            "--link-kind",
            "bridge",
        ],
    );
    let list = || {
        cluster
            .node
            .exec("nft", &["list", "table", "ip", "nodelocaldns"])
    };
    let table = String::from_utf8_lossy(&list().stdout).into_owned();
    assert_eq!(
        table
            .matches("comment \"NodeLocal DNS Cache: skip conntrack\"")
            .count(),
        16
    );
    assert_eq!(
        table
            .matches("comment \"NodeLocal DNS Cache: allow DNS traffic\"")
            .count(),
        8
    );
    assert!(
        table.contains("ip daddr 169.254.20.10 udp dport 53 notrack"),
        "{table}"
    );
    assert!(
        table.contains("type filter hook prerouting priority raw; policy accept;"),
        "{table}"
    );
    // Through the local address: answered, as with iptables.
    assert_eq!(
        cluster.dig("169.254.20.10", 40301, false, "web.shop.svc.cluster.local"),
        WEB_SHOP
    );
    // A chain flushed by hand is loaded again within the sync interval.
    cluster.node.exec_ok(
        "nft",
        &["flush", "chain", "ip", "nodelocaldns", "raw_prerouting"],
    );
    assert!(
        eventually(Duration::from_secs(10), || {
            String::from_utf8_lossy(&list().stdout) == table
        }),
        "the flushed chain did not come back"
    );
    cache.terminate();
    let status = cache
        .wait_exit(Duration::from_secs(30))
        .expect("node-cache exits");
    assert!(status.success(), "{status}\n{}", cache.log());
    assert!(!list().status.success(), "the nodelocaldns table is left");
    assert_eq!(link_addresses(&cluster.node, "nodelocaldns"), None);
}

/// A stub domain's nameserver in the node: `clusterdns serve` answering `www.example.test`
/// from a hosts file on 10.96.0.12.
fn stub_server(node: &Netns, files: &Files) -> TestServer {
    node.ip(&["addr add 10.96.0.12/32 dev lo"]);
    std::fs::write(files.path("hosts"), "192.0.2.7 www.example.test\n").unwrap();
    let corefile = format!(
        "example.test:53 {{\n    bind 10.96.0.12\n    hosts {} {{\n        ttl 60\n    }}\n}}\n",
        files.path("hosts").display()
    );
    std::fs::write(files.path("stub.Corefile"), corefile).unwrap();
    let path = files.path("stub.Corefile").display().to_string();
    TestServer::start_with(node.command(binary(), &[]), &["serve", "--corefile", &path])
}

/// node-cache's own metric, read in the node with curl.
fn setup_errors(node: &Netns, cache: &TestServer, errortype: &str) -> String {
    let needle = "listening for node-cache metrics on http://";
    cache.wait_log(needle, Duration::from_secs(10));
    let log = cache.log();
    let url = log
        .lines()
        .find_map(|line| line.split(needle).nth(1))
        .unwrap()
        .trim()
        .to_owned();
    let url = format!("http://{url}");
    let body = node.exec_ok("curl", &["-sf", &url]);
    let series = format!("coredns_nodecache_setup_errors_total{{errortype=\"{errortype}\"}} ");
    body.lines()
        .find_map(|line| line.strip_prefix(&series))
        .unwrap_or_else(|| panic!("no {series} in:\n{body}"))
        .to_owned()
}

#[test]
fn node_cache_follows_the_kube_dns_configmap() {
    let test = "node_cache_follows_the_kube_dns_configmap";
    if unavailable(test) {
        return;
    }
    if let Some(problem) = netns::missing_tools(&["curl"]) {
        netns::unavailable(test, &problem, Missing::SkipUnlessRequired);
        return;
    }
    let cluster = Cluster::new();
    let files = Files::new(&installed_template());
    let _stub = stub_server(&cluster.node, &files);
    let pidfile = files.path("node-cache.pid");
    let pidfile_arg = pidfile.display().to_string();
    let cache = cluster.node_cache(
        &files,
        &[
            "-pidfile",
            &pidfile_arg,
            "-syncinterval",
            "1",
            "--link-kind",
            "bridge",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(&pidfile).unwrap(),
        format!("{}\n", cache.pid()),
        "-pidfile"
    );
    // Not a stub domain yet: the root block's upstream (the node's resolv.conf, unreachable
    // here) has no answer.
    assert_eq!(
        cluster.dig("169.254.20.10", 40401, false, "www.example.test"),
        ""
    );

    // The ConfigMap gains a stub domain: the Corefile gets node-cache's block for it and the
    // running cache answers from its nameserver.
    std::fs::write(
        files.path("kube-dns/stubDomains"),
        r#"{"example.test": ["10.96.0.12"]}"#,
    )
    .unwrap();
    cache.signal("USR1");
    cache.wait_log("Updated Corefile", Duration::from_secs(10));
    let written = std::fs::read_to_string(files.path("Corefile")).unwrap();
    assert!(
        written.ends_with(
            "\nexample.test:53 {\n    errors\n    cache 30\n    bind 169.254.20.10 10.96.0.10\n    \
             forward . 10.96.0.12\n}\n"
        ),
        "{written}"
    );
    assert_eq!(
        cluster.dig("169.254.20.10", 40402, false, "www.example.test"),
        "www.example.test. IN A 192.0.2.7\n"
    );
    assert_eq!(setup_errors(&cluster.node, &cache, "configmap"), "0");

    // A bad change is counted and the running configuration stays.
    std::fs::write(
        files.path("kube-dns/stubDomains"),
        r#"{"example.test": "10.96.0.12"}"#,
    )
    .unwrap();
    cache.signal("USR1");
    cache.wait_log(
        "Invalid config, the running one stays",
        Duration::from_secs(10),
    );
    assert_eq!(setup_errors(&cluster.node, &cache, "configmap"), "1");
    assert_eq!(
        cluster.dig("10.96.0.10", 40403, true, "www.example.test"),
        "www.example.test. IN A 192.0.2.7\n"
    );
    assert_eq!(
        std::fs::read_to_string(files.path("Corefile")).unwrap(),
        written
    );
}

/// node-cache's twelve rules for one IPv6 address, as `ip6tables-save` lists them.
const NODE_CACHE_RULES_V6: &str = r#"
raw -A PREROUTING -d fd00::a/128 -p udp -m udp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A PREROUTING -d fd00::a/128 -p tcp -m tcp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -s fd00::a/128 -p tcp -m tcp --sport 8080 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -d fd00::a/128 -p tcp -m tcp --dport 8080 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -d fd00::a/128 -p udp -m udp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -d fd00::a/128 -p tcp -m tcp --dport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -s fd00::a/128 -p udp -m udp --sport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
raw -A OUTPUT -s fd00::a/128 -p tcp -m tcp --sport 53 -m comment --comment "NodeLocal DNS Cache: skip conntrack" -j NOTRACK
filter -A INPUT -d fd00::a/128 -p udp -m udp --dport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
filter -A INPUT -d fd00::a/128 -p tcp -m tcp --dport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
filter -A OUTPUT -s fd00::a/128 -p udp -m udp --sport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
filter -A OUTPUT -s fd00::a/128 -p tcp -m tcp --sport 53 -m comment --comment "NodeLocal DNS Cache: allow DNS traffic" -j ACCEPT
"#;

#[test]
fn node_cache_ipv6_address_rules_and_answers() {
    let test = "node_cache_ipv6_address_rules_and_answers";
    if unavailable(test) {
        return;
    }
    ipv6_node_cache("node6", None);
}

/// The same with the rules as an nftables table of the `ip6` family (a node without
/// iptables): node-cache's rules, a notrack for each, answered through the address, gone at
/// exit.
#[test]
fn node_cache_ipv6_nftables_table_answers_and_goes() {
    let test = "node_cache_ipv6_nftables_table_answers_and_goes";
    if unavailable(test) {
        return;
    }
    ipv6_node_cache("node6nft", Some("nftables"));
}

/// node-cache on `fd00::a` in a node of its own (kube-dns on `fd00::11`), its rules written
/// by `netfilter` (`--netfilter`; none: the default, iptables here): the link, the rules, an
/// answer through the address, and nothing left after exit.
fn ipv6_node_cache(name: &str, netfilter: Option<&str>) {
    let node = Netns::new(name).unwrap();
    node.ip(&["addr add fd00::11/128 dev lo nodad"]);
    let shop = fixture("shop.json").display().to_string();
    let _kube_dns = TestServer::start_with(
        node.command(binary(), &[]),
        &["serve", "--objects", &shop, "--listen", "[fd00::11]:53"],
    );
    let files = Files::new(
        "cluster.local:53 {\n    bind __PILLAR__LOCAL__DNS__\n    forward . __PILLAR__CLUSTER__DNS__ {\n            force_tcp\n    }\n    cache 30\n}\n",
    );
    let mut args = files.args("fd00::a");
    args.extend(["--link-kind", "bridge"].map(str::to_owned));
    if let Some(netfilter) = netfilter {
        args.extend(["--netfilter", netfilter].map(str::to_owned));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut command = node.command(binary(), &[]);
    command.env("KUBE_DNS_UPSTREAM_SERVICE_HOST", "fd00::11");
    let mut cache = TestServer::start_with(command, &args);
    cache.wait_log("node-cache rules in place", Duration::from_secs(30));

    // The link is up (an IPv6 address needs it), so it has its link-local address too.
    let addresses = link_addresses(&node, "nodelocaldns").expect("the interface");
    let global: Vec<&String> = addresses
        .iter()
        .filter(|a| !a.starts_with("fe80:"))
        .collect();
    assert_eq!(global, ["fd00::a/128"]);
    let nft_table = || node.exec("nft", &["list", "table", "ip6", "nodelocaldns"]);
    let ip6tables_rules = || {
        node.exec_ok("ip6tables-save", &[])
            .contains("NodeLocal DNS Cache")
    };
    if netfilter == Some("nftables") {
        let table = String::from_utf8_lossy(&nft_table().stdout).into_owned();
        let notrack = "comment \"NodeLocal DNS Cache: skip conntrack\"";
        let accept = "comment \"NodeLocal DNS Cache: allow DNS traffic\"";
        assert_eq!(table.matches(notrack).count(), 8, "{table}");
        assert_eq!(table.matches(accept).count(), 4, "{table}");
        assert!(
            table.contains("ip6 daddr fd00::a udp dport 53 notrack"),
            "{table}"
        );
        assert!(!ip6tables_rules(), "no ip6tables rule beside the table");
    } else {
        let save = node.exec_ok("ip6tables-save", &[]);
        let mut table = "";
        let mut rules = Vec::new();
        for line in save.lines() {
            if let Some(name) = line.strip_prefix('*') {
                table = name;
            } else if line.contains("NodeLocal DNS Cache") {
                rules.push(format!("{table} {line}"));
            }
        }
        let expected: Vec<&str> = NODE_CACHE_RULES_V6
            .lines()
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(rules, expected);
    }
    let answer = node.exec_ok(
        "dig",
        &[
            "@fd00::a",
            "+noall",
            "+answer",
            "+nottlid",
            "+tries=1",
            "+time=5",
            "web.shop.svc.cluster.local",
            "A",
        ],
    );
    let answer: String = answer
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" ") + "\n")
        .collect();
    assert_eq!(answer, WEB_SHOP);

    cache.terminate();
    let status = cache
        .wait_exit(Duration::from_secs(30))
        .expect("node-cache exits");
    assert!(status.success(), "{status}\n{}", cache.log());
    assert_eq!(link_addresses(&node, "nodelocaldns"), None);
    assert!(!ip6tables_rules(), "ip6tables rules are left");
    assert!(
        !nft_table().status.success(),
        "the ip6 nodelocaldns table is left"
    );
}
