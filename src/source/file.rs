//! Objects from `kubectl get ... -o json` files: the static `objects` store.
//!
//! # Input
//!
//! Each file holds one JSON document: a `List` (`{"kind": "List", "items": [...]}`, what
//! `kubectl get a,b,c -o json` prints), a typed list as the API returns it (`ServiceList`,
//! whose items carry no `kind`), a single object, or a JSON array of any of these. Any number of
//! files are merged. A file is parsed as it is read, and a List is streamed: its items are
//! parsed and converted one at a time, so the memory a load needs is a read buffer and the
//! model, never the file's text or a whole JSON tree. A
//! top-level object with an `items` array is read as a list, whatever its `kind`.
//!
//! Five kinds are read: `v1` Namespace, Service and Pod, `discovery.k8s.io/v1`
//! EndpointSlice, and `multicluster.x-k8s.io/v1alpha1` ServiceImport (an object of a known
//! kind without `apiVersion` is read too; ServiceImports are kept only by a block with
//! `multicluster`). Every other
//! object, such as the Deployments, ReplicaSets, Endpoints and ConfigMaps of a
//! `kubectl get all` dump, is counted in [`Loaded::ignored`] by kind and otherwise skipped. A
//! known kind of another group (a Knative `serving.knative.dev/v1` Service) is counted as
//! `Service (serving.knative.dev/v1)`.
//!
//! # Errors
//!
//! Every object must have a `kind` and a `metadata.name`. An object of a known kind that does
//! not convert (see [`crate::model::convert`]) is an error naming the file, the item, the object
//! and the field:
//!
//! ```text
//! shop.json: items[3] (Service shop/web): spec.ports[0].port: expected a port number 1-65535, found 70000
//! ```
//!
//! A Pod or an EndpointSlice is decoded only for the fields the model keeps (the same types as
//! the API watch's, `source::decode`): a field the conversion does not read, such as a Pod's
//! `spec.volumes` or an endpoint's `hints`, is not looked at, and a wrong one is no error.
//!
//! Invalid JSON is an error with the file, line and column. A file that fails adds nothing.
//!
//! # Merging
//!
//! Objects are keyed by kind and namespace/name. When the same key appears twice, in one file
//! or across files, the one read later wins, silently: `--objects base.json override.json`
//! patches a dump.
//!
//! # Completion
//!
//! [`Loader::finish`] makes the objects usable on their own:
//!
//! - one Namespace is synthesized for every namespace an object lives in that the input has
//!   no Namespace object for, labelled only with `kubernetes.io/metadata.name` (the label the
//!   API server puts on every Namespace), so that names in those namespaces exist, as CoreDNS
//!   serves a Service whatever its Namespace object;
//! - every Service that has a selector, is not ExternalName, and has no EndpointSlice in the
//!   input gets the slices the EndpointSlice controller would write for the input's pods
//!   ([`crate::model::endpoints::reconcile_slices`]), so `kubectl get svc,pods -o json` is
//!   enough to answer for endpoints.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::config::KubernetesConfig;
use crate::model::Labels;
use crate::model::endpoints::reconcile_slices;
use crate::model::{Cluster, Namespace, Object, ObjectKey, ServiceType};

/// The label the API server sets on every Namespace to its own name.
pub const LABEL_NAMESPACE_NAME: &str = "kubernetes.io/metadata.name";

/// Objects read from one or more files, completed (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// The objects.
    pub cluster: Cluster,
    /// How many objects of each kind were skipped (for one log line per kind).
    pub ignored: BTreeMap<String, usize>,
    /// The Namespaces that were synthesized: every namespace objects live in that the input
    /// has no Namespace object for.
    pub synthesized_namespaces: Vec<String>,
    /// Those of them synthesized although the input has Namespace objects (worth saying:
    /// the input may be missing some).
    pub unlisted_namespaces: Vec<String>,
    /// The Services whose EndpointSlices were computed from pods, not read.
    pub computed_slices: Vec<ObjectKey>,
}

/// A file that cannot be read into objects.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file cannot be read.
    #[error("{}: {error}", .file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{}:{line}:{column}: invalid JSON: {message}", .file.display())]
    Json {
        /// The file.
        file: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the JSON parser expected.
        message: String,
    },
    /// An object (or the document) does not hold what is expected.
    #[error("{}: {}{message}", .file.display(), Prefix { location, object, path })]
    Object {
        /// The file.
        file: PathBuf,
        /// Where the object is in the file: `items[3]`, `[2]`, `[2].items[0]`, or empty for a
        /// file that is a single object.
        location: String,
        /// The object: `Service shop/web`, `Namespace shop`, `Service` when the name is
        /// missing, empty when the kind is.
        object: String,
        /// The field path inside the object (`spec.ports[0].port`); empty for the object
        /// itself.
        path: String,
        /// What was expected and what was found.
        message: String,
    },
}

/// `items[3] (Service shop/web): spec.ports[0].port: ` and its shorter forms.
struct Prefix<'a> {
    location: &'a str,
    object: &'a str,
    path: &'a str,
}

impl fmt::Display for Prefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.location.is_empty(), self.object.is_empty()) {
            (false, false) => write!(f, "{} ({}): ", self.location, self.object)?,
            (false, true) => write!(f, "{}: ", self.location)?,
            (true, false) => write!(f, "{}: ", self.object)?,
            (true, true) => {}
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        Ok(())
    }
}

/// Reads and merges `paths`, in order, and completes the result.
pub fn read_objects(paths: &[PathBuf]) -> Result<Loaded, Error> {
    let mut loader = Loader::new();
    for path in paths {
        loader.read_file(path)?;
    }
    Ok(loader.finish())
}

/// Reads and merges `paths`, in order, and completes the result, keeping of each object
/// only what the zone of `config` reads ([`crate::zone::trim`]) — except what completion
/// reads, trimmed after it. What the server loads: the fields it drops are never held beside
/// those it keeps, so they leave no holes among them.
pub fn read_objects_for(paths: &[PathBuf], config: &KubernetesConfig) -> Result<Loaded, Error> {
    let mut loader = Loader::for_zone(config);
    for path in paths {
        loader.read_file(path)?;
    }
    Ok(loader.finish())
}

/// Parses one document; `file` names it in errors.
pub fn parse_objects(text: &str, file: &Path) -> Result<Loaded, Error> {
    let mut loader = Loader::new();
    loader.add_text(text, file)?;
    Ok(loader.finish())
}

/// Accumulates the objects of several documents, then completes them with
/// [`finish`](Self::finish).
#[derive(Debug, Default)]
pub struct Loader {
    cluster: Cluster,
    ignored: BTreeMap<String, usize>,
    namespace_objects: usize,
    /// The zone the objects are for, when only what it reads is kept.
    zone: Option<KubernetesConfig>,
}

/// The largest objects file read: a `kubectl get -o json` dump of 10,000 Services and 150,000
/// pods is about 300 MB.
pub const MAX_OBJECTS_BYTES: u64 = 4 << 30;

impl Loader {
    /// An empty loader.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty loader that keeps, of each object, only what the zone of `config` reads
    /// ([`crate::zone::trim`]), as it reads them. A Service keeps its selector and a Pod its
    /// whole self: [`finish`](Self::finish) computes EndpointSlices from them.
    pub fn for_zone(config: &KubernetesConfig) -> Self {
        Self {
            zone: Some(config.clone()),
            ..Self::default()
        }
    }

    /// Reads one file and adds its objects.
    ///
    /// The file is parsed as it is read, never held whole: a 300 MB dump costs a buffer, not
    /// its text beside the objects it turns into.
    pub fn read_file(&mut self, path: &Path) -> Result<(), Error> {
        let read = |error| Error::Read {
            file: path.to_owned(),
            error,
        };
        let (file, _) = crate::config::open_regular(path, MAX_OBJECTS_BYTES).map_err(read)?;
        let mut input =
            std::io::BufReader::with_capacity(1 << 16, file.take(MAX_OBJECTS_BYTES + 1));
        let added = self.add(serde_json::Deserializer::from_reader(&mut input), path);
        if input.into_inner().limit() == 0 {
            // It grew past the bound while being read (what was added stays out: the caller
            // drops a loader whose file failed).
            return Err(read(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("larger than {MAX_OBJECTS_BYTES} bytes"),
            )));
        }
        added
    }

    /// Parses one document and adds its objects; `file` names it in errors. On error nothing
    /// is added.
    pub fn add_text(&mut self, text: &str, file: &Path) -> Result<(), Error> {
        self.add(serde_json::Deserializer::from_str(text), file)
    }

    /// Parses one document and adds its objects; on error nothing is added.
    ///
    /// The document is streamed: each item of a List is parsed, converted and dropped before
    /// the next, so a 300 MB dump never exists as a JSON tree (only as the model objects it
    /// turns into).
    fn add<'de, R: serde_json::de::Read<'de>>(
        &mut self,
        deserializer: serde_json::Deserializer<R>,
        file: &Path,
    ) -> Result<(), Error> {
        let mut staged = Loader {
            zone: self.zone.clone(),
            ..Loader::default()
        };
        reader::read(deserializer, file, &mut staged)?;
        self.merge(staged);
        Ok(())
    }

    /// Adds `object`, replacing one of its kind and key added before.
    fn keep(&mut self, mut object: Object) {
        if let Some(config) = &self.zone {
            match &mut object {
                Object::Service(service) => {
                    let selector = service.selector.take();
                    crate::zone::trim(&mut object, config);
                    if let Object::Service(service) = &mut object {
                        service.selector = selector;
                    }
                }
                Object::Pod(_) => {}
                _ => crate::zone::trim(&mut object, config),
            }
        }
        if matches!(object, Object::Namespace(_)) {
            self.namespace_objects += 1;
        }
        self.cluster.insert(object);
    }

    /// Counts an object of a kind the model does not keep.
    fn ignore(&mut self, kind: String) {
        *self.ignored.entry(kind).or_default() += 1;
    }

    /// Adds what `later` holds, its objects replacing those of the same kind and key. The
    /// first document is taken whole, not moved object by object.
    fn merge(&mut self, mut later: Loader) {
        if self.cluster.is_empty() && self.ignored.is_empty() {
            *self = later;
            return;
        }
        self.cluster.append(&mut later.cluster);
        for (kind, count) in later.ignored {
            *self.ignored.entry(kind).or_default() += count;
        }
        self.namespace_objects += later.namespace_objects;
    }

    /// The objects exactly as read: no Namespace synthesized, no EndpointSlice computed. This
    /// is how a `snapshot` of the API watch is read back: the API server's view, complete.
    pub fn finish_as_given(self) -> Loaded {
        Loaded {
            cluster: self.cluster,
            ignored: self.ignored,
            synthesized_namespaces: Vec::new(),
            unlisted_namespaces: Vec::new(),
            computed_slices: Vec::new(),
        }
    }

    /// Completes the objects (synthesized Namespaces, computed EndpointSlices).
    pub fn finish(self) -> Loaded {
        let Self {
            mut cluster,
            ignored,
            namespace_objects,
            zone: _,
        } = self;

        // A namespace objects live in but the input does not list gets a Namespace, as the
        // API server would have one: CoreDNS serves a Service whatever its Namespace object.
        let names: BTreeSet<String> = cluster
            .services
            .keys()
            .chain(cluster.endpoint_slices.keys())
            .chain(cluster.pods.keys())
            .chain(cluster.service_imports.keys())
            .map(|key| key.namespace.to_string())
            .filter(|name| !cluster.namespaces.contains_key(name))
            .collect();
        let mut synthesized_namespaces = Vec::new();
        for name in names {
            let labels = Labels::from([(LABEL_NAMESPACE_NAME.to_owned(), name.clone())]);
            cluster.namespaces.insert(
                name.clone(),
                Namespace {
                    name: name.clone(),
                    labels,
                },
            );
            synthesized_namespaces.push(name);
        }
        let unlisted_namespaces = if namespace_objects > 0 {
            synthesized_namespaces.clone()
        } else {
            Vec::new()
        };

        let mut computed_slices = Vec::new();
        let mut new_slices = Vec::new();
        for service in cluster.services.values() {
            if service.selector.is_none()
                || service.service_type == ServiceType::ExternalName
                || cluster.slices_of(&service.key).next().is_some()
            {
                continue;
            }
            computed_slices.push(service.key.clone());
            new_slices.extend(reconcile_slices(
                service,
                cluster.pods_in(&service.key.namespace),
            ));
        }
        for mut slice in new_slices {
            // A computed name can only clash with an input slice of another Service: keep
            // both, renaming the computed one.
            let base = slice.key.name.clone();
            let mut n = 1;
            while cluster.endpoint_slices.contains_key(&slice.key) {
                slice.key.name = format!("{base}-{n}").into();
                n += 1;
            }
            cluster.endpoint_slices.insert(slice.key.clone(), slice);
        }

        Loaded {
            cluster,
            ignored,
            synthesized_namespaces,
            unlisted_namespaces,
            computed_slices,
        }
    }
}

mod reader;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod round_trip;
