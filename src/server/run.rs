//! Starting a server from a configuration: load every *kubernetes* block's objects, bind
//! the listeners, serve, watch for changes.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::tcp::TcpHandler;
use super::{Block, Handler, Kubernetes, bind_all, block_addresses, local_ips, udp};
use crate::config::Config;
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
        blocks.push(LoadedBlock {
            block: Arc::new(Block::new(server_block, kubernetes)),
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
        let handler = Arc::new(Handler::new(blocks));
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
