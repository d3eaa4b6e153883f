//! The image the Deployment runs: the Dockerfile's binary, user and args, the allocator options
//! its sizing was measured with, and the README's steps that build, load and apply it.

use std::process::Command;

use super::{
    AUTOSCALER, applied, container, coredns_deployment, image, kind_section, readme_kind_steps,
};
use crate::common::read;

#[test]
fn the_image_runs_the_binary_as_the_deployments_user() {
    let image = image();
    let manifests = applied();
    let deployment = coredns_deployment(&manifests);
    let security = container(deployment).security_context.clone().unwrap();
    let [binary] = image.entrypoint.as_slice() else {
        panic!("the entrypoint is the binary alone: {:?}", image.entrypoint)
    };
    assert_eq!(
        image.user,
        format!(
            "{}:{}",
            security.run_as_user.unwrap(),
            security.run_as_group.unwrap()
        )
    );
    assert_eq!(
        image.copied,
        [format!("--from=build {binary} {binary}")],
        "the binary is copied to where the entrypoint runs it"
    );
    assert_eq!(
        image.setcap,
        [format!("cap_net_bind_service=+ep {binary}")],
        "port 53 as a non-root user needs the file capability"
    );
    assert_eq!(image.cmd, container(deployment).args.clone().unwrap());
    let cargo = read("Cargo.toml");
    assert!(
        cargo.contains(&format!("rust-version = \"{}\"", image.rust)),
        "the build image's Rust ({}) is the crate's rust-version",
        image.rust
    );
}

#[test]
fn the_binary_takes_the_deployments_args() {
    // The entrypoint and the Deployment's args, with the Corefile path pointing at a file
    // that does not parse: the binary must read it as `serve --corefile` and report it.
    let manifests = applied();
    let args = container(coredns_deployment(&manifests))
        .args
        .clone()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let corefile = dir.path().join("Corefile");
    std::fs::write(&corefile, ".:53 {\n    no_such_plugin\n}\n").unwrap();
    let args: Vec<String> = args
        .into_iter()
        .map(|a| {
            if a.starts_with('/') {
                corefile.display().to_string()
            } else {
                a
            }
        })
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(&args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no_such_plugin"), "{stderr}");
    assert!(stderr.contains(&corefile.display().to_string()), "{stderr}");
}

#[test]
fn readme_builds_loads_and_applies_what_the_manifests_use() {
    let manifests = applied();
    let image = container(coredns_deployment(&manifests))
        .image
        .clone()
        .unwrap();
    let page = kind_section();
    let short = readme_kind_steps();
    for command in [
        format!("docker build -t {image} ."),
        format!("kind load docker-image {image}"),
        "kubectl apply --server-side --force-conflicts -k deploy/".to_owned(),
        format!("kubectl apply --server-side -f deploy/{AUTOSCALER}"),
        "nslookup kubernetes.default".to_owned(),
    ] {
        assert!(page.contains(&command), "docs/kind.md runs `{command}`");
        assert!(
            short.contains(&command),
            "the README's kind steps run `{command}`"
        );
    }
}

/// The image is built with `cargo build` in the repository (the Dockerfile), so it gets the
/// allocator's options from `.cargo/config.toml`: one arena, no thread caches, freed pages
/// returned within a second (docs/kind.md, "Sizing"). jemalloc prints the options it runs
/// with when asked at exit; asking adds to the built-in ones rather than replacing them.
#[test]
fn the_binary_runs_with_the_allocator_options_its_sizing_was_measured_with() {
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .output()
        .unwrap();
    assert!(output.status.success());
    let stats = String::from_utf8_lossy(&output.stderr);
    for option in [
        "opt.narenas: 1\n",
        "opt.tcache: false\n",
        "opt.dirty_decay_ms: 1000 ",
        "opt.muzzy_decay_ms: 0 ",
    ] {
        assert!(
            stats.contains(option),
            "jemalloc does not run with {option:?}:\n{}",
            &stats[..stats.len().min(3000)]
        );
    }
}

#[test]
fn the_image_builds_the_binary_the_layout_was_made_for() {
    // link/hot-text.ld names the functions start-up and the query path run by their symbols,
    // whose hashes change with the profile's settings and the compiler's flags: the image's
    // build must be Cargo.toml's release profile untouched, and only strip what it built.
    let text = read("Dockerfile");
    let instructions: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    for changes_the_symbols in ["CARGO_PROFILE_", "RUSTFLAGS", "CARGO_BUILD_", "--profile"] {
        assert!(
            !instructions.contains(changes_the_symbols),
            "the Dockerfile sets {changes_the_symbols}, so its binary's symbols are not the \
             ones link/hot-text.ld lists"
        );
    }
    assert!(instructions.contains("cargo build --release --locked --bin clusterdns"));
    assert!(instructions.contains("strip --strip-debug /usr/local/bin/clusterdns"));
    let script = read("link/hot-text.ld");
    assert!(
        script.contains("INSERT BEFORE .text;") && script.contains("*(.text._ZN10clusterdns"),
        "link/hot-text.ld is bench/orderfile.sh's linker script"
    );
    assert!(read("build.rs").contains("link/hot-text.ld"));
}
