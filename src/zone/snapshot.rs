//! The snapshot: the cluster zone as one immutable value, built whole or as the previous one
//! with a change's names rebuilt, and swapped in whole.

use std::collections::HashSet;
use std::net::IpAddr;

use super::external::External;
use super::names;
use super::shards::Sharded;
use super::soa::ServedZone;
use crate::config::PodMode;

/// An immutable view of the cluster zone, swapped in whole. Built whole at the first sync,
/// and then (by [`Incremental`](super::Incremental)) as the previous snapshot with the names
/// a change touched rebuilt: the two share every shard of the index that the change did not
/// touch.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(super) zones: Vec<ServedZone>,
    pub(super) names: names::Names,
    /// Lower-case namespace labels whose `<ip>.<ns>.pod.<zone>` names `pods insecure` answers.
    pub(super) pod_namespaces: std::sync::Arc<HashSet<Box<[u8]>, ahash::RandomState>>,
    pub(super) pods: PodMode,
    /// `pods verified`: each client pod address and its namespace (`None` when pods of two
    /// namespaces claim the address), for *autopath*.
    pub(super) clients: Sharded<(IpAddr, Option<std::sync::Arc<str>>)>,
    pub(super) ttl: u32,
    pub(super) serial: u32,
    /// *k8s_external*'s zones, when the block has the plugin.
    pub(super) external: Option<External>,
}
