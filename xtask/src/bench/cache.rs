//! `cargo xtask bench cache`: the cache path. Names forwarded to an authoritative upstream on
//! loopback and answered from the cache, clusterdns (forward + cache + loadbalance, as
//! kubeadm's Corefile has them) against unbound (forward-zone "." to the same upstream), with
//! the same query file (bench/README.md, "The cache path against unbound").
//!
//! Method (2 cores): the upstream (knotd, one worker, serving NAMES names with two A records
//! each, TTL 3600) and dnsperf on CPU 1; clusterdns and unbound each pinned to CPU 0, one
//! worker each. A fill run asks every name once (filling the caches), a warm-up run follows,
//! then `dnsperf -T 4 -c 8 -q 200 -l DURATION` for qps and the server's CPU time, then a run
//! with -v at a fixed LATENCY_QPS for p50/p99. During the measured run the upstream is asked
//! nothing: every answer comes from the cache (its CPU time over the run says so).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{
    Build, BuildInputs, Latency, Machine, Output, OwnVersion, Server, dnsperf, dnsperf_counts,
    first_line, fixed, keeps, knob, log, p50_p99, percentiles_of, ratio, row, stamp_of, thousands,
    write_json, write_knot_conf,
};

/// The `bench` of this bench's JSON documents.
pub const KIND: &str = "cache";

/// The most names the upstream's zone holds: 250 addresses in each /24 of 198.18.0.0/16.
pub const MAX_NAMES: u32 = 250 * 256;

/// The knobs, each a flag or the environment variable bench/cache.sh read (in capitals).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_arg("keep", keeps("zone, Corefile, unbound.conf, logs, dnsperf outputs")))]
pub struct Options {
    /// Names in the upstream's zone, two A records each [env: NAMES] [default: 5000].
    #[arg(long)]
    pub names: Option<u32>,
    /// Seconds of each measured dnsperf run [env: DURATION] [default: 15].
    #[arg(long)]
    pub duration: Option<u32>,
    /// Seconds of the warm-up run [env: WARMUP] [default: 5].
    #[arg(long)]
    pub warmup: Option<u32>,
    /// Lines of the query file, names drawn at random [env: QUERIES] [default: 100000].
    #[arg(long)]
    pub queries: Option<u32>,
    /// The fixed rate of the latency run [env: LATENCY_QPS] [default: 20000].
    #[arg(long)]
    pub latency_qps: Option<u32>,
    /// clusterdns's port on 127.0.0.1 [env: CLUSTERDNS_PORT] [default: 15363].
    #[arg(long)]
    pub clusterdns_port: Option<u16>,
    /// unbound's port on 127.0.0.1 [env: UNBOUND_PORT] [default: 15364].
    #[arg(long)]
    pub unbound_port: Option<u16>,
    /// The upstream's port on 127.0.0.1 [env: UPSTREAM_PORT] [default: 15365].
    #[arg(long)]
    pub upstream_port: Option<u16>,
    /// The CPU both servers are pinned to [env: SERVER_CPU] [default: 0].
    #[arg(long)]
    pub server_cpu: Option<u32>,
    /// The CPU dnsperf and the upstream are pinned to [env: CLIENT_CPU] [default: 1].
    #[arg(long)]
    pub client_cpu: Option<u32>,
    #[command(flatten)]
    pub build: Build,
    #[command(flatten)]
    pub output: Output,
}

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    pub names: u32,
    pub duration_s: u32,
    pub warmup_s: u32,
    pub queries: u32,
    pub latency_qps: u32,
    pub dnsperf_args: Vec<String>,
    pub server_cpu: u32,
    pub client_cpu: u32,
    pub clusterdns_port: u16,
    pub unbound_port: u16,
    pub upstream_port: u16,
    #[serde(flatten)]
    pub build: BuildInputs,
}

/// What each program was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    #[serde(flatten)]
    pub own: OwnVersion,
    /// `unbound -V`'s first line, `Version` made `unbound`: `unbound 1.17.1`.
    pub unbound: String,
    /// The upstream: `knotd --version`'s first line.
    pub knotd: String,
    pub dnsperf: String,
}

/// One server's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Of the measured run.
    pub qps: f64,
    pub completed: u64,
    pub lost: u64,
    /// The server's utime+stime over the measured run.
    pub cpu_s: f64,
    pub queries_per_cpu_s: Option<f64>,
    /// At `latency_qps`, from a run with -v.
    pub latency: Latency,
    /// VmRSS after the runs.
    pub rss_kb: u64,
    /// The upstream's CPU time over the measured run: near zero when every answer came from
    /// the cache.
    pub upstream_cpu_s: f64,
}

/// clusterdns's figures over unbound's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratios {
    pub qps: Option<f64>,
    pub queries_per_cpu_s: Option<f64>,
    pub p99: Option<f64>,
    pub rss: Option<f64>,
}

impl Ratios {
    pub fn of(clusterdns: &Figures, unbound: &Figures) -> Self {
        Self {
            qps: ratio(clusterdns.qps, unbound.qps),
            queries_per_cpu_s: ratio(
                clusterdns.queries_per_cpu_s.unwrap_or(0.0),
                unbound.queries_per_cpu_s.unwrap_or(0.0),
            ),
            p99: clusterdns
                .latency
                .p99_ms
                .zip(unbound.latency.p99_ms)
                .and_then(|(c, u)| ratio(c, u)),
            rss: ratio(clusterdns.rss_kb as f64, unbound.rss_kb as f64),
        }
    }
}

/// The names asked of both servers with dig before measuring.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub asked: usize,
    /// Those whose answer sets differ, or are empty.
    pub mismatches: usize,
}

/// One run of the bench: the JSON document it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always "cache".
    pub bench: String,
    /// When it started, RFC 3339.
    pub started: String,
    pub inputs: Inputs,
    pub machine: Machine,
    pub versions: Versions,
    pub check: Check,
    pub clusterdns: Figures,
    pub unbound: Figures,
    pub ratios: Ratios,
}

impl Options {
    /// The inputs these options and the environment ask for (the binary still to be named).
    pub fn inputs(&self) -> Result<Inputs> {
        let names = knob(self.names, "NAMES", 5000)?;
        if names == 0 || names > MAX_NAMES {
            bail!(
                "{names} names (NAMES, --names): from 1 to {MAX_NAMES} (250 addresses in each /24 of 198.18.0.0/16)"
            );
        }
        let ports = [
            knob(self.clusterdns_port, "CLUSTERDNS_PORT", 15363)?,
            knob(self.unbound_port, "UNBOUND_PORT", 15364)?,
            knob(self.upstream_port, "UPSTREAM_PORT", 15365)?,
        ];
        if ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
            bail!("clusterdns, unbound and the upstream need three ports: {ports:?}");
        }
        Ok(Inputs {
            names,
            duration_s: knob(self.duration, "DURATION", 15)?,
            warmup_s: knob(self.warmup, "WARMUP", 5)?,
            queries: knob(self.queries, "QUERIES", 100_000)?,
            latency_qps: knob(self.latency_qps, "LATENCY_QPS", 20_000)?,
            dnsperf_args: ["-T", "4", "-c", "8", "-q", "200"]
                .map(str::to_owned)
                .to_vec(),
            server_cpu: knob(self.server_cpu, "SERVER_CPU", 0)?,
            client_cpu: knob(self.client_cpu, "CLIENT_CPU", 1)?,
            clusterdns_port: ports[0],
            unbound_port: ports[1],
            upstream_port: ports[2],
            build: self.build.inputs()?,
        })
    }
}

/// The upstream's zone: `names` names under example.test, two A records each, TTL 3600.
pub fn upstream_zone(names: u32) -> String {
    let mut zone = String::from(
        "$ORIGIN example.test.\n$TTL 3600\n@ SOA ns.example.test. hostmaster.example.test. 1 3600 600 86400 3600\n@ NS ns\nns A 192.0.2.53\n",
    );
    for i in 0..names {
        let (subnet, host) = (i / 250, i % 250 + 1);
        let _ = writeln!(
            zone,
            "h{i} A 198.18.{subnet}.{host}\nh{i} A 198.19.{subnet}.{host}"
        );
    }
    zone
}

/// `count` questions for names drawn at random (a fixed seed: the same file every run) from
/// `names`.
pub fn query_file(names: u32, count: u32) -> String {
    // splitmix64: small, and the same everywhere.
    let mut state: u64 = 1;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut text = String::new();
    for _ in 0..count {
        let _ = writeln!(text, "h{}.example.test A", next() % u64::from(names));
    }
    text
}

/// Every name once, to fill the caches.
pub fn fill_file(names: u32) -> String {
    (0..names)
        .map(|i| format!("h{i}.example.test A\n"))
        .collect()
}

/// clusterdns's Corefile: kubeadm's shape for names outside the cluster, with room in the
/// cache for every name.
pub fn corefile(port: u16, upstream: u16) -> String {
    format!(
        ".:{port} {{\n    bind 127.0.0.1\n    errors\n    forward . 127.0.0.1:{upstream}\n    cache 3600 {{\n        success 65536\n    }}\n    loadbalance\n}}\n"
    )
}

/// unbound's configuration: one thread, the iterator only, forwarding everything to the
/// upstream, in the foreground, files in `dir`.
pub fn unbound_conf(dir: &Path, port: u16, upstream: u16) -> String {
    format!(
        "server:\n    interface: 127.0.0.1@{port}\n    port: {port}\n    do-daemonize: no\n    num-threads: 1\n    so-reuseport: no\n    access-control: 127.0.0.0/8 allow\n    do-not-query-localhost: no\n    chroot: \"\"\n    username: \"\"\n    pidfile: \"\"\n    directory: \"{}\"\n    use-syslog: no\n    logfile: \"\"\n    verbosity: 0\n    module-config: \"iterator\"\n    # test. is one of unbound's built-in local zones (RFC 6761): answer it from the upstream.\n    local-zone: \"test.\" nodefault\n    qname-minimisation: no\n    prefetch: no\n    rrset-roundrobin: yes\n    msg-cache-size: 64m\n    rrset-cache-size: 128m\n    cache-min-ttl: 0\n    cache-max-ttl: 3600\nforward-zone:\n    name: \".\"\n    forward-addr: 127.0.0.1@{upstream}\n",
        dir.display()
    )
}

/// `dig +short NAME A` at `port`, its addresses sorted, space-separated.
fn short_answer(port: u16, name: &str) -> Result<String> {
    let output = Command::new("dig")
        .arg("@127.0.0.1")
        .args(["-p", &port.to_string(), "+short", name, "A"])
        .stdin(Stdio::null())
        .output()
        .context("running dig")?;
    let mut lines: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    Ok(lines.join(" "))
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
        &["dnsperf", "knotd", "unbound", "dig", "taskset", "setpriv"],
        &options.output,
        &options.build,
    )?;
    let dir = work.path();
    inputs.build = build;

    log(
        KIND,
        format!("the upstream: {} names in example.test", inputs.names),
    );
    std::fs::create_dir_all(dir.join("zones"))?;
    std::fs::write(
        dir.join("zones/example.test.zone"),
        upstream_zone(inputs.names),
    )?;
    write_knot_conf(dir, inputs.upstream_port, 1, &["example.test"])?;
    let queries = dir.join("queries.txt");
    std::fs::write(&queries, query_file(inputs.names, inputs.queries))?;
    let warm = dir.join("warm.txt");
    std::fs::write(&warm, fill_file(inputs.names))?;
    let corefile_path = dir.join("Corefile");
    std::fs::write(
        &corefile_path,
        corefile(inputs.clusterdns_port, inputs.upstream_port),
    )?;
    let unbound_path = dir.join("unbound.conf");
    std::fs::write(
        &unbound_path,
        unbound_conf(dir, inputs.unbound_port, inputs.upstream_port),
    )?;

    let knot_conf = dir.join("knot.conf");
    let mut upstream = Server::start(
        "the upstream (knotd)",
        inputs.upstream_port,
        inputs.client_cpu,
        Path::new("knotd"),
        &["-c".as_ref(), knot_conf.as_os_str()],
        &dir.join("knotd.log"),
    )?;
    upstream.wait_ready("example.test", Duration::from_secs(60), false)?;
    let mut clusterdns = Server::start(
        "clusterdns",
        inputs.clusterdns_port,
        inputs.server_cpu,
        &binaries.clusterdns,
        &[
            "serve".as_ref(),
            "--corefile".as_ref(),
            corefile_path.as_os_str(),
        ],
        &dir.join("clusterdns.log"),
    )?;
    let mut unbound = Server::start(
        "unbound",
        inputs.unbound_port,
        inputs.server_cpu,
        Path::new("unbound"),
        &["-d".as_ref(), "-c".as_ref(), unbound_path.as_os_str()],
        &dir.join("unbound.log"),
    )?;
    // With recursion desired: a resolver answers a query without RD from its cache alone.
    clusterdns.wait_ready("example.test", Duration::from_secs(60), true)?;
    unbound.wait_ready("example.test", Duration::from_secs(60), true)?;

    // The same answer set from both, for a sample of names.
    let n = inputs.names;
    let sample = [0, 1, 2, n / 2, n - 1].map(|i| i.min(n - 1));
    let mut mismatches = 0;
    for i in sample {
        let name = format!("h{i}.example.test");
        let a = short_answer(inputs.clusterdns_port, &name)?;
        let b = short_answer(inputs.unbound_port, &name)?;
        if a != b || a.is_empty() {
            mismatches += 1;
            log(
                KIND,
                format!("MISMATCH h{i}: clusterdns '{a}' unbound '{b}'"),
            );
        }
    }
    let check = Check {
        asked: sample.len(),
        mismatches,
    };

    log(KIND, "measuring clusterdns");
    let c = measure(
        &inputs,
        &clusterdns,
        &upstream,
        &queries,
        &warm,
        &dir.join("clusterdns"),
        hz,
    )?;
    log(KIND, "measuring unbound");
    let u = measure(
        &inputs,
        &unbound,
        &upstream,
        &queries,
        &warm,
        &dir.join("unbound"),
        hz,
    )?;
    drop((clusterdns, unbound, upstream));

    let ratios = Ratios::of(&c, &u);
    let run = Run {
        bench: KIND.to_owned(),
        started: started.to_string(),
        machine: Machine::here(),
        versions: Versions {
            own: OwnVersion::of(&inputs.build.clusterdns),
            unbound: first_line("unbound", &["-V"]).replacen("Version ", "unbound ", 1),
            knotd: first_line("knotd", &["--version"]),
            dnsperf: super::dnsperf_version(),
        },
        inputs,
        check,
        clusterdns: c,
        unbound: u,
        ratios,
    };
    let stamp = stamp_of(&run.started)?;
    let markdown = out.join(format!("cache-{stamp}.md"));
    let json = out.join(format!("cache-{stamp}.json"));
    let text = report(&run)?;
    std::fs::write(&markdown, &text).with_context(|| format!("writing {}", markdown.display()))?;
    write_json(&json, &run)?;
    print!("{text}");
    log(KIND, format!("report: {}", markdown.display()));
    log(KIND, format!("results: {}", json.display()));
    Ok(Written {
        markdown,
        json,
        run,
    })
}

/// The fill, warm-up, measured and latency runs against `server`, outputs beside `prefix`.
fn measure(
    inputs: &Inputs,
    server: &Server,
    upstream: &Server,
    queries: &Path,
    warm: &Path,
    prefix: &Path,
    hz: f64,
) -> Result<Figures> {
    let file = |suffix: &str| PathBuf::from(format!("{}.{suffix}.txt", prefix.display()));
    let run = |data: &Path, extra: &[String], output: &Path| {
        dnsperf(
            inputs.client_cpu,
            server.port,
            data,
            &inputs.dnsperf_args,
            extra,
            output,
        )
    };
    let seconds = |s: u32| vec!["-l".to_owned(), s.to_string()];
    run(warm, &["-n".to_owned(), "1".to_owned()], &file("fill"))?;
    run(queries, &seconds(inputs.warmup_s), &file("warmup"))?;
    let (before, upstream_before) = (server.cpu_ticks()?, upstream.cpu_ticks()?);
    run(queries, &seconds(inputs.duration_s), &file("run"))?;
    let (after, upstream_after) = (server.cpu_ticks()?, upstream.cpu_ticks()?);
    let mut latency = seconds(inputs.duration_s);
    latency.extend([
        "-Q".to_owned(),
        inputs.latency_qps.to_string(),
        "-v".to_owned(),
    ]);
    run(queries, &latency, &file("latency"))?;
    let cpu_s = after.saturating_sub(before) as f64 / hz;
    let upstream_cpu_s = upstream_after.saturating_sub(upstream_before) as f64 / hz;
    log(
        KIND,
        format!(
            "{}: the upstream's CPU during the run {upstream_cpu_s:.2} s",
            server.name
        ),
    );
    let output = std::fs::read_to_string(file("run"))?;
    let counts = dnsperf_counts(&output).with_context(|| file("run").display().to_string())?;
    Ok(Figures {
        qps: counts.qps,
        completed: counts.completed,
        lost: counts.lost,
        cpu_s,
        queries_per_cpu_s: ratio(counts.completed as f64, cpu_s),
        latency: percentiles_of(&file("latency"))?,
        rss_kb: server.rss_kb()?,
        upstream_cpu_s,
    })
}

/// The report the bench prints and writes as Markdown, as bench/cache.sh wrote it.
pub fn report(run: &Run) -> Result<String> {
    let inputs = &run.inputs;
    let stamp = stamp_of(&run.started)?;
    let qps = inputs.latency_qps;
    let mut text = String::new();
    writeln!(text, "# The cache path: clusterdns vs unbound ({stamp})\n")?;
    writeln!(
        text,
        "{}; {} CPUs; {}; {} as the upstream; {}; {}{}\n",
        run.machine.kernel,
        run.machine.cpus,
        run.versions.unbound,
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
    writeln!(
        text,
        "{} names (two A records each, TTL 3600) behind an authoritative upstream on loopback, every one asked once before measuring; servers on CPU {}, dnsperf and the upstream on CPU {}; `dnsperf {} -l {}`, p50/p99 at {qps} qps. clusterdns: `forward`, `cache 3600`, `loadbalance`; unbound: iterator only, `rrset-roundrobin: yes`, one thread.\n",
        inputs.names,
        inputs.server_cpu,
        inputs.client_cpu,
        inputs.dnsperf_args.join(" "),
        inputs.duration_s
    )?;
    writeln!(
        text,
        "| server | qps | completed | lost | server CPU s | queries / CPU s | p50 / p99 ms at {qps} qps | RSS MB | upstream CPU s |"
    )?;
    writeln!(
        text,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )?;
    for (name, f) in [("clusterdns", &run.clusterdns), ("unbound", &run.unbound)] {
        writeln!(
            text,
            "| {name} | {:.0} | {} | {} | {:.2} | {} | {} / {} | {:.1} | {:.2} |",
            f.qps,
            f.completed,
            f.lost,
            f.cpu_s,
            fixed(f.queries_per_cpu_s.map(f64::trunc), 0),
            fixed(f.latency.p50_ms, 3),
            fixed(f.latency.p99_ms, 3),
            f.rss_kb as f64 / 1024.0,
            f.upstream_cpu_s
        )?;
    }
    let r = &run.ratios;
    writeln!(
        text,
        "\nRatios, clusterdns / unbound: qps {}, queries per CPU second {}, p99 at fixed load {}, RSS {}.\n",
        fixed(r.qps, 2),
        fixed(r.queries_per_cpu_s, 2),
        fixed(r.p99, 2),
        fixed(r.rss, 2)
    )?;
    writeln!(
        text,
        "Correctness before measuring: {} names asked of both with dig, {} with a different answer set.",
        run.check.asked, run.check.mismatches
    )?;
    Ok(text)
}

/// bench/README.md's table of the runs: per run, a line saying what was run where, one row
/// per server, and clusterdns / unbound.
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
        writeln!(
            text,
            "{}: {} names, all cached; `dnsperf {} -l {}`; {}, {} CPUs ({}); {}; {} as the upstream; {}; clusterdns at {}; {} of {} names' answers differ.\n",
            at.strftime("%Y-%m-%d %H:%M UTC"),
            thousands(u64::from(inputs.names)),
            inputs.dnsperf_args.join(" "),
            inputs.duration_s,
            run.machine.kernel,
            run.machine.cpus,
            run.machine.cpu_model,
            run.versions.unbound,
            run.versions.knotd,
            run.versions.dnsperf,
            run.versions
                .own
                .commit
                .as_deref()
                .unwrap_or("an unknown commit"),
            run.check.mismatches,
            run.check.asked,
        )?;
        text.push_str(&row(&[
            "server".into(),
            "qps".into(),
            "queries per CPU-second".into(),
            format!(
                "p50 / p99 at {} qps",
                thousands(u64::from(inputs.latency_qps))
            ),
            "RSS".into(),
        ]));
        text.push_str("| --- | ---: | ---: | ---: | ---: |\n");
        for (name, f) in [("clusterdns", &run.clusterdns), ("unbound", &run.unbound)] {
            text.push_str(&row(&[
                name.into(),
                thousands(f.qps.round() as u64),
                f.queries_per_cpu_s
                    .map_or_else(|| "—".to_owned(), |v| thousands(v.round() as u64)),
                p50_p99(&f.latency),
                format!("{:.1} MB", f.rss_kb as f64 / 1024.0),
            ]));
        }
        let r = &run.ratios;
        text.push_str(&row(&[
            "clusterdns / unbound".into(),
            times(r.qps),
            times(r.queries_per_cpu_s),
            format!("p99 {}", times(r.p99)),
            times(r.rss),
        ]));
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::common::fixture::{assert_renders, read_back};
    use super::*;

    /// A run's JSON as the bench writes it.
    const FIXTURE: &str = include_str!("../../fixtures/cache.json");

    /// The fixture, read back as it was written.
    fn fixture() -> Run {
        read_back(FIXTURE)
    }

    #[test]
    fn the_fixture_reads_back_with_its_ratios() {
        let run = fixture();
        assert_eq!(run.bench, KIND);
        assert_eq!(Ratios::of(&run.clusterdns, &run.unbound), run.ratios);
    }

    #[test]
    fn the_report_is_the_scripts() {
        assert_renders(FIXTURE, include_str!("../../fixtures/cache.md"), report);
    }

    #[test]
    fn the_readme_table_has_both_servers_and_the_ratios() {
        assert_renders(
            FIXTURE,
            include_str!("../../fixtures/cache.table.md"),
            |run| readme_table(std::slice::from_ref(run)),
        );
    }

    #[test]
    fn the_upstream_zone_has_two_addresses_a_name() {
        let zone = upstream_zone(252);
        assert!(zone.starts_with("$ORIGIN example.test.\n$TTL 3600\n@ SOA "));
        assert!(zone.contains("\nh0 A 198.18.0.1\nh0 A 198.19.0.1\n"));
        assert!(zone.contains("\nh249 A 198.18.0.250\nh249 A 198.19.0.250\n"));
        assert!(zone.ends_with("\nh251 A 198.18.1.2\nh251 A 198.19.1.2\n"));
        // The last name the addresses allow.
        assert!(upstream_zone(MAX_NAMES).ends_with("h63999 A 198.19.255.250\n"));
    }

    #[test]
    fn the_query_file_is_the_same_every_run_and_spread_over_the_names() {
        let a = query_file(10, 1000);
        assert_eq!(a, query_file(10, 1000));
        assert_eq!(a.lines().count(), 1000);
        for i in 0..10 {
            let name = format!("h{i}.example.test A");
            let count = a.lines().filter(|line| *line == name).count();
            assert!((50..=150).contains(&count), "{name}: {count}");
        }
        assert_eq!(fill_file(2), "h0.example.test A\nh1.example.test A\n");
    }

    #[test]
    fn too_many_names_are_refused() {
        let options = Options {
            names: Some(MAX_NAMES + 1),
            ..Options::default()
        };
        assert_eq!(
            options.inputs().unwrap_err().to_string(),
            "64001 names (NAMES, --names): from 1 to 64000 (250 addresses in each /24 of 198.18.0.0/16)"
        );
    }

    #[test]
    fn the_servers_forward_to_the_upstream() {
        assert!(corefile(15363, 15365).contains("    forward . 127.0.0.1:15365\n"));
        let conf = unbound_conf(Path::new("/w"), 15364, 15365);
        assert!(conf.contains("    interface: 127.0.0.1@15364\n"));
        assert!(conf.contains("    directory: \"/w\"\n"));
        assert!(conf.ends_with("forward-addr: 127.0.0.1@15365\n"));
    }
}
