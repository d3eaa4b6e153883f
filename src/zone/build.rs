//! Building a [`Snapshot`] from the cluster's objects: every name the plugin answers, with
//! its records already encoded.

use std::collections::{BTreeSet, HashSet};
use std::net::IpAddr;

use super::builder::{Builder, zone_origin};
use super::multicluster::{self, ImportView};
use super::name::{WireName, parent};
use super::node::Node;
use super::records::{self, Filter, View};
use super::rrset;
use super::shards::Sharded;
use super::{Map, ServedZone, Snapshot, Soa};
use crate::codes::rtype;
use crate::config::{KubernetesConfig, PodMode};
use crate::model::{Cluster, Pod, PodPhase, Service};

/// The schema version of the Kubernetes DNS specification implemented.
pub const DNS_SCHEMA_VERSION: &str = "1.1.0";
/// TTL of the `dns-version` TXT record, whatever `ttl` says.
const DNS_VERSION_TTL: u32 = 28800;

/// What a snapshot needs besides the objects and the configuration.
#[derive(Debug, Clone, Default)]
pub struct BuildContext {
    /// The addresses this server answers on; the apex NS and `ns.dns.<zone>` point at the
    /// Service whose endpoints hold one of them, or at these addresses themselves.
    pub local_ips: Vec<IpAddr>,
    /// The SOA serial.
    pub serial: u32,
}

/// Builds the zone of `config` from `cluster`.
pub fn build(cluster: &Cluster, config: &KubernetesConfig, ctx: &BuildContext) -> Snapshot {
    build_full(cluster, config, ctx).0
}

/// The zone built whole, and the tree of its names that an update keeps (which names
/// have names below them, and which exist only for that).
pub(crate) fn build_full(
    cluster: &Cluster,
    config: &KubernetesConfig,
    ctx: &BuildContext,
) -> (Snapshot, Tree) {
    let zones = served_zones(config, ctx.serial);
    let filter = Filter::new(cluster, config);
    let view = View::new(cluster, &filter);
    let scope = Scope {
        ptr_services: view.services.iter().map(|sv| sv.service).collect(),
        namespaces: view.exposed.iter().copied().collect(),
        pods: cluster.pods.values().collect(),
        only_ips: None,
        imports: multicluster::view(cluster, &filter),
    };
    let mut b = Builder::new(config.ttl);
    add_scope(&mut b, &zones, cluster, config, ctx, &filter, &view, &scope);
    let external =
        super::external::build(cluster, config, &ctx.local_ips, ctx.serial, &filter, &view);
    // The view's addresses and labels are not needed to pack the names: freed before.
    drop((scope, view));
    let filled = b.fill_empty_non_terminals(&zones);
    let nodes = Sharded::from_entries(b.into_nodes());
    let tree = Tree::of(&zones, nodes.iter().map(Node::name), &filled);

    let pod_namespaces = pod_namespaces(config, &filter);
    let clients = match config.pods {
        PodMode::Verified => client_namespaces(cluster.pods.values(), &filter.exposed),
        _ => Map::default(),
    };
    let snapshot = Snapshot {
        zones,
        nodes,
        pod_namespaces: std::sync::Arc::new(pod_namespaces),
        pods: config.pods,
        clients: Sharded::from_entries(clients.into_iter()),
        ttl: config.ttl,
        serial: ctx.serial,
        external,
    };
    (snapshot, tree)
}

/// The zones of `config`, with SOA `serial`.
pub(crate) fn served_zones(config: &KubernetesConfig, serial: u32) -> Vec<ServedZone> {
    let wire = |zone: &hickory_proto::rr::Name| {
        WireName::from_dotted(&zone.to_ascii())
            .ok()
            .map(|zone| zone.to_lowercase())
    };
    let multicluster: Vec<WireName> = config.multicluster.iter().filter_map(wire).collect();
    config
        .zones
        .iter()
        .filter_map(wire)
        .map(|origin| {
            let reverse = is_reverse(&origin);
            ServedZone {
                multicluster: !reverse && multicluster.iter().any(|mc| origin.is_within(mc)),
                origin,
                reverse,
                soa: Soa::new(config.ttl, serial),
                soa_prefixes: super::CLUSTER_SOA_PREFIXES,
            }
        })
        .collect()
}

/// The namespaces whose `<ip>.<ns>.pod.<zone>` names `pods insecure` answers.
pub(crate) fn pod_namespaces(
    config: &KubernetesConfig,
    filter: &Filter<'_, '_>,
) -> HashSet<Box<[u8]>, ahash::RandomState> {
    match config.pods {
        PodMode::Insecure => filter
            .exposed
            .iter()
            .map(|ns| ns.to_ascii_lowercase().into_bytes().into_boxed_slice())
            .collect(),
        _ => HashSet::default(),
    }
}

/// What a build covers besides the Services of its view: the whole zone for a full build,
/// the names a change touched for an update.
#[derive(Debug)]
pub(crate) struct Scope<'c> {
    /// Visible Services whose ClusterIPs give PTRs, in namespace/name order.
    pub(crate) ptr_services: Vec<&'c Service>,
    /// Exposed namespaces whose `<ns>.svc` and `<ns>.pod` names are built.
    pub(crate) namespaces: Vec<&'c str>,
    /// Pods whose names `pods verified` builds, in namespace/name order.
    pub(crate) pods: Vec<&'c Pod>,
    /// The only addresses whose PTRs are built (`None`: every address).
    pub(crate) only_ips: Option<&'c BTreeSet<IpAddr>>,
    /// Visible ServiceImports whose names the `multicluster` zones build.
    pub(crate) imports: Vec<ImportView<'c>>,
}

/// Adds the names of `view` and `scope` to `b`: the apex of every zone always; the
/// Services of `view`; the PTRs of the scope's addresses; its namespaces and pods.
#[allow(clippy::too_many_arguments)]
pub(crate) fn add_scope(
    b: &mut Builder,
    zones: &[ServedZone],
    cluster: &Cluster,
    config: &KubernetesConfig,
    ctx: &BuildContext,
    filter: &Filter<'_, '_>,
    view: &View<'_>,
    scope: &Scope<'_>,
) {
    let primary = config
        .zones
        .get(config.primary_zone)
        .and_then(|zone| WireName::from_dotted(&zone.to_ascii()).ok())
        .map(|zone| zone.to_lowercase());
    for zone in zones {
        let servers = name_servers(cluster, filter, view, &zone.origin, &ctx.local_ips);
        add_apex(b, zone, &servers);
        if zone.reverse {
            if let Some(primary) = &primary {
                add_reverse(b, &zone.origin, view, scope, primary);
            }
            continue;
        }
        add_forward(b, zone, view, config, scope);
    }
}

/// The namespace of every running pod's addresses (*autopath* finds a client's namespace
/// from its address). Host-network pods share the node's address and terminating pods may
/// have handed theirs on: neither is a client; an address claimed in two namespaces maps to
/// `None`.
pub(crate) fn client_namespaces<'p>(
    pods: impl IntoIterator<Item = &'p Pod>,
    exposed: &BTreeSet<&str>,
) -> Map<IpAddr, Option<Box<str>>> {
    let mut clients: Map<IpAddr, Option<Box<str>>> = Map::default();
    for pod in pods {
        if pod.phase != PodPhase::Running
            || pod.terminating
            || pod.host_network
            || !exposed.contains(&*pod.key.namespace)
        {
            continue;
        }
        for ip in &pod.ips {
            let namespace = &*pod.key.namespace;
            clients
                .entry(*ip)
                .and_modify(|seen| {
                    if seen.as_deref() != Some(namespace) {
                        *seen = None;
                    }
                })
                .or_insert_with(|| Some(namespace.into()));
        }
    }
    clients
}

fn is_reverse(origin: &WireName) -> bool {
    ["in-addr.arpa.", "ip6.arpa."]
        .iter()
        .any(|suffix| WireName::from_dotted(suffix).is_ok_and(|suffix| origin.is_within(&suffix)))
}

/// SOA, NS (with glue), `ns.dns.<zone>` and `dns-version.<zone>`.
fn add_apex(b: &mut Builder, zone: &ServedZone, servers: &[(WireName, IpAddr)]) {
    let origin = &zone.origin;
    let soa = zone.soa;
    // The SOA is only answered at the apex, where the question is the zone: its names point
    // at the question, so they carry the query's spelling.
    let mut rdata = Vec::with_capacity(40);
    rdata.extend_from_slice(b"\x02ns\x03dns\xc0\x0c\x0ahostmaster\xc0\x0c");
    rdata.extend_from_slice(&soa.tail());
    b.set(origin, rtype::SOA, soa.ttl).push(&rdata);

    let ttl = b.ttl;
    let mut seen = HashSet::new();
    for (name, ip) in servers {
        let mut set = b.set(origin, rtype::NS, ttl);
        if seen.insert(name.clone()) {
            set.push(name.as_bytes());
        }
        set.push_extra_address(name, ttl, *ip);
    }
    if let Ok(ns) = origin.prepend_all(["ns", "dns"]) {
        // The SOA's MNAME exists without addresses too (a server on loopback alone has
        // none): NODATA, as CoreDNS answers it.
        b.touch(&ns);
        for (_, ip) in servers {
            let (rtype, rdata) = rrset::address_rdata(*ip);
            b.set(&ns, rtype, ttl).push(&rdata);
        }
    }
    if let Ok(version) = origin.child("dns-version") {
        b.set(&version, rtype::TXT, DNS_VERSION_TTL)
            .push(&rrset::txt_rdata(DNS_SCHEMA_VERSION));
    }
}

/// CoreDNS `nsAddrs`: the Services whose endpoints hold one of our addresses (their
/// ClusterIPs, or for a headless Service the endpoint names and addresses); failing that,
/// `ns.dns.<zone>` at our own addresses. De-duplicated by address.
fn name_servers(
    cluster: &Cluster,
    filter: &Filter<'_, '_>,
    view: &View<'_>,
    zone: &WireName,
    local_ips: &[IpAddr],
) -> Vec<(WireName, IpAddr)> {
    let mut found = Vec::new();
    for local in local_ips {
        for slice in &view.slices {
            let holds_local = slice
                .endpoints
                .iter()
                .any(|e| e.conditions.ready() && e.addresses.contains(local));
            let Some(service) = slice.service_name.as_deref() else {
                continue;
            };
            if !holds_local {
                continue;
            }
            let Some(sv) = filter.find_service(cluster, &slice.key.namespace, service) else {
                continue;
            };
            let Ok(base) = zone.prepend_all([service, &*slice.key.namespace, "svc"]) else {
                continue;
            };
            if sv.headless {
                for address in records::ready_addresses(slice, view.pod_names) {
                    if let Ok(name) = base.child(&address.label) {
                        found.push((name, address.ip));
                    }
                }
            } else {
                found.extend(sv.cluster_ips.iter().map(|&ip| (base.clone(), ip)));
            }
        }
    }
    if found.is_empty()
        && let Ok(ns) = zone.prepend_all(["ns", "dns"])
    {
        found.extend(local_ips.iter().map(|&ip| (ns.clone(), ip)));
    }
    let mut seen = HashSet::new();
    found.retain(|(_, ip)| seen.insert(*ip));
    found
}

/// A forward zone: its fixed names, namespaces and pods, and the Services of `view` — or,
/// in a `multicluster` zone, the ServiceImports of `scope`.
fn add_forward(
    b: &mut Builder,
    served: &ServedZone,
    view: &View<'_>,
    config: &KubernetesConfig,
    scope: &Scope<'_>,
) {
    let zone = &served.origin;
    for fixed in ["svc", "pod", "dns"] {
        if let Ok(name) = zone.child(fixed) {
            b.touch(&name);
        }
    }
    for namespace in &scope.namespaces {
        if let Ok(name) = zone.prepend_all([*namespace, "svc"]) {
            b.touch(&name);
        }
        if config.pods != PodMode::Disabled
            && let Ok(name) = zone.prepend_all([*namespace, "pod"])
        {
            b.touch(&name);
        }
    }
    if served.multicluster {
        for iv in &scope.imports {
            multicluster::add_import(b, zone, iv, config);
        }
    } else {
        for sv in &view.services {
            records::add_service(b, zone, sv, config);
        }
    }
    if config.pods == PodMode::Verified {
        add_verified_pods(b, zone, view, config, &scope.pods);
    }
}

/// `pods verified`: a name per running or pending pod, from its `status.podIP` spelled with
/// dashes (the only spelling CoreDNS's string comparison accepts).
fn add_verified_pods(
    b: &mut Builder,
    zone: &WireName,
    view: &View<'_>,
    config: &KubernetesConfig,
    pods: &[&Pod],
) {
    let ttl = b.ttl;
    for pod in pods {
        if !matches!(pod.phase, PodPhase::Pending | PodPhase::Running)
            || !view.exposed.contains(&*pod.key.namespace)
            || !config
                .labels
                .as_ref()
                .is_none_or(|s| s.matches(&pod.labels))
        {
            continue;
        }
        let Some(ip) = pod.primary_ip() else { continue };
        let label = ip.to_string().replace(['.', ':'], "-");
        if let Ok(name) = zone.prepend_all([label.as_str(), &*pod.key.namespace, "pod"]) {
            let (rtype, rdata) = rrset::address_rdata(ip);
            b.set(&name, rtype, ttl).push(&rdata);
        }
    }
}

/// PTR records in a reverse zone: a ClusterIP answers with its Service (the first one, in
/// namespace/name order); any other address with one PTR per (endpoint name, Service).
///
/// Written straight into the builder (a full build holds every name there already; a map of
/// the targets by address beside it was a fifth of the build's high mark).
fn add_reverse(
    b: &mut Builder,
    zone: &WireName,
    view: &View<'_>,
    scope: &Scope<'_>,
    primary: &WireName,
) {
    let ttl = b.ttl;
    let wanted = |ip: &IpAddr| scope.only_ips.is_none_or(|only| only.contains(ip));
    let mut cluster_ips: HashSet<IpAddr> = HashSet::new();
    for service in &scope.ptr_services {
        let key = &service.key;
        let Ok(target) = primary.prepend_all([&*key.name, &*key.namespace, "svc"]) else {
            continue;
        };
        for ip in service.cluster_ips.iter().filter(|ip| wanted(ip)) {
            if cluster_ips.insert(*ip) {
                let name = rrset::reverse_name(*ip);
                if name.is_within(zone) {
                    b.set(&name, rtype::PTR, ttl).push(target.as_bytes());
                }
            }
        }
    }
    for slice in &view.slices {
        let Some(service) = slice.service_name.as_deref() else {
            continue;
        };
        for address in records::ready_addresses(slice, view.pod_names) {
            if cluster_ips.contains(&address.ip) || !wanted(&address.ip) {
                continue;
            }
            let name = rrset::reverse_name(address.ip);
            if !name.is_within(zone) {
                continue;
            }
            let Ok(target) = primary.prepend_all([
                address.label.as_str(),
                service,
                &*slice.key.namespace,
                "svc",
            ]) else {
                continue;
            };
            b.set(&name, rtype::PTR, ttl).push_unique(target.as_bytes());
        }
    }
}

/// The shape of the zone's name tree that an update needs to add and remove empty
/// non-terminals as a full build would: for every name with names directly below it, how
/// many, and whether it would exist without them (a built name, not an empty non-terminal).
/// A name that is absent here has no name below it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tree {
    parents: Map<Box<[u8]>, Parent>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parent {
    children: u32,
    built: bool,
}

impl Tree {
    /// The tree of `names` (every name of a zone, `filled` the empty non-terminals among
    /// them).
    fn of<'n>(
        zones: &[ServedZone],
        names: impl Iterator<Item = &'n [u8]>,
        filled: &HashSet<Box<[u8]>>,
    ) -> Self {
        let mut parents: Map<Box<[u8]>, Parent> = Map::default();
        for name in names {
            let Some(up) = Self::parent_in(zones, name) else {
                continue;
            };
            parents
                .entry(up.into())
                .or_insert_with(|| Parent {
                    children: 0,
                    built: !filled.contains(up),
                })
                .children += 1;
        }
        Self { parents }
    }

    /// The parent of `name` inside its zone (none for an apex or a name outside the zones).
    fn parent_in<'n>(zones: &[ServedZone], name: &'n [u8]) -> Option<&'n [u8]> {
        let origin = zone_origin(zones, name)?;
        if name.len() <= origin.len() {
            return None;
        }
        parent(name)
    }

    /// Whether `name` is in `nodes` as a built name (not only as an empty non-terminal).
    pub(crate) fn is_built(&self, nodes: &Sharded<Node>, name: &[u8]) -> bool {
        match self.parents.get(name) {
            Some(parent) => parent.built,
            None => nodes.contains_key(name),
        }
    }

    /// Puts the built name `node` in `nodes`, adding the empty non-terminals it needs above
    /// it.
    pub(crate) fn insert(&mut self, zones: &[ServedZone], nodes: &mut Sharded<Node>, node: Node) {
        if let Some(parent) = self.parents.get_mut(node.name()) {
            parent.built = true;
        }
        let key: Box<[u8]> = node.name().into();
        if nodes.insert(node).is_none() {
            self.link(zones, nodes, &key);
        }
    }

    /// `name` (new in `nodes`) counts as a child of its parent, which exists from now on.
    fn link(&mut self, zones: &[ServedZone], nodes: &mut Sharded<Node>, name: &[u8]) {
        let Some(up) = Self::parent_in(zones, name) else {
            return;
        };
        if let Some(parent) = self.parents.get_mut(up) {
            parent.children += 1;
            return;
        }
        let existed = nodes.contains_key(up);
        self.parents.insert(
            up.into(),
            Parent {
                children: 1,
                built: existed,
            },
        );
        if !existed {
            nodes.insert(Node::empty(up));
            self.link(zones, nodes, up);
        }
    }

    /// `name` is no longer built: it leaves `nodes`, unless names below it keep it as an
    /// empty non-terminal; parents left with neither go too.
    pub(crate) fn remove(&mut self, zones: &[ServedZone], nodes: &mut Sharded<Node>, name: &[u8]) {
        if let Some(parent) = self.parents.get_mut(name) {
            parent.built = false;
            nodes.insert(Node::empty(name));
            return;
        }
        if nodes.remove(name).is_some() {
            self.unlink(zones, nodes, name);
        }
    }

    fn unlink(&mut self, zones: &[ServedZone], nodes: &mut Sharded<Node>, name: &[u8]) {
        let Some(up) = Self::parent_in(zones, name) else {
            return;
        };
        let Some(parent) = self.parents.get_mut(up) else {
            return;
        };
        parent.children -= 1;
        if parent.children > 0 {
            return;
        }
        let built = parent.built;
        self.parents.remove(up);
        if !built {
            nodes.remove(up);
            self.unlink(zones, nodes, up);
        }
    }
}
