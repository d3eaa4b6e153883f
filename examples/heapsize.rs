//! Where the memory of a cluster goes: the live heap (counted by dhat) of the objects as the
//! API watch keeps them, the zone built from them, and what incremental updates keep beside
//! it. A tool for sizing work, not a benchmark: heap bytes, not RSS.
//!
//! ```text
//! cargo run --release --example gencluster -- --services 10000 --out /tmp/10k.json
//! cargo run --release --example heapsize -- /tmp/10k.json [--pods verified]
//! ```

use std::io::Write as _;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use clap::Parser;
use clusterdns::config::PodMode;
use clusterdns::zone::{BuildContext, Incremental};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Prints the live heap of each stage.
#[derive(Debug, Parser)]
#[command(name = "heapsize")]
struct Args {
    /// An objects file (kubectl's JSON).
    objects: PathBuf,
    /// The `pods` mode of the kubernetes block.
    #[arg(long, default_value = "insecure")]
    pods: String,
    /// Profile only the zone's build (the objects read and trimmed before profiling starts),
    /// so that dhat's high mark is the build's own; the run without it runs this too.
    #[arg(long, hide = true)]
    build_only: bool,
}

fn live() -> u64 {
    dhat::HeapStats::get().curr_bytes as u64
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut profiler = (!args.build_only).then(|| dhat::Profiler::builder().testing().build());
    let config = match clusterdns::config::shorthand(
        std::slice::from_ref(&args.objects),
        "127.0.0.1:1053".parse().expect("address"),
    ) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    let mut kubernetes = config.servers[0]
        .plugins
        .kubernetes
        .clone()
        .expect("the shorthand has a kubernetes block");
    kubernetes.pods = match args.pods.as_str() {
        "verified" => PodMode::Verified,
        "disabled" => PodMode::Disabled,
        _ => PodMode::Insecure,
    };
    let start = if args.build_only { 0 } else { live() };
    let mut cluster = match clusterdns::source::read_objects(std::slice::from_ref(&args.objects)) {
        Ok(loaded) => loaded.cluster,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    let read = if args.build_only { 0 } else { live() - start };
    let counts = format!(
        "{} Services, {} slices, {} endpoints, {} pods",
        cluster.services.len(),
        cluster.endpoint_slices.len(),
        cluster
            .endpoint_slices
            .values()
            .map(|slice| slice.endpoints.len())
            .sum::<usize>(),
        cluster.pods.len()
    );
    // What the publisher keeps (`source::publish`): pods only for `pods verified`, and of
    // each object what the zone reads.
    if kubernetes.pods != PodMode::Verified {
        cluster.pods = Default::default();
    }
    clusterdns::zone::trim_cluster(&mut cluster, &kubernetes);
    cluster.compact();
    let ctx = BuildContext {
        local_ips: vec![IpAddr::from([127, 0, 0, 1])],
        serial: clusterdns::source::publish::unix_seconds(SystemTime::now()),
    };
    if args.build_only {
        profiler = Some(dhat::Profiler::builder().testing().build());
        let (snapshot, incremental) = Incremental::build(&cluster, &kubernetes, &ctx);
        let kept = live();
        let highest = dhat::HeapStats::get().max_bytes as u64;
        drop((snapshot, incremental, profiler));
        return match writeln!(
            std::io::stdout(),
            "building the zone: {} at its highest beside the objects, {:.2} times the {} it keeps",
            mb(highest),
            highest as f64 / kept.max(1) as f64,
            mb(kept)
        ) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    let (snapshot, incremental) = Incremental::build(&cluster, &kubernetes, &ctx);
    let names = snapshot.name_count();
    let total = live() - start;
    // What each part holds is what dropping it frees.
    let freed = |what: &mut dyn FnMut()| {
        let before = live();
        what();
        before - live()
    };
    let mut incremental = Some(incremental);
    let index = freed(&mut || drop(incremental.take()));
    let mut snapshot = Some(snapshot);
    let zone = freed(&mut || drop(snapshot.take()));
    let pods = freed(&mut || cluster.pods = Default::default());
    let slices = freed(&mut || cluster.endpoint_slices = Default::default());
    let services = freed(&mut || cluster.services = Default::default());
    let mut out = std::io::stdout().lock();
    let lines = [
        format!("objects read: {} ({counts})", mb(read)),
        format!("kept, pods {}: {} in all", args.pods, mb(total)),
        format!("  Services {}", mb(services)),
        format!("  EndpointSlices {}", mb(slices)),
        format!("  Pods {}", mb(pods)),
        format!(
            "  zone {} ({names} names, {:.0} B a name)",
            mb(zone),
            zone as f64 / names.max(1) as f64
        ),
        format!(
            "  update index (name tree, objects by address) {}",
            mb(index)
        ),
    ];
    for line in lines {
        if writeln!(out, "{line}").is_err() {
            return ExitCode::FAILURE;
        }
    }
    drop((out, profiler));
    // The build's own high mark, in a process whose profiling starts just before it.
    let status = std::env::current_exe().and_then(|exe| {
        std::process::Command::new(exe)
            .arg(&args.objects)
            .args(["--pods", &args.pods, "--build-only"])
            .status()
    });
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}
