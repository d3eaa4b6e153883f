//! `clusterdns proxy render` and `clusterdns proxy trace`.

use std::path::PathBuf;
use std::process::ExitCode;

use std::net::{IpAddr, SocketAddr};

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use ipnet::IpNet;

use super::endpoints::Slices;
use crate::kube_proxy::endpoints::{SliceSource, with_slices};
use crate::kube_proxy::iptables;
use crate::kube_proxy::names::NameScheme;
use crate::kube_proxy::nftables::{self, NftOptions};
use crate::kube_proxy::plan::{IpFamily, PlanOptions, plan};
use crate::kube_proxy::ruleset;
use crate::kube_proxy::trace::{self, TraceOptions, TraceVerdict};
use crate::model::Protocol;

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
    /// Where a new connection goes through a node's ruleset (exit 1 on reject, drop or no
    /// match).
    Trace(TraceArgs),
}

/// Arguments of `proxy trace`.
#[derive(Debug, Args)]
struct TraceArgs {
    /// The ruleset: `iptables-save` (or `iptables -S`) output, `nft list table ip
    /// kube-proxy` output, or an `nft -f` transaction.
    #[arg(long, value_name = "FILE")]
    ruleset: PathBuf,
    /// The destination: `IP:PORT` (`[IPv6]:PORT`); `IP` alone with `--proto icmp`.
    #[arg(long, value_name = "IP:PORT", value_parser = parse_to)]
    to: (IpAddr, Option<u16>),
    /// The protocol.
    #[arg(long, value_enum, default_value_t = Proto::Tcp)]
    proto: Proto,
    /// The packet's source address: rules that test the source are then decided instead of
    /// reported as conditions.
    #[arg(long, value_name = "IP")]
    from: Option<IpAddr>,
    /// The packet is sent by a process on the node (OUTPUT) instead of arriving from the
    /// network (PREROUTING).
    #[arg(long)]
    local: bool,
    /// The destination is one of the node's own addresses (a NodePort):
    /// `--dst-type LOCAL` and `fib daddr type local` match it.
    #[arg(long)]
    node_local: bool,
    /// The node's own addresses: a destination among them is local (as is one the
    /// ruleset's NodePort rules name, with kube-proxy's `--nodeport-addresses`).
    #[arg(long, value_name = "IP", num_args = 1.., value_delimiter = ',')]
    node_ip: Vec<IpAddr>,
    /// Draw N new connections with a seeded generator and print the observed shares.
    #[arg(long, value_name = "N")]
    simulate: Option<u64>,
    /// The generator's seed for `--simulate`.
    #[arg(long, value_name = "SEED", default_value_t = 1)]
    seed: u64,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = super::output::Output::Text)]
    output: super::output::Output,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Proto {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// SCTP.
    Sctp,
    /// ICMP (a ping): no port.
    Icmp,
}

/// `IP:PORT`, `[IPv6]:PORT`, or an address alone.
fn parse_to(text: &str) -> Result<(IpAddr, Option<u16>), String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok((addr.ip(), Some(addr.port())));
    }
    let bare = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    bare.parse::<IpAddr>()
        .map(|ip| (ip, None))
        .map_err(|_| format!("expected IP:PORT (or [IPv6]:PORT), found {text:?}"))
}

/// Arguments of `proxy render`.
#[derive(Debug, Args)]
struct RenderArgs {
    /// `iptables`: `iptables-save` output; `nftables`: `nft list table ip kube-proxy` output.
    #[arg(long, value_enum)]
    mode: Mode,
    /// Objects files (`kubectl get svc,pods,endpointslices -o json` output); without them,
    /// the live cluster's objects.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    objects: Vec<PathBuf>,
    #[command(flatten)]
    cluster: super::cluster::ClusterArgs,
    /// The cluster's pod CIDR (kube-proxy's `--cluster-cidr`): sources outside it are
    /// masqueraded. Both families may be given, comma-separated.
    #[arg(long, value_name = "CIDR", value_delimiter = ',', required = true, value_parser = crate::config::parse_cidr)]
    cluster_cidr: Vec<IpNet>,
    /// The node the rules are for: its endpoints are the local ones (externalTrafficPolicy
    /// and internalTrafficPolicy Local).
    #[arg(long, value_name = "NODE")]
    node: Option<String>,
    /// Name the chains exactly as kube-proxy does (base32 of SHA-256), instead of the hex
    /// names clusterdns uses by default.
    #[arg(long)]
    kube_proxy_names: bool,
    /// iptables: the node's kernel has nfacct, so kube-proxy (1.29+) adds its counters: `-m
    /// nfacct --nfacct-name ct_state_invalid_dropped_pkts` on KUBE-FORWARD's INVALID drop,
    /// and a `-d 127.0.0.0/8` rule per NodePort (`localhost_nps_accepted_pkts`).
    #[arg(long)]
    nfacct: bool,
    /// Where the EndpointSlices come from.
    #[arg(long, value_enum, default_value_t = Slices::Input)]
    slices: Slices,
    /// The IP family (kube-proxy runs one proxier per family).
    #[arg(long, value_enum, default_value_t = Family::Ipv4)]
    family: Family,
    /// nftables: `list` prints the table as `nft list table` does; `transaction` as the
    /// `nft -f` input kube-proxy writes.
    #[arg(long, value_enum, default_value_t = NftFormat::List)]
    nft_format: NftFormat,
    /// nftables: the shape of kube-proxy's table, which changed in kube-proxy 1.36.
    #[arg(long, value_enum, default_value_t = NftLayoutArg::DnatMaps)]
    nft_layout: NftLayoutArg,
    /// The node's addresses that accept NodePorts (kube-proxy's `--nodeport-addresses`; the
    /// nftables mode's default is `primary`, the node's own address); without it, every
    /// local address does.
    #[arg(long, value_name = "IP", value_delimiter = ',')]
    node_ip: Vec<IpAddr>,
    /// nftables: the Service CIDRs; traffic to an unallocated ClusterIP in them is dropped.
    #[arg(long, value_name = "CIDR", value_delimiter = ',', value_parser = crate::config::parse_cidr)]
    service_cidr: Vec<IpNet>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum NftLayoutArg {
    /// kube-proxy 1.36 and later: each Service chain DNATs itself (`dnat ip to numgen random
    /// mod N map { ... }`), endpoint chains only for ClientIP affinity, hairpin connections
    /// masqueraded through the `hairpin-connections` set.
    DnatMaps,
    /// kube-proxy 1.29 to 1.35: a chain per endpoint (`numgen random mod N vmap { ... }` to
    /// them), and a `mark-for-masquerade` chain.
    EndpointChains,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum NftFormat {
    /// `nft list table ip kube-proxy` output.
    List,
    /// An `nft -f` transaction.
    Transaction,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    /// iptables, as `iptables-save` prints it.
    Iptables,
    /// nftables, as `nft list table ip kube-proxy` prints it.
    Nftables,
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
        ProxyCommand::Trace(args) => run_trace(args),
    }
}

fn run_trace(args: &TraceArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.ruleset)
        .with_context(|| format!("{}", args.ruleset.display()))?;
    let ruleset = ruleset::parse(&text).map_err(|error| {
        anyhow::anyhow!(
            "{}:{}: {}",
            args.ruleset.display(),
            error.line,
            error.message
        )
    })?;
    let (to, port) = args.to;
    let icmp = matches!(args.proto, Proto::Icmp);
    let port = match (port, icmp) {
        (Some(_), true) => {
            anyhow::bail!("--to {to}: an ICMP packet has no port (give the address alone)")
        }
        (None, false) => {
            anyhow::bail!("--to {to}: expected IP:PORT (an address alone is for --proto icmp)")
        }
        (port, _) => port.unwrap_or(0),
    };
    for ip in &args.node_ip {
        if IpFamily::of(*ip) != IpFamily::of(to) {
            anyhow::bail!("--node-ip {ip} and --to {to} are of different families");
        }
    }
    let options = TraceOptions {
        to,
        port,
        protocol: match args.proto {
            Proto::Tcp | Proto::Icmp => Protocol::Tcp,
            Proto::Udp => Protocol::Udp,
            Proto::Sctp => Protocol::Sctp,
        },
        from: args.from,
        local: args.local,
        node_local: args.node_local,
        node_ips: args.node_ip.clone(),
        icmp,
    };
    if let Some(from) = args.from
        && IpFamily::of(from) != IpFamily::of(options.to)
    {
        anyhow::bail!("--from {from} and --to {to} are of different families");
    }
    let report = trace::trace(&ruleset, &options);
    let simulation = args
        .simulate
        .map(|n| trace::simulate(&ruleset, &options, n, args.seed));
    match args.output.data() {
        None => out!("{}", trace::report_text(&report, simulation.as_ref())),
        Some(data) => {
            let mut json = serde_json::to_value(&report)?;
            if let (Some(simulation), Some(object)) = (&simulation, json.as_object_mut()) {
                object.insert("simulation".to_owned(), serde_json::to_value(simulation)?);
            }
            out!("{}", data.render(&json)?);
        }
    }
    Ok(if report.verdict == TraceVerdict::Dnat {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
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
    let objects = super::cluster::Objects::read(&args.objects, &args.cluster, |_| {
        super::cluster::service_kinds(None)
    })?;
    let loaded = super::read_objects_flag(&objects.paths)?;
    let cluster = with_slices(&loaded.cluster, SliceSource::from(args.slices));
    super::warn_unknown_node(&cluster, args.node.as_deref());
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
        Mode::Iptables => iptables::render_with(
            &plan,
            names,
            &iptables::IptablesOptions {
                node_ips: args.node_ip.clone(),
                nfacct: args.nfacct,
            },
        ),
        Mode::Nftables => {
            let options = NftOptions {
                node_ips: args.node_ip.clone(),
                service_cidrs: args.service_cidr.clone(),
            };
            let layout = match args.nft_layout {
                NftLayoutArg::DnatMaps => nftables::NftLayout::DnatMaps,
                NftLayoutArg::EndpointChains => nftables::NftLayout::EndpointChains,
            };
            match args.nft_format {
                NftFormat::List => nftables::render_list_as(&plan, names, &options, layout),
                NftFormat::Transaction => {
                    nftables::render_transaction_as(&plan, names, &options, layout)
                }
            }
        }
    };
    out!("{text}");
    Ok(ExitCode::SUCCESS)
}
