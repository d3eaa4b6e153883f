//! A local Kubernetes control plane without containers, on loopback, from the peers that
//! bench/peers/build.sh builds: etcd, kube-apiserver (RBAC, service-account tokens, a
//! dual-stack service CIDR, an audit log of service accounts' requests), kube-controller-manager
//! (endpointslice, namespace, deployment, replicaset, statefulset, serviceaccount and its tokens,
//! the garbage collector), kube-scheduler, and kwok standing in for the kubelets of a few fake
//! nodes: a Deployment yields Pods that are scheduled, get addresses and turn Running and Ready,
//! and the real EndpointSlice controller writes real slices for them.
//!
//! ```text
//! cargo xtask cluster up [--dir DIR] [--nodes N] [--owner PID] [--compaction-interval DURATION]
//!                        [--watch-cache-sizes RESOURCE#SIZE,...] [--feature-gates GATE=BOOL,...]
//! cargo xtask cluster env [--dir DIR]    # the exports for kubectl: eval "$(cargo xtask cluster env)"
//! cargo xtask cluster down [--dir DIR]   # stops everything it started, by PID
//! cargo xtask cluster stop|start|restart COMPONENT [--dir DIR]   # etcd, kube-apiserver, ...
//! ```
//!
//! DIR (default `$TMPDIR/clusterdns-cluster`, or `CLUSTER_DIR`) holds everything: pki/,
//! admin.kubeconfig, the logs (log/), the PIDs (pid/), the components' command lines (run/),
//! etcd's data and `ports` (`KEY=VALUE` lines a shell can source). With an owner, the cluster
//! goes down by itself once that process has exited (the tests use this). Nothing listens
//! beyond 127.0.0.1. The environment: `CLUSTER_NODES` (kwok nodes, default 3), `CLUSTER_GOGC`
//! (default 400), `CLUSTER_APISERVER_MEMLIMIT` (the API server's GOMEMLIMIT, default 8GiB),
//! `CLUSTERDNS_PEERS` (where the peers are, default bench/peers/build.sh's cache).

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

use crate::kube::Kubectl;

/// One process of the control plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Component {
    Etcd,
    KubeApiserver,
    KubeControllerManager,
    KubeScheduler,
    Kwok,
}

impl Component {
    /// Every component, in the order they start in (and the reverse of the order they stop
    /// in).
    pub const ALL: [Self; 5] = [
        Self::Etcd,
        Self::KubeApiserver,
        Self::KubeControllerManager,
        Self::KubeScheduler,
        Self::Kwok,
    ];

    /// Its name: its binary's, its log's (log/NAME.log), its PID file's (pid/NAME.pid).
    pub fn name(self) -> &'static str {
        match self {
            Self::Etcd => "etcd",
            Self::KubeApiserver => "kube-apiserver",
            Self::KubeControllerManager => "kube-controller-manager",
            Self::KubeScheduler => "kube-scheduler",
            Self::Kwok => "kwok",
        }
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Component {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| {
                let all: Vec<&str> = Self::ALL.iter().map(|c| c.name()).collect();
                format!("no component {name} (one of: {})", all.join(" "))
            })
    }
}

/// The binaries `up` needs among the peers.
pub const PEERS: [&str; 6] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "kubectl",
];

/// The directory the peers' binaries are in (or would be): `CLUSTERDNS_PEERS`, else
/// bench/peers/build.sh's cache (`$PEERS_CACHE/bin`, default
/// `${XDG_CACHE_HOME:-$HOME/.cache}/clusterdns-peers/bin`), as `build.sh --dir` prints it.
pub fn peers_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("CLUSTERDNS_PEERS") {
        return Ok(PathBuf::from(dir));
    }
    let cache = match std::env::var_os("PEERS_CACHE") {
        Some(cache) => PathBuf::from(cache),
        None => match std::env::var_os("XDG_CACHE_HOME") {
            Some(cache) => PathBuf::from(cache).join("clusterdns-peers"),
            None => PathBuf::from(std::env::var_os("HOME").context(
                "neither CLUSTERDNS_PEERS, PEERS_CACHE, XDG_CACHE_HOME nor HOME is set",
            )?)
            .join(".cache/clusterdns-peers"),
        },
    };
    Ok(cache.join("bin"))
}

/// The default directory of a cluster: `CLUSTER_DIR`, else `$TMPDIR/clusterdns-cluster`.
pub fn default_dir() -> PathBuf {
    std::env::var_os("CLUSTER_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("clusterdns-cluster"))
}

/// The ports a cluster listens on (127.0.0.1) and where its peers are: DIR/ports, as
/// `KEY=VALUE` lines (`ETCD_PORT`, `ETCD_PEER_PORT`, `APISERVER_PORT`, `PEERS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ports {
    /// etcd's client port.
    pub etcd: u16,
    /// etcd's peer port.
    pub etcd_peer: u16,
    /// The API server's secure port.
    pub apiserver: u16,
    /// The directory of the peers' binaries.
    pub peers: PathBuf,
}

impl Ports {
    /// Three free ports (held together while chosen, so they differ) and `peers`.
    pub fn free(peers: &Path) -> Result<Self> {
        let held = (0..3)
            .map(|_| TcpListener::bind("127.0.0.1:0"))
            .collect::<std::io::Result<Vec<_>>>()
            .context("binding 127.0.0.1:0")?;
        let ports = held
            .iter()
            .map(|l| l.local_addr().map(|a| a.port()))
            .collect::<std::io::Result<Vec<_>>>()?;
        let [etcd, etcd_peer, apiserver] = ports[..] else {
            bail!("three ports, not {}", ports.len());
        };
        Ok(Self {
            etcd,
            etcd_peer,
            apiserver,
            peers: peers.to_path_buf(),
        })
    }

    /// The file's text.
    pub fn render(&self) -> String {
        format!(
            "ETCD_PORT={}\nETCD_PEER_PORT={}\nAPISERVER_PORT={}\nPEERS={}\n",
            self.etcd,
            self.etcd_peer,
            self.apiserver,
            self.peers.display()
        )
    }

    /// The file's text, read back.
    pub fn parse(text: &str) -> Result<Self> {
        let value = |key: &str| -> Result<&str> {
            text.lines()
                .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
                .with_context(|| format!("no {key}"))
        };
        let port = |key: &str| -> Result<u16> {
            let value = value(key)?;
            value
                .parse()
                .with_context(|| format!("{key}={value}: not a port"))
        };
        Ok(Self {
            etcd: port("ETCD_PORT")?,
            etcd_peer: port("ETCD_PEER_PORT")?,
            apiserver: port("APISERVER_PORT")?,
            peers: PathBuf::from(value("PEERS")?),
        })
    }
}

/// What `up` is given beyond the directory.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Options {
    /// kwok nodes (default: CLUSTER_NODES, else 3); with 0 the nodes are real ones, joined
    /// later (cargo xtask nodes).
    #[arg(long)]
    pub nodes: Option<usize>,
    /// The cluster goes down by itself once process PID has exited.
    #[arg(long, value_name = "PID")]
    pub owner: Option<u32>,
    /// The API server's --etcd-compaction-interval.
    #[arg(long, value_name = "DURATION")]
    pub compaction_interval: Option<String>,
    /// The API server's --watch-cache-sizes.
    #[arg(long, value_name = "RESOURCE#SIZE,...")]
    pub watch_cache_sizes: Option<String>,
    /// The API server's --feature-gates.
    #[arg(long, value_name = "GATE=BOOL,...")]
    pub feature_gates: Option<String>,
    /// With `owner`: once the owner has exited and the cluster is down, its whole directory
    /// goes too (logs, certificates, kubeconfig), not only etcd's data. The tests' clusters
    /// live in temporary directories that nothing else would remove.
    #[arg(skip)]
    pub remove_with_owner: bool,
}

/// `Options` alone on a command line, for [`Options::from_args`].
#[derive(clap::Parser)]
#[command(name = "up", no_binary_name = true)]
struct OptionsOnly {
    #[command(flatten)]
    options: Options,
}

impl Options {
    /// The options of `up` from its flags (`["--nodes", "0"]`).
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<Self> {
        use clap::Parser as _;
        let parsed = OptionsOnly::try_parse_from(args.iter().map(AsRef::as_ref))
            .map_err(|e| anyhow::anyhow!("{}", e.to_string().trim()))?;
        Ok(parsed.options)
    }

    /// The kwok nodes: `--nodes`, else `CLUSTER_NODES`, else 3.
    pub fn node_count(&self) -> Result<usize> {
        if let Some(nodes) = self.nodes {
            return Ok(nodes);
        }
        match std::env::var("CLUSTER_NODES") {
            Ok(nodes) if !nodes.is_empty() => nodes
                .parse()
                .with_context(|| format!("CLUSTER_NODES={nodes}: not a number")),
            _ => Ok(3),
        }
    }
}

/// The Go runtime's settings for the components: `GOGC` and the GOMEMLIMITs.
///
/// The collector, traded for memory: at 150,000 pods (bench/README.md, "Loading objects") the
/// API server, kwok and the controllers spend much of their CPU collecting at the default
/// GOGC=100; GOMEMLIMIT keeps their heaps bounded all the same (the collector works harder as
/// a heap nears it). `CLUSTER_GOGC=100` restores the default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoEnv {
    pub gogc: String,
    /// Every component's but the API server's.
    pub memlimit: String,
    pub apiserver_memlimit: String,
}

impl GoEnv {
    /// `CLUSTER_GOGC` (default 400), 3GiB, `CLUSTER_APISERVER_MEMLIMIT` (default 8GiB).
    pub fn from_env() -> Self {
        let var = |name: &str, default: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_owned())
        };
        Self {
            gogc: var("CLUSTER_GOGC", "400"),
            memlimit: "3GiB".to_owned(),
            apiserver_memlimit: var("CLUSTER_APISERVER_MEMLIMIT", "8GiB"),
        }
    }
}

/// A command line, built from strings and paths.
#[derive(Default)]
struct Line(Vec<OsString>);

impl Line {
    fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.0.push(arg.as_ref().to_owned());
        self
    }

    fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.0
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// `--flag VALUE`, the value formatted.
    fn flag(self, flag: &str, value: impl AsRef<OsStr>) -> Self {
        self.arg(flag).arg(value)
    }

    /// `env GOGC=... GOMEMLIMIT=... PROGRAM`.
    fn go(gogc: &str, memlimit: &str, program: PathBuf) -> Self {
        Self::default()
            .arg("env")
            .arg(format!("GOGC={gogc}"))
            .arg(format!("GOMEMLIMIT={memlimit}"))
            .arg(program)
    }
}

/// A cluster's directory, and what is done in it.
#[derive(Debug, Clone)]
pub struct Cluster {
    dir: PathBuf,
    /// Whether to say on stderr what is done (`[cluster] ...`), as the command line does.
    pub verbose: bool,
}

impl Cluster {
    /// The cluster in `dir`, made if missing.
    pub fn new(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let dir =
            std::fs::canonicalize(dir).with_context(|| format!("resolving {}", dir.display()))?;
        Ok(Self {
            dir,
            verbose: false,
        })
    }

    /// Its directory (absolute).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The admin kubeconfig.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("admin.kubeconfig")
    }

    fn pki(&self) -> PathBuf {
        self.dir.join("pki")
    }

    /// A component's log.
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.dir.join("log").join(format!("{name}.log"))
    }

    fn pid_path(&self, name: &str) -> PathBuf {
        self.dir.join("pid").join(format!("{name}.pid"))
    }

    fn run_path(&self, component: Component) -> PathBuf {
        self.dir.join("run").join(component.name())
    }

    fn say(&self, message: &str) {
        if self.verbose {
            eprintln!("[cluster] {message}");
        }
    }

    /// Its ports file, read.
    pub fn ports(&self) -> Result<Ports> {
        let path = self.dir.join("ports");
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "no cluster in {dir} (cargo xtask cluster up --dir {dir})",
                dir = self.dir.display()
            )
        })?;
        Ports::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    /// The PID in pid/NAME.pid, if any.
    fn pid_of(&self, name: &str) -> Option<Pid> {
        let text = std::fs::read_to_string(self.pid_path(name)).ok()?;
        text.trim().parse().ok().map(Pid::from_raw)
    }

    /// Whether component `name` is running (its PID file names a live process).
    pub fn running(&self, name: &str) -> bool {
        self.pid_of(name).is_some_and(alive)
    }

    /// The kubectl of `peers` as the admin.
    fn kubectl(&self, peers: &Path) -> Kubectl {
        Kubectl {
            binary: peers.join("kubectl"),
            kubeconfig: self.kubeconfig(),
        }
    }

    /// The last `lines` lines of component `name`'s log.
    pub fn log_tail(&self, name: &str, lines: usize) -> String {
        let log = std::fs::read(self.log_path(name)).unwrap_or_default();
        let log = String::from_utf8_lossy(&log);
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Starts a control plane here: every component, each waited for before the next, then
    /// the kwok nodes and a probe pod through the whole path. Its ports.
    pub fn up(&self, peers: &Path, options: &Options) -> Result<Ports> {
        let start = Instant::now();
        for component in Component::ALL {
            ensure!(
                !self.running(component.name()),
                "{component} is already running from {dir} (cargo xtask cluster down --dir {dir})",
                dir = self.dir.display()
            );
        }
        let nodes = options.node_count()?;
        for name in PEERS {
            let path = peers.join(name);
            ensure!(
                executable(&path),
                "{}: missing: run bench/peers/build.sh",
                path.display()
            );
        }
        for sub in ["etcd", "pki", "log", "pid", "run"] {
            remove_dir(&self.dir.join(sub))?;
        }
        for sub in ["log", "pid", "run"] {
            std::fs::create_dir_all(self.dir.join(sub))?;
        }
        let ports = Ports::free(peers)?;
        write(&self.dir.join("ports"), ports.render())?;
        self.make_pki()?;
        write(&self.kubeconfig(), self.kubeconfig_text(ports.apiserver)?)?;
        write(&self.dir.join("audit-policy.yaml"), AUDIT_POLICY)?;
        let kwok_config = crate::root().join("bench/peers/kwok.yaml");
        for (component, line) in
            command_lines(&self.dir, &ports, options, &GoEnv::from_env(), &kwok_config)
        {
            save_run(&self.run_path(component), &line)?;
        }
        // Before anything starts: a cluster that fails to come up goes down with its owner
        // too.
        if let Some(owner) = options.owner {
            self.watch_owner(owner, options.remove_with_owner)?;
        }
        for component in Component::ALL {
            self.start_component(component)?;
            self.wait_ready(component, peers, &ports)?;
            self.say(&format!(
                "{component} running (pid {})",
                self.pid_of(component.name())
                    .map(|p| p.to_string())
                    .unwrap_or_default()
            ));
        }
        // With --nodes 0 the nodes are real ones, joined later (cargo xtask nodes).
        if nodes > 0 {
            let kubectl = self.kubectl(peers);
            kubectl
                .run_with(&["apply", "-f", "-"], &node_manifests(nodes))
                .context("creating the kwok nodes")?;
            self.wait_until(
                Duration::from_secs(60),
                Component::Kwok,
                "nodes Ready",
                || {
                    kubectl
                        .run(&[
                            "wait",
                            "--for=condition=Ready",
                            "node",
                            "--all",
                            "--timeout=1s",
                        ])
                        .is_ok()
                },
            )?;
            // One pod through the whole path (scheduled, given an address, Ready) before
            // we say so.
            kubectl
                .run(&[
                    "run",
                    "cluster-probe",
                    "-n",
                    "default",
                    "--image=probe",
                    "--restart=Never",
                ])
                .context("creating the probe pod")?;
            self.wait_until(
                Duration::from_secs(60),
                Component::KubeScheduler,
                "probe pod Ready",
                || {
                    kubectl
                        .run(&[
                            "wait",
                            "--for=condition=Ready",
                            "pod/cluster-probe",
                            "-n",
                            "default",
                            "--timeout=1s",
                        ])
                        .is_ok()
                },
            )?;
            kubectl
                .run(&[
                    "delete",
                    "pod",
                    "cluster-probe",
                    "-n",
                    "default",
                    "--wait=false",
                ])
                .context("deleting the probe pod")?;
        }
        self.say(&format!(
            "up in {} s: {nodes} kwok nodes, API server https://127.0.0.1:{}",
            start.elapsed().as_secs(),
            ports.apiserver
        ));
        self.say(&format!(
            "eval \"$(cargo xtask cluster env --dir {})\"   # then kubectl get nodes",
            self.dir.display()
        ));
        Ok(ports)
    }

    /// Stops every component (the reverse of the order they started in) and the owner's
    /// watcher, and removes etcd's data.
    pub fn down(&self) -> Result<()> {
        for component in Component::ALL.into_iter().rev() {
            self.stop_component(component.name())?;
        }
        if let Some(watcher) = self.pid_of("owner-watch") {
            let this = nix::unistd::getpid();
            if watcher != this && watcher != nix::unistd::getppid() {
                let _ = kill(watcher, Signal::SIGTERM);
                // Collected once it has exited, if it is a child of this process.
                for _ in 0..20 {
                    if !alive(watcher) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        remove_file(&self.pid_path("owner-watch"))?;
        remove_dir(&self.dir.join("etcd"))?;
        self.say(&format!("down: {}", self.dir.display()));
        Ok(())
    }

    /// Stops one component (of a cluster that is up).
    pub fn stop(&self, component: Component) -> Result<()> {
        self.ports()?;
        self.stop_component(component.name())
    }

    /// Starts one component again, from the command line `up` saved, and waits until it
    /// does its job.
    pub fn start(&self, component: Component) -> Result<()> {
        self.start_or_restart(component, false)
    }

    /// Stops one component, starts it again and waits until it does its job.
    pub fn restart(&self, component: Component) -> Result<()> {
        self.start_or_restart(component, true)
    }

    fn start_or_restart(&self, component: Component, restart: bool) -> Result<()> {
        let ports = self.ports()?;
        ensure!(
            self.run_path(component).is_file(),
            "no command line for {component} in {}",
            self.dir.display()
        );
        if restart {
            self.stop_component(component.name())?;
        }
        self.start_component(component)?;
        self.wait_ready(component, &ports.peers, &ports)?;
        self.say(&format!(
            "{component} running (pid {})",
            self.pid_of(component.name())
                .map(|p| p.to_string())
                .unwrap_or_default()
        ));
        Ok(())
    }

    /// The exports for kubectl: `KUBECONFIG`, and the peers first on `PATH`.
    pub fn env(&self) -> Result<String> {
        let ports = self.ports()?;
        Ok(exports(&self.kubeconfig(), &ports.peers))
    }

    /// Starts `component` from the command line `up` saved for it (run/NAME), unless it is
    /// running; its output appended to its log.
    fn start_component(&self, component: Component) -> Result<()> {
        let name = component.name();
        if self.running(name) {
            return Ok(());
        }
        let path = self.run_path(component);
        let saved = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let line = load_run(&saved);
        ensure!(!line.is_empty(), "{}: no command line", path.display());
        let log = crate::netns::append(&self.log_path(name))?;
        // nohup: a hangup of the terminal that started it is not its end.
        let child = Command::new("nohup")
            .args(&line)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {component} (nohup {:?})", line[0]))?;
        write(&self.pid_path(name), format!("{}\n", child.id()))
    }

    /// Stops component `name`: SIGTERM, up to 10 s to exit, then SIGKILL.
    fn stop_component(&self, name: &str) -> Result<()> {
        let Some(pid) = self.pid_of(name) else {
            return remove_file(&self.pid_path(name));
        };
        if alive(pid) {
            let _ = kill(pid, Signal::SIGTERM);
            for _ in 0..100 {
                if !alive(pid) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = kill(pid, Signal::SIGKILL);
            reap(pid);
        }
        remove_file(&self.pid_path(name))
    }

    /// Waits until `check` says yes, up to `limit`, else fails with `component`'s log.
    fn wait_until(
        &self,
        limit: Duration,
        component: Component,
        what: &str,
        mut check: impl FnMut() -> bool,
    ) -> Result<()> {
        let deadline = Instant::now() + limit;
        let name = component.name();
        loop {
            if check() {
                return Ok(());
            }
            let log = self.log_path(name);
            if !self.running(name) {
                bail!(
                    "{name} exited before {what} (log: {}); its last lines:\n{}",
                    log.display(),
                    self.log_tail(name, 30)
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "{name}: no {what} within {} s (log: {}); its last lines:\n{}",
                    limit.as_secs(),
                    log.display(),
                    self.log_tail(name, 30)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until `component` does its job.
    fn wait_ready(&self, component: Component, peers: &Path, ports: &Ports) -> Result<()> {
        match component {
            Component::Etcd => {
                self.wait_until(Duration::from_secs(60), component, "health", || {
                    etcd_healthy(ports.etcd)
                })
            }
            Component::KubeApiserver => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                let client = runtime.block_on(readyz_client(&self.kubeconfig()))?;
                self.wait_until(Duration::from_secs(120), component, "/readyz ok", || {
                    runtime.block_on(apiserver_ready(&client))
                })
            }
            // The serviceaccount controller has made the default namespace's account.
            Component::KubeControllerManager => {
                let kubectl = self.kubectl(peers);
                self.wait_until(
                    Duration::from_secs(60),
                    component,
                    "default ServiceAccount",
                    || {
                        kubectl
                            .run(&["get", "serviceaccount", "default", "-n", "default"])
                            .is_ok()
                    },
                )
            }
            Component::KubeScheduler | Component::Kwok => Ok(()),
        }
    }

    /// The CA, the API server's serving certificate, the admin's client certificate and the
    /// service-account key, in pki/, by the openssl command line.
    fn make_pki(&self) -> Result<()> {
        let pki = self.pki();
        std::fs::create_dir_all(&pki)?;
        let openssl = |args: &[&str]| -> Result<()> {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&pki)
                .stdin(Stdio::null())
                .output()
                .context("running openssl")?;
            ensure!(
                out.status.success(),
                "openssl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
            Ok(())
        };
        // A P-256 key and a request for `subject` (with `-x509`: a self-signed certificate).
        let req = |extra: &[&str], key: &str, out: &str, subject: &str| -> Result<()> {
            let mut args = vec!["req"];
            args.extend_from_slice(extra);
            args.extend_from_slice(&[
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
            ]);
            args.extend_from_slice(&["-keyout", key, "-out", out, "-subj", subject]);
            openssl(&args)
        };
        req(
            &["-x509", "-days", "30"],
            "ca.key",
            "ca.crt",
            "/CN=clusterdns-test-ca",
        )?;
        req(&[], "apiserver.key", "apiserver.csr", "/CN=kube-apiserver")?;
        write(
            &pki.join("apiserver.ext"),
            "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n",
        )?;
        let sign = |csr: &str, ext: &str, out: &str| -> Result<()> {
            openssl(&[
                "x509",
                "-req",
                "-in",
                csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "30",
                "-extfile",
                ext,
                "-out",
                out,
            ])
        };
        sign("apiserver.csr", "apiserver.ext", "apiserver.crt")?;
        req(
            &[],
            "admin.key",
            "admin.csr",
            "/O=system:masters/CN=kubernetes-admin",
        )?;
        write(&pki.join("admin.ext"), "extendedKeyUsage=clientAuth\n")?;
        sign("admin.csr", "admin.ext", "admin.crt")?;
        // Service-account tokens are signed with this key (RS256, as kubeadm's sa.key).
        openssl(&["genrsa", "-out", "sa.key", "2048"])?;
        openssl(&["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"])?;
        for entry in std::fs::read_dir(&pki)? {
            let path = entry?.path();
            if matches!(
                path.extension().and_then(OsStr::to_str),
                Some("csr" | "ext" | "srl")
            ) {
                remove_file(&path)?;
            }
        }
        Ok(())
    }

    /// The admin kubeconfig's text, its certificates inline.
    fn kubeconfig_text(&self, apiserver: u16) -> Result<String> {
        let pki = self.pki();
        let data = |name: &str| -> Result<String> {
            let path = pki.join(name);
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
        };
        Ok(format!(
            "apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:{apiserver}
    certificate-authority-data: {ca}
users:
- name: admin
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
contexts:
- name: local
  context:
    cluster: local
    user: admin
current-context: local
",
            ca = data("ca.crt")?,
            cert = data("admin.crt")?,
            key = data("admin.key")?,
        ))
    }

    /// A detached process (a process group of its own, so a Ctrl-C or the end of the owner
    /// is not its end) that waits for `owner` to exit, then does what [`Cluster::down`] does,
    /// and with `remove` removes the whole directory.
    fn watch_owner(&self, owner: u32, remove: bool) -> Result<()> {
        let names: Vec<&str> = Component::ALL.iter().rev().map(|c| c.name()).collect();
        let child = Command::new("sh")
            .arg("-c")
            .arg(OWNER_WATCH)
            .arg("owner-watch")
            .arg(owner.to_string())
            .arg(&self.dir)
            .arg(if remove { "remove" } else { "keep" })
            .args(&names)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("starting the owner's watcher (sh)")?;
        write(&self.pid_path("owner-watch"), format!("{}\n", child.id()))
    }
}

/// The owner's watcher: `sh -c OWNER_WATCH owner-watch OWNER DIR remove|keep COMPONENT...`
/// (the components in the order they stop in) waits for OWNER to exit, then stops each as
/// [`Cluster::down`] does (SIGTERM, up to 10 s, SIGKILL) and removes etcd's data, or with
/// `remove` the whole of DIR.
const OWNER_WATCH: &str = r#"owner=$1 dir=$2 remove=$3
shift 3
while kill -0 "$owner" 2>/dev/null; do sleep 1; done
for name in "$@"; do
    pid=$(cat "$dir/pid/$name.pid" 2>/dev/null) || pid=
    if [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; then
        i=0
        while [ "$i" -lt 100 ] && kill -0 "$pid" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
        kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$dir/pid/$name.pid"
done
rm -f "$dir/pid/owner-watch.pid"
rm -rf "$dir/etcd"
if [ "$remove" = remove ]; then rm -rf "$dir"; fi
"#;

/// The audit policy: every request of a service account (clusterdns runs as one), at
/// Metadata level (who, what, when, the response code), nothing else.
pub const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    userGroups: [\"system:serviceaccounts\"]
  - level: None
";

/// The command line of each component, in the order they start in, for a cluster in `dir`
/// (absolute) on `ports`.
fn command_lines(
    dir: &Path,
    ports: &Ports,
    options: &Options,
    go: &GoEnv,
    kwok_config: &Path,
) -> Vec<(Component, Vec<OsString>)> {
    let peers = &ports.peers;
    let pki = dir.join("pki");
    let kubeconfig = dir.join("admin.kubeconfig");
    let etcd_url = format!("http://127.0.0.1:{}", ports.etcd);
    let etcd_peer_url = format!("http://127.0.0.1:{}", ports.etcd_peer);
    let etcd = Line::go(&go.gogc, &go.memlimit, peers.join("etcd"))
        .args(["--name", "local"])
        .flag("--data-dir", dir.join("etcd"))
        .flag("--listen-client-urls", &etcd_url)
        .flag("--advertise-client-urls", &etcd_url)
        .flag("--listen-peer-urls", &etcd_peer_url)
        .flag("--initial-advertise-peer-urls", &etcd_peer_url)
        .flag("--initial-cluster", format!("local={etcd_peer_url}"))
        .args(["--unsafe-no-fsync", "--log-level", "warn"]);
    let mut apiserver = Line::go(
        &go.gogc,
        &go.apiserver_memlimit,
        peers.join("kube-apiserver"),
    )
    .flag("--etcd-servers", &etcd_url)
    .args([
        "--bind-address",
        "127.0.0.1",
        "--advertise-address",
        "127.0.0.1",
    ])
    .flag("--secure-port", ports.apiserver.to_string())
    .flag("--cert-dir", &pki)
    .flag("--tls-cert-file", pki.join("apiserver.crt"))
    .flag("--tls-private-key-file", pki.join("apiserver.key"))
    .flag("--client-ca-file", pki.join("ca.crt"))
    .args(["--authorization-mode", "RBAC"])
    .args([
        "--service-account-issuer",
        "https://kubernetes.default.svc.cluster.local",
    ])
    .flag("--service-account-key-file", pki.join("sa.pub"))
    .flag("--service-account-signing-key-file", pki.join("sa.key"))
    .args([
        "--service-cluster-ip-range",
        "10.96.0.0/12,fd00:10:96::/112",
    ])
    // Nodes are kwok's: no node-lifecycle controller removes the not-ready taint this
    // plugin would put on them, and no kubelet holds an endpoint for the API server's own
    // Service (loopback addresses are not valid endpoints).
    .args(["--disable-admission-plugins", "TaintNodesByCondition"])
    .args(["--endpoint-reconciler-type", "none"])
    .flag("--audit-policy-file", dir.join("audit-policy.yaml"))
    .flag("--audit-log-path", dir.join("log/audit.log"))
    .args(["--audit-log-maxsize", "200"])
    // Profiling on (the default) for its `/debug/pprof/heap?gc=1`: the benches collect its
    // heap between measurements, so none pays for the garbage of the one before.
    .args(["--allow-privileged=true", "--profiling=true"]);
    // The API server compacts etcd every 5 min, to the revision of its previous round; a
    // watch etcd serves from before that is answered 410 Gone. Watches the watch cache
    // serves are 410 only from before its window (the cache is sized to hold 75 s of
    // events, and starts anew with the API server), whatever etcd compacted; `services#0`
    // makes etcd serve the services.
    if let Some(interval) = options
        .compaction_interval
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        apiserver = apiserver.flag("--etcd-compaction-interval", interval);
    }
    if let Some(sizes) = options
        .watch_cache_sizes
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        apiserver = apiserver.flag("--watch-cache-sizes", sizes);
    }
    // The API server's feature gates (WatchList=false: it refuses streaming lists).
    if let Some(gates) = options.feature_gates.as_deref().filter(|s| !s.is_empty()) {
        apiserver = apiserver.flag("--feature-gates", gates);
    }
    let controllers = Line::go(
        &go.gogc,
        &go.memlimit,
        peers.join("kube-controller-manager"),
    )
    .flag("--kubeconfig", &kubeconfig)
    .args(["--secure-port", "0", "--leader-elect=false"])
    .args([
        "--controllers",
        "endpointslice-controller,namespace-controller,deployment-controller,replicaset-controller,statefulset-controller,daemonset-controller,serviceaccount-controller,serviceaccount-token-controller,garbage-collector-controller,root-ca-certificate-publisher-controller,service-cidr-controller,clusterrole-aggregation-controller",
    ])
    .flag("--service-account-private-key-file", pki.join("sa.key"))
    .flag("--root-ca-file", pki.join("ca.crt"))
    .arg("--use-service-account-credentials=false")
    .args(["--kube-api-qps", "500", "--kube-api-burst", "1000"]);
    let scheduler = Line::go(&go.gogc, &go.memlimit, peers.join("kube-scheduler"))
        .flag("--kubeconfig", &kubeconfig)
        .flag("--authentication-kubeconfig", &kubeconfig)
        .flag("--authorization-kubeconfig", &kubeconfig)
        .args(["--secure-port", "0", "--leader-elect=false"])
        .args(["--kube-api-qps", "500", "--kube-api-burst", "1000"]);
    // kwok logs every pod it patches at INFO (a line of JSON each, 150,000 of them at the
    // largest load): warnings and errors only.
    let kwok = Line::go(&go.gogc, &go.memlimit, peers.join("kwok"))
        .flag("--kubeconfig", &kubeconfig)
        .flag("--config", kwok_config)
        .args(["--v", "WARN"])
        .arg("--manage-all-nodes=false")
        .args([
            "--manage-nodes-with-annotation-selector",
            "kwok.x-k8s.io/node=fake",
        ])
        .args([
            "--node-ip",
            "10.0.0.1",
            "--node-lease-duration-seconds",
            "0",
        ]);
    vec![
        (Component::Etcd, etcd.0),
        (Component::KubeApiserver, apiserver.0),
        (Component::KubeControllerManager, controllers.0),
        (Component::KubeScheduler, scheduler.0),
        (Component::Kwok, kwok.0),
    ]
}

/// Nodes for kwok: each with an IPv4 and an IPv6 pod range and a zone.
pub fn node_manifests(nodes: usize) -> String {
    let mut out = String::new();
    for i in 0..nodes {
        let v6 = if i == 0 {
            "fd00:10:244::/64".to_owned()
        } else {
            format!("fd00:10:244:{i:x}::/64")
        };
        out.push_str(&format!(
            "---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-{i}
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-{i}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    topology.kubernetes.io/zone: zone-{zone}
spec:
  podCIDR: 10.244.{i}.0/24
  podCIDRs: [10.244.{i}.0/24, \"{v6}\"]
",
            zone = i % 2
        ));
    }
    out
}

/// `export KUBECONFIG=...` and `export PATH=PEERS:$PATH`, quoted for a shell.
pub fn exports(kubeconfig: &Path, peers: &Path) -> String {
    format!(
        "export KUBECONFIG={}\nexport PATH={}:$PATH\n",
        shell_quote(&kubeconfig.to_string_lossy()),
        shell_quote(&peers.to_string_lossy())
    )
}

/// `word` as one word for a POSIX shell: as it is when nothing in it is special, else in
/// single quotes.
pub fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:=@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// A command line as run/NAME holds it: each argument followed by a NUL.
fn save_run(path: &Path, line: &[OsString]) -> Result<()> {
    let mut bytes = Vec::new();
    for arg in line {
        bytes.extend_from_slice(arg.as_bytes());
        bytes.push(0);
    }
    write(path, bytes)
}

/// The command line in a run/NAME file.
fn load_run(bytes: &[u8]) -> Vec<OsString> {
    let mut args: Vec<OsString> = bytes
        .split(|b| *b == 0)
        .map(|arg| OsString::from_vec(arg.to_vec()))
        .collect();
    if bytes.last() == Some(&0) || bytes.is_empty() {
        args.pop();
    }
    args
}

/// Whether `pid` is a live process (reaped first if it is a child of ours that exited).
fn alive(pid: Pid) -> bool {
    reap(pid);
    kill(pid, None).is_ok()
}

/// Collects `pid`'s exit status if it is a child of this process that has exited: a component
/// started by this process would otherwise stay a zombie, which signals reach.
fn reap(pid: Pid) {
    let _ = waitpid(pid, Some(WaitPidFlag::WNOHANG));
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn write(path: &Path, contents: impl AsRef<[u8]>) -> Result<()> {
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}

/// Removes the directory `path` and everything in it, if it is there.
fn remove_dir(path: &Path) -> Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Removes the file `path`, if it is there.
fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Whether etcd on `port` says it is healthy (`GET /health`: `"health":"true"`).
fn etcd_healthy(port: u16) -> bool {
    let ask = || -> std::io::Result<String> {
        let timeout = Some(Duration::from_secs(2));
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(timeout)?;
        stream.set_write_timeout(timeout)?;
        stream.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        Ok(answer)
    };
    ask().is_ok_and(|answer| {
        answer.starts_with("HTTP/1.")
            && answer.contains(" 200 ")
            && answer.contains("\"health\":\"true\"")
    })
}

/// A client of the API server as the admin (admin.kubeconfig), quick to give up.
async fn readyz_client(kubeconfig: &Path) -> Result<kube::Client> {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let file = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let mut config =
        kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default()).await?;
    config.default_retry = false;
    config.connect_timeout = Some(Duration::from_secs(2));
    config.read_timeout = Some(Duration::from_secs(5));
    config.write_timeout = Some(Duration::from_secs(5));
    Ok(kube::Client::try_from(config)?)
}

/// Whether the API server answers `ok` at /readyz.
async fn apiserver_ready(client: &kube::Client) -> bool {
    let Ok(request) = http::Request::get("/readyz").body(Vec::new()) else {
        return false;
    };
    client
        .request_text(request)
        .await
        .is_ok_and(|body| body.trim() == "ok")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The owner's watcher, with no component running: once the owner exits, etcd's data
    /// goes, and with `remove` the whole directory; without it the rest stays.
    #[test]
    fn the_owners_watcher_removes_what_it_is_told_to() {
        let within = |what: &str, done: &dyn Fn() -> bool| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !done() {
                assert!(std::time::Instant::now() < deadline, "{what}");
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        };
        for remove in [true, false] {
            let parent = tempfile::tempdir().expect("a temporary directory");
            let dir = parent.path().join("cluster");
            let cluster = Cluster::new(&dir).expect("the cluster's directory");
            for sub in ["pid", "etcd", "log"] {
                std::fs::create_dir_all(dir.join(sub)).expect("a subdirectory");
            }
            let mut owner = Command::new("sleep").arg("0.3").spawn().expect("sleep");
            cluster
                .watch_owner(owner.id(), remove)
                .expect("the watcher");
            assert!(
                dir.join("log").exists(),
                "nothing goes while the owner lives"
            );
            owner.wait().expect("the owner's end");
            within("etcd's data goes with the owner", &|| {
                !dir.join("etcd").exists()
            });
            if remove {
                within("the directory goes with the owner", &|| !dir.exists());
            } else {
                within("the watcher ends", &|| {
                    !dir.join("pid/owner-watch.pid").exists()
                });
                assert!(dir.join("log").exists(), "without remove the logs stay");
            }
        }
    }

    #[test]
    fn ports_file_round_trip() {
        let ports = Ports {
            etcd: 40001,
            etcd_peer: 40002,
            apiserver: 40003,
            peers: PathBuf::from("/home/me/.cache/clusterdns-peers/bin"),
        };
        let text = ports.render();
        assert_eq!(
            text,
            "ETCD_PORT=40001\nETCD_PEER_PORT=40002\nAPISERVER_PORT=40003\nPEERS=/home/me/.cache/clusterdns-peers/bin\n"
        );
        assert_eq!(Ports::parse(&text).ok(), Some(ports));
        assert!(Ports::parse("ETCD_PORT=1\n").is_err());
        assert!(
            Ports::parse("ETCD_PORT=x\nETCD_PEER_PORT=2\nAPISERVER_PORT=3\nPEERS=/p\n").is_err()
        );
        // A key is not a prefix of another's.
        assert!(
            Ports::parse("ETCD_PORTS=1\nETCD_PEER_PORT=2\nAPISERVER_PORT=3\nPEERS=/p\n").is_err()
        );
    }

    #[test]
    fn free_ports_differ() {
        let ports = Ports::free(Path::new("/p")).expect("three ports");
        assert_ne!(ports.etcd, ports.etcd_peer);
        assert_ne!(ports.etcd, ports.apiserver);
        assert_ne!(ports.etcd_peer, ports.apiserver);
    }

    #[test]
    fn node_manifests_as_the_script_wrote_them() {
        assert_eq!(node_manifests(0), "");
        let three = node_manifests(3);
        assert_eq!(three.matches("kind: Node\n").count(), 3);
        assert!(
            three.starts_with("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: kwok-node-0\n")
        );
        assert!(three.contains("  podCIDRs: [10.244.0.0/24, \"fd00:10:244::/64\"]\n"));
        assert!(three.contains("  podCIDRs: [10.244.2.0/24, \"fd00:10:244:2::/64\"]\n"));
        assert!(three.contains("topology.kubernetes.io/zone: zone-1\n"));
        let twelve = node_manifests(12);
        assert!(twelve.contains("  podCIDRs: [10.244.11.0/24, \"fd00:10:244:b::/64\"]\n"));
    }

    fn strings(line: &[OsString]) -> Vec<String> {
        line.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn command_lines_as_the_script_built_them() {
        let ports = Ports {
            etcd: 1001,
            etcd_peer: 1002,
            apiserver: 1003,
            peers: PathBuf::from("/peers"),
        };
        let go = GoEnv {
            gogc: "400".into(),
            memlimit: "3GiB".into(),
            apiserver_memlimit: "8GiB".into(),
        };
        let lines = command_lines(
            Path::new("/c"),
            &ports,
            &Options::default(),
            &go,
            Path::new("/repo/bench/peers/kwok.yaml"),
        );
        let order: Vec<Component> = lines.iter().map(|(c, _)| *c).collect();
        assert_eq!(order, Component::ALL);
        assert_eq!(
            strings(&lines[0].1).join(" "),
            "env GOGC=400 GOMEMLIMIT=3GiB /peers/etcd --name local --data-dir /c/etcd \
             --listen-client-urls http://127.0.0.1:1001 --advertise-client-urls http://127.0.0.1:1001 \
             --listen-peer-urls http://127.0.0.1:1002 --initial-advertise-peer-urls http://127.0.0.1:1002 \
             --initial-cluster local=http://127.0.0.1:1002 --unsafe-no-fsync --log-level warn"
        );
        let apiserver = strings(&lines[1].1).join(" ");
        assert!(apiserver.starts_with(
            "env GOGC=400 GOMEMLIMIT=8GiB /peers/kube-apiserver --etcd-servers http://127.0.0.1:1001 \
             --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port 1003 --cert-dir /c/pki "
        ));
        assert!(apiserver.ends_with(
            "--audit-policy-file /c/audit-policy.yaml --audit-log-path /c/log/audit.log \
             --audit-log-maxsize 200 --allow-privileged=true --profiling=true"
        ));
        assert!(!apiserver.contains("--feature-gates"));
        assert_eq!(
            strings(&lines[4].1).join(" "),
            "env GOGC=400 GOMEMLIMIT=3GiB /peers/kwok --kubeconfig /c/admin.kubeconfig \
             --config /repo/bench/peers/kwok.yaml --v WARN --manage-all-nodes=false \
             --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --node-ip 10.0.0.1 \
             --node-lease-duration-seconds 0"
        );

        let options = Options::from_args(&[
            "--compaction-interval",
            "5s",
            "--watch-cache-sizes",
            "services#0",
            "--feature-gates",
            "WatchList=false",
            "--nodes",
            "0",
        ])
        .expect("options");
        assert_eq!(options.nodes, Some(0));
        assert_eq!(options.node_count().ok(), Some(0));
        let lines = command_lines(Path::new("/c"), &ports, &options, &go, Path::new("/k"));
        assert!(strings(&lines[1].1).join(" ").ends_with(
            "--profiling=true --etcd-compaction-interval 5s --watch-cache-sizes services#0 \
             --feature-gates WatchList=false"
        ));
        assert!(Options::from_args(&["--nodes", "many"]).is_err());
        assert!(Options::from_args(&["--bogus"]).is_err());
    }

    #[test]
    fn run_files_round_trip() {
        let line: Vec<OsString> = ["env", "GOGC=400", "/p/etcd", "--name", "a b", ""]
            .map(OsString::from)
            .to_vec();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("etcd");
        save_run(&path, &line).expect("written");
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes, b"env\0GOGC=400\0/p/etcd\0--name\0a b\0\0");
        assert_eq!(load_run(&bytes), line);
        assert!(load_run(b"").is_empty());
    }

    #[test]
    fn components_by_name() {
        for component in Component::ALL {
            assert_eq!(component.name().parse::<Component>(), Ok(component));
        }
        let error = "kubelet".parse::<Component>().expect_err("not a component");
        assert!(error.contains("etcd kube-apiserver kube-controller-manager kube-scheduler kwok"));
    }

    #[test]
    fn exports_for_a_shell() {
        assert_eq!(
            exports(Path::new("/tmp/c/admin.kubeconfig"), Path::new("/p/bin")),
            "export KUBECONFIG=/tmp/c/admin.kubeconfig\nexport PATH=/p/bin:$PATH\n"
        );
        assert_eq!(shell_quote("/a b/it's"), "'/a b/it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn no_cluster_is_said() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let cluster = Cluster::new(dir.path()).expect("a directory");
        let error = format!("{:#}", cluster.env().expect_err("no cluster"));
        assert!(error.contains("no cluster in"), "{error}");
        assert!(cluster.stop(Component::Etcd).is_err());
        assert!(cluster.restart(Component::Kwok).is_err());
        // Down with nothing up is fine.
        cluster.down().expect("down");
    }
}
