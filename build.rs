//! Build-time facts for `coredns_build_info`: the compiler's version (CoreDNS's `goversion`
//! label) and the git revision (`revision`), passed to the crate as environment variables.
//! Either may be missing (no git, a source tarball): the crate falls back to "unknown" or "".

#![allow(clippy::print_stdout)]

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CLUSTERDNS_REVISION");

    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    // "rustc 1.95.0 (59807616e 2026-04-14)" -> "rustc 1.95.0".
    if let Some(version) = output(&rustc, &["--version"]) {
        let short: Vec<&str> = version.split_whitespace().take(2).collect();
        println!(
            "cargo:rustc-env=CLUSTERDNS_RUSTC_VERSION={}",
            short.join(" ")
        );
    }

    let revision = match std::env::var("CLUSTERDNS_REVISION") {
        Ok(revision) => Some(revision),
        Err(_) => {
            // Rebuild when HEAD moves: the HEAD file, and the branch it points to.
            for file in ["HEAD", "packed-refs"] {
                watch_git_path(file);
            }
            if let Some(branch) = output("git", &["rev-parse", "--symbolic-full-name", "HEAD"])
                && branch.starts_with("refs/")
            {
                watch_git_path(&branch);
            }
            output("git", &["rev-parse", "--short=12", "HEAD"])
        }
    };
    if let Some(revision) = revision {
        println!("cargo:rustc-env=CLUSTERDNS_REVISION={revision}");
    }
}

/// A command's trimmed standard output, if it ran and succeeded.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// Asks cargo to rerun this script when a file of the git directory changes (worktrees
/// included: `git rev-parse --git-path` knows where each file lives).
fn watch_git_path(file: &str) {
    if let Some(path) = output("git", &["rev-parse", "--git-path", file])
        && Path::new(&path).exists()
    {
        println!("cargo:rerun-if-changed={path}");
    }
}
