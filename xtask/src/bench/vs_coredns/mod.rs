//! `cargo xtask bench vs-coredns`: clusterdns beside the real CoreDNS (bench/peers: CoreDNS
//! v1.14.7), measured in one run on a real local control plane ([`crate::cluster`]), as the
//! shell script it replaced on 2026-12-07 measured it. Both run kubeadm's Corefile
//! (deploy/configmap.yaml; CoreDNS without clusterdns's `snapshot` line), each as its own
//! ServiceAccount bound to deploy/'s ClusterRole system:coredns, against the same API server
//! holding the same objects. bench/README.md ("clusterdns beside CoreDNS") has the method and
//! every figure; per scale:
//!
//! 1. each alone, then `REPLICAS` of each, against the API server: time to ready, RSS, the
//!    API server's CPU and RSS growth, the account's requests in the audit log, the bytes of
//!    its connections to the API server ([`measure`]);
//! 2. one of each together: their answers compared, dnsperf (queries per CPU-second, CPU at a
//!    fixed rate);
//! 3. programming latency, idle and under churn ([`probe`]), and each server's CPU during the
//!    churn;
//! 4. a full re-list (the API server restarted): the peak RSS meanwhile.
//!
//! The results are one JSON document ([`Run`]) in bench/out, and the Markdown report is
//! rendered from it ([`report`]).

pub mod measure;
pub mod parse;
pub mod probe;
pub mod report;

use std::path::PathBuf;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::{Build, Machine, Numbers, Output, OwnVersion, env_set, keeps, knob, ratio};
use parse::{LoadLines, Requests};
use probe::{ScaleSample, ServiceSample};

/// The `bench` of this bench's JSON documents.
pub const KIND: &str = "vs-coredns";

/// The knobs, each a flag or an environment variable (the flag's name in capitals, as the
/// shell script read it).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_arg(
    "keep",
    keeps(
        "the cluster's logs and audit log, Corefiles, server logs, dnsperf outputs, the objects"
    )
))]
pub struct Options {
    /// Services per scale, a fresh control plane each, space- or comma-separated [env:
    /// SCALES] [default: "1000 10000"].
    #[arg(long)]
    pub scales: Option<Numbers>,
    /// Pods per Service [env: PODS_PER_SERVICE] [default: 15].
    #[arg(long)]
    pub pods_per_service: Option<u32>,
    /// Seconds of each measured dnsperf run [env: DURATION] [default: 15].
    #[arg(long)]
    pub duration: Option<u32>,
    /// Seconds of the warm-up dnsperf run before each server's runs [env: WARMUP] [default:
    /// 5].
    #[arg(long)]
    pub warmup: Option<u32>,
    /// Lines of the query file (querymix on the cluster's dump) [env: QUERIES] [default:
    /// 100000].
    #[arg(long)]
    pub queries: Option<u32>,
    /// Distinct questions of the query file asked of both with dig, answers compared [env:
    /// CHECK] [default: 300].
    #[arg(long)]
    pub check: Option<u32>,
    /// The fixed rate of the CPU run, queries a second [env: FIXED_QPS] [default: 20000].
    #[arg(long)]
    pub fixed_qps: Option<u32>,
    /// Seconds of the steady window after each sync [env: STEADY] [default: 15].
    #[arg(long)]
    pub steady: Option<u32>,
    /// Programming-latency samples per case [env: SAMPLES] [default: 20].
    #[arg(long)]
    pub samples: Option<u32>,
    /// Headless Deployments scaled during the churn [env: CHURN_DEPLOYMENTS] [default: 3].
    #[arg(long)]
    pub churn_deployments: Option<u32>,
    /// Seconds between two scalings of each churning Deployment [env: CHURN_PERIOD]
    /// [default: 1].
    #[arg(long)]
    pub churn_period: Option<f64>,
    /// The churning Deployments go 1 -> CHURN_HIGH -> 1 ... [env: CHURN_HIGH] [default: 6].
    #[arg(long)]
    pub churn_high: Option<u32>,
    /// Seconds of churn over which the servers' CPU is read [env: CHURN_WINDOW] [default:
    /// 30].
    #[arg(long)]
    pub churn_window: Option<u32>,
    /// perf record clusterdns over the churn window into this file (its overhead then counts
    /// in clusterdns's figure) [env: PERF_CHURN].
    #[arg(long, value_name = "FILE")]
    pub perf_churn: Option<PathBuf>,
    /// Replicas of each server started together in the API-cost group [env: REPLICAS]
    /// [default: 3].
    #[arg(long)]
    pub replicas: Option<u32>,
    /// Pods on each bench-node-N [env: PODS_PER_NODE] [default: 200].
    #[arg(long)]
    pub pods_per_node: Option<u32>,
    /// 1: clusterdns keeps the ConfigMap's `snapshot` line (a file of its own, absent at each
    /// start); 0: without it [env: SNAPSHOT] [default: 1].
    #[arg(long)]
    pub snapshot: Option<u8>,
    /// Creates in flight at once (cargo xtask load --concurrency) [env: LOAD_CONCURRENCY]
    /// [default: 32].
    #[arg(long)]
    pub load_concurrency: Option<u32>,
    /// Only load each scale and say how long it took (and the control plane's peak RSS)
    /// [env: LOAD_ONLY].
    #[arg(long)]
    pub load_only: bool,
    /// The CPU the servers are pinned to (but during the latency and churn phases) [env:
    /// SERVER_CPU] [default: 0].
    #[arg(long)]
    pub server_cpu: Option<u32>,
    /// The CPU dnsperf and the upstream are pinned to [env: CLIENT_CPU] [default: 1].
    #[arg(long)]
    pub client_cpu: Option<u32>,
    /// Build nothing: the release binaries as they are (copied first: a build beside the run
    /// may replace them) [env: NO_BUILD].
    #[arg(long)]
    pub no_build: bool,
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
    pub scales: Vec<u32>,
    pub pods_per_service: u32,
    pub duration_s: u32,
    pub warmup_s: u32,
    pub queries: u32,
    pub check: u32,
    pub fixed_qps: u32,
    pub steady_s: u32,
    pub samples: u32,
    pub churn_deployments: u32,
    pub churn_period_s: f64,
    pub churn_high: u32,
    pub churn_window_s: u32,
    /// The file clusterdns's churn window was recorded into with perf, if it was.
    pub perf_churn: Option<String>,
    pub replicas: u32,
    pub pods_per_node: u32,
    /// Whether clusterdns kept the ConfigMap's `snapshot` line.
    pub snapshot: bool,
    pub load_concurrency: u32,
    pub load_only: bool,
    pub server_cpu: u32,
    pub client_cpu: u32,
    /// [`super::BuildInputs`]'s two, not flattened: `no_build` comes between them in the
    /// JSON.
    pub profile: String,
    pub no_build: bool,
    pub clusterdns: String,
    pub coredns: String,
}

impl Options {
    /// The inputs these options and the environment ask for (the binaries still to be
    /// named).
    pub fn inputs(&self) -> Result<Inputs> {
        let scales = knob(self.scales.clone(), "SCALES", Numbers(vec![1000, 10000]))?.0;
        let pods_per_node = knob(self.pods_per_node, "PODS_PER_NODE", 200)?;
        if pods_per_node == 0 || pods_per_node as usize > crate::load::MAX_PODS_PER_NODE {
            bail!(
                "PODS_PER_NODE={pods_per_node}: from 1 to {} (a node's /24)",
                crate::load::MAX_PODS_PER_NODE
            );
        }
        let replicas = knob(self.replicas, "REPLICAS", 3)?;
        let churn_period_s = knob(self.churn_period, "CHURN_PERIOD", 1.0)?;
        if replicas == 0 || !churn_period_s.is_finite() || churn_period_s < 0.0 {
            bail!("REPLICAS must be at least 1, CHURN_PERIOD a number of seconds not negative");
        }
        let perf_churn = self
            .perf_churn
            .clone()
            .or_else(|| {
                std::env::var_os("PERF_CHURN")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .map(|p| p.display().to_string());
        Ok(Inputs {
            scales,
            pods_per_service: knob(self.pods_per_service, "PODS_PER_SERVICE", 15)?,
            duration_s: knob(self.duration, "DURATION", 15)?,
            warmup_s: knob(self.warmup, "WARMUP", 5)?,
            queries: knob(self.queries, "QUERIES", 100_000)?,
            check: knob(self.check, "CHECK", 300)?,
            fixed_qps: knob(self.fixed_qps, "FIXED_QPS", 20_000)?,
            steady_s: knob(self.steady, "STEADY", 15)?,
            samples: knob(self.samples, "SAMPLES", 20)?,
            churn_deployments: knob(self.churn_deployments, "CHURN_DEPLOYMENTS", 3)?,
            churn_period_s,
            churn_high: knob(self.churn_high, "CHURN_HIGH", 6)?,
            churn_window_s: knob(self.churn_window, "CHURN_WINDOW", 30)?,
            perf_churn,
            replicas,
            pods_per_node,
            snapshot: knob(self.snapshot, "SNAPSHOT", 1)? != 0,
            load_concurrency: knob(self.load_concurrency, "LOAD_CONCURRENCY", 32)?,
            load_only: self.load_only || env_set("LOAD_ONLY"),
            server_cpu: knob(self.server_cpu, "SERVER_CPU", 0)?,
            client_cpu: knob(self.client_cpu, "CLIENT_CPU", 1)?,
            profile: self.build.profile()?,
            no_build: self.no_build || env_set("NO_BUILD"),
            clusterdns: String::new(),
            coredns: String::new(),
        })
    }
}

/// What each program was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    #[serde(flatten)]
    pub own: OwnVersion,
    /// `coredns -version`'s first line.
    pub coredns: String,
    /// `kube-apiserver --version`.
    pub kube_apiserver: String,
    pub dnsperf: String,
}

/// One of the two servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Which {
    Coredns,
    Clusterdns,
}

impl Which {
    pub const BOTH: [Self; 2] = [Self::Coredns, Self::Clusterdns];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Coredns => "coredns",
            Self::Clusterdns => "clusterdns",
        }
    }

    /// Its ServiceAccount in kube-system.
    pub fn account(self) -> &'static str {
        self.as_str()
    }
}

/// A figure of each server.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pair<T> {
    pub coredns: T,
    pub clusterdns: T,
}

impl<T> Pair<T> {
    pub fn get(&self, which: Which) -> &T {
        match which {
            Which::Coredns => &self.coredns,
            Which::Clusterdns => &self.clusterdns,
        }
    }
}

/// How the scale was loaded: `cargo xtask load --wait`'s lines.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Load {
    #[serde(flatten)]
    pub lines: LoadLines,
    /// With `LOAD_ONLY`: the control plane's peak RSS and etcd's data after the load.
    pub peak: Option<LoadPeak>,
}

/// The control plane after a load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoadPeak {
    pub apiserver_hwm_kb: u64,
    pub etcd_hwm_kb: u64,
    /// `du -sm` of etcd's data directory.
    pub etcd_data_mb: u64,
}

/// One group of instances of one server started together, alone against the API server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub server: Which,
    /// The `pods` mode: insecure or verified.
    pub pods: String,
    pub replicas: u32,
    /// From the first exec to the last /ready 200.
    pub ready_s: f64,
    /// VmRSS per replica at ready and `steady_s` later (the sum over replicas / replicas).
    pub rss_sync_kb: u64,
    pub rss_steady_kb: u64,
    /// The API server's utime+stime from the start to ready, and over the steady window.
    pub api_cpu_sync_s: f64,
    pub api_cpu_steady_s: f64,
    /// The API server's peak VmRSS (sampled every 50 ms, and at the end) over its VmRSS
    /// before the start; 0 if it never grew.
    pub api_rss_growth_kb: u64,
    /// The account's requests in the audit log from the start to the end of the window.
    pub requests: Requests,
    /// bytes_received / bytes_sent of the replicas' connections to the API server (the
    /// largest reading of each, summed).
    pub received_bytes: u64,
    pub sent_bytes: u64,
}

/// Both servers' answers to the first distinct questions of the query file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub asked: u64,
    /// With a different rcode or answer RRset.
    pub mismatches: u64,
    /// The first mismatch, on one line.
    pub first: Option<String>,
}

/// One dnsperf run against one server.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DnsperfRun {
    pub qps: f64,
    pub completed: u64,
    pub lost: u64,
    /// The server's utime+stime over the run.
    pub cpu_s: f64,
}

impl DnsperfRun {
    pub fn queries_per_cpu_s(&self) -> Option<f64> {
        ratio(self.completed as f64, self.cpu_s)
    }
}

/// A server's dnsperf runs: saturating over UDP and TCP, and at the fixed rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Dnsperf {
    pub udp: DnsperfRun,
    pub tcp: DnsperfRun,
    pub fixed: DnsperfRun,
}

/// The programming-latency samples of one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyPhase {
    /// idle, or churn.
    pub phase: String,
    pub new_service: Vec<ServiceSample>,
    pub scale_up: Vec<ScaleSample>,
}

/// The servers' CPU over the churn window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Churn {
    pub window_s: u32,
    /// Rounds of the churn loop in the window (each scales every churning Deployment).
    pub rounds: u64,
    pub cpu_s: Pair<f64>,
}

impl Churn {
    pub fn scalings_per_s(&self, deployments: u32) -> f64 {
        (self.rounds * u64::from(deployments)) as f64 / f64::from(self.window_s.max(1))
    }

    pub fn millicores(&self, which: Which) -> f64 {
        self.cpu_s.get(which) / f64::from(self.window_s.max(1)) * 1000.0
    }
}

/// A server through the API server's restart.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Relist {
    /// Its account's requests after the restart (until the peak is read).
    pub requests: Requests,
    /// VmHWM, reset before the restart.
    pub hwm_kb: u64,
}

/// Everything measured at one scale (none of it with `LOAD_ONLY`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Services and pods in the cluster's dump (the report's label).
    pub total_services: u64,
    pub total_pods: u64,
    pub groups: Vec<Group>,
    pub check: Check,
    pub dnsperf: Pair<Dnsperf>,
    pub churn: Churn,
    /// idle, then churn.
    pub latency: Vec<LatencyPhase>,
    pub relist: Pair<Relist>,
}

impl Measured {
    /// The group of `server` in `pods` mode with `replicas`.
    pub fn group(&self, server: Which, pods: &str, replicas: u32) -> Option<&Group> {
        self.groups
            .iter()
            .find(|g| g.server == server && g.pods == pods && g.replicas == replicas)
    }
}

/// One scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scale {
    /// Services asked of gencluster.
    pub services: u32,
    /// Pods asked of it.
    pub pods: u32,
    pub load: Load,
    pub measured: Option<Measured>,
    /// The ratios of what was measured, clusterdns over CoreDNS ([`Ratios::of`]).
    pub ratios: Option<Ratios>,
    /// The scale's wall-clock time, the control plane's start to the re-list.
    pub took_s: f64,
}

/// One run of the bench: the JSON document it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always "vs-coredns".
    pub bench: String,
    /// When it started, RFC 3339.
    pub started: String,
    pub inputs: Inputs,
    pub machine: Machine,
    pub versions: Versions,
    pub scales: Vec<Scale>,
}

/// clusterdns's figure over CoreDNS's.
fn over(clusterdns: f64, coredns: f64) -> Option<f64> {
    ratio(clusterdns, coredns)
}

/// clusterdns's figure over CoreDNS's when both are figures (a server that used no CPU has no
/// queries per CPU-second: no ratio, not 0).
fn both(clusterdns: Option<f64>, coredns: Option<f64>) -> Option<f64> {
    over(clusterdns?, coredns?)
}

/// The ratios of one scale, clusterdns over CoreDNS (below 1 is better for clusterdns in CPU,
/// memory, time and latency; above 1 in queries per CPU-second).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratios {
    /// Time to ready alone, by `pods` mode: insecure, verified.
    pub ready: Vec<(String, Option<f64>)>,
    /// RSS alone at ready and steady, by `pods` mode.
    pub rss_sync: Vec<(String, Option<f64>)>,
    pub rss_steady: Vec<(String, Option<f64>)>,
    /// Peak RSS through the re-list.
    pub rss_relist: Option<f64>,
    /// Queries per CPU-second, UDP and TCP.
    pub queries_per_cpu_s_udp: Option<f64>,
    pub queries_per_cpu_s_tcp: Option<f64>,
    /// Millicores per 1,000 achieved qps at the fixed rate.
    pub millicores_per_kqps: Option<f64>,
    /// CPU during the churn.
    pub churn_cpu: Option<f64>,
    /// The API server's cost, by replicas.
    pub api: Vec<ApiRatios>,
}

/// What one group cost the API server, clusterdns's over CoreDNS's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiRatios {
    pub replicas: u32,
    pub requests: Option<f64>,
    pub received: Option<f64>,
    pub api_cpu_sync: Option<f64>,
    pub api_cpu_steady: Option<f64>,
    pub api_rss_growth: Option<f64>,
}

/// The p50 and p99 of a column of latency samples (ms), and how many timed out.
pub type Column = parse::Percentiles;

impl Ratios {
    pub fn of(m: &Measured, replicas: u32) -> Self {
        let pair = |pods: &str, n: u32| -> Option<(&Group, &Group)> {
            Some((
                m.group(Which::Coredns, pods, n)?,
                m.group(Which::Clusterdns, pods, n)?,
            ))
        };
        let by_mode = |f: &dyn Fn(&Group) -> f64| -> Vec<(String, Option<f64>)> {
            ["insecure", "verified"]
                .iter()
                .map(|mode| {
                    let r = pair(mode, 1).and_then(|(c, d)| over(f(d), f(c)));
                    ((*mode).to_owned(), r)
                })
                .collect()
        };
        let mut counts = vec![1];
        if replicas != 1 {
            counts.push(replicas);
        }
        let api = counts
            .into_iter()
            .filter_map(|n| {
                let (c, d) = pair("insecure", n)?;
                Some(ApiRatios {
                    replicas: n,
                    requests: over(d.requests.total() as f64, c.requests.total() as f64),
                    received: over(d.received_bytes as f64, c.received_bytes as f64),
                    api_cpu_sync: over(d.api_cpu_sync_s, c.api_cpu_sync_s),
                    api_cpu_steady: over(d.api_cpu_steady_s, c.api_cpu_steady_s),
                    api_rss_growth: over(d.api_rss_growth_kb as f64, c.api_rss_growth_kb as f64),
                })
            })
            .collect();
        let (c, d) = (&m.dnsperf.coredns, &m.dnsperf.clusterdns);
        let per_kqps = |r: &DnsperfRun, duration: f64| -> Option<f64> {
            ratio(r.cpu_s / duration * 1000.0, r.qps).map(|v| v * 1000.0)
        };
        Self {
            ready: by_mode(&|g| g.ready_s),
            rss_sync: by_mode(&|g| g.rss_sync_kb as f64),
            rss_steady: by_mode(&|g| g.rss_steady_kb as f64),
            rss_relist: over(
                m.relist.clusterdns.hwm_kb as f64,
                m.relist.coredns.hwm_kb as f64,
            ),
            queries_per_cpu_s_udp: both(d.udp.queries_per_cpu_s(), c.udp.queries_per_cpu_s()),
            queries_per_cpu_s_tcp: both(d.tcp.queries_per_cpu_s(), c.tcp.queries_per_cpu_s()),
            // The duration cancels out: the ratio of CPU-seconds per query.
            millicores_per_kqps: both(per_kqps(&d.fixed, 1.0), per_kqps(&c.fixed, 1.0)),
            churn_cpu: over(m.churn.cpu_s.clusterdns, m.churn.cpu_s.coredns),
            api,
        }
    }
}

pub use measure::run;
