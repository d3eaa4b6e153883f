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

/// Runs `clusterdns ARGS...` from the repository root, logging warnings only.
pub fn clusterdns(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(args)
        .current_dir(root())
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
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
