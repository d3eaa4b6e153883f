//! `--simulate`: connections drawn one by one with a seeded generator, as the kernel does.

use std::collections::BTreeMap;

use serde::Serialize;

use super::state::{Mode, Tracer, on_walk_stack, verdict_of};
use super::{TraceOptions, TraceVerdict};
use crate::plan::join_host_port;
use crate::ruleset::Ruleset;

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
    on_walk_stack(|| simulate_walks(ruleset, options, connections, seed))
}

/// [`simulate`], on the walk's stack.
fn simulate_walks(
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
