//! kube-proxy's jumps from the built-in chains, assumed where a text lacks them.
//!
//! kube-proxy's iptables mode writes its own chains with `iptables-restore --noflush` and
//! installs the jumps into them from PREROUTING, INPUT, FORWARD, OUTPUT and POSTROUTING apart,
//! one `iptables -I` each (pkg/proxy/iptables/proxier.go, `iptablesJumpChains`, each rule
//! prepended in turn, so a chain holds them in the reverse order of that list). The text it
//! restores — also what its tests expect and what it logs at high verbosity — therefore holds
//! no jump into its chains, and walked as it is, nothing reaches them. When a table holds
//! kube-proxy's chains and none of its built-in chains jumps to any of them, the jumps a node
//! running kube-proxy has are added (with the kubelet's jump to KUBE-FIREWALL after them, as
//! a node lists it), each as line 0, and the ruleset says which it assumed.

use super::{Ruleset, parse_rules};
use crate::ruleset::{Action, Chain, Format, Table, Verdict, iptables_base};

/// kube-proxy's jumps, as a node lists them: (table, built-in chain, rule).
const JUMPS: &[(&str, &str, &str)] = &[
    (
        "filter",
        "INPUT",
        "-m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL",
    ),
    (
        "filter",
        "INPUT",
        "-m comment --comment \"kubernetes health check service ports\" -j KUBE-NODEPORTS",
    ),
    (
        "filter",
        "INPUT",
        "-m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES",
    ),
    ("filter", "INPUT", "-j KUBE-FIREWALL"),
    (
        "filter",
        "FORWARD",
        "-m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL",
    ),
    (
        "filter",
        "FORWARD",
        "-m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD",
    ),
    (
        "filter",
        "FORWARD",
        "-m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
    ),
    (
        "filter",
        "FORWARD",
        "-m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES",
    ),
    (
        "filter",
        "OUTPUT",
        "-m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL",
    ),
    (
        "filter",
        "OUTPUT",
        "-m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
    ),
    ("filter", "OUTPUT", "-j KUBE-FIREWALL"),
    (
        "nat",
        "PREROUTING",
        "-m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
    ),
    (
        "nat",
        "OUTPUT",
        "-m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
    ),
    (
        "nat",
        "POSTROUTING",
        "-m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING",
    ),
];

/// The built-in chains of iptables' tables.
const BUILT_IN: &[&str] = &["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"];

/// Whether a built-in chain of `table` jumps (or goes) to a chain of kube-proxy's.
fn jumps_into_kube_proxy(table: &Table) -> bool {
    table
        .chains
        .iter()
        .filter(|chain| BUILT_IN.contains(&chain.name.as_str()))
        .flat_map(|chain| &chain.rules)
        .flat_map(|rule| &rule.actions)
        .any(|action| {
            matches!(action, Action::Verdict(Verdict::Jump(to) | Verdict::Goto(to))
                if to.starts_with("KUBE-"))
        })
}

/// Adds kube-proxy's jumps to each table of kube-proxy's that has none, and records each
/// (`-A CHAIN ...`, table first) in the ruleset's `assumed_jumps`.
pub(super) fn assume(ruleset: &mut Ruleset) {
    if ruleset.format != Format::IptablesSave {
        return;
    }
    let mut assumed = Vec::new();
    for table in &mut ruleset.tables {
        let ours = table
            .chains
            .iter()
            .any(|chain| matches!(chain.name.as_str(), "KUBE-SERVICES" | "KUBE-FORWARD"));
        if !ours || jumps_into_kube_proxy(table) {
            continue;
        }
        let wanted: Vec<_> = JUMPS
            .iter()
            .filter(|(name, _, rule)| {
                *name == table.name
                    && rule
                        .rsplit_once("-j ")
                        .is_some_and(|(_, target)| table.chain(target).is_some())
            })
            .collect();
        for (_, chain, text) in wanted {
            let Some(base) = iptables_base(&table.name, chain) else {
                continue;
            };
            let line = format!("-A {chain} {text}");
            let Ok(mut rules) = parse_rules(&line) else {
                continue;
            };
            if table.chain(chain).is_none() {
                table.add_chain(Chain {
                    name: (*chain).to_owned(),
                    line: 0,
                    base: Some(base),
                    rules: Vec::new(),
                });
            }
            if let Some(target) = table.chain_mut(chain) {
                let at = target
                    .rules
                    .iter()
                    .take_while(|rule| rule.line == 0)
                    .count();
                for mut rule in rules.drain(..) {
                    rule.line = 0;
                    target.rules.insert(at, rule);
                }
                assumed.push(format!("*{} {line}", table.name));
            }
        }
    }
    ruleset.assumed_jumps = assumed;
}
