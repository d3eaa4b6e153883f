//! Building a [`Snapshot`] from the cluster's objects: every name the plugin answers, with
//! its records already encoded. The records are written by family, as CoreDNS keeps them in
//! files of their own: `apex.rs` (SOA, NS and `dns-version`, CoreDNS's `ns.go`),
//! `services.rs` (the forward names of Services and namespaces, `kubernetes.go`),
//! `reverse.rs` (PTRs, `reverse.go`) and `pods.rs` (`<ip>.<ns>.pod` names and the clients'
//! namespaces); `tree.rs` keeps the shape of the name tree that an update needs.

mod apex;
mod pods;
mod reverse;
mod services;
mod tree;

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::map::Map;
use super::multicluster::{self, ImportView};
use super::records::{Filter, View};
use super::shards::Sharded;
use super::writer::NameWriter;
use super::{ServedZone, Snapshot, Soa};
use crate::config::{KubernetesConfig, PodMode};
use crate::model::{Cluster, Pod, Service};
use crate::name::WireName;

pub use self::apex::DNS_SCHEMA_VERSION;
pub(crate) use self::pods::{client_namespaces, pod_label, pod_namespaces};
pub(crate) use self::tree::Tree;

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
        namespaces: view.exposed.iter().collect(),
        pods: cluster.pods.values().collect(),
        only_ips: None,
        imports: multicluster::view(cluster, &filter),
        apex: true,
    };
    let mut b = NameWriter::new(config.ttl);
    add_scope(&mut b, &zones, cluster, config, ctx, &filter, &view, &scope);
    let external =
        super::external::build(cluster, config, &ctx.local_ips, ctx.serial, &filter, &view);
    // The view's addresses and labels are not needed to pack the names: freed before.
    drop((scope, view));
    let filled = b.fill_empty_non_terminals(&zones);
    let names = b.into_names();
    let tree = Tree::of(&zones, names.names(), &filled);

    let pod_namespaces = pod_namespaces(config, &filter);
    let clients = match config.pods {
        PodMode::Verified if config.client_namespaces => {
            client_namespaces(cluster.pods.values(), &filter.exposed)
        }
        _ => Map::default(),
    };
    let snapshot = Snapshot {
        zones,
        names,
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
            let reverse = reverse::is_reverse(&origin);
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
    /// Whether every zone's apex is built (an update learning what names a part had
    /// leaves it out: the apex always has the same names).
    pub(crate) apex: bool,
}

/// Adds the names of `view` and `scope` to `b`: the apex of every zone (unless the scope
/// leaves it out); the Services of `view`; the PTRs of the scope's addresses; its
/// namespaces and pods.
#[allow(clippy::too_many_arguments)]
pub(crate) fn add_scope(
    b: &mut NameWriter,
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
        if scope.apex {
            let servers = apex::name_servers(cluster, filter, view, &zone.origin, &ctx.local_ips);
            apex::add_apex(b, zone, &servers);
        }
        if zone.reverse {
            if let Some(primary) = &primary {
                reverse::add_reverse(b, &zone.origin, view, scope, primary);
            }
            continue;
        }
        services::add_forward(b, zone, view, config, scope);
    }
}
