//! The reverse zones: a PTR for every ClusterIP and every ready endpoint address (CoreDNS
//! `plugin/kubernetes/reverse.go`).

use std::collections::HashSet;
use std::net::IpAddr;

use super::Scope;
use crate::codes::rtype;
use crate::name::{MAX_LABEL_LEN, MAX_NAME_LEN, WireName, suffix_offset};
use crate::zone::names::ReverseName;
use crate::zone::records::{self, View};
use crate::zone::rrset;
use crate::zone::writer::NameWriter;

/// Whether a served zone is a reverse zone (under `in-addr.arpa.` or `ip6.arpa.`).
pub(super) fn is_reverse(origin: &WireName) -> bool {
    ["in-addr.arpa.", "ip6.arpa."]
        .iter()
        .any(|suffix| WireName::from_dotted(suffix).is_ok_and(|suffix| origin.is_within(&suffix)))
}

/// PTR records in a reverse zone: a ClusterIP answers with its Service (the first one, in
/// namespace/name order); any other address with one PTR per (endpoint name, Service).
///
/// Written straight into the writer (a full build holds every name there already; a map of
/// the targets by address beside it was a fifth of the build's high mark).
pub(super) fn add_reverse(
    b: &mut NameWriter,
    zone: &WireName,
    view: &View<'_>,
    scope: &Scope<'_>,
    primary: &WireName,
) {
    let ttl = b.ttl;
    let wanted = |ip: &IpAddr| scope.only_ips.is_none_or(|only| only.contains(ip));
    let mut cluster_ips: HashSet<IpAddr> = HashSet::new();
    for service in &scope.ptr_services {
        let key = &service.key;
        let Ok(target) = primary.prepend_all([&*key.name, &*key.namespace, "svc"]) else {
            continue;
        };
        for ip in service.cluster_ips.iter().filter(|ip| wanted(ip)) {
            if cluster_ips.insert(*ip) {
                let name = rrset::reverse_name(*ip);
                if name.is_within(zone) {
                    b.set(&name, rtype::PTR, ttl).push(target.as_bytes());
                }
            }
        }
    }
    for slice in &view.slices {
        let Some(service) = slice.service_name.as_deref() else {
            continue;
        };
        // The targets' rest: the Service's name, one copy for all its endpoints.
        let Ok(rest) = primary.prepend_all([service, &*slice.key.namespace, "svc"]) else {
            continue;
        };
        let rest = b.suffix(&rest);
        for address in records::ready_addresses(slice, view.pod_names) {
            if cluster_ips.contains(&address.ip) || !wanted(&address.ip) {
                continue;
            }
            let name = ReverseName::of(address.ip);
            let label = address.label();
            if suffix_offset(name.as_bytes(), zone.as_bytes()).is_none()
                || label.is_empty()
                || label.len() > MAX_LABEL_LEN
                || 1 + label.len() + rest.len() > MAX_NAME_LEN
            {
                continue;
            }
            b.endpoint_ptr(name.as_bytes(), address.ip, &label, &rest);
        }
    }
}
