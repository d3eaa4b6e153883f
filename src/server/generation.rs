//! A *generation*: one loaded configuration — its blocks and everything that runs for them
//! (what each step starts, the HTTP routes and monitor)
//! under one cancellation token. The running server (`run.rs`) swaps generations on a
//! reload; its listeners outlive them.

use super::Block;
use super::chain::lifecycle::{Serving, Start};
use super::error::StartError;
use super::load::{LoadedBlock, load_with, server_label};
use super::observability::Observability;
use crate::config::Config;
use crate::http::{Monitor, ReadinessCheck, Route};
use crate::metrics::process::EnabledPlugin;
use crate::metrics::registry::Registration;
use crate::source::api::ApiWatch;
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
        let watches = previous.map(Generation::api_watches).unwrap_or_default();
        let blocks = load_with(config, Some(observability), &watches)?;
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

    /// The API watches of the blocks.
    pub(super) fn api_watches(&self) -> Vec<Arc<ApiWatch>> {
        self.blocks
            .iter()
            .filter_map(|loaded| loaded.block.kubernetes()?.api().cloned())
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

    /// What `/ready` asks: every *kubernetes* plugin has its zone.
    pub(super) fn readiness(&self) -> ReadinessCheck {
        let watches = self.api_watches();
        Arc::new(move || {
            // Static objects are loaded before the server starts; an API watch is ready once
            // synced (or serving its snapshot file).
            if watches.iter().all(|watch| watch.status.is_ready()) {
                Ok(())
            } else {
                Err(vec!["kubernetes".to_owned()])
            }
        })
    }

    /// What `/ready` says beside its verdict: how the API watches are doing.
    pub(super) fn readiness_notes(&self) -> crate::http::ReadinessNotes {
        let watches = self.api_watches();
        Arc::new(move || {
            let now = SystemTime::now();
            watches
                .iter()
                .flat_map(|watch| watch.status.notes(now))
                .collect()
        })
    }

    /// Waits (up to each block's `startup_timeout`) for API watches that have nothing to
    /// serve yet to sync, as CoreDNS holds its server back; then serves regardless.
    pub(super) async fn wait_for_sync(&self) {
        for watch in self.api_watches() {
            if watch.status.is_ready() {
                continue;
            }
            let timeout = watch.config().startup_timeout;
            tracing::info!("waiting for Kubernetes API before starting server");
            if !watch.status.wait_synced(timeout).await {
                tracing::warn!(
                    "starting server with unsynced Kubernetes API (startup_timeout {} s): \
                     names not known yet are answered SERVFAIL until it syncs",
                    timeout.as_secs_f64()
                );
            }
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
