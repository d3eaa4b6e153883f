//! What an update knows of the names a part had, without building the part on the objects
//! as they were.
//!
//! An update removes the names its parts had before the change and no longer have after
//! it. The names of an address's PTR, of a pod under `pods verified` and of a namespace are
//! known from the address and the namespace alone ([`named_by_keys`]). A Service's names
//! depend on its slices (an endpoint name per ready endpoint, an SRV name per port), so
//! [`Owned`] keeps the names each Service had after the last update that built it: a
//! Deployment scaling up and down changes the same few Services again and again, and each
//! of those updates then builds its Services once, not twice.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::model::{Cluster, ObjectKey};
use crate::name::suffix_offset;
use crate::zone::ServedZone;
use crate::zone::build::pod_label;
use crate::zone::names::ReverseName;
use crate::zone::node::Node;

/// A set of lower-case wire names.
pub(super) type Names = HashSet<Box<[u8]>>;

/// At most this many names are held for all Services together (a few hundred kilobytes);
/// beyond, what is held is dropped and learnt again.
const MOST_NAMES: usize = 1 << 14;

/// The names of the Services updates built, in the cluster zones (`<svc>.<ns>.svc.<zone>`
/// and every name below it), each as the last update that built the Service left them.
#[derive(Debug)]
pub(super) struct Owned {
    services: HashMap<ObjectKey, Box<[Box<[u8]>]>, ahash::RandomState>,
    /// Names held, for all Services.
    count: usize,
    /// At most this many ([`MOST_NAMES`]; tests take fewer).
    most: usize,
}

impl Default for Owned {
    fn default() -> Self {
        Self {
            services: HashMap::default(),
            count: 0,
            most: MOST_NAMES,
        }
    }
}

impl Owned {
    /// Holds at most `most` names from now on.
    #[cfg(test)]
    pub(super) fn limit(&mut self, most: usize) {
        self.most = most;
    }

    /// The names held for the Service `key`, no longer held.
    pub(super) fn take(&mut self, key: &ObjectKey) -> Option<Box<[Box<[u8]>]>> {
        let names = self.services.remove(key)?;
        self.count -= names.len();
        Some(names)
    }

    /// Holds the names of each of `services` that exists in `cluster`, from `nodes` (every
    /// name an update built for them, among others).
    pub(super) fn hold(
        &mut self,
        zones: &[ServedZone],
        cluster: &Cluster,
        services: &BTreeSet<ObjectKey>,
        nodes: &[Node],
    ) {
        let held: Vec<&ObjectKey> = services
            .iter()
            .filter(|key| cluster.services.contains_key(*key))
            .collect();
        // The name of each Service in each cluster zone (not a `multicluster` one: its names
        // are the ServiceImports'), lower case as the zone's names are.
        let mut bases: HashMap<Box<[u8]>, usize, ahash::RandomState> = HashMap::default();
        for (i, key) in held.iter().enumerate() {
            for zone in zones
                .iter()
                .filter(|zone| !zone.reverse && !zone.multicluster)
            {
                if let Ok(base) = zone
                    .origin
                    .prepend_all([&*key.name, &*key.namespace, "svc"])
                {
                    bases.insert(base.as_bytes().to_ascii_lowercase().into(), i);
                }
            }
        }
        let mut names: Vec<Vec<Box<[u8]>>> = vec![Vec::new(); held.len()];
        for node in nodes {
            if let Some(i) = base_of(&bases, node.name()) {
                names[i].push(node.name().into());
            }
        }
        let added: usize = names.iter().map(Vec::len).sum();
        if self.count + added > self.most {
            self.services.clear();
            self.count = 0;
            if added > self.most {
                return;
            }
        }
        self.count += added;
        for (key, names) in held.into_iter().zip(names) {
            if let Some(before) = self.services.insert(key.clone(), names.into()) {
                self.count -= before.len();
            }
        }
    }
}

/// The Service whose name `name` is or is below: the first of its suffixes in `bases`.
fn base_of(bases: &HashMap<Box<[u8]>, usize, ahash::RandomState>, name: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at < name.len() {
        if let Some(i) = bases.get(&name[at..]) {
            return Some(*i);
        }
        at += 1 + usize::from(name[at]);
    }
    None
}

/// Every name the PTRs of `ips`, the `pods verified` names of `pods` and the namespaces
/// `namespaces` may have in `zones`: each given by its key alone, whatever the objects.
pub(super) fn named_by_keys(
    zones: &[ServedZone],
    ips: &BTreeSet<std::net::IpAddr>,
    pods: &BTreeSet<(String, std::net::IpAddr)>,
    namespaces: &BTreeSet<String>,
    out: &mut Names,
) {
    for zone in zones {
        let origin = &zone.origin;
        if zone.reverse {
            for ip in ips {
                let name = ReverseName::of(*ip);
                let name = name.as_bytes();
                if suffix_offset(name, origin.as_bytes()).is_some() {
                    out.insert(name.into());
                }
            }
            continue;
        }
        let mut add = |labels: [&str; 2]| {
            if let Ok(name) = origin.prepend_all(labels) {
                out.insert(name.as_bytes().to_ascii_lowercase().into());
            }
        };
        for namespace in namespaces {
            add([namespace, "svc"]);
            add([namespace, "pod"]);
        }
        for (namespace, ip) in pods {
            if let Ok(name) = origin.prepend_all([pod_label(*ip).as_str(), namespace, "pod"]) {
                out.insert(name.as_bytes().to_ascii_lowercase().into());
            }
        }
    }
}
