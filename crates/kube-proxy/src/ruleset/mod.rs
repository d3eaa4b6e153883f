//! A node's ruleset, parsed: `iptables-save` (or `iptables -S`) output, `nft list` output,
//! and the `nft -f` transactions kube-proxy feeds to nft, all read into one model the tracer
//! walks.
//!
//! The model keeps what decides where a new connection goes: tables, base chains with their
//! hook, priority and policy, regular chains, and rules made of matches (source, destination,
//! protocol, ports, address type, conntrack state, mark, statistic, recent/affinity sets) and
//! actions (jump, goto, accept, drop, reject, return, DNAT, SNAT/masquerade, mark, verdict
//! maps, numgen). A rule whose shape the model does not know is kept with an
//! [`Match::Unsupported`] or [`Action::Unsupported`] part and its line, so the tracer
//! reports it when the walk reaches it; it is never dropped silently. A text that cannot be
//! parsed at all is a [`ParseError`] naming the line.

pub mod iptables_save;
pub mod nft;
mod values;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use ipnet::IpNet;

use super::cascade::Stored;
use super::plan::IpFamily;
use clusterdns_model::Protocol;

/// A ruleset that does not parse: the line (1-based) and what was wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// The line, 1-based.
    pub line: usize,
    /// What was expected and what was found.
    pub message: String,
}

impl ParseError {
    pub(crate) fn new(line: usize, message: impl Into<String>) -> Self {
        Self {
            line,
            message: message.into(),
        }
    }
}

/// The text a ruleset was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `iptables-save` (or `iptables -S`) output.
    IptablesSave,
    /// `nft list table` / `nft list ruleset` output.
    NftList,
    /// An `nft -f` transaction (`add table`, `add chain`, `add rule`, `add element`, ...).
    NftTransaction,
}

impl Format {
    /// How reports name the format.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IptablesSave => "iptables-save",
            Self::NftList => "nft list",
            Self::NftTransaction => "nft -f transaction",
        }
    }
}

/// A whole ruleset.
#[derive(Debug, Clone)]
pub struct Ruleset {
    /// What it was read from.
    pub format: Format,
    /// Its tables, in input order.
    pub tables: Vec<Table>,
    /// The jumps from the built-in chains into kube-proxy's that the text lacked and that
    /// were added as a node running kube-proxy has them (`*TABLE -A CHAIN ...`; iptables
    /// only: see `iptables_save::jumps`).
    pub assumed_jumps: Vec<String>,
}

/// The families a table applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFamily {
    /// IPv4 only (`iptables`, `table ip`).
    Ip,
    /// IPv6 only (`ip6tables`, `table ip6`).
    Ip6,
    /// Both (`table inet`).
    Inet,
    /// Another nft family (`arp`, `bridge`, `netdev`): never walked.
    Other,
}

impl TableFamily {
    /// Whether packets of `family` traverse the table.
    pub fn covers(self, family: IpFamily) -> bool {
        matches!(
            (self, family),
            (Self::Inet, _) | (Self::Ip, IpFamily::V4) | (Self::Ip6, IpFamily::V6)
        )
    }
}

/// A table: iptables' `nat`, `filter`, ... or an nft table.
#[derive(Debug, Clone)]
pub struct Table {
    /// Its family.
    pub family: TableFamily,
    /// Its name.
    pub name: String,
    /// Where it starts.
    pub line: usize,
    /// Its chains, in declaration order.
    pub chains: Vec<Chain>,
    /// Its named sets and maps (nft), by name.
    pub sets: BTreeMap<String, NamedSet>,
    /// Chain name to index in `chains` (a node has tens of thousands of chains).
    index: HashMap<String, usize>,
}

impl Table {
    /// An empty table.
    pub fn new(family: TableFamily, name: impl Into<String>, line: usize) -> Self {
        Self {
            family,
            name: name.into(),
            line,
            chains: Vec::new(),
            sets: BTreeMap::new(),
            index: HashMap::new(),
        }
    }

    /// The chain called `name`.
    pub fn chain(&self, name: &str) -> Option<&Chain> {
        self.index.get(name).and_then(|at| self.chains.get(*at))
    }

    pub(crate) fn chain_mut(&mut self, name: &str) -> Option<&mut Chain> {
        let at = *self.index.get(name)?;
        self.chains.get_mut(at)
    }

    /// Adds a chain (replacing one of the same name).
    pub fn add_chain(&mut self, chain: Chain) {
        match self.index.get(&chain.name) {
            Some(at) => self.chains[*at] = chain,
            None => {
                self.index.insert(chain.name.clone(), self.chains.len());
                self.chains.push(chain);
            }
        }
    }

    /// Removes the chain called `name`.
    pub fn remove_chain(&mut self, name: &str) {
        self.chains.retain(|chain| chain.name != name);
        self.index = self
            .chains
            .iter()
            .enumerate()
            .map(|(at, chain)| (chain.name.clone(), at))
            .collect();
    }
}

/// Where a base chain hooks into the packet path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hook {
    /// Every packet arriving from the network, before routing.
    Prerouting,
    /// Packets for this node, after routing.
    Input,
    /// Packets routed through this node.
    Forward,
    /// Packets sent by a process on this node.
    Output,
    /// Every packet leaving, after routing.
    Postrouting,
}

/// What a base chain does: filter, or NAT (consulted for a connection's first packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainKind {
    /// Filtering (and mangling).
    Filter,
    /// Address translation.
    Nat,
    /// Anything else (`route`): walked as filter.
    Other,
}

/// A base chain's attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Base {
    /// The hook.
    pub hook: Hook,
    /// The priority (lower runs first; iptables' tables have fixed ones).
    pub priority: i32,
    /// The chain type.
    pub kind: ChainKind,
    /// What happens to a packet that falls off the end: accept (true) or drop.
    pub policy_accept: bool,
}

/// A chain.
#[derive(Debug, Clone)]
pub struct Chain {
    /// Its name.
    pub name: String,
    /// Where it is declared.
    pub line: usize,
    /// Set for base chains (iptables' built-in chains, nft chains with a hook).
    pub base: Option<Base>,
    /// Its rules, in order.
    pub rules: Vec<Rule>,
}

/// One rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its line.
    pub line: usize,
    /// The rule as written (for reports).
    pub text: String,
    /// Its matches, all of which must hold.
    pub matches: Vec<Match>,
    /// Its statements in order: non-terminal ones (mark, set update, log) then at most one
    /// verdict.
    pub actions: Vec<Action>,
    /// Its comment (`-m comment --comment`, nft `comment "..."`).
    pub comment: Option<String>,
}

/// Which address or port of the packet a match reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The source.
    Source,
    /// The destination.
    Destination,
}

/// An address test's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddrValue {
    /// One prefix (a host is a /32 or /128).
    Net(IpNet),
    /// Any of several prefixes (an anonymous nft set).
    List(Vec<IpNet>),
    /// Membership of a named nft set.
    Set(String),
}

/// A protocol as rules name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtoValue {
    /// TCP, UDP or SCTP.
    Known(Protocol),
    /// Any other (`icmp`, `47`, ...): never one of the traced packet's.
    Other(String),
}

/// A conntrack state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtState {
    /// The first packet of a connection.
    New,
    /// A reply-seen connection.
    Established,
    /// Related to another connection.
    Related,
    /// Not tracked as valid.
    Invalid,
    /// Not tracked.
    Untracked,
    /// The connection is destination-NATed (a status, `--ctstate DNAT`).
    Dnat,
    /// The connection is source-NATed.
    Snat,
}

/// What an `-m recent` match does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecentOp {
    /// `--set`: add the source, always matches.
    Set,
    /// `--rcheck`: the source is in the list.
    Check,
    /// `--update`: like check, refreshing the entry.
    Update,
    /// `--remove`: remove the source, matches if it was there.
    Remove,
}

/// One match of a rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Match {
    /// `-s`/`-d`, `ip saddr`/`ip daddr`.
    Addr {
        /// Source or destination.
        side: Side,
        /// `!` / `!=`.
        negated: bool,
        /// The value.
        value: AddrValue,
    },
    /// `-p`, `meta l4proto`.
    Protocol {
        /// Negated.
        negated: bool,
        /// Any of these.
        protocols: Vec<ProtoValue>,
    },
    /// `--dport`/`--sport`, `tcp dport`, `th dport`.
    Port {
        /// Source or destination port.
        side: Side,
        /// Negated.
        negated: bool,
        /// Inclusive ranges, any of which matches.
        ranges: Vec<(u16, u16)>,
        /// A protocol the match implies (`tcp dport` needs TCP; `-m tcp` follows `-p tcp`).
        protocol: Option<Protocol>,
    },
    /// `-m addrtype --dst-type LOCAL`, `fib daddr type local`.
    Local {
        /// Which address.
        side: Side,
        /// Negated.
        negated: bool,
    },
    /// `-m conntrack --ctstate`, `ct state`.
    CtState {
        /// Negated.
        negated: bool,
        /// Any of these.
        states: Vec<CtState>,
    },
    /// `-m mark --mark V/M`, `meta mark & M == V`.
    Mark {
        /// Negated.
        negated: bool,
        /// Expected value after masking.
        value: u32,
        /// The mask.
        mask: u32,
    },
    /// `-m statistic --mode random --probability P`.
    Statistic {
        /// Negated.
        negated: bool,
        /// The probability as the kernel stores it.
        stored: Stored,
        /// The value as written, for reports.
        text: String,
    },
    /// `-m recent`.
    Recent {
        /// Negated.
        negated: bool,
        /// What it does.
        op: RecentOp,
        /// The list.
        name: String,
    },
    /// `-i`/`-o`, `iifname`/`oifname`: the tracer does not know interfaces.
    Interface {
        /// Outgoing interface.
        out: bool,
        /// Negated.
        negated: bool,
        /// The name.
        name: String,
    },
    /// `ip saddr . ip daddr . meta l4proto . th dport @set`: the packet's concatenated key is
    /// an element of a named set (kube-proxy 1.36's `@hairpin-connections`).
    KeySet {
        /// The fields, in order.
        key: Vec<KeyPart>,
        /// `!=`.
        negated: bool,
        /// The set.
        set: String,
    },
    /// Always true for the tracer (`-m nfacct`, `counter`).
    Always,
    /// A match the tracer cannot evaluate; the text says which.
    Unsupported(String),
}

/// A verdict of a verdict map (or a plain verdict statement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// `jump CHAIN`.
    Jump(String),
    /// `goto CHAIN`.
    Goto(String),
    /// `accept`.
    Accept,
    /// `drop`.
    Drop,
    /// `return`.
    Return,
    /// `continue`.
    Continue,
}

/// A field of a packet, in a verdict map's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPart {
    /// Source address.
    Saddr,
    /// Destination address.
    Daddr,
    /// Layer-4 protocol.
    L4proto,
    /// Destination port.
    Dport,
    /// Source port.
    Sport,
}

/// One value of an element's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyValue {
    /// An address or prefix.
    Net(IpNet),
    /// An address range.
    Range(IpAddr, IpAddr),
    /// A protocol.
    Proto(ProtoValue),
    /// A port range.
    Port(u16, u16),
    /// Anything else (kept for reports; never matches).
    Other(String),
}

/// An element of a set or map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    /// The key (several values for a concatenation).
    pub key: Vec<KeyValue>,
    /// The verdict of a verdict-map element.
    pub verdict: Option<Verdict>,
    /// The element's comment.
    pub comment: Option<String>,
    /// Where it is.
    pub line: usize,
}

/// A named nft set or map.
#[derive(Debug, Clone)]
pub struct NamedSet {
    /// Its name.
    pub name: String,
    /// Where it is declared.
    pub line: usize,
    /// A map (true) or a set.
    pub is_map: bool,
    /// Its `type`, as written.
    pub type_text: String,
    /// Its `comment`.
    pub comment: Option<String>,
    /// Its elements.
    pub elements: Vec<Element>,
}

/// A verdict map: named, or written in the rule.
#[derive(Debug, Clone, PartialEq)]
pub enum MapRef {
    /// `vmap @name`.
    Named(String),
    /// `vmap { ... }`.
    Inline(Vec<Element>),
}

/// One slot range of a `numgen` verdict map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// First value, inclusive.
    pub low: u32,
    /// Last value, inclusive.
    pub high: u32,
    /// Where it goes.
    pub verdict: Verdict,
}

/// One slot range of a `dnat to numgen random mod N map { ... }`: the endpoint it picks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnatSlot {
    /// First value, inclusive.
    pub low: u32,
    /// Last value, inclusive.
    pub high: u32,
    /// The new destination address.
    pub ip: IpAddr,
    /// The new destination port (unchanged when `None`).
    pub port: Option<u16>,
}

/// One statement of a rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A verdict.
    Verdict(Verdict),
    /// `-j REJECT`, `reject`.
    Reject(Option<String>),
    /// `-j DNAT --to-destination`, `dnat to`.
    Dnat {
        /// New destination address.
        ip: IpAddr,
        /// New destination port (unchanged when `None`).
        port: Option<u16>,
    },
    /// `-j SNAT`, `snat to`: a source NAT (terminal in nat).
    Snat(String),
    /// `-j MASQUERADE`, `masquerade`.
    Masquerade,
    /// `-j MARK ...`, `meta mark set ...`: `mark = (mark & and) ^ xor`.
    SetMark {
        /// Bits kept.
        and: u32,
        /// Bits flipped after.
        xor: u32,
    },
    /// `ip daddr . meta l4proto . th dport vmap @map`: look the packet up; no element, no
    /// verdict.
    VerdictMap {
        /// The key's fields.
        key: Vec<KeyPart>,
        /// The map.
        map: MapRef,
    },
    /// `dnat ip to numgen random mod N map { 0 : ADDRESS . PORT, ... }` (kube-proxy 1.36's
    /// nftables mode picks the endpoint in the Service chain itself).
    DnatMap {
        /// N.
        modulus: u32,
        /// The endpoints, by generated number.
        slots: Vec<DnatSlot>,
    },
    /// `numgen random mod N vmap { ... }`.
    Numgen {
        /// N.
        modulus: u32,
        /// The slots.
        slots: Vec<Slot>,
    },
    /// `update @set { ip saddr }` and other non-terminal statements that do not change the
    /// packet (`log`, `counter`, `-j LOG`).
    Continue,
    /// A statement the tracer does not know.
    Unsupported(String),
}

/// How iptables' tables hook in: (table, chain) to base, with the kernel's priorities.
pub fn iptables_base(table: &str, chain: &str) -> Option<Base> {
    let (priority, kind) = match table {
        "raw" => (-300, ChainKind::Filter),
        "mangle" => (-150, ChainKind::Filter),
        "nat" => match chain {
            "PREROUTING" | "OUTPUT" => (-100, ChainKind::Nat),
            _ => (100, ChainKind::Nat),
        },
        "filter" => (0, ChainKind::Filter),
        "security" => (50, ChainKind::Filter),
        _ => return None,
    };
    let hook = match chain {
        "PREROUTING" => Hook::Prerouting,
        "INPUT" => Hook::Input,
        "FORWARD" => Hook::Forward,
        "OUTPUT" => Hook::Output,
        "POSTROUTING" => Hook::Postrouting,
        _ => return None,
    };
    Some(Base {
        hook,
        priority,
        kind,
        policy_accept: true,
    })
}

/// Reads a ruleset, telling the format from its first statement.
pub fn parse(text: &str) -> Result<Ruleset, ParseError> {
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let first = trimmed.split_whitespace().next().unwrap_or("");
        return match first {
            _ if trimmed.starts_with('*')
                || trimmed.starts_with(':')
                || trimmed.starts_with('[')
                || matches!(first, "-A" | "-P" | "-N" | "-I" | "--append") =>
            {
                iptables_save::parse(text)
            }
            "table" => nft::parse(text, Format::NftList),
            "add" | "create" | "insert" | "flush" | "delete" | "destroy" | "replace" => {
                nft::parse(text, Format::NftTransaction)
            }
            _ => Err(ParseError::new(
                index + 1,
                format!(
                    "expected iptables-save output (`*nat`, `:CHAIN`, `-A ...`), nft list \
                     output (`table ip kube-proxy {{`) or an nft -f transaction (`add ...`), \
                     found {trimmed:?}"
                ),
            )),
        };
    }
    Err(ParseError::new(1, "the ruleset is empty"))
}
