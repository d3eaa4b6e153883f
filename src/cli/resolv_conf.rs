//! `clusterdns resolv-conf`: the resolv.conf the kubelet writes for a pod.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use clap_complete::engine::ArgValueCompleter;

use crate::config::read_text_lossy;
use crate::resolver_sim::kubelet::{
    self, DnsConfig, DnsPolicy, Kubelet, PodDns, PodDnsSpec, parse_host_resolv_conf,
};

/// Arguments of `resolv-conf`.
#[derive(Debug, Args)]
pub(super) struct ResolvConfArgs {
    #[command(flatten)]
    pub(super) pod: PodArgs,
}

/// The kubelet's flags and the pod's fields that make its resolv.conf (shared with
/// `resolve-cost`).
#[derive(Debug, Args, Clone)]
pub(super) struct PodArgs {
    /// The pod's namespace.
    #[arg(short = 'n', long, value_name = "NS", add = ArgValueCompleter::new(super::complete::namespaces))]
    pub(super) namespace: Option<String>,
    /// The kubelet's `--cluster-dns` (the kube-dns Service's ClusterIP), one or more.
    #[arg(long, value_name = "IP", num_args = 1.., default_value = "10.96.0.10")]
    pub(super) nameserver: Vec<IpAddr>,
    /// The kubelet's `--cluster-domain` (`''` for none).
    #[arg(long, value_name = "D", default_value = "cluster.local")]
    pub(super) cluster_domain: String,
    /// The node's resolv.conf, as the kubelet's `--resolv-conf` (`''` for
    /// `--resolv-conf=""`); without it the node has no search domains, nameservers or
    /// options.
    #[arg(long, value_name = "F")]
    pub(super) host_resolv_conf: Option<PathBuf>,
    /// The pod's `dnsPolicy`.
    #[arg(long, value_enum, default_value_t = DnsPolicy::ClusterFirst)]
    pub(super) dns_policy: DnsPolicy,
    /// The pod's `dnsConfig`, as JSON (`{"options":[{"name":"ndots","value":"2"}]}`), or
    /// `@FILE`.
    #[arg(long, value_name = "JSON")]
    pub(super) dns_config: Option<String>,
    /// The pod runs on the host network (`hostNetwork: true`).
    #[arg(long)]
    pub(super) host_network: bool,
}

impl PodArgs {
    /// `--namespace`, which every use but `resolve-cost --log` needs.
    pub(super) fn namespace(&self) -> anyhow::Result<&str> {
        self.namespace_or(None)
    }

    /// [`namespace`](Self::namespace), defaulting to `current` (the kubeconfig context's
    /// namespace when the objects are the live cluster's).
    pub(super) fn namespace_or<'a>(&'a self, current: Option<&'a str>) -> anyhow::Result<&'a str> {
        let namespace = self
            .namespace
            .as_deref()
            .or(current)
            .context("--namespace NS is required (the pod's namespace)")?;
        if !crate::config::is_dns_label(namespace) {
            anyhow::bail!(
                "--namespace '{namespace}' is not a namespace name (an RFC 1123 label: at most \
                 63 lower-case letters, digits and '-', starting and ending with a letter or \
                 digit)"
            );
        }
        Ok(namespace)
    }

    /// The pod's resolver configuration, as the kubelet forms it.
    pub(super) fn pod_dns(&self) -> anyhow::Result<PodDns> {
        let host = match &self.host_resolv_conf {
            Some(path) if path.as_os_str().is_empty() => None,
            Some(path) => {
                let text = read_text_lossy(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                Some(
                    parse_host_resolv_conf(&text)
                        .map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?,
                )
            }
            None => Some(kubelet::HostDns::default()),
        };
        let kubelet = Kubelet {
            cluster_dns: self.nameserver.clone(),
            cluster_domain: self.cluster_domain.trim_end_matches('.').to_owned(),
            host,
        };
        let dns_config = self
            .dns_config
            .as_deref()
            .map(parse_dns_config)
            .transpose()?;
        let pod = PodDnsSpec {
            namespace: self.namespace()?.to_owned(),
            policy: self.dns_policy,
            host_network: self.host_network,
            dns_config,
        };
        Ok(kubelet::pod_dns(&kubelet, &pod)?)
    }
}

/// `--dns-config`: JSON text, or `@FILE`; errors name the JSON path.
fn parse_dns_config(text: &str) -> anyhow::Result<DnsConfig> {
    let (source, json) = match text.strip_prefix('@') {
        Some(path) => (
            path.to_owned(),
            std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?,
        ),
        None => ("--dns-config".to_owned(), text.to_owned()),
    };
    let mut deserializer = serde_json::Deserializer::from_str(&json);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(" at {path}")
        };
        anyhow::anyhow!(
            "{source}{at}: {} (expected a PodDNSConfig: {{\"nameservers\": [IP...], \"searches\": \
             [DOMAIN...], \"options\": [{{\"name\": N, \"value\": V}}...]}})",
            error.inner()
        )
    })
}

pub(super) fn run(args: &ResolvConfArgs) -> anyhow::Result<ExitCode> {
    let dns = args.pod.pod_dns()?;
    for warning in &dns.warnings {
        eprintln!("clusterdns: warning: {warning}");
    }
    out!("{}", dns.resolv_conf());
    Ok(ExitCode::SUCCESS)
}
