//! A *generation*: one loaded configuration — its blocks and everything that runs for them
//! (what each step starts, the HTTP routes and monitor)
//! under one cancellation token. The running server (`run.rs`) swaps generations on a
//! reload; its listeners outlive them.

use super::Block;
use super::chain::lifecycle::{Readiness, Serving, Start};
use super::error::StartError;
use super::load::{LoadedBlock, load_with, server_label};
use super::observability::Observability;
use crate::config::Config;
use crate::http::{Monitor, ReadinessCheck, Route};
use crate::metrics::process::EnabledPlugin;
use crate::metrics::registry::Registration;
use crate::plugin::Plugin;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio_util::sync::CancellationToken;

/// One loaded configuration and what runs for it.
pub(super) struct Generation {
    pub(super) token: CancellationToken,
    blocks: Vec<LoadedBlock>,
    /// Configured DNS address -> the blocks listening there.
    pub(super) by_addr: BTreeMap<SocketAddr, Vec<Arc<Block>>>,
    pub(super) http: Vec<(SocketAddr, Route)>,
    pub(super) monitor: Monitor,
    pub(super) lameduck: Duration,
    pub(super) reload: Option<(Duration, Duration)>,
    /// When the process started (see [`Observability::started`]).
    started: SystemTime,
    _registrations: Vec<Registration>,
}

impl Generation {
    pub(super) fn load(
        config: &Config,
        observability: &Observability,
        previous: Option<&Generation>,
    ) -> Result<Self, StartError> {
        let previous: Vec<Arc<Block>> = previous
            .map(|generation| {
                let blocks = generation.blocks.iter();
                blocks.map(|loaded| Arc::clone(&loaded.block)).collect()
            })
            .unwrap_or_default();
        let blocks = load_with(config, Some(observability), &previous)?;
        let mut by_addr: BTreeMap<SocketAddr, Vec<Arc<Block>>> = BTreeMap::new();
        let mut registrations = Vec::new();
        for loaded in &blocks {
            for addr in &loaded.addrs {
                by_addr
                    .entry(*addr)
                    .or_default()
                    .push(Arc::clone(&loaded.block));
            }
            // A block's own metrics, when it has a *prometheus* to show them.
            if !loaded.block.metrics.is_empty() {
                let mut collectors = Vec::new();
                for step in loaded.block.chain.steps() {
                    step.collectors(&mut collectors);
                }
                for collector in collectors {
                    registrations.push(observability.registry.register(collector));
                }
            }
        }
        let mut http: Vec<(SocketAddr, Route)> = Vec::new();
        for block in &config.servers {
            let routes = [
                block
                    .plugins
                    .health
                    .as_ref()
                    .map(|h| (h.addr, Route::Health)),
                block.plugins.ready.as_ref().map(|r| (r.addr, Route::Ready)),
                block
                    .plugins
                    .prometheus
                    .as_ref()
                    .map(|p| (p.addr, Route::Metrics)),
            ];
            for route in routes.into_iter().flatten() {
                if !http.contains(&route) {
                    http.push(route);
                }
            }
        }
        let continuously = config
            .servers
            .iter()
            .any(|b| b.plugins.ready.as_ref().is_some_and(|r| r.continuously));
        observability.plugins.set(enabled_plugins(config));
        Ok(Self {
            token: CancellationToken::new(),
            blocks,
            by_addr,
            http,
            monitor: Monitor::from_continuously(continuously),
            lameduck: config
                .servers
                .iter()
                .filter_map(|b| b.plugins.health.as_ref().map(|h| h.lameduck))
                .max()
                .unwrap_or_default(),
            reload: config
                .servers
                .iter()
                .find_map(|b| b.plugins.reload.as_ref().map(|r| (r.interval, r.jitter))),
            started: observability.started,
            _registrations: registrations,
        })
    }

    /// The steps of the blocks that can be unready, with their plugins
    /// ([`Lifecycle::readiness`](super::chain::lifecycle::Lifecycle::readiness)).
    fn readiness_of(&self) -> Vec<(Plugin, Arc<dyn Readiness>)> {
        self.blocks
            .iter()
            .flat_map(|loaded| loaded.block.chain.steps())
            .filter_map(|step| Some((step.plugin(), step.readiness()?)))
            .collect()
    }

    /// Starts what runs for the blocks: each step's own ([`Lifecycle::start`](super::chain::lifecycle::Lifecycle::start): forwarders'
    /// health checks, objects watchers, API watches connecting — a watch kept from the
    /// previous generation runs on), and the *errors* consolidation tick.
    pub(super) async fn start(&self) -> Result<(), StartError> {
        for loaded in &self.blocks {
            let block = &loaded.block;
            if block.errors().is_some() {
                tokio::spawn(consolidate(Arc::clone(block), self.token.clone()));
            }
            let at = Start {
                block,
                addrs: &loaded.addrs,
                token: &self.token,
                started: self.started,
            };
            for step in block.chain.steps() {
                step.start(&at).await?;
            }
        }
        Ok(())
    }

    /// Tells each step of the blocks listening on `addr` (as configured) that its listener
    /// is bound on `port` ([`Lifecycle::serving`](super::chain::lifecycle::Lifecycle::serving): *loop*'s probe).
    pub(super) fn serving(&self, addr: SocketAddr, port: u16) {
        for block in self.by_addr.get(&addr).into_iter().flatten() {
            let at = Serving {
                block,
                addr: SocketAddr::new(addr.ip(), port),
                token: &self.token,
            };
            for step in block.chain.steps() {
                step.serving(&at);
            }
        }
    }

    /// What `/ready` asks: every step that can be unready is ready; else the plugins that
    /// are not.
    pub(super) fn readiness(&self) -> ReadinessCheck {
        let steps = self.readiness_of();
        Arc::new(move || {
            let mut waiting: Vec<String> = Vec::new();
            for (plugin, step) in &steps {
                let name = plugin.name();
                if !step.is_ready() && !waiting.iter().any(|w| w == name) {
                    waiting.push(name.to_owned());
                }
            }
            if waiting.is_empty() {
                Ok(())
            } else {
                Err(waiting)
            }
        })
    }

    /// What `/ready` says beside its verdict: each step's notes (how the API watches are
    /// doing).
    pub(super) fn readiness_notes(&self) -> crate::http::ReadinessNotes {
        let steps = self.readiness_of();
        Arc::new(move || {
            let now = SystemTime::now();
            steps.iter().flat_map(|(_, step)| step.notes(now)).collect()
        })
    }

    /// Waits for each step that is not ready yet, for as long as it lets the start wait
    /// ([`Readiness::wait`]); then serves regardless.
    pub(super) async fn wait_for_sync(&self) {
        for (_, step) in self.readiness_of() {
            step.wait().await;
        }
    }
}

/// `coredns_plugin_enabled` for `config`: as CoreDNS, each plugin a block has a handler of in
/// its chain, for each of the block's zones.
fn enabled_plugins(config: &Config) -> Vec<EnabledPlugin> {
    let mut plugins = Vec::new();
    for block in &config.servers {
        let server = server_label(block);
        for zone in &block.zones {
            for plugin in block.plugins.enabled().filter(|p| p.is_handler()) {
                plugins.push(EnabledPlugin {
                    server: server.clone(),
                    zone: zone.to_string(),
                    view: String::new(),
                    name: plugin.name().to_owned(),
                });
            }
        }
    }
    plugins
}

/// Flushes the *errors* plugin's consolidation periods once a second.
async fn consolidate(block: Arc<Block>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = shutdown.cancelled() => return,
        }
        if let Some(errors) = block.errors() {
            errors.tick(Instant::now());
        }
    }
}
