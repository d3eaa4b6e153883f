//! EndpointSlices, and the EndpointSlice controller that computes them from Pods.

use std::time::SystemTime;

use super::{
    AddressType, Addresses, Empty, LABEL_SERVICE_NAME, Labels, ObjectKey, Pod, Protocol, Rare,
    Service, ServicePort, ServiceType, TargetPort,
};

/// An EndpointSlice (`discovery.k8s.io/v1`).
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointSlice {
    /// namespace/name.
    pub key: ObjectKey,
    /// The `kubernetes.io/service-name` label: the Service this slice belongs to.
    pub service_name: Option<String>,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `addressType`.
    pub address_type: AddressType,
    /// `endpoints`, in slice order.
    pub endpoints: Vec<Endpoint>,
    /// `ports`, in slice order. Empty means the slice carries no port.
    pub ports: Vec<EndpointPort>,
    /// The `endpoints.kubernetes.io/last-change-trigger-time` annotation: when the change
    /// (to a Pod or the Service) that this version of the slice reflects happened. Set by
    /// the EndpointSlice controller; what DNS programming latency is measured from.
    pub trigger_time: Option<SystemTime>,
}

/// One entry of `endpoints`.
///
/// A large cluster has as many of these as pods, kept for as long as the server runs: the
/// one address almost every endpoint has is held inline, the hostname is a boxed string (two
/// words, not three), and the node, zone and pod, which the zone's trim drops unless
/// `zonal` or `endpoint_pod_names` reads them, are one [`Rare`] pointer (64 bytes an
/// endpoint, not 104).
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// `addresses` (FQDN slices keep none).
    pub addresses: Addresses,
    /// `conditions`.
    pub conditions: EndpointConditions,
    /// `hostname`.
    pub hostname: Option<Box<str>>,
    /// `nodeName`, `zone` and the target pod.
    pub details: Rare<EndpointDetails>,
}

/// Where an endpoint runs, and which pod it is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EndpointDetails {
    /// `nodeName`.
    pub node_name: Option<Box<str>>,
    /// `zone`.
    pub zone: Option<Box<str>>,
    /// `targetRef.name` when `targetRef.kind` is Pod.
    pub target_pod: Option<Box<str>>,
}

impl Empty for EndpointDetails {
    const EMPTY: &'static Self = &EndpointDetails {
        node_name: None,
        zone: None,
        target_pod: None,
    };
}

impl Endpoint {
    /// An endpoint at `addresses` with no hostname, node, zone or pod.
    pub fn new(addresses: Addresses, conditions: EndpointConditions) -> Self {
        Self {
            addresses,
            conditions,
            hostname: None,
            details: Rare::default(),
        }
    }

    /// The endpoint with this node, zone and pod.
    pub fn with_details(mut self, details: EndpointDetails) -> Self {
        self.details = Rare::new(details);
        self
    }

    /// `nodeName`.
    pub fn node_name(&self) -> Option<&str> {
        self.details.get().node_name.as_deref()
    }

    /// `zone`.
    pub fn zone(&self) -> Option<&str> {
        self.details.get().zone.as_deref()
    }

    /// The pod of `targetRef`.
    pub fn target_pod(&self) -> Option<&str> {
        self.details.get().target_pod.as_deref()
    }
}

/// `conditions`, with the API's defaults applied by the accessors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EndpointConditions {
    /// `ready` as written (`None` when absent).
    pub ready: Option<bool>,
    /// `serving` as written.
    pub serving: Option<bool>,
    /// `terminating` as written.
    pub terminating: Option<bool>,
}

impl EndpointConditions {
    /// A missing `ready` means ready.
    pub fn ready(self) -> bool {
        self.ready.unwrap_or(true)
    }

    /// A missing `serving` means "same as ready".
    pub fn serving(self) -> bool {
        self.serving.unwrap_or_else(|| self.ready())
    }

    /// A missing `terminating` means false.
    pub fn terminating(self) -> bool {
        self.terminating.unwrap_or(false)
    }
}

/// One entry of `ports`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPort {
    /// `name` (empty when unnamed).
    pub name: String,
    /// `protocol` (TCP when unset).
    pub protocol: Protocol,
    /// `port`; `None` means the slice does not restrict ports.
    pub port: Option<u16>,
}

// ---------------------------------------------------------------------------------------------
// The EndpointSlice controller.
// ---------------------------------------------------------------------------------------------

/// The label naming the controller that manages a slice.
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";

/// The value of [`LABEL_MANAGED_BY`] on the slices kube-controller-manager writes.
pub const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";

/// The label (empty value) the controller puts on the slices of a Service without a
/// ClusterIP (headless, or ExternalName).
pub const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";

/// kube-controller-manager's default `--max-endpoints-per-slice`.
pub const MAX_ENDPOINTS_PER_SLICE: usize = 100;

/// The EndpointSlices the EndpointSlice controller (kube-controller-manager,
/// `k8s.io/endpointslice` `Reconciler.Reconcile`) writes for `service` from scratch, given the
/// pods it can see. Pods of other namespaces are ignored, so any superset of the Service's
/// namespace may be passed.
///
/// The rules, each as the real controller has them:
///
/// - Services without a selector and ExternalName Services get nothing: their slices are
///   someone else's to write.
/// - A pod is a candidate when every selector label is equal on it, it has an IP, and it has not
///   finished (Succeeded or Failed). Terminating pods stay in, flagged.
/// - One set of slices per address type of the Service: `spec.ipFamilies`; else the family of
///   the ClusterIP; else (headless, from an API server that did not default `ipFamilies`) both
///   IPv4 and IPv6. An endpoint keeps only the pod IPs of the slice's family, and a pod with
///   none is left out of that family's slices.
/// - Conditions: `serving` = the pod is Ready; `terminating` = it has a deletionTimestamp;
///   `ready` = `publishNotReadyAddresses || (serving && !terminating)`. The real controller
///   does not force `serving` under `publishNotReadyAddresses` (the lesson's miniproxy does):
///   `serving` always reports the pod's own readiness.
/// - `hostname` is the pod's `spec.hostname` when its `spec.subdomain` is the Service's name;
///   `nodeName` is copied; `targetRef` names the pod. `zone` comes from the Node's
///   `topology.kubernetes.io/zone` label in the real controller; Nodes are not part of the
///   model, so it stays unset.
/// - Ports are resolved per pod, in the Service's port order: a numeric `targetPort` as is, a
///   named one as the first container port (containers, then sidecar init containers) with the
///   same name and protocol. A port that does not resolve is left out of that pod's list; this
///   is how a renamed container port puts pods into a slice without the port (the "payments"
///   incident).
/// - Endpoints are grouped by their resolved port list, and each group is cut into slices of
///   at most [`MAX_ENDPOINTS_PER_SLICE`]. When an address type would get no slice at all (no
///   pod selected, or none with an IP of that family), it gets one empty placeholder slice with
///   no ports, as the real controller creates per address type.
/// - Labels: the Service's labels (minus the reserved keys below), [`LABEL_HEADLESS`] when the
///   Service has no ClusterIP, `kubernetes.io/service-name`, and [`LABEL_MANAGED_BY`] =
///   [`CONTROLLER_NAME`].
///
/// What differs from the real controller, on purpose, is only what it leaves to chance:
///
/// - Names. The real controller uses `generateName: <service>-` (random suffix). Here a slice is
///   named `<service>-<ipv4|ipv6>-<n>`, `n` counting from 0 per address type in output order.
/// - Order. The real controller fills slices from a hash set. Here endpoints are ordered by
///   (first address of the slice's family, pod name), groups appear in the order of their first
///   endpoint, IPv4 slices come before IPv6 ones.
pub fn reconcile_slices<'a>(
    service: &Service,
    pods: impl IntoIterator<Item = &'a Pod>,
) -> Vec<EndpointSlice> {
    let Some(selector) = &service.selector else {
        return Vec::new();
    };
    if service.service_type == ServiceType::ExternalName {
        return Vec::new();
    }

    let selected: Vec<&Pod> = pods
        .into_iter()
        .filter(|pod| pod.key.namespace == service.key.namespace)
        .filter(|pod| selects(selector, pod.labels()))
        .filter(|pod| !pod.is_finished() && !pod.ips.is_empty())
        .collect();

    let labels = slice_labels(service);
    let mut slices = Vec::new();
    for address_type in address_types(service) {
        let mut endpoints: Vec<(Vec<EndpointPort>, Endpoint)> = selected
            .iter()
            .filter_map(|pod| {
                let endpoint = pod_to_endpoint(service, pod, address_type)?;
                Some((endpoint_ports(service, pod), endpoint))
            })
            .collect();
        endpoints.sort_by(|(_, a), (_, b)| {
            (a.addresses.first(), a.target_pod()).cmp(&(b.addresses.first(), b.target_pod()))
        });

        let mut groups: Vec<(Vec<EndpointPort>, Vec<Endpoint>)> = Vec::new();
        for (ports, endpoint) in endpoints {
            match groups
                .iter_mut()
                .find(|(group_ports, _)| *group_ports == ports)
            {
                Some((_, members)) => members.push(endpoint),
                None => groups.push((ports, vec![endpoint])),
            }
        }

        let new_slice =
            |ports: Vec<EndpointPort>, endpoints: Vec<Endpoint>, n: usize| EndpointSlice {
                key: ObjectKey::new(
                    service.key.namespace.clone(),
                    format!(
                        "{}-{}-{n}",
                        service.key.name,
                        address_type.as_str().to_ascii_lowercase()
                    ),
                ),
                service_name: Some(service.key.name.to_string()),
                labels: labels.clone(),
                address_type,
                endpoints,
                ports,
                trigger_time: None,
            };

        let mut count = 0;
        if groups.is_empty() {
            slices.push(new_slice(Vec::new(), Vec::new(), 0));
            continue;
        }
        for (ports, members) in groups {
            for chunk in members.chunks(MAX_ENDPOINTS_PER_SLICE) {
                slices.push(new_slice(ports.clone(), chunk.to_vec(), count));
                count += 1;
            }
        }
    }
    slices
}

/// Every selector label is present on the pod with the same value (`labels.SelectorFromSet`).
pub fn selects(selector: &Labels, labels: &Labels) -> bool {
    selector
        .iter()
        .all(|(key, value)| labels.get(key) == Some(value))
}

/// `getAddressTypesForService`.
fn address_types(service: &Service) -> Vec<AddressType> {
    let mut types: Vec<AddressType> = service
        .ip_families
        .iter()
        .copied()
        .filter(|family| *family != AddressType::Fqdn)
        .collect();
    types.sort();
    types.dedup();
    if !types.is_empty() {
        return types;
    }
    match service.cluster_ips.first() {
        Some(ip) if !service.headless => vec![AddressType::of(*ip)],
        _ => vec![AddressType::IPv4, AddressType::IPv6],
    }
}

/// `setEndpointSliceLabels` for a new slice.
fn slice_labels(service: &Service) -> Labels {
    let mut labels: Labels = service
        .labels
        .iter()
        .filter(|(key, _)| {
            !matches!(
                key.as_str(),
                LABEL_SERVICE_NAME | LABEL_MANAGED_BY | LABEL_HEADLESS
            )
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if service.headless || service.cluster_ips.is_empty() {
        labels.insert(LABEL_HEADLESS.to_owned(), String::new());
    }
    labels.insert(LABEL_SERVICE_NAME.to_owned(), service.key.name.to_string());
    labels.insert(LABEL_MANAGED_BY.to_owned(), CONTROLLER_NAME.to_owned());
    labels
}

/// `podToEndpoint`; `None` when the pod has no IP of `address_type`.
fn pod_to_endpoint(service: &Service, pod: &Pod, address_type: AddressType) -> Option<Endpoint> {
    let addresses: Addresses = pod
        .ips
        .iter()
        .copied()
        .filter(|ip| AddressType::of(*ip) == address_type)
        .collect();
    if addresses.is_empty() {
        return None;
    }
    let serving = pod.ready;
    let terminating = pod.terminating;
    let ready = service.publish_not_ready_addresses || (serving && !terminating);
    let details = pod.details();
    let hostname = details
        .hostname
        .as_ref()
        .filter(|hostname| {
            !hostname.is_empty() && details.subdomain.as_deref() == Some(&*service.key.name)
        })
        .cloned();
    let conditions = EndpointConditions {
        ready: Some(ready),
        serving: Some(serving),
        terminating: Some(terminating),
    };
    let mut endpoint = Endpoint::new(addresses, conditions).with_details(EndpointDetails {
        node_name: details.node_name.clone(),
        zone: None,
        target_pod: Some((&*pod.key.name).into()),
    });
    endpoint.hostname = hostname;
    Some(endpoint)
}

/// `getEndpointPorts`: the Service's ports that resolve in `pod`.
fn endpoint_ports(service: &Service, pod: &Pod) -> Vec<EndpointPort> {
    service
        .ports
        .iter()
        .filter_map(|port| {
            Some(EndpointPort {
                name: port.name.clone(),
                protocol: port.protocol,
                port: Some(resolve_target_port(port, pod)?),
            })
        })
        .collect()
}

/// `FindPort`: a number as is; a name looked up among the pod's container ports with the same
/// name and protocol.
pub fn resolve_target_port(port: &ServicePort, pod: &Pod) -> Option<u16> {
    match &port.target_port {
        TargetPort::Number(number) => Some(*number),
        TargetPort::Name(name) => pod
            .details()
            .container_ports
            .iter()
            .find(|candidate| candidate.name == *name && candidate.protocol == port.protocol)
            .map(|candidate| candidate.port),
    }
}

#[cfg(test)]
mod tests;
