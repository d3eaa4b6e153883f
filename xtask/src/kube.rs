//! The local control plane as the harness uses it: [`crate::cluster`]'s directory (its
//! certificates, the admin kubeconfig, the API server's port) and the peers' kubectl.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// A running control plane (`cargo xtask cluster up`).
#[derive(Debug, Clone)]
pub struct ControlPlane {
    /// Its directory: pki/ (the CA the nodes' certificates are signed with), log/.
    pub dir: PathBuf,
    /// The admin kubeconfig.
    pub kubeconfig: PathBuf,
    /// The API server's port on 127.0.0.1.
    pub api_port: u16,
    /// The directory of the peers' binaries (kubelet, kube-proxy, kubectl ...).
    pub peers: PathBuf,
}

impl ControlPlane {
    /// The control plane `cargo xtask cluster up --dir DIR` started (its `ports` file).
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let ports = std::fs::read_to_string(dir.join("ports"))
            .with_context(|| format!("no control plane in {}", dir.display()))?;
        let value = |key: &str| -> Result<String> {
            ports
                .lines()
                .find_map(|line| line.strip_prefix(&format!("{key}=")))
                .map(str::to_owned)
                .with_context(|| format!("no {key} in {}/ports", dir.display()))
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            kubeconfig: dir.join("admin.kubeconfig"),
            api_port: value("APISERVER_PORT")?.parse()?,
            peers: PathBuf::from(value("PEERS")?),
        })
    }

    /// The CA's certificate and key.
    pub fn ca(&self) -> (PathBuf, PathBuf) {
        (self.dir.join("pki/ca.crt"), self.dir.join("pki/ca.key"))
    }

    /// kubectl as the admin.
    pub fn kubectl(&self) -> Kubectl {
        Kubectl {
            binary: self.peers.join("kubectl"),
            kubeconfig: self.kubeconfig.clone(),
        }
    }
}

/// The peers' kubectl with one kubeconfig.
#[derive(Debug, Clone)]
pub struct Kubectl {
    pub binary: PathBuf,
    pub kubeconfig: PathBuf,
}

impl Kubectl {
    /// `kubectl ARGS` with `stdin`: its stdout, or an error with its stderr.
    pub fn run_with(&self, args: &[&str], stdin: &str) -> Result<String> {
        let mut child = Command::new(&self.binary)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("run {}", self.binary.display()))?;
        child
            .stdin
            .take()
            .context("kubectl's stdin")?
            .write_all(stdin.as_bytes())?;
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "kubectl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `kubectl ARGS`: its stdout.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        self.run_with(args, "")
    }

    /// `kubectl apply --server-side --force-conflicts -f -` of `yaml`.
    pub fn apply(&self, yaml: &str) -> Result<()> {
        self.run_with(
            &["apply", "--server-side", "--force-conflicts", "-f", "-"],
            yaml,
        )
        .map(drop)
    }

    /// `kubectl get ARGS -o json`, parsed.
    pub fn get(&self, args: &[&str]) -> Result<Value> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        Ok(serde_json::from_str(&self.run(&all)?)?)
    }
}

/// Polls `check` every 200 ms until it says yes, for up to `limit`; an error names `what`
/// and the last error `check` returned.
pub fn wait_until(
    what: &str,
    limit: Duration,
    mut check: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let last = match check() {
            Ok(true) => return Ok(()),
            Ok(false) => String::new(),
            Err(error) => format!(": {error:#}"),
        };
        if Instant::now() >= deadline {
            bail!("{what}: not within {} s{last}", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
