//! The ClusterRole's grants (list and watch on exactly four kinds) and the Service that selects
//! the pods and exposes DNS and metrics.

use std::collections::BTreeSet;

use k8s_openapi::api::rbac::v1::Subject;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{Object, applied, container, coredns_deployment, find, pod_spec, resolve_port};

#[test]
fn cluster_role_grants_exactly_list_and_watch_on_four_kinds() {
    let manifests = applied();
    let role = find(&manifests, "system:coredns", |o| match o {
        Object::ClusterRole(r) => Some(r),
        _ => None,
    });
    assert!(role.aggregation_rule.is_none());
    let mut grants = BTreeSet::new();
    for rule in role.rules.as_deref().unwrap_or_default() {
        assert!(rule.resource_names.is_none() && rule.non_resource_urls.is_none());
        for group in rule.api_groups.as_deref().unwrap_or_default() {
            for resource in rule.resources.as_deref().unwrap_or_default() {
                for verb in &rule.verbs {
                    grants.insert(format!("{group}/{resource} {verb}"));
                }
            }
        }
    }
    let expected: BTreeSet<String> = [
        "/services",
        "/namespaces",
        "/pods",
        "discovery.k8s.io/endpointslices",
    ]
    .iter()
    .flat_map(|r| [format!("{r} list"), format!("{r} watch")])
    .collect();
    assert_eq!(grants, expected);

    let binding = find(&manifests, "system:coredns", |o| match o {
        Object::ClusterRoleBinding(b) => Some(b),
        _ => None,
    });
    assert_eq!(
        (
            binding.role_ref.api_group.as_deref(),
            binding.role_ref.kind.as_str(),
            binding.role_ref.name.as_str()
        ),
        (
            Some("rbac.authorization.k8s.io"),
            "ClusterRole",
            "system:coredns"
        )
    );
    let account = pod_spec(coredns_deployment(&manifests))
        .service_account_name
        .clone()
        .unwrap();
    let deployment_ns = coredns_deployment(&manifests).metadata.namespace.clone();
    assert_eq!(
        binding.subjects.as_deref(),
        Some(
            &[Subject {
                kind: "ServiceAccount".into(),
                name: account.clone(),
                namespace: deployment_ns.clone(),
                api_group: None,
            }][..]
        )
    );
    let sa = find(&manifests, &account, |o| match o {
        Object::ServiceAccount(s) => Some(s),
        _ => None,
    });
    assert_eq!(sa.metadata.namespace, deployment_ns);
}

#[test]
fn service_selects_the_pods_and_exposes_dns_and_metrics() {
    let manifests = applied();
    let deployment = coredns_deployment(&manifests);
    let service = find(&manifests, "kube-dns", |o| match o {
        Object::Service(s) => Some(&**s),
        _ => None,
    });
    assert_eq!(service.metadata.namespace, deployment.metadata.namespace);
    let spec = service.spec.as_ref().unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.10"), "kind's");
    assert!(spec.type_.is_none() || spec.type_.as_deref() == Some("ClusterIP"));
    let pod_labels = deployment
        .spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    let selector = spec.selector.clone().expect("a selector");
    assert!(!selector.is_empty());
    for (key, value) in &selector {
        assert_eq!(pod_labels.get(key), Some(value), "selector {key}={value}");
    }
    let container = container(deployment);
    let mut exposed = BTreeSet::new();
    for port in spec.ports.as_deref().unwrap_or_default() {
        let protocol = port.protocol.clone().unwrap_or_else(|| "TCP".into());
        let target = port
            .target_port
            .clone()
            .unwrap_or(IntOrString::Int(port.port));
        let (container_port, container_protocol) = resolve_port(container, &target, &protocol);
        assert_eq!(container_protocol, protocol, "{port:?}");
        // Named the same as the container port it reaches, as kubeadm names them.
        let named = container
            .ports
            .as_deref()
            .unwrap()
            .iter()
            .find(|p| {
                p.container_port == container_port
                    && p.protocol.as_deref().unwrap_or("TCP") == protocol
            })
            .unwrap();
        assert_eq!(port.name, named.name);
        exposed.insert((port.name.clone().unwrap(), port.port, protocol));
    }
    let expected: BTreeSet<(String, i32, String)> = [
        ("dns", 53, "UDP"),
        ("dns-tcp", 53, "TCP"),
        ("metrics", 9153, "TCP"),
    ]
    .into_iter()
    .map(|(n, p, proto)| (n.to_owned(), p, proto.to_owned()))
    .collect();
    assert_eq!(exposed, expected);
    let annotations = service.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations.get("prometheus.io/port").map(String::as_str),
        Some("9153")
    );
}
