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
//! kube-proxy 1.36 ([`NftLayout::DnatMaps`], as its v1.36.3 was seen to write on a node by
//! tests/cluster/kube_proxy.rs) leaves the per-endpoint chains out unless the Service has
//! ClientIP affinity: a `service-` or `local-` chain DNATs itself, `dnat ip to numgen random
//! mod N map { 0 : ip . port, ... }`; the hairpin mark is gone for a `hairpin-connections` set
//! of this node's endpoints (`ip . ip . proto . port`) that `masquerading` matches after DNAT;
//! the off-cluster ClusterIP mark is one rule in `services` over `@cluster-ips`; marks are set
//! inline (no `mark-for-masquerade` chain) and `masquerading` is one rule. That is the
//! default; [`NftLayout::EndpointChains`] is the layout before it (kind's node in
//! fixtures/node.nft). `proxy trace` reads both.
//!
//! Without `node_ips`, NodePorts answer on every local address (`fib daddr type local`);
//! with them, on those addresses only (the `nodeport-ips` set, kube-proxy's default
//! `--nodeport-addresses primary` in nftables mode). `service_cidrs` adds the rule that
//! drops traffic to unallocated ClusterIPs.

mod service_port;
mod table;

use std::net::IpAddr;

use ipnet::IpNet;

use super::names::NameScheme;
use super::plan::Plan;
use service_port::service_port;
use table::{BaseSpec, Builder, Element, MARK, NftRule, SetDecl, anonymous, mark_rule};

/// Options of the nftables rendering beyond the plan.
#[derive(Debug, Clone, Default)]
pub struct NftOptions {
    /// The node's addresses that accept NodePorts (empty: every local address).
    pub node_ips: Vec<IpAddr>,
    /// The Service CIDRs (ServiceCIDR objects): traffic to an unallocated ClusterIP in them
    /// is dropped.
    pub service_cidrs: Vec<IpNet>,
}

/// The shape of kube-proxy's table, which changed in 1.36.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NftLayout {
    /// kube-proxy before 1.36: a chain per endpoint with the hairpin mark and the DNAT,
    /// `numgen ... vmap` to them, and a `mark-for-masquerade` chain.
    EndpointChains,
    /// kube-proxy 1.36 and later: the DNAT in the Service chain (`dnat ip to numgen ...
    /// map`), endpoint chains for ClientIP affinity only, the `hairpin-connections` set.
    #[default]
    DnatMaps,
}

/// Builds kube-proxy's table for `plan`.
fn build(plan: &Plan, names: NameScheme, options: &NftOptions, layout: NftLayout) -> Builder {
    let family = plan.options.family;
    let dnat_maps = layout == NftLayout::DnatMaps;
    let mut b = Builder {
        family,
        dnat_maps,
        sets: Vec::new(),
        chains: Vec::new(),
    };
    let node_ips: Vec<IpAddr> = options
        .node_ips
        .iter()
        .copied()
        .filter(|ip| family.contains(*ip))
        .collect();
    base_chains(&mut b);
    if dnat_maps {
        hairpin_masquerading(&mut b);
    } else {
        masquerading(&mut b);
    }
    cluster_ips_check(&mut b, options);
    no_endpoint_checks(&mut b, &node_ips);
    firewall_check(&mut b);
    service_dispatch(&mut b, &node_ips, plan.options.cluster_cidr());

    let cidr = plan.options.cluster_cidr();
    for port in &plan.ports {
        service_port(&mut b, names, port, cidr);
    }
    b
}

/// Base chains, then the chains they jump to, as setupNFTables creates them.
fn base_chains(b: &mut Builder) {
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
}

/// The masquerade mark, and the masquerading it asks for in postrouting.
fn masquerading(b: &mut Builder) {
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
}

/// kube-proxy 1.36's masquerading: the mark, or a hairpin connection (an endpoint of this
/// node reaching itself through a Service), in one rule each.
fn hairpin_masquerading(b: &mut Builder) {
    let (ip, addr_type) = (b.ip(), b.addr_type());
    b.sets.push(declared_set(
        "hairpin-connections",
        false,
        format!("{addr_type} . {addr_type} . inet_proto . inet_service"),
        "service hairpin connections",
        false,
    ));
    b.rule(
        "masquerading",
        NftRule {
            list: format!(
                "meta mark & {MARK:#010x} != 0x00000000 meta mark set meta mark ^ {MARK:#010x} masquerade fully-random"
            ),
            input: format!("mark and {MARK:#x} != 0 mark set mark xor {MARK:#x} masquerade fully-random"),
        },
    );
    b.rule(
        "masquerading",
        NftRule::same(format!(
            "ct status dnat {ip} saddr . {ip} daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random"
        )),
    );
}

/// A set or map kube-proxy declares, without elements yet.
fn declared_set(
    name: &str,
    map: bool,
    type_text: String,
    comment: &'static str,
    addresses: bool,
) -> SetDecl {
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
}

/// A verdict map's type: `key : verdict`.
fn verdict_map(key: String) -> String {
    format!("{key} : verdict")
}

/// The ClusterIPs, and the check that rejects their invalid ports (and drops unallocated
/// ClusterIPs of the Service CIDRs).
fn cluster_ips_check(b: &mut Builder, options: &NftOptions) {
    let (ip, addr_type, family) = (b.ip(), b.addr_type(), b.family);
    b.sets.push(declared_set(
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
}

/// The maps that drop or reject what goes to a Service without endpoints, and their checks.
fn no_endpoint_checks(b: &mut Builder, node_ips: &[IpAddr]) {
    let (ip, addr_type, match_all) = (b.ip(), b.addr_type(), node_ips.is_empty());
    if !match_all {
        let mut nodeport_ips = declared_set(
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
    b.sets.push(declared_set(
        "no-endpoint-services",
        true,
        verdict_map(format!("{addr_type} . inet_proto . inet_service")),
        "vmap to drop or reject packets to services with no endpoints",
        false,
    ));
    b.sets.push(declared_set(
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
}

/// The LoadBalancerSourceRanges check.
fn firewall_check(b: &mut Builder) {
    let (ip, addr_type) = (b.ip(), b.addr_type());
    b.sets.push(declared_set(
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
}

/// The Service maps and the `services` chain's lookups into them (kube-proxy 1.36: after
/// the mark for off-cluster sources of a ClusterIP).
fn service_dispatch(b: &mut Builder, node_ips: &[IpAddr], cidr: Option<IpNet>) {
    let (ip, addr_type, match_all) = (b.ip(), b.addr_type(), node_ips.is_empty());
    if b.dnat_maps
        && let Some(cidr) = cidr
    {
        let rule = mark_rule(b, &format!("{ip} daddr @cluster-ips {ip} saddr != {cidr}"))
            .comment("masquerade clusterIP traffic from outside cluster");
        b.rule("services", rule);
    }
    b.sets.push(declared_set(
        "service-ips",
        true,
        verdict_map(format!("{addr_type} . inet_proto . inet_service")),
        "ClusterIP, ExternalIP and LoadBalancer IP traffic",
        false,
    ));
    b.sets.push(declared_set(
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
}

/// kube-proxy's table as `nft list table ip kube-proxy` (or `ip6`) prints it.
pub fn render_list(plan: &Plan, names: NameScheme, options: &NftOptions) -> String {
    render_list_as(plan, names, options, NftLayout::default())
}

/// kube-proxy's table in `layout`, as `nft list table` prints it.
pub fn render_list_as(
    plan: &Plan,
    names: NameScheme,
    options: &NftOptions,
    layout: NftLayout,
) -> String {
    build(plan, names, options, layout).list_text()
}

/// kube-proxy's table as the `nft -f` transaction it writes: the table, its sets and maps,
/// then per Service port its chains, rules and elements.
pub fn render_transaction(plan: &Plan, names: NameScheme, options: &NftOptions) -> String {
    render_transaction_as(plan, names, options, NftLayout::default())
}

/// kube-proxy's table in `layout`, as the `nft -f` transaction it writes.
pub fn render_transaction_as(
    plan: &Plan,
    names: NameScheme,
    options: &NftOptions,
    layout: NftLayout,
) -> String {
    build(plan, names, options, layout).transaction_text()
}
