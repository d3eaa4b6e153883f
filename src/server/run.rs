//! Running a configuration: load every block (zones, forwarders, caches: `load.rs`), bind the DNS
//! listeners and the HTTP endpoints, serve; apply a reloaded Corefile without dropping a
//! query; shut down through lameduck.
//!
//! A loaded configuration is a *generation* (`generation.rs`): its blocks and everything that
//! runs for them (what each step starts: objects watchers, forwarders' health checks, loop
//! probes) under one
//! cancellation token. Listeners outlive generations: a reload swaps the handler behind an unchanged address, so
//! a query in flight finishes on the old blocks and the next one sees the new.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio_util::sync::CancellationToken;

use super::error::StartError;
use super::generation::Generation;
use super::observability::Observability;
use super::{Block, Handler, bind_all, tcp, udp};
use crate::config::Config;
use crate::http::{Endpoints, Lifecycle, Readiness, Route, Shared};
use crate::metrics::Collect;
use crate::metrics::registry::Registration;
use crate::metrics::reload::ReloadMetrics;

/// One DNS listener: UDP and TCP on one address, serving whatever handler is current.
struct Listener {
    bound: SocketAddr,
    handler: Arc<ArcSwap<Handler>>,
    stop: CancellationToken,
    udp: udp::Workers,
    tcp: tokio::task::JoinHandle<()>,
}

/// A running server.
pub struct Running {
    /// Every DNS address served (UDP and TCP), with real ports, in configured order.
    pub addrs: Vec<SocketAddr>,
    listeners: BTreeMap<SocketAddr, Listener>,
    generation: Generation,
    endpoints: Option<Endpoints>,
    observability: Arc<Observability>,
    lifecycle: Arc<Lifecycle>,
    readiness: Arc<Readiness>,
    /// The `/debug/` pages.
    pages: Arc<super::debug::Pages>,
    /// `clusterdns_lameduck_seconds`, registered for the life of the process.
    _lameduck: Registration,
}

/// Loads, binds and starts serving `config`; objects files are watched for changes.
pub async fn start(config: &Config) -> Result<Running, StartError> {
    // Each step plugin's process-wide metrics (*forward*'s, *hosts*') beside the server's.
    let observability = Arc::new(Observability::new(super::chain::Step::process_collectors()));
    let generation = Generation::load(config, &observability, None)?;
    let lifecycle = Arc::new(Lifecycle::new());
    let lameduck = observability
        .registry
        .register(Arc::clone(&lifecycle) as Arc<dyn Collect>);
    let readiness = Arc::new(Readiness::new(generation.readiness(), generation.monitor));
    readiness.set_notes(generation.readiness_notes());
    let mut running = Running {
        addrs: Vec::new(),
        listeners: BTreeMap::new(),
        generation,
        endpoints: None,
        observability,
        lifecycle,
        readiness,
        pages: Arc::default(),
        _lameduck: lameduck,
    };
    // Watchers first: a change to the objects after they were read and before the first
    // query is answered is not missed.
    running.generation.start().await?;
    running.generation.wait_for_sync().await;
    if let Err(error) = running.bind_new().await {
        running.generation.token.cancel();
        return Err(error);
    }
    running.swap_handlers();
    running.start_probes();
    if !running.generation.http.is_empty() {
        running.endpoints = Some(Endpoints::start(
            &running.generation.http,
            running.shared(),
        )?);
        running.log_endpoints();
    }
    Ok(running)
}

impl Running {
    fn shared(&self) -> Shared {
        Shared {
            registry: self.observability.registry.clone(),
            readiness: Arc::clone(&self.readiness),
            lifecycle: Arc::clone(&self.lifecycle),
            health: Arc::clone(&self.observability.health),
            debug: Some(Arc::clone(&self.pages) as Arc<dyn crate::http::DebugPages>),
        }
    }

    /// Binds the generation's addresses that have no listener yet.
    async fn bind_new(&mut self) -> Result<(), StartError> {
        let missing: Vec<SocketAddr> = self
            .generation
            .by_addr
            .keys()
            .filter(|addr| !self.listeners.contains_key(addr))
            .copied()
            .collect();
        let mut bound = Vec::with_capacity(missing.len());
        for addr in &missing {
            // As CoreDNS: the first block of the address decides (*multisocket*); without it,
            // and for a bare `multisocket`, a socket per CPU the process may use.
            let sockets = self
                .generation
                .by_addr
                .get(addr)
                .and_then(|blocks| blocks.first())
                .and_then(|block| block.sockets)
                .flatten()
                .map_or_else(usable_cpus, std::num::NonZeroUsize::get);
            bound.extend(bind_all(&[*addr], sockets).await?);
        }
        for (configured, listener) in missing.into_iter().zip(bound) {
            // The handler is in place before the first packet can arrive.
            let handler = Arc::new(ArcSwap::from_pointee(
                self.handler_for(&configured, listener.addr),
            ));
            let stop = CancellationToken::new();
            let udp = udp::start(listener.udp, &handler, &tokio::runtime::Handle::current())
                .map_err(|error| {
                    std::io::Error::new(
                        error.kind(),
                        format!("cannot start the udp workers of {}: {error}", listener.addr),
                    )
                })?;
            let tcp = tokio::spawn(tcp::serve(listener.tcp, Arc::clone(&handler), stop.clone()));
            tracing::info!(
                "udp {}: {} udp workers, one socket each",
                listener.addr,
                udp.len()
            );
            tracing::info!("listening on udp {}", listener.addr);
            tracing::info!("listening on tcp {}", listener.addr);
            self.listeners.insert(
                configured,
                Listener {
                    bound: listener.addr,
                    handler,
                    stop,
                    udp,
                    tcp,
                },
            );
        }
        self.addrs = self
            .generation
            .by_addr
            .keys()
            .filter_map(|a| self.listeners.get(a).map(|l| l.bound))
            .collect();
        Ok(())
    }

    /// Points every listener of the generation at a handler over its blocks.
    fn swap_handlers(&self) {
        let mut watch = None;
        for addr in self.generation.by_addr.keys() {
            if let Some(listener) = self.listeners.get(addr) {
                let handler = self.handler_for(addr, listener.bound);
                if watch.is_none() {
                    watch = handler.search_path().cloned();
                }
                listener.handler.store(Arc::new(handler));
            }
        }
        let mut blocks: Vec<Arc<Block>> = Vec::new();
        for block in self.generation.by_addr.values().flatten() {
            if !blocks.iter().any(|seen| Arc::ptr_eq(seen, block)) {
                blocks.push(Arc::clone(block));
            }
        }
        self.pages.update(watch, blocks);
    }

    /// The handler over the generation's blocks that listen on `configured`.
    fn handler_for(&self, configured: &SocketAddr, bound: SocketAddr) -> Handler {
        let blocks = self
            .generation
            .by_addr
            .get(configured)
            .cloned()
            .unwrap_or_default();
        let measured = blocks.iter().any(|block| !block.metrics.is_empty());
        let watch = measured
            .then(|| super::debug::search_path_watch(&blocks, &self.observability.search_path))
            .flatten();
        let mut handler = Handler::bound(blocks, bound);
        if let Some(watch) = watch {
            handler = handler.with_search_path(watch);
        }
        if measured {
            let server = format!("dns://{}", display_addr(*configured));
            handler.with_dropped(self.observability.dns.dropped(&server))
        } else {
            handler
        }
    }

    /// Tells the generation's steps that their listeners are bound (*loop*'s probes).
    fn start_probes(&self) {
        for addr in self.generation.by_addr.keys() {
            if let Some(listener) = self.listeners.get(addr) {
                self.generation.serving(*addr, listener.bound.port());
            }
        }
    }

    /// Applies a reloaded configuration: new blocks behind the listeners that stay, new
    /// listeners bound, gone ones closed, HTTP endpoints moved, readiness swapped (never
    /// blinking). On error the running configuration is left as it was.
    pub async fn apply(&mut self, config: &Config) -> Result<(), StartError> {
        let generation = Generation::load(config, &self.observability, Some(&self.generation))?;
        let old = std::mem::replace(&mut self.generation, generation);
        if let Err(error) = self.bind_new().await {
            self.generation = old;
            return Err(error);
        }
        if let Some(endpoints) = &mut self.endpoints {
            if let Err(error) = endpoints.apply(&self.generation.http) {
                self.generation = old;
                return Err(error.into());
            }
        } else if !self.generation.http.is_empty() {
            match Endpoints::start(&self.generation.http, self.shared()) {
                Ok(endpoints) => self.endpoints = Some(endpoints),
                Err(error) => {
                    self.generation = old;
                    return Err(error.into());
                }
            }
        }
        if let Err(error) = self.generation.start().await {
            self.generation.token.cancel();
            self.generation = old;
            return Err(error);
        }
        self.swap_handlers();
        self.readiness
            .set(self.generation.readiness(), self.generation.monitor);
        self.readiness.set_notes(self.generation.readiness_notes());
        let gone: Vec<SocketAddr> = self
            .listeners
            .keys()
            .filter(|addr| !self.generation.by_addr.contains_key(addr))
            .copied()
            .collect();
        for addr in gone {
            if let Some(listener) = self.listeners.remove(&addr) {
                tracing::info!("no longer listening on {}", listener.bound);
                close(listener).await;
            }
        }
        self.start_probes();
        self.log_endpoints();
        old.token.cancel();
        self.addrs = self
            .generation
            .by_addr
            .keys()
            .filter_map(|a| self.listeners.get(a).map(|l| l.bound))
            .collect();
        Ok(())
    }

    fn log_endpoints(&self) {
        for route in Route::ALL {
            if let Some(addr) = self.http_addr(route) {
                tracing::info!("listening for {route} on http://{addr}{}", route.path());
            }
        }
    }

    /// Where an HTTP route listens (its real port).
    pub fn http_addr(&self, route: Route) -> Option<SocketAddr> {
        self.endpoints.as_ref().and_then(|e| e.local_addr(route))
    }

    /// The *reload* plugin's schedule in the running configuration: (interval, jitter).
    pub fn reload_schedule(&self) -> Option<(Duration, Duration)> {
        self.generation.reload
    }

    /// The *reload* plugin's metrics.
    pub fn reload_metrics(&self) -> Arc<ReloadMetrics> {
        Arc::clone(&self.observability.reload)
    }

    /// Shuts down as CoreDNS's *health* `lameduck` asks: `/ready` fails at once, DNS and
    /// `/health` keep answering for the lameduck duration, then everything stops.
    pub async fn shut_down(self) {
        let lameduck = self.generation.lameduck;
        if !lameduck.is_zero() {
            tracing::info!("lameduck: still serving for {} s", lameduck.as_secs_f64());
        }
        self.lifecycle.shut_down(lameduck).await;
        self.stop().await;
    }

    /// Stops serving now: listeners close, in-flight queries finish.
    pub async fn stop(mut self) {
        self.lifecycle.stop();
        self.generation.token.cancel();
        for (_, listener) in std::mem::take(&mut self.listeners) {
            close(listener).await;
        }
        if let Some(endpoints) = self.endpoints.take() {
            endpoints.join().await;
        }
    }
}

async fn close(mut listener: Listener) {
    listener.stop.cancel();
    listener.udp.stop().await;
    let _ = (&mut listener.tcp).await;
}

/// The CPUs this process may run on: its affinity mask, capped by its cgroup's CPU quota
/// (`cpu.max`, or v1's `cfs_quota_us`) rounded down to at least one, as the standard
/// library counts them. A pod without a CPU limit counts every core of its node: a worker
/// per core then, each blocked on its own socket until a packet comes for it.
fn usable_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn display_addr(addr: SocketAddr) -> String {
    if addr.ip().is_unspecified() {
        format!(":{}", addr.port())
    } else {
        addr.to_string()
    }
}
