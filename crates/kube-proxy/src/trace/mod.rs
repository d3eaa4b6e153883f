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
//!
//! - `state.rs`: one path through the ruleset (`Walk`) and the tracer that carries the packet.
//! - `matches.rs`: what a rule's matches say of the packet.
//! - `walk.rs`: the engine: hooks, chains, rules, jumps, verdicts, NAT, branches.
//! - `report.rs`: the walks folded into one [`TraceReport`], and the report as text.
//! - `simulate.rs`: `--simulate`, connections drawn with a seeded generator.

mod matches;
mod outcome;
mod report;
mod simulate;
mod state;
#[cfg(test)]
mod tests;
mod walk;

pub use outcome::{
    EndpointShare, Hop, Masquerade, TraceOptions, TraceReport, TraceVerdict, VerdictShare, Warning,
};
pub use report::{report_text, trace};
pub use simulate::{SimulatedCount, Simulation, simulate};
pub use state::ruleset_node_ips;
