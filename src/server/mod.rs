//! The DNS server: listeners, and the request path they share.
//!
//! UDP, where nearly every query arrives, is served by workers of our own ([`udp`]): a
//! thread and a `SO_REUSEPORT` socket per CPU the process may use, each taking datagrams in
//! batches (`recvmmsg`), parsing the question in place, looking the name up in the current
//! snapshot, copying the prepared records out, and sending the batch's replies together
//! (`sendmmsg`) — no task, no allocation per query. TCP ([`tcp`]) serves each connection in
//! one task, capped process-wide, answering the messages that arrived together with the same
//! [`Handler::respond`] and writing their replies at once. Zone transfers ([`transfer`]) are
//! TCP only.

mod chain;
mod debug;
mod error;
mod generation;
mod handler;
mod listen;
mod load;
mod observability;
mod reload;
mod run;
mod tcp;
mod udp;
pub mod why;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::rr::Record;

pub use crate::wire::Transport;
pub use chain::Local;
pub use chain::kubernetes::Kubernetes;
pub use error::StartError;
pub use handler::Handler;
pub use listen::{Listener, bind_all, local_ips};
pub use load::{LoadedBlock, load, server_label};
pub use observability::Observability;
pub use reload::{Check, CorefileWatch, next_wait};
pub use run::{Running, start};

use self::chain::{PluginChain, Step};
use crate::cache::Cache;
use crate::config::ServerBlock;
use crate::forward::Forwarder;
use crate::metrics::dns::ServerMetrics;
use crate::name::{WireName, wire_zones};
use crate::querylog::{ErrorLog, QueryLog};

/// What to send back for one message.
#[derive(Debug)]
pub enum Outcome {
    /// The reply is in the output buffer.
    Reply,
    /// Send nothing.
    Drop,
    /// A zone transfer: these records, in order, over as many messages as needed.
    Transfer(Vec<Record>),
    /// The query goes upstream: finish it with [`Handler::complete`].
    Forward(Box<Pending>),
}

/// A query waiting for an upstream.
#[derive(Debug)]
pub struct Pending {
    block: Arc<Block>,
    /// Index of the block zone the name fell in.
    zone: usize,
    /// The query as received.
    packet: Vec<u8>,
    /// The query as the chain sends it upstream, when that is not `packet` (*rewrite*
    /// changed it, *bufsize* lowered its payload).
    asked: Option<Vec<u8>>,
    client: SocketAddr,
    transport: Transport,
    started: Instant,
    /// A chase's lookup of a CNAME's target, not the client's query ([`chain::Ctx`]).
    chased: bool,
    /// The first *forward* of the block that matches the name.
    forwarder: usize,
    /// *autopath*'s walk, when it continues upstream.
    autopath: Option<Box<chain::autopath::AutopathRest>>,
    /// A CNAME's chase, when its target went upstream.
    chase: Option<Box<chain::chase::Chase>>,
    /// What *rewrite* turns back in the reply.
    revert: Option<Box<chain::Revert>>,
}

/// One server block at run time: its plugins, and the chain a query runs down them in
/// CoreDNS's order.
#[derive(Debug)]
pub struct Block {
    zones: Vec<WireName>,
    /// The request path through the plugins below.
    chain: PluginChain,
    logs: Vec<QueryLog>,
    errors: Option<ErrorLog>,
    /// One set per block zone, when the block has *prometheus*.
    metrics: Vec<Arc<ServerMetrics>>,
    /// The search-path tracker's options, when the block has *prometheus*.
    search_path: Option<crate::config::SearchPathConfig>,
    /// *multisocket*: the UDP sockets its address gets, when the block says (and it is the
    /// address's first block).
    sockets: Option<Option<std::num::NonZeroUsize>>,
}

impl Block {
    /// The block `at` describes: its steps built ([`chain::lifecycle::Lifecycle::build`]),
    /// with its per-zone DNS metrics (empty without *prometheus*).
    pub(crate) fn build(
        at: &chain::lifecycle::Build<'_>,
        metrics: Vec<Arc<ServerMetrics>>,
    ) -> Result<Self, StartError> {
        let config = at.config;
        Ok(Self {
            zones: at.zones.to_vec(),
            chain: PluginChain::new(Step::build_all(at)?),
            logs: config.plugins.log.iter().map(QueryLog::new).collect(),
            errors: config.plugins.errors.as_ref().map(ErrorLog::new),
            metrics,
            search_path: config
                .plugins
                .prometheus
                .as_ref()
                .map(|p| p.search_path.clone()),
            sockets: config.plugins.multisocket.as_ref().map(|m| m.sockets),
        })
    }

    /// The block's *kubernetes* plugin.
    pub fn kubernetes(&self) -> Option<&Kubernetes> {
        self.chain.kubernetes()
    }

    /// The block's *forward* plugins.
    pub fn forwarders(&self) -> &[Arc<Forwarder>] {
        self.chain
            .forward()
            .map_or(&[], chain::forward::Forward::forwarders)
    }

    /// The block's *cache*.
    pub fn cache(&self) -> Option<&Arc<Cache>> {
        self.chain.cache()
    }

    /// The block's *errors* plugin.
    pub fn errors(&self) -> Option<&ErrorLog> {
        self.errors.as_ref()
    }

    /// The zones of the block's keys.
    pub fn zones(&self) -> &[WireName] {
        &self.zones
    }

    /// The directives of the block's chain, in the order a query meets them.
    pub fn chain_directives(&self) -> Vec<&'static str> {
        self.chain
            .steps()
            .iter()
            .map(|step| step.plugin().name())
            .collect()
    }

    /// A block of one *kubernetes* plugin, serving its zones, and nothing else: the cluster
    /// DNS as `resolve-cost` models it.
    pub fn with_kubernetes(kubernetes: Kubernetes) -> Self {
        let zones = wire_zones(&kubernetes.config.zones);
        Self {
            zones,
            chain: PluginChain::new(vec![
                Step::Transfer(chain::transfer::Transfer::new(&[], &[])),
                Step::Kubernetes(kubernetes),
            ]),
            logs: Vec::new(),
            errors: None,
            metrics: Vec::new(),
            search_path: None,
            sockets: None,
        }
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
