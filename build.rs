//! Build-time facts for `coredns_build_info`: the compiler's version (CoreDNS's `goversion`
//! label) and the git revision (`revision`), passed to the crate as environment variables.
//! Either may be missing (no git, a source tarball): the crate falls back to "unknown" or "".
//!
//! And the layout of the release binary: where the linker is the toolchain's own lld, the
//! functions start-up and the query path run (link/hot-text.ld, written by `cargo xtask
//! orderfile`) are placed first, before .text, so a small cluster's server touches a few
//! hundred code pages instead of a thousand spread over the whole binary.

#![allow(clippy::print_stdout)]

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CLUSTERDNS_REVISION");
    order_hot_functions();

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

/// Hands the linker link/hot-text.ld (written by `cargo xtask orderfile`): a script that adds
/// an output section `.text.hot`, before `.text`, of the functions start-up and the query path
/// run. Only for a release build of x86_64-unknown-linux-gnu with the linker Rust picks there
/// (rust-lld): another linker asked for in RUSTFLAGS or by `target.<triple>.linker`, another
/// target, a debug build, or `CLUSTERDNS_NO_ORDER=1` (`cargo xtask orderfile`, which profiles
/// the binary as the linker lays it out alone) leave the layout to the linker. A pattern that
/// matches nothing is no error: the script only moves code.
fn order_hot_functions() {
    println!("cargo:rerun-if-changed=link/hot-text.ld");
    println!("cargo:rerun-if-env-changed=CLUSTERDNS_NO_ORDER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let rustflags = var("CARGO_ENCODED_RUSTFLAGS");
    let other_linker = ["linker", "fuse-ld", "link-self-contained"]
        .iter()
        .any(|flag| rustflags.contains(flag));
    if var("TARGET") != "x86_64-unknown-linux-gnu"
        || var("PROFILE") != "release"
        || !var("RUSTC_LINKER").is_empty()
        || other_linker
        || !var("CLUSTERDNS_NO_ORDER").is_empty()
    {
        return;
    }
    let script = Path::new(&var("CARGO_MANIFEST_DIR")).join("link/hot-text.ld");
    if script.exists() {
        println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
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
