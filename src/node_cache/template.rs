//! node-cache's Corefile from its template (`-basecorefile`, the node-local-dns ConfigMap's
//! `Corefile`), as kubernetes/dns `cmd/node-cache/app/configmap.go` (`updateCorefile`) makes
//! it:
//!
//! - `__PILLAR__CLUSTER__DNS__`: the `-upstreamsvc` Service's ClusterIP;
//! - `__PILLAR__UPSTREAM__SERVERS__`: `/etc/resolv.conf` (the *forward* plugin reads its
//!   nameservers), or the ConfigMap's `upstreamNameservers` — and then the template's
//!   `forward . __PILLAR__UPSTREAM__SERVERS__ { force_tcp }` block, written exactly as
//!   node-cache writes it, becomes a plain (UDP) `forward`;
//! - `__PILLAR__LOCAL__DNS__`: the `-localip` addresses, space-separated;
//! - `__PILLAR__DNS__SERVER__`: nothing (the ClusterIP is already among the local
//!   addresses in the transparent set-up);
//! - one server block per stub domain appended, with node-cache's text (cache 30, bind to the
//!   local addresses, forward to the domain's nameservers), in domain order (node-cache's is
//!   Go's map order, which varies from run to run).
//!
//! Unlike node-cache, a `__PILLAR__` left over (`__PILLAR__DNS__DOMAIN__` is the installer's to
//! fill) is an error naming it, and so is a template using `__PILLAR__CLUSTER__DNS__` without
//! the Service's address: node-cache writes `<nil>` there and CoreDNS then refuses the file.

use std::fmt::Write as _;
use std::net::IpAddr;

use super::error::Error;
use super::kube_dns_config::KubeDnsConfig;

pub const UPSTREAM_SERVERS: &str = "__PILLAR__UPSTREAM__SERVERS__";
pub const CLUSTER_DNS: &str = "__PILLAR__CLUSTER__DNS__";
pub const LOCAL_DNS: &str = "__PILLAR__LOCAL__DNS__";
pub const DNS_SERVER: &str = "__PILLAR__DNS__SERVER__";

/// The upstream when the ConfigMap names none: *forward* reads the node's resolv.conf.
const RESOLV_CONF: &str = "/etc/resolv.conf";
/// The stub domains' cache TTL.
const STUB_TTL: u32 = 30;

/// node-cache's TCP upstream block, which custom upstreams turn into [`UPSTREAM_UDP`].
const UPSTREAM_TCP: &str = "
    forward . __PILLAR__UPSTREAM__SERVERS__ {
            force_tcp
    }
";
const UPSTREAM_UDP: &str = "
    forward . __PILLAR__UPSTREAM__SERVERS__
";

/// What the template is filled with.
#[derive(Clone, Debug)]
pub struct Pillars<'a> {
    /// The `-localip` addresses, in the flag's order.
    pub local_ips: &'a [IpAddr],
    /// The DNS port (`-dns.port`), for the stub domains' blocks.
    pub port: u16,
    /// The `-upstreamsvc` Service's ClusterIP, or why there is none.
    pub cluster_dns: Result<IpAddr, &'a str>,
    pub kube_dns: &'a KubeDnsConfig,
}

/// The Corefile from `template` (read from `source`, for errors).
pub fn fill(template: &str, source: &str, pillars: &Pillars<'_>) -> Result<String, Error> {
    let mut text = template.to_owned();
    let upstreams = pillars.kube_dns.upstream_nameservers.join(" ");
    if upstreams.is_empty() {
        text = text.replace(UPSTREAM_SERVERS, RESOLV_CONF);
    } else {
        let udp = UPSTREAM_UDP.replace(UPSTREAM_SERVERS, &upstreams);
        text = text.replace(UPSTREAM_TCP, &udp);
        text = text.replace(UPSTREAM_SERVERS, &upstreams);
    }
    if text.contains(CLUSTER_DNS) {
        match pillars.cluster_dns {
            Ok(ip) => text = text.replace(CLUSTER_DNS, &ip.to_string()),
            Err(why) => {
                return Err(Error::new(format!(
                    "{source}: the template forwards to {CLUSTER_DNS}, and {why}"
                )));
            }
        }
    }
    let local = pillars
        .local_ips
        .iter()
        .map(IpAddr::to_string)
        .collect::<Vec<_>>()
        .join(" ");
    text = text.replace(LOCAL_DNS, &local);
    text = text.replace(DNS_SERVER, "");
    if let Some(at) = text.find("__PILLAR__") {
        let name: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let line = text[..at].matches('\n').count() + 1;
        return Err(Error::new(format!(
            "{source}:{line}: {name} is not a variable node-cache fills (it fills \
             {CLUSTER_DNS}, {UPSTREAM_SERVERS}, {LOCAL_DNS} and {DNS_SERVER}; the installer \
             replaces the others, e.g. __PILLAR__DNS__DOMAIN__ with cluster.local)"
        )));
    }
    for (domain, servers) in &pillars.kube_dns.stub_domains {
        let _ = write!(
            text,
            "\n{domain}:{port} {{\n    errors\n    cache {STUB_TTL}\n    bind {local}\n    \
             forward . {servers}\n}}\n",
            port = pillars.port,
            servers = servers.join(" ")
        );
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// node-cache's own test template (cache_app_test.go).
    const TEMPLATE: &str = "
cluster.local:53 {
    errors
    cache {
            success 9984 30
            denial 9984 5
    }
    reload
    loop
    bind __PILLAR__LOCAL__DNS__
    forward . __PILLAR__CLUSTER__DNS__ {
            force_tcp
    }
    prometheus :9253
    }
.:53 {
    errors
    cache 30
    reload
    loop
    bind __PILLAR__LOCAL__DNS__ __PILLAR__DNS__SERVER__
    forward . __PILLAR__UPSTREAM__SERVERS__ {
            force_tcp
    }
    prometheus :9253
    }
";

    fn ips() -> Vec<IpAddr> {
        vec![
            "169.254.20.10".parse().unwrap(),
            "10.0.0.10".parse().unwrap(),
        ]
    }

    #[test]
    fn fills_as_node_caches_own_test_expects() {
        let kube_dns = KubeDnsConfig::default();
        let ips = ips();
        let pillars = Pillars {
            local_ips: &ips,
            port: 53,
            cluster_dns: Ok("9.10.11.12".parse().unwrap()),
            kube_dns: &kube_dns,
        };
        let out = fill(TEMPLATE, "base", &pillars).unwrap();
        let expected = TEMPLATE
            .replace(LOCAL_DNS, "169.254.20.10 10.0.0.10")
            .replace(CLUSTER_DNS, "9.10.11.12")
            .replace(UPSTREAM_SERVERS, "/etc/resolv.conf")
            .replace(DNS_SERVER, "");
        assert_eq!(out, expected);
    }

    #[test]
    fn custom_upstreams_use_udp_and_stub_domains_get_blocks() {
        let mut kube_dns = KubeDnsConfig {
            upstream_nameservers: vec!["8.8.8.8".into(), "1.1.1.1:53".into()],
            ..KubeDnsConfig::default()
        };
        kube_dns
            .stub_domains
            .insert("acme.local".into(), vec!["1.2.3.4".into()]);
        let ips = ips();
        let pillars = Pillars {
            local_ips: &ips,
            port: 53,
            cluster_dns: Ok("9.10.11.12".parse().unwrap()),
            kube_dns: &kube_dns,
        };
        let out = fill(TEMPLATE, "base", &pillars).unwrap();
        assert!(out.contains(
            "bind 169.254.20.10 10.0.0.10 \n    forward . 8.8.8.8 1.1.1.1:53\n    prometheus"
        ));
        assert!(out.ends_with(
            "    }\n\nacme.local:53 {\n    errors\n    cache 30\n    bind 169.254.20.10 \
             10.0.0.10\n    forward . 1.2.3.4\n}\n"
        ));
    }

    #[test]
    fn missing_cluster_dns_and_unknown_pillars_are_errors() {
        let kube_dns = KubeDnsConfig::default();
        let ips = ips();
        let mut pillars = Pillars {
            local_ips: &ips,
            port: 53,
            cluster_dns: Err("$KUBE_DNS_SERVICE_HOST is not set"),
            kube_dns: &kube_dns,
        };
        let error = fill(TEMPLATE, "base", &pillars).unwrap_err().0;
        assert_eq!(
            error,
            "base: the template forwards to __PILLAR__CLUSTER__DNS__, and \
             $KUBE_DNS_SERVICE_HOST is not set"
        );
        // Without the variable in the template the address is not needed.
        assert!(fill(".:53 {\n}\n", "base", &pillars).is_ok());
        pillars.cluster_dns = Ok("10.96.0.10".parse().unwrap());
        let error = fill("x\n__PILLAR__DNS__DOMAIN__:53 {\n}\n", "base", &pillars)
            .unwrap_err()
            .0;
        assert!(
            error.starts_with("base:2: __PILLAR__DNS__DOMAIN__ is not a variable"),
            "{error}"
        );
    }
}
