//! Lookups from pods through the kube-dns ClusterIP, many in a row, as an application makes
//! them: every one must answer. How long each took (getaddrinfo in the pod, a name with its
//! final dot: one A and one AAAA query) is reported — a figure for the record, never an
//! assertion.

use super::RealCluster;

/// Lookups per client and libc.
const LOOKUPS: usize = 300;

#[test]
fn lookups_in_a_row_through_the_cluster_ip_all_answer() {
    let Some(real) =
        RealCluster::shared("real_node::lookups_in_a_row_through_the_cluster_ip_all_answer")
    else {
        return;
    };
    for client in ["client-node-1", "client-node-2"] {
        for (libc, program) in [("glibc", "lookup-glibc"), ("musl", "lookup-musl")] {
            let out = real.sh(
                "shop",
                client,
                &format!("{program} time {LOOKUPS} web.shop.svc.cluster.local."),
            );
            let mut micros: Vec<u64> = out
                .lines()
                .filter_map(|line| line.strip_prefix("us "))
                .map(|us| us.parse().unwrap())
                .collect();
            assert_eq!(micros.len(), LOOKUPS, "{client} {libc}:\n{out}");
            assert!(out.contains("failed 0\n"), "{client} {libc}:\n{out}");
            micros.sort_unstable();
            let at =
                |q: f64| micros[((micros.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0;
            eprintln!(
                "real nodes: {client} ({libc}), {LOOKUPS} lookups through 10.96.0.10: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
                at(0.5),
                at(0.99),
                at(1.0)
            );
        }
    }
}
