//! `cargo xtask bench tracker-paired`: what the search-path tracker costs, measured in pairs
//! (bench/README.md, "dnsperf against knotd", and docs/performance.md).
//!
//! Two servers hold the same objects, one with the tracker on and one with it off (the
//! shorthand's Corefile with `prometheus` and its `search_path` option, as `SEARCH_PATH=on|off
//! cargo xtask bench dnsperf` runs it), both pinned to one CPU; dnsperf, pinned to the other,
//! loads them in turn, ROUNDS rounds of DURATION seconds each, the order swapped every round.
//! Each round gives one ratio of queries per server CPU-second, on / off, from two runs
//! seconds apart: the drifts of a shared machine, which move whole runs of the dnsperf bench
//! by more than the tracker costs, fall on both halves of a pair. The figure is the median of
//! the ratios; their geometric mean and range are given too.
//!
//! With AGAINST, the pair is two binaries instead: "on" is this build (or CLUSTERDNS) and
//! "off" the binary AGAINST names, both on the same Corefile with the tracker on, so the ratio
//! is the new build's queries per CPU-second against the old's.
//!
//! The results are one JSON document ([`Run`]) and the Markdown report rendered from it, both
//! in bench/out.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::dnsperf::{SearchPath, search_path_corefile};
use super::{
    Build, BuildInputs, Machine, Output, OwnVersion, Server, Transport, dnsperf, dnsperf_counts,
    first_line, fixed, is_executable, keeps, knob, log, ratio, run_to_file, stamp_of, write_json,
};

/// The `bench` of this bench's JSON documents.
pub const KIND: &str = "tracker-paired";

/// The knobs, each a flag or the environment variable bench/tracker-paired.sh read (in
/// capitals).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_arg("keep", keeps("objects, Corefiles, logs")))]
pub struct Options {
    /// Services of gencluster's cluster [env: SERVICES] [default: 10000].
    #[arg(long)]
    pub services: Option<u32>,
    /// Rounds, each one run of each server [env: ROUNDS] [default: 16].
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Seconds of each dnsperf run [env: DURATION] [default: 5].
    #[arg(long)]
    pub duration: Option<u32>,
    /// Lines of the query file [env: QUERIES] [default: 100000].
    #[arg(long)]
    pub queries: Option<u32>,
    /// The CPU both servers are pinned to [env: SERVER_CPU] [default: 0].
    #[arg(long)]
    pub server_cpu: Option<u32>,
    /// The CPU dnsperf is pinned to [env: CLIENT_CPU] [default: 1].
    #[arg(long)]
    pub client_cpu: Option<u32>,
    /// The "on" server's port on 127.0.0.1 [env: ON_PORT] [default: 15371].
    #[arg(long)]
    pub on_port: Option<u16>,
    /// The "off" server's port on 127.0.0.1 [env: OFF_PORT] [default: 15372].
    #[arg(long)]
    pub off_port: Option<u16>,
    /// Pair two builds instead: this binary is "off", this build "on", the tracker on in both
    /// [env: AGAINST].
    #[arg(long)]
    pub against: Option<PathBuf>,
    #[command(flatten)]
    pub build: Build,
    #[command(flatten)]
    pub output: Output,
}

/// One side of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    On,
    Off,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::On => "on",
            Self::Off => "off",
        }
    }

    /// The order of round `round` (from 1): on first in odd rounds, off first in even ones.
    pub fn order(round: u32) -> [Self; 2] {
        if round % 2 == 1 {
            [Self::On, Self::Off]
        } else {
            [Self::Off, Self::On]
        }
    }
}

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    pub services: u32,
    pub rounds: u32,
    pub duration_s: u32,
    /// Lines of the query file (the mix of benches/support/queries.rs).
    pub queries: u32,
    /// dnsperf's flags besides the server, the query file and the duration.
    pub dnsperf_args: Vec<String>,
    pub server_cpu: u32,
    pub client_cpu: u32,
    pub on_port: u16,
    pub off_port: u16,
    /// The profile and the "on" binary.
    #[serde(flatten)]
    pub build: BuildInputs,
    /// The "off" binary when two builds are paired (AGAINST); none when the pair is one
    /// binary with the tracker on and off.
    pub against: Option<String>,
    /// The tracker's setting in each side's Corefile.
    pub on_tracker: SearchPath,
    pub off_tracker: SearchPath,
}

/// What each program was (not [`OwnVersion`] flattened: `against` comes between its two
/// fields in the JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    /// `clusterdns --version` of the "on" binary.
    pub clusterdns: String,
    /// `--version` of AGAINST's binary.
    pub against: Option<String>,
    /// The repository's commit (`git describe --always --dirty`), when there is one.
    pub commit: Option<String>,
    pub dnsperf: String,
}

/// One dnsperf run of one side.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Load {
    pub completed: u64,
    /// The server's utime+stime over the run.
    pub cpu_s: f64,
}

impl Load {
    /// Completed queries per server CPU-second; none when no CPU time was counted.
    pub fn queries_per_cpu_s(&self) -> Option<f64> {
        ratio(self.completed as f64, self.cpu_s)
    }
}

/// One round: both sides, one after the other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// From 1.
    pub round: u32,
    pub order: [Side; 2],
    pub on: Load,
    pub off: Load,
}

impl Round {
    /// Queries per CPU-second, on / off; none when either has none.
    pub fn ratio(&self) -> Option<f64> {
        ratio(self.on.queries_per_cpu_s()?, self.off.queries_per_cpu_s()?)
    }
}

/// The rounds' ratios summed up.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Rounds with a ratio.
    pub rounds: usize,
    pub median: f64,
    pub geometric_mean: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// The median (the mean of the middle two of an even count), geometric mean and range of
    /// `ratios`; none without one. Ratios not above zero are left out (a geometric mean has no
    /// place for them).
    pub fn of(ratios: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = ratios.iter().copied().filter(|r| *r > 0.0).collect();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        if n == 0 {
            return None;
        }
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            f64::midpoint(sorted[n / 2 - 1], sorted[n / 2])
        };
        let log_mean = sorted.iter().map(|r| r.ln()).sum::<f64>() / n as f64;
        Some(Self {
            rounds: n,
            median,
            geometric_mean: log_mean.exp(),
            min: sorted[0],
            max: sorted[n - 1],
        })
    }
}

/// One run of the bench: the JSON document it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always "tracker-paired".
    pub bench: String,
    /// When it started, RFC 3339.
    pub started: String,
    pub inputs: Inputs,
    pub machine: Machine,
    pub versions: Versions,
    pub rounds: Vec<Round>,
    /// None when no round had a ratio.
    pub summary: Option<Summary>,
}

impl Options {
    /// The inputs these options and the environment ask for (the binaries still to be named).
    pub fn inputs(&self) -> Result<Inputs> {
        let on_port = knob(self.on_port, "ON_PORT", 15371)?;
        let off_port = knob(self.off_port, "OFF_PORT", 15372)?;
        if on_port == off_port {
            bail!("the two servers cannot share port {on_port}");
        }
        let against = self
            .against
            .clone()
            .or_else(|| {
                std::env::var_os("AGAINST")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .map(|path| path.display().to_string());
        let rounds = knob(self.rounds, "ROUNDS", 16)?;
        if rounds == 0 {
            bail!("ROUNDS must be at least 1");
        }
        Ok(Inputs {
            services: knob(self.services, "SERVICES", 10_000)?,
            rounds,
            duration_s: knob(self.duration, "DURATION", 5)?,
            queries: knob(self.queries, "QUERIES", 100_000)?,
            dnsperf_args: Transport::Udp.dnsperf_args(),
            server_cpu: knob(self.server_cpu, "SERVER_CPU", 0)?,
            client_cpu: knob(self.client_cpu, "CLIENT_CPU", 1)?,
            on_port,
            off_port,
            build: self.build.inputs()?,
            off_tracker: if against.is_some() {
                SearchPath::On
            } else {
                SearchPath::Off
            },
            on_tracker: SearchPath::On,
            against,
        })
    }
}

/// Where a run's results went.
#[derive(Debug)]
pub struct Written {
    pub markdown: PathBuf,
    pub json: PathBuf,
    pub run: Run,
}

/// Runs the bench as `options` and the environment ask; writes the report and the JSON into
/// the output directory, and prints the report.
pub fn run(options: &Options) -> Result<Written> {
    let mut inputs = options.inputs()?;
    if let Some(against) = &inputs.against
        && !is_executable(Path::new(against))
    {
        bail!("AGAINST={against} is not an executable");
    }
    let super::Started {
        work,
        binaries,
        build,
        hz,
        out,
        at: started,
    } = super::start(
        KIND,
        &["dnsperf", "dig", "taskset", "setpriv"],
        &options.output,
        &options.build,
    )?;
    inputs.build = build;
    let OwnVersion { clusterdns, commit } = OwnVersion::of(&inputs.build.clusterdns);
    let versions = Versions {
        clusterdns,
        against: inputs
            .against
            .as_ref()
            .map(|against| first_line(against, &["--version"])),
        commit,
        dnsperf: super::dnsperf_version(),
    };
    let dir = work.path();
    // The objects file in a directory of its own (the server watches the directory).
    let objects = dir.join("objects/objects.json");
    let queries = dir.join("queries.txt");
    std::fs::create_dir_all(dir.join("objects"))?;
    log(KIND, format!("{} services: generating", inputs.services));
    run_to_file(
        Command::new(&binaries.gencluster)
            .args(["--services", &inputs.services.to_string(), "--out"])
            .arg(&objects),
        &dir.join("gencluster.txt"),
    )?;
    run_to_file(
        Command::new(&binaries.querymix)
            .arg("--objects")
            .arg(&objects)
            .args(["--count", &inputs.queries.to_string(), "--out"])
            .arg(&queries),
        &dir.join("querymix.txt"),
    )?;
    if let Some(against) = &inputs.against {
        log(
            KIND,
            format!("this build (on) against {against} (off), the tracker on in both"),
        );
    }

    let mut servers = Vec::new();
    for side in [Side::On, Side::Off] {
        let (port, tracker, binary) = match side {
            Side::On => (
                inputs.on_port,
                inputs.on_tracker,
                binaries.clusterdns.clone(),
            ),
            Side::Off => (
                inputs.off_port,
                inputs.off_tracker,
                inputs
                    .against
                    .as_ref()
                    .map_or_else(|| binaries.clusterdns.clone(), PathBuf::from),
            ),
        };
        let corefile = dir.join(format!("Corefile.{}", side.as_str()));
        std::fs::write(&corefile, search_path_corefile(port, tracker, &objects))?;
        servers.push(Server::start(
            &format!("clusterdns ({})", side.as_str()),
            port,
            inputs.server_cpu,
            &binary,
            &[
                "serve".as_ref(),
                "--corefile".as_ref(),
                corefile.as_os_str(),
            ],
            &dir.join(format!("clusterdns.{}.log", side.as_str())),
        )?);
    }
    for server in &mut servers {
        server.wait_ready("cluster.local", Duration::from_secs(300), false)?;
    }
    log(KIND, "both servers answering; warming up");
    let [on, off] = &servers[..] else {
        bail!("two servers, not {}", servers.len());
    };
    let server = |side: Side| match side {
        Side::On => on,
        Side::Off => off,
    };
    let load = |side: Side| -> Result<Load> {
        let server = server(side);
        let output = dir.join(format!("run.{}.txt", side.as_str()));
        let before = server.cpu_ticks()?;
        dnsperf(
            inputs.client_cpu,
            server.port,
            &queries,
            &inputs.dnsperf_args,
            &["-l".to_owned(), inputs.duration_s.to_string()],
            &output,
        )?;
        let after = server.cpu_ticks()?;
        let text = std::fs::read_to_string(&output)?;
        let counts = dnsperf_counts(&text).with_context(|| output.display().to_string())?;
        Ok(Load {
            completed: counts.completed,
            cpu_s: after.saturating_sub(before) as f64 / hz,
        })
    };
    load(Side::On)?;
    load(Side::Off)?;

    let mut rounds = Vec::new();
    for round in 1..=inputs.rounds {
        let order = Side::order(round);
        let first = load(order[0])?;
        let second = load(order[1])?;
        let (on, off) = match order[0] {
            Side::On => (first, second),
            Side::Off => (second, first),
        };
        let round = Round {
            round,
            order,
            on,
            off,
        };
        log(KIND, row(&round).trim_end());
        rounds.push(round);
    }
    drop(servers);
    let ratios: Vec<f64> = rounds.iter().filter_map(Round::ratio).collect();
    let run = Run {
        bench: KIND.to_owned(),
        started: started.to_string(),
        machine: Machine::here(),
        versions,
        inputs,
        summary: Summary::of(&ratios),
        rounds,
    };
    let stamp = super::stamp(started);
    let markdown = out.join(format!("{KIND}-{stamp}.md"));
    let json = out.join(format!("{KIND}-{stamp}.json"));
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

/// A round's row of the report's table, as the script printed it.
pub fn row(round: &Round) -> String {
    format!(
        "| {} | {}, {} | {} | {} | {} |\n",
        round.round,
        round.order[0].as_str(),
        round.order[1].as_str(),
        fixed(round.on.queries_per_cpu_s(), 0),
        fixed(round.off.queries_per_cpu_s(), 0),
        fixed(round.ratio(), 3),
    )
}

/// The report the bench prints and writes as Markdown: the script's table and summary line,
/// under a heading and a line saying what was paired.
pub fn report(run: &Run) -> Result<String> {
    let inputs = &run.inputs;
    let stamp = stamp_of(&run.started)?;
    let mut text = String::new();
    writeln!(text, "# The search-path tracker in pairs ({stamp})\n")?;
    let pair = match (&inputs.against, &run.versions.against) {
        (Some(against), version) => format!(
            "on: {} ({}), off: {against} ({}), the tracker on in both",
            inputs.build.clusterdns,
            run.versions.clusterdns,
            version.as_deref().unwrap_or("?")
        ),
        (None, _) => format!(
            "{} ({}), the tracker on and off",
            inputs.build.clusterdns, run.versions.clusterdns
        ),
    };
    writeln!(
        text,
        "{}; {} CPUs ({}); {}; clusterdns at {}. {pair}; {} Services; both servers pinned to CPU {}, dnsperf to CPU {}; `dnsperf {} -l {}` against each in turn, the order swapped every round; a {}-line query file.\n",
        run.machine.kernel,
        run.machine.cpus,
        run.machine.cpu_model,
        run.versions.dnsperf,
        run.versions
            .commit
            .as_deref()
            .unwrap_or("an unknown commit"),
        inputs.services,
        inputs.server_cpu,
        inputs.client_cpu,
        inputs.dnsperf_args.join(" "),
        inputs.duration_s,
        inputs.queries,
    )?;
    writeln!(
        text,
        "| round | order | on: queries / CPU s | off: queries / CPU s | on / off |"
    )?;
    writeln!(text, "| ---: | --- | ---: | ---: | ---: |")?;
    for round in &run.rounds {
        text.push_str(&row(round));
    }
    match &run.summary {
        Some(s) => writeln!(
            text,
            "\non / off over {} rounds: median {:.3}, geometric mean {:.3}, range {:.3} to {:.3}",
            s.rounds, s.median, s.geometric_mean, s.min, s.max
        )?,
        None => writeln!(text, "\nno round had a ratio (no CPU time counted)")?,
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::common::fixture::{assert_renders, read_back};
    use super::*;

    /// A run's JSON as the bench writes it.
    const FIXTURE: &str = include_str!("../../fixtures/tracker-paired.json");

    /// The fixture, read back as it was written.
    fn fixture() -> Run {
        read_back(FIXTURE)
    }

    #[test]
    fn the_fixture_reads_back_as_it_was_written() {
        let run = fixture();
        assert_eq!(run.bench, KIND);
        // Its summary is that of its rounds (to the last bits JSON keeps of a float).
        let ratios: Vec<f64> = run.rounds.iter().filter_map(Round::ratio).collect();
        let (again, kept) = (Summary::of(&ratios).unwrap(), run.summary.unwrap());
        assert_eq!(again.rounds, kept.rounds);
        for (a, b) in [
            (again.median, kept.median),
            (again.geometric_mean, kept.geometric_mean),
            (again.min, kept.min),
            (again.max, kept.max),
        ] {
            assert!((a - b).abs() < 1e-12, "{again:?} {kept:?}");
        }
    }

    #[test]
    fn the_report_is_the_scripts_table_and_summary() {
        assert_renders(
            FIXTURE,
            include_str!("../../fixtures/tracker-paired.md"),
            report,
        );
    }

    #[test]
    fn the_order_swaps_every_round() {
        assert_eq!(Side::order(1), [Side::On, Side::Off]);
        assert_eq!(Side::order(2), [Side::Off, Side::On]);
        assert_eq!(Side::order(15), [Side::On, Side::Off]);
    }

    #[test]
    fn the_summary_is_the_median_geometric_mean_and_range() {
        let odd = Summary::of(&[1.2, 0.9, 1.0]).unwrap();
        assert_eq!(odd.rounds, 3);
        assert_eq!(odd.median, 1.0);
        assert!((odd.geometric_mean - (1.2f64 * 0.9 * 1.0).cbrt()).abs() < 1e-12);
        assert_eq!((odd.min, odd.max), (0.9, 1.2));
        let even = Summary::of(&[1.0, 0.98, 1.04, 0.99]).unwrap();
        assert!((even.median - 0.995).abs() < 1e-12, "{}", even.median);
        // A ratio of nothing is left out.
        assert_eq!(Summary::of(&[0.0, 1.0]).unwrap().rounds, 1);
        assert_eq!(Summary::of(&[]), None);
    }

    #[test]
    fn a_round_without_cpu_time_has_no_ratio() {
        let round = Round {
            round: 1,
            order: [Side::On, Side::Off],
            on: Load {
                completed: 100,
                cpu_s: 1.0,
            },
            off: Load {
                completed: 100,
                cpu_s: 0.0,
            },
        };
        assert_eq!(round.ratio(), None);
        assert_eq!(row(&round), "| 1 | on, off | 100 | — | — |\n");
    }

    #[test]
    fn against_pairs_two_builds_with_the_tracker_on() {
        let inputs = Options {
            against: Some(PathBuf::from("/old/clusterdns")),
            ..Options::default()
        }
        .inputs()
        .unwrap();
        assert_eq!(inputs.on_tracker, SearchPath::On);
        assert_eq!(inputs.off_tracker, SearchPath::On);
        let same = Options {
            on_port: Some(1),
            off_port: Some(1),
            ..Options::default()
        };
        assert!(same.inputs().is_err());
    }
}
