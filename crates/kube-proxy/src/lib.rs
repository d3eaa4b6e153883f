//! kube-proxy in the toolbox: the endpoints it chooses, the rules it writes (iptables and
//! nftables, as a node prints them), and a tracer that walks a real node's ruleset.
//!
//! A crate of its own (`clusterdns-kube-proxy`, crates/kube-proxy), used as
//! `clusterdns::kube_proxy`: it reads only the objects (`clusterdns-model`), as the layer
//! table of clusterdns's `src/lib.rs` says.
//!
//! - [`plan`]: kube-proxy's view of the objects: Service ports, their endpoints (ready, else
//!   serving-and-terminating; matched by port name and protocol), node-local sets.
//! - [`endpoints`]: the `endpoints` report (the EndpointSlice controller's view and
//!   kube-proxy's choice).
//! - [`iptables`]: the rules as `iptables-save` prints them.
//! - [`nftables`]: the rules as `nft list table ip kube-proxy` prints them, or as the
//!   `nft -f` transaction kube-proxy writes.
//! - [`explain`]: one Service joined across pods, slices, kube-proxy, a node's rules and DNS,
//!   with the drift between them.
//! - [`names`]: chain names, kube-proxy's (base32 of SHA-256) or clusterdns's hex ones.
//! - [`ruleset`]: `iptables-save`, `nft list` and `nft -f` text read into one model.
//! - [`trace`]: the tracer: a new connection walked through a ruleset as the kernel would.
//! - [`cascade`]: the statistic-match probability cascade and the share each rule really gets.

pub mod cascade;
pub mod endpoints;
pub mod explain;
pub mod iptables;
pub mod names;
pub mod nftables;
pub mod plan;
pub mod ruleset;
pub mod trace;
