//! clusterdns as the kube-dns of a cluster with real nodes: a private control plane
//! (`xtask::cluster`, no kwok nodes) with two nodes joined by `xtask::nodes` — containerd,
//! runc, the kubelet, the CNI bridge and kube-proxy, iptables mode on `node-1`, nftables on
//! `node-2` — and deploy/ applied unchanged but for its image: the image the Dockerfile
//! describes, built by `xtask::images` from the binary under test (or `CLUSTERDNS_IMAGE`, an
//! archive `cargo xtask image` wrote: CI's release image). Real pods then resolve through
//! the resolv.conf their kubelet wrote and kube-proxy's DNAT to the `kube-dns` ClusterIP,
//! with glibc (Debian's `getent`, and xtask/programs/lookup.c linked against glibc) and musl
//! (lookup.c, static): `answers`. Names outside the cluster go to an upstream the test runs
//! in a network namespace of its own (the nodes' resolv.conf names it), over UDP and TCP.
//!
//! The group shares one such cluster ([`RealCluster::shared`]), its tests one at a time. It
//! needs root, the peers with the kubelet (bench/peers/build.sh) and Debian's containerd,
//! runc, containernetworking-plugins, busybox-static and musl-tools; without them each test
//! says so and passes, unless `CLUSTERDNS_REQUIRE_NODES` is set (`.ci/run` sets it), when it
//! fails.

mod answers;
mod deploy;
mod latency;
mod node_cache;
mod operations;
mod payments;
mod tracker;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use xtask::kube::{ControlPlane, Kubectl};
use xtask::nodes::{Nodes, Options, UPSTREAM, condition};

use crate::common::cluster::Cluster;
use crate::common::names::NamesUpstream;

/// The switch that turns "skipped" into a failure.
const REQUIRE: &str = "CLUSTERDNS_REQUIRE_NODES";

/// The names outside the cluster the upstream knows (each with A 192.0.2.10 and AAAA
/// 2001:db8::10); every other name is NXDOMAIN there.
const EXTERNAL: &[&str] = &["api.partner.example", "example.com"];

/// The test's objects: a ClusterIP Service over a Deployment, a headless Service over a
/// StatefulSet, an ExternalName Service, and a client pod on each node.
const OBJECTS: &str = include_str!("real_node/objects.yaml");

/// The cluster every test of the group uses, one test at a time.
pub struct RealCluster {
    /// The control plane (it goes down with the test process).
    cluster: Cluster,
    pub nodes: Nodes,
    pub upstream: NamesUpstream,
    /// Each DNS pod of the first rollout: its time from created to Ready, as seen by polling
    /// the API server, and the server's from its start to listening, as its log says.
    pub dns_ready: Vec<(String, Duration, Duration)>,
    /// The nodes the DNS pods were first scheduled to, sorted (later rollouts, with a pod on
    /// each node already, may put both on one).
    pub dns_nodes: Vec<String>,
    _dir: tempfile::TempDir,
}

static SHARED: OnceLock<Result<Mutex<RealCluster>, String>> = OnceLock::new();

impl RealCluster {
    /// The shared cluster, or `None` (said on stderr) where it cannot run here; panics when
    /// it could not be brought up, or when [`REQUIRE`] is set and it cannot run.
    pub fn shared(test: &str) -> Option<MutexGuard<'static, Self>> {
        if let Some(missing) = missing() {
            assert!(
                std::env::var_os(REQUIRE).is_none(),
                "{test}: {missing}, and {REQUIRE} is set"
            );
            eprintln!("skipping {test}: {missing} (set {REQUIRE} to make this a failure)");
            return None;
        }
        let shared = SHARED.get_or_init(|| Self::up().map(Mutex::new));
        match shared {
            Ok(cluster) => Some(
                cluster
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            ),
            Err(error) => panic!("{test}: the real nodes did not come up: {error}"),
        }
    }

    fn up() -> Result<Self, String> {
        let started = Instant::now();
        let cluster = Cluster::start(&["--nodes", "0"]).ok_or("the control plane")?;
        let plane = ControlPlane::from_dir(cluster.dir()).map_err(|e| format!("{e:#}"))?;
        let dir = tempfile::Builder::new()
            .prefix("clusterdns-real-node.")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let image = clusterdns_image(dir.path())?;
        // CoreDNS's image, by CoreDNS's recipe from the peer, for the answers beside it.
        let coredns = dir.path().join("nodes/images/coredns.tar");
        xtask::images::coredns(&plane.peers.join("coredns"))
            .and_then(|image| image.write(&coredns))
            .map_err(|e| format!("CoreDNS's image: {e:#}"))?;
        // The janitor deletes the whole directory once the tests have ended: the shared
        // cluster is a static, never dropped, so `dir`'s own drop never runs.
        let options = Options {
            remove_at_exit: Some(dir.path().to_path_buf()),
            ..Options::two(&dir.path().join("nodes"), vec![image, coredns])
        };
        let nodes = Nodes::up(&plane, &options).map_err(|e| format!("{e:#}"))?;
        let socket = xtask::netns::in_netns(&nodes.upstream.net(), || {
            UdpSocket::bind(SocketAddr::from((UPSTREAM, 53)))
        })
        .and_then(|bound| Ok(bound?))
        .map_err(|e| format!("the upstream's socket: {e:#}"))?;
        // TCP too: a forwarder asks over TCP what it was asked over TCP (kube-dns, asked by
        // NodeLocal DNSCache's `force_tcp`, chasing an ExternalName's target).
        let listener = xtask::netns::in_netns(&nodes.upstream.net(), || {
            TcpListener::bind(SocketAddr::from((UPSTREAM, 53)))
        })
        .and_then(|bound| Ok(bound?))
        .map_err(|e| format!("the upstream's TCP listener: {e:#}"))?;
        let upstream = NamesUpstream::on(socket, EXTERNAL, &[], &[]).with_tcp(listener);
        eprintln!(
            "real nodes: two nodes joined in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let kubectl = plane.kubectl();
        let deployed = Instant::now();
        nodes
            .apply_dns(xtask::images::CLUSTERDNS, &[])
            .map_err(|e| format!("{e:#}"))?;
        let ready = xtask::operations::ready_times(
            &kubectl,
            "kube-system",
            "k8s-app=kube-dns",
            2,
            &BTreeSet::new(),
            deployed,
        );
        nodes.wait_dns().map_err(|e| format!("{e:#}"))?;
        let pods = kubectl
            .get(&["pods", "-n", "kube-system", "-l", "k8s-app=kube-dns"])
            .map_err(|e| format!("{e:#}"))?;
        let mut dns_nodes: Vec<String> = items(&pods)
            .iter()
            .filter_map(|pod| pod["spec"]["nodeName"].as_str().map(str::to_owned))
            .collect();
        dns_nodes.sort_unstable();
        let mut dns_ready = Vec::new();
        for (name, took) in ready {
            let pod = items(&pods)
                .into_iter()
                .find(|pod| pod["metadata"]["name"] == name.as_str())
                .ok_or_else(|| format!("the DNS pod {name} is gone"))?;
            dns_ready.push((name, took, start_to_listening(&nodes, &pod)?));
        }
        kubectl.apply(OBJECTS).map_err(|e| format!("{e:#}"))?;
        let real = Self {
            cluster,
            nodes,
            upstream,
            dns_ready,
            dns_nodes,
            _dir: dir,
        };
        real.wait_pods("shop", 6)?;
        eprintln!(
            "real nodes: clusterdns deployed, test pods Ready, {:.1} s in all",
            started.elapsed().as_secs_f64()
        );
        Ok(real)
    }

    /// The control plane: its logs, its audit log.
    pub fn control_plane(&self) -> &Cluster {
        &self.cluster
    }

    /// kubectl as the admin.
    pub fn kubectl(&self) -> Kubectl {
        self.nodes.kubectl()
    }

    /// `kubectl get ARGS -o json`.
    pub fn get(&self, args: &[&str]) -> Value {
        self.kubectl()
            .get(args)
            .unwrap_or_else(|e| panic!("kubectl get {args:?}: {e:#}"))
    }

    /// Waits until `count` pods of `namespace` are Running and Ready.
    fn wait_pods(&self, namespace: &str, count: usize) -> Result<(), String> {
        let kubectl = self.kubectl();
        xtask::kube::wait_until(
            &format!("{count} pods Ready in {namespace}"),
            Duration::from_secs(120),
            || {
                let pods = kubectl.get(&["pods", "-n", namespace])?;
                let ready = items(&pods)
                    .iter()
                    .filter(|pod| condition(pod, "Ready"))
                    .count();
                Ok(ready == count)
            },
        )
        .map_err(|e| format!("{e:#}\n{}", self.nodes.pods_report(namespace)))?;
        self.wait_endpoints(namespace)
    }

    /// Waits until each Service of `namespace` with a selector has, in its EndpointSlices,
    /// one ready endpoint per Ready pod it selects: the EndpointSlice controller writes them
    /// after the pods turn Ready, and a test that reads the zone in between sees too few.
    fn wait_endpoints(&self, namespace: &str) -> Result<(), String> {
        let kubectl = self.kubectl();
        let mut behind = Vec::new();
        xtask::kube::wait_until(
            &format!("the EndpointSlices of {namespace} to list every Ready pod"),
            Duration::from_secs(60),
            || {
                let services = kubectl.get(&["services", "-n", namespace])?;
                let pods = kubectl.get(&["pods", "-n", namespace])?;
                let slices = kubectl.get(&["endpointslices", "-n", namespace])?;
                behind = endpoints_behind(&services, &pods, &slices);
                Ok(behind.is_empty())
            },
        )
        .map_err(|e| format!("{e:#}: {}", behind.join("; ")))
    }

    /// Runs `script` with `sh -c` in pod `pod` of `namespace` (as `kubectl exec` would): its
    /// standard output; panics with its error output when it fails.
    pub fn sh(&self, namespace: &str, pod: &str, script: &str) -> String {
        let (node, id) = self
            .nodes
            .container(namespace, pod, None)
            .unwrap_or_else(|e| panic!("{namespace}/{pod}: {e:#}"));
        let out = node
            .exec_in(&id, &["/bin/sh", "-c", script])
            .unwrap_or_else(|e| panic!("{namespace}/{pod}: {e:#}"));
        assert!(
            out.status.success(),
            "in {namespace}/{pod}: `{script}` failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The addresses of the DNS pods that are Ready, by pod name.
    pub fn dns_pods(&self) -> BTreeMap<String, Ipv4Addr> {
        let pods = self.get(&["pods", "-n", "kube-system", "-l", "k8s-app=kube-dns"]);
        items(&pods)
            .iter()
            .filter(|pod| condition(pod, "Ready") && pod["metadata"]["deletionTimestamp"].is_null())
            .filter_map(|pod| {
                let ip = pod["status"]["podIP"].as_str()?.parse().ok()?;
                Some((pod["metadata"]["name"].as_str()?.to_owned(), ip))
            })
            .collect()
    }

    /// The text of a DNS pod's /metrics.
    pub fn metrics(&self, pod: Ipv4Addr) -> String {
        let (status, body) = self
            .nodes
            .http_get(SocketAddr::from((pod, 9153)), "/metrics")
            .unwrap_or_else(|e| panic!("metrics of {pod}: {e:#}"));
        assert_eq!(status, 200, "metrics of {pod}");
        body
    }
}

/// Every item of a list.
pub fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The sum of every sample of `family` whose labels contain each of `labels` (`key="value"`).
pub fn sum(metrics: &str, family: &str, labels: &[&str]) -> f64 {
    metrics
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let rest = series.strip_prefix(family)?;
            (rest.is_empty() || rest.starts_with('{')).then_some(())?;
            labels
                .iter()
                .all(|label| rest.contains(label))
                .then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

/// The image archive the nodes run: `CLUSTERDNS_IMAGE`, or one built here from the binary
/// under test by the Dockerfile's recipe.
fn clusterdns_image(dir: &std::path::Path) -> Result<PathBuf, String> {
    if let Some(archive) = std::env::var_os("CLUSTERDNS_IMAGE") {
        let archive = PathBuf::from(archive);
        let read = xtask::image::read(&archive).map_err(|e| format!("{e:#}"))?;
        let wanted = xtask::image::normalize(xtask::images::CLUSTERDNS);
        if read.reference != wanted {
            return Err(format!(
                "CLUSTERDNS_IMAGE {} is {}, not {wanted}",
                archive.display(),
                read.reference
            ));
        }
        return Ok(archive);
    }
    // Where the nodes keep their image archives, which go when the test process ends.
    let work = dir.join("nodes/images");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let image = xtask::images::clusterdns(
        std::path::Path::new(env!("CARGO_BIN_EXE_clusterdns")),
        &work,
    )
    .map_err(|e| format!("{e:#}"))?;
    image
        .write(&work.join("clusterdns.tar"))
        .map(|written| written.archive)
        .map_err(|e| format!("{e:#}"))
}

/// From the first line the server in DNS pod `pod` logged to the one saying it serves
/// `/ready`, as the container's log (CRI format, the runtime's timestamps) has them.
fn start_to_listening(nodes: &Nodes, pod: &Value) -> Result<Duration, String> {
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    let node = nodes.node(node).ok_or_else(|| format!("no node {node}"))?;
    let dir = format!(
        "kube-system_{}_{}",
        pod["metadata"]["name"].as_str().unwrap_or_default(),
        pod["metadata"]["uid"].as_str().unwrap_or_default()
    );
    let log = node.dir.join("pod-logs").join(dir).join("coredns/0.log");
    let text = std::fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let at = |line: Option<&str>| -> Result<jiff::Timestamp, String> {
        let line =
            line.ok_or_else(|| format!("{}: no start or no ready listener", log.display()))?;
        let stamp = line.split(' ').next().unwrap_or_default();
        stamp
            .parse()
            .map_err(|e| format!("{}: {stamp}: {e}", log.display()))
    };
    let first = at(text.lines().next())?;
    let ready = at(text
        .lines()
        .find(|line| line.contains("listening for ready")))?;
    Duration::try_from(ready - first).map_err(|e| e.to_string())
}

/// Why the group cannot run here, if it cannot.
fn missing() -> Option<String> {
    if !crate::common::netns::is_root() {
        return Some("the real nodes need root".into());
    }
    let Some(peers) = crate::common::cluster::peers() else {
        return Some("the peers are not built (bench/peers/build.sh)".into());
    };
    for peer in ["kubelet", "kube-proxy", "coredns"] {
        if !peers.join(peer).is_file() {
            return Some(format!("{} is not built (bench/peers/build.sh)", peer));
        }
    }
    xtask::nodes::check_tools().err().map(|e| format!("{e:#}"))
}

/// Each Service of `services` (a `kubectl get -o json` list) with a selector whose
/// EndpointSlices in `slices` do not hold exactly one ready endpoint for each Ready pod of
/// `pods` it selects: "NAME: N ready endpoints for M Ready pods".
fn endpoints_behind(services: &Value, pods: &Value, slices: &Value) -> Vec<String> {
    let mut behind = Vec::new();
    for service in items(services) {
        let Some(selector) = service["spec"]["selector"].as_object() else {
            continue;
        };
        let name = service["metadata"]["name"].as_str().unwrap_or_default();
        let selected = items(pods)
            .into_iter()
            .filter(|pod| {
                selector
                    .iter()
                    .all(|(key, value)| &pod["metadata"]["labels"][key] == value)
            })
            .filter(|pod| condition(pod, "Ready"))
            .count();
        let ready: usize = items(slices)
            .into_iter()
            .filter(|slice| slice["metadata"]["labels"]["kubernetes.io/service-name"] == name)
            .flat_map(|slice| slice["endpoints"].as_array().cloned().unwrap_or_default())
            .filter(|endpoint| endpoint["conditions"]["ready"] == true)
            .count();
        if ready != selected {
            behind.push(format!(
                "{name}: {ready} ready endpoints for {selected} Ready pods"
            ));
        }
    }
    behind
}

#[test]
fn endpoints_behind_counts_ready_endpoints_against_ready_selected_pods() {
    let services = serde_json::json!({"items": [
        {"metadata": {"name": "db"}, "spec": {"selector": {"app": "db"}}},
        {"metadata": {"name": "partner"}, "spec": {"type": "ExternalName"}},
    ]});
    let pod = |name: &str, app: &str, ready: &str| {
        serde_json::json!({
            "metadata": {"name": name, "labels": {"app": app}},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        })
    };
    let pods = serde_json::json!({"items": [
        pod("db-0", "db", "True"),
        pod("db-1", "db", "True"),
        pod("db-2", "db", "False"),
        pod("web-0", "web", "True"),
    ]});
    let slices = |ready: &[bool]| {
        let endpoints: Vec<Value> = ready
            .iter()
            .map(|ready| serde_json::json!({"conditions": {"ready": ready}}))
            .collect();
        serde_json::json!({"items": [{
            "metadata": {"labels": {"kubernetes.io/service-name": "db"}},
            "endpoints": endpoints,
        }]})
    };
    assert_eq!(
        endpoints_behind(&services, &pods, &slices(&[true, false])),
        ["db: 1 ready endpoints for 2 Ready pods"]
    );
    assert!(endpoints_behind(&services, &pods, &slices(&[true, true, false])).is_empty());
}
