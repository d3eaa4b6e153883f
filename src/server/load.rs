//! Loading a configuration: every block's zones (objects files or an API watch), forwarders,
//! caches, *hosts*, *file* zones and templates, and the errors that stop a start.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use super::observability::Observability;
use super::{Block, BuiltPlugins, Kubernetes, block_addresses, local_ips};
use crate::cache::Cache;
use crate::config::{Config, KubernetesConfig};
use crate::forward::Forwarder;
use crate::metrics::process::StoreMetrics;
use crate::source::api::{self, ApiStatus, ApiWatch};
use crate::source::programming::SliceTrigger;
use crate::source::publish::{self, Publisher};
use crate::source::{file, file_watch, programming};
use crate::store::Store;

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
    /// An offline command met a *kubernetes* block without `objects`.
    #[error(
        "kubernetes (line {line}): the block watches the API server; offline commands need \
         its objects as files (`objects FILE...`, or --objects)"
    )]
    NoObjects {
        /// Line of the directive.
        line: usize,
    },
    /// The API server connection is misconfigured.
    #[error("kubernetes (line {line}): {error}")]
    Api {
        /// Line of the directive.
        line: usize,
        /// What is wrong.
        error: api::ConnectError,
    },
    /// A listener could not be bound.
    #[error(transparent)]
    Bind(#[from] std::io::Error),
    /// Objects files could not be watched.
    #[error("watching objects files: {0}")]
    Watch(notify::Error),
    /// A *file* directive's zone file does not read.
    #[error(transparent)]
    File(#[from] super::chain::file::FileLoadError),
}

/// A server block ready to serve, and the addresses it listens on.
#[derive(Debug)]
pub struct LoadedBlock {
    /// The block, its zone loaded.
    pub block: Arc<Block>,
    /// Where it listens (as configured: port 0 stays 0 until bound).
    pub addrs: Vec<SocketAddr>,
    /// The block's store metrics, when it has a *kubernetes* plugin and metrics are on.
    pub(super) store_metrics: Option<Arc<StoreMetrics>>,
    /// The change stamps of the slices the zone was loaded from.
    pub(super) triggers: Vec<SliceTrigger>,
    /// The API watch's status, when metrics are on and the block watches the API.
    pub(super) api_status: Option<Arc<ApiStatus>>,
    /// The publisher of a block with `objects` (and the namespaces its files did not list),
    /// until its files are watched.
    pub(super) publisher: std::sync::Mutex<Option<(Publisher, Vec<String>)>>,
}

/// The blocks of `config` with their zones loaded from their objects files, and the
/// addresses each listens on. Nothing is bound or started: this is also the offline path of
/// `records` and `query` (`metrics` is `None` there).
pub fn load(config: &Config) -> Result<Vec<LoadedBlock>, StartError> {
    load_with(config, None, &[])
}

/// `previous`: the API watches of the running configuration, kept by the blocks that
/// watch the same way, and serving the others until they have synced.
pub(super) fn load_with(
    config: &Config,
    metrics: Option<&Observability>,
    previous: &[Arc<ApiWatch>],
) -> Result<Vec<LoadedBlock>, StartError> {
    let mut blocks = Vec::with_capacity(config.servers.len());
    for server_block in &config.servers {
        let addrs = block_addresses(server_block);
        let server = server_label(server_block);
        let measured = metrics.filter(|_| server_block.plugins.prometheus.is_some());
        let mut store_metrics = None;
        let mut triggers = Vec::new();
        let mut api_status = None;
        let mut publisher = None;
        let kubernetes = match &server_block.plugins.kubernetes {
            None => None,
            Some(k8s) if k8s.objects.is_empty() => {
                let Some(observability) = metrics else {
                    return Err(StartError::NoObjects { line: k8s.line });
                };
                let watch = match previous.iter().find(|watch| watch.serves(k8s)) {
                    Some(watch) => Arc::clone(watch),
                    None => {
                        let (watch, restored) =
                            new_api_watch(k8s, &local_ips(&addrs), previous, observability);
                        triggers = restored;
                        Arc::new(watch)
                    }
                };
                if measured.is_some() {
                    store_metrics = Some(Arc::clone(&watch.metrics));
                    api_status = Some(Arc::clone(&watch.status));
                }
                Some(Kubernetes::watching(k8s.clone(), watch))
            }
            Some(k8s) => {
                let loaded =
                    file_watch::load(&k8s.objects, k8s).map_err(|source| StartError::Objects {
                        line: k8s.line,
                        error: Box::new(source),
                    })?;
                for (kind, count) in &loaded.ignored {
                    tracing::info!(
                        kind,
                        count,
                        "objects of a kind clusterdns does not use; ignored"
                    );
                }
                let metrics = measured.map(|observability| {
                    let primary = k8s
                        .zones
                        .get(k8s.primary_zone)
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    Arc::new(
                        StoreMetrics::new(&primary)
                            .reporting_programming(Arc::clone(&observability.programming)),
                    )
                });
                store_metrics.clone_from(&metrics);
                let fingerprint = loaded.fingerprint();
                loaded.report_unlisted(&[]);
                let unlisted = loaded.unlisted_namespaces;
                triggers = programming::triggers(&loaded.cluster);
                let (owner, published) = Publisher::start(
                    k8s.clone(),
                    local_ips(&addrs),
                    loaded.cluster,
                    loaded.modified,
                    metrics,
                );
                tracing::info!(
                    zones = ?k8s.zones.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    serial = published.serial,
                    names = published.names,
                    read_ms = loaded.read_time.as_millis(),
                    build_ms = published.build_time.as_millis(),
                    "zone loaded"
                );
                let store = Arc::clone(owner.store());
                publisher = Some((owner, unlisted));
                Some(Kubernetes::new(k8s.clone(), store, fingerprint))
            }
        };
        let forward: Vec<Arc<Forwarder>> = server_block
            .plugins
            .forward
            .iter()
            .map(|config| Arc::new(Forwarder::new(config, &addrs)))
            .collect();
        for warning in forward.iter().flat_map(|f| f.warnings()) {
            tracing::error!("{warning}");
        }
        let file = if server_block.plugins.file.is_empty() {
            None
        } else {
            Some(Arc::new(super::chain::file::File::load(
                &server_block.plugins.file,
            )?))
        };
        let plugins = BuiltPlugins {
            file,
            forward,
            cache: server_block
                .plugins
                .cache
                .as_ref()
                .map(|config| Arc::new(Cache::new(config, &server))),
            metrics: measured.map_or_else(Vec::new, |observability| {
                server_block
                    .zones
                    .iter()
                    .map(|zone| {
                        observability
                            .dns
                            .server_zone(&server, &zone.to_string(), "")
                    })
                    .collect()
            }),
        };
        blocks.push(LoadedBlock {
            block: Arc::new(Block::new(server_block, kubernetes, plugins)),
            addrs,
            store_metrics,
            triggers,
            api_status,
            publisher: std::sync::Mutex::new(publisher),
        });
    }
    Ok(blocks)
}

/// A new API watch for `k8s`, not started, and the change stamps of what it serves until it
/// syncs: the zone of a watch it replaces (a reloaded Corefile changed the block), else the
/// `snapshot` file, else an empty zone — where every NXDOMAIN is a SERVFAIL until the sync.
pub(super) fn new_api_watch(
    k8s: &KubernetesConfig,
    local_ips: &[std::net::IpAddr],
    previous: &[Arc<ApiWatch>],
    observability: &Observability,
) -> (ApiWatch, Vec<SliceTrigger>) {
    let zone = k8s
        .zones
        .get(k8s.primary_zone)
        .map(ToString::to_string)
        .unwrap_or_default();
    let status = Arc::new(ApiStatus::new(&zone));
    let metrics = Arc::new(
        StoreMetrics::new(&zone).reporting_programming(Arc::clone(&observability.programming)),
    );
    let mut triggers = Vec::new();
    let store = if let Some(before) = previous.iter().find(|w| w.config().zones == k8s.zones) {
        status.inherited();
        Store::from_shared(before.store.snapshot())
    } else if let Some(path) = &k8s.snapshot
        && path.exists()
    {
        match api::read_snapshot(path) {
            Ok((cluster, written)) => {
                // Answers from a state of unknown age are given a short life, so clients
                // ask again soon after the sync.
                let snapshot = publish::restored(&cluster, k8s, local_ips, written);
                let age = SystemTime::now()
                    .duration_since(written)
                    .unwrap_or_default();
                tracing::info!(
                    zone,
                    names = snapshot.name_count(),
                    services = cluster.services.len(),
                    "serving the snapshot {} (age {} s) until the API server is synced",
                    path.display(),
                    age.as_secs()
                );
                status.restored(written);
                triggers = programming::triggers(&cluster);
                Store::new(snapshot)
            }
            Err(error) => {
                tracing::warn!(
                    "snapshot {}: {error}; starting without it (SERVFAIL for unknown names until \
                     the API server is synced)",
                    path.display()
                );
                Store::new(publish::standalone(
                    &crate::model::Cluster::default(),
                    k8s,
                    local_ips,
                    SystemTime::now(),
                ))
            }
        }
    } else {
        Store::new(publish::standalone(
            &crate::model::Cluster::default(),
            k8s,
            local_ips,
            SystemTime::now(),
        ))
    };
    (
        ApiWatch::new(k8s.clone(), Arc::new(store), status, metrics),
        triggers,
    )
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
