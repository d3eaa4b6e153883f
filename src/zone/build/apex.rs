//! The apex of every served zone: SOA, NS with glue, `ns.dns.<zone>` and
//! `dns-version.<zone>` (CoreDNS `plugin/kubernetes/ns.go` and the `dns-version` record of
//! the specification).

use std::collections::HashSet;
use std::net::IpAddr;

use crate::codes::rtype;
use crate::model::Cluster;
use crate::name::WireName;
use crate::zone::ServedZone;
use crate::zone::records::{self, Filter, View};
use crate::zone::rrset;
use crate::zone::writer::NameWriter;

/// The schema version of the Kubernetes DNS specification implemented.
pub const DNS_SCHEMA_VERSION: &str = "1.1.0";
/// TTL of the `dns-version` TXT record, whatever `ttl` says.
const DNS_VERSION_TTL: u32 = 28800;

/// SOA, NS (with glue), `ns.dns.<zone>` and `dns-version.<zone>`.
pub(super) fn add_apex(b: &mut NameWriter, zone: &ServedZone, servers: &[(WireName, IpAddr)]) {
    let origin = &zone.origin;
    let soa = zone.soa;
    // The SOA is only answered at the apex, where the question is the zone: its names point
    // at the question, so they carry the query's spelling.
    let mut rdata = Vec::with_capacity(40);
    rdata.extend_from_slice(b"\x02ns\x03dns\xc0\x0c\x0ahostmaster\xc0\x0c");
    rdata.extend_from_slice(&soa.tail());
    b.set(origin, rtype::SOA, soa.ttl).push(&rdata);

    let ttl = b.ttl;
    let mut seen = HashSet::new();
    for (name, ip) in servers {
        let mut set = b.set(origin, rtype::NS, ttl);
        if seen.insert(name.clone()) {
            set.push(name.as_bytes());
        }
        set.push_extra_address(name, ttl, *ip);
    }
    if let Ok(ns) = origin.prepend_all(["ns", "dns"]) {
        // The SOA's MNAME exists without addresses too (a server on loopback alone has
        // none): NODATA, as CoreDNS answers it.
        b.touch(&ns);
        for (_, ip) in servers {
            let (rtype, rdata) = rrset::address_rdata(*ip);
            b.set(&ns, rtype, ttl).push(&rdata);
        }
    }
    if let Ok(version) = origin.child("dns-version") {
        b.set(&version, rtype::TXT, DNS_VERSION_TTL)
            .push(&rrset::txt_rdata(DNS_SCHEMA_VERSION));
    }
}

/// CoreDNS `nsAddrs`: the Services whose endpoints hold one of our addresses (their
/// ClusterIPs, or for a headless Service the endpoint names and addresses); failing that,
/// `ns.dns.<zone>` at our own addresses. De-duplicated by address.
pub(super) fn name_servers(
    cluster: &Cluster,
    filter: &Filter<'_, '_>,
    view: &View<'_>,
    zone: &WireName,
    local_ips: &[IpAddr],
) -> Vec<(WireName, IpAddr)> {
    let mut found = Vec::new();
    for local in local_ips {
        for slice in &view.slices {
            let holds_local = slice
                .endpoints
                .iter()
                .any(|e| e.conditions.ready() && e.addresses.contains(local));
            let Some(service) = slice.service_name.as_deref() else {
                continue;
            };
            if !holds_local {
                continue;
            }
            let Some(sv) = filter.find_service(cluster, &slice.key.namespace, service) else {
                continue;
            };
            let Ok(base) = zone.prepend_all([service, &*slice.key.namespace, "svc"]) else {
                continue;
            };
            if sv.headless {
                for address in records::ready_addresses(slice, view.pod_names) {
                    if let Ok(name) = base.child(&address.label()) {
                        found.push((name, address.ip));
                    }
                }
            } else {
                found.extend(sv.cluster_ips.iter().map(|&ip| (base.clone(), ip)));
            }
        }
    }
    if found.is_empty()
        && let Ok(ns) = zone.prepend_all(["ns", "dns"])
    {
        found.extend(local_ips.iter().map(|&ip| (ns.clone(), ip)));
    }
    let mut seen = HashSet::new();
    found.retain(|(_, ip)| seen.insert(*ip));
    found
}
