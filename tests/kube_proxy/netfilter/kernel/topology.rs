//! The network a ruleset runs in: a `client` outside the node, the `node` that holds the
//! ruleset, the `pods` (every endpoint address, in one namespace behind a veth, as a CNI
//! puts pods behind the node) and a `sink` the node's default route leads to, where a packet
//! no rule rewrote goes and is silently lost (as it would be toward a real default gateway
//! for a Service address nobody owns).
//!
//! ```text
//!   client ── eth0 ═══ eth0 ── node ── pods0 ═══ eth0 ── pods (10.244.0.0/16, /32 routes)
//!   (CLIENT/24, sources /32)   (NODE/24)  └── sink0 ═══ eth0 ── sink (default route)
//! ```
//!
//! The node's side of the pods' link has a link-local address (169.254.1.1) that the pods
//! use as their gateway, as Calico does, so that no pod address is the node's.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::Duration;

use crate::common::netns::{Conn, Events, Netns, Prober, Proto, Seen};

/// The node's address on the pods' link, their gateway.
const POD_GATEWAY: &str = "169.254.1.1";
/// The node's address toward the sink.
const SINK_NEAR: Ipv4Addr = Ipv4Addr::new(198, 18, 255, 1);
/// The sink's address, the node's default gateway.
const SINK_FAR: &str = "198.18.255.2";
/// How long a probe waits for an answer before it counts as silence (a drop). Everything
/// here is one host: a SYN-ACK, a RST or an ICMP error comes back in microseconds.
const ANSWER_TIMEOUT: Duration = Duration::from_millis(600);
/// The most connections sent at once from one side.
const BATCH: usize = 600;
/// How many times a batch is sent before lost events fail the test.
const ATTEMPTS: usize = 3;
/// How long the harness waits for conntrack's event about a canary connection.
const EVENT_TIMEOUT: Duration = Duration::from_secs(5);

/// The form a ruleset file is in, which decides the tool that loads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Format {
    /// `iptables-save` output (or `iptables-restore` input with its jumps).
    Iptables,
    /// kube-proxy's own `iptables-restore` input, which holds no jump from the built-in
    /// chains: loaded as kube-proxy loads it (`--noflush`), then those jumps installed as it
    /// installs them ([`KUBE_PROXY_JUMPS`]).
    IptablesRestore,
    /// `nft list table` output or an `nft -f` transaction.
    Nft,
}

/// What the topology must hold for one ruleset.
pub(super) struct Spec {
    /// The node's address (NodePorts are sent to it; `--from` for probes from the node).
    pub node_ip: Ipv4Addr,
    /// The client's main address, in the node's /24.
    pub client_ip: Ipv4Addr,
    /// Other source addresses the client sends from (inside a LoadBalancer's source
    /// ranges), routed to the client by the node.
    pub extra_sources: Vec<Ipv4Addr>,
    /// The endpoints' addresses: the pods namespace owns them and the node routes them there
    /// (the node's own address and loopback stay on the node).
    pub endpoints: Vec<Ipv4Addr>,
    /// `net.ipv4.conf.all.route_localnet=1`, as kube-proxy's iptables mode sets it (for its
    /// localhost NodePorts); its nftables mode leaves it alone.
    pub route_localnet: bool,
}

/// The kernel's outcome for one connection, read from conntrack and the sending socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// Confirmed by conntrack: `dnat` is where the destination was rewritten to (`None`:
    /// kept), `snat` whether the source was.
    Accepted {
        dnat: Option<(IpAddr, u16)>,
        snat: bool,
    },
    /// Never confirmed, and the sender got an error (`ECONNREFUSED` for REJECT's ICMP port
    /// unreachable, ...): rejected.
    Refused(String),
    /// Never confirmed, and nothing came back: dropped.
    Silent,
    /// Never confirmed, yet answered: nothing kube-proxy writes does this (NOTRACK).
    Untracked,
}

/// The namespaces of one ruleset's run, with the prober in each sender and the node's
/// conntrack events. Processes come first so they end before their namespaces go.
pub(super) struct Topology {
    client_prober: Prober,
    node_prober: Prober,
    events: Events,
    /// The next source port to hand out: every connection has its own.
    next_port: u16,
    _namespaces: [Netns; 4],
}

impl Topology {
    /// Makes the namespaces and links for `spec`, loads `ruleset` into the node and starts
    /// listening; `Err` with the tool's message when the ruleset does not load.
    pub fn build(spec: Spec, ruleset: &Path, format: Format) -> Result<Self, String> {
        let make = |role| Netns::new(role).unwrap_or_else(|e| panic!("namespace {role}: {e}"));
        let [client, node, pods, sink] = ["client", "node", "pods", "sink"].map(make);
        wire(&spec, &client, &node, &pods, &sink);
        load(&node, ruleset, format)?;
        let mut topology = Self {
            client_prober: Prober::start(&client),
            node_prober: Prober::start(&node),
            events: Events::start(&node),
            next_port: 10_000,
            _namespaces: [client, node, pods, sink],
        };
        topology.canary("the conntrack listener started");
        Ok(topology)
    }

    /// A fresh source port.
    fn port(&mut self) -> u16 {
        let port = self.next_port;
        self.next_port = port.checked_add(1).expect("out of source ports");
        port
    }

    /// Opens `from_client` in the client and `from_node` on the node and says what the
    /// kernel did with each (in order). Source ports are handed out here (every connection
    /// gets its own; the `sport` given is ignored). Connections go in batches of at most
    /// [`BATCH`] per side, both sides at once; a batch whose conntrack events were lost
    /// is sent again on fresh ports.
    pub fn run(&mut self, from_client: &[Conn], from_node: &[Conn]) -> (Vec<Kernel>, Vec<Kernel>) {
        let (mut client, mut node) = (Vec::new(), Vec::new());
        let batches = from_client.len().max(from_node.len()).div_ceil(BATCH);
        for k in 0..batches {
            let part = |conns: &[Conn]| -> Vec<Conn> {
                conns.iter().skip(k * BATCH).take(BATCH).copied().collect()
            };
            let (c, n) = self.batch(part(from_client), part(from_node));
            client.extend(c);
            node.extend(n);
        }
        (client, node)
    }

    /// One batch, sent again (up to [`ATTEMPTS`] times) while events are lost.
    fn batch(&mut self, mut client: Vec<Conn>, mut node: Vec<Conn>) -> (Vec<Kernel>, Vec<Kernel>) {
        for _ in 0..ATTEMPTS {
            for conn in client.iter_mut().chain(node.iter_mut()) {
                conn.sport = self.port();
            }
            let (seen_client, seen_node) = std::thread::scope(|s| {
                let (client_prober, node_prober) = (&mut self.client_prober, &mut self.node_prober);
                let a = s.spawn(|| client_prober.probe(&client, ANSWER_TIMEOUT));
                let b = node_prober.probe(&node, ANSWER_TIMEOUT);
                (a.join().expect("the client's prober thread"), b)
            });
            // The listener reports a loss in order with the events, so once the canary's
            // event is in, any loss before it has been seen.
            self.canary("the probes' events delivered");
            if self.events.lost() {
                eprintln!("conntrack events were lost (ENOBUFS): sending the batch again");
                continue;
            }
            let judge = |conns: &[Conn], seen: Vec<Seen>| -> Vec<Kernel> {
                conns
                    .iter()
                    .zip(seen)
                    .map(|(c, s)| self.judge(c, s))
                    .collect()
            };
            return (judge(&client, seen_client), judge(&node, seen_node));
        }
        panic!("conntrack events were lost in {ATTEMPTS} attempts at a batch");
    }

    /// One connection's outcome: conntrack's entry if it confirmed one, else the socket's.
    fn judge(&self, conn: &Conn, seen: Seen) -> Kernel {
        match (self.events.find(conn), seen) {
            (Some(entry), _) => Kernel::Accepted {
                dnat: entry.dnat(),
                snat: entry.snat(),
            },
            (None, Seen::Error(errno)) => Kernel::Refused(errno),
            (None, Seen::Silent) => Kernel::Silent,
            (None, Seen::Answered) => Kernel::Untracked,
        }
    }

    /// Sends a UDP datagram from the node to the sink and waits for conntrack's event about
    /// it: events are delivered in order, so every connection before it has been reported.
    fn canary(&mut self, what: &str) {
        let conn = Conn {
            proto: Proto::Udp,
            src: IpAddr::V4(SINK_NEAR),
            sport: self.port(),
            dst: SINK_FAR.parse().expect("the sink's address"),
            dport: 9,
        };
        self.node_prober.probe(&[conn], Duration::ZERO);
        assert!(
            self.events.wait_for(&conn, EVENT_TIMEOUT),
            "{what}: no conntrack event for the canary {conn:?} in {EVENT_TIMEOUT:?} (does the \
             ruleset make conntrack track this namespace?)"
        );
    }
}

/// Links, addresses, routes and sysctls of the four namespaces.
fn wire(spec: &Spec, client: &Netns, node: &Netns, pods: &Netns, sink: &Netns) {
    client.veth("eth0", node, "eth0");
    node.veth("pods0", pods, "eth0");
    node.veth("sink0", sink, "eth0");
    let (node_ip, client_ip) = (spec.node_ip, spec.client_ip);
    let mut client_cmds = vec![format!("addr add {client_ip}/24 dev eth0")];
    let mut node_cmds = vec![
        format!("addr add {node_ip}/24 dev eth0"),
        format!("addr add {POD_GATEWAY}/32 dev pods0"),
        format!("addr add {SINK_NEAR}/32 dev sink0"),
        "route add 10.244.0.0/16 dev pods0".to_owned(),
        format!("route add {SINK_FAR}/32 dev sink0"),
        format!("route add default via {SINK_FAR} dev sink0"),
    ];
    for source in &spec.extra_sources {
        client_cmds.push(format!("addr add {source}/32 dev eth0"));
        node_cmds.push(format!("route add {source}/32 via {client_ip} dev eth0"));
    }
    client_cmds.push(format!("route add default via {node_ip}"));
    let mut pod_cmds = vec![
        format!("route add {POD_GATEWAY}/32 dev eth0"),
        format!("route add default via {POD_GATEWAY} dev eth0"),
    ];
    for endpoint in pod_addresses(spec) {
        pod_cmds.push(format!("addr add {endpoint}/32 dev eth0"));
        node_cmds.push(format!("route replace {endpoint}/32 dev pods0"));
    }
    let sink_cmds = [
        format!("addr add {SINK_FAR}/32 dev eth0"),
        format!("route add {SINK_NEAR}/32 dev eth0"),
    ];
    client.ip(&strs(&client_cmds));
    node.ip(&strs(&node_cmds));
    pods.ip(&strs(&pod_cmds));
    sink.ip(&strs(&sink_cmds));
    sysctls(spec, [client, node, pods, sink]);
}

/// The endpoint addresses the pods namespace owns: all but the node's own and loopback.
fn pod_addresses(spec: &Spec) -> Vec<Ipv4Addr> {
    let mut addresses: Vec<Ipv4Addr> = spec
        .endpoints
        .iter()
        .copied()
        .filter(|a| *a != spec.node_ip && !a.is_loopback())
        .collect();
    addresses.sort();
    addresses.dedup();
    assert!(
        !addresses.contains(&spec.client_ip)
            && !addresses.iter().any(|a| spec.extra_sources.contains(a)),
        "an endpoint has a client's address: choose other client addresses"
    );
    addresses
}

/// `&str` views of owned command lines.
fn strs(cmds: &[String]) -> Vec<&str> {
    cmds.iter().map(String::as_str).collect()
}

/// Forwarding on the node, no reverse-path filter anywhere (sources arrive from several
/// links), and no ICMP rate limit: a node that rejects many probes in a burst would
/// otherwise fall silent after the first few, and a reject would read as a drop.
fn sysctls(spec: &Spec, namespaces: [&Netns; 4]) {
    let common = [
        "net.ipv4.conf.all.rp_filter=0",
        "net.ipv4.conf.default.rp_filter=0",
        "net.ipv4.icmp_ratelimit=0",
        "net.ipv4.icmp_msgs_per_sec=1000000",
        "net.ipv4.icmp_msgs_burst=1000000",
    ];
    for (i, ns) in namespaces.into_iter().enumerate() {
        let mut settings = common.to_vec();
        if i == 1 {
            settings.push("net.ipv4.ip_forward=1");
            if spec.route_localnet {
                settings.push("net.ipv4.conf.all.route_localnet=1");
            }
        }
        ns.sysctl(&settings);
    }
}

/// The jumps kube-proxy v1.36 installs from the built-in chains, in the order it installs
/// them, each prepended (`iptables -I CHAIN 1`): its proxier's `iptablesJumpChains`, then
/// `iptablesKubeletJumpChains` (pkg/proxy/iptables/proxier.go). Written here from its source,
/// apart from what `proxy trace` assumes, so the kernel is the judge of that too.
const KUBE_PROXY_JUMPS: &[(&str, &str, &[&str])] = &[
    (
        "filter",
        "INPUT",
        &[
            "-m",
            "conntrack",
            "--ctstate",
            "NEW",
            "-m",
            "comment",
            "--comment",
            "kubernetes externally-visible service portals",
            "-j",
            "KUBE-EXTERNAL-SERVICES",
        ],
    ),
    (
        "filter",
        "FORWARD",
        &[
            "-m",
            "conntrack",
            "--ctstate",
            "NEW",
            "-m",
            "comment",
            "--comment",
            "kubernetes externally-visible service portals",
            "-j",
            "KUBE-EXTERNAL-SERVICES",
        ],
    ),
    (
        "filter",
        "INPUT",
        &[
            "-m",
            "comment",
            "--comment",
            "kubernetes health check service ports",
            "-j",
            "KUBE-NODEPORTS",
        ],
    ),
    (
        "filter",
        "FORWARD",
        &[
            "-m",
            "conntrack",
            "--ctstate",
            "NEW",
            "-m",
            "comment",
            "--comment",
            "kubernetes service portals",
            "-j",
            "KUBE-SERVICES",
        ],
    ),
    (
        "filter",
        "OUTPUT",
        &[
            "-m",
            "conntrack",
            "--ctstate",
            "NEW",
            "-m",
            "comment",
            "--comment",
            "kubernetes service portals",
            "-j",
            "KUBE-SERVICES",
        ],
    ),
    (
        "filter",
        "FORWARD",
        &[
            "-m",
            "comment",
            "--comment",
            "kubernetes forwarding rules",
            "-j",
            "KUBE-FORWARD",
        ],
    ),
    (
        "filter",
        "INPUT",
        &[
            "-m",
            "conntrack",
            "--ctstate",
            "NEW",
            "-m",
            "comment",
            "--comment",
            "kubernetes load balancer firewall",
            "-j",
            "KUBE-PROXY-FIREWALL",
        ],
    ),
    (
        "filter",
        "OUTPUT",
        &[
            "-m",
            "conntrack",
            "--ctstate",
            "NEW",
            "-m",
            "comment",
            "--comment",
            "kubernetes load balancer firewall",
            "-j",
            "KUBE-PROXY-FIREWALL",
        ],
    ),
    (
        "filter",
        "FORWARD",
        &[
            "-m",
            "conntrack",
            "--ctstate",
            "NEW",
            "-m",
            "comment",
            "--comment",
            "kubernetes load balancer firewall",
            "-j",
            "KUBE-PROXY-FIREWALL",
        ],
    ),
    (
        "nat",
        "OUTPUT",
        &[
            "-m",
            "comment",
            "--comment",
            "kubernetes service portals",
            "-j",
            "KUBE-SERVICES",
        ],
    ),
    (
        "nat",
        "PREROUTING",
        &[
            "-m",
            "comment",
            "--comment",
            "kubernetes service portals",
            "-j",
            "KUBE-SERVICES",
        ],
    ),
    (
        "nat",
        "POSTROUTING",
        &[
            "-m",
            "comment",
            "--comment",
            "kubernetes postrouting rules",
            "-j",
            "KUBE-POSTROUTING",
        ],
    ),
    ("filter", "INPUT", &["-j", "KUBE-FIREWALL"]),
    ("filter", "OUTPUT", &["-j", "KUBE-FIREWALL"]),
];

/// Installs [`KUBE_PROXY_JUMPS`] in `node` as kube-proxy does after its restore.
fn install_kube_proxy_jumps(node: &Netns) -> Result<(), String> {
    for (table, chain, rule) in KUBE_PROXY_JUMPS {
        let mut args = vec!["-w", "-t", table, "-I", chain, "1"];
        args.extend_from_slice(rule);
        let out = node.exec("iptables", &args);
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
    }
    Ok(())
}

/// Loads `ruleset` into `node` with the tool for its format.
fn load(node: &Netns, ruleset: &Path, format: Format) -> Result<(), String> {
    let file = ruleset.to_str().expect("a UTF-8 path");
    if format != Format::Nft {
        // kube-proxy's `-m nfacct` rules load only where their counters exist.
        let text = std::fs::read_to_string(ruleset).expect("read the ruleset");
        let mut counters: Vec<&str> = text
            .split("--nfacct-name")
            .skip(1)
            .filter_map(|rest| rest.split_whitespace().next())
            .collect();
        counters.sort_unstable();
        counters.dedup();
        if !counters.is_empty() {
            node.nfacct(&counters);
        }
    }
    let out = match format {
        Format::Iptables => node.exec("iptables-restore", &[file]),
        Format::IptablesRestore => node.exec("iptables-restore", &["--noflush", file]),
        Format::Nft => node.exec("nft", &["-f", file]),
    };
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    if format == Format::IptablesRestore {
        install_kube_proxy_jumps(node)?;
    }
    Ok(())
}
