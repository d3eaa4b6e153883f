//! The node's rules for one Service port: its ClusterIP traced through the ruleset, the
//! DNAT targets against kube-proxy's endpoints (missing, stale, leftover), and the shares.

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::{Finding, RuleFacts, Share};
use crate::plan::{IpFamily, PortPlan, join_host_port};
use crate::ruleset::{Action, Format, Ruleset, TableFamily};
use crate::trace::{TraceOptions, TraceVerdict, trace};

/// The fix of a node's rules that disagree with the endpoints.
const KUBE_PROXY_BEHIND: &str = "nothing in the Service: kube-proxy on the node has not \
     written the endpoints' rules; check that it runs and its log (`kubectl -n kube-system logs \
     -l k8s-app=kube-proxy`), and its sync metrics (kubeproxy_sync_proxy_rules_last_timestamp_seconds)";

/// The command showing kube-proxy's log.
const KUBE_PROXY_LOGS: &str = "kubectl -n kube-system logs -l k8s-app=kube-proxy";

/// Traces one port's ClusterIP through the ruleset and compares with kube-proxy's endpoints.
pub(super) fn rules_for_port(
    ruleset: &Ruleset,
    name: &str,
    port: &PortPlan,
    expected: &[String],
    lines: &mut Vec<String>,
    findings: &mut Vec<Finding>,
    facts: &mut Vec<RuleFacts>,
) {
    let family = IpFamily::of(port.cluster_ip);
    if !ruleset
        .tables
        .iter()
        .any(|t| t.family.covers(family) && t.family != TableFamily::Other)
    {
        return;
    }
    let report = trace(
        ruleset,
        &TraceOptions {
            to: port.cluster_ip,
            port: port.port,
            protocol: port.name.protocol,
            from: None,
            local: false,
            node_local: false,
            node_ips: Vec::new(),
            icmp: false,
        },
    );
    let target = join_host_port(port.cluster_ip, port.port);
    let traced: Vec<(String, f64)> = report
        .endpoints
        .iter()
        .map(|e| {
            let ip: IpAddr = e.address.parse().unwrap_or(port.cluster_ip);
            (join_host_port(ip, e.port), e.share)
        })
        .collect();
    // A nat-only dump (`iptables-save -t nat`) lacks the filter table, where kube-proxy
    // REJECTs a Service without endpoints: its no-match is not the whole story.
    let nat_only = ruleset.format == Format::IptablesSave
        && !ruleset.tables.iter().any(|t| t.name == "filter");
    lines.push(format!(
        "{target}/{} -> {}",
        port.name.protocol.lower(),
        if traced.is_empty() && nat_only {
            format!(
                "{} in the nat table; the dump has no filter table, where kube-proxy {}",
                report.verdict.as_str(),
                if port.has_endpoints {
                    "filters load-balancer traffic"
                } else {
                    "rejects connections to a Service without endpoints"
                }
            )
        } else if traced.is_empty() {
            report.verdict.as_str().to_owned()
        } else {
            traced
                .iter()
                .map(|(t, share)| format!("{t} {:.2}%", share * 100.0))
                .collect::<Vec<_>>()
                .join(" ")
        }
    ));
    facts.push(RuleFacts {
        ruleset: name.to_owned(),
        to: target.clone(),
        protocol: port.name.protocol.lower().to_owned(),
        verdict: report.verdict.as_str().to_owned(),
        endpoints: traced
            .iter()
            .map(|(endpoint, share)| Share {
                endpoint: endpoint.clone(),
                share: *share,
            })
            .collect(),
    });
    let traced_set: BTreeSet<&str> = traced.iter().map(|(t, _)| t.as_str()).collect();
    let expected_set: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    let missing: Vec<&str> = expected_set.difference(&traced_set).copied().collect();
    if !missing.is_empty() {
        findings.push(Finding {
            kind: "missing-from-rules",
            message: format!(
                "{}: {} in the endpoints but not reached by {name}'s rules for {target} (verdict {}): kube-proxy has not synced, or is not running",
                port.name,
                missing.join(", "),
                report.verdict.as_str()
            ),
            fix: KUBE_PROXY_BEHIND.to_owned(),
            change: None,
            command: Some(KUBE_PROXY_LOGS.to_owned()),
        });
    }
    let stale: Vec<&str> = traced_set.difference(&expected_set).copied().collect();
    if !stale.is_empty() {
        findings.push(Finding {
            kind: "stale-rules",
            message: format!(
                "{}: {name}'s rules for {target} send to {}, which no endpoint has",
                port.name,
                stale.join(", ")
            ),
            fix: KUBE_PROXY_BEHIND.to_owned(),
            change: None,
            command: Some(KUBE_PROXY_LOGS.to_owned()),
        });
    }
    // Leftover chains: DNAT rules of this port that the walk does not reach.
    let mut leftovers: BTreeSet<String> = BTreeSet::new();
    let nft_marker = format!(
        "-{}/{}/{}/{}__",
        port.name.namespace,
        port.name.name,
        port.name.protocol.lower(),
        port.name.port
    );
    let comment = port.name.to_string();
    for table in &ruleset.tables {
        if !table.family.covers(family) {
            continue;
        }
        for chain in &table.chains {
            for rule in &chain.rules {
                let ours = rule.comment.as_deref() == Some(comment.as_str())
                    || chain.name.contains(&nft_marker);
                if !ours {
                    continue;
                }
                for action in &rule.actions {
                    if let Action::Dnat { ip, port: Some(p) } = action {
                        let text = join_host_port(*ip, *p);
                        if !traced_set.contains(text.as_str())
                            && !expected_set.contains(text.as_str())
                        {
                            leftovers.insert(format!("{text} ({} line {})", chain.name, rule.line));
                        }
                    }
                }
            }
        }
    }
    if !leftovers.is_empty() {
        findings.push(Finding {
            kind: "stale-rules",
            message: format!(
                "{}: {name} still has DNAT chains no rule reaches, to addresses no endpoint has: {}",
                port.name,
                leftovers.into_iter().collect::<Vec<_>>().join(", ")
            ),
            fix: "nothing in the Service: kube-proxy removes chains no rule reaches at its next \
                  full sync; chains that stay were written by something else, or by a \
                  kube-proxy that no longer runs"
                .to_owned(),
            change: None,
            command: None,
        });
    }
    if report.verdict == TraceVerdict::Dnat && traced.len() >= 2 {
        let shares: Vec<f64> = traced.iter().map(|(_, s)| *s).collect();
        let max = shares.iter().copied().fold(f64::MIN, f64::max);
        let min = shares.iter().copied().fold(f64::MAX, f64::min);
        if max - min > 1e-6 {
            findings.push(Finding {
                kind: "unequal-shares",
                message: format!(
                    "{}: the endpoints of {target} do not get equal shares: {}",
                    port.name,
                    traced
                        .iter()
                        .map(|(t, share)| format!("{t} {:.2}%", share * 100.0))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                fix: KUBE_PROXY_BEHIND.to_owned(),
                change: None,
                command: None,
            });
        }
    }
}
