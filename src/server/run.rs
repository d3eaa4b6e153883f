//! Starting a server from a configuration: load every *kubernetes* block's objects, bind
//! the listeners, serve, watch for changes.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::tcp::TcpHandler;
use super::{Block, Handler, Kubernetes, Plugins, bind_all, block_addresses, local_ips, udp};
use crate::cache::Cache;
use crate::config::Config;
use crate::forward::Forwarder;
use crate::source::{file, watcher};
use crate::store::Store;

/// How long an idle TCP connection stays open (CoreDNS: 10 s read timeout).
const TCP_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Per-connection response buffer of hickory-server's TCP handling.
const TCP_RESPONSE_BUFFER: usize = 32;

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A block's objects failed to load.
    #[error("kubernetes (line {line}): {error}")]
    Objects {
        /// Line of the *kubernetes* directive.
        line: usize,
        /// What went wrong.
        error: Box<file::Error>,
    },
    /// A *kubernetes* block without `objects` needs the API watch.
    #[error(
        "kubernetes (line {line}): watching the API server is not available in this build; \
         give the objects with `objects FILE...`"
    )]
    NoObjects {
        /// Line of the directive.
        line: usize,
    },
    /// A listener could not be bound.
    #[error(transparent)]
    Bind(#[from] std::io::Error),
    /// Objects files could not be watched.
    #[error("watching objects files: {0}")]
    Watch(notify::Error),
}

/// A running server.
pub struct Running {
    /// Every address served (UDP and TCP), with real ports.
    pub addrs: Vec<SocketAddr>,
    /// The blocks, for inspection (their stores are live).
    pub blocks: Vec<Arc<Block>>,
    shutdown: CancellationToken,
    tcp: Vec<hickory_server::Server<TcpHandler>>,
    udp: Vec<tokio::task::JoinHandle<()>>,
}

/// A server block ready to serve, and the addresses it listens on.
#[derive(Debug)]
pub struct LoadedBlock {
    /// The block, its zone loaded.
    pub block: Arc<Block>,
    /// Where it listens (as configured: port 0 stays 0 until bound).
    pub addrs: Vec<SocketAddr>,
}

/// The blocks of `config` with their zones loaded from their objects files, and the
/// addresses each listens on. Nothing is bound or watched: this is also the offline path of
/// `records` and `query`.
pub fn load(config: &Config) -> Result<Vec<LoadedBlock>, StartError> {
    let mut blocks = Vec::with_capacity(config.servers.len());
    for server_block in &config.servers {
        let addrs = block_addresses(server_block);
        let kubernetes = match &server_block.kubernetes {
            None => None,
            Some(k8s) if k8s.objects.is_empty() => {
                return Err(StartError::NoObjects { line: k8s.line });
            }
            Some(k8s) => {
                let loaded = watcher::load(&k8s.objects, k8s, &local_ips(&addrs), None).map_err(
                    |source| StartError::Objects {
                        line: k8s.line,
                        error: Box::new(source),
                    },
                )?;
                for (kind, count) in &loaded.ignored {
                    tracing::info!(
                        kind,
                        count,
                        "objects of a kind clusterdns does not use; ignored"
                    );
                }
                tracing::info!(
                    zones = ?k8s.zones.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    serial = loaded.snapshot.serial(),
                    names = loaded.snapshot.name_count(),
                    read_ms = loaded.read_time.as_millis(),
                    build_ms = loaded.build_time.as_millis(),
                    "zone loaded"
                );
                let fingerprint = loaded.fingerprint();
                let store = Arc::new(Store::new(loaded.snapshot));
                Some(Kubernetes::new(k8s.clone(), store, fingerprint))
            }
        };
        let forward: Vec<Arc<Forwarder>> = server_block
            .forward
            .iter()
            .map(|config| Arc::new(Forwarder::new(config, &addrs)))
            .collect();
        for warning in forward.iter().flat_map(|f| f.warnings()) {
            tracing::error!("{warning}");
        }
        let plugins = Plugins {
            forward,
            cache: server_block
                .cache
                .as_ref()
                .map(|config| Arc::new(Cache::new(config, &server_label(server_block)))),
        };
        blocks.push(LoadedBlock {
            block: Arc::new(Block::new(server_block, kubernetes, plugins)),
            addrs,
        });
    }
    Ok(blocks)
}

/// Loads, binds and starts serving `config`; objects files are watched for changes.
pub async fn start(config: &Config) -> Result<Running, StartError> {
    let shutdown = CancellationToken::new();
    let mut by_addr: BTreeMap<SocketAddr, Vec<Arc<Block>>> = BTreeMap::new();
    let mut blocks = Vec::new();
    for LoadedBlock { block, addrs } in load(config)? {
        for forwarder in block.forwarders() {
            forwarder.start(shutdown.clone());
        }
        if block.errors().is_some() {
            tokio::spawn(consolidate(Arc::clone(&block), shutdown.clone()));
        }
        if let Some(k8s) = block.kubernetes() {
            watcher::watch(
                k8s.config.objects.clone(),
                k8s.config.clone(),
                local_ips(&addrs),
                Arc::clone(&k8s.store),
                k8s.fingerprint,
                shutdown.clone(),
            )
            .map_err(StartError::Watch)?;
        }
        blocks.push(Arc::clone(&block));
        for addr in addrs {
            by_addr.entry(addr).or_default().push(Arc::clone(&block));
        }
    }

    let configured: Vec<SocketAddr> = by_addr.keys().copied().collect();
    let listeners = bind_all(&configured).await?;
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let mut running = Running {
        addrs: Vec::new(),
        blocks,
        shutdown: shutdown.clone(),
        tcp: Vec::new(),
        udp: Vec::new(),
    };
    for (listener, blocks) in listeners.into_iter().zip(by_addr.into_values()) {
        for block in blocks.iter().filter(|block| block.loop_detect().is_some()) {
            tokio::spawn(probe_for_loops(
                Arc::clone(block),
                listener.addr,
                shutdown.clone(),
            ));
        }
        let handler = Arc::new(Handler::bound(blocks, listener.addr));
        let udp_socket = Arc::new(listener.udp);
        for _ in 0..workers {
            running.udp.push(tokio::spawn(udp::serve(
                Arc::clone(&udp_socket),
                Arc::clone(&handler),
                shutdown.clone(),
            )));
        }
        let mut tcp = hickory_server::Server::new(TcpHandler(Arc::clone(&handler)));
        tcp.register_listener(listener.tcp, TCP_IDLE_TIMEOUT, TCP_RESPONSE_BUFFER);
        running.tcp.push(tcp);
        tracing::info!("listening on udp {}", listener.addr);
        tracing::info!("listening on tcp {}", listener.addr);
        running.addrs.push(listener.addr);
    }
    Ok(running)
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

/// The *loop* plugin's probe: ask this server `HINFO <random>.<random>.<zone>` until some
/// answer comes back (then there is no loop) or the handler sees the probe come round three
/// times, for at most 30 s (CoreDNS's schedule).
async fn probe_for_loops(block: Arc<Block>, listener: SocketAddr, shutdown: CancellationToken) {
    let Some(probe) = block.loop_detect() else {
        return;
    };
    let target = match listener.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => {
            SocketAddr::from((Ipv4Addr::LOCALHOST, listener.port()))
        }
        ip if ip.is_unspecified() => SocketAddr::from((Ipv6Addr::LOCALHOST, listener.port())),
        _ => listener,
    };
    let bind = if target.is_ipv4() {
        SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
    } else {
        SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))
    };
    let Ok(socket) = tokio::net::UdpSocket::bind(bind).await else {
        return;
    };
    let query = probe_query(probe.probe());
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut buf = [0u8; 512];
    while probe.probing() && Instant::now() < deadline && !shutdown.is_cancelled() {
        if socket.send_to(&query, target).await.is_err() {
            return;
        }
        if let Ok(Ok((_, from))) =
            tokio::time::timeout(Duration::from_secs(2), socket.recv_from(&mut buf)).await
            && from == target
        {
            probe.answered();
            return;
        }
    }
}

fn probe_query(name: &crate::zone::name::WireName) -> Vec<u8> {
    let mut query = vec![0x4c, 0x50, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    query.extend_from_slice(name.as_bytes());
    query.extend_from_slice(&crate::zone::rrset::rtype::HINFO.to_be_bytes());
    query.extend_from_slice(&crate::zone::rrset::CLASS_IN.to_be_bytes());
    query
}

impl Running {
    /// Stops serving: listeners close, in-flight queries finish.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        for task in self.udp.drain(..) {
            let _ = task.await;
        }
        for mut tcp in self.tcp.drain(..) {
            if let Err(error) = tcp.shutdown_gracefully().await {
                tracing::debug!(%error, "tcp shutdown");
            }
        }
    }
}

/// The `server` label CoreDNS's metrics carry: `dns://:53`, or `dns://127.0.0.1:1053` for a
/// block bound to one address.
pub fn server_label(block: &crate::config::ServerBlock) -> String {
    match block.bind.first() {
        None => format!("dns://:{}", block.port),
        Some(std::net::IpAddr::V6(v6)) => format!("dns://[{v6}]:{}", block.port),
        Some(ip) => format!("dns://{ip}:{}", block.port),
    }
}
