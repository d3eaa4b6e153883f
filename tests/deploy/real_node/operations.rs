//! A rollout restart of the DNS Deployment, while pods on both nodes keep resolving through
//! the kube-dns ClusterIP with every kind of client (xtask/src/operations.rs: glibc and musl
//! with a new socket each lookup, one UDP socket kept for every query, one TCP connection),
//! 50 lookups a second each: not one lookup fails. `cargo xtask operations` measures the
//! other operations, beside CoreDNS.

use std::time::Duration;

use xtask::operations::{Operation, perform, under_load};

use super::RealCluster;

#[test]
fn a_rollout_restart_of_the_dns_deployment_loses_no_lookup() {
    let Some(real) = RealCluster::shared(
        "real_node::operations::a_rollout_restart_of_the_dns_deployment_loses_no_lookup",
    ) else {
        return;
    };
    let (tallies, done) = under_load(
        &real.nodes,
        &["shop/client-node-1", "shop/client-node-2"],
        50,
        20,
        Duration::from_secs(3),
        || perform(&real.nodes, Operation::RolloutRestart),
    )
    .unwrap();
    let done = done.unwrap_or_else(|e| panic!("{e:#}"));
    let mut failures = Vec::new();
    for (pod, kinds) in &tallies {
        for (kind, tally) in kinds {
            eprintln!(
                "real nodes: rollout restart ({:.1} s), {pod}, {kind}: {} lookups, {} failed, {} over 1 s",
                done.took.as_secs_f64(),
                tally.lookups,
                tally.failed,
                tally.slow
            );
            assert!(
                tally.lookups >= 500,
                "{pod} {kind}: {} lookups",
                tally.lookups
            );
            if tally.failed > 0 {
                failures.push(format!(
                    "{pod} {kind}: {} of {} lookups failed, at {:?} ms",
                    tally.failed, tally.lookups, tally.bad_at_ms
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
