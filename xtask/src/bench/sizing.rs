//! `cargo xtask bench sizing`: memory and CPU of one clusterdns replica running kubeadm's
//! Corefile (deploy/configmap.yaml), for docs/kind.md's "Sizing" section and
//! deploy/deployment.yaml's resources (bench/sizing.sh until 2026-12-07).
//!
//! For each size: the objects (fixtures/shop.json, or examples/gencluster), kubeadm's
//! Corefile with `objects FILE` where the pod has `snapshot`, on loopback ports, forward to a
//! closed loopback port (no traffic leaves the machine). The server is pinned to CPU 0. Read
//! from /proc/PID/status: VmRSS once /ready says 200 (with its RssAnon + RssFile: the heap,
//! and the binary's and libraries' pages), again after IDLE seconds without queries (the
//! allocator has returned what loading used by then), and after a dnsperf run on CPU 1
//! (`-T 2 -c 4 -q 100 -l DURATION`, the querymix mix); VmHWM (the peak, reached while
//! loading) at the end. CPU: the server's utime+stime over the idle wait and over the dnsperf
//! run (queries per CPU-second).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::dnsperf::pods_made;
use super::{
    Build, BuildInputs, Machine, Output, OwnVersion, Server, dnsperf, dnsperf_counts, keeps, knob,
    kubeadm_corefile, log, ratio, run_to_file, write_json,
};

/// The `bench` of this bench's JSON documents.
pub const KIND: &str = "sizing";

/// The CPU the server is pinned to, and dnsperf's.
const SERVER_CPU: u32 = 0;
const CLIENT_CPU: u32 = 1;

/// Lines of each size's query file.
const QUERIES: u32 = 100_000;

/// The knobs, each a flag or the environment variable bench/sizing.sh read (in capitals).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_arg("keep", keeps("objects, Corefiles, logs, dnsperf outputs")))]
pub struct Options {
    /// The sizes, `fixture` (fixtures/shop.json) or a number of Services, space- or
    /// comma-separated [env: SIZES] [default: "fixture 100 1000 10000"].
    #[arg(long)]
    pub sizes: Option<Sizes>,
    /// Seconds of the dnsperf run [env: DURATION] [default: 10].
    #[arg(long)]
    pub duration: Option<u32>,
    /// Seconds without queries before the idle figures [env: IDLE] [default: 30].
    #[arg(long)]
    pub idle: Option<u32>,
    /// The DNS port on 127.0.0.1; health, ready, prometheus and the closed forward target on
    /// the next four [env: PORT] [default: 15363].
    #[arg(long)]
    pub port: Option<u16>,
    #[command(flatten)]
    pub build: Build,
    #[command(flatten)]
    pub output: Output,
}

/// One size: the bundled fixture or a synthetic cluster of this many Services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Size {
    Fixture,
    Services(u32),
}

impl FromStr for Size {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        if text == "fixture" {
            return Ok(Self::Fixture);
        }
        text.parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .map(Self::Services)
            .ok_or_else(|| format!("{text:?} is neither fixture nor a positive whole number"))
    }
}

impl TryFrom<String> for Size {
    type Error = String;

    fn try_from(text: String) -> std::result::Result<Self, String> {
        text.parse()
    }
}

impl From<Size> for String {
    fn from(size: Size) -> Self {
        match size {
            Size::Fixture => "fixture".to_owned(),
            Size::Services(n) => n.to_string(),
        }
    }
}

/// The sizes, as `SIZES="fixture 100"` or `--sizes fixture,100` gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes(pub Vec<Size>);

impl FromStr for Sizes {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let sizes = text
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|word| !word.is_empty())
            .map(str::parse)
            .collect::<std::result::Result<Vec<Size>, String>>()?;
        if sizes.is_empty() {
            return Err("no size".into());
        }
        Ok(Self(sizes))
    }
}

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    pub sizes: Vec<Size>,
    /// Of the dnsperf run.
    pub duration_s: u32,
    /// Without queries, between the ready and the idle figures.
    pub idle_s: u32,
    pub port: u16,
    pub server_cpu: u32,
    pub client_cpu: u32,
    /// Lines of the query file (the mix of benches/support/queries.rs).
    pub queries: u32,
    /// dnsperf's flags besides the server, the query file and `-l`.
    pub dnsperf_args: Vec<String>,
    #[serde(flatten)]
    pub build: BuildInputs,
}

/// What each program was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    #[serde(flatten)]
    pub own: OwnVersion,
    pub dnsperf: String,
}

/// One size's figures, memory in kB as /proc/PID/status gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub size: Size,
    /// gencluster's pods; none for the fixture.
    pub pods: Option<u64>,
    /// VmHWM at the end: the peak, reached while loading.
    pub peak_kb: u64,
    /// VmRSS 2 s after /ready said 200, and its RssAnon and RssFile.
    pub ready_kb: u64,
    pub ready_anon_kb: u64,
    pub ready_file_kb: u64,
    /// VmRSS after `idle_s` without queries.
    pub idle_kb: u64,
    /// VmRSS after the dnsperf run.
    pub after_queries_kb: u64,
    /// The server's utime+stime over the idle wait.
    pub idle_cpu_s: f64,
    /// Completed queries of the dnsperf run, and the server's CPU time over it.
    pub completed: u64,
    pub cpu_s: f64,
    pub queries_per_cpu_s: Option<f64>,
}

impl Figures {
    /// The server's CPU milliseconds per idle minute.
    pub fn idle_ms_per_minute(&self, idle_s: u32) -> f64 {
        self.idle_cpu_s * 1000.0 * 60.0 / f64::from(idle_s.max(1))
    }

    /// The table's first cell: `fixtures/shop.json`, or `SERVICES / PODS`.
    pub fn label(&self) -> String {
        match self.size {
            Size::Fixture => "fixtures/shop.json".to_owned(),
            Size::Services(n) => format!(
                "{n} / {}",
                self.pods.map_or_else(String::new, |p| p.to_string())
            ),
        }
    }
}

/// One run of the bench: the JSON document it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always "sizing".
    pub bench: String,
    /// When it started, RFC 3339.
    pub started: String,
    pub inputs: Inputs,
    pub machine: Machine,
    pub versions: Versions,
    pub sizes: Vec<Figures>,
}

impl Options {
    /// The inputs these options and the environment ask for (the binary still to be named).
    pub fn inputs(&self) -> Result<Inputs> {
        let default = Sizes(vec![
            Size::Fixture,
            Size::Services(100),
            Size::Services(1000),
            Size::Services(10000),
        ]);
        Ok(Inputs {
            sizes: knob(self.sizes.clone(), "SIZES", default)?.0,
            duration_s: knob(self.duration, "DURATION", 10)?,
            idle_s: knob(self.idle, "IDLE", 30)?,
            port: knob(self.port, "PORT", 15363)?,
            server_cpu: SERVER_CPU,
            client_cpu: CLIENT_CPU,
            queries: QUERIES,
            dnsperf_args: ["-T", "2", "-c", "4", "-q", "100"]
                .iter()
                .map(|arg| (*arg).to_owned())
                .collect(),
            build: self.build.inputs()?,
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

/// Runs the bench as `options` and the environment ask; prints the table row by row as each
/// size is measured, and writes the table and the JSON into the output directory.
pub fn run(options: &Options) -> Result<Written> {
    let mut inputs = options.inputs()?;
    let super::Started {
        work,
        binaries,
        build,
        hz,
        out,
        at: started,
    } = super::start(
        KIND,
        &["dnsperf", "taskset", "setpriv", "cargo"],
        &options.output,
        &options.build,
    )?;
    inputs.build = build;
    let stamp = super::stamp(started);
    let mut run = Run {
        bench: KIND.to_owned(),
        started: started.to_string(),
        machine: Machine::here(),
        versions: Versions {
            own: OwnVersion::of(&inputs.build.clusterdns),
            dnsperf: super::dnsperf_version(),
        },
        inputs,
        sizes: Vec::new(),
    };
    print!("{}", header(run.inputs.idle_s));
    for &size in &run.inputs.sizes.clone() {
        let figures = one_size(&run.inputs, &binaries, work.path(), size, hz)?;
        print!("{}", table_row(&figures, run.inputs.idle_s));
        run.sizes.push(figures);
    }
    let markdown = out.join(format!("sizing-{stamp}.md"));
    let json = out.join(format!("sizing-{stamp}.json"));
    std::fs::write(&markdown, report(&run))
        .with_context(|| format!("writing {}", markdown.display()))?;
    write_json(&json, &run)?;
    log(KIND, format!("report: {}", markdown.display()));
    log(KIND, format!("results: {}", json.display()));
    Ok(Written {
        markdown,
        json,
        run,
    })
}

/// Makes one size's objects and query file, starts the server and measures it.
fn one_size(
    inputs: &Inputs,
    binaries: &super::Binaries,
    work: &std::path::Path,
    size: Size,
    hz: f64,
) -> Result<Figures> {
    let dir = work.join(String::from(size));
    // The objects file has a directory of its own: clusterdns watches the directory.
    std::fs::create_dir_all(dir.join("objects"))?;
    let objects = dir.join("objects/objects.json");
    let pods = match size {
        Size::Fixture => {
            let fixture = crate::root().join("fixtures/shop.json");
            std::fs::copy(&fixture, &objects)
                .with_context(|| format!("copying {}", fixture.display()))?;
            None
        }
        Size::Services(services) => {
            let summary = dir.join("gencluster.txt");
            run_to_file(
                Command::new(&binaries.gencluster)
                    .args(["--services", &services.to_string(), "--out"])
                    .arg(&objects),
                &summary,
            )?;
            pods_made(&std::fs::read_to_string(&summary)?)
        }
    };
    let queries = dir.join("queries.txt");
    run_to_file(
        Command::new(&binaries.querymix)
            .arg("--objects")
            .arg(&objects)
            .args(["--count", &inputs.queries.to_string(), "--out"])
            .arg(&queries),
        &dir.join("querymix.txt"),
    )?;
    let corefile = dir.join("Corefile");
    std::fs::write(&corefile, kubeadm_corefile(inputs.port, &objects)?)?;
    let mut server = Server::start(
        "clusterdns",
        inputs.port,
        inputs.server_cpu,
        &binaries.clusterdns,
        &[
            "serve".as_ref(),
            "--corefile".as_ref(),
            corefile.as_os_str(),
        ],
        &dir.join("clusterdns.log"),
    )?;
    server.wait_http_ready(inputs.port + 2, Duration::from_secs(300))?;
    std::thread::sleep(Duration::from_secs(2));
    let ready_kb = server.status_kb("VmRSS")?;
    let ready_anon_kb = server.status_kb("RssAnon")?;
    let ready_file_kb = server.status_kb("RssFile")?;
    let before = server.cpu_ticks()?;
    std::thread::sleep(Duration::from_secs(u64::from(inputs.idle_s)));
    let idle_cpu_s = server.cpu_ticks()?.saturating_sub(before) as f64 / hz;
    let idle_kb = server.status_kb("VmRSS")?;
    let before = server.cpu_ticks()?;
    let output = dir.join("dnsperf.txt");
    dnsperf(
        inputs.client_cpu,
        inputs.port,
        &queries,
        &inputs.dnsperf_args,
        &["-l".to_owned(), inputs.duration_s.to_string()],
        &output,
    )?;
    let cpu_s = server.cpu_ticks()?.saturating_sub(before) as f64 / hz;
    let counts = dnsperf_counts(&std::fs::read_to_string(&output)?)
        .with_context(|| output.display().to_string())?;
    let after_queries_kb = server.status_kb("VmRSS")?;
    let peak_kb = server.status_kb("VmHWM")?;
    server.check_running()?;
    drop(server);
    Ok(Figures {
        size,
        pods,
        peak_kb,
        ready_kb,
        ready_anon_kb,
        ready_file_kb,
        idle_kb,
        after_queries_kb,
        idle_cpu_s,
        completed: counts.completed,
        cpu_s,
        queries_per_cpu_s: ratio(counts.completed as f64, cpu_s),
    })
}

/// kB as the table shows it: MB to one place.
fn mb(kb: u64) -> String {
    format!("{:.1}", kb as f64 / 1024.0)
}

/// The table's two header lines, as bench/sizing.sh printed them.
pub fn header(idle_s: u32) -> String {
    format!(
        "| services / pods | peak RSS MB (load) | RSS MB when ready (anon + file) | RSS MB after {idle_s} s idle | RSS MB after queries | queries / CPU-second | CPU ms per idle minute |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    )
}

/// One size's row of the table.
pub fn table_row(f: &Figures, idle_s: u32) -> String {
    let mut line = String::new();
    let _ = writeln!(
        line,
        "| {} | {} | {} ({} + {}) | {} | {} | {} | {} |",
        f.label(),
        mb(f.peak_kb),
        mb(f.ready_kb),
        mb(f.ready_anon_kb),
        mb(f.ready_file_kb),
        mb(f.idle_kb),
        mb(f.after_queries_kb),
        f.queries_per_cpu_s
            .map_or_else(|| "—".to_owned(), |v| format!("{v:.0}")),
        // The script's shell arithmetic: whole milliseconds, rounded down.
        f.idle_ms_per_minute(idle_s).trunc()
    );
    line
}

/// The table the bench prints and writes as Markdown, as bench/sizing.sh printed it.
pub fn report(run: &Run) -> String {
    let mut text = header(run.inputs.idle_s);
    for figures in &run.sizes {
        text.push_str(&table_row(figures, run.inputs.idle_s));
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn figures(size: Size, pods: Option<u64>) -> Figures {
        Figures {
            size,
            pods,
            peak_kb: 16_589,
            ready_kb: 11_366,
            ready_anon_kb: 2_867,
            ready_file_kb: 8_499,
            idle_kb: 11_366,
            after_queries_kb: 11_571,
            idle_cpu_s: 0.04,
            completed: 2_563_800,
            cpu_s: 10.0,
            queries_per_cpu_s: Some(256_380.4),
        }
    }

    #[test]
    fn sizes_are_the_fixture_or_a_number_of_services() {
        assert_eq!(
            "fixture 100,1000".parse(),
            Ok(Sizes(vec![
                Size::Fixture,
                Size::Services(100),
                Size::Services(1000)
            ]))
        );
        assert_eq!(
            "fixture big".parse::<Sizes>(),
            Err("\"big\" is neither fixture nor a positive whole number".to_owned())
        );
        assert!("0".parse::<Size>().is_err());
        assert_eq!(" ".parse::<Sizes>(), Err("no size".to_owned()));
        // In JSON a size is the word the knob takes.
        assert_eq!(
            serde_json::to_string(&[Size::Fixture, Size::Services(100)]).unwrap(),
            "[\"fixture\",\"100\"]"
        );
        let back: Vec<Size> = serde_json::from_str("[\"fixture\",\"100\"]").unwrap();
        assert_eq!(back, [Size::Fixture, Size::Services(100)]);
        assert!(serde_json::from_str::<Size>("\"many\"").is_err());
    }

    #[test]
    fn the_table_is_the_scripts() {
        let header = header(30);
        assert!(
            header.starts_with(
                "| services / pods | peak RSS MB (load) | RSS MB when ready (anon + file) | RSS MB after 30 s idle |"
            ),
            "{header}"
        );
        assert!(header.ends_with("\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"));
        assert_eq!(
            table_row(&figures(Size::Services(100), Some(1500)), 30),
            "| 100 / 1500 | 16.2 | 11.1 (2.8 + 8.3) | 11.1 | 11.3 | 256380 | 80 |\n"
        );
        let mut fixture = figures(Size::Fixture, None);
        fixture.queries_per_cpu_s = None;
        // 0.0299 CPU-seconds over 30 s: 59.8 ms a minute, shown as 59 (shell arithmetic).
        fixture.idle_cpu_s = 0.0299;
        assert_eq!(
            table_row(&fixture, 30),
            "| fixtures/shop.json | 16.2 | 11.1 (2.8 + 8.3) | 11.1 | 11.3 | — | 59 |\n"
        );
    }

    #[test]
    fn a_run_reads_back_as_it_was_written_and_reports_its_table() {
        let run = Run {
            bench: KIND.to_owned(),
            started: "2026-12-07T08:00:00Z".to_owned(),
            inputs: Options::default().inputs().unwrap(),
            machine: Machine {
                kernel: "Linux 6.18 x86_64".to_owned(),
                cpus: 2,
                cpu_model: "AMD EPYC".to_owned(),
            },
            versions: Versions {
                own: OwnVersion {
                    clusterdns: "clusterdns 0.1.0".to_owned(),
                    commit: Some("8a31387".to_owned()),
                },
                dnsperf: "dnsperf 2.10.0".to_owned(),
            },
            sizes: vec![
                figures(Size::Fixture, None),
                figures(Size::Services(100), Some(1500)),
            ],
        };
        let text = serde_json::to_string_pretty(&run).unwrap();
        assert!(text.contains("\"size\": \"fixture\""), "{text}");
        let again: Run = serde_json::from_str(&text).unwrap();
        assert_eq!(again, run);
        let report = report(&run);
        assert_eq!(report.lines().count(), 4, "{report}");
        assert!(
            report.contains("\n| fixtures/shop.json | 16.2 |"),
            "{report}"
        );
    }
}
