//! The optional cluster-proportional-autoscaler: its `linear` parameters, typed, scale the
//! coredns Deployment.

use k8s_openapi::api::rbac::v1::Subject;
use serde::Deserialize;
use serde_json::Value;

use super::{
    Object, applied, autoscaler, container, coredns_deployment, find, kind_section, pod_spec,
    strings,
};

/// `linear` parameters of cluster-proportional-autoscaler (every field it knows, so that a
/// misspelt one fails).
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Linear {
    cores_per_replica: Option<f64>,
    nodes_per_replica: Option<f64>,
    min: Option<u32>,
    max: Option<u32>,
    prevent_single_point_failure: Option<bool>,
    include_unschedulable_nodes: Option<bool>,
}

#[test]
fn autoscaler_scales_the_coredns_deployment() {
    let applied = applied();
    let target = coredns_deployment(&applied);
    let manifests = autoscaler();
    let deployment = find(&manifests, "kube-dns-autoscaler", |o| match o {
        Object::Deployment(d) => Some(&**d),
        _ => None,
    });
    let container = container(deployment);
    let command = container.command.clone().unwrap();
    let flag = |name: &str| -> String {
        command
            .iter()
            .find_map(|arg| arg.strip_prefix(&format!("--{name}=")))
            .unwrap_or_else(|| panic!("--{name} in {command:?}"))
            .to_owned()
    };
    let namespace = target.metadata.namespace.clone().unwrap();
    assert_eq!(flag("namespace"), namespace);
    let scaled = flag("target");
    let (kind, name) = scaled.split_once('/').unwrap();
    assert_eq!(kind.to_lowercase(), "deployment");
    assert_eq!(Some(name), target.metadata.name.as_deref());
    assert!(
        command.iter().all(|a| !a.starts_with("--default-params")),
        "the ConfigMap is the one source of the parameters"
    );

    // Its parameters, and its right to read them and to scale the target.
    let config = flag("configmap");
    let map = find(&manifests, &config, |o| match o {
        Object::ConfigMap(c) => Some(c),
        _ => None,
    });
    let data = map.data.clone().unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["linear"]);
    let linear: Linear = serde_json::from_str(&data["linear"]).unwrap();
    // The README shows (and reasons about) the parameters the ConfigMap has.
    let shown = kind_section()
        .split("```json\n")
        .nth(1)
        .and_then(|block| block.split("```").next())
        .map(|block| serde_json::from_str::<Value>(block).unwrap())
        .expect("the kind section shows the autoscaler's parameters");
    assert_eq!(
        shown,
        serde_json::from_str::<Value>(&data["linear"]).unwrap()
    );
    assert!(linear.cores_per_replica.is_some() || linear.nodes_per_replica.is_some());
    assert!(linear.min.unwrap_or(1) >= 2 || linear.prevent_single_point_failure == Some(true));
    assert!(linear.max.is_none_or(|max| max >= linear.min.unwrap_or(1)));

    let account = pod_spec(deployment).service_account_name.clone().unwrap();
    let subject = Subject {
        kind: "ServiceAccount".into(),
        name: account.clone(),
        namespace: Some(namespace.clone()),
        api_group: None,
    };
    let role = find(&manifests, "kube-dns-autoscaler", |o| match o {
        Object::Role(r) => Some(r),
        _ => None,
    });
    let rules = role.rules.clone().unwrap();
    let allows = |group: &str, resource: &str, name: &str, verb: &str| {
        rules.iter().any(|r| {
            r.api_groups
                .as_deref()
                .unwrap_or_default()
                .iter()
                .any(|g| g == group)
                && r.resources
                    .as_deref()
                    .unwrap_or_default()
                    .iter()
                    .any(|x| x == resource)
                && r.resource_names
                    .as_deref()
                    .is_none_or(|names| names.iter().any(|n| n == name))
                && r.verbs.iter().any(|v| v == verb)
        })
    };
    assert!(allows("apps", "deployments/scale", name, "get"));
    assert!(allows("apps", "deployments/scale", name, "update"));
    assert!(allows("", "configmaps", &config, "get"));
    let binding = find(&manifests, "kube-dns-autoscaler", |o| match o {
        Object::RoleBinding(b) => Some(b),
        _ => None,
    });
    assert_eq!(binding.role_ref.name, role.metadata.name.clone().unwrap());
    assert_eq!(binding.subjects.as_deref(), Some(&[subject.clone()][..]));
    let cluster_binding = find(&manifests, "system:kube-dns-autoscaler", |o| match o {
        Object::ClusterRoleBinding(b) => Some(b),
        _ => None,
    });
    assert_eq!(cluster_binding.subjects.as_deref(), Some(&[subject][..]));
    let cluster_role = find(&manifests, &cluster_binding.role_ref.name, |o| match o {
        Object::ClusterRole(r) => Some(r),
        _ => None,
    });
    let node_rules = cluster_role.rules.clone().unwrap();
    assert!(node_rules.iter().any(|r| {
        r.resources.as_deref() == Some(&strings(&["nodes"])[..])
            && r.verbs.contains(&"list".to_owned())
            && r.verbs.contains(&"watch".to_owned())
    }));
    find(&manifests, &account, |o| match o {
        Object::ServiceAccount(s) => Some(s),
        _ => None,
    });
}
