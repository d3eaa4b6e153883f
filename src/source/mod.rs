//! Where objects come from.
//!
//! - [`file`]: `kubectl get -o json` files, read whole (the `objects` store and every offline
//!   command).
//! - [`api`]: the API watch (kube-rs), for a *kubernetes* block without `objects`.
//! - [`file_watch`]: a store kept current with its objects files.
//! - [`live`]: one read of the live cluster for the operator's tools.
//! - `decode`: what both read of a Pod and an EndpointSlice: only the fields the model
//!   keeps.
//! - [`publish`]: the one place that turns changes of objects into published zones.
//! - [`programming`]: DNS programming latency, from the slices' change stamps.

/// `impl kube::Resource` for a namespaced type of our own that kube-rs lists and watches
/// (one with a `metadata: ObjectMeta` field, or its path after the plural: `0.metadata`): its
/// kind, group, version and plural.
macro_rules! namespaced_resource {
    ($type:ty, $kind:literal, $group:literal, $version:literal, $plural:literal) => {
        namespaced_resource!($type, $kind, $group, $version, $plural, metadata);
    };
    ($type:ty, $kind:literal, $group:literal, $version:literal, $plural:literal, $($meta:tt).+) => {
        impl kube::Resource for $type {
            type DynamicType = ();
            type Scope = k8s_openapi::NamespaceResourceScope;

            fn kind((): &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed($kind)
            }

            fn group((): &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed($group)
            }

            fn version((): &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed($version)
            }

            fn plural((): &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed($plural)
            }

            fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &self.$($meta).+
            }

            fn meta_mut(
                &mut self,
            ) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &mut self.$($meta).+
            }
        }
    };
}

pub mod api;
mod decode;
pub mod file;
pub mod file_watch;
pub mod live;
mod mcs;
pub mod programming;
pub mod publish;

pub use file::{Error, Loaded, Loader, parse_objects, read_objects};
