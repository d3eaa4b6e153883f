//! Search-path waste: which queries are a stub resolver's search-list expansions of a name,
//! and what a fix (a trailing dot, a lower `ndots`, server-side *autopath*) would save.
//!
//! Two readers share this module: `resolve-cost --log` ([`crate::resolver_sim::logs`]),
//! which reads a query log after the fact, and the live tracker ([`live`]), which follows
//! each client's walk on the running server and serves it on `/debug/search-path`. Both put
//! a query's name in the same classes — `<stem>.<namespace>.svc.<zone>`, `<stem>.svc.<zone>`,
//! `<stem>.<zone>`, `<stem>.<node domain>`, the stem as typed — and both price the fixes
//! with [`ndots_table`] and [`fixes`] over the same per-stem figures ([`Stem`]).

pub mod live;
pub mod page;

use serde::Serialize;

/// What one name behind search-path misses (its *stem*, as the client typed it) cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stem {
    /// Its search-path misses: NXDOMAIN answers to the stem with a search domain appended.
    pub misses: u64,
    /// Those under the node's search domains (the cluster DNS forwarded them upstream).
    pub upstream: u64,
    /// Queries for the stem with the first search domain (one per lookup and type).
    pub first_step: u64,
    /// It was found somewhere (an expansion or the name as typed answered NOERROR).
    pub found: bool,
    /// It was found through the search list (an expansion answered).
    pub found_by_search: bool,
}

/// What a fix would have saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Projected {
    /// `trailing-dot`, `ndots:N` or `autopath`.
    pub fix: String,
    /// Queries saved (net).
    pub queries: i64,
    /// Upstream queries saved.
    pub upstream: i64,
    /// Names that would stop resolving on musl (ndots).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub breaks_on_musl: Vec<String>,
}

/// The search domains of a client in `namespace`, in the order the kubelet writes them:
/// `<namespace>.svc.<zone>`, `svc.<zone>`, `<zone>` (each lower case, with its final dot;
/// `zone` is given with its final dot).
pub fn cluster_suffixes(namespace: &str, zone: &str) -> Vec<String> {
    let svc = format!("svc.{zone}");
    vec![format!("{namespace}.{svc}"), svc, zone.to_owned()]
}

/// `name` without `.domain` at its end (the stem), if it has a non-empty stem.
pub fn strip_domain<'a>(name: &'a str, domain: &str) -> Option<&'a str> {
    let stem = name.strip_suffix(domain)?.strip_suffix('.')?;
    (!stem.is_empty()).then_some(stem)
}

/// `n` as an `i64`, saturating.
fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// What ndots 2, 3 and 4 (set through the pod's dnsConfig) would save over `stems` (each
/// with its name as typed): the misses of stems with at least N dots that were not found
/// through the search list, minus one query (the name as typed, NXDOMAIN upstream) per
/// lookup of those with N dots that were — which musl would then not search at all.
pub fn ndots_table<'a>(stems: impl Iterator<Item = (&'a str, &'a Stem)> + Clone) -> Vec<Projected> {
    (2..=4usize)
        .map(|ndots| {
            let mut projected = Projected {
                fix: format!("ndots:{ndots}"),
                queries: 0,
                upstream: 0,
                breaks_on_musl: Vec::new(),
            };
            for (name, stem) in stems.clone() {
                if name.matches('.').count() < ndots {
                    continue;
                }
                if stem.found_by_search {
                    projected.queries -= as_i64(stem.first_step);
                    projected.upstream -= as_i64(stem.first_step);
                    projected.breaks_on_musl.push(name.to_owned());
                } else {
                    projected.queries += as_i64(stem.misses);
                    projected.upstream += as_i64(stem.upstream);
                }
            }
            projected
        })
        .collect()
}

/// Adds the ndots options of `add` to `sum` (summing clients into a namespace).
pub fn add_ndots(sum: &mut Vec<Projected>, add: &[Projected]) {
    for (index, option) in add.iter().enumerate() {
        match sum.get_mut(index) {
            Some(sum) => {
                sum.queries += option.queries;
                sum.upstream += option.upstream;
                for name in &option.breaks_on_musl {
                    if !sum.breaks_on_musl.contains(name) {
                        sum.breaks_on_musl.push(name.clone());
                    }
                }
            }
            None => sum.push(option.clone()),
        }
    }
}

/// The fixes: trailing dots (every miss), the best ndots of `ndots` (the largest of
/// equals, when one saves anything), autopath (the misses of names found somewhere, which
/// the server walks instead; `found` of the `misses`).
pub fn fixes(misses: u64, upstream: u64, found: u64, ndots: &[Projected]) -> Vec<Projected> {
    let mut out = vec![Projected {
        fix: "trailing-dot".to_owned(),
        queries: as_i64(misses),
        upstream: as_i64(upstream),
        breaks_on_musl: Vec::new(),
    }];
    let best = ndots
        .iter()
        .rev()
        .filter(|p| p.queries > 0)
        .fold(None::<&Projected>, |best, p| match best {
            Some(b) if b.queries >= p.queries => Some(b),
            _ => Some(p),
        });
    out.extend(best.cloned());
    out.push(Projected {
        fix: "autopath".to_owned(),
        queries: as_i64(found),
        upstream: 0,
        breaks_on_musl: Vec::new(),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_and_stems() {
        assert_eq!(
            cluster_suffixes("shop", "cluster.local."),
            [
                "shop.svc.cluster.local.",
                "svc.cluster.local.",
                "cluster.local."
            ]
        );
        assert_eq!(
            strip_domain("web.payments.svc.cluster.local.", "svc.cluster.local."),
            Some("web.payments")
        );
        assert_eq!(
            strip_domain("svc.cluster.local.", "svc.cluster.local."),
            None
        );
        assert_eq!(
            strip_domain("xsvc.cluster.local.", "svc.cluster.local."),
            None
        );
    }

    #[test]
    fn fixes_of_one_stem() {
        let api = Stem {
            misses: 6,
            first_step: 2,
            found: true,
            ..Stem::default()
        };
        let web = Stem {
            misses: 1,
            first_step: 1,
            found: true,
            found_by_search: true,
            ..Stem::default()
        };
        let stems = [("api.partner.example.com", api), ("web.payments", web)];
        let ndots = ndots_table(stems.iter().map(|(n, s)| (*n, s)));
        let names: Vec<(&str, i64)> = ndots.iter().map(|p| (p.fix.as_str(), p.queries)).collect();
        // ndots:2 saves api's 6 but costs web.payments nothing (one dot); ndots:4 nothing.
        assert_eq!(names, [("ndots:2", 6), ("ndots:3", 6), ("ndots:4", 0)]);
        let fixes = fixes(7, 0, 7, &ndots);
        let names: Vec<(&str, i64)> = fixes.iter().map(|p| (p.fix.as_str(), p.queries)).collect();
        assert_eq!(
            names,
            [("trailing-dot", 7), ("ndots:3", 6), ("autopath", 7)]
        );
    }
}
