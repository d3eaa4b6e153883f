//! `proxy trace`'s word on a probe, the kernel's outcome, and whether they agree: the
//! verdict (DNAT, reject, drop, or accepted without NAT), the endpoint, and masquerade; for a
//! Service that spreads its connections over several endpoints, every endpoint's share of
//! many connections against the share trace computes.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use super::probes::Probe;
use super::topology::Kernel;
use crate::common::cli::clusterdns;

/// Connections per probe whose Service has several endpoints.
pub(super) const SHARE_CONNECTIONS: usize = 300;

/// How far an endpoint's count may stray from trace's share, in standard deviations of the
/// binomial. If the kernel picks as trace says, an endpoint with share p gets
/// Binomial(N, p) of N connections: mean Np, deviation σ = √(Np(1−p)). Np ≥ 60 in the
/// tables (shares down to 1/5 of 300), where the normal approximation holds, and
/// |count − Np| > 4.5σ has probability ≈ 7·10⁻⁶; over the ~330 endpoint counts of both
/// tables a false alarm comes about once in 450 full runs. The bound is 12 points of share
/// at p = 1/3 or 1/2 and 10.6 at p = 1/5: it catches an endpoint never picked, one at half
/// or double its share, or a five-endpoint cascade of unconditional 1/5s (which leaves 41% to
/// the last); a three-endpoint one (1/3, 2/9, 4/9, 11 points off) would need N ≈ 600.
pub(super) const SIGMAS: f64 = 4.5;

/// One endpoint trace gives for a probe.
#[derive(Clone, Debug)]
pub(super) struct Endpoint {
    pub to: (IpAddr, u16),
    /// The share of new connections trace says it gets.
    pub share: f64,
    /// Whether trace says the source is masqueraded on the way to it.
    pub masquerade: bool,
}

/// What `proxy trace` says of a probe.
#[derive(Clone, Debug)]
pub(super) struct Trace {
    /// `dnat`, `reject`, `drop` or `no-match`.
    pub verdict: String,
    pub endpoints: Vec<Endpoint>,
    /// For `no-match`: whether the source is masqueraded anyway.
    pub masquerade: bool,
    /// What trace could not evaluate (`line N: problem`).
    pub warnings: Vec<String>,
}

impl Trace {
    /// A one-line account, as summaries print it, with the first thing trace could not
    /// evaluate.
    pub fn describe(&self) -> String {
        match self.warnings.as_slice() {
            [] => self.outcome(),
            [first, rest @ ..] => format!(
                "{} (trace warns: {first}{})",
                self.outcome(),
                if rest.is_empty() { "" } else { ", ..." }
            ),
        }
    }

    /// The verdict and endpoints, in a line.
    fn outcome(&self) -> String {
        match self.verdict.as_str() {
            "dnat" => {
                let to: Vec<String> = self
                    .endpoints
                    .iter()
                    .map(|e| {
                        let masq = if e.masquerade { " +masq" } else { "" };
                        format!("{}:{} {:.1}%{masq}", e.to.0, e.to.1, 100.0 * e.share)
                    })
                    .collect();
                format!("dnat to {}", to.join(", "))
            }
            "no-match" if self.masquerade => "no-match (accepted, no dnat) +masq".to_owned(),
            "no-match" => "no-match (accepted, no dnat)".to_owned(),
            other => other.to_owned(),
        }
    }

    /// How many connections the probe needs: many to measure shares of several endpoints
    /// (not under session affinity, which pins a client to one), else one.
    pub fn connections(&self, probe: &Probe) -> usize {
        let spread = self.verdict == "dnat" && self.endpoints.len() > 1;
        if spread && !probe.affinity {
            SHARE_CONNECTIONS
        } else {
            1
        }
    }
}

/// Runs `clusterdns proxy trace` for `probe` on `ruleset` (a node at `node_ip`).
pub(super) fn trace(ruleset: &Path, probe: &Probe, node_ip: Ipv4Addr) -> Trace {
    let to = format!("{}:{}", probe.dst, probe.dport);
    let (src, node) = (probe.src.to_string(), node_ip.to_string());
    let file = ruleset.to_str().expect("a UTF-8 path");
    let mut args = vec!["proxy", "trace", "--ruleset", file, "--to", &to];
    args.extend(["--proto", probe.proto.name(), "--from", &src]);
    args.extend(["--node-ip", &node, "--output", "json"]);
    if probe.local {
        args.push("--local");
    }
    if probe.dst == node_ip {
        args.push("--node-local");
    }
    let run = clusterdns(&args);
    assert!(
        run.code == 0 || run.code == 1,
        "clusterdns {args:?} failed ({}):\n{}",
        run.code,
        run.stderr
    );
    let json: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("clusterdns {args:?} printed no JSON ({e}):\n{}", run.stdout));
    parse(&json)
}

/// trace's JSON as a [`Trace`].
fn parse(json: &serde_json::Value) -> Trace {
    let masquerade = json["masquerade"].as_array().cloned().unwrap_or_default();
    // An entry applies to this source when it has no condition left (`when` is null) and
    // names no endpoints or names this one.
    let masqueraded = |to: Option<&str>| {
        masquerade.iter().any(|m| {
            let names = m["endpoints"].as_array().cloned().unwrap_or_default();
            m["when"].is_null()
                && (names.is_empty() || to.is_some_and(|to| names.iter().any(|n| n == to)))
        })
    };
    let endpoints = json["endpoints"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let address = e["address"].as_str().expect("an endpoint's address");
            let port = e["port"].as_u64().expect("an endpoint's port");
            let port = u16::try_from(port).expect("a port");
            let name = format!("{address}:{port}");
            Endpoint {
                to: (address.parse().expect("an endpoint's address"), port),
                share: e["share"].as_f64().expect("an endpoint's share"),
                masquerade: masqueraded(Some(&name)),
            }
        })
        .collect();
    let warnings = json["warnings"].as_array().cloned().unwrap_or_default();
    let warnings = warnings
        .iter()
        .map(|w| {
            format!(
                "line {}: {}",
                w["line"],
                w["problem"].as_str().unwrap_or("?")
            )
        })
        .collect();
    Trace {
        verdict: json["verdict"].as_str().expect("a verdict").to_owned(),
        endpoints,
        masquerade: masqueraded(None),
        warnings,
    }
}

/// A one-line account of the kernel's outcome.
pub(super) fn describe(kernel: &Kernel) -> String {
    match kernel {
        Kernel::Accepted {
            dnat: Some((ip, port)),
            snat,
        } => format!("dnat to {ip}:{port}{}", if *snat { " +masq" } else { "" }),
        Kernel::Accepted { dnat: None, snat } => {
            format!("accepted, no dnat{}", if *snat { " +masq" } else { "" })
        }
        Kernel::Refused(errno) => format!("reject ({errno})"),
        Kernel::Silent => "drop (silence)".to_owned(),
        Kernel::Untracked => "answered without a conntrack entry".to_owned(),
    }
}

/// Whether one connection's outcome is what trace says (any of its endpoints).
fn agrees(trace: &Trace, kernel: &Kernel) -> bool {
    match (trace.verdict.as_str(), kernel) {
        (
            "dnat",
            Kernel::Accepted {
                dnat: Some(to),
                snat,
            },
        ) => trace
            .endpoints
            .iter()
            .any(|e| e.to == *to && e.masquerade == *snat),
        ("no-match", Kernel::Accepted { dnat: None, snat }) => trace.masquerade == *snat,
        ("reject", Kernel::Refused(_)) => true,
        ("drop", Kernel::Silent) => true,
        _ => false,
    }
}

/// Whether the kernel's outcomes for a probe's connections agree with trace: each one, and
/// for several connections each endpoint's count within [`SIGMAS`] of its share. `Err`
/// holds the kernel's side as the summary prints it.
pub(super) fn judge(trace: &Trace, outcomes: &[Kernel]) -> Result<String, String> {
    let mut tally: Vec<(String, usize)> = Vec::new();
    for outcome in outcomes {
        let said = describe(outcome);
        match tally.iter_mut().find(|(d, _)| *d == said) {
            Some((_, n)) => *n += 1,
            None => tally.push((said, 1)),
        }
    }
    tally.sort();
    let account = if outcomes.len() == 1 {
        tally[0].0.clone()
    } else {
        let parts: Vec<String> = tally.iter().map(|(d, n)| format!("{d} ×{n}")).collect();
        format!("{} connections: {}", outcomes.len(), parts.join(", "))
    };
    let each = outcomes.iter().all(|o| agrees(trace, o));
    if each && shares_hold(trace, outcomes) {
        Ok(account)
    } else {
        Err(account)
    }
}

/// Whether every endpoint's count of `outcomes` is within [`SIGMAS`] standard deviations
/// (and half a connection, the continuity correction) of its share.
fn shares_hold(trace: &Trace, outcomes: &[Kernel]) -> bool {
    if outcomes.len() < 2 {
        return true;
    }
    let n = outcomes.len() as f64;
    trace.endpoints.iter().all(|e| {
        let count = outcomes
            .iter()
            .filter(|o| matches!(o, Kernel::Accepted { dnat: Some(to), .. } if *to == e.to))
            .count() as f64;
        let (mean, sd) = (n * e.share, (n * e.share * (1.0 - e.share)).sqrt());
        (count - mean).abs() <= SIGMAS * sd + 0.5
    })
}
