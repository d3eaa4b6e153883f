//! A step plugin's lifecycle: how it is built from its block's configuration, what it starts
//! when its generation starts and once the block's listeners are bound, which metrics it
//! exports, and how it takes a query. Every step plugin's type implements [`Lifecycle`] in
//! its own module; the chain's `Step` and its dispatch are expanded from the plugin registry
//! ([`crate::plugin::registry!`]), so nothing else in the server names a plugin to build,
//! start or observe it.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use tokio_util::sync::CancellationToken;

use super::{Ctx, Flow, PluginChain, Query};
use crate::config::ServerBlock;
use crate::metrics::Collect;
use crate::name::WireName;
use crate::server::Block;
use crate::server::error::StartError;
use crate::server::observability::Observability;

/// What a block's steps are built from.
pub(crate) struct Build<'b> {
    /// The block's configuration.
    pub(crate) config: &'b ServerBlock,
    /// Its zones, as wire names.
    pub(crate) zones: &'b [WireName],
    /// Its `server` metric label (`dns://:53`).
    pub(crate) server: &'b str,
    /// Where it listens (as configured).
    pub(crate) addrs: &'b [SocketAddr],
    /// The process's metrics when serving; `None` offline (`records`, `query`), where
    /// nothing may watch the API server.
    pub(crate) observability: Option<&'b Observability>,
    /// Whether the block exports its metrics (it has *prometheus*, and the server runs).
    pub(crate) measured: bool,
    /// The blocks of the running configuration, whose steps a new step may take over (an
    /// API watch kept by a block that watches the same way); empty at the first start.
    pub(crate) previous: &'b [Arc<Block>],
}

/// What a generation's start gives a block's steps.
pub(crate) struct Start<'s> {
    /// The block.
    pub(crate) block: &'s Arc<Block>,
    /// Where it listens (as configured).
    pub(crate) addrs: &'s [SocketAddr],
    /// Cancelled when the generation ends: background work stops with it.
    pub(crate) token: &'s CancellationToken,
    /// When the process started (older change stamps are no programming latency).
    pub(crate) started: SystemTime,
}

/// A block's listener, bound.
pub(crate) struct Serving<'s> {
    /// The block.
    pub(crate) block: &'s Arc<Block>,
    /// The address as configured, with the port bound.
    pub(crate) addr: SocketAddr,
    /// Cancelled when the generation ends.
    pub(crate) token: &'s CancellationToken,
}

/// A step plugin: its type in `server::chain::<field>`, named as its row of the registry.
pub(crate) trait Lifecycle: Sized {
    /// Whether it serves class IN only: a query of another class (CH, HS) that gets as far
    /// as it is refused, as the cluster zone has never answered one.
    const INTERNET_ONLY: bool;

    /// The step for the block `at` describes, `None` when the block does not have it.
    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError>;

    /// Starts what runs for it while its generation lasts (watchers, health checks).
    fn start(&self, _at: &Start<'_>) -> impl Future<Output = Result<(), StartError>> + Send {
        std::future::ready(Ok(()))
    }

    /// Called for each of its block's listeners once bound.
    fn serving(&self, _at: &Serving<'_>) {}

    /// What `/ready` and the start-up wait ask of it, when it can be unready (CoreDNS's
    /// plugins that implement `ready.Readiness`); `None` for a step always ready.
    fn readiness(&self) -> Option<Arc<dyn Readiness>> {
        None
    }

    /// Its metrics, registered while its generation lasts when the block exports metrics.
    fn collectors(&self, _out: &mut Vec<Arc<dyn Collect>>) {}

    /// Its process-wide metrics, registered once for the process's life.
    fn process_collectors(_out: &mut Vec<Arc<dyn Collect>>) {}

    /// Takes `q`, the step at `index` of `chain`: answers it into `out`, passes it on, or
    /// ends its walk otherwise.
    fn answer(
        &self,
        chain: &PluginChain,
        ctx: &Ctx<'_>,
        index: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow;
}

/// A step's readiness: what `/ready` reports for it, and what the server waits for before it
/// serves (CoreDNS holds its server back until *kubernetes* has synced).
pub(crate) trait Readiness: Send + Sync {
    /// Whether it is ready.
    fn is_ready(&self) -> bool;

    /// What `/ready` says about it beside the verdict.
    fn notes(&self, now: SystemTime) -> Vec<String>;

    /// Waits until it is ready, or for as long as its configuration lets the server's start
    /// wait (saying so in the log either way).
    fn wait(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}
