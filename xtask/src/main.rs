//! `cargo xtask`: clusterdns's tools around the product (xtask/src/lib.rs).
//!
//!   cargo xtask image [--binary PATH] [--out DIR] [--coredns PATH]
//!   cargo xtask cluster up|env|down|stop|start|restart ... [--dir DIR]
//!   cargo xtask nodes [--dir DIR] [--binary PATH] [--no-dns] [--cluster DIR]
//!   cargo xtask operations [--binary PATH] [--coredns PATH] [--rate N] [--seconds N]
//!   cargo xtask load --objects FILE (--cluster DIR | --kubeconfig FILE) [--concurrency N] [--wait]
//!   cargo xtask krew-manifest --version vX.Y.Z --url BASE_URL --homepage URL --archives DIR
//!   cargo xtask bench dnsperf [--sizes N...] [--duration S] [--transport udp|tcp] ...
//!   cargo xtask bench cache [--names N] [--duration S] ...
//!   cargo xtask bench node-cache [--services N] [--duration S] ...
//!   cargo xtask bench sizing [--sizes fixture,N...] [--duration S] [--idle S] [--port P]
//!   cargo xtask bench churn [--scales N...] [--churn-rate N] [--pods insecure|verified]
//!   cargo xtask bench watch-memory [--services N]
//!   cargo xtask bench differential [--services N] [--namespaces N] [--rounds N]
//!   cargo xtask bench vs-coredns [--scales N...] [--duration S] [--steady S] [--samples N] ...
//!   cargo xtask bench fixed-rate [--rates N...] [--duration S] [--workers N] ...
//!   cargo xtask bench tracker-paired [--services N] [--rounds N] [--against PATH] ...
//!   cargo xtask bench list-mode [--services N] [--runs N]
//!   cargo xtask bench table FILE.json... [--readme FILE] [--print]
//!   cargo xtask orderfile [--port P] [--out FILE] [--keep]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use nix::sys::signal::{SigSet, Signal};
use xtask::cluster::{self, Component};
use xtask::image::Written;
use xtask::kube::ControlPlane;
use xtask::nodes::{Nodes, Options, Patch};
use xtask::operations::{self, Operation, Outcome, under_load};
use xtask::{images, root};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "clusterdns's tools around the product")]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Builds the clusterdns image as the Dockerfile describes it, without a registry or a
    /// daemon, as an archive for `ctr images import`, `docker load` or `kind load
    /// image-archive` (named clusterdns:dev, as deploy/ runs it).
    Image {
        /// The clusterdns binary (default: target/release/clusterdns).
        #[arg(long)]
        binary: Option<PathBuf>,
        /// Where the archives go (default: target/image).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also CoreDNS's image, by CoreDNS's own recipe, from this coredns binary (the
        /// peer bench/peers/build.sh builds), and both images' sizes side by side.
        #[arg(long)]
        coredns: Option<PathBuf>,
        /// Also the node-cache image (clusterdns-node-cache:dev, for
        /// deploy/nodelocaldns/node-local-dns.yaml) from the same binary, as node-cache.tar.
        #[arg(long)]
        node_cache: bool,
    },
    /// A local Kubernetes control plane without containers, on loopback, from the peers
    /// bench/peers/build.sh builds (CLUSTERDNS_PEERS, else its cache): etcd, kube-apiserver,
    /// kube-controller-manager, kube-scheduler, and kwok standing in for the kubelets of a
    /// few fake nodes. Everything is in DIR (default: CLUSTER_DIR, else
    /// $TMPDIR/clusterdns-cluster): pki/, admin.kubeconfig, log/, pid/, run/, etcd/, ports.
    Cluster {
        #[command(subcommand)]
        action: ClusterAction,
    },
    /// Brings up a local control plane (cargo xtask cluster) with two real nodes joined to it —
    /// containerd, the kubelet, the CNI bridge and kube-proxy (iptables mode on node-1,
    /// nftables on node-2), each node in namespaces of its own — and clusterdns from deploy/
    /// as the cluster's kube-dns; then waits until interrupted (Ctrl-C), and takes all of it
    /// down. Needs root.
    Nodes {
        /// Where everything goes (default: a new directory under $TMPDIR).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The clusterdns binary of the image (default: target/release/clusterdns).
        #[arg(long)]
        binary: Option<PathBuf>,
        /// Only the nodes: deploy/ is not applied.
        #[arg(long)]
        no_dns: bool,
        /// Join the nodes to this control plane (`cargo xtask cluster up --nodes 0 --dir DIR`)
        /// rather than start one; it stays up after.
        #[arg(long, value_name = "DIR")]
        cluster: Option<PathBuf>,
    },
    /// What a DNS Deployment lives through, for clusterdns and CoreDNS on the same real
    /// nodes: clients of every kind on both nodes resolve at a steady rate while the
    /// Deployment rolls, loses a pod, a container is killed, the API server and each node's
    /// kube-proxy restart; failed and slow lookups counted, a table printed and written to
    /// bench/out. Needs root; about ten minutes.
    Operations {
        /// The clusterdns binary of the image (default: target/release/clusterdns).
        #[arg(long)]
        binary: Option<PathBuf>,
        /// The coredns binary of CoreDNS's image (default: the peer).
        #[arg(long)]
        coredns: Option<PathBuf>,
        /// Lookups a second, per client.
        #[arg(long, default_value_t = 50)]
        rate: u32,
        /// Seconds of load around each operation.
        #[arg(long, default_value_t = 40)]
        seconds: u32,
        /// Where the table goes (default: bench/out).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The readiness probe as kubeadm times it (every 10 s, out after three failures)
        /// instead of deploy/'s (every second, out at the first).
        #[arg(long)]
        kubeadm_probes: bool,
        /// Each operation this many times (its lookups summed).
        #[arg(long, default_value_t = 1)]
        rounds: u32,
    },
    /// Creates gencluster's synthetic cluster through a control plane's API server (as
    /// `cargo xtask bench vs-coredns` loads it): its Namespaces, then its Pods, each bound to a
    /// bench-node-N and given its status (Running, Ready, an address of the node's /24) by
    /// the loader, then its Services; the EndpointSlice controller writes the slices.
    /// Prints `namespaces services pods failures` on stdout, and with --wait, once
    /// every pod has an address and the slices hold them, `created_s loaded_s endpoints`.
    Load {
        /// gencluster's output: one kubectl `List` in JSON.
        #[arg(long)]
        objects: PathBuf,
        /// The control plane (`cargo xtask cluster up --dir DIR`): its admin kubeconfig.
        #[arg(long, value_name = "DIR", required_unless_present = "kubeconfig")]
        cluster: Option<PathBuf>,
        /// A kubeconfig to load with instead.
        #[arg(long, conflicts_with = "cluster")]
        kubeconfig: Option<PathBuf>,
        /// Pods to a node: pod i goes on bench-node-(i / N), which must exist.
        #[arg(long, default_value_t = 200)]
        pods_per_node: usize,
        /// Requests in flight at once.
        #[arg(long, default_value_t = 32)]
        concurrency: usize,
        /// Then wait until every pod has an address and the EndpointSlices hold them.
        #[arg(long)]
        wait: bool,
    },
    /// The benches against real peers (bench/README.md), each writing a Markdown report and
    /// its results as JSON into bench/out, and the README's tables from that JSON.
    Bench {
        #[command(subcommand)]
        bench: Bench,
    },
    /// Writes link/hot-text.ld, the functions start-up and the query path run, which build.rs
    /// lays out first: the release binary (built without the current ordering) runs under
    /// valgrind's callgrind on the bundled fixture with kubeadm's Corefile, is asked every
    /// kind of question over UDP and TCP, read /health, /ready and /metrics, waits for the
    /// reload plugin's check; every function of the binary that ran becomes a section
    /// pattern, in the order callgrind met it. PORT (25363) is the flag --port too. Needs
    /// valgrind, dig, curl and nm; about 2 minutes after the release build.
    Orderfile(xtask::bench::orderfile::Options),
    /// Writes the krew manifest of a release to stdout: deploy/krew/clusterdns.yaml with its
    /// @...@ placeholders filled from the release's archives, clusterdns-VERSION-OS-ARCH.tar.gz
    /// in DIR, each with the binary `clusterdns` at its top (deploy/krew/README.md). What krew
    /// would refuse is one line on stderr and status 1.
    KrewManifest {
        #[command(flatten)]
        release: xtask::krew::Release,
    },
    /// Writes a control plane's Namespaces, Services, EndpointSlices and Pods as one kubectl
    /// `List` in JSON, page by page (`kubectl get ... -A -o json` holds every object at once:
    /// 12.9 GB for 150,000 pods); prints `namespaces services endpointslices pods`.
    Dump {
        /// The control plane (`cargo xtask cluster up --dir DIR`): its admin kubeconfig.
        #[arg(long, value_name = "DIR")]
        cluster: PathBuf,
        /// The file to write.
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// dnsperf against clusterdns and against knotd serving the same zone, for each size of
    /// gencluster's synthetic cluster: servers pinned to CPU 0, dnsperf to CPU 1; qps,
    /// queries per server CPU-second, p50/p99 saturated and at a fixed rate, RSS, and the
    /// ratios. Every knob is a flag or the environment variable in capitals (SIZES="100
    /// 10000", DURATION=15, ...). Needs dnsperf, knotd and dig (apt-get install dnsperf knot
    /// bind9-dnsutils); builds the release binaries.
    Dnsperf(xtask::bench::dnsperf::Options),
    /// The cache path: names forwarded to an authoritative upstream on loopback (knotd) and
    /// answered from the cache, clusterdns (forward, cache 3600, loadbalance) against unbound
    /// (one thread, forward-zone "."), servers pinned to CPU 0, dnsperf and the upstream to
    /// CPU 1. Every knob is a flag or the environment variable in capitals (NAMES=5000,
    /// DURATION=15, ...). Needs dnsperf, knotd, unbound and dig; builds the release binaries.
    Cache(xtask::bench::cache::Options),
    /// NodeLocal DNSCache in network namespaces the bench makes (root): `clusterdns
    /// node-cache` with nodelocaldns.yaml's flags and Corefile, then CoreDNS on the same
    /// Corefile, address (169.254.20.10) and rules, each pinned to CPU 0 with dnsperf in a
    /// client namespace on CPU 1: lookup p50/p99 of cluster names (miss, cached) and external
    /// names (cached), queries per CPU-second saturated, RSS idle and after, conntrack
    /// entries, the ratios and issue 50's targets. Every knob is a flag or the environment
    /// variable in capitals (SERVICES=1000, DURATION=10, ...). Needs dnsperf, knotd, dig,
    /// iptables and bench/peers/build.sh's CoreDNS; builds the release binaries.
    NodeCache(xtask::bench::node_cache::Options),
    /// Memory and CPU of one clusterdns replica on kubeadm's Corefile (deploy/configmap.yaml)
    /// with `objects` in place of the API watch, for each size (the fixture, gencluster's
    /// clusters): peak RSS, RSS when ready, after an idle wait and after a dnsperf run, queries
    /// per CPU-second, idle CPU; the server pinned to CPU 0, dnsperf to CPU 1. Every knob is a
    /// flag or the environment variable in capitals (SIZES="fixture 100", DURATION=10,
    /// IDLE=30, PORT=15363). Needs dnsperf; builds the release binaries.
    Sizing(xtask::bench::sizing::Options),
    /// The API watch under churn: the ignored test sources::live::churn_at_scale (release
    /// build) for each scale of gencluster's cluster served by the API server stand-in: sync
    /// time and RSS, programming latency idle and under CHURN_RATE EndpointSlice updates a
    /// second, the server's CPU and RSS meanwhile, queries per CPU-second during the churn
    /// against idle. Every knob is a flag or the environment variable in capitals
    /// (SCALES="1000 10000", CHURN_RATE=100, PODS=insecure). Needs dnsperf.
    Churn(xtask::bench::churn::Options),
    /// Memory of the API watch at scale: the ignored test sources::live::watch_memory_at_scale
    /// (release build) with `pods disabled`, then `pods verified`, on gencluster's cluster
    /// served by the API server stand-in: sync time, peak, steady and re-list RSS. SERVICES
    /// (10000) is the flag --services too.
    WatchMemory(xtask::bench::watch_memory::Options),
    /// The differential check at scale: the ignored test
    /// cluster::differential::differential_at_scale, clusterdns and the real CoreDNS
    /// (bench/peers/build.sh) with kubeadm's Corefile on a local control plane, every answer
    /// compared; prints its report and writes it with its figures as JSON; fails on a
    /// difference docs/differences.md does not list. SERVICES (600), NAMESPACES (12), ROUNDS
    /// (3), each a flag too.
    Differential(xtask::bench::differential::Options),
    /// clusterdns beside the real CoreDNS (bench/peers/build.sh) on a local control plane
    /// (cargo xtask cluster), a fresh one per scale of gencluster's cluster loaded through
    /// the API server (cargo xtask load), both with kubeadm's Corefile, each as its own
    /// ServiceAccount: time to ready, RSS (after sync, steady, through a re-list), what
    /// replicas cost the API server (requests, bytes, its CPU and RSS), answers compared,
    /// queries per CPU-second and CPU at a fixed rate (dnsperf), programming latency idle and
    /// under churn, CPU during the churn; the ratios clusterdns / CoreDNS. Every knob is a
    /// flag or the environment variable in capitals (SCALES="1000 10000", DURATION=15,
    /// STEADY=15, SAMPLES=20, ...). Needs dnsperf, knotd, dig and ss; builds the release
    /// binaries (not with --no-build).
    VsCoredns(xtask::bench::vs_coredns::Options),
    /// What a replica costs at the rates clusters send: clusterdns and knotd serving the same
    /// zone, unpinned, each with a worker per CPU, dnsperf (unpinned) at fixed rates: achieved
    /// qps, lost, server CPU and millicores per 1,000 qps, p50/p99; then both at half of
    /// knotd's saturating rate, and clusterdns saturated on one CPU and on two. Every knob is
    /// a flag or the environment variable in capitals (SIZE=100, RATES="1000 10000 20000
    /// 50000", DURATION=10, WORKERS, ...). Needs dnsperf, knotd and dig; builds the release
    /// binaries.
    FixedRate(xtask::bench::fixed_rate::Options),
    /// The search-path tracker's cost in pairs: two servers on the same objects, tracker on
    /// and off (or, with AGAINST, this build and an older one, the tracker on in both),
    /// pinned to CPU 0, loaded in turn by dnsperf on CPU 1, the order swapped every round;
    /// each round's ratio of queries per CPU-second, then their median, geometric mean and
    /// range. Every knob is a flag or the environment variable in capitals (SERVICES=10000,
    /// ROUNDS=16, DURATION=5, AGAINST, ...). Needs dnsperf and dig; builds the release
    /// binaries.
    TrackerPaired(xtask::bench::tracker_paired::Options),
    /// `list_mode paginated` against `streaming` on a local control plane (cargo xtask
    /// cluster) loaded with gencluster's Services and slices: per start, the time to the
    /// first sync, clusterdns's peak RSS, the API server's CPU time and RSS growth. SERVICES
    /// (2000) and RUNS (3), each a flag too. Needs bench/peers/build.sh's peers; builds the
    /// release binaries.
    ListMode(xtask::bench::list_mode::Options),
    /// Renders bench/README.md's table of each bench from the JSON the bench wrote
    /// (bench/out/*.json), between the bench's markers: `<!-- bench:NAME begin -->` and
    /// `<!-- bench:NAME end -->`.
    Table {
        /// The results, one JSON document per run.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The Markdown file whose tables are replaced (default: bench/README.md).
        #[arg(long)]
        readme: Option<PathBuf>,
        /// Print the tables, with their markers, instead.
        #[arg(long)]
        print: bool,
    },
}

#[derive(Subcommand)]
enum ClusterAction {
    /// Starts every component, each waited for before the next, then the kwok nodes and a
    /// probe pod through the whole path; prints how long it took. Environment:
    /// CLUSTER_NODES, CLUSTER_GOGC (default 400), CLUSTER_APISERVER_MEMLIMIT (default 8GiB).
    Up {
        /// The cluster's directory.
        #[arg(long)]
        dir: Option<PathBuf>,
        #[command(flatten)]
        options: cluster::Options,
    },
    /// The exports for kubectl: eval "$(cargo xtask cluster env)".
    Env {
        /// The cluster's directory.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Stops everything `up` started, by PID, and removes etcd's data.
    Down {
        /// The cluster's directory.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Stops one component (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
    /// kwok).
    Stop {
        component: Component,
        /// The cluster's directory.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Starts one component again and waits until it does its job.
    Start {
        component: Component,
        /// The cluster's directory.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Stops one component, starts it again and waits until it does its job.
    Restart {
        component: Component,
        /// The cluster's directory.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

/// `cargo xtask cluster ACTION`.
fn cluster(action: ClusterAction) -> Result<()> {
    let open = |dir: Option<PathBuf>| -> Result<cluster::Cluster> {
        let mut cluster = cluster::Cluster::new(&dir.unwrap_or_else(cluster::default_dir))?;
        cluster.verbose = true;
        Ok(cluster)
    };
    match action {
        ClusterAction::Up { dir, options } => {
            open(dir)?.up(&cluster::peers_dir()?, &options)?;
        }
        ClusterAction::Env { dir } => print!("{}", open(dir)?.env()?),
        ClusterAction::Down { dir } => open(dir)?.down()?,
        ClusterAction::Stop { component, dir } => open(dir)?.stop(component)?,
        ClusterAction::Start { component, dir } => open(dir)?.start(component)?,
        ClusterAction::Restart { component, dir } => open(dir)?.restart(component)?,
    }
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Task::Cluster { action } => cluster(action),
        Task::Bench { bench } => match bench {
            Bench::Dnsperf(options) => xtask::bench::dnsperf::run(&options).map(drop),
            Bench::Cache(options) => xtask::bench::cache::run(&options).map(drop),
            Bench::NodeCache(options) => xtask::bench::node_cache::run(&options).map(drop),
            Bench::Sizing(options) => xtask::bench::sizing::run(&options).map(drop),
            Bench::Churn(options) => xtask::bench::churn::run(&options).map(drop),
            Bench::WatchMemory(options) => xtask::bench::watch_memory::run(&options).map(drop),
            Bench::Differential(options) => xtask::bench::differential::run(&options).map(drop),
            Bench::VsCoredns(options) => xtask::bench::vs_coredns::run(&options).map(drop),
            Bench::FixedRate(options) => xtask::bench::fixed_rate::run(&options).map(drop),
            Bench::TrackerPaired(options) => xtask::bench::tracker_paired::run(&options).map(drop),
            Bench::ListMode(options) => xtask::bench::list_mode::run(&options).map(drop),
            Bench::Table {
                files,
                readme,
                print,
            } => xtask::bench::table::run(&files, readme.as_deref(), print),
        },
        Task::Orderfile(options) => xtask::bench::orderfile::run(&options).map(drop),
        Task::KrewManifest { release } => {
            let status = xtask::krew::run(
                &release,
                &mut std::io::stdout().lock(),
                &mut std::io::stderr().lock(),
            );
            std::process::exit(status)
        }
        Task::Image {
            binary,
            out,
            coredns,
            node_cache,
        } => {
            let binary = binary.unwrap_or_else(|| root().join("target/release/clusterdns"));
            let out = out.unwrap_or_else(|| root().join("target/image"));
            let work = tempfile::tempdir()?;
            let image = images::clusterdns(&binary, work.path())
                .with_context(|| format!("the image of {}", binary.display()))?;
            let mut written = vec![(
                image.reference.clone(),
                image.write(&out.join("clusterdns.tar"))?,
            )];
            if node_cache {
                let image = images::node_cache(&binary, work.path())
                    .with_context(|| format!("the node-cache image of {}", binary.display()))?;
                written.push((
                    image.reference.clone(),
                    image.write(&out.join("node-cache.tar"))?,
                ));
            }
            if let Some(coredns) = coredns {
                let image = images::coredns(&coredns)?;
                written.push((
                    image.reference.clone(),
                    image.write(&out.join("coredns.tar"))?,
                ));
            }
            report(&written);
            Ok(())
        }
        Task::Nodes {
            dir,
            binary,
            no_dns,
            cluster,
        } => nodes(dir, binary, no_dns, cluster),
        Task::Operations {
            binary,
            coredns,
            rate,
            seconds,
            out,
            kubeadm_probes,
            rounds,
        } => operations(binary, coredns, rate, seconds, out, kubeadm_probes, rounds),
        Task::Dump { cluster, out } => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let client = xtask::load::client(&cluster.join("admin.kubeconfig")).await?;
                let file = std::fs::File::create(&out)
                    .with_context(|| format!("creating {}", out.display()))?;
                let mut writer = std::io::BufWriter::new(file);
                let [namespaces, services, slices, pods] =
                    xtask::load::dump(&client, &mut writer).await?;
                eprintln!(
                    "[dump] {namespaces} Namespaces, {services} Services, {slices} EndpointSlices \
                     and {pods} Pods written to {}",
                    out.display()
                );
                println!("{namespaces} {services} {slices} {pods}");
                Ok(())
            })
        }
        Task::Load {
            objects,
            cluster,
            kubeconfig,
            pods_per_node,
            concurrency,
            wait,
        } => {
            let kubeconfig = match (kubeconfig, cluster) {
                (Some(kubeconfig), _) => kubeconfig,
                (None, Some(cluster)) => cluster.join("admin.kubeconfig"),
                (None, None) => anyhow::bail!("--cluster or --kubeconfig"),
            };
            load(&objects, &kubeconfig, pods_per_node, concurrency, wait)
        }
    }
}

/// `cargo xtask load`.
fn load(
    objects: &Path,
    kubeconfig: &Path,
    pods_per_node: usize,
    concurrency: usize,
    wait: bool,
) -> Result<()> {
    use std::sync::Arc;
    use std::sync::atomic::Ordering::Relaxed;
    use xtask::load;

    let read = Instant::now();
    let json = std::fs::read(objects).with_context(|| format!("reading {}", objects.display()))?;
    let objects = load::objects(&json, pods_per_node)?;
    drop(json);
    eprintln!(
        "[load] {} namespaces, {} Services, {} pods read in {:.1} s; {concurrency} requests at once",
        objects.namespaces.len(),
        objects.services,
        objects.pods,
        read.elapsed().as_secs_f64()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = load::client(kubeconfig).await?;
        let tally = Arc::new(load::Tally::default());
        let start = Instant::now();
        let (namespaces, services, pods) =
            (objects.namespaces.len(), objects.services, objects.pods);
        load::create_all(
            &client,
            Arc::new(objects.namespaces),
            concurrency,
            tally.clone(),
        )
        .await?;
        // Progress while the Services and Pods go in.
        let watch = {
            let tally = tally.clone();
            tokio::spawn(async move {
                let mut last = 0;
                loop {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    let now = tally.created.load(Relaxed);
                    eprintln!(
                        "[load] {:>5.0} s: {now} created ({:.0}/s over the last 30 s)",
                        start.elapsed().as_secs_f64(),
                        (now - last) as f64 / 30.0
                    );
                    last = now;
                }
            })
        };
        load::create_all(
            &client,
            Arc::new(objects.workloads),
            concurrency,
            tally.clone(),
        )
        .await?;
        watch.abort();
        let created = start.elapsed();
        let failed = tally.failed.load(Relaxed);
        for failure in tally
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
        {
            eprintln!("{failure}");
        }
        eprintln!(
            "[load] {services} Services and {pods} pods created, {} pods' statuses written, in {:.1} s ({:.0} objects/s); {} requests refused for a while and sent again ({} of them 429); {failed} failures",
            tally.statuses.load(Relaxed),
            created.as_secs_f64(),
            (namespaces + services + pods) as f64 / created.as_secs_f64(),
            tally.refused.load(Relaxed),
            tally.too_many.load(Relaxed),
        );
        println!("{namespaces} {services} {pods} {failed}");
        if wait {
            let (endpoints, loaded) =
                load::wait_loaded(&client, start, Duration::from_secs(3)).await?;
            let loaded = loaded.duration_since(start);
            eprintln!(
                "[load] loaded in {:.1} s: every pod has an address, the EndpointSlices hold {endpoints} endpoints",
                loaded.as_secs_f64()
            );
            println!(
                "{:.1} {:.1} {endpoints}",
                created.as_secs_f64(),
                loaded.as_secs_f64()
            );
        }
        anyhow::Ok(())
    })
}

/// The nodes' upstream (the nameserver of their resolv.conf), standing in for the Internet's
/// DNS: clusterdns itself, answering every name under example.com, .net and .org with
/// 192.0.2.10 and 2001:db8::10 (*template*), and NXDOMAIN for every other.
fn upstream(nodes: &Nodes, binary: &std::path::Path, dir: &std::path::Path) -> Result<()> {
    let corefile = dir.join("upstream.Corefile");
    std::fs::write(
        &corefile,
        format!(
            ".:53 {{\n    bind {ip}\n    template IN A example.com example.net example.org {{\n        answer \"{{{{ .Name }}}} 60 IN A 192.0.2.10\"\n    }}\n    template IN AAAA example.com example.net example.org {{\n        answer \"{{{{ .Name }}}} 60 IN AAAA 2001:db8::10\"\n    }}\n    template ANY ANY example.com example.net example.org {{\n        rcode NOERROR\n    }}\n    template ANY ANY . {{\n        rcode NXDOMAIN\n    }}\n}}\n",
            ip = xtask::nodes::UPSTREAM
        ),
    )?;
    nodes.upstream.spawn(
        xtask::netns::Kinds::Net,
        binary,
        &[
            "serve".as_ref(),
            "--corefile".as_ref(),
            corefile.as_os_str(),
        ],
        &dir.join("upstream.log"),
    )?;
    Ok(())
}

/// A control plane with two real nodes, and where their files are.
struct Up {
    dir: PathBuf,
    /// The control plane's directory.
    cluster: PathBuf,
    /// Whether it was there before (`--cluster`): then it stays up after.
    joined: bool,
    plane: ControlPlane,
    nodes: Nodes,
}

impl Up {
    /// Brings up the control plane (or joins `joined`'s) and two nodes in `dir` (or a new
    /// directory), with `archives` imported on them, and the upstream when `binary` is there.
    fn new(
        dir: Option<PathBuf>,
        joined: Option<PathBuf>,
        binary: &Path,
        archives: Vec<PathBuf>,
    ) -> Result<Self> {
        let dir = match dir {
            Some(dir) => dir,
            None => tempfile::Builder::new()
                .prefix("clusterdns-nodes.")
                .tempdir()?
                .keep(),
        };
        std::fs::create_dir_all(&dir)?;
        let dir = std::fs::canonicalize(&dir)?;
        let cluster = match &joined {
            Some(cluster) => cluster.clone(),
            None => {
                let cluster = dir.join("cluster");
                let mut plane = cluster::Cluster::new(&cluster)?;
                plane.verbose = true;
                plane
                    .up(
                        &cluster::peers_dir()?,
                        &cluster::Options {
                            nodes: Some(0),
                            owner: Some(std::process::id()),
                            ..cluster::Options::default()
                        },
                    )
                    .context("the control plane")?;
                cluster
            }
        };
        let plane = ControlPlane::from_dir(&cluster)?;
        let nodes = Nodes::up(&plane, &Options::two(&dir.join("nodes"), archives))?;
        if binary.is_file() {
            upstream(&nodes, binary, &dir)?;
        }
        Ok(Self {
            dir,
            cluster,
            joined: joined.is_some(),
            plane,
            nodes,
        })
    }

    /// The nodes first, then the control plane unless it was joined.
    fn down(self) {
        drop(self.nodes);
        if !self.joined {
            let down = cluster::Cluster::new(&self.cluster).and_then(|mut plane| {
                plane.verbose = true;
                plane.down()
            });
            if let Err(error) = down {
                eprintln!("[nodes] the control plane: {error:#}");
            }
        }
    }
}

/// The clusterdns image of `binary`, written in `dir`.
fn clusterdns_image(binary: &Path, dir: &Path) -> Result<PathBuf> {
    let work = dir.join("image");
    std::fs::create_dir_all(&work)?;
    let image = images::clusterdns(binary, &work)
        .with_context(|| format!("the image of {}", binary.display()))?;
    Ok(image.write(&work.join("clusterdns.tar"))?.archive)
}

/// `cargo xtask nodes`.
fn nodes(
    dir: Option<PathBuf>,
    binary: Option<PathBuf>,
    no_dns: bool,
    joined: Option<PathBuf>,
) -> Result<()> {
    let binary = binary.unwrap_or_else(|| root().join("target/release/clusterdns"));
    let work = tempfile::tempdir()?;
    let archives = if no_dns {
        Vec::new()
    } else {
        vec![clusterdns_image(&binary, work.path())?]
    };
    let up = Up::new(dir, joined, &binary, archives)?;
    if !no_dns {
        up.nodes.apply_dns(images::CLUSTERDNS, &[])?;
        up.nodes.wait_dns()?;
    }
    eprintln!(
        "[nodes] up: {}",
        up.nodes
            .nodes
            .iter()
            .map(|n| format!(
                "{} ({}, kube-proxy {})",
                n.name,
                n.address(),
                n.proxy_mode.as_str()
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    eprintln!(
        "[nodes] export KUBECONFIG={}",
        up.plane.kubeconfig.display()
    );
    eprintln!("[nodes] export PATH={}:$PATH", up.plane.peers.display());
    for node in &up.nodes.nodes {
        eprintln!(
            "[nodes] {}: nsenter --target {} --net --mount --pid  (containerd: ctr --address {} -n k8s.io)",
            node.name,
            node.holder.pid,
            node.containerd_socket().display()
        );
    }
    eprintln!(
        "[nodes] files and logs in {}; Ctrl-C takes everything down",
        up.dir.display()
    );
    std::fs::write(up.dir.join("ready"), "")?;
    // From here the signals are taken, not left to their default handlers (which end the
    // process at once, and with it, through the parent death signal, everything it started):
    // the nodes go down first, then the control plane. Blocked only now, so that nothing
    // started before inherits the blocked mask.
    let signals = SigSet::from_iter([Signal::SIGINT, Signal::SIGTERM]);
    signals.thread_block()?;
    let caught = signals.wait()?;
    eprintln!("[nodes] {caught}: going down");
    up.down();
    Ok(())
}

/// The client pods of `cargo xtask operations`, one on each node.
const LOAD_PODS: [&str; 2] = ["load/client-node-1", "load/client-node-2"];

/// `cargo xtask operations`: both servers on the same nodes, every operation under load.
fn operations(
    binary: Option<PathBuf>,
    coredns: Option<PathBuf>,
    rate: u32,
    seconds: u32,
    out: Option<PathBuf>,
    kubeadm_probes: bool,
    rounds: u32,
) -> Result<()> {
    let binary = binary.unwrap_or_else(|| root().join("target/release/clusterdns"));
    let coredns = match coredns {
        Some(coredns) => coredns,
        None => {
            let dir = std::process::Command::new(root().join("bench/peers/build.sh"))
                .arg("--dir")
                .output()
                .context("run bench/peers/build.sh --dir")?;
            PathBuf::from(String::from_utf8_lossy(&dir.stdout).trim()).join("coredns")
        }
    };
    let work = tempfile::tempdir()?;
    let coredns_archive = work.path().join("coredns.tar");
    images::coredns(&coredns)?.write(&coredns_archive)?;
    let archives = vec![clusterdns_image(&binary, work.path())?, coredns_archive];
    let up = Up::new(None, None, &binary, archives)?;
    let kubectl = up.plane.kubectl();
    let mut clients = String::from("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: load\n");
    for n in 1..=2 {
        clients.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: client-node-{n}\n  namespace: load\nspec:\n  nodeName: node-{n}\n  terminationGracePeriodSeconds: 1\n  containers:\n    - name: client\n      image: {}\n      imagePullPolicy: Never\n",
            images::CLIENT
        ));
    }
    kubectl.apply(&clients)?;
    kubectl.run(&[
        "wait",
        "--for=condition=Ready",
        "pod",
        "--all",
        "-n",
        "load",
        "--timeout=120s",
    ])?;

    let probes: Vec<Patch> = if kubeadm_probes {
        vec![Patch::readiness(10, 3)]
    } else {
        Vec::new()
    };
    let coredns_patches: Vec<Patch> = probes
        .iter()
        .cloned()
        .chain([Patch::corefile(&operations::kubeadm_corefile()?)])
        .collect();
    let servers: [(&str, &str, &[Patch]); 2] = [
        ("clusterdns", images::CLUSTERDNS, &probes),
        ("CoreDNS 1.14.7", images::COREDNS, &coredns_patches),
    ];
    let mut quiet: Vec<Outcome> = Vec::new();
    let mut ready: Vec<Vec<(String, Duration)>> = Vec::new();
    let mut rows: Vec<(String, Vec<Outcome>)> = Operation::ALL
        .iter()
        .map(|op| (op.describe(), Vec::new()))
        .collect();
    for (name, image, patches) in &servers {
        eprintln!("[operations] {name}: deploy/ with its image");
        let before: BTreeSet<String> = operations::dns_pods(&kubectl)?.into_iter().collect();
        let applied = Instant::now();
        up.nodes.apply_dns(image, patches)?;
        ready.push(operations::ready_times(
            &kubectl,
            "kube-system",
            "k8s-app=kube-dns",
            2,
            &before,
            applied,
        ));
        up.nodes.wait_dns()?;
        operations::settle(&kubectl)?;
        let (tallies, ()) = under_load(&up.nodes, &LOAD_PODS, rate, 10, Duration::ZERO, || ())?;
        quiet.push((operations::by_kind(&tallies), None));
        for (operation, row) in Operation::ALL.iter().zip(&mut rows) {
            let mut sum: std::collections::BTreeMap<&'static str, operations::Tally> =
                std::collections::BTreeMap::new();
            let mut took = Duration::ZERO;
            for round in 1..=rounds {
                eprintln!(
                    "[operations] {name}: {} ({round}/{rounds})",
                    operation.describe()
                );
                let (tallies, done) = under_load(
                    &up.nodes,
                    &LOAD_PODS,
                    rate,
                    seconds,
                    Duration::from_secs(5),
                    || operations::perform(&up.nodes, *operation),
                )?;
                for (kind, tally) in operations::by_kind(&tallies) {
                    sum.entry(kind).or_default().add(&tally);
                }
                took += done?.took;
                operations::settle(&kubectl)?;
            }
            row.1.push((
                sum,
                Some(operations::Done {
                    took: took / rounds.max(1),
                }),
            ));
        }
    }
    let names: Vec<&str> = servers.iter().map(|(name, _, _)| *name).collect();
    let mut report = format!(
        "# DNS operations on real nodes, {}\n\nEvery client kind on both nodes, {rate} lookups a second each through 10.96.0.10; \
         each operation {seconds} s of load, the operation at 5 s, {rounds} time(s), the lookups summed and the time it \
         took averaged. `failed / slow / lookups`: slow is over 1 s. The readiness probe {}.\n\n",
        jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M UTC"),
        if kubeadm_probes {
            "as kubeadm's (every 10 s, out after three failures)"
        } else {
            "as deploy/'s (every second, out at the first failure)"
        }
    );
    report.push_str(&operations::table(&names, &rows));
    report.push_str("\n| quiet, 10 s | ");
    for (name, (tallies, _)) in names.iter().zip(&quiet) {
        let mut all = operations::Tally::default();
        for tally in tallies.values() {
            all.add(tally);
        }
        report.push_str(&format!(
            "{name}: p50 {:.2} ms, p99 {:.2} ms, {} failed of {}; ",
            all.quantile_ms(0.5),
            all.quantile_ms(0.99),
            all.failed,
            all.lookups
        ));
    }
    report.push_str("|\n\nDNS pods from created to Ready:");
    for (name, times) in names.iter().zip(&ready) {
        let times: Vec<String> = times
            .iter()
            .map(|(_, took)| format!("{:.1} s", took.as_secs_f64()))
            .collect();
        report.push_str(&format!(" {name} {};", times.join(", ")));
    }
    report.push('\n');
    println!("{report}");
    let out = out.unwrap_or_else(|| root().join("bench/out"));
    std::fs::create_dir_all(&out)?;
    let file = out.join(format!(
        "operations-{}.md",
        jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S")
    ));
    std::fs::write(&file, &report)?;
    eprintln!("[operations] written to {}", file.display());
    up.down();
    Ok(())
}

fn report(written: &[(String, Written)]) {
    let mb = |bytes: u64| bytes as f64 / 1e6;
    eprintln!(
        "{:<44} {:>12} {:>12}  archive",
        "image", "layer MB", "gzip MB"
    );
    for (name, w) in written {
        eprintln!(
            "{name:<44} {:>12.2} {:>12.2}  {}",
            mb(w.layer_bytes),
            mb(w.layer_gzip_bytes),
            w.archive.display()
        );
    }
    let coredns = written
        .iter()
        .find(|(name, _)| *name == xtask::image::normalize(images::COREDNS));
    if let (Some((_, ours)), Some((_, theirs))) = (written.first(), coredns) {
        eprintln!(
            "clusterdns / coredns: {:.2} unpacked, {:.2} compressed",
            ours.layer_bytes as f64 / theirs.layer_bytes as f64,
            ours.layer_gzip_bytes as f64 / theirs.layer_gzip_bytes as f64
        );
    }
}
