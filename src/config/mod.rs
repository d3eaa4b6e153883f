//! The Corefile, parsed into typed configuration.
//!
//! A leaf: nothing here depends on the rest of the crate except [`crate::selector`]. I/O is
//! confined to [`read_corefile`] and to the files `import` names; everything else works on
//! strings so it can be tested with inline Corefiles.
//!
//! The syntax is CoreDNS's (Caddy v1): server blocks `ZONES[:PORT] { ... }`, directives with
//! their arguments on their own line and an optional `{ ... }` block of options, `#`
//! comments, quoted strings, `{$ENV}` substitution, and `(snippet) { ... }` / `import`. Of
//! the directives, `bind`, `kubernetes` and `transfer` are implemented; every other CoreDNS
//! plugin is refused with [`Error::Unsupported`] and any other name with
//! [`Error::UnknownDirective`].
//!
//! ```
//! use clusterdns::config::parse_corefile;
//! use std::path::Path;
//!
//! let config = parse_corefile(
//!     ".:1053 {\n  bind 127.0.0.1\n  kubernetes cluster.local in-addr.arpa {\n    pods insecure\n  }\n}\n",
//!     Path::new("Corefile"),
//! )?;
//! let kubernetes = config.servers[0].kubernetes.as_ref().expect("kubernetes block");
//! assert_eq!(kubernetes.zones[kubernetes.primary_zone].to_string(), "cluster.local.");
//! # Ok::<(), clusterdns::config::Error>(())
//! ```

mod build;
mod directives;
mod duration;
mod env;
mod error;
mod glob;
mod lexer;
mod shorthand;
mod stream;
mod syntax;
mod zone;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::Name;
use ipnet::IpNet;

use crate::selector::LabelSelector;

pub use directives::COREDNS_DIRECTIVES;
pub use env::Environment;
pub use error::Error;
pub use shorthand::{SHORTHAND_FILE, shorthand, shorthand_corefile};

/// Reads and parses the Corefile at `path` (files it imports are relative to its directory).
pub fn read_corefile(path: &Path) -> Result<Config, Error> {
    let text = stream::read_text(path).map_err(|source| Error::Read {
        file: path.to_owned(),
        line: 0,
        source,
    })?;
    parse_corefile(&text, path)
}

/// Parses Corefile `text`; `file` names it in error messages and is the base directory of
/// relative `import`s and `objects` files. Environment variables and interfaces are the
/// process's and the machine's.
pub fn parse_corefile(text: &str, file: &Path) -> Result<Config, Error> {
    parse_corefile_in(text, file, &Environment::system())
}

/// [`parse_corefile`] with the environment variables and interfaces of `env`.
pub fn parse_corefile_in(text: &str, file: &Path, env: &Environment) -> Result<Config, Error> {
    let shared: Arc<Path> = Arc::from(file);
    let tokens = lexer::lex(text, &shared, env)?;
    let mut stream = stream::Stream::new(tokens, file, env);
    let blocks = syntax::parse(&mut stream)?;
    build::build(&blocks, file, env)
}

/// A whole Corefile: its server blocks, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// One entry per server block (a block with several keys on different ports is split).
    pub servers: Vec<ServerBlock>,
}

/// One server block: `ZONES:PORT { directives }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerBlock {
    /// The zones of the block's keys, lower-case and fully qualified (`.` for the root).
    pub zones: Vec<Name>,
    /// The port of the block's keys (53 when not given).
    pub port: u16,
    /// `bind` addresses; empty means every address.
    pub bind: Vec<IpAddr>,
    /// The *kubernetes* directive, if present.
    pub kubernetes: Option<KubernetesConfig>,
    /// The *transfer* directives.
    pub transfer: Vec<TransferConfig>,
    /// Line of the block's first key, for messages.
    pub line: usize,
}

/// The *kubernetes* directive.
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesConfig {
    /// Zones served (from the directive's arguments, else the server block's), lower-case
    /// and fully qualified; reverse zones from CIDR arguments are already expanded.
    pub zones: Vec<Name>,
    /// Index in `zones` of the first forward (non-reverse) zone: PTR targets live there.
    pub primary_zone: usize,
    /// `ttl` (default 5, range 0..=3600).
    pub ttl: u32,
    /// `pods`.
    pub pods: PodMode,
    /// `endpoint_pod_names`.
    pub endpoint_pod_names: bool,
    /// `namespaces` (empty: all namespaces).
    pub namespaces: Vec<String>,
    /// `namespace_labels`.
    pub namespace_labels: Option<LabelSelector>,
    /// `labels`.
    pub labels: Option<LabelSelector>,
    /// `noendpoints`.
    pub noendpoints: bool,
    /// `ignore empty_service`.
    pub ignore_empty_service: bool,
    /// `fallthrough [ZONES...]`: `None` when absent; an empty list means every zone.
    pub fallthrough: Option<Vec<Name>>,
    /// `objects FILE...` (clusterdns extension): static objects instead of the API watch.
    pub objects: Vec<PathBuf>,
    /// How to reach the API server when `objects` is not given.
    pub api: ApiConfig,
    /// `startup_timeout` (default 5 s).
    pub startup_timeout: Duration,
    /// Line of the directive, for messages.
    pub line: usize,
}

/// `pods disabled|insecure|verified`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodMode {
    /// No pod records (the default).
    #[default]
    Disabled,
    /// A record from the name itself, without checking that the pod exists.
    Insecure,
    /// A record only if a pod with that IP exists in that namespace.
    Verified,
}

/// The API-server connection options of the *kubernetes* directive.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ApiConfig {
    /// `endpoint URL` (only the first URL is used, as in CoreDNS).
    pub endpoint: Option<String>,
    /// `tls CERT KEY CACERT`.
    pub tls: Option<TlsFiles>,
    /// `kubeconfig KUBECONFIG [CONTEXT]`.
    pub kubeconfig: Option<(PathBuf, Option<String>)>,
    /// `apiserver_qps`.
    pub qps: Option<f64>,
    /// `apiserver_burst`.
    pub burst: Option<u32>,
    /// `apiserver_max_inflight`.
    pub max_inflight: Option<u32>,
}

/// `tls CERT KEY CACERT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// Client certificate.
    pub cert: PathBuf,
    /// Client key.
    pub key: PathBuf,
    /// CA certificate.
    pub ca: PathBuf,
}

/// The *transfer* directive: `transfer [ZONES...] { to ADDRESS... }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferConfig {
    /// Zones this directive allows transfers of (the server block's when none are given).
    pub zones: Vec<Name>,
    /// Who may transfer.
    pub to: Vec<TransferPeer>,
    /// Line of the directive.
    pub line: usize,
}

/// One `to` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferPeer {
    /// `*`: anyone.
    Any,
    /// An address or a network.
    Net(IpNet),
}

impl TransferPeer {
    /// Whether a client at `ip` may transfer.
    pub fn allows(&self, ip: IpAddr) -> bool {
        match self {
            Self::Any => true,
            Self::Net(net) => net.contains(&ip),
        }
    }
}
