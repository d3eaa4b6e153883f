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
pub use chain::file::FileLoadError;
pub use chain::kubernetes::Kubernetes;
pub use chain::loop_detect::LoopDetect;
pub use handler::Handler;
pub use listen::{Listener, bind_all, local_ips};
pub use load::{LoadedBlock, StartError, load, server_label};
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

/// The plugins of a block other than *kubernetes*, built by the caller (they need sockets,
/// a runtime or the listen addresses).
#[derive(Debug, Default)]
pub struct BuiltPlugins {
    /// The *forward* directives, in file order.
    pub forward: Vec<Arc<Forwarder>>,
    /// The *cache* directive.
    pub cache: Option<Arc<Cache>>,
    /// The block's DNS metrics, one per zone (empty without *prometheus*).
    pub metrics: Vec<Arc<ServerMetrics>>,
    /// The *file* directives, their zones read (`None` without any).
    pub(crate) file: Option<Arc<chain::file::File>>,
}

impl Block {
    /// A block from its configuration, its *kubernetes* plugin and its other plugins.
    pub fn new(
        config: &ServerBlock,
        kubernetes: Option<Kubernetes>,
        plugins: BuiltPlugins,
    ) -> Self {
        let zones = wire_zones(&config.zones);
        let server = load::server_label(config);
        // Put in CoreDNS's order by `PluginChain::new`.
        let mut steps = Vec::new();
        if let Some(bufsize) = &config.plugins.bufsize {
            steps.push(Step::Bufsize(bufsize.size));
        }
        if config.plugins.any.is_some() {
            steps.push(Step::Any);
        }
        if let Some(chaos) = &config.plugins.chaos {
            steps.push(Step::Chaos(chain::chaos::Chaos::new(chaos)));
        }
        if config.plugins.loadbalance.is_some() {
            steps.push(Step::Loadbalance);
        }
        if let Some(cache) = plugins.cache {
            steps.push(Step::Cache(cache));
        }
        if !config.plugins.rewrite.is_empty() {
            steps.push(Step::Rewrite(chain::rewrite::Rewrite::new(
                &config.plugins.rewrite,
            )));
        }
        if let Some(autopath) = &config.plugins.autopath {
            steps.push(Step::Autopath(search_path(autopath)));
        }
        if !config.plugins.template.is_empty() {
            steps.push(Step::Template(chain::template::Templates::new(
                &config.plugins.template,
                &server,
            )));
        }
        steps.push(Step::Transfer(chain::transfer::Transfer::new(
            &config.plugins.transfer,
            &zones,
        )));
        if let Some(hosts) = &config.plugins.hosts {
            steps.push(Step::Hosts(Arc::new(chain::hosts::Hosts::load(hosts))));
        }
        if let Some(kubernetes) = kubernetes {
            if let Some(external) = &kubernetes.config.external {
                steps.push(Step::K8sExternal(chain::k8s_external::K8sExternal::new(
                    external,
                )));
            }
            steps.push(Step::Kubernetes(Box::new(kubernetes)));
        }
        if let Some(file) = plugins.file {
            steps.push(Step::File(file));
        }
        if config.plugins.loop_detect.is_some() {
            let zone = zones.first().cloned().unwrap_or_else(WireName::root);
            steps.push(Step::Loop(LoopDetect::new(&zone)));
        }
        if !plugins.forward.is_empty() {
            steps.push(Step::Forward(chain::forward::Forward::new(plugins.forward)));
        }
        Self {
            zones,
            chain: PluginChain::new(steps),
            logs: config.plugins.log.iter().map(QueryLog::new).collect(),
            errors: config.plugins.errors.as_ref().map(ErrorLog::new),
            metrics: plugins.metrics,
            search_path: config
                .plugins
                .prometheus
                .as_ref()
                .map(|p| p.search_path.clone()),
            sockets: config.plugins.multisocket.as_ref().map(|m| m.sockets),
        }
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

    /// The block's *loop* probe.
    pub fn loop_detect(&self) -> Option<&LoopDetect> {
        self.chain.loop_detect()
    }

    /// The block's *errors* plugin.
    pub fn errors(&self) -> Option<&ErrorLog> {
        self.errors.as_ref()
    }

    /// The zones of the block's keys.
    pub fn zones(&self) -> &[WireName] {
        &self.zones
    }

    /// The block's *hosts* plugin.
    pub(crate) fn hosts(&self) -> Option<&Arc<chain::hosts::Hosts>> {
        self.chain.hosts()
    }

    /// The block's *file* plugin.
    pub(crate) fn file(&self) -> Option<&Arc<chain::file::File>> {
        self.chain.file()
    }

    /// The block's *template* plugin (its metrics).
    pub(crate) fn templates(&self) -> Option<&chain::template::Templates> {
        self.chain.templates()
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
                Step::Kubernetes(Box::new(kubernetes)),
            ]),
            logs: Vec::new(),
            errors: None,
            metrics: Vec::new(),
            search_path: None,
            sockets: None,
        }
    }
}

/// *autopath*'s search path from its directive.
fn search_path(config: &crate::config::AutopathConfig) -> crate::search_walk::SearchPath {
    use crate::config::{AutopathNamespace, AutopathSource};
    use crate::search_walk::{NamespaceFrom, Source};
    let source = match config.source {
        AutopathSource::Kubernetes(AutopathNamespace::Pod) => {
            Source::Kubernetes(NamespaceFrom::Pod)
        }
        AutopathSource::Kubernetes(AutopathNamespace::Query) => {
            Source::Kubernetes(NamespaceFrom::Query)
        }
        AutopathSource::File(_) => Source::Static,
    };
    crate::search_walk::SearchPath::new(
        wire_zones(&config.zones),
        source,
        wire_zones(&config.search),
    )
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
