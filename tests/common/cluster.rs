//! The real control plane for the tests in tests/cluster.rs: etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok, started by `bench/cluster.sh` from the
//! binaries `bench/peers/build.sh` builds (found in `CLUSTERDNS_PEERS`, else the script's
//! cache). Without them the tests say so and pass, unless `CLUSTERDNS_REQUIRE_PEERS` is set
//! (`.ci/run` sets it), when a missing peer fails them.
//!
//! [`Cluster::shared`] is one cluster for the whole test binary, with `deploy/` applied; each
//! test there works in namespaces of its own. A test that hurts the cluster (restarts the API
//! server, compacts etcd, throttles a user) takes [`Cluster::private`], its own. Every cluster
//! goes down with the test process (`bench/cluster.sh up --owner`).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::root;

/// The directory the peers' binaries are in (or would be): `CLUSTERDNS_PEERS`, else
/// bench/peers/build.sh's cache.
fn peers_dir() -> Option<PathBuf> {
    match std::env::var_os("CLUSTERDNS_PEERS") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            let cache = std::env::var_os("PEERS_CACHE")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("XDG_CACHE_HOME")
                        .map(|c| PathBuf::from(c).join("clusterdns-peers"))
                })
                .or_else(|| {
                    std::env::var_os("HOME")
                        .map(|h| PathBuf::from(h).join(".cache/clusterdns-peers"))
                })?;
            Some(cache.join("bin"))
        }
    }
}

/// The directory holding the peers' binaries, if they are built.
pub fn peers() -> Option<PathBuf> {
    let dir = peers_dir()?;
    let all = [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
        "kubectl",
    ];
    all.iter()
        .all(|name| dir.join(name).is_file())
        .then_some(dir)
}

/// The binary of one peer (`helm`, `kubectl` ...), for a test that needs it and no cluster:
/// `None` when it is not built, and the test says so and passes; fails instead when
/// `CLUSTERDNS_REQUIRE_PEERS` is set.
pub fn peer(name: &str) -> Option<PathBuf> {
    let path = peers_dir()
        .map(|dir| dir.join(name))
        .filter(|path| path.is_file());
    if path.is_none() {
        assert!(
            std::env::var_os("CLUSTERDNS_REQUIRE_PEERS").is_none(),
            "CLUSTERDNS_REQUIRE_PEERS is set but the peer {name} is not built: run bench/peers/build.sh"
        );
        eprintln!("skipped: the peer {name} is not built (bench/peers/build.sh)");
    }
    path
}

/// Whether a test needing the real control plane must give up here: the peers are not built
/// (said on stderr). Fails instead when `CLUSTERDNS_REQUIRE_PEERS` is set.
fn unavailable() -> bool {
    if peers().is_some() {
        return false;
    }
    assert!(
        std::env::var_os("CLUSTERDNS_REQUIRE_PEERS").is_none(),
        "CLUSTERDNS_REQUIRE_PEERS is set but the peers are not built: run bench/peers/build.sh"
    );
    eprintln!("skipped: the real control plane is not built (bench/peers/build.sh)");
    true
}

/// A running local control plane.
pub struct Cluster {
    dir: tempfile::TempDir,
    peers: PathBuf,
    /// The admin kubeconfig.
    pub kubeconfig: PathBuf,
    /// The API server's port on 127.0.0.1.
    pub api_port: u16,
    /// etcd's client port on 127.0.0.1.
    pub etcd_port: u16,
}

static SHARED: OnceLock<Option<Cluster>> = OnceLock::new();

thread_local! {
    /// The message of the panic this thread is unwinding from, for [`Cluster`]'s drop.
    static FAILURE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// A panic hook (added once, before the default one) that keeps the panic's message, so a
/// failing cluster test can say it again after the components' logs: CI keeps a test's first and
/// last lines, and the logs would otherwise push the failure itself out of what it keeps.
fn keep_failures() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let at = info.location().map(|l| l.to_string()).unwrap_or_default();
            FAILURE.with(|f| *f.borrow_mut() = Some(format!("{message} (at {at})")));
            default(info);
        }));
    });
}

impl Cluster {
    /// The cluster every test shares, `deploy/` applied; `None` (the test skips) without
    /// the peers.
    pub fn shared() -> Option<&'static Self> {
        SHARED
            .get_or_init(|| {
                let cluster = Self::private()?;
                cluster.apply_deploy();
                Some(cluster)
            })
            .as_ref()
    }

    /// A cluster of the test's own, down when dropped; `None` without the peers.
    pub fn private() -> Option<Self> {
        Self::start(&[])
    }

    /// A cluster of the test's own, `bench/cluster.sh up` given `args` too.
    pub fn start(args: &[&str]) -> Option<Self> {
        if unavailable() {
            return None;
        }
        keep_failures();
        let peers = peers()?;
        let dir = tempfile::Builder::new()
            .prefix("clusterdns-cluster.")
            .tempdir()
            .unwrap();
        let started = Instant::now();
        let output = Command::new(root().join("bench/cluster.sh"))
            .arg("up")
            .arg("--dir")
            .arg(dir.path())
            .args(["--owner", &std::process::id().to_string()])
            .args(args)
            .env("CLUSTERDNS_PEERS", &peers)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "bench/cluster.sh up failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!(
            "local control plane up in {:.1} s ({})",
            started.elapsed().as_secs_f64(),
            dir.path().display()
        );
        let ports = std::fs::read_to_string(dir.path().join("ports")).unwrap();
        let port = |key: &str| -> u16 {
            ports
                .lines()
                .find_map(|line| line.strip_prefix(&format!("{key}=")))
                .unwrap_or_else(|| panic!("no {key} in {ports}"))
                .parse()
                .unwrap()
        };
        Some(Self {
            kubeconfig: dir.path().join("admin.kubeconfig"),
            api_port: port("APISERVER_PORT"),
            etcd_port: port("ETCD_PORT"),
            peers,
            dir,
        })
    }

    /// The cluster's directory (logs in `log/`, certificates in `pki/`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The API server's URL.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.api_port)
    }

    /// The CA that signed the API server's certificate.
    pub fn ca(&self) -> PathBuf {
        self.dir().join("pki/ca.crt")
    }

    /// `kubectl ARGS` as admin, with `input` on stdin: its output, or its stderr.
    pub fn try_kubectl_with(&self, args: &[&str], input: &str) -> Result<String, String> {
        xtask::kube::Kubectl {
            binary: self.peers.join("kubectl"),
            kubeconfig: self.kubeconfig.clone(),
        }
        .run_with(args, input)
        .map_err(|error| format!("{error:#}"))
    }

    /// `kubectl ARGS` as admin; its output. Panics with kubectl's error.
    pub fn kubectl(&self, args: &[&str]) -> String {
        self.try_kubectl_with(args, "")
            .unwrap_or_else(|error| panic!("kubectl {}: {error}", args.join(" ")))
    }

    /// `kubectl apply --server-side -f -` of `manifest` (YAML or JSON).
    pub fn apply(&self, manifest: &str) {
        self.try_kubectl_with(
            &["apply", "--server-side", "--force-conflicts", "-f", "-"],
            manifest,
        )
        .unwrap_or_else(|error| panic!("kubectl apply: {error}\n{manifest}"));
    }

    /// `kubectl get ARGS -o json`, parsed.
    pub fn get(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.kubectl(&all)).unwrap()
    }

    /// `deploy/` applied as its README says: `kubectl apply --server-side -k deploy/`.
    pub fn apply_deploy(&self) {
        let deploy = root().join("deploy");
        self.kubectl(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-k",
            deploy.to_str().unwrap(),
        ]);
    }

    /// `bench/cluster.sh ACTION ARGS...` on this cluster; its stdout.
    pub fn script(&self, action: &[&str]) -> String {
        let output = Command::new(root().join("bench/cluster.sh"))
            .args(action)
            .arg("--dir")
            .arg(self.dir())
            .env("CLUSTERDNS_PEERS", &self.peers)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "bench/cluster.sh {}: {}",
            action.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// A component's log so far.
    pub fn log(&self, component: &str) -> String {
        std::fs::read_to_string(self.dir().join(format!("log/{component}.log"))).unwrap_or_default()
    }

    /// The audit log's events (every request of a service account), in order.
    pub fn audit(&self) -> Vec<Value> {
        self.log("audit")
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// A token for ServiceAccount `namespace/name` from the TokenRequest API (`kubectl create
    /// token`), with `args` (`--duration`, `--bound-object-kind` ...).
    pub fn token(&self, namespace: &str, name: &str, args: &[&str]) -> String {
        let mut all = vec!["create", "token", name, "-n", namespace];
        all.extend_from_slice(args);
        self.kubectl(&all).trim().to_owned()
    }

    /// A kubeconfig at `path` for `server` (the API server, or a proxy in front of it) whose
    /// user is `user` (the YAML of a kubeconfig `user:` mapping, indented by 4).
    pub fn write_kubeconfig(&self, path: &Path, server: &str, user: &str) {
        self.write_kubeconfig_contexts(path, server, &[("clusterdns", user)]);
    }

    /// A kubeconfig at `path` for `server` with a context per `(name, user)`, its user's YAML
    /// indented by 4; the first is the current context.
    pub fn write_kubeconfig_contexts(&self, path: &Path, server: &str, contexts: &[(&str, &str)]) {
        let mut text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: {server}\n    certificate-authority: {}\nusers:\n",
            self.ca().display()
        );
        for (name, user) in contexts {
            text.push_str(&format!("- name: {name}\n  user:\n{user}\n"));
        }
        text.push_str("contexts:\n");
        for (name, _) in contexts {
            text.push_str(&format!(
                "- name: {name}\n  context:\n    cluster: local\n    user: {name}\n"
            ));
        }
        text.push_str(&format!("current-context: {}\n", contexts[0].0));
        std::fs::write(path, text).unwrap();
    }

    /// Waits until `check` holds (polled every 100 ms), at most `timeout`.
    pub fn wait(&self, what: &str, timeout: Duration, check: impl Fn() -> bool) {
        let deadline = Instant::now() + timeout;
        while !check() {
            assert!(Instant::now() < deadline, "never: {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for component in ["kube-apiserver", "kube-controller-manager", "kwok"] {
                let log = self.log(component);
                let tail: Vec<&str> = log.lines().rev().take(20).collect();
                eprintln!("--- {component} log (last lines) ---");
                for line in tail.iter().rev() {
                    eprintln!("{line}");
                }
            }
            if let Some(failure) = FAILURE.with(|f| f.borrow_mut().take()) {
                eprintln!("--- the test failed: {failure}");
            }
        }
        let _ = Command::new(root().join("bench/cluster.sh"))
            .arg("down")
            .arg("--dir")
            .arg(self.dir())
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
