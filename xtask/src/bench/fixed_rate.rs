//! `cargo xtask bench fixed-rate`: what a replica costs at the rates clusters send, not at
//! saturation (bench/README.md, "Fixed rates"). clusterdns and knotd serve the same zone,
//! unpinned, each with as many workers as the machine has CPUs (`WORKERS`), and dnsperf, also
//! unpinned, asks each at fixed rates; then the latency at half of knotd's saturating rate,
//! and clusterdns's scaling from one worker to two.
//!
//! Method, as bench/fixed-rate.sh had it: clusterdns (`serve --objects`, under `taskset -c
//! 0-(WORKERS-1)`, the CPUs it may use and so its worker count) and knotd (`WORKERS` UDP
//! workers); a 3 s saturating warm-up of each (`dnsperf -T 4 -c 8 -q 200`), then each one's
//! saturating rate with the same flags; then for each of `RATES` and each server, `dnsperf -T 2
//! -c 8 -q 100 -Q RATE -v -l DURATION`: achieved qps, lost, the server's CPU time (utime+stime
//! from /proc/PID/stat around the run), millicores per 1,000 qps (`1000 × (CPU s / DURATION) /
//! (qps / 1000)`, the figure to size a CPU request from) and p50/p99; then both at half of
//! knotd's saturating rate; then clusterdns alone, saturated, under `taskset -c 0` (one worker)
//! and `taskset -c 0-1` (two): qps, CPU time and queries per CPU-second.
//!
//! The results are one JSON document ([`Run`]) and the Markdown report rendered from it, both
//! in bench/out.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{
    Build, BuildInputs, Latency, Machine, Numbers, Output, OwnVersion, Server, dnsperf_counts,
    first_line, fixed, keeps, knob, log, percentiles_of, ratio, run_to_file, split_zones, stamp_of,
    write_json, write_knot_conf,
};

/// The `bench` of this bench's JSON documents.
pub const KIND: &str = "fixed-rate";

/// dnsperf's flags for the saturating runs (knotd's rate, the scaling rows): its usual load.
pub const SATURATE: &[&str] = &["-T", "4", "-c", "8", "-q", "200"];
/// dnsperf's flags for the fixed-rate runs: enough clients and outstanding queries for the
/// rate, no more.
pub const FIXED: &[&str] = &["-T", "2", "-c", "8", "-q", "100"];
/// Seconds of each warm-up run.
const WARMUP_S: u32 = 3;

/// The knobs, each a flag or the environment variable bench/fixed-rate.sh read (in capitals).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_arg("keep", keeps("objects, zone files, logs, every dnsperf output")))]
pub struct Options {
    /// Services of gencluster's cluster [env: SIZE] [default: 100].
    #[arg(long)]
    pub size: Option<u32>,
    /// The fixed rates, queries per second, space- or comma-separated [env: RATES] [default:
    /// "1000 10000 20000 50000"].
    #[arg(long)]
    pub rates: Option<Numbers>,
    /// Seconds of each measured dnsperf run [env: DURATION] [default: 10].
    #[arg(long)]
    pub duration: Option<u32>,
    /// Lines of the query file [env: QUERIES] [default: 100000].
    #[arg(long)]
    pub queries: Option<u32>,
    /// clusterdns's port on 127.0.0.1 [env: CLUSTERDNS_PORT] [default: 15373].
    #[arg(long)]
    pub clusterdns_port: Option<u16>,
    /// knotd's port on 127.0.0.1 [env: KNOT_PORT] [default: 15374].
    #[arg(long)]
    pub knot_port: Option<u16>,
    /// Workers of each server: clusterdns's CPUs (0 to WORKERS-1), knotd's UDP and TCP
    /// workers [env: WORKERS] [default: the CPU count].
    #[arg(long)]
    pub workers: Option<u32>,
    #[command(flatten)]
    pub build: Build,
    #[command(flatten)]
    pub output: Output,
}

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    pub services: u32,
    /// The fixed rates, queries per second.
    pub rates: Vec<u32>,
    pub duration_s: u32,
    /// Lines of the query file (the mix of benches/support/queries.rs).
    pub queries: u32,
    /// Each server's workers.
    pub workers: u32,
    /// dnsperf's flags of the saturating runs.
    pub saturate_args: Vec<String>,
    /// dnsperf's flags of the fixed-rate runs (with `-Q RATE -v`).
    pub fixed_args: Vec<String>,
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

/// One dnsperf run against one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// Achieved queries per second.
    pub qps: f64,
    pub completed: u64,
    pub lost: u64,
    /// The server's utime+stime over the run.
    pub cpu_s: f64,
    /// From the run's -v lines; none without -v.
    pub latency: Latency,
}

impl Load {
    /// Server millicores per 1,000 achieved qps: `1000 × (CPU s / duration) / (qps / 1000)`;
    /// none when nothing was achieved.
    pub fn millicores_per_1000_qps(&self, duration_s: u32) -> Option<f64> {
        ratio(
            1000.0 * (self.cpu_s / f64::from(duration_s)),
            self.qps / 1000.0,
        )
    }

    /// Completed queries per server CPU-second; none when no CPU time was counted.
    pub fn queries_per_cpu_s(&self) -> Option<f64> {
        ratio(self.completed as f64, self.cpu_s)
    }
}

/// Both servers at one fixed rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub rate: u32,
    pub clusterdns: Load,
    pub knotd: Load,
}

/// The saturating runs, both servers unpinned with their workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saturated {
    pub knotd: Load,
    pub clusterdns: Load,
}

/// Both servers at half of knotd's saturating rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Half {
    /// Half of knotd's saturating qps (rounded to a whole number first).
    pub rate: u32,
    pub clusterdns: Load,
    pub knotd: Load,
}

/// clusterdns saturated on a set of CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    /// taskset's CPU list: `0`, `0-1`.
    pub cpus: String,
    /// The UDP workers clusterdns started (its log's `N udp workers`).
    pub workers: u32,
    pub load: Load,
}

/// One run of the bench: the JSON document it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always "fixed-rate".
    pub bench: String,
    /// When it started, RFC 3339.
    pub started: String,
    pub inputs: Inputs,
    pub machine: Machine,
    pub versions: Versions,
    pub saturated: Saturated,
    pub rates: Vec<Rate>,
    pub half: Half,
    pub scaling: Vec<Scaling>,
}

impl Options {
    /// The inputs these options and the environment ask for (the binary still to be named).
    pub fn inputs(&self) -> Result<Inputs> {
        let cpus =
            u32::try_from(std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
                .unwrap_or(1);
        let workers = knob(self.workers, "WORKERS", cpus)?;
        if workers == 0 {
            bail!("WORKERS must be at least 1");
        }
        let clusterdns_port = knob(self.clusterdns_port, "CLUSTERDNS_PORT", 15373)?;
        let knot_port = knob(self.knot_port, "KNOT_PORT", 15374)?;
        if clusterdns_port == knot_port {
            bail!("clusterdns and knotd cannot share port {knot_port}");
        }
        let strings = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect();
        Ok(Inputs {
            services: knob(self.size, "SIZE", 100)?,
            rates: knob(
                self.rates.clone(),
                "RATES",
                Numbers(vec![1000, 10000, 20000, 50000]),
            )?
            .0,
            duration_s: knob(self.duration, "DURATION", 10)?,
            queries: knob(self.queries, "QUERIES", 100_000)?,
            workers,
            saturate_args: strings(SATURATE),
            fixed_args: strings(FIXED),
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

/// The UDP workers clusterdns's log says it started (`udp 127.0.0.1:15373: 2 udp workers, one
/// socket each`): the first such line's.
pub fn udp_workers(log: &str) -> Option<u32> {
    log.lines().find_map(|line| {
        let (before, _) = line.split_once(" udp workers")?;
        let digits = before.rsplit(|c: char| !c.is_ascii_digit()).next()?;
        digits.parse().ok()
    })
}

/// One dnsperf run, unpinned, against the server: `args` (a SATURATE or FIXED set and what
/// the run adds), for DURATION seconds; the output in `output`, its counts, the server's CPU
/// time around it and, with -v, the latency.
fn measure(
    server: &Server,
    queries: &Path,
    seconds: u32,
    args: &[String],
    output: &Path,
    hz: f64,
) -> Result<Load> {
    let before = server.cpu_ticks()?;
    dnsperf_unpinned(server.port, queries, seconds, args, output)?;
    let after = server.cpu_ticks()?;
    let text = std::fs::read_to_string(output)?;
    let counts = dnsperf_counts(&text).with_context(|| output.display().to_string())?;
    Ok(Load {
        qps: counts.qps,
        completed: counts.completed,
        lost: counts.lost,
        cpu_s: after.saturating_sub(before) as f64 / hz,
        latency: percentiles_of(output)?,
    })
}

/// dnsperf against 127.0.0.1:`port`, unpinned, for `seconds`, with `args`; its output into
/// `output`.
fn dnsperf_unpinned(
    port: u16,
    queries: &Path,
    seconds: u32,
    args: &[String],
    output: &Path,
) -> Result<()> {
    run_to_file(
        Command::new("dnsperf")
            .args(["-s", "127.0.0.1", "-p", &port.to_string(), "-d"])
            .arg(queries)
            .args(["-l", &seconds.to_string()])
            .args(args),
        output,
    )
}

/// clusterdns on the CPUs `cpus`, waited for until it answers.
fn start_clusterdns(
    inputs: &Inputs,
    clusterdns: &Path,
    objects: &Path,
    cpus: &str,
    log_file: &Path,
) -> Result<Server> {
    let listen = format!("127.0.0.1:{}", inputs.clusterdns_port);
    let mut server = Server::start_on(
        "clusterdns",
        inputs.clusterdns_port,
        Some(cpus),
        clusterdns,
        &[
            "serve".as_ref(),
            "--objects".as_ref(),
            objects.as_os_str(),
            "--listen".as_ref(),
            listen.as_ref(),
        ],
        log_file,
    )?;
    server.wait_ready("cluster.local", Duration::from_secs(120), false)?;
    Ok(server)
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
    let versions = Versions {
        own: OwnVersion::of(&inputs.build.clusterdns),
        knotd: first_line("knotd", &["--version"]),
        dnsperf: super::dnsperf_version(),
    };
    let dir = work.path();
    let objects = dir.join("objects/objects.json");
    let queries = dir.join("queries.txt");
    std::fs::create_dir_all(dir.join("objects"))?;
    std::fs::create_dir_all(dir.join("zones"))?;
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
    let zone = Command::new(&binaries.clusterdns)
        .args(["records", "--objects"])
        .arg(&objects)
        .args(["--format", "zone"])
        .stderr(std::process::Stdio::null())
        .output()
        .context("running clusterdns records")?;
    if !zone.status.success() {
        bail!("clusterdns records --format zone: {}", zone.status);
    }
    for (origin, text) in split_zones(&String::from_utf8_lossy(&zone.stdout)) {
        std::fs::write(dir.join("zones").join(format!("{origin}.zone")), text)?;
    }
    let domains = write_knot_conf(
        dir,
        inputs.knot_port,
        inputs.workers,
        &["cluster.local", "in-addr.arpa", "ip6.arpa"],
    )?;

    let all_cpus = format!("0-{}", inputs.workers - 1);
    let clusterdns = start_clusterdns(
        &inputs,
        &binaries.clusterdns,
        &objects,
        &all_cpus,
        &dir.join("clusterdns.log"),
    )?;
    let knot_conf = dir.join("knot.conf");
    let mut knotd = Server::start_on(
        "knotd",
        inputs.knot_port,
        None,
        Path::new("knotd"),
        &["-c".as_ref(), knot_conf.as_os_str()],
        &dir.join("knotd.log"),
    )?;
    for domain in &domains {
        knotd.wait_ready(domain, Duration::from_secs(120), false)?;
    }
    let clusterdns_log = std::fs::read_to_string(dir.join("clusterdns.log"))?;
    for line in clusterdns_log.lines().filter(|l| l.contains("udp workers")) {
        log(
            KIND,
            line.split_once("INFO ").map_or(line, |(_, rest)| rest),
        );
    }

    let saturate: Vec<String> = inputs.saturate_args.clone();
    let duration = inputs.duration_s;
    // Warm both up, then knotd's saturating rate.
    for server in [&clusterdns, &knotd] {
        dnsperf_unpinned(
            server.port,
            &queries,
            WARMUP_S,
            &saturate,
            &dir.join(format!("{}-warmup.txt", server.name)),
        )?;
    }
    let saturated = Saturated {
        knotd: measure(
            &knotd,
            &queries,
            duration,
            &saturate,
            &dir.join("knot-saturated.txt"),
            hz,
        )?,
        clusterdns: measure(
            &clusterdns,
            &queries,
            duration,
            &saturate,
            &dir.join("clusterdns-saturated.txt"),
            hz,
        )?,
    };
    log(
        KIND,
        format!(
            "saturating rate, unpinned, {} workers each: knotd {:.0} qps, clusterdns {:.0} qps",
            inputs.workers, saturated.knotd.qps, saturated.clusterdns.qps
        ),
    );

    let fixed_at = |rate: u32| {
        let mut args = inputs.fixed_args.clone();
        args.extend(["-Q".to_owned(), rate.to_string(), "-v".to_owned()]);
        args
    };
    let mut rates = Vec::new();
    for &rate in &inputs.rates {
        let one = |server: &Server| -> Result<Load> {
            let load = measure(
                server,
                &queries,
                duration,
                &fixed_at(rate),
                &dir.join(format!("{}-{rate}.txt", server.name)),
                hz,
            )?;
            log(
                KIND,
                format!(
                    "{rate} qps: {} achieved {:.0}, lost {}, CPU {:.3}s, p99 {} ms",
                    server.name,
                    load.qps,
                    load.lost,
                    load.cpu_s,
                    fixed(load.latency.p99_ms, 3)
                ),
            );
            Ok(load)
        };
        let clusterdns_load = one(&clusterdns)?;
        let knotd_load = one(&knotd)?;
        rates.push(Rate {
            rate,
            clusterdns: clusterdns_load,
            knotd: knotd_load,
        });
    }

    let half_rate = half_of(saturated.knotd.qps);
    let half = Half {
        rate: half_rate,
        clusterdns: measure(
            &clusterdns,
            &queries,
            duration,
            &fixed_at(half_rate),
            &dir.join("clusterdns-half.txt"),
            hz,
        )?,
        knotd: measure(
            &knotd,
            &queries,
            duration,
            &fixed_at(half_rate),
            &dir.join("knot-half.txt"),
            hz,
        )?,
    };
    log(
        KIND,
        format!(
            "at {half_rate} qps (half of knotd's saturating rate): p99 clusterdns {} ms, knotd {} ms",
            fixed(half.clusterdns.latency.p99_ms, 3),
            fixed(half.knotd.latency.p99_ms, 3)
        ),
    );
    drop(knotd);
    drop(clusterdns);

    // Scaling: one worker (one CPU allowed) against two, saturated, dnsperf unpinned.
    let mut scaling = Vec::new();
    for cpus in ["0", "0-1"] {
        let log_file = dir.join(format!("clusterdns-cpus-{cpus}.log"));
        let server = start_clusterdns(&inputs, &binaries.clusterdns, &objects, cpus, &log_file)?;
        dnsperf_unpinned(
            server.port,
            &queries,
            WARMUP_S,
            &saturate,
            &dir.join(format!("scaling-{cpus}-warmup.txt")),
        )?;
        let load = measure(
            &server,
            &queries,
            duration,
            &saturate,
            &dir.join(format!("scaling-{cpus}.txt")),
            hz,
        )?;
        drop(server);
        let text = std::fs::read_to_string(&log_file)?;
        let workers = udp_workers(&text)
            .with_context(|| format!("no \"N udp workers\" line in {}", log_file.display()))?;
        scaling.push(Scaling {
            cpus: cpus.to_owned(),
            workers,
            load,
        });
    }

    let run = Run {
        bench: KIND.to_owned(),
        started: started.to_string(),
        machine: Machine::here(),
        versions,
        inputs,
        saturated,
        rates,
        half,
        scaling,
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

/// Half of a saturating rate, as the script took it: the qps rounded to a whole number, then
/// halved (integer division).
pub fn half_of(qps: f64) -> u32 {
    (qps.round().max(0.0) as u32) / 2
}

/// The report the bench prints and writes as Markdown, as bench/fixed-rate.sh wrote it.
pub fn report(run: &Run) -> Result<String> {
    let inputs = &run.inputs;
    let stamp = stamp_of(&run.started)?;
    let mut text = String::new();
    writeln!(text, "# Fixed rates: clusterdns vs knotd ({stamp})\n")?;
    writeln!(
        text,
        "{}; {} CPUs; {}; {}{}; {} Services; servers and dnsperf unpinned, each server with {} workers; `dnsperf {} -Q RATE -l {} -v`.\n",
        run.machine.kernel,
        run.machine.cpus,
        run.versions.knotd,
        run.versions.own.clusterdns,
        run.versions
            .own
            .commit
            .as_ref()
            .map(|c| format!(" at {c}"))
            .unwrap_or_default(),
        inputs.services,
        inputs.workers,
        inputs.fixed_args.join(" "),
        inputs.duration_s,
    )?;
    writeln!(
        text,
        "| rate | server | achieved qps | lost | server CPU s | millicores per 1,000 qps | p50 / p99 ms |"
    )?;
    writeln!(text, "| ---: | --- | ---: | ---: | ---: | ---: | ---: |")?;
    for rate in &run.rates {
        for (name, load) in [("clusterdns", &rate.clusterdns), ("knotd", &rate.knotd)] {
            writeln!(
                text,
                "| {} | {name} | {:.0} | {} | {:.3} | {} | {} / {} |",
                rate.rate,
                load.qps,
                load.lost,
                load.cpu_s,
                fixed(load.millicores_per_1000_qps(inputs.duration_s), 1),
                fixed(load.latency.p50_ms, 3),
                fixed(load.latency.p99_ms, 3),
            )?;
        }
    }
    write!(text, "\nServer CPU, clusterdns / knotd, at the same rate:")?;
    for rate in &run.rates {
        write!(
            text,
            " {} qps {};",
            rate.rate,
            fixed(ratio(rate.clusterdns.cpu_s, rate.knotd.cpu_s), 2)
        )?;
    }
    writeln!(text, "\n")?;
    let half = &run.half;
    writeln!(
        text,
        "Saturating rate (`dnsperf {}`, unpinned): knotd {:.0} qps, clusterdns {:.0} qps. At half of knotd's ({} qps): p50 / p99 clusterdns {} / {} ms (lost {}), knotd {} / {} ms (lost {}).\n",
        inputs.saturate_args.join(" "),
        run.saturated.knotd.qps,
        run.saturated.clusterdns.qps,
        half.rate,
        fixed(half.clusterdns.latency.p50_ms, 3),
        fixed(half.clusterdns.latency.p99_ms, 3),
        half.clusterdns.lost,
        fixed(half.knotd.latency.p50_ms, 3),
        fixed(half.knotd.latency.p99_ms, 3),
        half.knotd.lost,
    )?;
    writeln!(
        text,
        "Scaling, clusterdns saturated, dnsperf unpinned (on a 2-CPU machine dnsperf takes its share of the same CPUs):\n"
    )?;
    writeln!(text, "| workers | qps | server CPU s | queries / CPU s |")?;
    writeln!(text, "| ---: | ---: | ---: | ---: |")?;
    for row in &run.scaling {
        writeln!(
            text,
            "| {} | {:.0} | {:.2} | {} |",
            row.workers,
            row.load.qps,
            row.load.cpu_s,
            fixed(row.load.queries_per_cpu_s().map(f64::trunc), 0),
        )?;
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::common::fixture::{assert_renders, read_back};
    use super::*;

    /// A run's JSON as the bench writes it.
    const FIXTURE: &str = include_str!("../../fixtures/fixed-rate.json");

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
            include_str!("../../fixtures/fixed-rate.md"),
            report,
        );
    }

    #[test]
    fn millicores_are_cpu_per_second_over_thousands_of_queries() {
        let load = Load {
            qps: 20_000.0,
            completed: 200_000,
            lost: 0,
            cpu_s: 3.2,
            latency: Latency {
                p50_ms: None,
                p99_ms: None,
            },
        };
        // 0.32 of a core for 20 × 1,000 qps: 16 millicores each.
        let millicores = load.millicores_per_1000_qps(10).unwrap();
        assert!((millicores - 16.0).abs() < 1e-9, "{millicores}");
        assert_eq!(load.queries_per_cpu_s(), Some(62_500.0));
        let idle = Load {
            qps: 0.0,
            cpu_s: 0.0,
            ..load
        };
        assert_eq!(idle.millicores_per_1000_qps(10), None);
        assert_eq!(idle.queries_per_cpu_s(), None);
    }

    #[test]
    fn half_of_the_saturating_rate_is_taken_of_the_rounded_rate() {
        assert_eq!(half_of(61_234.6), 30_617);
        assert_eq!(half_of(61_233.4), 30_616);
        assert_eq!(half_of(0.0), 0);
    }

    #[test]
    fn the_workers_are_read_from_clusterdnss_log() {
        let log = "2026-12-08T10:00:00.1Z  INFO clusterdns::server::run: udp 127.0.0.1:15373: 2 udp workers, one socket each\n2026-12-08T10:00:00.1Z  INFO clusterdns::server::run: listening on udp 127.0.0.1:15373\n";
        assert_eq!(udp_workers(log), Some(2));
        assert_eq!(
            udp_workers(
                "INFO udp 127.0.0.1:1: 1 udp workers, one socket each\nINFO udp [::1]:1: 4 udp workers\n"
            ),
            Some(1)
        );
        assert_eq!(udp_workers("listening on udp 127.0.0.1:15373\n"), None);
    }

    #[test]
    fn the_knobs_default_to_the_scripts() {
        let inputs = Options {
            size: Some(100),
            rates: Some(Numbers(vec![1000, 20000])),
            duration: Some(5),
            queries: Some(1000),
            clusterdns_port: Some(15373),
            knot_port: Some(15374),
            workers: Some(2),
            ..Options::default()
        }
        .inputs()
        .unwrap();
        assert_eq!(inputs.rates, vec![1000, 20000]);
        assert_eq!(inputs.fixed_args.join(" "), "-T 2 -c 8 -q 100");
        assert_eq!(inputs.saturate_args.join(" "), "-T 4 -c 8 -q 200");
        let same = Options {
            clusterdns_port: Some(1),
            knot_port: Some(1),
            ..Options::default()
        };
        assert!(same.inputs().is_err());
    }
}
