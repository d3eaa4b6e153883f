//! The integration tests: one binary, one module per concern — `plugins` (every plugin's
//! tests, *forward*'s in plugins/forward.rs), `sources` (the API watch and the objects files),
//! `server` (answers, protocol, transport, reliability, metrics), `zone` (the cluster zone's
//! rules), `kube_proxy` (the toolbox, against the kernel too), `deploy` (manifests, image,
//! real nodes), `node_cache` (NodeLocal DNSCache's node side, in namespaces), `cluster`
//! (against the real control plane), `tools` (the commands), and `architecture`.

#![allow(clippy::unwrap_used, unreachable_pub)]

mod architecture;
mod cluster;
mod common;
mod deploy;
mod kube_proxy;
mod node_cache;
mod plugins;
mod server;
mod sources;
mod tools;
mod zone;
