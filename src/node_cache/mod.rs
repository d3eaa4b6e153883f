//! NodeLocal DNSCache's node-side half, as kubernetes/dns's `cmd/node-cache` does it: the
//! link-local interface with every local address, the NOTRACK and ACCEPT rules that keep DNS
//! to it out of conntrack, their upkeep every sync interval and their teardown, and the
//! Corefile made from node-cache's template (`__PILLAR__...__` variables, the kube-dns
//! ConfigMap's `stubDomains` and `upstreamNameservers`).
//!
//! The DNS side is the server's own: `clusterdns node-cache` (src/cli/node_cache.rs) serves
//! the Corefile made here with the server every other command uses, and drives [`Networking`]
//! around it. Nothing here serves DNS or parses a Corefile.
//!
//! - [`rules`]: node-cache's rule set, in iptables' argument and `iptables-save` forms and as
//!   an nftables table;
//! - [`netfilter`]: the rules applied, checked and removed through `iptables` (legacy or nft
//!   backend, as the node's binary is) or `nft`;
//! - [`interface`]: the link with the local addresses, through iproute2's `ip`;
//! - [`template`]: the Corefile filled from the template; [`kube_dns_config`]: the kube-dns
//!   ConfigMap directory; [`service_env`]: the upstream Service's ClusterIP from the
//!   environment;
//! - [`upkeep`]: set-up, the periodic check and teardown of both, and node-cache's
//!   `coredns_nodecache_setup_errors_total`.

pub mod error;
pub mod interface;
pub mod kube_dns_config;
pub mod netfilter;
pub mod rules;
pub mod service_env;
pub mod template;
pub mod upkeep;

pub use error::Error;
pub use interface::{Interface, LinkKind};
pub use kube_dns_config::KubeDnsConfig;
pub use netfilter::{Backend, Netfilter};
pub use rules::Rule;
pub use upkeep::{Networking, SetupErrors};
