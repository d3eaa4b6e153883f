//! Pods: the `<ip>.<ns>.pod.<zone>` names `pods verified` builds, the namespaces whose
//! names `pods insecure` answers, and the namespace of each client address (*autopath*).

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;

use crate::config::{KubernetesConfig, PodMode};
use crate::model::{Pod, PodPhase};
use crate::name::WireName;
use crate::zone::map::Map;
use crate::zone::records::{Exposed, Filter, View};
use crate::zone::rrset;
use crate::zone::writer::NameWriter;

/// The namespaces whose `<ip>.<ns>.pod.<zone>` names `pods insecure` answers.
pub(crate) fn pod_namespaces(
    config: &KubernetesConfig,
    filter: &Filter<'_, '_>,
) -> HashSet<Box<[u8]>, ahash::RandomState> {
    match config.pods {
        PodMode::Insecure => filter
            .exposed
            .iter()
            .map(|ns| ns.to_ascii_lowercase().into_bytes().into_boxed_slice())
            .collect(),
        _ => HashSet::default(),
    }
}

/// The namespace of every running pod's addresses (*autopath* finds a client's namespace
/// from its address). Host-network pods share the node's address and terminating pods may
/// have handed theirs on: neither is a client; an address claimed in two namespaces maps to
/// `None`.
pub(crate) fn client_namespaces<'p>(
    pods: impl IntoIterator<Item = &'p Pod>,
    exposed: &Exposed<'_>,
) -> Map<IpAddr, Option<Arc<str>>> {
    let mut clients: Map<IpAddr, Option<Arc<str>>> = Map::default();
    for pod in pods {
        if pod.phase != PodPhase::Running
            || pod.terminating
            || pod.host_network
            || !exposed.contains(&pod.key.namespace)
        {
            continue;
        }
        for ip in &pod.ips {
            // The key's namespace is interned: every address of a namespace shares it.
            let namespace = &pod.key.namespace;
            clients
                .entry(*ip)
                .and_modify(|seen| {
                    if seen.as_deref() != Some(&**namespace) {
                        *seen = None;
                    }
                })
                .or_insert_with(|| Some(Arc::clone(namespace)));
        }
    }
    clients
}

/// The first label of a pod's name under `pods verified`: its address with dashes.
pub(crate) fn pod_label(ip: IpAddr) -> String {
    ip.to_string().replace(['.', ':'], "-")
}

/// `pods verified`: a name per running or pending pod, from its `status.podIP` spelled with
/// dashes (the only spelling CoreDNS's string comparison accepts).
pub(super) fn add_verified_pods(
    b: &mut NameWriter,
    zone: &WireName,
    view: &View<'_>,
    config: &KubernetesConfig,
    pods: &[&Pod],
) {
    let ttl = b.ttl;
    for pod in pods {
        if !matches!(pod.phase, PodPhase::Pending | PodPhase::Running)
            || !view.exposed.contains(&pod.key.namespace)
            || !config
                .labels
                .as_ref()
                .is_none_or(|s| s.matches(pod.labels()))
        {
            continue;
        }
        let Some(ip) = pod.primary_ip() else { continue };
        if let Ok(name) = zone.prepend_all([pod_label(ip).as_str(), &*pod.key.namespace, "pod"]) {
            let (rtype, rdata) = rrset::address_rdata(ip);
            b.set(&name, rtype, ttl).push(&rdata);
        }
    }
}
