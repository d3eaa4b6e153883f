//! One Service port's chains, sets and elements (`syncProxyRules`' loop body), step by step
//! in the order kube-proxy adds them.

use std::net::IpAddr;

use ipnet::IpNet;

use super::table::{Builder, Element, NftRule, SetDecl, anonymous, mark_rule};
use crate::names::NameScheme;
use crate::plan::{PortPlan, ProxyEndpoint, join_host_port};

/// The chain names of one Service port.
struct PortChains {
    service: String,
    local: String,
    external: String,
    firewall: String,
}

/// One Service port's names and the verdicts it needs where it has no endpoints.
struct Port<'p> {
    port: &'p PortPlan,
    names: NameScheme,
    /// `ip` or `ip6`.
    ip: &'static str,
    protocol: &'static str,
    name: String,
    chains: PortChains,
    /// The loadBalancerSourceRanges firewall chain is in use.
    uses_fw: bool,
    /// kube-proxy 1.36's layout: endpoint chains for ClientIP affinity only.
    dnat_maps: bool,
    /// The `no-endpoint-services` verdict for internal traffic.
    internal_verdict: Option<&'static str>,
    /// The `no-endpoint-services` / `no-endpoint-nodeports` verdict for external traffic.
    external_verdict: Option<&'static str>,
}

/// One Service port's chains, sets and elements (`syncProxyRules`' loop body).
pub(super) fn service_port(
    b: &mut Builder,
    names: NameScheme,
    port: &PortPlan,
    cidr: Option<IpNet>,
) {
    let port = Port::new(b, names, port);
    port.declare_chains(b);
    port.hairpin_elements(b);
    port.cluster_ip(b);
    port.external_ips(b);
    port.load_balancer_ips(b);
    port.node_port(b);
    port.masquerade_off_cluster(b, cidr);
    port.external_chain(b, cidr);
    port.firewall(b);
    port.affinity_sets(b);
    port.endpoint_dispatch(b);
    port.endpoint_chains(b);
}

impl<'p> Port<'p> {
    fn new(b: &Builder, names: NameScheme, port: &'p PortPlan) -> Self {
        let (internal_verdict, external_verdict) = if !port.has_endpoints {
            (Some("goto reject-chain"), Some("goto reject-chain"))
        } else {
            (
                (!port.has_internal_endpoints()).then_some("drop"),
                (!port.has_external_endpoints()).then_some("drop"),
            )
        };
        Self {
            port,
            names,
            ip: b.ip(),
            protocol: port.name.protocol.lower(),
            name: port.name.to_string(),
            chains: PortChains {
                service: names.nft_port("service-", &port.name),
                local: names.nft_port("local-", &port.name),
                external: names.nft_port("external-", &port.name),
                firewall: names.nft_port("firewall-", &port.name),
            },
            uses_fw: !port.load_balancer_ips.is_empty() && !port.source_ranges.is_empty(),
            dnat_maps: b.dnat_maps,
            internal_verdict,
            external_verdict,
        }
    }

    fn endpoint_chain(&self, e: &ProxyEndpoint) -> String {
        self.names
            .nft_endpoint("endpoint-", &self.port.name, e.ip, e.port)
    }

    fn affinity_set(&self, e: &ProxyEndpoint) -> String {
        self.names
            .nft_endpoint("affinity-", &self.port.name, e.ip, e.port)
    }

    fn internal_chain(&self) -> &str {
        if self.port.internal_local {
            &self.chains.local
        } else {
            &self.chains.service
        }
    }

    fn external_policy_chain(&self) -> &str {
        if self.port.external_local {
            &self.chains.local
        } else {
            &self.chains.service
        }
    }

    /// The `service-ips` key of `address`:`number`.
    fn key(&self, address: IpAddr, number: u16) -> String {
        format!("{address} . {} . {number}", self.protocol)
    }

    /// An element sending `key` to `chain`.
    fn goto(key: String, chain: &str) -> Element {
        Element {
            key,
            comment: None,
            value: Some(format!("goto {chain}")),
        }
    }

    /// A `no-endpoint-` element: `key`, named by the port, with `verdict`.
    fn no_endpoint(&self, key: String, verdict: &str) -> Element {
        Element {
            key,
            comment: Some(self.name.clone()),
            value: Some(verdict.to_owned()),
        }
    }

    /// Whether the port has a chain per endpoint: always before kube-proxy 1.36, with ClientIP
    /// affinity only since.
    fn endpoint_chains_used(&self) -> bool {
        !self.dnat_maps || self.port.affinity_timeout.is_some()
    }

    /// The chains, in the order kube-proxy creates them.
    fn declare_chains(&self, b: &mut Builder) {
        let (port, chains) = (self.port, &self.chains);
        if self.endpoint_chains_used() {
            for endpoint in &port.reachable {
                b.chain(&self.endpoint_chain(endpoint));
            }
        }
        if port.uses_cluster_chain() {
            b.chain(&chains.service);
        }
        if port.uses_local_chain() {
            b.chain(&chains.local);
        }
        if port.uses_external_chain() {
            b.chain(&chains.external);
        }
        if self.uses_fw {
            b.chain(&chains.firewall);
        }
    }

    /// kube-proxy 1.36: this node's endpoints in `hairpin-connections`, so that one reaching
    /// itself through the Service is masqueraded.
    fn hairpin_elements(&self, b: &mut Builder) {
        if !self.dnat_maps {
            return;
        }
        for endpoint in self.port.reachable.iter().filter(|e| e.local) {
            let key = format!(
                "{ip} . {ip} . {} . {}",
                self.protocol,
                endpoint.port,
                ip = endpoint.ip
            );
            b.element(
                "hairpin-connections",
                Element {
                    key,
                    comment: None,
                    value: None,
                },
            );
        }
    }

    /// The ClusterIP.
    fn cluster_ip(&self, b: &mut Builder) {
        let port = self.port;
        b.element(
            "cluster-ips",
            Element {
                key: port.cluster_ip.to_string(),
                comment: None,
                value: None,
            },
        );
        if port.has_internal_endpoints() {
            b.element(
                "service-ips",
                Self::goto(self.key(port.cluster_ip, port.port), self.internal_chain()),
            );
        } else if let Some(verdict) = self.internal_verdict {
            b.element(
                "no-endpoint-services",
                self.no_endpoint(self.key(port.cluster_ip, port.port), verdict),
            );
        }
    }

    /// externalIPs.
    fn external_ips(&self, b: &mut Builder) {
        let port = self.port;
        for external in &port.external_ips {
            if port.has_endpoints {
                b.element(
                    "service-ips",
                    Self::goto(self.key(*external, port.port), &self.chains.external),
                );
            }
            if let Some(verdict) = self.external_verdict {
                b.element(
                    "no-endpoint-services",
                    self.no_endpoint(self.key(*external, port.port), verdict),
                );
            }
        }
    }

    /// Load-balancer IPs.
    fn load_balancer_ips(&self, b: &mut Builder) {
        let port = self.port;
        for lb in &port.load_balancer_ips {
            if port.has_endpoints {
                b.element(
                    "service-ips",
                    Self::goto(self.key(*lb, port.port), &self.chains.external),
                );
            }
            if self.uses_fw {
                b.element(
                    "firewall-ips",
                    Self::goto(self.key(*lb, port.port), &self.chains.firewall),
                );
            }
        }
        if let Some(verdict) = self.external_verdict {
            for lb in &port.load_balancer_ips {
                b.element(
                    "no-endpoint-services",
                    self.no_endpoint(self.key(*lb, port.port), verdict),
                );
            }
        }
    }

    /// NodePort.
    fn node_port(&self, b: &mut Builder) {
        let (port, protocol) = (self.port, self.protocol);
        let Some(node_port) = port.node_port else {
            return;
        };
        if port.has_endpoints {
            b.element(
                "service-nodeports",
                Self::goto(format!("{protocol} . {node_port}"), &self.chains.external),
            );
        }
        if let Some(verdict) = self.external_verdict {
            b.element(
                "no-endpoint-nodeports",
                self.no_endpoint(format!("{protocol} . {node_port}"), verdict),
            );
        }
    }

    /// Internal traffic: masquerade off-cluster sources.
    fn masquerade_off_cluster(&self, b: &mut Builder, cidr: Option<IpNet>) {
        let (port, ip) = (self.port, self.ip);
        if !self.dnat_maps
            && port.has_internal_endpoints()
            && let Some(cidr) = cidr
        {
            b.rule(
                self.internal_chain(),
                NftRule::same(format!(
                    "{ip} daddr {} {ip} saddr != {cidr} jump mark-for-masquerade",
                    port.cluster_ip
                )),
            );
        }
    }

    /// External traffic: the `external-` chain.
    fn external_chain(&self, b: &mut Builder, cidr: Option<IpNet>) {
        let (port, ip, chains) = (self.port, self.ip, &self.chains);
        if !port.uses_external_chain() {
            return;
        }
        if !port.external_local {
            let mut rule = mark_rule(b, "");
            if self.dnat_maps {
                rule = rule.comment("masquerade");
            }
            b.rule(&chains.external, rule);
        } else {
            if let Some(cidr) = cidr {
                b.rule(
                    &chains.external,
                    NftRule::same(format!("{ip} saddr {cidr} goto {}", chains.service))
                        .comment("short-circuit pod traffic"),
                );
            }
            let rule = mark_rule(b, "fib saddr type local").comment("masquerade local traffic");
            b.rule(&chains.external, rule);
            b.rule(
                &chains.external,
                NftRule::same(format!("fib saddr type local goto {}", chains.service))
                    .comment("short-circuit local traffic"),
            );
            // The short-circuits go to the Cluster chain even when the port only uses Local
            // policy; create it so the transaction applies.
            b.chain(&chains.service);
        }
        if port.has_external_endpoints() {
            b.rule(
                &chains.external,
                NftRule::same(format!("goto {}", self.external_policy_chain())),
            );
        }
    }

    /// The firewall.
    fn firewall(&self, b: &mut Builder) {
        let ip = self.ip;
        if !self.uses_fw {
            return;
        }
        let sources: Vec<String> = self
            .port
            .source_ranges
            .iter()
            .map(ToString::to_string)
            .collect();
        let (list, input) = anonymous(&sources);
        b.rule(
            &self.chains.firewall,
            NftRule {
                list: format!("{ip} saddr != {list} drop"),
                input: format!("{ip} saddr != {input} drop"),
            },
        );
    }

    /// Affinity sets.
    fn affinity_sets(&self, b: &mut Builder) {
        let Some(timeout) = self.port.affinity_timeout else {
            return;
        };
        for endpoint in &self.port.reachable {
            b.sets.push(SetDecl {
                name: self.affinity_set(endpoint),
                map: false,
                type_text: b.addr_type().to_owned(),
                flags: Some("dynamic,timeout"),
                timeout: Some(timeout),
                comment: None,
                elements: Vec::new(),
                addresses: true,
            });
        }
    }

    /// Service to endpoints: the `service-` and `local-` chains.
    fn endpoint_dispatch(&self, b: &mut Builder) {
        let port = self.port;
        if port.uses_cluster_chain() {
            self.dispatch(b, &self.chains.service, &port.cluster_endpoints);
        }
        if port.uses_local_chain() {
            self.dispatch(b, &self.chains.local, &port.local_endpoints);
        }
    }

    /// kube-proxy 1.36 without affinity: the DNAT itself, through a `numgen` map of the
    /// endpoints' addresses and ports.
    fn dnat_map(&self, b: &mut Builder, chain: &str, endpoints: &[ProxyEndpoint]) {
        let (ip, protocol) = (self.ip, self.protocol);
        let targets: Vec<String> = endpoints
            .iter()
            .enumerate()
            .map(|(slot, e)| format!("{slot} : {} . {}", e.ip, e.port))
            .collect();
        let n = endpoints.len();
        b.rule(
            chain,
            NftRule {
                list: format!(
                    "meta l4proto {protocol} dnat {ip} to numgen random mod {n} map {{ {} }}",
                    targets.join(", ")
                ),
                input: format!(
                    "meta l4proto {protocol} dnat {ip} addr . port to numgen random mod {n} map {{ {} }}",
                    targets.join(" , ")
                ),
            },
        );
    }

    /// The affinity checks, then `numgen` over `endpoints`, in `chain`.
    fn dispatch(&self, b: &mut Builder, chain: &str, endpoints: &[ProxyEndpoint]) {
        if !self.endpoint_chains_used() {
            self.dnat_map(b, chain, endpoints);
            return;
        }
        let ip = self.ip;
        if self.port.affinity_timeout.is_some() {
            for endpoint in endpoints {
                b.rule(
                    chain,
                    NftRule::same(format!(
                        "{ip} saddr @{} goto {}",
                        self.affinity_set(endpoint),
                        self.endpoint_chain(endpoint)
                    )),
                );
            }
        }
        let targets: Vec<String> = endpoints
            .iter()
            .enumerate()
            .map(|(slot, endpoint)| format!("{slot} : goto {}", self.endpoint_chain(endpoint)))
            .collect();
        b.rule(
            chain,
            NftRule {
                list: format!(
                    "numgen random mod {} vmap {{ {} }}",
                    endpoints.len(),
                    targets.join(", ")
                ),
                input: format!(
                    "numgen random mod {} vmap {{ {} }}",
                    endpoints.len(),
                    targets.join(" , ")
                ),
            },
        );
    }

    /// Endpoint chains: the hairpin mark, the affinity update, the DNAT.
    fn endpoint_chains(&self, b: &mut Builder) {
        let (port, ip, protocol) = (self.port, self.ip, self.protocol);
        if !self.endpoint_chains_used() {
            return;
        }
        for endpoint in &port.reachable {
            let chain = self.endpoint_chain(endpoint);
            if !self.dnat_maps {
                b.rule(
                    &chain,
                    NftRule::same(format!(
                        "{ip} saddr {} jump mark-for-masquerade",
                        endpoint.ip
                    )),
                );
            }
            if port.affinity_timeout.is_some() {
                b.rule(
                    &chain,
                    NftRule::same(format!(
                        "update @{} {{ {ip} saddr }}",
                        self.affinity_set(endpoint)
                    )),
                );
            }
            b.rule(
                &chain,
                NftRule::same(format!(
                    "meta l4proto {protocol} dnat to {}",
                    join_host_port(endpoint.ip, endpoint.port)
                )),
            );
        }
    }
}
