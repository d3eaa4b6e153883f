//! What a trace is asked ([`TraceOptions`]) and what it finds ([`TraceReport`]: its hops,
//! verdicts and their shares, masquerading, warnings).

use std::net::IpAddr;

use serde::Serialize;

use clusterdns_model::Protocol;

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
pub struct Hop {
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
    pub dnat: Hop,
    /// The probability of the rule that chose it, as written, when a statistic match did.
    pub probability: Option<String>,
    /// The rules from where the paths part to the DNAT.
    pub path: Vec<Hop>,
}

/// When and why the connection is masqueraded (source-NATed to the node's address).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Masquerade {
    /// The condition on the unknown source, or `None` when it always happens.
    pub when: Option<String>,
    /// Why kube-proxy asks for it.
    pub why: String,
    /// The rule that marked the packet.
    pub marked_by: Option<Hop>,
    /// The rule that masqueraded it.
    pub masqueraded_by: Hop,
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
pub struct VerdictShare {
    /// What happened.
    pub verdict: TraceVerdict,
    /// Its share.
    pub share: f64,
    /// The rule that ended it, if one did.
    pub by: Option<Hop>,
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
    pub path: Vec<Hop>,
    /// The endpoints, with their shares.
    pub endpoints: Vec<EndpointShare>,
    /// When the connection is masqueraded.
    pub masquerade: Vec<Masquerade>,
    /// The rule that rejected or dropped the connection.
    pub terminal: Option<Hop>,
    /// Outcomes other than the verdict's, when the walk has several.
    pub other_outcomes: Vec<VerdictShare>,
    /// Rules the walk passed without deciding them (source-dependent, affinity).
    pub conditions: Vec<String>,
    /// Rules the tracer does not understand.
    pub warnings: Vec<Warning>,
    /// What the verdict means where the ruleset cannot show it all (a nat-only dump, a
    /// Service address nothing answers on).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// kube-proxy's jumps from the built-in chains that the ruleset lacked and the walk
    /// assumed (`*TABLE -A CHAIN ...`), for a text holding only kube-proxy's own chains.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assumed_jumps: Vec<String>,
    /// The node's addresses the walk used (given, and named by the ruleset).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_ips: Vec<String>,
}
