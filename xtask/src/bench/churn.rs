//! `cargo xtask bench churn`: the API watch under churn (bench/churn.sh until 2026-12-07). For
//! each scale the ignored test `sources::live::churn_at_scale` (tests/sources/live.rs) runs
//! in a release build: the server syncs a synthetic cluster from the API server stand-in
//! (tests/common/apiserver/), then (server pinned to CPU 0, the stand-in, probes and dnsperf
//! to CPU 1):
//!
//! - sync time, peak RSS during the sync, steady RSS;
//! - programming latency from outside: the stand-in gets a new Service, a client asks for its
//!   name every 200 µs until it answers (40 samples, idle and under churn);
//! - a steady churn of EndpointSlice updates (CHURN_RATE a second): the server's CPU and RSS
//!   meanwhile, and its dnsperf capacity (queries per server CPU-second) during the churn
//!   against idle.
//!
//! The lines the test prints are printed as they are and parsed into [`Scale`]; the run's
//! JSON ([`Run`]) goes to bench/out.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{
    Machine, Numbers, Output, build_release, commit, ignored_test, keeps, knob, log, need_tools,
    number_after, run_to_file, write_json,
};

/// The `bench` of this bench's JSON documents.
pub const KIND: &str = "churn";

/// The test the bench runs, its path in tests/main.rs.
pub const TEST: &str = "sources::live::churn_at_scale";

/// Lines of each scale's query file.
const QUERIES: u32 = 100_000;

/// The knobs, each a flag or the environment variable bench/churn.sh read (in capitals).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(
    mut_arg("keep", keeps("objects, query files, the test's output")),
    mut_arg("out", |arg| arg.help("Where the JSON goes [default: bench/out]"))
)]
pub struct Options {
    /// Services per run, one run per scale, space- or comma-separated [env: SCALES]
    /// [default: "1000 10000"].
    #[arg(long)]
    pub scales: Option<Numbers>,
    /// EndpointSlice updates a second during the churn [env: CHURN_RATE] [default: 100].
    #[arg(long)]
    pub churn_rate: Option<u32>,
    /// The `pods` mode: insecure, or verified to watch the pods too [env: PODS] [default:
    /// insecure].
    #[arg(long)]
    pub pods: Option<Pods>,
    #[command(flatten)]
    pub output: Output,
}

/// The kubernetes plugin's `pods` mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Pods {
    Disabled,
    Insecure,
    Verified,
}

impl Pods {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Insecure => "insecure",
            Self::Verified => "verified",
        }
    }
}

impl std::str::FromStr for Pods {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text {
            "disabled" => Ok(Self::Disabled),
            "insecure" => Ok(Self::Insecure),
            "verified" => Ok(Self::Verified),
            _ => Err("must be disabled, insecure or verified".into()),
        }
    }
}

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    /// Services, one run per scale.
    pub scales: Vec<u32>,
    /// EndpointSlice updates a second.
    pub churn_rate: u32,
    pub pods: Pods,
    /// Lines of the query file dnsperf loads the server with.
    pub queries: u32,
}

/// Programming latency: a new Service until its name answers, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgrammingLatency {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub samples: u32,
}

impl ProgrammingLatency {
    /// From `p50 1.23 ms, p99 4.81 ms, max 5.00 ms (40 samples)`.
    pub fn parse(text: &str) -> Option<Self> {
        Some(Self {
            p50_ms: number_after(text, "p50 ")?,
            p99_ms: number_after(text, "p99 ")?,
            max_ms: number_after(text, "max ")?,
            samples: number_after(text, "(")? as u32,
        })
    }
}

/// The server's CPU and memory while the slices churn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuringChurn {
    /// Of one core, over the window (the probes' queries included).
    pub cpu_percent: f64,
    pub cpu_s: f64,
    pub window_s: f64,
    pub rss_max_mb: f64,
    /// `rss_max_mb` over the steady RSS.
    pub rss_over_steady: f64,
    /// Slice updates the stand-in was sent.
    pub updates: u64,
}

/// dnsperf's queries per server CPU-second, idle and during the churn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    pub idle: f64,
    pub during_churn: f64,
    /// During the churn over idle, per cent.
    pub percent: f64,
}

/// One scale's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scale {
    pub services: u32,
    pub sync_s: f64,
    pub rss_peak_sync_mb: f64,
    pub rss_steady_mb: f64,
    pub idle: ProgrammingLatency,
    /// Under the churn rate the test names.
    pub churn_rate: u32,
    pub under_churn: ProgrammingLatency,
    pub during_churn: DuringChurn,
    /// None when dnsperf gave nothing.
    pub capacity: Option<Capacity>,
    /// The test's lines, as printed.
    pub lines: Vec<String>,
}

/// One run of the bench: the JSON document it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always "churn".
    pub bench: String,
    /// When it started, RFC 3339.
    pub started: String,
    pub inputs: Inputs,
    pub machine: Machine,
    /// The repository's commit (`git describe --always --dirty`).
    pub commit: Option<String>,
    pub scales: Vec<Scale>,
}

impl Options {
    /// The inputs these options and the environment ask for.
    pub fn inputs(&self) -> Result<Inputs> {
        Ok(Inputs {
            scales: knob(self.scales.clone(), "SCALES", Numbers(vec![1000, 10000]))?.0,
            churn_rate: knob(self.churn_rate, "CHURN_RATE", 100)?,
            pods: knob(self.pods, "PODS", Pods::Insecure)?,
            queries: QUERIES,
        })
    }
}

/// Whether the test printed `line` for the report: bench/churn.sh's
/// `grep -E "^(sync|programming|server CPU|queries per)"`.
pub fn reported(line: &str) -> bool {
    ["sync", "programming", "server CPU", "queries per"]
        .iter()
        .any(|start| line.starts_with(start))
}

/// One scale's results from the test's output.
pub fn parse(services: u32, output: &str) -> Result<Scale> {
    let lines: Vec<String> = output
        .lines()
        .filter(|line| reported(line))
        .map(str::to_owned)
        .collect();
    let find = |start: &str| -> Result<&str> {
        lines
            .iter()
            .find_map(|line| line.strip_prefix(start))
            .with_context(|| format!("no {start:?} line in the test's output"))
    };
    let number = |text: &str, marker: &str| -> Result<f64> {
        number_after(text, marker)
            .with_context(|| format!("no number after {marker:?} in {text:?}"))
    };
    let sync = find("sync ")?;
    let idle = find("programming latency, idle: ")?;
    let churn = lines
        .iter()
        .find_map(|line| {
            let rest = line.strip_prefix("programming latency, ")?;
            (!rest.starts_with("idle: ")).then_some(rest)
        })
        .context("no \"programming latency, N slice updates/s\" line in the test's output")?;
    let (rate, churn_latency) = churn
        .split_once(" slice updates/s: ")
        .with_context(|| format!("{churn:?}"))?;
    let cpu = find("server CPU during churn: ")?;
    let capacity = match find("queries per server CPU-second: ") {
        Ok(text) => Some(Capacity {
            idle: number(text, "idle ")?,
            during_churn: number(text, "during churn ")?,
            percent: number(text, " (")?,
        }),
        Err(_) => None,
    };
    Ok(Scale {
        services,
        sync_s: number(sync, "")?,
        rss_peak_sync_mb: number(sync, "during sync ")?,
        rss_steady_mb: number(sync, "steady ")?,
        idle: ProgrammingLatency::parse(idle).with_context(|| format!("{idle:?}"))?,
        churn_rate: rate.parse().with_context(|| format!("{churn:?}"))?,
        under_churn: ProgrammingLatency::parse(churn_latency)
            .with_context(|| format!("{churn:?}"))?,
        during_churn: DuringChurn {
            cpu_percent: number(cpu, "")?,
            cpu_s: number(cpu, "of a core (")?,
            window_s: number(cpu, " s over ")?,
            rss_max_mb: number(cpu, "RSS max ")?,
            rss_over_steady: number(cpu, " MB (")?,
            updates: number(cpu, "steady); ")? as u64,
        },
        capacity,
        lines,
    })
}

/// The line printed before each scale's, as bench/churn.sh printed it.
pub fn heading(services: u32, inputs: &Inputs) -> String {
    format!(
        "== {services} Services, pods {}, churn {} slice updates/s",
        inputs.pods.as_str(),
        inputs.churn_rate
    )
}

/// Runs the bench as `options` and the environment ask: prints each scale's lines, writes the
/// JSON into the output directory.
pub fn run(options: &Options) -> Result<(PathBuf, Run)> {
    let inputs = options.inputs()?;
    need_tools(&["dnsperf", "taskset"])?;
    let work = options.output.work(KIND)?;
    let binaries = build_release(KIND, "release", None, &work.path().join("build.log"))?;
    let out = options.output.dir()?;
    let started = super::now();
    let mut run = Run {
        bench: KIND.to_owned(),
        started: started.to_string(),
        machine: Machine::here(),
        commit: commit(),
        inputs,
        scales: Vec::new(),
    };
    for &services in &run.inputs.scales.clone() {
        let dir = work.path().join(services.to_string());
        std::fs::create_dir_all(&dir)?;
        let cluster = dir.join("cluster.json");
        let queries = dir.join("queries.txt");
        run_to_file(
            Command::new(&binaries.gencluster)
                .args(["--services", &services.to_string(), "--out"])
                .arg(&cluster),
            &dir.join("gencluster.txt"),
        )?;
        run_to_file(
            Command::new(&binaries.querymix)
                .arg("--objects")
                .arg(&cluster)
                .args(["--count", &run.inputs.queries.to_string(), "--out"])
                .arg(&queries),
            &dir.join("querymix.txt"),
        )?;
        println!("{}", heading(services, &run.inputs));
        log(KIND, format!("{TEST} (release build), {services} Services"));
        let rate = run.inputs.churn_rate.to_string();
        let test = ignored_test(
            TEST,
            true,
            &[
                ("CLUSTERDNS_SCALE_FILE", cluster.as_os_str()),
                ("CLUSTERDNS_SCALE_QUERIES", queries.as_os_str()),
                ("CLUSTERDNS_CHURN_RATE", rate.as_ref()),
                ("CLUSTERDNS_SCALE_PODS", run.inputs.pods.as_str().as_ref()),
            ],
            &dir.join("test.txt"),
        )?;
        test.echo(TEST, reported)?;
        run.scales.push(parse(services, &test.output)?);
    }
    let stamp = super::stamp(started);
    let json = out.join(format!("churn-{stamp}.json"));
    write_json(&json, &run)?;
    log(KIND, format!("results: {}", json.display()));
    Ok((json, run))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// What the test printed at 100 Services, among cargo's and libtest's lines.
    const OUTPUT: &str = "   Compiling clusterdns v0.1.0\n\nrunning 1 test\n2026-12-07T08:00:00Z INFO clusterdns: synced with the API server\nsync 0.4 s; RSS peak during sync 21 MB, steady 19 MB\nprogramming latency, idle: p50 1.02 ms, p99 2.31 ms, max 2.40 ms (40 samples)\nprogramming latency, 100 slice updates/s: p50 1.50 ms, p99 4.86 ms, max 5.05 ms (40 samples)\nserver CPU during churn: 7.3 % of a core (0.72 s over 9.9 s, probes included); RSS max 20 MB (1.02 x steady); 1210 updates sent\nqueries per server CPU-second: idle 187654, during churn 171002 (91 %)\ntest sources::live::churn_at_scale ... ok\n\ntest result: ok. 1 passed; 0 failed\n";

    #[test]
    fn the_tests_lines_are_parsed() {
        let scale = parse(100, OUTPUT).unwrap();
        assert_eq!(scale.services, 100);
        assert_eq!(scale.sync_s, 0.4);
        assert_eq!(scale.rss_peak_sync_mb, 21.0);
        assert_eq!(scale.rss_steady_mb, 19.0);
        assert_eq!(
            scale.idle,
            ProgrammingLatency {
                p50_ms: 1.02,
                p99_ms: 2.31,
                max_ms: 2.40,
                samples: 40
            }
        );
        assert_eq!(scale.churn_rate, 100);
        assert_eq!(scale.under_churn.p99_ms, 4.86);
        assert_eq!(
            scale.during_churn,
            DuringChurn {
                cpu_percent: 7.3,
                cpu_s: 0.72,
                window_s: 9.9,
                rss_max_mb: 20.0,
                rss_over_steady: 1.02,
                updates: 1210
            }
        );
        assert_eq!(
            scale.capacity,
            Some(Capacity {
                idle: 187_654.0,
                during_churn: 171_002.0,
                percent: 91.0
            })
        );
        // The lines printed: the script's grep, in order.
        assert_eq!(scale.lines.len(), 5);
        assert!(scale.lines[0].starts_with("sync 0.4 s"));
        assert!(scale.lines[4].starts_with("queries per server"));
    }

    #[test]
    fn capacity_is_optional_and_the_rest_is_not() {
        let without = OUTPUT.replace("queries per server", "dnsperf gave");
        assert_eq!(parse(100, &without).unwrap().capacity, None);
        let error = parse(100, &OUTPUT.replace("sync 0.4", "synced 0.4")).unwrap_err();
        assert_eq!(error.to_string(), "no \"sync \" line in the test's output");
        let error = parse(100, &OUTPUT.replace("100 slice updates/s", "idle")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no \"programming latency, N slice updates/s\" line in the test's output"
        );
    }

    #[test]
    fn the_heading_and_the_knobs_are_the_scripts() {
        let inputs = Inputs {
            scales: vec![100],
            churn_rate: 100,
            pods: Pods::Verified,
            queries: QUERIES,
        };
        assert_eq!(
            heading(100, &inputs),
            "== 100 Services, pods verified, churn 100 slice updates/s"
        );
        assert_eq!("verified".parse(), Ok(Pods::Verified));
        assert!("secure".parse::<Pods>().is_err());
        assert_eq!(
            serde_json::to_string(&Pods::Insecure).unwrap(),
            "\"insecure\""
        );
    }
}
