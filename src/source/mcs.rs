//! The API watch's side of Multi-Cluster Services: what kube-rs needs to list and watch
//! ServiceImports (`multicluster.x-k8s.io/v1alpha1`, a custom resource k8s-openapi has no
//! type for), and how a missing CRD is told from a failing watch.
//!
//! Only a block with `multicluster` watches ServiceImports
//! ([`needed_kinds`](super::api::needed_kinds)). A cluster without the CRD answers
//! their list with 404: that is logged once and counts as a complete list of none, so the
//! block syncs and serves its other zones; the watcher keeps retrying with backoff, and a
//! CRD installed later is listed on the next retry.

use serde::Deserialize;

use crate::model::serviceimport::ServiceImportObject;

/// A ServiceImport as the watch reads it: the model's object, as kube-rs's `Resource`. The
/// model is a crate of its own without kube-rs, and the orphan rule keeps this crate from
/// implementing kube-rs's trait for the model's type, hence the wrapper.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub(super) struct ServiceImportResource(pub(super) ServiceImportObject);

namespaced_resource!(
    ServiceImportResource,
    "ServiceImport",
    "multicluster.x-k8s.io",
    "v1alpha1",
    "serviceimports",
    0.metadata
);
