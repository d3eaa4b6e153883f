//! What command-line users expect of the binary: shell completions and manual pages generated
//! from its own definition, the kubectl plugin form and its krew manifest, `--output yaml`
//! beside `--output json`, and colour only on a terminal and never with `NO_COLOR`. Each runs
//! the real binary, and the real shells, `man`, `kubectl` and `script` where they are
//! installed (CI installs them, and sets `CLUSTERDNS_REQUIRE_TOOLS`: a missing one fails).

mod colour;
mod completion;
mod krew;
mod man;
mod output;
mod plugin;
mod query;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::CommandFactory as _;

/// Set in CI: a tool these tests need that is not installed is a failure, not a skip.
const REQUIRE: &str = "CLUSTERDNS_REQUIRE_TOOLS";

/// `program` from `$PATH`, or `None` after saying on stderr that `test` skips what needs it
/// (a failure when [`REQUIRE`] is set).
fn tool(program: &str, test: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os(REQUIRE).is_none(),
            "{test}: {program} is not installed, and {REQUIRE} is set"
        );
        eprintln!("{test}: {program} is not installed: that part is skipped");
    }
    found
}

/// What a process printed, and how it ended.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `program ARGS...` from the repository root, logging warnings only.
fn run(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Ran {
    run_with(Command::new(program).args(args).env("RUST_LOG", "warn"))
}

/// Runs `command` from the repository root, without standard input.
fn run_with(command: &mut Command) -> Ran {
    let output = command
        .current_dir(crate::common::root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Ran {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The binary under test.
fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_clusterdns"))
}

/// Every command of the binary as the user types it, nested ones included: `["records"]`,
/// `["proxy", "render"]`, ... (not clap's `help`).
fn commands() -> Vec<Vec<String>> {
    fn walk(command: &clap::Command, path: &[String], out: &mut Vec<Vec<String>>) {
        for sub in command.get_subcommands() {
            let mut path = path.to_vec();
            path.push(sub.get_name().to_owned());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(&clusterdns::cli::Cli::command(), &[], &mut out);
    assert!(out.len() >= 12, "{out:?}");
    out
}

/// The long flags of the command at `path` (`--objects`, `--output`, ...), `--help` included.
fn long_flags(path: &[String]) -> Vec<String> {
    let mut command = clusterdns::cli::Cli::command();
    command.build();
    let mut command = &command;
    for name in path {
        command = command.find_subcommand(name).unwrap();
    }
    command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set())
        .filter_map(|arg| arg.get_long().map(|long| format!("--{long}")))
        .collect()
}
