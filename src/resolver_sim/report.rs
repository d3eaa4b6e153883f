//! One name's cost, and what each fix would save: `resolve-cost`'s report.

use std::cell::Cell;
use std::fmt::Write as _;
use std::net::IpAddr;

use serde::Serialize;

use super::answer::{ClusterAnswerer, LocalServer, UpstreamCache, UpstreamMode};
use super::stub::{self, Call, Decision, Libc, SendMode, Source, StubConfig, Totals, Walk};
use crate::name::WireName;
use crate::search_walk::{NamespaceFrom, SearchPath};
use crate::zone::Snapshot;

/// Everything a walk is simulated with.
pub struct Setup<'a> {
    /// The resolver.
    pub libc: Libc,
    /// Its options (search list, ndots, ...).
    pub config: StubConfig,
    /// The call modelled (getaddrinfo's families, or res_search's type).
    pub call: Call,
    /// The cluster DNS, asked through its plugin chain.
    pub block: &'a dyn LocalServer,
    /// Its cluster zone.
    pub snapshot: &'a Snapshot,
    /// Where other names go.
    pub upstream: UpstreamMode,
    /// The server runs *autopath* (namespace from the query).
    pub autopath: bool,
    /// The cluster domain (for autopath's search list).
    pub cluster_domain: String,
    /// Upstream replies, shared by every walk.
    pub asked: UpstreamCache,
    /// How the process's glibc sends A and AAAA now: the names of one run are looked up in
    /// turn by one process, and a lost reply switches it for the names after (`None`: as
    /// the options say).
    pub send_mode: Cell<Option<SendMode>>,
}

/// The report for one name.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The walk.
    #[serde(flatten)]
    pub walk: Walk,
    /// Its counts.
    pub totals: Totals,
    /// The longest it can take: every name waiting out all its retries (milliseconds).
    pub worst_case_ms: u64,
    /// The resolver options used.
    pub resolver: StubConfig,
    /// Whether the server ran autopath.
    pub autopath: bool,
    /// What each fix would cost instead.
    pub fixes: Vec<Fix>,
}

/// One fix and the walk it gives.
#[derive(Debug, Clone, Serialize)]
pub struct Fix {
    /// `trailing-dot`, `ndots` or `autopath`.
    pub fix: &'static str,
    /// What to change.
    pub change: String,
    /// The walk's counts with the fix.
    pub totals: Totals,
    /// Whether the fix still finds the addresses the walk found.
    pub same_answer: bool,
    /// Names, queries, NXDOMAIN answers and upstream queries saved.
    pub saves: Saving,
}

/// What a fix saves (negative: costs more).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Saving {
    /// Names tried.
    pub names: i64,
    /// Queries sent by the client.
    pub queries: i64,
    /// NXDOMAIN answers.
    pub nxdomain_queries: i64,
    /// Queries sent on upstream.
    pub upstream_queries: i64,
}

impl Saving {
    fn between(before: &Totals, after: &Totals) -> Self {
        let d = |a: usize, b: usize| a as i64 - b as i64;
        let e = |a: u32, b: u32| i64::from(a) - i64::from(b);
        Self {
            names: d(before.names, after.names),
            queries: e(before.queries, after.queries),
            nxdomain_queries: e(before.nxdomain_queries, after.nxdomain_queries),
            upstream_queries: e(before.upstream_queries, after.upstream_queries),
        }
    }
}

impl Setup<'_> {
    fn run(&self, config: &StubConfig, name: &str, autopath: bool) -> Walk {
        let mode = self.send_mode.get().unwrap_or(config.send_mode);
        let mut answerer =
            ClusterAnswerer::new(self.block, self.snapshot, self.upstream, name, &self.asked)
                .with_search(&config.search);
        let search;
        if autopath {
            search = self.autopath_search(config);
            // The namespace comes from the query, so the client address does not matter.
            answerer = answerer.with_autopath(&search, IpAddr::from([0, 0, 0, 0]));
        }
        stub::call_in(self.libc, config, mode, name, self.call, &mut answerer)
    }

    /// The server's autopath: namespace from the query; its own search domains are the
    /// client's after the cluster's three (the node's, which the kubelet appends, and which a
    /// `dnsPolicy: Default` CoreDNS pod has as its own).
    fn autopath_search(&self, config: &StubConfig) -> SearchPath {
        let domain = self.cluster_domain.trim_end_matches('.');
        let cluster_suffix = format!(".svc.{domain}");
        let extra: Vec<WireName> = config
            .search
            .iter()
            .map(|d| d.trim_end_matches('.'))
            .filter(|d| {
                !(d.ends_with(&cluster_suffix) || *d == format!("svc.{domain}") || *d == domain)
            })
            .filter_map(|d| WireName::from_dotted(d).ok())
            .collect();
        SearchPath::new(
            vec![WireName::root()],
            crate::search_walk::Source::Kubernetes(NamespaceFrom::Query),
            extra,
        )
    }

    /// The report for `name`.
    pub fn report(&self, name: &str) -> Report {
        let walk = self.run(&self.config, name, self.autopath);
        let totals = walk.totals();
        // Every name waiting out all its retries, or longer where a lost reply made glibc
        // ask again.
        let budget = stub::step_budget_ms(self.libc, &self.config);
        let worst_case_ms = walk.steps.iter().map(|s| s.waited_ms.max(budget)).sum();
        let found = walk.answered_by.is_some();
        let mut fixes = Vec::new();
        let fix = |fix: &'static str, change: String, with: &Walk| Fix {
            fix,
            change,
            totals: with.totals(),
            same_answer: with.answered_by.is_some() == found,
            saves: Saving::between(&totals, &with.totals()),
        };
        // musl's res_search asks the name as given only: no fix changes its walk.
        let searches = !(self.libc == Libc::Musl && matches!(self.call, Call::ResSearch { .. }));
        // The trailing dot: the name that answered (behind autopath's CNAME), fully qualified.
        if searches && !name.ends_with('.') {
            let target =
                real_answer(&walk).unwrap_or_else(|| format!("{}.", name.trim_end_matches('.')));
            let with = self.run(&self.config, &target, self.autopath);
            fixes.push(fix("trailing-dot", format!("ask for {target}"), &with));
        }
        // A lower ndots, when the name as typed is what answers (or nothing does).
        let dots = name.trim_end_matches('.').matches('.').count() as u32;
        let as_typed = format!("{}.", name.trim_end_matches('.'));
        let answered_as_typed = real_answer(&walk).is_none_or(|n| n == as_typed);
        if searches
            && !name.ends_with('.')
            && dots > 0
            && dots < self.config.ndots
            && answered_as_typed
        {
            let config = StubConfig {
                ndots: dots,
                ..self.config.clone()
            };
            let with = self.run(&config, name, self.autopath);
            fixes.push(fix(
                "ndots",
                format!(
                    "dnsConfig: {{\"options\": [{{\"name\": \"ndots\", \"value\": \"{dots}\"}}]}}"
                ),
                &with,
            ));
        }
        // Server-side autopath.
        if !self.autopath && walk.steps.len() > 1 {
            let with = self.run(&self.config, name, true);
            if with.steps.first().is_some_and(|s| {
                s.queries
                    .iter()
                    .any(|q| matches!(q.reply.source, Source::Autopath { .. }))
            }) {
                fixes.push(fix(
                    "autopath",
                    "autopath @kubernetes on the server".to_owned(),
                    &with,
                ));
            }
        }
        // The fixes are walked from the mode this name started in; the next name starts
        // from the mode this one left.
        self.send_mode.set(Some(walk.send_mode_after));
        Report {
            walk,
            totals,
            worst_case_ms,
            resolver: self.config.clone(),
            autopath: self.autopath,
            fixes,
        }
    }
}

impl Report {
    /// The report as text.
    pub fn text(&self, namespace: &str) -> String {
        let mut out = String::new();
        let walk = &self.walk;
        let config = &self.resolver;
        let _ = writeln!(
            out,
            "{} from namespace {namespace} ({}{}{})",
            walk.name,
            walk.libc,
            match walk.call {
                Call::Getaddrinfo { .. } => String::new(),
                Call::ResSearch { qtype } => format!(", res_search {qtype}"),
            },
            if self.autopath {
                ", server-side autopath"
            } else {
                ""
            }
        );
        let mut options = vec![
            format!("ndots:{}", config.ndots),
            format!("attempts:{}", config.attempts),
            format!("timeout:{}", config.timeout),
        ];
        if config.send_mode != SendMode::Parallel {
            options.push(config.send_mode.to_string());
        }
        if config.no_aaaa {
            options.push("no-aaaa".into());
        }
        let _ = writeln!(
            out,
            "search {} | {}",
            if config.search.is_empty() {
                "(none)".to_owned()
            } else {
                config.search.join(" ")
            },
            options.join(" ")
        );
        for note in &config.notes {
            let _ = writeln!(out, "note: {note}");
        }
        if walk.libc == Libc::Musl && matches!(walk.call, Call::ResSearch { .. }) {
            let _ = writeln!(
                out,
                "note: musl's res_search is res_query: the name as given, without the search list"
            );
        }
        if walk.send_mode != config.send_mode {
            let _ = writeln!(
                out,
                "note: an earlier name's lost reply left the process in {} mode",
                walk.send_mode
            );
        }
        out.push('\n');
        let width = walk
            .steps
            .iter()
            .map(|s| s.name.len())
            .max()
            .unwrap_or(4)
            .max(10);
        let types: Vec<String> = walk
            .steps
            .first()
            .map(|s| s.queries.iter().map(|q| q.qtype.to_string()).collect())
            .unwrap_or_default();
        let cell = |query: &stub::Query| {
            let mut cell = query.reply.summary();
            if query.sent != 1 {
                let _ = write!(cell, " x{}", query.sent);
            }
            cell
        };
        // Each type's column: 12 wide, or its widest cell.
        let columns: Vec<usize> = (0..types.len())
            .map(|i| {
                walk.steps
                    .iter()
                    .filter_map(|s| s.queries.get(i))
                    .map(|q| cell(q).len())
                    .max()
                    .unwrap_or(0)
                    .max(12)
            })
            .collect();
        let _ = write!(out, "  {:<width$}", "name tried");
        for (qtype, column) in types.iter().zip(&columns) {
            let _ = write!(out, "  {qtype:<column$}");
        }
        let _ = writeln!(out, "  answered by");
        for step in &walk.steps {
            let _ = write!(out, "  {:<width$}", step.name);
            for (query, column) in step.queries.iter().zip(&columns) {
                let text = cell(query);
                let _ = write!(out, "  {text:<column$}");
            }
            let source = step
                .queries
                .first()
                .map_or("-", |q| source_name(&q.reply.source));
            let _ = writeln!(out, "  {source}");
            for note in &step.notes {
                let _ = writeln!(out, "    {note}");
            }
            for query in step.queries.iter().take(1) {
                if let Source::Autopath { lookups } = &query.reply.source {
                    for lookup in lookups {
                        let _ = writeln!(
                            out,
                            "    server tries {} {}: {}",
                            lookup.name,
                            query.qtype,
                            crate::wire::rcode_name(lookup.rcode)
                        );
                    }
                }
            }
        }
        let what = match walk.call {
            Call::Getaddrinfo { .. } => "addresses".to_owned(),
            Call::ResSearch { qtype } => format!("{qtype} records"),
        };
        match (&walk.answered_by, &walk.error) {
            (Some(name), _) => {
                let _ = writeln!(out, "  -> {what} from {name}");
            }
            (None, error) => {
                let stop = walk
                    .steps
                    .last()
                    .is_some_and(|s| s.verdict == Decision::Stop);
                let (default, call) = match walk.call {
                    Call::Getaddrinfo { .. } => ("EAI_NONAME", ""),
                    Call::ResSearch { .. } => ("HOST_NOT_FOUND", "res_search fails with "),
                };
                let _ = writeln!(
                    out,
                    "  -> no {what} ({call}{}{})",
                    error.as_deref().unwrap_or(default),
                    if stop { ", the walk stopped early" } else { "" }
                );
            }
        }
        out.push('\n');
        let t = &self.totals;
        let _ = writeln!(
            out,
            "  {} tried, {} NXDOMAIN; {}, {} NXDOMAIN, {} sent upstream; {}{}; worst case {}",
            plural(t.names as u64, "name"),
            t.nxdomain_names,
            plural(u64::from(t.queries), "query"),
            t.nxdomain_queries,
            t.upstream_queries,
            plural(u64::from(t.round_trips), "round trip"),
            if t.waited_ms > 0 {
                format!(", {} waiting on timeouts", seconds(t.waited_ms))
            } else {
                String::new()
            },
            seconds(self.worst_case_ms)
        );
        if !self.fixes.is_empty() {
            out.push_str("\n  fixes:\n");
            for fix in &self.fixes {
                let f = &fix.totals;
                let _ = writeln!(
                    out,
                    "  - {}: {}, {}, {} NXDOMAIN, {} upstream; saves {}, {}{}",
                    fix.change,
                    plural(f.names as u64, "name"),
                    plural(u64::from(f.queries), "query"),
                    f.nxdomain_queries,
                    f.upstream_queries,
                    plural_signed(fix.saves.names, "name"),
                    plural_signed(fix.saves.queries, "query"),
                    if fix.same_answer {
                        ""
                    } else {
                        " (but the answer changes)"
                    }
                );
            }
        }
        out
    }
}

/// The name whose records answered: the last name tried, or the server's last lookup when
/// autopath answered.
fn real_answer(walk: &Walk) -> Option<String> {
    walk.answered_by.as_ref()?;
    let step = walk.steps.last()?;
    match step.queries.first().map(|q| &q.reply.source) {
        Some(Source::Autopath { lookups }) => lookups.last().map(|l| l.name.clone()),
        _ => Some(step.name.clone()),
    }
}

fn source_name(source: &Source) -> &'static str {
    match source {
        Source::Cluster => "cluster zone",
        Source::Upstream => "upstream",
        Source::Assumed => "upstream (assumed)",
        Source::NoReply => "upstream (no reply)",
        Source::Autopath { .. } => "autopath",
    }
}

/// `1 name`, `2 names`, `1 query`, `3 queries`.
fn plural(count: u64, word: &str) -> String {
    match (count, word.strip_suffix('y')) {
        (1, _) => format!("1 {word}"),
        (_, Some(stem)) => format!("{count} {stem}ies"),
        (_, None) => format!("{count} {word}s"),
    }
}

fn plural_signed(count: i64, word: &str) -> String {
    let text = plural(count.unsigned_abs(), word);
    if count < 0 { format!("-{text}") } else { text }
}

fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}
