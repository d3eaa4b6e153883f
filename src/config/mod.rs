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
//! The entry points are in `corefile.rs`, what they return ([`Config`], [`ServerBlock`]) in
//! `blocks.rs`, each directive's parser in `directives/`.
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

mod blocks;
mod build;
mod corefile;
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

pub use blocks::{Config, ServerBlock};
pub use corefile::{parse_corefile, parse_corefile_in, read_corefile, read_corefile_in};
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
