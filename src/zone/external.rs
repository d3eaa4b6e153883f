//! The names of *k8s_external* (CoreDNS `plugin/k8s_external` and the *kubernetes* plugin's
//! `external.go`): `<svc>.<ns>.<zone>` for the external addresses of Services, built into the
//! snapshot beside the cluster zone, from the same objects, and kept up to date by the same
//! updates.
//!
//! For each external zone:
//!
//! - the apex: SOA (`ns1.<apex>.<zone>`, `hostmaster.<apex>.<zone>`, refresh 7200, retry
//!   1800, expire 86400, minimum and TTL the plugin's `ttl`), NS `ns1.<apex>.<zone>` with
//!   its addresses as glue, `<apex>.<zone>` (NODATA) and `ns1.<apex>.<zone>` (A/AAAA). The
//!   name server's addresses are the external addresses of the Services whose endpoints hold
//!   this server's own addresses (their ready endpoints' addresses for a headless Service
//!   under `headless`), else those own addresses (CoreDNS `nsAddrs`);
//! - every exposed namespace: `<ns>.<zone>` (NODATA);
//! - a Service with external addresses (`spec.externalIPs`, then the load balancer's
//!   ingress IPs), of any type: A/AAAA at `<svc>.<ns>.<zone>`, SRV there for every port and
//!   at `_<port>._<proto>.<svc>.<ns>.<zone>` for each named one, targets the Service's name
//!   with its addresses as glue. As in CoreDNS, SRV records and CNAMEs have the *kubernetes*
//!   plugin's TTL, addresses and glue *k8s_external*'s. A load balancer known only by hostname gives a CNAME to it,
//!   followed through the server for A and AAAA (CoreDNS asks its upstream), and SRV
//!   targets that hostname;
//! - under `headless`, a headless Service without external addresses: its ready endpoints,
//!   exactly as `<svc>.<ns>.svc.<cluster zone>` answers them (A/AAAA, SRV, endpoint names).
//!
//! Only A, AAAA and SRV are answered below the apex: a name that exists is NODATA for every
//! other type. Every name is owned by one Service or one namespace (or the apex), so an
//! update replaces exactly the names of the parts it touched; no empty non-terminals are
//! filled in (CoreDNS answers from the objects, not from a tree of names).

use std::collections::HashSet;
use std::net::IpAddr;

use super::node::Node;
use super::records::{self, Filter, ServiceView, View};
use super::rrset;
use super::shards::Sharded;
use super::writer::NameWriter;
use super::{Answer, Rcode, Run, ServedZone, Soa};
use crate::codes::rtype;
use crate::config::{K8sExternalConfig, KubernetesConfig};
use crate::model::{Cluster, Service};
use crate::name::{WireName, labels, suffix_offset};

/// The external zones of a snapshot, and their names.
#[derive(Debug, Clone)]
pub struct External {
    /// The zones, in configuration order.
    pub(super) zones: Vec<ServedZone>,
    /// `<apex>.<zone>` for each zone, lower case.
    apexes: Vec<WireName>,
    /// Every name, lower-case wire format.
    pub(super) nodes: Sharded<Node>,
}

/// The SOA of the external zones: CoreDNS writes the plugin's `ttl` as both its TTL and its
/// minimum.
pub(crate) fn soa(config: &K8sExternalConfig, serial: u32) -> Soa {
    Soa {
        ttl: config.ttl,
        serial,
        refresh: 7200,
        retry: 1800,
        expire: 86400,
        minimum: config.ttl,
    }
}

/// The zones of `config` with SOA `serial`, and `<apex>.<zone>` for each.
fn served_zones(config: &K8sExternalConfig, serial: u32) -> (Vec<ServedZone>, Vec<WireName>) {
    let apex_label = apex_label(config);
    let mut mname = b"\x03ns1".to_vec();
    mname.extend_from_slice(&apex_label);
    let mut rname = b"\x0ahostmaster".to_vec();
    rname.extend_from_slice(&apex_label);
    let mut zones = Vec::new();
    let mut apexes = Vec::new();
    for zone in &config.zones {
        let Ok(origin) = WireName::from_dotted(&zone.to_ascii()) else {
            continue;
        };
        let Ok(apex) = origin.child(&config.apex) else {
            continue;
        };
        zones.push(ServedZone {
            origin: origin.to_lowercase(),
            reverse: false,
            multicluster: false,
            soa: soa(config, serial),
            soa_prefixes: (mname.clone().into(), rname.clone().into()),
        });
        apexes.push(apex.to_lowercase());
    }
    (zones, apexes)
}

/// The apex label in wire format (length first).
fn apex_label(config: &K8sExternalConfig) -> Vec<u8> {
    let label = config.apex.as_bytes();
    let mut wire = Vec::with_capacity(1 + label.len());
    // The parser allows one label of at most 63 bytes.
    wire.push(label.len().min(63) as u8);
    wire.extend_from_slice(&label[..label.len().min(63)]);
    wire
}

/// Builds the external zones of `config` (none when the block has no *k8s_external*) from
/// the objects `view` leaves visible, with SOA `serial`, for a server at `local_ips`.
pub(crate) fn build(
    cluster: &Cluster,
    config: &KubernetesConfig,
    local_ips: &[IpAddr],
    serial: u32,
    filter: &Filter<'_, '_>,
    view: &View<'_>,
) -> Option<External> {
    let external = config.external.as_ref()?;
    let (zones, apexes) = served_zones(external, serial);
    let namespaces: Vec<&str> = view.exposed.iter().collect();
    let part = Part {
        cluster,
        external,
        local_ips,
        cluster_ttl: config.ttl,
        filter,
        view,
        namespaces: &namespaces,
    };
    let nodes = part.build(&zones, &apexes);
    Some(External {
        zones,
        apexes,
        nodes: Sharded::from_entries(nodes.into_iter()),
    })
}

/// What one build of external names covers: the apex of every zone always, the Services of
/// `view`, the namespaces `namespaces`.
pub(crate) struct Part<'p, 'c> {
    /// The objects.
    pub(crate) cluster: &'c Cluster,
    /// The directive.
    pub(crate) external: &'p K8sExternalConfig,
    /// This server's addresses.
    pub(crate) local_ips: &'p [IpAddr],
    /// The *kubernetes* plugin's `ttl`.
    pub(crate) cluster_ttl: u32,
    /// What the *kubernetes* options leave visible.
    pub(crate) filter: &'p Filter<'c, 'p>,
    /// The Services to build, and the slices that may hold this server's addresses.
    pub(crate) view: &'p View<'c>,
    /// The exposed namespaces to build.
    pub(crate) namespaces: &'p [&'c str],
}

impl Part<'_, '_> {
    /// The nodes of this part in `zones` (whose names-server names are `apexes`).
    pub(crate) fn build(&self, zones: &[ServedZone], apexes: &[WireName]) -> Vec<Node> {
        let mut b = NameWriter::for_part(self.external.ttl);
        // CoreDNS writes SRV records and CNAMEs with the *kubernetes* plugin's TTL.
        b.srv_ttl = self.cluster_ttl;
        let servers = self.name_servers();
        for (zone, apex) in zones.iter().zip(apexes) {
            add_apex(&mut b, zone, apex, &servers);
            for namespace in self.namespaces {
                if let Ok(name) = zone.origin.child(namespace) {
                    b.touch(&name);
                }
            }
            for sv in &self.view.services {
                add_service(&mut b, &zone.origin, sv, self.external.headless);
            }
        }
        b.finish()
    }

    /// The nodes of this part in the zones of `external`.
    pub(crate) fn build_in(&self, external: &External) -> Vec<Node> {
        self.build(&external.zones, &external.apexes)
    }

    /// CoreDNS `nsAddrs` for an external zone: the external addresses of the Services whose
    /// ready endpoints hold one of this server's addresses (their ready endpoints' addresses
    /// for a headless Service under `headless`); when no endpoint holds one, those addresses
    /// themselves. De-duplicated, in order.
    fn name_servers(&self) -> Vec<IpAddr> {
        let mut found = Vec::new();
        let mut any_endpoint = false;
        for local in self.local_ips {
            for slice in &self.view.slices {
                let holds_local = slice
                    .endpoints
                    .iter()
                    .any(|e| e.conditions.ready() && e.addresses.contains(local));
                let Some(name) = slice.service_name.as_deref() else {
                    continue;
                };
                if !holds_local {
                    continue;
                }
                any_endpoint = true;
                let Some(service) =
                    self.filter
                        .find_service(self.cluster, &slice.key.namespace, name)
                else {
                    continue;
                };
                if self.external.headless && service.headless {
                    found.extend(records::ready_addresses(slice, false).map(|a| a.ip));
                } else {
                    found.extend(external_addresses(service));
                }
            }
        }
        if !any_endpoint {
            found.extend(self.local_ips.iter().copied());
        }
        let mut seen = HashSet::new();
        found.retain(|ip| seen.insert(*ip));
        found
    }
}

/// `spec.externalIPs`, then the load balancer's ingress IPs (CoreDNS's `ExternalIPs`).
fn external_addresses(service: &Service) -> impl Iterator<Item = IpAddr> + '_ {
    service
        .external_ips
        .iter()
        .chain(&service.load_balancer_ips)
        .copied()
}

/// SOA and NS (with glue) at the apex, `<apex>.<zone>` and `ns1.<apex>.<zone>`.
fn add_apex(b: &mut NameWriter, zone: &ServedZone, apex: &WireName, servers: &[IpAddr]) {
    let origin = &zone.origin;
    let soa = zone.soa;
    let (mname, rname) = zone.soa_prefixes();
    // Answered only at the apex, where the question is the zone: the names point at it.
    let mut rdata = Vec::with_capacity(mname.len() + rname.len() + 24);
    rdata.extend_from_slice(mname);
    rdata.extend_from_slice(b"\xc0\x0c");
    rdata.extend_from_slice(rname);
    rdata.extend_from_slice(b"\xc0\x0c");
    rdata.extend_from_slice(&soa.tail());
    b.set(origin, rtype::SOA, soa.ttl).push(&rdata);
    b.touch(apex);
    let Ok(ns) = apex.child("ns1") else {
        return;
    };
    let ttl = b.ttl;
    let mut set = b.set(origin, rtype::NS, ttl);
    set.push(ns.as_bytes());
    for ip in servers {
        set.push_extra_address(&ns, ttl, *ip);
    }
    b.touch(&ns);
    for ip in servers {
        let (rtype, rdata) = rrset::address_rdata(*ip);
        b.set(&ns, rtype, ttl).push(&rdata);
    }
}

/// The names of one Service under `zone`.
fn add_service(b: &mut NameWriter, zone: &WireName, sv: &ServiceView<'_>, headless: bool) {
    let service = sv.service;
    let Ok(base) = zone.prepend_all([&*service.key.name, &*service.key.namespace]) else {
        tracing::debug!(service = %service.key, "name too long for DNS; skipped");
        return;
    };
    let addresses: Vec<IpAddr> = external_addresses(service).collect();
    let hosts: Vec<WireName> = service
        .load_balancer_hostnames
        .iter()
        .filter_map(|host| {
            let host = host.strip_suffix('.').unwrap_or(host);
            WireName::from_dotted(host)
                .ok()
                .map(|name| name.to_lowercase())
        })
        .collect();
    if addresses.is_empty() && hosts.is_empty() {
        if headless && service.headless {
            records::add_headless(b, &base, sv, false);
        }
        return;
    }
    // Every port, then each named one alone; a Service without ports has addresses only
    // (CoreDNS's port -1 sentinel: counted, never an SRV).
    let every: Vec<Option<u16>> = if service.ports.is_empty() {
        vec![None]
    } else {
        service.ports.iter().map(|port| Some(port.port)).collect()
    };
    add_entries(b, &base, &base, &addresses, &hosts, &every);
    for port in service.ports.iter().filter(|port| !port.name.is_empty()) {
        let Ok(name) = base.prepend_all([
            format!("_{}", port.name.to_ascii_lowercase()).as_str(),
            format!("_{}", port.protocol.lower()).as_str(),
        ]) else {
            continue;
        };
        add_entries(b, &name, &base, &addresses, &hosts, &[Some(port.port)]);
    }
}

/// The records at `owner` for `ports` of the Service at `base`: A/AAAA of `addresses` (a
/// CNAME to the first of `hosts` when there are none), and one SRV per (target, port) with
/// priority 0 and weight floor(100 / entries), an entry being an (address or host, port)
/// pair; glue per (target, address).
fn add_entries(
    b: &mut NameWriter,
    owner: &WireName,
    base: &WireName,
    addresses: &[IpAddr],
    hosts: &[WireName],
    ports: &[Option<u16>],
) {
    let (ttl, srv_ttl) = (b.ttl, b.srv_ttl);
    let mut seen = HashSet::new();
    for ip in addresses {
        if seen.insert(*ip) {
            let (rtype, rdata) = rrset::address_rdata(*ip);
            b.set(owner, rtype, ttl).push(&rdata);
        }
    }
    if addresses.is_empty()
        && let Some(host) = hosts.first()
    {
        b.set(owner, rtype::CNAME, srv_ttl).push(host.as_bytes());
        b.cname(owner, host.clone());
    }
    let entries = (addresses.len() + hosts.len()) * ports.len();
    if entries == 0 || ports.iter().all(Option::is_none) {
        return;
    }
    let weight = (100 / entries).max(1) as u16;
    let mut set = b.set(owner, rtype::SRV, srv_ttl);
    let mut srv_seen = HashSet::new();
    for port in ports.iter().flatten() {
        if !addresses.is_empty() && srv_seen.insert((base, *port)) {
            set.push(&rrset::srv_rdata(0, weight, *port, base));
        }
        for host in hosts {
            if srv_seen.insert((host, *port)) {
                set.push(&rrset::srv_rdata(0, weight, *port, host));
            }
        }
    }
    let mut glue_seen = HashSet::new();
    for ip in addresses {
        if glue_seen.insert(*ip) {
            set.push_extra_address(base, ttl, *ip);
        }
    }
}

impl External {
    /// A new serial for every zone's SOA (`config` is the directive the zones came from).
    pub(super) fn set_serial(&mut self, config: &K8sExternalConfig, serial: u32) {
        for zone in &mut self.zones {
            zone.soa = soa(config, serial);
        }
    }

    /// Replaces the names of an update's parts: `before` were its names before the change,
    /// `after` its nodes after it. An unchanged node keeps its shard shared.
    pub(super) fn replace(&mut self, before: &HashSet<Box<[u8]>>, after: Vec<Node>) {
        let kept: HashSet<Box<[u8]>> = after.iter().map(|node| node.name().into()).collect();
        for node in after {
            if self.nodes.get(node.name()) != Some(&node) {
                self.nodes.insert(node);
            }
        }
        for name in before.difference(&kept) {
            self.nodes.remove(&name[..]);
        }
    }

    /// The external zones, in configuration order.
    pub fn zones(&self) -> &[ServedZone] {
        &self.zones
    }

    /// Number of names held.
    pub fn name_count(&self) -> usize {
        self.nodes.len()
    }

    /// The index of the longest external zone `qname` (lower-case wire) falls in.
    fn zone_of(&self, qname: &[u8]) -> Option<usize> {
        self.zones
            .iter()
            .enumerate()
            .filter(|(_, zone)| suffix_offset(qname, zone.origin.as_bytes()).is_some())
            .max_by_key(|(_, zone)| zone.origin.as_bytes().len())
            .map(|(index, _)| index)
    }

    /// Whether `qname` is the apex of external zone `zone` or at or below its `<apex>` name.
    fn at_apex(&self, zone: usize, qname: &[u8]) -> bool {
        qname == self.zones[zone].origin.as_bytes()
            || self
                .apexes
                .get(zone)
                .is_some_and(|apex| suffix_offset(qname, apex.as_bytes()).is_some())
    }

    /// Whether an NXDOMAIN for `qname` in `zone` may fall through: it is about a Service, not
    /// the apex's names (CoreDNS falls through from its Service lookup only).
    pub fn may_fall_through(&self, zone: usize, qname: &[u8]) -> bool {
        !self.at_apex(zone, qname)
    }

    /// Answers `qtype` for `qname`, a lower-case wire name; `None` outside every external
    /// zone. An A or AAAA question at a load balancer's hostname gives the CNAME and the
    /// target to ask through the server.
    pub fn lookup(&self, qname: &[u8], qtype: u16) -> Option<Answer<'_>> {
        let zone = self.zone_of(qname)?;
        let node = self.nodes.get(qname).or_else(|| {
            let key = self.srv_alias(zone, qname)?;
            self.nodes.get(&key[..])
        });
        let Some(node) = node else {
            return Some(Answer::new(Rcode::NxDomain, zone));
        };
        if !self.at_apex(zone, qname) && !matches!(qtype, rtype::A | rtype::AAAA | rtype::SRV) {
            return Some(Answer::new(Rcode::NoError, zone));
        }
        if let Some(target) = node.cname()
            && matches!(qtype, rtype::A | rtype::AAAA)
        {
            let mut answer = Answer::new(Rcode::NoError, zone);
            if let Some(set) = node.rrset(rtype::CNAME) {
                answer.answer.push(Run::answers(set));
                answer.chase = Some(target);
            }
            return Some(answer);
        }
        Some(match node.rrset(qtype) {
            Some(set) => Answer::from_set(zone, set),
            None => Answer::new(Rcode::NoError, zone),
        })
    }

    /// CoreDNS strips one leading underscore from the port and protocol labels: the key of
    /// `_<port>._<proto>.<svc>.<ns>.<zone>` for a four-label name lacking one.
    fn srv_alias(&self, zone: usize, qname: &[u8]) -> Option<Vec<u8>> {
        let end = suffix_offset(qname, self.zones[zone].origin.as_bytes())?;
        let found: Vec<&[u8]> = labels(&qname[..end]).collect();
        let [port, proto, _, _] = found.as_slice() else {
            return None;
        };
        if port.starts_with(b"_") && proto.starts_with(b"_") {
            return None;
        }
        let mut key = Vec::with_capacity(qname.len() + 2);
        for label in [port, proto] {
            let underscore = !label.starts_with(b"_");
            key.push(label.len() as u8 + u8::from(underscore));
            if underscore {
                key.push(b'_');
            }
            key.extend_from_slice(label);
        }
        key.extend_from_slice(&qname[2 + port.len() + proto.len()..]);
        (key.len() <= crate::name::MAX_NAME_LEN).then_some(key)
    }
}

#[cfg(test)]
mod tests;
