//! The real kube-proxy (v1.36.3, bench/peers/build.sh) against `proxy render` and `explain`.
//! kube-proxy runs once in `--proxy-mode iptables` and once in `--proxy-mode nftables`, each
//! in a network namespace of its own as kwok-node-0 of a private control plane,
//! with a Service for every feature render covers (kube_proxy/objects.yaml); once it has
//! synced, its dumps and the objects at that moment are compared rule by rule with render's
//! ([`compare`]): every difference must be one docs/differences.md's `## kube-proxy` section
//! explains ([`compare::KNOWN`]). `CLUSTERDNS_BLESS=1` saves the dumps as
//! tests/fixtures/kube-proxy/, which [`fixtures`] and [`drift`] check without the cluster.
//!
//! Without the peers the test says so and passes (unless `CLUSTERDNS_REQUIRE_PEERS`);
//! without network namespaces, iptables and nft (not root, no `ip`) likewise, unless
//! `CLUSTERDNS_REQUIRE_NETFILTER` is set.

mod capture;
mod compare;
mod drift;
mod fixtures;
mod node;
mod render;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clusterdns::kube_proxy::plan::IpFamily;
use serde_json::json;

use super::private_turn;
use crate::common::cluster::{Cluster, peers};
use compare::{assert_explained, assert_known_documented};
use fixtures::{DUMPS, fixture, parse};
use node::{KubeProxy, Node, kubeconfig, relay};
use render::{NODE, Shape, render};

/// How long kube-proxy may take to program the objects.
const SYNC: Duration = Duration::from_secs(60);

/// The node addresses (InternalIP) each kwok node is given: kube-proxy reads its own from
/// the Node object (nftables' `--nodeport-addresses primary`).
fn node_addresses(cluster: &Cluster) {
    for i in 0..3 {
        let status = json!({"status": {"addresses": [
            {"type": "InternalIP", "address": format!("10.0.0.1{i}")},
            {"type": "InternalIP", "address": format!("fd00:10::1{i}")},
            {"type": "Hostname", "address": format!("kwok-node-{i}")},
        ]}});
        let node = format!("kwok-node-{i}");
        cluster.kubectl(&[
            "patch",
            "node",
            &node,
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ]);
    }
}

/// kube_proxy/objects.yaml applied, the load balancers given their ingress, and the
/// controllers done: every pod Ready and in its Services' slices.
fn objects(cluster: &Cluster) {
    node_addresses(cluster);
    cluster.apply(include_str!("kube_proxy/objects.yaml"));
    for (service, ip) in [("lb", "203.0.113.12"), ("lb-local", "203.0.113.18")] {
        let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}});
        cluster.kubectl(&[
            "patch",
            "service",
            service,
            "-n",
            "kp",
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ]);
    }
    super::wait_ready_pods(cluster, "kp", "web", 3);
    super::wait_ready_pods(cluster, "kp", "remote", 1);
    // Every slice complete before kube-proxy starts: its first sync then programs what
    // `objects_json` reads after it, however far the endpoint-slice controller lags under load.
    cluster.wait("every Service's slices filled", SYNC, || {
        let filled = filled_slices(cluster);
        SLICES.iter().all(|(service, family, count)| {
            filled.contains(&(service.to_string(), family.to_string(), *count))
        })
    });
}

/// Each Service of kube_proxy/objects.yaml whose endpoints the controller writes: the address
/// type of a slice and how many ready addresses it must hold once the pods are Ready.
const SLICES: &[(&str, &str, usize)] = &[
    ("multi", "IPv4", 3),
    ("nodeport", "IPv4", 3),
    ("lb", "IPv4", 3),
    ("lb-local", "IPv4", 3),
    ("nodeport-remote", "IPv4", 1),
    ("external-ips", "IPv4", 3),
    ("affinity", "IPv4", 3),
    ("itp-local", "IPv4", 3),
    ("itp-remote", "IPv4", 1),
    ("dns", "IPv4", 3),
    ("sctp", "IPv4", 3),
    ("dual", "IPv4", 3),
    ("dual", "IPv6", 3),
    ("headless", "IPv4", 3),
];

/// Every slice in kp: its Service, address type and count of ready addresses.
fn filled_slices(cluster: &Cluster) -> Vec<(String, String, usize)> {
    let slices = cluster.get(&["endpointslices", "-n", "kp"]);
    let items = slices["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .map(|slice| {
            let ready = slice["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["conditions"]["ready"] != json!(false))
                .map(|e| e["addresses"].as_array().map_or(0, Vec::len))
                .sum();
            let service = &slice["metadata"]["labels"]["kubernetes.io/service-name"];
            (
                service.as_str().unwrap_or_default().to_string(),
                slice["addressType"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                ready,
            )
        })
        .collect()
}

/// What a node in one mode gave: its dumps (by fixture name) and kube-proxy's log.
struct Taken {
    dumps: Vec<(&'static str, String)>,
    log: String,
}

/// The dump of `family` in `shape` from `node`.
fn dump(node: &Node, shape: Shape, family: IpFamily) -> String {
    match (shape, family) {
        (Shape::IptablesSave, IpFamily::V4) => node.exec("iptables-save", &[]),
        (Shape::IptablesSave, IpFamily::V6) => node.exec("ip6tables-save", &[]),
        (Shape::NftList, IpFamily::V4) => node.exec("nft", &["list", "table", "ip", "kube-proxy"]),
        (Shape::NftList, IpFamily::V6) => node.exec("nft", &["list", "table", "ip6", "kube-proxy"]),
    }
}

/// Whether `text` programs the last objects kube-proxy sees: the terminating fallback (a
/// hand-written slice) and, for IPv6, the dual-stack Service.
fn synced(text: &str, family: IpFamily) -> bool {
    match family {
        IpFamily::V4 => text.contains("kp/terminating") && text.contains("kp/sctp"),
        IpFamily::V6 => text.contains("kp/dual"),
    }
}

/// kube-proxy in `mode` on a node of its own, until it has programmed the objects: its dumps.
fn node_in(cluster: &Cluster, binary: &Path, index: u8, shape: Shape, dir: &Path) -> Taken {
    let mode = match shape {
        Shape::IptablesSave => "iptables",
        Shape::NftList => "nftables",
    };
    let node = Node::create(index);
    let server = relay(node.host, cluster.api_port);
    let config = dir.join(format!("{mode}.kubeconfig"));
    kubeconfig(cluster, server, &config);
    let mut proxy = KubeProxy::start(
        binary,
        &node,
        mode,
        &config,
        &dir.join(format!("{mode}.log")),
    );
    let ours: Vec<_> = DUMPS.iter().filter(|(_, s, _)| *s == shape).collect();
    let deadline = std::time::Instant::now() + SYNC;
    let dumps = loop {
        assert!(
            proxy.running(),
            "kube-proxy exited:\n{}",
            std::fs::read_to_string(&proxy.log).unwrap_or_default()
        );
        let now: Vec<(&'static str, String)> = ours
            .iter()
            .map(|(file, s, family)| (*file, dump(&node, *s, *family)))
            .collect();
        if now
            .iter()
            .zip(&ours)
            .all(|((_, text), (_, _, family))| synced(text, *family))
        {
            break now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "kube-proxy --proxy-mode {mode} never programmed the objects"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    Taken {
        dumps,
        log: std::fs::read_to_string(&proxy.log).unwrap(),
    }
}

/// The objects now, as `proxy render --objects` reads them.
fn objects_json(cluster: &Cluster, dir: &Path) -> PathBuf {
    let text = cluster.kubectl(&["get", "svc,endpointslices,pods,nodes", "-A", "-o", "json"]);
    let path = dir.join("objects.json");
    std::fs::write(&path, text).unwrap();
    path
}

/// Under `CLUSTERDNS_BLESS`, the dumps, kube-proxy's inputs and the objects as
/// tests/fixtures/kube-proxy/.
fn bless(taken: &[Taken], objects: &Path) {
    if std::env::var_os("CLUSTERDNS_BLESS").is_none() {
        return;
    }
    std::fs::copy(objects, fixture("objects.json")).unwrap();
    for t in taken {
        for (file, text) in &t.dumps {
            std::fs::write(fixture(file), text).unwrap();
        }
        for (family, file) in [
            ("IPv4", "iptables-restore.txt"),
            ("IPv6", "ip6tables-restore.txt"),
        ] {
            if let Some(text) = capture::restore_input(&t.log, family) {
                std::fs::write(fixture(file), text).unwrap();
            }
        }
        let transactions = capture::nft_transactions(&t.log);
        for (prefix, file) in [
            ("add table ip ", "nft-transaction.nft"),
            ("add table ip6 ", "nft6-transaction.nft"),
        ] {
            if let Some(text) = transactions.iter().find(|t| t.starts_with(prefix)) {
                std::fs::write(fixture(file), text).unwrap();
            }
        }
    }
}

#[test]
fn real_kube_proxy() {
    let Some(binary) = peers()
        .map(|p| p.join("kube-proxy"))
        .filter(|b| b.is_file())
    else {
        assert!(
            std::env::var_os("CLUSTERDNS_REQUIRE_PEERS").is_none(),
            "no kube-proxy among the peers: run bench/peers/build.sh"
        );
        eprintln!("skipped: kube-proxy is not built (bench/peers/build.sh)");
        return;
    };
    if crate::common::netns::skip("real_kube_proxy") {
        return;
    }
    assert_known_documented();
    let _turn = private_turn();
    let Some(cluster) = Cluster::private() else {
        return;
    };
    objects(&cluster);
    let dir = tempfile::tempdir().unwrap();
    let taken = [
        node_in(&cluster, &binary, 0, Shape::IptablesSave, dir.path()),
        node_in(&cluster, &binary, 1, Shape::NftList, dir.path()),
    ];
    let objects = objects_json(&cluster, dir.path());
    let mut figures = Vec::new();
    for t in &taken {
        for (file, real) in &t.dumps {
            let (_, shape, family) = DUMPS.iter().find(|(f, _, _)| f == file).unwrap();
            let rendered = render(&objects, *shape, *family);
            let comparison = compare::compare(&parse(*shape, real), &parse(*shape, &rendered));
            figures.push(assert_explained(&format!("{NODE} {file}"), &comparison));
        }
    }
    eprintln!("{}", figures.join("\n"));
    bless(&taken, &objects);
}
