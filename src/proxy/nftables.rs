//! kube-proxy's nftables rules: `table ip kube-proxy` as `nft list table ip kube-proxy`
//! prints it, or as the `nft -f` transaction kube-proxy feeds to nft.
//!
//! The layout is `pkg/proxy/nftables/proxier.go` (`setupNFTables` and `syncProxyRules`, in
//! the shape of its `TestOverallNFTablesRules` expectations): base chains
//! `filter-prerouting-pre-dnat` and `filter-output-pre-dnat` (priority dstnat - 10) for the
//! LoadBalancer firewall, `filter-input`/`filter-forward`/`filter-output` (priority filter) for
//! services without endpoints and invalid ClusterIP ports, `nat-prerouting`/`nat-output`
//! (dstnat) jumping to `services`, `nat-postrouting` (srcnat) to `masquerading`; one lookup
//! of `ip daddr . meta l4proto . th dport` in the `service-ips` verdict map (and of
//! `meta l4proto . th dport` in `service-nodeports` for the node's addresses) instead of a
//! walk past every Service; per Service port a `service-` (Cluster policy), `local-`,
//! `external-` and `firewall-` chain; per endpoint an `endpoint-` chain with the hairpin
//! mark and the DNAT; `numgen random mod N vmap { ... }` instead of a probability cascade;
//! `no-endpoint-services` / `no-endpoint-nodeports` maps sending to `reject-chain` (no
//! endpoints) or `drop` (no local endpoints).
//!
//! What `nft` prints differs from what kube-proxy writes, and the list form prints the
//! former: marks as `meta mark set meta mark | 0x00004000`, priorities by name
//! (`dstnat - 10`, `srcnat`), an anonymous set of one element as the element, map elements
//! one per line and addresses two per line, sets and maps before chains, objects in the
//! order they were created. Element order in a map is the kernel's hash order on a node;
//! here it is the order kube-proxy adds them.
//!
//! Without `node_ips`, NodePorts answer on every local address (`fib daddr type local`);
//! with them, on those addresses only (the `nodeport-ips` set, kube-proxy's default
//! `--nodeport-addresses primary` in nftables mode). `service_cidrs` adds the rule that
//! drops traffic to unallocated ClusterIPs.

use std::fmt::Write as _;
use std::net::IpAddr;

use ipnet::IpNet;

use super::names::NameScheme;
use super::plan::{IpFamily, Plan, PortPlan, ProxyEndpoint, join_host_port};

/// Options of the nftables rendering beyond the plan.
#[derive(Debug, Clone, Default)]
pub struct NftOptions {
    /// The node's addresses that accept NodePorts (empty: every local address).
    pub node_ips: Vec<IpAddr>,
    /// The Service CIDRs (ServiceCIDR objects): traffic to an unallocated ClusterIP in them
    /// is dropped.
    pub service_cidrs: Vec<IpNet>,
}

/// kube-proxy's masquerade mark.
const MARK: u32 = 0x4000;

/// One rule, in both spellings.
#[derive(Debug, Clone)]
struct NftRule {
    /// As `nft list` prints it.
    list: String,
    /// As kube-proxy writes it (`add rule ... <this>`).
    input: String,
}

impl NftRule {
    fn same(text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            list: text.clone(),
            input: text,
        }
    }

    fn comment(mut self, comment: &str) -> Self {
        let _ = write!(self.list, " comment \"{comment}\"");
        let _ = write!(self.input, " comment \"{comment}\"");
        self
    }
}

#[derive(Debug, Clone)]
struct Element {
    key: String,
    comment: Option<String>,
    value: Option<String>,
}

#[derive(Debug, Clone)]
struct SetDecl {
    name: String,
    map: bool,
    type_text: String,
    flags: Option<&'static str>,
    timeout: Option<u32>,
    comment: Option<&'static str>,
    elements: Vec<Element>,
    /// Addresses print two per line; map elements one per line.
    addresses: bool,
}

#[derive(Debug, Clone)]
struct BaseSpec {
    kind: &'static str,
    hook: &'static str,
    priority: i32,
}

#[derive(Debug, Clone)]
struct ChainDecl {
    name: String,
    base: Option<BaseSpec>,
    comment: Option<&'static str>,
    rules: Vec<NftRule>,
}

/// The table being built.
struct Builder {
    family: IpFamily,
    sets: Vec<SetDecl>,
    chains: Vec<ChainDecl>,
}

impl Builder {
    fn chain(&mut self, name: &str) -> &mut ChainDecl {
        if let Some(index) = self.chains.iter().position(|c| c.name == name) {
            return &mut self.chains[index];
        }
        self.chains.push(ChainDecl {
            name: name.to_owned(),
            base: None,
            comment: None,
            rules: Vec::new(),
        });
        let last = self.chains.len() - 1;
        &mut self.chains[last]
    }

    fn rule(&mut self, chain: &str, rule: NftRule) {
        self.chain(chain).rules.push(rule);
    }

    fn set(&mut self, name: &str) -> Option<&mut SetDecl> {
        self.sets.iter_mut().find(|s| s.name == name)
    }

    fn element(&mut self, set: &str, element: Element) {
        if let Some(set) = self.set(set)
            && !set.elements.iter().any(|e| e.key == element.key)
        {
            set.elements.push(element);
        }
    }

    fn ip(&self) -> &'static str {
        match self.family {
            IpFamily::V4 => "ip",
            IpFamily::V6 => "ip6",
        }
    }

    fn addr_type(&self) -> &'static str {
        match self.family {
            IpFamily::V4 => "ipv4_addr",
            IpFamily::V6 => "ipv6_addr",
        }
    }

    fn no_localhost(&self) -> &'static str {
        match self.family {
            IpFamily::V4 => "ip daddr != 127.0.0.0/8",
            IpFamily::V6 => "ip6 daddr != ::1",
        }
    }
}

/// An anonymous set in a rule: `{ a, b }`, or the lone element as nft prints it.
fn anonymous(items: &[String]) -> (String, String) {
    let input = format!("{{ {} }}", items.join(", "));
    let list = if items.len() == 1 {
        items[0].clone()
    } else {
        input.clone()
    };
    (list, input)
}

/// `timeout` as nft prints a duration: `3h`, `10m`, `1h1m1s`.
fn duration(seconds: u32) -> String {
    let mut out = String::new();
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (hours, rest) = (rest / 3_600, rest % 3_600);
    let (minutes, secs) = (rest / 60, rest % 60);
    for (value, unit) in [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")] {
        if value > 0 {
            let _ = write!(out, "{value}{unit}");
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

/// nft's name for a standard priority, as `prio2str` picks it for the hook.
fn priority_text(hook: &str, priority: i32) -> String {
    let standard: &[(i32, &str)] = &[
        (-300, "raw"),
        (-150, "mangle"),
        (-100, "dstnat"),
        (0, "filter"),
        (50, "security"),
        (100, "srcnat"),
    ];
    for (value, name) in standard {
        let offset = priority - value;
        if offset.abs() <= 10 {
            let compatible = match *name {
                "dstnat" => matches!(hook, "prerouting" | "output"),
                "srcnat" => matches!(hook, "input" | "postrouting"),
                _ => true,
            };
            if !compatible {
                break;
            }
            return match offset {
                0 => (*name).to_owned(),
                o if o > 0 => format!("{name} + {o}"),
                o => format!("{name} - {}", -o),
            };
        }
    }
    priority.to_string()
}

/// The chain names of one Service port.
struct PortChains {
    service: String,
    local: String,
    external: String,
    firewall: String,
}

/// Builds kube-proxy's table for `plan`.
fn build(plan: &Plan, names: NameScheme, options: &NftOptions) -> Builder {
    let family = plan.options.family;
    let mut b = Builder {
        family,
        sets: Vec::new(),
        chains: Vec::new(),
    };
    let ip = b.ip();
    let addr_type = b.addr_type();
    let node_ips: Vec<IpAddr> = options
        .node_ips
        .iter()
        .copied()
        .filter(|ip| family.contains(*ip))
        .collect();
    let match_all = node_ips.is_empty();

    // Base chains, then the chains they jump to, as setupNFTables creates them.
    let bases = [
        ("filter-prerouting-pre-dnat", "filter", "prerouting", -110),
        ("filter-output-pre-dnat", "filter", "output", -110),
        ("filter-input", "filter", "input", 0),
        ("filter-forward", "filter", "forward", 0),
        ("filter-output", "filter", "output", 0),
        ("nat-prerouting", "nat", "prerouting", -100),
        ("nat-output", "nat", "output", -100),
        ("nat-postrouting", "nat", "postrouting", 100),
    ];
    for (name, kind, hook, priority) in bases {
        b.chain(name).base = Some(BaseSpec {
            kind,
            hook,
            priority,
        });
    }
    let jumps = [
        ("nodeport-endpoints-check", "filter-input", "ct state new "),
        ("service-endpoints-check", "filter-input", "ct state new "),
        ("service-endpoints-check", "filter-forward", "ct state new "),
        ("service-endpoints-check", "filter-output", "ct state new "),
        (
            "firewall-check",
            "filter-prerouting-pre-dnat",
            "ct state new ",
        ),
        ("firewall-check", "filter-output-pre-dnat", "ct state new "),
        ("services", "nat-output", ""),
        ("services", "nat-prerouting", ""),
        ("masquerading", "nat-postrouting", ""),
        ("cluster-ips-check", "filter-forward", "ct state new "),
        ("cluster-ips-check", "filter-output", "ct state new "),
    ];
    for (target, from, extra) in jumps {
        b.chain(target);
        b.rule(from, NftRule::same(format!("{extra}jump {target}")));
    }
    b.chain("mark-for-masquerade");
    b.rule(
        "mark-for-masquerade",
        NftRule {
            list: format!("meta mark set meta mark | {MARK:#010x}"),
            input: format!("mark set mark or {MARK:#x}"),
        },
    );
    b.rule(
        "masquerading",
        NftRule {
            list: format!("meta mark & {MARK:#010x} == 0x00000000 return"),
            input: format!("mark and {MARK:#x} == 0 return"),
        },
    );
    b.rule(
        "masquerading",
        NftRule {
            list: format!("meta mark set meta mark ^ {MARK:#010x}"),
            input: format!("mark set mark xor {MARK:#x}"),
        },
    );
    b.rule("masquerading", NftRule::same("masquerade fully-random"));

    let set = |name: &str, map: bool, type_text: String, comment: &'static str, addresses: bool| {
        SetDecl {
            name: name.to_owned(),
            map,
            type_text,
            flags: None,
            timeout: None,
            comment: Some(comment),
            elements: Vec::new(),
            addresses,
        }
    };
    b.sets.push(set(
        "cluster-ips",
        false,
        addr_type.to_owned(),
        "Active ClusterIPs",
        true,
    ));
    b.rule(
        "cluster-ips-check",
        NftRule::same(format!("{ip} daddr @cluster-ips reject"))
            .comment("Reject traffic to invalid ports of ClusterIPs"),
    );
    let cidrs: Vec<String> = options
        .service_cidrs
        .iter()
        .filter(|net| family.contains(net.addr()))
        .map(ToString::to_string)
        .collect();
    if !cidrs.is_empty() {
        let (list, input) = anonymous(&cidrs);
        b.rule(
            "cluster-ips-check",
            NftRule {
                list: format!("{ip} daddr {list} drop"),
                input: format!("{ip} daddr {input} drop"),
            }
            .comment("Drop traffic to unallocated ClusterIPs"),
        );
    }
    if !match_all {
        let mut nodeport_ips = set(
            "nodeport-ips",
            false,
            addr_type.to_owned(),
            "IPs that accept NodePort traffic",
            true,
        );
        nodeport_ips.elements = node_ips
            .iter()
            .map(|ip| Element {
                key: ip.to_string(),
                comment: None,
                value: None,
            })
            .collect();
        b.sets.push(nodeport_ips);
    }
    let verdict_map = |key: String| format!("{key} : verdict");
    b.sets.push(set(
        "no-endpoint-services",
        true,
        verdict_map(format!("{addr_type} . inet_proto . inet_service")),
        "vmap to drop or reject packets to services with no endpoints",
        false,
    ));
    b.sets.push(set(
        "no-endpoint-nodeports",
        true,
        verdict_map("inet_proto . inet_service".to_owned()),
        "vmap to drop or reject packets to service nodeports with no endpoints",
        false,
    ));
    b.chain("reject-chain").comment =
        Some("helper for @no-endpoint-services / @no-endpoint-nodeports");
    b.rule("reject-chain", NftRule::same("reject"));
    b.rule(
        "service-endpoints-check",
        NftRule::same(format!(
            "{ip} daddr . meta l4proto . th dport vmap @no-endpoint-services"
        )),
    );
    let nodeport_test = if match_all {
        b.no_localhost().to_owned()
    } else {
        format!("{ip} daddr @nodeport-ips")
    };
    b.rule(
        "nodeport-endpoints-check",
        NftRule::same(format!(
            "{nodeport_test} meta l4proto . th dport vmap @no-endpoint-nodeports"
        )),
    );
    b.sets.push(set(
        "firewall-ips",
        true,
        verdict_map(format!("{addr_type} . inet_proto . inet_service")),
        "destinations that are subject to LoadBalancerSourceRanges",
        false,
    ));
    b.rule(
        "firewall-check",
        NftRule::same(format!(
            "{ip} daddr . meta l4proto . th dport vmap @firewall-ips"
        )),
    );
    b.sets.push(set(
        "service-ips",
        true,
        verdict_map(format!("{addr_type} . inet_proto . inet_service")),
        "ClusterIP, ExternalIP and LoadBalancer IP traffic",
        false,
    ));
    b.sets.push(set(
        "service-nodeports",
        true,
        verdict_map("inet_proto . inet_service".to_owned()),
        "NodePort traffic",
        false,
    ));
    b.rule(
        "services",
        NftRule::same(format!(
            "{ip} daddr . meta l4proto . th dport vmap @service-ips"
        )),
    );
    let nodeport_dispatch = if match_all {
        format!("fib daddr type local {}", b.no_localhost())
    } else {
        format!("{ip} daddr @nodeport-ips")
    };
    b.rule(
        "services",
        NftRule::same(format!(
            "{nodeport_dispatch} meta l4proto . th dport vmap @service-nodeports"
        )),
    );

    let cidr = plan.options.cluster_cidr();
    for port in &plan.ports {
        service_port(&mut b, names, port, cidr);
    }
    b
}

/// One Service port's chains, sets and elements (`syncProxyRules`' loop body).
fn service_port(b: &mut Builder, names: NameScheme, port: &PortPlan, cidr: Option<IpNet>) {
    let ip = b.ip();
    let protocol = port.name.protocol.lower();
    let name = port.name.to_string();
    let chains = PortChains {
        service: names.nft_port("service-", &port.name),
        local: names.nft_port("local-", &port.name),
        external: names.nft_port("external-", &port.name),
        firewall: names.nft_port("firewall-", &port.name),
    };
    let endpoint_chain =
        |e: &ProxyEndpoint| names.nft_endpoint("endpoint-", &port.name, e.ip, e.port);
    let affinity_set =
        |e: &ProxyEndpoint| names.nft_endpoint("affinity-", &port.name, e.ip, e.port);

    // The chains, in the order kube-proxy creates them.
    for endpoint in &port.reachable {
        b.chain(&endpoint_chain(endpoint));
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
    let uses_fw = !port.load_balancer_ips.is_empty() && !port.source_ranges.is_empty();
    if uses_fw {
        b.chain(&chains.firewall);
    }

    let internal_chain = if port.internal_local {
        &chains.local
    } else {
        &chains.service
    };
    let external_policy_chain = if port.external_local {
        &chains.local
    } else {
        &chains.service
    };
    let (internal_verdict, external_verdict) = if !port.has_endpoints {
        (Some("goto reject-chain"), Some("goto reject-chain"))
    } else {
        (
            (!port.has_internal_endpoints()).then_some("drop"),
            (!port.has_external_endpoints()).then_some("drop"),
        )
    };
    let key = |address: IpAddr, number: u16| format!("{address} . {protocol} . {number}");

    // The ClusterIP.
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
            Element {
                key: key(port.cluster_ip, port.port),
                comment: None,
                value: Some(format!("goto {internal_chain}")),
            },
        );
    } else if let Some(verdict) = internal_verdict {
        b.element(
            "no-endpoint-services",
            Element {
                key: key(port.cluster_ip, port.port),
                comment: Some(name.clone()),
                value: Some(verdict.to_owned()),
            },
        );
    }

    // externalIPs.
    for external in &port.external_ips {
        if port.has_endpoints {
            b.element(
                "service-ips",
                Element {
                    key: key(*external, port.port),
                    comment: None,
                    value: Some(format!("goto {}", chains.external)),
                },
            );
        }
        if let Some(verdict) = external_verdict {
            b.element(
                "no-endpoint-services",
                Element {
                    key: key(*external, port.port),
                    comment: Some(name.clone()),
                    value: Some(verdict.to_owned()),
                },
            );
        }
    }

    // Load-balancer IPs.
    for lb in &port.load_balancer_ips {
        if port.has_endpoints {
            b.element(
                "service-ips",
                Element {
                    key: key(*lb, port.port),
                    comment: None,
                    value: Some(format!("goto {}", chains.external)),
                },
            );
        }
        if uses_fw {
            b.element(
                "firewall-ips",
                Element {
                    key: key(*lb, port.port),
                    comment: None,
                    value: Some(format!("goto {}", chains.firewall)),
                },
            );
        }
    }
    if let Some(verdict) = external_verdict {
        for lb in &port.load_balancer_ips {
            b.element(
                "no-endpoint-services",
                Element {
                    key: key(*lb, port.port),
                    comment: Some(name.clone()),
                    value: Some(verdict.to_owned()),
                },
            );
        }
    }

    // NodePort.
    if let Some(node_port) = port.node_port {
        if port.has_endpoints {
            b.element(
                "service-nodeports",
                Element {
                    key: format!("{protocol} . {node_port}"),
                    comment: None,
                    value: Some(format!("goto {}", chains.external)),
                },
            );
        }
        if let Some(verdict) = external_verdict {
            b.element(
                "no-endpoint-nodeports",
                Element {
                    key: format!("{protocol} . {node_port}"),
                    comment: Some(name.clone()),
                    value: Some(verdict.to_owned()),
                },
            );
        }
    }

    // Internal traffic: masquerade off-cluster sources.
    if port.has_internal_endpoints()
        && let Some(cidr) = cidr
    {
        b.rule(
            internal_chain,
            NftRule::same(format!(
                "{ip} daddr {} {ip} saddr != {cidr} jump mark-for-masquerade",
                port.cluster_ip
            )),
        );
    }

    // External traffic.
    if port.uses_external_chain() {
        if !port.external_local {
            b.rule(&chains.external, NftRule::same("jump mark-for-masquerade"));
        } else {
            if let Some(cidr) = cidr {
                b.rule(
                    &chains.external,
                    NftRule::same(format!("{ip} saddr {cidr} goto {}", chains.service))
                        .comment("short-circuit pod traffic"),
                );
            }
            b.rule(
                &chains.external,
                NftRule::same("fib saddr type local jump mark-for-masquerade")
                    .comment("masquerade local traffic"),
            );
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
                NftRule::same(format!("goto {external_policy_chain}")),
            );
        }
    }

    // The firewall.
    if uses_fw {
        let sources: Vec<String> = port.source_ranges.iter().map(ToString::to_string).collect();
        let (list, input) = anonymous(&sources);
        b.rule(
            &chains.firewall,
            NftRule {
                list: format!("{ip} saddr != {list} drop"),
                input: format!("{ip} saddr != {input} drop"),
            },
        );
    }

    // Affinity sets.
    if let Some(timeout) = port.affinity_timeout {
        for endpoint in &port.reachable {
            b.sets.push(SetDecl {
                name: affinity_set(endpoint),
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

    // Service to endpoints.
    let dispatch = |b: &mut Builder, chain: &str, endpoints: &[ProxyEndpoint]| {
        if port.affinity_timeout.is_some() {
            for endpoint in endpoints {
                b.rule(
                    chain,
                    NftRule::same(format!(
                        "{ip} saddr @{} goto {}",
                        affinity_set(endpoint),
                        endpoint_chain(endpoint)
                    )),
                );
            }
        }
        let targets: Vec<String> = endpoints
            .iter()
            .enumerate()
            .map(|(slot, endpoint)| format!("{slot} : goto {}", endpoint_chain(endpoint)))
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
    };
    if port.uses_cluster_chain() {
        dispatch(b, &chains.service, &port.cluster_endpoints);
    }
    if port.uses_local_chain() {
        dispatch(b, &chains.local, &port.local_endpoints);
    }

    // Endpoint chains.
    for endpoint in &port.reachable {
        let chain = endpoint_chain(endpoint);
        b.rule(
            &chain,
            NftRule::same(format!(
                "{ip} saddr {} jump mark-for-masquerade",
                endpoint.ip
            )),
        );
        if port.affinity_timeout.is_some() {
            b.rule(
                &chain,
                NftRule::same(format!(
                    "update @{} {{ {ip} saddr }}",
                    affinity_set(endpoint)
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

fn family_name(family: IpFamily) -> &'static str {
    match family {
        IpFamily::V4 => "ip",
        IpFamily::V6 => "ip6",
    }
}

/// kube-proxy's table as `nft list table ip kube-proxy` (or `ip6`) prints it.
pub fn render_list(plan: &Plan, names: NameScheme, options: &NftOptions) -> String {
    let b = build(plan, names, options);
    let mut out = String::new();
    let _ = writeln!(out, "table {} kube-proxy {{", family_name(b.family));
    out.push_str("\tcomment \"rules for kube-proxy\"\n");
    let mut delim = "";
    for set in &b.sets {
        out.push_str(delim);
        delim = "\n";
        let _ = writeln!(
            out,
            "\t{} {} {{",
            if set.map { "map" } else { "set" },
            set.name
        );
        let _ = writeln!(out, "\t\ttype {}", set.type_text);
        if set.flags.is_some() && set.timeout.is_some() {
            out.push_str("\t\tsize 65535\n");
        }
        if let Some(flags) = set.flags {
            let _ = writeln!(out, "\t\tflags {flags}");
        }
        if let Some(timeout) = set.timeout {
            let _ = writeln!(out, "\t\ttimeout {}", duration(timeout));
        }
        if let Some(comment) = set.comment {
            let _ = writeln!(out, "\t\tcomment \"{comment}\"");
        }
        if !set.elements.is_empty() {
            out.push_str("\t\telements = { ");
            for (index, element) in set.elements.iter().enumerate() {
                if index > 0 {
                    let newline = !set.addresses || index % 2 == 0;
                    out.push_str(if newline { ",\n\t\t\t     " } else { ", " });
                }
                out.push_str(&element.key);
                if let Some(comment) = &element.comment {
                    let _ = write!(out, " comment \"{comment}\"");
                }
                if let Some(value) = &element.value {
                    let _ = write!(out, " : {value}");
                }
            }
            out.push_str(" }\n");
        }
        out.push_str("\t}\n");
    }
    for chain in &b.chains {
        out.push_str(delim);
        delim = "\n";
        let _ = write!(out, "\tchain {} {{", chain.name);
        if let Some(comment) = chain.comment {
            let _ = write!(out, "\n\t\tcomment \"{comment}\"");
        }
        out.push('\n');
        if let Some(base) = &chain.base {
            let _ = writeln!(
                out,
                "\t\ttype {} hook {} priority {}; policy accept;",
                base.kind,
                base.hook,
                priority_text(base.hook, base.priority)
            );
        }
        for rule in &chain.rules {
            let _ = writeln!(out, "\t\t{}", rule.list);
        }
        out.push_str("\t}\n");
    }
    out.push_str("}\n");
    out
}

/// kube-proxy's table as the `nft -f` transaction it writes: the table, its sets and maps,
/// then per Service port its chains, rules and elements.
pub fn render_transaction(plan: &Plan, names: NameScheme, options: &NftOptions) -> String {
    let b = build(plan, names, options);
    let family = family_name(b.family);
    let prefix = format!("{family} kube-proxy");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "add table {prefix} {{ comment \"rules for kube-proxy\" ; }}"
    );
    for set in &b.sets {
        let mut spec = format!("type {} ;", set.type_text);
        if let Some(flags) = set.flags {
            let _ = write!(spec, " flags {flags} ;");
        }
        if let Some(timeout) = set.timeout {
            let _ = write!(spec, " timeout {timeout}s ;");
        }
        if let Some(comment) = set.comment {
            let _ = write!(spec, " comment \"{comment}\" ;");
        }
        let _ = writeln!(
            out,
            "add {} {prefix} {} {{ {spec} }}",
            if set.map { "map" } else { "set" },
            set.name
        );
    }
    for chain in &b.chains {
        let mut spec = Vec::new();
        if let Some(base) = &chain.base {
            spec.push(format!(
                "type {} hook {} priority {} ;",
                base.kind, base.hook, base.priority
            ));
        }
        if let Some(comment) = chain.comment {
            spec.push(format!("comment \"{comment}\" ;"));
        }
        if spec.is_empty() {
            let _ = writeln!(out, "add chain {prefix} {}", chain.name);
        } else {
            let _ = writeln!(
                out,
                "add chain {prefix} {} {{ {} }}",
                chain.name,
                spec.join(" ")
            );
        }
        let _ = writeln!(out, "flush chain {prefix} {}", chain.name);
    }
    for chain in &b.chains {
        for rule in &chain.rules {
            let _ = writeln!(out, "add rule {prefix} {} {}", chain.name, rule.input);
        }
    }
    for set in &b.sets {
        for element in &set.elements {
            let comment = element
                .comment
                .as_ref()
                .map(|c| format!(" comment \"{c}\""))
                .unwrap_or_default();
            let value = element
                .value
                .as_ref()
                .map(|v| format!(" : {v}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "add element {prefix} {} {{ {}{comment}{value} }}",
                set.name, element.key
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_print_like_nft() {
        assert_eq!(priority_text("prerouting", -110), "dstnat - 10");
        assert_eq!(priority_text("output", -110), "dstnat - 10");
        assert_eq!(priority_text("input", -110), "-110");
        assert_eq!(priority_text("forward", 0), "filter");
        assert_eq!(priority_text("prerouting", -100), "dstnat");
        assert_eq!(priority_text("postrouting", 100), "srcnat");
        assert_eq!(priority_text("output", -90), "dstnat + 10");
        assert_eq!(priority_text("input", 200), "200");
    }

    #[test]
    fn durations_print_like_nft() {
        assert_eq!(duration(10_800), "3h");
        assert_eq!(duration(600), "10m");
        assert_eq!(duration(3_661), "1h1m1s");
        assert_eq!(duration(86_400), "1d");
    }

    #[test]
    fn single_element_sets_print_as_the_element() {
        assert_eq!(
            anonymous(&["10.0.0.0/8".to_owned()]),
            ("10.0.0.0/8".to_owned(), "{ 10.0.0.0/8 }".to_owned())
        );
        assert_eq!(
            anonymous(&["10.0.0.0/8".to_owned(), "192.168.0.0/16".to_owned()]).0,
            "{ 10.0.0.0/8, 192.168.0.0/16 }"
        );
    }
}
