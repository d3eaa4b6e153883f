//! A Kubernetes API server stand-in that speaks the real list/watch protocol, for testing
//! the kube-rs watch without a cluster.
//!
//! It serves namespaces, services, pods and endpointslices (`/api/v1/...` and
//! `/apis/discovery.k8s.io/v1/...`, all namespaces or one) the way kube-apiserver does:
//!
//! - **list**: `{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":..,
//!   "continue":..},"items":[..]}`, items without `kind`/`apiVersion` (as the real server
//!   sends them), `limit`/`continue` paging over a consistent snapshot (a continue token
//!   whose snapshot was compacted away is `410 Expired`), `resourceVersion` with
//!   `resourceVersionMatch` (`NotOlderThan`, `Exact`), `labelSelector` and `fieldSelector`
//!   evaluated (see [`selector`]); a selector that does not parse is `400 BadRequest`.
//! - **watch** (`watch=true`): `200` with a chunked body, one JSON event per line and per
//!   chunk — `ADDED`/`MODIFIED`/`DELETED` with the full object, replayed from the history
//!   after the requested `resourceVersion` and then live; an object that stops (starts)
//!   matching the selectors is a `DELETED` (`ADDED`), as in the watch cache; `BOOKMARK`
//!   only with `allowWatchBookmarks=true`; `resourceVersion` `""`/`"0"` and
//!   `sendInitialEvents=true` start with synthetic `ADDED` events (the latter ending with
//!   the `k8s.io/initial-events-end` bookmark); the stream ends cleanly at
//!   `timeoutSeconds`; a `resourceVersion` older than the retained history is answered
//!   `200` with an `ERROR` event carrying a `410 Expired` Status, as the real server does.
//! - **get** of one object, `/version`, `/healthz` `/livez` `/readyz`.
//! - One global, increasing `resourceVersion` (etcd's revision) stamped into every object;
//!   `uid` and `creationTimestamp` added when missing and kept across updates; an update
//!   that changes nothing is a no-op, as in the real server.
//! - Errors are `v1` `Status` bodies with the real codes and reasons.
//!
//! It runs on its own thread and runtime, so every control method is a plain (blocking,
//! quick) call that works from `#[test]` and `#[tokio::test]` alike, and the server keeps
//! answering while a test blocks (on a child process, a DNS query...). Waiting helpers
//! come in a blocking and an `_async` flavour.
//!
//! ```ignore
//! let api = ApiServer::start();
//! api.apply_file(fixture("shop.json"));
//! let corefile = format!("cluster.local {{\n kubernetes {{\n endpoint {}\n }}\n}}", api.url());
//! // ... start clusterdns on it ...
//! api.wait_for_watches(3);                  // services, endpointslices, namespaces
//! api.delete(Kind::Service, "shop", "web"); // a DELETED event to the services watch
//! api.set_down(Down::Refuse);               // an outage; set_up() ends it
//! ```
//!
//! What kube's client does with it (kube 5, default `Config`), worth knowing when writing
//! tests on it: it retries `429`, `503` and `504` answers by itself (15 times, backoff from
//! 5 ms doubling, `Retry-After` honoured), so [`Down::Unavailable`] or an injected 503 look
//! to the watcher like a slow server, not an error; connection errors
//! ([`Down::Refuse`]), `500`, `401` and `403` reach the watcher at once. The watcher lists
//! with `limit=500` and no `resourceVersion` (most recent), then watches from the list's
//! resourceVersion with `allowWatchBookmarks=true&timeoutSeconds=290`; after a stream ends
//! or breaks it watches again from the last resourceVersion it saw (an event's or a
//! bookmark's); only a `410` makes it list again.
//!
//! The types are here; [`ApiServer`]'s control methods are in `control`, the objects and
//! their history in `store`, what a watch sees in `watch`, Status bodies in `status`; the
//! HTTP side: connections in `connection`, requests in `serve`, lists in `list`, watch
//! streams in `stream`.

mod connection;
mod control;
mod list;
pub mod selector;
mod serve;
mod status;
mod store;
mod stream;
mod tls;
mod watch;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use selector::{FieldSelector, LabelSelector};
use serde_json::Value;
pub use tls::TlsFiles;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// How long the waiting helpers wait before they give up and fail the test.
const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// A resource type the stand-in serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Namespace,
    Service,
    Pod,
    EndpointSlice,
    /// `multicluster.x-k8s.io/v1alpha1` ServiceImport (the MCS API's CRD).
    ServiceImport,
}

impl Kind {
    pub const ALL: [Self; 5] = [
        Self::Namespace,
        Self::Service,
        Self::Pod,
        Self::EndpointSlice,
        Self::ServiceImport,
    ];

    /// `Service`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Namespace => "Namespace",
            Self::Service => "Service",
            Self::Pod => "Pod",
            Self::EndpointSlice => "EndpointSlice",
            Self::ServiceImport => "ServiceImport",
        }
    }

    /// `services`: the resource in URLs.
    pub const fn plural(self) -> &'static str {
        match self {
            Self::Namespace => "namespaces",
            Self::Service => "services",
            Self::Pod => "pods",
            Self::EndpointSlice => "endpointslices",
            Self::ServiceImport => "serviceimports",
        }
    }

    /// The API group: `""` (core), `discovery.k8s.io` or `multicluster.x-k8s.io`.
    pub const fn group(self) -> &'static str {
        match self {
            Self::EndpointSlice => "discovery.k8s.io",
            Self::ServiceImport => "multicluster.x-k8s.io",
            _ => "",
        }
    }

    /// `v1`, `discovery.k8s.io/v1` or `multicluster.x-k8s.io/v1alpha1`.
    pub const fn api_version(self) -> &'static str {
        match self {
            Self::EndpointSlice => "discovery.k8s.io/v1",
            Self::ServiceImport => "multicluster.x-k8s.io/v1alpha1",
            _ => "v1",
        }
    }

    pub const fn namespaced(self) -> bool {
        !matches!(self, Self::Namespace)
    }

    /// The collection path: `/api/v1/services`, or `/api/v1/namespaces/NS/services`.
    pub fn path(self, namespace: Option<&str>) -> String {
        let prefix = match self {
            Self::EndpointSlice => "/apis/discovery.k8s.io/v1",
            Self::ServiceImport => "/apis/multicluster.x-k8s.io/v1alpha1",
            _ => "/api/v1",
        };
        match namespace {
            Some(ns) if self.namespaced() => format!("{prefix}/namespaces/{ns}/{}", self.plural()),
            _ => format!("{prefix}/{}", self.plural()),
        }
    }

    /// The kind of an object with this `apiVersion` and `kind`.
    pub fn from_type(api_version: &str, kind: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.api_version() == api_version && k.name() == kind)
    }
}

/// How [`ApiServer::drop_watches`] ends the open watch streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// End the response properly (the last chunk is sent), as at `timeoutSeconds`.
    Clean,
    /// Close the connection between two events, without the last chunk.
    Abort,
    /// Send the first half of a JSON line (a bookmark) and close the connection: the
    /// client reads a truncated line, then EOF inside the chunked body.
    MidLine,
    /// Arm each open watch: the next event it would send goes out half-written and the
    /// connection is closed, so that event is lost and must be replayed when the client
    /// resumes from the last resourceVersion it saw. Returns at once.
    NextEvent,
}

/// How [`ApiServer::set_down`] takes the server away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Down {
    /// Close the listening socket (new connections are refused) and reset every open
    /// connection (TCP RST). [`ApiServer::set_up`] binds the same port again.
    Refuse,
    /// Keep accepting, answer every request `503 ServiceUnavailable` (as a load balancer
    /// in front of a dead server does) and abort the open watches.
    Unavailable,
}

/// What a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    List,
    Watch,
    /// One object.
    Get,
    /// Anything else (`/version`, an unknown path).
    Other,
}

/// One request as the server received it (see [`ApiServer::requests`]).
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path as sent, e.g. `/api/v1/namespaces/shop/services`.
    pub path: String,
    /// The query parameters, decoded, in order.
    pub query: Vec<(String, String)>,
    pub verb: Verb,
    /// The resource, when the path names one of those served.
    pub kind: Option<Kind>,
    /// The namespace of a namespaced path.
    pub namespace: Option<String>,
    /// The object of a get.
    pub name: Option<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The status the server answered with (for a watch, that of the response headers).
    pub status: u16,
}

impl Request {
    /// The first value of a query parameter.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn is_watch(&self) -> bool {
        self.verb == Verb::Watch
    }

    pub fn is_list(&self) -> bool {
        self.verb == Verb::List
    }

    /// A list, or a watch that streams the state first (`sendInitialEvents=true`): a
    /// request for the whole state of a resource.
    pub fn reads_state(&self) -> bool {
        self.is_list() || (self.is_watch() && self.param("sendInitialEvents") == Some("true"))
    }
}

/// An open watch (see [`ApiServer::watches`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchInfo {
    pub kind: Kind,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    /// The `resourceVersion` it was started from.
    pub resource_version: String,
    pub bookmarks: bool,
}

/// A running stand-in; stops (closing every connection) when dropped.
pub struct ApiServer {
    shared: Arc<Shared>,
    tls: Option<TlsFiles>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

type Key = (Kind, String, String);

/// Everything the server threads and the control methods share.
struct Shared {
    addr: SocketAddr,
    handle: tokio::runtime::Handle,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    state: Mutex<State>,
    control: Mutex<Control>,
    connections: Mutex<HashMap<u64, connection::Connection>>,
    next_connection: AtomicU64,
}

/// The objects, their history and the open watches.
struct State {
    /// The last resourceVersion given out.
    rv: u64,
    objects: BTreeMap<Key, Arc<Value>>,
    /// The objects as they were at `base_rv`, the oldest revision still known.
    base: BTreeMap<Key, Arc<Value>>,
    base_rv: u64,
    /// Every change after `base_rv`, in order.
    log: Vec<Arc<Change>>,
    watches: HashMap<u64, WatchEntry>,
    next_watch: u64,
    next_uid: u64,
}

/// One write.
struct Change {
    rv: u64,
    key: Key,
    /// The object before, if it existed.
    old: Option<Arc<Value>>,
    /// The object as stored; for a deletion, its last state stamped with the deletion's
    /// resourceVersion.
    object: Arc<Value>,
    deleted: bool,
}

struct WatchEntry {
    info: WatchInfo,
    tx: UnboundedSender<WatchMsg>,
}

enum WatchMsg {
    Change(Arc<Change>),
    Bookmark(u64),
    Gone,
    Close(Cut),
}

/// The faults and the request log.
struct Control {
    token: Option<String>,
    failures: Vec<Failure>,
    latency: Duration,
    down: Option<Down>,
    watch_timeout: Option<Duration>,
    requests: Vec<Request>,
    /// The accept loop, while up.
    listener: Option<tokio::task::JoinHandle<()>>,
}

type Matcher = Box<dyn Fn(&Request) -> bool + Send + Sync>;

struct Failure {
    matcher: Matcher,
    status: u16,
    remaining: usize,
}

fn key(kind: Kind, namespace: &str, name: &str) -> Key {
    let namespace = if kind.namespaced() { namespace } else { "" };
    (kind, namespace.to_owned(), name.to_owned())
}

/// Which objects a list or watch selects.
struct Filter {
    kind: Kind,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

/// Builds the initial lines of a watch and registers it, or says why it cannot start.
struct WatchStart {
    id: u64,
    filter: Filter,
    bookmarks: bool,
    initial: Vec<Bytes>,
    /// End after the initial lines (an expired resourceVersion).
    finished: bool,
    last_rv: u64,
    timeout: Duration,
    rx: UnboundedReceiver<WatchMsg>,
}
