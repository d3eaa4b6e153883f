//! The Deployment and its ConfigMap: the Corefile (kubeadm's plus the snapshot), container ports,
//! probes, args, the snapshot's volume, the security context, kubeadm's shape, and the
//! resources the README's sizing gives.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use k8s_openapi::api::core::v1::{Capabilities, Probe, SeccompProfile, SecurityContext};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{
    applied, container, coredns_deployment, corefile_server, corefile_text, kind_section, pod_spec,
    resolve_port, strings,
};
use crate::common::read;

#[test]
fn the_corefile_is_kubeadms_plus_snapshot() {
    let manifests = applied();
    let text = corefile_text(&manifests);
    let kubeadm = read("tests/fixtures/corefiles/kubeadm.Corefile");
    let (snapshot, rest): (Vec<&str>, Vec<&str>) = text
        .lines()
        .partition(|line| line.trim_start().starts_with("snapshot "));
    assert_eq!(
        snapshot,
        ["       snapshot /var/lib/clusterdns/snapshot.json"]
    );
    assert_eq!(rest.join("\n").trim_end(), kubeadm.trim_end());

    let server = corefile_server(&manifests);
    let kubernetes = server.plugins.kubernetes.as_ref().unwrap();
    assert_eq!(
        kubernetes.snapshot.as_deref(),
        Some(Path::new("/var/lib/clusterdns/snapshot.json"))
    );
    assert!(kubernetes.objects.is_empty(), "the API watch, not files");
    assert_eq!(kubernetes.api, Default::default(), "in-cluster credentials");
}

#[test]
fn container_ports_are_the_corefiles() {
    let manifests = applied();
    let server = corefile_server(&manifests);
    let deployment = coredns_deployment(&manifests);
    let container = container(deployment);
    assert_eq!(
        container.name, "coredns",
        "kubeadm's name: updated in place"
    );
    let ports: BTreeSet<(String, i32, String)> = container
        .ports
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|p| {
            assert!(p.host_port.is_none() && p.host_ip.is_none());
            (
                p.name.clone().unwrap_or_default(),
                p.container_port,
                p.protocol.clone().unwrap_or_else(|| "TCP".into()),
            )
        })
        .collect();
    let port = |addr: Option<std::net::SocketAddr>| i32::from(addr.unwrap().port());
    let dns = i32::from(server.port);
    let expected = [
        ("dns", dns, "UDP"),
        ("dns-tcp", dns, "TCP"),
        (
            "metrics",
            port(server.plugins.prometheus.map(|p| p.addr)),
            "TCP",
        ),
        (
            "liveness-probe",
            port(server.plugins.health.map(|h| h.addr)),
            "TCP",
        ),
        (
            "readiness-probe",
            port(server.plugins.ready.map(|r| r.addr)),
            "TCP",
        ),
    ];
    // kubeadm's numbers, which the Corefile gives.
    assert_eq!(expected.map(|p| p.1), [53, 53, 9153, 8080, 8181]);
    let expected: BTreeSet<(String, i32, String)> = expected
        .into_iter()
        .map(|(n, p, proto)| (n.to_owned(), p, proto.to_owned()))
        .collect();
    assert_eq!(ports, expected);
}

#[test]
fn probes_ask_health_and_ready_on_their_ports() {
    let manifests = applied();
    let server = corefile_server(&manifests);
    let container = container(coredns_deployment(&manifests));
    let check = |probe: Option<&Probe>, path: &str, port: u16| {
        let probe = probe.unwrap_or_else(|| panic!("no probe for {path}"));
        let get = probe.http_get.as_ref().expect("an HTTP GET probe");
        assert_eq!(get.path.as_deref(), Some(path));
        assert_eq!(get.scheme.as_deref(), Some("HTTP"));
        assert!(get.host.is_none(), "the pod's own address");
        assert_eq!(
            resolve_port(container, &get.port, "TCP"),
            (i32::from(port), "TCP".to_owned())
        );
    };
    let health = server.plugins.health.as_ref().unwrap().addr.port();
    let ready = server.plugins.ready.as_ref().unwrap().addr.port();
    check(container.liveness_probe.as_ref(), "/health", health);
    let live = container.liveness_probe.as_ref().unwrap();
    // kubeadm's timings: /health must answer within 60 s + 5 × 10 s of the start.
    assert_eq!(
        (
            live.initial_delay_seconds,
            live.timeout_seconds,
            live.success_threshold,
            live.failure_threshold
        ),
        (Some(60), Some(5), Some(1), Some(5))
    );
    check(container.readiness_probe.as_ref(), "/ready", ready);
    // Every second, out at the first failure: within a second of SIGTERM (when /ready says
    // 503) the endpoint leaves the Service, well inside the Corefile's lameduck, so that
    // kube-proxy clears the UDP flows still going to this pod while it answers them
    // (tests/deploy/real_node/operations.rs).
    let ready = container.readiness_probe.as_ref().unwrap();
    assert_eq!(
        (ready.period_seconds, ready.failure_threshold),
        (Some(1), Some(1))
    );
    let lameduck = server.plugins.health.as_ref().unwrap().lameduck;
    assert!(
        lameduck >= std::time::Duration::from_secs(3),
        "lameduck {lameduck:?} leaves the probe, the controller and kube-proxy no time"
    );
}

#[test]
fn args_read_the_mounted_corefile() {
    let manifests = applied();
    let deployment = coredns_deployment(&manifests);
    let container = container(deployment);
    assert!(container.command.is_none(), "the image's entrypoint runs");
    let args = container.args.clone().unwrap_or_default();
    let [flag, path] = args.as_slice() else {
        panic!("{args:?}")
    };
    assert_eq!(flag, "-conf");
    // The ConfigMap volume and where its Corefile key lands.
    let volumes = pod_spec(deployment).volumes.as_deref().unwrap_or_default();
    let config = volumes
        .iter()
        .find(|v| v.config_map.as_ref().map(|c| c.name.as_str()) == Some("coredns"))
        .expect("a volume of ConfigMap coredns");
    let items = config.config_map.as_ref().unwrap().items.clone().unwrap();
    let item = items.iter().find(|i| i.key == "Corefile").unwrap();
    let mount = container
        .volume_mounts
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|m| m.name == config.name)
        .expect("the ConfigMap volume is mounted");
    assert_eq!(mount.read_only, Some(true));
    assert!(mount.sub_path.is_none(), "a subPath mount is never updated");
    assert_eq!(
        Path::new(path),
        Path::new(&mount.mount_path).join(&item.path)
    );
    assert!(corefile_text(&manifests).contains("reload"));
}

#[test]
fn snapshot_is_written_to_the_empty_dir() {
    let manifests = applied();
    let server = corefile_server(&manifests);
    let snapshot = server.plugins.kubernetes.unwrap().snapshot.unwrap();
    let deployment = coredns_deployment(&manifests);
    let container = container(deployment);
    let volumes = pod_spec(deployment).volumes.as_deref().unwrap_or_default();
    let mounts = container.volume_mounts.as_deref().unwrap_or_default();
    // The deepest mount holding the file is where it is written.
    let mount = mounts
        .iter()
        .filter(|m| snapshot.starts_with(&m.mount_path))
        .max_by_key(|m| m.mount_path.len())
        .expect("the snapshot's directory is a mount (the root filesystem is read-only)");
    assert_ne!(mount.read_only, Some(true));
    assert!(mount.sub_path.is_none());
    assert_eq!(snapshot.parent(), Some(Path::new(&mount.mount_path)));
    let volume = volumes.iter().find(|v| v.name == mount.name).unwrap();
    assert!(volume.empty_dir.is_some(), "{volume:?}");
    assert!(volume.config_map.is_none() && volume.host_path.is_none());
}

#[test]
fn security_context_is_non_root_read_only_and_net_bind_only() {
    let manifests = applied();
    let deployment = coredns_deployment(&manifests);
    let pod = pod_spec(deployment);
    assert!(pod.security_context.is_none(), "all of it on the container");
    assert!(pod.host_network.is_none() && pod.host_pid.is_none());
    let expected = SecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(65532),
        run_as_group: Some(65532),
        read_only_root_filesystem: Some(true),
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            add: Some(strings(&["NET_BIND_SERVICE"])),
            drop: Some(strings(&["ALL"])),
        }),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            localhost_profile: None,
        }),
        ..Default::default()
    };
    assert_eq!(
        container(deployment).security_context.as_ref(),
        Some(&expected)
    );
}

#[test]
fn deployment_keeps_kubeadms_shape() {
    let manifests = applied();
    let deployment = coredns_deployment(&manifests);
    let labels = BTreeMap::from([("k8s-app".to_owned(), "kube-dns".to_owned())]);
    assert_eq!(
        deployment.metadata.namespace.as_deref(),
        Some("kube-system")
    );
    assert_eq!(deployment.metadata.labels.as_ref(), Some(&labels));
    let spec = &deployment.spec;
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(spec.selector.match_labels.as_ref(), Some(&labels));
    assert!(spec.selector.match_expressions.is_none());
    assert_eq!(
        spec.template.metadata.as_ref().unwrap().labels.as_ref(),
        Some(&labels)
    );
    let strategy = spec.strategy.as_ref().unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    assert_eq!(
        strategy.rolling_update.as_ref().unwrap().max_unavailable,
        Some(IntOrString::Int(1))
    );
    let pod = pod_spec(deployment);
    assert_eq!(
        pod.priority_class_name.as_deref(),
        Some("system-cluster-critical")
    );
    assert_eq!(pod.dns_policy.as_deref(), Some("Default"));
    assert_eq!(
        pod.node_selector.as_ref(),
        Some(&BTreeMap::from([(
            "kubernetes.io/os".to_owned(),
            "linux".to_owned()
        )]))
    );
    let tolerations: Vec<(Option<&str>, Option<&str>, Option<&str>)> = pod
        .tolerations
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|t| (t.key.as_deref(), t.operator.as_deref(), t.effect.as_deref()))
        .collect();
    assert_eq!(
        tolerations,
        [
            (Some("CriticalAddonsOnly"), Some("Exists"), None),
            (
                Some("node-role.kubernetes.io/control-plane"),
                None,
                Some("NoSchedule")
            ),
        ]
    );
    let anti = pod
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .expect("preferred pod anti-affinity");
    let [term] = anti.as_slice() else {
        panic!("{anti:?}")
    };
    assert_eq!(term.weight, 100);
    assert_eq!(
        term.pod_affinity_term.topology_key,
        "kubernetes.io/hostname"
    );
    let selector = term.pod_affinity_term.label_selector.as_ref().unwrap();
    let [expression] = selector.match_expressions.as_deref().unwrap() else {
        panic!("{selector:?}")
    };
    assert_eq!(
        (
            expression.key.as_str(),
            expression.operator.as_str(),
            expression.values.clone()
        ),
        ("k8s-app", "In", Some(strings(&["kube-dns"])))
    );
    let container = container(deployment);
    let image = container.image.as_deref().unwrap();
    assert!(
        !image.ends_with(":latest") && image.contains(':'),
        "a tag, so that a kind-loaded image is not pulled: {image}"
    );
    assert_eq!(container.image_pull_policy.as_deref(), Some("IfNotPresent"));
}

#[test]
fn resources_are_the_readmes_sizing() {
    let manifests = applied();
    let resources = container(coredns_deployment(&manifests))
        .resources
        .clone()
        .unwrap();
    let requests = resources.requests.unwrap();
    let limits = resources.limits.unwrap();
    let keys = |m: &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
        m.keys().cloned().collect::<Vec<_>>()
    };
    assert_eq!(keys(&requests), ["cpu", "memory"]);
    assert_eq!(
        keys(&limits),
        ["memory"],
        "no CPU limit: throttling adds latency"
    );
    let sizing = kind_section()
        .split("## Sizing")
        .nth(1)
        .expect("a Sizing section in docs/kind.md")
        .to_owned();
    for (what, quantity) in [
        ("requests.cpu", &requests["cpu"]),
        ("requests.memory", &requests["memory"]),
        ("limits.memory", &limits["memory"]),
    ] {
        let shown = format!("`{what}: {}`", quantity.0);
        assert!(
            sizing.contains(&shown),
            "the Sizing paragraph shows {shown}"
        );
    }
}
