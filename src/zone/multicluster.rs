//! The records of a `multicluster` zone (Multi-Cluster Services, CoreDNS
//! `findMultiClusterServices`): `<svc>.<ns>.svc.<zone>` answered from ServiceImports, never
//! from Services.
//!
//! - A `ClusterSetIP` import answers A/AAAA with `spec.ips` and SRV for its `spec.ports`
//!   (one `_<port>._<proto>` name per named port), with no name at all when it has no port,
//!   as a ClusterIP Service.
//! - A `Headless` import answers with the ready endpoints of its EndpointSlices (those
//!   labelled `multicluster.kubernetes.io/service-name: <import>` in its namespace), NXDOMAIN
//!   when there are none.
//! - Every ready endpoint of those slices has a name `<hostname>.<cluster>.<svc>.<ns>.svc.<zone>`,
//!   `<cluster>` being the slice's `multicluster.kubernetes.io/source-cluster` label (a slice
//!   without it gives `<hostname>.<svc>.<ns>.svc.<zone>`); a headless import's SRV records
//!   point at these names.
//!
//! The `labels` option filters the slices (as CoreDNS's informer), not the imports;
//! `namespaces`/`namespace_labels` filter both; `ignore empty_service` applies to
//! `ClusterSetIP` imports. Zonal names do not exist in these zones, and ServiceImports give
//! no PTR.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::records::{self, Entry, Filter, ReadyAddress};
use super::writer::NameWriter;
use crate::config::KubernetesConfig;
use crate::model::serviceimport::{LABEL_MCS_SERVICE_NAME, LABEL_MCS_SOURCE_CLUSTER};
use crate::model::{Cluster, EndpointSlice, ImportType, ObjectKey, ServiceImport};
use crate::name::WireName;

/// A visible ServiceImport with the ready addresses of its visible slices.
#[derive(Debug)]
pub(crate) struct ImportView<'c> {
    pub(crate) import: &'c ServiceImport,
    /// Every ready address, slice by slice, in slice order, with the slice's cluster.
    pub(crate) ready: Vec<(ReadyAddress<'c>, Option<&'c str>)>,
}

/// Every visible ServiceImport of `cluster` (none unless a zone is `multicluster`).
pub(crate) fn view<'c>(cluster: &'c Cluster, filter: &Filter<'c, '_>) -> Vec<ImportView<'c>> {
    if filter.config().multicluster.is_empty() {
        return Vec::new();
    }
    let mut slices_of: HashMap<(&str, &str), Vec<&EndpointSlice>> = HashMap::new();
    for slice in cluster.endpoint_slices.values() {
        if let Some(import) = slice.labels.get(LABEL_MCS_SERVICE_NAME)
            && filter.slice(slice)
        {
            slices_of
                .entry((&*slice.key.namespace, import.as_str()))
                .or_default()
                .push(slice);
        }
    }
    cluster
        .service_imports
        .values()
        .filter(|import| filter.import(import))
        .map(|import| {
            let key = (&*import.key.namespace, &*import.key.name);
            let slices = slices_of.get(&key).into_iter().flatten().copied();
            of(import, slices, filter)
        })
        .collect()
}

/// The visible ServiceImports among `keys` with their visible slices: the part of the
/// imports an update rebuilds.
pub(crate) fn part<'c, 'a>(
    cluster: &'c Cluster,
    filter: &Filter<'c, '_>,
    keys: impl IntoIterator<Item = &'a ObjectKey>,
) -> Vec<ImportView<'c>> {
    if filter.config().multicluster.is_empty() {
        return Vec::new();
    }
    keys.into_iter()
        .filter_map(|key| cluster.service_imports.get(key))
        .filter(|import| filter.import(import))
        .map(|import| {
            let slices = cluster
                .imported_slices_of(&import.key)
                .filter(|slice| filter.slice(slice));
            of(import, slices, filter)
        })
        .collect()
}

fn of<'c>(
    import: &'c ServiceImport,
    slices: impl Iterator<Item = &'c EndpointSlice>,
    filter: &Filter<'c, '_>,
) -> ImportView<'c> {
    let pod_names = filter.config().endpoint_pod_names;
    let ready = slices
        .flat_map(|slice| {
            let cluster = slice
                .labels
                .get(LABEL_MCS_SOURCE_CLUSTER)
                .map(String::as_str)
                .filter(|id| !id.is_empty());
            records::ready_addresses(slice, pod_names).map(move |address| (address, cluster))
        })
        .collect();
    ImportView { import, ready }
}

/// Adds every record the ServiceImport gives under the multicluster zone `zone`.
pub(crate) fn add_import(
    b: &mut NameWriter,
    zone: &WireName,
    iv: &ImportView<'_>,
    config: &KubernetesConfig,
) {
    let import = iv.import;
    let Ok(base) = zone.prepend_all([&*import.key.name, &*import.key.namespace, "svc"]) else {
        tracing::debug!(import = %import.key, "name too long for DNS; skipped");
        return;
    };
    let targets = endpoint_targets(&base, &iv.ready);
    match import.import_type {
        ImportType::Headless => add_headless(b, &base, iv, &targets),
        ImportType::ClusterSetIp => {
            // `ignore empty_service`: an import no ready endpoint can answer for is NXDOMAIN.
            if config.ignore_empty_service && iv.ready.is_empty() {
                return;
            }
            add_cluster_set_ip(b, &base, import);
            add_endpoint_names(b, iv, &targets);
        }
    }
}

/// `spec.ips` for every port, as a ClusterIP Service's addresses; no port, no name.
fn add_cluster_set_ip(b: &mut NameWriter, base: &WireName, import: &ServiceImport) {
    if import.ports.is_empty() {
        return;
    }
    b.touch(base);
    let entries = |ports: &mut dyn Iterator<Item = u16>| -> Vec<Entry<'_>> {
        ports
            .flat_map(|port| {
                import.ips.iter().map(move |&ip| Entry {
                    ip,
                    target: base,
                    port: Some(port),
                })
            })
            .collect()
    };
    records::add_entries(b, base, &entries(&mut import.ports.iter().map(|p| p.port)));
    for port in import.ports.iter().filter(|port| !port.name.is_empty()) {
        let Some(name) = records::srv_name(base, &port.name, port.protocol.lower()) else {
            continue;
        };
        b.touch(&name);
        records::add_entries(b, &name, &entries(&mut std::iter::once(port.port)));
    }
}

/// The imported endpoints at the import's name, its named ports, and their own names.
fn add_headless(
    b: &mut NameWriter,
    base: &WireName,
    iv: &ImportView<'_>,
    targets: &BTreeMap<(String, String), WireName>,
) {
    let entries = entries_of(iv, targets, |_| true);
    if entries.is_empty() {
        // As a headless Service: no ready endpoint, no name (and none below it).
        return;
    }
    records::add_entries(b, base, &entries);
    let named_ports: BTreeSet<(String, &str)> = iv
        .ready
        .iter()
        .flat_map(|(address, _)| address.ports)
        .filter(|port| !port.name.is_empty())
        .map(|port| (port.name.to_ascii_lowercase(), port.protocol.lower()))
        .collect();
    for (port_name, protocol) in &named_ports {
        let Some(name) = records::srv_name(base, port_name, protocol) else {
            continue;
        };
        let entries = entries_of(iv, targets, |port| {
            port.is_some_and(|p| {
                p.name.eq_ignore_ascii_case(port_name) && p.protocol.lower() == *protocol
            })
        });
        records::add_entries(b, &name, &entries);
    }
    add_endpoint_names(b, iv, targets);
}

/// `<label>.<cluster>.<base>` for every ready endpoint.
fn add_endpoint_names(
    b: &mut NameWriter,
    iv: &ImportView<'_>,
    targets: &BTreeMap<(String, String), WireName>,
) {
    let mut by_name: BTreeMap<&WireName, Vec<Entry<'_>>> = BTreeMap::new();
    for entry in entries_of(iv, targets, |_| true) {
        by_name.entry(entry.target).or_default().push(entry);
    }
    for (name, entries) in by_name {
        records::add_entries(b, name, &entries);
    }
}

/// The lower-case (cluster, label) of an address: the key of its endpoint name.
fn target_key(address: &ReadyAddress<'_>, cluster: Option<&str>) -> (String, String) {
    (
        cluster.unwrap_or_default().to_ascii_lowercase(),
        address.label().to_ascii_lowercase(),
    )
}

/// The endpoint name of each distinct (cluster, label).
fn endpoint_targets(
    base: &WireName,
    ready: &[(ReadyAddress<'_>, Option<&str>)],
) -> BTreeMap<(String, String), WireName> {
    let mut targets = BTreeMap::new();
    for (address, cluster) in ready {
        let key = target_key(address, *cluster);
        if targets.contains_key(&key) {
            continue;
        }
        let label = address.label();
        let label = &*label;
        let one_label = |text: &str| !text.contains('.') && !text.starts_with('_');
        let name = match cluster {
            Some(cluster) if one_label(label) && one_label(cluster) => {
                base.prepend_all([label, *cluster])
            }
            None if one_label(label) => base.child(label),
            _ => {
                tracing::debug!(
                    label,
                    cluster,
                    "endpoint or cluster is not a DNS label; skipped"
                );
                continue;
            }
        };
        match name {
            Ok(name) => {
                targets.insert(key, name);
            }
            Err(_) => tracing::debug!(label, cluster, "endpoint name too long; skipped"),
        }
    }
    targets
}

/// The (address, port) entries of the import's endpoints whose port passes `keep` (`None`
/// is a slice without ports).
fn entries_of<'t>(
    iv: &ImportView<'_>,
    targets: &'t BTreeMap<(String, String), WireName>,
    keep: impl Fn(Option<&crate::model::EndpointPort>) -> bool,
) -> Vec<Entry<'t>> {
    let mut entries = Vec::new();
    for (address, cluster) in &iv.ready {
        if let Some(target) = targets.get(&target_key(address, *cluster)) {
            records::push_entries(&mut entries, address, target, &keep);
        }
    }
    entries
}
