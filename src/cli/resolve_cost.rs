//! `clusterdns resolve-cost`: what the stub resolver's search walk costs a name, and what
//! each fix saves; or, with `--log`, what it cost the clients in a query log.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::Args;
use hickory_proto::rr::Name;

use super::cluster::{ClusterArgs, Objects, zone_kinds};
use super::output::Output;
use super::resolv_conf::PodArgs;
use crate::config::{KubernetesConfig, PodMode, parse_resolv_conf, read_text_lossy};
use crate::name::WireName;
use crate::resolver_sim::answer::UpstreamMode;
use crate::resolver_sim::report::Setup;
use crate::resolver_sim::stub::{Call, Families, Libc, Qtype, StubConfig};
use crate::source::file::parse_objects;
use crate::zone::{BuildContext, Snapshot, build};

/// Arguments of `resolve-cost`.
#[derive(Debug, Args)]
pub(super) struct ResolveCostArgs {
    /// The names the application looks up, as it writes them.
    #[arg(value_name = "NAME", required_unless_present = "log")]
    names: Vec<String>,
    /// Objects files (`kubectl get ... -o json`) the cluster zone is built from; without
    /// them the live cluster's (of `--kubeconfig`/`--context`, `KUBECONFIG` or
    /// `~/.kube/config`), and with no cluster either, a zone with only the pod's namespace
    /// and no Service.
    #[arg(long, value_name = "F", num_args = 1..)]
    objects: Vec<PathBuf>,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The pod's resolv.conf (instead of the kubelet's, from the options below).
    #[arg(long, value_name = "F", conflicts_with_all = ["host_resolv_conf", "dns_config", "dns_policy", "host_network"])]
    resolv_conf: Option<PathBuf>,
    /// Replace the search list.
    #[arg(long, value_name = "DOMAIN", num_args = 1..)]
    search: Option<Vec<String>>,
    /// Replace `ndots`.
    #[arg(long, value_name = "N")]
    ndots: Option<u32>,
    /// The pod's C library.
    #[arg(long, value_enum, default_value_t = Libc::Glibc)]
    libc: Libc,
    /// The address families asked for: `a,aaaa` (getaddrinfo's default) or `a`.
    #[arg(long, value_name = "LIST", default_value = "a,aaaa", value_parser = parse_families)]
    families: Families,
    /// Look up this record type with `res_search` (SRV, PTR, TXT, MX, CNAME, NS, SOA, CAA):
    /// one query per name, failing with h_errno; glibc walks the search list as for
    /// addresses, musl asks the name as given only. `A` or `AAAA` is getaddrinfo with that
    /// family alone, as `--families a` or `--families aaaa`.
    #[arg(long = "type", value_name = "T", value_parser = parse_qtype, conflicts_with_all = ["families", "log"])]
    qtype: Option<Qtype>,
    /// Where names outside the cluster zone are answered: `assume` (the name as typed
    /// exists, search-expanded names do not, nor does a cluster name written short, such as
    /// `web.shop`) or a server's `IP[:PORT]`.
    #[arg(long, value_name = "assume|ADDR", default_value = "assume", value_parser = parse_upstream)]
    upstream: UpstreamMode,
    /// The server runs autopath (the walk moves to the server).
    #[arg(long)]
    autopath: bool,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// A query log in CoreDNS's `log` format: report per client and per namespace what the
    /// search path cost, and what each fix would have saved (`--objects` maps client
    /// addresses to namespaces; `--search` gives the node's search domains).
    #[arg(long, value_name = "FILE", conflicts_with = "names")]
    log: Option<PathBuf>,
    /// With `--log`: how many names to list per client and namespace.
    #[arg(long, value_name = "N", default_value_t = 10, requires = "log")]
    top: usize,
    #[command(flatten)]
    pod: PodArgs,
}

fn parse_families(text: &str) -> Result<Families, String> {
    let mut list: Vec<String> = text
        .split(',')
        .map(|word| word.trim().to_ascii_lowercase())
        .collect();
    list.sort();
    list.dedup();
    match list.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["a", "aaaa"] => Ok(Families::Both),
        ["a"] => Ok(Families::A),
        ["aaaa"] => Ok(Families::Aaaa),
        _ => Err(format!("'{text}': expected a,aaaa or a or aaaa")),
    }
}

fn parse_qtype(text: &str) -> Result<Qtype, String> {
    Qtype::parse(text).ok_or_else(|| {
        let all: Vec<String> = Qtype::ALL.iter().map(ToString::to_string).collect();
        format!("'{text}': expected one of {}", all.join(", "))
    })
}

fn parse_upstream(text: &str) -> Result<UpstreamMode, String> {
    if text == "assume" {
        return Ok(UpstreamMode::Assume);
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(UpstreamMode::Server(addr));
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(UpstreamMode::Server(SocketAddr::new(ip, 53)));
    }
    Err(format!(
        "'{text}': expected assume, or a server as IP, IP:PORT or [IPV6]:PORT"
    ))
}

/// The zone `resolve-cost` answers from: kubeadm's kubernetes block (`pods insecure`, `ttl
/// 30`, `fallthrough in-addr.arpa ip6.arpa`) over the objects.
pub(super) fn cluster_zone(
    objects: &[PathBuf],
    cluster_domain: &str,
    namespace: Option<&str>,
) -> anyhow::Result<(Snapshot, KubernetesConfig)> {
    let domain = if cluster_domain.is_empty() {
        "cluster.local"
    } else {
        cluster_domain
    };
    let zone = |text: &str| {
        Name::from_ascii(text)
            .map(|name| name.to_lowercase())
            .with_context(|| format!("not a domain name: {text}"))
    };
    let zones = vec![
        zone(&format!("{}.", domain.trim_end_matches('.')))?,
        zone("in-addr.arpa.")?,
        zone("ip6.arpa.")?,
    ];
    let mut config = KubernetesConfig::new(zones.clone(), 0, 0);
    config.pods = PodMode::Insecure;
    config.ttl = 30;
    config.fallthrough = Some(zones[1..].to_vec());
    config.objects = objects.to_vec();
    let cluster = match (objects.is_empty(), namespace) {
        (false, _) => super::read_objects_flag(objects)?.cluster,
        (true, None) => crate::model::Cluster::default(),
        (true, Some(namespace)) => {
            let object = serde_json::json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": namespace},
            });
            parse_objects(&object.to_string(), std::path::Path::new("--namespace"))?.cluster
        }
    };
    Ok((build(&cluster, &config, &BuildContext::default()), config))
}

/// The resolver configuration of the pod: its resolv.conf file, or the kubelet's, with
/// `--search`/`--ndots` on top.
fn stub_config(args: &ResolveCostArgs, pod: &PodArgs) -> anyhow::Result<StubConfig> {
    let text = match &args.resolv_conf {
        Some(path) => {
            read_text_lossy(path).with_context(|| format!("cannot read {}", path.display()))?
        }
        None => {
            let dns = pod.pod_dns()?;
            for warning in &dns.warnings {
                eprintln!("clusterdns: warning: {warning}");
            }
            dns.resolv_conf()
        }
    };
    let mut config = match args.libc {
        Libc::Glibc => {
            let parsed = parse_resolv_conf(&text).map_err(|error| match &args.resolv_conf {
                Some(path) => {
                    anyhow::anyhow!("{}:{}: {}", path.display(), error.line, error.message)
                }
                None => anyhow::anyhow!("the generated resolv.conf: {error}"),
            })?;
            StubConfig::glibc(&parsed)
        }
        Libc::Musl => StubConfig::musl(&text),
    };
    if let Some(search) = &args.search {
        config.search = search.clone();
    }
    if let Some(ndots) = args.ndots {
        let max = crate::config::MAX_NDOTS;
        if ndots > max {
            eprintln!(
                "clusterdns: warning: --ndots {ndots} is more than {max}, the most a resolver \
                 takes: ndots:{max} is used"
            );
        }
        config.ndots = ndots.min(max);
    }
    Ok(config)
}

/// The server's block as the simulation's cluster DNS: its chain, asked with nothing sent
/// upstream.
struct LocalBlock(std::sync::Arc<crate::server::Block>);

impl crate::resolver_sim::answer::LocalServer for LocalBlock {
    fn answer_locally(&self, packet: &[u8]) -> Option<Vec<u8>> {
        match self.0.answer_locally(packet)? {
            crate::server::Local::Reply(bytes) => Some(bytes),
            crate::server::Local::Upstream => None,
        }
    }
}

/// The objects: `--objects`, else the live cluster's when there is one (with `pods`, its
/// pods too), else none.
fn objects(args: &ResolveCostArgs, pods: bool) -> anyhow::Result<Objects> {
    if args.objects.is_empty() && args.cluster.cluster_available() {
        Objects::read(&[], &args.cluster, |_| zone_kinds(pods))
    } else {
        Ok(Objects::files(&args.objects))
    }
}

pub(super) fn run(args: &ResolveCostArgs) -> anyhow::Result<ExitCode> {
    if let Some(log) = &args.log {
        return run_log(args, log);
    }
    let objects = objects(args, false)?;
    let current = objects.live.as_ref().map(|live| live.namespace.as_str());
    let namespace = args.pod.namespace_or(current)?;
    for name in &args.names {
        if name.is_empty() || WireName::from_dotted(name).is_err() {
            bail!("not a domain name: '{name}'");
        }
    }
    // The namespace as given, or the context's.
    let mut pod = args.pod.clone();
    pod.namespace = Some(namespace.to_owned());
    let config = stub_config(args, &pod)?;
    let (snapshot, kubernetes) =
        cluster_zone(&objects.paths, &args.pod.cluster_domain, Some(namespace))?;
    // The cluster DNS as the server runs it: the block's chain over the zone.
    let store = std::sync::Arc::new(crate::store::Store::new(snapshot));
    let snapshot = store.snapshot();
    let block = LocalBlock(std::sync::Arc::new(crate::server::Block::with_kubernetes(
        crate::server::Kubernetes::new(kubernetes.clone(), std::sync::Arc::clone(&store), 0),
    )));
    let setup = Setup {
        libc: args.libc,
        config,
        call: match args.qtype {
            None => Call::Getaddrinfo {
                families: args.families,
            },
            Some(Qtype::A) => Call::Getaddrinfo {
                families: Families::A,
            },
            Some(Qtype::Aaaa) => Call::Getaddrinfo {
                families: Families::Aaaa,
            },
            Some(qtype) => Call::ResSearch { qtype },
        },
        block: &block,
        snapshot: &snapshot,
        upstream: args.upstream,
        autopath: args.autopath,
        cluster_domain: kubernetes
            .zones
            .first()
            .map(|zone| zone.to_ascii())
            .unwrap_or_default(),
        asked: Default::default(),
        send_mode: Default::default(),
    };
    let reports: Vec<_> = args.names.iter().map(|name| setup.report(name)).collect();
    match args.output.data() {
        None => {
            let texts: Vec<String> = reports.iter().map(|r| r.text(namespace)).collect();
            out!("{}", texts.join("\n"));
        }
        Some(data) => {
            #[derive(serde::Serialize)]
            struct Out<'a> {
                namespace: &'a str,
                reports: &'a [crate::resolver_sim::report::Report],
            }
            let out = Out {
                namespace,
                reports: &reports,
            };
            out!("{}", data.render(&out)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `resolve-cost --log FILE`.
fn run_log(args: &ResolveCostArgs, file: &std::path::Path) -> anyhow::Result<ExitCode> {
    use crate::resolver_sim::logs::{LogContext, analyse, parse_log};
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let log = parse_log(&String::from_utf8_lossy(&bytes), file)?;
    let objects = objects(args, true)?;
    let pods = if objects.paths.is_empty() {
        Default::default()
    } else {
        LogContext::pods_of(&super::read_objects_flag(&objects.paths)?.cluster)
    };
    let context = LogContext {
        cluster_domain: args.pod.cluster_domain.clone(),
        node_search: args.search.clone().unwrap_or_default(),
        pods,
    };
    let report = analyse(&log, &context);
    match args.output.data() {
        None => out!("{}", report.text(file, args.top)),
        Some(data) => out!("{}", data.render(&report)?),
    }
    Ok(ExitCode::SUCCESS)
}
