//! Building a [`Snapshot`] from the cluster's objects: every name the plugin answers, with
//! its records already encoded.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::net::IpAddr;

use super::name::{WireName, parent};
use super::records::{self, View};
use super::rrset::{self, RrSetBuilder, rtype};
use super::{Map, Node, ServedZone, Snapshot, Soa};
use crate::config::{KubernetesConfig, PodMode};
use crate::model::{Cluster, PodPhase};

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
    let view = View::new(cluster, config);
    let mut b = Builder::new(config.ttl);
    let zones: Vec<ServedZone> = config
        .zones
        .iter()
        .filter_map(|zone| WireName::from_dotted(&zone.to_ascii()).ok())
        .map(|origin| {
            let reverse = is_reverse(&origin);
            ServedZone {
                origin: origin.to_lowercase(),
                reverse,
                soa: Soa::new(config.ttl, ctx.serial),
            }
        })
        .collect();
    let primary = config
        .zones
        .get(config.primary_zone)
        .and_then(|zone| WireName::from_dotted(&zone.to_ascii()).ok())
        .map(|zone| zone.to_lowercase());

    for zone in &zones {
        add_apex(&mut b, zone, &view, ctx);
        if zone.reverse {
            if let Some(primary) = &primary {
                add_reverse(&mut b, &zone.origin, &view, primary);
            }
            continue;
        }
        add_forward(&mut b, &zone.origin, &view, config, cluster);
    }
    b.fill_empty_non_terminals(&zones);

    let pod_namespaces = match config.pods {
        PodMode::Insecure => view
            .exposed
            .iter()
            .map(|ns| ns.to_ascii_lowercase().into_bytes().into_boxed_slice())
            .collect(),
        _ => HashSet::default(),
    };
    let clients = match config.pods {
        PodMode::Verified => client_namespaces(cluster, &view),
        _ => Map::default(),
    };
    Snapshot {
        zones,
        nodes: b.finish(),
        pod_namespaces,
        pods: config.pods,
        clients,
        ttl: config.ttl,
        serial: ctx.serial,
    }
}

/// The namespace of every running pod's addresses (*autopath* finds a client's namespace
/// from its address). Host-network pods share the node's address and terminating pods may
/// have handed theirs on: neither is a client; an address claimed in two namespaces maps to
/// `None`.
fn client_namespaces(cluster: &Cluster, view: &View<'_>) -> Map<IpAddr, Option<Box<str>>> {
    let mut clients: Map<IpAddr, Option<Box<str>>> = Map::default();
    for pod in cluster.pods.values() {
        if pod.phase != PodPhase::Running
            || pod.terminating
            || pod.host_network
            || !view.exposed.contains(pod.key.namespace.as_str())
        {
            continue;
        }
        for ip in &pod.ips {
            let namespace = pod.key.namespace.as_str();
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
fn add_apex(b: &mut Builder, zone: &ServedZone, view: &View<'_>, ctx: &BuildContext) {
    let origin = &zone.origin;
    let soa = zone.soa;
    // The SOA is only answered at the apex, where the question is the zone: its names point
    // at the question, so they carry the query's spelling.
    let mut rdata = Vec::with_capacity(40);
    rdata.extend_from_slice(b"\x02ns\x03dns\xc0\x0c\x0ahostmaster\xc0\x0c");
    rdata.extend_from_slice(&soa.tail());
    b.set(origin, rtype::SOA, soa.ttl).push(&rdata);

    let ttl = b.ttl;
    let servers = name_servers(view, origin, &ctx.local_ips);
    let mut seen = HashSet::new();
    for (name, ip) in &servers {
        let set = b.set(origin, rtype::NS, ttl);
        if seen.insert(name.clone()) {
            set.push(name.as_bytes());
        }
        set.push_extra_address(name, ttl, *ip);
    }
    if let Ok(ns) = origin.prepend_all(["ns", "dns"]) {
        for (_, ip) in &servers {
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
fn name_servers(view: &View<'_>, zone: &WireName, local_ips: &[IpAddr]) -> Vec<(WireName, IpAddr)> {
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
            let Some(sv) = view.service(&slice.key.namespace, service) else {
                continue;
            };
            let Ok(base) = zone.prepend_all([service, slice.key.namespace.as_str(), "svc"]) else {
                continue;
            };
            if sv.service.headless {
                for address in records::ready_addresses(slice, view.pod_names) {
                    if let Ok(name) = base.child(&address.label) {
                        found.push((name, address.ip));
                    }
                }
            } else {
                found.extend(sv.service.cluster_ips.iter().map(|&ip| (base.clone(), ip)));
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

fn add_forward(
    b: &mut Builder,
    zone: &WireName,
    view: &View<'_>,
    config: &KubernetesConfig,
    cluster: &Cluster,
) {
    for fixed in ["svc", "pod", "dns"] {
        if let Ok(name) = zone.child(fixed) {
            b.touch(&name);
        }
    }
    for namespace in &view.exposed {
        if let Ok(name) = zone.prepend_all([*namespace, "svc"]) {
            b.touch(&name);
        }
        if config.pods != PodMode::Disabled
            && let Ok(name) = zone.prepend_all([*namespace, "pod"])
        {
            b.touch(&name);
        }
    }
    for sv in &view.services {
        records::add_service(b, zone, sv, config.ignore_empty_service);
    }
    if config.pods == PodMode::Verified {
        add_verified_pods(b, zone, view, config, cluster);
    }
}

/// `pods verified`: a name per running or pending pod, from its `status.podIP` spelled with
/// dashes (the only spelling CoreDNS's string comparison accepts).
fn add_verified_pods(
    b: &mut Builder,
    zone: &WireName,
    view: &View<'_>,
    config: &KubernetesConfig,
    cluster: &Cluster,
) {
    let ttl = b.ttl;
    for pod in cluster.pods.values() {
        if !matches!(pod.phase, PodPhase::Pending | PodPhase::Running)
            || !view.exposed.contains(pod.key.namespace.as_str())
            || !config
                .labels
                .as_ref()
                .is_none_or(|s| s.matches(&pod.labels))
        {
            continue;
        }
        let Some(ip) = pod.primary_ip() else { continue };
        let label = ip.to_string().replace(['.', ':'], "-");
        if let Ok(name) = zone.prepend_all([label.as_str(), pod.key.namespace.as_str(), "pod"]) {
            let (rtype, rdata) = rrset::address_rdata(ip);
            b.set(&name, rtype, ttl).push(&rdata);
        }
    }
}

/// PTR records in a reverse zone: a ClusterIP answers with its Service (the first one, in
/// namespace/name order); any other address with one PTR per (endpoint name, Service).
fn add_reverse(b: &mut Builder, zone: &WireName, view: &View<'_>, primary: &WireName) {
    let ttl = b.ttl;
    let mut ptrs: BTreeMap<IpAddr, Vec<WireName>> = BTreeMap::new();
    for sv in &view.services {
        let key = &sv.service.key;
        let Ok(target) = primary.prepend_all([key.name.as_str(), key.namespace.as_str(), "svc"])
        else {
            continue;
        };
        for ip in &sv.service.cluster_ips {
            ptrs.entry(*ip).or_insert_with(|| vec![target.clone()]);
        }
    }
    let cluster_ips: BTreeSet<IpAddr> = ptrs.keys().copied().collect();
    for slice in &view.slices {
        let Some(service) = slice.service_name.as_deref() else {
            continue;
        };
        for address in records::ready_addresses(slice, view.pod_names) {
            if cluster_ips.contains(&address.ip) {
                continue;
            }
            let Ok(target) = primary.prepend_all([
                address.label.as_str(),
                service,
                slice.key.namespace.as_str(),
                "svc",
            ]) else {
                continue;
            };
            let targets = ptrs.entry(address.ip).or_default();
            if !targets.contains(&target) {
                targets.push(target);
            }
        }
    }
    for (ip, targets) in ptrs {
        let name = rrset::reverse_name(ip);
        if !name.is_within(zone) {
            continue;
        }
        for target in targets {
            b.set(&name, rtype::PTR, ttl).push(target.as_bytes());
        }
    }
}

/// Accumulates nodes while a snapshot is built.
#[derive(Debug)]
pub(crate) struct Builder {
    pub(crate) ttl: u32,
    nodes: Map<Box<[u8]>, NodeBuilder>,
}

#[derive(Debug, Default)]
struct NodeBuilder {
    /// A name holds a handful of types: a vector beats a map.
    sets: Vec<RrSetBuilder>,
    cname: Option<Box<[u8]>>,
}

impl Builder {
    fn new(ttl: u32) -> Self {
        Self {
            ttl,
            nodes: Map::default(),
        }
    }

    fn node(&mut self, name: &WireName) -> &mut NodeBuilder {
        // Names are built from lower-case object names, so the key is usually the name as
        // is; only a new node allocates its key.
        let bytes = name.as_bytes();
        let key: Cow<'_, [u8]> = if bytes.iter().any(u8::is_ascii_uppercase) {
            Cow::Owned(bytes.to_ascii_lowercase())
        } else {
            Cow::Borrowed(bytes)
        };
        if !self.nodes.contains_key(&key[..]) {
            self.nodes
                .insert(key.to_vec().into_boxed_slice(), NodeBuilder::default());
        }
        // Just inserted if it was missing.
        self.nodes
            .get_mut(&key[..])
            .unwrap_or_else(|| unreachable!())
    }

    /// Makes sure `name` exists (NODATA for every type it has no records of).
    pub(crate) fn touch(&mut self, name: &WireName) {
        self.node(name);
    }

    /// The RRset of `rtype` at `name`, created with `ttl` if new.
    pub(crate) fn set(&mut self, name: &WireName, rtype: u16, ttl: u32) -> &mut RrSetBuilder {
        let sets = &mut self.node(name).sets;
        let index = match sets.iter().position(|set| set.rtype() == rtype) {
            Some(index) => index,
            None => {
                sets.push(RrSetBuilder::new(rtype, ttl));
                sets.len() - 1
            }
        };
        &mut sets[index]
    }

    /// Marks `name` as a CNAME to `target`, followed for A and AAAA.
    pub(crate) fn cname(&mut self, name: &WireName, target: WireName) {
        self.node(name).cname = Some(target.as_bytes().into());
    }

    /// Adds every ancestor of every name, up to its zone's apex, as an empty non-terminal:
    /// a name with names below it exists (RFC 8020).
    fn fill_empty_non_terminals(&mut self, zones: &[ServedZone]) {
        let mut missing = Vec::new();
        for name in self.nodes.keys() {
            let Some(zone) = zones
                .iter()
                .filter(|zone| super::name::suffix_offset(name, zone.origin.as_bytes()).is_some())
                .max_by_key(|zone| zone.origin.as_bytes().len())
            else {
                continue;
            };
            let mut at: &[u8] = name;
            while at.len() > zone.origin.as_bytes().len() {
                let Some(up) = parent(at) else { break };
                if !self.nodes.contains_key(up) {
                    missing.push(up.to_vec().into_boxed_slice());
                }
                at = up;
            }
        }
        for key in missing {
            self.nodes.entry(key).or_default();
        }
    }

    fn finish(self) -> Map<Box<[u8]>, Node> {
        self.nodes
            .into_iter()
            .map(|(key, mut node)| {
                node.sets.sort_by_key(RrSetBuilder::rtype);
                let rrsets: Vec<_> = node
                    .sets
                    .into_iter()
                    .filter(|set| !set.is_empty())
                    .map(RrSetBuilder::finish)
                    .collect();
                let node = Node {
                    rrsets: rrsets.into_boxed_slice(),
                    cname: node.cname,
                };
                (key, node)
            })
            .collect()
    }
}
