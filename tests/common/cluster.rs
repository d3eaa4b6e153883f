//! The real control plane for the tests in tests/cluster.rs: etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok, started by [`xtask::cluster`] (`cargo
//! xtask cluster`) from the binaries `bench/peers/build.sh` builds (found in
//! `CLUSTERDNS_PEERS`, else build.sh's cache). Without them the tests say so and pass, unless
//! `CLUSTERDNS_REQUIRE_PEERS` is set (`.ci/run` sets it), when a missing peer fails them.
//!
//! [`Cluster::shared`] is one cluster for the whole test binary, with `deploy/` applied; each
//! test there works in namespaces of its own. A test that hurts the cluster (restarts the API
//! server, compacts etcd, throttles a user) takes [`Cluster::private`], its own. Every cluster
//! goes down with the test process (`cargo xtask cluster up --owner`), the test's own also
//! when dropped.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::root;

/// The directory the peers' binaries are in (or would be): `CLUSTERDNS_PEERS`, else
/// bench/peers/build.sh's cache.
fn peers_dir() -> Option<PathBuf> {
    xtask::cluster::peers_dir().ok()
}

/// The directory holding the peers' binaries, if they are built.
pub fn peers() -> Option<PathBuf> {
    let dir = peers_dir()?;
    xtask::cluster::PEERS
        .iter()
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
    control: xtask::cluster::Cluster,
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

    /// A cluster of the test's own, `cargo xtask cluster up` given `args` too.
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
        let mut options = xtask::cluster::Options::from_args(args)
            .unwrap_or_else(|error| panic!("cargo xtask cluster up {}: {error}", args.join(" ")));
        options.owner = Some(std::process::id());
        // The shared cluster is never dropped: its temporary directory goes with the process.
        options.remove_with_owner = true;
        let control = xtask::cluster::Cluster::new(dir.path()).unwrap();
        let started = Instant::now();
        let ports = match control.up(&peers, &options) {
            Ok(ports) => ports,
            Err(error) => {
                let _ = control.down();
                panic!("cargo xtask cluster up failed: {error:#}");
            }
        };
        eprintln!(
            "local control plane up in {:.1} s ({})",
            started.elapsed().as_secs_f64(),
            dir.path().display()
        );
        Some(Self {
            kubeconfig: control.kubeconfig(),
            api_port: ports.apiserver,
            etcd_port: ports.etcd,
            control,
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

    /// `cargo xtask cluster ACTION ARGS...` on this cluster (`stop kube-apiserver`,
    /// `restart etcd`, `env` ...); what it prints on stdout. Panics with its error.
    pub fn script(&self, action: &[&str]) -> String {
        let control = &self.control;
        let component = || -> xtask::cluster::Component {
            match action {
                [_, name] => name
                    .parse()
                    .unwrap_or_else(|error| panic!("cargo xtask cluster {action:?}: {error}")),
                _ => panic!("cargo xtask cluster {action:?}: one component"),
            }
        };
        let done = match action.first().copied() {
            Some("env") => return control.env().unwrap(),
            Some("down") => control.down(),
            Some("stop") => control.stop(component()),
            Some("start") => control.start(component()),
            Some("restart") => control.restart(component()),
            _ => panic!("cargo xtask cluster {action:?}: no such action"),
        };
        done.unwrap_or_else(|error| panic!("cargo xtask cluster {}: {error:#}", action.join(" ")));
        String::new()
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
        let _ = self.control.down();
    }
}
