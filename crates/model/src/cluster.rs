//! The objects of a cluster ([`Cluster`]), and one object of any kind ([`Object`], [`Kind`],
//! [`ObjectRef`]).

use std::collections::BTreeMap;

use super::serviceimport;
use super::{EndpointSlice, Namespace, ObjectKey, Pod, Service, ServiceImport, reconcile_slices};

/// Every object the cluster zone and the proxy model are computed from.
///
/// Maps are keyed by namespace/name, so iteration order is stable and outputs built from
/// a `Cluster` are deterministic.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cluster {
    /// Namespaces by name.
    pub namespaces: BTreeMap<String, Namespace>,
    /// Services by namespace/name.
    pub services: BTreeMap<ObjectKey, Service>,
    /// EndpointSlices by namespace/name.
    pub endpoint_slices: BTreeMap<ObjectKey, EndpointSlice>,
    /// Pods by namespace/name.
    pub pods: BTreeMap<ObjectKey, Pod>,
    /// ServiceImports (Multi-Cluster Services) by namespace/name.
    pub service_imports: BTreeMap<ObjectKey, ServiceImport>,
}

/// One object of a kind the model keeps.
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    /// A Namespace.
    Namespace(Namespace),
    /// A Service.
    Service(Service),
    /// An EndpointSlice.
    EndpointSlice(EndpointSlice),
    /// A Pod.
    Pod(Pod),
    /// A ServiceImport.
    ServiceImport(ServiceImport),
}

/// The kinds of object the model keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Namespace.
    Namespace,
    /// Service.
    Service,
    /// EndpointSlice.
    EndpointSlice,
    /// Pod.
    Pod,
    /// ServiceImport (`multicluster.x-k8s.io/v1alpha1`).
    ServiceImport,
}

impl Kind {
    /// Every kind, in this order.
    pub const ALL: [Self; 5] = [
        Self::Namespace,
        Self::Service,
        Self::EndpointSlice,
        Self::Pod,
        Self::ServiceImport,
    ];

    /// The kind's name as objects give it in `kind` (`Service`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Namespace => "Namespace",
            Self::Service => "Service",
            Self::EndpointSlice => "EndpointSlice",
            Self::Pod => "Pod",
            Self::ServiceImport => "ServiceImport",
        }
    }

    /// The `apiVersion` its objects are read and written in.
    pub const fn api_version(self) -> &'static str {
        match self {
            Self::Namespace | Self::Service | Self::Pod => "v1",
            Self::EndpointSlice => "discovery.k8s.io/v1",
            Self::ServiceImport => serviceimport::API_VERSION,
        }
    }

    /// The API's plural name of the kind (`services`), as in request paths and RBAC rules.
    pub const fn plural(self) -> &'static str {
        match self {
            Self::Namespace => "namespaces",
            Self::Service => "services",
            Self::EndpointSlice => "endpointslices",
            Self::Pod => "pods",
            Self::ServiceImport => "serviceimports",
        }
    }
}

impl Object {
    /// Its kind.
    pub fn kind(&self) -> Kind {
        match self {
            Self::Namespace(_) => Kind::Namespace,
            Self::Service(_) => Kind::Service,
            Self::EndpointSlice(_) => Kind::EndpointSlice,
            Self::Pod(_) => Kind::Pod,
            Self::ServiceImport(_) => Kind::ServiceImport,
        }
    }

    /// Its namespace/name; a Namespace, being cluster-scoped, has an empty namespace.
    pub fn key(&self) -> ObjectKey {
        match self {
            Self::Namespace(ns) => ObjectKey::new("", ns.name.as_str()),
            Self::Service(svc) => svc.key.clone(),
            Self::EndpointSlice(slice) => slice.key.clone(),
            Self::Pod(pod) => pod.key.clone(),
            Self::ServiceImport(import) => import.key.clone(),
        }
    }
}

/// An object of the model, borrowed from a [`Cluster`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ObjectRef<'c> {
    /// A Namespace.
    Namespace(&'c Namespace),
    /// A Service.
    Service(&'c Service),
    /// An EndpointSlice.
    EndpointSlice(&'c EndpointSlice),
    /// A Pod.
    Pod(&'c Pod),
    /// A ServiceImport.
    ServiceImport(&'c ServiceImport),
}

impl Object {
    /// The object, borrowed.
    pub fn borrowed(&self) -> ObjectRef<'_> {
        match self {
            Self::Namespace(ns) => ObjectRef::Namespace(ns),
            Self::Service(svc) => ObjectRef::Service(svc),
            Self::EndpointSlice(slice) => ObjectRef::EndpointSlice(slice),
            Self::Pod(pod) => ObjectRef::Pod(pod),
            Self::ServiceImport(import) => ObjectRef::ServiceImport(import),
        }
    }
}

impl Cluster {
    /// Packs each map's B-tree: a map filled one object at a time in key order, as a list
    /// arrives, is left with its nodes about half full (each split leaves the node behind it
    /// so); rebuilt from its sorted entries, every node but the last few is full. 150,000 pods
    /// with `pods verified`: about 12 MB less for as long as they are held.
    pub fn compact(&mut self) {
        fn pack<K: Ord, V>(map: &mut BTreeMap<K, V>) {
            *map = std::mem::take(map).into_iter().collect();
        }
        pack(&mut self.namespaces);
        pack(&mut self.services);
        pack(&mut self.endpoint_slices);
        pack(&mut self.pods);
        pack(&mut self.service_imports);
    }

    /// Moves every object of `later` in, replacing those of the same kind and key.
    pub fn append(&mut self, later: &mut Cluster) {
        self.namespaces.append(&mut later.namespaces);
        self.services.append(&mut later.services);
        self.endpoint_slices.append(&mut later.endpoint_slices);
        self.pods.append(&mut later.pods);
        self.service_imports.append(&mut later.service_imports);
    }

    /// Whether it holds no object.
    pub fn is_empty(&self) -> bool {
        Kind::ALL.iter().all(|kind| self.len_of(*kind) == 0)
    }

    /// Adds `object`, replacing the one of its kind with its key.
    pub fn insert(&mut self, object: Object) {
        self.replace(object);
    }

    /// Adds `object`; the one of its kind and key it replaced.
    pub fn replace(&mut self, object: Object) -> Option<Object> {
        match object {
            Object::Namespace(ns) => self
                .namespaces
                .insert(ns.name.clone(), ns)
                .map(Object::Namespace),
            Object::Service(svc) => self
                .services
                .insert(svc.key.clone(), svc)
                .map(Object::Service),
            Object::EndpointSlice(slice) => self
                .endpoint_slices
                .insert(slice.key.clone(), slice)
                .map(Object::EndpointSlice),
            Object::Pod(pod) => self.pods.insert(pod.key.clone(), pod).map(Object::Pod),
            Object::ServiceImport(import) => self
                .service_imports
                .insert(import.key.clone(), import)
                .map(Object::ServiceImport),
        }
    }

    /// The object of `kind` at `key` (a Namespace's key has an empty namespace).
    pub fn get(&self, kind: Kind, key: &ObjectKey) -> Option<ObjectRef<'_>> {
        match kind {
            Kind::Namespace => self.namespaces.get(&*key.name).map(ObjectRef::Namespace),
            Kind::Service => self.services.get(key).map(ObjectRef::Service),
            Kind::EndpointSlice => self.endpoint_slices.get(key).map(ObjectRef::EndpointSlice),
            Kind::Pod => self.pods.get(key).map(ObjectRef::Pod),
            Kind::ServiceImport => self.service_imports.get(key).map(ObjectRef::ServiceImport),
        }
    }

    /// Removes the object of `kind` at `key`; the object removed.
    pub fn remove(&mut self, kind: Kind, key: &ObjectKey) -> Option<Object> {
        match kind {
            Kind::Namespace => self.namespaces.remove(&*key.name).map(Object::Namespace),
            Kind::Service => self.services.remove(key).map(Object::Service),
            Kind::EndpointSlice => self.endpoint_slices.remove(key).map(Object::EndpointSlice),
            Kind::Pod => self.pods.remove(key).map(Object::Pod),
            Kind::ServiceImport => self.service_imports.remove(key).map(Object::ServiceImport),
        }
    }

    /// The keys of the objects of `kind`, in order (a Namespace's with an empty namespace).
    pub fn keys_of(&self, kind: Kind) -> Box<dyn Iterator<Item = ObjectKey> + '_> {
        match kind {
            Kind::Namespace => Box::new(
                self.namespaces
                    .keys()
                    .map(|n| ObjectKey::new("", n.as_str())),
            ),
            Kind::Service => Box::new(self.services.keys().cloned()),
            Kind::EndpointSlice => Box::new(self.endpoint_slices.keys().cloned()),
            Kind::Pod => Box::new(self.pods.keys().cloned()),
            Kind::ServiceImport => Box::new(self.service_imports.keys().cloned()),
        }
    }

    /// How many objects of each kind it holds.
    pub fn len_of(&self, kind: Kind) -> usize {
        match kind {
            Kind::Namespace => self.namespaces.len(),
            Kind::Service => self.services.len(),
            Kind::EndpointSlice => self.endpoint_slices.len(),
            Kind::Pod => self.pods.len(),
            Kind::ServiceImport => self.service_imports.len(),
        }
    }

    /// The EndpointSlices that belong to `service` (by the `kubernetes.io/service-name` label,
    /// in the Service's namespace), in name order.
    pub fn slices_of<'a, 'k>(
        &'a self,
        service: &'k ObjectKey,
    ) -> impl Iterator<Item = &'a EndpointSlice> + use<'a, 'k> {
        self.endpoint_slices
            .range(ObjectKey::namespace_start(&service.namespace)..)
            .take_while(move |(key, _)| key.namespace == service.namespace)
            .map(|(_, slice)| slice)
            .filter(move |slice| slice.service_name.as_deref() == Some(&*service.name))
    }

    /// The EndpointSlices an MCS implementation imported for the ServiceImport `import` (by
    /// the `multicluster.kubernetes.io/service-name` label, in its namespace), in name order.
    pub fn imported_slices_of<'a, 'k>(
        &'a self,
        import: &'k ObjectKey,
    ) -> impl Iterator<Item = &'a EndpointSlice> + use<'a, 'k> {
        self.endpoint_slices
            .range(ObjectKey::namespace_start(&import.namespace)..)
            .take_while(move |(key, _)| key.namespace == import.namespace)
            .map(|(_, slice)| slice)
            .filter(move |slice| {
                slice
                    .labels
                    .get(serviceimport::LABEL_MCS_SERVICE_NAME)
                    .map(String::as_str)
                    == Some(&*import.name)
            })
    }

    /// The pods of one namespace, in name order.
    pub fn pods_in<'a, 'n>(
        &'a self,
        namespace: &'n str,
    ) -> impl Iterator<Item = &'a Pod> + use<'a, 'n> {
        self.pods
            .range(ObjectKey::namespace_start(namespace)..)
            .take_while(move |(key, _)| &*key.namespace == namespace)
            .map(|(_, pod)| pod)
    }
}

/// The controller's slices for every Service of `cluster` that has a selector (ExternalName
/// excepted), computed from the cluster's pods, in Service order. The cluster's own
/// EndpointSlices are not read.
pub fn compute_slices(cluster: &Cluster) -> Vec<EndpointSlice> {
    cluster
        .services
        .values()
        .flat_map(|service| reconcile_slices(service, cluster.pods_in(&service.key.namespace)))
        .collect()
}
