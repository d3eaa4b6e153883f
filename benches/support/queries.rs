//! The query mix of the benchmarks, drawn from the objects a server is loaded with.
//!
//! The names come from clusterdns's own object model (so any `kubectl get -o json` dump
//! works, not only generated ones), and each is put in one category:
//!
//! | category      | share | example |
//! | ---           | ---   | --- |
//! | ClusterIP A   | 45 %  | `web.shop.svc.cluster.local A` |
//! | headless A    | 10 %  | `db.shop.svc.cluster.local A` |
//! | SRV           | 10 %  | `_http._tcp.web.shop.svc.cluster.local SRV` |
//! | endpoint name | 12 %  | `db-0.db.shop.svc.cluster.local A`, `10-244-1-5.web.shop.svc.cluster.local A` |
//! | PTR           | 13 %  | `20.0.96.10.in-addr.arpa PTR` (ClusterIPs and endpoint addresses) |
//! | NXDOMAIN      | 10 %  | what `ndots:5` and the search path make of names that are not in the zone |
//!
//! The NXDOMAIN names are the ones a pod's stub resolver really sends (search list
//! `<ns>.svc.<zone> svc.<zone> <zone>`): an external name with fewer than five dots is tried
//! under each search domain first (`api.partner.example.com.shop.svc.cluster.local`), and
//! so is a cluster name written without its trailing dot
//! (`web.shop.svc.cluster.local.svc.cluster.local`).

use std::net::IpAddr;

use clusterdns::model::{Cluster, Service};

use super::synth::Rng;

/// What a query asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Category {
    ClusterIp,
    Headless,
    Srv,
    Endpoint,
    Ptr,
    NxDomain,
}

impl Category {
    pub(crate) const ALL: [Self; 6] = [
        Self::ClusterIp,
        Self::Headless,
        Self::Srv,
        Self::Endpoint,
        Self::Ptr,
        Self::NxDomain,
    ];

    /// The share of the mix, per mille.
    pub(crate) fn weight(self) -> usize {
        match self {
            Self::ClusterIp => 450,
            Self::Headless => 100,
            Self::Srv => 100,
            Self::Endpoint => 120,
            Self::Ptr => 130,
            Self::NxDomain => 100,
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::ClusterIp => "ClusterIP A",
            Self::Headless => "headless A",
            Self::Srv => "SRV",
            Self::Endpoint => "endpoint name A",
            Self::Ptr => "PTR",
            Self::NxDomain => "NXDOMAIN (search path)",
        }
    }
}

/// One question: a name in presentation form (no final dot) and a type mnemonic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Query {
    pub(crate) name: String,
    pub(crate) qtype: &'static str,
    pub(crate) category: Category,
}

/// External names a workload resolves, sent through the search path first.
const EXTERNAL: &[&str] = &[
    "api.partner.example.com",
    "login.example.net",
    "storage.example.org",
    "registry.example.com",
    "hooks.example.io",
];

/// Every name of each category the objects give.
#[derive(Debug, Default)]
pub(crate) struct Candidates {
    pub(crate) cluster_ip: Vec<Query>,
    pub(crate) headless: Vec<Query>,
    pub(crate) srv: Vec<Query>,
    pub(crate) endpoint: Vec<Query>,
    pub(crate) ptr: Vec<Query>,
    /// `(service, namespace)` of every Service, for the search-path names.
    services: Vec<(String, String)>,
    zone: String,
}

impl Candidates {
    /// The names the *kubernetes* plugin answers for `cluster` in `zone` (for example
    /// `cluster.local`), with the default options (no `endpoint_pod_names`).
    pub(crate) fn new(cluster: &Cluster, zone: &str) -> Self {
        let mut out = Self {
            zone: zone.to_owned(),
            ..Self::default()
        };
        let query = |name: String, qtype, category| Query {
            name,
            qtype,
            category,
        };
        for service in cluster.services.values() {
            let key = &service.key;
            let base = format!("{}.{}.svc.{zone}", key.name, key.namespace);
            out.services
                .push((key.name.to_string(), key.namespace.to_string()));
            if service.external_name.is_some() {
                continue;
            }
            let ready = ready_endpoints(cluster, service);
            let answers = if service.headless {
                if !ready.is_empty() {
                    out.headless
                        .push(query(base.clone(), "A", Category::Headless));
                }
                !ready.is_empty()
            } else if service.cluster_ips.iter().any(IpAddr::is_ipv4) {
                out.cluster_ip
                    .push(query(base.clone(), "A", Category::ClusterIp));
                for ip in &service.cluster_ips {
                    out.ptr.push(query(reverse(*ip), "PTR", Category::Ptr));
                }
                true
            } else {
                false
            };
            if answers {
                for port in service.ports.iter().filter(|port| !port.name.is_empty()) {
                    out.srv.push(query(
                        format!("_{}._{}.{base}", port.name, port.protocol.lower()),
                        "SRV",
                        Category::Srv,
                    ));
                }
            }
            for (label, ip) in ready {
                if ip.is_ipv4() {
                    out.endpoint
                        .push(query(format!("{label}.{base}"), "A", Category::Endpoint));
                }
                out.ptr.push(query(reverse(ip), "PTR", Category::Ptr));
            }
        }
        out.ptr.sort_by(|a, b| a.name.cmp(&b.name));
        out.ptr.dedup();
        out
    }

    /// `count` questions in the mix's shares, drawn uniformly within each category.
    /// Categories with no names are left out (their share goes to the others).
    pub(crate) fn mix(&self, count: usize, seed: u64) -> Vec<Query> {
        let mut rng = Rng::new(seed);
        let present: Vec<Category> = Category::ALL
            .into_iter()
            .filter(|&category| category == Category::NxDomain || !self.of(category).is_empty())
            .collect();
        let total: usize = present.iter().map(|category| category.weight()).sum();
        (0..count)
            .map(|_| {
                let mut roll = rng.below(total);
                let category = present
                    .iter()
                    .copied()
                    .find(|category| {
                        let hit = roll < category.weight();
                        roll = roll.saturating_sub(category.weight());
                        hit
                    })
                    .unwrap_or(Category::NxDomain);
                self.draw(category, &mut rng)
            })
            .collect()
    }

    /// The names of one category (NXDOMAIN names are made on demand by [`Self::draw`]).
    pub(crate) fn of(&self, category: Category) -> &[Query] {
        match category {
            Category::ClusterIp => &self.cluster_ip,
            Category::Headless => &self.headless,
            Category::Srv => &self.srv,
            Category::Endpoint => &self.endpoint,
            Category::Ptr => &self.ptr,
            Category::NxDomain => &[],
        }
    }

    /// One question of `category`.
    pub(crate) fn draw(&self, category: Category, rng: &mut Rng) -> Query {
        if category != Category::NxDomain {
            let names = self.of(category);
            return names[rng.below(names.len())].clone();
        }
        let zone = &self.zone;
        let (service, namespace) = match self.services.len() {
            0 => ("web".to_owned(), "default".to_owned()),
            n => self.services[rng.below(n)].clone(),
        };
        // The client's own namespace, where the search list starts.
        let client = match self.services.len() {
            0 => "default".to_owned(),
            n => self.services[rng.below(n)].1.clone(),
        };
        let external = EXTERNAL[rng.below(EXTERNAL.len())];
        let name = match rng.below(7) {
            0 => format!("{external}.{client}.svc.{zone}"),
            1 => format!("{external}.svc.{zone}"),
            2 => format!("{external}.{zone}"),
            3 => format!("{service}.{namespace}.svc.{zone}.{client}.svc.{zone}"),
            4 => format!("{service}.{namespace}.svc.{zone}.svc.{zone}"),
            5 => format!("{service}.{namespace}.svc.{zone}.{zone}"),
            // A short `service.namespace` name tried in the client's namespace first.
            _ => format!("{service}.{namespace}.{client}.svc.{zone}"),
        };
        Query {
            name,
            qtype: if rng.below(2) == 0 { "A" } else { "AAAA" },
            category: Category::NxDomain,
        }
    }
}

/// The ready addresses of a Service's slices with their DNS labels (hostname, else the
/// dashed address), de-duplicated.
fn ready_endpoints(cluster: &Cluster, service: &Service) -> Vec<(String, IpAddr)> {
    let mut out: Vec<(String, IpAddr)> = Vec::new();
    for slice in cluster.slices_of(&service.key) {
        for endpoint in &slice.endpoints {
            if !endpoint.conditions.ready() {
                continue;
            }
            for ip in &endpoint.addresses {
                let label = endpoint
                    .hostname
                    .as_deref()
                    .map_or_else(|| clusterdns::zone::dashed_ip(*ip), str::to_owned);
                if !out.iter().any(|(l, i)| *l == label && i == ip) {
                    out.push((label, *ip));
                }
            }
        }
    }
    out
}

/// The reverse name of an address, without the final dot.
pub(crate) fn reverse(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            format!("{d}.{c}.{b}.{a}.in-addr.arpa")
        }
        IpAddr::V6(v6) => {
            let mut out = String::with_capacity(72);
            for byte in v6.octets().iter().rev() {
                out.push(char::from_digit(u32::from(byte & 0x0f), 16).unwrap_or('0'));
                out.push('.');
                out.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
                out.push('.');
            }
            out.push_str("ip6.arpa");
            out
        }
    }
}
