//! The HTTP/1.1 side: accepting (plain or TLS), routing, list, get and the watch streams.

use std::convert::Infallible;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::task::AtomicWaker;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::selector::{FieldSelector, LabelSelector};
use super::status::{injected_status, status_body};
use super::watch::{bookmark_line, event_line, render};
use super::{Cut, Down, Filter, Kind, Request, Shared, Verb, WatchInfo, WatchMsg, WatchStart};

/// The watch timeout when the request names none (the real server picks 30–60 min).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

/// An open connection, as [`reset_connections`] needs it.
pub(super) struct Connection {
    /// A duplicate of the socket, to set `SO_LINGER` 0 on (so closing it sends RST).
    socket: Option<OwnedFd>,
    cancel: CancellationToken,
}

/// Starts accepting on `listener` (bound, listening) on the server's runtime.
pub(super) fn listen(
    shared: &Arc<Shared>,
    listener: std::net::TcpListener,
) -> tokio::task::JoinHandle<()> {
    listener.set_nonblocking(true).unwrap();
    let shared_for_loop = Arc::clone(shared);
    shared.handle.spawn(async move {
        let listener = TcpListener::from_std(listener).expect("apiserver listener");
        loop {
            match listener.accept().await {
                Ok((stream, _)) => spawn_connection(&shared_for_loop, stream),
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    })
}

/// Resets every open connection (RST).
pub(super) fn reset_connections(shared: &Shared) {
    let connections = shared.connections.lock().unwrap();
    for connection in connections.values() {
        if let Some(socket) = &connection.socket {
            let _ = socket2::SockRef::from(socket).set_linger(Some(Duration::ZERO));
        }
        connection.cancel.cancel();
    }
}

fn spawn_connection(shared: &Arc<Shared>, stream: TcpStream) {
    let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
    let cancel = CancellationToken::new();
    let socket = stream.as_fd().try_clone_to_owned().ok();
    shared.connections.lock().unwrap().insert(
        id,
        Connection {
            socket,
            cancel: cancel.clone(),
        },
    );
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let _registered = Registered {
            shared: Arc::clone(&shared),
            id,
        };
        tokio::select! {
            () = serve_connection(Arc::clone(&shared), stream) => {}
            () = cancel.cancelled() => {}
        }
    });
}

/// Removes a connection from the registry when its task ends (or is dropped).
struct Registered {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Ok(mut connections) = self.shared.connections.lock() {
            connections.remove(&self.id);
        }
    }
}

trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

async fn serve_connection(shared: Arc<Shared>, stream: TcpStream) {
    let inner: Box<dyn Io> = match &shared.tls {
        None => Box::new(stream),
        Some(config) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(config));
            match acceptor.accept(stream).await {
                Ok(stream) => Box::new(stream),
                Err(_) => return,
            }
        }
    };
    let flushes = Arc::new(Flushes::default());
    let io = FlushSignal {
        inner,
        flushes: Arc::clone(&flushes),
    };
    let service = service_fn(move |request| {
        let shared = Arc::clone(&shared);
        let flushes = Arc::clone(&flushes);
        async move { Ok::<_, Infallible>(respond(&shared, flushes, request).await) }
    });
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), service)
        .await;
}

/// Counts the flushes of a connection, so a watch cut in the middle of a line can wait
/// until the half line is out before it closes the connection.
#[derive(Default)]
struct Flushes {
    count: AtomicU64,
    waker: AtomicWaker,
}

struct FlushSignal {
    inner: Box<dyn Io>,
    flushes: Arc<Flushes>,
}

impl AsyncRead for FlushSignal {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for FlushSignal {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        if let Poll::Ready(Ok(())) = result {
            self.flushes.count.fetch_add(1, Ordering::SeqCst);
            self.flushes.waker.wake();
        }
        result
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

type ResponseBody = BoxBody<Bytes, io::Error>;

/// What a request gets.
enum Outcome {
    Json(u16, Value),
    Text(u16, &'static str),
    Watch(WatchBody),
}

impl Outcome {
    fn status(&self) -> u16 {
        match self {
            Self::Json(status, _) | Self::Text(status, _) => *status,
            Self::Watch(_) => 200,
        }
    }
}

async fn respond(
    shared: &Arc<Shared>,
    flushes: Arc<Flushes>,
    request: hyper::Request<Incoming>,
) -> Response<ResponseBody> {
    let target = Target::parse(request.uri().path());
    let query = parse_query(request.uri().query().unwrap_or(""));
    let watch = query
        .iter()
        .find(|(k, _)| k == "watch")
        .map(|(_, v)| parse_bool(v));
    let verb = match &target {
        Target::Collection { .. } if watch == Some(Some(true)) => Verb::Watch,
        Target::Collection { .. } => Verb::List,
        Target::Object { .. } => Verb::Get,
        _ => Verb::Other,
    };
    let (kind, namespace, name) = match &target {
        Target::Collection { kind, namespace } => (Some(*kind), namespace.clone(), None),
        Target::Object {
            kind,
            namespace,
            name,
        } => (Some(*kind), namespace.clone(), Some(name.clone())),
        _ => (None, None, None),
    };
    let mut record = Request {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
        query,
        verb,
        kind,
        namespace,
        name,
        authorization: request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        status: 0,
    };
    let (fault, latency, watch_limit) = {
        let mut control = shared.control.lock().unwrap();
        let fault = if control.down == Some(Down::Unavailable) {
            Some(injected_status(503, &record))
        } else if let Some(token) = &control.token
            && record.authorization.as_deref() != Some(&format!("Bearer {token}"))
        {
            Some(injected_status(401, &record))
        } else if let Some(failure) = control
            .failures
            .iter_mut()
            .find(|f| f.remaining > 0 && (f.matcher)(&record))
        {
            failure.remaining = failure.remaining.saturating_sub(1);
            Some(injected_status(failure.status, &record))
        } else {
            None
        };
        (fault, control.latency, control.watch_timeout)
    };
    let outcome = match fault {
        Some(status) => Outcome::Json(status["code"].as_u64().unwrap_or(500) as u16, status),
        None if watch == Some(None) => {
            let value = record.param("watch").unwrap_or("");
            Outcome::Json(400, bad(&format!("invalid value for watch: {value:?}")))
        }
        None => route(shared, &target, &record, watch_limit, flushes),
    };
    record.status = outcome.status();
    shared.control.lock().unwrap().requests.push(record);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match outcome {
        Outcome::Json(status, body) => {
            let mut response = Response::new(
                Full::new(Bytes::from(serde_json::to_vec(&body).unwrap()))
                    .map_err(|never| match never {})
                    .boxed(),
            );
            *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            if status == 429 {
                response
                    .headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            }
            response
        }
        Outcome::Text(status, text) => {
            let mut response = Response::new(
                Full::new(Bytes::from_static(text.as_bytes()))
                    .map_err(|never| match never {})
                    .boxed(),
            );
            *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            response
        }
        Outcome::Watch(body) => {
            let mut response = Response::new(body.boxed());
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
    }
}

/// What a path names.
enum Target {
    Version,
    Health,
    Collection {
        kind: Kind,
        namespace: Option<String>,
    },
    Object {
        kind: Kind,
        namespace: Option<String>,
        name: String,
    },
    Unknown,
}

impl Target {
    fn parse(path: &str) -> Self {
        match path {
            "/version" | "/version/" => return Self::Version,
            "/healthz" | "/livez" | "/readyz" => return Self::Health,
            _ => {}
        }
        let (group, rest) = if let Some(rest) = path.strip_prefix("/api/v1") {
            ("", rest)
        } else if let Some(rest) = path.strip_prefix("/apis/discovery.k8s.io/v1") {
            ("discovery.k8s.io", rest)
        } else if let Some(rest) = path.strip_prefix("/apis/multicluster.x-k8s.io/v1alpha1") {
            ("multicluster.x-k8s.io", rest)
        } else {
            return Self::Unknown;
        };
        if !(rest.is_empty() || rest.starts_with('/')) {
            return Self::Unknown;
        }
        let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
        let kind = |plural: &str, namespaced: bool| {
            Kind::ALL
                .into_iter()
                .find(|k| k.group() == group && k.plural() == plural)
                .filter(|k| k.namespaced() == namespaced || !namespaced)
        };
        match segments.as_slice() {
            [plural] => match kind(plural, false) {
                Some(kind) => Self::Collection {
                    kind,
                    namespace: None,
                },
                None => Self::Unknown,
            },
            [plural, name] => match kind(plural, false) {
                Some(kind) if !kind.namespaced() => Self::Object {
                    kind,
                    namespace: None,
                    name: (*name).to_owned(),
                },
                _ => Self::Unknown,
            },
            ["namespaces", namespace, plural] => match kind(plural, true) {
                Some(kind) => Self::Collection {
                    kind,
                    namespace: Some((*namespace).to_owned()),
                },
                None => Self::Unknown,
            },
            ["namespaces", namespace, plural, name] => match kind(plural, true) {
                Some(kind) => Self::Object {
                    kind,
                    namespace: Some((*namespace).to_owned()),
                    name: (*name).to_owned(),
                },
                None => Self::Unknown,
            },
            _ => Self::Unknown,
        }
    }
}

fn bad(message: &str) -> Value {
    status_body(400, "BadRequest", message, None)
}

fn route(
    shared: &Arc<Shared>,
    target: &Target,
    request: &Request,
    watch_limit: Option<Duration>,
    flushes: Arc<Flushes>,
) -> Outcome {
    if request.method != "GET" {
        return Outcome::Json(
            405,
            status_body(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                None,
            ),
        );
    }
    match target {
        Target::Version => Outcome::Json(
            200,
            json!({
                "major": "1",
                "minor": "34",
                "gitVersion": "v1.34.0",
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean",
                "buildDate": "2025-08-27T00:00:00Z",
                "goVersion": "go1.24.6",
                "compiler": "gc",
                "platform": "linux/amd64",
            }),
        ),
        Target::Health => Outcome::Text(200, "ok"),
        Target::Unknown => Outcome::Json(
            404,
            status_body(
                404,
                "NotFound",
                "the server could not find the requested resource",
                Some(json!({})),
            ),
        ),
        Target::Object {
            kind,
            namespace,
            name,
        } => get(shared, *kind, namespace.as_deref(), name),
        Target::Collection { kind, namespace } => {
            let filter = match filter(*kind, namespace.as_deref(), request) {
                Ok(filter) => filter,
                Err(message) => return Outcome::Json(400, bad(&message)),
            };
            if request.verb == Verb::Watch {
                watch(shared, *kind, filter, request, watch_limit, flushes)
            } else {
                match list(shared, *kind, &filter, request) {
                    Ok(list) => Outcome::Json(200, list),
                    Err((status, body)) => Outcome::Json(status, body),
                }
            }
        }
    }
}

fn filter(kind: Kind, namespace: Option<&str>, request: &Request) -> Result<Filter, String> {
    let labels = LabelSelector::parse(request.param("labelSelector").unwrap_or(""))?;
    let fields = FieldSelector::parse(kind, request.param("fieldSelector").unwrap_or(""))?;
    Ok(Filter {
        kind,
        namespace: namespace.map(str::to_owned),
        labels,
        fields,
    })
}

fn get(shared: &Shared, kind: Kind, namespace: Option<&str>, name: &str) -> Outcome {
    let state = shared.state.lock().unwrap();
    match state
        .objects
        .get(&super::key(kind, namespace.unwrap_or(""), name))
    {
        Some(object) => Outcome::Json(200, (**object).clone()),
        None => Outcome::Json(
            404,
            status_body(
                404,
                "NotFound",
                &format!("{} \"{name}\" not found", kind.plural()),
                Some(json!({"name": name, "group": kind.group(), "kind": kind.plural()})),
            ),
        ),
    }
}

/// A continue token: the snapshot's resourceVersion and the last key returned, hex-coded
/// (opaque to clients, as the real one is).
fn continue_token(rv: u64, namespace: &str, name: &str) -> String {
    format!("{rv}\n{namespace}\n{name}")
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn parse_continue(token: &str) -> Option<(u64, String, String)> {
    if !token.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2)?, 16).ok())
        .collect();
    let text = String::from_utf8(bytes?).ok()?;
    let mut parts = text.splitn(3, '\n');
    let rv = parts.next()?.parse().ok()?;
    Some((rv, parts.next()?.to_owned(), parts.next()?.to_owned()))
}

fn list(
    shared: &Shared,
    kind: Kind,
    filter: &Filter,
    request: &Request,
) -> Result<Value, (u16, Value)> {
    let state = shared.state.lock().unwrap();
    let limit = match request.param("limit").filter(|l| !l.is_empty()) {
        None => None,
        Some(limit) => match limit.parse::<i64>() {
            Ok(n) if n > 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Ok(_) => None,
            Err(_) => return Err((400, bad(&format!("invalid limit: {limit:?}")))),
        },
    };
    let version = request.param("resourceVersion").unwrap_or("");
    let version_match = request.param("resourceVersionMatch").unwrap_or("");
    let (rv, start) = match request.param("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            if !version.is_empty() && version != "0" {
                return Err((
                    400,
                    bad("specifying resource version is not allowed when using continue"),
                ));
            }
            let Some((rv, namespace, name)) = parse_continue(token) else {
                return Err((400, bad("continue key is not valid")));
            };
            if rv < state.base_rv {
                return Err((
                    410,
                    status_body(
                        410,
                        "Expired",
                        "The provided continue parameter is too old to display a consistent \
                         list result. You can start a new list without the continue parameter, \
                         or use the continue value from the response to get an inconsistent list.",
                        None,
                    ),
                ));
            }
            (rv, Some((kind, namespace, name)))
        }
        None => {
            if version.is_empty() {
                if !version_match.is_empty() {
                    return Err((
                        400,
                        bad("resourceVersionMatch is forbidden unless resourceVersion is provided"),
                    ));
                }
                (state.rv, None)
            } else {
                let Ok(asked) = version.parse::<u64>() else {
                    return Err((400, bad(&format!("invalid resource version: {version:?}"))));
                };
                match version_match {
                    "Exact" if asked == 0 => {
                        return Err((
                            400,
                            bad(
                                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                            ),
                        ));
                    }
                    "Exact" if asked < state.base_rv => {
                        return Err((
                            410,
                            status_body(
                                410,
                                "Expired",
                                &format!("too old resource version: {asked} ({})", state.base_rv),
                                None,
                            ),
                        ));
                    }
                    "Exact" | "NotOlderThan" | "" if asked > state.rv => {
                        return Err((
                            504,
                            status_body(
                                504,
                                "Timeout",
                                &format!(
                                    "Too large resource version: {asked}, current resource version: {}",
                                    state.rv
                                ),
                                None,
                            ),
                        ));
                    }
                    "Exact" => (asked, None),
                    "NotOlderThan" | "" => (state.rv, None),
                    other => {
                        return Err((
                            400,
                            bad(&format!("invalid resourceVersionMatch: {other:?}")),
                        ));
                    }
                }
            }
        }
    };
    let objects = state.objects_at(rv);
    // From the continue key on (or the kind's first key), as etcd ranges: a page costs its
    // own size, not the whole store's.
    let from = match &start {
        Some(start) => std::ops::Bound::Excluded(start.clone()),
        None => std::ops::Bound::Included((kind, String::new(), String::new())),
    };
    let in_kind = objects
        .range((from, std::ops::Bound::Unbounded))
        .take_while(|(key, _)| key.0 == kind);
    let mut matching = in_kind.filter(|(_, object)| filter.matches(object));
    let mut items = Vec::new();
    let mut last = None;
    for (key, object) in matching.by_ref() {
        let mut item = (**object).clone();
        if let Some(item) = item.as_object_mut() {
            // The real server leaves the type out of list items.
            item.remove("kind");
            item.remove("apiVersion");
        }
        items.push(item);
        last = Some(key);
        if limit.is_some_and(|limit| items.len() >= limit) {
            break;
        }
    }
    // Whether more follow, and (without selectors, as the real server says) how many; a
    // filter with nothing to evaluate is not evaluated for the count.
    let remaining = if !filter.labels.is_empty() || !filter.fields.is_empty() {
        usize::from(matching.next().is_some())
    } else if filter.namespace.is_none() {
        let from = last.map_or(std::ops::Bound::Unbounded, |key| {
            std::ops::Bound::Excluded(key.clone())
        });
        match from {
            std::ops::Bound::Unbounded => 0,
            from => objects
                .range((from, std::ops::Bound::Unbounded))
                .take_while(|(key, _)| key.0 == kind)
                .count(),
        }
    } else {
        matching.count()
    };
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if remaining > 0
        && let Some((_, namespace, name)) = last
    {
        metadata["continue"] = Value::String(continue_token(rv, namespace, name));
        if filter.labels.is_empty() && filter.fields.is_empty() {
            metadata["remainingItemCount"] = json!(remaining);
        }
    }
    Ok(json!({
        "kind": format!("{}List", kind.name()),
        "apiVersion": kind.api_version(),
        "metadata": metadata,
        "items": items,
    }))
}

fn watch(
    shared: &Arc<Shared>,
    kind: Kind,
    filter: Filter,
    request: &Request,
    limit: Option<Duration>,
    flushes: Arc<Flushes>,
) -> Outcome {
    let flag = |name: &str| request.param(name).map(parse_bool);
    let bookmarks = match flag("allowWatchBookmarks") {
        None => false,
        Some(Some(on)) => on,
        Some(None) => return Outcome::Json(400, bad("invalid value for allowWatchBookmarks")),
    };
    let send_initial = match flag("sendInitialEvents") {
        None => false,
        Some(Some(on)) => on,
        Some(None) => return Outcome::Json(400, bad("invalid value for sendInitialEvents")),
    };
    if send_initial && !bookmarks {
        return Outcome::Json(
            400,
            bad("sendInitialEvents is forbidden for watch unless allowWatchBookmarks=true"),
        );
    }
    let mut timeout = match request.param("timeoutSeconds").filter(|t| !t.is_empty()) {
        None => DEFAULT_WATCH_TIMEOUT,
        Some(text) => match text.parse::<u64>() {
            Ok(seconds) => Duration::from_secs(seconds),
            Err(_) => return Outcome::Json(400, bad(&format!("invalid timeoutSeconds: {text:?}"))),
        },
    };
    if let Some(limit) = limit {
        timeout = timeout.min(limit);
    }
    let info = WatchInfo {
        kind,
        namespace: filter.namespace.clone(),
        label_selector: request.param("labelSelector").map(str::to_owned),
        field_selector: request.param("fieldSelector").map(str::to_owned),
        resource_version: request.param("resourceVersion").unwrap_or("").to_owned(),
        bookmarks,
    };
    let start = match shared
        .state
        .lock()
        .unwrap()
        .start_watch(filter, info, send_initial, timeout)
    {
        Ok(start) => start,
        Err((status, body)) => return Outcome::Json(status, body),
    };
    let (tx, rx) = mpsc::unbounded_channel();
    shared
        .handle
        .spawn(run_watch(Arc::clone(shared), kind, start, tx));
    Outcome::Watch(WatchBody {
        rx,
        flushes,
        cut_after: None,
    })
}

/// What the watch task hands the response body.
enum BodyItem {
    Data(Bytes),
    /// Send this, then fail the body (closing the connection) once it is flushed.
    Cut(Bytes),
    /// Fail the body now.
    Abort,
}

/// Removes a watch from the registry when its task ends.
struct WatchGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        if let Ok(mut state) = self.shared.state.lock() {
            state.watches.remove(&self.id);
        }
    }
}

fn half(line: &Bytes) -> Bytes {
    line.slice(..line.len() / 2)
}

async fn run_watch(
    shared: Arc<Shared>,
    kind: Kind,
    mut watch: WatchStart,
    out: mpsc::UnboundedSender<BodyItem>,
) {
    let _guard = WatchGuard {
        shared: Arc::clone(&shared),
        id: watch.id,
    };
    drop(shared);
    for line in std::mem::take(&mut watch.initial) {
        if out.send(BodyItem::Data(line)).is_err() {
            return;
        }
    }
    if watch.finished {
        return;
    }
    let deadline = tokio::time::sleep(watch.timeout);
    tokio::pin!(deadline);
    let mut armed = false;
    loop {
        let message = tokio::select! {
            () = &mut deadline => {
                if watch.bookmarks {
                    let line = bookmark_line(kind, watch.last_rv, false);
                    let _ = out.send(BodyItem::Data(line));
                }
                return;
            }
            () = out.closed() => return,
            message = watch.rx.recv() => message,
        };
        let Some(message) = message else { return };
        let item = match message {
            WatchMsg::Change(change) => {
                watch.last_rv = watch.last_rv.max(change.rv);
                let Some(line) = render(&change, &watch.filter) else {
                    continue;
                };
                if armed {
                    let _ = out.send(BodyItem::Cut(half(&line)));
                    return;
                }
                BodyItem::Data(line)
            }
            WatchMsg::Bookmark(rv) => {
                watch.last_rv = watch.last_rv.max(rv);
                if !watch.bookmarks {
                    continue;
                }
                BodyItem::Data(bookmark_line(kind, rv, false))
            }
            WatchMsg::Gone => {
                let status = status_body(
                    410,
                    "Expired",
                    &format!(
                        "too old resource version: {} ({})",
                        watch.last_rv,
                        watch.last_rv + 1
                    ),
                    None,
                );
                let _ = out.send(BodyItem::Data(event_line("ERROR", &status)));
                return;
            }
            WatchMsg::Close(Cut::Clean) => return,
            WatchMsg::Close(Cut::Abort) => {
                let _ = out.send(BodyItem::Abort);
                return;
            }
            WatchMsg::Close(Cut::MidLine) => {
                let line = bookmark_line(kind, watch.last_rv, false);
                let _ = out.send(BodyItem::Cut(half(&line)));
                return;
            }
            WatchMsg::Close(Cut::NextEvent) => {
                armed = true;
                continue;
            }
        };
        if out.send(item).is_err() {
            return;
        }
    }
}

/// A watch response body: each line one chunk; ends cleanly when the watch task ends,
/// or fails (so hyper closes the connection without the last chunk).
struct WatchBody {
    rx: mpsc::UnboundedReceiver<BodyItem>,
    flushes: Arc<Flushes>,
    /// After a cut: fail once the flush count passes this.
    cut_after: Option<u64>,
}

impl Body for WatchBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        if let Some(after) = this.cut_after {
            this.flushes.waker.register(cx.waker());
            if this.flushes.count.load(Ordering::SeqCst) > after {
                return Poll::Ready(Some(Err(io::Error::other("watch cut by the test"))));
            }
            return Poll::Pending;
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(BodyItem::Data(data))) => Poll::Ready(Some(Ok(Frame::data(data)))),
            Poll::Ready(Some(BodyItem::Cut(data))) => {
                this.cut_after = Some(this.flushes.count.load(Ordering::SeqCst));
                Poll::Ready(Some(Ok(Frame::data(data))))
            }
            Poll::Ready(Some(BodyItem::Abort)) => {
                Poll::Ready(Some(Err(io::Error::other("watch aborted by the test"))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Go's `strconv.ParseBool`, as the server reads boolean parameters.
fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `a=b&c=d`, percent- and `+`-decoded.
fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                match text
                    .get(i + 1..i + 3)
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                {
                    Some(byte) => {
                        out.push(byte);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
