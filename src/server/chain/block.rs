//! A server block at run time ([`Block`]): its chain and the per-block logs and metrics
//! around it; and a query on its way upstream ([`Pending`]), which carries its block to be
//! finished by.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use super::kubernetes::Kubernetes;
use super::{PluginChain, Step};
use crate::cache::Cache;
use crate::forward::Forwarder;
use crate::metrics::dns::ServerMetrics;
use crate::name::{WireName, wire_zones};
use crate::querylog::{ErrorLog, QueryLog};
use crate::server::error::StartError;
use crate::wire::{OwnedRequest, Transport};

/// A query waiting for an upstream.
#[derive(Debug)]
pub struct Pending {
    pub(in crate::server) block: Arc<Block>,
    /// Index of the block zone the name fell in.
    pub(in crate::server) zone: usize,
    /// The query as received, with its parse.
    pub(in crate::server) query: OwnedRequest,
    /// The query as the chain sends it upstream, when that is not `query` (*rewrite*
    /// changed it, *bufsize* lowered its payload), with its parse.
    pub(in crate::server) asked: Option<OwnedRequest>,
    pub(in crate::server) client: SocketAddr,
    pub(in crate::server) transport: Transport,
    pub(in crate::server) started: Instant,
    /// A chase's lookup of a CNAME's target, not the client's query ([`super::Ctx`]).
    pub(in crate::server) chased: bool,
    /// The first *forward* of the block that matches the name.
    pub(in crate::server) forwarder: usize,
    /// *autopath*'s walk, when it continues upstream.
    pub(in crate::server) autopath: Option<Box<super::autopath::AutopathRest>>,
    /// A CNAME's chase, when its target went upstream.
    pub(in crate::server) chase: Option<Box<super::chase::Chase>>,
    /// What *rewrite* turns back in the reply.
    pub(in crate::server) revert: Option<Box<super::Revert>>,
}

/// One server block at run time: its plugins, and the chain a query runs down them in
/// CoreDNS's order.
#[derive(Debug)]
pub struct Block {
    pub(in crate::server) zones: Vec<WireName>,
    /// The request path through the plugins below.
    pub(in crate::server) chain: PluginChain,
    pub(in crate::server) logs: Vec<QueryLog>,
    pub(in crate::server) errors: Option<ErrorLog>,
    /// One set per block zone, when the block has *prometheus*.
    pub(in crate::server) metrics: Vec<Arc<ServerMetrics>>,
    /// The search-path tracker's options, when the block has *prometheus*.
    pub(in crate::server) search_path: Option<crate::config::SearchPathConfig>,
    /// *multisocket*: the UDP sockets its address gets, when the block says (and it is the
    /// address's first block).
    pub(in crate::server) sockets: Option<Option<std::num::NonZeroUsize>>,
}

impl Block {
    /// The block `at` describes: its steps built ([`super::lifecycle::Lifecycle::build`]),
    /// with its per-zone DNS metrics (empty without *prometheus*).
    pub(crate) fn build(
        at: &super::lifecycle::Build<'_>,
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
            .map_or(&[], super::forward::Forward::forwarders)
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
                Step::Transfer(super::transfer::Transfer::new(&[], &[])),
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
