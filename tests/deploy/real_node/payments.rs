//! The seed lesson's payments incident, live on the real nodes: a Deployment whose new pods
//! rename the container port the Service's `targetPort` names. As the rollout retires the
//! old pods, a client's connections through the ClusterIP land on fewer pods — never on a new
//! one, which the EndpointSlice lists without the port — and then are refused (kube-proxy's
//! REJECT, in either mode). `clusterdns explain` on the live cluster names the cause, and
//! `clusterdns proxy trace` on each node's own ruleset says REJECT; once `targetPort` names
//! the new port, connections land again. The ClusterIP answers TCP but not ping.

use std::collections::BTreeSet;

use serde_json::json;

use super::RealCluster;
use crate::common::cli::clusterdns_env;

/// The Deployment, its container port named `port` (`http` before the incident, `web`
/// after), each pod serving its own name over HTTP on 8080.
fn deployment(port: &str) -> String {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "payments", "namespace": "pay"},
        "spec": {
            "replicas": 3,
            "minReadySeconds": 2,
            "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "selector": {"matchLabels": {"app": "payments"}},
            "template": {
                "metadata": {"labels": {"app": "payments", "port": port}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{
                        "name": "payments",
                        "image": "clusterdns-client:dev",
                        "imagePullPolicy": "Never",
                        "command": ["/bin/sh", "-c",
                            "mkdir -p /tmp/www && hostname > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"],
                        "ports": [{"name": port, "containerPort": 8080}],
                    }],
                },
            },
        },
    })
    .to_string()
}

/// The Service, its `targetPort` naming `port`.
fn service(port: &str) -> String {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "payments", "namespace": "pay"},
        "spec": {
            "selector": {"app": "payments"},
            "ports": [{"name": "http", "port": 80, "targetPort": port}],
        },
    })
    .to_string()
}

/// `count` HTTP requests to payments.pay:80 from `client` (in shop), one every 0.2 s: for
/// each, the pod that answered, `refused`, or `no answer`.
fn connect(real: &RealCluster, client: &str, count: usize) -> Vec<String> {
    let script = format!(
        "for i in $(seq {count}); do \
           out=$(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | timeout 3 nc payments.pay.svc.cluster.local 80 2>&1); \
           case \"$out\" in *refused*) echo refused;; *200\\ OK*) echo \"$out\" | tail -n 1;; *) echo 'no answer';; esac; \
           sleep 0.2; \
         done"
    );
    real.sh("shop", client, &script)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_renamed_container_port_is_refused_and_explain_and_trace_say_why() {
    let Some(real) = RealCluster::shared(
        "real_node::payments::a_renamed_container_port_is_refused_and_explain_and_trace_say_why",
    ) else {
        return;
    };
    let kubectl = real.kubectl();
    kubectl
        .apply(&format!(
            "{}\n---\n{}\n---\n{}",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pay"}}),
            service("http"),
            deployment("http")
        ))
        .unwrap();
    let rollout = || {
        kubectl
            .run(&[
                "rollout",
                "status",
                "deployment/payments",
                "-n",
                "pay",
                "--timeout=120s",
            ])
            .unwrap_or_else(|e| panic!("{e:#}\n{}", real.nodes.pods_report("pay")))
    };
    rollout();
    let pods = |port: &str| -> BTreeSet<String> {
        super::items(&real.get(&["pods", "-n", "pay", "-l", &format!("port={port}")]))
            .iter()
            .filter(|pod| pod["metadata"]["deletionTimestamp"].is_null())
            .map(|pod| pod["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let old = pods("http");
    assert_eq!(old.len(), 3);

    // Before: every connection lands, on the three pods.
    let before = connect(&real, "client-node-1", 30);
    let landed: BTreeSet<&String> = before.iter().filter(|r| old.contains(*r)).collect();
    assert_eq!(
        before.iter().filter(|r| old.contains(*r)).count(),
        30,
        "{before:?}"
    );
    assert!(landed.len() >= 2, "spread over the pods: {before:?}");

    // A ClusterIP is no host: TCP to its port is DNATed, a ping reaches nothing.
    let cluster_ip = real.get(&["service", "payments", "-n", "pay"])["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .to_owned();
    for client in ["client-node-1", "client-node-2"] {
        let ping = real.sh(
            "shop",
            client,
            &format!("ping -c 1 -W 1 {cluster_ip} >/dev/null 2>&1 && echo answered || echo silent"),
        );
        assert_eq!(ping.trim(), "silent", "{client}: ping {cluster_ip}");
    }

    // The rollout renames the port; connections during it and after.
    let (during, _) = std::thread::scope(|scope| {
        let watching = scope.spawn(|| connect(&real, "client-node-2", 80));
        kubectl.apply(&deployment("web")).unwrap();
        rollout();
        (watching.join().unwrap(), ())
    });
    let new = pods("web");
    assert_eq!(new.len(), 3, "{}", real.nodes.pods_report("pay"));
    assert!(
        during.iter().all(|r| !new.contains(r)),
        "a connection landed on a new pod, whose slice entry has no port: {during:?}"
    );
    let after = connect(&real, "client-node-1", 10);
    assert!(
        after.iter().all(|r| r == "refused"),
        "after the rollout: {after:?}"
    );
    let refused_from = during.iter().position(|r| r == "refused");
    eprintln!(
        "real nodes: payments during the rollout (one request every 0.2 s): {}",
        summary(&during)
    );
    assert!(
        refused_from.is_some(),
        "refused before the rollout ended: {during:?}"
    );

    // explain names the cause on the live cluster; trace says REJECT on each node's rules.
    let kubeconfig = real.nodes.plane.kubeconfig.display().to_string();
    let dir = tempfile::tempdir().unwrap();
    for node in &real.nodes.nodes {
        let ruleset = dir.path().join(format!("{}.rules", node.name));
        let dump = match node.proxy_mode {
            xtask::nodes::ProxyMode::Iptables => node.exec("iptables-save", &[]),
            xtask::nodes::ProxyMode::Nftables => {
                node.exec("nft", &["list", "table", "ip", "kube-proxy"])
            }
        }
        .unwrap();
        assert!(
            dump.status.success(),
            "{}",
            String::from_utf8_lossy(&dump.stderr)
        );
        std::fs::write(&ruleset, &dump.stdout).unwrap();
        let ruleset = ruleset.display().to_string();
        let explain = clusterdns_env(
            &[
                "explain",
                "pay/payments",
                "--kubeconfig",
                &kubeconfig,
                "--ruleset",
                &ruleset,
                "--node",
                &node.name,
                "--cluster-cidr",
                xtask::nodes::CLUSTER_CIDR,
                "--dns-server",
                "none",
            ],
            &[],
        );
        finds(&explain, "target-port-unresolved", node);
        let trace = clusterdns_env(
            &[
                "proxy",
                "trace",
                "--ruleset",
                &ruleset,
                "--to",
                &format!("{cluster_ip}:80"),
            ],
            &[],
        );
        finds(&trace, "reject", node);
    }

    // The fix: targetPort names the new port. Connections land again, on the new pods.
    kubectl.apply(&service("web")).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let fixed = connect(&real, "client-node-1", 10);
        if fixed.iter().all(|r| new.contains(r)) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "after the fix: {fixed:?}"
        );
    }
    kubectl
        .run(&["delete", "namespace", "pay", "--wait=false"])
        .unwrap();
}

/// That `run` exited 1 (it found something) and says `what`, for `node`'s rules.
fn finds(run: &crate::common::cli::Run, what: &str, node: &xtask::nodes::Node) {
    assert!(
        run.code == 1 && run.stdout.contains(what),
        "{} ({}): exit {}, no {what:?} in:\n{}{}",
        node.name,
        node.proxy_mode.as_str(),
        run.code,
        run.stdout,
        run.stderr
    );
}

/// Runs of equal outcomes: `3 × payments-x, 1 × refused, ...`, pods by their last name part.
fn summary(outcomes: &[String]) -> String {
    let mut runs: Vec<(String, usize)> = Vec::new();
    for outcome in outcomes {
        let short = outcome.rsplit('-').next().unwrap_or(outcome).to_owned();
        let short = if outcome.starts_with("payments-") {
            short
        } else {
            outcome.clone()
        };
        match runs.last_mut() {
            Some((last, count)) if *last == short => *count += 1,
            _ => runs.push((short, 1)),
        }
    }
    runs.iter()
        .map(|(what, count)| format!("{count}×{what}"))
        .collect::<Vec<_>>()
        .join(" ")
}
