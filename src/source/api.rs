//! The API watch: a *kubernetes* block without `objects` keeps its store current with the
//! API server, as CoreDNS's informers do — list, then watch, re-list when the server says the
//! watch is too old (410 Gone), back off and retry when it is unreachable.
//!
//! One task per resource lists and watches it (`reflector.rs`, in protobuf where the API
//! server serves it, else JSON) and turns its events into changes of the minimal model (the API objects are converted and dropped at once: only the fields the
//! zone needs are kept). One task owns the `Cluster` those changes apply to and publishes a
//! new zone as soon as changes arrive (what arrives during a publication goes into the next)
//! — never while a resource is being re-listed. A re-list is a diff against the objects
//! held: what it finds changed, and at its end what it did not see, are queued as changes and
//! published together as an update of the names they touch, so there is never a half-listed
//! zone, never a second copy of the objects and (unless most of them changed) never a second
//! whole zone beside the served one.
//!
//! [`ApiStatus`] tells the rest of the server how the watch is doing: whether the store has
//! synced (until then an NXDOMAIN is answered SERVFAIL, as CoreDNS does), whether the API
//! server answers, and the counters behind `clusterdns_kubernetes_*` metrics.
//!
//! The objects stay with the watch task, the only copy kept: a question about them
//! (`/debug/why`) is sent to that task and answered between two changes ([`ApiWatch::inspect`]).
//!
//! This file starts the watch of a block ([`ApiWatch`]); the stages are in files of their
//! own under `api/`: `connect.rs` (the client), `reflector.rs` (a resource's list and watch),
//! `protobuf.rs` (the protobuf decoder), `feed.rs` (a resource's events into changes),
//! `state.rs` (the objects and the listings in progress), `task.rs` (the watch task, that
//! applies the changes and publishes zones), `snapshot_file.rs` and `status.rs`. What is
//! decoded of a Pod and an EndpointSlice is `source/decode.rs`, shared with the objects files.

mod connect;
mod feed;
pub mod protobuf;
mod reflector;
mod snapshot_file;
mod state;
mod status;
mod task;

use std::collections::HashSet;
use std::fmt::Debug;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Client;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::mcs::ServiceImportResource;
use super::programming::SliceStamps;
use super::publish::Publisher;
use crate::config::{KubernetesConfig, ListMode, PodMode};
use crate::metrics::process::StoreMetrics;
use crate::model::serviceimport::service_import;
use crate::model::{Cluster, Kind, Object, convert};
use crate::store::Store;

pub use self::connect::{ConnectError, connect};
use self::feed::Feed;
use self::reflector::Params;
pub use self::snapshot_file::{changes_path, read_snapshot, write_snapshot};
use self::state::{Change, WatchState};
pub use self::status::ApiStatus;
pub(crate) use self::task::Inquiry;
use self::task::WatchTask;

/// The kinds `config` needs watched: pods only for `pods verified` (`endpoint_pod_names`
/// reads the slices' targetRefs, not the pods), ServiceImports only for `multicluster`.
pub fn needed_kinds(config: &KubernetesConfig) -> Vec<Kind> {
    let mut needed = vec![Kind::Namespace, Kind::Service, Kind::EndpointSlice];
    if config.pods == PodMode::Verified {
        needed.push(Kind::Pod);
    }
    if !config.multicluster.is_empty() {
        needed.push(Kind::ServiceImport);
    }
    needed
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
    /// Questions for the watch task, once it runs.
    inquiries: Mutex<Option<mpsc::Sender<Inquiry>>>,
}

/// Questions waiting for the watch task at most; more are turned away.
const INQUIRIES: usize = 8;

/// How long a question waits for its answer (the task may be building a whole zone).
const INQUIRY_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a question about the watched objects got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InspectError {
    /// The watch has not started (it could not connect to the API server).
    NotStarted,
    /// Too many questions are waiting already.
    Busy,
    /// The watch stopped.
    Stopped,
    /// No answer within the timeout.
    TimedOut,
}

impl std::fmt::Display for InspectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::NotStarted => {
                "the API watch has not started (it could not connect to the API server): \
                 there are no objects to read"
            }
            Self::Busy => "the API watch is answering too many questions: try again",
            Self::Stopped => "the API watch has stopped",
            Self::TimedOut => {
                "the API watch did not answer within 5 s (it may be building a large zone): \
                 try again"
            }
        })
    }
}

impl std::error::Error for InspectError {}

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
    pub tracker: SliceStamps,
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
            inquiries: Mutex::new(None),
        }
    }

    /// `look` run on the watched objects (and whether they are a whole state), by the task
    /// that owns them, between two changes: no copy of the objects is made.
    pub async fn inspect<T, F>(&self, look: F) -> Result<T, InspectError>
    where
        T: Send + 'static,
        F: FnOnce(&Cluster, bool) -> T + Send + 'static,
    {
        let sender = self
            .inquiries
            .lock()
            .ok()
            .and_then(|inquiries| inquiries.clone())
            .ok_or(InspectError::NotStarted)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let inquiry: Inquiry = Box::new(move |cluster, complete| {
            let _ = tx.send(look(cluster, complete));
        });
        sender.try_send(inquiry).map_err(|error| match error {
            mpsc::error::TrySendError::Full(_) => InspectError::Busy,
            mpsc::error::TrySendError::Closed(_) => InspectError::Stopped,
        })?;
        match tokio::time::timeout(INQUIRY_TIMEOUT, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(InspectError::Stopped),
            Err(_) => Err(InspectError::TimedOut),
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
        let needed = needed_kinds(&self.config);
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
        let (inquiries, questions) = mpsc::channel(INQUIRIES);
        if let Ok(mut slot) = self.inquiries.lock() {
            *slot = Some(inquiries);
        }
        let feed = WatchTask {
            status: Arc::clone(&self.status),
            snapshot: self.config.snapshot.clone(),
        };
        tokio::spawn(feed.run(
            WatchState::new(needed, publisher),
            rx,
            questions,
            self.stop.clone(),
        ));
        Ok(())
    }
}

/// The namespaces a block serves, for filtering objects of the others out before they are
/// kept (`namespaces` with more than one name: the API has no server-side filter for that).
fn namespace_filter(config: &KubernetesConfig) -> Option<Arc<HashSet<String>>> {
    (config.namespaces.len() > 1).then(|| Arc::new(config.namespaces.iter().cloned().collect()))
}

/// The field selector of the pods watch.
const POD_PHASES: &str = "status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown";

/// Starts the watch of one resource, sending its changes to `tx`.
fn spawn_resource(
    client: &Client,
    config: &KubernetesConfig,
    resource: Kind,
    tx: mpsc::UnboundedSender<Change>,
    stop: CancellationToken,
) {
    let single_namespace = match config.namespaces.as_slice() {
        [one] => Some(one.as_str()),
        _ => None,
    };
    let filter = namespace_filter(config);
    let mut params = Params {
        streaming: config.api.list_mode == ListMode::Streaming,
        ..Params::default()
    };
    match resource {
        Kind::Namespace => {
            params.labels = config.namespace_labels.as_ref().map(ToString::to_string);
            if let Some(name) = single_namespace {
                params.fields = Some(format!("metadata.name={name}"));
            }
        }
        Kind::Service | Kind::EndpointSlice => {
            params.labels = config.labels.as_ref().map(ToString::to_string);
        }
        // `pods verified` names running and pending pods only: what has finished, or whose
        // node no longer reports it, is not sent (CoreDNS asks the same).
        Kind::Pod => params.fields = Some(POD_PHASES.to_owned()),
        Kind::ServiceImport => {}
    }
    let feed = Feed {
        params,
        resource,
        // Namespaces are cluster-scoped: watched whole, with the field selector above.
        namespace: single_namespace
            .filter(|_| resource != Kind::Namespace)
            .map(str::to_owned),
        namespaces: filter,
        tx,
        stop,
    };
    let client = client.clone();
    match resource {
        Kind::Namespace => tokio::spawn(feed.run(client, |ns: core::Namespace| {
            convert::namespace(&ns).map(Object::Namespace)
        })),
        Kind::Service => tokio::spawn(feed.run(client, |svc: core::Service| {
            convert::service(&svc).map(Object::Service)
        })),
        Kind::EndpointSlice => tokio::spawn(feed.run(client, |slice: EndpointSlice| {
            convert::endpoint_slice(&slice).map(Object::EndpointSlice)
        })),
        Kind::Pod => {
            tokio::spawn(feed.run(client, |pod: core::Pod| convert::pod(&pod).map(Object::Pod)))
        }
        Kind::ServiceImport => tokio::spawn(feed.run(client, |import: ServiceImportResource| {
            service_import(&import.0).map(Object::ServiceImport)
        })),
    };
}

#[cfg(test)]
mod tests;
