//! Loading a configuration: every block built, each of its step plugins by its own
//! [`Lifecycle::build`](super::chain::lifecycle::Lifecycle::build) (zones from objects
//! files or an API watch, forwarders, caches, *hosts*, *file* zones, templates), and the
//! errors that stop a start.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use super::Block;
use super::chain::lifecycle::Build;
use super::error::StartError;
use super::observability::Observability;
use crate::config::{Config, ServerBlock};
use crate::name::wire_zones;

/// A server block ready to serve, and the addresses it listens on.
#[derive(Debug)]
pub struct LoadedBlock {
    /// The block, its zone loaded.
    pub block: Arc<Block>,
    /// Where it listens (as configured: port 0 stays 0 until bound).
    pub addrs: Vec<SocketAddr>,
}

/// The blocks of `config` with their zones loaded from their objects files, and the
/// addresses each listens on. Nothing is bound or started: this is also the offline path of
/// `records` and `query` (`metrics` is `None` there).
pub fn load(config: &Config) -> Result<Vec<LoadedBlock>, StartError> {
    load_with(config, None, &[])
}

/// `previous`: the blocks of the running configuration, whose steps the new ones may take
/// over ([`Build::previous`]).
pub(super) fn load_with(
    config: &Config,
    metrics: Option<&Observability>,
    previous: &[Arc<Block>],
) -> Result<Vec<LoadedBlock>, StartError> {
    let mut blocks = Vec::with_capacity(config.servers.len());
    for server_block in &config.servers {
        let addrs = block_addresses(server_block);
        let server = server_label(server_block);
        let zones = wire_zones(&server_block.zones);
        let measured = metrics.filter(|_| server_block.plugins.prometheus.is_some());
        let at = Build {
            config: server_block,
            zones: &zones,
            server: &server,
            addrs: &addrs,
            observability: metrics,
            measured: measured.is_some(),
            previous,
        };
        // One set of DNS metrics per zone, when the block has *prometheus* to show them.
        let zone_metrics = measured.map_or_else(Vec::new, |observability| {
            server_block
                .zones
                .iter()
                .map(|zone| {
                    observability
                        .dns
                        .server_zone(&server, &zone.to_string(), "")
                })
                .collect()
        });
        blocks.push(LoadedBlock {
            block: Arc::new(Block::build(&at, zone_metrics)?),
            addrs,
        });
    }
    Ok(blocks)
}

/// The `server` label CoreDNS's metrics carry: `dns://:53`, or `dns://127.0.0.1:1053` for a
/// block bound to one address.
pub fn server_label(block: &crate::config::ServerBlock) -> String {
    match block.plugins.bind.first() {
        None => format!("dns://:{}", block.port),
        Some(std::net::IpAddr::V6(v6)) => format!("dns://[{v6}]:{}", block.port),
        Some(ip) => format!("dns://{ip}:{}", block.port),
    }
}

/// The address a listener of `block` binds, for each of its bind addresses.
pub fn block_addresses(block: &ServerBlock) -> Vec<SocketAddr> {
    if block.plugins.bind.is_empty() {
        vec![SocketAddr::new(IpAddr::from([0, 0, 0, 0]), block.port)]
    } else {
        block
            .plugins
            .bind
            .iter()
            .map(|&ip| SocketAddr::new(ip, block.port))
            .collect()
    }
}
