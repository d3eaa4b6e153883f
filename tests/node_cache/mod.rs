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

/// NodeLocal DNSCache's Corefile template as kubernetes's nodelocaldns.yaml ships it (the
/// node-local-dns ConfigMap), its three variables unfilled.
pub const MANIFEST_TEMPLATE: &str = "__PILLAR__DNS__DOMAIN__:53 {
    errors
    cache {
            success 9984 30
            denial 9984 5
    }
    reload
    loop
    bind __PILLAR__LOCAL__DNS__ __PILLAR__DNS__SERVER__
    forward . __PILLAR__CLUSTER__DNS__ {
            force_tcp
    }
    prometheus :9253
    health __PILLAR__LOCAL__DNS__:8080
    }
in-addr.arpa:53 {
    errors
    cache 30
    reload
    loop
    bind __PILLAR__LOCAL__DNS__ __PILLAR__DNS__SERVER__
    forward . __PILLAR__CLUSTER__DNS__ {
            force_tcp
    }
    prometheus :9253
    }
ip6.arpa:53 {
    errors
    cache 30
    reload
    loop
    bind __PILLAR__LOCAL__DNS__ __PILLAR__DNS__SERVER__
    forward . __PILLAR__CLUSTER__DNS__ {
            force_tcp
    }
    prometheus :9253
    }
.:53 {
    errors
    cache 30
    reload
    loop
    bind __PILLAR__LOCAL__DNS__ __PILLAR__DNS__SERVER__
    forward . __PILLAR__UPSTREAM__SERVERS__
    prometheus :9253
    }
";

/// The manifest's template as its installer leaves it for node-cache (kubernetes's
/// NodeLocal DNSCache instructions, kube-proxy in iptables mode: `sed
/// s/__PILLAR__LOCAL__DNS__/$localdns/g; s/__PILLAR__DNS__DOMAIN__/$domain/g;
/// s/__PILLAR__DNS__SERVER__/$kubedns/g`); node-cache fills the other two.
pub fn installed_template() -> String {
    MANIFEST_TEMPLATE
        .replace("__PILLAR__LOCAL__DNS__", "169.254.20.10")
        .replace("__PILLAR__DNS__DOMAIN__", "cluster.local")
        .replace("__PILLAR__DNS__SERVER__", "10.96.0.10")
}

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
