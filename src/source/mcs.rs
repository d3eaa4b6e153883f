//! The API watch's side of Multi-Cluster Services: what kube-rs needs to list and watch
//! ServiceImports (`multicluster.x-k8s.io/v1alpha1`, a custom resource k8s-openapi has no
//! type for), and how a missing CRD is told from a failing watch.
//!
//! Only a block with `multicluster` watches ServiceImports
//! ([`Resource::needed`](super::api::Resource::needed)). A cluster without the CRD answers
//! their list with 404: that is logged once and counts as a complete list of none, so the
//! block syncs and serves its other zones; the watcher keeps retrying with backoff, and a
//! CRD installed later is listed on the next retry.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::model::serviceimport::ServiceImportObject;

impl kube::Resource for ServiceImportObject {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind((): &()) -> Cow<'_, str> {
        Cow::Borrowed("ServiceImport")
    }

    fn group((): &()) -> Cow<'_, str> {
        Cow::Borrowed("multicluster.x-k8s.io")
    }

    fn version((): &()) -> Cow<'_, str> {
        Cow::Borrowed("v1alpha1")
    }

    fn plural((): &()) -> Cow<'_, str> {
        Cow::Borrowed("serviceimports")
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
