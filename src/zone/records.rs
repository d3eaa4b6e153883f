//! What the *kubernetes* plugin can see of a cluster, and the records each Service gives
//! (CoreDNS `findServices`, `plugin.A`, `plugin.SRV`, `xfr.go`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;

use super::Dashed;
use super::rrset;
use super::writer::NameWriter;
use crate::codes::rtype;
use crate::config::KubernetesConfig;
use crate::model::serviceimport::{LABEL_MCS_SERVICE_NAME, LABEL_MCS_SOURCE_CLUSTER};
use crate::model::{
    AddressType, Cluster, Endpoint, EndpointPort, EndpointSlice, Labels, Namespace, Object,
    ObjectKey, Pod, PodDetails, Service, ServiceType,
};
use crate::name::WireName;

/// CoreDNS uses a pod name as an endpoint label only when it is shorter than this.
const MAX_POD_NAME_LABEL: usize = 64;

/// The namespaces that exist and pass `namespaces` / `namespace_labels`: with neither
/// option, every namespace of the cluster, read from its map (an update makes a filter three
/// times: copying thousands of names each time was a third of its cost); else those chosen.
#[derive(Debug, Clone)]
pub(crate) enum Exposed<'c> {
    /// Every namespace of the cluster.
    All(&'c BTreeMap<String, Namespace>),
    /// Those the options choose.
    Chosen(BTreeSet<&'c str>),
}

impl<'c> Exposed<'c> {
    fn of(cluster: &'c Cluster, config: &KubernetesConfig) -> Self {
        if config.namespaces.is_empty() && config.namespace_labels.is_none() {
            return Self::All(&cluster.namespaces);
        }
        Self::Chosen(
            cluster
                .namespaces
                .values()
                .filter(|ns| exposes(config, ns))
                .map(|ns| ns.name.as_str())
                .collect(),
        )
    }

    /// Whether `namespace` is exposed.
    pub(crate) fn contains(&self, namespace: &str) -> bool {
        self.get(namespace).is_some()
    }

    /// `namespace`, as the cluster holds its name, when it is exposed.
    pub(crate) fn get(&self, namespace: &str) -> Option<&'c str> {
        match self {
            Self::All(namespaces) => namespaces
                .get_key_value(namespace)
                .map(|(name, _)| name.as_str()),
            Self::Chosen(names) => names.get(namespace).copied(),
        }
    }

    /// The exposed namespaces, in name order.
    pub(crate) fn iter(&self) -> Box<dyn Iterator<Item = &'c str> + '_> {
        match self {
            Self::All(namespaces) => Box::new(namespaces.keys().map(String::as_str)),
            Self::Chosen(names) => Box::new(names.iter().copied()),
        }
    }
}

/// The objects the plugin's options leave visible.
#[derive(Debug)]
pub(crate) struct View<'c> {
    /// Namespaces that exist and pass `namespaces` / `namespace_labels`.
    pub(crate) exposed: Exposed<'c>,
    /// Visible Services (exposed namespace, `labels` match), in namespace/name order.
    pub(crate) services: Vec<ServiceView<'c>>,
    /// Visible EndpointSlices with IP addresses (none under `noendpoints`).
    pub(crate) slices: Vec<&'c EndpointSlice>,
    /// `endpoint_pod_names`.
    pub(crate) pod_names: bool,
}

/// A visible Service with its visible slices.
#[derive(Debug)]
pub(crate) struct ServiceView<'c> {
    pub(crate) service: &'c Service,
    /// Its visible slices, in name order.
    slices: Vec<&'c EndpointSlice>,
    /// `endpoint_pod_names`.
    pod_names: bool,
}

impl<'c> ServiceView<'c> {
    /// Every ready address, slice by slice, in slice order (duplicates kept: SRV weights
    /// count them, as CoreDNS does). Made for each Service as its names are written, not
    /// held for all of them: a build would hold every ready address of the cluster at once.
    pub(crate) fn ready(&self) -> Vec<ReadyAddress<'c>> {
        self.slices
            .iter()
            .flat_map(|slice| ready_addresses(slice, self.pod_names))
            .collect()
    }
}

/// One ready address of a Service's endpoints.
#[derive(Debug, Clone)]
pub(crate) struct ReadyAddress<'c> {
    pub(crate) ip: IpAddr,
    /// The endpoint's hostname, or its pod's name (`endpoint_pod_names`); without one, its
    /// label is the dashed address, spelled when asked for ([`Self::label`]): a build holds
    /// every ready address of the cluster at once.
    given: Option<&'c str>,
    /// The ports of the slice it came from (empty: the slice declares none).
    pub(crate) ports: &'c [EndpointPort],
    /// The endpoint's topology zone (`zone`).
    pub(crate) zone: Option<&'c str>,
}

impl<'c> ReadyAddress<'c> {
    /// The endpoint's DNS label: hostname, pod name (`endpoint_pod_names`), or dashed IP.
    pub(crate) fn label(&self) -> Label<'c> {
        match self.given {
            Some(given) => Label::Given(given),
            None => Label::Dashed(Dashed::of(self.ip)),
        }
    }
}

/// An endpoint's DNS label ([`ReadyAddress::label`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Label<'c> {
    /// The endpoint's hostname or pod name.
    Given(&'c str),
    /// The dashed address.
    Dashed(Dashed),
}

impl std::ops::Deref for Label<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Self::Given(given) => given,
            Self::Dashed(dashed) => dashed.as_str(),
        }
    }
}

impl<'c> View<'c> {
    /// Everything the options leave visible.
    pub(crate) fn new(cluster: &'c Cluster, filter: &Filter<'c, '_>) -> Self {
        let config = filter.config;
        let slices: Vec<&EndpointSlice> = cluster
            .endpoint_slices
            .values()
            .filter(|slice| filter.slice(slice))
            .collect();
        let mut slices_of: HashMap<(&str, &str), Vec<&EndpointSlice>> = HashMap::new();
        for slice in &slices {
            if let Some(service) = slice.service_name.as_deref() {
                slices_of
                    .entry((&*slice.key.namespace, service))
                    .or_default()
                    .push(slice);
            }
        }
        let services = cluster
            .services
            .values()
            .filter(|svc| filter.service(svc))
            .map(|service| {
                let key = (&*service.key.namespace, &*service.key.name);
                ServiceView {
                    service,
                    slices: slices_of.remove(&key).unwrap_or_default(),
                    pod_names: config.endpoint_pod_names,
                }
            })
            .collect();
        Self {
            exposed: filter.exposed.clone(),
            services,
            slices,
            pod_names: config.endpoint_pod_names,
        }
    }

    /// The visible Services among `keys` (in their order, which must be namespace/name
    /// order) with their visible slices, and the visible slices among `slices`: the part of
    /// the cluster an update rebuilds.
    pub(crate) fn part<'a>(
        cluster: &'c Cluster,
        filter: &Filter<'c, '_>,
        keys: impl IntoIterator<Item = &'a ObjectKey>,
        slices: impl IntoIterator<Item = &'c EndpointSlice>,
    ) -> Self {
        let config = filter.config;
        let services = keys
            .into_iter()
            .filter_map(|key| cluster.services.get(key))
            .filter(|svc| filter.service(svc))
            .map(|service| ServiceView {
                service,
                slices: cluster
                    .slices_of(&service.key)
                    .filter(|slice| filter.slice(slice))
                    .collect(),
                pod_names: config.endpoint_pod_names,
            })
            .collect();
        let slices = slices
            .into_iter()
            .filter(|slice| filter.slice(slice))
            .collect();
        Self {
            exposed: filter.exposed.clone(),
            services,
            slices,
            pod_names: config.endpoint_pod_names,
        }
    }
}

/// Which objects the plugin's options leave visible.
#[derive(Debug)]
pub(crate) struct Filter<'c, 'k> {
    /// Namespaces that exist and pass `namespaces` / `namespace_labels`.
    pub(crate) exposed: Exposed<'c>,
    config: &'k KubernetesConfig,
}

impl<'c, 'k> Filter<'c, 'k> {
    pub(crate) fn new(cluster: &'c Cluster, config: &'k KubernetesConfig) -> Self {
        Self {
            exposed: Exposed::of(cluster, config),
            config,
        }
    }

    /// The options.
    pub(crate) fn config(&self) -> &'k KubernetesConfig {
        self.config
    }

    /// A ServiceImport in an exposed namespace (`labels` does not apply to imports: CoreDNS
    /// does not select them by it).
    pub(crate) fn import(&self, import: &crate::model::ServiceImport) -> bool {
        self.exposed.contains(&import.key.namespace)
    }

    fn labels(&self, labels: &crate::model::Labels) -> bool {
        self.config
            .labels
            .as_ref()
            .is_none_or(|selector| selector.matches(labels))
    }

    /// The visible Service `namespace/name` of `cluster`.
    pub(crate) fn find_service(
        &self,
        cluster: &'c Cluster,
        namespace: &str,
        name: &str,
    ) -> Option<&'c Service> {
        cluster
            .services
            .get(&ObjectKey::new(namespace, name))
            .filter(|service| self.service(service))
    }

    /// A Service in an exposed namespace that `labels` matches.
    pub(crate) fn service(&self, service: &Service) -> bool {
        self.exposed.contains(&service.key.namespace) && self.labels(&service.labels)
    }

    /// An EndpointSlice of addresses in an exposed namespace that `labels` matches (none
    /// under `noendpoints`).
    pub(crate) fn slice(&self, slice: &EndpointSlice) -> bool {
        !self.config.noendpoints
            && slice.address_type != AddressType::Fqdn
            && self.exposed.contains(&slice.key.namespace)
            && self.labels(&slice.labels)
    }
}

/// Drops from `object` what the zone of `config` never reads, so that a source keeping
/// objects only to build the zone keeps no more than that: a Service's selector, an
/// endpoint's node and (unless `zonal`) topology zone, a pod's spec beyond its namespace and
/// state, labels unless the `labels` option matches them (a slice keeps its two MCS labels
/// under `multicluster`), and a Service's external addresses unless the block has
/// *k8s_external*. Every read of an object field in this module
/// and in the zone builder is of a field kept here.
pub fn trim(object: &mut Object, config: &KubernetesConfig) {
    match object {
        Object::Namespace(_) => {}
        Object::Service(service) => trim_service(service, config),
        Object::EndpointSlice(slice) => trim_slice(slice, config),
        Object::Pod(pod) => trim_pod(pod, config),
        Object::ServiceImport(_) => {}
    }
}

/// [`trim`] on every object of `cluster`.
pub fn trim_cluster(cluster: &mut Cluster, config: &KubernetesConfig) {
    for service in cluster.services.values_mut() {
        trim_service(service, config);
    }
    for slice in cluster.endpoint_slices.values_mut() {
        trim_slice(slice, config);
    }
    for pod in cluster.pods.values_mut() {
        trim_pod(pod, config);
    }
}

fn trim_service(service: &mut Service, config: &KubernetesConfig) {
    // Whether it has one stays: programming latency is reported by that kind of Service.
    if let Some(selector) = &mut service.selector {
        selector.clear();
    }
    service.load_balancer_source_ranges = Vec::new();
    if config.labels.is_none() {
        service.labels = Labels::new();
    }
    // External addresses are read by *k8s_external* only.
    if config.external.is_none() {
        service.external_ips = Vec::new();
        service.load_balancer_ips = Vec::new();
        service.load_balancer_hostnames = Vec::new();
    }
}

fn trim_slice(slice: &mut EndpointSlice, config: &KubernetesConfig) {
    if config.labels.is_none() {
        // `multicluster` zones find a ServiceImport's slices, and their cluster, by label.
        if config.multicluster.is_empty() {
            slice.labels = Labels::new();
        } else {
            slice.labels.retain(|name, _| {
                name == LABEL_MCS_SERVICE_NAME || name == LABEL_MCS_SOURCE_CLUSTER
            });
        }
    }
    for endpoint in &mut slice.endpoints {
        endpoint.details.edit(|details| {
            details.node_name = None;
            if !config.zonal {
                details.zone = None;
            }
            if !config.endpoint_pod_names {
                details.target_pod = None;
            }
        });
    }
}

fn trim_pod(pod: &mut Pod, config: &KubernetesConfig) {
    // Only the labels stay, and only for the `labels` option.
    pod.edit_details(|details| {
        let labels = match config.labels {
            Some(_) => std::mem::take(&mut details.labels),
            None => Labels::new(),
        };
        *details = PodDetails {
            labels,
            ..PodDetails::default()
        };
    });
    // The Ready condition: `pods verified` names running and pending pods, ready or not.
    pod.ready = false;
}

/// Whether the options expose namespace `ns`.
pub(crate) fn exposes(config: &KubernetesConfig, ns: &Namespace) -> bool {
    (config.namespaces.is_empty() || config.namespaces.contains(&ns.name))
        && config
            .namespace_labels
            .as_ref()
            .is_none_or(|selector| selector.matches(&ns.labels))
}

/// The ready addresses of one slice (a missing `ready` counts as ready).
pub(crate) fn ready_addresses(
    slice: &EndpointSlice,
    pod_names: bool,
) -> impl Iterator<Item = ReadyAddress<'_>> + '_ {
    slice
        .endpoints
        .iter()
        .filter(|endpoint| endpoint.conditions.ready())
        .flat_map(move |endpoint| {
            endpoint.addresses.iter().map(move |&ip| ReadyAddress {
                ip,
                given: given_label(endpoint, pod_names),
                ports: &slice.ports,
                zone: endpoint.zone(),
            })
        })
}

/// CoreDNS `endpointHostname`: the hostname, else (with `endpoint_pod_names`) the pod name
/// when it is a usable label; `None`: the dashed address ([`ReadyAddress::label`]).
fn given_label(endpoint: &Endpoint, pod_names: bool) -> Option<&str> {
    if let Some(hostname) = endpoint.hostname.as_deref().filter(|h| !h.is_empty()) {
        return Some(hostname);
    }
    endpoint
        .target_pod()
        .filter(|pod| pod_names && !pod.is_empty() && pod.len() < MAX_POD_NAME_LABEL)
}

/// One (address, port) pair behind a name: the unit CoreDNS counts SRV weights over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry<'a> {
    pub(crate) ip: IpAddr,
    /// The SRV target and glue owner for this address.
    pub(crate) target: &'a WireName,
    /// `None` for a slice without ports (CoreDNS's port -1 sentinel): counted, never an SRV.
    pub(crate) port: Option<u16>,
}

/// Adds every record the Service gives under `zone`.
pub(crate) fn add_service(
    b: &mut NameWriter,
    zone: &WireName,
    sv: &ServiceView<'_>,
    config: &KubernetesConfig,
) {
    let service = sv.service;
    let Ok(base) = zone.prepend_all([&*service.key.name, &*service.key.namespace, "svc"]) else {
        tracing::debug!(service = %service.key, "name too long for DNS; skipped");
        return;
    };
    match service.service_type {
        ServiceType::ExternalName => add_external_name(b, &base, service),
        _ if service.headless => add_headless(b, &base, sv, config.zonal),
        _ => {
            // `ignore empty_service`: a Service no ready endpoint can answer for is NXDOMAIN,
            // so clients walk on down their search path.
            let ready = sv.ready();
            if config.ignore_empty_service && ready.is_empty() {
                return;
            }
            add_cluster_ip(b, &base, service);
            add_endpoint_names(b, &base, &ready);
        }
    }
}

fn add_external_name(b: &mut NameWriter, base: &WireName, service: &Service) {
    let Some(external) = service.external_name.as_deref() else {
        return;
    };
    let host = external.strip_suffix('.').unwrap_or(external);
    // An IP literal is not a name: CoreDNS gives no record at all (NXDOMAIN).
    if host.is_empty() || host.parse::<IpAddr>().is_ok() {
        return;
    }
    let Ok(target) = WireName::from_dotted(host) else {
        tracing::debug!(service = %service.key, external, "externalName is not a DNS name; skipped");
        return;
    };
    let ttl = b.ttl;
    b.set(base, rtype::CNAME, ttl).push(target.as_bytes());
    b.cname(base, target);
}

fn add_cluster_ip(b: &mut NameWriter, base: &WireName, service: &Service) {
    // CoreDNS clears its "no items" error only when a port matches: a Service without ports
    // has no name.
    if service.ports.is_empty() {
        return;
    }
    b.touch(base);
    let entries: Vec<Entry<'_>> = service
        .ports
        .iter()
        .flat_map(|port| {
            service.cluster_ips.iter().map(move |&ip| Entry {
                ip,
                target: base,
                port: Some(port.port),
            })
        })
        .collect();
    add_entries(b, base, &entries);
    for port in service.ports.iter().filter(|port| !port.name.is_empty()) {
        let Some(name) = srv_name(base, &port.name, port.protocol.lower()) else {
            continue;
        };
        b.touch(&name);
        let entries: Vec<Entry<'_>> = service
            .cluster_ips
            .iter()
            .map(|&ip| Entry {
                ip,
                target: base,
                port: Some(port.port),
            })
            .collect();
        add_entries(b, &name, &entries);
    }
}

pub(crate) fn add_headless(b: &mut NameWriter, base: &WireName, sv: &ServiceView<'_>, zonal: bool) {
    let ready = sv.ready();
    let targets = endpoint_targets(base, &ready);
    let entries = entries_of(&ready, &targets, |_| true);
    if entries.is_empty() {
        // A headless Service without ready endpoints is NXDOMAIN (spec §2.4.1), and so is
        // every name below it (RFC 8020), zonal names too.
        return;
    }
    add_entries(b, base, &entries);
    if zonal {
        add_zonal(b, base, &ready, &targets);
    }
    let named_ports: BTreeSet<(String, &str)> = ready
        .iter()
        .flat_map(|address| address.ports)
        .filter(|port| !port.name.is_empty())
        .map(|port| (port.name.to_ascii_lowercase(), port.protocol.lower()))
        .collect();
    for (port_name, protocol) in &named_ports {
        let Some(name) = srv_name(base, port_name, protocol) else {
            continue;
        };
        let entries = entries_of(&ready, &targets, |port| {
            port.is_some_and(|p| {
                p.name.eq_ignore_ascii_case(port_name) && p.protocol.lower() == *protocol
            })
        });
        add_entries(b, &name, &entries);
    }
    add_endpoint_names(b, base, &ready);
}

/// `zonal` (CoreDNS ≥ 1.14): `<topology-zone>.pin._zone.<base>` and
/// `<topology-zone>.prefer._zone.<base>` for each topology zone the ready endpoints are in
/// (lower case; a zone with dots spans labels), each answering what the Service's name
/// answers (A/AAAA, SRV and glue) from that zone's endpoints. `pin._zone.<base>` and
/// `prefer._zone.<base>` are always there: a zone no endpoint is in is answered from them
/// when asked (NODATA under `pin`, every endpoint under `prefer`; `Snapshot::zonal`).
fn add_zonal(
    b: &mut NameWriter,
    base: &WireName,
    ready: &[ReadyAddress<'_>],
    targets: &BTreeMap<String, WireName>,
) {
    let markers: Vec<WireName> = ["pin", "prefer"]
        .iter()
        .filter_map(|directive| base.prepend_all([*directive, ZONAL_LABEL]).ok())
        .collect();
    for marker in &markers {
        b.touch(marker);
    }
    let zones: BTreeSet<String> = ready
        .iter()
        .filter_map(|address| address.zone)
        .filter(|zone| !zone.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    for zone in &zones {
        let in_zone: Vec<ReadyAddress<'_>> = ready
            .iter()
            .filter(|address| address.zone.is_some_and(|z| z.eq_ignore_ascii_case(zone)))
            .cloned()
            .collect();
        let entries = entries_of(&in_zone, targets, |_| true);
        for marker in &markers {
            let labels: Vec<&str> = zone.split('.').collect();
            match marker.prepend_all(labels.iter().copied()) {
                Ok(name) => add_entries(b, &name, &entries),
                Err(_) => {
                    tracing::debug!(zone = %zone, "topology zone is not a DNS name; skipped");
                }
            }
        }
    }
}

/// The label that anchors a zonal name, three labels left of the Service.
pub(crate) const ZONAL_LABEL: &str = "_zone";

/// `<label>.<svc>.<ns>.svc.<zone>` for every ready endpoint; CoreDNS answers these for
/// ClusterIP Services too.
fn add_endpoint_names(b: &mut NameWriter, base: &WireName, ready: &[ReadyAddress<'_>]) {
    let targets = endpoint_targets(base, ready);
    let mut by_name: BTreeMap<&WireName, Vec<Entry<'_>>> = BTreeMap::new();
    for entry in entries_of(ready, &targets, |_| true) {
        by_name.entry(entry.target).or_default().push(entry);
    }
    for (name, entries) in by_name {
        add_entries(b, name, &entries);
        b.settle_endpoint_name(name);
    }
}

/// The endpoint name for each distinct (lower-case) label.
fn endpoint_targets(base: &WireName, ready: &[ReadyAddress<'_>]) -> BTreeMap<String, WireName> {
    let mut targets = BTreeMap::new();
    for address in ready {
        let label = address.label();
        let key = label.to_ascii_lowercase();
        if targets.contains_key(&key) {
            continue;
        }
        match base.child(&label) {
            Ok(name) if !label.contains('.') => {
                targets.insert(key, name);
            }
            _ => {
                tracing::debug!(
                    label = &*label,
                    "endpoint label is not a DNS label; skipped"
                )
            }
        }
    }
    targets
}

/// The (address, port) entries of `ready` whose port passes `keep` (`None` is a slice
/// without ports).
fn entries_of<'t>(
    ready: &[ReadyAddress<'_>],
    targets: &'t BTreeMap<String, WireName>,
    keep: impl Fn(Option<&EndpointPort>) -> bool,
) -> Vec<Entry<'t>> {
    let mut entries = Vec::new();
    for address in ready {
        if let Some(target) = targets.get(&address.label().to_ascii_lowercase()) {
            push_entries(&mut entries, address, target, &keep);
        }
    }
    entries
}

/// Adds `address`'s entries, under `target`, for each of its ports that passes `keep` (or
/// one without a port when its slice has none and `keep(None)`).
pub(crate) fn push_entries<'t>(
    entries: &mut Vec<Entry<'t>>,
    address: &ReadyAddress<'_>,
    target: &'t WireName,
    keep: &impl Fn(Option<&EndpointPort>) -> bool,
) {
    if address.ports.is_empty() {
        if keep(None) {
            entries.push(Entry {
                ip: address.ip,
                target,
                port: None,
            });
        }
        return;
    }
    for port in address.ports.iter().filter(|p| keep(Some(p))) {
        entries.push(Entry {
            ip: address.ip,
            target,
            port: port.port,
        });
    }
}

/// `_<port>._<proto>.<base>`.
pub(crate) fn srv_name(base: &WireName, port: &str, protocol: &str) -> Option<WireName> {
    base.prepend_all([format!("_{port}").as_str(), format!("_{protocol}").as_str()])
        .ok()
}

/// A/AAAA, SRV and SRV glue at `owner` from its entries, exactly as CoreDNS computes them:
/// addresses de-duplicated in order; SRV priority 0 and weight floor(100 / entries) with
/// the entries counted before duplicates are removed; one SRV per (target, port); glue per
/// (target, address).
pub(crate) fn add_entries(b: &mut NameWriter, owner: &WireName, entries: &[Entry<'_>]) {
    if entries.is_empty() {
        return;
    }
    let ttl = b.ttl;
    // ahash: every endpoint of the zone passes through these three sets.
    let mut seen: HashSet<_, ahash::RandomState> = HashSet::default();
    for entry in entries {
        if seen.insert(entry.ip) {
            let (rtype, rdata) = rrset::address_rdata(entry.ip);
            b.set(owner, rtype, ttl).push(&rdata);
        }
    }
    let weight = (100 / entries.len()) as u16;
    let mut srv_seen: HashSet<_, ahash::RandomState> = HashSet::default();
    let mut glue_seen: HashSet<_, ahash::RandomState> = HashSet::default();
    let srv_ttl = b.srv_ttl;
    for entry in entries {
        let Some(port) = entry.port else { continue };
        let target = rrset::stored_name(entry.target, owner);
        let mut set = b.set(owner, rtype::SRV, srv_ttl);
        if srv_seen.insert((entry.target, port)) {
            set.push(&rrset::srv_rdata_stored(0, weight, port, &target));
        }
        if glue_seen.insert((entry.target, entry.ip)) {
            set.push_extra_address_stored(&target, ttl, entry.ip);
        }
    }
}
