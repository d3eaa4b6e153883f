//! `resolve-cost --log`: what the search path cost the clients in a query log written in
//! CoreDNS's `log` format (which clusterdns's *log* writes), per client and per namespace.
//!
//! A query is a **search-path miss** when it is NXDOMAIN and its name is a name the client
//! typed (the *base*) with one of the client's search domains appended: `<ns>.svc.<zone>`,
//! `svc.<zone>`, `<zone>`, and the node's domains (given with `--search`, and found in the
//! log: a domain appended to a base the cluster's domains were also appended to). The
//! client's namespace comes from `--objects` (the pod with its address) or from its queries
//! (the namespace its NXDOMAIN names most often carry in `<base>.<ns>.svc.<zone>`). Misses
//! under the node's domains left the cluster: the cluster DNS forwarded them upstream.
//!
//! What each fix would have saved:
//! - **trailing dots**: every miss (the name asked as written, once).
//! - **ndots N** (via dnsConfig, the best N from 2 to 4; ndots:1 would send every
//!   `<service>.<namespace>` name upstream first): the misses of bases with at least N dots
//!   that were found as typed (or nowhere), minus one extra query (the name as typed,
//!   NXDOMAIN upstream) per lookup of the bases with N dots found through the search list. On
//!   musl such bases would not be searched at all; they are listed.
//! - **autopath**: the misses of bases found somewhere, which the server walks instead (its
//!   upstream lookups remain).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::Serialize;

use crate::model::Cluster;
pub use crate::search_tracker::Projected;
use crate::search_tracker::{self, Stem, strip_domain};

/// One query of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedQuery {
    /// 1-based line in the file.
    pub line: usize,
    /// The client.
    pub client: IpAddr,
    /// `A`, `AAAA`, ...
    pub qtype: String,
    /// The name, lower case, with its final dot.
    pub name: String,
    /// `NOERROR`, `NXDOMAIN`, ...
    pub rcode: String,
}

/// A log read: its queries and how many other lines there were.
#[derive(Debug, Clone, Default)]
pub struct Log {
    /// The queries, in order.
    pub queries: Vec<LoggedQuery>,
    /// Lines that are not query lines (other plugins' messages, blank lines).
    pub other_lines: usize,
}

/// The common log format, anywhere in a line (after `[INFO] ` or a timestamp):
/// `{remote}:{port} - {>id} "{type} {class} {name} {proto} {size} {>do} {>bufsize}" {rcode}
/// {>rflags} {rsize} {duration}`.
fn pattern() -> Regex {
    #[allow(clippy::unwrap_used)] // a fixed, tested pattern
    Regex::new(
        r#"(\[[0-9A-Fa-f:.]+\]|[0-9.]+):(\d+) - (\d+) "(\S+) (\S+) (\S+) (\S+) (\d+) (\S+) (\d+)" (\S+) (\S*) (\d+) (\S+)"#,
    )
    .unwrap()
}

/// Parses a query log; `file` names it in errors.
pub fn parse_log(text: &str, file: &Path) -> Result<Log, LogError> {
    let pattern = pattern();
    let mut log = Log::default();
    let mut first_other = None;
    for (index, line) in text.lines().enumerate() {
        let Some(caps) = pattern.captures(line) else {
            log.other_lines += 1;
            if first_other.is_none() && !line.trim().is_empty() {
                first_other = Some((index + 1, line.to_owned()));
            }
            continue;
        };
        let remote = caps[1].trim_start_matches('[').trim_end_matches(']');
        let client: IpAddr = remote.parse().map_err(|_| LogError::Client {
            file: file.to_owned(),
            line: index + 1,
            remote: remote.to_owned(),
        })?;
        let mut name = caps[6].to_ascii_lowercase();
        if !name.ends_with('.') {
            name.push('.');
        }
        log.queries.push(LoggedQuery {
            line: index + 1,
            client: client.to_canonical(),
            qtype: caps[4].to_ascii_uppercase(),
            name,
            rcode: caps[11].to_ascii_uppercase(),
        });
    }
    if log.queries.is_empty() {
        return Err(LogError::NoQueries {
            file: file.to_owned(),
            first_other: first_other
                .map(|(line, text)| (line, text.chars().take(120).collect::<String>())),
        });
    }
    Ok(log)
}

/// Why a file is not a query log [`parse_log`] reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    /// A query line whose client is not an address.
    #[error(
        "{}:{line}: '{remote}' is not an IP address (expected the client as {{remote}})",
        file.display()
    )]
    Client {
        /// The log.
        file: PathBuf,
        /// The line (from 1).
        line: usize,
        /// What stood where the client's address goes.
        remote: String,
    },
    /// No line is a query line.
    #[error(
        "{}: no query line in CoreDNS's log format (expected `{{remote}}:{{port}} - {{>id}} \
         \"{{type}} {{class}} {{name}} {{proto}} {{size}} {{>do}} {{>bufsize}}\" {{rcode}} \
         {{>rflags}} {{rsize}} {{duration}}`, as `log` writes it){}",
        file.display(),
        match first_other {
            Some((line, text)) => format!("; line {line} is: {text}"),
            None => "; the file is empty".to_owned(),
        }
    )]
    NoQueries {
        /// The log.
        file: PathBuf,
        /// The first line that is not blank, and its text (at most 120 characters).
        first_other: Option<(usize, String)>,
    },
}

/// What the analysis needs besides the log.
#[derive(Debug, Clone, Default)]
pub struct LogContext {
    /// The cluster domain (`cluster.local`).
    pub cluster_domain: String,
    /// The node's search domains, when known.
    pub node_search: Vec<String>,
    /// Client addresses to namespaces (pods from `--objects`).
    pub pods: HashMap<IpAddr, String>,
}

impl LogContext {
    /// Pod addresses from `cluster`.
    pub fn pods_of(cluster: &Cluster) -> HashMap<IpAddr, String> {
        let mut pods = HashMap::new();
        for pod in cluster.pods.values() {
            if pod.host_network {
                continue;
            }
            for ip in &pod.ips {
                pods.insert(ip.to_canonical(), pod.key.namespace.to_string());
            }
        }
        pods
    }
}

/// One name behind search-path misses.
#[derive(Debug, Clone, Serialize)]
pub struct Behind {
    /// The name as the client typed it.
    pub name: String,
    /// Its search-path misses.
    pub misses: u64,
    /// Those sent upstream.
    pub upstream: u64,
    /// Where it was found: the name that answered, or `None`.
    pub found_as: Option<String>,
}

/// One client's, or one namespace's, costs.
#[derive(Debug, Clone, Serialize)]
pub struct Costs {
    /// The client address, or the namespace.
    pub who: String,
    /// The namespace.
    pub namespace: Option<String>,
    /// How the namespace is known: `its pod` (`--objects`) or `its queries`.
    pub namespace_from: Option<&'static str>,
    /// Clients counted.
    pub clients: usize,
    /// Queries.
    pub queries: u64,
    /// Search-path misses.
    pub misses: u64,
    /// Misses sent upstream (the node's search domains).
    pub upstream_misses: u64,
    /// The names behind the misses, most misses first.
    pub behind: Vec<Behind>,
    /// What each fix would have saved.
    pub fixes: Vec<Projected>,
    /// What each ndots from 2 to 4 would save (the best is in `fixes`).
    #[serde(skip)]
    ndots: Vec<Projected>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct LogReport {
    /// Queries read.
    pub queries: usize,
    /// Other lines skipped.
    pub other_lines: usize,
    /// The node search domains used (given and found).
    pub node_search: Vec<String>,
    /// Per client, most misses first.
    pub clients: Vec<Costs>,
    /// Per namespace, most misses first.
    pub namespaces: Vec<Costs>,
    /// All clients.
    pub total: Costs,
}

/// Per-base figures of one client: the shared per-stem counts, and the name that answered.
#[derive(Debug, Clone, Default)]
struct Base {
    stem: Stem,
    found_as: Option<String>,
}

/// The analysis.
pub fn analyse(log: &Log, context: &LogContext) -> LogReport {
    let zone = format!(
        "{}.",
        context
            .cluster_domain
            .trim_end_matches('.')
            .to_ascii_lowercase()
    );
    let svc = format!("svc.{zone}");
    let mut by_client: BTreeMap<IpAddr, Vec<&LoggedQuery>> = BTreeMap::new();
    for query in &log.queries {
        by_client.entry(query.client).or_default().push(query);
    }
    let mut node_search: Vec<String> = context
        .node_search
        .iter()
        .map(|d| format!("{}.", d.trim_end_matches('.').to_ascii_lowercase()))
        .collect();
    // The namespace of each client, and node domains found in the log.
    let mut namespaces: BTreeMap<IpAddr, (Option<String>, Option<&'static str>)> = BTreeMap::new();
    for (client, queries) in &by_client {
        let namespace = match context.pods.get(client) {
            Some(ns) => (Some(ns.clone()), Some("its pod")),
            None => (vote_namespace(queries, &svc), Some("its queries")),
        };
        let namespace = if namespace.0.is_none() {
            (None, None)
        } else {
            namespace
        };
        if let Some(ns) = &namespace.0 {
            for domain in
                found_node_domains(queries, &search_tracker::cluster_suffixes(ns, &zone), &zone)
            {
                if !node_search.contains(&domain) {
                    node_search.push(domain);
                }
            }
        }
        namespaces.insert(*client, namespace);
    }
    let mut clients = Vec::new();
    for (client, queries) in &by_client {
        let (namespace, from) = namespaces[client].clone();
        let mut suffixes = namespace
            .as_deref()
            .map(|ns| search_tracker::cluster_suffixes(ns, &zone))
            .unwrap_or_else(|| vec![svc.clone(), zone.clone()]);
        suffixes.extend(node_search.iter().cloned());
        let mut costs = client_costs(queries, &suffixes, &zone);
        costs.who = client.to_string();
        costs.namespace = namespace;
        costs.namespace_from = from;
        clients.push(costs);
    }
    clients.sort_by(|a, b| b.misses.cmp(&a.misses).then(a.who.cmp(&b.who)));
    let mut by_namespace: BTreeMap<String, Vec<&Costs>> = BTreeMap::new();
    for costs in &clients {
        let key = costs
            .namespace
            .clone()
            .unwrap_or_else(|| "(unknown)".to_owned());
        by_namespace.entry(key).or_default().push(costs);
    }
    let mut namespaces: Vec<Costs> = by_namespace
        .into_iter()
        .map(|(ns, members)| merge(&ns, &members))
        .collect();
    namespaces.sort_by(|a, b| b.misses.cmp(&a.misses).then(a.who.cmp(&b.who)));
    let all: Vec<&Costs> = clients.iter().collect();
    let total = merge("all clients", &all);
    LogReport {
        queries: log.queries.len(),
        other_lines: log.other_lines,
        node_search,
        clients,
        namespaces,
        total,
    }
}

/// The namespace a client's NXDOMAIN names carry most often as `<base>.<ns>.svc.<zone>`.
fn vote_namespace(queries: &[&LoggedQuery], svc: &str) -> Option<String> {
    let mut votes: HashMap<&str, (usize, usize)> = HashMap::new();
    for (order, query) in queries.iter().enumerate() {
        if query.rcode != "NXDOMAIN" {
            continue;
        }
        let Some(before) = query.name.strip_suffix(svc) else {
            continue;
        };
        let labels: Vec<&str> = before.trim_end_matches('.').split('.').collect();
        if labels.len() >= 2
            && let Some(ns) = labels.last()
        {
            let entry = votes.entry(ns).or_insert((0, order));
            entry.0 += 1;
        }
    }
    votes
        .into_iter()
        .max_by(|a, b| a.1.0.cmp(&b.1.0).then(b.1.1.cmp(&a.1.1)))
        .map(|(ns, _)| ns.to_owned())
}

/// Domains outside the cluster zone appended to a base the cluster's domains were appended
/// to.
fn found_node_domains(queries: &[&LoggedQuery], cluster: &[String], zone: &str) -> Vec<String> {
    let mut bases: HashSet<String> = HashSet::new();
    for query in queries {
        if query.rcode != "NXDOMAIN" {
            continue;
        }
        for suffix in cluster {
            if let Some(base) = strip_domain(&query.name, suffix) {
                bases.insert(base.to_owned());
            }
        }
    }
    let mut found: Vec<String> = Vec::new();
    for query in queries {
        if query.rcode != "NXDOMAIN" || query.name.ends_with(zone) {
            continue;
        }
        // Every split of the name into <base>.<domain>.
        let mut at = 0;
        while let Some(dot) = query.name[at..].find('.') {
            let split = at + dot;
            let (base, domain) = (&query.name[..split], &query.name[split + 1..]);
            if !domain.is_empty() && bases.contains(base) && !found.iter().any(|d| d == domain) {
                found.push(domain.to_owned());
            }
            at = split + 1;
        }
    }
    found
}

fn client_costs(queries: &[&LoggedQuery], suffixes: &[String], zone: &str) -> Costs {
    let mut bases: BTreeMap<String, Base> = BTreeMap::new();
    let mut misses = 0;
    let mut upstream_misses = 0;
    for query in queries {
        // A name may be two bases' expansion (`web.shop.svc.<zone>`: `web` with the first
        // domain, `web.shop` with the second): a walk under way wins, as the live tracker
        // follows it ([`crate::search_tracker::live`]); else the first domain that fits.
        let mut hits = suffixes.iter().enumerate().filter_map(|(index, suffix)| {
            strip_domain(&query.name, suffix).map(|base| (index, base, suffix))
        });
        let first = hits.clone().next();
        let hit = hits
            .find(|(_, base, _)| {
                bases
                    .get(*base)
                    .is_some_and(|b| b.stem.misses > 0 && b.found_as.is_none())
            })
            .or(first);
        if let Some((index, base, suffix)) = hit {
            let entry = bases.entry(base.to_owned()).or_default();
            if index == 0 {
                entry.stem.first_step += 1;
            }
            if query.rcode == "NXDOMAIN" {
                entry.stem.misses += 1;
                misses += 1;
                if !suffix.ends_with(zone) {
                    entry.stem.upstream += 1;
                    upstream_misses += 1;
                }
            } else if query.rcode == "NOERROR" && entry.found_as.is_none() {
                entry.found_as = Some(query.name.clone());
                entry.stem.found = true;
                entry.stem.found_by_search = true;
            }
        }
    }
    // Bases found as typed.
    for query in queries {
        if query.rcode != "NOERROR" {
            continue;
        }
        if let Some(entry) = bases.get_mut(query.name.trim_end_matches('.'))
            && entry.found_as.is_none()
        {
            entry.found_as = Some(query.name.clone());
            entry.stem.found = true;
        }
    }
    let mut behind: Vec<Behind> = bases
        .iter()
        .filter(|(_, b)| b.stem.misses > 0)
        .map(|(name, b)| Behind {
            name: name.clone(),
            misses: b.stem.misses,
            upstream: b.stem.upstream,
            found_as: b.found_as.clone(),
        })
        .collect();
    behind.sort_by(|a, b| b.misses.cmp(&a.misses).then(a.name.cmp(&b.name)));
    let ndots = ndots_table(&bases);
    let found: u64 = bases
        .values()
        .filter(|b| b.found_as.is_some())
        .map(|b| b.stem.misses)
        .sum();
    Costs {
        who: String::new(),
        namespace: None,
        namespace_from: None,
        clients: 1,
        queries: queries.len() as u64,
        misses,
        upstream_misses,
        behind,
        fixes: search_tracker::fixes(misses, upstream_misses, found, &ndots),
        ndots,
    }
}

/// What ndots 2, 3 and 4 would save over a client's bases.
fn ndots_table(bases: &BTreeMap<String, Base>) -> Vec<Projected> {
    search_tracker::ndots_table(bases.iter().map(|(name, base)| (name.as_str(), &base.stem)))
}

/// Sums clients into one line (a namespace, or everything).
fn merge(who: &str, members: &[&Costs]) -> Costs {
    let mut behind: BTreeMap<String, Behind> = BTreeMap::new();
    for member in members {
        for b in &member.behind {
            let entry = behind.entry(b.name.clone()).or_insert_with(|| Behind {
                name: b.name.clone(),
                misses: 0,
                upstream: 0,
                found_as: b.found_as.clone(),
            });
            entry.misses += b.misses;
            entry.upstream += b.upstream;
        }
    }
    let mut behind: Vec<Behind> = behind.into_values().collect();
    behind.sort_by(|a, b| b.misses.cmp(&a.misses).then(a.name.cmp(&b.name)));
    let mut ndots: Vec<Projected> = Vec::new();
    for member in members {
        search_tracker::add_ndots(&mut ndots, &member.ndots);
    }
    let misses: u64 = members.iter().map(|m| m.misses).sum();
    let upstream_misses: u64 = members.iter().map(|m| m.upstream_misses).sum();
    let found: u64 = behind
        .iter()
        .filter(|b| b.found_as.is_some())
        .map(|b| b.misses)
        .sum();
    let namespace = members
        .first()
        .and_then(|m| m.namespace.clone())
        .filter(|ns| members.iter().all(|m| m.namespace.as_deref() == Some(ns)));
    Costs {
        who: who.to_owned(),
        namespace,
        namespace_from: None,
        clients: members.len(),
        queries: members.iter().map(|m| m.queries).sum(),
        misses,
        upstream_misses,
        behind,
        fixes: search_tracker::fixes(misses, upstream_misses, found, &ndots),
        ndots,
    }
}

impl LogReport {
    /// The report as text; `top` names behind the misses per entry.
    pub fn text(&self, file: &Path, top: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{}: {} queries from {} clients ({} other lines skipped)",
            file.display(),
            self.queries,
            self.clients.len(),
            self.other_lines
        );
        if !self.node_search.is_empty() {
            let _ = writeln!(out, "node search domains: {}", self.node_search.join(" "));
        }
        out.push('\n');
        let _ = writeln!(out, "per namespace:");
        for costs in &self.namespaces {
            entry(&mut out, &format!("namespace {}", costs.who), costs, top);
        }
        let _ = writeln!(out, "per client:");
        for costs in &self.clients {
            let title = match (&costs.namespace, costs.namespace_from) {
                (Some(ns), Some(from)) => {
                    format!("client {} (namespace {ns}, from {from})", costs.who)
                }
                _ => format!("client {} (namespace unknown)", costs.who),
            };
            entry(&mut out, &title, costs, top);
        }
        entry(&mut out, "total", &self.total, top);
        out
    }
}

fn entry(out: &mut String, title: &str, costs: &Costs, top: usize) {
    let share = (costs.misses * 100).checked_div(costs.queries).unwrap_or(0);
    let _ = writeln!(
        out,
        "  {title}: {} queries, {} search-path misses ({share}%), {} of them sent upstream",
        costs.queries, costs.misses, costs.upstream_misses
    );
    for b in costs.behind.iter().take(top) {
        let found = b.found_as.as_deref().map_or_else(
            || "found nowhere".to_owned(),
            |name| format!("found as {name}"),
        );
        let _ = writeln!(
            out,
            "    {:<40} {:>6} misses ({} upstream), {found}",
            b.name, b.misses, b.upstream
        );
    }
    if costs.behind.len() > top {
        let _ = writeln!(out, "    ... {} more names", costs.behind.len() - top);
    }
    if costs.misses > 0 {
        let fixes: Vec<String> = costs
            .fixes
            .iter()
            .map(|f| {
                let mut text = format!(
                    "{} saves {} queries ({} upstream)",
                    f.fix, f.queries, f.upstream
                );
                if !f.breaks_on_musl.is_empty() {
                    let _ = write!(
                        text,
                        " but stops musl searching {}",
                        f.breaks_on_musl.join(", ")
                    );
                }
                text
            })
            .collect();
        let _ = writeln!(out, "    fixes: {}", fixes.join("; "));
    }
    out.push('\n');
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn line(client: &str, qtype: &str, name: &str, rcode: &str) -> String {
        format!(
            "[INFO] {client}:40000 - 1 \"{qtype} IN {name} udp 60 false 1232\" {rcode} qr,aa,rd 120 0.0001s"
        )
    }

    /// A glibc client in shop looking up api.partner.example.com (search list with a node
    /// domain), web.payments (second search domain), web (first).
    fn sample() -> String {
        let c = "10.244.1.7";
        let mut lines =
            vec!["[INFO] plugin/reload: Running configuration SHA512 = 1234".to_owned()];
        for _ in 0..2 {
            for name in [
                "api.partner.example.com.shop.svc.cluster.local.",
                "api.partner.example.com.svc.cluster.local.",
                "api.partner.example.com.cluster.local.",
                "api.partner.example.com.us-east-1.compute.internal.",
            ] {
                lines.push(line(c, "A", name, "NXDOMAIN"));
                lines.push(line(c, "AAAA", name, "NXDOMAIN"));
            }
            lines.push(line(c, "A", "api.partner.example.com.", "NOERROR"));
            lines.push(line(c, "AAAA", "api.partner.example.com.", "NOERROR"));
        }
        lines.push(line(
            c,
            "A",
            "web.payments.shop.svc.cluster.local.",
            "NXDOMAIN",
        ));
        lines.push(line(c, "A", "web.payments.svc.cluster.local.", "NOERROR"));
        lines.push(line(c, "A", "web.shop.svc.cluster.local.", "NOERROR"));
        lines.push(line(
            "[fd00::9]",
            "A",
            "db.shop.svc.cluster.local.",
            "NOERROR",
        ));
        lines.join("\n")
    }

    #[test]
    fn parse() {
        let log = parse_log(&sample(), Path::new("log")).unwrap();
        assert_eq!(log.other_lines, 1);
        assert_eq!(log.queries.len(), 24);
        assert_eq!(
            log.queries[0].name,
            "api.partner.example.com.shop.svc.cluster.local."
        );
        assert_eq!(log.queries[23].client, "fd00::9".parse::<IpAddr>().unwrap());
        let error = parse_log("hello\nworld\n", Path::new("coredns.log"))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("coredns.log: no query line in CoreDNS's log format"),
            "{error}"
        );
        assert!(error.ends_with("line 1 is: hello"), "{error}");
        // The {combined} format and a kubectl timestamp in front parse too.
        let combined = format!(
            "2026-11-29T10:00:00Z {} \"QUERY\"",
            line("10.0.0.1", "A", "x.", "NOERROR")
        );
        assert_eq!(
            parse_log(&combined, Path::new("l")).unwrap().queries.len(),
            1
        );
    }

    #[test]
    fn analysis() {
        let log = parse_log(&sample(), Path::new("log")).unwrap();
        let report = analyse(
            &log,
            &LogContext {
                cluster_domain: "cluster.local".into(),
                ..LogContext::default()
            },
        );
        assert_eq!(report.node_search, ["us-east-1.compute.internal."]);
        let client = report
            .clients
            .iter()
            .find(|c| c.who == "10.244.1.7")
            .unwrap();
        assert_eq!(client.namespace.as_deref(), Some("shop"));
        assert_eq!(client.namespace_from, Some("its queries"));
        assert_eq!(
            (client.queries, client.misses, client.upstream_misses),
            (23, 17, 4)
        );
        assert_eq!(client.behind[0].name, "api.partner.example.com");
        assert_eq!(client.behind[0].misses, 16);
        assert_eq!(
            client.behind[0].found_as.as_deref(),
            Some("api.partner.example.com.")
        );
        assert_eq!(client.behind[1].name, "web.payments");
        let fix = |name: &str| {
            client
                .fixes
                .iter()
                .find(|f| f.fix.starts_with(name))
                .unwrap()
        };
        assert_eq!(fix("trailing-dot").queries, 17);
        // ndots:3 and ndots:2 save api.partner's 16 misses: the larger is kept.
        assert_eq!(fix("ndots").fix, "ndots:3");
        assert_eq!(fix("ndots").queries, 16);
        assert_eq!(fix("autopath").queries, 17);
        assert_eq!(fix("autopath").upstream, 0);
        let shop = report.namespaces.iter().find(|n| n.who == "shop").unwrap();
        assert_eq!(shop.misses, 17);
        // With --objects the pod says the namespace.
        let mut pods = HashMap::new();
        pods.insert("10.244.1.7".parse().unwrap(), "payments".to_owned());
        let report = analyse(
            &log,
            &LogContext {
                cluster_domain: "cluster.local".into(),
                node_search: vec![],
                pods,
            },
        );
        let client = report
            .clients
            .iter()
            .find(|c| c.who == "10.244.1.7")
            .unwrap();
        assert_eq!(client.namespace.as_deref(), Some("payments"));
        assert_eq!(client.namespace_from, Some("its pod"));
    }
}
