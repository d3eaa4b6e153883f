//! Writes a dnsperf query file — the realistic mix of `benches/support/queries.rs` — for the
//! objects a server is loaded with.
//!
//! ```text
//! cargo run --release --example querymix -- --objects /tmp/10k.json --out /tmp/10k.queries
//! dnsperf -s 127.0.0.1 -p 1053 -d /tmp/10k.queries
//! ```

#[path = "../benches/support/mod.rs"]
#[allow(dead_code)]
mod support;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use support::queries::{Candidates, Query};

/// Writes `NAME TYPE` lines (dnsperf's input format) for the objects in FILE.
#[derive(Debug, Parser)]
#[command(name = "querymix")]
struct Args {
    /// Objects files (`kubectl get -o json` output, or gencluster's).
    #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
    objects: Vec<PathBuf>,
    /// The cluster zone.
    #[arg(long, default_value = "cluster.local")]
    zone: String,
    /// Number of lines (dnsperf cycles through the file).
    #[arg(long, default_value_t = 100_000)]
    count: usize,
    /// PRNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write here instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let loaded = match clusterdns::source::file::read_objects(&args.objects) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("querymix: {error}");
            return ExitCode::from(2);
        }
    };
    let candidates = Candidates::new(&loaded.cluster, &args.zone);
    let queries = candidates.mix(args.count, args.seed);
    let result = match &args.out {
        Some(path) => File::create(path).and_then(|file| write(BufWriter::new(file), &queries)),
        None => write(BufWriter::new(io::stdout().lock()), &queries),
    };
    if let Err(error) = result {
        eprintln!("querymix: writing: {error}");
        return ExitCode::from(1);
    }
    let mut counts = BTreeMap::new();
    for query in &queries {
        *counts.entry(query.category).or_insert(0usize) += 1;
    }
    let summary: Vec<String> = counts
        .iter()
        .map(|(category, count)| {
            let distinct = candidates.of(*category).len();
            if distinct > 0 {
                format!("{} {count} (of {distinct} names)", category.label())
            } else {
                format!("{} {count}", category.label())
            }
        })
        .collect();
    eprintln!(
        "querymix: {} queries: {}",
        queries.len(),
        summary.join(", ")
    );
    ExitCode::SUCCESS
}

fn write(mut out: impl Write, queries: &[Query]) -> io::Result<()> {
    for query in queries {
        writeln!(out, "{} {}", query.name, query.qtype)?;
    }
    out.flush()
}
