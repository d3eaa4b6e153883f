//! `deploy/`, the Dockerfile and the kind page (`docs/kind.md`, and the README's steps in short) agree with each other and with
//! the binary: every manifest is a Kubernetes object k8s-openapi knows, field for field (an
//! unknown kind or field fails), and the Deployment's ports, probes, args, volumes and
//! security context are what the Corefile it mounts and the image it runs need.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use clusterdns::config::{Environment, ServerBlock, parse_corefile_in};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMap, Container, PodSpec, Probe, SeccompProfile, SecurityContext, Service,
    ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding, Subject};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::{Metadata, Resource};
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::common::{read, root};

/// The optional autoscaler: applied on its own, not listed in the kustomization.
const AUTOSCALER: &str = "autoscaler.yaml";
/// What `kubectl apply -k deploy/` reads; not a Kubernetes object.
const KUSTOMIZATION: &str = "kustomization.yaml";

/// One object of `deploy/`, typed.
#[derive(Debug, Clone)]
enum Object {
    ServiceAccount(ServiceAccount),
    ClusterRole(ClusterRole),
    ClusterRoleBinding(ClusterRoleBinding),
    Role(Role),
    RoleBinding(RoleBinding),
    ConfigMap(ConfigMap),
    Deployment(Box<Deployment>),
    Service(Box<Service>),
}

/// An object and the file it came from.
#[derive(Debug, Clone)]
struct Manifest {
    file: String,
    object: Object,
}

impl Manifest {
    fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        match &self.object {
            Object::ServiceAccount(o) => o.metadata(),
            Object::ClusterRole(o) => o.metadata(),
            Object::ClusterRoleBinding(o) => o.metadata(),
            Object::Role(o) => o.metadata(),
            Object::RoleBinding(o) => o.metadata(),
            Object::ConfigMap(o) => o.metadata(),
            Object::Deployment(o) => o.metadata(),
            Object::Service(o) => o.metadata(),
        }
    }

    fn kind(&self) -> &'static str {
        match &self.object {
            Object::ServiceAccount(_) => ServiceAccount::KIND,
            Object::ClusterRole(_) => ClusterRole::KIND,
            Object::ClusterRoleBinding(_) => ClusterRoleBinding::KIND,
            Object::Role(_) => Role::KIND,
            Object::RoleBinding(_) => RoleBinding::KIND,
            Object::ConfigMap(_) => ConfigMap::KIND,
            Object::Deployment(_) => Deployment::KIND,
            Object::Service(_) => Service::KIND,
        }
    }

    /// `Kind namespace/name` (cluster-scoped: `Kind name`).
    fn id(&self) -> String {
        let meta = self.meta();
        let name = meta.name.clone().unwrap_or_default();
        match &meta.namespace {
            Some(namespace) => format!("{} {namespace}/{name}", self.kind()),
            None => format!("{} {name}", self.kind()),
        }
    }
}

fn deploy_dir() -> PathBuf {
    root().join("deploy")
}

/// The `*.yaml` files of `deploy/`, sorted by name.
fn yaml_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(deploy_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
        .collect();
    files.sort();
    files
}

/// Every object of every manifest in `deploy/` (all but kustomization.yaml).
fn manifests() -> Vec<Manifest> {
    let mut out = Vec::new();
    for file in yaml_files() {
        if file == KUSTOMIZATION {
            continue;
        }
        let text = read(format!("deploy/{file}"));
        out.extend(parse_manifests(&file, &text).unwrap_or_else(|e| panic!("{e}")));
    }
    out
}

/// The objects of one multi-document YAML file.
fn parse_manifests(file: &str, text: &str) -> Result<Vec<Manifest>, String> {
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|e| format!("deploy/{file}: not YAML: {e}"))?;
    if documents.is_empty() {
        return Err(format!("deploy/{file}: no document"));
    }
    documents
        .into_iter()
        .enumerate()
        .map(|(index, document)| {
            let at = format!("deploy/{file}, document {}", index + 1);
            Ok(Manifest {
                file: file.to_owned(),
                object: object(&at, document)?,
            })
        })
        .collect()
}

/// A document as the k8s-openapi type its apiVersion and kind name.
fn object(at: &str, document: Value) -> Result<Object, String> {
    let api_version = document["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let kind = document["kind"].as_str().unwrap_or_default().to_owned();
    let is = |(version, name): (&str, &str)| api_version == version && kind == name;
    Ok(if is(type_of::<ServiceAccount>()) {
        Object::ServiceAccount(strict(at, document)?)
    } else if is(type_of::<ClusterRole>()) {
        Object::ClusterRole(strict(at, document)?)
    } else if is(type_of::<ClusterRoleBinding>()) {
        Object::ClusterRoleBinding(strict(at, document)?)
    } else if is(type_of::<Role>()) {
        Object::Role(strict(at, document)?)
    } else if is(type_of::<RoleBinding>()) {
        Object::RoleBinding(strict(at, document)?)
    } else if is(type_of::<ConfigMap>()) {
        Object::ConfigMap(strict(at, document)?)
    } else if is(type_of::<Deployment>()) {
        Object::Deployment(Box::new(strict(at, document)?))
    } else if is(type_of::<Service>()) {
        Object::Service(Box::new(strict(at, document)?))
    } else {
        return Err(format!(
            "{at}: unexpected object: apiVersion {api_version:?}, kind {kind:?}"
        ));
    })
}

fn type_of<T: Resource>() -> (&'static str, &'static str) {
    (T::API_VERSION, T::KIND)
}

/// `document` as a `T`, which must serialize back to the same document: k8s-openapi ignores
/// fields it does not know, so a misspelt or misplaced field shows up as a difference.
fn strict<T: Serialize + DeserializeOwned>(at: &str, document: Value) -> Result<T, String> {
    let typed: T = serde_json::from_value(document.clone()).map_err(|e| format!("{at}: {e}"))?;
    let back = serde_json::to_value(&typed).map_err(|e| format!("{at}: {e}"))?;
    match difference(&document, &back, "") {
        Some(difference) => Err(format!(
            "{at}: {difference} (an unknown field, or a value of the wrong type)"
        )),
        None => Ok(typed),
    }
}

/// The first place where `written` and `typed` (the same document through the typed
/// object) differ, as a JSON path.
fn difference(written: &Value, typed: &Value, path: &str) -> Option<String> {
    match (written, typed) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|key| {
                let at = format!("{path}.{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => difference(x, y, &at),
                    (Some(x), None) => Some(format!("{at}: {x} is not a field of the type")),
                    (None, Some(y)) => Some(format!("{at}: {y} appeared")),
                    (None, None) => None,
                }
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| difference(x, y, &format!("{path}[{i}]"))),
        _ if written == typed => None,
        _ => Some(format!("{path}: written {written}, read as {typed}")),
    }
}

/// The one object of type `T` named `name` in `manifests`.
fn find<'a, T>(
    manifests: &'a [Manifest],
    name: &str,
    pick: impl Fn(&'a Object) -> Option<&'a T>,
) -> &'a T {
    let found: Vec<&T> = manifests
        .iter()
        .filter(|m| m.meta().name.as_deref() == Some(name))
        .filter_map(|m| pick(&m.object))
        .collect();
    match found.as_slice() {
        [one] => one,
        other => panic!("{} objects named {name} of the kind asked for", other.len()),
    }
}

/// The manifests `kubectl apply -k deploy/` applies.
fn applied() -> Vec<Manifest> {
    manifests()
        .into_iter()
        .filter(|m| m.file != AUTOSCALER)
        .collect()
}

fn autoscaler() -> Vec<Manifest> {
    manifests()
        .into_iter()
        .filter(|m| m.file == AUTOSCALER)
        .collect()
}

fn coredns_deployment(manifests: &[Manifest]) -> &Deployment {
    find(manifests, "coredns", |o| match o {
        Object::Deployment(d) => Some(&**d),
        _ => None,
    })
}

fn pod_spec(deployment: &Deployment) -> &PodSpec {
    deployment.spec.template.spec.as_ref().unwrap()
}

fn container(deployment: &Deployment) -> &Container {
    match pod_spec(deployment).containers.as_slice() {
        [one] => one,
        other => panic!("one container expected, found {}", other.len()),
    }
}

/// The Corefile of the ConfigMap `coredns`.
fn corefile_text(manifests: &[Manifest]) -> String {
    let map = find(manifests, "coredns", |o| match o {
        Object::ConfigMap(c) => Some(c),
        _ => None,
    });
    map.data
        .as_ref()
        .and_then(|data| data.get("Corefile"))
        .expect("ConfigMap coredns has a Corefile key")
        .clone()
}

/// The ConfigMap's Corefile, parsed by clusterdns as the pod reads it: at the path the
/// Deployment mounts it, with a fixed `/etc/resolv.conf` (kind's node's, `dnsPolicy:
/// Default`).
fn corefile_server(manifests: &[Manifest]) -> ServerBlock {
    let env = Environment::system().with_file("/etc/resolv.conf", "nameserver 172.18.0.1\n");
    let config = parse_corefile_in(
        &corefile_text(manifests),
        Path::new("/etc/coredns/Corefile"),
        &env,
    )
    .unwrap_or_else(|e| panic!("the ConfigMap's Corefile: {e}"));
    let [server] = <[ServerBlock; 1]>::try_from(config.servers)
        .unwrap_or_else(|servers| panic!("one server block expected: {servers:?}"));
    server
}

/// The container port `port` names (or is, for `protocol`), with its protocol.
fn resolve_port(container: &Container, port: &IntOrString, protocol: &str) -> (i32, String) {
    let ports = container.ports.as_deref().unwrap_or_default();
    let found = ports.iter().find(|p| match port {
        IntOrString::Int(n) => {
            p.container_port == *n && p.protocol.as_deref().unwrap_or("TCP") == protocol
        }
        IntOrString::String(name) => p.name.as_deref() == Some(name.as_str()),
    });
    let found = found.unwrap_or_else(|| panic!("no container port {port:?}"));
    (
        found.container_port,
        found.protocol.clone().unwrap_or_else(|| "TCP".into()),
    )
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

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

/// The Dockerfile's last stage: its entrypoint, user, and what it copies in; and the path
/// the build stage gives the file capability.
struct Image {
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    user: String,
    copied: Vec<String>,
    setcap: Vec<String>,
    rust: String,
}

fn image() -> Image {
    let text = read("Dockerfile");
    let instructions: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    let joined = instructions.join("\n").replace("\\\n", " ");
    let last_stage = joined.rsplit("\nFROM ").next().unwrap();
    let value = |stage: &str, keyword: &str| -> Vec<String> {
        stage
            .lines()
            .filter_map(|l| l.strip_prefix(keyword))
            .map(|rest| rest.trim().to_owned())
            .collect()
    };
    let json = |v: Vec<String>| -> Vec<String> {
        let [one] = v.as_slice() else {
            panic!("one instruction expected: {v:?}")
        };
        serde_json::from_str(one).unwrap_or_else(|e| panic!("exec form expected: {one}: {e}"))
    };
    let rust = joined
        .lines()
        .find_map(|l| l.strip_prefix("FROM rust:"))
        .expect("a rust build stage")
        .split('-')
        .next()
        .unwrap()
        .to_owned();
    Image {
        entrypoint: json(value(last_stage, "ENTRYPOINT ")),
        cmd: json(value(last_stage, "CMD ")),
        user: value(last_stage, "USER ").pop().expect("a USER"),
        copied: value(last_stage, "COPY "),
        setcap: joined
            .split("setcap ")
            .skip(1)
            .map(|rest| {
                rest.split_whitespace()
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect(),
        rust,
    }
}

#[test]
fn the_image_runs_the_binary_as_the_deployments_user() {
    let image = image();
    let manifests = applied();
    let deployment = coredns_deployment(&manifests);
    let security = container(deployment).security_context.clone().unwrap();
    let [binary] = image.entrypoint.as_slice() else {
        panic!("the entrypoint is the binary alone: {:?}", image.entrypoint)
    };
    assert_eq!(
        image.user,
        format!(
            "{}:{}",
            security.run_as_user.unwrap(),
            security.run_as_group.unwrap()
        )
    );
    assert_eq!(
        image.copied,
        [format!("--from=build {binary} {binary}")],
        "the binary is copied to where the entrypoint runs it"
    );
    assert_eq!(
        image.setcap,
        [format!("cap_net_bind_service=+ep {binary}")],
        "port 53 as a non-root user needs the file capability"
    );
    assert_eq!(image.cmd, container(deployment).args.clone().unwrap());
    let cargo = read("Cargo.toml");
    assert!(
        cargo.contains(&format!("rust-version = \"{}\"", image.rust)),
        "the build image's Rust ({}) is the crate's rust-version",
        image.rust
    );
}

#[test]
fn the_binary_takes_the_deployments_args() {
    // The entrypoint and the Deployment's args, with the Corefile path pointing at a file
    // that does not parse: the binary must read it as `serve --corefile` and report it.
    let manifests = applied();
    let args = container(coredns_deployment(&manifests))
        .args
        .clone()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let corefile = dir.path().join("Corefile");
    std::fs::write(&corefile, ".:53 {\n    no_such_plugin\n}\n").unwrap();
    let args: Vec<String> = args
        .into_iter()
        .map(|a| {
            if a.starts_with('/') {
                corefile.display().to_string()
            } else {
                a
            }
        })
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(&args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no_such_plugin"), "{stderr}");
    assert!(stderr.contains(&corefile.display().to_string()), "{stderr}");
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

/// The kind page, `docs/kind.md`.
fn kind_section() -> String {
    read("docs/kind.md")
}

/// The README's kind steps, in short.
fn readme_kind_steps() -> String {
    let readme = read("README.md");
    let start = readme
        .find("\n## Replacing CoreDNS in kind")
        .expect("a kind section in the README");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    rest[..end].to_owned()
}

#[test]
fn readme_builds_loads_and_applies_what_the_manifests_use() {
    let manifests = applied();
    let image = container(coredns_deployment(&manifests))
        .image
        .clone()
        .unwrap();
    let page = kind_section();
    let short = readme_kind_steps();
    for command in [
        format!("docker build -t {image} ."),
        format!("kind load docker-image {image}"),
        "kubectl apply --server-side --force-conflicts -k deploy/".to_owned(),
        format!("kubectl apply --server-side -f deploy/{AUTOSCALER}"),
        "nslookup kubernetes.default".to_owned(),
    ] {
        assert!(page.contains(&command), "docs/kind.md runs `{command}`");
        assert!(
            short.contains(&command),
            "the README's kind steps run `{command}`"
        );
    }
}

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

/// The image is built with `cargo build` in the repository (the Dockerfile), so it gets the
/// allocator's options from `.cargo/config.toml`: one arena, no thread caches, freed pages
/// returned within a second (docs/kind.md, "Sizing"). jemalloc prints the options it runs
/// with when asked at exit; asking adds to the built-in ones rather than replacing them.
#[test]
fn the_binary_runs_with_the_allocator_options_its_sizing_was_measured_with() {
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .output()
        .unwrap();
    assert!(output.status.success());
    let stats = String::from_utf8_lossy(&output.stderr);
    for option in [
        "opt.narenas: 1\n",
        "opt.tcache: false\n",
        "opt.dirty_decay_ms: 1000 ",
        "opt.muzzy_decay_ms: 0 ",
    ] {
        assert!(
            stats.contains(option),
            "jemalloc does not run with {option:?}:\n{}",
            &stats[..stats.len().min(3000)]
        );
    }
}
