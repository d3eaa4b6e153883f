//! `--output yaml` prints the same data as `--output json`, for every command that prints
//! structured data; text stays the default.

use serde_json::Value;

use super::{binary, run};

/// Runs `args` with `--output json` and `--output yaml` (`flag` is the flag's name): both
/// parse, to the same data, with the same exit status; the data is returned.
fn same_data(args: &[&str], flag: &str) -> Value {
    let with = |format: &str| {
        let mut all = args.to_vec();
        all.extend([flag, format]);
        let ran = run(binary(), &all);
        assert!(ran.code == 0 || ran.code == 1, "{all:?}: {}", ran.stderr);
        (ran.code, ran.stdout)
    };
    let (json_code, json) = with("json");
    let (yaml_code, yaml) = with("yaml");
    assert_eq!(json_code, yaml_code, "{args:?}");
    let json: Value = serde_json::from_str(&json).unwrap();
    let parsed: Value = serde_saphyr::from_str(&yaml)
        .unwrap_or_else(|e| panic!("{args:?} --output yaml is not YAML: {e}\n{yaml}"));
    assert_eq!(
        parsed, json,
        "{args:?}: the YAML is other data than the JSON:\n{yaml}"
    );
    assert!(
        !yaml.trim_start().starts_with('{'),
        "{args:?}: YAML in block style:\n{yaml}"
    );
    json
}

#[test]
fn records_yaml_is_its_json() {
    let args = ["records", "--objects", "fixtures/shop.json"];
    let json = same_data(&args, "--format");
    assert!(
        json.as_array().is_some_and(|zones| !zones.is_empty()),
        "{json}"
    );
    // `--output` is `--format` under the name the other commands use.
    assert_eq!(same_data(&args, "--output"), json);
}

#[test]
fn query_yaml_is_its_json() {
    let json = same_data(
        &[
            "query",
            "nope.shop.svc.cluster.local",
            "--why",
            "--objects",
            "fixtures/shop.json",
        ],
        "--output",
    );
    assert_eq!(json["status"], "NXDOMAIN", "{json}");
    assert_eq!(json["why"]["plugin"], "kubernetes", "{json}");
}

#[test]
fn endpoints_yaml_is_its_json() {
    let json = same_data(
        &["endpoints", "--objects", "fixtures/proxy.json"],
        "--output",
    );
    assert!(json.to_string().contains("payments"), "{json}");
}

#[test]
fn explain_yaml_is_its_json() {
    let json = same_data(
        &[
            "explain",
            "pay/payments",
            "--objects",
            "fixtures/proxy.json",
        ],
        "--output",
    );
    assert!(
        json["findings"].as_array().is_some_and(|f| !f.is_empty()),
        "{json}"
    );
}

#[test]
fn proxy_trace_yaml_is_its_json() {
    let json = same_data(
        &[
            "proxy",
            "trace",
            "--ruleset",
            "fixtures/node-nat.txt",
            "--to",
            "10.96.0.20:80",
            "--simulate",
            "300",
        ],
        "--output",
    );
    assert_eq!(json["verdict"], "dnat");
    assert!(json["simulation"].is_object(), "{json}");
}

#[test]
fn resolve_cost_yaml_is_its_json() {
    let json = same_data(
        &[
            "resolve-cost",
            "shop",
            "api.partner.example.com",
            "--namespace",
            "payments",
            "--objects",
            "fixtures/shop.json",
            "--libc",
            "musl",
        ],
        "--output",
    );
    assert_eq!(json["reports"].as_array().map(Vec::len), Some(2), "{json}");
    let json = same_data(
        &[
            "resolve-cost",
            "--log",
            "fixtures/shop-queries.log",
            "--objects",
            "fixtures/shop.json",
            "--top",
            "3",
        ],
        "--output",
    );
    assert!(json.is_object(), "{json}");
}

#[test]
fn text_stays_the_default() {
    let default = run(binary(), &["endpoints", "--objects", "fixtures/proxy.json"]);
    let text = run(
        binary(),
        &[
            "endpoints",
            "--objects",
            "fixtures/proxy.json",
            "--output",
            "text",
        ],
    );
    assert_eq!(default.code, 0, "{}", default.stderr);
    assert_eq!(default.stdout, text.stdout);
    assert!(serde_json::from_str::<Value>(&default.stdout).is_err());
}
