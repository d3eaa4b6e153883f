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

pub mod selector;
mod serve;
mod tls;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use selector::{FieldSelector, LabelSelector};
pub use tls::TlsFiles;

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
    connections: Mutex<HashMap<u64, serve::Connection>>,
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

impl ApiServer {
    /// Starts a plain-HTTP server on `127.0.0.1:0`, with no objects.
    pub fn start() -> Self {
        Self::launch(None)
    }

    /// Starts an HTTPS server on `127.0.0.1:0` with a CA made for it, a server certificate
    /// for `127.0.0.1` and `localhost`, and a required client certificate (signed by the
    /// same CA): the files the `tls CERT KEY CACERT` option takes are in
    /// [`tls_files`](Self::tls_files).
    pub fn start_tls() -> Self {
        let (files, config) = tls::generate();
        Self::launch(Some((files, config)))
    }

    fn launch(tls: Option<(TlsFiles, tokio_rustls::rustls::ServerConfig)>) -> Self {
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("apiserver".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("apiserver runtime");
                handle_tx.send(runtime.handle().clone()).unwrap();
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .expect("apiserver thread");
        let handle = handle_rx.recv().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let (files, config) = tls.map_or((None, None), |(f, c)| (Some(f), Some(Arc::new(c))));
        let shared = Arc::new(Shared {
            addr,
            handle,
            tls: config,
            state: Mutex::new(State {
                rv: 1,
                objects: BTreeMap::new(),
                base: BTreeMap::new(),
                base_rv: 1,
                log: Vec::new(),
                watches: HashMap::new(),
                next_watch: 1,
                next_uid: 1,
            }),
            control: Mutex::new(Control {
                token: None,
                failures: Vec::new(),
                latency: Duration::ZERO,
                down: None,
                watch_timeout: None,
                requests: Vec::new(),
                listener: None,
            }),
            connections: Mutex::new(HashMap::new()),
            next_connection: AtomicU64::new(1),
        });
        let accept = serve::listen(&shared, listener);
        shared.control.lock().unwrap().listener = Some(accept);
        Self {
            shared,
            tls: files,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT` (`https://` from [`start_tls`](Self::start_tls)).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.shared.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// The certificate files of a TLS server.
    pub fn tls_files(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    // ---- objects -------------------------------------------------------------------------

    /// Creates or replaces an object (by kind, namespace and name): an `ADDED` or
    /// `MODIFIED` event to the watches it matches. A namespaced object without a namespace
    /// goes to `default`. Returns the resourceVersion it got (the current one when the
    /// object did not change). Panics on an object of another kind or without a name.
    pub fn apply(&self, object: Value) -> u64 {
        let mut state = self.shared.state.lock().unwrap();
        state
            .apply(object)
            .unwrap_or_else(|e| panic!("ApiServer::apply: {e}"))
    }

    /// Applies every item of a List (`kubectl get -o json`), in order. Returns the last
    /// resourceVersion.
    pub fn apply_all(&self, list: Value) -> u64 {
        let Some(items) = list.get("items").and_then(Value::as_array) else {
            panic!("ApiServer::apply_all: not a List (no \"items\" array)");
        };
        let mut state = self.shared.state.lock().unwrap();
        for (i, item) in items.iter().enumerate() {
            if let Err(e) = state.apply(item.clone()) {
                panic!("ApiServer::apply_all: items[{i}]: {e}");
            }
        }
        state.rv
    }

    /// Applies a JSON file: a List's items, or one object.
    pub fn apply_file(&self, path: impl AsRef<Path>) -> u64 {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("ApiServer::apply_file: {}: {e}", path.display()));
        let value: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("ApiServer::apply_file: {}: {e}", path.display()));
        if value.get("items").is_some_and(Value::is_array) {
            self.apply_all(value)
        } else {
            self.apply(value)
        }
    }

    /// Deletes an object: a `DELETED` event (its last state, at a new resourceVersion) to
    /// the watches it matched. `namespace` is ignored for namespaces. Returns the
    /// deletion's resourceVersion. Panics when there is no such object. (Deleting a
    /// namespace does not delete what is in it.)
    pub fn delete(&self, kind: Kind, namespace: &str, name: &str) -> u64 {
        let mut state = self.shared.state.lock().unwrap();
        state
            .delete(kind, namespace, name)
            .unwrap_or_else(|e| panic!("ApiServer::delete: {e}"))
    }

    /// An object as stored (with `kind`, `apiVersion` and its resourceVersion).
    pub fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<Value> {
        let state = self.shared.state.lock().unwrap();
        state
            .objects
            .get(&key(kind, namespace, name))
            .map(|o| (**o).clone())
    }

    /// Every stored object of a kind, sorted by namespace and name.
    pub fn objects(&self, kind: Kind) -> Vec<Value> {
        let state = self.shared.state.lock().unwrap();
        state
            .objects
            .iter()
            .filter(|(k, _)| k.0 == kind)
            .map(|(_, o)| (**o).clone())
            .collect()
    }

    /// The current (last given out) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.state.lock().unwrap().rv
    }

    // ---- history and watches -------------------------------------------------------------

    /// Forgets the history (etcd compaction): a watch or a continue token from an older
    /// resourceVersion than the current one gets `410 Expired`. Open watches go on.
    pub fn compact(&self) {
        let mut state = self.shared.state.lock().unwrap();
        state.base = state.objects.clone();
        state.base_rv = state.rv;
        state.log.clear();
    }

    /// Sends every open watch an `ERROR` event with a `410 Expired` Status and ends it,
    /// as the real server does when a watcher falls too far behind. Returns once they are
    /// closed.
    pub fn send_gone(&self) {
        self.close_watches(|| WatchMsg::Gone);
    }

    /// Sends every open watch that asked for bookmarks a `BOOKMARK` at the current
    /// resourceVersion.
    pub fn bookmark(&self) {
        let state = self.shared.state.lock().unwrap();
        for watch in state.watches.values() {
            let _ = watch.tx.send(WatchMsg::Bookmark(state.rv));
        }
    }

    /// Ends every open watch stream (see [`Cut`]). Returns once they are closed (at once
    /// for [`Cut::NextEvent`]).
    pub fn drop_watches(&self, cut: Cut) {
        if cut == Cut::NextEvent {
            let state = self.shared.state.lock().unwrap();
            for watch in state.watches.values() {
                let _ = watch.tx.send(WatchMsg::Close(cut));
            }
        } else {
            self.close_watches(|| WatchMsg::Close(cut));
        }
    }

    /// Ends watches after at most this long, whatever `timeoutSeconds` asked (the real
    /// server's default is a random 30–60 minutes). `None`: as asked.
    pub fn set_watch_timeout(&self, limit: Option<Duration>) {
        self.shared.control.lock().unwrap().watch_timeout = limit;
    }

    fn close_watches(&self, message: impl Fn() -> WatchMsg) {
        let ids: Vec<u64> = {
            let state = self.shared.state.lock().unwrap();
            for watch in state.watches.values() {
                let _ = watch.tx.send(message());
            }
            state.watches.keys().copied().collect()
        };
        self.wait_for("the watches to close", |server| {
            let state = server.shared.state.lock().unwrap();
            ids.iter().all(|id| !state.watches.contains_key(id))
        });
    }

    // ---- faults --------------------------------------------------------------------------

    /// Requires `Authorization: Bearer TOKEN` on every request (`401 Unauthorized`
    /// otherwise); `None` lets everyone in.
    pub fn require_token(&self, token: Option<&str>) {
        self.shared.control.lock().unwrap().token = token.map(str::to_owned);
    }

    /// Answers the next `count` requests that `matcher` selects with `status` and the
    /// Status body the real server sends for it (403 names the resource and verb like
    /// RBAC does; 429 adds `Retry-After: 1`). `usize::MAX`: until
    /// [`clear_failures`](Self::clear_failures). The matcher runs under the server's
    /// lock: it must not call the server. Checked after the token.
    ///
    /// ```ignore
    /// server.fail_requests(|r| r.is_watch() && r.kind == Some(Kind::Service), 500, 2);
    /// ```
    pub fn fail_requests(
        &self,
        matcher: impl Fn(&Request) -> bool + Send + Sync + 'static,
        status: u16,
        count: usize,
    ) {
        self.shared.control.lock().unwrap().failures.push(Failure {
            matcher: Box::new(matcher),
            status,
            remaining: count,
        });
    }

    pub fn clear_failures(&self) {
        self.shared.control.lock().unwrap().failures.clear();
    }

    /// Delays the response headers of every request by this long (a watch's events are
    /// held meanwhile, not lost).
    pub fn set_latency(&self, latency: Duration) {
        self.shared.control.lock().unwrap().latency = latency;
    }

    /// Takes the server away (see [`Down`]); returns once the listener is closed and the
    /// connections are reset (`Refuse`) or the watches aborted (`Unavailable`).
    pub fn set_down(&self, down: Down) {
        self.set_up();
        self.shared.control.lock().unwrap().down = Some(down);
        match down {
            Down::Refuse => {
                let listener = self.shared.control.lock().unwrap().listener.take();
                if let Some(listener) = listener {
                    listener.abort();
                    self.wait_for("the listener to close", |_| listener.is_finished());
                }
                serve::reset_connections(&self.shared);
                self.wait_for("the connections to close", |server| {
                    server.shared.connections.lock().unwrap().is_empty()
                });
            }
            Down::Unavailable => self.drop_watches(Cut::Abort),
        }
    }

    /// Brings the server back: binds the same port again after [`Down::Refuse`].
    pub fn set_up(&self) {
        let mut control = self.shared.control.lock().unwrap();
        if control.down.take() == Some(Down::Refuse) {
            let listener = std::net::TcpListener::bind(self.shared.addr).unwrap_or_else(|e| {
                panic!("ApiServer::set_up: bind {} again: {e}", self.shared.addr)
            });
            control.listener = Some(serve::listen(&self.shared, listener));
        }
    }

    // ---- observation ---------------------------------------------------------------------

    /// Every request so far, in the order they arrived.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.control.lock().unwrap().requests.clone()
    }

    pub fn clear_requests(&self) {
        self.shared.control.lock().unwrap().requests.clear();
    }

    /// How many watch streams are open now.
    pub fn open_watches(&self) -> usize {
        self.shared.state.lock().unwrap().watches.len()
    }

    /// The open watch streams, oldest first.
    pub fn watches(&self) -> Vec<WatchInfo> {
        let state = self.shared.state.lock().unwrap();
        let mut watches: Vec<_> = state.watches.iter().collect();
        watches.sort_by_key(|(id, _)| **id);
        watches.into_iter().map(|(_, w)| w.info.clone()).collect()
    }

    /// Blocks until `cond` holds, asking every 10 ms; fails the test after 30 s, naming
    /// `what` and showing the open watches and the last requests.
    pub fn wait_for(&self, what: &str, cond: impl Fn(&Self) -> bool) {
        let start = Instant::now();
        while !cond(self) {
            assert!(start.elapsed() < WAIT_LIMIT, "{}", self.gave_up(what));
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// [`wait_for`](Self::wait_for) without blocking the test's runtime.
    pub async fn wait_for_async(&self, what: &str, cond: impl Fn(&Self) -> bool) {
        let start = Instant::now();
        while !cond(self) {
            assert!(start.elapsed() < WAIT_LIMIT, "{}", self.gave_up(what));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Blocks until at least `n` watches are open.
    pub fn wait_for_watches(&self, n: usize) {
        self.wait_for(&format!("{n} open watches"), |s| s.open_watches() >= n);
    }

    /// Waits until at least `n` watches are open, without blocking the runtime.
    pub async fn wait_for_watches_async(&self, n: usize) {
        self.wait_for_async(&format!("{n} open watches"), |s| s.open_watches() >= n)
            .await;
    }

    fn gave_up(&self, what: &str) -> String {
        let mut text = format!("timed out waiting for {what}\nopen watches:\n");
        for watch in self.watches() {
            let _ = writeln!(text, "  {watch:?}");
        }
        text.push_str("last requests:\n");
        let requests = self.requests();
        for r in &requests[requests.len().saturating_sub(20)..] {
            let query: Vec<String> = r.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(
                text,
                "  {} {}?{} -> {}",
                r.method,
                r.path,
                query.join("&"),
                r.status
            );
        }
        text
    }

    // ---- configuration -------------------------------------------------------------------

    /// Writes `DIR/kubeconfig` (YAML) with one context per `(name, token)`, each pointing at
    /// this server with its own user and bearer token (`None`: no token), the first one
    /// current. A TLS server's contexts carry the CA and the client certificate and key
    /// (as file paths). Returns the file's path.
    pub fn kubeconfig(&self, dir: &Path, contexts: &[(&str, Option<&str>)]) -> PathBuf {
        assert!(!contexts.is_empty(), "a kubeconfig needs a context");
        let q = |s: &str| serde_json::to_string(s).unwrap();
        let mut text = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
        let _ = writeln!(
            text,
            "- name: stand-in\n  cluster:\n    server: {}",
            q(&self.url())
        );
        if let Some(tls) = &self.tls {
            let _ = writeln!(
                text,
                "    certificate-authority: {}",
                q(&tls.ca.display().to_string())
            );
        }
        text.push_str("users:\n");
        for (name, token) in contexts {
            let _ = writeln!(text, "- name: {}\n  user:", q(name));
            let mut empty = true;
            if let Some(token) = token {
                let _ = writeln!(text, "    token: {}", q(token));
                empty = false;
            }
            if let Some(tls) = &self.tls {
                let _ = writeln!(
                    text,
                    "    client-certificate: {}",
                    q(&tls.cert.display().to_string())
                );
                let _ = writeln!(
                    text,
                    "    client-key: {}",
                    q(&tls.key.display().to_string())
                );
                empty = false;
            }
            if empty {
                text.truncate(text.len() - 1);
                text.push_str(" {}\n");
            }
        }
        text.push_str("contexts:\n");
        for (name, _) in contexts {
            let _ = writeln!(
                text,
                "- name: {0}\n  context:\n    cluster: stand-in\n    user: {0}",
                q(name)
            );
        }
        let _ = writeln!(text, "current-context: {}", q(contexts[0].0));
        let path = dir.join("kubeconfig");
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn key(kind: Kind, namespace: &str, name: &str) -> Key {
    let namespace = if kind.namespaced() { namespace } else { "" };
    (kind, namespace.to_owned(), name.to_owned())
}

impl State {
    fn apply(&mut self, mut object: Value) -> Result<u64, String> {
        let text = |field: &str| {
            object
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let (api_version, kind_name) = (text("apiVersion"), text("kind"));
        let Some(kind) = Kind::from_type(&api_version, &kind_name) else {
            return Err(format!(
                "unsupported object apiVersion {api_version:?} kind {kind_name:?} (serves: \
                 v1 Namespace, Service, Pod; discovery.k8s.io/v1 EndpointSlice)"
            ));
        };
        let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Err(format!("{kind_name} without metadata"));
        };
        let name = match metadata.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => return Err(format!("{kind_name} without metadata.name")),
        };
        let namespace = if kind.namespaced() {
            let ns = metadata
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|ns| !ns.is_empty())
                .unwrap_or("default")
                .to_owned();
            metadata.insert("namespace".to_owned(), Value::String(ns.clone()));
            ns
        } else {
            metadata.remove("namespace");
            String::new()
        };
        let key = (kind, namespace, name);
        let old = self.objects.get(&key).cloned();
        for field in ["uid", "creationTimestamp"] {
            if metadata.get(field).is_none_or(Value::is_null) {
                let value = match old.as_ref().and_then(|o| o["metadata"].get(field)) {
                    Some(value) => value.clone(),
                    None if field == "uid" => {
                        self.next_uid += 1;
                        Value::String(format!("00000000-0000-4000-8000-{:012x}", self.next_uid))
                    }
                    None => Value::String(
                        jiff::Timestamp::now()
                            .strftime("%Y-%m-%dT%H:%M:%SZ")
                            .to_string(),
                    ),
                };
                metadata.insert(field.to_owned(), value);
            }
        }
        if let Some(old) = &old
            && same_but_version(old, &object)
        {
            return Ok(self.rv);
        }
        self.rv += 1;
        set_version(&mut object, self.rv);
        let object = Arc::new(object);
        self.objects.insert(key.clone(), Arc::clone(&object));
        self.record(Change {
            rv: self.rv,
            key,
            old,
            object,
            deleted: false,
        });
        Ok(self.rv)
    }

    fn delete(&mut self, kind: Kind, namespace: &str, name: &str) -> Result<u64, String> {
        let key = key(kind, namespace, name);
        let Some(old) = self.objects.remove(&key) else {
            return Err(format!(
                "no {} {:?} in namespace {namespace:?}",
                kind.name(),
                name
            ));
        };
        self.rv += 1;
        let mut last = (*old).clone();
        set_version(&mut last, self.rv);
        self.record(Change {
            rv: self.rv,
            key,
            old: Some(old),
            object: Arc::new(last),
            deleted: true,
        });
        Ok(self.rv)
    }

    fn record(&mut self, change: Change) {
        let change = Arc::new(change);
        self.log.push(Arc::clone(&change));
        self.watches.retain(|_, watch| {
            watch.info.kind != change.key.0
                || watch.tx.send(WatchMsg::Change(Arc::clone(&change))).is_ok()
        });
    }

    /// The objects as they were at `rv` (`base_rv <= rv <= self.rv`).
    fn objects_at(&self, rv: u64) -> std::borrow::Cow<'_, BTreeMap<Key, Arc<Value>>> {
        if rv >= self.rv {
            return std::borrow::Cow::Borrowed(&self.objects);
        }
        let mut objects = self.base.clone();
        for change in self.log.iter().take_while(|c| c.rv <= rv) {
            if change.deleted {
                objects.remove(&change.key);
            } else {
                objects.insert(change.key.clone(), Arc::clone(&change.object));
            }
        }
        std::borrow::Cow::Owned(objects)
    }
}

fn set_version(object: &mut Value, rv: u64) {
    object["metadata"]["resourceVersion"] = Value::String(rv.to_string());
}

fn same_but_version(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        v
    };
    strip(a) == strip(b)
}

/// Which objects a list or watch selects.
struct Filter {
    kind: Kind,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn matches(&self, object: &Value) -> bool {
        if let Some(ns) = &self.namespace {
            let object_ns = object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str);
            if object_ns != Some(ns.as_str()) {
                return false;
            }
        }
        self.labels.matches(object) && self.fields.matches(self.kind, object)
    }
}

/// One watch event line: `{"type":..,"object":..}` and a newline.
fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = format!("{{\"type\":\"{kind}\",\"object\":");
    line.push_str(&serde_json::to_string(object).unwrap());
    line.push_str("}\n");
    Bytes::from(line)
}

fn bookmark_line(kind: Kind, rv: u64, initial_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    event_line(
        "BOOKMARK",
        &json!({"kind": kind.name(), "apiVersion": kind.api_version(), "metadata": metadata}),
    )
}

/// What a watch with `filter` sees of a change: the watch cache's rules (an object that
/// stops matching is deleted for this watch, one that starts matching is added).
fn render(change: &Change, filter: &Filter) -> Option<Bytes> {
    let was = change.old.as_deref().is_some_and(|old| filter.matches(old));
    if change.deleted {
        return was.then(|| event_line("DELETED", &change.object));
    }
    match (was, filter.matches(&change.object)) {
        (true, true) => Some(event_line("MODIFIED", &change.object)),
        (false, true) => Some(event_line("ADDED", &change.object)),
        (true, false) => {
            let mut gone = change.old.as_deref().cloned().unwrap_or_default();
            set_version(&mut gone, change.rv);
            Some(event_line("DELETED", &gone))
        }
        (false, false) => None,
    }
}

/// A `v1` Status body.
fn status_body(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let Some(details) = details {
        status["details"] = details;
    }
    status
}

/// The Status the real server answers `code` with, for an injected failure.
fn injected_status(code: u16, request: &Request) -> Value {
    let resource = request.kind.map_or("", Kind::plural);
    let (reason, message) = match code {
        400 => ("BadRequest", "the request is invalid".to_owned()),
        401 => ("Unauthorized", "Unauthorized".to_owned()),
        403 => {
            let verb = match request.verb {
                Verb::List => "list",
                Verb::Watch => "watch",
                Verb::Get => "get",
                Verb::Other => "get",
            };
            let group = request.kind.map_or("", Kind::group);
            let scope = match &request.namespace {
                Some(ns) => format!("in the namespace \"{ns}\""),
                None => "at the cluster scope".to_owned(),
            };
            (
                "Forbidden",
                format!(
                    "{resource} is forbidden: User \"system:serviceaccount:kube-system:coredns\" \
                     cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}"
                ),
            )
        }
        404 => (
            "NotFound",
            "the server could not find the requested resource".to_owned(),
        ),
        409 => ("Conflict", "the object has been modified".to_owned()),
        410 => (
            "Expired",
            "The resourceVersion for the provided list is too old.".to_owned(),
        ),
        429 => (
            "TooManyRequests",
            "Too many requests, please try again later.".to_owned(),
        ),
        500 => (
            "InternalError",
            "Internal error occurred: injected failure".to_owned(),
        ),
        503 => (
            "ServiceUnavailable",
            "the server is currently unable to handle the request".to_owned(),
        ),
        504 => (
            "Timeout",
            "Timeout: request did not complete within the allotted timeout".to_owned(),
        ),
        _ => ("", format!("injected failure {code}")),
    };
    status_body(code, reason, &message, None)
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

impl State {
    fn start_watch(
        &mut self,
        filter: Filter,
        info: WatchInfo,
        send_initial: bool,
        timeout: Duration,
    ) -> Result<WatchStart, (u16, Value)> {
        let (tx, rx) = unbounded_channel();
        let mut start = WatchStart {
            id: 0,
            bookmarks: info.bookmarks,
            initial: Vec::new(),
            finished: false,
            last_rv: self.rv,
            timeout,
            rx,
            filter,
        };
        let rv = info.resource_version.as_str();
        if send_initial || rv.is_empty() || rv == "0" {
            for (key, object) in &self.objects {
                if key.0 == info.kind && start.filter.matches(object) {
                    start.initial.push(event_line("ADDED", object));
                }
            }
            if send_initial {
                start.initial.push(bookmark_line(info.kind, self.rv, true));
            }
        } else {
            let Ok(from) = rv.parse::<u64>() else {
                return Err(bad_request(&format!("invalid resource version: {rv:?}")));
            };
            if from < self.base_rv {
                let status = status_body(
                    410,
                    "Expired",
                    &format!("too old resource version: {from} ({})", self.base_rv),
                    None,
                );
                start.initial.push(event_line("ERROR", &status));
                start.finished = true;
                return Ok(start);
            }
            for change in self.log.iter().filter(|c| c.rv > from) {
                if change.key.0 == info.kind
                    && let Some(line) = render(change, &start.filter)
                {
                    start.initial.push(line);
                }
            }
        }
        start.id = self.next_watch;
        self.next_watch += 1;
        self.watches.insert(start.id, WatchEntry { info, tx });
        Ok(start)
    }
}

fn bad_request(message: &str) -> (u16, Value) {
    (400, status_body(400, "BadRequest", message, None))
}
