//! clusterdns's own tools around the product, never part of it: the container image built
//! without a registry ([`image`], [`images`]), a local control plane without containers
//! ([`cluster`]), real Kubernetes nodes on this machine for the tests ([`nodes`], on
//! [`netns`] and [`kube`]), the benches against knotd and unbound with their results as JSON
//! and bench/README.md's tables from them ([`bench`]), and a release's krew manifest
//! ([`krew`]). `cargo xtask` runs them from the command line (src/main.rs); the tests in
//! tests/ use this library.

pub mod bench;
pub mod cluster;
pub mod image;
pub mod images;
pub mod krew;
pub mod kube;
pub mod load;
pub mod netns;
pub mod nodes;
pub mod operations;

use std::path::PathBuf;

/// The repository's root.
pub fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}
