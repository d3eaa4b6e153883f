//! The chart in `deploy/helm/clusterdns`, rendered, linted and installed by the real helm (a
//! peer: bench/peers/build.sh builds it from the Go module proxy; never part of the product),
//! and `deploy/` rendered by the peer kubectl's kustomize. The objects are compared parsed:
//! `Kind namespace/name` to the object as JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::cluster::peer;
use super::root;

/// The chart's directory.
pub fn chart() -> PathBuf {
    root().join("deploy/helm/clusterdns")
}

/// The helm and kubectl binaries among the peers; `None` (the test skips, or fails under
/// `CLUSTERDNS_REQUIRE_PEERS`) when either is not built.
pub struct Tools {
    pub helm: PathBuf,
    pub kubectl: PathBuf,
}

impl Tools {
    pub fn find() -> Option<Self> {
        Some(Self {
            helm: peer("helm")?,
            kubectl: peer("kubectl")?,
        })
    }

    /// `helm ARGS`: its output, or its stderr (helm's error).
    pub fn helm(&self, args: &[&str]) -> Result<String, String> {
        run(&self.helm, args)
    }

    /// `helm template RELEASE deploy/helm/clusterdns --namespace NAMESPACE -f VALUES` (no -f
    /// when `values` is empty), `values` being YAML.
    pub fn template(&self, release: &str, namespace: &str, values: &str) -> Result<String, String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("values.yaml");
        std::fs::write(&file, values).unwrap();
        let chart = chart();
        let mut args = vec![
            "template",
            release,
            chart.to_str().unwrap(),
            "--namespace",
            namespace,
        ];
        if !values.is_empty() {
            args.extend(["--values", file.to_str().unwrap()]);
        }
        self.helm(&args)
    }

    /// The objects `helm template` renders: panics with helm's error.
    pub fn objects(&self, release: &str, namespace: &str, values: &str) -> BTreeMap<String, Value> {
        let text = self
            .template(release, namespace, values)
            .unwrap_or_else(|e| panic!("helm template {release} -n {namespace}:\n{values}\n{e}"));
        by_id(&text)
    }

    /// The objects of `kubectl kustomize deploy/`.
    pub fn kustomize(&self) -> BTreeMap<String, Value> {
        let deploy = root().join("deploy");
        let text = run(&self.kubectl, &["kustomize", deploy.to_str().unwrap()])
            .unwrap_or_else(|e| panic!("kubectl kustomize deploy/: {e}"));
        by_id(&text)
    }
}

fn run(binary: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if output.status.success() {
        Ok(String::from_utf8(output.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// `Kind namespace/name` (cluster-scoped: `Kind name`) of an object.
pub fn id(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// The objects of a multi-document YAML stream (empty documents left out), by [`id`]; an
/// object defined twice panics.
pub fn by_id(text: &str) -> BTreeMap<String, Value> {
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(text).unwrap_or_else(|e| panic!("not YAML: {e}\n{text}"));
    let mut objects = BTreeMap::new();
    for document in documents.into_iter().filter(|d| !d.is_null()) {
        let key = id(&document);
        assert!(
            objects.insert(key.clone(), document).is_none(),
            "{key} twice in:\n{text}"
        );
    }
    objects
}
