//! Updating the zone with a change of objects: only the names the change touches are built
//! again, and the next snapshot shares everything else with the one being served.
//!
//! The zone is the union of parts that each depend on a few objects:
//!
//! - a Service's names (`<svc>.<ns>.svc`, its SRV names and endpoint names): the Service
//!   and the visible slices that name it;
//! - the PTR of one address: the visible Services with that ClusterIP and the visible
//!   slices with that address;
//! - `<ip>.<ns>.pod` under `pods verified`: the pods of that namespace with that address;
//! - `<ns>.svc` and `<ns>.pod`: whether the namespace is exposed;
//! - a ServiceImport's names in the `multicluster` zones: the import and the visible slices
//!   labelled with its name (`multicluster.kubernetes.io/service-name`);
//! - every zone's apex (SOA, NS and their glue, `ns.dns`): the serial and the slices that
//!   hold this server's addresses — built again on every update.
//!
//! An update notes the parts each changed object touched, before and after the change;
//! learns the names those parts had (a PTR's, a pod's and a namespace's from their keys, a
//! Service's as the last update that built it left them, else by building the part on the
//! objects before the change — `owned.rs`), builds the parts after the change, and moves the
//! difference into a copy of the previous snapshot — empty non-terminals added and removed
//! with the names below them, as a full build would. Objects are found by address through
//! an index kept beside the cluster, so no step walks the whole cluster. A change too large
//! for that to pay (a namespace's exposure with thousands of Services, a re-list) is a full
//! build.

use std::collections::{BTreeSet, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use hashbrown::HashTable;
use smallvec::SmallVec;

use self::owned::{Names, Owned};
use super::build::{self, BuildContext, Scope, Tree};
use super::external;
use super::map::Map;
use super::multicluster;
use super::node::Node;
use super::records::{self, Filter, View};
use super::writer::NameWriter;
use super::{ServedZone, Snapshot};
use crate::config::{KubernetesConfig, PodMode};
use crate::model::serviceimport::LABEL_MCS_SERVICE_NAME;
use crate::model::{Cluster, EndpointSlice, Kind, Object, ObjectKey, ObjectRef};

/// One change of the objects.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// An object was added or modified.
    Upsert(Box<Object>),
    /// The object of this kind and key was deleted.
    Delete(Kind, ObjectKey),
}

impl Change {
    /// The kind of the object changed.
    pub fn kind(&self) -> Kind {
        match self {
            Self::Upsert(object) => object.kind(),
            Self::Delete(kind, _) => *kind,
        }
    }

    /// The key of the object changed.
    pub fn key(&self) -> ObjectKey {
        match self {
            Self::Upsert(object) => object.key(),
            Self::Delete(_, key) => key.clone(),
        }
    }
}

/// What a full build leaves for updates to follow it: the configuration, the tree of
/// names, and an index of the objects by address.
#[derive(Debug)]
pub struct Incremental {
    config: KubernetesConfig,
    local_ips: Vec<IpAddr>,
    tree: Tree,
    index: Index,
    /// Zones nested in one another share names: such a zone is always built whole.
    whole_only: bool,
    /// A change touching more parts than this is built whole.
    most_parts: usize,
    /// The names of the Services updates built.
    owned: Owned,
}

/// How an update was carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Only the names the change touched were built.
    Names {
        /// Names built again (present after the change).
        built: usize,
        /// Names that went away.
        removed: usize,
    },
    /// The zone was built whole.
    Whole,
}

impl Incremental {
    /// Builds the zone of `config` from `cluster` whole, and what updates need to follow it.
    pub fn build(
        cluster: &Cluster,
        config: &KubernetesConfig,
        ctx: &BuildContext,
    ) -> (Snapshot, Self) {
        let (snapshot, tree) = build::build_full(cluster, config, ctx);
        let index = Index::of(cluster, config);
        let whole_only = snapshot.zones.iter().enumerate().any(|(i, zone)| {
            snapshot
                .zones
                .iter()
                .enumerate()
                .any(|(j, other)| i != j && zone.origin.is_within(&other.origin))
        });
        let parts = cluster.services.len()
            + cluster.endpoint_slices.len()
            + cluster.pods.len()
            + cluster.service_imports.len();
        let incremental = Self {
            config: config.clone(),
            local_ips: ctx.local_ips.clone(),
            tree,
            index,
            whole_only,
            most_parts: (parts / 4).max(256),
            owned: Owned::default(),
        };
        (snapshot, incremental)
    }

    /// Sets how many parts a change may touch before it is built whole (tests use 0 to
    /// force whole builds and `usize::MAX` to force updates).
    pub fn set_most_parts(&mut self, most: usize) {
        self.most_parts = most;
    }

    /// Applies `changes` to `cluster` and gives the zone after them, with SOA `serial`,
    /// from `previous` (the zone before them).
    pub fn apply(
        &mut self,
        cluster: &mut Cluster,
        changes: Vec<Change>,
        previous: &Snapshot,
        serial: u32,
    ) -> (Snapshot, Applied) {
        let mut touched = Touched::default();
        for change in &changes {
            let old = cluster.get(change.kind(), &change.key());
            let new = match change {
                Change::Upsert(object) => Some(object.borrowed()),
                Change::Delete(..) => None,
            };
            touched.note(self, cluster, old, new);
        }
        let ctx = BuildContext {
            local_ips: self.local_ips.clone(),
            serial,
        };
        let whole = self.whole_only || touched.parts() > self.most_parts;
        let (before, before_external) = if whole {
            (Names::new(), Names::new())
        } else {
            self.names_before(cluster, &touched, previous, &ctx)
        };
        for change in changes {
            let (kind, key) = (change.kind(), change.key());
            let old = match change {
                Change::Upsert(object) => cluster.replace(*object),
                Change::Delete(kind, key) => cluster.remove(kind, &key),
            };
            if let Some(old) = &old {
                self.index.remove(old.borrowed(), &self.config);
            }
            if let Some(new) = cluster.get(kind, &key) {
                self.index.add(new, &self.config);
            }
        }
        if whole {
            let (snapshot, fresh) = Self::build(cluster, &self.config, &ctx);
            let most_parts = self.most_parts;
            *self = fresh;
            self.most_parts = most_parts;
            return (snapshot, Applied::Whole);
        }

        let mut next = previous.clone();
        next.serial = serial;
        for zone in &mut next.zones {
            zone.soa = super::Soa::new(self.config.ttl, serial);
        }
        if let (Some(external), Some(config)) = (next.external.as_mut(), &self.config.external) {
            external.set_serial(config, serial);
        }
        let part = self.build_part(cluster, &touched, true, &next.zones, &next, &ctx);
        if self.config.external.is_none() {
            self.owned
                .hold(&next.zones, cluster, &touched.services, &part.cluster);
        }
        if let Some(external) = next.external.as_mut() {
            external.replace(&before_external, part.external);
        }
        let after = part.cluster;
        let kept: HashSet<Box<[u8]>> = after.iter().map(|node| node.name().into()).collect();
        for node in after {
            // An unchanged name leaves its shard shared with the previous snapshot.
            if next.names.holds(&node) && self.tree.is_built(&next.names, node.name()) {
                continue;
            }
            self.tree.insert(&next.zones, &mut next.names, node);
        }
        let mut removed = 0;
        for name in before.difference(&kept) {
            self.tree.remove(&next.zones, &mut next.names, name);
            removed += 1;
        }
        let built = kept.len();

        let filter = Filter::new(cluster, &self.config);
        if touched.exposure {
            next.pod_namespaces = std::sync::Arc::new(build::pod_namespaces(&self.config, &filter));
        }
        if self.config.pods == PodMode::Verified && self.config.client_namespaces {
            for ip in &touched.clients {
                let pods = self.index.pods_with(cluster, *ip);
                let mut clients = build::client_namespaces(pods, &filter.exposed);
                match clients.remove(ip) {
                    Some(namespace) => {
                        next.clients.insert((*ip, namespace));
                    }
                    None => {
                        next.clients.remove(ip);
                    }
                }
            }
        }
        (next, Applied::Names { built, removed })
    }

    /// The names the parts `touched` names have in `previous`, in the cluster zones and in
    /// *k8s_external*'s — or more, each a name only those parts give: the update removes
    /// those the parts no longer give. From what [`Owned`] holds and the names' keys where it
    /// can, else from the parts built on `cluster` before the change.
    fn names_before(
        &mut self,
        cluster: &Cluster,
        touched: &Touched,
        previous: &Snapshot,
        ctx: &BuildContext,
    ) -> (Names, Names) {
        let names =
            |nodes: &[Node]| -> Names { nodes.iter().map(|node| node.name().into()).collect() };
        if self.config.external.is_some() {
            // *k8s_external* names a Service's addresses in zones of its own: the parts are
            // built as they were.
            let part = self.build_part(cluster, touched, true, &previous.zones, previous, ctx);
            return (names(&part.cluster), names(&part.external));
        }
        let mut before = Names::new();
        // The ServiceImports are few and not held: built as they were, with the Services
        // whose names are not held.
        let mut unknown = Touched {
            imports: touched.imports.clone(),
            ..Touched::default()
        };
        for key in &touched.services {
            match self.owned.take(key) {
                Some(owned) => before.extend(owned.into_vec()),
                None => {
                    unknown.services.insert(key.clone());
                }
            }
        }
        if unknown.parts() > 0 {
            let part = self.build_part(cluster, &unknown, false, &previous.zones, previous, ctx);
            before.extend(names(&part.cluster));
        }
        owned::named_by_keys(
            &previous.zones,
            &touched.ips,
            &touched.pod_names,
            &touched.namespaces,
            &mut before,
        );
        (before, Names::new())
    }

    /// Builds the parts `touched` names (and, with `apex`, every apex) from `cluster`, in
    /// the cluster `zones` and the external zones of `snapshot`.
    fn build_part(
        &self,
        cluster: &Cluster,
        touched: &Touched,
        apex: bool,
        zones: &[ServedZone],
        snapshot: &Snapshot,
        ctx: &BuildContext,
    ) -> Part {
        let config = &self.config;
        let filter = Filter::new(cluster, config);
        let mut slice_keys: BTreeSet<&ObjectKey> = BTreeSet::new();
        let mut service_keys: BTreeSet<&ObjectKey> = BTreeSet::new();
        // The slices holding this server's addresses name the apex's name servers.
        let local_ips = if apex { &self.local_ips[..] } else { &[] };
        for ip in touched.ips.iter().chain(local_ips) {
            for reference in self.index.at(*ip) {
                match reference {
                    Ref::Slice(key) => {
                        slice_keys.insert(key);
                    }
                    Ref::Service(key) if touched.ips.contains(ip) => {
                        service_keys.insert(key);
                    }
                    _ => {}
                }
            }
        }
        let slices = slice_keys
            .iter()
            .filter_map(|key| cluster.endpoint_slices.get(*key));
        let view = View::part(cluster, &filter, &touched.services, slices);
        let ptr_services = service_keys
            .iter()
            .filter_map(|key| cluster.services.get(*key))
            .filter(|service| filter.service(service))
            .collect();
        let namespaces = touched
            .namespaces
            .iter()
            .filter_map(|ns| filter.exposed.get(ns.as_str()))
            .collect();
        let mut pod_keys: BTreeSet<&ObjectKey> = BTreeSet::new();
        for (namespace, ip) in &touched.pod_names {
            for reference in self.index.at(*ip) {
                if let Ref::Pod(key) = reference
                    && *key.namespace == **namespace
                    && cluster
                        .pods
                        .get(key)
                        .is_some_and(|pod| pod.primary_ip() == Some(*ip))
                {
                    pod_keys.insert(key);
                }
            }
        }
        let pods = pod_keys
            .iter()
            .filter_map(|key| cluster.pods.get(*key))
            .collect();
        let scope = Scope {
            ptr_services,
            namespaces,
            pods,
            only_ips: Some(&touched.ips),
            imports: multicluster::part(cluster, &filter, &touched.imports),
            apex,
        };
        let mut b = NameWriter::for_part(config.ttl);
        build::add_scope(&mut b, zones, cluster, config, ctx, &filter, &view, &scope);
        let external = match (&config.external, snapshot.external.as_ref()) {
            (Some(directive), Some(external)) => external::Part {
                cluster,
                external: directive,
                local_ips: &ctx.local_ips,
                cluster_ttl: config.ttl,
                filter: &filter,
                view: &view,
                namespaces: &scope.namespaces,
            }
            .build_in(external),
            _ => Vec::new(),
        };
        Part {
            cluster: b.finish(),
            external,
        }
    }
}

/// The nodes of an update's parts.
struct Part {
    /// In the cluster zones.
    cluster: Vec<Node>,
    /// In *k8s_external*'s zones.
    external: Vec<Node>,
}

/// The parts of the zone a change touches.
#[derive(Debug, Default)]
struct Touched {
    /// Services whose names are built again (whether they exist or not).
    services: BTreeSet<ObjectKey>,
    /// ServiceImports whose names (in the `multicluster` zones) are built again.
    imports: BTreeSet<ObjectKey>,
    /// Addresses whose PTRs are built again.
    ips: BTreeSet<IpAddr>,
    /// `(namespace, address)` of `pods verified` names built again.
    pod_names: BTreeSet<(String, IpAddr)>,
    /// Client addresses (*autopath*) looked at again.
    clients: BTreeSet<IpAddr>,
    /// Namespaces whose exposure changed.
    namespaces: BTreeSet<String>,
    /// Whether any namespace's exposure changed.
    exposure: bool,
}

impl Touched {
    fn parts(&self) -> usize {
        self.services.len()
            + self.imports.len()
            + self.ips.len()
            + self.pod_names.len()
            + self.clients.len()
    }

    /// Notes the parts that a change from `old` to `new` (the same object as it is in
    /// `cluster`, and as it will be) touches.
    fn note(
        &mut self,
        incremental: &Incremental,
        cluster: &Cluster,
        old: Option<ObjectRef<'_>>,
        new: Option<ObjectRef<'_>>,
    ) {
        let config = &incremental.config;
        let exposed = |object: Option<ObjectRef<'_>>| matches!(object, Some(ObjectRef::Namespace(ns)) if records::exposes(config, ns));
        if let Some(ObjectRef::Namespace(ns)) = old.or(new) {
            if exposed(old) != exposed(new) {
                self.namespace(cluster, config, &ns.name);
            }
            return;
        }
        for object in [old, new].into_iter().flatten() {
            self.note_object(config, object);
        }
    }

    fn note_object(&mut self, config: &KubernetesConfig, object: ObjectRef<'_>) {
        match object {
            ObjectRef::Namespace(_) => {}
            ObjectRef::Service(service) => {
                self.services.insert(service.key.clone());
                self.ips.extend(service.cluster_ips.iter().copied());
            }
            ObjectRef::EndpointSlice(slice) => {
                if let Some(service) = &slice.service_name {
                    self.services
                        .insert(ObjectKey::new(&*slice.key.namespace, service.as_str()));
                }
                self.imported_slice(config, slice);
                for endpoint in &slice.endpoints {
                    self.ips.extend(endpoint.addresses.iter().copied());
                }
            }
            ObjectRef::ServiceImport(import) => {
                if !config.multicluster.is_empty() {
                    self.imports.insert(import.key.clone());
                }
            }
            ObjectRef::Pod(pod) => {
                if config.pods == PodMode::Verified {
                    if let Some(ip) = pod.primary_ip() {
                        self.pod_names.insert((pod.key.namespace.to_string(), ip));
                    }
                    self.clients.extend(pod.ips.iter().copied());
                }
            }
        }
    }

    /// The ServiceImport `slice` is imported for, under `multicluster`.
    fn imported_slice(&mut self, config: &KubernetesConfig, slice: &EndpointSlice) {
        if config.multicluster.is_empty() {
            return;
        }
        if let Some(import) = slice.labels.get(LABEL_MCS_SERVICE_NAME) {
            self.imports
                .insert(ObjectKey::new(&*slice.key.namespace, import.as_str()));
        }
    }

    /// Everything in `namespace`, whose exposure changes.
    fn namespace(&mut self, cluster: &Cluster, config: &KubernetesConfig, namespace: &str) {
        if !self.namespaces.insert(namespace.to_owned()) {
            return;
        }
        self.exposure = true;
        let start = ObjectKey::new(namespace, "");
        for service in cluster
            .services
            .range(start.clone()..)
            .take_while(|(key, _)| &*key.namespace == namespace)
            .map(|(_, service)| service)
        {
            self.services.insert(service.key.clone());
            self.ips.extend(service.cluster_ips.iter().copied());
        }
        for slice in cluster
            .endpoint_slices
            .range(start.clone()..)
            .take_while(|(key, _)| &*key.namespace == namespace)
            .map(|(_, slice)| slice)
        {
            if let Some(service) = &slice.service_name {
                self.services
                    .insert(ObjectKey::new(namespace, service.as_str()));
            }
            self.imported_slice(config, slice);
            for endpoint in &slice.endpoints {
                self.ips.extend(endpoint.addresses.iter().copied());
            }
        }
        if !config.multicluster.is_empty() {
            self.imports.extend(
                cluster
                    .service_imports
                    .range(start.clone()..)
                    .take_while(|(key, _)| &*key.namespace == namespace)
                    .map(|(key, _)| key.clone()),
            );
        }
        if config.pods == PodMode::Verified {
            for pod in cluster.pods_in(namespace) {
                if let Some(ip) = pod.primary_ip() {
                    self.pod_names.insert((namespace.to_owned(), ip));
                }
                self.clients.extend(pod.ips.iter().copied());
            }
        }
    }
}

/// Objects by the addresses they hold: a Service by its ClusterIPs, a slice by its
/// endpoints' addresses, a pod (under `pods verified`) by its addresses.
///
/// A cluster has far more addresses than objects (150,000 endpoints in 10,000 slices), so
/// each object is stored once, under a number, and an address holds the numbers of its
/// holders (usually one, inline).
#[derive(Debug, Default)]
struct Index {
    /// The objects indexed, by number; a freed number is reused.
    objects: Vec<Option<Ref>>,
    free: Vec<u32>,
    /// The number of each indexed object, hashed by the object it stands for.
    numbers: HashTable<u32>,
    hasher: ahash::RandomState,
    /// The first two holders of each address (most have one: an endpoint's address; or two:
    /// the endpoint and its pod), [`NO_HOLDER`] in a slot not taken.
    by_v4: Map<Ipv4Addr, [u32; 2]>,
    by_v6: Map<Ipv6Addr, [u32; 2]>,
    /// The holders after the first two of the few addresses that have more.
    more: Map<IpAddr, Vec<u32>>,
}

/// An empty slot of [`Index::by_v4`] and [`Index::by_v6`].
const NO_HOLDER: u32 = u32::MAX;

/// The numbers of the objects holding one address, in the order they were added.
type Holders = SmallVec<[u32; 2]>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Ref {
    Service(ObjectKey),
    Slice(ObjectKey),
    Pod(ObjectKey),
}

impl Index {
    fn of(cluster: &Cluster, config: &KubernetesConfig) -> Self {
        let mut index = Self::default();
        for service in cluster.services.values() {
            index.add(ObjectRef::Service(service), config);
        }
        for slice in cluster.endpoint_slices.values() {
            index.add(ObjectRef::EndpointSlice(slice), config);
        }
        for pod in cluster.pods.values() {
            index.add(ObjectRef::Pod(pod), config);
        }
        index
    }

    fn first_two(&self, ip: IpAddr) -> [u32; 2] {
        let held = match ip {
            IpAddr::V4(v4) => self.by_v4.get(&v4),
            IpAddr::V6(v6) => self.by_v6.get(&v6),
        };
        held.copied().unwrap_or([NO_HOLDER; 2])
    }

    fn holders(&self, ip: IpAddr) -> impl Iterator<Item = u32> + '_ {
        self.first_two(ip)
            .into_iter()
            .filter(|number| *number != NO_HOLDER)
            .chain(self.more.get(&ip).into_iter().flatten().copied())
    }

    /// Replaces the holders of `ip` with `holders` (none: the address is dropped).
    fn set_holders(&mut self, ip: IpAddr, holders: &[u32]) {
        let first_two = [
            holders.first().copied().unwrap_or(NO_HOLDER),
            holders.get(1).copied().unwrap_or(NO_HOLDER),
        ];
        match (ip, holders.is_empty()) {
            (IpAddr::V4(v4), false) => {
                self.by_v4.insert(v4, first_two);
            }
            (IpAddr::V6(v6), false) => {
                self.by_v6.insert(v6, first_two);
            }
            (IpAddr::V4(v4), true) => {
                self.by_v4.remove(&v4);
            }
            (IpAddr::V6(v6), true) => {
                self.by_v6.remove(&v6);
            }
        }
        match holders.get(2..) {
            Some(rest) if !rest.is_empty() => {
                self.more.insert(ip, rest.to_vec());
            }
            _ => {
                self.more.remove(&ip);
            }
        }
    }

    /// The objects holding `ip`.
    fn at(&self, ip: IpAddr) -> impl Iterator<Item = &Ref> + '_ {
        self.holders(ip)
            .filter_map(|number| self.objects.get(number as usize)?.as_ref())
    }

    fn pods_with<'c>(
        &self,
        cluster: &'c Cluster,
        ip: IpAddr,
    ) -> impl Iterator<Item = &'c crate::model::Pod> + use<'c, '_> {
        self.at(ip).filter_map(|reference| match reference {
            Ref::Pod(key) => cluster.pods.get(key),
            _ => None,
        })
    }

    /// The addresses `object` is indexed under, and its reference.
    fn entries(object: ObjectRef<'_>, config: &KubernetesConfig) -> (Vec<IpAddr>, Option<Ref>) {
        match object {
            ObjectRef::Namespace(_) => (Vec::new(), None),
            ObjectRef::Service(service) => (
                service.cluster_ips.clone(),
                Some(Ref::Service(service.key.clone())),
            ),
            ObjectRef::EndpointSlice(slice) => (
                slice
                    .endpoints
                    .iter()
                    .flat_map(|endpoint| endpoint.addresses.iter().copied())
                    .collect(),
                Some(Ref::Slice(slice.key.clone())),
            ),
            ObjectRef::Pod(pod) if config.pods == PodMode::Verified => {
                (pod.ips.to_vec(), Some(Ref::Pod(pod.key.clone())))
            }
            ObjectRef::Pod(_) | ObjectRef::ServiceImport(_) => (Vec::new(), None),
        }
    }

    /// The number of `reference`, if it is indexed.
    fn number_of(&self, reference: &Ref) -> Option<u32> {
        let hash = self.hasher.hash_one(reference);
        self.numbers
            .find(hash, |number| {
                self.objects[*number as usize].as_ref() == Some(reference)
            })
            .copied()
    }

    fn add(&mut self, object: ObjectRef<'_>, config: &KubernetesConfig) {
        let (ips, Some(reference)) = Self::entries(object, config) else {
            return;
        };
        if ips.is_empty() {
            return;
        }
        let number = match self.number_of(&reference) {
            Some(number) => number,
            None => {
                let hash = self.hasher.hash_one(&reference);
                let number = match self.free.pop() {
                    Some(number) => {
                        self.objects[number as usize] = Some(reference);
                        number
                    }
                    None => {
                        // Fewer objects than addresses, and far fewer than 2^32.
                        self.objects.push(Some(reference));
                        (self.objects.len() - 1) as u32
                    }
                };
                // Rehashed as they were hashed: the reference, not the slot holding it (an
                // `Option` hashes differently, and every number moved by a growth of the table
                // could no longer be found).
                let (objects, hasher) = (&self.objects, &self.hasher);
                self.numbers.insert_unique(hash, number, |number| {
                    objects[*number as usize]
                        .as_ref()
                        .map_or(0, |reference| hasher.hash_one(reference))
                });
                number
            }
        };
        for ip in ips {
            let mut holders: Holders = self.holders(ip).collect();
            if !holders.contains(&number) {
                holders.push(number);
                self.set_holders(ip, &holders);
            }
        }
    }

    fn remove(&mut self, object: ObjectRef<'_>, config: &KubernetesConfig) {
        let (ips, Some(reference)) = Self::entries(object, config) else {
            return;
        };
        let Some(number) = self.number_of(&reference) else {
            return;
        };
        for ip in ips {
            let mut holders: Holders = self.holders(ip).collect();
            let before = holders.len();
            holders.retain(|held| *held != number);
            if holders.len() != before {
                self.set_holders(ip, &holders);
            }
        }
        let hash = self.hasher.hash_one(&reference);
        if let Ok(entry) = self.numbers.find_entry(hash, |held| *held == number) {
            entry.remove();
        }
        self.objects[number as usize] = None;
        self.free.push(number);
    }
}

mod owned;
#[cfg(test)]
mod tests;
