//! The resolv.conf the kubelet writes for a pod (`pkg/kubelet/network/dns/dns.go`,
//! `GetPodDNS`), as containerd lays it out: a `search` line, one `nameserver` line per
//! server, an `options` line.
//!
//! The rules, from the kubelet's source:
//!
//! - **The node's file** (`--resolv-conf`, default `/etc/resolv.conf`) is read with the
//!   kubelet's own parser, not a libc's: a line is a comment only when it starts with `#`
//!   (after blanks); `nameserver` lines add up (the second word, unchecked); the last `search`
//!   line wins, each domain's trailing dot trimmed; the last `options` line wins; `domain`
//!   lines are ignored; a `nameserver` line without an address is an error (the pod is not
//!   created).
//! - **dnsPolicy** `ClusterFirst` (the default) and `ClusterFirstWithHostNet`: nameservers =
//!   the kubelet's `--cluster-dns` addresses only; search = `<ns>.svc.<domain>`,
//!   `svc.<domain>`, `<domain>`, then the node's search domains, duplicates dropped; options =
//!   `ndots:5` only (the node's options are dropped). Without a cluster domain the search list
//!   is the node's; without `--cluster-dns` the pod falls back to `Default` (with a warning).
//!   `ClusterFirst` on a `hostNetwork` pod *is* `Default`; `ClusterFirstWithHostNet` is what
//!   such a pod needs to use the cluster DNS.
//! - `Default`: the node's nameservers, search and options as they are. When the kubelet runs
//!   with `--resolv-conf=""`, `nameserver 127.0.0.1` and `search .` instead.
//! - `None`: nothing but `dnsConfig`.
//! - **dnsConfig** is appended: nameservers and searches after the policy's (duplicates
//!   dropped), options merged by name, the pod's value winning. (The kubelet merges options
//!   through a Go map, so their order is unspecified; here the policy's come first, in order,
//!   then the pod's new ones. No resolver cares about the order of distinct options.)
//! - **Limits** (applied last, with a warning as the kubelet's `DNSConfigForming` event):
//!   at most 3 nameservers; at most 32 search domains, each at most 253 characters, the line
//!   at most 2048 characters (domains cut from the end). These are the limits since
//!   Kubernetes 1.28 (`ExpandedDNSConfig`); before, 6 domains and 256 characters.
//! - The API server's validation of `dnsConfig` applies first: at most 3 nameservers, each an
//!   IP address; at most 32 searches and 2048 characters; each search a DNS subdomain (a
//!   trailing dot allowed; `_` and a lone `.` allowed, as with `RelaxedDNSSearchValidation`,
//!   on by default since 1.33); every option named; `None` needs at least one nameserver.

use std::fmt::Write as _;
use std::net::IpAddr;

use serde::Deserialize;

/// At most this many nameservers (glibc's `MAXNS`).
pub const MAX_NAMESERVERS: usize = 3;
/// At most this many search domains.
pub const MAX_SEARCH_PATHS: usize = 32;
/// At most this many characters in the search line (domains joined by spaces).
pub const MAX_SEARCH_CHARS: usize = 2048;
/// The longest search domain kept (a DNS-1123 subdomain).
pub const MAX_SEARCH_DOMAIN: usize = 253;

/// A pod's `dnsPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum DnsPolicy {
    /// Cluster DNS, unless the pod is on the host network (then `Default`).
    #[value(name = "ClusterFirst")]
    ClusterFirst,
    /// Cluster DNS, on the host network too.
    #[value(name = "ClusterFirstWithHostNet")]
    ClusterFirstWithHostNet,
    /// The node's resolv.conf.
    #[value(name = "Default")]
    Default,
    /// Only `dnsConfig`.
    #[value(name = "None")]
    None,
}

/// The node's resolv.conf as the kubelet reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostDns {
    /// `nameserver` words, as written.
    pub nameservers: Vec<String>,
    /// The last `search` line, trailing dots trimmed.
    pub searches: Vec<String>,
    /// The last `options` line's words.
    pub options: Vec<String>,
}

/// What the kubelet knows: its flags.
#[derive(Debug, Clone)]
pub struct Kubelet {
    /// `--cluster-dns`.
    pub cluster_dns: Vec<IpAddr>,
    /// `--cluster-domain` (empty: none).
    pub cluster_domain: String,
    /// `--resolv-conf`: the node's file, parsed; `None` for `--resolv-conf=""`.
    pub host: Option<HostDns>,
}

/// The pod's fields the kubelet reads.
#[derive(Debug, Clone)]
pub struct PodDnsSpec {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `spec.dnsPolicy`.
    pub policy: DnsPolicy,
    /// `spec.hostNetwork`.
    pub host_network: bool,
    /// `spec.dnsConfig`.
    pub dns_config: Option<DnsConfig>,
}

/// `spec.dnsConfig`, in the API's JSON shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DnsConfig {
    /// `nameservers`.
    #[serde(default)]
    pub nameservers: Vec<String>,
    /// `searches`.
    #[serde(default)]
    pub searches: Vec<String>,
    /// `options`.
    #[serde(default)]
    pub options: Vec<DnsConfigOption>,
}

/// One of `dnsConfig.options`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DnsConfigOption {
    /// `name` (required by the API server).
    #[serde(default)]
    pub name: String,
    /// `value`; `None` for a bare option such as `single-request`.
    pub value: Option<String>,
}

/// The pod's resolver configuration, and the kubelet's warnings on the way.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PodDns {
    /// `nameserver` lines.
    pub nameservers: Vec<String>,
    /// The `search` line.
    pub searches: Vec<String>,
    /// The `options` line.
    pub options: Vec<String>,
    /// What the kubelet would report as events (limits exceeded, missing cluster DNS).
    pub warnings: Vec<String>,
}

impl PodDns {
    /// The file as containerd writes it.
    pub fn resolv_conf(&self) -> String {
        let mut out = String::new();
        if !self.searches.is_empty() {
            let _ = writeln!(out, "search {}", self.searches.join(" "));
        }
        for server in &self.nameservers {
            let _ = writeln!(out, "nameserver {server}");
        }
        if !self.options.is_empty() {
            let _ = writeln!(out, "options {}", self.options.join(" "));
        }
        out
    }
}

/// Why a pod's DNS cannot be formed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeletDnsError {
    /// The API server would reject the pod's `dnsConfig`.
    #[error("the API server would reject this pod: {}", .0.join("; "))]
    Invalid(Vec<String>),
    /// The node's file has a line the kubelet refuses.
    #[error("line {line}: {message}")]
    HostFile {
        /// The line (1-based).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Parses the node's resolv.conf as the kubelet does (see the module documentation).
pub fn parse_host_resolv_conf(text: &str) -> Result<HostDns, KubeletDnsError> {
    let mut host = HostDns::default();
    for (index, raw) in text.split('\n').enumerate() {
        let trimmed = raw.trim();
        if trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = trimmed.split_whitespace().collect();
        match fields.first() {
            Some(&"nameserver") => match fields.get(1) {
                Some(server) => host.nameservers.push((*server).to_owned()),
                None => {
                    return Err(KubeletDnsError::HostFile {
                        line: index + 1,
                        message: "nameserver list is empty (the kubelet refuses the file)".into(),
                    });
                }
            },
            Some(&"search") => {
                host.searches = fields[1..]
                    .iter()
                    .map(|domain| domain.strip_suffix('.').unwrap_or(domain).to_owned())
                    .collect();
            }
            Some(&"options") => host.options = fields[1..].iter().map(|&o| o.to_owned()).collect(),
            _ => {}
        }
    }
    Ok(host)
}

/// The resolver configuration the kubelet gives `pod`.
pub fn pod_dns(kubelet: &Kubelet, pod: &PodDnsSpec) -> Result<PodDns, KubeletDnsError> {
    validate(pod)?;
    let host = kubelet.host.clone().unwrap_or_default();
    let mut dns = PodDns {
        nameservers: host.nameservers,
        searches: host.searches,
        options: host.options,
        warnings: Vec::new(),
    };
    let cluster = match pod.policy {
        DnsPolicy::None => {
            dns = PodDns::default();
            None
        }
        DnsPolicy::ClusterFirstWithHostNet => Some(true),
        DnsPolicy::ClusterFirst => Some(!pod.host_network),
        DnsPolicy::Default => Some(false),
    };
    if let Some(cluster) = cluster {
        let mut host_policy = !cluster;
        if cluster {
            if kubelet.cluster_dns.is_empty() {
                dns.warnings.push(
                    "kubelet does not have ClusterDNS IP configured and cannot create Pod using \
                     \"ClusterFirst\" policy. Falling back to \"Default\" policy."
                        .to_owned(),
                );
                host_policy = true;
            } else {
                dns.nameservers = kubelet.cluster_dns.iter().map(IpAddr::to_string).collect();
                dns.searches =
                    cluster_searches(&kubelet.cluster_domain, &pod.namespace, dns.searches);
                dns.options = vec!["ndots:5".to_owned()];
            }
        }
        if host_policy && kubelet.host.is_none() {
            dns.nameservers = vec!["127.0.0.1".to_owned()];
            dns.searches = vec![".".to_owned()];
        }
    }
    if let Some(config) = &pod.dns_config {
        dns.nameservers = without_duplicates(
            dns.nameservers
                .into_iter()
                .chain(config.nameservers.iter().cloned()),
        );
        dns.searches = without_duplicates(
            dns.searches
                .into_iter()
                .chain(config.searches.iter().cloned()),
        );
        dns.options = merge_options(&dns.options, &config.options);
    }
    fit_limits(&mut dns);
    Ok(dns)
}

/// `<ns>.svc.<domain> svc.<domain> <domain>`, then the node's, duplicates dropped.
fn cluster_searches(domain: &str, namespace: &str, host: Vec<String>) -> Vec<String> {
    if domain.is_empty() {
        return host;
    }
    let cluster = [
        format!("{namespace}.svc.{domain}"),
        format!("svc.{domain}"),
        domain.to_owned(),
    ];
    without_duplicates(cluster.into_iter().chain(host))
}

fn without_duplicates(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The policy's options, then the pod's, merged by name (`ndots:5` and `ndots` with value 2
/// make `ndots:2`).
fn merge_options(existing: &[String], pod: &[DnsConfigOption]) -> Vec<String> {
    let mut merged: Vec<(String, String)> = Vec::new();
    let mut set = |name: &str, value: &str| match merged.iter_mut().find(|(n, _)| n == name) {
        Some(entry) => entry.1 = value.to_owned(),
        None => merged.push((name.to_owned(), value.to_owned())),
    };
    for option in existing {
        match option.split_once(':') {
            Some((name, value)) => set(name, value),
            None => set(option, ""),
        }
    }
    for option in pod {
        set(&option.name, option.value.as_deref().unwrap_or(""));
    }
    merged
        .into_iter()
        .map(|(name, value)| {
            if value.is_empty() {
                name
            } else {
                format!("{name}:{value}")
            }
        })
        .collect()
}

/// The kubelet's `formDNSConfigFitsLimits`.
fn fit_limits(dns: &mut PodDns) {
    if dns.nameservers.len() > MAX_NAMESERVERS {
        dns.nameservers.truncate(MAX_NAMESERVERS);
        dns.warnings.push(format!(
            "Nameserver limits were exceeded, some nameservers have been omitted, the applied \
             nameserver line is: {}",
            dns.nameservers.join(" ")
        ));
    }
    let mut exceeded = false;
    if dns.searches.len() > MAX_SEARCH_PATHS {
        dns.searches.truncate(MAX_SEARCH_PATHS);
        exceeded = true;
    }
    let before = dns.searches.len();
    dns.searches
        .retain(|domain| domain.len() <= MAX_SEARCH_DOMAIN);
    exceeded |= dns.searches.len() != before;
    let total = dns.searches.join(" ").len();
    if total > MAX_SEARCH_CHARS {
        let mut cut = 0;
        let mut keep = dns.searches.len();
        while keep > 0 {
            cut += dns.searches[keep - 1].len() + 1;
            keep -= 1;
            if total - cut.min(total) <= MAX_SEARCH_CHARS {
                break;
            }
        }
        dns.searches.truncate(keep);
        exceeded = true;
    }
    if exceeded {
        dns.warnings.push(format!(
            "Search Line limits were exceeded, some search paths have been omitted, the applied \
             search line is: {}",
            dns.searches.join(" ")
        ));
    }
}

/// The API server's validation of the pod's `dnsPolicy` and `dnsConfig`.
fn validate(pod: &PodDnsSpec) -> Result<(), KubeletDnsError> {
    let mut errors = Vec::new();
    if pod.policy == DnsPolicy::None {
        match &pod.dns_config {
            None => errors.push(
                "spec.dnsConfig: must provide `dnsConfig` when `dnsPolicy` is None".to_owned(),
            ),
            Some(config) if config.nameservers.is_empty() => errors.push(
                "spec.dnsConfig.nameservers: must provide at least one DNS nameserver when \
                 `dnsPolicy` is None"
                    .to_owned(),
            ),
            Some(_) => {}
        }
    }
    if let Some(config) = &pod.dns_config {
        if config.nameservers.len() > MAX_NAMESERVERS {
            errors.push(format!(
                "spec.dnsConfig.nameservers: must not have more than {MAX_NAMESERVERS} nameservers"
            ));
        }
        for (index, server) in config.nameservers.iter().enumerate() {
            if server.parse::<IpAddr>().is_err() {
                errors.push(format!(
                    "spec.dnsConfig.nameservers[{index}]: '{server}' must be a valid IP address"
                ));
            }
        }
        if config.searches.len() > MAX_SEARCH_PATHS {
            errors.push(format!(
                "spec.dnsConfig.searches: must not have more than {MAX_SEARCH_PATHS} search paths"
            ));
        }
        if config.searches.join(" ").len() > MAX_SEARCH_CHARS {
            errors.push(format!(
                "spec.dnsConfig.searches: must not have more than {MAX_SEARCH_CHARS} characters \
                 (including spaces) in the search list"
            ));
        }
        for (index, search) in config.searches.iter().enumerate() {
            if let Err(why) = check_search_domain(search) {
                errors.push(format!(
                    "spec.dnsConfig.searches[{index}]: '{search}' {why}"
                ));
            }
        }
        for (index, option) in config.options.iter().enumerate() {
            if option.name.is_empty() {
                errors.push(format!(
                    "spec.dnsConfig.options[{index}].name: must not be empty"
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(KubeletDnsError::Invalid(errors))
    }
}

/// A search domain as the API server accepts it: a DNS subdomain (lower-case letters,
/// digits, `-`, `_`; labels joined by dots, each starting and ending with a letter or digit
/// or `_`), at most 253 characters, a trailing dot allowed; or a lone `.`.
fn check_search_domain(search: &str) -> Result<(), String> {
    if search == "." {
        return Ok(());
    }
    let name = search.strip_suffix('.').unwrap_or(search);
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > MAX_SEARCH_DOMAIN {
        return Err(format!(
            "must be no more than {MAX_SEARCH_DOMAIN} characters"
        ));
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        let inner =
            |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-' || *b == b'_';
        let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_';
        !bytes.is_empty()
            && bytes.len() <= 63
            && bytes.iter().all(inner)
            && bytes.first().is_some_and(edge)
            && bytes.last().is_some_and(edge)
    };
    if name.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(
            "must be a DNS subdomain: lower-case letters, digits, '-' and '_', in dot-separated \
             labels that start and end with a letter or digit"
                .into(),
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn kubelet(host: &str) -> Kubelet {
        Kubelet {
            cluster_dns: vec!["10.96.0.10".parse().unwrap()],
            cluster_domain: "cluster.local".into(),
            host: Some(parse_host_resolv_conf(host).unwrap()),
        }
    }

    fn pod(policy: DnsPolicy, host_network: bool, config: Option<&str>) -> PodDnsSpec {
        PodDnsSpec {
            namespace: "shop".into(),
            policy,
            host_network,
            dns_config: config.map(|json| serde_json::from_str(json).unwrap()),
        }
    }

    const NODE: &str = "# node\nnameserver 172.18.0.1\nnameserver 8.8.8.8\nsearch us-east-1.compute.internal. example.com\noptions edns0 ndots:1\n";

    #[test]
    fn table() {
        use DnsPolicy::{ClusterFirst, ClusterFirstWithHostNet, Default};
        let cases: &[(&str, DnsPolicy, bool, Option<&str>, &str)] = &[
            (
                "ClusterFirst: cluster search first, node search after, ndots:5 only",
                ClusterFirst,
                false,
                None,
                "search shop.svc.cluster.local svc.cluster.local cluster.local us-east-1.compute.internal example.com\nnameserver 10.96.0.10\noptions ndots:5\n",
            ),
            (
                "ClusterFirst on the host network is Default",
                ClusterFirst,
                true,
                None,
                "search us-east-1.compute.internal example.com\nnameserver 172.18.0.1\nnameserver 8.8.8.8\noptions edns0 ndots:1\n",
            ),
            (
                "ClusterFirstWithHostNet uses the cluster DNS",
                ClusterFirstWithHostNet,
                true,
                None,
                "search shop.svc.cluster.local svc.cluster.local cluster.local us-east-1.compute.internal example.com\nnameserver 10.96.0.10\noptions ndots:5\n",
            ),
            (
                "Default: the node's file",
                Default,
                false,
                None,
                "search us-east-1.compute.internal example.com\nnameserver 172.18.0.1\nnameserver 8.8.8.8\noptions edns0 ndots:1\n",
            ),
            (
                "dnsConfig ndots overrides, a new option is appended",
                ClusterFirst,
                false,
                Some(r#"{"options":[{"name":"ndots","value":"2"},{"name":"single-request"}]}"#),
                "search shop.svc.cluster.local svc.cluster.local cluster.local us-east-1.compute.internal example.com\nnameserver 10.96.0.10\noptions ndots:2 single-request\n",
            ),
            (
                "dnsConfig nameservers and searches appended, duplicates dropped",
                ClusterFirst,
                false,
                Some(
                    r#"{"nameservers":["10.96.0.10","1.1.1.1"],"searches":["cluster.local","corp.example"]}"#,
                ),
                "search shop.svc.cluster.local svc.cluster.local cluster.local us-east-1.compute.internal example.com corp.example\nnameserver 10.96.0.10\nnameserver 1.1.1.1\noptions ndots:5\n",
            ),
            (
                "None: only dnsConfig",
                DnsPolicy::None,
                false,
                Some(
                    r#"{"nameservers":["1.1.1.1"],"searches":["a.example"],"options":[{"name":"ndots","value":"1"}]}"#,
                ),
                "search a.example\nnameserver 1.1.1.1\noptions ndots:1\n",
            ),
        ];
        for (what, policy, host_network, config, want) in cases {
            let dns = pod_dns(&kubelet(NODE), &pod(*policy, *host_network, *config)).unwrap();
            assert_eq!(dns.resolv_conf(), *want, "{what}");
            assert!(dns.warnings.is_empty(), "{what}: {:?}", dns.warnings);
        }
    }

    #[test]
    fn kubelet_reads_the_node_file_its_own_way() {
        let host = parse_host_resolv_conf(
            "  # comment\n; not a comment to the kubelet\nsearch a b\ndomain ignored.example\nsearch c.example.\noptions rotate\noptions timeout:1\nnameserver 1.1.1.1 extra\n",
        )
        .unwrap();
        assert_eq!(host.searches, ["c.example"]);
        assert_eq!(host.options, ["timeout:1"]);
        assert_eq!(host.nameservers, ["1.1.1.1"]);
        let error = parse_host_resolv_conf("nameserver 1.1.1.1\nnameserver\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "line 2: nameserver list is empty (the kubelet refuses the file)"
        );
    }

    #[test]
    fn without_a_cluster_domain_or_cluster_dns() {
        let mut k = kubelet(NODE);
        k.cluster_domain = String::new();
        let dns = pod_dns(&k, &pod(DnsPolicy::ClusterFirst, false, None)).unwrap();
        assert_eq!(dns.searches, ["us-east-1.compute.internal", "example.com"]);
        assert_eq!(dns.nameservers, ["10.96.0.10"]);
        let mut k = kubelet(NODE);
        k.cluster_dns.clear();
        let dns = pod_dns(&k, &pod(DnsPolicy::ClusterFirst, false, None)).unwrap();
        assert_eq!(dns.nameservers, ["172.18.0.1", "8.8.8.8"]);
        assert!(dns.warnings[0].contains("Falling back to \"Default\""));
    }

    #[test]
    fn kubelet_without_a_resolv_conf() {
        let mut k = kubelet("");
        k.host = None;
        let dns = pod_dns(&k, &pod(DnsPolicy::Default, false, None)).unwrap();
        assert_eq!(dns.resolv_conf(), "search .\nnameserver 127.0.0.1\n");
        let dns = pod_dns(&k, &pod(DnsPolicy::ClusterFirst, false, None)).unwrap();
        assert_eq!(
            dns.searches,
            [
                "shop.svc.cluster.local",
                "svc.cluster.local",
                "cluster.local"
            ]
        );
    }

    #[test]
    fn limits() {
        // 40 node search domains: the kubelet keeps 32 (3 of them the cluster's).
        let many: Vec<String> = (0..40).map(|i| format!("d{i}.example")).collect();
        let k = kubelet(&format!("nameserver 1.1.1.1\nsearch {}\n", many.join(" ")));
        let dns = pod_dns(&k, &pod(DnsPolicy::ClusterFirst, false, None)).unwrap();
        assert_eq!(dns.searches.len(), MAX_SEARCH_PATHS);
        assert_eq!(dns.searches[31], "d28.example");
        assert!(dns.warnings[0].starts_with("Search Line limits were exceeded"));

        // Long domains: the line is cut from the end to 2048 characters; a domain longer than
        // 253 characters is dropped.
        let label = "a".repeat(61);
        let long = format!("{label}.{label}.{label}.{label}");
        let too_long = format!("{long}.x.example");
        let mut domains = vec![too_long.clone()];
        domains.extend((0..10).map(|i| format!("{long}{i}")));
        let k = kubelet(&format!("search {}\n", domains.join(" ")));
        let dns = pod_dns(&k, &pod(DnsPolicy::ClusterFirst, false, None)).unwrap();
        assert!(!dns.searches.contains(&too_long));
        assert!(dns.searches.join(" ").len() <= MAX_SEARCH_CHARS);
        assert_eq!(dns.searches.len(), 3 + 8);

        // Four nameservers through dnsConfig on top of the node's.
        let k = kubelet("nameserver 1.1.1.1\nnameserver 1.0.0.1\n");
        let dns = pod_dns(
            &k,
            &pod(
                DnsPolicy::Default,
                false,
                Some(r#"{"nameservers":["8.8.8.8","8.8.4.4"]}"#),
            ),
        )
        .unwrap();
        assert_eq!(dns.nameservers, ["1.1.1.1", "1.0.0.1", "8.8.8.8"]);
        assert!(dns.warnings[0].starts_with("Nameserver limits were exceeded"));
    }

    #[test]
    fn api_validation() {
        let cases: &[(DnsPolicy, Option<&str>, &str)] = &[
            (
                DnsPolicy::None,
                None,
                "spec.dnsConfig: must provide `dnsConfig`",
            ),
            (
                DnsPolicy::None,
                Some("{}"),
                "spec.dnsConfig.nameservers: must provide at least one",
            ),
            (
                DnsPolicy::ClusterFirst,
                Some(r#"{"nameservers":["dns.example"]}"#),
                "spec.dnsConfig.nameservers[0]: 'dns.example' must be a valid IP address",
            ),
            (
                DnsPolicy::ClusterFirst,
                Some(r#"{"nameservers":["1.1.1.1","1.1.1.2","1.1.1.3","1.1.1.4"]}"#),
                "must not have more than 3 nameservers",
            ),
            (
                DnsPolicy::ClusterFirst,
                Some(r#"{"searches":["Corp.Example"]}"#),
                "spec.dnsConfig.searches[0]: 'Corp.Example' must be a DNS subdomain",
            ),
            (
                DnsPolicy::ClusterFirst,
                Some(r#"{"searches":["-a.example"]}"#),
                "searches[0]",
            ),
            (
                DnsPolicy::ClusterFirst,
                Some(r#"{"options":[{"value":"2"}]}"#),
                "spec.dnsConfig.options[0].name: must not be empty",
            ),
        ];
        for (policy, config, want) in cases {
            let error = pod_dns(&kubelet(NODE), &pod(*policy, false, *config)).unwrap_err();
            assert!(
                error.to_string().contains(want),
                "{error} should contain {want}"
            );
        }
        let ok = r#"{"searches":["corp.example.","_srv.example","."]}"#;
        let dns = pod_dns(
            &kubelet(NODE),
            &pod(DnsPolicy::ClusterFirst, false, Some(ok)),
        )
        .unwrap();
        assert_eq!(dns.searches[5..], ["corp.example.", "_srv.example", "."]);
    }
}
