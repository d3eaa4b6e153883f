//! Updates against full builds: random clusters, random changes, every name compared.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::str::FromStr;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::model::convert;
use crate::model::serviceimport::LABEL_MCS_SERVICE_NAME;
use crate::selector::LabelSelector;
use crate::zone::build as full_build;

const NAMESPACES: [&str; 3] = ["a", "b", "c"];
const SERVICES: [&str; 4] = ["web", "db", "api", "x"];
const SLICES: [&str; 4] = ["s1", "s2", "s3", "s4"];
const PODS: [&str; 4] = ["p1", "p2", "p3", "p4"];
/// Addresses shared between ClusterIPs, endpoints and pods, including this server's own
/// (127.0.0.1: the apex NS follows the Service whose endpoints hold it).
const IPS: [&str; 7] = [
    "10.96.0.1",
    "10.96.0.2",
    "10.244.0.1",
    "10.244.0.2",
    "10.244.0.3",
    "127.0.0.1",
    "fd00::1",
];

fn up(object: Object) -> Change {
    Change::Upsert(Box::new(object))
}

fn ip(i: usize) -> &'static str {
    IPS[i % IPS.len()]
}

fn namespace(name: &str, team: usize) -> Object {
    let labels = if team == 0 {
        json!({})
    } else {
        let team = ["x", "y"][team % 2];
        json!({ "team": team })
    };
    let value = json!({"metadata": {"name": name, "labels": labels}});
    Object::Namespace(convert::namespace(&serde_json::from_value(value).unwrap()).unwrap())
}

/// A Service: kind 0 ClusterIP, 1 dual-stack ClusterIP, 2 headless, 3 ExternalName out of
/// the zone, 4 ExternalName into it, 5 ClusterIP without ports. `address` also picks its
/// external addresses (*k8s_external*): none, `spec.externalIPs`, a load balancer's ingress
/// IP and hostname, or a hostname alone.
fn service(ns: &str, name: &str, kind: usize, address: usize, labelled: bool) -> Object {
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP"},
                       {"name": "dns", "port": 53, "protocol": "UDP"}]);
    let spec = match kind % 6 {
        0 => json!({"clusterIP": ip(address), "clusterIPs": [ip(address)], "ports": ports}),
        1 => json!({"clusterIP": ip(address), "clusterIPs": [ip(address), "fd00::96"],
                    "ports": ports}),
        2 => json!({"clusterIP": "None", "ports": ports}),
        3 => json!({"type": "ExternalName", "externalName": "db.partner.example.com"}),
        4 => json!({"type": "ExternalName", "externalName": "web.a.svc.cluster.local"}),
        _ => json!({"clusterIP": ip(address), "clusterIPs": [ip(address)]}),
    };
    let labels = if labelled {
        json!({"app": "dns"})
    } else {
        json!({})
    };
    let mut value = json!({"metadata": {"name": name, "namespace": ns, "labels": labels},
                       "spec": spec});
    // A selector, which the zone never reads (the updates see it trimmed, the full builds not).
    value["spec"]["selector"] = json!({"app": name});
    match address % 4 {
        1 => value["spec"]["externalIPs"] = json!([ip(address + 1)]),
        2 => {
            value["status"] = json!({"loadBalancer": {"ingress": [
                {"ip": ip(address + 2)}, {"hostname": "lb.example.net"}]}});
        }
        3 => {
            value["status"] =
                json!({"loadBalancer": {"ingress": [{"hostname": "lb.example.net"}]}});
        }
        _ => {}
    }
    Object::Service(convert::service(&serde_json::from_value(value).unwrap()).unwrap())
}

#[derive(Debug, Clone)]
struct EndpointSpec {
    address: usize,
    ready: bool,
    hostname: Option<usize>,
    pod: usize,
}

/// A slice of `service` (`service % 5 == 4`: of none); `import` 1 and 2 add the MCS labels
/// that import it for that name (from cluster `east` or `west`), 3 without a source cluster.
fn slice(
    ns: &str,
    name: &str,
    service: usize,
    endpoints: &[EndpointSpec],
    ported: bool,
    import: usize,
) -> Object {
    let endpoints: Vec<Value> = endpoints
        .iter()
        .map(|e| {
            let mut value = json!({
                "addresses": [ip(e.address)],
                "conditions": {"ready": e.ready},
                "targetRef": {"kind": "Pod", "name": PODS[e.pod % PODS.len()], "namespace": ns},
                "nodeName": "node-1",
            });
            // Topology zones, which `zonal` names are made of (one with a dot).
            if let Some(zone) = [Some("zone-a"), Some("Corp.Example"), None][e.pod % 3] {
                value["zone"] = json!(zone);
            }
            if let Some(h) = e.hostname {
                value["hostname"] = json!(["h0", "h1"][h % 2]);
            }
            value
        })
        .collect();
    let ports = if ported {
        json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
    } else {
        json!([])
    };
    // One family a slice: the first endpoint's.
    let is_v6 = |e: &Value| e["addresses"][0].as_str().is_some_and(|a| a.contains(':'));
    let v6 = endpoints.first().is_some_and(is_v6);
    let endpoints: Vec<Value> = endpoints.into_iter().filter(|e| is_v6(e) == v6).collect();
    let mut labels = json!({"kubernetes.io/service-name": SERVICES[service % SERVICES.len()]});
    if service % 5 == 4 {
        labels = json!({});
    }
    if !import.is_multiple_of(4) {
        labels[LABEL_MCS_SERVICE_NAME] = json!(SERVICES[service % SERVICES.len()]);
    }
    if let Some(cluster) = ["", "east", "West"]
        .get(import % 4)
        .filter(|c| !c.is_empty())
    {
        labels[crate::model::serviceimport::LABEL_MCS_SOURCE_CLUSTER] = json!(cluster);
    }
    let value = json!({
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "addressType": if v6 { "IPv6" } else { "IPv4" },
        "endpoints": endpoints,
        "ports": ports,
    });
    Object::EndpointSlice(convert::endpoint_slice(&serde_json::from_value(value).unwrap()).unwrap())
}

/// A ServiceImport: kind 0 ClusterSetIP, 1 Headless, 2 ClusterSetIP without ports.
fn service_import(ns: &str, name: &str, kind: usize, address: usize) -> Object {
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP"},
                       {"name": "dns", "port": 53, "protocol": "UDP"}]);
    let spec = match kind % 3 {
        0 => json!({"type": "ClusterSetIP", "ips": [ip(address)], "ports": ports}),
        1 => json!({"type": "Headless", "ports": ports}),
        _ => json!({"type": "ClusterSetIP", "ips": [ip(address)]}),
    };
    let value = json!({"metadata": {"name": name, "namespace": ns}, "spec": spec});
    Object::ServiceImport(
        crate::model::serviceimport::service_import(&serde_json::from_value(value).unwrap())
            .unwrap(),
    )
}

fn pod(ns: &str, name: &str, address: usize, phase: usize, host_network: bool) -> Object {
    let phase = ["Running", "Pending", "Succeeded"][phase % 3];
    let value = json!({
        "metadata": {"name": name, "namespace": ns,
                     "labels": if address.is_multiple_of(2) { json!({"app": "dns"}) } else { json!({}) }},
        "spec": {"hostNetwork": host_network, "nodeName": "node-1", "hostname": "h",
                 "subdomain": "s",
                 "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 80}]}]},
        "status": {"phase": phase,
                   "podIP": ip(address), "podIPs": [{"ip": ip(address)}]},
    });
    Object::Pod(convert::pod(&serde_json::from_value(value).unwrap()).unwrap())
}

fn endpoint() -> impl Strategy<Value = EndpointSpec> {
    (
        0..IPS.len(),
        any::<bool>(),
        proptest::option::of(0..2usize),
        0..4usize,
    )
        .prop_map(|(address, ready, hostname, pod)| EndpointSpec {
            address,
            ready,
            hostname,
            pod,
        })
}

/// One random change: an object upserted or deleted.
fn change() -> impl Strategy<Value = Change> {
    let ns = 0..NAMESPACES.len();
    prop_oneof![
        1 => (ns.clone(), 0..3usize).prop_map(|(n, team)| up(namespace(NAMESPACES[n], team))),
        3 => (ns.clone(), 0..SERVICES.len(), 0..6usize, 0..IPS.len(), any::<bool>()).prop_map(
            |(n, s, kind, address, labelled)| up(service(
                NAMESPACES[n],
                SERVICES[s],
                kind,
                address,
                labelled
            ))
        ),
        4 => (
            ns.clone(),
            0..SLICES.len(),
            0..5usize,
            proptest::collection::vec(endpoint(), 0..4),
            any::<bool>(),
            0..4usize,
        )
            .prop_map(|(n, s, service, endpoints, ported, import)| up(slice(
                NAMESPACES[n],
                SLICES[s],
                service,
                &endpoints,
                ported,
                import
            ))),
        2 => (ns.clone(), 0..SERVICES.len(), 0..3usize, 0..IPS.len()).prop_map(
            |(n, s, kind, address)| up(service_import(NAMESPACES[n], SERVICES[s], kind, address))
        ),
        2 => (ns.clone(), 0..PODS.len(), 0..IPS.len(), 0..3usize, any::<bool>()).prop_map(
            |(n, p, address, phase, host)| up(pod(
                NAMESPACES[n],
                PODS[p],
                address,
                phase,
                host
            ))
        ),
        3 => (ns, 0..5usize, 0..4usize).prop_map(|(n, kind, i)| {
            let key = |name: &str| ObjectKey::new(NAMESPACES[n], name);
            match kind {
                0 => Change::Delete(Kind::Namespace, ObjectKey::new("", NAMESPACES[n])),
                1 => Change::Delete(Kind::Service, key(SERVICES[i])),
                2 => Change::Delete(Kind::EndpointSlice, key(SLICES[i])),
                3 => Change::Delete(Kind::ServiceImport, key(SERVICES[i])),
                _ => Change::Delete(Kind::Pod, key(PODS[i])),
            }
        }),
    ]
}

/// The plugin's options that change which names exist; from variant 15 on,
/// `clusterset.local` is a `multicluster` zone (before, it serves Services too).
fn config(variant: usize) -> KubernetesConfig {
    let name = |z: &str| hickory_proto::rr::Name::from_str(z).unwrap();
    let zones = [
        "cluster.local.",
        "in-addr.arpa.",
        "ip6.arpa.",
        "clusterset.local.",
    ]
    .iter()
    .map(|z| name(z))
    .collect();
    let mut config = KubernetesConfig {
        ttl: 5,
        ..KubernetesConfig::new(zones, 0, 1)
    };
    config.pods = [PodMode::Insecure, PodMode::Verified, PodMode::Disabled][variant % 3];
    // *autopath* `@kubernetes` with `namespace pod` in every other `pods verified` variant: the
    // zone keeps the clients' namespaces then only.
    config.client_namespaces = config.pods == PodMode::Verified && variant.is_multiple_of(2);
    match variant / 3 % 5 {
        1 => config.namespaces = vec!["a".into(), "b".into()],
        2 => config.namespace_labels = Some(LabelSelector::parse("team=x").unwrap()),
        3 => config.labels = Some(LabelSelector::parse("app!=dns").unwrap()),
        4 => {
            config.ignore_empty_service = true;
            config.endpoint_pod_names = true;
            config.zonal = true;
        }
        _ => {}
    }
    // *k8s_external* in every other variant, with `headless` in every other of those.
    if variant % 2 == 1 {
        config.external = Some(crate::config::K8sExternalConfig {
            zones: ["example.org.", "ext.test."]
                .iter()
                .map(|z| hickory_proto::rr::Name::from_str(z).unwrap())
                .collect(),
            apex: "dns".into(),
            ttl: 7,
            headless: variant % 4 == 3,
            fallthrough: None,
        });
    }
    if variant / 15 % 2 == 1 {
        config.multicluster = vec![name("clusterset.local.")];
    }
    config
}

/// Every name of a snapshot with its records, and the rest of what it answers from.
fn contents(snapshot: &Snapshot) -> String {
    let nodes: BTreeMap<String, std::borrow::Cow<'_, Node>> = snapshot
        .names
        .nodes()
        .map(|node| {
            let mut dotted = String::new();
            crate::name::write_dotted(node.name(), &mut dotted).unwrap();
            (dotted, node)
        })
        .collect();
    let clients: BTreeMap<&IpAddr, &Option<std::sync::Arc<str>>> =
        snapshot.clients.iter().map(|(ip, ns)| (ip, ns)).collect();
    let mut pod_namespaces: Vec<_> = snapshot.pod_namespaces.iter().collect();
    pod_namespaces.sort();
    let external = snapshot.external.as_ref().map(|external| {
        let nodes: BTreeMap<String, &Node> = external
            .nodes
            .iter()
            .map(|node| {
                let mut dotted = String::new();
                crate::name::write_dotted(node.name(), &mut dotted).unwrap();
                (dotted, node)
            })
            .collect();
        format!("{nodes:#?}\nexternal zones {:?}", external.zones)
    });
    format!(
        "{nodes:#?}\nclients {clients:?}\npod namespaces {pod_namespaces:?}\nzones {:?}\n\
         serial {} names {}\nexternal {external:?}",
        snapshot.zones,
        snapshot.serial,
        snapshot.names.len()
    )
}

fn ctx(serial: u32) -> BuildContext {
    BuildContext {
        local_ips: vec!["127.0.0.1".parse().unwrap()],
        serial,
    }
}

/// Applies `batches` to an empty cluster with updates, and checks each result against a
/// full build of the same objects. The updates see the objects as a publisher keeps them,
/// trimmed to what the zone reads ([`crate::zone::trim`]); the full builds see them whole.
fn check(variant: usize, initial: Vec<Change>, batches: Vec<Vec<Change>>) {
    let config = config(variant);
    let mut whole = Cluster::default();
    for change in initial {
        if let Change::Upsert(object) = change {
            whole.insert(*object);
        }
    }
    let mut cluster = whole.clone();
    crate::zone::trim_cluster(&mut cluster, &config);
    let (mut snapshot, mut incremental) = Incremental::build(&cluster, &config, &ctx(1));
    incremental.set_most_parts(usize::MAX);
    if variant.is_multiple_of(4) {
        // The names held for Services dropped and learnt again all the time.
        incremental.owned.limit(4);
    }
    for (step, batch) in batches.into_iter().enumerate() {
        let serial = 2 + step as u32;
        for change in batch.clone() {
            match change {
                Change::Upsert(object) => {
                    whole.replace(*object);
                }
                Change::Delete(kind, key) => {
                    whole.remove(kind, &key);
                }
            }
        }
        let trimmed: Vec<Change> = batch
            .iter()
            .cloned()
            .map(|mut change| {
                if let Change::Upsert(object) = &mut change {
                    crate::zone::trim(object, &config);
                }
                change
            })
            .collect();
        let (next, applied) = incremental.apply(&mut cluster, trimmed, &snapshot, serial);
        assert!(matches!(applied, Applied::Names { .. }), "{applied:?}");
        let full = full_build(&whole, &config, &ctx(serial));
        let (got, want) = (contents(&next), contents(&full));
        if got != want {
            let diff: Vec<String> = got
                .lines()
                .zip(want.lines())
                .enumerate()
                .filter(|(_, (g, w))| g != w)
                .take(10)
                .map(|(n, (g, w))| format!("line {n}: update {g:?} / full {w:?}"))
                .collect();
            panic!(
                "step {step}, variant {variant}: {batch:#?}\n{}\n--- update:\n{got}",
                diff.join("\n")
            );
        }
        snapshot = next;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn updates_give_what_a_full_build_gives(
        variant in 0..30usize,
        initial in proptest::collection::vec(change(), 0..24),
        batches in proptest::collection::vec(proptest::collection::vec(change(), 1..4), 1..12),
    ) {
        check(variant, initial, batches);
    }
}

#[test]
fn an_update_shares_what_it_did_not_touch() {
    let mut config = config(0);
    // The cluster zone and the reverse zones only: the shards counted are theirs.
    config
        .zones
        .retain(|zone| zone.to_ascii() != "clusterset.local.");
    let mut cluster = Cluster::default();
    cluster.insert(namespace("a", 0));
    for n in 0..2000 {
        cluster.insert(service("a", &format!("svc-{n}"), 0, n, false));
    }
    let (snapshot, mut incremental) = Incremental::build(&cluster, &config, &ctx(1));
    let changes = vec![up(service("a", "svc-7", 2, 0, false))];
    let (next, applied) = incremental.apply(&mut cluster, changes, &snapshot, 2);
    assert!(matches!(applied, Applied::Names { .. }), "{applied:?}");
    let shards = snapshot.names.node_index().shard_count();
    let shared = next
        .names
        .node_index()
        .shared_with(snapshot.names.node_index());
    assert!(shards >= 256, "{shards}");
    assert!(shared + 12 >= shards, "{shared} of {shards} shards shared");
    assert_eq!(
        contents(&next),
        contents(&full_build(&cluster, &config, &ctx(2)))
    );
}

#[test]
fn a_large_change_is_built_whole() {
    let config = config(0);
    let mut cluster = Cluster::default();
    let (snapshot, mut incremental) = Incremental::build(&cluster, &config, &ctx(1));
    let changes: Vec<Change> = std::iter::once(up(namespace("a", 0)))
        .chain((0..400).map(|n| up(service("a", &format!("s{n}"), 0, n, false))))
        .collect();
    let (next, applied) = incremental.apply(&mut cluster, changes, &snapshot, 2);
    assert_eq!(applied, Applied::Whole);
    assert_eq!(
        contents(&next),
        contents(&full_build(&cluster, &config, &ctx(2)))
    );
    // And updates follow the whole build.
    let changes = vec![Change::Delete(Kind::Service, ObjectKey::new("a", "s3"))];
    let (after, applied) = incremental.apply(&mut cluster, changes, &next, 3);
    assert!(
        matches!(applied, Applied::Names { removed: 3.., .. }),
        "{applied:?}"
    );
    assert_eq!(
        contents(&after),
        contents(&full_build(&cluster, &config, &ctx(3)))
    );
}

#[test]
fn the_index_keeps_two_holders_inline_and_the_rest_beside_in_order() {
    let config = config(0);
    let services: Vec<Object> = ["s0", "s1", "s2", "s3"]
        .iter()
        .map(|name| service("a", name, 0, 0, false))
        .collect();
    let Object::Service(first) = &services[0] else {
        unreachable!()
    };
    let address = first.cluster_ips[0];
    let held = |index: &Index| -> Vec<String> {
        index
            .at(address)
            .map(|reference| match reference {
                Ref::Service(key) => key.name.to_string(),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let mut index = Index::default();
    for object in &services {
        index.add(object.borrowed(), &config);
    }
    assert_eq!(held(&index), ["s0", "s1", "s2", "s3"]);
    assert_eq!(index.more.get(&address).map(Vec::len), Some(2));
    // Removing an inline holder moves the first of the rest into its slot.
    index.remove(services[1].borrowed(), &config);
    assert_eq!(held(&index), ["s0", "s2", "s3"]);
    assert_eq!(index.more.get(&address).map(Vec::len), Some(1));
    index.remove(services[3].borrowed(), &config);
    index.remove(services[0].borrowed(), &config);
    assert_eq!(held(&index), ["s2"]);
    assert!(index.more.is_empty());
    index.remove(services[2].borrowed(), &config);
    assert!(index.by_v4.is_empty() && index.by_v6.is_empty());
    // Every object added is found again, whatever the number table grew through: adding one
    // twice holds it once, and removing it frees its number.
    for _ in 0..2 {
        for object in &services {
            index.add(object.borrowed(), &config);
        }
    }
    assert_eq!(index.numbers.len(), services.len());
    for object in &services {
        index.remove(object.borrowed(), &config);
    }
    assert_eq!(index.numbers.len(), 0);
    assert!(index.objects.iter().all(Option::is_none));
}
