//! `cargo xtask bench list-mode`: the two ways the API watch can read its initial state,
//! measured on the real control plane (`cargo xtask cluster`; bench/README.md, "List modes"):
//! `list_mode paginated` (LIST in pages of 500, then a watch) and `list_mode streaming` (one
//! watch with sendInitialEvents=true, WatchList).
//!
//! On a local control plane of its own, the bench loads gencluster's Namespaces, Services and
//! EndpointSlices as they are — Services without their selectors and as ClusterIP, so that the
//! EndpointSlice controller leaves gencluster's slices alone and no NodePort range runs out;
//! their slices without ownerReferences, which name uids that do not exist here; no Pods: the
//! zone needs none with `pods insecure` ([`loadable`]). Then RUNS times, alternately, the
//! release binary starts with `list_mode paginated` and with `list_mode streaming`, as
//! ServiceAccount kube-system/coredns (deploy/rbac.yaml), 3 s after the previous one ended;
//! per start: the seconds to the first sync (its /ready says 200), clusterdns's peak RSS
//! (VmHWM), and the API server's CPU time and RSS growth meanwhile (VmRSS polled every 20 ms,
//! its peak over the RSS before the start). Both modes run in one cluster, so both see the
//! same machine.
//!
//! The results are one JSON document ([`Run`]) and the Markdown report rendered from it, both
//! in bench/out.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Build, BuildInputs, Machine, Output, OwnVersion, Server, first_line, fixed, http_status, keeps,
    knob, log, process_cpu_ticks, process_status_kb, ratio, run_to_file, stamp_of, write_json,
};
use crate::cluster::{self, Cluster};
use crate::kube::{ControlPlane, Kubectl};
use crate::root;

/// The `bench` of this bench's JSON documents.
pub const KIND: &str = "list-mode";

/// The pause before each start, so that the API server settles after the previous one.
const PAUSE: Duration = Duration::from_secs(3);

/// The knobs, each a flag or the environment variable bench/list-mode.sh read (in capitals).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_arg("keep", keeps("the objects, the cluster's logs, clusterdns's")))]
pub struct Options {
    /// Services of gencluster's cluster [env: SERVICES] [default: 2000].
    #[arg(long)]
    pub services: Option<u32>,
    /// Starts in each mode [env: RUNS] [default: 3].
    #[arg(long)]
    pub runs: Option<u32>,
    #[command(flatten)]
    pub build: Build,
    #[command(flatten)]
    pub output: Output,
}

/// A list mode of the kubernetes plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Paginated,
    Streaming,
}

impl Mode {
    pub const BOTH: [Self; 2] = [Self::Paginated, Self::Streaming];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Paginated => "paginated",
            Self::Streaming => "streaming",
        }
    }
}

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    pub services: u32,
    /// Starts in each mode.
    pub runs: u32,
    #[serde(flatten)]
    pub build: BuildInputs,
}

/// What each program was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    #[serde(flatten)]
    pub own: OwnVersion,
    /// `kube-apiserver --version`.
    pub kube_apiserver: String,
}

/// What the cluster held once loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Loaded {
    /// The time `kubectl create` took for the three lists.
    pub seconds: f64,
    /// Services and EndpointSlices the API server lists (its own included).
    pub services: u64,
    pub endpointslices: u64,
}

/// One start of clusterdns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Start {
    /// From 1.
    pub run: u32,
    pub mode: Mode,
    /// From the start of the process to its /ready's first 200.
    pub sync_s: f64,
    /// clusterdns's VmHWM when ready.
    pub clusterdns_peak_kb: u64,
    /// The API server's utime+stime meanwhile.
    pub apiserver_cpu_s: f64,
    /// The API server's peak VmRSS meanwhile over its VmRSS before the start (0 if none).
    pub apiserver_rss_growth_kb: u64,
}

/// One mode's means over its starts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Means {
    pub starts: usize,
    pub sync_s: f64,
    pub clusterdns_peak_mb: f64,
    pub apiserver_cpu_s: f64,
    pub apiserver_rss_growth_mb: f64,
}

impl Means {
    /// The means of `mode`'s starts among `starts`; none without one.
    pub fn of(starts: &[Start], mode: Mode) -> Option<Self> {
        let of: Vec<&Start> = starts.iter().filter(|s| s.mode == mode).collect();
        if of.is_empty() {
            return None;
        }
        let n = of.len() as f64;
        let mean = |f: &dyn Fn(&Start) -> f64| of.iter().map(|s| f(s)).sum::<f64>() / n;
        Some(Self {
            starts: of.len(),
            sync_s: mean(&|s| s.sync_s),
            clusterdns_peak_mb: mean(&|s| s.clusterdns_peak_kb as f64 / 1024.0),
            apiserver_cpu_s: mean(&|s| s.apiserver_cpu_s),
            apiserver_rss_growth_mb: mean(&|s| s.apiserver_rss_growth_kb as f64 / 1024.0),
        })
    }
}

/// Streaming's means over paginated's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratios {
    pub sync: Option<f64>,
    pub clusterdns_peak: Option<f64>,
    pub apiserver_cpu: Option<f64>,
}

impl Ratios {
    pub fn of(streaming: &Means, paginated: &Means) -> Self {
        Self {
            sync: ratio(streaming.sync_s, paginated.sync_s),
            clusterdns_peak: ratio(streaming.clusterdns_peak_mb, paginated.clusterdns_peak_mb),
            apiserver_cpu: ratio(streaming.apiserver_cpu_s, paginated.apiserver_cpu_s),
        }
    }
}

/// One run of the bench: the JSON document it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always "list-mode".
    pub bench: String,
    /// When it started, RFC 3339.
    pub started: String,
    pub inputs: Inputs,
    pub machine: Machine,
    pub versions: Versions,
    pub loaded: Loaded,
    pub starts: Vec<Start>,
    /// Per mode, when it has a start.
    pub means: BTreeMap<Mode, Means>,
    /// Streaming / paginated, when both have starts.
    pub ratios: Option<Ratios>,
}

impl Options {
    /// The inputs these options and the environment ask for (the binary still to be named).
    pub fn inputs(&self) -> Result<Inputs> {
        Ok(Inputs {
            services: knob(self.services, "SERVICES", 2000)?,
            runs: knob(self.runs, "RUNS", 3)?,
            build: self.build.inputs()?,
        })
    }
}

/// gencluster's objects as the bench loads them, one kubectl `List` per kind, created in this
/// order.
#[derive(Debug, Clone, PartialEq)]
pub struct Lists {
    pub namespaces: Vec<Value>,
    pub services: Vec<Value>,
    pub endpointslices: Vec<Value>,
}

impl Lists {
    /// Each list with its kind's name (the file it is written to).
    pub fn by_kind(&self) -> [(&'static str, &Vec<Value>); 3] {
        [
            ("Namespace", &self.namespaces),
            ("Service", &self.services),
            ("EndpointSlice", &self.endpointslices),
        ]
    }
}

/// The label gencluster's slices are loaded with, so that the EndpointSlice controller
/// leaves them alone.
pub const MANAGED_BY: &str = "gencluster.clusterdns.test";

/// gencluster's `items` as the API server takes them on a fresh cluster: the server-set
/// metadata (resourceVersion, uid, creationTimestamp, generation, managedFields) and
/// ownerReferences removed; no Namespace `default` or `kube-system`, no Service the cluster
/// has (default/kubernetes, kube-system/kube-dns), no slice default/kubernetes; Services
/// without selectors, NodePort and LoadBalancer ones as ClusterIP (without their node ports
/// and what goes with them), without status; slices labelled [`MANAGED_BY`]; no other kind.
pub fn loadable(items: Vec<Value>) -> Lists {
    let mut lists = Lists {
        namespaces: Vec::new(),
        services: Vec::new(),
        endpointslices: Vec::new(),
    };
    for mut item in items {
        let kind = item["kind"].as_str().unwrap_or_default().to_owned();
        if !matches!(kind.as_str(), "Namespace" | "Service" | "EndpointSlice") {
            continue;
        }
        let (namespace, name) = {
            let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut) else {
                continue;
            };
            for key in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "generation",
                "managedFields",
                "ownerReferences",
            ] {
                meta.remove(key);
            }
            let text = |key: &str| meta.get(key).and_then(Value::as_str).map(str::to_owned);
            (text("namespace"), text("name").unwrap_or_default())
        };
        match kind.as_str() {
            "Namespace" => {
                if name == "default" || name == "kube-system" {
                    continue;
                }
                lists.namespaces.push(item);
            }
            "Service" => {
                let existing = matches!(
                    (namespace.as_deref(), name.as_str()),
                    (Some("default"), "kubernetes") | (Some("kube-system"), "kube-dns")
                );
                if existing {
                    continue;
                }
                if let Some(spec) = item.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("selector");
                    if matches!(
                        spec.get("type").and_then(Value::as_str),
                        Some("NodePort" | "LoadBalancer")
                    ) {
                        spec.insert("type".to_owned(), Value::from("ClusterIP"));
                    }
                    for key in [
                        "allocateLoadBalancerNodePorts",
                        "externalTrafficPolicy",
                        "healthCheckNodePort",
                    ] {
                        spec.remove(key);
                    }
                    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                            port.remove("nodePort");
                        }
                    }
                }
                if let Some(object) = item.as_object_mut() {
                    object.remove("status");
                }
                lists.services.push(item);
            }
            _ => {
                if namespace.as_deref() == Some("default") && name == "kubernetes" {
                    continue;
                }
                let meta = &mut item["metadata"];
                if !meta["labels"].is_object() {
                    meta["labels"] = Value::Object(serde_json::Map::new());
                }
                meta["labels"]["endpointslice.kubernetes.io/managed-by"] = Value::from(MANAGED_BY);
                lists.endpointslices.push(item);
            }
        }
    }
    lists
}

/// A kubectl `List` of `items`.
pub fn list(items: &[Value]) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// The kubeconfig of ServiceAccount kube-system/coredns (its token) for the API server on
/// 127.0.0.1:`port` with the cluster's CA.
pub fn kubeconfig(port: u16, ca: &Path, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster: {{server: \"https://127.0.0.1:{port}\", certificate-authority: \"{}\"}}\nusers:\n- name: coredns\n  user: {{token: \"{token}\"}}\ncontexts:\n- name: coredns\n  context: {{cluster: local, user: coredns}}\ncurrent-context: coredns\n",
        ca.display()
    )
}

/// clusterdns's Corefile for one start: DNS and /ready on loopback, the kubernetes plugin on
/// `kubeconfig` with `list_mode MODE` and no start-up wait.
pub fn corefile(port: u16, ready: u16, kubeconfig: &Path, mode: Mode) -> String {
    format!(
        ".:{port} {{\n    bind 127.0.0.1\n    ready 127.0.0.1:{ready}\n    kubernetes cluster.local in-addr.arpa ip6.arpa {{\n        kubeconfig {}\n        pods insecure\n        list_mode {}\n        startup_timeout 0\n    }}\n}}\n",
        kubeconfig.display(),
        mode.as_str()
    )
}

/// Two free ports on 127.0.0.1 (held together while chosen, so they differ).
fn two_ports() -> Result<(u16, u16)> {
    let a = std::net::TcpListener::bind("127.0.0.1:0")?;
    let b = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok((a.local_addr()?.port(), b.local_addr()?.port()))
}

/// The rows of `kubectl get RESOURCE -A --no-headers`.
fn count(kubectl: &Kubectl, resource: &str) -> Result<u64> {
    let text = kubectl.run(&["get", resource, "-A", "--no-headers"])?;
    Ok(text.lines().filter(|l| !l.trim().is_empty()).count() as u64)
}

/// The control plane the bench brought up, taken down when dropped.
struct Plane(Cluster);

impl Drop for Plane {
    fn drop(&mut self) {
        if let Err(error) = self.0.down() {
            log(KIND, format!("taking the control plane down: {error:#}"));
        }
    }
}

/// Runs the bench as `options` and the environment ask; writes the report and the JSON into
/// the output directory, and prints the report.
pub fn run(options: &Options) -> Result<Written> {
    let mut inputs = options.inputs()?;
    let super::Started {
        work,
        binaries,
        build,
        hz,
        out,
        at: started,
    } = super::start(KIND, &["setpriv"], &options.output, &options.build)?;
    inputs.build = build;
    let dir = work.path();
    let peers = cluster::peers_dir()?;

    log(KIND, "starting the control plane");
    let plane = Plane(Cluster::new(&dir.join("cluster"))?);
    plane
        .0
        .up(
            &peers,
            &cluster::Options {
                owner: Some(std::process::id()),
                ..cluster::Options::default()
            },
        )
        .context("cargo xtask cluster up")?;
    let control = ControlPlane::from_dir(plane.0.dir())?;
    let kubectl = control.kubectl();
    let apiserver_pid: u32 = {
        let path = plane.0.dir().join("pid/kube-apiserver.pid");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        text.trim()
            .parse()
            .with_context(|| format!("{}: {text:?}", path.display()))?
    };
    let rbac = std::fs::read_to_string(root().join("deploy/rbac.yaml"))?;
    kubectl.apply(&rbac)?;

    log(KIND, format!("loading {} Services", inputs.services));
    let generated = dir.join("generated.json");
    run_to_file(
        Command::new(&binaries.gencluster)
            .args(["--services", &inputs.services.to_string(), "--out"])
            .arg(&generated),
        &dir.join("gencluster.txt"),
    )?;
    let items = {
        let text = std::fs::read(&generated)?;
        let mut value: Value = serde_json::from_slice(&text).context("gencluster's output")?;
        match value.get_mut("items").map(Value::take) {
            Some(Value::Array(items)) => items,
            _ => bail!("{}: no items", generated.display()),
        }
    };
    let lists = loadable(items);
    let mut files = Vec::new();
    for (kind, items) in lists.by_kind() {
        let path = dir.join(format!("{kind}.json"));
        std::fs::write(&path, serde_json::to_vec(&list(items))?)?;
        files.push(path);
    }
    // The load's time is kubectl's alone, as the script took it.
    let load_start = Instant::now();
    for path in &files {
        kubectl.run(&["create", "-f", &path.to_string_lossy()])?;
    }
    let loaded = Loaded {
        seconds: load_start.elapsed().as_secs_f64(),
        services: count(&kubectl, "services")?,
        endpointslices: count(&kubectl, "endpointslices")?,
    };
    log(
        KIND,
        format!(
            "loaded in {:.0} s: {} Services, {} EndpointSlices",
            loaded.seconds, loaded.services, loaded.endpointslices
        ),
    );

    let token = kubectl.run(&[
        "create",
        "token",
        "coredns",
        "-n",
        "kube-system",
        "--duration",
        "2h",
    ])?;
    let config = dir.join("kubeconfig");
    std::fs::write(
        &config,
        kubeconfig(control.api_port, &control.ca().0, token.trim()),
    )?;
    let versions = Versions {
        own: OwnVersion::of(&inputs.build.clusterdns),
        kube_apiserver: first_line(
            &peers.join("kube-apiserver").to_string_lossy(),
            &["--version"],
        ),
    };

    let mut starts = Vec::new();
    for run in 1..=inputs.runs {
        for mode in Mode::BOTH {
            std::thread::sleep(PAUSE);
            let start = measure(
                &binaries.clusterdns,
                dir,
                &config,
                mode,
                run,
                apiserver_pid,
                hz,
            )?;
            log(
                KIND,
                format!(
                    "{:<10}  sync {:.2} s, clusterdns peak {:.1} MB, API server CPU {:.2} s, RSS growth {:.1} MB",
                    mode.as_str(),
                    start.sync_s,
                    start.clusterdns_peak_kb as f64 / 1024.0,
                    start.apiserver_cpu_s,
                    start.apiserver_rss_growth_kb as f64 / 1024.0
                ),
            );
            starts.push(start);
        }
    }
    drop(plane);

    let means: BTreeMap<Mode, Means> = Mode::BOTH
        .into_iter()
        .filter_map(|mode| Some((mode, Means::of(&starts, mode)?)))
        .collect();
    let ratios = match (means.get(&Mode::Streaming), means.get(&Mode::Paginated)) {
        (Some(streaming), Some(paginated)) => Some(Ratios::of(streaming, paginated)),
        _ => None,
    };
    let run = Run {
        bench: KIND.to_owned(),
        started: started.to_string(),
        machine: Machine::here(),
        versions,
        inputs,
        loaded,
        starts,
        means,
        ratios,
    };
    let stamp = super::stamp(started);
    let markdown = out.join(format!("{KIND}-{}-{stamp}.md", run.inputs.services));
    let json = out.join(format!("{KIND}-{}-{stamp}.json", run.inputs.services));
    let report = report(&run)?;
    std::fs::write(&markdown, &report)
        .with_context(|| format!("writing {}", markdown.display()))?;
    write_json(&json, &run)?;
    print!("{report}");
    log(KIND, format!("report: {}", markdown.display()));
    log(KIND, format!("results: {}", json.display()));
    Ok(Written {
        markdown,
        json,
        run,
    })
}

/// Where a run's results went.
#[derive(Debug)]
pub struct Written {
    pub markdown: PathBuf,
    pub json: PathBuf,
    pub run: Run,
}

/// One start of clusterdns in `mode`, until its /ready says 200, with the API server's CPU
/// and RSS around it.
fn measure(
    clusterdns: &Path,
    dir: &Path,
    config: &Path,
    mode: Mode,
    run: u32,
    apiserver: u32,
    hz: f64,
) -> Result<Start> {
    let (port, ready) = two_ports()?;
    let path = dir.join("Corefile");
    std::fs::write(&path, corefile(port, ready, config, mode))?;
    let rss0 = process_status_kb(apiserver, "VmRSS")?;
    let cpu0 = process_cpu_ticks(apiserver)?;
    let t0 = Instant::now();
    let mut server = Server::start_on(
        "clusterdns",
        port,
        None,
        clusterdns,
        &["serve".as_ref(), "--corefile".as_ref(), path.as_os_str()],
        &dir.join(format!("{}.{run}.log", mode.as_str())),
    )?;
    let mut peak = 0;
    let limit = Duration::from_secs(600);
    while http_status(ready, "/ready") != Some(200) {
        server.check_running()?;
        if t0.elapsed() > limit {
            bail!(
                "clusterdns ({}) not ready within {} s",
                mode.as_str(),
                limit.as_secs()
            );
        }
        peak = peak.max(process_status_kb(apiserver, "VmRSS")?);
        std::thread::sleep(Duration::from_millis(20));
    }
    let sync_s = t0.elapsed().as_secs_f64();
    let cpu1 = process_cpu_ticks(apiserver)?;
    let hwm = server.status_kb("VmHWM")?;
    drop(server);
    Ok(Start {
        run,
        mode,
        sync_s,
        clusterdns_peak_kb: hwm,
        apiserver_cpu_s: cpu1.saturating_sub(cpu0) as f64 / hz,
        apiserver_rss_growth_kb: peak.saturating_sub(rss0),
    })
}

/// The report the bench prints and writes as Markdown: the script's lines as tables.
pub fn report(run: &Run) -> Result<String> {
    let inputs = &run.inputs;
    let stamp = stamp_of(&run.started)?;
    let mut text = String::new();
    writeln!(
        text,
        "# List modes: paginated against streaming ({stamp})\n"
    )?;
    writeln!(
        text,
        "{} Services ({} slices), {} runs each; {}; {} CPUs ({}); {}; {}{}. Loaded in {:.0} s (Namespaces, Services, EndpointSlices, no Pods). Per start, as ServiceAccount kube-system/coredns: seconds to the first sync (/ready 200), clusterdns's peak RSS (VmHWM), the API server's CPU time and RSS growth (peak VmRSS over the RSS before the start) meanwhile.\n",
        inputs.services,
        run.loaded.endpointslices,
        inputs.runs,
        run.machine.kernel,
        run.machine.cpus,
        run.machine.cpu_model,
        run.versions.kube_apiserver,
        run.versions.own.clusterdns,
        run.versions
            .own
            .commit
            .as_ref()
            .map(|c| format!(" at {c}"))
            .unwrap_or_default(),
        run.loaded.seconds,
    )?;
    writeln!(
        text,
        "| run | mode | sync s | clusterdns peak MB | API server CPU s | API server RSS growth MB |"
    )?;
    writeln!(text, "| ---: | --- | ---: | ---: | ---: | ---: |")?;
    for start in &run.starts {
        writeln!(
            text,
            "| {} | {} | {:.2} | {:.1} | {:.2} | {:.1} |",
            start.run,
            start.mode.as_str(),
            start.sync_s,
            start.clusterdns_peak_kb as f64 / 1024.0,
            start.apiserver_cpu_s,
            start.apiserver_rss_growth_kb as f64 / 1024.0
        )?;
    }
    writeln!(text, "\nMeans:\n")?;
    writeln!(
        text,
        "| mode | starts | sync s | clusterdns peak MB | API server CPU s | API server RSS growth MB |"
    )?;
    writeln!(text, "| --- | ---: | ---: | ---: | ---: | ---: |")?;
    for (mode, m) in &run.means {
        writeln!(
            text,
            "| {} | {} | {:.2} | {:.1} | {:.2} | {:.1} |",
            mode.as_str(),
            m.starts,
            m.sync_s,
            m.clusterdns_peak_mb,
            m.apiserver_cpu_s,
            m.apiserver_rss_growth_mb
        )?;
    }
    if let Some(r) = &run.ratios {
        let times = |v: Option<f64>| format!("{}x", fixed(v, 2));
        writeln!(
            text,
            "\nstreaming / paginated: sync {}, clusterdns peak {}, API server CPU {}",
            times(r.sync),
            times(r.clusterdns_peak),
            times(r.apiserver_cpu)
        )?;
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::common::fixture::{assert_renders, read_back};
    use super::*;

    /// A run's JSON as the bench writes it.
    const FIXTURE: &str = include_str!("../../fixtures/list-mode.json");

    /// The fixture, read back as it was written.
    fn fixture() -> Run {
        read_back(FIXTURE)
    }

    #[test]
    fn the_fixture_reads_back_as_it_was_written() {
        let run = fixture();
        assert_eq!(run.bench, KIND);
        // Its means and ratios are those of its starts (to the last bits JSON keeps of a
        // float).
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        for (mode, kept) in &run.means {
            let again = Means::of(&run.starts, *mode).unwrap();
            assert_eq!(again.starts, kept.starts);
            assert!(close(again.sync_s, kept.sync_s), "{again:?} {kept:?}");
            assert!(close(again.clusterdns_peak_mb, kept.clusterdns_peak_mb));
            assert!(close(again.apiserver_cpu_s, kept.apiserver_cpu_s));
            assert!(close(
                again.apiserver_rss_growth_mb,
                kept.apiserver_rss_growth_mb
            ));
        }
        let again = Ratios::of(&run.means[&Mode::Streaming], &run.means[&Mode::Paginated]);
        let kept = run.ratios.unwrap();
        for (a, b) in [
            (again.sync, kept.sync),
            (again.clusterdns_peak, kept.clusterdns_peak),
            (again.apiserver_cpu, kept.apiserver_cpu),
        ] {
            assert!(close(a.unwrap(), b.unwrap()), "{again:?} {kept:?}");
        }
    }

    #[test]
    fn the_report_is_rendered_from_the_json() {
        assert_renders(FIXTURE, include_str!("../../fixtures/list-mode.md"), report);
    }

    #[test]
    fn gencluster_objects_are_loaded_as_a_fresh_cluster_takes_them() {
        let items: Value = serde_json::from_str(
            r#"[
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"creationTimestamp": "2026-03-14T09:20:11Z", "name": "default", "resourceVersion": "501", "uid": "c1"}, "spec": {"finalizers": ["kubernetes"]}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"creationTimestamp": "2026-03-14T09:20:11Z", "name": "shop", "resourceVersion": "502", "uid": "c2"}, "status": {"phase": "Active"}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes", "namespace": "default", "uid": "a3"}, "spec": {"clusterIP": "10.96.0.1"}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kube-dns", "namespace": "kube-system", "uid": "a4"}, "spec": {"clusterIP": "10.96.0.10"}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop", "uid": "a5", "managedFields": []}, "spec": {"clusterIP": "10.96.0.20", "selector": {"app": "web"}, "type": "NodePort", "externalTrafficPolicy": "Local", "healthCheckNodePort": 30001, "allocateLoadBalancerNodePorts": true, "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}, "status": {"loadBalancer": {}}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "shop"}, "spec": {"clusterIP": "None", "type": "ClusterIP", "selector": {"app": "db"}}},
            {"addressType": "IPv4", "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"generation": 1, "name": "kubernetes", "namespace": "default"}, "endpoints": []},
            {"addressType": "IPv4", "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"generation": 1, "name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}, "ownerReferences": [{"kind": "Service", "name": "web", "uid": "a5"}]}, "endpoints": [{"addresses": ["10.244.1.5"]}]},
            {"addressType": "IPv4", "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "db-x", "namespace": "shop"}, "endpoints": []},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "shop"}, "spec": {}}
        ]"#,
        )
        .unwrap();
        let Value::Array(items) = items else { panic!() };
        let lists = loadable(items);
        assert_eq!(
            lists.namespaces,
            vec![
                serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}, "status": {"phase": "Active"}})
            ]
        );
        assert_eq!(
            lists.services,
            vec![
                serde_json::json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"}, "spec": {"clusterIP": "10.96.0.20", "type": "ClusterIP", "ports": [{"name": "http", "port": 80}]}}),
                serde_json::json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "shop"}, "spec": {"clusterIP": "None", "type": "ClusterIP"}}),
            ]
        );
        assert_eq!(
            lists.endpointslices,
            vec![
                serde_json::json!({"addressType": "IPv4", "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web", "endpointslice.kubernetes.io/managed-by": MANAGED_BY}}, "endpoints": [{"addresses": ["10.244.1.5"]}]}),
                serde_json::json!({"addressType": "IPv4", "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "db-x", "namespace": "shop", "labels": {"endpointslice.kubernetes.io/managed-by": MANAGED_BY}}, "endpoints": []}),
            ]
        );
        let kinds: Vec<&str> = lists.by_kind().iter().map(|(k, _)| *k).collect();
        assert_eq!(kinds, ["Namespace", "Service", "EndpointSlice"]);
        assert_eq!(list(&lists.namespaces)["kind"], "List");
    }

    #[test]
    fn the_corefile_and_kubeconfig_name_the_mode_and_the_token() {
        let corefile = corefile(5300, 5301, Path::new("/w/kubeconfig"), Mode::Streaming);
        assert!(corefile.starts_with(".:5300 {\n    bind 127.0.0.1\n    ready 127.0.0.1:5301\n"));
        assert!(corefile.contains("        kubeconfig /w/kubeconfig\n"));
        assert!(corefile.contains("        list_mode streaming\n        startup_timeout 0\n"));
        let config = kubeconfig(6443, Path::new("/c/pki/ca.crt"), "abc.def");
        assert!(config.contains(
            "cluster: {server: \"https://127.0.0.1:6443\", certificate-authority: \"/c/pki/ca.crt\"}"
        ));
        assert!(config.contains("user: {token: \"abc.def\"}"));
    }

    #[test]
    fn a_mode_without_starts_has_no_means() {
        let run = fixture();
        let paginated: Vec<Start> = run
            .starts
            .iter()
            .filter(|s| s.mode == Mode::Paginated)
            .cloned()
            .collect();
        assert_eq!(Means::of(&paginated, Mode::Streaming), None);
        assert_eq!(
            Means::of(&paginated, Mode::Paginated).unwrap().starts,
            paginated.len()
        );
    }
}
