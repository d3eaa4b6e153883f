//! The API watch's side of Multi-Cluster Services: what kube-rs needs to list and watch
//! ServiceImports (`multicluster.x-k8s.io/v1alpha1`, a custom resource k8s-openapi has no
//! type for), and how a missing CRD is told from a failing watch.
//!
//! Only a block with `multicluster` watches ServiceImports
//! ([`needed_kinds`](super::api::needed_kinds)). A cluster without the CRD answers
//! their list with 404: that is logged once and counts as a complete list of none, so the
//! block syncs and serves its other zones; the watcher keeps retrying with backoff, and a
//! CRD installed later is listed on the next retry.

use crate::model::serviceimport::ServiceImportObject;

namespaced_resource!(
    ServiceImportObject,
    "ServiceImport",
    "multicluster.x-k8s.io",
    "v1alpha1",
    "serviceimports"
);
