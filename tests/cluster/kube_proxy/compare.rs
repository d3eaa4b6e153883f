//! A real node's dump beside `proxy render`'s, rule by rule. Both are cut into objects (an
//! iptables chain; an nft set, map or chain), normalised only where the two cannot agree by
//! construction, and compared object by object:
//!
//! - iptables-save: the `#` header and footer lines (dates, versions) and the `[N:M]`
//!   counters of chain declarations are dropped; tables and chains are keyed by name (the
//!   order iptables-save prints chains in is the kernel's, and render's is sorted the same
//!   way, but a difference there would say nothing about the rules); rules keep their order,
//!   except in the chains kube-proxy fills Service by Service walking a Go map (random order:
//!   `KUBE-SERVICES`, `KUBE-NODEPORTS`, `KUBE-EXTERNAL-SERVICES`, `KUBE-PROXY-FIREWALL`),
//!   whose rules are grouped by the Service port their comment names (each group keeps its
//!   order, and the rule that must be last stays last): rules of two Service ports match
//!   different destinations, so their relative order means nothing.
//! - nft list: objects are keyed by kind and name, because nft lists them in the order they
//!   were created and kube-proxy creates its per-Service chains walking a Go map (random
//!   order); the elements of a set or map are sorted, because nft prints them in the
//!   kernel's hash order; a rule's text and a chain's rule order are kept. Dumps are taken
//!   without `-a`, so there are no handles.
//!
//! A difference is one line of the real dump render lacks (`Missing`), one render has that
//! the real dump lacks (`Extra`), or an object with the same lines in another order
//! (`Order`). [`KNOWN`] lists the ones docs/differences.md (`## kube-proxy`) explains.

use std::collections::BTreeMap;
use std::fmt;

/// A dump cut into objects: each object's key (`filter INPUT`, `chain services`) and its
/// lines, normalised.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dump {
    /// The objects by key.
    pub objects: BTreeMap<String, Vec<String>>,
}

impl Dump {
    /// How many lines (rules, declarations, elements) the dump has.
    pub fn lines(&self) -> usize {
        self.objects.values().map(Vec::len).sum()
    }
}

/// `iptables-save` (or `ip6tables-save`) output, cut into chains.
pub fn iptables(text: &str) -> Dump {
    let mut dump = Dump::default();
    let mut table = String::new();
    for line in text.lines().map(str::trim_end) {
        if line.is_empty() || line.starts_with('#') || line == "COMMIT" {
            continue;
        }
        if let Some(name) = line.strip_prefix('*') {
            table = name.to_owned();
        } else if let Some(declaration) = line.strip_prefix(':') {
            // `:CHAIN POLICY [packets:bytes]`: the counters go.
            let mut words = declaration.split_whitespace();
            let chain = words.next().unwrap_or_default();
            let policy = words.next().unwrap_or_default();
            dump.objects
                .entry(format!("{table} {chain}"))
                .or_default()
                .insert(0, format!(":{chain} {policy}"));
        } else if let Some(rest) = line.strip_prefix("-A ") {
            let chain = rest.split_whitespace().next().unwrap_or_default();
            dump.objects
                .entry(format!("{table} {chain}"))
                .or_default()
                .push(line.to_owned());
        } else {
            dump.objects
                .entry(format!("{table} (other)"))
                .or_default()
                .push(line.to_owned());
        }
    }
    for (key, rules) in &mut dump.objects {
        let chain = key.split(' ').nth(1).unwrap_or_default();
        if PER_SERVICE_CHAINS.contains(&chain) {
            rules.sort_by_key(|rule| service_group(rule));
        }
    }
    dump
}

/// The chains kube-proxy fills walking its map of Service ports.
const PER_SERVICE_CHAINS: [&str; 4] = [
    "KUBE-SERVICES",
    "KUBE-NODEPORTS",
    "KUBE-EXTERNAL-SERVICES",
    "KUBE-PROXY-FIREWALL",
];

/// A rule's place in a per-Service chain: the declaration first, then by the Service port its
/// comment names, the chain's catch-all (`must be the last rule`) last.
fn service_group(rule: &str) -> (u8, String) {
    if rule.starts_with(':') {
        return (0, String::new());
    }
    if rule.contains("must be the last rule") {
        return (2, String::new());
    }
    let port = rule
        .split("--comment ")
        .nth(1)
        .map(|c| c.trim_start_matches('"'))
        .and_then(|c| c.split([' ', '"']).next())
        .unwrap_or_default();
    (1, port.to_owned())
}

/// `nft list table` output, cut into sets, maps and chains, elements sorted.
pub fn nft(text: &str) -> Dump {
    let mut dump = Dump::default();
    let mut current = "table".to_owned();
    let mut elements: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(open) = elements.as_mut() {
            open.push(' ');
            open.push_str(trimmed);
            if trimmed.ends_with('}') {
                let all = elements.take().unwrap_or_default();
                push_elements(&mut dump, &current, &all);
            }
            continue;
        }
        if trimmed.is_empty() || trimmed == "}" || trimmed.starts_with("table ") {
            continue;
        }
        if let Some(key) = object_start(line) {
            current = key;
            dump.objects.entry(current.clone()).or_default();
        } else if trimmed.starts_with("elements = {") {
            if trimmed.ends_with('}') {
                push_elements(&mut dump, &current, trimmed);
            } else {
                elements = Some(trimmed.to_owned());
            }
        } else {
            dump.objects
                .entry(current.clone())
                .or_default()
                .push(trimmed.to_owned());
        }
    }
    dump
}

/// `set NAME`, `map NAME` or `chain NAME` for the line that opens one (one tab deep).
fn object_start(line: &str) -> Option<String> {
    let rest = line.strip_prefix('\t')?;
    if rest.starts_with('\t') {
        return None;
    }
    let rest = rest.strip_suffix(" {")?;
    let (kind, name) = rest.split_once(' ')?;
    matches!(kind, "set" | "map" | "chain").then(|| format!("{kind} {name}"))
}

/// `elements = { a, b, ... }` as one `element` line per element, sorted.
fn push_elements(dump: &mut Dump, object: &str, text: &str) {
    let inner = text
        .trim()
        .trim_start_matches("elements = {")
        .trim_end_matches('}');
    let mut each: Vec<String> = inner
        .split(',')
        .map(|e| format!("element {}", e.trim()))
        .collect();
    each.sort();
    dump.objects
        .entry(object.to_owned())
        .or_default()
        .extend(each);
}

/// How two dumps differ in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The real dump has the line; render does not.
    Missing,
    /// Render has the line; the real dump does not.
    Extra,
    /// The object has the same lines in both, in another order.
    Order,
}

/// One difference between the real dump and render's.
#[derive(Debug, Clone)]
pub struct Difference {
    /// The object (`filter INPUT`, `chain services`).
    pub object: String,
    /// What differs.
    pub kind: Kind,
    /// The line (for `Order`, the real dump's lines, joined by ` | `).
    pub line: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:?}: {}", self.object, self.kind, self.line)
    }
}

/// The outcome of one comparison: how many lines of the real dump were compared and how
/// many render has as well, and every difference.
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    /// Lines of the real dump.
    pub compared: usize,
    /// Lines of the real dump render has too, in an object of the same order.
    pub equal: usize,
    /// The differences.
    pub differences: Vec<Difference>,
}

/// Compares `real` with `rendered`, object by object.
pub fn compare(real: &Dump, rendered: &Dump) -> Comparison {
    let mut out = Comparison {
        compared: real.lines(),
        ..Comparison::default()
    };
    let empty = Vec::new();
    let keys: std::collections::BTreeSet<&String> =
        real.objects.keys().chain(rendered.objects.keys()).collect();
    for key in keys {
        let r = real.objects.get(key).unwrap_or(&empty);
        let d = rendered.objects.get(key).unwrap_or(&empty);
        let (missing, extra) = multiset_difference(r, d);
        let differs = |kind, line: &String| Difference {
            object: key.clone(),
            kind,
            line: line.clone(),
        };
        out.differences
            .extend(missing.iter().map(|l| differs(Kind::Missing, l)));
        out.differences
            .extend(extra.iter().map(|l| differs(Kind::Extra, l)));
        let matched = r.len() - missing.len();
        if missing.is_empty() && extra.is_empty() && r != d {
            out.differences.push(differs(Kind::Order, &r.join(" | ")));
        } else {
            out.equal += matched;
        }
    }
    out
}

/// The lines of `a` not in `b` and of `b` not in `a`, counting repeats.
fn multiset_difference(a: &[String], b: &[String]) -> (Vec<String>, Vec<String>) {
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    for line in a {
        *counts.entry(line).or_default() += 1;
    }
    for line in b {
        *counts.entry(line).or_default() -= 1;
    }
    let mut missing = Vec::new();
    let mut extra = Vec::new();
    for (line, count) in counts {
        for _ in 0..count.max(0) {
            missing.push(line.to_owned());
        }
        for _ in 0..(-count).max(0) {
            extra.push(line.to_owned());
        }
    }
    (missing, extra)
}

/// A difference docs/differences.md explains: the words of it that the doc must contain, and
/// how to recognise it.
pub struct Known {
    /// Words quoted from docs/differences.md's `## kube-proxy` section.
    pub doc: &'static str,
    /// What it is, for the report.
    pub what: &'static str,
    /// Whether a difference is this one.
    pub matches: fn(&Difference) -> bool,
}

/// The differences clusterdns keeps, each explained in docs/differences.md.
pub const KNOWN: &[Known] = &[Known {
    doc: "the kubelet's `-j KUBE-FIREWALL` jumps",
    what: "filter INPUT/OUTPUT: KUBE-FIREWALL first on a node without a kubelet, last in render",
    matches: |d| {
        d.kind == Kind::Order
            && (d.object == "filter INPUT" || d.object == "filter OUTPUT")
            && d.line.contains(" -j KUBE-FIREWALL |")
            && d.line
                .split(" | ")
                .nth(1)
                .is_some_and(|first| first.ends_with("-j KUBE-FIREWALL"))
    },
}];

/// The differences of `comparison` that [`KNOWN`] does not explain, and how many it does.
pub fn undocumented(comparison: &Comparison) -> (Vec<&Difference>, usize) {
    let (known, unknown): (Vec<&Difference>, Vec<&Difference>) = comparison
        .differences
        .iter()
        .partition(|d| KNOWN.iter().any(|k| (k.matches)(d)));
    (unknown, known.len())
}

/// The `## kube-proxy` section of docs/differences.md.
pub fn doc_section() -> String {
    let docs = std::fs::read_to_string(crate::common::root().join("docs/differences.md")).unwrap();
    docs.split("\n## kube-proxy\n")
        .nth(1)
        .expect("docs/differences.md has a `## kube-proxy` section")
        .split("\n## ")
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Every [`KNOWN`] entry quotes words the doc section has.
pub fn assert_known_documented() {
    let section = doc_section();
    for known in KNOWN {
        assert!(
            section.contains(known.doc),
            "KNOWN names {:?} ({}), which docs/differences.md's `## kube-proxy` does not say",
            known.doc,
            known.what
        );
    }
}

/// Asserts `comparison` (of `what`) has no difference [`KNOWN`] does not explain; its
/// figures, as one line for the report.
pub fn assert_explained(what: &str, comparison: &Comparison) -> String {
    let (unknown, documented) = undocumented(comparison);
    assert!(
        unknown.is_empty(),
        "{what}: {} undocumented differences from the real kube-proxy:\n{}",
        unknown.len(),
        unknown
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    format!(
        "{what}: {} lines compared, {} equal, {documented} documented differences",
        comparison.compared, comparison.equal
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumps_normalise_what_cannot_agree() {
        let cases: &[(&str, &str, &str, bool)] = &[
            (
                "iptables counters and headers",
                "# Generated by x on Mon\n*nat\n:KUBE-A - [3:4]\n-A KUBE-A -j DROP\nCOMMIT\n",
                "*nat\n:KUBE-A - [0:0]\n-A KUBE-A -j DROP\nCOMMIT\n",
                true,
            ),
            (
                "iptables rule order is kept",
                "*nat\n:A - [0:0]\n-A A -j X\n-A A -j Y\nCOMMIT\n",
                "*nat\n:A - [0:0]\n-A A -j Y\n-A A -j X\nCOMMIT\n",
                false,
            ),
            (
                "Service ports in a per-Service chain, in any order",
                "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -m comment --comment \"b/s cluster IP\" -j X\n-A KUBE-SERVICES -m comment --comment a/s:p -j Y\n-A KUBE-SERVICES -m comment --comment \"NOTE: this must be the last rule\" -j Z\nCOMMIT\n",
                "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -m comment --comment a/s:p -j Y\n-A KUBE-SERVICES -m comment --comment \"b/s cluster IP\" -j X\n-A KUBE-SERVICES -m comment --comment \"NOTE: this must be the last rule\" -j Z\nCOMMIT\n",
                true,
            ),
        ];
        for (what, a, b, same) in cases {
            assert_eq!(iptables(a) == iptables(b), *same, "{what}");
        }
        let nft_a = "table ip t {\n\tset s {\n\t\ttype ipv4_addr\n\t\telements = { 10.0.0.2, 10.0.0.1,\n\t\t\t     10.0.0.3 }\n\t}\n\n\tchain b {\n\t\tdrop\n\t}\n\n\tchain a {\n\t\taccept\n\t}\n}\n";
        let nft_b = "table ip t {\n\tchain a {\n\t\taccept\n\t}\n\n\tset s {\n\t\ttype ipv4_addr\n\t\telements = { 10.0.0.1, 10.0.0.3, 10.0.0.2 }\n\t}\n\n\tchain b {\n\t\tdrop\n\t}\n}\n";
        assert_eq!(nft(nft_a), nft(nft_b));
        assert_eq!(nft(nft_a).lines(), 6);
    }

    #[test]
    fn comparisons_name_each_difference() {
        let real = iptables(
            "*filter\n:INPUT ACCEPT [1:2]\n-A INPUT -j KUBE-FIREWALL\n-A INPUT -j B\nCOMMIT\n*nat\n:N - [0:0]\n-A N -j X\nCOMMIT\n",
        );
        let rendered = iptables(
            "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j B\n-A INPUT -j KUBE-FIREWALL\nCOMMIT\n*nat\n:N - [0:0]\n-A N -j Y\nCOMMIT\n",
        );
        let c = compare(&real, &rendered);
        let kinds: Vec<(String, Kind)> = c
            .differences
            .iter()
            .map(|d| (d.object.clone(), d.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("filter INPUT".to_owned(), Kind::Order),
                ("nat N".to_owned(), Kind::Missing),
                ("nat N".to_owned(), Kind::Extra),
            ]
        );
        assert_eq!((c.compared, c.equal), (5, 1));
        let (unknown, documented) = undocumented(&c);
        assert_eq!((unknown.len(), documented), (2, 1));
    }
}
