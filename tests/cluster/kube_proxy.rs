//! The real kube-proxy (v1.36.3, bench/peers/build.sh) against `proxy render` and `explain`.
//! kube-proxy runs once in `--proxy-mode iptables` and once in `--proxy-mode nftables`, each
//! in a network namespace of its own as kwok-node-0 of a private control plane,
//! with a Service for every feature render covers (kube_proxy/objects.yaml); once it has
//! synced, its dumps and the objects at that moment are compared rule by rule with render's
//! ([`compare`]): every difference must be one docs/differences.md's `## kube-proxy` section
//! explains ([`compare::KNOWN`]). `CLUSTERDNS_BLESS=1` saves the dumps as
//! tests/fixtures/kube-proxy/, which [`fixtures`] and [`drift`] check without the cluster.
//!
//! Without the peers the test says so and passes (unless `CLUSTERDNS_REQUIRE_PEERS`);
//! without network namespaces, iptables and nft (not root, no `ip`) likewise, unless
//! `CLUSTERDNS_REQUIRE_NETFILTER` is set.

mod compare;
mod drift;
mod fixtures;
mod render;
