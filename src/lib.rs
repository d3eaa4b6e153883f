//! clusterdns: the DNS server a Kubernetes cluster runs as its `kube-dns` Service, a
//! drop-in for CoreDNS with its *kubernetes* plugin, plus the operator's tools around it.
//!
//! # Layout
//!
//! Data flows one way, from the cluster's objects to answers on the wire: `config` and
//! `model`, then `source` (the only writer of cluster state), `store` (the published zone),
//! `zone` (answers, pure and synchronous) and `server` (the sockets and the plugin chain);
//! `kube_proxy` and `resolver_sim` stand beside, `cli` on top. Which module may use which is the
//! layer table below and nothing else: module docs point here rather than restate it, and
//! `ARCHITECTURE.md` names the files of each stage.
//!
//! `model` and `kube_proxy` are crates of their own in the workspace, `crates/model`
//! (`clusterdns-model`) and `crates/kube-proxy` (`clusterdns-kube-proxy`), re-exported here
//! under their modules' names: they need nothing from the server, so a change to it does
//! not recompile them or their tests.
//!
//! # Layers
//!
//! What each module may use: the modules on its line, each of them on a line above it, and
//! nothing else. `tests/architecture.rs` reads this table and fails on an import it does not
//! allow, on an entry nothing uses any more, and on any import cycle, between these modules
//! or between the files of one module. Test code (`#[cfg(test)]`) is not counted. A module
//! that is a crate of its own is read from its `crates/*/src` under its name here.
//!
//! ```text
//! module         uses
//! codes          -
//! plugin         -
//! selector       -
//! gotemplate     -
//! suggest        -
//! config         codes, gotemplate, plugin, selector, suggest
//! model          -
//! name           -
//! metrics        codes, model, plugin
//! limits         metrics
//! http           metrics
//! search_tracker codes, metrics
//! zone           codes, config, model, name
//! store          zone
//! wire           codes, name, zone
//! source         config, metrics, model, store, suggest, zone
//! search_walk    codes, name, zone
//! cache          codes, config, metrics, name, wire
//! querylog       codes, config, name, wire
//! forward        codes, config, limits, metrics, name, wire
//! server         cache, codes, config, forward, gotemplate, http, limits, metrics, model, name, plugin, querylog, search_tracker, search_walk, source, store, wire, zone
//! kube_proxy     model
//! resolver_sim   codes, config, model, name, search_tracker, search_walk, wire, zone
//! node_cache     -
//! cli            codes, config, kube_proxy, limits, model, name, node_cache, resolver_sim, server, source, store, suggest, wire, zone
//! ```
//!
//! # Modules
//!
//! - [`codes`]: the DNS protocol's numbers: record types, classes, rcodes, EDNS0 options.
//! - [`plugin`]: the plugins clusterdns implements, declared once, and CoreDNS's plugin order.
//! - [`config`]: Corefile lexer, server blocks, the *kubernetes* and *transfer* directives.
//! - [`selector`]: label selectors in kubectl syntax.
//! - [`gotemplate`]: the Go template language of the *template* plugin.
//! - [`suggest`]: "did you mean": the known word nearest to a misspelt one.
//! - [`model`]: Namespace, Service, EndpointSlice, Pod, and the EndpointSlice controller.
//! - [`name`]: domain names in wire format, the form every module indexes and compares.
//! - [`source`]: `kubectl get -o json` files and the API watch into a [`model::Cluster`],
//!   published by [`source::publish::Publisher`].
//! - [`store`]: the published [`zone::Snapshot`], swapped whole on every change.
//! - [`zone`]: the cluster zone: names prepared at build time, answers as wire bytes.
//! - [`server`]: UDP and TCP listeners and the request path.
//! - [`limits`]: the descriptor limit, and the caps on TCP connections and forwards.
//! - [`forward`]: the *forward* plugin's engine, a proxy to upstream resolvers.
//! - [`search_walk`]: the server's search walk (*autopath*), shared by server and simulator.
//! - [`cache`]: the *cache* plugin, for upstream answers.
//! - [`querylog`]: the *log* and *errors* plugins.
//! - [`kube_proxy`]: kube-proxy's endpoint choice, its iptables and nftables rules, the ruleset
//!   tracer.
//! - [`metrics`]: CoreDNS's Prometheus metrics, process metrics, the registry.
//! - [`http`]: `/health`, `/ready` and `/metrics`, with lameduck, and the debug pages.
//! - [`search_tracker`]: the live search-path tracker (`/debug/search-path`) and the waste
//!   classes it shares with `resolve-cost --log`.
//! - [`wire`]: query parsing, answer writing, and whole-reply rewriting.
//! - [`node_cache`]: NodeLocal DNSCache's node side: the interface, the NOTRACK rules and their
//!   upkeep, the Corefile from node-cache's template.
//! - [`resolver_sim`]: the kubelet's resolv.conf and the glibc/musl search walk over the zone.
//! - [`cli`]: the command line.

pub mod cache;
pub mod cli;
pub mod codes;
pub mod config;
pub mod forward;
pub mod gotemplate;
pub mod http;
pub mod limits;
pub mod metrics;
pub mod name;
pub mod node_cache;
pub mod plugin;
pub mod querylog;
pub mod resolver_sim;
pub mod search_tracker;
pub mod search_walk;
pub mod selector;
pub mod server;
pub mod source;
pub mod store;
pub mod suggest;
pub mod wire;
pub mod zone;

// Crates of their own (crates/model, crates/kube-proxy), at their modules' paths here.
pub use clusterdns_kube_proxy as kube_proxy;
pub use clusterdns_model as model;
