//! The HTTP endpoints of the *health*, *ready* and *prometheus* plugins: `/health`,
//! `/ready` and `/metrics`, over HTTP/1.1.
//!
//! Each listen address serves the routes configured on it (health and ready may share a
//! port); any other path is 404. The answers are CoreDNS's:
//!
//! - `/health`: `200 OK`, always, until the process stops (*health*: "we're always
//!   healthy"); a probe of it once a second feeds `coredns_health_request_duration_seconds`;
//! - `/ready`: `200 OK` once every plugin that reports readiness is ready (latched with
//!   `monitor until-ready`, asked every time with `continuously`), else `503` and the names
//!   of those that are not, comma-separated and sorted (`kubernetes`); from lameduck on,
//!   `503 Shutting down`;
//! - `/metrics`: the [`Registry`]'s text exposition;
//! - `/debug/...` on the metrics listener: the pages the server provides ([`debug`]).
//!
//! Unlike CoreDNS, a configuration reload does not close and reopen these listeners: the
//! server hands the new readiness check to [`Readiness::set`] and the new addresses to
//! [`Endpoints::apply`], which keeps every listener whose address did not change — so
//! `/ready` never blinks on a reload (coredns/coredns#5471), and keep-alive connections see
//! the current state (coredns/coredns#4099).

pub mod debug;
mod lifecycle;
mod probe;
mod readiness;

pub use debug::{DebugPages, Page, PageFuture};
pub use lifecycle::Lifecycle;
pub use readiness::{Monitor, Readiness, ReadinessCheck, ReadinessNotes};

use std::convert::Infallible;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener as StdListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::metrics::{self, HealthMetrics, Registry};

/// A request may take this long to send its headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection is closed (gracefully) after this long, however busy.
const MAX_CONNECTION_AGE: Duration = Duration::from_secs(300);
/// How long a stopping listener waits for its connections to finish their request.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at once per listener; more are closed at once.
const MAX_CONNECTIONS: usize = 256;

/// One of the endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `/health` (*health*, default `:8080`).
    Health,
    /// `/ready` (*ready*, default `:8181`).
    Ready,
    /// `/metrics` (*prometheus*, default `localhost:9153`).
    Metrics,
}

impl Route {
    /// Every route, in the order messages name them.
    pub const ALL: [Self; 3] = [Self::Health, Self::Ready, Self::Metrics];

    /// The plugin's name: `health`, `ready`, `metrics`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Health => "health",
            Self::Ready => "ready",
            Self::Metrics => "metrics",
        }
    }

    /// The path it serves.
    pub const fn path(self) -> &'static str {
        match self {
            Self::Health => "/health",
            Self::Ready => "/ready",
            Self::Metrics => "/metrics",
        }
    }

    const fn bit(self) -> u8 {
        match self {
            Self::Health => 1,
            Self::Ready => 2,
            Self::Metrics => 4,
        }
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of routes served on one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Routes(u8);

impl Routes {
    /// Whether `route` is in the set.
    pub const fn contains(self, route: Route) -> bool {
        self.0 & route.bit() != 0
    }

    /// The set with `route` added.
    pub const fn with(self, route: Route) -> Self {
        Self(self.0 | route.bit())
    }

    /// The routes in the set, in [`Route::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Route> {
        Route::ALL
            .into_iter()
            .filter(move |route| self.contains(*route))
    }
}

impl fmt::Display for Routes {
    /// `health`, `health and ready`, `health, ready and metrics`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Route::name).collect();
        match names.as_slice() {
            [] => f.write_str("nothing"),
            [one] => f.write_str(one),
            [init @ .., last] => write!(f, "{} and {last}", init.join(", ")),
        }
    }
}

/// What the endpoints answer from; shared with the server, which keeps it across reloads.
#[derive(Debug, Clone)]
pub struct Shared {
    /// What `/metrics` renders.
    pub registry: Registry,
    /// What `/ready` asks.
    pub readiness: Arc<Readiness>,
    /// Lameduck and stop.
    pub lifecycle: Arc<Lifecycle>,
    /// Where the `/health` self-probe records.
    pub health: Arc<HealthMetrics>,
    /// The `/debug/` pages of the metrics listener, when the server provides them.
    pub debug: Option<Arc<dyn DebugPages>>,
}

/// One listening address.
struct Listener {
    /// The address asked for (what [`Endpoints::apply`] compares).
    requested: SocketAddr,
    /// The address bound (its port differs when 0 was asked for).
    bound: SocketAddr,
    routes: Arc<AtomicU8>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// The running HTTP listeners.
///
/// Must be started inside a tokio runtime; [`Lifecycle::stop`] closes every listener, and
/// [`Endpoints::join`] waits for them.
pub struct Endpoints {
    shared: Shared,
    listeners: Vec<Listener>,
    probe_target: Arc<ArcSwapOption<SocketAddr>>,
    probe: Option<JoinHandle<()>>,
}

impl fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoints")
            .field("listeners", &self.addresses())
            .finish()
    }
}

impl Endpoints {
    /// Binds every address of `spec` (routes on the same address share one listener) and
    /// serves them, with the `/health` self-probe if a health route is configured.
    ///
    /// Fails with the first address that cannot be bound, e.g. `cannot listen for health
    /// on 0.0.0.0:8080: address in use` (the error keeps the underlying
    /// [`io::ErrorKind`]), having bound nothing. An unspecified IPv4 address (`:8080` in a
    /// Corefile) listens on IPv6 too where the host has it, as Go's `net.Listen` does.
    pub fn start(spec: &[(SocketAddr, Route)], shared: Shared) -> io::Result<Self> {
        in_runtime()?;
        let mut endpoints = Self {
            shared,
            listeners: Vec::new(),
            probe_target: Arc::new(ArcSwapOption::empty()),
            probe: None,
        };
        endpoints.apply(spec)?;
        endpoints.probe = Some(tokio::spawn(probe::run(
            Arc::clone(&endpoints.probe_target),
            Arc::clone(&endpoints.shared.health),
            endpoints.shared.lifecycle.child_token(),
        )));
        Ok(endpoints)
    }

    /// Serves `spec` from now on (a configuration was reloaded): listeners whose address
    /// stays keep running, with their routes updated; new addresses are bound; listeners
    /// no longer wanted close. If a new address cannot be bound nothing changes.
    ///
    /// Must be called inside a tokio runtime (an error otherwise).
    pub fn apply(&mut self, spec: &[(SocketAddr, Route)]) -> io::Result<()> {
        in_runtime()?;
        let wanted = group(spec);
        // Bind and start what is new first, so that a failure leaves everything as it was.
        let mut bound = Vec::new();
        for &(addr, routes) in &wanted {
            if self.listeners.iter().any(|l| l.requested == addr) {
                continue;
            }
            let listener = bind(addr).map_err(|error| bind_error(addr, routes, &error))?;
            bound.push((addr, routes, listener));
        }
        let mut fresh = Vec::with_capacity(bound.len());
        for (requested, routes, std_listener) in bound {
            match self.serve(requested, routes, std_listener) {
                Ok(listener) => fresh.push(listener),
                Err(error) => {
                    for listener in fresh {
                        listener.stop.cancel();
                    }
                    return Err(bind_error(requested, routes, &error));
                }
            }
        }

        let mut kept = Vec::with_capacity(wanted.len());
        for listener in std::mem::take(&mut self.listeners) {
            match wanted.iter().find(|(addr, _)| *addr == listener.requested) {
                Some(&(_, routes)) => {
                    listener.routes.store(routes.0, Ordering::Relaxed);
                    kept.push(listener);
                }
                None => listener.stop.cancel(),
            }
        }
        kept.extend(fresh);
        // Keep the configuration's order.
        kept.sort_by_key(|listener| {
            wanted
                .iter()
                .position(|(addr, _)| *addr == listener.requested)
        });
        self.listeners = kept;

        let target = self
            .listeners
            .iter()
            .find(|l| Routes(l.routes.load(Ordering::Relaxed)).contains(Route::Health))
            // The family asked for: `0.0.0.0` is probed on 127.0.0.1 even when `[::]` was
            // bound in its place.
            .map(|l| {
                Arc::new(probe::reachable(SocketAddr::new(
                    l.requested.ip(),
                    l.bound.port(),
                )))
            });
        self.probe_target.store(target);
        Ok(())
    }

    /// Starts serving a bound listener.
    fn serve(
        &self,
        requested: SocketAddr,
        routes: Routes,
        listener: StdListener,
    ) -> io::Result<Listener> {
        let bound = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let routes = Arc::new(AtomicU8::new(routes.0));
        let stop = self.shared.lifecycle.child_token();
        let task = tokio::spawn(accept_loop(
            listener,
            Arc::clone(&routes),
            self.shared.clone(),
            stop.clone(),
        ));
        Ok(Listener {
            requested,
            bound,
            routes,
            stop,
            task,
        })
    }

    /// The listeners: the address asked for, the address bound, and the routes served.
    pub fn addresses(&self) -> Vec<(SocketAddr, SocketAddr, Routes)> {
        self.listeners
            .iter()
            .map(|l| {
                (
                    l.requested,
                    l.bound,
                    Routes(l.routes.load(Ordering::Relaxed)),
                )
            })
            .collect()
    }

    /// The bound address serving `route` (the first, if several do).
    pub fn local_addr(&self, route: Route) -> Option<SocketAddr> {
        self.listeners
            .iter()
            .find(|l| Routes(l.routes.load(Ordering::Relaxed)).contains(route))
            .map(|l| l.bound)
    }

    /// What the endpoints answer from.
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Waits for every listener and the probe to end (after [`Lifecycle::stop`]).
    pub async fn join(self) {
        for listener in self.listeners {
            let _ = listener.task.await;
        }
        if let Some(probe) = self.probe {
            let _ = probe.await;
        }
    }
}

/// An error unless called inside a tokio runtime (where listeners can be registered).
fn in_runtime() -> io::Result<()> {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => Ok(()),
        Err(_) => Err(io::Error::other(
            "the HTTP endpoints must be started inside a tokio runtime",
        )),
    }
}

/// The addresses of `spec`, each with its routes, in first-seen order.
fn group(spec: &[(SocketAddr, Route)]) -> Vec<(SocketAddr, Routes)> {
    let mut grouped: Vec<(SocketAddr, Routes)> = Vec::new();
    for &(addr, route) in spec {
        match grouped.iter_mut().find(|(a, _)| *a == addr) {
            Some((_, routes)) => *routes = routes.with(route),
            None => grouped.push((addr, Routes::default().with(route))),
        }
    }
    grouped
}

/// Binds `addr`; `0.0.0.0` binds `[::]` (both families) where IPv6 is available.
fn bind(addr: SocketAddr) -> io::Result<StdListener> {
    if addr.ip() == Ipv4Addr::UNSPECIFIED {
        match StdListener::bind((Ipv6Addr::UNSPECIFIED, addr.port())) {
            Ok(listener) => return Ok(listener),
            // No IPv6 on this host: IPv4 only.
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::AddrNotAvailable | io::ErrorKind::Unsupported
                ) || error.raw_os_error() == Some(97) => {}
            Err(error) => return Err(error),
        }
    }
    StdListener::bind(addr)
}

/// `cannot listen for health and ready on 0.0.0.0:8080: address in use`.
fn bind_error(addr: SocketAddr, routes: Routes, error: &io::Error) -> io::Error {
    let reason = match error.kind() {
        io::ErrorKind::AddrInUse => "address in use".to_owned(),
        io::ErrorKind::AddrNotAvailable => "address not available on this host".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => error.to_string(),
    };
    io::Error::new(
        error.kind(),
        format!("cannot listen for {routes} on {addr}: {reason}"),
    )
}

/// Accepts connections until `stop`, then lets the open ones finish their request.
async fn accept_loop(
    listener: TcpListener,
    routes: Arc<AtomicU8>,
    shared: Shared,
    stop: CancellationToken,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if connections.len() >= MAX_CONNECTIONS {
                        drop(stream);
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    connections.spawn(connection(
                        stream,
                        Arc::clone(&routes),
                        shared.clone(),
                        stop.clone(),
                    ));
                }
                Err(error) => {
                    // Out of file descriptors, or a connection reset before accept:
                    // wait a little rather than spin.
                    tracing::warn!("http accept on {:?}: {error}", listener.local_addr().ok());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.shutdown().await;
    }
}

/// Serves one connection until it closes, it gets too old, or `stop`.
async fn connection(
    stream: tokio::net::TcpStream,
    routes: Arc<AtomicU8>,
    shared: Shared,
    stop: CancellationToken,
) {
    let service = service_fn(move |request: Request<Incoming>| {
        let routes = Routes(routes.load(Ordering::Relaxed));
        // A debug page may wait for what it shows; every other answer is at hand.
        let debug = debug_request(&request, routes, &shared);
        let response = debug.is_none().then(|| respond(&request, routes, &shared));
        async move {
            Ok::<_, Infallible>(match (response, debug) {
                (Some(response), _) => response,
                (None, Some((pages, path, query))) => match pages.page(&path, &query).await {
                    Some(page) => debug_response(page),
                    None => text(StatusCode::NOT_FOUND, "404 page not found\n"),
                },
                (None, None) => text(StatusCode::NOT_FOUND, "404 page not found\n"),
            })
        }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        // A client that shuts its side after sending still gets its answers.
        .half_close(true)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        () = stop.cancelled() => {}
        () = tokio::time::sleep(MAX_CONNECTION_AGE) => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, connection).await;
}

/// The answer to one request.
fn respond(request: &Request<Incoming>, routes: Routes, shared: &Shared) -> Response<Full<Bytes>> {
    match request.uri().path() {
        "/health" if routes.contains(Route::Health) => {
            if shared.lifecycle.is_stopped() {
                text(StatusCode::SERVICE_UNAVAILABLE, "Shutting down")
            } else {
                text(StatusCode::OK, "OK")
            }
        }
        "/ready" if routes.contains(Route::Ready) => {
            if shared.lifecycle.is_lameduck() {
                return text(StatusCode::SERVICE_UNAVAILABLE, "Shutting down");
            }
            // CoreDNS's body ("OK", or the plugins not ready), then a line per note.
            let notes = shared.readiness.notes();
            let with_notes = |verdict: &str| {
                std::iter::once(verdict)
                    .chain(notes.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            match shared.readiness.check() {
                Ok(()) => text(StatusCode::OK, &with_notes("OK")),
                Err(not_ready) => {
                    let names = not_ready.join(",");
                    tracing::info!("plugins not ready: {names:?}");
                    text(StatusCode::SERVICE_UNAVAILABLE, &with_notes(&names))
                }
            }
        }
        "/metrics" if routes.contains(Route::Metrics) => {
            let mut response = Response::new(Full::new(Bytes::from(shared.registry.render())));
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static(metrics::CONTENT_TYPE),
            );
            response
        }
        // Go's http.NotFound.
        _ => text(StatusCode::NOT_FOUND, "404 page not found\n"),
    }
}

/// The pages, the page (what follows `/debug/`) and the query string of a request for a
/// debug page the metrics listener serves.
fn debug_request(
    request: &Request<Incoming>,
    routes: Routes,
    shared: &Shared,
) -> Option<(Arc<dyn DebugPages>, String, String)> {
    let page = request.uri().path().strip_prefix("/debug/")?;
    if !routes.contains(Route::Metrics) {
        return None;
    }
    let pages = Arc::clone(shared.debug.as_ref()?);
    Some((
        pages,
        page.to_owned(),
        request.uri().query().unwrap_or("").to_owned(),
    ))
}

/// A debug page as a response.
fn debug_response(page: Page) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(page.body)));
    *response.status_mut() =
        StatusCode::from_u16(page.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(page.content_type));
    response
}

/// A `text/plain` response.
fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::copy_from_slice(body.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_on_one_address_are_grouped() {
        let health: SocketAddr = "0.0.0.0:8080".parse().expect("addr");
        let metrics: SocketAddr = "127.0.0.1:9153".parse().expect("addr");
        let grouped = group(&[
            (health, Route::Health),
            (metrics, Route::Metrics),
            (health, Route::Ready),
            (health, Route::Health),
        ]);
        assert_eq!(grouped.len(), 2);
        assert_eq!(grouped[0].0, health);
        assert!(grouped[0].1.contains(Route::Health) && grouped[0].1.contains(Route::Ready));
        assert!(!grouped[0].1.contains(Route::Metrics));
        assert_eq!(grouped[0].1.to_string(), "health and ready");
        assert_eq!(grouped[1].1.to_string(), "metrics");
        let all = Routes::default()
            .with(Route::Metrics)
            .with(Route::Health)
            .with(Route::Ready);
        assert_eq!(all.to_string(), "health, ready and metrics");
    }

    #[test]
    fn bind_errors_name_the_plugins_and_the_address() {
        let taken = StdListener::bind("127.0.0.1:0").expect("bind");
        let addr = taken.local_addr().expect("addr");
        let error = bind(addr)
            .map_err(|error| bind_error(addr, Routes::default().with(Route::Health), &error))
            .expect_err("in use");
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);
        assert_eq!(
            error.to_string(),
            format!("cannot listen for health on {addr}: address in use")
        );
    }
}
