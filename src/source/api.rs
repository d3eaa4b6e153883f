//! The API watch: a *kubernetes* block without `objects` keeps its store current with the
//! API server, as CoreDNS's informers do — list, then watch, re-list when the server says the
//! watch is too old (410 Gone), back off and retry when it is unreachable.
//!
//! One task per resource runs a kube-rs [`watcher`] and turns its events into [`Change`]s of
//! the minimal model (the API objects are converted and dropped at once: only the fields the
//! zone needs are kept). One task owns the [`Cluster`] those changes apply to and publishes a
//! new zone when a burst of changes has settled — never while a resource is being re-listed
//! (a re-list updates the objects in place and removes, at its end, those it did not see, so
//! there is never a half-listed zone and never a second full copy of the objects).
//!
//! [`ApiStatus`] tells the rest of the server how the watch is doing: whether the store has
//! synced (until then an NXDOMAIN is answered SERVFAIL, as CoreDNS does), whether the API
//! server answers, and the counters behind `clusterdns_kubernetes_*` metrics.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Debug;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::mcs;
use super::programming::Tracker;
use super::publish::Publisher;
use crate::config::{ApiConfig, KubernetesConfig, PodMode};
use crate::metrics::process::StoreMetrics;
use crate::metrics::{self as metrics, Collect, Exposition};
use crate::model::serviceimport::{ServiceImportObject, service_import};
use crate::model::{self, Cluster, Kind, Object, ObjectKey, convert};
use crate::store::Store;
use crate::zone;

/// The most changes taken into one publication beyond the first.
const MAX_BATCH: usize = 4096;

/// How long after a publication the snapshot file is written (later publications within it
/// are written together).
const SNAPSHOT_DELAY: Duration = Duration::from_secs(1);

/// The shortest time between two writes of the snapshot file.
const SNAPSHOT_INTERVAL: Duration = Duration::from_secs(5);

/// How long connecting to the API server may take before the attempt counts as failed.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The resources a block watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// `namespaces` (v1).
    Namespaces,
    /// `services` (v1).
    Services,
    /// `endpointslices` (discovery.k8s.io/v1).
    EndpointSlices,
    /// `pods` (v1), only for `pods verified`.
    Pods,
    /// `serviceimports` (multicluster.x-k8s.io/v1alpha1), only for `multicluster`.
    ServiceImports,
}

impl Resource {
    /// The API's plural name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Namespaces => "namespaces",
            Self::Services => "services",
            Self::EndpointSlices => "endpointslices",
            Self::Pods => "pods",
            Self::ServiceImports => "serviceimports",
        }
    }

    /// What `config` needs watched: pods only for `pods verified` (`endpoint_pod_names`
    /// reads the slices' targetRefs, not the pods), ServiceImports only for `multicluster`.
    pub fn needed(config: &KubernetesConfig) -> Vec<Self> {
        let mut needed = vec![Self::Namespaces, Self::Services, Self::EndpointSlices];
        if config.pods == PodMode::Verified {
            needed.push(Self::Pods);
        }
        if !config.multicluster.is_empty() {
            needed.push(Self::ServiceImports);
        }
        needed
    }
}

/// Why the API server cannot be reached as configured.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The kubeconfig file is missing, malformed, or lacks the context.
    #[error("kubeconfig {path}: {error}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        error: String,
    },
    /// `endpoint` is not a URL.
    #[error("endpoint {url:?} is not a URL: {error}")]
    Endpoint {
        /// The argument.
        url: String,
        /// What is wrong.
        error: String,
    },
    /// A `tls` file cannot be read.
    #[error("tls {what} {path}: {error}")]
    TlsFile {
        /// Which of CERT, KEY, CACERT.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        error: std::io::Error,
    },
    /// Neither `kubeconfig` nor `endpoint`, and not in a pod.
    #[error(
        "not running in a Kubernetes pod ({0}); give `kubeconfig PATH [CONTEXT]` or \
         `endpoint URL`, or static objects with `objects FILE...`"
    )]
    InCluster(String),
    /// The client could not be built from the configuration.
    #[error("building the API client: {0}")]
    Client(String),
}

/// Builds the API client `api` describes: `kubeconfig` first, then `endpoint` (with `tls`),
/// else the pod's service account, as CoreDNS chooses. Every request it sends is reported to
/// `status`, and limited by `apiserver_qps`/`apiserver_burst`/`apiserver_max_inflight`.
pub async fn connect(api: &ApiConfig, status: Arc<ApiStatus>) -> Result<Client, ConnectError> {
    let mut config = if let Some((path, context)) = &api.kubeconfig {
        let kubeconfig_error = |error: &dyn std::fmt::Display| ConnectError::Kubeconfig {
            path: path.clone(),
            error: error.to_string(),
        };
        let kubeconfig =
            kube::config::Kubeconfig::read_from(path).map_err(|e| kubeconfig_error(&e))?;
        let options = kube::config::KubeConfigOptions {
            context: context.clone(),
            ..kube::config::KubeConfigOptions::default()
        };
        kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| kubeconfig_error(&e))?
    } else if let Some(url) = &api.endpoint {
        let uri = url
            .parse::<http::Uri>()
            .map_err(|error| ConnectError::Endpoint {
                url: url.clone(),
                error: error.to_string(),
            })
            .and_then(|uri| {
                if uri.scheme().is_some() && uri.host().is_some() {
                    Ok(uri)
                } else {
                    Err(ConnectError::Endpoint {
                        url: url.clone(),
                        error: "expected a scheme and a host, as https://10.0.0.1:6443".into(),
                    })
                }
            })?;
        let mut config = kube::Config::new(uri);
        if let Some(tls) = &api.tls {
            for (what, path) in [("CERT", &tls.cert), ("KEY", &tls.key), ("CACERT", &tls.ca)] {
                std::fs::metadata(path).map_err(|error| ConnectError::TlsFile {
                    what,
                    path: path.clone(),
                    error,
                })?;
            }
            config.root_cert_file = Some(tls.ca.clone());
            config.auth_info.client_certificate = Some(tls.cert.display().to_string());
            config.auth_info.client_key = Some(tls.key.display().to_string());
        }
        config
    } else {
        kube::Config::incluster().map_err(|error| ConnectError::InCluster(error.to_string()))?
    };
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    let concurrency = api
        .max_inflight
        .map(|max| tower::limit::ConcurrencyLimitLayer::new(max as usize));
    let rate = api.qps.map(|qps| {
        // client-go's token bucket, as a window: `burst` requests per `burst / qps` seconds
        // keeps the average at `qps` and lets a burst through at once.
        let burst = api.burst.unwrap_or_else(|| (qps.ceil() as u32).max(1));
        tower::limit::RateLimitLayer::new(
            u64::from(burst),
            Duration::from_secs_f64(f64::from(burst) / qps),
        )
    });
    let observe = tower::util::MapResultLayer::new(observer(status));
    let builder = kube::client::ClientBuilder::try_from(config)
        .map_err(|error| ConnectError::Client(error.to_string()))?;
    Ok(builder
        .with_layer(&observe)
        .with_layer(&tower::util::option_layer(concurrency))
        .with_layer(&tower::util::option_layer(rate))
        .build())
}

/// Reports each response (or its absence) to `status`.
fn observer<B, E: std::fmt::Display>(
    status: Arc<ApiStatus>,
) -> impl Fn(Result<http::Response<B>, E>) -> Result<http::Response<B>, E> + Clone {
    move |result| {
        match &result {
            Ok(response) => status.answered(response.status().as_u16()),
            Err(error) => status.unreachable(&error.to_string()),
        }
        result
    }
}

/// How the watch of one block is doing.
#[derive(Debug)]
pub struct ApiStatus {
    zone: String,
    synced: AtomicBool,
    synced_tx: tokio::sync::watch::Sender<bool>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When the store first synced.
    synced_at: Option<SystemTime>,
    /// The snapshot file being served (when it was written), until the first sync.
    restored: Option<SystemTime>,
    /// The zone of the watch this one replaced is served until the first sync.
    inherited: bool,
    /// Since when, and why, the API server has not answered (or answered with an error).
    failing: Option<(SystemTime, String)>,
    /// When the API server last answered a request successfully.
    last_success: Option<SystemTime>,
    /// Responses by HTTP status code; `error` for requests that got none.
    requests: BTreeMap<String, u64>,
    /// Watch failures by resource.
    watch_errors: BTreeMap<&'static str, u64>,
    /// Re-lists (after the first list) by resource.
    relists: BTreeMap<&'static str, u64>,
    /// Resources the API server said it does not have (logged once each).
    absent: HashSet<Resource>,
}

impl ApiStatus {
    /// The status of the watch serving `zone` (its first forward zone).
    pub fn new(zone: &str) -> Self {
        let (synced_tx, _) = tokio::sync::watch::channel(false);
        Self {
            zone: zone.to_owned(),
            synced: AtomicBool::new(false),
            synced_tx,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the store has synced with the API server (every resource listed).
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Waits until the store has synced, at most `timeout`; whether it has.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let mut rx = self.synced_tx.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|synced| *synced))
            .await
            .is_ok_and(|result| result.is_ok())
    }

    /// The store serves the snapshot file written at `written` until it syncs.
    pub fn restored(&self, written: SystemTime) {
        self.state().restored = Some(written);
    }

    /// The store serves the zone of the watch this one replaced (a reloaded Corefile changed
    /// the block) until it syncs.
    pub fn inherited(&self) {
        self.state().inherited = true;
    }

    /// The snapshot file being served, if the store has not synced yet.
    pub fn serving_snapshot(&self) -> Option<SystemTime> {
        self.state().restored
    }

    fn mark_synced(&self, at: SystemTime) {
        let mut state = self.state();
        state.restored = None;
        state.inherited = false;
        state.synced_at.get_or_insert(at);
        drop(state);
        self.synced.store(true, Ordering::Release);
        self.synced_tx.send_replace(true);
    }

    /// The API server answered a request with HTTP `code`.
    fn answered(&self, code: u16) {
        let mut state = self.state();
        *state.requests.entry(code.to_string()).or_default() += 1;
        if code == 404 {
            // An answer, not an outage: a resource the server lacks (a CRD not installed).
            return;
        }
        if (200..300).contains(&code) {
            state.last_success = Some(SystemTime::now());
            if let Some((since, _)) = state.failing.take() {
                let down = SystemTime::now().duration_since(since).unwrap_or_default();
                tracing::info!(
                    zone = %self.zone,
                    "API server answers again after {:.1} s",
                    down.as_secs_f64()
                );
            }
        } else {
            let reason = match code {
                401 => "401 Unauthorized: the credentials were refused".to_owned(),
                403 => "403 Forbidden: the service account may not list/watch (check the \
                        ClusterRole)"
                    .to_owned(),
                _ => format!("HTTP {code}"),
            };
            self.failing(&mut state, reason);
        }
    }

    /// A request got no answer.
    fn unreachable(&self, error: &str) {
        let mut state = self.state();
        *state.requests.entry("error".to_owned()).or_default() += 1;
        self.failing(&mut state, error.to_owned());
    }

    fn failing(&self, state: &mut State, reason: String) {
        match &mut state.failing {
            Some((_, last)) => *last = reason,
            None => {
                tracing::warn!(
                    zone = %self.zone,
                    "API server request failed: {reason}; still serving the last known state, \
                     retrying with backoff"
                );
                state.failing = Some((SystemTime::now(), reason));
            }
        }
    }

    fn watch_failed(&self, resource: Resource, error: &str) {
        let mut state = self.state();
        let count = state.watch_errors.entry(resource.as_str()).or_default();
        *count += 1;
        if *count == 1 || state.failing.is_none() {
            tracing::warn!(zone = %self.zone, resource = resource.as_str(), "watch failed: {error}");
        } else {
            tracing::debug!(zone = %self.zone, resource = resource.as_str(), "watch failed: {error}");
        }
    }

    /// The API server has no `resource` (its CRD is not installed).
    fn absent(&self, resource: Resource) {
        if self.state().absent.insert(resource) {
            tracing::warn!(
                zone = %self.zone,
                resource = resource.as_str(),
                "the API server does not have this resource (404: the Multi-Cluster Services \
                 CRD is not installed); answering as if there were none, retrying with backoff"
            );
        }
    }

    fn relisted(&self, resource: Resource) {
        *self.state().relists.entry(resource.as_str()).or_default() += 1;
        tracing::info!(zone = %self.zone, resource = resource.as_str(), "re-listing");
    }

    /// Whether `/ready` may say OK: the store has synced, or serves a snapshot file.
    pub fn is_ready(&self) -> bool {
        if self.is_synced() {
            return true;
        }
        let state = self.state();
        state.restored.is_some() || state.inherited
    }

    /// What `/ready` adds to its body about this watch (nothing when all is well).
    pub fn notes(&self, now: SystemTime) -> Vec<String> {
        let state = self.state();
        let age = |at: SystemTime| now.duration_since(at).unwrap_or_default().as_secs();
        let mut notes = Vec::new();
        if let Some(written) = state.restored {
            notes.push(format!(
                "kubernetes {}: serving the snapshot file (age {} s) until the API server is \
                 synced",
                self.zone,
                age(written)
            ));
        } else if !self.is_synced() {
            notes.push(format!(
                "kubernetes {}: not synced with the API server yet",
                self.zone
            ));
        }
        if let Some((since, reason)) = &state.failing {
            notes.push(format!(
                "kubernetes {}: API server failing for {} s ({reason}); serving the last known \
                 state",
                self.zone,
                age(*since)
            ));
        }
        notes
    }
}

impl Collect for ApiStatus {
    fn collect(&self, out: &mut Exposition) {
        let zone = self.zone.as_str();
        let state = self.state();
        let now = SystemTime::now();
        out.sample(
            "clusterdns_kubernetes_synced",
            "1 once every watched resource has been listed from the API server.",
            metrics::Kind::Gauge,
            &[("zone", zone)],
            f64::from(u8::from(self.is_synced())),
        );
        out.sample(
            "clusterdns_kubernetes_api_up",
            "1 when the API server answered the last request successfully.",
            metrics::Kind::Gauge,
            &[("zone", zone)],
            f64::from(u8::from(
                state.failing.is_none() && state.last_success.is_some(),
            )),
        );
        if let Some(at) = state.last_success {
            out.sample(
                "clusterdns_kubernetes_api_last_success_timestamp_seconds",
                "Unix time of the API server's last successful answer.",
                metrics::Kind::Gauge,
                &[("zone", zone)],
                unix_seconds(at),
            );
        }
        for (code, count) in &state.requests {
            out.sample(
                "clusterdns_kubernetes_api_requests_total",
                "Requests to the API server, by HTTP status code (error: no answer).",
                metrics::Kind::Counter,
                &[("code", code), ("zone", zone)],
                *count as f64,
            );
        }
        for (resource, count) in &state.watch_errors {
            out.sample(
                "clusterdns_kubernetes_watch_errors_total",
                "Failed lists and watches, by resource.",
                metrics::Kind::Counter,
                &[("resource", resource), ("zone", zone)],
                *count as f64,
            );
        }
        for (resource, count) in &state.relists {
            out.sample(
                "clusterdns_kubernetes_relists_total",
                "Re-lists after the first list (a watch too old, 410 Gone), by resource.",
                metrics::Kind::Counter,
                &[("resource", resource), ("zone", zone)],
                *count as f64,
            );
        }
        if let Some(written) = state.restored {
            out.sample(
                "clusterdns_kubernetes_snapshot_age_seconds",
                "Age of the snapshot file served until the API server is synced.",
                metrics::Kind::Gauge,
                &[("zone", zone)],
                now.duration_since(written)
                    .unwrap_or_default()
                    .as_secs_f64(),
            );
        }
    }
}

fn unix_seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}

/// The resource an object comes from.
fn resource_of(object: &Object) -> Resource {
    match object {
        Object::Namespace(_) => Resource::Namespaces,
        Object::Service(_) => Resource::Services,
        Object::EndpointSlice(_) => Resource::EndpointSlices,
        Object::Pod(_) => Resource::Pods,
        Object::ServiceImport(_) => Resource::ServiceImports,
    }
}

fn namespace_key(name: &str) -> ObjectKey {
    ObjectKey::new("", name)
}

/// What a resource's watch saw.
#[derive(Debug)]
enum Change {
    /// A (re-)list starts.
    Init(Resource),
    /// An object was listed, added or modified.
    Upsert(Box<Object>),
    /// An object was deleted (or no longer converts).
    Delete(Resource, ObjectKey),
    /// The list is complete: objects not seen in it are gone.
    InitDone(Resource),
    /// The list or watch failed; the watcher backs off and retries.
    Failed(Resource, String),
    /// The API server has no such resource (404: a CRD not installed): as a complete list
    /// of nothing. The watcher backs off and retries.
    Absent(Resource),
}

/// The objects the watches have seen (kept by the block's [`Publisher`]), and where each
/// resource's list stands.
#[derive(Debug)]
struct Watched {
    publisher: Publisher,
    needed: Vec<Resource>,
    /// Resources listed completely at least once.
    listed: HashSet<Resource>,
    /// Resources being (re-)listed, with the keys seen so far.
    listing: BTreeMap<Resource, HashSet<ObjectKey>>,
}

impl Watched {
    fn new(needed: Vec<Resource>, publisher: Publisher) -> Self {
        Self {
            publisher,
            needed,
            listed: HashSet::new(),
            listing: BTreeMap::new(),
        }
    }

    /// Whether every resource has been listed and none is being re-listed: the objects are
    /// a whole state of the cluster.
    fn complete(&self) -> bool {
        self.listing.is_empty() && self.needed.iter().all(|r| self.listed.contains(r))
    }

    /// Applies `change`; whether the objects changed. While a list is under way objects
    /// are edited in place (the zone is built whole once the state is complete again);
    /// otherwise each change goes to the publisher as it is.
    fn apply(&mut self, change: Change, status: &ApiStatus) -> bool {
        match change {
            Change::Init(resource) => {
                if self.listed.contains(&resource) {
                    status.relisted(resource);
                }
                self.listing.insert(resource, HashSet::new());
                false
            }
            Change::Upsert(object) => {
                if let Some(seen) = self.listing.get_mut(&resource_of(&object)) {
                    seen.insert(object.key());
                }
                if self.complete() {
                    self.publisher.change(zone::Change::Upsert(object));
                } else {
                    self.publisher.insert_listed(*object);
                }
                true
            }
            Change::Delete(resource, key) => {
                let kind = kind_of(resource);
                if self.publisher.cluster().get(kind, &key).is_none() {
                    return false;
                }
                if self.complete() {
                    self.publisher.change(zone::Change::Delete(kind, key));
                } else {
                    self.publisher.edit().remove(kind, &key);
                }
                true
            }
            Change::InitDone(resource) => {
                let seen = self.listing.remove(&resource).unwrap_or_default();
                self.listed.insert(resource);
                let kind = kind_of(resource);
                let gone: Vec<ObjectKey> = self
                    .keys(resource)
                    .filter(|key| !seen.contains(key))
                    .collect();
                if !gone.is_empty() {
                    let cluster = self.publisher.edit();
                    for key in &gone {
                        cluster.remove(kind, key);
                    }
                }
                // The end of a list always counts: it may complete the state.
                true
            }
            Change::Failed(resource, error) => {
                status.watch_failed(resource, &error);
                false
            }
            Change::Absent(resource) => {
                status.absent(resource);
                let first = !self.listed.contains(&resource);
                let was_listing = self.listing.remove(&resource).is_some();
                self.listed.insert(resource);
                let kind = kind_of(resource);
                let gone: Vec<ObjectKey> = self.keys(resource).collect();
                for key in gone {
                    if self.complete() && !was_listing {
                        self.publisher.change(zone::Change::Delete(kind, key));
                    } else {
                        self.publisher.edit().remove(kind, &key);
                    }
                }
                first || was_listing
            }
        }
    }

    fn keys(&self, resource: Resource) -> Box<dyn Iterator<Item = ObjectKey> + '_> {
        let cluster = self.publisher.cluster();
        match resource {
            Resource::Namespaces => Box::new(cluster.namespaces.keys().map(|n| namespace_key(n))),
            Resource::Services => Box::new(cluster.services.keys().cloned()),
            Resource::EndpointSlices => Box::new(cluster.endpoint_slices.keys().cloned()),
            Resource::Pods => Box::new(cluster.pods.keys().cloned()),
            Resource::ServiceImports => Box::new(cluster.service_imports.keys().cloned()),
        }
    }
}

/// The model's kind of the objects of `resource`.
fn kind_of(resource: Resource) -> Kind {
    match resource {
        Resource::Namespaces => Kind::Namespace,
        Resource::Services => Kind::Service,
        Resource::EndpointSlices => Kind::EndpointSlice,
        Resource::Pods => Kind::Pod,
        Resource::ServiceImports => Kind::ServiceImport,
    }
}

/// A running watch of one *kubernetes* block: its store and status. Dropping it stops it.
#[derive(Debug)]
pub struct ApiWatch {
    config: KubernetesConfig,
    /// The zone the watch publishes.
    pub store: Arc<Store>,
    /// How the watch is doing.
    pub status: Arc<ApiStatus>,
    /// The store's metrics (registered by whoever exposes them).
    pub metrics: Arc<StoreMetrics>,
    stop: CancellationToken,
    started: AtomicBool,
}

impl Drop for ApiWatch {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// What a watch needs besides its configuration.
#[derive(Debug)]
pub struct WatchContext {
    /// The addresses the block answers on (for the apex NS).
    pub local_ips: Vec<IpAddr>,
    /// Programming latency, seeded with the state being served.
    pub tracker: Tracker,
}

impl ApiWatch {
    /// A watch for `config` publishing to `store`, not started yet.
    pub fn new(
        config: KubernetesConfig,
        store: Arc<Store>,
        status: Arc<ApiStatus>,
        metrics: Arc<StoreMetrics>,
    ) -> Self {
        Self {
            config,
            store,
            status,
            metrics,
            stop: CancellationToken::new(),
            started: AtomicBool::new(false),
        }
    }

    /// Whether this watch serves `config` exactly (a reloaded Corefile that leaves the
    /// *kubernetes* block as it was keeps its watch, store and sync).
    pub fn serves(&self, config: &KubernetesConfig) -> bool {
        let mut same = config.clone();
        same.line = self.config.line;
        same == self.config
    }

    /// The block's configuration.
    pub fn config(&self) -> &KubernetesConfig {
        &self.config
    }

    /// Connects and starts watching (once; later calls do nothing).
    pub async fn start(&self, context: WatchContext) -> Result<(), ConnectError> {
        if self.started.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let client = match connect(&self.config.api, Arc::clone(&self.status)).await {
            Ok(client) => client,
            Err(error) => {
                self.started.store(false, Ordering::Release);
                return Err(error);
            }
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let needed = Resource::needed(&self.config);
        for resource in &needed {
            spawn_resource(
                &client,
                &self.config,
                *resource,
                tx.clone(),
                self.stop.clone(),
            );
        }
        drop(tx);
        let mut publisher = Publisher::new(
            self.config.clone(),
            context.local_ips,
            Arc::clone(&self.store),
            Some(Arc::clone(&self.metrics)),
        );
        publisher.track(context.tracker);
        let feed = Publishing {
            status: Arc::clone(&self.status),
            snapshot: self.config.snapshot.clone(),
        };
        tokio::spawn(feed.run(Watched::new(needed, publisher), rx, self.stop.clone()));
        Ok(())
    }
}

/// The namespaces a block serves, for filtering objects of the others out before they are
/// kept (`namespaces` with more than one name: the API has no server-side filter for that).
fn namespace_filter(config: &KubernetesConfig) -> Option<Arc<HashSet<String>>> {
    (config.namespaces.len() > 1).then(|| Arc::new(config.namespaces.iter().cloned().collect()))
}

/// Starts the watch of one resource, sending its changes to `tx`.
fn spawn_resource(
    client: &Client,
    config: &KubernetesConfig,
    resource: Resource,
    tx: mpsc::UnboundedSender<Change>,
    stop: CancellationToken,
) {
    let single_namespace = match config.namespaces.as_slice() {
        [one] => Some(one.as_str()),
        _ => None,
    };
    let filter = namespace_filter(config);
    let mut watch_config = watcher::Config::default();
    match resource {
        Resource::Namespaces => {
            if let Some(selector) = &config.namespace_labels {
                watch_config = watch_config.labels(&selector.to_string());
            }
            if let Some(name) = single_namespace {
                watch_config = watch_config.fields(&format!("metadata.name={name}"));
            }
        }
        Resource::Services | Resource::EndpointSlices => {
            if let Some(selector) = &config.labels {
                watch_config = watch_config.labels(&selector.to_string());
            }
        }
        Resource::Pods | Resource::ServiceImports => {}
    }
    macro_rules! api {
        ($kind:ty) => {
            match single_namespace {
                Some(namespace) => Api::<$kind>::namespaced(client.clone(), namespace),
                None => Api::<$kind>::all(client.clone()),
            }
        };
    }
    let feed = Feed {
        config: watch_config,
        resource,
        namespaces: filter,
        tx,
        stop,
    };
    match resource {
        Resource::Namespaces => tokio::spawn(feed.run(
            Api::<core::Namespace>::all(client.clone()),
            |ns: &core::Namespace| convert::namespace(ns).map(Object::Namespace),
        )),
        Resource::Services => tokio::spawn(feed.run(api!(core::Service), |svc: &core::Service| {
            convert::service(svc).map(Object::Service)
        })),
        Resource::EndpointSlices => tokio::spawn(feed.run(
            api!(discovery::EndpointSlice),
            |slice: &discovery::EndpointSlice| {
                convert::endpoint_slice(slice).map(Object::EndpointSlice)
            },
        )),
        Resource::Pods => tokio::spawn(feed.run(api!(core::Pod), |pod: &core::Pod| {
            convert::pod(pod).map(Object::Pod)
        })),
        Resource::ServiceImports => tokio::spawn(
            feed.run(api!(ServiceImportObject), |import: &ServiceImportObject| {
                service_import(import).map(Object::ServiceImport)
            }),
        ),
    };
}

/// One resource's watch and where its changes go.
struct Feed {
    config: watcher::Config,
    resource: Resource,
    /// Namespaces whose objects are kept (`None`: all).
    namespaces: Option<Arc<HashSet<String>>>,
    tx: mpsc::UnboundedSender<Change>,
    stop: CancellationToken,
}

impl Feed {
    /// Runs kube-rs's watcher on `api` (with its default backoff on errors) until `stop`,
    /// converting each object with `convert`.
    async fn run<K, F>(self, api: Api<K>, convert: F)
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
        F: Fn(&K) -> Result<Object, convert::ConvertError> + Send + 'static,
    {
        let Self {
            config,
            resource,
            namespaces,
            tx,
            stop,
        } = self;
        let stream = watcher::watcher(api, config).default_backoff();
        let mut stream = std::pin::pin!(stream);
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                () = stop.cancelled() => return,
            };
            let Some(item) = item else { return };
            let change = match item {
                Ok(Event::Init) => Change::Init(resource),
                Ok(Event::InitDone) => Change::InitDone(resource),
                Ok(Event::InitApply(object) | Event::Apply(object)) => {
                    let key = key_of(&object, resource);
                    if namespaces
                        .as_ref()
                        .is_some_and(|keep| !keep.contains(&key.namespace))
                    {
                        continue;
                    }
                    match convert(&object) {
                        Ok(object) => Change::Upsert(Box::new(object)),
                        Err(error) => {
                            tracing::warn!(
                                resource = resource.as_str(),
                                "{}: {error}; left out of the zone",
                                display_key(&key)
                            );
                            Change::Delete(resource, key)
                        }
                    }
                }
                Ok(Event::Delete(object)) => Change::Delete(resource, key_of(&object, resource)),
                Err(error) if resource == Resource::ServiceImports && mcs::is_absent(&error) => {
                    Change::Absent(resource)
                }
                Err(error) => Change::Failed(resource, error.to_string()),
            };
            if tx.send(change).is_err() {
                return;
            }
        }
    }
}

fn key_of<K: kube::Resource>(object: &K, resource: Resource) -> ObjectKey {
    let meta = object.meta();
    let name = meta.name.clone().unwrap_or_default();
    if resource == Resource::Namespaces {
        namespace_key(&name)
    } else {
        ObjectKey::new(meta.namespace.clone().unwrap_or_default(), name)
    }
}

fn display_key(key: &ObjectKey) -> String {
    if key.namespace.is_empty() {
        key.name.clone()
    } else {
        format!("{}/{}", key.namespace, key.name)
    }
}

/// Feeds the watches' changes to the publisher as they come, and writes the snapshot file.
struct Publishing {
    status: Arc<ApiStatus>,
    snapshot: Option<PathBuf>,
}

impl Publishing {
    async fn run(
        self,
        mut watched: Watched,
        mut rx: mpsc::UnboundedReceiver<Change>,
        stop: CancellationToken,
    ) {
        let mut snapshot_due: Option<tokio::time::Instant> = None;
        let mut last_written: Option<tokio::time::Instant> = None;
        loop {
            let due = snapshot_due;
            tokio::select! {
                change = rx.recv() => {
                    let Some(change) = change else { return };
                    watched.apply(change, &self.status);
                    // Whatever else has arrived meanwhile goes into the same publication: a
                    // burst is coalesced as far as publishing lags behind it, no further.
                    for _ in 0..MAX_BATCH {
                        let Ok(change) = rx.try_recv() else { break };
                        watched.apply(change, &self.status);
                    }
                }
                () = sleep_until(due) => {
                    snapshot_due = None;
                    last_written = Some(tokio::time::Instant::now());
                    let Some(back) = self.write_snapshot(watched).await else { return };
                    watched = back;
                    continue;
                }
                () = stop.cancelled() => return,
            }
            if !watched.complete() || !watched.publisher.is_dirty() {
                continue;
            }
            let Some(back) = self.publish(watched).await else {
                return;
            };
            watched = back;
            if self.snapshot.is_some() && snapshot_due.is_none() {
                // Soon after a change, and at most once per SNAPSHOT_INTERVAL under churn:
                // the file is never older than the interval and its cost stays bounded.
                let soonest = last_written.map(|at| at + SNAPSHOT_INTERVAL);
                let after_delay = tokio::time::Instant::now() + SNAPSHOT_DELAY;
                snapshot_due = Some(soonest.map_or(after_delay, |at| at.max(after_delay)));
            }
        }
    }

    /// Publishes the zone of the objects: at once for an update, on a blocking thread when
    /// it is built whole. `None` if the objects were lost (the runtime is shutting down).
    async fn publish(&self, mut watched: Watched) -> Option<Watched> {
        let first = !self.status.is_synced();
        let published = if watched.publisher.needs_whole() {
            let (back, published) = blocking(watched, |watched| {
                watched.publisher.publish(SystemTime::now())
            })
            .await?;
            watched = back;
            match published {
                Some(published) => published,
                None => {
                    tracing::error!("building the zone panicked; still serving the last one");
                    return Some(watched);
                }
            }
        } else {
            watched.publisher.publish(SystemTime::now())
        };
        let Some(published) = published else {
            return Some(watched);
        };
        if first {
            tracing::info!(
                zone = %self.status.zone,
                serial = published.serial,
                names = published.names,
                services = published.counts.services,
                endpoint_slices = published.counts.endpoint_slices,
                build_ms = published.build_time.as_millis(),
                "synced with the API server; zone published"
            );
            // After the log line: whoever waits for the sync logs after it.
            self.status.mark_synced(SystemTime::now());
        } else {
            tracing::debug!(
                serial = published.serial,
                names = published.names,
                whole = published.whole,
                build_us = published.build_time.as_micros(),
                "objects changed; new zone published"
            );
        }
        Some(watched)
    }

    async fn write_snapshot(&self, watched: Watched) -> Option<Watched> {
        let Some(path) = self.snapshot.clone() else {
            return Some(watched);
        };
        let (watched, written) = blocking(watched, move |watched| {
            write_snapshot(&path, watched.publisher.cluster()).map_err(|error| (path, error))
        })
        .await?;
        match written {
            Some(Ok(())) => {}
            Some(Err((path, error))) => tracing::warn!(
                "writing the snapshot {}: {error}; the next change tries again",
                path.display()
            ),
            None => tracing::error!("writing the snapshot panicked"),
        }
        Some(watched)
    }
}

/// Runs `work` on the objects on a blocking thread and gives them back with its result
/// (`None` if it panicked: the objects are still given back). `None` altogether when the
/// runtime shuts down under it.
async fn blocking<T, F>(mut watched: Watched, work: F) -> Option<(Watched, Option<T>)>
where
    T: Send + 'static,
    F: FnOnce(&mut Watched) -> T + Send + 'static,
{
    let joined = tokio::task::spawn_blocking(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&mut watched)));
        (watched, result.ok())
    })
    .await;
    match joined {
        Ok(done) => Some(done),
        Err(error) => {
            tracing::error!("blocking task failed: {error}");
            None
        }
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Writes `cluster` to `path` as a kubectl List, replacing the file atomically (a temporary
/// file beside it, synced, then renamed over it): a crash never leaves half a snapshot.
pub fn write_snapshot(path: &Path, cluster: &Cluster) -> std::io::Result<()> {
    use std::io::Write;
    let list = model::export::to_list(cluster, SystemTime::now());
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut temp = tempfile_in(dir, path)?;
    serde_json::to_writer(std::io::BufWriter::new(&mut temp.1), &list)?;
    temp.1.flush()?;
    temp.1.sync_all()?;
    std::fs::rename(&temp.0, path)?;
    Ok(())
}

fn tempfile_in(dir: &Path, path: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "snapshot".to_owned());
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let file = std::fs::File::create(&temp)?;
    Ok((temp, file))
}

/// Reads a snapshot file written by [`write_snapshot`]: the objects exactly as the API
/// server had them, and when the file was written.
pub fn read_snapshot(path: &Path) -> Result<(Cluster, SystemTime), super::file::Error> {
    let mut loader = super::file::Loader::new();
    loader.read_file(path)?;
    let written = std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .unwrap_or_else(|_| SystemTime::now());
    Ok((loader.finish_as_given().cluster, written))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Namespace, Service};

    fn service(namespace: &str, name: &str) -> Box<Object> {
        let json = serde_json::json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 80}]},
        });
        let object: core::Service = serde_json::from_value(json).expect("service");
        Box::new(Object::Service(
            convert::service(&object).expect("converts"),
        ))
    }

    fn namespace(name: &str) -> Box<Object> {
        Box::new(Object::Namespace(Namespace {
            name: name.to_owned(),
            labels: model::Labels::new(),
        }))
    }

    fn publisher() -> Publisher {
        let config = KubernetesConfig::new(vec!["cluster.local.".parse().expect("zone")], 0, 1);
        let store = Arc::new(Store::new(super::super::publish::standalone(
            &Cluster::default(),
            &config,
            &[],
            SystemTime::now(),
        )));
        Publisher::new(config, Vec::new(), store, None)
    }

    fn names(watched: &Watched) -> Vec<String> {
        watched
            .publisher
            .cluster()
            .services
            .values()
            .map(|svc: &Service| display_key(&svc.key))
            .collect()
    }

    #[test]
    fn the_state_is_complete_only_when_every_resource_is_listed_and_none_relisting() {
        let status = ApiStatus::new("cluster.local.");
        let mut watched = Watched::new(vec![Resource::Namespaces, Resource::Services], publisher());
        assert!(!watched.complete());
        watched.apply(Change::Init(Resource::Namespaces), &status);
        watched.apply(Change::Upsert(namespace("shop")), &status);
        watched.apply(Change::InitDone(Resource::Namespaces), &status);
        assert!(!watched.complete(), "services not listed yet");
        watched.apply(Change::Init(Resource::Services), &status);
        watched.apply(Change::Upsert(service("shop", "web")), &status);
        assert!(!watched.complete(), "services mid-list");
        watched.apply(Change::InitDone(Resource::Services), &status);
        assert!(watched.complete());
        assert_eq!(names(&watched), ["shop/web"]);
    }

    #[test]
    fn a_relist_updates_in_place_and_removes_what_it_did_not_see() {
        let status = ApiStatus::new("cluster.local.");
        let mut watched = Watched::new(vec![Resource::Services], publisher());
        for change in [
            Change::Init(Resource::Services),
            Change::Upsert(service("shop", "web")),
            Change::Upsert(service("shop", "db")),
            Change::InitDone(Resource::Services),
        ] {
            watched.apply(change, &status);
        }
        assert_eq!(names(&watched), ["shop/db", "shop/web"]);
        // 410 Gone: the watcher lists again; db was deleted while the watch was down.
        watched.apply(Change::Init(Resource::Services), &status);
        watched.apply(Change::Upsert(service("shop", "web")), &status);
        watched.apply(Change::Upsert(service("shop", "cart")), &status);
        assert!(!watched.complete(), "never publish half a re-list");
        assert_eq!(
            names(&watched),
            ["shop/cart", "shop/db", "shop/web"],
            "in place: no second copy"
        );
        watched.apply(Change::InitDone(Resource::Services), &status);
        assert!(watched.complete());
        assert_eq!(names(&watched), ["shop/cart", "shop/web"]);
        assert_eq!(status.state().relists.get("services"), Some(&1));
    }

    #[test]
    fn deletes_and_failures() {
        let status = ApiStatus::new("cluster.local.");
        let mut watched = Watched::new(vec![Resource::Services], publisher());
        watched.apply(Change::Init(Resource::Services), &status);
        watched.apply(Change::InitDone(Resource::Services), &status);
        assert!(watched.apply(Change::Upsert(service("shop", "web")), &status));
        assert!(watched.apply(
            Change::Delete(Resource::Services, ObjectKey::new("shop", "web")),
            &status
        ));
        assert!(!watched.apply(
            Change::Delete(Resource::Services, ObjectKey::new("shop", "web")),
            &status
        ));
        assert!(!watched.apply(Change::Failed(Resource::Services, "boom".into()), &status));
        assert_eq!(status.state().watch_errors.get("services"), Some(&1));
        assert!(watched.complete(), "a failure keeps the last state");
    }

    #[test]
    fn status_tells_ready_notes_and_metrics() {
        let status = ApiStatus::new("cluster.local.");
        assert!(!status.is_ready());
        let now = SystemTime::now();
        status.restored(now - Duration::from_secs(30));
        assert!(status.is_ready() && !status.is_synced());
        let notes = status.notes(now);
        assert!(
            notes[0].contains("serving the snapshot file (age 30 s)"),
            "{notes:?}"
        );
        status.unreachable("connection refused");
        let notes = status.notes(now);
        assert!(
            notes.iter().any(|n| n.contains("connection refused")),
            "{notes:?}"
        );
        status.answered(200);
        status.mark_synced(now);
        assert!(status.is_synced());
        assert!(status.notes(now).is_empty(), "{:?}", status.notes(now));
        let mut out = Exposition::new();
        status.collect(&mut out);
        let text = out.finish();
        assert!(
            text.contains("clusterdns_kubernetes_synced{zone=\"cluster.local.\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("clusterdns_kubernetes_api_up{zone=\"cluster.local.\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "clusterdns_kubernetes_api_requests_total{code=\"error\",zone=\"cluster.local.\"} 1"
            ),
            "{text}"
        );
        assert!(!text.contains("snapshot_age"), "{text}");
    }

    #[test]
    fn snapshot_files_are_replaced_whole_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("snapshot.json");
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/shop.json");
        let cluster = crate::source::read_objects(&[fixture])
            .expect("fixture")
            .cluster;
        write_snapshot(&path, &cluster).expect("written");
        let (back, _) = read_snapshot(&path).expect("read");
        assert_eq!(back, cluster);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    }
}
