//! `cargo xtask bench watch-memory`: memory of the API watch at scale (bench/watch-memory.sh
//! until 2026-12-07). The ignored test `sources::live::watch_memory_at_scale`
//! (tests/sources/live.rs) runs in a release build, once per `pods` mode (disabled, then
//! verified): the server lists and watches a synthetic cluster served by the API server
//! stand-in (tests/common/apiserver/), then goes through a full re-list (410 Gone). The lines
//! the test prints (the sync time, the peak, after-sync and steady RSS, the re-list's peak)
//! are printed as they are and parsed into [`Mode`]; the run's JSON ([`Run`]) goes to
//! bench/out.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::churn::Pods;
use super::{
    Machine, Output, build_release, commit, ignored_test, keeps, knob, log, number_after,
    run_to_file, write_json,
};

/// The `bench` of this bench's JSON documents.
pub const KIND: &str = "watch-memory";

/// The test the bench runs, its path in tests/main.rs.
pub const TEST: &str = "sources::live::watch_memory_at_scale";

/// The `pods` modes measured, in this order.
pub const MODES: [Pods; 2] = [Pods::Disabled, Pods::Verified];

/// The knobs, each a flag or the environment variable bench/watch-memory.sh read (in
/// capitals).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(
    mut_arg("keep", keeps("the objects, the test's output")),
    mut_arg("out", |arg| arg.help("Where the JSON goes [default: bench/out]"))
)]
pub struct Options {
    /// Services of the synthetic cluster, 15 pods each [env: SERVICES] [default: 10000].
    #[arg(long)]
    pub services: Option<u32>,
    #[command(flatten)]
    pub output: Output,
}

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    pub services: u32,
    /// gencluster's pods.
    pub pods: Option<u64>,
    pub modes: Vec<Pods>,
}

/// One `pods` mode's figures, in MB as the test prints them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mode {
    pub pods: Pods,
    /// How long the stand-in took to load the objects.
    pub stand_in_loaded_s: f64,
    pub synced_s: f64,
    /// The server's CPU time over the sync.
    pub sync_cpu_s: f64,
    /// VmHWM after the sync: the peak of the first list.
    pub rss_peak_mb: f64,
    pub rss_after_sync_mb: f64,
    /// 10 s later.
    pub rss_steady_mb: f64,
    /// VmHWM (reset before it) and VmRSS 10 s after a full re-list.
    pub relist_peak_mb: f64,
    pub relist_rss_mb: f64,
    /// The server's own `synced with the API server` log line.
    pub synced_line: Option<String>,
    /// The test's lines, as printed.
    pub lines: Vec<String>,
}

/// One run of the bench: the JSON document it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always "watch-memory".
    pub bench: String,
    /// When it started, RFC 3339.
    pub started: String,
    pub inputs: Inputs,
    pub machine: Machine,
    /// The repository's commit (`git describe --always --dirty`).
    pub commit: Option<String>,
    pub modes: Vec<Mode>,
}

/// Whether the test printed `line` for the report: bench/watch-memory.sh's
/// `grep -E "^pods |synced with|stand-in loaded"`.
pub fn reported(line: &str) -> bool {
    line.starts_with("pods ") || line.contains("synced with") || line.contains("stand-in loaded")
}

/// One mode's figures from the test's output.
pub fn parse(pods: Pods, output: &str) -> Result<Mode> {
    let lines: Vec<String> = output
        .lines()
        .filter(|line| reported(line))
        .map(str::to_owned)
        .collect();
    let number = |text: &str, marker: &str| -> Result<f64> {
        number_after(text, marker)
            .with_context(|| format!("no number after {marker:?} in {text:?}"))
    };
    let loaded = lines
        .iter()
        .find_map(|line| line.split_once("stand-in loaded ").map(|(_, rest)| rest))
        .context("no \"stand-in loaded\" line in the test's output")?;
    let prefix = format!("pods {}: ", pods.as_str());
    let figures = lines
        .iter()
        .find_map(|line| line.strip_prefix(&prefix))
        .with_context(|| format!("no {prefix:?} line in the test's output"))?;
    let relist = figures
        .split_once("after a full re-list: ")
        .map(|(_, rest)| rest)
        .with_context(|| format!("no re-list in {figures:?}"))?;
    Ok(Mode {
        pods,
        stand_in_loaded_s: number(loaded.rsplit_once(" in ").map_or("", |(_, s)| s), "")?,
        synced_s: number(figures, "synced in ")?,
        sync_cpu_s: number(figures, " s (")?,
        rss_peak_mb: number(figures, "RSS peak ")?,
        rss_after_sync_mb: number(figures, "after sync ")?,
        rss_steady_mb: number(figures, "steady ")?,
        relist_peak_mb: number(relist, "peak ")?,
        relist_rss_mb: number(relist, "RSS ")?,
        synced_line: lines
            .iter()
            .find(|line| line.contains("synced with"))
            .cloned(),
        lines,
    })
}

impl Options {
    /// The inputs these options and the environment ask for (gencluster's pods still to
    /// come).
    pub fn inputs(&self) -> Result<Inputs> {
        Ok(Inputs {
            services: knob(self.services, "SERVICES", 10_000)?,
            pods: None,
            modes: MODES.to_vec(),
        })
    }
}

/// Runs the bench as `options` and the environment ask: prints each mode's lines, writes the
/// JSON into the output directory.
pub fn run(options: &Options) -> Result<(PathBuf, Run)> {
    let mut inputs = options.inputs()?;
    let work = options.output.work(KIND)?;
    let binaries = build_release(KIND, "release", None, &work.path().join("build.log"))?;
    let out = options.output.dir()?;
    let cluster = work.path().join("cluster.json");
    let summary = work.path().join("gencluster.txt");
    run_to_file(
        Command::new(&binaries.gencluster)
            .args(["--services", &inputs.services.to_string(), "--out"])
            .arg(&cluster),
        &summary,
    )?;
    inputs.pods = super::dnsperf::pods_made(&std::fs::read_to_string(&summary)?);
    let started = super::now();
    let mut run = Run {
        bench: KIND.to_owned(),
        started: started.to_string(),
        machine: Machine::here(),
        commit: commit(),
        inputs,
        modes: Vec::new(),
    };
    for pods in run.inputs.modes.clone() {
        log(
            KIND,
            format!(
                "{TEST} (release build), {} Services, pods {}",
                run.inputs.services,
                pods.as_str()
            ),
        );
        let test = ignored_test(
            TEST,
            true,
            &[
                ("CLUSTERDNS_SCALE_FILE", cluster.as_os_str()),
                ("CLUSTERDNS_SCALE_PODS", pods.as_str().as_ref()),
            ],
            &work.path().join(format!("test-{}.txt", pods.as_str())),
        )?;
        test.echo(TEST, reported)?;
        run.modes.push(parse(pods, &test.output)?);
    }
    let stamp = super::stamp(started);
    let json = out.join(format!("watch-memory-{stamp}.json"));
    write_json(&json, &run)?;
    log(KIND, format!("results: {}", json.display()));
    Ok((json, run))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// What the test printed with `pods verified`, among cargo's and libtest's lines.
    const OUTPUT: &str = "running 1 test\nstand-in loaded /tmp/clusterdns-watch-memory.x/cluster.json in 0.2 s\npods verified: synced in 0.5 s (0.3 s of the server's CPU); RSS peak 61 MB, after sync 58 MB, steady 49 MB; after a full re-list: peak 84 MB, RSS 52 MB\n2026-12-07T08:00:00.123456Z  INFO clusterdns::source::api::task: synced with the API server; zone published zone=cluster.local. serial=1 names=4123 services=103 endpoint_slices=104 build_ms=12 encoding=json\ntest sources::live::watch_memory_at_scale ... ok\n";

    #[test]
    fn the_tests_lines_are_parsed() {
        let mode = parse(Pods::Verified, OUTPUT).unwrap();
        assert_eq!(
            mode,
            Mode {
                pods: Pods::Verified,
                stand_in_loaded_s: 0.2,
                synced_s: 0.5,
                sync_cpu_s: 0.3,
                rss_peak_mb: 61.0,
                rss_after_sync_mb: 58.0,
                rss_steady_mb: 49.0,
                relist_peak_mb: 84.0,
                relist_rss_mb: 52.0,
                synced_line: Some(
                    "2026-12-07T08:00:00.123456Z  INFO clusterdns::source::api::task: synced with the API server; zone published zone=cluster.local. serial=1 names=4123 services=103 endpoint_slices=104 build_ms=12 encoding=json".to_owned()
                ),
                lines: OUTPUT
                    .lines()
                    .skip(1)
                    .take(3)
                    .map(str::to_owned)
                    .collect(),
            }
        );
        let json = serde_json::to_string(&mode).unwrap();
        assert_eq!(serde_json::from_str::<Mode>(&json).unwrap(), mode);
    }

    #[test]
    fn another_modes_line_is_not_taken() {
        let error = parse(Pods::Disabled, OUTPUT).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no \"pods disabled: \" line in the test's output"
        );
        let error = parse(Pods::Verified, "pods verified: synced in 0.5 s\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "no \"stand-in loaded\" line in the test's output"
        );
    }
}
