//! The `clusterdns` command line run as a user runs it: arguments in; exit status, stdout and
//! stderr out.

use std::process::Command;

use super::root;

/// What one run of the binary printed, and how it ended.
pub struct Run {
    /// The exit status (-1 when a signal ended it).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `clusterdns ARGS...` from the repository root, logging warnings only, with no
/// cluster to read (no kubeconfig, not in a pod): the tools read only what they are given.
pub fn clusterdns(args: &[&str]) -> Run {
    clusterdns_env(args, &[])
}

/// [`clusterdns`] with `env` set too (`KUBECONFIG`).
pub fn clusterdns_env(args: &[&str], env: &[(&str, &std::path::Path)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_clusterdns"));
    command
        .args(args)
        .current_dir(root())
        .env("RUST_LOG", "warn")
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env("HOME", root().join("target/no-home"));
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// Runs and expects exit status 0: what it printed.
pub fn ok(args: &[&str]) -> String {
    let run = clusterdns(args);
    assert_eq!(run.code, 0, "clusterdns {args:?} failed:\n{}", run.stderr);
    run.stdout
}

/// Runs and expects exit status 2 (a usage or input error): its stderr.
pub fn fails(args: &[&str]) -> String {
    let run = clusterdns(args);
    assert_eq!(run.code, 2, "clusterdns {args:?}");
    run.stderr
}
