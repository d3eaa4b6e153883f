//! The report: every walk of one connection folded into where it goes, with what share,
//! masqueraded when and why; and the report as text.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::IpAddr;

use ipnet::IpNet;

use super::state::{Mode, Tracer, Walk, on_walk_stack, verdict_of, why};
use super::{
    EndpointShare, Hop, Masquerade, Simulation, TraceOptions, TraceReport, TraceVerdict,
    VerdictShare,
};
use crate::plan::{IpFamily, join_host_port};
use crate::ruleset::{AddrValue, Format, KeyValue, Match, ProtoValue, Ruleset, Side, TableFamily};

/// The protocols and ports a ruleset sends to `ip` (its rules that test that destination,
/// and nft map elements keyed by it), as `tcp/80`; and the rule comment naming it.
pub(super) fn service_ports(ruleset: &Ruleset, ip: IpAddr) -> (Vec<String>, Option<String>) {
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

/// The `--comment` of a rule as written (`-m comment --comment "..."`, nft `comment "..."`).
pub(super) fn comment_of(rule: &str) -> Option<String> {
    let (_, rest) = rule
        .split_once("--comment ")
        .or_else(|| rule.split_once("comment "))?;
    let text = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split_once('"').map_or(quoted, |(text, _)| text),
        None => rest.split_whitespace().next().unwrap_or_default(),
    };
    (!text.is_empty()).then(|| text.to_owned())
}

pub(super) fn common_prefix(paths: &[&[Hop]]) -> usize {
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
    on_walk_stack(|| trace_walks(ruleset, options))
}

/// [`trace`], on the walk's stack.
fn trace_walks(ruleset: &Ruleset, options: &TraceOptions) -> TraceReport {
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

    let (verdict, terminal, other_outcomes) = outcomes(&walks);
    let paths: Vec<&[Hop]> = walks.iter().map(|w| w.path.as_slice()).collect();
    let prefix = common_prefix(&paths);
    let path = walks
        .first()
        .map(|w| w.path[..prefix].to_vec())
        .unwrap_or_default();

    let endpoints = endpoint_shares(&walks, prefix);
    let masquerade = masquerades(&walks);
    let notes = notes(ruleset, options, &tracer, verdict);
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
        assumed_jumps: ruleset.assumed_jumps.clone(),
        node_ips: tracer.node_ips.iter().map(ToString::to_string).collect(),
    }
}

/// Where the walks end: the verdict (DNAT when any path rewrites, else the heaviest
/// outcome), the rule that ended it, and the other outcomes with their shares.
fn outcomes(walks: &[Walk]) -> (TraceVerdict, Option<Hop>, Vec<VerdictShare>) {
    let mut by_verdict: BTreeMap<&'static str, (TraceVerdict, f64, Option<Hop>)> = BTreeMap::new();
    for walk in walks {
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
        .map(|(verdict, share, by)| VerdictShare {
            verdict: *verdict,
            share: *share,
            by: by.clone(),
        })
        .collect();
    (verdict, terminal, other_outcomes)
}

/// The endpoints the walks DNAT to, each with its share and the path from where the walks
/// part.
fn endpoint_shares(walks: &[Walk], prefix: usize) -> Vec<EndpointShare> {
    let mut endpoints: Vec<EndpointShare> = Vec::new();
    for walk in walks {
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
    endpoints
}

/// Each masquerade once, in the order the walks meet them, with the endpoints it applies
/// to when not all of them.
fn masquerades(walks: &[Walk]) -> Vec<Masquerade> {
    let mut masquerade: Vec<(Masquerade, BTreeSet<String>)> = Vec::new();
    let all_targets: BTreeSet<String> = walks
        .iter()
        .filter_map(|w| {
            w.dnat
                .as_ref()
                .map(|(ip, port, _)| join_host_port(*ip, *port))
        })
        .collect();
    for walk in walks {
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
                    // kube-proxy 1.36's hairpin rule masquerades by itself, with no mark.
                    _ if by.rule.contains("@hairpin-connections") => why(by, None),
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
    masquerade
}

/// What the verdict means where the ruleset cannot show it all: a nat-only dump, a Service
/// address nothing answers on, a node address.
fn notes(
    ruleset: &Ruleset,
    options: &TraceOptions,
    tracer: &Tracer<'_>,
    verdict: TraceVerdict,
) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(ip) = tracer.martian {
        notes.push(format!(
            "the rules rewrite the packet to {ip}, a loopback address: the kernel drops a \
             packet from the network sent there (a martian) unless it is IPv4 and \
             net.ipv4.conf.*.route_localnet is 1, which kube-proxy's iptables mode sets and \
             its nftables mode does not"
        ));
    }
    if !ruleset.assumed_jumps.is_empty() {
        notes.push(format!(
            "no built-in chain jumps into kube-proxy's chains (kube-proxy's iptables-restore \
             input holds only its own chains; it installs the jumps apart): traced as if its \
             standard jumps were installed ({} rules, shown as `assumed`)",
            ruleset.assumed_jumps.len()
        ));
    }
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
    notes
}

pub(super) fn step_line(step: &Hop) -> String {
    if step.line == 0 {
        // A jump the text lacked (`Ruleset::assumed_jumps`).
        return format!("{} {} assumed: {}", step.table, step.chain, step.rule);
    }
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
