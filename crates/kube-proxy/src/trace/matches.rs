//! What one rule's matches say about the packet: yes, no, only for some sources, with a
//! probability, or undecidable.

use std::net::IpAddr;

use ipnet::IpNet;

use super::state::{Tracer, Walk};
use crate::cascade::Stored;
use crate::ruleset::{
    Action, AddrValue, CtState, KeyPart, KeyValue, Match, ProtoValue, RecentOp, Rule, Side, Table,
    Verdict,
};

/// What the matches of a rule say.
pub(super) enum Decision {
    No,
    Yes,
    /// Matches only for some sources: the conditions.
    Source(Vec<String>),
    /// Cannot be decided: why.
    Unknown(String),
    /// Matches with a probability (a statistic match).
    Random(Stored, bool, String),
}

pub(super) fn describe_addr(side: Side, negated: bool, value: &AddrValue) -> String {
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
pub(super) fn same_protocol(rule: &ProtoValue, packet: &ProtoValue) -> bool {
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

pub(super) fn in_nets(ip: IpAddr, nets: &[IpNet]) -> bool {
    nets.iter().any(|net| net.contains(&ip))
}

pub(super) fn key_matches(value: &KeyValue, packet: &KeyValue) -> bool {
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

/// What a concatenated membership test (`ip saddr . ip daddr . ... @set`) says.
pub(super) enum KeyLookup {
    /// Decided: whether the packet's key is in the set.
    Found(bool),
    /// The source is not known: the sources whose elements match the rest of the key.
    Sources(Vec<String>),
    /// Cannot be decided (no such set, a source port).
    Unknown(String),
}

/// A field of the packet, as a set's or map's key reads it.
pub(super) enum Field {
    /// Its value.
    Known(KeyValue),
    /// The source address, not given (`--from`).
    Source,
    /// The packet has no such field (an ICMP packet's port).
    Absent,
    /// The source port: ephemeral, never known.
    SourcePort,
}

impl<'r> Tracer<'r> {
    /// What `part` of the packet in `walk` is.
    pub(super) fn field(&self, part: KeyPart, walk: &Walk) -> Field {
        match part {
            KeyPart::Daddr => Field::Known(KeyValue::Net(IpNet::from(walk.dst))),
            KeyPart::Saddr => self.options.from.map_or(Field::Source, |ip| {
                Field::Known(KeyValue::Net(IpNet::from(ip)))
            }),
            KeyPart::L4proto => Field::Known(KeyValue::Proto(self.packet_protocol())),
            KeyPart::Dport if self.options.icmp => Field::Absent,
            KeyPart::Dport => Field::Known(KeyValue::Port(walk.dport, walk.dport)),
            KeyPart::Sport => Field::SourcePort,
        }
    }

    /// Looks the packet's `key` up in the named set `name`.
    pub(super) fn key_set(
        &self,
        table: &Table,
        key: &[KeyPart],
        name: &str,
        walk: &Walk,
    ) -> KeyLookup {
        let Some(set) = table.sets.get(name) else {
            return KeyLookup::Unknown(format!("no set @{name} in the table"));
        };
        let mut packet: Vec<Option<KeyValue>> = Vec::new();
        for part in key {
            packet.push(match self.field(*part, walk) {
                Field::Known(value) => Some(value),
                Field::Source => None,
                Field::Absent => return KeyLookup::Found(false),
                Field::SourcePort => {
                    return KeyLookup::Unknown(
                        "the source port is not known (an ephemeral port)".to_owned(),
                    );
                }
            });
        }
        let matching = set.elements.iter().filter(|element| {
            element.key.len() == packet.len()
                && element
                    .key
                    .iter()
                    .zip(&packet)
                    .all(|(value, field)| field.as_ref().is_none_or(|f| key_matches(value, f)))
        });
        match key.iter().position(|part| *part == KeyPart::Saddr) {
            Some(at) if packet[at].is_none() => {
                let mut sources: Vec<String> = matching
                    .filter_map(|element| match &element.key[at] {
                        KeyValue::Net(net) if net.prefix_len() == net.max_prefix_len() => {
                            Some(net.addr().to_string())
                        }
                        KeyValue::Net(net) => Some(net.to_string()),
                        _ => None,
                    })
                    .collect();
                sources.sort();
                sources.dedup();
                KeyLookup::Sources(sources)
            }
            _ => KeyLookup::Found(matching.count() > 0),
        }
    }

    pub(super) fn set_contains(&self, table: &Table, name: &str, ip: IpAddr) -> Option<bool> {
        let set = table.sets.get(name)?;
        Some(set.elements.iter().any(|element| {
            element
                .key
                .first()
                .is_some_and(|key| key_matches(key, &KeyValue::Net(IpNet::from(ip))))
        }))
    }

    /// What `rule`'s matches say about the packet in `walk`.
    pub(super) fn decide(&mut self, table: &Table, rule: &Rule, walk: &Walk) -> Decision {
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
                Match::KeySet { key, negated, set } => match self.key_set(table, key, set, walk) {
                    KeyLookup::Found(found) => Some(found != *negated),
                    KeyLookup::Sources(sources) if sources.is_empty() => Some(*negated),
                    KeyLookup::Sources(sources) if !*negated => {
                        source.push(format!("the source is {}", sources.join(" or ")));
                        continue;
                    }
                    KeyLookup::Sources(_) => {
                        source.push(format!("the source is not in @{set}"));
                        continue;
                    }
                    KeyLookup::Unknown(why) => {
                        unknown.get_or_insert(why);
                        continue;
                    }
                },
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
    pub(super) fn mark_only(&self, table: &Table, rule: &Rule) -> Option<(u32, u32)> {
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
}
