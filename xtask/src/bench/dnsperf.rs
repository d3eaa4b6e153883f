//! `cargo xtask bench dnsperf`: dnsperf against clusterdns and against knotd serving the same
//! zone (`clusterdns records --format zone`), with the same query file, on the same machine
//! (bench/README.md, "dnsperf against knotd").
//!
//! Method (2 cores): each server pinned to CPU 0, dnsperf to CPU 1; a warm-up run, then
//! `dnsperf -T 4 -c 8 -q 200 -l DURATION` for qps, lost queries and the server's CPU time
//! (utime+stime from /proc/PID/stat around the run); then two runs with -v for latency
//! percentiles (printing every answer costs dnsperf time, so they are kept out of the
//! throughput run): the same flags (the server saturated: latency is mostly queueing behind
//! the 200 outstanding queries), and the same at a fixed LATENCY_QPS that both servers sustain
//! (the service-time tail). VmRSS is read after the runs.
//!
//! The results are one JSON document ([`Run`]) and the Markdown report, both in bench/out;
//! [`readme_table`] renders bench/README.md's table from the JSON.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{
    Binaries, Build, BuildInputs, Latency, Machine, Numbers, Output, OwnVersion, Server, Transport,
    ask, distinct_questions, dnsperf, dnsperf_counts, first_line, fixed, keeps, knob, log, p50_p99,
    percentiles_of, ratio, row, run_to_file, split_zones, stamp_of, thousands, write_json,
    write_knot_conf,
};

/// The `bench` of this bench's JSON documents.
pub const KIND: &str = "dnsperf";

/// The knobs, each a flag or the environment variable bench/dnsperf.sh read (in capitals).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_arg("keep", keeps("objects, zone files, logs, every dnsperf output")))]
pub struct Options {
    /// Services per run, one run per size, space- or comma-separated [env: SIZES] [default:
    /// "100 10000"].
    #[arg(long)]
    pub sizes: Option<Numbers>,
    /// Seconds of each measured dnsperf run [env: DURATION] [default: 15].
    #[arg(long)]
    pub duration: Option<u32>,
    /// Seconds of the warm-up run [env: WARMUP] [default: 5].
    #[arg(long)]
    pub warmup: Option<u32>,
    /// Lines of the query file [env: QUERIES] [default: 100000].
    #[arg(long)]
    pub queries: Option<u32>,
    /// Distinct questions asked of both servers with dig before measuring [env: CHECK]
    /// [default: 300].
    #[arg(long)]
    pub check: Option<u32>,
    /// The fixed rate of the service-time latency run [env: LATENCY_QPS] [default: 20000].
    #[arg(long)]
    pub latency_qps: Option<u32>,
    /// clusterdns's port on 127.0.0.1 [env: CLUSTERDNS_PORT] [default: 15353].
    #[arg(long)]
    pub clusterdns_port: Option<u16>,
    /// knotd's port on 127.0.0.1 [env: KNOT_PORT] [default: 15354].
    #[arg(long)]
    pub knot_port: Option<u16>,
    /// The CPU both servers are pinned to [env: SERVER_CPU] [default: 0].
    #[arg(long)]
    pub server_cpu: Option<u32>,
    /// The CPU dnsperf is pinned to [env: CLIENT_CPU] [default: 1].
    #[arg(long)]
    pub client_cpu: Option<u32>,
    /// clusterdns on the shorthand's Corefile with `prometheus` and its search-path tracker on
    /// or off, to measure what the tracker costs [env: SEARCH_PATH] [default: `serve
    /// --objects`].
    #[arg(long)]
    pub search_path: Option<SearchPath>,
    /// dnsperf's transport: udp (`-T 4 -c 8 -q 200`) or tcp (`-T 4 -c 128 -q 2000`)
    /// [env: TRANSPORT] [default: udp].
    #[arg(long)]
    pub transport: Option<Transport>,
    #[command(flatten)]
    pub build: Build,
    #[command(flatten)]
    pub output: Output,
}

/// The search-path tracker's setting, when clusterdns runs the shorthand's Corefile with
/// `prometheus` (docs/observability.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SearchPath {
    On,
    Off,
}

impl SearchPath {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::On => "on",
            Self::Off => "off",
        }
    }
}

impl std::str::FromStr for SearchPath {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text {
            "on" => Ok(Self::On),
            "off" => Ok(Self::Off),
            _ => Err("must be on or off".into()),
        }
    }
}

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    /// Services, one run per size.
    pub sizes: Vec<u32>,
    pub duration_s: u32,
    pub warmup_s: u32,
    /// Lines of the query file (the mix of benches/support/queries.rs).
    pub queries: u32,
    /// Distinct questions compared with dig before measuring.
    pub check: u32,
    pub latency_qps: u32,
    pub transport: Transport,
    /// The search-path tracker's setting, when clusterdns ran the shorthand's Corefile with
    /// `prometheus`; none for `serve --objects`.
    pub search_path: Option<SearchPath>,
    /// dnsperf's flags besides the server, the query file and the run's own.
    pub dnsperf_args: Vec<String>,
    pub server_cpu: u32,
    pub client_cpu: u32,
    pub clusterdns_port: u16,
    pub knot_port: u16,
    #[serde(flatten)]
    pub build: BuildInputs,
}

/// What each program was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    #[serde(flatten)]
    pub own: OwnVersion,
    /// `knotd --version`'s first line.
    pub knotd: String,
    pub dnsperf: String,
}

/// One server's figures at one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// From the start of both servers to this one's SOA answer (knotd is checked second, so
    /// its figure is an upper bound).
    pub ready_after_s: f64,
    /// Of the measured run.
    pub qps: f64,
    pub completed: u64,
    pub lost: u64,
    /// The server's utime+stime over the measured run.
    pub cpu_s: f64,
    /// Completed queries per server CPU-second; none when no CPU time was counted.
    pub queries_per_cpu_s: Option<f64>,
    /// From a second run of the same flags with -v.
    pub saturated: Latency,
    /// From a third, at `latency_qps`.
    pub fixed_rate: Latency,
    /// VmRSS after the runs.
    pub rss_kb: u64,
}

/// clusterdns's figures over knotd's (none where knotd's is zero or missing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratios {
    pub qps: Option<f64>,
    pub queries_per_cpu_s: Option<f64>,
    pub p99_saturated: Option<f64>,
    pub p99_fixed_rate: Option<f64>,
    pub rss: Option<f64>,
}

impl Ratios {
    pub fn of(clusterdns: &Figures, knotd: &Figures) -> Self {
        let p99 = |c: &Latency, k: &Latency| ratio(c.p99_ms?, k.p99_ms?);
        Self {
            qps: ratio(clusterdns.qps, knotd.qps),
            queries_per_cpu_s: ratio(
                clusterdns.queries_per_cpu_s.unwrap_or(0.0),
                knotd.queries_per_cpu_s.unwrap_or(0.0),
            ),
            p99_saturated: p99(&clusterdns.saturated, &knotd.saturated),
            p99_fixed_rate: p99(&clusterdns.fixed_rate, &knotd.fixed_rate),
            rss: ratio(clusterdns.rss_kb as f64, knotd.rss_kb as f64),
        }
    }
}

/// The answers of both servers compared before measuring.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Distinct questions asked of both.
    pub asked: usize,
    /// Those with a different rcode or answer RRset.
    pub mismatches: usize,
}

/// One size's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Size {
    pub services: u32,
    pub pods: u64,
    pub check: Check,
    pub clusterdns: Figures,
    pub knotd: Figures,
    pub ratios: Ratios,
}

/// One run of the bench: the JSON document it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always "dnsperf".
    pub bench: String,
    /// When it started, RFC 3339.
    pub started: String,
    pub inputs: Inputs,
    pub machine: Machine,
    pub versions: Versions,
    pub sizes: Vec<Size>,
}

impl Options {
    /// The inputs these options and the environment ask for (the binary still to be named).
    pub fn inputs(&self) -> Result<Inputs> {
        let transport = knob(self.transport, "TRANSPORT", Transport::Udp)?;
        let search_path = match self.search_path {
            Some(setting) => Some(setting),
            None => match std::env::var("SEARCH_PATH") {
                Ok(value) if !value.is_empty() => Some(
                    value
                        .parse()
                        .map_err(|e| anyhow::anyhow!("SEARCH_PATH={value}: {e}"))?,
                ),
                _ => None,
            },
        };
        let server_cpu = knob(self.server_cpu, "SERVER_CPU", 0)?;
        let client_cpu = knob(self.client_cpu, "CLIENT_CPU", 1)?;
        let clusterdns_port = knob(self.clusterdns_port, "CLUSTERDNS_PORT", 15353)?;
        let knot_port = knob(self.knot_port, "KNOT_PORT", 15354)?;
        if clusterdns_port == knot_port {
            bail!("clusterdns and knotd cannot share port {knot_port}");
        }
        Ok(Inputs {
            sizes: knob(self.sizes.clone(), "SIZES", Numbers(vec![100, 10000]))?.0,
            duration_s: knob(self.duration, "DURATION", 15)?,
            warmup_s: knob(self.warmup, "WARMUP", 5)?,
            queries: knob(self.queries, "QUERIES", 100_000)?,
            check: knob(self.check, "CHECK", 300)?,
            latency_qps: knob(self.latency_qps, "LATENCY_QPS", 20_000)?,
            transport,
            search_path,
            dnsperf_args: transport.dnsperf_args(),
            server_cpu,
            client_cpu,
            clusterdns_port,
            knot_port,
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
    } = super::start(
        KIND,
        &["dnsperf", "knotd", "dig", "taskset", "setpriv"],
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
            knotd: first_line("knotd", &["--version"]),
            dnsperf: super::dnsperf_version(),
        },
        inputs,
        sizes: Vec::new(),
    };
    for &services in &run.inputs.sizes.clone() {
        let size = one_size(&run.inputs, &binaries, work.path(), services, hz)?;
        let dir = work.path().join(services.to_string());
        for server in ["clusterdns", "knotd"] {
            let from = dir.join(format!("{server}.run.txt"));
            let to = out.join(format!("{stamp}-{services}-{server}.dnsperf.txt"));
            std::fs::copy(&from, &to).with_context(|| format!("copying {}", from.display()))?;
        }
        run.sizes.push(size);
    }
    let name = format!("dnsperf-{}-{stamp}", run.inputs.transport.as_str());
    let markdown = out.join(format!("{name}.md"));
    let json = out.join(format!("{name}.json"));
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

/// The pods gencluster made, from its summary line (`... 1500 pods on 20 nodes; ...`).
pub fn pods_made(summary: &str) -> Option<u64> {
    let before = &summary[..summary.find(" pods on")?];
    let digits = before.rsplit(|c: char| !c.is_ascii_digit()).next()?;
    digits.parse().ok()
}

/// The shorthand's Corefile (src/config/shorthand.rs) with prometheus on, for the tracker's
/// cost: DNS on loopback `port`, the search-path tracker `setting`, `objects`.
pub fn search_path_corefile(port: u16, setting: SearchPath, objects: &Path) -> String {
    format!(
        ".:{port} {{\n    bind 127.0.0.1\n    errors\n    kubernetes cluster.local in-addr.arpa ip6.arpa {{\n        pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n        objects \"{}\"\n    }}\n    prometheus 127.0.0.1:0 {{\n        search_path {}\n    }}\n    cache 30 {{\n        disable success cluster.local\n        disable denial cluster.local\n    }}\n    loop\n    loadbalance\n}}\n",
        objects.display(),
        setting.as_str()
    )
}

/// Generates one size's cluster, query file and zone files, starts both servers, checks their
/// answers and measures each.
fn one_size(
    inputs: &Inputs,
    binaries: &Binaries,
    work: &Path,
    services: u32,
    hz: f64,
) -> Result<Size> {
    let dir = work.join(services.to_string());
    // The objects file has a directory of its own: clusterdns watches the directory, and
    // every event there (dnsperf writing its output beside it, say) makes it re-read and
    // hash the whole file on its serving thread.
    let objects = dir.join("objects/objects.json");
    std::fs::create_dir_all(dir.join("objects"))?;
    std::fs::create_dir_all(dir.join("zones"))?;
    let say = |message: String| log(KIND, format!("{services} services: {message}"));
    say("generating".into());
    run_to_file(
        Command::new(&binaries.gencluster)
            .args(["--services", &services.to_string(), "--out"])
            .arg(&objects),
        &dir.join("gencluster.txt"),
    )?;
    let summary = std::fs::read_to_string(dir.join("gencluster.txt"))?;
    let pods = pods_made(&summary)
        .with_context(|| format!("gencluster's summary names no pods: {summary}"))?;
    let queries = dir.join("queries.txt");
    run_to_file(
        Command::new(&binaries.querymix)
            .arg("--objects")
            .arg(&objects)
            .args(["--count", &inputs.queries.to_string(), "--out"])
            .arg(&queries),
        &dir.join("querymix.txt"),
    )?;
    eprint!("{}", std::fs::read_to_string(dir.join("querymix.txt"))?);

    say("zone files for knotd".into());
    let records = Command::new(&binaries.clusterdns)
        .arg("records")
        .arg("--objects")
        .arg(&objects)
        .args(["--format", "zone"])
        .stdin(Stdio::null())
        .output()
        .context("running clusterdns records")?;
    std::fs::write(dir.join("records.log"), &records.stderr)?;
    if !records.status.success() {
        bail!(
            "clusterdns records: {}\n{}",
            records.status,
            String::from_utf8_lossy(&records.stderr)
        );
    }
    let zone_text = String::from_utf8(records.stdout).context("clusterdns records' output")?;
    std::fs::write(dir.join("all.zone"), &zone_text)?;
    for (origin, text) in split_zones(&zone_text) {
        std::fs::write(dir.join("zones").join(format!("{origin}.zone")), text)?;
    }
    let domains = write_knot_conf(
        &dir,
        inputs.knot_port,
        1,
        &["cluster.local", "in-addr.arpa", "ip6.arpa"],
    )?;

    say(format!(
        "starting clusterdns (port {}) and knotd (port {}) on CPU {}",
        inputs.clusterdns_port, inputs.knot_port, inputs.server_cpu
    ));
    let listen = format!("127.0.0.1:{}", inputs.clusterdns_port);
    let corefile = dir.join("Corefile");
    let serve: Vec<&OsStr> = match inputs.search_path {
        Some(setting) => {
            std::fs::write(
                &corefile,
                search_path_corefile(inputs.clusterdns_port, setting, &objects),
            )?;
            vec![
                "serve".as_ref(),
                "--corefile".as_ref(),
                corefile.as_os_str(),
            ]
        }
        None => vec![
            "serve".as_ref(),
            "--objects".as_ref(),
            objects.as_os_str(),
            "--listen".as_ref(),
            listen.as_ref(),
        ],
    };
    let mut clusterdns = Server::start(
        "clusterdns",
        inputs.clusterdns_port,
        inputs.server_cpu,
        &binaries.clusterdns,
        &serve,
        &dir.join("clusterdns.log"),
    )?;
    let knot_conf = dir.join("knot.conf");
    let mut knotd = Server::start(
        "knotd",
        inputs.knot_port,
        inputs.server_cpu,
        Path::new("knotd"),
        &["-c".as_ref(), knot_conf.as_os_str()],
        &dir.join("knotd.log"),
    )?;
    let started = Instant::now();
    let limit = Duration::from_secs(300);
    clusterdns.wait_ready("cluster.local", limit, false)?;
    let clusterdns_ready = started.elapsed().as_secs_f64();
    say(format!(
        "clusterdns answering after {clusterdns_ready:.1} s"
    ));
    for domain in &domains {
        knotd.wait_ready(domain, limit, false)?;
    }
    let knotd_ready = started.elapsed().as_secs_f64();
    say(format!(
        "knotd answering after {knotd_ready:.1} s (checked after clusterdns; both load at once on CPU {})",
        inputs.server_cpu
    ));

    let check = check_answers(inputs, &queries, services)?;

    say("measuring clusterdns".into());
    let clusterdns_figures = measure(
        inputs,
        &clusterdns,
        &queries,
        &dir.join("clusterdns"),
        clusterdns_ready,
        hz,
    )?;
    say("measuring knotd".into());
    let knotd_figures = measure(
        inputs,
        &knotd,
        &queries,
        &dir.join("knotd"),
        knotd_ready,
        hz,
    )?;
    drop(clusterdns);
    drop(knotd);
    let ratios = Ratios::of(&clusterdns_figures, &knotd_figures);
    Ok(Size {
        services,
        pods,
        check,
        clusterdns: clusterdns_figures,
        knotd: knotd_figures,
        ratios,
    })
}

/// Asks both servers the first `check` distinct questions of the query file with dig; the
/// first 20 mismatches are printed.
fn check_answers(inputs: &Inputs, queries: &Path, services: u32) -> Result<Check> {
    let text = std::fs::read_to_string(queries)
        .with_context(|| format!("reading {}", queries.display()))?;
    let questions = distinct_questions(&text, inputs.check as usize);
    let mut mismatches = 0;
    for (name, qtype) in &questions {
        let a = ask(inputs.clusterdns_port, name, qtype)?;
        let b = ask(inputs.knot_port, name, qtype)?;
        if a != b {
            mismatches += 1;
            if mismatches <= 20 {
                eprintln!("MISMATCH {name} {qtype}\n  clusterdns: {a}\n  knotd:      {b}");
            }
        }
    }
    log(
        KIND,
        format!(
            "{services} services: {} questions asked of both servers with dig, {mismatches} mismatches",
            questions.len()
        ),
    );
    Ok(Check {
        asked: questions.len(),
        mismatches,
    })
}

/// The four dnsperf runs against `server`, their outputs beside `prefix`.
fn measure(
    inputs: &Inputs,
    server: &Server,
    queries: &Path,
    prefix: &Path,
    ready_after_s: f64,
    hz: f64,
) -> Result<Figures> {
    let file = |suffix: &str| PathBuf::from(format!("{}.{suffix}.txt", prefix.display()));
    let run = |seconds: u32, extra: &[String], output: &Path| {
        let mut args = vec!["-l".to_owned(), seconds.to_string()];
        args.extend_from_slice(extra);
        dnsperf(
            inputs.client_cpu,
            server.port,
            queries,
            &inputs.dnsperf_args,
            &args,
            output,
        )
    };
    run(inputs.warmup_s, &[], &file("warmup"))?;
    let before = server.cpu_ticks()?;
    run(inputs.duration_s, &[], &file("run"))?;
    let after = server.cpu_ticks()?;
    run(inputs.duration_s, &["-v".to_owned()], &file("latency"))?;
    run(
        inputs.duration_s,
        &[
            "-Q".to_owned(),
            inputs.latency_qps.to_string(),
            "-v".to_owned(),
        ],
        &file("latency-fixed"),
    )?;
    let cpu_s = after.saturating_sub(before) as f64 / hz;
    let output = std::fs::read_to_string(file("run"))?;
    let counts = dnsperf_counts(&output).with_context(|| file("run").display().to_string())?;
    Ok(Figures {
        ready_after_s,
        qps: counts.qps,
        completed: counts.completed,
        lost: counts.lost,
        cpu_s,
        queries_per_cpu_s: ratio(counts.completed as f64, cpu_s),
        saturated: percentiles_of(&file("latency"))?,
        fixed_rate: percentiles_of(&file("latency-fixed"))?,
        rss_kb: server.rss_kb()?,
    })
}

/// The report the bench prints and writes as Markdown, as bench/dnsperf.sh wrote it.
pub fn report(run: &Run) -> Result<String> {
    let inputs = &run.inputs;
    let stamp = stamp_of(&run.started)?;
    let transport = inputs.transport.as_str().to_uppercase();
    let latency_qps = inputs.latency_qps;
    let mut text = String::new();
    let machine = &run.machine;
    writeln!(
        text,
        "# dnsperf: clusterdns vs knotd, {transport} ({stamp})\n"
    )?;
    writeln!(
        text,
        "{}; {} CPUs ({}); {}; {}; {}{}\n",
        machine.kernel,
        machine.cpus,
        machine.cpu_model,
        run.versions.knotd,
        run.versions.dnsperf,
        run.versions.own.clusterdns,
        run.versions
            .own
            .commit
            .as_ref()
            .map(|c| format!(" at {c}"))
            .unwrap_or_default()
    )?;
    let server = match inputs.search_path {
        Some(setting) => format!(
            " clusterdns on the shorthand's Corefile with `prometheus`, the search-path tracker {}.",
            setting.as_str()
        ),
        None => String::new(),
    };
    writeln!(
        text,
        "Servers pinned to CPU {}, dnsperf to CPU {}; `dnsperf {} -l {}` after a {}s warm-up; qps, completed and lost from that run, server CPU time (utime+stime) over it; p50/p99 \"saturated\" from a second identical run with -v, \"at {latency_qps}\" from a third with `-Q {latency_qps} -v`; RSS (VmRSS) after the runs. {}-line query file (the mix of benches/support/queries.rs), {transport}, no EDNS.{server}\n",
        inputs.server_cpu,
        inputs.client_cpu,
        inputs.dnsperf_args.join(" "),
        inputs.duration_s,
        inputs.warmup_s,
        inputs.queries,
    )?;
    writeln!(
        text,
        "| services | pods | server | ready after s | qps | completed | lost | server CPU s | queries / CPU s | p50 / p99 ms saturated | p50 / p99 ms at {latency_qps} qps | RSS MB |"
    )?;
    writeln!(
        text,
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )?;
    for size in &run.sizes {
        for (name, f) in [("clusterdns", &size.clusterdns), ("knotd", &size.knotd)] {
            writeln!(
                text,
                "| {} | {} | {name} | {:.1} | {:.0} | {} | {} | {:.2} | {} | {} / {} | {} / {} | {:.1} |",
                size.services,
                size.pods,
                f.ready_after_s,
                f.qps,
                f.completed,
                f.lost,
                f.cpu_s,
                fixed(f.queries_per_cpu_s.map(f64::trunc), 0),
                fixed(f.saturated.p50_ms, 3),
                fixed(f.saturated.p99_ms, 3),
                fixed(f.fixed_rate.p50_ms, 3),
                fixed(f.fixed_rate.p99_ms, 3),
                f.rss_kb as f64 / 1024.0
            )?;
        }
    }
    writeln!(
        text,
        "\nRatios, clusterdns / knotd (above 1 is better for clusterdns in qps and queries per CPU second, worse in p99 and RSS):\n"
    )?;
    writeln!(
        text,
        "| services | qps | queries / CPU s | p99 saturated | p99 at {latency_qps} qps | RSS |"
    )?;
    writeln!(text, "| ---: | ---: | ---: | ---: | ---: | ---: |")?;
    for size in &run.sizes {
        let r = &size.ratios;
        writeln!(
            text,
            "| {} | {} | {} | {} | {} | {} |",
            size.services,
            fixed(r.qps, 2),
            fixed(r.queries_per_cpu_s, 2),
            fixed(r.p99_saturated, 2),
            fixed(r.p99_fixed_rate, 2),
            fixed(r.rss, 2)
        )?;
    }
    writeln!(text, "\nCorrectness before measuring:\n")?;
    for size in &run.sizes {
        writeln!(
            text,
            "- {} services: {} distinct questions from the query file asked of both servers with dig; {} with a different rcode or answer RRset",
            size.services, size.check.asked, size.check.mismatches
        )?;
    }
    Ok(text)
}

/// bench/README.md's table of the runs: per run, a line saying what was run where, and one
/// row per server and size, with clusterdns / knotd below each size.
pub fn readme_table(runs: &[Run]) -> Result<String> {
    let mut text = String::new();
    let times = |value: Option<f64>| value.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}×"));
    for (i, run) in runs.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        let inputs = &run.inputs;
        let at: jiff::Timestamp = run
            .started
            .parse()
            .with_context(|| format!("started: {:?} is not an RFC 3339 time", run.started))?;
        let tracker = match inputs.search_path {
            Some(setting) => format!(", search-path tracker {}", setting.as_str()),
            None => String::new(),
        };
        writeln!(
            text,
            "{}, {}{tracker}: `dnsperf {}`, {} s runs after {} s of warm-up, a {}-line query file; {}, {} CPUs ({}); {}, {}; clusterdns at {}.\n",
            at.strftime("%Y-%m-%d %H:%M UTC"),
            inputs.transport.as_str().to_uppercase(),
            inputs.dnsperf_args.join(" "),
            inputs.duration_s,
            inputs.warmup_s,
            thousands(u64::from(inputs.queries)),
            run.machine.kernel,
            run.machine.cpus,
            run.machine.cpu_model,
            run.versions.knotd,
            run.versions.dnsperf,
            run.versions
                .own
                .commit
                .as_deref()
                .unwrap_or("an unknown commit"),
        )?;
        text.push_str(&row(&[
            "Services / pods".into(),
            "server".into(),
            "qps".into(),
            "queries per CPU-second".into(),
            "p50 / p99 saturated".into(),
            format!(
                "p50 / p99 at {} qps",
                thousands(u64::from(inputs.latency_qps))
            ),
            "RSS".into(),
            "answers compared".into(),
        ]));
        text.push_str("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for size in &run.sizes {
            for (name, f) in [("clusterdns", &size.clusterdns), ("knotd", &size.knotd)] {
                let first = name == "clusterdns";
                text.push_str(&row(&[
                    if first {
                        format!(
                            "{} / {}",
                            thousands(u64::from(size.services)),
                            thousands(size.pods)
                        )
                    } else {
                        String::new()
                    },
                    name.into(),
                    thousands(f.qps.round() as u64),
                    f.queries_per_cpu_s
                        .map_or_else(|| "—".to_owned(), |v| thousands(v.round() as u64)),
                    p50_p99(&f.saturated),
                    p50_p99(&f.fixed_rate),
                    format!("{:.1} MB", f.rss_kb as f64 / 1024.0),
                    if first {
                        format!("{} differ of {}", size.check.mismatches, size.check.asked)
                    } else {
                        String::new()
                    },
                ]));
            }
            let r = &size.ratios;
            text.push_str(&row(&[
                String::new(),
                "clusterdns / knotd".into(),
                times(r.qps),
                times(r.queries_per_cpu_s),
                format!("p99 {}", times(r.p99_saturated)),
                format!("p99 {}", times(r.p99_fixed_rate)),
                times(r.rss),
                String::new(),
            ]));
        }
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::common::fixture::{assert_renders, read_back};
    use super::*;

    /// A run's JSON as the bench writes it.
    const FIXTURE: &str = include_str!("../../fixtures/dnsperf-udp.json");

    /// The fixture, read back as it was written.
    fn fixture() -> Run {
        read_back(FIXTURE)
    }

    #[test]
    fn the_fixture_reads_back_as_it_was_written() {
        let run = fixture();
        assert_eq!(run.bench, KIND);
    }

    #[test]
    fn the_report_is_the_scripts() {
        assert_renders(
            FIXTURE,
            include_str!("../../fixtures/dnsperf-udp.md"),
            report,
        );
    }

    #[test]
    fn the_readme_table_has_a_row_per_server_and_the_ratios() {
        assert_renders(
            FIXTURE,
            include_str!("../../fixtures/dnsperf-udp.table.md"),
            |run| readme_table(std::slice::from_ref(run)),
        );
    }

    #[test]
    fn ratios_are_none_where_knotd_has_nothing() {
        let run = fixture();
        let size = &run.sizes[0];
        let mut knotd = size.knotd.clone();
        knotd.qps = 0.0;
        knotd.queries_per_cpu_s = None;
        knotd.saturated.p99_ms = None;
        let ratios = Ratios::of(&size.clusterdns, &knotd);
        assert_eq!(ratios.qps, None);
        assert_eq!(ratios.queries_per_cpu_s, None);
        assert_eq!(ratios.p99_saturated, None);
        // The fixture's knotd has no p99 at the fixed rate (it answered nothing with -v).
        assert_eq!(ratios.p99_fixed_rate, None);
        assert_eq!(ratios.rss, Some(1.5));
        assert_eq!(Ratios::of(&size.clusterdns, &size.knotd), size.ratios);
    }

    #[test]
    fn gencluster_names_its_pods() {
        let summary = "gencluster: 42 namespaces, 1002 services (101 headless, 20 ExternalName), 1020 endpoint slices with 15037 endpoints (301 not ready), 15037 pods on 201 nodes; 14.1 MB in 0.52 s\n";
        assert_eq!(pods_made(summary), Some(15037));
        assert_eq!(pods_made("gencluster: nothing\n"), None);
    }

    #[test]
    fn the_search_path_corefile_names_its_port_setting_and_objects() {
        let corefile = search_path_corefile(15353, SearchPath::Off, Path::new("/w/o.json"));
        assert!(corefile.starts_with(".:15353 {\n    bind 127.0.0.1\n"));
        assert!(corefile.contains("        objects \"/w/o.json\"\n"));
        assert!(corefile.contains("        search_path off\n"));
    }
}
