//! `clusterdns node-cache`, NodeLocal DNSCache's node side: its flags and inputs refused with
//! clear errors and nothing left behind (`inputs`), and in network namespaces of their own
//! (tests/common/netns.rs) the interface and node-cache's rules appearing, kept up and
//! removed, and a client in another namespace resolving through the local addresses with
//! no conntrack entry, the kube-dns ConfigMap followed while it runs (`namespaces`).
//!
//! This kernel has no `dummy` link type: the namespace tests ask for a bridge with the
//! command's hidden `--link-kind bridge`; the dummy path is what the failure test of
//! `dummy_link_is_the_default_and_its_absence_is_a_clear_error` reaches here.

mod inputs;
mod namespaces;

use std::path::{Path, PathBuf};

/// NodeLocal DNSCache's Corefile template, and as its installer leaves it for node-cache
/// (169.254.20.10, cluster.local, 10.96.0.10): the bench's, one text for both.
pub use xtask::bench::node_cache::{MANIFEST_TEMPLATE, installed_template};

/// A node-cache's files: the template as `Corefile.base`, the Corefile it writes, and the
/// kube-dns ConfigMap directory (empty unless a test writes keys).
pub struct Files {
    pub dir: tempfile::TempDir,
}

impl Files {
    pub fn new(template: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Corefile.base"), template).unwrap();
        std::fs::create_dir(dir.path().join("kube-dns")).unwrap();
        Self { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// node-cache's arguments as the manifest passes them (single dash), plus the files'.
    pub fn args(&self, localip: &str) -> Vec<String> {
        let p = |name: &str| self.path(name).display().to_string();
        [
            "node-cache",
            "-localip",
            localip,
            "-conf",
            &p("Corefile"),
            "-upstreamsvc",
            "kube-dns-upstream",
            "-basecorefile",
            &p("Corefile.base"),
            "-kubednscm",
            &p("kube-dns"),
            "-metrics-listen-address",
            "127.0.0.1:0",
        ]
        .map(str::to_owned)
        .to_vec()
    }
}

/// The binary under test.
pub fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_clusterdns"))
}
