//! `/debug/search-path`: what the live tracker saw, per namespace — the wasted expansions,
//! the stems behind them and what each fix would save — as JSON or a plain-text table.

use std::fmt::Write as _;

use serde::Serialize;

use super::live::{NamespaceView, Watch, dotted};
use super::{Projected, fixes, ndots_table};

/// The page as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Page {
    /// The cluster zone, dotted with its final dot.
    pub zone: String,
    /// The node's search domains followed.
    pub node_search: Vec<String>,
    /// Namespaces with a label of their own, at most.
    pub namespaces_labelled: usize,
    /// Per namespace, in the order first seen, `other` last.
    pub namespaces: Vec<Namespace>,
}

/// One namespace of the page.
#[derive(Debug, Clone, Serialize)]
pub struct Namespace {
    /// The namespace, or `other`.
    pub namespace: String,
    /// NXDOMAIN expansions (search-path misses).
    pub wasted: u64,
    /// Those sent upstream (the node's search domains).
    pub upstream: u64,
    /// Walks that ended in NOERROR.
    pub answered: u64,
    /// Walks whose name as typed failed too.
    pub unanswered: u64,
    /// The stems behind the misses, most misses first.
    pub stems: Vec<StemLine>,
    /// What each fix would save (`resolve-cost --log`'s arithmetic).
    pub fixes: Vec<Projected>,
}

/// One stem of a namespace.
#[derive(Debug, Clone, Serialize)]
pub struct StemLine {
    /// The name as typed.
    pub name: String,
    /// Its search-path misses.
    pub misses: u64,
    /// Those sent upstream.
    pub upstream: u64,
    /// The name that answered, if one did.
    pub found_as: Option<String>,
}

impl Page {
    /// The page of `watch`'s tracker.
    pub fn of(watch: &Watch) -> Self {
        let zone = format!("{}.", dotted(watch.zone()));
        let node: Vec<String> = watch
            .node_domains()
            .iter()
            .map(|d| format!("{}.", dotted(d)))
            .collect();
        let namespaces = watch
            .tracker()
            .view()
            .into_iter()
            .map(|view| namespace(view, &zone, &node))
            .collect();
        Self {
            zone,
            node_search: node,
            namespaces_labelled: watch.tracker().limit(),
            namespaces,
        }
    }

    /// The page as a plain-text table.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "search-path walks under {} (node search domains: {}; {} namespaces labelled)",
            self.zone,
            if self.node_search.is_empty() {
                "none".to_owned()
            } else {
                self.node_search.join(" ")
            },
            self.namespaces_labelled
        );
        out.push('\n');
        let _ = writeln!(
            out,
            "{:<20} {:>7} {:>9} {:>9} {:>11}  fixes save (queries)",
            "namespace", "wasted", "upstream", "answered", "unanswered"
        );
        for ns in &self.namespaces {
            let fixes: Vec<String> = ns
                .fixes
                .iter()
                .map(|f| format!("{} {}", f.fix, f.queries))
                .collect();
            let _ = writeln!(
                out,
                "{:<20} {:>7} {:>9} {:>9} {:>11}  {}",
                ns.namespace,
                ns.wasted,
                ns.upstream,
                ns.answered,
                ns.unanswered,
                fixes.join(", ")
            );
        }
        for ns in self.namespaces.iter().filter(|ns| !ns.stems.is_empty()) {
            let _ = writeln!(out, "\n{}: names behind the misses", ns.namespace);
            for stem in &ns.stems {
                let found = stem.found_as.as_deref().map_or_else(
                    || "found nowhere".to_owned(),
                    |name| format!("found as {name}"),
                );
                let _ = writeln!(
                    out,
                    "  {:<40} {:>6} misses ({} upstream), {found}",
                    stem.name, stem.misses, stem.upstream
                );
            }
        }
        out
    }
}

/// One namespace's lines and fixes.
fn namespace(view: NamespaceView, zone: &str, node: &[String]) -> Namespace {
    let ndots = ndots_table(
        view.stems
            .iter()
            .map(|(name, stem, _)| (name.as_str(), stem)),
    );
    let found: u64 = view
        .stems
        .iter()
        .filter(|(_, stem, _)| stem.found)
        .map(|(_, stem, _)| stem.misses)
        .sum();
    let fixes = fixes(view.wasted, view.upstream, found, &ndots);
    let mut stems: Vec<StemLine> = view
        .stems
        .iter()
        .filter(|(_, stem, _)| stem.misses > 0)
        .map(|(name, stem, step)| StemLine {
            name: name.clone(),
            misses: stem.misses,
            upstream: stem.upstream,
            found_as: step.map(|step| found_as(name, step, &view.namespace, zone, node)),
        })
        .collect();
    stems.sort_by(|a, b| b.misses.cmp(&a.misses).then(a.name.cmp(&b.name)));
    Namespace {
        namespace: view.namespace,
        wasted: view.wasted,
        upstream: view.upstream,
        answered: view.answered,
        unanswered: view.unanswered,
        stems,
        fixes,
    }
}

/// The name that answered: `stem` with the search domain of `step`.
fn found_as(stem: &str, step: u8, namespace: &str, zone: &str, node: &[String]) -> String {
    // `other` stands for several namespaces: the first domain's is not known.
    let namespace = if namespace == "other" {
        "<namespace>"
    } else {
        namespace
    };
    let suffixes = super::cluster_suffixes(namespace, zone);
    let suffix = match step {
        0..=2 => suffixes.get(usize::from(step)).cloned(),
        _ => node.get(usize::from(step) - 3).cloned(),
    };
    match suffix {
        Some(suffix) => format!("{stem}.{suffix}"),
        None => format!("{stem}."),
    }
}
