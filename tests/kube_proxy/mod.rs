//! kube-proxy in the toolbox, through the real binary: `endpoints`, `proxy render`,
//! `proxy trace`, `explain`. The helpers the concerns share are here; the tests are in one
//! module per concern.

mod endpoints;
mod explain;
mod netfilter;
mod render_iptables;
mod render_nftables;
mod trace;
mod trace_nodes;

use crate::common::cli::{clusterdns, ok};
use crate::common::golden::assert_golden;

// --- golden files (endpoints, proxy render) -------------------------------------------------

/// One golden file under `tests/golden/proxy/`, and the command line that prints it.
struct Golden {
    /// The file's name.
    file: &'static str,
    /// The objects (`--objects`).
    objects: &'static str,
    /// The rest of the command line.
    args: &'static [&'static str],
}

/// Each case's output, as `print` runs it, is its golden file.
fn assert_goldens(cases: &[Golden], print: impl Fn(&Golden) -> String) {
    for case in cases {
        assert_golden(&format!("tests/golden/proxy/{}", case.file), &print(case));
    }
}

// --- proxy render ---------------------------------------------------------------------------

/// `proxy render --mode MODE --objects FIXTURE` with kind's dual-stack cluster CIDRs.
fn render_in(mode: &str, fixture: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "proxy",
        "render",
        "--mode",
        mode,
        "--objects",
        fixture,
        "--cluster-cidr",
        "10.244.0.0/16,fd00:10:244::/56",
    ];
    args.extend_from_slice(extra);
    ok(&args)
}

fn render(fixture: &str, extra: &[&str]) -> String {
    render_in("iptables", fixture, extra)
}

// --- proxy trace ----------------------------------------------------------------------------

/// A rendered ruleset in a temporary file.
struct Rendered {
    _dir: tempfile::TempDir,
    path: String,
}

fn rendered(fixture: &str, extra: &[&str]) -> Rendered {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rules.txt");
    std::fs::write(&path, render(fixture, extra)).unwrap();
    Rendered {
        path: path.to_str().unwrap().to_owned(),
        _dir: dir,
    }
}

fn trace_json(ruleset: &str, args: &[&str]) -> (i32, serde_json::Value) {
    let mut full = vec!["proxy", "trace", "--ruleset", ruleset, "--output", "json"];
    full.extend_from_slice(args);
    let run = clusterdns(&full);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    (run.code, serde_json::from_str(&run.stdout).unwrap())
}

fn endpoint_list(json: &serde_json::Value) -> Vec<(String, u64, f64)> {
    json["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["address"].as_str().unwrap().to_owned(),
                e["port"].as_u64().unwrap(),
                e["share"].as_f64().unwrap(),
            )
        })
        .collect()
}

// --- the tools together ---------------------------------------------------------------------

/// The offline tools say only what they were asked on stdout and, unless something is
/// wrong, nothing on stderr: the server's INFO lines ("zone loaded") are not for them
/// (`RUST_LOG` still turns them on).
#[test]
fn the_tools_are_quiet_on_stderr_by_default() {
    let run = |args: &[&str], log: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_clusterdns"));
        command
            .args(args)
            .current_dir(crate::common::root())
            .env_remove("RUST_LOG");
        if let Some(log) = log {
            command.env("RUST_LOG", log);
        }
        command.output().unwrap()
    };
    let explain = ["explain", "shop/web", "--objects", "fixtures/shop.json"];
    let records = ["records", "--objects", "fixtures/shop.json"];
    for args in [&explain[..], &records[..]] {
        let out = run(args, None);
        assert!(out.status.code().is_some_and(|c| c <= 1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
    let loud = run(&explain, Some("info"));
    assert!(String::from_utf8_lossy(&loud.stderr).contains("zone loaded"));
}
