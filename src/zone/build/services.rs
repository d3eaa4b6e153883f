//! A forward zone's names: the fixed `svc`, `pod` and `dns` names, the namespaces', and
//! every Service's of the view (CoreDNS `plugin/kubernetes/kubernetes.go`), or in a
//! `multicluster` zone the ServiceImports'.

use super::Scope;
use super::pods::add_verified_pods;
use crate::config::{KubernetesConfig, PodMode};
use crate::zone::records::{self, View};
use crate::zone::writer::NameWriter;
use crate::zone::{ServedZone, multicluster};

/// A forward zone: its fixed names, namespaces and pods, and the Services of `view` — or,
/// in a `multicluster` zone, the ServiceImports of `scope`.
pub(super) fn add_forward(
    b: &mut NameWriter,
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
