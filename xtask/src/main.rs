//! `cargo xtask`: clusterdns's tools around the product (xtask/src/lib.rs).
//!
//!   cargo xtask image [--binary PATH] [--out DIR] [--coredns PATH]
//!   cargo xtask nodes [--dir DIR] [--binary PATH] [--no-dns] [--cluster DIR]

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use nix::sys::signal::{SigSet, Signal};
use xtask::image::Written;
use xtask::kube::ControlPlane;
use xtask::nodes::{Nodes, Options};
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
    },
    /// Brings up a local control plane (bench/cluster.sh) with two real nodes joined to it —
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
        /// Join the nodes to this control plane (`bench/cluster.sh up --nodes 0 --dir DIR`)
        /// rather than start one; it stays up after.
        #[arg(long, value_name = "DIR")]
        cluster: Option<PathBuf>,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Task::Image {
            binary,
            out,
            coredns,
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
    }
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

/// `cargo xtask nodes`.
fn nodes(
    dir: Option<PathBuf>,
    binary: Option<PathBuf>,
    no_dns: bool,
    joined: Option<PathBuf>,
) -> Result<()> {
    let dir = match dir {
        Some(dir) => dir,
        None => tempfile::Builder::new()
            .prefix("clusterdns-nodes.")
            .tempdir()?
            .keep(),
    };
    std::fs::create_dir_all(&dir)?;
    let dir = std::fs::canonicalize(&dir)?;
    let binary = binary.unwrap_or_else(|| root().join("target/release/clusterdns"));
    let cluster = match &joined {
        Some(cluster) => cluster.clone(),
        None => {
            let cluster = dir.join("cluster");
            let status = std::process::Command::new(root().join("bench/cluster.sh"))
                .args(["up", "--nodes", "0", "--owner"])
                .arg(std::process::id().to_string())
                .arg("--dir")
                .arg(&cluster)
                .status()
                .context("run bench/cluster.sh")?;
            anyhow::ensure!(status.success(), "bench/cluster.sh up failed");
            cluster
        }
    };
    let plane = ControlPlane::from_dir(&cluster)?;

    let mut archives = Vec::new();
    if !no_dns {
        let work = dir.join("image");
        std::fs::create_dir_all(&work)?;
        let image = images::clusterdns(&binary, &work)
            .with_context(|| format!("the image of {}", binary.display()))?;
        archives.push(image.write(&work.join("clusterdns.tar"))?.archive);
    }
    let nodes = Nodes::up(&plane, &Options::two(&dir.join("nodes"), archives))?;
    if binary.is_file() {
        upstream(&nodes, &binary, &dir)?;
    }
    if !no_dns {
        nodes.apply_dns(images::CLUSTERDNS)?;
        nodes.wait_dns()?;
    }
    eprintln!(
        "[nodes] up: {}",
        nodes
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
    eprintln!("[nodes] export KUBECONFIG={}", plane.kubeconfig.display());
    eprintln!("[nodes] export PATH={}:$PATH", plane.peers.display());
    for node in &nodes.nodes {
        eprintln!(
            "[nodes] {}: nsenter --target {} --net --mount --pid  (containerd: ctr --address {} -n k8s.io)",
            node.name,
            node.holder.pid,
            node.containerd_socket().display()
        );
    }
    eprintln!(
        "[nodes] files and logs in {}; Ctrl-C takes everything down",
        dir.display()
    );
    std::fs::write(dir.join("ready"), "")?;
    // From here the signals are taken, not left to their default handlers (which end the
    // process at once, and with it, through the parent death signal, everything it started):
    // the nodes go down first, then the control plane. Blocked only now, so that nothing
    // started before inherits the blocked mask.
    let signals = SigSet::from_iter([Signal::SIGINT, Signal::SIGTERM]);
    signals.thread_block()?;
    let caught = signals.wait()?;
    eprintln!("[nodes] {caught}: going down");
    drop(nodes);
    if joined.is_none() {
        let _ = std::process::Command::new(root().join("bench/cluster.sh"))
            .args(["down", "--dir"])
            .arg(&cluster)
            .status();
    }
    Ok(())
}

fn report(written: &[(String, Written)]) {
    let mb = |bytes: u64| bytes as f64 / 1e6;
    eprintln!(
        "{:<40} {:>12} {:>12}  archive",
        "image", "layer MB", "gzip MB"
    );
    for (name, w) in written {
        eprintln!(
            "{name:<40} {:>12.2} {:>12.2}  {}",
            mb(w.layer_bytes),
            mb(w.layer_gzip_bytes),
            w.archive.display()
        );
    }
    if let [(_, ours), (_, theirs)] = written {
        eprintln!(
            "clusterdns / coredns: {:.2} unpacked, {:.2} compressed",
            ours.layer_bytes as f64 / theirs.layer_bytes as f64,
            ours.layer_gzip_bytes as f64 / theirs.layer_gzip_bytes as f64
        );
    }
}
