//! The Kubernetes object model, stripped to what DNS and kube-proxy need.
//!
//! Plain data: no DNS, no sockets, no I/O. Objects enter through [`convert`] (from
//! `k8s-openapi` types, which is how `kubectl get -o json` output and the API watch both
//! arrive) and leave through the zone builder and the proxy renderers. Like CoreDNS's
//! `plugin/kubernetes/object`, a field is here only because something reads it: every
//! field costs memory in a 150,000-pod cluster.
//!
//! A crate of its own (`clusterdns-model`, crates/model), used as `clusterdns::model`; what
//! it may use, and what uses it, is the layer table of clusterdns's `src/lib.rs`.

mod cluster;
pub mod convert;
pub mod endpoints;
pub mod export;
mod key;
mod labels;
mod namespace;
mod pod;
mod rare;
mod service;
pub mod serviceimport;

pub use cluster::{Cluster, Kind, Object, ObjectRef, compute_slices};
pub use endpoints::{
    Endpoint, EndpointConditions, EndpointDetails, EndpointPort, EndpointSlice, reconcile_slices,
};
pub use key::ObjectKey;
pub use labels::{ANNOTATION_TRIGGER_TIME, Addresses, LABEL_SERVICE_NAME, Labels};
pub use namespace::Namespace;
pub use pod::{ContainerPort, Pod, PodDetails, PodPhase};
pub use rare::{Empty, Rare};
pub use service::{
    AddressType, Protocol, Service, ServiceKind, ServicePort, ServiceType, SessionAffinity,
    TargetPort, TrafficPolicy,
};
pub use serviceimport::{ImportPort, ImportType, ServiceImport};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compacted_cluster_holds_the_same_objects() {
        let mut cluster = Cluster::default();
        for index in 0..1_000 {
            let key = ObjectKey::new(format!("ns-{}", index % 7), format!("pod-{index:04}"));
            cluster.insert(Object::Pod(Pod::new(
                key,
                Addresses::new(),
                PodPhase::Running,
            )));
        }
        cluster.insert(Object::Namespace(Namespace {
            name: "ns-0".to_owned(),
            labels: Labels::new(),
        }));
        let before = cluster.clone();
        cluster.compact();
        assert_eq!(cluster, before);
        assert_eq!(cluster.pods.len(), 1_000);
        // Still a map that takes changes.
        let key = ObjectKey::new("ns-3", "pod-0500");
        assert!(cluster.remove(Kind::Pod, &key).is_some());
        assert!(cluster.get(Kind::Pod, &key).is_none());
    }
}
