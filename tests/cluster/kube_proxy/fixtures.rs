//! The saved dumps of the real kube-proxy (tests/fixtures/kube-proxy/, see its README.md)
//! against `proxy render` and `explain`, without the cluster: CI checks these with or
//! without the peers built.

use std::path::PathBuf;

use clusterdns::kube_proxy::plan::IpFamily;
use serde_json::Value;

use super::compare::{self, assert_explained, assert_known_documented, compare};
use super::render::{CLUSTER_CIDRS, NODE, Shape, render};
use crate::common::cli::clusterdns;
use crate::common::root;

/// A fixture of tests/fixtures/kube-proxy/.
pub fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/kube-proxy").join(name)
}

/// Each dump, what it is and how render writes it.
pub const DUMPS: [(&str, Shape, IpFamily); 4] = [
    ("iptables-save.txt", Shape::IptablesSave, IpFamily::V4),
    ("ip6tables-save.txt", Shape::IptablesSave, IpFamily::V6),
    ("nft-list.nft", Shape::NftList, IpFamily::V4),
    ("nft6-list.nft", Shape::NftList, IpFamily::V6),
];

/// `text` cut into objects as its shape is.
pub fn parse(shape: Shape, text: &str) -> compare::Dump {
    match shape {
        Shape::IptablesSave => compare::iptables(text),
        Shape::NftList => compare::nft(text),
    }
}

#[test]
fn renders_equal_the_real_kube_proxy_dumps() {
    assert_known_documented();
    let objects = fixture("objects.json");
    for (file, shape, family) in DUMPS {
        let real = std::fs::read_to_string(fixture(file)).unwrap();
        let rendered = render(&objects, shape, family);
        let comparison = compare(&parse(shape, &real), &parse(shape, &rendered));
        eprintln!("{}", assert_explained(file, &comparison));
    }
}

/// Every Service of the objects, `namespace/name`.
fn services() -> Vec<String> {
    let objects: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("objects.json")).unwrap()).unwrap();
    let mut out: Vec<String> = objects["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["kind"] == "Service")
        .map(|s| {
            format!(
                "{}/{}",
                s["metadata"]["namespace"].as_str().unwrap(),
                s["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    out.sort();
    out
}

/// `clusterdns explain SERVICE` over the fixture's objects and `ruleset`: its exit code and
/// its findings' lines (without their fixes).
pub fn explain(service: &str, ruleset: &std::path::Path) -> (i32, Vec<String>) {
    let objects = fixture("objects.json");
    let run = clusterdns(&[
        "explain",
        service,
        "--objects",
        objects.to_str().unwrap(),
        "--ruleset",
        ruleset.to_str().unwrap(),
        "--node",
        NODE,
        "--cluster-cidr",
        CLUSTER_CIDRS,
    ]);
    assert!(
        run.code == 0 || run.code == 1,
        "explain {service}: {}",
        run.stderr
    );
    let findings = run
        .stdout
        .split("findings")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .map(|l| l.trim().to_owned())
        // Each finding's line, not the fix under it.
        .filter(|l| !l.is_empty() && !l.starts_with("fix: "))
        .collect();
    (run.code, findings)
}

/// Services whose objects, not the node, are the finding: no endpoint at all.
const WITHOUT_ENDPOINTS: [&str; 2] = ["default/kubernetes", "kp/empty"];

#[test]
fn explain_finds_no_drift_on_the_real_node() {
    for file in ["iptables-save.txt", "nft-list.nft", "iptables-restore.txt"] {
        no_drift(&fixture(file));
    }
}

/// explain on every Service of the objects and `ruleset` finds no drift but the objects' own.
fn no_drift(ruleset: &std::path::Path) {
    let all = services();
    assert!(all.len() > 15, "{all:?}");
    for service in &all {
        let (code, findings) = explain(service, ruleset);
        if WITHOUT_ENDPOINTS.contains(&service.as_str()) {
            assert_eq!(code, 1, "{service}");
            assert!(
                findings.iter().all(|f| f.starts_with("no-endpoints:")),
                "{service}: {findings:?}"
            );
        } else {
            assert_eq!(
                code,
                0,
                "{service}: drift on the real node ({}): {findings:?}",
                ruleset.display()
            );
        }
    }
}

/// `proxy trace --output json` of `ruleset` for `probe`.
fn trace(ruleset: &str, probe: &[&str]) -> Value {
    let mut args = vec!["proxy", "trace", "--ruleset", ruleset, "--output", "json"];
    args.extend_from_slice(probe);
    let run = clusterdns(&args);
    assert!(run.code == 0 || run.code == 1, "{args:?}: {}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

/// What a trace says of where a connection goes: verdict, endpoints and shares, masquerade.
fn outcome(json: &Value) -> (Value, Vec<(Value, Value, String)>, Vec<Value>) {
    let endpoints = json["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["address"].clone(),
                e["port"].clone(),
                format!("{:.9}", e["share"].as_f64().unwrap()),
            )
        })
        .collect();
    let masquerade = json["masquerade"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["when"].clone())
        .collect();
    (json["verdict"].clone(), endpoints, masquerade)
}

#[test]
fn kube_proxys_restore_text_traces_as_the_node_it_made() {
    // kube-proxy's own iptables-restore input has no jump from the built-in chains; traced
    // with its standard jumps assumed, every ClusterIP and NodePort goes where the node's
    // iptables-save says.
    let restore = fixture("iptables-restore.txt");
    let saved = fixture("iptables-save.txt");
    let (restore, saved) = (restore.to_str().unwrap(), saved.to_str().unwrap());
    let objects: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("objects.json")).unwrap()).unwrap();
    let mut probes: Vec<Vec<String>> = Vec::new();
    for service in objects["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "Service")
    {
        let spec = &service["spec"];
        for port in spec["ports"].as_array().into_iter().flatten() {
            let proto = port["protocol"].as_str().unwrap_or("TCP").to_lowercase();
            if let Some(ip) = spec["clusterIP"].as_str().filter(|ip| ip.contains('.')) {
                let to = format!("{ip}:{}", port["port"]);
                probes.push(vec![
                    "--to".into(),
                    to.clone(),
                    "--proto".into(),
                    proto.clone(),
                ]);
                probes.push(vec![
                    "--to".into(),
                    to,
                    "--proto".into(),
                    proto.clone(),
                    "--local".into(),
                ]);
            }
            if let Some(node_port) = port["nodePort"].as_u64() {
                let to = format!("10.0.0.10:{node_port}");
                probes.push(vec![
                    "--to".into(),
                    to,
                    "--proto".into(),
                    proto,
                    "--node-ip".into(),
                    "10.0.0.10".into(),
                ]);
            }
        }
    }
    assert!(probes.len() > 40, "{}", probes.len());
    for probe in &probes {
        let probe: Vec<&str> = probe.iter().map(String::as_str).collect();
        let from_restore = trace(restore, &probe);
        let from_node = trace(saved, &probe);
        assert_eq!(
            outcome(&from_restore),
            outcome(&from_node),
            "{probe:?}: {from_restore}"
        );
        assert!(from_node.get("assumed_jumps").is_none(), "{probe:?}");
        assert_eq!(
            from_restore["assumed_jumps"].as_array().map(Vec::len),
            Some(14),
            "{probe:?}"
        );
    }
}
