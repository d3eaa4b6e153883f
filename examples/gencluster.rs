//! Generates a synthetic cluster in kubectl's JSON, deterministic from a seed, up to
//! Kubernetes' published scalability thresholds (10,000 Services, 150,000 Pods).
//!
//! ```text
//! cargo run --release --example gencluster -- --services 10000 --out /tmp/10k.json
//! clusterdns serve --objects /tmp/10k.json
//! ```
//!
//! The layout (kinds, shares, address ranges) is documented in `benches/support/synth.rs`,
//! which the lookup bench shares.

#[path = "../benches/support/mod.rs"]
#[allow(dead_code)]
mod support;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use support::synth;

/// Writes a synthetic cluster (Namespaces, Services, EndpointSlices, Pods) as one kubectl
/// `List` in JSON.
#[derive(Debug, Parser)]
#[command(name = "gencluster")]
struct Args {
    /// Services in all, including default/kubernetes and kube-system/kube-dns (threshold:
    /// 10,000).
    #[arg(long, default_value_t = 100)]
    services: usize,
    /// Pods in all (default: 15 per Service, so 150,000 at 10,000 Services).
    #[arg(long)]
    pods: Option<usize>,
    /// Application namespaces besides default and kube-system (default: one per 25
    /// Services).
    #[arg(long)]
    namespaces: Option<usize>,
    /// Share of application Services that are headless (half of them StatefulSet-style).
    #[arg(long, default_value_t = 10)]
    headless_percent: u32,
    /// Share of application Services of type ExternalName.
    #[arg(long, default_value_t = 2)]
    external_name_percent: u32,
    /// Share of pods running but not ready, per mille.
    #[arg(long, default_value_t = 20)]
    not_ready_permille: u32,
    /// PRNG seed: the same seed and sizes give the same bytes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write here instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut params = synth::Params::for_services(args.services);
    if let Some(pods) = args.pods {
        params.pods = pods;
    }
    if let Some(namespaces) = args.namespaces {
        params.namespaces = namespaces;
    }
    params.headless_percent = args.headless_percent;
    params.external_name_percent = args.external_name_percent;
    params.not_ready_permille = args.not_ready_permille;
    params.seed = args.seed;
    if let Err(message) = params.check() {
        eprintln!("gencluster: {message}");
        return ExitCode::from(2);
    }
    for warning in params.warnings() {
        eprintln!("gencluster: warning: {warning}");
    }
    let started = Instant::now();
    let plan = synth::plan(&params);
    let result = match &args.out {
        Some(path) => File::create(path).and_then(|file| {
            let mut out = BufWriter::with_capacity(1 << 20, file);
            plan.write_json(&mut out)
        }),
        None => {
            let stdout = io::stdout();
            let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
            plan.write_json(&mut out).and_then(|summary| {
                out.flush()?;
                Ok(summary)
            })
        }
    };
    match result {
        Ok(summary) => {
            eprintln!(
                "gencluster: {} namespaces, {} services ({} headless, {} ExternalName), \
                 {} endpoint slices with {} endpoints ({} not ready), {} pods on {} nodes; \
                 {:.1} MB in {:.2} s",
                summary.namespaces,
                summary.services,
                summary.headless,
                summary.external_name,
                summary.endpoint_slices,
                summary.endpoints,
                summary.not_ready,
                summary.pods,
                summary.nodes,
                summary.bytes as f64 / 1e6,
                started.elapsed().as_secs_f64(),
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("gencluster: writing: {error}");
            ExitCode::from(1)
        }
    }
}
