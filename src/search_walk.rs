//! *autopath*'s search path: which names the server tries, in order, for a query that carries
//! the first element of the client's search list (CoreDNS `plugin/autopath`,
//! `plugin/kubernetes/autopath.go`). Pure: the server's request path ([`crate::server`]) and
//! the stub-resolver simulator ([`crate::resolver_sim`]) both walk what [`SearchPath::plan`]
//! returns, so `resolve-cost --autopath` shows what the server does.
//!
//! With `@kubernetes` the client's search list is the kubelet's: `<ns>.svc.<zone>`,
//! `svc.<zone>`, `<zone>`, then the server's own search domains (CoreDNS: those of its
//! `/etc/resolv.conf`, which on a `dnsPolicy: Default` pod are the node's, as the kubelet
//! appends to every pod's list), then the name as typed. The namespace comes from
//! - the client's pod, found by its address (CoreDNS; needs `pods verified`): a host-network
//!   pod, a terminating pod, or an address two namespaces claim gives no autopath;
//! - or (`namespace query`, a clusterdns extension) the query itself: a name
//!   `<base>.<ns>.svc.<zone>` where `<ns>` is an existing namespace is, to a pod's resolver,
//!   `<base>` with the first search domain appended — no pod watch needed.
//!
//! With a resolv.conf file, its search list is the list, for every client.

use std::net::IpAddr;

use crate::codes::rtype;
use crate::name::{MAX_NAME_LEN, WireName, suffix_offset};
use crate::zone::Snapshot;

/// Where the client's namespace comes from (`@kubernetes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespaceFrom {
    /// The pod with the client's address (`pods verified`).
    Pod,
    /// The query name's `<ns>.svc.<zone>` suffix.
    Query,
}

/// Where the search list comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `@kubernetes`: the cluster's three domains for the client's namespace, then `extra`.
    Kubernetes(NamespaceFrom),
    /// A resolv.conf's `search` list: `extra` is the whole list.
    Static,
}

/// One *autopath* directive, ready to plan walks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPath {
    /// The zones autopath acts in (lower case).
    zones: Vec<WireName>,
    source: Source,
    /// The search domains after the cluster's (`@kubernetes`) or the whole list (a file).
    extra: Vec<WireName>,
}

/// The names to try for one query, the query's own name first, the name as typed last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// In order.
    pub candidates: Vec<WireName>,
    /// The client's namespace, with `@kubernetes`.
    pub namespace: Option<String>,
}

impl SearchPath {
    /// autopath in `zones` with the search list from `source` (`extra`: see [`Source`]).
    pub fn new(zones: Vec<WireName>, source: Source, extra: Vec<WireName>) -> Self {
        Self {
            zones: zones.iter().map(WireName::to_lowercase).collect(),
            source,
            extra: extra.iter().map(WireName::to_lowercase).collect(),
        }
    }

    /// The namespace source, with `@kubernetes`.
    pub fn namespace_from(&self) -> Option<NamespaceFrom> {
        match self.source {
            Source::Kubernetes(from) => Some(from),
            Source::Static => None,
        }
    }

    /// The walk for `qname` (lower-case wire) from `client`, or `None` when autopath leaves
    /// the query alone: outside its zones, no namespace for the client, or a name that does
    /// not end in the first search domain (or is that domain itself).
    pub fn plan(&self, qname: &[u8], client: IpAddr, snapshot: Option<&Snapshot>) -> Option<Plan> {
        if !self
            .zones
            .iter()
            .any(|zone| suffix_offset(qname, zone.as_bytes()).is_some())
        {
            return None;
        }
        let (search, namespace) = match self.source {
            Source::Static => (self.extra.clone(), None),
            Source::Kubernetes(from) => {
                let snapshot = snapshot?;
                let zone = snapshot
                    .zones()
                    .get(snapshot.zone_of(qname)?)?
                    .origin()
                    .clone();
                let namespace = match from {
                    NamespaceFrom::Pod => snapshot.client_namespace(client)?.to_owned(),
                    NamespaceFrom::Query => namespace_in_query(qname, &zone, snapshot)?,
                };
                let first = zone.prepend_all([namespace.as_str(), "svc"]).ok()?;
                let second = zone.child("svc").ok()?;
                let mut search = vec![first, second, zone];
                for domain in &self.extra {
                    if !search.contains(domain) {
                        search.push(domain.clone());
                    }
                }
                (search, Some(namespace))
            }
        };
        let first = search.first()?;
        let offset = suffix_offset(qname, first.as_bytes())?;
        if offset == 0 {
            return None;
        }
        let base = &qname[..offset];
        let mut candidates: Vec<WireName> = Vec::with_capacity(search.len() + 1);
        for domain in search.iter().chain(std::iter::once(&WireName::root())) {
            if base.len() + domain.as_bytes().len() > MAX_NAME_LEN {
                continue;
            }
            let mut bytes = base.to_vec();
            bytes.extend_from_slice(domain.as_bytes());
            let candidate = WireName::from_wire_unchecked(bytes);
            if !candidates.contains(&candidate) {
                candidates.push(candidate);
            }
        }
        Some(Plan {
            candidates,
            namespace,
        })
    }
}

/// `<ns>` of a query `<base>.<ns>.svc.<zone>` when `<ns>` is a namespace the zone has.
fn namespace_in_query(qname: &[u8], zone: &WireName, snapshot: &Snapshot) -> Option<String> {
    let svc = zone.child("svc").ok()?;
    let at = suffix_offset(qname, svc.as_bytes())?;
    // The labels before `svc.<zone>`: at least a base and the namespace.
    let before: Vec<&[u8]> = crate::name::labels(&qname[..at]).collect();
    if before.len() < 2 {
        return None;
    }
    let namespace = std::str::from_utf8(before[before.len() - 1]).ok()?;
    let node = svc.child(namespace).ok()?;
    let exists = snapshot
        .lookup(node.as_bytes(), rtype::A)
        .is_some_and(|answer| answer.rcode == crate::zone::Rcode::NoError);
    exists.then(|| namespace.to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn wire(text: &str) -> WireName {
        WireName::from_dotted(text).unwrap()
    }

    fn names(plan: &Plan) -> Vec<String> {
        plan.candidates.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn static_search_list() {
        let path = SearchPath::new(
            vec![WireName::root()],
            Source::Static,
            vec![wire("a.example"), wire("b.example")],
        );
        let client = "10.0.0.1".parse().unwrap();
        let plan = path
            .plan(wire("host.a.example").as_bytes(), client, None)
            .unwrap();
        assert_eq!(
            names(&plan),
            ["host.a.example.", "host.b.example.", "host."]
        );
        // Not below the first search domain, or the domain itself: left alone.
        assert!(
            path.plan(wire("host.b.example").as_bytes(), client, None)
                .is_none()
        );
        assert!(
            path.plan(wire("a.example").as_bytes(), client, None)
                .is_none()
        );
        // Outside autopath's zones.
        let narrow = SearchPath::new(
            vec![wire("cluster.local")],
            Source::Static,
            vec![wire("a.example")],
        );
        assert!(
            narrow
                .plan(wire("host.a.example").as_bytes(), client, None)
                .is_none()
        );
    }
}
