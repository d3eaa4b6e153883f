//! The binary as kubectl's plugin: named `kubectl-clusterdns` (a link, as krew installs it),
//! it runs as `kubectl clusterdns ...` and its help and usage say so.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{binary, run, run_with, tool};

/// A directory holding `kubectl-clusterdns`, a link to the binary under test.
fn plugin_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("kubectl-clusterdns");
    std::os::unix::fs::symlink(binary(), &plugin).unwrap();
    (dir, plugin)
}

const EXPLAIN: [&str; 4] = [
    "explain",
    "pay/payments",
    "--objects",
    "fixtures/proxy.json",
];

#[test]
fn as_kubectl_clusterdns_its_help_shows_the_kubectl_form() {
    let (_dir, plugin) = plugin_dir();
    let help = run(&plugin, &["--help"]);
    assert_eq!(help.code, 0, "{}", help.stderr);
    assert!(
        help.stdout.contains("Usage: kubectl clusterdns <COMMAND>"),
        "{}",
        help.stdout
    );
    let explain = run(&plugin, &["explain", "--help"]);
    assert!(
        explain
            .stdout
            .contains("Usage: kubectl clusterdns explain [OPTIONS]"),
        "{}",
        explain.stdout
    );
    // A usage error names the command as the user typed it too.
    let wrong = run(&plugin, &["explain", "-A", "shop/web"]);
    assert_eq!(wrong.code, 2);
    assert!(
        wrong.stderr.contains("Usage: kubectl clusterdns explain"),
        "{}",
        wrong.stderr
    );
    // Under its own name, the binary is `clusterdns`.
    let own = run(binary(), &["--help"]);
    assert!(
        own.stdout.contains("Usage: clusterdns <COMMAND>"),
        "{}",
        own.stdout
    );
    assert!(!own.stdout.contains("kubectl clusterdns"), "{}", own.stdout);
}

#[test]
fn as_kubectl_clusterdns_it_runs_the_same_commands() {
    let (_dir, plugin) = plugin_dir();
    let direct = run(binary(), &EXPLAIN);
    let as_plugin = run(&plugin, &EXPLAIN);
    assert_eq!(direct.code, 1, "the fixture's drift: {}", direct.stderr);
    assert_eq!(
        (as_plugin.code, &as_plugin.stdout),
        (direct.code, &direct.stdout)
    );
    // Its completion script completes the name it was run by, and calls it back.
    let bash = run(&plugin, &["completion", "bash"]);
    assert_eq!(bash.code, 0, "{}", bash.stderr);
    assert!(
        bash.stdout
            .contains(&format!("\"{}\" --", plugin.display())),
        "{}",
        bash.stdout
    );
    let registered: Vec<&str> = bash
        .stdout
        .lines()
        .filter(|line| line.trim_start().starts_with("complete "))
        .filter_map(|line| line.split_whitespace().last())
        .collect();
    assert!(
        !registered.is_empty() && registered.iter().all(|name| *name == "kubectl-clusterdns"),
        "{}",
        bash.stdout
    );
}

/// kubectl from the peers (bench/peers/build.sh), else from `$PATH` (`test` skips what
/// needs it without one).
pub(super) fn kubectl(test: &str) -> Option<PathBuf> {
    crate::common::cluster::peers()
        .map(|dir| dir.join("kubectl"))
        .or_else(|| tool("kubectl", test))
}

/// `kubectl ARGS...` with only the plugin's directory and kubectl's on `PATH`.
fn kubectl_run(kubectl: &Path, plugin_dir: &Path, args: &[&str]) -> super::Ran {
    let path = std::env::join_paths([plugin_dir, kubectl.parent().unwrap()]).unwrap();
    let home = tempfile::tempdir().unwrap();
    run_with(
        Command::new(kubectl)
            .args(args)
            .env("PATH", path)
            .env("HOME", home.path())
            .env_remove("KUBECONFIG"),
    )
}

#[test]
fn kubectl_finds_and_runs_the_plugin() {
    let Some(kubectl) = kubectl("kubectl_finds_and_runs_the_plugin") else {
        return;
    };
    let (dir, plugin) = plugin_dir();
    let list = kubectl_run(&kubectl, dir.path(), &["plugin", "list"]);
    assert_eq!(list.code, 0, "kubectl plugin list: {}", list.stderr);
    assert!(
        list.stdout
            .lines()
            .any(|line| line == plugin.to_str().unwrap()),
        "kubectl plugin list:\n{}",
        list.stdout
    );
    let mut args = vec!["clusterdns"];
    args.extend(EXPLAIN);
    let ran = kubectl_run(&kubectl, dir.path(), &args);
    let direct = run(binary(), &EXPLAIN);
    assert_eq!(
        (ran.code, &ran.stdout),
        (direct.code, &direct.stdout),
        "{}",
        ran.stderr
    );
    let help = kubectl_run(&kubectl, dir.path(), &["clusterdns", "explain", "--help"]);
    assert!(
        help.stdout.contains("Usage: kubectl clusterdns explain"),
        "{}",
        help.stdout
    );
}
