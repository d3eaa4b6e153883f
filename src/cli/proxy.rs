//! `clusterdns proxy render` and `clusterdns proxy trace`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use ipnet::IpNet;

use super::endpoints::Slices;
use crate::proxy::endpoints::{SliceSource, with_slices};
use crate::proxy::iptables;
use crate::proxy::names::NameScheme;
use crate::proxy::plan::{IpFamily, PlanOptions, plan};
use crate::source::file::read_objects;

/// Arguments of `proxy`.
#[derive(Debug, Args)]
pub(super) struct ProxyArgs {
    #[command(subcommand)]
    command: ProxyCommand,
}

#[derive(Debug, Subcommand)]
enum ProxyCommand {
    /// kube-proxy's rules for the objects, as a node prints them.
    Render(RenderArgs),
}

/// Arguments of `proxy render`.
#[derive(Debug, Args)]
struct RenderArgs {
    /// `iptables`: `iptables-save` output; `nftables`: `nft list table ip kube-proxy` output.
    #[arg(long, value_enum)]
    mode: Mode,
    /// Objects files (`kubectl get svc,pods,endpointslices -o json` output).
    #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
    objects: Vec<PathBuf>,
    /// The cluster's pod CIDR (kube-proxy's `--cluster-cidr`): sources outside it are
    /// masqueraded. Both families may be given, comma-separated.
    #[arg(long, value_name = "CIDR", value_delimiter = ',', required = true)]
    cluster_cidr: Vec<IpNet>,
    /// The node the rules are for: its endpoints are the local ones (externalTrafficPolicy
    /// and internalTrafficPolicy Local).
    #[arg(long, value_name = "NODE")]
    node: Option<String>,
    /// Name the chains exactly as kube-proxy does (base32 of SHA-256), instead of the hex
    /// names clusterdns uses by default.
    #[arg(long)]
    kube_proxy_names: bool,
    /// Where the EndpointSlices come from.
    #[arg(long, value_enum, default_value_t = Slices::Input)]
    slices: Slices,
    /// The IP family (kube-proxy runs one proxier per family).
    #[arg(long, value_enum, default_value_t = Family::Ipv4)]
    family: Family,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    /// iptables, as `iptables-save` prints it.
    Iptables,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Family {
    /// IPv4.
    Ipv4,
    /// IPv6.
    Ipv6,
}

impl From<Family> for IpFamily {
    fn from(family: Family) -> Self {
        match family {
            Family::Ipv4 => Self::V4,
            Family::Ipv6 => Self::V6,
        }
    }
}

pub(super) fn run(args: &ProxyArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        ProxyCommand::Render(args) => render(args),
    }
}

fn render(args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let family = IpFamily::from(args.family);
    if !args
        .cluster_cidr
        .iter()
        .any(|net| family.contains(net.addr()))
    {
        anyhow::bail!(
            "--cluster-cidr: no {} CIDR among {}",
            family.as_str(),
            args.cluster_cidr
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        );
    }
    let loaded = read_objects(&args.objects)?;
    let cluster = with_slices(&loaded.cluster, SliceSource::from(args.slices));
    let options = PlanOptions {
        family,
        node: args.node.clone(),
        cluster_cidrs: args.cluster_cidr.clone(),
    };
    let plan = plan(&cluster, &options);
    let names = if args.kube_proxy_names {
        NameScheme::KubeProxy
    } else {
        NameScheme::Hex
    };
    let text = match args.mode {
        Mode::Iptables => iptables::render(&plan, names),
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
