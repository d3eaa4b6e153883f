//! `cargo xtask bench node-cache`: NodeLocal DNSCache on a "node" that is a network namespace
//! of the bench's own, clusterdns's `node-cache` against CoreDNS running the same Corefile on
//! the same address, in one run (issue 50's targets that need no real node; bench/README.md,
//! "NodeLocal DNSCache").
//!
//! Three namespaces, made by the bench and removed at its end (no traffic leaves them):
//!
//! - *upstream*: kube-dns's stand-in (`clusterdns serve --objects`, gencluster's cluster) on
//!   `kube-dns-upstream`'s ClusterIP 10.96.0.11, and knotd serving `example.test` (the names
//!   outside the cluster) on 10.96.0.53, both pinned to the client CPU;
//! - *node*: the cache under test on 169.254.20.10 and 10.96.0.10, pinned to the server CPU,
//!   with a veth to each other namespace, forwarding between them, the node's resolv.conf
//!   (`/etc/netns/NODE/resolv.conf`, which `ip netns exec` mounts) naming 10.96.0.53, and a
//!   conntrack rule as a real node's kube-proxy has, so that conntrack tracks its traffic;
//! - *client*: the "pod", where dnsperf runs, pinned to the client CPU.
//!
//! In turn: (a) `clusterdns node-cache` with nodelocaldns.yaml's flags and its Corefile
//! template (the ConfigMap's, the installer's three variables filled), making the interface
//! (a bridge: this kernel has no dummy link type) and node-cache's rules; (b) CoreDNS on the
//! Corefile clusterdns wrote, on the interface and rules that `clusterdns node-cache
//! -skipteardown` leaves behind (CoreDNS makes neither): the same rules for both. Each is
//! measured the same way: RSS idle; cluster names asked once (misses, forwarded over TCP to
//! kube-dns) and at once again (cached); external names filled, then asked at a low fixed
//! rate (cached); saturation (`dnsperf -T 4 -c 8 -q 200`) on the cached external names for
//! queries per server CPU-second; RSS after; the conntrack entries the client's queries to
//! the local addresses left in the node's table (a query to kube-dns's ClusterIP, which no
//! rule covers, is the control that the table is kept).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{
    Build, Latency, Machine, Output, OwnVersion, Server, dnsperf_counts, first_line, keeps, knob,
    knot_conf, log, p50_p99, percentiles_of, ratio, row, run_to_file, stamp_of, thousands,
    write_json,
};

/// The `bench` of this bench's JSON documents.
pub const KIND: &str = "node-cache";

/// The link-local address NodeLocal DNSCache serves on.
pub const LOCAL_IP: &str = "169.254.20.10";
/// kube-dns's ClusterIP, the second local address of the manifest's set-up.
pub const KUBE_DNS_IP: &str = "10.96.0.10";
/// `kube-dns-upstream`'s ClusterIP: where kube-dns's stand-in listens.
pub const UPSTREAM_IP: &str = "10.96.0.11";
/// The upstream for names outside the cluster (the node's resolv.conf names it).
pub const EXTERNAL_IP: &str = "10.96.0.53";

/// NodeLocal DNSCache's Corefile template as the add-on's node-local-dns ConfigMap holds it
/// (deploy/nodelocaldns/node-local-dns.yaml has the same, held to it by a unit test; the
/// tests of tests/node_cache use this one), its three variables unfilled.
pub const MANIFEST_TEMPLATE: &str = "__PILLAR__DNS__DOMAIN__:53 {
    errors
    cache {
            success 9984 30
            denial 9984 5
    }
    reload
    loop
    bind __PILLAR__LOCAL__DNS__ __PILLAR__DNS__SERVER__
    forward . __PILLAR__CLUSTER__DNS__ {
            force_tcp
    }
    prometheus :9253
    health __PILLAR__LOCAL__DNS__:8080
    }
in-addr.arpa:53 {
    errors
    cache 30
    reload
    loop
    bind __PILLAR__LOCAL__DNS__ __PILLAR__DNS__SERVER__
    forward . __PILLAR__CLUSTER__DNS__ {
            force_tcp
    }
    prometheus :9253
    }
ip6.arpa:53 {
    errors
    cache 30
    reload
    loop
    bind __PILLAR__LOCAL__DNS__ __PILLAR__DNS__SERVER__
    forward . __PILLAR__CLUSTER__DNS__ {
            force_tcp
    }
    prometheus :9253
    }
.:53 {
    errors
    cache 30
    reload
    loop
    bind __PILLAR__LOCAL__DNS__ __PILLAR__DNS__SERVER__
    forward . __PILLAR__UPSTREAM__SERVERS__
    prometheus :9253
    }
";

/// The template as the addon's installer leaves it for node-cache (`sed` of the local
/// address, the domain and kube-dns's ClusterIP); node-cache fills the other two.
pub fn installed_template() -> String {
    MANIFEST_TEMPLATE
        .replace("__PILLAR__LOCAL__DNS__", LOCAL_IP)
        .replace("__PILLAR__DNS__DOMAIN__", "cluster.local")
        .replace("__PILLAR__DNS__SERVER__", KUBE_DNS_IP)
}

/// The knobs, each a flag or the environment variable in capitals.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_arg("keep", keeps("Corefiles, logs, dnsperf outputs")))]
pub struct Options {
    /// Services of gencluster's cluster that kube-dns's stand-in serves [env: SERVICES]
    /// [default: 2000].
    #[arg(long)]
    pub services: Option<u32>,
    /// Cluster names asked once (misses), then again for 3 s (cached) [env: CLUSTER_NAMES]
    /// [default: 1000].
    #[arg(long)]
    pub cluster_names: Option<u32>,
    /// Names outside the cluster, in the external upstream's zone [env: NAMES] [default:
    /// 5000].
    #[arg(long)]
    pub names: Option<u32>,
    /// Seconds of the saturating and of the latency runs [env: DURATION] [default: 10].
    #[arg(long)]
    pub duration: Option<u32>,
    /// Seconds of the warm-up before the saturating run [env: WARMUP] [default: 3].
    #[arg(long)]
    pub warmup: Option<u32>,
    /// Lines of the external query file [env: QUERIES] [default: 100000].
    #[arg(long)]
    pub queries: Option<u32>,
    /// The fixed rate of the latency runs, one dnsperf socket [env: LATENCY_QPS] [default:
    /// 1000].
    #[arg(long)]
    pub latency_qps: Option<u32>,
    /// Seconds each server idles after it answers, before its idle RSS is read [env: IDLE]
    /// [default: 3].
    #[arg(long)]
    pub idle: Option<u32>,
    /// The CPU both caches are pinned to [env: SERVER_CPU] [default: 0].
    #[arg(long)]
    pub server_cpu: Option<u32>,
    /// The CPU dnsperf and the upstreams are pinned to [env: CLIENT_CPU] [default: 1].
    #[arg(long)]
    pub client_cpu: Option<u32>,
    /// The CoreDNS binary [env: COREDNS] [default: bench/peers/build.sh's].
    #[arg(long)]
    pub coredns: Option<PathBuf>,
    #[command(flatten)]
    pub build: Build,
    #[command(flatten)]
    pub output: Output,
}

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    pub services: u32,
    pub cluster_names: u32,
    pub names: u32,
    pub duration_s: u32,
    pub warmup_s: u32,
    pub queries: u32,
    pub latency_qps: u32,
    pub idle_s: u32,
    pub dnsperf_args: Vec<String>,
    pub latency_args: Vec<String>,
    pub server_cpu: u32,
    pub client_cpu: u32,
    /// [`super::BuildInputs`]'s two, not flattened: the two below come between them in the JSON.
    pub profile: String,
    /// nodelocaldns.yaml's arguments as clusterdns got them (the files' paths aside).
    pub node_cache_args: Vec<String>,
    /// Whether both ran with node-cache's rules (they do: CoreDNS on those clusterdns
    /// node-cache -skipteardown left).
    pub rules: bool,
    pub clusterdns: String,
    pub coredns: String,
}

/// What each program was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    #[serde(flatten)]
    pub own: OwnVersion,
    /// `coredns -version`'s first line: `CoreDNS-1.14.7`.
    pub coredns: String,
    pub knotd: String,
    pub dnsperf: String,
}

/// One cache's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Cluster names, each asked once: forwarded to kube-dns over TCP.
    pub cluster_miss: Latency,
    /// The same names at once again: from the cache.
    pub cluster_cached: Latency,
    /// Names outside the cluster, filled before, at `latency_qps`.
    pub external_cached: Latency,
    /// The saturating run on the cached external names.
    pub qps: f64,
    pub completed: u64,
    pub lost: u64,
    /// The server's utime+stime over the saturating run.
    pub cpu_s: f64,
    pub queries_per_cpu_s: Option<f64>,
    /// VmRSS after `idle_s` of idling once it answered, before any load.
    pub rss_idle_kb: u64,
    /// VmRSS after the runs.
    pub rss_after_kb: u64,
    /// Entries in the node's conntrack table from the client to a local address after the
    /// runs (UDP entries live 30 s there: any the runs made are still listed).
    pub conntrack_entries: u64,
}

/// clusterdns's figures over CoreDNS's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratios {
    pub p99_cluster_miss: Option<f64>,
    pub p99_cluster_cached: Option<f64>,
    pub p99_external_cached: Option<f64>,
    pub queries_per_cpu_s: Option<f64>,
    pub rss_idle: Option<f64>,
    pub rss_after: Option<f64>,
}

fn p99_ratio(a: &Latency, b: &Latency) -> Option<f64> {
    a.p99_ms.zip(b.p99_ms).and_then(|(a, b)| ratio(a, b))
}

impl Ratios {
    pub fn of(clusterdns: &Figures, coredns: &Figures) -> Self {
        Self {
            p99_cluster_miss: p99_ratio(&clusterdns.cluster_miss, &coredns.cluster_miss),
            p99_cluster_cached: p99_ratio(&clusterdns.cluster_cached, &coredns.cluster_cached),
            p99_external_cached: p99_ratio(&clusterdns.external_cached, &coredns.external_cached),
            queries_per_cpu_s: ratio(
                clusterdns.queries_per_cpu_s.unwrap_or(0.0),
                coredns.queries_per_cpu_s.unwrap_or(0.0),
            ),
            rss_idle: ratio(clusterdns.rss_idle_kb as f64, coredns.rss_idle_kb as f64),
            rss_after: ratio(clusterdns.rss_after_kb as f64, coredns.rss_after_kb as f64),
        }
    }
}

/// Issue 50's targets this bench measures, each met or not by one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub figure: String,
    pub target: String,
    pub measured: String,
    /// None when a figure is missing.
    pub met: Option<bool>,
}

/// The targets, judged from a run's figures: p99 of each kind of lookup at most CoreDNS's,
/// RSS (idle and after the load) at most half of CoreDNS's, no conntrack entry.
pub fn targets(clusterdns: &Figures, ratios: &Ratios) -> Vec<Target> {
    let mut out = Vec::new();
    let mut ratio_target = |figure: &str, value: Option<f64>, limit: f64, target: &str| {
        out.push(Target {
            figure: figure.to_owned(),
            target: target.to_owned(),
            measured: value.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}×")),
            met: value.map(|v| v <= limit),
        });
    };
    ratio_target(
        "lookup p99, cluster names (first miss)",
        ratios.p99_cluster_miss,
        1.0,
        "≤ 1× CoreDNS's",
    );
    ratio_target(
        "lookup p99, cluster names (cached)",
        ratios.p99_cluster_cached,
        1.0,
        "≤ 1× CoreDNS's",
    );
    ratio_target(
        "lookup p99, names outside the cluster (cached)",
        ratios.p99_external_cached,
        1.0,
        "≤ 1× CoreDNS's",
    );
    ratio_target("RSS idle", ratios.rss_idle, 0.5, "≤ 0.5× CoreDNS's");
    ratio_target(
        "RSS after the load",
        ratios.rss_after,
        0.5,
        "≤ 0.5× CoreDNS's",
    );
    out.push(Target {
        figure: "conntrack entries from DNS through the local address".to_owned(),
        target: "0".to_owned(),
        measured: clusterdns.conntrack_entries.to_string(),
        met: Some(clusterdns.conntrack_entries == 0),
    });
    out
}

/// Names asked through both caches before measuring, their answers compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub asked: usize,
    /// Those whose answer sets differ between the two, or are empty.
    pub mismatches: usize,
    /// Whether node-cache wrote the Corefile of tests/fixtures/corefiles/distributions/
    /// nodelocaldns.Corefile (the manifest's, filled).
    pub corefile_as_expected: bool,
    /// The control: a query from the client to kube-dns's ClusterIP (no rule covers it)
    /// left an entry in the node's conntrack table.
    pub control_tracked: bool,
}

/// One run of the bench: the JSON document it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always "node-cache".
    pub bench: String,
    /// When it started, RFC 3339.
    pub started: String,
    pub inputs: Inputs,
    pub machine: Machine,
    pub versions: Versions,
    pub check: Check,
    pub clusterdns: Figures,
    pub coredns: Figures,
    pub ratios: Ratios,
    pub targets: Vec<Target>,
}

impl Options {
    /// The inputs these options and the environment ask for (the binaries still to be
    /// named).
    pub fn inputs(&self) -> Result<Inputs> {
        let names = knob(self.names, "NAMES", 5000)?;
        if names == 0 || names > super::cache::MAX_NAMES {
            bail!(
                "{names} names (NAMES, --names): from 1 to {}",
                super::cache::MAX_NAMES
            );
        }
        let services = knob(self.services, "SERVICES", 2000)?;
        let cluster_names = knob(self.cluster_names, "CLUSTER_NAMES", 1000)?;
        if services == 0 || cluster_names == 0 {
            bail!("SERVICES and CLUSTER_NAMES must be at least 1");
        }
        let latency_qps = knob(self.latency_qps, "LATENCY_QPS", 1000)?;
        Ok(Inputs {
            services,
            cluster_names,
            names,
            duration_s: knob(self.duration, "DURATION", 10)?,
            warmup_s: knob(self.warmup, "WARMUP", 3)?,
            queries: knob(self.queries, "QUERIES", 100_000)?,
            latency_qps,
            idle_s: knob(self.idle, "IDLE", 3)?,
            dnsperf_args: ["-T", "4", "-c", "8", "-q", "200"]
                .map(str::to_owned)
                .to_vec(),
            latency_args: latency_args(latency_qps),
            server_cpu: knob(self.server_cpu, "SERVER_CPU", 0)?,
            client_cpu: knob(self.client_cpu, "CLIENT_CPU", 1)?,
            profile: self.build.profile()?,
            node_cache_args: manifest_args(),
            rules: true,
            clusterdns: String::new(),
            coredns: String::new(),
        })
    }
}

/// dnsperf's flags for latency: one thread, one socket, at `qps`, every answer's latency.
pub fn latency_args(qps: u32) -> Vec<String> {
    [
        "-T",
        "1",
        "-c",
        "1",
        "-q",
        "20",
        "-Q",
        &qps.to_string(),
        "-v",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// nodelocaldns.yaml's arguments to node-cache (`-localip`, `-conf`, `-upstreamsvc`; the
/// health port is its default 8080).
pub fn manifest_args() -> Vec<String> {
    [
        "-localip",
        &format!("{LOCAL_IP},{KUBE_DNS_IP}"),
        "-conf",
        "/etc/Corefile",
        "-upstreamsvc",
        "kube-dns-upstream",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The names of a cluster's ClusterIP Services (`kubectl get -o json`'s List, as gencluster
/// writes it), at most `count`, each `NAME.NAMESPACE.svc.cluster.local`, in the file's order.
pub fn cluster_names(objects: &serde_json::Value, count: usize) -> Vec<String> {
    let items = objects["items"].as_array().map_or(&[][..], Vec::as_slice);
    items
        .iter()
        .filter(|item| item["kind"] == "Service")
        .filter(|item| {
            let spec = &item["spec"];
            spec["type"] != "ExternalName"
                && spec["clusterIP"]
                    .as_str()
                    .is_some_and(|ip| !ip.is_empty() && ip != "None")
        })
        .filter_map(|item| {
            let meta = &item["metadata"];
            Some(format!(
                "{}.{}.svc.cluster.local",
                meta["name"].as_str()?,
                meta["namespace"].as_str()?
            ))
        })
        .take(count)
        .collect()
}

/// The conntrack entries in a `/proc/net/nf_conntrack` listing whose original direction goes
/// from `src` to one of `addresses` (the first `src=` and `dst=` of each line): each as its
/// protocol and original tuple, `udp 10.0.0.2:40000 169.254.20.10:53`.
pub fn tracked(table: &str, src: &str, addresses: &[&str]) -> BTreeSet<String> {
    table
        .lines()
        .filter_map(|line| {
            let first = |key: &str| {
                line.split_whitespace()
                    .find_map(|word| word.strip_prefix(key))
            };
            let dst = first("dst=")?;
            if first("src=") != Some(src) || !addresses.contains(&dst) {
                return None;
            }
            let proto = line.split_whitespace().nth(2)?;
            Some(format!(
                "{proto} {src}:{} {dst}:{}",
                first("sport=").unwrap_or("-"),
                first("dport=").unwrap_or("-")
            ))
        })
        .collect()
}

/// A Corefile without its comment lines, for comparing it with a fixture that has some.
pub fn without_comments(text: &str) -> String {
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// A network namespace of the bench, `ncb-PID-ROLE`, deleted on drop (with its interfaces,
/// and its /etc/netns directory).
struct Netns {
    name: String,
}

impl Netns {
    fn new(role: &str) -> Result<Self> {
        let name = format!("ncb-{}-{role}", std::process::id());
        let status = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .context("running ip netns add")?;
        if !status.success() {
            bail!("ip netns add {name}: {status} (the bench needs root)");
        }
        let ns = Self { name };
        ns.ip("link set lo up")?;
        Ok(ns)
    }

    /// `ip -n NAME ARGS` (split at blanks).
    fn ip(&self, args: &str) -> Result<()> {
        let output = Command::new("ip")
            .args(["-n", &self.name])
            .args(args.split_whitespace())
            .output()
            .context("running ip")?;
        if !output.status.success() {
            bail!(
                "in {}: ip {args}: {}",
                self.name,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(())
    }

    /// A command running `program` inside the namespace.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name]).arg(program);
        command
    }

    /// `program args` inside, its stdout; fails unless it succeeds.
    fn run(&self, program: &str, args: &[&str]) -> Result<String> {
        let output = self
            .command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {program} in {}", self.name))?;
        if !output.status.success() {
            bail!(
                "in {}: {program} {args:?}: {}",
                self.name,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// The argument list that runs `program args...` inside, for [`Server::start`] (`ip`
    /// execs it: the server's pid is the program's).
    fn wrap(&self, program: &Path, args: &[&str]) -> Vec<std::ffi::OsString> {
        let mut out: Vec<std::ffi::OsString> = ["netns", "exec", &self.name]
            .iter()
            .map(Into::into)
            .collect();
        out.push(program.into());
        out.extend(args.iter().map(Into::into));
        out
    }

    fn etc(&self) -> PathBuf {
        PathBuf::from("/etc/netns").join(&self.name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(self.etc());
    }
}

/// The three namespaces, joined.
struct Topology {
    // Dropped in this order: the client, the node, the upstream.
    client: Netns,
    node: Netns,
    upstream: Netns,
}

impl Topology {
    fn new() -> Result<Self> {
        let upstream = Netns::new("upstream")?;
        let node = Netns::new("node")?;
        let client = Netns::new("client")?;
        let veth = |a: &Netns, an: &str, b: &Netns, bn: &str| -> Result<()> {
            a.ip(&format!(
                "link add {an} type veth peer name {bn} netns {}",
                b.name
            ))?;
            a.ip(&format!("link set {an} up"))?;
            b.ip(&format!("link set {bn} up"))
        };
        veth(&node, "nc0", &client, "eth0")?;
        veth(&node, "nu0", &upstream, "eth0")?;
        node.ip("addr add 10.0.0.1/24 dev nc0")?;
        node.ip("addr add 10.1.0.1/24 dev nu0")?;
        node.ip(&format!("route add {UPSTREAM_IP}/32 via 10.1.0.2"))?;
        node.ip(&format!("route add {EXTERNAL_IP}/32 via 10.1.0.2"))?;
        client.ip("addr add 10.0.0.2/24 dev eth0")?;
        client.ip(&format!("route add {LOCAL_IP}/32 via 10.0.0.1"))?;
        client.ip("route add 10.96.0.0/16 via 10.0.0.1")?;
        upstream.ip("addr add 10.1.0.2/24 dev eth0")?;
        upstream.ip(&format!("addr add {UPSTREAM_IP}/32 dev lo"))?;
        upstream.ip(&format!("addr add {EXTERNAL_IP}/32 dev lo"))?;
        upstream.ip("route add default via 10.1.0.1")?;
        node.run("sysctl", &["-qw", "net.ipv4.ip_forward=1"])?;
        // Conntrack tracks the node's traffic once a rule uses it, as kube-proxy's do.
        node.run(
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
        )?;
        std::fs::create_dir_all(node.etc())?;
        std::fs::write(
            node.etc().join("resolv.conf"),
            format!("nameserver {EXTERNAL_IP}\n"),
        )?;
        Ok(Self {
            client,
            node,
            upstream,
        })
    }

    /// The entries from the client to the local addresses, and to kube-dns's ClusterIP
    /// (the control), in the node's conntrack table.
    fn conntrack(&self) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
        let table = self.node.run("cat", &["/proc/net/nf_conntrack"])?;
        Ok((
            tracked(&table, "10.0.0.2", &[LOCAL_IP, KUBE_DNS_IP]),
            tracked(&table, "10.0.0.2", &[UPSTREAM_IP]),
        ))
    }
}

/// `dig @SERVER +short NAME A` in `ns`, the answers sorted, space-separated (empty: none).
fn short_answer(ns: &Netns, server: &str, name: &str) -> Result<String> {
    let at = format!("@{server}");
    let output = ns
        .command("dig")
        .args([&at, "+short", "+time=2", "+tries=1", name, "A"])
        .stdin(Stdio::null())
        .output()
        .context("running dig")?;
    let mut lines: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| !line.starts_with(';'))
        .map(str::to_owned)
        .collect();
    lines.sort();
    Ok(lines.join(" "))
}

/// Waits until `server` answers `name` from `ns` (up to `limit`), `process` still running.
fn wait_answers(
    process: &mut Server,
    ns: &Netns,
    server: &str,
    name: &str,
    limit: Duration,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        process.check_running()?;
        if !short_answer(ns, server, name)?.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "{} did not answer {name} on {server} within {} s",
                process.name,
                limit.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// bench/peers/build.sh's CoreDNS (`COREDNS` or `--coredns` names another).
pub fn coredns_binary(flag: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = flag {
        return Ok(path.to_owned());
    }
    if let Some(path) = std::env::var_os("COREDNS").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let script = crate::root().join("bench/peers/build.sh");
    let output = Command::new(&script)
        .arg("--dir")
        .output()
        .with_context(|| format!("running {} --dir", script.display()))?;
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()).join("coredns");
    if !output.status.success() || !path.is_file() {
        bail!("CoreDNS is not built: run bench/peers/build.sh (or set COREDNS)");
    }
    Ok(path)
}

/// Where a run's results went.
#[derive(Debug)]
pub struct Written {
    pub markdown: PathBuf,
    pub json: PathBuf,
    pub run: Run,
}

/// The files of one run, in the work directory.
struct Files {
    dir: PathBuf,
    cluster: PathBuf,
    fill: PathBuf,
    queries: PathBuf,
}

/// Runs the bench as `options` and the environment ask; writes the report and the JSON into
/// the output directory, and prints the report.
pub fn run(options: &Options) -> Result<Written> {
    let mut inputs = options.inputs()?;
    if !is_root() {
        bail!("the node-cache bench makes network namespaces and rules: run it as root");
    }
    let coredns = coredns_binary(options.coredns.as_deref())?;
    inputs.coredns = coredns.display().to_string();
    let super::Started {
        work,
        binaries,
        build,
        hz,
        out,
        at: started,
    } = super::start(
        KIND,
        &[
            "dnsperf", "knotd", "dig", "taskset", "setpriv", "ip", "iptables",
        ],
        &options.output,
        &options.build,
    )?;
    let dir = work.path().to_owned();
    inputs.clusterdns = build.clusterdns;

    // The cluster, its names, and the external upstream's zone.
    log(
        KIND,
        format!("kube-dns's stand-in: {} Services", inputs.services),
    );
    let objects = dir.join("objects/objects.json");
    std::fs::create_dir_all(dir.join("objects"))?;
    run_to_file(
        Command::new(&binaries.gencluster)
            .args(["--services", &inputs.services.to_string(), "--out"])
            .arg(&objects),
        &dir.join("gencluster.log"),
    )?;
    let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&objects)?)
        .context("gencluster's objects")?;
    let names = cluster_names(&value, inputs.cluster_names as usize);
    drop(value);
    if names.is_empty() {
        bail!("gencluster's cluster has no ClusterIP Service");
    }
    inputs.cluster_names = names.len() as u32;
    let files = Files {
        dir: dir.clone(),
        cluster: dir.join("cluster.txt"),
        fill: dir.join("fill.txt"),
        queries: dir.join("queries.txt"),
    };
    std::fs::write(
        &files.cluster,
        names.iter().map(|n| format!("{n} A\n")).collect::<String>(),
    )?;
    std::fs::write(&files.fill, super::cache::fill_file(inputs.names))?;
    std::fs::write(
        &files.queries,
        super::cache::query_file(inputs.names, inputs.queries),
    )?;
    std::fs::create_dir_all(dir.join("zones"))?;
    std::fs::write(
        dir.join("zones/example.test.zone"),
        super::cache::upstream_zone(inputs.names),
    )?;
    std::fs::write(
        dir.join("knot.conf"),
        knot_conf(&dir, 53, 1, &["example.test".to_owned()]).replacen(
            "listen: 127.0.0.1@53",
            &format!("listen: {EXTERNAL_IP}@53"),
            1,
        ),
    )?;
    std::fs::create_dir_all(dir.join("run"))?;
    std::fs::create_dir_all(dir.join("knot"))?;

    log(KIND, "namespaces: upstream, node, client");
    let net = Topology::new()?;
    let listen = format!("{UPSTREAM_IP}:53");
    let objects_arg = objects.display().to_string();
    let mut kube_dns = Server::start(
        "kube-dns's stand-in",
        53,
        inputs.client_cpu,
        Path::new("ip"),
        &os_refs(&net.upstream.wrap(
            &binaries.clusterdns,
            &["serve", "--objects", &objects_arg, "--listen", &listen],
        )),
        &dir.join("kube-dns.log"),
    )?;
    let knot_arg = dir.join("knot.conf").display().to_string();
    let mut knotd = Server::start(
        "the external upstream (knotd)",
        53,
        inputs.client_cpu,
        Path::new("ip"),
        &os_refs(&net.upstream.wrap(Path::new("knotd"), &["-c", &knot_arg])),
        &dir.join("knotd.log"),
    )?;
    wait_answers(
        &mut kube_dns,
        &net.upstream,
        UPSTREAM_IP,
        &names[0],
        Duration::from_secs(60),
    )?;
    wait_answers(
        &mut knotd,
        &net.upstream,
        EXTERNAL_IP,
        "h0.example.test",
        Duration::from_secs(60),
    )?;

    // The control: the client's query to kube-dns's ClusterIP, through the node, is tracked.
    let before = net.conntrack()?.1;
    let control = short_answer(&net.client, UPSTREAM_IP, &names[0])?;
    let control_tracked = !control.is_empty() && net.conntrack()?.1.difference(&before).count() > 0;
    log(
        KIND,
        format!("the control query to {UPSTREAM_IP}: tracked {control_tracked}"),
    );

    // The sample whose answers are compared: cluster names and external names.
    let mut sample: Vec<String> = names.iter().take(5).cloned().collect();
    sample.extend((0..5).map(|i| format!("h{}.example.test", i * (inputs.names / 5))));

    std::fs::write(dir.join("Corefile.base"), installed_template())?;
    std::fs::create_dir_all(dir.join("kube-dns"))?;
    let node_cache_args = |extra: &[&str]| -> Vec<String> {
        let p = |name: &str| dir.join(name).display().to_string();
        let mut args = vec![
            "env".to_owned(),
            format!("KUBE_DNS_UPSTREAM_SERVICE_HOST={UPSTREAM_IP}"),
        ];
        args.push(binaries.clusterdns.display().to_string());
        args.push("node-cache".to_owned());
        for arg in manifest_args() {
            args.push(if arg == "/etc/Corefile" {
                p("Corefile")
            } else {
                arg
            });
        }
        args.extend(
            [
                "-basecorefile".to_owned(),
                p("Corefile.base"),
                "-kubednscm".to_owned(),
                p("kube-dns"),
                "--link-kind".to_owned(),
                "bridge".to_owned(),
            ]
            .into_iter()
            .chain(extra.iter().map(|s| (*s).to_owned())),
        );
        args
    };

    // The entries already in the table (the control's): what each cache's runs add is theirs.
    let before_any = net.conntrack()?.0;

    // (a) clusterdns node-cache, as the manifest runs it.
    log(KIND, "measuring clusterdns node-cache");
    let args = node_cache_args(&[]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = Server::start(
        "clusterdns node-cache",
        53,
        inputs.server_cpu,
        Path::new("ip"),
        &os_refs(&net.node.wrap(Path::new(refs[0]), &refs[1..])),
        &dir.join("clusterdns.log"),
    )?;
    wait_log(&mut server, &dir.join("clusterdns.log"), RULES_IN_PLACE)?;
    let (c, c_answers) = measure(
        &inputs,
        &net,
        &mut server,
        &files,
        &names,
        &sample,
        hz,
        "clusterdns",
        &before_any,
    )?;
    let written = std::fs::read_to_string(dir.join("Corefile")).context("node-cache's Corefile")?;
    let expected = without_comments(include_str!(
        "../../../tests/fixtures/corefiles/distributions/nodelocaldns.Corefile"
    ));
    let corefile_as_expected = written == expected;
    drop(server);

    // The interface and the rules, left by node-cache -skipteardown, for CoreDNS.
    let args = node_cache_args(&["-skipteardown"]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut setup = Server::start(
        "clusterdns node-cache -skipteardown",
        53,
        inputs.server_cpu,
        Path::new("ip"),
        &os_refs(&net.node.wrap(Path::new(refs[0]), &refs[1..])),
        &dir.join("setup.log"),
    )?;
    wait_log(&mut setup, &dir.join("setup.log"), RULES_IN_PLACE)?;
    drop(setup);
    let before_coredns = net.conntrack()?.0;
    let rules = net.node.run("iptables-save", &[])?;
    let rule_count = rules
        .lines()
        .filter(|l| l.contains("NodeLocal DNS Cache"))
        .count();
    log(KIND, format!("left for CoreDNS: {rule_count} rules"));
    if rule_count == 0 {
        bail!("node-cache -skipteardown left no rules");
    }

    // (b) CoreDNS on the Corefile node-cache wrote.
    log(KIND, "measuring CoreDNS");
    std::fs::write(dir.join("coredns.Corefile"), &written)?;
    let conf = dir.join("coredns.Corefile").display().to_string();
    let mut server = Server::start(
        "CoreDNS",
        53,
        inputs.server_cpu,
        Path::new("ip"),
        &os_refs(&net.node.wrap(&coredns, &["-conf", &conf])),
        &dir.join("coredns.log"),
    )?;
    let (d, d_answers) = measure(
        &inputs,
        &net,
        &mut server,
        &files,
        &names,
        &sample,
        hz,
        "coredns",
        &before_coredns,
    )?;
    drop(server);
    drop((kube_dns, knotd));
    drop(net);

    let mismatches = c_answers
        .iter()
        .zip(&d_answers)
        .zip(&sample)
        .filter(|((a, b), name)| {
            let differ = a != b || a.is_empty();
            if differ {
                log(
                    KIND,
                    format!("MISMATCH {name}: clusterdns '{a}' CoreDNS '{b}'"),
                );
            }
            differ
        })
        .count();
    let ratios = Ratios::of(&c, &d);
    let run = Run {
        bench: KIND.to_owned(),
        started: started.to_string(),
        machine: Machine::here(),
        versions: Versions {
            own: OwnVersion::of(&inputs.clusterdns),
            coredns: first_line(&inputs.coredns, &["-version"]),
            knotd: first_line("knotd", &["--version"]),
            dnsperf: super::dnsperf_version(),
        },
        inputs,
        check: Check {
            asked: sample.len(),
            mismatches,
            corefile_as_expected,
            control_tracked,
        },
        targets: targets(&c, &ratios),
        clusterdns: c,
        coredns: d,
        ratios,
    };
    let stamp = stamp_of(&run.started)?;
    let markdown = out.join(format!("node-cache-{stamp}.md"));
    let json = out.join(format!("node-cache-{stamp}.json"));
    let text = report(&run)?;
    std::fs::write(&markdown, &text).with_context(|| format!("writing {}", markdown.display()))?;
    write_json(&json, &run)?;
    print!("{text}");
    log(KIND, format!("report: {}", markdown.display()));
    log(KIND, format!("results: {}", json.display()));
    drop(work);
    Ok(Written {
        markdown,
        json,
        run,
    })
}

/// What `clusterdns node-cache` logs once its rules are written: nothing is asked of it before
/// (it serves a moment before it writes them, and a query then would be tracked).
const RULES_IN_PLACE: &str = "node-cache rules in place";

/// Seconds of the cached pass over the cluster names.
pub const CACHED_S: u32 = 3;

/// Waits until `log` holds `needle` (up to 60 s), `server` still running.
fn wait_log(server: &mut Server, log: &Path, needle: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        server.check_running()?;
        if std::fs::read_to_string(log).is_ok_and(|text| text.contains(needle)) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("{} did not log {needle:?} within 60 s", server.name);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether this process runs as root (`id -u` says 0).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn os_refs(args: &[std::ffi::OsString]) -> Vec<&std::ffi::OsStr> {
    args.iter().map(std::ffi::OsString::as_os_str).collect()
}

/// The runs against one cache on the local address: its figures, and its answers to
/// `sample`.
#[allow(clippy::too_many_arguments)]
fn measure(
    inputs: &Inputs,
    net: &Topology,
    server: &mut Server,
    files: &Files,
    names: &[String],
    sample: &[String],
    hz: f64,
    prefix: &str,
    conntrack_before: &BTreeSet<String>,
) -> Result<(Figures, Vec<String>)> {
    wait_answers(
        server,
        &net.client,
        LOCAL_IP,
        &names[names.len() - 1],
        Duration::from_secs(60),
    )?;
    std::thread::sleep(Duration::from_secs(u64::from(inputs.idle_s)));
    server.check_running()?;
    let rss_idle_kb = server.rss_kb()?;
    let out = |suffix: &str| files.dir.join(format!("{prefix}.{suffix}.txt"));
    let dnsperf = |data: &Path, args: &[String], extra: &[&str], output: &Path| -> Result<()> {
        run_to_file(
            net.client
                .command("taskset")
                .args([
                    "-c",
                    &inputs.client_cpu.to_string(),
                    "dnsperf",
                    "-s",
                    LOCAL_IP,
                ])
                .arg("-d")
                .arg(data)
                .args(args)
                .args(extra),
            output,
        )
    };
    let seconds = |s: u32| s.to_string();
    // Cluster names: the first lookups are misses (the readiness check asked only the last);
    // the cached pass follows at once and lasts CACHED_S, inside kube-dns's TTL (5 s, as
    // CoreDNS's kubernetes plugin has it) after the misses at LATENCY_QPS.
    dnsperf(
        &files.cluster,
        &inputs.latency_args,
        &["-n", "1"],
        &out("cluster-miss"),
    )?;
    dnsperf(
        &files.cluster,
        &inputs.latency_args,
        &["-l", &CACHED_S.to_string()],
        &out("cluster-cached"),
    )?;
    // Names outside the cluster: filled, then asked at the fixed rate.
    dnsperf(
        &files.fill,
        &inputs.dnsperf_args,
        &["-n", "1"],
        &out("fill"),
    )?;
    dnsperf(
        &files.queries,
        &inputs.latency_args,
        &["-l", &seconds(inputs.duration_s)],
        &out("external-cached"),
    )?;
    // Saturation on the cached names (filled again: the Corefile's `cache 30` caps TTLs).
    dnsperf(
        &files.fill,
        &inputs.dnsperf_args,
        &["-n", "1"],
        &out("fill2"),
    )?;
    dnsperf(
        &files.queries,
        &inputs.dnsperf_args,
        &["-l", &seconds(inputs.warmup_s)],
        &out("warmup"),
    )?;
    let before = server.cpu_ticks()?;
    dnsperf(
        &files.queries,
        &inputs.dnsperf_args,
        &["-l", &seconds(inputs.duration_s)],
        &out("run"),
    )?;
    let after = server.cpu_ticks()?;
    server.check_running()?;
    let rss_after_kb = server.rss_kb()?;
    let conntrack_entries = net.conntrack()?.0.difference(conntrack_before).count() as u64;
    let mut answers = Vec::new();
    for name in sample {
        answers.push(short_answer(&net.client, LOCAL_IP, name)?);
    }
    let cpu_s = after.saturating_sub(before) as f64 / hz;
    let text = std::fs::read_to_string(out("run"))?;
    let counts = dnsperf_counts(&text).with_context(|| out("run").display().to_string())?;
    log(
        KIND,
        format!(
            "{}: {:.0} qps, {cpu_s:.2} CPU s, {conntrack_entries} conntrack entries",
            server.name, counts.qps
        ),
    );
    Ok((
        Figures {
            cluster_miss: percentiles_of(&out("cluster-miss"))?,
            cluster_cached: percentiles_of(&out("cluster-cached"))?,
            external_cached: percentiles_of(&out("external-cached"))?,
            qps: counts.qps,
            completed: counts.completed,
            lost: counts.lost,
            cpu_s,
            queries_per_cpu_s: ratio(counts.completed as f64, cpu_s),
            rss_idle_kb,
            rss_after_kb,
            conntrack_entries,
        },
        answers,
    ))
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

fn times(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}×"))
}

/// The figures table: one row per cache and the ratios.
fn figures_table(run: &Run) -> String {
    let mut text = row(&[
        "cache".into(),
        "cluster names, miss p50 / p99".into(),
        "cluster names, cached".into(),
        "external names, cached".into(),
        "qps saturated".into(),
        "queries per CPU-second".into(),
        "RSS idle".into(),
        "RSS after".into(),
        "conntrack entries".into(),
    ]);
    text.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (name, f) in [
        ("clusterdns node-cache", &run.clusterdns),
        ("CoreDNS", &run.coredns),
    ] {
        text.push_str(&row(&[
            name.into(),
            p50_p99(&f.cluster_miss),
            p50_p99(&f.cluster_cached),
            p50_p99(&f.external_cached),
            thousands(f.qps.round() as u64),
            f.queries_per_cpu_s
                .map_or_else(|| "—".to_owned(), |v| thousands(v.round() as u64)),
            mb(f.rss_idle_kb),
            mb(f.rss_after_kb),
            f.conntrack_entries.to_string(),
        ]));
    }
    let r = &run.ratios;
    text.push_str(&row(&[
        "clusterdns / CoreDNS".into(),
        format!("p99 {}", times(r.p99_cluster_miss)),
        format!("p99 {}", times(r.p99_cluster_cached)),
        format!("p99 {}", times(r.p99_external_cached)),
        String::new(),
        times(r.queries_per_cpu_s),
        times(r.rss_idle),
        times(r.rss_after),
        String::new(),
    ]));
    text
}

fn targets_table(run: &Run) -> String {
    let mut text = row(&[
        "target (issue 50)".into(),
        "wanted".into(),
        "measured".into(),
        "met".into(),
    ]);
    text.push_str("| --- | ---: | ---: | --- |\n");
    for t in &run.targets {
        text.push_str(&row(&[
            t.figure.clone(),
            t.target.clone(),
            t.measured.clone(),
            match t.met {
                Some(true) => "yes".into(),
                Some(false) => "**no**".into(),
                None => "—".into(),
            },
        ]));
    }
    text
}

/// The line saying what was run where.
fn what_ran(run: &Run) -> Result<String> {
    let inputs = &run.inputs;
    let at: jiff::Timestamp = run
        .started
        .parse()
        .with_context(|| format!("started: {:?} is not an RFC 3339 time", run.started))?;
    Ok(format!(
        "{}: {} as the peer on the same Corefile, address and rules; kube-dns's stand-in serving {} Services, {} names outside the cluster behind {}; caches on CPU {}, dnsperf and the upstreams on CPU {}; latency `dnsperf {}` ({} cluster names once, then again for {CACHED_S} s; the external names for {} s), saturation `dnsperf {} -l {}`; {}, {} CPUs ({}); {}; clusterdns at {}; {} of {} answers differ, node-cache's Corefile {} the fixture's, control query {}.",
        at.strftime("%Y-%m-%d %H:%M UTC"),
        run.versions.coredns,
        thousands(u64::from(inputs.services)),
        thousands(u64::from(inputs.names)),
        run.versions.knotd,
        inputs.server_cpu,
        inputs.client_cpu,
        inputs.latency_args.join(" "),
        thousands(u64::from(inputs.cluster_names)),
        inputs.duration_s,
        inputs.dnsperf_args.join(" "),
        inputs.duration_s,
        run.machine.kernel,
        run.machine.cpus,
        run.machine.cpu_model,
        run.versions.dnsperf,
        run.versions
            .own
            .commit
            .as_deref()
            .unwrap_or("an unknown commit"),
        run.check.mismatches,
        run.check.asked,
        if run.check.corefile_as_expected {
            "is"
        } else {
            "is NOT"
        },
        if run.check.control_tracked {
            "tracked"
        } else {
            "NOT tracked (the conntrack figures mean nothing)"
        },
    ))
}

/// The report the bench prints and writes as Markdown.
pub fn report(run: &Run) -> Result<String> {
    let stamp = stamp_of(&run.started)?;
    let mut text = String::new();
    writeln!(
        text,
        "# NodeLocal DNSCache: clusterdns node-cache vs CoreDNS ({stamp})\n"
    )?;
    writeln!(text, "{}\n", what_ran(run)?)?;
    text.push_str(&figures_table(run));
    text.push('\n');
    text.push_str(&targets_table(run));
    writeln!(
        text,
        "\nLatency is the client's (dnsperf's), in milliseconds; one run on a shared machine: compare the ratios, not the absolute figures."
    )?;
    Ok(text)
}

/// bench/README.md's table of the runs: per run, the line saying what ran where, the figures
/// and the targets.
pub fn readme_table(runs: &[Run]) -> Result<String> {
    let mut text = String::new();
    for (i, run) in runs.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        writeln!(text, "{}\n", what_ran(run)?)?;
        text.push_str(&figures_table(run));
        text.push('\n');
        text.push_str(&targets_table(run));
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::common::fixture::{assert_renders, read_back};
    use super::*;

    /// The template is the Corefile of deploy/'s manifest, word for word.
    #[test]
    fn the_template_is_the_manifests_corefile() {
        let manifest = include_str!("../../../deploy/nodelocaldns/node-local-dns.yaml");
        let corefile: String = manifest
            .lines()
            .skip_while(|line| line.trim() != "Corefile: |")
            .skip(1)
            .take_while(|line| line.starts_with("    "))
            .map(|line| format!("{}\n", &line[4..]))
            .collect();
        assert_eq!(corefile, MANIFEST_TEMPLATE);
    }

    /// A run's JSON as the bench writes it (the run of 2026-12-07 11:20, DURATION=5).
    const FIXTURE: &str = include_str!("../../fixtures/node-cache.json");

    /// The fixture, read back as it was written.
    fn fixture() -> Run {
        read_back(FIXTURE)
    }

    #[test]
    fn the_fixture_reads_back_with_its_ratios_and_targets() {
        let run = fixture();
        assert_eq!(run.bench, KIND);
        // To the last bit but one: serde_json reads floats to within one unit of the last place.
        let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * b.abs(),
            (a, b) => a == b,
        };
        let (again, stored) = (Ratios::of(&run.clusterdns, &run.coredns), &run.ratios);
        for (a, b) in [
            (again.p99_cluster_miss, stored.p99_cluster_miss),
            (again.p99_cluster_cached, stored.p99_cluster_cached),
            (again.p99_external_cached, stored.p99_external_cached),
            (again.queries_per_cpu_s, stored.queries_per_cpu_s),
            (again.rss_idle, stored.rss_idle),
            (again.rss_after, stored.rss_after),
        ] {
            assert!(close(a, b), "{again:?}\n{stored:?}");
        }
        assert_eq!(targets(&run.clusterdns, &run.ratios), run.targets);
    }

    #[test]
    fn the_report_and_the_readme_table_are_rendered_from_the_json() {
        assert_renders(
            FIXTURE,
            include_str!("../../fixtures/node-cache.md"),
            report,
        );
        let table = include_str!("../../fixtures/node-cache.table.md");
        assert_renders(FIXTURE, table, |run| {
            readme_table(std::slice::from_ref(run))
        });
        assert!(
            table.contains(
                "| lookup p99, cluster names (cached) | ≤ 1× CoreDNS's | 2.89× | **no** |\n"
            ),
            "{table}"
        );
    }

    #[test]
    fn the_installed_template_is_the_fixtures_but_for_node_caches_two() {
        let fixture = without_comments(include_str!(
            "../../../tests/fixtures/corefiles/distributions/nodelocaldns.Corefile"
        ));
        assert_eq!(
            installed_template()
                .replace("__PILLAR__CLUSTER__DNS__", UPSTREAM_IP)
                .replace("__PILLAR__UPSTREAM__SERVERS__", "/etc/resolv.conf"),
            fixture
        );
        assert_eq!(without_comments("# a\nb\n  # c\nd # e\n"), "b\nd # e\n");
    }

    #[test]
    fn cluster_names_are_the_clusterip_services() {
        let objects = serde_json::json!({"kind": "List", "items": [
            {"kind": "Namespace", "metadata": {"name": "shop"}},
            {"kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
             "spec": {"clusterIP": "10.96.0.20", "type": "ClusterIP"}},
            {"kind": "Service", "metadata": {"name": "db", "namespace": "shop"},
             "spec": {"clusterIP": "None"}},
            {"kind": "Service", "metadata": {"name": "ext", "namespace": "shop"},
             "spec": {"type": "ExternalName", "externalName": "a.example.com"}},
            {"kind": "Service", "metadata": {"name": "api", "namespace": "default"},
             "spec": {"clusterIP": "10.96.0.30"}},
        ]});
        assert_eq!(
            cluster_names(&objects, 10),
            [
                "web.shop.svc.cluster.local",
                "api.default.svc.cluster.local"
            ]
        );
        assert_eq!(cluster_names(&objects, 1), ["web.shop.svc.cluster.local"]);
        assert!(cluster_names(&serde_json::json!({}), 10).is_empty());
    }

    #[test]
    fn conntrack_entries_count_by_their_original_direction() {
        let table = "\
ipv4     2 udp      17 28 src=10.0.0.2 dst=169.254.20.10 sport=40000 dport=53 src=169.254.20.10 dst=10.0.0.2 sport=53 dport=40000 mark=0 zone=0 use=2
ipv4     2 udp      17 28 src=10.0.0.2 dst=10.96.0.11 sport=40001 dport=53 src=10.96.0.11 dst=10.0.0.2 sport=53 dport=40001 mark=0 zone=0 use=2
ipv4     2 tcp      6 117 TIME_WAIT src=10.1.0.1 dst=10.96.0.11 sport=50000 dport=53 src=10.96.0.11 dst=10.1.0.1 sport=53 dport=50000 [ASSURED] mark=0 zone=0 use=2
ipv4     2 udp      17 28 src=10.0.0.2 dst=10.96.0.10 sport=40002 dport=53 src=10.96.0.10 dst=10.0.0.2 sport=53 dport=40002 mark=0 zone=0 use=2
";
        let local: Vec<String> = tracked(table, "10.0.0.2", &[LOCAL_IP, KUBE_DNS_IP])
            .into_iter()
            .collect();
        assert_eq!(
            local,
            [
                "udp 10.0.0.2:40000 169.254.20.10:53",
                "udp 10.0.0.2:40002 10.96.0.10:53"
            ]
        );
        assert_eq!(tracked(table, "10.0.0.2", &[UPSTREAM_IP]).len(), 1);
        assert!(tracked(table, "10.1.0.1", &[LOCAL_IP]).is_empty());
        assert!(tracked("", "10.0.0.2", &[LOCAL_IP]).is_empty());
    }

    fn figures(p99: f64, qpcs: f64, rss: u64, conntrack: u64) -> Figures {
        let latency = Latency {
            p50_ms: Some(p99 / 2.0),
            p99_ms: Some(p99),
        };
        Figures {
            cluster_miss: latency,
            cluster_cached: latency,
            external_cached: Latency {
                p50_ms: None,
                p99_ms: None,
            },
            qps: 1000.0,
            completed: 1000,
            lost: 0,
            cpu_s: 1.0,
            queries_per_cpu_s: Some(qpcs),
            rss_idle_kb: rss,
            rss_after_kb: rss * 2,
            conntrack_entries: conntrack,
        }
    }

    #[test]
    fn ratios_and_targets_are_clusterdns_over_coredns() {
        let c = figures(0.5, 30_000.0, 10_000, 0);
        let d = figures(1.0, 20_000.0, 40_000, 0);
        let r = Ratios::of(&c, &d);
        assert_eq!(r.p99_cluster_miss, Some(0.5));
        assert_eq!(r.p99_external_cached, None);
        assert_eq!(r.queries_per_cpu_s, Some(1.5));
        assert_eq!(r.rss_idle, Some(0.25));
        assert_eq!(r.rss_after, Some(0.25));
        let t = targets(&c, &r);
        let met: Vec<Option<bool>> = t.iter().map(|t| t.met).collect();
        assert_eq!(
            met,
            [
                Some(true),
                Some(true),
                None,
                Some(true),
                Some(true),
                Some(true)
            ]
        );
        assert_eq!(t[0].measured, "0.50×");
        assert_eq!(t[2].measured, "—");
        // Slower, larger, tracked: every target missed.
        let c = figures(1.1, 30_000.0, 30_000, 3);
        let r = Ratios::of(&c, &d);
        let t = targets(&c, &r);
        assert!(t.iter().all(|t| t.met != Some(true)), "{t:?}");
        assert_eq!(t[5].measured, "3");
        // A missing denominator is no ratio.
        let zero = figures(0.0, 0.0, 0, 0);
        assert_eq!(Ratios::of(&c, &zero).rss_idle, None);
        assert_eq!(Ratios::of(&c, &zero).queries_per_cpu_s, None);
    }

    #[test]
    fn latency_runs_use_one_socket_at_a_fixed_rate() {
        assert_eq!(latency_args(1000).join(" "), "-T 1 -c 1 -q 20 -Q 1000 -v");
        assert_eq!(
            manifest_args().join(" "),
            "-localip 169.254.20.10,10.96.0.10 -conf /etc/Corefile -upstreamsvc kube-dns-upstream"
        );
    }
}
