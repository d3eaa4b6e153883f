//! clusterdns against the real control plane (tests/common/cluster.rs): etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok's nodes, built from their Go modules. The
//! release's binary runs as deploy/ runs it — the ConfigMap's Corefile, read back from the
//! cluster, and ServiceAccount kube-system/coredns's token from the TokenRequest API, never
//! admin credentials — and is asked over DNS while the real controllers write the slices.
//!
//! Without the peers built (bench/peers/build.sh) these tests say so and pass; `.ci/run`
//! builds them and sets `CLUSTERDNS_REQUIRE_PEERS`, so there they cannot be skipped.
//!
//! The API server stand-in (tests/common/apiserver.rs) keeps the tests of faults a real API
//! server cannot be made to produce; each says why at its head (tests/live.rs,
//! tests/apiserver.rs).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::binary::TestServer;
use crate::common::cluster::Cluster;
use crate::common::{Reply, expect};
use crate::live::{PATIENCE, addresses, eventually, metric, until, until_within};

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

/// The answer's SRV targets (the last field of each record), sorted.
fn srv_targets(reply: &Reply) -> Vec<String> {
    addresses(reply)
}

#[test]
fn a_deployment_scaled_0_5_0_is_answered_from_the_controllers_slices() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "scale";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "web", 0));
    cluster.apply(&service(
        ns,
        "web-headless",
        "web",
        json!({"clusterIP": "None"}),
    ));
    cluster.apply(&service(ns, "web", "web", json!({})));
    let dns = clusterdns(cluster, "");
    let headless = "web-headless.scale.svc.cluster.local.";
    // It waited for the sync before it listened.
    let log = dns.log();
    let synced = log.find("synced with the API server").expect("synced");
    assert!(synced < log.find("listening on udp").unwrap(), "{log}");

    // No pods: the headless Service has no endpoints, NXDOMAIN; the ClusterIP answers.
    assert_eq!(dns.ask_udp(headless, "A").rcode, "NXDOMAIN");
    let cluster_ip = cluster.get(&["service", "web", "-n", ns])["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        dns.ask_udp("web.scale.svc.cluster.local.", "A").answer,
        expect(&[&format!(
            "web.scale.svc.cluster.local. 30 IN A {cluster_ip}"
        )])
    );

    cluster.kubectl(&["scale", "deployment/web", "-n", ns, "--replicas=5"]);
    let ips = wait_ready_pods(cluster, ns, "web", 5);
    let reply = until(&dns, headless, "A", |reply| addresses(reply) == ips);
    assert!(reply.authoritative);
    assert_eq!(
        slice_addresses(cluster, ns, "web-headless"),
        ips,
        "DNS follows the controller's slices"
    );
    // Each endpoint has its dashed name, an SRV per named port, and a PTR.
    let srv = dns.ask_udp("_http._tcp.web-headless.scale.svc.cluster.local.", "SRV");
    let mut targets: Vec<String> = ips
        .iter()
        .map(|ip| format!("{}.web-headless.scale.svc.cluster.local.", dashed(ip)))
        .collect();
    targets.sort();
    assert_eq!(srv_targets(&srv), targets);
    assert!(
        srv.answer.iter().all(|line| line.contains(" 8080 ")),
        "{:?}",
        srv.answer
    );
    assert_eq!(
        srv.additional.len(),
        5,
        "glue for each target: {:?}",
        srv.additional
    );
    let first = &ips[0];
    assert_eq!(
        dns.ask_udp(&targets[0], "A").answer,
        expect(&[&format!("{} 30 IN A {first}", targets[0])])
    );
    let reverse: Vec<&str> = first.split('.').rev().collect();
    let ptr = dns.ask_udp(&format!("{}.in-addr.arpa.", reverse.join(".")), "PTR");
    // One PTR per Service the address is an endpoint of.
    assert_eq!(
        ptr.answer,
        expect(&[
            &format!(
                "{}.in-addr.arpa. 30 IN PTR {}.web-headless.scale.svc.cluster.local.",
                reverse.join("."),
                dashed(first)
            ),
            &format!(
                "{}.in-addr.arpa. 30 IN PTR {}.web.scale.svc.cluster.local.",
                reverse.join("."),
                dashed(first)
            ),
        ])
    );

    // The controller stamps each slice it writes with the trigger time of the change: the
    // programming latency is measured from it, per kind of Service.
    eventually("a programming latency observation", || {
        metric_or_zero(
            &dns,
            "coredns_kubernetes_dns_programming_duration_seconds_count{service_kind=\"headless_with_selector\"} ",
        ) >= 1.0
    });

    // Scaled to 0: kwok takes the pods away, the controller empties the slice, NXDOMAIN again.
    cluster.kubectl(&["scale", "deployment/web", "-n", ns, "--replicas=0"]);
    until(&dns, headless, "A", |reply| reply.rcode == "NXDOMAIN");
    assert!(slice_addresses(cluster, ns, "web-headless").is_empty());
    assert_eq!(
        dns.ask_udp("web.scale.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    // `pods insecure`: the pods are neither listed nor watched (no test runs ServiceAccount
    // kube-system/coredns with `pods verified`).
    let requests = requests_of(cluster, "system:serviceaccount:kube-system:coredns");
    assert!(!requests.is_empty());
    assert!(
        !requests.iter().any(|(_, resource, _)| resource == "pods"),
        "{requests:?}"
    );
}

#[test]
fn a_statefulsets_pods_have_their_own_names_and_srv() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "stateful";
    cluster.apply(&namespace(ns));
    cluster.apply(
        &json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "db", "namespace": ns},
            "spec": {"clusterIP": "None", "selector": {"app": "db"},
                     "ports": [{"name": "pg", "port": 5432}]},
        })
        .to_string(),
    );
    cluster.apply(
        &json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": ns},
            "spec": {
                "serviceName": "db", "replicas": 2, "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "pg", "image": "postgres",
                                             "ports": [{"name": "pg", "containerPort": 5432}]}]},
                },
            },
        })
        .to_string(),
    );
    let dns = clusterdns(cluster, "");
    wait_ready_pods(cluster, ns, "db", 2);
    let ip_of = |pod: &str| -> String {
        cluster.get(&["pod", pod, "-n", ns])["status"]["podIP"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for pod in ["db-0", "db-1"] {
        let name = format!("{pod}.db.stateful.svc.cluster.local.");
        let ip = ip_of(pod);
        until(&dns, &name, "A", |reply| {
            reply.answer == expect(&[&format!("{name} 30 IN A {ip}")])
        });
    }
    let srv = dns.ask_udp("_pg._tcp.db.stateful.svc.cluster.local.", "SRV");
    assert_eq!(
        srv.answer,
        expect(&[
            "_pg._tcp.db.stateful.svc.cluster.local. 30 IN SRV 0 50 5432 db-0.db.stateful.svc.cluster.local.",
            "_pg._tcp.db.stateful.svc.cluster.local. 30 IN SRV 0 50 5432 db-1.db.stateful.svc.cluster.local.",
        ])
    );
    assert_eq!(
        srv.additional,
        expect(&[
            &format!(
                "db-0.db.stateful.svc.cluster.local. 30 IN A {}",
                ip_of("db-0")
            ),
            &format!(
                "db-1.db.stateful.svc.cluster.local. 30 IN A {}",
                ip_of("db-1")
            ),
        ])
    );
}

#[test]
fn a_service_turned_headless_external_and_back_answers_each_shape() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "shapes";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "app", 2));
    let ips = wait_ready_pods(cluster, ns, "app", 2);
    cluster.apply(&service(ns, "flip", "app", json!({})));
    let dns = clusterdns(cluster, "");
    let name = "flip.shapes.svc.cluster.local.";
    let ip = cluster.get(&["service", "flip", "-n", ns])["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .to_owned();
    until(&dns, name, "A", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN A {ip}")])
    });

    // The API server refuses to make a ClusterIP headless in place (spec.clusterIP is
    // immutable): the way there is through ExternalName, which releases the address.
    let refused = cluster.try_kubectl_with(
        &["apply", "--server-side", "-f", "-"],
        &service(ns, "flip", "app", json!({"clusterIP": "None"})),
    );
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("may not change once set")),
        "{refused:?}"
    );
    let external = |target: &str| {
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "flip", "namespace": ns},
            "spec": {"type": "ExternalName", "externalName": target,
                     "ports": [{"name": "http", "port": 80}]},
        })
        .to_string()
    };
    cluster.apply(&external("web.shop.svc.cluster.local"));
    until(&dns, name, "CNAME", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN CNAME web.shop.svc.cluster.local.")])
    });
    cluster.apply(&service(
        ns,
        "flip",
        "app",
        json!({"type": "ClusterIP", "clusterIP": "None"}),
    ));
    until(&dns, name, "A", |reply| addresses(reply) == ips);
    cluster.apply(&external("example.com"));
    until(&dns, name, "CNAME", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN CNAME example.com.")])
    });
    // And back to a ClusterIP: a new address, its PTR, no trace of the other shapes.
    cluster.apply(&service(ns, "flip", "app", json!({"type": "ClusterIP"})));
    let ip = cluster.get(&["service", "flip", "-n", ns])["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .to_owned();
    until(&dns, name, "A", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN A {ip}")])
    });
    assert_eq!(dns.ask_udp(name, "CNAME").answer, Vec::<String>::new());
    let reverse: Vec<&str> = ip.split('.').rev().collect();
    assert_eq!(
        dns.ask_udp(&format!("{}.in-addr.arpa.", reverse.join(".")), "PTR")
            .answer,
        expect(&[&format!(
            "{}.in-addr.arpa. 30 IN PTR {name}",
            reverse.join(".")
        )])
    );
}

#[test]
fn a_dual_stack_service_answers_both_families() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "dual";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "app", 2));
    wait_ready_pods(cluster, ns, "app", 2);
    cluster.apply(&service(
        ns,
        "both",
        "app",
        json!({"ipFamilyPolicy": "RequireDualStack"}),
    ));
    cluster.apply(&service(
        ns,
        "both-headless",
        "app",
        json!({"clusterIP": "None", "ipFamilyPolicy": "RequireDualStack"}),
    ));
    let dns = clusterdns(cluster, "");
    let spec = cluster.get(&["service", "both", "-n", ns])["spec"].clone();
    let ips: Vec<String> = spec["clusterIPs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ip| ip.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ips.len(), 2, "{spec}");
    let (v4, v6) = (&ips[0], &ips[1]);
    let name = "both.dual.svc.cluster.local.";
    until(&dns, name, "A", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN A {v4}")])
    });
    assert_eq!(
        dns.ask_udp(name, "AAAA").answer,
        expect(&[&format!("{name} 30 IN AAAA {v6}")])
    );
    // The IPv6 ClusterIP's PTR, under ip6.arpa.
    let v6_addr: std::net::Ipv6Addr = v6.parse().unwrap();
    let nibbles: String = v6_addr
        .octets()
        .iter()
        .rev()
        .flat_map(|byte| [byte & 0xf, byte >> 4])
        .map(|n| format!("{n:x}."))
        .collect();
    let ptr_name = format!("{nibbles}ip6.arpa.");
    assert_eq!(
        dns.ask_udp(&ptr_name, "PTR").answer,
        expect(&[&format!("{ptr_name} 30 IN PTR {name}")])
    );
    // Headless: one slice per family from the controller, A and AAAA per pod.
    let headless = "both-headless.dual.svc.cluster.local.";
    let pods_v4 = ready_pod_ips(cluster, ns, "app", false);
    let pods_v6 = ready_pod_ips(cluster, ns, "app", true);
    assert_eq!(pods_v6.len(), 2, "kwok gives each pod an IPv6 address too");
    until(&dns, headless, "A", |reply| addresses(reply) == pods_v4);
    until(&dns, headless, "AAAA", |reply| addresses(reply) == pods_v6);
}

#[test]
fn a_deleted_namespace_takes_all_its_names() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "doomed";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "app", 2));
    cluster.apply(&service(ns, "app", "app", json!({})));
    cluster.apply(&service(
        ns,
        "app-headless",
        "app",
        json!({"clusterIP": "None"}),
    ));
    let ips = wait_ready_pods(cluster, ns, "app", 2);
    let dns = clusterdns(cluster, "");
    until(
        &dns,
        "app-headless.doomed.svc.cluster.local.",
        "A",
        |reply| addresses(reply) == ips,
    );
    assert_eq!(
        dns.ask_udp("app.doomed.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );

    cluster.kubectl(&["delete", "namespace", ns, "--wait=false"]);
    for name in [
        "app.doomed.svc.cluster.local.",
        "app-headless.doomed.svc.cluster.local.",
        &format!("{}.app-headless.doomed.svc.cluster.local.", dashed(&ips[0])),
    ] {
        until(&dns, name, "A", |reply| reply.rcode == "NXDOMAIN");
    }
    // The namespace controller emptied it and the API server removed it.
    cluster.wait("namespace doomed gone", PATIENCE, || {
        cluster
            .try_kubectl_with(&["get", "namespace", ns], "")
            .is_err()
    });
    assert_eq!(
        dns.ask_udp("app.doomed.svc.cluster.local.", "A").rcode,
        "NXDOMAIN"
    );
}

#[test]
fn pods_verified_answers_the_real_pods_addresses_only() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "verified";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "app", 1));
    let ip = wait_ready_pods(cluster, ns, "app", 1).remove(0);
    // The ConfigMap says `pods insecure`; a second `pods` line wins, as in CoreDNS.
    account(cluster, ns, "verifier", "system:coredns");
    let dns = clusterdns_as(cluster, ns, "verifier", "pods verified");
    let name = format!("{}.verified.pod.cluster.local.", dashed(&ip));
    until(&dns, &name, "A", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN A {ip}")])
    });
    // An address no pod has, and a real pod's address in another namespace: NXDOMAIN.
    assert_eq!(
        dns.ask_udp("10-244-250-250.verified.pod.cluster.local.", "A")
            .rcode,
        "NXDOMAIN"
    );
    assert_eq!(
        dns.ask_udp(&format!("{}.default.pod.cluster.local.", dashed(&ip)), "A")
            .rcode,
        "NXDOMAIN"
    );
    // The pod goes: so does its name.
    cluster.kubectl(&["scale", "deployment/app", "-n", ns, "--replicas=0"]);
    until(&dns, &name, "A", |reply| reply.rcode == "NXDOMAIN");
    // The audit log: this server listed and watched pods.
    let pods = requests_of(cluster, "system:serviceaccount:verified:verifier")
        .into_iter()
        .filter(|(verb, resource, _)| resource == "pods" && (verb == "list" || verb == "watch"))
        .count();
    assert!(pods >= 1, "no pods requests in the audit log");
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

/// The grants of ClusterRole `name` as the API server holds it: `(group, resource, verb)`.
fn grants(cluster: &Cluster, name: &str) -> Vec<(String, String, String)> {
    let role = cluster.get(&["clusterrole", name]);
    let mut grants = Vec::new();
    for rule in role["rules"].as_array().unwrap() {
        let strings = |key: &str| -> Vec<String> {
            rule[key]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        for group in strings("apiGroups") {
            for resource in strings("resources") {
                for verb in strings("verbs") {
                    grants.push((group.clone(), resource.clone(), verb));
                }
            }
        }
    }
    grants.sort();
    grants
}

/// The ClusterRole of kubeadm's CoreDNS (cmd/kubeadm/app/phases/addons/dns/manifests.go,
/// 1.36): list and watch on endpoints, services, pods, namespaces and endpointslices.
const KUBEADM_COREDNS_GRANTS: &[(&str, &str)] = &[
    ("", "endpoints"),
    ("", "services"),
    ("", "pods"),
    ("", "namespaces"),
    ("discovery.k8s.io", "endpointslices"),
];

#[test]
fn every_grant_of_the_cluster_role_is_needed_and_a_missing_one_is_named() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "rbac";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "app", 1));
    cluster.apply(&service(ns, "app", "app", json!({})));
    let ip = wait_ready_pods(cluster, ns, "app", 1).remove(0);
    let all = grants(cluster, "system:coredns");
    // No wider than kubeadm's CoreDNS: each grant is one of its grants.
    for (group, resource, verb) in &all {
        assert!(
            ["list", "watch"].contains(&verb.as_str())
                && KUBEADM_COREDNS_GRANTS.contains(&(group.as_str(), resource.as_str())),
            "{group}/{resource} {verb} is not in CoreDNS's ClusterRole"
        );
    }
    assert_eq!(all.len(), 8, "{all:?}");

    // For each grant, an account with all the others, and clusterdns running as it with the
    // ConfigMap's Corefile and `pods verified` (so that pods are read too).
    let servers: Vec<((String, String, String), InCluster)> = all
        .iter()
        .map(|grant| {
            let (_, resource, verb) = grant;
            let name = format!("without-{resource}-{verb}");
            let mut rules: Vec<Value> = Vec::new();
            for (g, r, v) in all.iter().filter(|other| *other != grant) {
                rules.push(json!({"apiGroups": [g], "resources": [r], "verbs": [v]}));
            }
            let role = format!("clusterdns-test:{name}");
            cluster.apply(
                &json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": role}, "rules": rules,
                })
                .to_string(),
            );
            account(cluster, ns, &name, &role);
            let server = clusterdns_as(
                cluster,
                ns,
                &name,
                "pods verified\n       startup_timeout 1s",
            );
            (grant.clone(), server)
        })
        .collect();

    for ((group, resource, verb), server) in &servers {
        let user = format!("system:serviceaccount:{ns}:without-{resource}-{verb}");
        // One line names the resource, the verb and the account, and what to grant.
        let needle = format!("forbidden to {verb} {resource}");
        server.wait_log(&needle, PATIENCE);
        let log = server.log();
        let line = log.lines().find(|l| l.contains(&needle)).unwrap();
        assert!(line.contains(&user), "{line}");
        let group_name = if group.is_empty() {
            "\"\""
        } else {
            group.as_str()
        };
        assert!(line.contains(group_name), "{line}");
        // The metrics count the refusals, by resource.
        let (_, metrics) = server.http_get("metrics", "/metrics");
        assert!(
            metric(
                &metrics,
                "clusterdns_kubernetes_api_requests_total{code=\"403\",zone=\"cluster.local.\"} "
            ) >= 1.0
        );
        assert!(
            metric(
                &metrics,
                &format!(
                    "clusterdns_kubernetes_watch_errors_total{{resource=\"{resource}\",zone=\"cluster.local.\"}} "
                )
            ) >= 1.0
        );
        // What it still answers. Without a list nothing is ever whole: the cluster zone is
        // SERVFAIL (never a false NXDOMAIN) and /ready says it has not synced. Without a
        // watch, the listed state is served and /ready says the API server is failing.
        let (status, body) = server.http_get("ready", "/ready");
        let app = server.ask_udp("app.rbac.svc.cluster.local.", "A");
        let pod = server.ask_udp(&format!("{}.rbac.pod.cluster.local.", dashed(&ip)), "A");
        if verb == "list" {
            assert_eq!(status, 503, "{resource}: {body}");
            assert!(body.contains("not synced"), "{body}");
            assert_eq!(app.rcode, "SERVFAIL", "{resource}: {app:?}");
        } else {
            assert_eq!(status, 200, "{resource}: {body}");
            assert!(body.contains(&needle), "{resource}: {body}");
            assert_eq!(app.rcode, "NOERROR", "{resource}: {app:?}");
            assert_eq!(pod.rcode, "NOERROR", "{resource}: {pod:?}");
        }
    }

    // The grant given back (the role of one of them made deploy/'s whole again): picked up at
    // the next retry, no restart.
    let ((_, resource, verb), server) = &servers[0];
    let rules: Vec<Value> = all
        .iter()
        .map(|(g, r, v)| json!({"apiGroups": [g], "resources": [r], "verbs": [v]}))
        .collect();
    cluster.apply(
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": format!("clusterdns-test:without-{resource}-{verb}")},
            "rules": rules,
        })
        .to_string(),
    );
    until_within(RECOVERY, server, "app.rbac.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    eventually("ready once granted", || {
        server.http_get("ready", "/ready").0 == 200
    });
}

#[test]
fn both_list_modes_sync_the_same_zone_with_the_requests_they_name() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "modes";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "app", 3));
    cluster.apply(&service(ns, "app", "app", json!({})));
    cluster.apply(&service(
        ns,
        "app-headless",
        "app",
        json!({"clusterIP": "None"}),
    ));
    let ips = wait_ready_pods(cluster, ns, "app", 3);
    account(cluster, ns, "streaming", "system:coredns");
    account(cluster, ns, "paginated", "system:coredns");
    let streaming = clusterdns_as(cluster, ns, "streaming", "list_mode streaming");
    let paginated = clusterdns_as(cluster, ns, "paginated", "list_mode paginated");
    for dns in [&streaming, &paginated] {
        until(dns, "app-headless.modes.svc.cluster.local.", "A", |reply| {
            addresses(reply) == ips
        });
    }
    for (name, qtype) in [
        ("app.modes.svc.cluster.local.", "A"),
        ("app-headless.modes.svc.cluster.local.", "A"),
        ("_http._tcp.app.modes.svc.cluster.local.", "SRV"),
        ("kube-dns.kube-system.svc.cluster.local.", "A"),
        ("kubernetes.default.svc.cluster.local.", "A"),
        ("nope.modes.svc.cluster.local.", "A"),
        ("cluster.local.", "SOA"),
    ] {
        let (a, b) = (
            streaming.ask_udp(name, qtype),
            paginated.ask_udp(name, qtype),
        );
        assert_eq!(
            (&a.rcode, &a.answer, &a.additional),
            (&b.rcode, &b.answer, &b.additional),
            "{name} {qtype}"
        );
    }
    // What each sent, from the audit log: the streaming one watched with
    // sendInitialEvents=true and never listed; the paginated one listed in pages of 500.
    let streamed = requests_of(cluster, &format!("system:serviceaccount:{ns}:streaming"));
    assert!(
        streamed.iter().all(|(verb, _, _)| verb == "watch"),
        "{streamed:?}"
    );
    for resource in ["services", "endpointslices", "namespaces"] {
        assert!(
            streamed
                .iter()
                .any(|(_, r, uri)| r == resource && uri.contains("sendInitialEvents=true")),
            "{resource}: {streamed:?}"
        );
    }
    let paged = requests_of(cluster, &format!("system:serviceaccount:{ns}:paginated"));
    for resource in ["services", "endpointslices", "namespaces"] {
        assert!(
            paged
                .iter()
                .any(|(verb, r, uri)| verb == "list" && r == resource && uri.contains("limit=500")),
            "{resource}: {paged:?}"
        );
        assert!(
            paged
                .iter()
                .any(|(verb, r, _)| verb == "watch" && r == resource)
        );
    }
}

#[test]
fn filters_are_sent_as_server_side_selectors() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    for ns in ["filtered", "elsewhere"] {
        cluster.apply(&namespace(ns));
        for (name, tier) in [("front", "web"), ("back", "db")] {
            let mut svc: Value = serde_json::from_str(&service(ns, name, name, json!({}))).unwrap();
            svc["metadata"]["labels"] = json!({"tier": tier});
            cluster.apply(&svc.to_string());
        }
    }
    let ns = "filtered";
    account(cluster, ns, "selective", "system:coredns");
    let dns = clusterdns_as(
        cluster,
        ns,
        "selective",
        "namespaces filtered\n       labels tier=web",
    );
    until(&dns, "front.filtered.svc.cluster.local.", "A", |reply| {
        reply.rcode == "NOERROR"
    });
    // The other Service of the namespace, and the other namespace, are not served.
    assert_eq!(
        dns.ask_udp("back.filtered.svc.cluster.local.", "A").rcode,
        "NXDOMAIN"
    );
    assert_ne!(
        dns.ask_udp("front.elsewhere.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    let sent = requests_of(cluster, &format!("system:serviceaccount:{ns}:selective"));
    let find = |resource: &str| -> Vec<&String> {
        sent.iter()
            .filter(|(_, r, _)| r == resource)
            .map(|(_, _, uri)| uri)
            .collect()
    };
    // One namespace: its objects are read under /namespaces/filtered/, the namespace itself
    // by a field selector; the label selector goes with services and endpointslices.
    for uri in find("services").into_iter().chain(find("endpointslices")) {
        assert!(uri.contains("/namespaces/filtered/"), "{uri}");
        assert!(uri.contains("labelSelector=tier%3Dweb"), "{uri}");
    }
    let namespaces = find("namespaces");
    assert!(!namespaces.is_empty());
    for uri in namespaces {
        assert!(
            uri.contains("fieldSelector=metadata.name%3Dfiltered"),
            "{uri}"
        );
    }
}

#[test]
fn a_client_certificate_signed_by_the_cluster_ca_reaches_the_api_server() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("client.crt"), dir.path().join("client.key"));
    let pki = cluster.dir().join("pki");
    let run = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let csr = dir.path().join("client.csr");
    // With an extension the certificate is X.509 v3, which rustls requires.
    let ext = dir.path().join("client.ext");
    std::fs::write(&ext, "extendedKeyUsage=clientAuth\n").unwrap();
    run(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        key.to_str().unwrap(),
        "-out",
        csr.to_str().unwrap(),
        "-subj",
        "/CN=clusterdns-client",
    ]);
    run(&[
        "x509",
        "-req",
        "-in",
        csr.to_str().unwrap(),
        "-CA",
        pki.join("ca.crt").to_str().unwrap(),
        "-CAkey",
        pki.join("ca.key").to_str().unwrap(),
        "-CAcreateserial",
        "-CAserial",
        dir.path().join("ca.srl").to_str().unwrap(),
        "-days",
        "1",
        "-extfile",
        ext.to_str().unwrap(),
        "-out",
        cert.to_str().unwrap(),
    ]);
    cluster.apply(
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "clusterdns-test:client-certificate"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:coredns"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                          "name": "clusterdns-client"}],
        })
        .to_string(),
    );
    let connection = format!(
        "endpoint {}\n       tls {} {} {}",
        cluster.url(),
        cert.display(),
        key.display(),
        cluster.ca().display()
    );
    let stranger_dir = dir.path().join("stranger");
    std::fs::create_dir(&stranger_dir).unwrap();
    let dns = clusterdns_with(cluster, dir, &connection, "");
    assert!(
        dns.log().contains("synced with the API server"),
        "{}",
        dns.log()
    );
    assert_eq!(
        dns.ask_udp("kube-dns.kube-system.svc.cluster.local.", "A")
            .answer,
        expect(&["kube-dns.kube-system.svc.cluster.local. 30 IN A 10.96.0.10"])
    );

    // The same name from a CA of its own, which the API server does not trust: refused,
    // never synced, and said.
    let (ca_key, ca_cert) = (stranger_dir.join("ca.key"), stranger_dir.join("ca.crt"));
    run(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-keyout",
        ca_key.to_str().unwrap(),
        "-out",
        ca_cert.to_str().unwrap(),
        "-subj",
        "/CN=stranger-ca",
    ]);
    let (cert, key) = (
        stranger_dir.join("client.crt"),
        stranger_dir.join("client.key"),
    );
    let csr = stranger_dir.join("client.csr");
    run(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        key.to_str().unwrap(),
        "-out",
        csr.to_str().unwrap(),
        "-subj",
        "/CN=clusterdns-client",
    ]);
    run(&[
        "x509",
        "-req",
        "-in",
        csr.to_str().unwrap(),
        "-CA",
        ca_cert.to_str().unwrap(),
        "-CAkey",
        ca_key.to_str().unwrap(),
        "-CAcreateserial",
        "-CAserial",
        stranger_dir.join("ca.srl").to_str().unwrap(),
        "-days",
        "1",
        "-extfile",
        ext.to_str().unwrap(),
        "-out",
        cert.to_str().unwrap(),
    ]);
    let connection = format!(
        "endpoint {}\n       tls {} {} {}",
        cluster.url(),
        cert.display(),
        key.display(),
        cluster.ca().display()
    );
    let stranger = clusterdns_with(
        cluster,
        tempfile::tempdir().unwrap(),
        &connection,
        "startup_timeout 1s",
    );
    assert_eq!(
        stranger
            .ask_udp("kube-dns.kube-system.svc.cluster.local.", "A")
            .rcode,
        "SERVFAIL"
    );
    stranger.wait_log("the credentials were refused", PATIENCE);
    assert_eq!(stranger.http_get("ready", "/ready").0, 503);
}

#[test]
fn the_kubeconfig_context_the_corefile_names_is_the_one_used() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "contexts";
    cluster.apply(&namespace(ns));
    cluster.apply(&service(ns, "web", "web", json!({})));
    account(cluster, ns, "reader", "system:coredns");
    // Two users: one with a token whose Secret is gone (refused), one with a good token; the
    // current context is the refused one.
    cluster.kubectl(&["create", "secret", "generic", "revoked", "-n", ns]);
    let revoked = cluster.token(
        ns,
        "reader",
        &[
            "--bound-object-kind",
            "Secret",
            "--bound-object-name",
            "revoked",
        ],
    );
    cluster.kubectl(&["delete", "secret", "revoked", "-n", ns]);
    let good = cluster.token(ns, "reader", &["--duration", "1h"]);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let text = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: stale
  user:
    token: {revoked}
- name: reader
  user:
    token: {good}
contexts:
- name: stale
  context: {{cluster: local, user: stale}}
- name: kind-kind
  context: {{cluster: local, user: reader}}
current-context: stale
",
        server = cluster.url(),
        ca = cluster.ca().display()
    );
    std::fs::write(&kubeconfig, text).unwrap();
    let right = clusterdns_with(
        cluster,
        tempfile::tempdir().unwrap(),
        &format!("kubeconfig {} kind-kind", kubeconfig.display()),
        "",
    );
    until(&right, "web.contexts.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    // Without a context, the current one: its token is refused.
    let wrong = clusterdns_with(
        cluster,
        tempfile::tempdir().unwrap(),
        &format!("kubeconfig {}", kubeconfig.display()),
        "startup_timeout 1s",
    );
    assert_eq!(
        wrong.ask_udp("web.contexts.svc.cluster.local.", "A").rcode,
        "SERVFAIL"
    );
    wrong.wait_log("the credentials were refused", PATIENCE);
    let (status, body) = wrong.http_get("ready", "/ready");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("401 Unauthorized"), "{body}");
}

#[test]
fn a_reload_that_keeps_the_block_keeps_the_watch() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "reloads";
    cluster.apply(&namespace(ns));
    cluster.apply(&service(ns, "web", "web", json!({})));
    account(cluster, ns, "reloader", "system:coredns");
    let dns = clusterdns_as(cluster, ns, "reloader", "");
    until(&dns, "web.reloads.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    let user = format!("system:serviceaccount:{ns}:reloader");
    let lists = || {
        requests_of(cluster, &user)
            .iter()
            .filter(|(verb, _, _)| verb == "list")
            .count()
    };
    let before = lists();
    // The ConfigMap's Corefile has `reload` (every 30 s): change it outside the block.
    let path = dns.dir.path().join("Corefile");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("    loadbalance\n"), "{text}");
    std::fs::write(
        &path,
        text.replace("    loadbalance\n", "    loadbalance\n    any\n"),
    )
    .unwrap();
    dns.wait_log("Corefile reloaded", Duration::from_secs(90));
    assert_eq!(
        dns.ask_udp("web.reloads.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    cluster.apply(&service(ns, "after-reload", "web", json!({})));
    until(&dns, "after-reload.reloads.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    assert_eq!(
        lists(),
        before,
        "the watch was kept: no list since the reload"
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

#[test]
fn a_restarted_api_server_is_ridden_out_and_followed_again() {
    let _turn = private_turn();
    let Some(cluster) = Cluster::private() else {
        return;
    };
    cluster.apply_deploy();
    let ns = "restart";
    workload(&cluster, ns, 2);
    cluster.apply(&service(ns, "leaving", "app", json!({})));
    let dns = clusterdns(&cluster, "");
    until(&dns, "leaving.restart.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    let snapshot = dns.dir.path().join("snapshot.json");
    eventually("the snapshot file written", || snapshot.exists());
    let configmap = configmap_corefile(&cluster);

    cluster.script(&["stop", "kube-apiserver"]);
    dns.wait_log("API server request failed", PATIENCE);
    // The last state is served, NXDOMAIN stays NXDOMAIN (it has synced), and it is said.
    assert_eq!(
        dns.ask_udp("leaving.restart.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    assert_eq!(
        dns.ask_udp("nope.restart.svc.cluster.local.", "A").rcode,
        "NXDOMAIN"
    );
    let (status, body) = dns.http_get("ready", "/ready");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("API server failing for"), "{body}");
    assert_eq!(
        metric_or_zero(
            &dns,
            "clusterdns_kubernetes_api_up{zone=\"cluster.local.\"} "
        ),
        0.0
    );
    assert!(
        metric_or_zero(
            &dns,
            "clusterdns_kubernetes_api_requests_total{code=\"error\",zone=\"cluster.local.\"} "
        ) >= 1.0
    );

    // A replica started meanwhile serves the snapshot file the first one wrote, at once,
    // and says so; what it does not know is SERVFAIL, never NXDOMAIN, until it syncs.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&snapshot, dir.path().join("snapshot.json")).unwrap();
    let kubeconfig = service_account_kubeconfig_offline(&dns, dir.path());
    let text = adapted(
        &configmap,
        dir.path(),
        &format!("kubeconfig {}", kubeconfig.display()),
        "",
    );
    let second = serve_corefile(dir, &text);
    let from_snapshot = second.ask_udp("leaving.restart.svc.cluster.local.", "A");
    assert_eq!(from_snapshot.rcode, "NOERROR");
    assert!(
        from_snapshot.message.answers.iter().all(|r| r.ttl <= 5),
        "a snapshot's answers live 5 s at most: {from_snapshot:?}"
    );
    assert_eq!(
        second.ask_udp("nope.restart.svc.cluster.local.", "A").rcode,
        "SERVFAIL"
    );
    assert!(
        metric_or_zero(
            &second,
            "clusterdns_kubernetes_snapshot_age_seconds{zone=\"cluster.local.\"} "
        ) > 0.0
    );
    let (status, body) = second.http_get("ready", "/ready");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("serving the snapshot file"), "{body}");

    // Back, and changed at once, while the watch is still backing off.
    cluster.script(&["start", "kube-apiserver"]);
    cluster.kubectl(&["delete", "service", "leaving", "-n", ns]);
    cluster.apply(&service(ns, "arriving", "app", json!({})));
    cluster.kubectl(&["scale", "deployment/app", "-n", ns, "--replicas=3"]);
    let ips = wait_ready_pods(&cluster, ns, "app", 3);
    until_within(
        RECOVERY,
        &dns,
        "leaving.restart.svc.cluster.local.",
        "A",
        |r| r.rcode == "NXDOMAIN",
    );
    until(&dns, "arriving.restart.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    until(&dns, "app-headless.restart.svc.cluster.local.", "A", |r| {
        addresses(r) == ips
    });
    dns.wait_log("API server answers again", RECOVERY);
    for server in [&dns, &second] {
        eventually("/ready OK again", || {
            server.http_get("ready", "/ready") == (200, "OK".to_owned())
        });
        assert_eq!(
            metric_or_zero(
                server,
                "clusterdns_kubernetes_api_up{zone=\"cluster.local.\"} "
            ),
            1.0
        );
    }
    second.wait_log("synced with the API server", RECOVERY);
    let (_, metrics) = second.http_get("metrics", "/metrics");
    assert!(
        !metrics.contains("snapshot_age"),
        "synced: no snapshot age any more"
    );
    until(&second, "leaving.restart.svc.cluster.local.", "A", |r| {
        r.rcode == "NXDOMAIN"
    });
    until(
        &second,
        "app-headless.restart.svc.cluster.local.",
        "A",
        |r| addresses(r) == ips,
    );
}

/// The kubeconfig `dns` was started with (its token is still good), copied into `dir`.
fn service_account_kubeconfig_offline(dns: &InCluster, dir: &Path) -> PathBuf {
    let source = std::fs::read_dir(dns.dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|e| e == "kubeconfig"))
        .expect("the first server's kubeconfig");
    let copy = dir.join(source.file_name().unwrap());
    std::fs::copy(&source, &copy).unwrap();
    copy
}

#[test]
fn after_etcd_compacts_a_resumed_watch_gets_410_gone_and_relists() {
    let _turn = private_turn();
    // The API server compacts etcd itself, every 5 s here (5 min by default). Its watch
    // cache answers 410 only for a watch from before the cache's own window, which etcd's
    // compaction does not move: with the services' cache off, as some clusters run, etcd
    // serves their watches and a watch from before the compaction is 410 Gone.
    let Some(cluster) = Cluster::start(&[
        "--compaction-interval",
        "5s",
        "--watch-cache-sizes",
        "services#0",
    ]) else {
        return;
    };
    cluster.apply_deploy();
    let ns = "compact";
    workload(&cluster, ns, 1);
    cluster.apply(&service(ns, "leaving", "app", json!({})));
    // clusterdns reaches the API server through a relay the test can cut: a partition
    // between this one client and the API server, the cluster going on meanwhile.
    let partition =
        crate::common::partition::Partition::start(([127, 0, 0, 1], cluster.api_port).into());
    let dir = tempfile::tempdir().unwrap();
    let relayed = format!("https://{}", partition.addr());
    let kubeconfig =
        service_account_kubeconfig(&cluster, dir.path(), "kube-system", "coredns", &relayed);
    let dns = clusterdns_with(
        &cluster,
        dir,
        &format!("kubeconfig {}", kubeconfig.display()),
        "",
    );
    until(&dns, "leaving.compact.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    let list: Value = serde_json::from_str(&cluster.kubectl(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{ns}/services"),
    ]))
    .unwrap();
    let before: String = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();

    partition.cut();
    dns.wait_log("API server request failed", PATIENCE);
    cluster.kubectl(&["delete", "service", "leaving", "-n", ns]);
    cluster.apply(&service(ns, "arriving", "app", json!({})));
    // The API server's compactor compacts etcd to the revision of its previous round: from
    // then on a watch from before the changes is answered 410 Gone. Seen from here, as admin.
    cluster.wait("the watch cache compacted", Duration::from_secs(60), || {
        let events = cluster.kubectl(&[
            "get",
            "--raw",
            &format!("/api/v1/namespaces/{ns}/services?watch=true&resourceVersion={before}&timeoutSeconds=1"),
        ]);
        events.contains("\"code\":410")
    });

    partition.heal();
    until_within(
        RECOVERY,
        &dns,
        "leaving.compact.svc.cluster.local.",
        "A",
        |r| r.rcode == "NXDOMAIN",
    );
    let arriving = until(&dns, "arriving.compact.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    assert_eq!(arriving.answer.len(), 1, "no double: {arriving:?}");
    dns.wait_log("re-listing", PATIENCE);
    assert!(
        metric_or_zero(
            &dns,
            "clusterdns_kubernetes_relists_total{resource=\"services\",zone=\"cluster.local.\"} "
        ) >= 1.0
    );
    // The state is whole: every Service of the namespace answers, once.
    for name in ["app", "arriving"] {
        let reply = dns.ask_udp(&format!("{name}.compact.svc.cluster.local."), "A");
        assert_eq!(reply.answer.len(), 1, "{name}: {reply:?}");
    }
}

#[test]
fn priority_and_fairness_rejections_are_retried_as_retry_after_says() {
    let _turn = private_turn();
    let Some(cluster) = Cluster::private() else {
        return;
    };
    cluster.apply_deploy();
    // A priority level with no seats of its own, lending and borrowing none, rejecting what
    // it cannot run, and a flow schema putting kube-system/coredns and kube-system/hog in it.
    // Priority and fairness runs one request of such a level while none of it runs; the hog
    // keeps one running (a list waiting 3 s for a resourceVersion that never comes), so every
    // request of clusterdns's is rejected: 429, with a Retry-After that grows while it lasts.
    account(&cluster, "kube-system", "hog", "system:coredns");
    let subject = |name: &str| json!({"kind": "ServiceAccount", "serviceAccount": {"name": name, "namespace": "kube-system"}});
    cluster.apply(
        &json!({
            "apiVersion": "v1", "kind": "List",
            "items": [
                {"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                 "kind": "PriorityLevelConfiguration",
                 "metadata": {"name": "clusterdns-test-starved"},
                 "spec": {"type": "Limited", "limited": {
                     "nominalConcurrencyShares": 0, "lendablePercent": 0,
                     "borrowingLimitPercent": 0, "limitResponse": {"type": "Reject"}}}},
                {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                 "metadata": {"name": "clusterdns-test-starved"},
                 "spec": {
                     "priorityLevelConfiguration": {"name": "clusterdns-test-starved"},
                     "matchingPrecedence": 100,
                     "distinguisherMethod": {"type": "ByUser"},
                     "rules": [{
                         "subjects": [subject("coredns"), subject("hog")],
                         "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                            "resources": ["*"], "clusterScope": true,
                                            "namespaces": ["*"]}]}]}},
            ],
        })
        .to_string(),
    );
    cluster.wait("the flow schema in force", PATIENCE, || {
        let schema = cluster.get(&["flowschema", "clusterdns-test-starved"]);
        schema["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Dangling" && c["status"] == "False")
        })
    });
    let hogging = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let hog = {
        let hogging = std::sync::Arc::clone(&hogging);
        let token = cluster.token("kube-system", "hog", &[]);
        let url = format!(
            "{}/api/v1/services?resourceVersion=999999999&resourceVersionMatch=NotOlderThan&limit=1",
            cluster.url()
        );
        let ca = cluster.ca();
        std::thread::spawn(move || {
            while hogging.load(std::sync::atomic::Ordering::Acquire) {
                let _ = std::process::Command::new("curl")
                    .args(["-s", "-o", "/dev/null", "--cacert"])
                    .arg(&ca)
                    .args(["-H", &format!("Authorization: Bearer {token}"), &url])
                    .status();
            }
        })
    };
    let dns = clusterdns(&cluster, "startup_timeout 1s");
    std::thread::sleep(Duration::from_secs(10));
    // Never admitted: not synced, SERVFAIL rather than a false NXDOMAIN, and said.
    assert_eq!(dns.http_get("ready", "/ready").0, 503);
    assert_eq!(
        dns.ask_udp("kube-dns.kube-system.svc.cluster.local.", "A")
            .rcode,
        "SERVFAIL"
    );
    assert!(
        metric_or_zero(
            &dns,
            "clusterdns_kubernetes_api_requests_total{code=\"429\",zone=\"cluster.local.\"} "
        ) >= 1.0,
        "{}",
        dns.log()
    );
    // The audit log has each rejected request: the same request is asked again no sooner
    // than Retry-After (a second at least) says, not at kube's own 5 ms backoff.
    let mut asked: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut seen = std::collections::HashSet::new();
    for event in cluster.audit() {
        if event["user"]["username"] != "system:serviceaccount:kube-system:coredns"
            || event["responseStatus"]["code"] != 429
            || !seen.insert(event["auditID"].to_string())
        {
            continue;
        }
        let at = seconds_of(
            event["requestReceivedTimestamp"]
                .as_str()
                .unwrap_or_default(),
        );
        let uri = event["requestURI"].as_str().unwrap_or_default().to_owned();
        asked.entry(uri).or_default().push(at);
    }
    let rejected: usize = asked.values().map(Vec::len).sum();
    assert!(rejected >= 3, "{asked:?}");
    for (uri, times) in &mut asked {
        times.sort_by(f64::total_cmp);
        for pair in times.windows(2) {
            let gap = pair[1] - pair[0];
            assert!(
                gap >= 0.9,
                "{uri} asked again {gap:.3} s after a 429: {times:?}"
            );
        }
    }
    // The hog gone, the next retry is admitted and the watch syncs.
    hogging.store(false, std::sync::atomic::Ordering::Release);
    hog.join().unwrap();
    let stopped = Instant::now();
    eventually("synced once admitted", || {
        dns.http_get("ready", "/ready").0 == 200
    });
    assert_eq!(
        dns.ask_udp("kube-dns.kube-system.svc.cluster.local.", "A")
            .answer,
        expect(&["kube-dns.kube-system.svc.cluster.local. 30 IN A 10.96.0.10"])
    );
    eprintln!(
        "{rejected} requests rejected with 429 in 10 s; synced {:.1} s after the hog stopped",
        stopped.elapsed().as_secs_f64()
    );
}

/// Seconds of an RFC 3339 timestamp with a fractional part (`2026-12-01T20:01:02.123456Z`),
/// from the start of its day: enough to compare times within a test.
fn seconds_of(at: &str) -> f64 {
    let time = at
        .split('T')
        .nth(1)
        .unwrap_or_default()
        .trim_end_matches('Z');
    let mut parts = time.split(':');
    let h: f64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0.0);
    let m: f64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0.0);
    let s: f64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0.0);
    h * 3600.0 + m * 60.0 + s
}

#[test]
fn a_rotated_token_file_is_read_again_and_the_watch_carries_on() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "tokens";
    workload(cluster, ns, 1);
    account(cluster, ns, "rotating", "system:coredns");
    // Tokens bound to a Secret each: deleting the Secret ends its token at once, as expiry
    // would (the TokenRequest API issues nothing shorter than 10 minutes).
    for secret in ["token-a", "token-b"] {
        cluster.kubectl(&["create", "secret", "generic", secret, "-n", ns]);
    }
    let bound = |secret: &str| {
        cluster.token(
            ns,
            "rotating",
            &[
                "--bound-object-kind",
                "Secret",
                "--bound-object-name",
                secret,
                "--duration",
                "1h",
            ],
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    // Written as the kubelet writes a projected token: a new file renamed over the old.
    let rotate = |token: &str| {
        let next = dir.path().join("token.next");
        std::fs::write(&next, token).unwrap();
        std::fs::rename(&next, &token_file).unwrap();
    };
    rotate(&bound("token-a"));
    let partition =
        crate::common::partition::Partition::start(([127, 0, 0, 1], cluster.api_port).into());
    let kubeconfig = dir.path().join("kubeconfig");
    cluster.write_kubeconfig(
        &kubeconfig,
        &format!("https://{}", partition.addr()),
        &format!("    tokenFile: {}", token_file.display()),
    );
    let connection = format!("kubeconfig {}", kubeconfig.display());
    let dns = clusterdns_with(cluster, tempfile::tempdir().unwrap(), &connection, "");
    until(&dns, "app.tokens.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });

    rotate(&bound("token-b"));
    // kube reads a token file again once its copy is 50 s old; the old token stays good
    // meanwhile, as a projected token does until it expires.
    std::thread::sleep(Duration::from_secs(55));
    cluster.kubectl(&["delete", "secret", "token-a", "-n", ns]);
    // Every connection dropped: the watches come back with the token now in the file.
    partition.cut();
    partition.heal();
    cluster.apply(&service(ns, "after-rotation", "app", json!({})));
    until_within(
        RECOVERY,
        &dns,
        "after-rotation.tokens.svc.cluster.local.",
        "A",
        |r| r.rcode == "NOERROR",
    );
    assert_eq!(
        metric_or_zero(
            &dns,
            "clusterdns_kubernetes_api_requests_total{code=\"401\",zone=\"cluster.local.\"} "
        ),
        0.0,
        "{}",
        dns.log()
    );
}

#[test]
fn k8s_external_answers_the_addresses_written_into_a_services_status() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "external";
    cluster.apply(&namespace(ns));
    cluster.apply(&service(ns, "lb", "lb", json!({"type": "LoadBalancer"})));
    cluster.apply(&service(ns, "internal", "internal", json!({})));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = service_account_kubeconfig(
        cluster,
        dir.path(),
        "kube-system",
        "coredns",
        &cluster.url(),
    );
    let mut text = corefile_of_the_configmap(
        cluster,
        dir.path(),
        &format!("kubeconfig {}", kubeconfig.display()),
        "",
    );
    assert!(text.contains("    loadbalance\n"), "{text}");
    text = text.replace(
        "    loadbalance\n",
        "    loadbalance\n    k8s_external example.org\n",
    );
    let dns = serve_corefile(dir, &text);
    assert_eq!(
        dns.ask_udp("lb.external.example.org.", "A").rcode,
        "NXDOMAIN"
    );
    // What a cloud's controller does: an address in the load balancer's status; and an
    // external address in a ClusterIP Service's spec.
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.99"}]}}});
    cluster.kubectl(&[
        "patch",
        "service",
        "lb",
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
    cluster.kubectl(&[
        "patch",
        "service",
        "internal",
        "-n",
        ns,
        "--type=merge",
        "-p",
        r#"{"spec": {"externalIPs": ["192.0.2.40"]}}"#,
    ]);
    until(&dns, "lb.external.example.org.", "A", |r| {
        r.answer == expect(&["lb.external.example.org. 5 IN A 203.0.113.99"])
    });
    until(&dns, "internal.external.example.org.", "A", |r| {
        r.answer == expect(&["internal.external.example.org. 5 IN A 192.0.2.40"])
    });
}
