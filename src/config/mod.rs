//! The Corefile, parsed into typed configuration.
//!
//! What it may use of the rest of the crate is its line of the layer table in `src/lib.rs`
//! (checked by `tests/architecture.rs`). I/O is confined to [`read_corefile`], to the files `import` names, to the resolv.conf files and
//! TLS certificate files `forward` names (through [`Environment`], so tests can fix them) and
//! to the system's trust anchors for `tls://` upstreams; everything else works
//! on strings so it can be tested with inline Corefiles.
//!
//! The syntax is CoreDNS's (Caddy v1): server blocks `ZONES[:PORT] { ... }`, directives with
//! their arguments on their own line and an optional `{ ... }` block of options, `#`
//! comments, quoted strings, `{$ENV}` substitution, and `(snippet) { ... }` / `import`. The
//! directives implemented are those of kubeadm's Corefile and those the distributions and
//! their operators add — the rows of the plugin registry ([`crate::plugin::Plugin`]) — each
//! with CoreDNS's syntax, defaults and checks (the module of each directive lists where it
//! differs). Every other CoreDNS plugin is refused with [`Error::Unsupported`] and any other
//! name with [`Error::UnknownDirective`].
//!
//! ```
//! use clusterdns::config::parse_corefile;
//! use std::path::Path;
//!
//! let config = parse_corefile(
//!     ".:1053 {\n  bind 127.0.0.1\n  kubernetes cluster.local in-addr.arpa {\n    pods insecure\n  }\n}\n",
//!     Path::new("Corefile"),
//! )?;
//! let kubernetes = config.servers[0].plugins.kubernetes.as_ref().expect("kubernetes block");
//! assert_eq!(kubernetes.zones[kubernetes.primary_zone].to_string(), "cluster.local.");
//! # Ok::<(), clusterdns::config::Error>(())
//! ```

mod build;
mod directives;
mod duration;
mod env;
mod error;
mod fs;
mod glob;
mod lexer;
mod resolv_conf;
mod shorthand;
mod stream;
mod syntax;
#[cfg(test)]
mod test_support;
mod tls;
mod zone;

use std::path::Path;
use std::sync::Arc;

use hickory_proto::rr::Name;

pub use directives::Plugins;
// Every plugin's configuration type (its registry row's); below, the option types a few
// plugins' configurations are made of.
pub use directives::autopath::{AutopathNamespace, AutopathSource};
pub use directives::cache::{CacheClass, Prefetch, ServeStale};
pub use directives::errors::{Consolidate, LogLevel};
pub use directives::forward::{ForwardPolicy, Upstream, UpstreamTransport};
pub(crate) use directives::kubernetes::is_dns_label;
pub use directives::kubernetes::{ApiConfig, ListMode, PodMode, TlsFiles};
pub use directives::log::LogClasses;
pub use directives::prometheus::SearchPathConfig;
pub use directives::rewrite::{
    AnswerRewrite, Edns0Action, Edns0Data, Edns0Option, Edns0Rule, NameMatcher, RewriteAction,
};
pub use directives::transfer::TransferPeer;
pub use directives::types::*;
pub use env::Environment;
pub use error::Error;
pub(crate) use fs::{open_regular, read_regular, read_text_lossy};
pub use resolv_conf::{
    GLIBC_MAXNS, MAX_NDOTS, ReadResolvConfError, ResolvConf, ResolvConfError,
    Warning as ResolvConfWarning, parse_resolv_conf, read_resolv_conf,
};
pub use shorthand::{
    DEFAULT_RESOLV_CONF, DEFAULT_ZONE, SHORTHAND_FILE, ShorthandOptions, shorthand,
    shorthand_corefile, shorthand_corefile_with, shorthand_with,
};
pub(crate) use stream::MAX_FILE_BYTES;
pub use tls::{ClientIdentity, ForwardTls, TlsError};
pub use zone::{CidrError, ZoneNameError, parse_cidr, parse_cluster_zone};

/// Reads and parses the Corefile at `path` (files it imports are relative to its directory).
pub fn read_corefile(path: &Path) -> Result<Config, Error> {
    read_corefile_in(path, &Environment::system())
}

/// [`read_corefile`] with the environment variables, interfaces and fixed files of `env`.
pub fn read_corefile_in(path: &Path, env: &Environment) -> Result<Config, Error> {
    let text = stream::read_text(path).map_err(|source| Error::Read {
        file: path.to_owned(),
        line: 0,
        error: source,
    })?;
    parse_corefile_in(&text, path, env)
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
    /// The configuration of each plugin the block has (`bind`'s addresses empty means every
    /// address).
    pub plugins: Plugins,
    /// Line of the block's first key, for messages.
    pub line: usize,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
