//! clusterdns against the real control plane (tests/common/cluster.rs): etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok's nodes, built from their Go modules. The
//! clusterdns binary runs as deploy/ runs it — the ConfigMap's Corefile, read back from the
//! cluster, and ServiceAccount kube-system/coredns's token from the TokenRequest API, never
//! admin credentials — and is asked over DNS while the real controllers write the slices.
//! Here the helpers; the tests in `objects` (the zone from the controllers' objects), `access`
//! (RBAC, list modes, selectors, credentials) and `faults` (the API server misbehaving).
//!
//! Without the peers built (bench/peers/build.sh) these tests say so and pass; `.ci/run`
//! builds them and sets `CLUSTERDNS_REQUIRE_PEERS`, so there they cannot be skipped.
//!
//! The API server stand-in (tests/common/apiserver/) keeps the tests of faults a real API
//! server cannot be made to produce; each says why at its head (tests/sources/live.rs,
//! tests/sources/apiserver.rs).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::binary::TestServer;
use crate::common::cluster::Cluster;
use crate::common::{Reply, expect};
use crate::sources::live::{PATIENCE, addresses, eventually, metric, until, until_within};

mod access;
mod differential;
mod faults;
mod helm;
mod kube_proxy;
mod objects;
mod tools;

/// How long a change may take to show after an outage: kube's watcher backs off up to 30 s
/// (with jitter) between retries, so the first retry after the API server is back may come
/// that late.
const RECOVERY: Duration = Duration::from_secs(90);

/// The private clusters (the fault tests') run one at a time: each is five processes on a
/// machine of two cores, beside the shared one.
static PRIVATE: Mutex<()> = Mutex::new(());

/// The lock on private clusters, whatever a test that held it before did.
fn private_turn() -> std::sync::MutexGuard<'static, ()> {
    PRIVATE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// clusterdns as the cluster runs it, with its working files.
struct InCluster {
    server: TestServer,
    dir: tempfile::TempDir,
}

impl std::ops::Deref for InCluster {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.server
    }
}

/// deploy/'s ConfigMap Corefile, read from the cluster, made to run beside other tests: every
/// port on 127.0.0.1 and chosen by the system, the snapshot in `dir`, `connection` (how to
/// reach the API server) and `options` added to the *kubernetes* block.
fn corefile_of_the_configmap(
    cluster: &Cluster,
    dir: &Path,
    connection: &str,
    options: &str,
) -> String {
    adapted(&configmap_corefile(cluster), dir, connection, options)
}

/// The Corefile of ConfigMap kube-system/coredns, as the API server holds it.
fn configmap_corefile(cluster: &Cluster) -> String {
    let configmap = cluster.get(&["configmap", "coredns", "-n", "kube-system"]);
    configmap["data"]["Corefile"]
        .as_str()
        .expect("the ConfigMap has a Corefile")
        .to_owned()
}

/// `corefile` (the ConfigMap's) made to run here: see [`corefile_of_the_configmap`].
fn adapted(corefile: &str, dir: &Path, connection: &str, options: &str) -> String {
    let mut corefile = corefile.to_owned();
    let snapshot = dir.join("snapshot.json");
    for (from, to) in [
        (".:53 {".to_owned(), ".:0 {\n    bind 127.0.0.1".to_owned()),
        ("health {".to_owned(), "health 127.0.0.1:0 {".to_owned()),
        (
            "\n    ready\n".to_owned(),
            "\n    ready 127.0.0.1:0\n".to_owned(),
        ),
        (
            "prometheus :9153".to_owned(),
            "prometheus 127.0.0.1:0".to_owned(),
        ),
        (
            "snapshot /var/lib/clusterdns/snapshot.json".to_owned(),
            format!(
                "snapshot {}\n       {connection}\n       {options}",
                snapshot.display()
            ),
        ),
    ] {
        assert!(
            corefile.contains(&from),
            "no {from:?} in the ConfigMap's Corefile:\n{corefile}"
        );
        corefile = corefile.replacen(&from, &to, 1);
    }
    corefile
}

/// A kubeconfig in `dir` for ServiceAccount `namespace/name`, with a token from the
/// TokenRequest API, reaching the API server at `server`.
fn service_account_kubeconfig(
    cluster: &Cluster,
    dir: &Path,
    namespace: &str,
    name: &str,
    server: &str,
) -> PathBuf {
    let token = cluster.token(namespace, name, &["--duration", "2h"]);
    let path = dir.join(format!("{namespace}-{name}.kubeconfig"));
    cluster.write_kubeconfig(&path, server, &format!("    token: {token}"));
    path
}

/// clusterdns with the ConfigMap's Corefile and `options`, as ServiceAccount
/// kube-system/coredns.
fn clusterdns(cluster: &Cluster, options: &str) -> InCluster {
    clusterdns_as(cluster, "kube-system", "coredns", options)
}

/// clusterdns with the ConfigMap's Corefile and `options`, as ServiceAccount
/// `namespace/name`.
fn clusterdns_as(cluster: &Cluster, namespace: &str, name: &str, options: &str) -> InCluster {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig =
        service_account_kubeconfig(cluster, dir.path(), namespace, name, &cluster.url());
    let connection = format!("kubeconfig {}", kubeconfig.display());
    clusterdns_with(cluster, dir, &connection, options)
}

/// clusterdns with the ConfigMap's Corefile, `connection` and `options`; its files in `dir`.
fn clusterdns_with(
    cluster: &Cluster,
    dir: tempfile::TempDir,
    connection: &str,
    options: &str,
) -> InCluster {
    let text = corefile_of_the_configmap(cluster, dir.path(), connection, options);
    serve_corefile(dir, &text)
}

/// clusterdns serving Corefile `text`, written into `dir`.
fn serve_corefile(dir: tempfile::TempDir, text: &str) -> InCluster {
    let corefile = dir.path().join("Corefile");
    std::fs::write(&corefile, text).unwrap();
    let server = TestServer::start(&["serve", "--corefile", corefile.to_str().unwrap()]);
    InCluster { server, dir }
}

fn namespace(name: &str) -> String {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}).to_string()
}

/// A Deployment of `replicas` pods labelled `app: NAME`, each with container port 8080 `http`.
fn deployment(namespace: &str, name: &str, replicas: u32) -> String {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "app", "image": "app",
                    "ports": [{"name": "http", "containerPort": 8080}],
                }]},
            },
        },
    })
    .to_string()
}

/// A Service selecting `app: APP`, port 80 `http` to the pods' `http`, `spec` merged in.
fn service(namespace: &str, name: &str, app: &str, spec: Value) -> String {
    let mut service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"app": app},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
        },
    });
    if let (Some(base), Some(extra)) = (service["spec"].as_object_mut(), spec.as_object()) {
        for (key, value) in extra {
            base.insert(key.clone(), value.clone());
        }
    }
    service.to_string()
}

/// The addresses of the Ready pods labelled `app: APP` in `namespace`, of one family.
fn ready_pod_ips(cluster: &Cluster, namespace: &str, app: &str, ipv6: bool) -> Vec<String> {
    let pods = cluster.get(&["pods", "-n", namespace, "-l", &format!("app={app}")]);
    let mut ips: Vec<String> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|pod| {
            pod["metadata"]["deletionTimestamp"].is_null()
                && pod["status"]["conditions"].as_array().is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
        })
        .flat_map(|pod| {
            pod["status"]["podIPs"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|ip| ip["ip"].as_str().map(str::to_owned))
        .filter(|ip| ip.contains(':') == ipv6)
        .collect();
    ips.sort();
    ips
}

/// Waits until `replicas` pods of `app` are Ready; their IPv4 addresses.
fn wait_ready_pods(cluster: &Cluster, namespace: &str, app: &str, replicas: usize) -> Vec<String> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let ips = ready_pod_ips(cluster, namespace, app, false);
        if ips.len() == replicas {
            return ips;
        }
        assert!(
            Instant::now() < deadline,
            "{namespace}/{app}: {ips:?} Ready, not {replicas}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The ready endpoints' addresses of Service `name`'s slices, as the controller wrote them.
fn slice_addresses(cluster: &Cluster, namespace: &str, name: &str) -> Vec<String> {
    let slices = cluster.get(&[
        "endpointslices",
        "-n",
        namespace,
        "-l",
        &format!("kubernetes.io/service-name={name}"),
    ]);
    let mut ips: Vec<String> = slices["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|slice| slice["addressType"] == "IPv4")
        .flat_map(|slice| slice["endpoints"].as_array().cloned().unwrap_or_default())
        .filter(|endpoint| endpoint["conditions"]["ready"] != json!(false))
        .flat_map(|endpoint| {
            endpoint["addresses"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|ip| ip.as_str().map(str::to_owned))
        .collect();
    ips.sort();
    ips
}

/// `a.b.c.d` as the dashed label of an endpoint name.
fn dashed(ip: &str) -> String {
    ip.replace(['.', ':'], "-")
}

/// `(verb, resource, requestURI)` of each request `user` made, from the audit log.
fn requests_of(cluster: &Cluster, user: &str) -> Vec<(String, String, String)> {
    cluster
        .audit()
        .iter()
        .filter(|event| event["user"]["username"] == user)
        .map(|event| {
            (
                event["verb"].as_str().unwrap_or_default().to_owned(),
                event["objectRef"]["resource"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                event["requestURI"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// ServiceAccount `namespace/name`, bound to deploy/'s ClusterRole system:coredns (or to
/// `role`), as deploy/rbac.yaml binds kube-system/coredns.
fn account(cluster: &Cluster, namespace: &str, name: &str, role: &str) {
    cluster.apply(
        &json!({
            "apiVersion": "v1", "kind": "List",
            "items": [
                {"apiVersion": "v1", "kind": "ServiceAccount",
                 "metadata": {"name": name, "namespace": namespace}},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": format!("clusterdns-test:{namespace}:{name}")},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                             "name": role},
                 "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
            ],
        })
        .to_string(),
    );
}

/// The namespace `ns` with Deployment `app` (`replicas`) behind Services `app` and
/// `app-headless`; the pods' addresses once Ready.
fn workload(cluster: &Cluster, ns: &str, replicas: usize) -> Vec<String> {
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "app", replicas as u32));
    cluster.apply(&service(ns, "app", "app", json!({})));
    cluster.apply(&service(
        ns,
        "app-headless",
        "app",
        json!({"clusterIP": "None"}),
    ));
    wait_ready_pods(cluster, ns, "app", replicas)
}

/// A metric of clusterdns's, 0 when it has no sample yet.
fn metric_or_zero(server: &TestServer, sample: &str) -> f64 {
    let (_, metrics) = server.http_get("metrics", "/metrics");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(sample))
        .map_or(0.0, |value| value.trim().parse().unwrap())
}
