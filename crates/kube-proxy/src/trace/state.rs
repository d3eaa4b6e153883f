//! The walk's state: one path through the ruleset ([`Walk`]), and the tracer that carries
//! the packet and what it learned ([`Tracer`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;

use super::{Hop, Masquerade, TraceOptions, TraceVerdict, Warning};
use crate::plan::IpFamily;
use crate::ruleset::{
    Action, AddrValue, Format, KeyValue, Match, ProtoValue, Rule, Ruleset, Side, Table, Verdict,
};

/// How a chain ended.
#[derive(Debug, Clone)]
pub(super) enum Flow {
    /// Fell off the end, or RETURN.
    Return,
    /// ACCEPT (and the end of a nat chain after NAT).
    Accept,
    /// DROP.
    Drop(Hop),
    /// REJECT.
    Reject(Hop),
}

#[derive(Debug, Clone)]
pub(super) enum End {
    Drop(Hop),
    Reject(Hop),
}

/// A mark set by a rule whose source test is unknown.
#[derive(Debug, Clone)]
pub(super) struct CondMark {
    pub(super) and: u32,
    pub(super) xor: u32,
    pub(super) when: String,
    pub(super) step: Hop,
}

/// One path through the ruleset, with its probability.
#[derive(Debug, Clone)]
pub(super) struct Walk {
    pub(super) weight: f64,
    pub(super) dst: IpAddr,
    pub(super) dport: u16,
    pub(super) mark: u32,
    pub(super) dnat: Option<(IpAddr, u16, Hop)>,
    pub(super) probability: Option<String>,
    pub(super) masquerade: Option<Hop>,
    pub(super) marked_by: Option<Hop>,
    pub(super) cond_marks: Vec<CondMark>,
    pub(super) cond_masquerade: Vec<Masquerade>,
    pub(super) path: Vec<Hop>,
    /// The jumps that led into the current chain.
    pub(super) calls: Vec<Hop>,
    pub(super) end: Option<End>,
}

/// Explore every branch, or draw one per branch point.
pub(super) enum Mode {
    Explore,
    Sample(fastrand::Rng),
}

pub(super) struct Tracer<'r> {
    pub(super) ruleset: &'r Ruleset,
    pub(super) options: &'r TraceOptions,
    /// The node's own addresses: given, and read from the ruleset.
    pub(super) node_ips: Vec<IpAddr>,
    pub(super) family: IpFamily,
    pub(super) mode: Mode,
    pub(super) warnings: BTreeMap<usize, Warning>,
    pub(super) conditions: BTreeSet<(usize, String)>,
    /// A loopback address a packet from the network was rewritten to, which the kernel
    /// drops as a martian.
    pub(super) martian: Option<IpAddr>,
}

/// The node's own addresses as kube-proxy's rules name them: with `--nodeport-addresses`,
/// iptables' last KUBE-SERVICES rules (`-d NODE-IP -j KUBE-NODEPORTS`), nft's
/// `nodeport-ips` set.
pub fn ruleset_node_ips(ruleset: &Ruleset) -> Vec<IpAddr> {
    let mut ips: Vec<IpAddr> = Vec::new();
    let host = |net: &IpNet| (net.prefix_len() == net.max_prefix_len()).then(|| net.addr());
    for table in &ruleset.tables {
        if let Some(chain) = table.chain("KUBE-SERVICES") {
            for rule in &chain.rules {
                let to_nodeports = rule.actions.iter().any(|a| {
                    matches!(a, Action::Verdict(Verdict::Jump(c) | Verdict::Goto(c)) if c == "KUBE-NODEPORTS")
                });
                if !to_nodeports {
                    continue;
                }
                for m in &rule.matches {
                    if let Match::Addr {
                        side: Side::Destination,
                        negated: false,
                        value: AddrValue::Net(net),
                    } = m
                        && let Some(ip) = host(net)
                        && !ip.is_loopback()
                    {
                        ips.push(ip);
                    }
                }
            }
        }
        if let Some(set) = table.sets.get("nodeport-ips") {
            for element in &set.elements {
                if let Some(KeyValue::Net(net)) = element.key.first()
                    && let Some(ip) = host(net)
                {
                    ips.push(ip);
                }
            }
        }
    }
    ips.sort();
    ips.dedup();
    ips
}

pub(super) fn verdict_of(walk: &Walk) -> (TraceVerdict, Option<Hop>) {
    match &walk.end {
        Some(End::Drop(step)) => (TraceVerdict::Drop, Some(step.clone())),
        Some(End::Reject(step)) => (TraceVerdict::Reject, Some(step.clone())),
        None if walk.dnat.is_some() => (TraceVerdict::Dnat, None),
        None => (TraceVerdict::NoMatch, None),
    }
}

/// The stack a walk runs on: each nested jump (up to `walk::MAX_DEPTH`) stacks the frames of
/// a chain, its rule and the verdict, which an unoptimised build makes large.
const WALK_STACK: usize = 64 << 20;

/// Runs `walk` on a thread of its own with [`WALK_STACK`] of stack (only the pages used are
/// committed), so a deep ruleset never overflows the caller's.
pub(super) fn on_walk_stack<T: Send>(walk: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .name("trace".to_owned())
            .stack_size(WALK_STACK)
            .spawn_scoped(scope, walk)
        {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(error) => panic!("cannot start the tracer's thread: {error}"),
        }
    })
}

/// Why kube-proxy masquerades, read from the marking rule's shape.
pub(super) fn why(step: &Hop, when: Option<&str>) -> String {
    let chain = step.chain.as_str();
    let rule = step.rule.as_str();
    if rule.contains("@hairpin-connections") {
        return "hairpin: the endpoint is calling its own Service and would otherwise answer itself".to_owned();
    }
    if rule.contains("clusterIP traffic from outside cluster") {
        return "a source outside the cluster's pod CIDR sent to a ClusterIP: the reply must come back through this node".to_owned();
    }
    if rule.contains("masquerade LOCAL traffic") || rule.contains("masquerade local traffic") {
        return "sent by the node itself to the Service's external address: the reply must come back to the node".to_owned();
    }
    if rule.contains("masquerade traffic for")
        || (chain.starts_with("external-") && !rule.contains("fib"))
    {
        return "externalTrafficPolicy Cluster: the endpoint may be on another node, so the reply must come back through this one".to_owned();
    }
    if chain.starts_with("KUBE-SEP-") || chain.starts_with("endpoint-") {
        return "hairpin: the endpoint is calling its own Service and would otherwise answer itself".to_owned();
    }
    if (chain.starts_with("KUBE-SVC-")
        || chain.starts_with("KUBE-SVL-")
        || chain.starts_with("service-")
        || chain.starts_with("local-"))
        && (when.is_some_and(|w| w.contains("not in"))
            || rule.contains("! -s ")
            || rule.contains("saddr != "))
    {
        return "a source outside the cluster's pod CIDR sent to a ClusterIP: the reply must come back through this node".to_owned();
    }
    format!("marked by {} {} line {}", step.table, step.chain, step.line)
}

impl<'r> Tracer<'r> {
    pub(super) fn new(ruleset: &'r Ruleset, options: &'r TraceOptions, mode: Mode) -> Self {
        let mut node_ips = options.node_ips.clone();
        for ip in ruleset_node_ips(ruleset) {
            if !node_ips.contains(&ip) {
                node_ips.push(ip);
            }
        }
        Self {
            ruleset,
            options,
            node_ips,
            family: IpFamily::of(options.to),
            mode,
            warnings: BTreeMap::new(),
            conditions: BTreeSet::new(),
            martian: None,
        }
    }

    pub(super) fn warn(&mut self, rule: &Rule, problem: impl Into<String>) {
        self.warnings.entry(rule.line).or_insert_with(|| Warning {
            line: rule.line,
            rule: rule.text.clone(),
            problem: problem.into(),
        });
    }

    /// Whether the kernel routes a packet from the network that was rewritten to loopback
    /// address `ip`: only IPv4 with `net.ipv4.conf.*.route_localnet=1`, which kube-proxy's
    /// iptables mode sets (for NodePorts on localhost) and its nftables mode never does.
    pub(super) fn routes_to_loopback(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() && self.ruleset.format == Format::IptablesSave
    }

    pub(super) fn is_local(&self, ip: IpAddr) -> bool {
        ip.is_loopback()
            || (self.options.node_local && ip == self.options.to)
            || self.node_ips.contains(&ip)
    }

    /// The packet's protocol as a rule names it.
    pub(super) fn packet_protocol(&self) -> ProtoValue {
        if self.options.icmp {
            ProtoValue::Other(
                match self.family {
                    IpFamily::V4 => "icmp",
                    IpFamily::V6 => "ipv6-icmp",
                }
                .to_owned(),
            )
        } else {
            ProtoValue::Known(self.options.protocol)
        }
    }

    pub(super) fn step(table: &Table, chain: &str, rule: &Rule) -> Hop {
        Hop {
            table: table.name.clone(),
            chain: chain.to_owned(),
            line: rule.line,
            rule: rule.text.clone(),
        }
    }
}
