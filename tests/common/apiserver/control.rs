//! [`ApiServer`]'s control methods: starting and stopping, the objects, the history and the
//! watches, the faults, the request log, waiting, and a kubeconfig.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::tls::TlsFiles;
use super::{
    ApiServer, Control, Cut, Down, Failure, Kind, Request, Shared, State, WAIT_LIMIT, WatchInfo,
    WatchMsg, connection, key, tls,
};

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
        let accept = connection::listen(&shared, listener);
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
                connection::reset_connections(&self.shared);
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
            control.listener = Some(connection::listen(&self.shared, listener));
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
