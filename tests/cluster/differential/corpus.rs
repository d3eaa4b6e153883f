//! The questions of the differential check, generated from the cluster's objects as kubectl
//! prints them (`kubectl get ns,svc,endpointslices,pods -A -o json`), read here without
//! clusterdns's own model: every name the zone has, each asked for every common type; each
//! Service's, port's and endpoint's name with one label wrong; every address's PTR; pod names;
//! names outside the zone; some in mixed case. Each question is then asked in one of the
//! [`VARIANTS`] (UDP or TCP, with or without EDNS, DO set or not).

use std::collections::BTreeSet;
use std::net::IpAddr;

use hickory_proto::rr::RecordType;
use serde_json::Value;

/// The common types every name is asked for.
pub(super) const TYPES: [RecordType; 9] = [
    RecordType::A,
    RecordType::AAAA,
    RecordType::SRV,
    RecordType::PTR,
    RecordType::CNAME,
    RecordType::TXT,
    RecordType::NS,
    RecordType::SOA,
    RecordType::ANY,
];

/// One question and what kind of name it is (the report groups differences by it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Question {
    pub name: String,
    pub qtype: RecordType,
    pub category: &'static str,
    /// Asked in mixed case (a copy of a question in lower case).
    pub mixed: bool,
}

/// How a question travels: the transport, and the EDNS payload (and DO) if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Variant {
    pub tcp: bool,
    pub edns: Option<u16>,
    pub dnssec_ok: bool,
}

/// The variants, in the order questions take them in turn.
pub(super) const VARIANTS: [Variant; 6] = [
    Variant {
        tcp: false,
        edns: Some(1232),
        dnssec_ok: false,
    },
    Variant {
        tcp: false,
        edns: None,
        dnssec_ok: false,
    },
    Variant {
        tcp: true,
        edns: None,
        dnssec_ok: false,
    },
    Variant {
        tcp: false,
        edns: Some(4096),
        dnssec_ok: true,
    },
    Variant {
        tcp: true,
        edns: Some(1232),
        dnssec_ok: true,
    },
    Variant {
        tcp: false,
        edns: Some(512),
        dnssec_ok: false,
    },
];

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.tcp { "tcp" } else { "udp" })?;
        match self.edns {
            Some(payload) => write!(f, ", edns {payload}")?,
            None => f.write_str(", no edns")?,
        }
        if self.dnssec_ok {
            f.write_str(", do")?;
        }
        Ok(())
    }
}

/// What the corpus is drawn from: the namespaces it covers (the cluster's others are left
/// alone, other tests may be changing them) and the zone.
pub(super) struct Scope<'a> {
    pub namespaces: &'a [String],
    pub zone: &'a str,
}

/// Every question for the objects of `dump` in `scope`, sorted, each once.
pub(super) fn questions(dump: &Value, scope: &Scope<'_>) -> Vec<Question> {
    let mut out = BTreeSet::new();
    let zone = scope.zone;
    let mut ask = |name: String, types: &[RecordType], category: &'static str| {
        for &qtype in types {
            out.insert(Question {
                name: name.clone(),
                qtype,
                category,
                mixed: false,
            });
        }
    };
    let few = [
        RecordType::A,
        RecordType::AAAA,
        RecordType::SRV,
        RecordType::TXT,
    ];
    let items = dump["items"].as_array().cloned().unwrap_or_default();
    let in_scope = |item: &Value| {
        let namespace = item["metadata"]["namespace"].as_str().unwrap_or_default();
        scope.namespaces.iter().any(|n| n == namespace)
    };

    // The zone's own names.
    ask(format!("{zone}."), &TYPES, "apex");
    ask(format!("dns-version.{zone}."), &TYPES, "dns-version");
    ask(format!("ns.dns.{zone}."), &TYPES, "ns.dns");
    ask(format!("dns.{zone}."), &few, "ns.dns");
    ask(format!("svc.{zone}."), &TYPES, "svc");
    ask(format!("pod.{zone}."), &few, "pod");
    ask(format!("kubernetes.default.svc.{zone}."), &TYPES, "service");
    ask(format!("kube-dns.kube-system.svc.{zone}."), &few, "service");
    ask(
        format!("_dns._udp.kube-dns.kube-system.svc.{zone}."),
        &TYPES,
        "port",
    );
    ask(format!("nothing.{zone}."), &few, "wrong label");
    ask(format!("a.b.c.svc.{zone}."), &few, "wrong label");

    let mut addresses: BTreeSet<IpAddr> = BTreeSet::new();
    for namespace in scope.namespaces {
        ask(format!("{namespace}.svc.{zone}."), &TYPES, "namespace");
        ask(format!("{namespace}x.svc.{zone}."), &few, "wrong label");
        ask(format!("{namespace}.pod.{zone}."), &few, "pod");
    }

    for service in items
        .iter()
        .filter(|i| i["kind"] == "Service" && in_scope(i))
    {
        let name = service["metadata"]["name"].as_str().unwrap();
        let namespace = service["metadata"]["namespace"].as_str().unwrap();
        let owner = format!("{name}.{namespace}.svc.{zone}.");
        ask(owner.clone(), &TYPES, "service");
        ask(
            format!("{name}x.{namespace}.svc.{zone}."),
            &few,
            "wrong label",
        );
        ask(
            format!("{name}.{namespace}x.svc.{zone}."),
            &few,
            "wrong label",
        );
        ask(
            format!("{name}.{namespace}.svcx.{zone}."),
            &few,
            "wrong label",
        );
        ask(
            format!("x.{name}.{namespace}.svc.{zone}."),
            &few,
            "wrong label",
        );
        ask(
            format!("a.b.{name}.{namespace}.svc.{zone}."),
            &few,
            "wrong label",
        );
        ask(
            format!("_tcp.{owner}"),
            &[RecordType::SRV, RecordType::A],
            "port",
        );
        for ip in strings(&service["spec"]["clusterIPs"]) {
            if let Ok(ip) = ip.parse() {
                addresses.insert(ip);
            }
        }
        for port in service["spec"]["ports"].as_array().into_iter().flatten() {
            let Some(port_name) = port["name"].as_str().filter(|n| !n.is_empty()) else {
                continue;
            };
            let protocol = port["protocol"]
                .as_str()
                .unwrap_or("TCP")
                .to_ascii_lowercase();
            ask(format!("_{port_name}._{protocol}.{owner}"), &TYPES, "port");
            ask(
                format!("{port_name}.{protocol}.{owner}"),
                &[RecordType::SRV, RecordType::A],
                "port",
            );
            ask(
                format!("_{port_name}x._{protocol}.{owner}"),
                &[RecordType::SRV, RecordType::A],
                "wrong label",
            );
            ask(
                format!("_{port_name}._{protocol}x.{owner}"),
                &[RecordType::SRV, RecordType::A],
                "wrong label",
            );
        }
        if let Some(target) = service["spec"]["externalName"].as_str() {
            ask(
                format!("{}.", target.trim_end_matches('.')),
                &[RecordType::A, RecordType::AAAA],
                "outside",
            );
        }
    }

    for slice in items
        .iter()
        .filter(|i| i["kind"] == "EndpointSlice" && in_scope(i))
    {
        let namespace = slice["metadata"]["namespace"].as_str().unwrap();
        let Some(service) = slice["metadata"]["labels"]["kubernetes.io/service-name"].as_str()
        else {
            continue;
        };
        for endpoint in slice["endpoints"].as_array().into_iter().flatten() {
            let ips = strings(&endpoint["addresses"]);
            for ip in &ips {
                if let Ok(ip) = ip.parse() {
                    addresses.insert(ip);
                }
                let label = match endpoint["hostname"].as_str() {
                    Some(hostname) => hostname.to_owned(),
                    None => dashed(ip),
                };
                let owner = format!("{label}.{service}.{namespace}.svc.{zone}.");
                ask(owner.clone(), &TYPES, "endpoint");
                ask(
                    format!("{label}x.{service}.{namespace}.svc.{zone}."),
                    &few,
                    "wrong label",
                );
                ask(format!("x.{owner}"), &few, "wrong label");
                // The dashed name of an endpoint that has a hostname.
                if endpoint["hostname"].is_string() {
                    ask(
                        format!("{}.{service}.{namespace}.svc.{zone}.", dashed(ip)),
                        &few,
                        "endpoint",
                    );
                }
            }
        }
    }

    for pod in items.iter().filter(|i| i["kind"] == "Pod" && in_scope(i)) {
        let namespace = pod["metadata"]["namespace"].as_str().unwrap();
        let other = scope
            .namespaces
            .iter()
            .find(|n| *n != namespace)
            .map_or("default", String::as_str);
        for ip in pod["status"]["podIPs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|ip| ip["ip"].as_str())
        {
            if let Ok(parsed) = ip.parse() {
                addresses.insert(parsed);
            }
            let types = [
                RecordType::A,
                RecordType::AAAA,
                RecordType::TXT,
                RecordType::ANY,
            ];
            ask(
                format!("{}.{namespace}.pod.{zone}.", dashed(ip)),
                &types,
                "pod",
            );
            ask(format!("{}.{other}.pod.{zone}.", dashed(ip)), &few, "pod");
            ask(
                format!("x.{}.{namespace}.pod.{zone}.", dashed(ip)),
                &few,
                "pod",
            );
        }
    }
    ask(format!("10-250-250-250.default.pod.{zone}."), &few, "pod");
    ask(format!("not-an-ip.default.pod.{zone}."), &few, "pod");

    let reverse = [
        RecordType::PTR,
        RecordType::A,
        RecordType::TXT,
        RecordType::SOA,
    ];
    for ip in &addresses {
        ask(reverse_name(*ip), &reverse, "ptr");
    }
    for name in [
        "in-addr.arpa.",
        "10.in-addr.arpa.",
        "96.10.in-addr.arpa.",
        "ip6.arpa.",
        "254.255.96.10.in-addr.arpa.",
        "1.0.0.127.in-addr.arpa.",
    ] {
        ask(name.to_owned(), &reverse, "reverse");
    }

    for name in [
        "example.com.",
        "www.example.org.",
        "api.partner.example.net.",
        "localhost.",
        "cluster.local.example.com.",
    ] {
        ask(name.to_owned(), &few, "outside");
    }

    let mut questions: Vec<Question> = out.into_iter().collect();
    // Every seventh question in the zone again in mixed case.
    let mixed: Vec<Question> = questions
        .iter()
        .enumerate()
        .filter(|(i, q)| i % 7 == 3 && q.category != "outside")
        .map(|(i, q)| Question {
            name: mixed_case(&q.name, i),
            qtype: q.qtype,
            category: q.category,
            mixed: true,
        })
        .collect();
    questions.extend(mixed);
    questions
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// An address as one label: `10-244-1-5`, `fd00-10-244--5`.
pub(super) fn dashed(ip: &str) -> String {
    ip.replace(['.', ':'], "-")
}

/// The PTR owner of `ip` (in-addr.arpa, or ip6.arpa by nibble).
pub(super) fn reverse_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            format!("{d}.{c}.{b}.{a}.in-addr.arpa.")
        }
        IpAddr::V6(v6) => {
            let mut name = String::new();
            for byte in v6.octets().iter().rev() {
                name.push_str(&format!("{:x}.{:x}.", byte & 0xf, byte >> 4));
            }
            name.push_str("ip6.arpa.");
            name
        }
    }
}

/// `name` with letters upper-cased by a pattern drawn from `seed`.
fn mixed_case(name: &str, seed: usize) -> String {
    let mut state = (seed as u64).wrapping_mul(6_364_136_223_846_793_005);
    name.chars()
        .map(|c| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            if state >> 62 == 0 {
                c
            } else if (state >> 33) & 1 == 1 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect()
}
