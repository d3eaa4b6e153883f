//! What a pod's lookups cost the cluster DNS, counted by the server itself, against what
//! `resolve-cost` predicts for that pod: for each name, the queries the DNS pods received
//! (`coredns_dns_requests_total`) and the search-path walks the tracker saw
//! (`clusterdns_search_path_queries_total`: wasted, answered, unanswered), with glibc and
//! musl, through the pod's own resolv.conf and the Service's DNAT.
//!
//! The tracker follows a walk on one server: kube-proxy sends each new socket of a walk to
//! either replica, so the Deployment is scaled to one replica for this test (and back). The
//! server asks an ExternalName's target through itself (CoreDNS's `Upstream.Lookup`), and
//! counts that request too, as CoreDNS does: one more for each query `records` says is a
//! CNAME out of the cluster.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::answers::Zone;
use super::{RealCluster, sum};
use crate::common::cli::clusterdns_env;
use crate::common::names::NamesUpstream;

/// The names looked up from `shop`: found at the first search domain, at the second, through
/// an ExternalName, outside the cluster, nowhere, and a namespace's own name (NODATA, where
/// musl stops).
const NAMES: &[&str] = &[
    "web",
    "web.shop",
    "partner",
    "api.partner.example",
    "nope",
    "shop",
];

#[test]
fn each_lookup_costs_the_server_what_resolve_cost_predicts() {
    let Some(real) =
        RealCluster::shared("real_node::each_lookup_costs_the_server_what_resolve_cost_predicts")
    else {
        return;
    };
    let kubectl = real.kubectl();
    let scale = |replicas: &str| {
        kubectl
            .run(&[
                "scale",
                "deployment/coredns",
                "-n",
                "kube-system",
                "--replicas",
                replicas,
            ])
            .unwrap();
    };
    scale("1");
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| with_one_replica(&real)));
    scale("2");
    real.nodes.wait_dns().unwrap();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

fn with_one_replica(real: &RealCluster) {
    let server = one_server(real);
    let client = "client-node-1";
    let dir = tempfile::tempdir().unwrap();
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(&resolv, real.sh("shop", client, "cat /etc/resolv.conf")).unwrap();
    // resolve-cost asks this one for names outside the cluster: it knows what the nodes'
    // upstream knows.
    let upstream = NamesUpstream::start("127.0.0.1:0".parse().unwrap(), super::EXTERNAL);
    let kubeconfig = real.nodes.plane.kubeconfig.display().to_string();
    let zone = Zone::live(real);

    let mut failures = Vec::new();
    for (libc, program) in [("glibc", "lookup-glibc"), ("musl", "lookup-musl")] {
        for name in NAMES {
            let before = Counts::of(real, server);
            real.sh("shop", client, &format!("{program} addr {name}; true"));
            let after = Counts::of(real, server);
            let run = clusterdns_env(
                &[
                    "resolve-cost",
                    name,
                    "--namespace",
                    "shop",
                    "--libc",
                    libc,
                    "--resolv-conf",
                    &resolv.display().to_string(),
                    "--kubeconfig",
                    &kubeconfig,
                    "--upstream",
                    &upstream.addr.to_string(),
                    "--output",
                    "json",
                ],
                &[],
            );
            assert_eq!(run.code, 0, "resolve-cost {name}: {}", run.stderr);
            let report: Value = serde_json::from_str(&run.stdout).unwrap();
            let predicted = Counts::predicted(&report["reports"][0], name, &zone);
            let counted = after.minus(&before);
            if counted != predicted {
                failures.push(format!(
                    "{libc} {name}: the server counted {counted:?}, resolve-cost predicts {predicted:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The address of the one DNS pod, once kube-proxy sends every query to it.
fn one_server(real: &RealCluster) -> Ipv4Addr {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let pods = real.dns_pods();
        let all = real.get(&["pods", "-n", "kube-system", "-l", "k8s-app=kube-dns"]);
        if let ([(_, ip)], 1) = (
            &pods.into_iter().collect::<Vec<_>>()[..],
            super::items(&all).len(),
        ) {
            // Ten lookups of one name, fully qualified (an A and an AAAA query each): all
            // twenty must reach this pod.
            let before = Counts::of(real, *ip).queries;
            real.sh(
                "shop",
                "client-node-1",
                "for i in 1 2 3 4 5 6 7 8 9 10; do lookup-musl addr web.shop.svc.cluster.local. >/dev/null; done",
            );
            if Counts::of(real, *ip).queries - before == 20 {
                return *ip;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the DNS Deployment did not come down to one pod answering"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// What a server counted: queries, and the tracker's walks in `shop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    queries: u64,
    wasted: u64,
    answered: u64,
    unanswered: u64,
}

impl Counts {
    fn of(real: &RealCluster, server: Ipv4Addr) -> Self {
        let metrics = real.metrics(server);
        let walks = |outcome: &str| {
            sum(
                &metrics,
                "clusterdns_search_path_queries_total",
                &["namespace=\"shop\"", &format!("outcome=\"{outcome}\"")],
            ) as u64
        };
        Self {
            queries: sum(&metrics, "coredns_dns_requests_total", &[]) as u64,
            wasted: walks("wasted"),
            answered: walks("answered"),
            unanswered: walks("unanswered"),
        }
    }

    fn minus(&self, before: &Self) -> Self {
        Self {
            queries: self.queries - before.queries,
            wasted: self.wasted - before.wasted,
            answered: self.answered - before.answered,
            unanswered: self.unanswered - before.unanswered,
        }
    }

    /// What resolve-cost's walk (`--output json`) of `typed` from `shop` costs: every query
    /// sent, and, per query type, the walk the tracker follows — from the name under the
    /// first search domain to the first NOERROR (answered) or the name as typed failing too
    /// (unanswered), each NXDOMAIN before the name as typed wasted.
    fn predicted(walk: &Value, typed: &str, zone: &Zone) -> Self {
        let steps = walk["steps"].as_array().cloned().unwrap_or_default();
        let first = format!("{typed}.shop.svc.cluster.local.");
        let as_typed = format!("{}.", typed.trim_end_matches('.'));
        let chased: u64 = steps
            .iter()
            .filter(|step| !zone.get(step["name"].as_str().unwrap(), "CNAME").is_empty())
            .flat_map(|step| step["queries"].as_array().cloned().unwrap_or_default())
            .map(|query| query["sent"].as_u64().unwrap_or(0))
            .sum();
        let mut counts = Self {
            queries: walk["totals"]["queries"].as_u64().unwrap() + chased,
            wasted: 0,
            answered: 0,
            unanswered: 0,
        };
        for qtype in ["A", "AAAA"] {
            let mut started = false;
            for step in &steps {
                let name = step["name"].as_str().unwrap();
                let Some(query) = step["queries"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|q| q["type"] == qtype && q["sent"].as_u64().unwrap_or(0) > 0)
                else {
                    continue;
                };
                started |= name == first;
                if !started {
                    continue;
                }
                match query["rcode"].as_str() {
                    Some("NOERROR") => {
                        counts.answered += 1;
                        break;
                    }
                    Some("NXDOMAIN") if name == as_typed => counts.unanswered += 1,
                    Some("NXDOMAIN") => counts.wasted += 1,
                    other => panic!("{typed}: {name} {qtype} {other:?}"),
                }
            }
        }
        counts
    }
}
