//! The Helm chart (deploy/helm/clusterdns) installed on the real control plane: rendered by
//! the peers' helm and applied server-side, as a release of its own beside kube-system's
//! kustomize install (its own namespace, its cluster-wide objects named after it). The API
//! server keeps every field of every object as the chart wrote it, and the controllers and
//! kwok run the pods.

use super::*;
use crate::common::helm::{Tools, by_id};

/// Whether `stored` (the object as the API server returns it) has every field of `written`,
/// with the same value: the first path where it does not.
fn missing(written: &Value, stored: &Value, path: &str) -> Option<String> {
    match (written, stored) {
        (Value::Object(w), Value::Object(s)) => w.iter().find_map(|(key, value)| {
            let at = format!("{path}.{key}");
            match s.get(key) {
                Some(kept) => missing(value, kept, &at),
                None => Some(format!("{at}: {value} was dropped")),
            }
        }),
        (Value::Array(w), Value::Array(s)) if w.len() == s.len() => w
            .iter()
            .zip(s)
            .enumerate()
            .find_map(|(i, (a, b))| missing(a, b, &format!("{path}[{i}]"))),
        _ if written == stored => None,
        _ => Some(format!("{path}: written {written}, stored {stored}")),
    }
}

#[test]
fn the_chart_applied_server_side_is_accepted_whole_and_runs() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let Some(tools) = Tools::find() else { return };
    let ns = "helm-release";
    // Everything on that the local control plane can hold (it has no prometheus-operator
    // CRDs, so no ServiceMonitor); the API server picks the Service's address.
    let values = "service: {clusterIP: \"\"}\nautoscaler: {enabled: true, name: \"\"}\npodDisruptionBudget: {maxUnavailable: 1}\n";
    let manifest = tools
        .template(ns, ns, values)
        .unwrap_or_else(|e| panic!("helm template: {e}"));
    let objects = by_id(&manifest);
    assert_eq!(objects.len(), 14, "{:?}", objects.keys());
    cluster.apply(&namespace(ns));
    cluster.apply(&manifest);

    for (id, written) in &objects {
        let kind = written["kind"].as_str().unwrap();
        let name = written["metadata"]["name"].as_str().unwrap();
        let mut args = vec![kind, name];
        if let Some(namespace) = written["metadata"]["namespace"].as_str() {
            args.extend(["-n", namespace]);
        }
        let stored = cluster.get(&args);
        if let Some(difference) = missing(written, &stored, "") {
            panic!("{id}: {difference}");
        }
    }

    // The Deployment's pod (the autoscaler owns the replicas: the default of 1 until it
    // runs, and kwok's containers only pretend) and the autoscaler's are created, scheduled
    // and Running.
    for app in ["kube-dns".to_owned(), format!("{ns}-autoscaler")] {
        cluster.wait(&format!("a Running pod of {ns}/{app}"), PATIENCE, || {
            let pods = cluster.get(&["pods", "-n", ns, "-l", &format!("k8s-app={app}")]);
            pods["items"].as_array().is_some_and(|pods| {
                pods.iter().any(|pod| {
                    pod["status"]["phase"] == "Running" && pod["spec"]["nodeName"].is_string()
                })
            })
        });
    }
    // The kube-dns Service selects them: its slice has the pod's address.
    let pods = cluster.get(&["pods", "-n", ns, "-l", "k8s-app=kube-dns"]);
    let ip = pods["items"][0]["status"]["podIP"]
        .as_str()
        .unwrap()
        .to_owned();
    cluster.wait("kube-dns's slice has the pod", PATIENCE, || {
        slice_addresses(cluster, ns, "kube-dns").contains(&ip)
    });

    // Out of the shared cluster again: the namespace and the cluster-wide objects.
    let cluster_wide: Vec<String> = objects
        .values()
        .filter(|o| o["metadata"]["namespace"].is_null())
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap().to_lowercase(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    let mut args = vec!["delete", "--wait=false"];
    args.extend(cluster_wide.iter().map(String::as_str));
    cluster.kubectl(&args);
    cluster.kubectl(&["delete", "namespace", ns, "--wait=false"]);
}
