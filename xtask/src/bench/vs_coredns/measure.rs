//! The run itself: the binaries, the upstream, a fresh control plane per scale, the load, and
//! the four phases of each scale (the module's documentation, bench/README.md).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::parse::{
    self, Requests, SocketReading, audit_between, audit_mark, audit_requests, service_account,
};
use super::probe::{self, Target};
use super::report;
use super::{
    Check, Churn, Dnsperf, DnsperfRun, Group, Inputs, KIND, LatencyPhase, Load, LoadPeak, Measured,
    Options, Pair, Relist, Run, Scale, Versions, Which,
};
use crate::bench::{
    Machine, OwnVersion, Server, Transport, ask, build_release, clock_ticks, distinct_questions,
    dnsperf, dnsperf_counts, first_line, http_status, log, need_tools, stamp, status_kb,
    write_json, write_knot_conf,
};
use crate::cluster::{self, Cluster, Component};
use crate::kube::{ControlPlane, Kubectl};

/// Where a run's results went.
#[derive(Debug)]
pub struct Written {
    pub markdown: PathBuf,
    pub json: PathBuf,
    pub run: Run,
}

/// The programs a run uses.
struct Bins {
    clusterdns: PathBuf,
    gencluster: PathBuf,
    querymix: PathBuf,
    /// The release xtask: `load` and `dump` (it serialises and sends 150,000 objects).
    xtask: PathBuf,
    coredns: PathBuf,
}

/// What every phase needs.
struct Bench<'a> {
    inputs: &'a Inputs,
    bins: Bins,
    work: PathBuf,
    hz: f64,
    /// knotd's port: where `forward` goes.
    upstream: u16,
    /// kubeadm's Corefile, as deploy/configmap.yaml holds it.
    corefile: String,
    runtime: tokio::runtime::Runtime,
}

/// Runs the bench as `options` and the environment ask; writes the JSON and the report into
/// the output directory, and prints the report.
pub fn run(options: &Options) -> Result<Written> {
    let mut inputs = options.inputs()?;
    need_tools(&[
        "dnsperf", "knotd", "dig", "taskset", "setpriv", "ss", "cargo",
    ])?;
    if inputs.perf_churn.is_some() {
        need_tools(&["perf"])?;
    }
    let work = options.output.work(KIND)?;
    let out = options.output.dir()?;
    let coredns = crate::bench::node_cache::coredns_binary(options.coredns.as_deref())?;
    let bins = binaries(&inputs, options, work.path(), coredns)?;
    inputs.clusterdns = bins.clusterdns.display().to_string();
    inputs.coredns = bins.coredns.display().to_string();
    let peers = cluster::peers_dir()?;
    let started = crate::bench::now();
    let mut run = Run {
        bench: KIND.to_owned(),
        started: started.to_string(),
        machine: Machine::here(),
        versions: Versions {
            own: OwnVersion::of(&inputs.clusterdns),
            coredns: first_line(&inputs.coredns, &["-version"]),
            kube_apiserver: first_line(
                &peers.join("kube-apiserver").display().to_string(),
                &["--version"],
            ),
            dnsperf: crate::bench::dnsperf_version(),
        },
        inputs: inputs.clone(),
        scales: Vec::new(),
    };

    // The upstream `forward` points at: knotd with one zone of its own, REFUSED for
    // everything else.
    let dir = work.path().join("upstream");
    std::fs::create_dir_all(dir.join("zones"))?;
    std::fs::write(
        dir.join("zones/upstream.test.zone"),
        "$ORIGIN upstream.test.\n@ 3600 SOA ns hostmaster 1 3600 600 86400 60\n@ 3600 NS ns\nns 3600 A 127.0.0.1\n",
    )?;
    let upstream = free_ports(1)?[0];
    write_knot_conf(&dir, upstream, 1, &["upstream.test"])?;
    let conf = dir.join("knot.conf");
    let mut knotd = Server::start(
        "knotd",
        upstream,
        inputs.client_cpu,
        Path::new("knotd"),
        &[std::ffi::OsStr::new("-c"), conf.as_os_str()],
        &dir.join("knotd.log"),
    )?;
    knotd.wait_ready("upstream.test", Duration::from_secs(30), false)?;

    let bench = Bench {
        inputs: &inputs,
        bins,
        work: work.path().to_owned(),
        hz: clock_ticks()?,
        upstream,
        corefile: crate::operations::configmap_corefile()?,
        runtime: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?,
    };
    if !bench
        .corefile
        .contains("snapshot /var/lib/clusterdns/snapshot.json")
    {
        bail!("deploy/configmap.yaml: no snapshot line to adapt");
    }
    let stamp = stamp(started);
    for &services in &inputs.scales {
        let scale = bench.scale(services, &peers)?;
        let mismatches = bench.work.join(format!("s{services}/mismatches.txt"));
        if mismatches.is_file() {
            let to = out.join(format!("vs-coredns-{stamp}-{services}-mismatches.txt"));
            std::fs::copy(&mismatches, &to)
                .with_context(|| format!("copying {}", mismatches.display()))?;
        }
        run.scales.push(scale);
    }
    drop(knotd);

    let markdown = out.join(format!("vs-coredns-{stamp}.md"));
    let json = out.join(format!("vs-coredns-{stamp}.json"));
    write_json(&json, &run)?;
    let text = report::report(&run)?;
    std::fs::write(&markdown, &text).with_context(|| format!("writing {}", markdown.display()))?;
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

/// The binaries: built ([`super::super::build_release`], and the release xtask), or with
/// `no_build` the release binaries as they are, copied into the work directory.
fn binaries(inputs: &Inputs, options: &Options, work: &Path, coredns: PathBuf) -> Result<Bins> {
    let clusterdns = options.build.binary();
    let target = crate::bench::target_dir()?;
    if inputs.no_build {
        let bin = work.join("bin");
        std::fs::create_dir_all(&bin)?;
        let copy = |from: PathBuf| -> Result<PathBuf> {
            let name = from.file_name().context("a binary's name")?;
            let to = bin.join(name);
            std::fs::copy(&from, &to)
                .with_context(|| format!("copying {} (NO_BUILD)", from.display()))?;
            Ok(to)
        };
        return Ok(Bins {
            clusterdns: copy(clusterdns.unwrap_or_else(|| target.join("release/clusterdns")))?,
            gencluster: copy(target.join("release/examples/gencluster"))?,
            querymix: copy(target.join("release/examples/querymix"))?,
            xtask: copy(target.join("release/xtask"))?,
            coredns,
        });
    }
    let log_file = work.join("build.log");
    let built = build_release(KIND, &inputs.profile, clusterdns.as_deref(), &log_file)?;
    // The loader, optimised: it serialises and sends 150,000 objects.
    crate::bench::run_to_file(
        crate::bench::cargo()
            .args(["build", "--release", "--package", "xtask"])
            .current_dir(crate::root()),
        &work.join("build-xtask.log"),
    )
    .context("cargo build --release --package xtask")?;
    Ok(Bins {
        clusterdns: built.clusterdns,
        gencluster: built.gencluster,
        querymix: built.querymix,
        xtask: target.join("release/xtask"),
        coredns,
    })
}

/// `n` free ports on 127.0.0.1, held together while chosen (so they differ).
fn free_ports(n: usize) -> Result<Vec<u16>> {
    let held = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .context("binding 127.0.0.1:0")?;
    held.iter().map(|l| Ok(l.local_addr()?.port())).collect()
}

/// A `NAME: N kB` figure of /proc/PID/status.
fn proc_kb(pid: u32, name: &str) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    status_kb(&text, name).with_context(|| format!("{path}: no {name}"))
}

/// utime+stime of a process, in clock ticks.
fn proc_ticks(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    crate::bench::cpu_ticks(&text).with_context(|| format!("{path}: {text}"))
}

/// The local control plane of one scale, taken down when dropped.
struct Plane {
    cluster: Cluster,
    plane: ControlPlane,
    kubectl: Kubectl,
    audit: PathBuf,
}

impl Plane {
    fn pid(&self, component: Component) -> Result<u32> {
        let path = self.cluster.dir().join(format!("pid/{component}.pid"));
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        text.trim()
            .parse()
            .with_context(|| format!("{}: {text:?}", path.display()))
    }

    fn apiserver(&self) -> Result<u32> {
        self.pid(Component::KubeApiserver)
    }

    /// `account`'s requests in the audit log between two marks.
    fn requests(&self, from: u64, to: u64, which: Which) -> Result<Requests> {
        let text = audit_between(&self.audit, from, to)?;
        Ok(audit_requests(&text, &service_account(which.account())))
    }
}

impl Drop for Plane {
    fn drop(&mut self) {
        if let Err(error) = self.cluster.down() {
            log(KIND, format!("the control plane: {error:#}"));
        }
    }
}

/// One server started for the bench.
struct Instance {
    which: Which,
    server: Server,
    dns: u16,
    ready: u16,
    log: PathBuf,
}

impl Instance {
    fn pid(&self) -> u32 {
        self.server.pid()
    }

    fn is_ready(&self) -> bool {
        http_status(self.ready, "/ready") == Some(200)
    }

    fn check_running(&mut self) -> Result<()> {
        self.server
            .check_running()
            .with_context(|| format!("see {}", self.log.display()))
    }
}

/// The Deployments the latency and churn phases scale (headless Services: their addresses
/// are answered), on the control plane's kwok nodes or any other.
pub fn workload(churn_deployments: u32) -> String {
    let mut text = String::from("apiVersion: v1\nkind: Namespace\nmetadata: {name: vs-probe}\n");
    let mut one = |name: &str| {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: vs-probe}}\nspec: {{clusterIP: None, selector: {{app: {name}}}, ports: [{{name: http, port: 80}}]}}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: vs-probe}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec: {{containers: [{{name: c, image: {image}}}], terminationGracePeriodSeconds: 0}}\n",
            image = if name == "probe-hl" { "probe" } else { "churn" }
        ));
    };
    one("probe-hl");
    for i in 0..churn_deployments {
        one(&format!("churn-{i}"));
    }
    text
}

/// Nodes beyond the control plane's own kwok-node-N: bench-node-I for I in `from..to`, with
/// a /24 each from 10.248.0.0/13 (IPv4 only), as `cargo xtask load` places its pods.
pub fn bench_nodes(from: u32, to: u32) -> String {
    let mut text = String::new();
    for i in from..to {
        let cidr = format!("10.{}.{}.0/24", 248 + i / 256, i % 256);
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: bench-node-{i}\n  annotations: {{kwok.x-k8s.io/node: fake}}\n  labels: {{type: kwok, kubernetes.io/hostname: bench-node-{i}, kubernetes.io/os: linux, topology.kubernetes.io/zone: zone-{}}}\nspec:\n  podCIDR: {cidr}\n  podCIDRs: [{cidr}]\n",
            i % 2
        ));
    }
    text
}

/// A kubeconfig for `user`'s `token` on the API server at `port`.
pub fn kubeconfig(user: &str, token: &str, port: u16, ca: &Path) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster: {{server: \"https://127.0.0.1:{port}\", certificate-authority: \"{}\"}}\nusers:\n- name: {user}\n  user: {{token: \"{token}\"}}\ncontexts:\n- name: {user}\n  context: {{cluster: local, user: {user}}}\ncurrent-context: {user}\n",
        ca.display()
    )
}

/// The ports of one instance on 127.0.0.1.
#[derive(Debug, Clone, Copy)]
pub struct InstancePorts {
    pub dns: u16,
    pub health: u16,
    pub ready: u16,
    pub metrics: u16,
}

/// kubeadm's Corefile (`base`) for one instance: on loopback `ports`, `forward` to the
/// upstream, `pods MODE`, and in place of the ConfigMap's `snapshot` line the connection:
/// `kubeconfig FILE`, after `snapshot SNAPSHOT` for clusterdns when it keeps one.
pub fn instance_corefile(
    base: &str,
    ports: InstancePorts,
    upstream: u16,
    pods: &str,
    kubeconfig: &Path,
    snapshot: Option<&Path>,
) -> String {
    let mut text = String::new();
    for line in base.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [".:53", "{"] => {
                text.push_str(&format!(".:{} {{\n    bind 127.0.0.1\n", ports.dns));
            }
            ["health", "{"] => {
                text.push_str(&format!("{indent}health 127.0.0.1:{} {{\n", ports.health));
            }
            ["ready"] => text.push_str(&format!("{indent}ready 127.0.0.1:{}\n", ports.ready)),
            ["prometheus", ..] => {
                text.push_str(&format!("{indent}prometheus 127.0.0.1:{}\n", ports.metrics));
            }
            ["forward", ".", "/etc/resolv.conf", rest @ ..] => {
                text.push_str(&format!("{indent}forward . 127.0.0.1:{upstream}"));
                for word in rest {
                    text.push(' ');
                    text.push_str(word);
                }
                text.push('\n');
            }
            ["pods", _] => text.push_str(&format!("{indent}pods {pods}\n")),
            ["snapshot", ..] => {
                if let Some(snapshot) = snapshot {
                    text.push_str(&format!("{indent}snapshot {}\n", snapshot.display()));
                }
                text.push_str(&format!("{indent}kubeconfig {}\n", kubeconfig.display()));
            }
            _ => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    text
}

/// The samples of one group's connections.
fn ss_sample(api_port: u16, pids: &BTreeSet<u32>, into: &mut Vec<SocketReading>) -> Result<()> {
    let output = Command::new("ss")
        .args(["-tinpH", "state", "established"])
        .arg(format!("( dport = :{api_port} )"))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .context("running ss")?;
    into.extend(parse::socket_readings(
        &String::from_utf8_lossy(&output.stdout),
        pids,
    ));
    Ok(())
}

impl Bench<'_> {
    fn say(&self, message: impl std::fmt::Display) {
        log(KIND, message);
    }

    fn cpu_s(&self, before: u64, after: u64) -> f64 {
        after.saturating_sub(before) as f64 / self.hz
    }

    /// A fresh control plane: deploy/'s ServiceAccount and ClusterRole, a second account for
    /// clusterdns bound to it too, a kubeconfig with a TokenRequest token for each, the
    /// workload the latency and churn phases scale.
    fn cluster_up(&self, peers: &Path) -> Result<Plane> {
        let cluster = Cluster::new(&self.work.join("cluster"))?;
        let _ = cluster.down();
        self.say("starting the control plane");
        cluster
            .up(
                peers,
                &cluster::Options {
                    owner: Some(std::process::id()),
                    ..cluster::Options::default()
                },
            )
            .context("cargo xtask cluster up")?;
        let plane = ControlPlane::from_dir(cluster.dir())?;
        let kubectl = plane.kubectl();
        let audit = cluster.dir().join("log/audit.log");
        let plane = Plane {
            cluster,
            plane,
            kubectl,
            audit,
        };
        let kubectl = &plane.kubectl;
        let rbac = std::fs::read_to_string(crate::root().join("deploy/rbac.yaml"))?;
        kubectl.apply(&rbac)?;
        kubectl.run(&[
            "create",
            "serviceaccount",
            "clusterdns",
            "-n",
            "kube-system",
        ])?;
        kubectl.run(&[
            "create",
            "clusterrolebinding",
            "system:clusterdns",
            "--clusterrole",
            "system:coredns",
            "--serviceaccount",
            "kube-system:clusterdns",
        ])?;
        for which in Which::BOTH {
            let token = kubectl.run(&[
                "create",
                "token",
                which.account(),
                "-n",
                "kube-system",
                "--duration",
                "6h",
            ])?;
            std::fs::write(
                self.work.join(format!("{}.kubeconfig", which.as_str())),
                kubeconfig(
                    which.as_str(),
                    token.trim(),
                    plane.plane.api_port,
                    &plane.plane.ca().0,
                ),
            )?;
        }
        kubectl.run_with(
            &["apply", "-f", "-"],
            &workload(self.inputs.churn_deployments),
        )?;
        Ok(plane)
    }

    /// Writes the Corefile of instance `id` in its directory and starts it on `cpu`.
    fn start_instance(&self, id: &str, which: Which, pods: &str, cpu: u32) -> Result<Instance> {
        let dir = self.work.join(id);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let [dns, health, ready, metrics] = free_ports(4)?[..] else {
            bail!("four ports");
        };
        let ports = InstancePorts {
            dns,
            health,
            ready,
            metrics,
        };
        let snapshot = dir.join("snapshot.json");
        let corefile = instance_corefile(
            &self.corefile,
            ports,
            self.upstream,
            pods,
            &self.work.join(format!("{}.kubeconfig", which.as_str())),
            (which == Which::Clusterdns && self.inputs.snapshot).then_some(snapshot.as_path()),
        );
        let path = dir.join("Corefile");
        std::fs::write(&path, corefile)?;
        let log = dir.join("log");
        let server = match which {
            Which::Coredns => Server::start(
                id,
                dns,
                cpu,
                &self.bins.coredns,
                &[std::ffi::OsStr::new("-conf"), path.as_os_str()],
                &log,
            )?,
            Which::Clusterdns => Server::start(
                id,
                dns,
                cpu,
                &self.bins.clusterdns,
                &[
                    std::ffi::OsStr::new("serve"),
                    std::ffi::OsStr::new("--corefile"),
                    path.as_os_str(),
                ],
                &log,
            )?,
        };
        Ok(Instance {
            which,
            server,
            dns,
            ready,
            log,
        })
    }

    /// One scale: a fresh control plane, loaded; unless load only, the four phases.
    fn scale(&self, services: u32, peers: &Path) -> Result<Scale> {
        let start = Instant::now();
        let inputs = self.inputs;
        let dir = self.work.join(format!("s{services}"));
        std::fs::create_dir_all(&dir)?;
        let plane = self.cluster_up(peers)?;
        let pods = services * inputs.pods_per_service;
        self.say(format!(
            "{services} Services, {pods} pods: generating and loading"
        ));
        let generated = dir.join("generated.json");
        crate::bench::run_to_file(
            Command::new(&self.bins.gencluster)
                .args(["--services", &services.to_string()])
                .args(["--pods", &pods.to_string()])
                .arg("--out")
                .arg(&generated),
            &dir.join("gencluster.txt"),
        )?;
        let nodes = (pods + 20).div_ceil(inputs.pods_per_node);
        plane
            .kubectl
            .run_with(&["apply", "-f", "-"], &bench_nodes(0, nodes))?;
        // gencluster's Namespaces, Pods (on bench-node-*, each given its status by the
        // loader) and Services (with their selectors) created through the API server; the
        // EndpointSlice controller writes the slices. Loaded when every pod has an address
        // and the slices hold them (bench/README.md, "Loading objects").
        let output = Command::new(&self.bins.xtask)
            .args(["load", "--objects"])
            .arg(&generated)
            .arg("--cluster")
            .arg(plane.cluster.dir())
            .args(["--pods-per-node", &inputs.pods_per_node.to_string()])
            .args(["--concurrency", &inputs.load_concurrency.to_string()])
            .arg("--wait")
            .stdin(Stdio::null())
            .output()
            .context("running cargo xtask load")?;
        std::fs::write(dir.join("load.txt"), &output.stderr)?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let lines = match parse::load_lines(&stdout) {
            Ok(lines) if output.status.success() => lines,
            _ => bail!(
                "cargo xtask load failed ({}):\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ),
        };
        if lines.failures > 0 {
            for line in String::from_utf8_lossy(&output.stderr).lines() {
                if !line.starts_with("[load]") {
                    eprintln!("{line}");
                }
            }
            self.say(format!(
                "warning: {} objects refused (see above)",
                lines.failures
            ));
        }
        let mut load = Load { lines, peak: None };
        if inputs.load_only {
            let etcd = plane.cluster.dir().join("etcd");
            load.peak = Some(LoadPeak {
                apiserver_hwm_kb: proc_kb(plane.apiserver()?, "VmHWM")?,
                etcd_hwm_kb: proc_kb(plane.pid(Component::Etcd)?, "VmHWM")?,
                etcd_data_mb: du_mb(&etcd)?,
            });
        }
        self.say(report::loading(services, &load));
        if inputs.load_only {
            if !super::super::env_set("KEEP") {
                let _ = std::fs::remove_file(&generated);
            }
            return Ok(Scale {
                services,
                pods,
                load,
                measured: None,
                ratios: None,
                took_s: start.elapsed().as_secs_f64(),
            });
        }
        let measured = self.measure(&plane, &dir, services)?;
        if !super::super::env_set("KEEP") {
            let _ = std::fs::remove_file(&generated);
            let _ = std::fs::remove_file(dir.join("objects.json"));
        }
        drop(plane);
        Ok(Scale {
            services,
            pods,
            load,
            ratios: Some(super::Ratios::of(&measured, inputs.replicas)),
            measured: Some(measured),
            took_s: start.elapsed().as_secs_f64(),
        })
    }

    /// The four phases of one loaded scale.
    fn measure(&self, plane: &Plane, dir: &Path, services: u32) -> Result<Measured> {
        let inputs = self.inputs;
        // What `kubectl get ns,svc,endpointslices,pods -A -o json` prints, page by page.
        let objects = dir.join("objects.json");
        let output = Command::new(&self.bins.xtask)
            .args(["dump", "--cluster"])
            .arg(plane.cluster.dir())
            .arg("--out")
            .arg(&objects)
            .stdin(Stdio::null())
            .output()
            .context("running cargo xtask dump")?;
        let [_, total_services, _, total_pods] =
            parse::dump_line(&String::from_utf8_lossy(&output.stdout))
                .with_context(|| String::from_utf8_lossy(&output.stderr).into_owned())?;
        let queries = dir.join("queries.txt");
        crate::bench::run_to_file(
            Command::new(&self.bins.querymix)
                .arg("--objects")
                .arg(&objects)
                .args(["--count", &inputs.queries.to_string()])
                .arg("--out")
                .arg(&queries),
            &dir.join("querymix.txt"),
        )?;

        // 1. Each alone, then REPLICAS of each, against the API server.
        let mut groups = Vec::new();
        for pods in ["insecure", "verified"] {
            for which in Which::BOTH {
                self.say(format!(
                    "{services} Services: {} alone, pods {pods}",
                    which.as_str()
                ));
                let group =
                    self.measure_group(plane, which, pods, 1, &format!("s{services}-{pods}"))?;
                self.say(format!("  {group:?}"));
                groups.push(group);
                std::thread::sleep(Duration::from_secs(2));
            }
        }
        for which in Which::BOTH {
            self.say(format!(
                "{services} Services: {} replicas of {}",
                inputs.replicas,
                which.as_str()
            ));
            let group = self.measure_group(
                plane,
                which,
                "insecure",
                inputs.replicas,
                &format!("s{services}-x{}", inputs.replicas),
            )?;
            self.say(format!("  {group:?}"));
            groups.push(group);
            std::thread::sleep(Duration::from_secs(2));
        }

        // 2. One of each, together, pinned to SERVER_CPU: answers, dnsperf.
        self.say(format!(
            "{services} Services: one of each together, pinned to CPU {}",
            inputs.server_cpu
        ));
        let mut c = self.start_instance("c", Which::Coredns, "insecure", inputs.server_cpu)?;
        let mut d = self.start_instance("d", Which::Clusterdns, "insecure", inputs.server_cpu)?;
        let deadline = Instant::now() + Duration::from_secs(600);
        while !(c.is_ready() && d.is_ready()) {
            c.check_running()?;
            d.check_running()?;
            if Instant::now() > deadline {
                bail!("the servers were not ready within 600 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let check = self.check(&c, &d, &queries, &dir.join("mismatches.txt"))?;
        self.say(format!(
            "{services} Services: {} distinct questions asked of both, {} mismatches",
            check.asked, check.mismatches
        ));
        let mut runs = Vec::new();
        for instance in [&c, &d] {
            self.say(format!(
                "{services} Services: dnsperf against {}",
                instance.which.as_str()
            ));
            runs.push(self.dnsperf_runs(instance, &queries, dir)?);
        }
        let dnsperf = Pair {
            coredns: runs[0],
            clusterdns: runs[1],
        };

        // 3. Programming latency and churn: both on CPUs 0-1 so that neither waits for the
        // other.
        for instance in [&c, &d] {
            let status = Command::new("taskset")
                .args(["-a", "-p", "-c", "0,1", &instance.pid().to_string()])
                .stdout(Stdio::null())
                .status()?;
            if !status.success() {
                bail!("taskset -a -p -c 0,1 {}: {status}", instance.pid());
            }
        }
        let client = self
            .runtime
            .block_on(crate::load::client(&plane.plane.kubeconfig))?;
        let target = Target {
            ports: [c.dns, d.dns],
            namespace: "vs-probe".to_owned(),
            deployment: "probe-hl".to_owned(),
        };
        let mut latency = Vec::new();
        let mut churn = None;
        for phase in ["idle", "churn"] {
            let churning = if phase == "churn" {
                let (churning, measured) = self.churn(plane, &c, &d, services)?;
                churn = Some(measured);
                Some(churning)
            } else {
                None
            };
            self.say(format!("{services} Services: programming latency, {phase}"));
            let tag = format!("{services}-{phase}");
            let new_service =
                self.runtime
                    .block_on(probe::services(&client, &target, inputs.samples, &tag))?;
            let scale_up =
                self.runtime
                    .block_on(probe::scale_ups(&client, &target, inputs.samples))?;
            latency.push(LatencyPhase {
                phase: phase.to_owned(),
                new_service,
                scale_up,
            });
            if let Some(churning) = churning {
                churning.stop();
                for i in 0..inputs.churn_deployments {
                    plane.kubectl.run(&[
                        "scale",
                        "deployment",
                        &format!("churn-{i}"),
                        "-n",
                        "vs-probe",
                        "--replicas=1",
                    ])?;
                }
            }
        }
        let churn = churn.context("no churn phase")?;

        // 4. A full re-list: the API server restarted under both; their peak RSS meanwhile.
        let relist = self.relist(plane, &c, &d, services)?;
        c.server.kill();
        d.server.kill();
        Ok(Measured {
            total_services,
            total_pods,
            groups,
            check,
            dnsperf,
            churn,
            latency,
            relist,
        })
    }

    /// One group: `count` instances of `which` with `pods MODE`, started together, alone
    /// against the API server.
    fn measure_group(
        &self,
        plane: &Plane,
        which: Which,
        pods: &str,
        count: u32,
        tag: &str,
    ) -> Result<Group> {
        let api = plane.apiserver()?;
        let api_port = plane.plane.api_port;
        // The API server's heap collected first: with GOGC=400 its collector runs seldom,
        // and a cycle (about a second of CPU at 30,000 pods) would otherwise fall to
        // whichever group allocates past the threshold, usually the one after the group
        // that made the garbage.
        plane
            .kubectl
            .run(&["get", "--raw", "/debug/pprof/heap?gc=1"])
            .context("collecting the API server's heap (/debug/pprof/heap?gc=1)")?;
        std::thread::sleep(Duration::from_secs(1));
        let a0 = audit_mark(&plane.audit)?;
        let r0 = proc_kb(api, "VmRSS")?;
        let c0 = proc_ticks(api)?;
        let t0 = Instant::now();
        let mut instances = Vec::new();
        for i in 0..count {
            let id = format!("{tag}-{}-{i}", which.as_str());
            instances.push(self.start_instance(&id, which, pods, self.inputs.server_cpu)?);
        }
        let pids: BTreeSet<u32> = instances.iter().map(Instance::pid).collect();
        let mut readings = Vec::new();
        let mut peak = 0;
        loop {
            let mut all = true;
            for instance in &mut instances {
                instance.check_running()?;
                if !instance.is_ready() {
                    all = false;
                    break;
                }
            }
            if all {
                break;
            }
            peak = peak.max(proc_kb(api, "VmRSS")?);
            ss_sample(api_port, &pids, &mut readings)?;
            if t0.elapsed() > Duration::from_secs(600) {
                bail!("{} not ready within 600 s", which.as_str());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let ready_s = t0.elapsed().as_secs_f64();
        let c1 = proc_ticks(api)?;
        let mut rss_sync = 0;
        for instance in &instances {
            rss_sync += proc_kb(instance.pid(), "VmRSS")?;
        }
        ss_sample(api_port, &pids, &mut readings)?;
        for _ in 0..self.inputs.steady_s {
            std::thread::sleep(Duration::from_secs(1));
            ss_sample(api_port, &pids, &mut readings)?;
        }
        let c2 = proc_ticks(api)?;
        peak = peak.max(proc_kb(api, "VmRSS")?);
        let mut rss_steady = 0;
        for instance in &instances {
            rss_steady += proc_kb(instance.pid(), "VmRSS")?;
        }
        let (received_bytes, sent_bytes) = parse::socket_totals(&readings);
        // The audit log is written a moment after the request.
        std::thread::sleep(Duration::from_secs(1));
        let a1 = audit_mark(&plane.audit)?;
        for instance in &mut instances {
            instance.server.kill();
        }
        Ok(Group {
            server: which,
            pods: pods.to_owned(),
            replicas: count,
            ready_s,
            rss_sync_kb: rss_sync / u64::from(count),
            rss_steady_kb: rss_steady / u64::from(count),
            api_cpu_sync_s: self.cpu_s(c0, c1),
            api_cpu_steady_s: self.cpu_s(c1, c2),
            api_rss_growth_kb: peak.saturating_sub(r0),
            requests: plane.requests(a0, a1, which)?,
            received_bytes,
            sent_bytes,
        })
    }

    /// The first CHECK distinct questions of the query file asked of both with dig; the
    /// mismatches written to `mismatches`.
    fn check(
        &self,
        c: &Instance,
        d: &Instance,
        queries: &Path,
        mismatches: &Path,
    ) -> Result<Check> {
        let text = std::fs::read_to_string(queries)?;
        let mut asked = 0;
        let mut lines = String::new();
        let mut count = 0;
        for (name, qtype) in distinct_questions(&text, self.inputs.check as usize) {
            let a = ask(c.dns, &name, &qtype)?;
            let b = ask(d.dns, &name, &qtype)?;
            asked += 1;
            if a != b {
                count += 1;
                lines.push_str(&format!(
                    "MISMATCH {name} {qtype}\n  coredns:    {a}\n  clusterdns: {b}\n"
                ));
            }
        }
        if count > 0 {
            std::fs::write(mismatches, &lines)?;
        }
        let first = (count > 0).then(|| {
            let three: Vec<&str> = lines.lines().take(3).collect();
            three
                .join(" ")
                .split(' ')
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        });
        Ok(Check {
            asked,
            mismatches: count,
            first,
        })
    }

    /// dnsperf against one instance, pinned: the warm-up, UDP and TCP saturating, the fixed
    /// rate.
    fn dnsperf_runs(&self, instance: &Instance, queries: &Path, dir: &Path) -> Result<Dnsperf> {
        let inputs = self.inputs;
        let id = match instance.which {
            Which::Coredns => "c",
            Which::Clusterdns => "d",
        };
        let seconds = |s: u32| vec!["-l".to_owned(), s.to_string()];
        let udp = Transport::Udp.dnsperf_args();
        dnsperf(
            inputs.client_cpu,
            instance.dns,
            queries,
            &udp,
            &seconds(inputs.warmup_s),
            &dir.join(format!("{id}.warmup.txt")),
        )?;
        let one = |suffix: &str, args: &[String], extra: &[String]| -> Result<DnsperfRun> {
            let output = dir.join(format!("{id}.{suffix}.txt"));
            let before = proc_ticks(instance.pid())?;
            dnsperf(
                inputs.client_cpu,
                instance.dns,
                queries,
                args,
                extra,
                &output,
            )?;
            let after = proc_ticks(instance.pid())?;
            let counts = dnsperf_counts(&std::fs::read_to_string(&output)?)
                .with_context(|| output.display().to_string())?;
            Ok(DnsperfRun {
                qps: counts.qps,
                completed: counts.completed,
                lost: counts.lost,
                cpu_s: self.cpu_s(before, after),
            })
        };
        let mut fixed = vec!["-Q".to_owned(), inputs.fixed_qps.to_string()];
        fixed.extend(seconds(inputs.duration_s));
        Ok(Dnsperf {
            udp: one("udp", &udp, &seconds(inputs.duration_s))?,
            tcp: one(
                "tcp",
                &Transport::Tcp.dnsperf_args(),
                &seconds(inputs.duration_s),
            )?,
            fixed: one("fixed", &udp, &fixed)?,
        })
    }

    /// Starts the churn, waits until it runs, then reads both servers' CPU over the window
    /// (clusterdns recorded by perf meanwhile if asked). The churn keeps going.
    fn churn(
        &self,
        plane: &Plane,
        c: &Instance,
        d: &Instance,
        services: u32,
    ) -> Result<(Churning, Churn)> {
        let inputs = self.inputs;
        let churning = Churning::start(
            plane.kubectl.clone(),
            inputs.churn_deployments,
            inputs.churn_high,
            Duration::from_secs_f64(inputs.churn_period_s),
        );
        while churning.rounds.load(Ordering::Relaxed) == 0 {
            if churning.failed.load(Ordering::Relaxed) {
                bail!("the churn's kubectl scale failed");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        std::thread::sleep(Duration::from_secs(2));
        self.say(format!(
            "{services} Services: server CPU over {} s of churn",
            inputs.churn_window_s
        ));
        let (c0, d0) = (proc_ticks(c.pid())?, proc_ticks(d.pid())?);
        let n0 = churning.rounds.load(Ordering::Relaxed);
        let window = Duration::from_secs(u64::from(inputs.churn_window_s));
        if let Some(file) = &inputs.perf_churn {
            // A profile of clusterdns over the window (its overhead counts in the figure).
            let _ = Command::new("perf")
                .args([
                    "record",
                    "-q",
                    "-F",
                    "2000",
                    "--call-graph",
                    "dwarf,16384",
                    "-p",
                ])
                .arg(d.pid().to_string())
                .args(["-o", file, "--", "sleep"])
                .arg(inputs.churn_window_s.to_string())
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .context("running perf record")?;
        } else {
            std::thread::sleep(window);
        }
        let (c1, d1) = (proc_ticks(c.pid())?, proc_ticks(d.pid())?);
        let n1 = churning.rounds.load(Ordering::Relaxed);
        Ok((
            churning,
            Churn {
                window_s: inputs.churn_window_s,
                rounds: n1 - n0,
                cpu_s: Pair {
                    coredns: self.cpu_s(c0, c1),
                    clusterdns: self.cpu_s(d0, d1),
                },
            },
        ))
    }

    /// The API server restarted under both: each one's VmHWM (reset before) once both have
    /// read the whole state again, and 5 s more.
    fn relist(
        &self,
        plane: &Plane,
        c: &Instance,
        d: &Instance,
        services: u32,
    ) -> Result<Pair<Relist>> {
        self.say(format!(
            "{services} Services: restarting kube-apiserver (both re-list)"
        ));
        for instance in [c, d] {
            let path = format!("/proc/{}/clear_refs", instance.pid());
            std::fs::write(&path, "5").with_context(|| format!("writing {path}"))?;
        }
        let a0 = audit_mark(&plane.audit)?;
        plane
            .cluster
            .restart(Component::KubeApiserver)
            .context("kube-apiserver did not come back")?;
        // Until each has read the whole state again (a list or a WatchList in the audit
        // log), then 5 s more.
        let deadline = Instant::now() + Duration::from_secs(120 + u64::from(services / 100));
        while Instant::now() < deadline {
            let a1 = audit_mark(&plane.audit)?;
            if plane.requests(a0, a1, Which::Coredns)?.initial > 0
                && plane.requests(a0, a1, Which::Clusterdns)?.initial > 0
            {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        std::thread::sleep(Duration::from_secs(5));
        let a1 = audit_mark(&plane.audit)?;
        Ok(Pair {
            coredns: Relist {
                requests: plane.requests(a0, a1, Which::Coredns)?,
                hwm_kb: proc_kb(c.pid(), "VmHWM")?,
            },
            clusterdns: Relist {
                requests: plane.requests(a0, a1, Which::Clusterdns)?,
                hwm_kb: proc_kb(d.pid(), "VmHWM")?,
            },
        })
    }
}

/// `du -sm DIR`.
fn du_mb(dir: &Path) -> Result<u64> {
    let output = Command::new("du").arg("-sm").arg(dir).output()?;
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("du -sm {}", dir.display()))
}

/// The churn: a thread scaling the churning Deployments 1 <-> high every period with kubectl;
/// `rounds` counts its rounds.
struct Churning {
    rounds: Arc<AtomicU64>,
    failed: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Churning {
    fn start(kubectl: Kubectl, deployments: u32, high: u32, period: Duration) -> Self {
        let rounds = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (rounds, failed, stop) = (rounds.clone(), failed.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n: u64 = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let replicas = if n % 2 == 1 { high } else { 1 };
                    for i in 0..deployments {
                        let scaled = kubectl.run(&[
                            "scale",
                            "deployment",
                            &format!("churn-{i}"),
                            "-n",
                            "vs-probe",
                            &format!("--replicas={replicas}"),
                        ]);
                        if let Err(error) = scaled {
                            log(KIND, format!("churn: {error:#}"));
                            failed.store(true, Ordering::Relaxed);
                        }
                    }
                    rounds.store(n, Ordering::Relaxed);
                    std::thread::sleep(period);
                }
            })
        };
        Self {
            rounds,
            failed,
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Churning {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn each_instance_gets_kubeadms_corefile_on_its_ports_and_account() {
        let base = crate::operations::configmap_corefile().unwrap();
        let ports = InstancePorts {
            dns: 40001,
            health: 40002,
            ready: 40003,
            metrics: 40004,
        };
        let kubeconfig = Path::new("/w/clusterdns.kubeconfig");
        let clusterdns = instance_corefile(
            &base,
            ports,
            40100,
            "verified",
            kubeconfig,
            Some(Path::new("/w/d/snapshot.json")),
        );
        assert_eq!(
            clusterdns,
            ".:40001 {
    bind 127.0.0.1
    errors
    health 127.0.0.1:40002 {
       lameduck 5s
    }
    ready 127.0.0.1:40003
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods verified
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
       snapshot /w/d/snapshot.json
       kubeconfig /w/clusterdns.kubeconfig
    }
    prometheus 127.0.0.1:40004
    forward . 127.0.0.1:40100 {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
"
        );
        // CoreDNS (or clusterdns with SNAPSHOT=0): the connection alone.
        let coredns = instance_corefile(
            &base,
            ports,
            40100,
            "insecure",
            Path::new("/w/coredns.kubeconfig"),
            None,
        );
        assert!(coredns.contains("       pods insecure\n"), "{coredns}");
        assert!(
            coredns.contains("       ttl 30\n       kubeconfig /w/coredns.kubeconfig\n    }\n"),
            "{coredns}"
        );
        assert!(!coredns.contains("snapshot"), "{coredns}");
    }

    #[test]
    fn bench_nodes_get_a_slash_24_each() {
        let nodes = bench_nodes(255, 257);
        assert_eq!(nodes.matches("kind: Node").count(), 2);
        assert!(nodes.contains("  name: bench-node-255\n"), "{nodes}");
        assert!(nodes.contains("podCIDRs: [10.248.255.0/24]"), "{nodes}");
        assert!(nodes.contains("podCIDR: 10.249.0.0/24"), "{nodes}");
        assert!(
            nodes.contains("topology.kubernetes.io/zone: zone-0}"),
            "{nodes}"
        );
        // The loader's addresses are in the same ranges.
        assert_eq!(crate::load::pod_ip(256, 0).to_string(), "10.249.0.1");
        assert!(bench_nodes(3, 3).is_empty());
    }

    #[test]
    fn the_workload_has_the_probe_and_the_churning_deployments() {
        let yaml = workload(2);
        assert_eq!(yaml.matches("kind: Deployment").count(), 3);
        assert_eq!(yaml.matches("clusterIP: None").count(), 3);
        assert!(
            yaml.contains("metadata: {name: churn-1, namespace: vs-probe}"),
            "{yaml}"
        );
        assert!(yaml.contains("image: probe}"), "{yaml}");
        let config = kubeconfig("coredns", "tok", 6443, Path::new("/c/ca.crt"));
        assert!(
            config.contains(
                "server: \"https://127.0.0.1:6443\", certificate-authority: \"/c/ca.crt\""
            )
        );
        assert!(config.contains("user: {token: \"tok\"}"));
        assert!(config.ends_with("current-context: coredns\n"));
    }
}
