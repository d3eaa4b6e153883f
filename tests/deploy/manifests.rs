//! Every manifest of `deploy/` is a Kubernetes object in kube-system, typed field for field (an
//! unknown field, kind or type fails), and the kustomization applies all of them but the
//! optional autoscaler.

use std::collections::BTreeSet;

use serde::Deserialize;

use super::{AUTOSCALER, KUSTOMIZATION, Manifest, Object, manifests, parse_manifests, yaml_files};
use crate::common::read;

#[test]
fn every_manifest_is_a_kubernetes_object_in_kube_system() {
    let manifests = manifests();
    let ids: BTreeSet<String> = manifests.iter().map(Manifest::id).collect();
    let expected: BTreeSet<String> = [
        "ServiceAccount kube-system/coredns",
        "ClusterRole system:coredns",
        "ClusterRoleBinding system:coredns",
        "ConfigMap kube-system/coredns",
        "Deployment kube-system/coredns",
        "Service kube-system/kube-dns",
        "ServiceAccount kube-system/kube-dns-autoscaler",
        "ClusterRole system:kube-dns-autoscaler",
        "ClusterRoleBinding system:kube-dns-autoscaler",
        "Role kube-system/kube-dns-autoscaler",
        "RoleBinding kube-system/kube-dns-autoscaler",
        "ConfigMap kube-system/kube-dns-autoscaler",
        "Deployment kube-system/kube-dns-autoscaler",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(ids, expected);
    assert_eq!(ids.len(), manifests.len(), "an object is defined twice");
    // Namespaced kinds name their namespace, so `kubectl apply -f` without -n is right.
    for m in &manifests {
        let cluster_scoped = matches!(
            m.object,
            Object::ClusterRole(_) | Object::ClusterRoleBinding(_)
        );
        assert_eq!(
            m.meta().namespace.is_none(),
            cluster_scoped,
            "{}: {}",
            m.file,
            m.id()
        );
    }
}

#[test]
fn an_unknown_field_kind_or_type_fails() {
    // The strictness the other tests rely on.
    let header = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: x\n  namespace: ns\n";
    let good = format!("{header}automountServiceAccountToken: false\n---\n");
    assert_eq!(parse_manifests("good.yaml", &good).unwrap().len(), 1);
    let typo = format!("{header}automountServiceAcountToken: false\n");
    let error = parse_manifests("typo.yaml", &typo).unwrap_err();
    assert!(
        error.starts_with("deploy/typo.yaml, document 1: .automountServiceAcountToken: "),
        "{error}"
    );
    let nested = good.replace("  namespace: ns", "  namespace: ns\n  label: {a: b}");
    let error = parse_manifests("nested.yaml", &nested).unwrap_err();
    assert!(error.contains(": .metadata.label: "), "{error}");
    let wrong_type = format!("{header}automountServiceAccountToken: \"false\"\n");
    assert!(parse_manifests("type.yaml", &wrong_type).is_err());
    let kind = good.replace("kind: ServiceAccount", "kind: ServiceAcount");
    let error = parse_manifests("kind.yaml", &kind).unwrap_err();
    assert!(error.contains("unexpected object"), "{error}");
    let version = good.replace("apiVersion: v1", "apiVersion: apps/v1");
    assert!(parse_manifests("version.yaml", &version).is_err());
    let second = format!("{good}{header}bogus: 1\n");
    let error = parse_manifests("second.yaml", &second).unwrap_err();
    assert!(error.contains("document 2: .bogus"), "{error}");
}

#[test]
fn kustomization_applies_every_manifest_but_the_optional_autoscaler() {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Kustomization {
        api_version: String,
        kind: String,
        resources: Vec<String>,
    }
    let text = read(format!("deploy/{KUSTOMIZATION}"));
    let k: Kustomization = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(
        (k.api_version.as_str(), k.kind.as_str()),
        ("kustomize.config.k8s.io/v1beta1", "Kustomization")
    );
    let listed: BTreeSet<String> = k.resources.iter().cloned().collect();
    assert_eq!(listed.len(), k.resources.len(), "a file listed twice");
    let expected: BTreeSet<String> = yaml_files()
        .into_iter()
        .filter(|f| f != KUSTOMIZATION && f != AUTOSCALER)
        .collect();
    assert_eq!(listed, expected);
}
