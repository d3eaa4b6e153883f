//! `deploy/`, the Dockerfile and the kind page (`docs/kind.md`, and the README's steps in short) agree with each other and with
//! the binary: every manifest is a Kubernetes object k8s-openapi knows, field for field (an
//! unknown kind or field fails), and the Deployment's ports, probes, args, volumes and
//! security context are what the Corefile it mounts and the image it runs need. The manifests,
//! typed, the Dockerfile's last stage and the pages are read here; the tests are in one module
//! per concern.

mod autoscaler;
mod deployment;
mod helm;
mod image;
mod manifests;
mod real_node;
mod service_and_rbac;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clusterdns::config::{Environment, ServerBlock, parse_corefile_in};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::{Metadata, Resource};
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

/// The Dockerfile's last stage: its entrypoint, user, and what it copies in; and the path
/// the build stage gives the file capability.
struct Image {
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    user: String,
    copied: Vec<String>,
    setcap: Vec<String>,
    rust: String,
    /// The last stage's base image.
    base: String,
    /// Its EXPOSE ports (`53/udp` ...).
    exposed: Vec<String>,
    /// The build stage strips the binary's debug sections.
    strips_debug: bool,
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
        base: last_stage
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned(),
        exposed: value(last_stage, "EXPOSE ")
            .iter()
            .flat_map(|ports| ports.split_whitespace().map(str::to_owned))
            .collect(),
        strips_debug: joined.contains("strip --strip-debug"),
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
