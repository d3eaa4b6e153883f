//! What objects carry beside their kind: labels (and the label and annotation the zone
//! reads), and the addresses of an endpoint or a pod.

use std::collections::BTreeMap;

/// The addresses of an endpoint or a pod: one inline (almost all have one; dual-stack pods
/// and endpoints with more are kept whole).
pub type Addresses = smallvec::SmallVec<[std::net::IpAddr; 1]>;

/// Labels of an object (`metadata.labels`), sorted for deterministic output.
pub type Labels = BTreeMap<String, String>;

/// The label that ties an EndpointSlice to its Service.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";

/// The annotation the EndpointSlice controller stamps with the time of the change a slice
/// reflects.
pub const ANNOTATION_TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
