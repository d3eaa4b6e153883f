//! The tracer: where a new connection to `IP:PORT` goes on a node, walked through the node's
//! ruleset the way the kernel walks it.
//!
//! A packet from the network meets the base chains of the prerouting hook (iptables' raw,
//! mangle and nat PREROUTING, nft chains hooked there) in priority order; after the routing
//! decision it meets input (a destination of this node) or forward and postrouting. A packet
//! sent by a process on the node (`local`) meets output, then postrouting. In each chain the
//! rules are tried in order; a jump returns, a goto does not; DROP, REJECT and ACCEPT end the
//! chain; DNAT and MASQUERADE end a nat chain; falling off a base chain applies its policy.
//!
//! What a rule tests is decided from the packet: destination, protocol, port, whether the
//! destination is a node address (`node_local`, and loopback), whether the node sent it,
//! conntrack state (a new connection; DNAT once rewritten), the packet mark. Two things are
//! not known without being told:
//!
//! - **the source address**: with `from`, source tests are decided; without it, a rule that
//!   tests the source and only marks the packet for masquerade is reported as a condition
//!   ("masqueraded if the source is not in 10.244.0.0/16"), and any other source-dependent
//!   rule is reported and not taken;
//! - **randomness**: a statistic match or an nft `numgen` splits the walk; every branch is
//!   followed with its exact probability (from the 31-bit stored value, or the slot count),
//!   which gives each endpoint its real share. `--simulate` instead draws branches with a
//!   seeded generator, as the kernel does per connection.
//!
//! A session-affinity check (`-m recent --rcheck`, nft `ip saddr @affinity-…`) never matches
//! a new client. A match or statement the tracer does not know is reported with its line and
//! treated as not matching (a statement: as doing nothing); it is never skipped silently.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::IpAddr;

use ipnet::IpNet;
use serde::Serialize;

use super::cascade::Stored;
use super::plan::{IpFamily, join_host_port};
use super::ruleset::{
    Action, AddrValue, CtState, Element, Format, Hook, KeyPart, KeyValue, MapRef, Match,
    ProtoValue, RecentOp, Rule, Ruleset, Side, Slot, Table, TableFamily, Verdict,
};
use crate::model::Protocol;

/// The packet to trace.
#[derive(Debug, Clone)]
pub struct TraceOptions {
    /// Destination address.
    pub to: IpAddr,
    /// Destination port.
    pub port: u16,
    /// Protocol.
    pub protocol: Protocol,
    /// Source address, when known.
    pub from: Option<IpAddr>,
    /// Sent by a process on the node (output hook) instead of arriving from the network.
    pub local: bool,
    /// The destination is one of the node's own addresses (`-m addrtype --dst-type LOCAL`,
    /// `fib daddr type local`).
    pub node_local: bool,
    /// The node's own addresses (besides those the ruleset names): a destination among them
    /// is local.
    pub node_ips: Vec<IpAddr>,
    /// An ICMP packet (a ping) instead of `protocol`: no port, and no port match takes it.
    pub icmp: bool,
}

/// Where the connection ends up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceVerdict {
    /// Rewritten to an endpoint.
    Dnat,
    /// Refused (ICMP port unreachable, TCP reset): the client sees "connection refused".
    Reject,
    /// Silently dropped: the client times out.
    Drop,
    /// No rule rewrote it (delivered or forwarded as addressed).
    NoMatch,
}

impl TraceVerdict {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dnat => "dnat",
            Self::Reject => "reject",
            Self::Drop => "drop",
            Self::NoMatch => "no-match",
        }
    }
}

/// One rule the walk went through.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Step {
    /// The table.
    pub table: String,
    /// The chain.
    pub chain: String,
    /// The rule's line in the ruleset.
    pub line: usize,
    /// The rule as written.
    pub rule: String,
}

/// One endpoint the connection may reach.
#[derive(Debug, Clone, Serialize)]
pub struct EndpointShare {
    /// The endpoint's address.
    pub address: String,
    /// Its port.
    pub port: u16,
    /// The share of new connections it receives (0-1).
    pub share: f64,
    /// The DNAT rule.
    pub dnat: Step,
    /// The probability of the rule that chose it, as written, when a statistic match did.
    pub probability: Option<String>,
    /// The rules from where the paths part to the DNAT.
    pub path: Vec<Step>,
}

/// When and why the connection is masqueraded (source-NATed to the node's address).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Masquerade {
    /// The condition on the unknown source, or `None` when it always happens.
    pub when: Option<String>,
    /// Why kube-proxy asks for it.
    pub why: String,
    /// The rule that marked the packet.
    pub marked_by: Option<Step>,
    /// The rule that masqueraded it.
    pub masqueraded_by: Step,
    /// The endpoints (`ip:port`) whose connections it applies to, when not all of them.
    pub endpoints: Vec<String>,
}

/// Something about the ruleset the walk could not decide.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Warning {
    /// The rule's line.
    pub line: usize,
    /// The rule.
    pub rule: String,
    /// What the tracer did not understand, and what it assumed.
    pub problem: String,
}

/// A non-DNAT outcome of a walk that also has DNAT outcomes (or several kinds).
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// What happened.
    pub verdict: TraceVerdict,
    /// Its share.
    pub share: f64,
    /// The rule that ended it, if one did.
    pub by: Option<Step>,
}

/// The result of a trace.
#[derive(Debug, Clone, Serialize)]
pub struct TraceReport {
    /// Where the connection goes.
    pub verdict: TraceVerdict,
    /// The packet.
    pub to: String,
    /// The protocol.
    pub protocol: String,
    /// The source, when given.
    pub from: Option<String>,
    /// `network` (prerouting) or `node` (output).
    pub origin: String,
    /// The rules every path goes through.
    pub path: Vec<Step>,
    /// The endpoints, with their shares.
    pub endpoints: Vec<EndpointShare>,
    /// When the connection is masqueraded.
    pub masquerade: Vec<Masquerade>,
    /// The rule that rejected or dropped the connection.
    pub terminal: Option<Step>,
    /// Outcomes other than the verdict's, when the walk has several.
    pub other_outcomes: Vec<Outcome>,
    /// Rules the walk passed without deciding them (source-dependent, affinity).
    pub conditions: Vec<String>,
    /// Rules the tracer does not understand.
    pub warnings: Vec<Warning>,
    /// What the verdict means where the ruleset cannot show it all (a nat-only dump, a
    /// Service address nothing answers on).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The node's addresses the walk used (given, and named by the ruleset).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_ips: Vec<String>,
}

/// How a chain ended.
#[derive(Debug, Clone)]
enum Flow {
    /// Fell off the end, or RETURN.
    Return,
    /// ACCEPT (and the end of a nat chain after NAT).
    Accept,
    /// DROP.
    Drop(Step),
    /// REJECT.
    Reject(Step),
}

#[derive(Debug, Clone)]
enum End {
    Drop(Step),
    Reject(Step),
}

/// A mark set by a rule whose source test is unknown.
#[derive(Debug, Clone)]
struct CondMark {
    and: u32,
    xor: u32,
    when: String,
    step: Step,
}

/// One path through the ruleset, with its probability.
#[derive(Debug, Clone)]
struct Walk {
    weight: f64,
    dst: IpAddr,
    dport: u16,
    mark: u32,
    dnat: Option<(IpAddr, u16, Step)>,
    probability: Option<String>,
    masquerade: Option<Step>,
    marked_by: Option<Step>,
    cond_marks: Vec<CondMark>,
    cond_masquerade: Vec<Masquerade>,
    path: Vec<Step>,
    /// The jumps that led into the current chain.
    calls: Vec<Step>,
    end: Option<End>,
}

/// Explore every branch, or draw one per branch point.
enum Mode {
    Explore,
    Sample(fastrand::Rng),
}

struct Tracer<'r> {
    ruleset: &'r Ruleset,
    options: &'r TraceOptions,
    /// The node's own addresses: given, and read from the ruleset.
    node_ips: Vec<IpAddr>,
    family: IpFamily,
    mode: Mode,
    warnings: BTreeMap<usize, Warning>,
    conditions: BTreeSet<(usize, String)>,
}

/// What the matches of a rule say.
enum Decision {
    No,
    Yes,
    /// Matches only for some sources: the conditions.
    Source(Vec<String>),
    /// Cannot be decided: why.
    Unknown(String),
    /// Matches with a probability (a statistic match).
    Random(Stored, bool, String),
}

const MAX_DEPTH: usize = 64;

fn describe_addr(side: Side, negated: bool, value: &AddrValue) -> String {
    let what = match side {
        Side::Source => "the source",
        Side::Destination => "the destination",
    };
    match value {
        AddrValue::Net(net) if net.prefix_len() == net.max_prefix_len() => {
            format!(
                "{what} is {}{}",
                if negated { "not " } else { "" },
                net.addr()
            )
        }
        AddrValue::Net(net) => format!("{what} is {}in {net}", if negated { "not " } else { "" }),
        AddrValue::List(nets) => format!(
            "{what} is {}in {{ {} }}",
            if negated { "not " } else { "" },
            nets.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        AddrValue::Set(name) => {
            format!("{what} is {}in @{name}", if negated { "not " } else { "" })
        }
    }
}

/// Whether a rule's protocol names the packet's (`icmp` is also `1`, ICMPv6 `58`/`icmpv6`).
fn same_protocol(rule: &ProtoValue, packet: &ProtoValue) -> bool {
    match (rule, packet) {
        (ProtoValue::Other(rule), ProtoValue::Other(packet)) => {
            let canonical = |name: &str| {
                match name {
                    "1" | "icmp" => "icmp",
                    "58" | "icmpv6" | "ipv6-icmp" => "ipv6-icmp",
                    other => other,
                }
                .to_owned()
            };
            canonical(&rule.to_ascii_lowercase()) == canonical(packet)
        }
        (rule, packet) => rule == packet,
    }
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

/// The protocols and ports a ruleset sends to `ip` (its rules that test that destination,
/// and nft map elements keyed by it), as `tcp/80`; and the rule comment naming it.
fn service_ports(ruleset: &Ruleset, ip: IpAddr) -> (Vec<String>, Option<String>) {
    let mut ports: BTreeSet<String> = BTreeSet::new();
    let mut name = None;
    let exactly = |net: &IpNet| net.prefix_len() == net.max_prefix_len() && net.addr() == ip;
    let proto_text = |p: &ProtoValue| match p {
        ProtoValue::Known(p) => p.lower().to_owned(),
        ProtoValue::Other(other) => other.clone(),
    };
    for table in &ruleset.tables {
        if table.name != "nat" && table.family == TableFamily::Ip {
            continue;
        }
        for chain in &table.chains {
            for rule in &chain.rules {
                let names_it = rule.matches.iter().any(|m| {
                    matches!(m, Match::Addr { side: Side::Destination, negated: false, value: AddrValue::Net(net) } if exactly(net))
                });
                if !names_it {
                    continue;
                }
                let protocol = rule.matches.iter().find_map(|m| match m {
                    Match::Protocol {
                        negated: false,
                        protocols,
                    } => protocols.first().map(proto_text),
                    _ => None,
                });
                for m in &rule.matches {
                    if let Match::Port {
                        side: Side::Destination,
                        negated: false,
                        ranges,
                        protocol: port_protocol,
                    } = m
                    {
                        let protocol = port_protocol
                            .map(|p| p.lower().to_owned())
                            .or_else(|| protocol.clone())
                            .unwrap_or_else(|| "any".to_owned());
                        for (low, high) in ranges {
                            ports.insert(if low == high {
                                format!("{protocol}/{low}")
                            } else {
                                format!("{protocol}/{low}-{high}")
                            });
                        }
                    }
                }
                if name.is_none() {
                    name.clone_from(&rule.comment);
                }
            }
        }
        for set in table.sets.values() {
            for element in &set.elements {
                let [
                    KeyValue::Net(net),
                    KeyValue::Proto(protocol),
                    KeyValue::Port(low, high),
                ] = element.key.as_slice()
                else {
                    continue;
                };
                if !exactly(net) {
                    continue;
                }
                let protocol = proto_text(protocol);
                ports.insert(if low == high {
                    format!("{protocol}/{low}")
                } else {
                    format!("{protocol}/{low}-{high}")
                });
                if name.is_none() {
                    name.clone_from(&element.comment);
                }
            }
        }
    }
    (ports.into_iter().collect(), name)
}

fn in_nets(ip: IpAddr, nets: &[IpNet]) -> bool {
    nets.iter().any(|net| net.contains(&ip))
}

fn key_matches(value: &KeyValue, packet: &KeyValue) -> bool {
    match (value, packet) {
        (KeyValue::Net(net), KeyValue::Net(ip)) => net.contains(&ip.addr()),
        (KeyValue::Range(low, high), KeyValue::Net(ip)) => {
            let ip = ip.addr();
            *low <= ip && ip <= *high
        }
        (KeyValue::Proto(a), KeyValue::Proto(b)) => a == b,
        (KeyValue::Port(low, high), KeyValue::Port(port, _)) => low <= port && port <= high,
        _ => false,
    }
}

impl<'r> Tracer<'r> {
    fn new(ruleset: &'r Ruleset, options: &'r TraceOptions, mode: Mode) -> Self {
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
        }
    }

    fn warn(&mut self, rule: &Rule, problem: impl Into<String>) {
        self.warnings.entry(rule.line).or_insert_with(|| Warning {
            line: rule.line,
            rule: rule.text.clone(),
            problem: problem.into(),
        });
    }

    fn is_local(&self, ip: IpAddr) -> bool {
        ip.is_loopback()
            || (self.options.node_local && ip == self.options.to)
            || self.node_ips.contains(&ip)
    }

    /// The packet's protocol as a rule names it.
    fn packet_protocol(&self) -> ProtoValue {
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

    fn step(table: &Table, chain: &str, rule: &Rule) -> Step {
        Step {
            table: table.name.clone(),
            chain: chain.to_owned(),
            line: rule.line,
            rule: rule.text.clone(),
        }
    }

    fn set_contains(&self, table: &Table, name: &str, ip: IpAddr) -> Option<bool> {
        let set = table.sets.get(name)?;
        Some(set.elements.iter().any(|element| {
            element
                .key
                .first()
                .is_some_and(|key| key_matches(key, &KeyValue::Net(IpNet::from(ip))))
        }))
    }

    /// What `rule`'s matches say about the packet in `walk`.
    fn decide(&mut self, table: &Table, rule: &Rule, walk: &Walk) -> Decision {
        let mut source = Vec::new();
        let mut unknown = None;
        let mut random = None;
        for m in &rule.matches {
            let result: Option<bool> = match m {
                Match::Addr {
                    side,
                    negated,
                    value,
                } => {
                    let ip = match side {
                        Side::Source => self.options.from,
                        Side::Destination => Some(walk.dst),
                    };
                    match ip {
                        None => {
                            source.push(describe_addr(*side, *negated, value));
                            continue;
                        }
                        Some(ip) => {
                            let inside = match value {
                                AddrValue::Net(net) => Some(net.contains(&ip)),
                                AddrValue::List(nets) => Some(in_nets(ip, nets)),
                                AddrValue::Set(name) => {
                                    if name.starts_with("affinity-") && *side == Side::Source {
                                        // A new client is in no affinity set.
                                        self.conditions.insert((
                                            rule.line,
                                            format!(
                                                "session affinity: a new client is not in @{name}"
                                            ),
                                        ));
                                        Some(false)
                                    } else {
                                        self.set_contains(table, name, ip)
                                    }
                                }
                            };
                            match inside {
                                Some(inside) => Some(inside != *negated),
                                None => {
                                    if let AddrValue::Set(name) = value {
                                        unknown
                                            .get_or_insert(format!("no set @{name} in the table"));
                                    }
                                    continue;
                                }
                            }
                        }
                    }
                }
                Match::Protocol { negated, protocols } => {
                    let packet = self.packet_protocol();
                    Some(protocols.iter().any(|p| same_protocol(p, &packet)) != *negated)
                }
                Match::Port {
                    side,
                    negated,
                    ranges,
                    protocol,
                } => {
                    if self.options.icmp {
                        // An ICMP packet has no port: tcp/udp/sctp matches never take it.
                        Some(false)
                    } else if protocol.is_some_and(|p| p != self.options.protocol) {
                        Some(false)
                    } else {
                        match side {
                            Side::Destination => Some(
                                ranges
                                    .iter()
                                    .any(|(low, high)| (*low..=*high).contains(&walk.dport))
                                    != *negated,
                            ),
                            Side::Source => {
                                unknown.get_or_insert(
                                    "the source port is not known (an ephemeral port)".to_owned(),
                                );
                                continue;
                            }
                        }
                    }
                }
                Match::Local { side, negated } => {
                    let local = match side {
                        Side::Destination => self.is_local(walk.dst),
                        Side::Source => self.options.local,
                    };
                    Some(local != *negated)
                }
                Match::CtState { negated, states } => {
                    let matched = states.iter().any(|state| {
                        *state == CtState::New || (*state == CtState::Dnat && walk.dnat.is_some())
                    });
                    Some(matched != *negated)
                }
                Match::Mark {
                    negated,
                    value,
                    mask,
                } => Some(((walk.mark & mask) == *value) != *negated),
                Match::Statistic {
                    negated,
                    stored,
                    text,
                } => {
                    random = Some((*stored, *negated, text.clone()));
                    continue;
                }
                Match::Recent { negated, op, name } => {
                    let matched = match op {
                        RecentOp::Set => true,
                        RecentOp::Check | RecentOp::Update | RecentOp::Remove => {
                            self.conditions.insert((
                                rule.line,
                                format!("session affinity: a new client is not in the recent list {name}"),
                            ));
                            false
                        }
                    };
                    Some(matched != *negated)
                }
                Match::Interface { out, negated, name } => {
                    unknown.get_or_insert(format!(
                        "the {} interface is not known ({}{name})",
                        if *out { "outgoing" } else { "incoming" },
                        if *negated { "! " } else { "" }
                    ));
                    continue;
                }
                Match::Always => Some(true),
                Match::Unsupported(text) => {
                    unknown.get_or_insert(format!("cannot evaluate `{text}`"));
                    continue;
                }
            };
            if result == Some(false) {
                return Decision::No;
            }
        }
        if let Some(why) = unknown {
            return Decision::Unknown(why);
        }
        if !source.is_empty() {
            return Decision::Source(source);
        }
        match random {
            Some((stored, negated, text)) => Decision::Random(stored, negated, text),
            None => Decision::Yes,
        }
    }

    /// The mark a rule sets when taken, if all it does is mark (directly, or by jumping to a
    /// chain that only marks, like KUBE-MARK-MASQ and mark-for-masquerade).
    fn mark_only(&self, table: &Table, rule: &Rule) -> Option<(u32, u32)> {
        let mut and = u32::MAX;
        let mut xor = 0;
        let mut marks = false;
        for action in &rule.actions {
            match action {
                Action::SetMark { and: a, xor: x } => {
                    and &= a;
                    xor = (xor & a) ^ x;
                    marks = true;
                }
                Action::Continue => {}
                Action::Verdict(Verdict::Jump(chain)) => {
                    let chain = table.chain(chain)?;
                    for inner in &chain.rules {
                        if inner.matches.iter().any(|m| *m != Match::Always) {
                            return None;
                        }
                        for action in &inner.actions {
                            match action {
                                Action::SetMark { and: a, xor: x } => {
                                    and &= a;
                                    xor = (xor & a) ^ x;
                                    marks = true;
                                }
                                Action::Continue => {}
                                _ => return None,
                            }
                        }
                    }
                }
                _ => return None,
            }
        }
        marks.then_some((and, xor))
    }

    /// Splits `walk` on a random match: (walk, matched).
    fn branch(&mut self, walk: Walk, stored: Stored, negated: bool) -> Vec<(Walk, bool)> {
        match &mut self.mode {
            Mode::Explore => {
                let p = stored.probability();
                let (p_match, p_miss) = if negated { (1.0 - p, p) } else { (p, 1.0 - p) };
                let mut out = Vec::new();
                if p_match > 0.0 {
                    let mut taken = walk.clone();
                    taken.weight *= p_match;
                    out.push((taken, true));
                }
                if p_miss > 0.0 {
                    let mut missed = walk;
                    missed.weight *= p_miss;
                    out.push((missed, false));
                }
                out
            }
            Mode::Sample(rng) => {
                let matched = stored.matches(rng.u32(..)) != negated;
                vec![(walk, matched)]
            }
        }
    }

    /// Splits `walk` on a numgen: (walk, slot or none).
    fn numgen<'s>(
        &mut self,
        walk: Walk,
        modulus: u32,
        slots: &'s [Slot],
    ) -> Vec<(Walk, Option<&'s Slot>)> {
        let slot_of = |value: u32| slots.iter().find(|s| s.low <= value && value <= s.high);
        match &mut self.mode {
            Mode::Explore => {
                let mut counts: Vec<(Option<&Slot>, u32)> = Vec::new();
                for value in 0..modulus {
                    let slot = slot_of(value);
                    match counts.iter_mut().find(|(s, _)| *s == slot) {
                        Some((_, n)) => *n += 1,
                        None => counts.push((slot, 1)),
                    }
                }
                counts
                    .into_iter()
                    .map(|(slot, n)| {
                        let mut w = walk.clone();
                        w.weight *= f64::from(n) / f64::from(modulus);
                        (w, slot)
                    })
                    .collect()
            }
            Mode::Sample(rng) => {
                // nft_ng_random: reciprocal_scale(random, modulus).
                let value = ((u64::from(rng.u32(..)) * u64::from(modulus)) >> 32) as u32;
                vec![(walk, slot_of(value))]
            }
        }
    }

    /// Runs `chain` of `table` from rule `from`.
    fn chain(
        &mut self,
        walk: Walk,
        table: &'r Table,
        chain_name: &str,
        from: usize,
        depth: usize,
    ) -> Vec<(Walk, Flow)> {
        let Some(chain) = table.chain(chain_name) else {
            return vec![(walk, Flow::Return)];
        };
        let mut walk = walk;
        for index in from..chain.rules.len() {
            let rule = &chain.rules[index];
            match self.decide(table, rule, &walk) {
                Decision::No => continue,
                Decision::Unknown(why) => {
                    self.warn(rule, format!("{why}; assumed not to match"));
                    continue;
                }
                Decision::Source(conditions) => {
                    let when = conditions.join(" and ");
                    if let Some((and, xor)) = self.mark_only(table, rule) {
                        walk.cond_marks.push(CondMark {
                            and,
                            xor,
                            when,
                            step: Self::step(table, chain_name, rule),
                        });
                    } else {
                        self.conditions.insert((
                            rule.line,
                            format!(
                                "{} {} line {}: taken only if {when} (pass --from to decide); not taken",
                                table.name, chain_name, rule.line
                            ),
                        ));
                    }
                    continue;
                }
                Decision::Random(stored, negated, text) => {
                    let mut out = Vec::new();
                    for (mut branch, matched) in self.branch(walk.clone(), stored, negated) {
                        if matched {
                            branch.probability = Some(text.clone());
                            out.extend(self.act(branch, table, chain_name, index, rule, depth));
                        } else {
                            out.extend(self.chain(branch, table, chain_name, index + 1, depth));
                        }
                    }
                    return out;
                }
                Decision::Yes => {
                    return self.act(walk, table, chain_name, index, rule, depth);
                }
            }
        }
        vec![(walk, Flow::Return)]
    }

    /// Runs `rule`'s statements, then the rest of the chain when they fall through.
    fn act(
        &mut self,
        mut walk: Walk,
        table: &'r Table,
        chain_name: &str,
        index: usize,
        rule: &'r Rule,
        depth: usize,
    ) -> Vec<(Walk, Flow)> {
        let step = Self::step(table, chain_name, rule);
        for action in &rule.actions {
            match action {
                Action::Continue => {}
                Action::Unsupported(text) => {
                    self.warn(rule, format!("cannot run `{text}`; assumed to do nothing"));
                }
                Action::SetMark { and, xor } => {
                    let before = walk.mark;
                    walk.mark = (walk.mark & and) ^ xor;
                    if walk.mark & !before != 0 {
                        // The rule that asked for the mark: the jump into a marking chain
                        // (KUBE-MARK-MASQ), or this rule.
                        walk.marked_by =
                            Some(walk.calls.last().cloned().unwrap_or_else(|| step.clone()));
                    }
                }
                Action::Verdict(verdict) => {
                    walk.path.push(step.clone());
                    return self.verdict(walk, table, chain_name, index, verdict, &step, depth);
                }
                Action::Reject(_) => {
                    walk.path.push(step.clone());
                    return vec![(walk, Flow::Reject(step))];
                }
                Action::Dnat { ip, port } => {
                    walk.path.push(step.clone());
                    walk.dst = *ip;
                    walk.dport = port.unwrap_or(walk.dport);
                    walk.dnat = Some((*ip, walk.dport, step.clone()));
                    return vec![(walk, Flow::Accept)];
                }
                Action::Snat(_) | Action::Masquerade => {
                    walk.path.push(step.clone());
                    walk.masquerade = Some(step.clone());
                    return vec![(walk, Flow::Accept)];
                }
                Action::VerdictMap { key, map } => {
                    if let Some(verdict) = self.lookup(table, rule, key, map, &walk) {
                        walk.path.push(step.clone());
                        return self
                            .verdict(walk, table, chain_name, index, &verdict, &step, depth);
                    }
                }
                Action::Numgen { modulus, slots } => {
                    let mut out = Vec::new();
                    for (mut branch, slot) in self.numgen(walk.clone(), *modulus, slots) {
                        match slot {
                            Some(slot) => {
                                branch.path.push(step.clone());
                                branch.probability =
                                    Some(format!("{}/{}", slot.high - slot.low + 1, modulus));
                                out.extend(self.verdict(
                                    branch,
                                    table,
                                    chain_name,
                                    index,
                                    &slot.verdict,
                                    &step,
                                    depth,
                                ));
                            }
                            None => {
                                out.extend(self.chain(branch, table, chain_name, index + 1, depth))
                            }
                        }
                    }
                    return out;
                }
            }
        }
        self.chain(walk, table, chain_name, index + 1, depth)
    }

    #[allow(clippy::too_many_arguments)]
    fn verdict(
        &mut self,
        walk: Walk,
        table: &'r Table,
        chain_name: &str,
        index: usize,
        verdict: &Verdict,
        step: &Step,
        depth: usize,
    ) -> Vec<(Walk, Flow)> {
        match verdict {
            Verdict::Accept => vec![(walk, Flow::Accept)],
            Verdict::Drop => vec![(walk, Flow::Drop(step.clone()))],
            Verdict::Return => vec![(walk, Flow::Return)],
            Verdict::Continue => self.chain(walk, table, chain_name, index + 1, depth),
            Verdict::Jump(target) | Verdict::Goto(target) => {
                if depth >= MAX_DEPTH {
                    let rule = &table.chain(chain_name).map(|c| c.rules[index].clone());
                    if let Some(rule) = rule {
                        self.warn(
                            rule,
                            format!("more than {MAX_DEPTH} nested jumps (a loop?); stopped"),
                        );
                    }
                    return vec![(walk, Flow::Return)];
                }
                let goto = matches!(verdict, Verdict::Goto(_));
                let mut inner = walk;
                inner.calls.push(step.clone());
                let mut out = Vec::new();
                for (mut after, flow) in self.chain(inner, table, target, 0, depth + 1) {
                    after.calls.pop();
                    match flow {
                        Flow::Return if !goto => {
                            out.extend(self.chain(after, table, chain_name, index + 1, depth));
                        }
                        flow => out.push((after, flow)),
                    }
                }
                out
            }
        }
    }

    /// Looks the packet up in a verdict map.
    fn lookup(
        &mut self,
        table: &Table,
        rule: &Rule,
        key: &[KeyPart],
        map: &MapRef,
        walk: &Walk,
    ) -> Option<Verdict> {
        let mut packet = Vec::new();
        for part in key {
            packet.push(match part {
                KeyPart::Daddr => KeyValue::Net(IpNet::from(walk.dst)),
                KeyPart::Saddr => match self.options.from {
                    Some(ip) => KeyValue::Net(IpNet::from(ip)),
                    None => {
                        self.warn(
                            rule,
                            "a map keyed by the source address needs --from; assumed not found",
                        );
                        return None;
                    }
                },
                KeyPart::L4proto => KeyValue::Proto(self.packet_protocol()),
                // No element of kube-proxy's maps is keyed by an ICMP packet's bytes.
                KeyPart::Dport if self.options.icmp => return None,
                KeyPart::Dport => KeyValue::Port(walk.dport, walk.dport),
                KeyPart::Sport => {
                    self.warn(
                        rule,
                        "a map keyed by the source port cannot be looked up; assumed not found",
                    );
                    return None;
                }
            });
        }
        let elements: &[Element] = match map {
            MapRef::Inline(elements) => elements,
            MapRef::Named(name) => match table.sets.get(name) {
                Some(set) => &set.elements,
                None => {
                    self.warn(
                        rule,
                        format!("no map @{name} in table {}; assumed not found", table.name),
                    );
                    return None;
                }
            },
        };
        elements
            .iter()
            .find(|element| {
                element.key.len() == packet.len()
                    && element
                        .key
                        .iter()
                        .zip(&packet)
                        .all(|(value, field)| key_matches(value, field))
            })
            .and_then(|element| element.verdict.clone())
    }

    /// Runs the base chains of `hook`, in priority order.
    fn hook(&mut self, walk: Walk, hook: Hook) -> Vec<Walk> {
        let mut bases: Vec<(i32, usize, &'r Table, &'r str, bool)> = Vec::new();
        for (index, table) in self.ruleset.tables.iter().enumerate() {
            if !table.family.covers(self.family) {
                continue;
            }
            for chain in &table.chains {
                if let Some(base) = chain.base
                    && base.hook == hook
                {
                    bases.push((base.priority, index, table, &chain.name, base.policy_accept));
                }
            }
        }
        bases.sort_by_key(|(priority, index, ..)| (*priority, *index));
        let mut walks = vec![walk];
        for (_, _, table, chain, policy_accept) in bases {
            let mut next = Vec::new();
            for walk in walks {
                if walk.end.is_some() {
                    next.push(walk);
                    continue;
                }
                for (mut after, flow) in self.chain(walk, table, chain, 0, 0) {
                    match flow {
                        Flow::Accept => {}
                        Flow::Return if policy_accept => {}
                        Flow::Return => {
                            after.end = Some(End::Drop(Step {
                                table: table.name.clone(),
                                chain: chain.to_owned(),
                                line: table.chain(chain).map_or(0, |c| c.line),
                                rule: format!("{chain} policy DROP"),
                            }));
                        }
                        Flow::Drop(step) => after.end = Some(End::Drop(step)),
                        Flow::Reject(step) => after.end = Some(End::Reject(step)),
                    }
                    next.push(after);
                }
            }
            walks = next;
        }
        walks
    }

    /// Postrouting, and for each conditional mark, whether it would get the packet
    /// masqueraded.
    fn postrouting(&mut self, walk: Walk) -> Vec<Walk> {
        let before = walk.clone();
        let mut out = self.hook(walk, Hook::Postrouting);
        for result in &mut out {
            if result.end.is_some() || result.masquerade.is_some() {
                continue;
            }
            for cond in &before.cond_marks {
                let mut trial = before.clone();
                trial.mark = (trial.mark & cond.and) ^ cond.xor;
                trial.cond_marks.clear();
                // Side walks must not split the weight or warn twice.
                let warnings = self.warnings.clone();
                let masqueraded = self
                    .hook(trial, Hook::Postrouting)
                    .into_iter()
                    .find_map(|w| w.masquerade);
                self.warnings = warnings;
                if let Some(by) = masqueraded {
                    result.cond_masquerade.push(Masquerade {
                        when: Some(cond.when.clone()),
                        why: why(&cond.step, Some(&cond.when)),
                        marked_by: Some(cond.step.clone()),
                        masqueraded_by: by,
                        endpoints: Vec::new(),
                    });
                }
            }
        }
        out
    }

    /// The whole walk of one new connection.
    fn traverse(&mut self, walk: Walk) -> Vec<Walk> {
        let first = if self.options.local {
            Hook::Output
        } else {
            Hook::Prerouting
        };
        let mut done = Vec::new();
        for walk in self.hook(walk, first) {
            if walk.end.is_some() {
                done.push(walk);
                continue;
            }
            let local_destination = self.is_local(walk.dst);
            let mut walks = vec![walk];
            let hooks: &[Hook] = match (self.options.local, local_destination) {
                (true, _) => &[Hook::Postrouting],
                (false, true) => &[Hook::Input],
                (false, false) => &[Hook::Forward, Hook::Postrouting],
            };
            for hook in hooks {
                let mut next = Vec::new();
                for walk in walks {
                    if walk.end.is_some() {
                        next.push(walk);
                    } else if *hook == Hook::Postrouting {
                        next.extend(self.postrouting(walk));
                    } else {
                        next.extend(self.hook(walk, *hook));
                    }
                }
                walks = next;
            }
            done.extend(walks);
        }
        done
    }

    fn start(&self) -> Walk {
        Walk {
            weight: 1.0,
            dst: self.options.to,
            dport: self.options.port,
            mark: 0,
            dnat: None,
            probability: None,
            masquerade: None,
            marked_by: None,
            cond_marks: Vec::new(),
            cond_masquerade: Vec::new(),
            path: Vec::new(),
            calls: Vec::new(),
            end: None,
        }
    }
}

/// Why kube-proxy masquerades, read from the marking rule's shape.
fn why(step: &Step, when: Option<&str>) -> String {
    let chain = step.chain.as_str();
    let rule = step.rule.as_str();
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

/// The `--comment` of a rule as written (`-m comment --comment "..."`, nft `comment "..."`).
fn comment_of(rule: &str) -> Option<String> {
    let (_, rest) = rule
        .split_once("--comment ")
        .or_else(|| rule.split_once("comment "))?;
    let text = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split_once('"').map_or(quoted, |(text, _)| text),
        None => rest.split_whitespace().next().unwrap_or_default(),
    };
    (!text.is_empty()).then(|| text.to_owned())
}

fn verdict_of(walk: &Walk) -> (TraceVerdict, Option<Step>) {
    match &walk.end {
        Some(End::Drop(step)) => (TraceVerdict::Drop, Some(step.clone())),
        Some(End::Reject(step)) => (TraceVerdict::Reject, Some(step.clone())),
        None if walk.dnat.is_some() => (TraceVerdict::Dnat, None),
        None => (TraceVerdict::NoMatch, None),
    }
}

fn common_prefix(paths: &[&[Step]]) -> usize {
    let Some(first) = paths.first() else {
        return 0;
    };
    let mut n = 0;
    while n < first.len() && paths.iter().all(|p| p.get(n) == first.get(n)) {
        n += 1;
    }
    n
}

/// Traces a new connection through `ruleset`.
pub fn trace(ruleset: &Ruleset, options: &TraceOptions) -> TraceReport {
    let mut tracer = Tracer::new(ruleset, options, Mode::Explore);
    if !ruleset
        .tables
        .iter()
        .any(|table| table.family.covers(tracer.family))
    {
        tracer.conditions.insert((
            0,
            format!(
                "no table of the ruleset applies to {} packets",
                tracer.family.as_str()
            ),
        ));
    }
    let start = tracer.start();
    let walks = tracer.traverse(start);

    let mut by_verdict: BTreeMap<&'static str, (TraceVerdict, f64, Option<Step>)> = BTreeMap::new();
    for walk in &walks {
        let (verdict, by) = verdict_of(walk);
        let entry = by_verdict
            .entry(verdict.as_str())
            .or_insert((verdict, 0.0, by.clone()));
        entry.1 += walk.weight;
    }
    // The verdict: DNAT when any path rewrites, else the heaviest outcome.
    let verdict = if by_verdict.contains_key("dnat") {
        TraceVerdict::Dnat
    } else {
        by_verdict
            .values()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(TraceVerdict::NoMatch, |v| v.0)
    };
    let terminal = by_verdict
        .get(verdict.as_str())
        .and_then(|(_, _, by)| by.clone());
    let other_outcomes = by_verdict
        .values()
        .filter(|(v, _, _)| *v != verdict)
        .map(|(verdict, share, by)| Outcome {
            verdict: *verdict,
            share: *share,
            by: by.clone(),
        })
        .collect();

    let paths: Vec<&[Step]> = walks.iter().map(|w| w.path.as_slice()).collect();
    let prefix = common_prefix(&paths);
    let path = walks
        .first()
        .map(|w| w.path[..prefix].to_vec())
        .unwrap_or_default();

    let mut endpoints: Vec<EndpointShare> = Vec::new();
    for walk in &walks {
        let (Some((ip, port, dnat)), None) = (&walk.dnat, &walk.end) else {
            continue;
        };
        let address = ip.to_string();
        match endpoints
            .iter_mut()
            .find(|e| e.address == address && e.port == *port)
        {
            Some(existing) => existing.share += walk.weight,
            None => endpoints.push(EndpointShare {
                address,
                port: *port,
                share: walk.weight,
                dnat: dnat.clone(),
                probability: walk.probability.clone(),
                path: walk.path[prefix.min(walk.path.len())..].to_vec(),
            }),
        }
    }

    // Each masquerade once, in the order the walks meet them, with the endpoints it
    // applies to.
    let mut masquerade: Vec<(Masquerade, BTreeSet<String>)> = Vec::new();
    let all_targets: BTreeSet<String> = walks
        .iter()
        .filter_map(|w| {
            w.dnat
                .as_ref()
                .map(|(ip, port, _)| join_host_port(*ip, *port))
        })
        .collect();
    for walk in &walks {
        if walk.end.is_some() {
            continue;
        }
        let target = walk
            .dnat
            .as_ref()
            .map(|(ip, port, _)| join_host_port(*ip, *port));
        let mut found: Vec<Masquerade> = Vec::new();
        if let Some(by) = &walk.masquerade {
            let marked_by = walk.marked_by.clone();
            let why = marked_by.as_ref().map_or_else(
                || match comment_of(&by.rule) {
                    Some(comment) => format!("a rule that tests no kube-proxy mark: \"{comment}\""),
                    None => "a rule that tests no kube-proxy mark".to_owned(),
                },
                |step| why(step, None),
            );
            found.push(Masquerade {
                when: None,
                why,
                marked_by,
                masqueraded_by: by.clone(),
                endpoints: Vec::new(),
            });
        }
        found.extend(walk.cond_masquerade.iter().cloned());
        for entry in found {
            match masquerade.iter_mut().find(|(m, _)| *m == entry) {
                Some((_, targets)) => targets.extend(target.clone()),
                None => masquerade.push((entry, target.clone().into_iter().collect())),
            }
        }
    }
    let masquerade: Vec<Masquerade> = masquerade
        .into_iter()
        .map(|(mut entry, targets)| {
            if targets != all_targets {
                entry.endpoints = targets.into_iter().collect();
            }
            entry
        })
        .collect();

    let mut notes = Vec::new();
    let nat_only = ruleset.format == Format::IptablesSave
        && ruleset.tables.iter().any(|t| t.name == "nat")
        && !ruleset.tables.iter().any(|t| t.name == "filter");
    if nat_only && verdict != TraceVerdict::Dnat {
        notes.push(
            "the ruleset has no filter table (`iptables-save -t nat`): kube-proxy's REJECT for \
             a Service without endpoints and the load-balancer firewall's DROP live there, so \
             this verdict is the nat table's alone; take `iptables-save` without -t to see them"
                .to_owned(),
        );
    }
    let packet = if options.icmp {
        "an ICMP echo (ping)".to_owned()
    } else {
        format!("{}/{}", options.protocol.lower(), options.port)
    };
    if options.icmp && verdict == TraceVerdict::Dnat {
        // Not kube-proxy's: some other rule rewrites ICMP.
    } else if verdict == TraceVerdict::NoMatch && !tracer.is_local(options.to) {
        let (ports, name) = service_ports(ruleset, options.to);
        if !ports.is_empty() {
            let service = name.map(|n| format!(" ({n})")).unwrap_or_default();
            notes.push(format!(
                "{} is a Service address{service}: kube-proxy's rules rewrite only {} to it; \
                 no interface on any node owns the address, so nothing answers {packet}: the \
                 packet goes on toward the default route and gets no reply{}",
                options.to,
                ports.join(", "),
                if options.icmp {
                    " (ping a Service's endpoints, or test it with a connection to one of its \
                     ports)"
                } else {
                    ""
                }
            ));
        }
    }
    if tracer.is_local(options.to) && !options.node_local && !options.to.is_loopback() {
        let given = options.node_ips.contains(&options.to);
        notes.push(format!(
            "{} is this node's address ({}): `--dst-type LOCAL` and `fib daddr type local` \
             match it",
            options.to,
            if given {
                "given with --node-ip"
            } else {
                "named by the ruleset's NodePort rules"
            }
        ));
    }
    TraceReport {
        verdict,
        to: if options.icmp {
            options.to.to_string()
        } else {
            join_host_port(options.to, options.port)
        },
        protocol: if options.icmp {
            match IpFamily::of(options.to) {
                IpFamily::V4 => "icmp",
                IpFamily::V6 => "icmpv6",
            }
            .to_owned()
        } else {
            options.protocol.lower().to_owned()
        },
        from: options.from.map(|ip| ip.to_string()),
        origin: if options.local { "node" } else { "network" }.to_owned(),
        path,
        endpoints,
        masquerade,
        terminal,
        other_outcomes,
        conditions: tracer
            .conditions
            .into_iter()
            .map(|(_, text)| text)
            .collect(),
        warnings: tracer.warnings.into_values().collect(),
        notes,
        node_ips: tracer.node_ips.iter().map(ToString::to_string).collect(),
    }
}

/// What `--simulate` observed.
#[derive(Debug, Clone, Serialize)]
pub struct Simulation {
    /// How many connections.
    pub connections: u64,
    /// The generator's seed.
    pub seed: u64,
    /// Per endpoint (`ip:port`, or the verdict for connections not rewritten): count.
    pub counts: Vec<SimulatedCount>,
}

/// One line of a simulation.
#[derive(Debug, Clone, Serialize)]
pub struct SimulatedCount {
    /// `ip:port`, or `reject`/`drop`/`no-match`.
    pub target: String,
    /// Connections.
    pub count: u64,
    /// Observed share.
    pub share: f64,
}

/// Draws `connections` new connections through `ruleset` with a generator seeded by `seed`.
pub fn simulate(
    ruleset: &Ruleset,
    options: &TraceOptions,
    connections: u64,
    seed: u64,
) -> Simulation {
    let mut tracer = Tracer::new(
        ruleset,
        options,
        Mode::Sample(fastrand::Rng::with_seed(seed)),
    );
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for _ in 0..connections {
        let start = tracer.start();
        for walk in tracer.traverse(start) {
            let target = match (verdict_of(&walk).0, &walk.dnat) {
                (TraceVerdict::Dnat, Some((ip, port, _))) => join_host_port(*ip, *port),
                (verdict, _) => verdict.as_str().to_owned(),
            };
            if !counts.contains_key(&target) {
                order.push(target.clone());
            }
            *counts.entry(target).or_default() += 1;
        }
    }
    order.sort();
    Simulation {
        connections,
        seed,
        counts: order
            .into_iter()
            .map(|target| {
                let count = counts[&target];
                SimulatedCount {
                    share: if connections == 0 {
                        0.0
                    } else {
                        count as f64 / connections as f64
                    },
                    target,
                    count,
                }
            })
            .collect(),
    }
}

fn step_line(step: &Step) -> String {
    format!(
        "{} {} line {}: {}",
        step.table, step.chain, step.line, step.rule
    )
}

/// The report as text.
pub fn report_text(report: &TraceReport, simulation: Option<&Simulation>) -> String {
    let mut out = String::new();
    let origin = if report.origin == "node" {
        "sent by the node (OUTPUT)"
    } else {
        "from the network (PREROUTING)"
    };
    let from = report
        .from
        .as_ref()
        .map_or_else(|| "source unknown".to_owned(), |f| format!("from {f}"));
    let _ = writeln!(
        out,
        "{}/{} {origin}, {from}: {}",
        report.to,
        report.protocol,
        report.verdict.as_str()
    );
    for note in &report.notes {
        let _ = writeln!(out, "note: {note}");
    }
    if !report.path.is_empty() {
        out.push_str("path:\n");
        for step in &report.path {
            let _ = writeln!(out, "  {}", step_line(step));
        }
    }
    if let Some(terminal) = &report.terminal {
        let what = match report.verdict {
            TraceVerdict::Reject => "rejected by",
            TraceVerdict::Drop => "dropped by",
            _ => "ended by",
        };
        if report.path.last().is_none_or(|last| last != terminal) {
            let _ = writeln!(out, "{what}:\n  {}", step_line(terminal));
        } else {
            let _ = writeln!(out, "{what} the last rule above");
        }
    }
    if !report.endpoints.is_empty() {
        out.push_str("endpoints:\n");
        let targets: Vec<String> = report
            .endpoints
            .iter()
            .map(|e| match e.address.parse::<IpAddr>() {
                Ok(ip) => join_host_port(ip, e.port),
                Err(_) => format!("{}:{}", e.address, e.port),
            })
            .collect();
        let width = targets.iter().map(String::len).max().unwrap_or(0);
        for (endpoint, target) in report.endpoints.iter().zip(&targets) {
            let probability = endpoint
                .probability
                .as_ref()
                .map(|p| format!(", chosen with probability {p}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {target:<width$}  {:>9.5}%  {} line {}{probability}",
                endpoint.share * 100.0,
                endpoint.dnat.chain,
                endpoint.dnat.line,
            );
        }
    }
    if !report.masquerade.is_empty() {
        out.push_str("masquerade:\n");
        for masq in &report.masquerade {
            let mut when = masq
                .when
                .as_ref()
                .map_or_else(|| "always".to_owned(), |w| format!("if {w}"));
            if !masq.endpoints.is_empty() {
                let _ = write!(when, " (connections to {})", masq.endpoints.join(", "));
            }
            let marked = masq
                .marked_by
                .as_ref()
                .map(|s| format!("marked by {} {} line {}; ", s.table, s.chain, s.line))
                .unwrap_or_default();
            let _ = writeln!(out, "  {when}: {}", masq.why);
            let _ = writeln!(
                out,
                "    {marked}masqueraded by {} {} line {}",
                masq.masqueraded_by.table, masq.masqueraded_by.chain, masq.masqueraded_by.line
            );
        }
    } else if report.verdict == TraceVerdict::Dnat {
        out.push_str("masquerade: never (the client's address is kept)\n");
    }
    for outcome in &report.other_outcomes {
        let by = outcome
            .by
            .as_ref()
            .map(|s| format!(" by {} {} line {}", s.table, s.chain, s.line))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "also: {} {:.5}%{by}",
            outcome.verdict.as_str(),
            outcome.share * 100.0
        );
    }
    if !report.conditions.is_empty() {
        out.push_str("conditions:\n");
        for condition in &report.conditions {
            let _ = writeln!(out, "  {condition}");
        }
    }
    if !report.warnings.is_empty() {
        out.push_str("not understood:\n");
        for warning in &report.warnings {
            let _ = writeln!(
                out,
                "  line {}: {}\n    {}",
                warning.line, warning.problem, warning.rule
            );
        }
    }
    if let Some(simulation) = simulation {
        let _ = writeln!(
            out,
            "simulated {} connections (seed {}):",
            simulation.connections, simulation.seed
        );
        let width = simulation
            .counts
            .iter()
            .map(|c| c.target.len())
            .max()
            .unwrap_or(0);
        let digits = simulation.connections.to_string().len();
        for count in &simulation.counts {
            let _ = writeln!(
                out,
                "  {:<width$}  {:>digits$}  {:>6.2}%",
                count.target,
                count.count,
                count.share * 100.0
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::cascade::cascade;
    use crate::proxy::ruleset::parse;

    fn options(to: &str) -> TraceOptions {
        let to: std::net::SocketAddr = to.parse().expect("test address");
        TraceOptions {
            to: to.ip(),
            port: to.port(),
            protocol: Protocol::Tcp,
            from: None,
            local: false,
            node_local: false,
            node_ips: Vec::new(),
            icmp: false,
        }
    }

    fn run(text: &str, options: &TraceOptions) -> TraceReport {
        trace(&parse(text).expect("test ruleset parses"), options)
    }

    fn targets(report: &TraceReport) -> Vec<(String, u16)> {
        report
            .endpoints
            .iter()
            .map(|e| (e.address.clone(), e.port))
            .collect()
    }

    const NAT_HEAD: &str = "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n";

    #[test]
    fn goto_returns_to_the_callers_caller() {
        let text = format!(
            "{NAT_HEAD}:A - [0:0]\n:B - [0:0]\n:C - [0:0]\n-A PREROUTING -j A\n-A A -j B\n-A A -p tcp -j DNAT --to-destination 10.0.0.1:80\n-A B -g C\n-A B -p tcp -j DNAT --to-destination 10.0.0.2:80\nCOMMIT\n"
        );
        let report = run(&text, &options("10.96.0.1:80"));
        assert_eq!(report.verdict, TraceVerdict::Dnat);
        assert_eq!(targets(&report), [("10.0.0.1".to_owned(), 80)]);
    }

    #[test]
    fn jump_returns_to_the_next_rule() {
        let text = format!(
            "{NAT_HEAD}:A - [0:0]\n-A PREROUTING -j A\n-A PREROUTING -p tcp -j DNAT --to-destination 10.0.0.3\n-A A -j RETURN\n-A A -p tcp -j DNAT --to-destination 10.0.0.4:80\nCOMMIT\n"
        );
        let report = run(&text, &options("10.96.0.1:8080"));
        // RETURN leaves A at once; the port is kept when DNAT gives none.
        assert_eq!(targets(&report), [("10.0.0.3".to_owned(), 8080)]);
    }

    #[test]
    fn a_drop_policy_drops_what_falls_through() {
        let text = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\n-A FORWARD -d 10.0.0.9/32 -j ACCEPT\nCOMMIT\n";
        let dropped = run(text, &options("10.0.0.8:80"));
        assert_eq!(dropped.verdict, TraceVerdict::Drop);
        assert_eq!(
            dropped.terminal.as_ref().map(|s| s.rule.as_str()),
            Some("FORWARD policy DROP")
        );
        let passed = run(text, &options("10.0.0.9:80"));
        assert_eq!(passed.verdict, TraceVerdict::NoMatch);
    }

    #[test]
    fn filter_reject_before_nothing_in_nat() {
        let text = format!(
            "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n-A FORWARD -m conntrack --ctstate NEW -j KUBE-SERVICES\n-A OUTPUT -m conntrack --ctstate NEW -j KUBE-SERVICES\n-A KUBE-SERVICES -d 10.96.0.40/32 -p tcp -m comment --comment \"shop/empty:http has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable\nCOMMIT\n{NAT_HEAD}COMMIT\n"
        );
        for local in [false, true] {
            let mut o = options("10.96.0.40:80");
            o.local = local;
            let report = run(&text, &o);
            assert_eq!(report.verdict, TraceVerdict::Reject, "local={local}");
            assert_eq!(report.terminal.as_ref().map(|s| s.line), Some(8));
        }
        // Another port of the same address is not rejected.
        assert_eq!(
            run(&text, &options("10.96.0.40:81")).verdict,
            TraceVerdict::NoMatch
        );
    }

    /// Every cascade up to 20 endpoints, walked as rules: each endpoint gets 1/n.
    #[test]
    fn walked_cascades_give_one_nth() {
        for n in 1..=20 {
            let mut text = format!("{NAT_HEAD}:KUBE-SVC-X - [0:0]\n");
            for i in 0..n {
                text.push_str(&format!(":KUBE-SEP-{i} - [0:0]\n"));
            }
            text.push_str(
                "-A PREROUTING -d 10.96.0.20/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-X\n",
            );
            for (i, p) in cascade(n).iter().enumerate() {
                let statistic = p
                    .map(|p| format!(" -m statistic --mode random --probability {}", p.printed()))
                    .unwrap_or_default();
                text.push_str(&format!("-A KUBE-SVC-X{statistic} -j KUBE-SEP-{i}\n"));
            }
            for i in 0..n {
                text.push_str(&format!(
                    "-A KUBE-SEP-{i} -p tcp -m tcp -j DNAT --to-destination 10.244.0.{}:8080\n",
                    i + 1
                ));
            }
            text.push_str("COMMIT\n");
            let report = run(&text, &options("10.96.0.20:80"));
            assert_eq!(report.endpoints.len(), n, "n={n}");
            let total: f64 = report.endpoints.iter().map(|e| e.share).sum();
            assert!((total - 1.0).abs() < 1e-12, "n={n}");
            for endpoint in &report.endpoints {
                assert!(
                    (endpoint.share - 1.0 / n as f64).abs() <= n as f64 / STATISTIC_SCALE_FOR_TESTS,
                    "n={n}: {} gets {}",
                    endpoint.address,
                    endpoint.share
                );
            }
        }
    }

    const STATISTIC_SCALE_FOR_TESTS: f64 = crate::proxy::cascade::STATISTIC_SCALE;

    #[test]
    fn unequal_cascades_show_their_real_shares() {
        let text = format!(
            "{NAT_HEAD}:S - [0:0]\n-A PREROUTING -j S\n-A S -m statistic --mode random --probability 0.33333333349 -p tcp -j DNAT --to-destination 10.0.0.1:80\n-A S -m statistic --mode random --probability 0.33333333349 -p tcp -j DNAT --to-destination 10.0.0.2:80\n-A S -p tcp -j DNAT --to-destination 10.0.0.3:80\nCOMMIT\n"
        );
        let report = run(&text, &options("10.96.0.1:80"));
        let shares: Vec<f64> = report.endpoints.iter().map(|e| e.share).collect();
        assert!((shares[0] - 1.0 / 3.0).abs() < 1e-9);
        assert!((shares[1] - 2.0 / 9.0).abs() < 1e-9);
        assert!((shares[2] - 4.0 / 9.0).abs() < 1e-9);
    }

    #[test]
    fn unknown_shapes_are_reported_with_their_line_when_reached() {
        let text = format!(
            "{NAT_HEAD}:A - [0:0]\n-A PREROUTING -m set --match-set allowed src -j A\n-A PREROUTING -i eth0 -j A\n-A PREROUTING -d 10.1.1.1/32 -m socket -j A\n-A PREROUTING -p tcp -j DNAT --to-destination 10.0.0.1:80\nCOMMIT\n"
        );
        let report = run(&text, &options("10.96.0.1:80"));
        assert_eq!(report.verdict, TraceVerdict::Dnat);
        let lines: Vec<usize> = report.warnings.iter().map(|w| w.line).collect();
        // Line 9 is decided by its -d before the unknown module matters.
        assert_eq!(lines, [7, 8]);
        assert!(
            report.warnings[0]
                .problem
                .contains("cannot evaluate `-m set --match-set allowed src`")
        );
        assert!(report.warnings[1].problem.contains("incoming interface"));
    }

    #[test]
    fn jump_loops_stop() {
        let text = format!(
            "{NAT_HEAD}:A - [0:0]\n:B - [0:0]\n-A PREROUTING -j A\n-A A -j B\n-A B -j A\nCOMMIT\n"
        );
        let report = run(&text, &options("10.96.0.1:80"));
        assert_eq!(report.verdict, TraceVerdict::NoMatch);
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.problem.contains("nested jumps"))
        );
    }

    #[test]
    fn source_tests_are_conditions_until_decided() {
        let text = format!(
            "{NAT_HEAD}:KUBE-MARK-MASQ - [0:0]\n:KUBE-POSTROUTING - [0:0]\n:SVC - [0:0]\n-A PREROUTING -j SVC\n-A POSTROUTING -j KUBE-POSTROUTING\n-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n-A KUBE-POSTROUTING -j MASQUERADE --random-fully\n-A SVC ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ\n-A SVC -s 192.168.0.0/16 -p tcp -j DNAT --to-destination 10.0.0.9:80\n-A SVC -p tcp -j DNAT --to-destination 10.0.0.1:80\nCOMMIT\n"
        );
        let unknown = run(&text, &options("10.96.0.1:80"));
        assert_eq!(targets(&unknown), [("10.0.0.1".to_owned(), 80)]);
        assert_eq!(unknown.masquerade.len(), 1);
        assert_eq!(
            unknown.masquerade[0].when.as_deref(),
            Some("the source is not in 10.244.0.0/16")
        );
        assert!(unknown.conditions[0].contains("taken only if the source is in 192.168.0.0/16"));

        let mut pod = options("10.96.0.1:80");
        pod.from = Some("10.244.3.3".parse().expect("ip"));
        let pod = run(&text, &pod);
        assert!(pod.masquerade.is_empty() && pod.conditions.is_empty());

        let mut outside = options("10.96.0.1:80");
        outside.from = Some("192.168.1.1".parse().expect("ip"));
        let outside = run(&text, &outside);
        assert_eq!(targets(&outside), [("10.0.0.9".to_owned(), 80)]);
        assert_eq!(outside.masquerade.len(), 1);
        assert_eq!(outside.masquerade[0].when, None);
        assert_eq!(
            outside.masquerade[0].marked_by.as_ref().map(|s| s.line),
            Some(15)
        );
    }

    #[test]
    fn simulations_are_deterministic_for_a_seed() {
        let text = format!(
            "{NAT_HEAD}:S - [0:0]\n-A PREROUTING -j S\n-A S -m statistic --mode random --probability 0.33333333349 -p tcp -j DNAT --to-destination 10.0.0.1:80\n-A S -m statistic --mode random --probability 0.50000000000 -p tcp -j DNAT --to-destination 10.0.0.2:80\n-A S -p tcp -j DNAT --to-destination 10.0.0.3:80\nCOMMIT\n"
        );
        let ruleset = parse(&text).expect("parses");
        let o = options("10.96.0.1:80");
        let counts = |seed| {
            simulate(&ruleset, &o, 3000, seed)
                .counts
                .iter()
                .map(|c| (c.target.clone(), c.count))
                .collect::<Vec<_>>()
        };
        assert_eq!(counts(7), counts(7));
        assert_ne!(counts(7), counts(8));
        let total: u64 = counts(7).iter().map(|c| c.1).sum();
        assert_eq!(total, 3000);
        // Each of the three gets roughly a third (±5 standard deviations).
        for (_, count) in counts(7) {
            assert!((850..=1150).contains(&count), "{count}");
        }
    }
}

#[cfg(test)]
mod family_tests {
    use super::*;
    use crate::proxy::ruleset::parse;

    #[test]
    fn a_ruleset_of_the_other_family_says_so() {
        let ruleset = parse(
            "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -d 10.0.0.1/32 -j ACCEPT\nCOMMIT\n",
        )
        .expect("parses");
        let report = trace(
            &ruleset,
            &TraceOptions {
                to: "fd00::1".parse().expect("ip"),
                port: 80,
                protocol: Protocol::Tcp,
                from: None,
                local: false,
                node_local: false,
                node_ips: Vec::new(),
                icmp: false,
            },
        );
        assert_eq!(report.verdict, TraceVerdict::NoMatch);
        assert_eq!(
            report.conditions,
            ["no table of the ruleset applies to IPv6 packets"]
        );
    }
}
