//! `cargo xtask bench`: the benches against real peers, and the tables bench/README.md shows
//! from their results.
//!
//! - [`dnsperf`]: clusterdns against knotd serving the same zone, dnsperf loading each in turn;
//! - [`cache`]: cached forwarded names, clusterdns against unbound;
//! - [`node_cache`]: NodeLocal DNSCache in network namespaces, `clusterdns node-cache`
//!   against CoreDNS on the same Corefile, address and rules;
//! - [`sizing`]: memory and CPU of one replica on kubeadm's Corefile, per cluster size;
//! - [`churn`]: the API watch under EndpointSlice churn (an ignored test of tests/, run and
//!   its lines parsed);
//! - [`watch_memory`]: the API watch's memory at scale, in each `pods` mode (the same way);
//! - [`differential`]: every answer of clusterdns against the real CoreDNS's, at scale (the
//!   same way, its report parsed);
//! - [`vs_coredns`]: clusterdns beside the real CoreDNS on a local control plane, the same
//!   figures for both in one run;
//! - [`fixed_rate`]: clusterdns and knotd unpinned, a worker per CPU, at fixed rates below
//!   saturation: the CPU a replica costs per 1,000 qps;
//! - [`tracker_paired`]: the search-path tracker's cost, two servers loaded in turn round by
//!   round (or two builds);
//! - [`list_mode`]: `list_mode paginated` against `streaming` on a local control plane;
//! - [`orderfile`]: `cargo xtask orderfile`, link/hot-text.ld from a callgrind profile of
//!   start-up and the query path (not a bench: it writes the linker script build.rs uses);
//! - [`table`]: the README's tables, rendered from the JSON documents the benches write.
//!
//! What the benches share is here: the work directory, the knobs (a flag, else the environment
//! variable the shell scripts read, else the default), the release build, the servers as
//! processes pinned to a CPU, a process's CPU time and memory from /proc, dig to wait for a
//! server and to compare two servers' answers, /ready, dnsperf's output, knotd's configuration,
//! kubeadm's Corefile on loopback, an ignored test of tests/main.rs run alone and numbers read
//! from the lines it prints.

pub mod cache;
pub mod churn;
pub mod common;
pub mod differential;
pub mod dnsperf;
pub mod fixed_rate;
pub mod list_mode;
pub mod node_cache;
pub mod orderfile;
pub mod sizing;
pub mod table;
pub mod tracker_paired;
pub mod vs_coredns;
pub mod watch_memory;

use std::fmt::Display;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use crate::root;

pub use common::{Build, BuildInputs, Output, OwnVersion, keeps};

/// Where the reports go by default: bench/out (ignored by git).
pub fn out_dir() -> PathBuf {
    root().join("bench/out")
}

/// `[bench NAME] message` on stderr.
pub fn log(bench: &str, message: impl Display) {
    eprintln!("[bench {bench}] {message}");
}

/// A knob: the flag if given, else the environment variable `var` (as the shell scripts read
/// it; empty is unset), else `default`.
pub fn knob<T: FromStr>(flag: Option<T>, var: &str, default: T) -> Result<T>
where
    T::Err: Display,
{
    if let Some(value) = flag {
        return Ok(value);
    }
    match std::env::var(var) {
        Ok(value) if !value.trim().is_empty() => value
            .trim()
            .parse()
            .map_err(|e| anyhow!("{var}={value}: {e}")),
        Ok(_) => Ok(default),
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(std::env::VarError::NotUnicode(_)) => bail!("{var}: not UTF-8"),
    }
}

/// Whether the environment variable `var` is set to anything but empty (`KEEP=1`).
pub fn env_set(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|value| !value.is_empty())
}

/// A list of numbers, as `SIZES="100 10000"` or `--sizes 100,10000` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numbers(pub Vec<u32>);

impl FromStr for Numbers {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let numbers = text
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|word| !word.is_empty())
            .map(|word| {
                word.parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("{word:?} is not a positive whole number"))
            })
            .collect::<std::result::Result<Vec<u32>, String>>()?;
        if numbers.is_empty() {
            return Err("no number".into());
        }
        Ok(Self(numbers))
    }
}

/// The transport dnsperf uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Udp,
    Tcp,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Udp => "udp",
            Self::Tcp => "tcp",
        }
    }

    /// dnsperf's flags for this transport. Over TCP dnsperf 2.10 waits on each connection in
    /// turn: it takes many connections, each with queries pipelined, to load a server at all
    /// (8 give both servers under 5,000 qps).
    pub fn dnsperf_args(self) -> Vec<String> {
        let args: &[&str] = match self {
            Self::Udp => &["-m", "udp", "-T", "4", "-c", "8", "-q", "200"],
            Self::Tcp => &["-m", "tcp", "-T", "4", "-c", "128", "-q", "2000"],
        };
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }
}

impl FromStr for Transport {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text {
            "udp" => Ok(Self::Udp),
            "tcp" => Ok(Self::Tcp),
            _ => Err("must be udp or tcp".into()),
        }
    }
}

/// The work directory of one bench run: removed at the end unless kept (`KEEP=1`).
pub struct Work {
    bench: &'static str,
    dir: PathBuf,
    temp: Option<tempfile::TempDir>,
}

impl Work {
    pub fn new(bench: &'static str, keep: bool) -> Result<Self> {
        let temp = tempfile::Builder::new()
            .prefix(&format!("clusterdns-{bench}."))
            .tempdir()
            .context("creating the work directory")?;
        let dir = temp.path().to_owned();
        Ok(Self {
            bench,
            dir,
            temp: if keep {
                let _ = temp.keep();
                None
            } else {
                Some(temp)
            },
        })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        if self.temp.is_none() {
            log(self.bench, format!("kept {}", self.dir.display()));
        }
    }
}

/// Fails unless every tool named is on PATH.
pub fn need_tools(tools: &[&str]) -> Result<()> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for tool in tools {
        let found = std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(tool)).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt as _;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        });
        if !found {
            bail!(
                "{tool} not found (apt-get install dnsperf knot unbound bind9-dnsutils curl util-linux)"
            );
        }
    }
    Ok(())
}

/// The binaries a bench runs: the server and the two generators of its inputs.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub clusterdns: PathBuf,
    pub gencluster: PathBuf,
    pub querymix: PathBuf,
}

/// What a bench that runs the release server has once it starts: the tools it needs checked,
/// its work directory, the binaries built (or the clusterdns [`Build`] names), what its JSON
/// records of that clusterdns, the clock's ticks per second, the output directory made, and
/// when it started.
pub struct Started {
    pub work: Work,
    pub binaries: Binaries,
    pub build: BuildInputs,
    pub hz: f64,
    pub out: PathBuf,
    pub at: jiff::Timestamp,
}

/// The start every server bench shares ([`Started`]), as its options' [`Output`] and
/// [`Build`] ask.
pub fn start(
    bench: &'static str,
    tools: &[&str],
    output: &Output,
    build: &Build,
) -> Result<Started> {
    need_tools(tools)?;
    let work = output.work(bench)?;
    let profile = build.profile()?;
    let binaries = build_release(
        bench,
        &profile,
        build.binary().as_deref(),
        &work.path().join("build.log"),
    )?;
    let hz = clock_ticks()?;
    let out = output.dir()?;
    Ok(Started {
        build: BuildInputs {
            profile,
            clusterdns: binaries.clusterdns.display().to_string(),
        },
        work,
        binaries,
        hz,
        out,
        at: now(),
    })
}

/// Builds the release binaries: the examples gencluster
/// and querymix with `--release`, the server with `--profile PROFILE` (release; `dist`,
/// Cargo.toml's shipping profile) unless `clusterdns` names a binary (an older build kept for
/// a before/after comparison). The build's output goes to `log_file`, and is printed if it
/// fails.
pub fn build_release(
    bench: &str,
    profile: &str,
    clusterdns: Option<&Path>,
    log_file: &Path,
) -> Result<Binaries> {
    log(bench, format!("building ({profile})"));
    let mut builds = vec![vec![
        "build",
        "--release",
        "--example",
        "gencluster",
        "--example",
        "querymix",
    ]];
    if clusterdns.is_none() {
        builds.push(vec!["build", "--profile", profile, "--bin", "clusterdns"]);
    }
    for args in builds {
        let log =
            File::create(log_file).with_context(|| format!("creating {}", log_file.display()))?;
        let status = cargo()
            .args(&args)
            .current_dir(root())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .status()
            .context("running cargo")?;
        if !status.success() {
            let text = std::fs::read_to_string(log_file).unwrap_or_default();
            eprintln!("{text}");
            bail!("cargo {} failed ({status})", args.join(" "));
        }
    }
    let target = target_dir()?;
    let clusterdns = match clusterdns {
        Some(path) => path.to_owned(),
        None => target.join(profile).join("clusterdns"),
    };
    if !is_executable(&clusterdns) {
        bail!("{} is not an executable", clusterdns.display());
    }
    Ok(Binaries {
        clusterdns,
        gencluster: target.join("release/examples/gencluster"),
        querymix: target.join("release/examples/querymix"),
    })
}

/// Cargo (`CARGO`, the one running xtask, else the one on PATH) for a build of the workspace,
/// without the variables `cargo run` set for xtask itself ([`set_by_cargo_run`]): a build
/// script that watches one (ring's watches CARGO_MANIFEST_DIR) would see it change between a
/// build from a shell and one from `cargo xtask`, and each time rebuild its crate and all
/// above it (ring, rustls, kube, the server: a quarter of an hour on two busy cores).
pub fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            command.env_remove(name);
        }
    }
    command
}

/// Whether `cargo run` sets the environment variable `name` for the program it runs (the
/// package's manifest and metadata; not `CARGO`, nor the configuration's CARGO_* variables).
pub fn set_by_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
        )
}

/// Cargo's target directory (`cargo metadata`'s `target_directory`: CARGO_TARGET_DIR
/// counts).
pub fn target_dir() -> Result<PathBuf> {
    let metadata = cargo()
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root())
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo metadata")?;
    let metadata: serde_json::Value =
        serde_json::from_slice(&metadata.stdout).context("cargo metadata's output")?;
    metadata["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .context("cargo metadata names no target_directory")
}

pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What an ignored test of `cargo test --test main` printed (stdout and stderr, cargo's
/// lines among them), and whether it passed.
#[derive(Debug, Clone)]
pub struct TestRun {
    pub passed: bool,
    pub output: String,
}

impl TestRun {
    /// Prints the lines of the output `reported` takes, as the scripts did; an error with the
    /// output's tail when the test `name` failed.
    pub fn echo(&self, name: &str, reported: impl Fn(&str) -> bool) -> Result<()> {
        for line in self.output.lines().filter(|line| reported(line)) {
            println!("{line}");
        }
        if !self.passed {
            bail!("{name} failed:\n{}", self.tail(50));
        }
        Ok(())
    }

    /// The last `lines` lines of the output.
    pub fn tail(&self, lines: usize) -> String {
        let tail: Vec<&str> = self.output.lines().rev().take(lines).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        tail.join("\n")
    }
}

/// Runs the ignored test `name` (its whole path in tests/main.rs) alone, `cargo test [--release]
/// --test main NAME -- --ignored --exact --nocapture`, with `env` set; its output goes to
/// `log_file` too. Fails if cargo cannot be run, or if the test passed without running (its
/// name matched none).
pub fn ignored_test(
    name: &str,
    release: bool,
    env: &[(&str, &std::ffi::OsStr)],
    log_file: &Path,
) -> Result<TestRun> {
    let file =
        File::create(log_file).with_context(|| format!("creating {}", log_file.display()))?;
    let status = cargo()
        .arg("test")
        .args(if release { &["--release"][..] } else { &[][..] })
        .args([
            "--test",
            "main",
            name,
            "--",
            "--ignored",
            "--exact",
            "--nocapture",
        ])
        .envs(env.iter().copied())
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .status()
        .context("running cargo test")?;
    let output = std::fs::read_to_string(log_file)
        .with_context(|| format!("reading {}", log_file.display()))?;
    let run = TestRun {
        passed: status.success(),
        output,
    };
    if run.passed && !ran_one_test(&run.output) {
        bail!("no test named {name} ran:\n{}", run.tail(20));
    }
    Ok(run)
}

/// Whether libtest's output says it ran one test (`running 1 test`).
pub fn ran_one_test(output: &str) -> bool {
    output.lines().any(|line| line.trim() == "running 1 test")
}

/// The number right after the first `marker` in `text` (`1.5` in `sync 1.5 s`, after
/// `sync `; an empty marker takes the number `text` begins with).
pub fn number_after(text: &str, marker: &str) -> Option<f64> {
    let (_, rest) = text.split_once(marker)?;
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Runs `command` with its stdout and stderr into `output`; fails, with the end of what it
/// printed, unless it succeeds.
pub fn run_to_file(command: &mut Command, output: &Path) -> Result<()> {
    let file = File::create(output).with_context(|| format!("creating {}", output.display()))?;
    let status = command
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .status()
        .with_context(|| format!("running {:?}", command.get_program()))?;
    if !status.success() {
        let text = std::fs::read_to_string(output).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "{:?} {}: {status}\n{}",
            command.get_program(),
            command
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            tail.join("\n")
        );
    }
    Ok(())
}

/// A server started for a bench: pinned to a CPU with taskset, ended (SIGTERM, then SIGKILL
/// after 5 s) when dropped, and with the bench's process if that ends first (setpriv's parent
/// death signal).
pub struct Server {
    pub name: String,
    pub port: u16,
    child: Child,
    log: PathBuf,
}

impl Server {
    /// Starts `program args...` on CPU `cpu`, its output into `log`.
    pub fn start(
        name: &str,
        port: u16,
        cpu: u32,
        program: &Path,
        args: &[&std::ffi::OsStr],
        log: &Path,
    ) -> Result<Self> {
        Self::start_on(name, port, Some(&cpu.to_string()), program, args, log)
    }

    /// Starts `program args...` on the CPUs `cpus` names (taskset's list: `0`, `0-1`), or
    /// unpinned without, its output into `log`.
    pub fn start_on(
        name: &str,
        port: u16,
        cpus: Option<&str>,
        program: &Path,
        args: &[&std::ffi::OsStr],
        log: &Path,
    ) -> Result<Self> {
        let file = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let mut command = Command::new("setpriv");
        command.args(["--pdeathsig", "TERM", "--"]);
        if let Some(cpus) = cpus {
            command.args(["taskset", "-c", cpus]);
        }
        let child = command
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        Ok(Self {
            name: name.to_owned(),
            port,
            child,
            log: log.to_owned(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Ends the server at once (SIGKILL: CoreDNS's `health` would make a SIGTERM wait out
    /// its lameduck) and collects it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Fails, with the end of its log, if the server has exited.
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "{} on port {} exited ({status}); its log, {}:\n{}",
                self.name,
                self.port,
                self.log.display(),
                tail.join("\n")
            );
        }
        Ok(())
    }

    /// utime+stime so far, in clock ticks.
    pub fn cpu_ticks(&self) -> Result<u64> {
        process_cpu_ticks(self.pid())
    }

    /// VmRSS, in kB.
    pub fn rss_kb(&self) -> Result<u64> {
        self.status_kb("VmRSS")
    }

    /// A `NAME: N kB` figure of /proc/PID/status (VmRSS, VmHWM, RssAnon, RssFile).
    pub fn status_kb(&self, name: &str) -> Result<u64> {
        process_status_kb(self.pid(), name)
    }

    /// Sends SIGTERM and waits up to `limit` for the server to exit (then SIGKILL): its exit
    /// status. For a server that takes its time to stop (under valgrind, writing its profile).
    pub fn terminate(&mut self, limit: Duration) -> Result<std::process::ExitStatus> {
        if let Some(status) = self.child.try_wait()? {
            return Ok(status);
        }
        let pid = i32::try_from(self.child.id()).context("a pid")?;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        )
        .with_context(|| format!("signalling {}", self.name))?;
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                bail!(
                    "{} did not exit within {} s of SIGTERM",
                    self.name,
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the server's /ready on 127.0.0.1:`port` says 200 (up to `limit`).
    pub fn wait_http_ready(&mut self, port: u16, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            self.check_running()?;
            if http_status(port, "/ready") == Some(200) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not become ready on port {port} within {} s",
                    self.name,
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Waits until the server answers zone's SOA (up to `limit`).
    pub fn wait_ready(&mut self, zone: &str, limit: Duration, recursion: bool) -> Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            self.check_running()?;
            let mut dig = Command::new("dig");
            dig.arg("@127.0.0.1")
                .args(["-p", &self.port.to_string()])
                .args(if recursion { &[][..] } else { &["+norec"][..] })
                .args(["+time=1", "+tries=1", "+noall", "+answer", "SOA", zone]);
            let output = dig.stdin(Stdio::null()).output().context("running dig")?;
            // dig prints its errors on stdout too: look for the record itself.
            if String::from_utf8_lossy(&output.stdout).contains("\tSOA\t") {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} on port {} did not answer {zone} SOA within {} s",
                    self.name,
                    self.port,
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            if let Ok(pid) = i32::try_from(self.child.id()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The status code of `GET path` on 127.0.0.1:`port` (HTTP/1.0), none if it does not answer.
pub fn http_status(port: u16, path: &str) -> Option<u16> {
    use std::io::{Read as _, Write as _};
    let timeout = Some(Duration::from_secs(2));
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(timeout).ok()?;
    stream.set_write_timeout(timeout).ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
        .ok()?;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    status_code(&String::from_utf8_lossy(&answer))
}

/// The status code of an HTTP response's status line (`HTTP/1.1 200 OK`).
pub fn status_code(response: &str) -> Option<u16> {
    let mut words = response.lines().next()?.split_whitespace();
    words
        .next()
        .filter(|version| version.starts_with("HTTP/"))?;
    words.next()?.parse().ok()
}

/// deploy/configmap.yaml's Corefile (kubeadm's) on loopback ports from `port`
/// ([`on_loopback`]).
pub fn kubeadm_corefile(port: u16, objects: &Path) -> Result<String> {
    Ok(on_loopback(
        &crate::operations::configmap_corefile()?,
        port,
        objects,
    ))
}

/// The ConfigMap's Corefile `corefile` on loopback: DNS on `port` (bound to 127.0.0.1),
/// health, ready and prometheus on the next three, forward to the one after (closed: no
/// traffic leaves the machine), and `objects OBJECTS` where the pod's Corefile has `snapshot`.
pub fn on_loopback(corefile: &str, port: u16, objects: &Path) -> String {
    let mut text = String::new();
    for line in corefile.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let words: Vec<&str> = line.split_whitespace().collect();
        let changed = match words.as_slice() {
            [".:53", "{"] => format!(".:{port} {{\n    bind 127.0.0.1"),
            ["snapshot", ..] => format!("{indent}objects {}", objects.display()),
            ["health", "{"] => format!("{indent}health 127.0.0.1:{} {{", port + 1),
            ["ready"] => format!("{indent}ready 127.0.0.1:{}", port + 2),
            ["prometheus", ":9153"] => format!("{indent}prometheus 127.0.0.1:{}", port + 3),
            ["forward", ".", "/etc/resolv.conf", rest @ ..] => {
                let mut line = format!("{indent}forward . 127.0.0.1:{}", port + 4);
                for word in rest {
                    line.push(' ');
                    line.push_str(word);
                }
                line
            }
            _ => line.to_owned(),
        };
        text.push_str(&changed);
        text.push('\n');
    }
    text
}

/// utime+stime of a process, in clock ticks, from its /proc/PID/stat: fields 14 and 15,
/// counted after the command name (which may hold spaces and parentheses).
pub fn cpu_ticks(stat: &str) -> Option<u64> {
    let (_, after) = stat.rsplit_once(") ")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// utime+stime of process `pid` so far, in clock ticks (/proc/PID/stat).
pub fn process_cpu_ticks(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    cpu_ticks(&stat).with_context(|| format!("{path}: {stat}"))
}

/// A `NAME: N kB` figure of process `pid`'s /proc/PID/status (VmRSS, VmHWM).
pub fn process_status_kb(pid: u32, name: &str) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    status_kb(&status, name).with_context(|| format!("{path}: no {name}"))
}

/// A `NAME:   123 kB` line's number from /proc/PID/status.
pub fn status_kb(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The clock ticks a second (`getconf CLK_TCK`).
pub fn clock_ticks() -> Result<f64> {
    let output = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .context("running getconf CLK_TCK")?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|hz| *hz > 0.0)
        .with_context(|| format!("getconf CLK_TCK: {text:?}"))
}

/// What one dnsperf run says: queries per second, completed and lost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DnsperfCounts {
    pub qps: f64,
    pub completed: u64,
    pub lost: u64,
}

/// The counts from dnsperf's output (its `Statistics:` lines).
pub fn dnsperf_counts(output: &str) -> Result<DnsperfCounts> {
    let field = |label: &str| -> Option<&str> {
        output.lines().find_map(|line| {
            line.trim_start()
                .strip_prefix(label)
                .and_then(|rest| rest.split_whitespace().next())
        })
    };
    let number = |label: &str| -> Result<&str> {
        field(label).with_context(|| format!("no {label:?} line in dnsperf's output"))
    };
    Ok(DnsperfCounts {
        qps: number("Queries per second:")?
            .parse()
            .context("dnsperf's queries per second")?,
        completed: number("Queries completed:")?
            .parse()
            .context("dnsperf's completed queries")?,
        lost: number("Queries lost:")?
            .parse()
            .context("dnsperf's lost queries")?,
    })
}

/// p50 and p99 latency, in milliseconds, of a `dnsperf -v` run; none when it answered nothing.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// The percentiles of the latencies in `dnsperf -v` output, one line per answer beginning
/// with `>` and ending with the latency in seconds. The p-th is the value at rank
/// floor(n × p) (at least the first) of the sorted latencies, as the shell benches took it.
pub fn percentiles(output: impl BufRead) -> Result<Latency> {
    let mut values = Vec::new();
    for line in output.lines() {
        let line = line.context("reading dnsperf's output")?;
        let mut words = line.split_whitespace();
        if words.next() != Some(">") {
            continue;
        }
        if let Some(seconds) = words.next_back().and_then(|w| w.parse::<f64>().ok()) {
            values.push(seconds * 1000.0);
        }
    }
    values.sort_by(f64::total_cmp);
    let at = |p: f64| -> Option<f64> {
        if values.is_empty() {
            return None;
        }
        let rank = ((values.len() as f64 * p) as usize).max(1);
        values.get(rank - 1).copied()
    };
    Ok(Latency {
        p50_ms: at(0.50),
        p99_ms: at(0.99),
    })
}

/// The percentiles of the `dnsperf -v` output in `path`.
pub fn percentiles_of(path: &Path) -> Result<Latency> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    percentiles(BufReader::new(file)).with_context(|| path.display().to_string())
}

/// dnsperf against 127.0.0.1:`port` with the query file `queries`, pinned to `cpu`: `args`
/// (the transport's) and `extra`, its output into `output`.
pub fn dnsperf(
    cpu: u32,
    port: u16,
    queries: &Path,
    args: &[String],
    extra: &[String],
    output: &Path,
) -> Result<()> {
    run_to_file(
        Command::new("taskset")
            .args(["-c", &cpu.to_string(), "dnsperf", "-s", "127.0.0.1"])
            .args(["-p", &port.to_string()])
            .arg("-d")
            .arg(queries)
            .args(args)
            .args(extra),
        output,
    )
}

/// The status and the sorted answer RRset of one question to 127.0.0.1:`port`, on one line,
/// for comparing two servers' answers: `NOERROR |a. 30 in a 10.0.0.1|`.
pub fn ask(port: u16, name: &str, qtype: &str) -> Result<String> {
    let output = Command::new("dig")
        .arg("@127.0.0.1")
        .args(["-p", &port.to_string()])
        .args([
            "+norec",
            "+time=2",
            "+tries=1",
            "+noall",
            "+comments",
            "+answer",
        ])
        .args([name, qtype])
        .stdin(Stdio::null())
        .output()
        .context("running dig")?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok(normalise_reply(&text))
}

/// dig's `+noall +comments +answer` output as one comparable line: the status (TIMEOUT if
/// none), then each answer line lowercased, its blanks squeezed to one space, sorted, each
/// followed by `|`.
pub fn normalise_reply(dig: &str) -> String {
    let status = dig
        .split("status: ")
        .nth(1)
        .map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_uppercase)
                .collect::<String>()
        })
        .filter(|status| !status.is_empty())
        .unwrap_or_else(|| "TIMEOUT".to_owned());
    let mut answers: Vec<String> = dig
        .lines()
        .filter(|line| !line.starts_with(';') && !line.is_empty())
        .map(|line| {
            let lower = line.to_lowercase();
            let mut squeezed = String::with_capacity(lower.len());
            let mut blank = false;
            for c in lower.chars() {
                if c == ' ' || c == '\t' {
                    if !blank {
                        squeezed.push(' ');
                    }
                    blank = true;
                } else {
                    squeezed.push(c);
                    blank = false;
                }
            }
            squeezed
        })
        .collect();
    answers.sort();
    let mut line = format!("{status} |");
    for answer in answers {
        line.push_str(&answer);
        line.push('|');
    }
    line
}

/// The first `count` distinct lines of a query file, each `NAME TYPE`.
pub fn distinct_questions(queries: &str, count: usize) -> Vec<(String, String)> {
    let mut seen = std::collections::HashSet::new();
    queries
        .lines()
        .filter(|line| seen.insert(*line))
        .take(count)
        .map(|line| {
            let line = line.trim_start();
            match line.split_once(char::is_whitespace) {
                Some((name, qtype)) => (name.to_owned(), qtype.trim().to_owned()),
                None => (line.to_owned(), String::new()),
            }
        })
        .collect()
}

/// knotd's configuration: listening on 127.0.0.1@`port` with
/// `workers` UDP and TCP workers, serving `domains` from `dir`/zones/DOMAIN.zone.
pub fn knot_conf(dir: &Path, port: u16, workers: u32, domains: &[String]) -> String {
    let dir = dir.display();
    let mut text = format!(
        "server:\n    listen: 127.0.0.1@{port}\n    rundir: \"{dir}/run\"\n    udp-workers: {workers}\n    tcp-workers: {workers}\n    background-workers: 1\ndatabase:\n    storage: \"{dir}/knot\"\ntemplate:\n  - id: default\n    storage: \"{dir}/zones\"\n    file: \"%s.zone\"\n    journal-content: none\n    zonefile-sync: -1\n    zonefile-load: whole\n    semantic-checks: off\nlog:\n  - target: stderr\n    any: warning\nzone:\n"
    );
    for domain in domains {
        text.push_str(&format!("  - domain: {domain}\n"));
    }
    text
}

/// The zones of `zones` that knotd serves from `dir`/zones: those whose file is there and not
/// empty, and ip6.arpa only when it holds PTR records.
pub fn served_zones(dir: &Path, zones: &[&str]) -> Result<Vec<String>> {
    let mut served = Vec::new();
    for zone in zones {
        let file = dir.join("zones").join(format!("{zone}.zone"));
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
        };
        if text.is_empty() || (*zone == "ip6.arpa" && !text.contains("\tPTR\t")) {
            continue;
        }
        served.push((*zone).to_owned());
    }
    Ok(served)
}

/// Writes knotd's configuration to `dir`/knot.conf (and makes its directories); returns the
/// zones it serves.
pub fn write_knot_conf(dir: &Path, port: u16, workers: u32, zones: &[&str]) -> Result<Vec<String>> {
    let served = served_zones(dir, zones)?;
    std::fs::write(
        dir.join("knot.conf"),
        knot_conf(dir, port, workers, &served),
    )?;
    std::fs::create_dir_all(dir.join("run"))?;
    std::fs::create_dir_all(dir.join("knot"))?;
    Ok(served)
}

/// A zone-file text (`clusterdns records --format zone`) split at its `$ORIGIN` lines: each
/// origin (without its trailing dot) with its lines, the `$ORIGIN` line included, in the order
/// the origins first appear; lines before the first `$ORIGIN` are dropped.
pub fn split_zones(text: &str) -> Vec<(String, String)> {
    let mut zones: Vec<(String, String)> = Vec::new();
    let mut current: Option<usize> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("$ORIGIN ") {
            let origin = rest.split_whitespace().next().unwrap_or("");
            let origin = origin.strip_suffix('.').unwrap_or(origin).to_owned();
            current = Some(match zones.iter().position(|(o, _)| *o == origin) {
                Some(at) => at,
                None => {
                    zones.push((origin, String::new()));
                    zones.len() - 1
                }
            });
        }
        if let Some(at) = current {
            zones[at].1.push_str(line);
            zones[at].1.push('\n');
        }
    }
    zones
}

/// The machine a bench ran on, as its report says it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// `uname -srm`.
    pub kernel: String,
    /// The CPUs the bench could use.
    pub cpus: usize,
    /// /proc/cpuinfo's first `model name`.
    pub cpu_model: String,
}

impl Machine {
    pub fn here() -> Self {
        let kernel = Command::new("uname")
            .arg("-srm")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines().find_map(|line| {
                    let (key, value) = line.split_once(':')?;
                    (key.trim() == "model name").then(|| value.trim().to_owned())
                })
            })
            .unwrap_or_default();
        Self {
            kernel,
            cpus: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            cpu_model,
        }
    }
}

/// The first line of `program args...`'s output (stdout, else stderr), for a version.
pub fn first_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map(|o| {
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            let text = if out.trim().is_empty() { err } else { out };
            text.lines().next().unwrap_or("").trim().to_owned()
        })
        .unwrap_or_default()
}

/// dnsperf's version: `dnsperf 2.10.0`, from `dnsperf -h`'s `Version:` line.
pub fn dnsperf_version() -> String {
    let output = Command::new("dnsperf")
        .arg("-h")
        .stdin(Stdio::null())
        .output();
    let text = output
        .map(|o| {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            text
        })
        .unwrap_or_default();
    text.lines()
        .find_map(|line| line.strip_prefix("Version"))
        .and_then(|rest| rest.trim_start_matches(':').split_whitespace().next())
        .map(|version| format!("dnsperf {version}"))
        .unwrap_or_else(|| "dnsperf".to_owned())
}

/// `numerator / denominator`, none when the denominator is not above zero.
pub fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    (denominator > 0.0).then(|| numerator / denominator)
}

/// Now, to the second: when a run started, as its JSON says it (RFC 3339).
pub fn now() -> jiff::Timestamp {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second()).unwrap_or(now)
}

/// Writes `value` as pretty JSON to `path`.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The repository's commit, `git describe --always --dirty`.
pub fn commit() -> Option<String> {
    let output = Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .current_dir(root())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !text.is_empty()).then_some(text)
}

/// A number to `decimals` places, or a dash for none.
pub fn fixed(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "—".to_owned(), |v| format!("{v:.decimals$}"))
}

/// `at` as the reports' stamp in their file names, 20261207T101500Z.
pub fn stamp(at: jiff::Timestamp) -> String {
    at.strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// `started` (RFC 3339) as the reports' stamp ([`stamp`]).
pub fn stamp_of(started: &str) -> Result<String> {
    let at: jiff::Timestamp = started
        .parse()
        .with_context(|| format!("started: {started:?} is not an RFC 3339 time"))?;
    Ok(stamp(at))
}

/// `n` with thousands separated by commas: 185,150.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut text = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            text.push(',');
        }
        text.push(c);
    }
    text
}

/// A Markdown table row of `cells` (an empty cell stays empty).
pub fn row(cells: &[String]) -> String {
    let mut line = String::from("|");
    for cell in cells {
        if cell.is_empty() {
            line.push_str(" |");
        } else {
            line.push(' ');
            line.push_str(cell);
            line.push_str(" |");
        }
    }
    line.push('\n');
    line
}

/// p50 / p99 in milliseconds, to two places: `0.40 / 0.85 ms`, a dash for a missing one.
pub fn p50_p99(latency: &Latency) -> String {
    match (latency.p50_ms, latency.p99_ms) {
        (Some(p50), Some(p99)) => format!("{p50:.2} / {p99:.2} ms"),
        (None, None) => "—".to_owned(),
        (p50, p99) => {
            let ms = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), |v| format!("{v:.2} ms"));
            format!("{} / {}", ms(p50), ms(p99))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cargo_builds_without_what_cargo_run_set_for_xtask() {
        for name in [
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_CRATE_NAME",
            "CARGO_BIN_NAME",
            "CARGO_PRIMARY_PACKAGE",
        ] {
            assert!(set_by_cargo_run(name), "{name}");
        }
        for name in [
            "CARGO",
            "CARGO_TARGET_DIR",
            "CARGO_HOME",
            "CARGO_BUILD_JOBS",
            "PATH",
        ] {
            assert!(!set_by_cargo_run(name), "{name}");
        }
        // This test runs under cargo, which sets CARGO_MANIFEST_DIR.
        let command = cargo();
        let removed: Vec<_> = command
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_owned())
            .collect();
        assert!(
            removed.iter().any(|name| name == "CARGO_MANIFEST_DIR"),
            "{removed:?}"
        );
    }

    #[test]
    fn the_kubeadm_corefile_goes_on_loopback_ports() {
        let corefile = on_loopback(
            ".:53 {\n    errors\n    health {\n       lameduck 5s\n    }\n    ready\n    kubernetes cluster.local {\n       snapshot /var/lib/clusterdns/snapshot.json\n    }\n    prometheus :9153\n    forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n}\n",
            15363,
            Path::new("/w/objects/objects.json"),
        );
        assert_eq!(
            corefile,
            ".:15363 {\n    bind 127.0.0.1\n    errors\n    health 127.0.0.1:15364 {\n       lameduck 5s\n    }\n    ready 127.0.0.1:15365\n    kubernetes cluster.local {\n       objects /w/objects/objects.json\n    }\n    prometheus 127.0.0.1:15366\n    forward . 127.0.0.1:15367 {\n       max_concurrent 1000\n    }\n}\n"
        );
        // The repository's own: every port moved, the snapshot replaced.
        let corefile = kubeadm_corefile(15363, Path::new("/o.json")).unwrap();
        for line in [
            ".:15363 {",
            "    bind 127.0.0.1",
            "objects /o.json",
            "health 127.0.0.1:15364 {",
            "ready 127.0.0.1:15365",
            "prometheus 127.0.0.1:15366",
            "forward . 127.0.0.1:15367 {",
        ] {
            assert!(corefile.contains(line), "{line}: {corefile}");
        }
        for gone in [":53", "snapshot", ":9153", "resolv.conf"] {
            assert!(!corefile.contains(gone), "{gone}: {corefile}");
        }
    }

    #[test]
    fn numbers_are_read_after_their_marker() {
        let line = "sync 1.5 s; RSS peak during sync 130 MB, steady 89 MB";
        assert_eq!(number_after(line, "sync "), Some(1.5));
        assert_eq!(number_after(line, "during sync "), Some(130.0));
        assert_eq!(number_after(line, "steady "), Some(89.0));
        assert_eq!(number_after("42 updates", ""), Some(42.0));
        assert_eq!(number_after(line, "nothing "), None);
        assert_eq!(number_after(line, "RSS "), None);
        assert!(ran_one_test("\nrunning 1 test\ntest a::b ... ok\n"));
        assert!(!ran_one_test("\nrunning 0 tests\n"));
        let run = TestRun {
            passed: true,
            output: "a\nb\nc\n".to_owned(),
        };
        assert_eq!(run.tail(2), "b\nc");
    }

    #[test]
    fn an_http_status_is_read_from_its_status_line() {
        assert_eq!(
            status_code("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nOK"),
            Some(200)
        );
        assert_eq!(
            status_code("HTTP/1.0 503 Service Unavailable\r\n"),
            Some(503)
        );
        assert_eq!(status_code(""), None);
        assert_eq!(status_code("SSH-2.0-OpenSSH\r\n"), None);
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(185_150), "185,150");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn numbers_take_spaces_or_commas_and_refuse_the_rest() {
        assert_eq!("100 10000".parse(), Ok(Numbers(vec![100, 10000])));
        assert_eq!(" 100,10000 ".parse(), Ok(Numbers(vec![100, 10000])));
        assert_eq!(
            "100 ten".parse::<Numbers>(),
            Err("\"ten\" is not a positive whole number".to_owned())
        );
        assert_eq!(
            "0".parse::<Numbers>(),
            Err("\"0\" is not a positive whole number".to_owned())
        );
        assert_eq!(" ".parse::<Numbers>(), Err("no number".to_owned()));
    }

    #[test]
    fn a_knob_is_the_flag_else_the_environment_else_the_default() {
        // A variable no one sets.
        let var = "CLUSTERDNS_XTASK_TEST_KNOB_UNSET";
        assert_eq!(knob(Some(3u32), var, 5).unwrap(), 3);
        assert_eq!(knob(None, var, 5u32).unwrap(), 5);
        // PATH is always set, and never a number.
        let error = knob::<u32>(None, "PATH", 5).unwrap_err().to_string();
        assert!(error.starts_with("PATH="), "{error}");
        assert!(
            error.ends_with(": invalid digit found in string"),
            "{error}"
        );
    }

    #[test]
    fn cpu_ticks_are_counted_after_the_command_name() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 500 0 0 0 1234 567 0 0 20 0 3 0 100 1000 200";
        assert_eq!(cpu_ticks(stat), Some(1234 + 567));
        assert_eq!(cpu_ticks("4242 (x) S 1"), None);
        assert_eq!(
            status_kb(
                "Name:\tknotd\nVmHWM:\t  9000 kB\nVmRSS:\t  8123 kB\n",
                "VmRSS"
            ),
            Some(8123)
        );
        assert_eq!(status_kb("Name:\tknotd\n", "VmRSS"), None);
    }

    #[test]
    fn dnsperf_counts_come_from_its_statistics() {
        let output = "DNS Performance Testing Tool\nVersion 2.10.0\n\n[Status] Command line: dnsperf -s 127.0.0.1\n\nStatistics:\n\n  Queries sent:         1851200\n  Queries completed:    1851000 (99.99%)\n  Queries lost:         200 (0.01%)\n\n  Response codes:       NOERROR 1665900 (90.00%), NXDOMAIN 185100 (10.00%)\n  Average packet size:  request 45, response 120\n  Run time (s):         10.000122\n  Queries per second:   185097.742307\n\n  Average Latency (s):  0.001067 (min 0.000021, max 0.011094)\n";
        assert_eq!(
            dnsperf_counts(output).unwrap(),
            DnsperfCounts {
                qps: 185_097.742_307,
                completed: 1_851_000,
                lost: 200
            }
        );
        let error = dnsperf_counts("Statistics:\n  Queries lost: 0 (0.00%)\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "no \"Queries per second:\" line in dnsperf's output"
        );
    }

    #[test]
    fn percentiles_are_taken_from_the_answer_lines() {
        let mut output = String::from("[Status] Sending queries\n");
        // 1..=200 ms, in reverse order, and lines that are not answers.
        for ms in (1..=200).rev() {
            output.push_str(&format!(
                "> NOERROR web.shop.svc.cluster.local A {:.6}\n",
                f64::from(ms) / 1000.0
            ));
        }
        output.push_str("< a query line\n>\n");
        let latency = percentiles(output.as_bytes()).unwrap();
        assert_eq!(
            latency.p50_ms.map(|v| (v * 1000.0).round()),
            Some(100_000.0)
        );
        assert_eq!(
            latency.p99_ms.map(|v| (v * 1000.0).round()),
            Some(198_000.0)
        );
        let one = percentiles("> NOERROR a A 0.000500\n".as_bytes()).unwrap();
        assert_eq!(one.p50_ms, Some(0.5));
        assert_eq!(one.p99_ms, Some(0.5));
        let none = percentiles("Statistics:\n".as_bytes()).unwrap();
        assert_eq!(
            none,
            Latency {
                p50_ms: None,
                p99_ms: None
            }
        );
    }

    #[test]
    fn replies_compare_by_status_and_sorted_answers() {
        let a = ";; Got answer:\n;; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 1\n;; flags: qr aa; QUERY: 1, ANSWER: 2\n\nWeb.shop.svc.cluster.local. 30\tIN\tA\t10.244.1.6\nweb.shop.svc.cluster.local.  30 IN A   10.244.1.5\n";
        let b = ";; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 9\nweb.shop.svc.cluster.local. 30 IN A 10.244.1.5\nweb.shop.svc.cluster.local. 30 IN A 10.244.1.6\n";
        assert_eq!(
            normalise_reply(a),
            "NOERROR |web.shop.svc.cluster.local. 30 in a 10.244.1.5|web.shop.svc.cluster.local. 30 in a 10.244.1.6|"
        );
        assert_eq!(normalise_reply(a), normalise_reply(b));
        assert_eq!(
            normalise_reply(";; communications error: timed out\n;; no servers could be reached\n"),
            "TIMEOUT |"
        );
        assert_eq!(
            normalise_reply(";; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 2\n"),
            "NXDOMAIN |"
        );
    }

    #[test]
    fn the_questions_checked_are_the_first_distinct_ones() {
        let queries =
            "a.cluster.local A\nb.cluster.local SRV\na.cluster.local A\nc.cluster.local AAAA\n";
        assert_eq!(
            distinct_questions(queries, 2),
            vec![
                ("a.cluster.local".to_owned(), "A".to_owned()),
                ("b.cluster.local".to_owned(), "SRV".to_owned())
            ]
        );
        assert_eq!(distinct_questions(queries, 10).len(), 3);
    }

    #[test]
    fn zones_are_split_at_their_origins() {
        let text = "; made by records\n$ORIGIN cluster.local.\n@ 30 IN SOA ns.dns hostmaster 1 7200 1800 86400 30\nweb.shop.svc 30 IN A 10.96.0.20\n$ORIGIN in-addr.arpa.\n20.0.96.10 30 IN PTR web.shop.svc.cluster.local.\n$ORIGIN cluster.local.\ndb.shop.svc 30 IN A 10.96.0.30\n";
        assert_eq!(
            split_zones(text),
            vec![
                (
                    "cluster.local".to_owned(),
                    "$ORIGIN cluster.local.\n@ 30 IN SOA ns.dns hostmaster 1 7200 1800 86400 30\nweb.shop.svc 30 IN A 10.96.0.20\n$ORIGIN cluster.local.\ndb.shop.svc 30 IN A 10.96.0.30\n".to_owned()
                ),
                (
                    "in-addr.arpa".to_owned(),
                    "$ORIGIN in-addr.arpa.\n20.0.96.10 30 IN PTR web.shop.svc.cluster.local.\n"
                        .to_owned()
                ),
            ]
        );
    }

    #[test]
    fn knotd_serves_the_zones_that_have_records() {
        let dir = tempfile::tempdir().unwrap();
        let zones = dir.path().join("zones");
        std::fs::create_dir(&zones).unwrap();
        std::fs::write(zones.join("cluster.local.zone"), "$ORIGIN cluster.local.\n").unwrap();
        std::fs::write(zones.join("in-addr.arpa.zone"), "").unwrap();
        std::fs::write(
            zones.join("ip6.arpa.zone"),
            "$ORIGIN ip6.arpa.\n@ 30 IN SOA a b 1 2 3 4 5\n",
        )
        .unwrap();
        let served = write_knot_conf(
            dir.path(),
            15354,
            1,
            &["cluster.local", "in-addr.arpa", "ip6.arpa"],
        )
        .unwrap();
        assert_eq!(served, vec!["cluster.local".to_owned()]);
        let conf = std::fs::read_to_string(dir.path().join("knot.conf")).unwrap();
        assert!(
            conf.starts_with("server:\n    listen: 127.0.0.1@15354\n"),
            "{conf}"
        );
        assert!(
            conf.contains("    udp-workers: 1\n    tcp-workers: 1\n"),
            "{conf}"
        );
        assert!(
            conf.ends_with("zone:\n  - domain: cluster.local\n"),
            "{conf}"
        );
        assert!(dir.path().join("run").is_dir() && dir.path().join("knot").is_dir());
    }
}
