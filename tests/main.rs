//! The integration tests: one binary, one module per area.

#![allow(clippy::unwrap_used, unreachable_pub)]

mod answering;
mod apiserver;
mod architecture;
mod autopath;
mod cluster;
mod common;
mod corefile;
mod dashboards;
mod deploy;
mod distributions;
mod e2e;
mod external_name;
mod file;
mod forward;
mod forward_tls;
mod k8s_external;
mod live;
mod loader;
mod multicluster;
mod observe;
mod plugins;
mod protocol;
mod proxy;
mod readme;
mod real_resolvers;
mod reliability;
mod resolve;
mod rewrite_cname_edns0;
mod search_path;
mod transport;
mod watch;
mod why;
mod zone;
mod zonefile;
