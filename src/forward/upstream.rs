//! One upstream: its cached connections, one query's exchange with it over UDP, TCP or TLS,
//! and its health (CoreDNS's `plugin/pkg/proxy`).
//!
//! DNS over TLS (RFC 7858) is DNS over TCP inside a TLS session: the same two-byte length
//! framing, on connections that are kept open and reused while idle for at most `expire`,
//! like TCP ones, so that a handshake is paid once for many queries. As in CoreDNS, a
//! connection carries one query at a time (more queries at once open more connections);
//! replies are matched by ID and question, and anything else read is skipped.

use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpStream, UdpSocket};
use tokio::time::{Instant, timeout_at};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_util::sync::CancellationToken;

use super::error::{Cause, ForwardError, NetError, Op};
use super::message::{self, QueryInfo, ReplyCheck, ReplyInfo};
use super::metrics::{Proto, UpstreamMetrics, forward_metrics};
use super::policy::random_id;

/// The largest DNS message: a UDP reply is read into a buffer this big, so that nothing an
/// upstream sends is cut short.
const MAX_MESSAGE: usize = 65_535;

/// One upstream resolver as *forward* runs it: its address, connections and health (what
/// the Corefile says of it is [`crate::config::Upstream`]).
#[derive(Debug)]
pub(super) struct Peer {
    /// Where queries go.
    pub addr: SocketAddr,
    /// As written in metrics and messages: `10.0.0.1:53`.
    pub name: String,
    /// Consecutive failed health checks.
    fails: AtomicU32,
    /// Whether a health-check loop is running.
    probing: AtomicBool,
    /// Idle connections.
    pool: Pool,
    /// This upstream's series (shared with every forwarder using it).
    pub metrics: Arc<UpstreamMetrics>,
    /// `tls://`: how sessions are set up; every exchange goes over TLS.
    tls: Option<Tls>,
}

/// How to open a TLS session with an upstream.
#[derive(Clone)]
pub(super) struct Tls {
    /// The client configuration (roots, client certificate) of the *forward*.
    pub connector: TlsConnector,
    /// The name the upstream's certificate must be valid for.
    pub server_name: ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// A reply that matched the query.
#[derive(Debug)]
pub(super) struct Reply {
    /// The message as the upstream sent it (with the ID we chose).
    pub bytes: Vec<u8>,
    /// Its rcode and TC bit.
    pub info: ReplyInfo,
}

/// How long one exchange may take.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Waiting for the reply (and for a TCP connection): CoreDNS's 2 s read timeout.
    pub read: Duration,
    /// The query's overall deadline, which no exchange outlives.
    pub deadline: Instant,
}

impl Limits {
    /// The deadline of one network step started now.
    fn step(&self) -> Instant {
        (Instant::now() + self.read).min(self.deadline)
    }
}

/// How the health of a down upstream is checked: `<domain> IN NS` until any reply.
#[derive(Debug)]
pub(super) struct HealthCheck {
    /// The query (its ID is replaced per check).
    pub query: Vec<u8>,
    /// Over TCP (with `force_tcp`, as CoreDNS) instead of UDP.
    pub tcp: bool,
    /// Pause between failed checks.
    pub interval: Duration,
    /// How long one check waits for a reply (CoreDNS: 1 s).
    pub timeout: Duration,
    /// Failed checks after which the upstream is down (0: never down, never checked).
    pub max_fails: u32,
    /// Ends every health-check loop (shutdown, or the forwarder dropped).
    pub stop: CancellationToken,
}

impl Peer {
    pub(super) fn new(
        addr: SocketAddr,
        name: &str,
        expire: Duration,
        max_idle_conns: usize,
        tls: Option<Tls>,
    ) -> Self {
        Self {
            addr,
            name: name.to_owned(),
            fails: AtomicU32::new(0),
            probing: AtomicBool::new(false),
            pool: Pool::new(expire, max_idle_conns),
            metrics: forward_metrics().upstream(name),
            tls,
        }
    }

    /// The transport of an exchange the client's side would do over `proto`: TLS for a
    /// `tls://` upstream whatever the client used (CoreDNS's `tcp-tls`), else `proto`.
    pub(super) fn transport(&self, proto: Proto) -> Proto {
        if self.tls.is_some() {
            Proto::Tls
        } else {
            proto
        }
    }

    /// Whether the upstream is down: `max_fails` health checks in a row have failed (never,
    /// when `max_fails` is 0).
    pub(super) fn down(&self, max_fails: u32) -> bool {
        max_fails != 0 && self.fails.load(Ordering::Relaxed) >= max_fails
    }

    /// Consecutive failed health checks.
    pub(super) fn fails(&self) -> u32 {
        self.fails.load(Ordering::Relaxed)
    }

    /// Sends `framed` (a query behind its two-byte TCP length) over `proto` and waits for
    /// the reply to it. A fresh random ID goes into `framed` first. A cached TCP connection
    /// that the upstream has closed meanwhile is replaced by a new one (once), as in
    /// CoreDNS.
    pub(super) async fn exchange(
        &self,
        framed: &mut [u8],
        info: &QueryInfo,
        proto: Proto,
        limits: Limits,
    ) -> Result<Reply, ForwardError> {
        let mut fresh = false;
        loop {
            let id = random_id();
            message::set_id(&mut framed[2..], id);
            let started = Instant::now();
            let result = match proto {
                Proto::Udp => self.exchange_udp(&framed[2..], id, info, limits).await,
                Proto::Tcp | Proto::Tls => match self
                    .exchange_stream(framed, id, info, proto, limits, fresh)
                    .await
                {
                    // Once, on a new connection.
                    Err(TcpFailure::CachedClosed) => {
                        fresh = true;
                        continue;
                    }
                    Err(TcpFailure::Error(error)) => Err(error),
                    Ok(reply) => Ok(reply),
                },
            };
            if let Ok(reply) = &result {
                self.metrics
                    .observe(reply.info.rcode, started.elapsed().as_secs_f64());
            }
            return result;
        }
    }

    async fn exchange_udp(
        &self,
        query: &[u8],
        id: u16,
        info: &QueryInfo,
        limits: Limits,
    ) -> Result<Reply, ForwardError> {
        let (socket, cached) = match self.pool.take_udp() {
            Some(socket) => (socket, true),
            None => (self.dial_udp().await?, false),
        };
        self.metrics.conn_cache(Proto::Udp, cached);
        let local = socket.local_addr().ok();
        let error = |op, cause| NetError::new(op, "udp", local, self.addr, cause);
        match timeout_at(limits.step(), socket.send(query)).await {
            Err(_) => return Err(error(Op::Write, Cause::Timeout).into()),
            Ok(Err(e)) => return Err(error(Op::Write, Cause::of(&e)).into()),
            Ok(Ok(_)) => {}
        }
        let read_deadline = limits.step();
        let mut buffer = Vec::with_capacity(MAX_MESSAGE);
        loop {
            buffer.clear();
            match timeout_at(read_deadline, socket.recv_buf(&mut buffer)).await {
                Err(_) => return Err(error(Op::Read, Cause::Timeout).into()),
                Ok(Err(e)) => return Err(error(Op::Read, Cause::of(&e)).into()),
                Ok(Ok(_)) => {}
            }
            match message::check_reply(&buffer, id, query, info) {
                // Someone else's answer, or a late one to an earlier query on this socket.
                ReplyCheck::Mismatch => continue,
                ReplyCheck::Malformed => {
                    return Err(ForwardError::Malformed {
                        upstream: self.addr,
                    });
                }
                ReplyCheck::Match(reply) => {
                    self.pool.put_udp(socket);
                    return Ok(Reply {
                        bytes: buffer.as_slice().to_vec(),
                        info: reply,
                    });
                }
                ReplyCheck::Questionless(reply) => {
                    self.pool.put_udp(socket);
                    return Ok(Reply {
                        bytes: message::error_reply(query, info, id, reply.rcode),
                        info: reply,
                    });
                }
            }
        }
    }

    async fn dial_udp(&self) -> Result<UdpSocket, NetError> {
        let error = |e: io::Error| NetError::new(Op::Dial, "udp", None, self.addr, Cause::of(&e));
        let socket = UdpSocket::bind(unspecified(self.addr))
            .await
            .map_err(error)?;
        socket.connect(self.addr).await.map_err(error)?;
        Ok(socket)
    }

    /// An exchange over TCP or TLS (`proto`), on a cached connection unless `fresh`.
    async fn exchange_stream(
        &self,
        framed: &[u8],
        id: u16,
        info: &QueryInfo,
        proto: Proto,
        limits: Limits,
        fresh: bool,
    ) -> Result<Reply, TcpFailure> {
        let parked = if fresh {
            None
        } else {
            self.pool.take_stream(proto)
        };
        let (mut stream, cached) = match parked {
            Some(stream) => (stream, true),
            None => (self.dial_stream(proto, limits).await?, false),
        };
        self.metrics.conn_cache(proto, cached);
        let local = stream.local_addr();
        let error = |op, cause| NetError::new(op, proto.label(), local, self.addr, cause);
        let write = async {
            stream.write_all(framed).await?;
            stream.flush().await
        };
        match timeout_at(limits.step(), write).await {
            Err(_) => return Err(error(Op::Write, Cause::Timeout).into()),
            Ok(Err(_)) if cached => return Err(TcpFailure::CachedClosed),
            Ok(Err(e)) => return Err(error(Op::Write, Cause::of(&e)).into()),
            Ok(Ok(())) => {}
        }
        let query = &framed[2..];
        let read = async {
            let mut first = true;
            loop {
                let mut length = [0u8; 2];
                if let Err(e) = stream.read_exact(&mut length).await {
                    // A cached connection the upstream closed while it sat idle: the write
                    // went into the void and the read sees the close.
                    let closed = matches!(
                        e.kind(),
                        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset
                    );
                    if cached && first && closed {
                        return Err(TcpFailure::CachedClosed);
                    }
                    return Err(error(Op::Read, Cause::of(&e)).into());
                }
                first = false;
                let mut body = vec![0; usize::from(u16::from_be_bytes(length))];
                if let Err(e) = stream.read_exact(&mut body).await {
                    return Err(error(Op::Read, Cause::of(&e)).into());
                }
                match message::check_reply(&body, id, query, info) {
                    ReplyCheck::Mismatch => continue,
                    ReplyCheck::Malformed => {
                        return Err(TcpFailure::Error(ForwardError::Malformed {
                            upstream: self.addr,
                        }));
                    }
                    ReplyCheck::Match(reply) => return Ok((body, reply)),
                    ReplyCheck::Questionless(reply) => {
                        return Ok((message::error_reply(query, info, id, reply.rcode), reply));
                    }
                }
            }
        };
        match timeout_at(limits.step(), read).await {
            Err(_) => Err(error(Op::Read, Cause::Timeout).into()),
            Ok(Err(failure)) => Err(failure),
            Ok(Ok((bytes, info))) => {
                self.pool.put_stream(proto, stream);
                Ok(Reply { bytes, info })
            }
        }
    }

    /// A new TCP connection, with a TLS session on it for [`Proto::Tls`], within one step.
    async fn dial_stream(&self, proto: Proto, limits: Limits) -> Result<Stream, NetError> {
        let deadline = limits.step();
        let error = |cause| NetError::new(Op::Dial, proto.label(), None, self.addr, cause);
        let tcp = match timeout_at(deadline, TcpStream::connect(self.addr)).await {
            Err(_) => return Err(error(Cause::Timeout)),
            Ok(Err(e)) => return Err(error(Cause::of(&e))),
            Ok(Ok(stream)) => stream,
        };
        // Queries are single small writes; do not let Nagle hold them back.
        let _ = tcp.set_nodelay(true);
        match (&self.tls, proto) {
            (Some(tls), Proto::Tls) => {
                let handshake = tls.connector.connect(tls.server_name.clone(), tcp);
                match timeout_at(deadline, handshake).await {
                    Err(_) => Err(error(Cause::Timeout)),
                    Ok(Err(e)) => Err(error(tls_cause(&e))),
                    Ok(Ok(session)) => Ok(Stream::Tls(Box::new(session))),
                }
            }
            _ => Ok(Stream::Tcp(tcp)),
        }
    }

    /// After a failed exchange: starts checking this upstream's health every
    /// `check.interval` until it answers, unless a check loop already runs (CoreDNS's
    /// `Healthcheck`, kicked off by every error). Each failed check counts towards
    /// `max_fails`; any reply resets the count.
    pub(super) fn start_health_checks(self: &Arc<Self>, check: &Arc<HealthCheck>) {
        if check.max_fails == 0 || check.stop.is_cancelled() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let upstream = Arc::clone(self);
        let check = Arc::clone(check);
        runtime.spawn(async move {
            loop {
                let healthy = tokio::select! {
                    () = check.stop.cancelled() => break,
                    healthy = upstream.check_health(&check) => healthy,
                };
                if healthy {
                    upstream.fails.store(0, Ordering::Relaxed);
                    break;
                }
                let _ =
                    upstream
                        .fails
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |fails| {
                            fails.checked_add(1)
                        });
                upstream.metrics.health_check_failed();
                tokio::select! {
                    () = check.stop.cancelled() => break,
                    () = tokio::time::sleep(check.interval) => {}
                }
            }
            upstream.probing.store(false, Ordering::Release);
        });
    }

    /// One health check on a connection of its own: whether any reply came back in time.
    async fn check_health(&self, check: &HealthCheck) -> bool {
        let id = random_id();
        let mut query = check.query.clone();
        message::set_id(&mut query, id);
        let deadline = Instant::now() + check.timeout;
        let attempt = async {
            if check.tcp || self.tls.is_some() {
                let tcp = TcpStream::connect(self.addr).await?;
                // Over the upstream's own transport: TLS for a tls:// one, as CoreDNS.
                let mut stream = match &self.tls {
                    Some(tls) => Stream::Tls(Box::new(
                        tls.connector.connect(tls.server_name.clone(), tcp).await?,
                    )),
                    None => Stream::Tcp(tcp),
                };
                let mut framed = Vec::with_capacity(query.len() + 2);
                framed.extend_from_slice(&(query.len() as u16).to_be_bytes());
                framed.extend_from_slice(&query);
                stream.write_all(&framed).await?;
                stream.flush().await?;
                loop {
                    let mut length = [0u8; 2];
                    stream.read_exact(&mut length).await?;
                    let mut body = vec![0; usize::from(u16::from_be_bytes(length))];
                    stream.read_exact(&mut body).await?;
                    if message::is_response_to(&body, id) {
                        return Ok::<(), io::Error>(());
                    }
                }
            } else {
                let socket = UdpSocket::bind(unspecified(self.addr)).await?;
                socket.connect(self.addr).await?;
                socket.send(&query).await?;
                let mut buffer = Vec::with_capacity(MAX_MESSAGE);
                loop {
                    buffer.clear();
                    socket.recv_buf(&mut buffer).await?;
                    if message::is_response_to(&buffer, id) {
                        return Ok(());
                    }
                }
            }
        };
        matches!(timeout_at(deadline, attempt).await, Ok(Ok(())))
    }

    /// Closes idle connections unused for longer than `expire`.
    pub(super) fn sweep(&self) {
        self.pool.sweep();
    }

    /// Closes every idle connection.
    pub(super) fn close_idle(&self) {
        self.pool.clear();
    }
}

/// A failed TCP exchange: a real error, or a cached connection found closed (retried on a
/// new connection without counting as a failure).
enum TcpFailure {
    CachedClosed,
    Error(ForwardError),
}

impl From<NetError> for TcpFailure {
    fn from(error: NetError) -> Self {
        TcpFailure::Error(ForwardError::Net(error))
    }
}

/// Why a TLS handshake failed: a certificate that does not verify, a protocol the upstream
/// does not speak, or the connection closing under it. Prefixed `tls:` as Go's errors are.
fn tls_cause(error: &io::Error) -> Cause {
    match error.kind() {
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => Cause::of(error),
        _ => Cause::Tls(error.to_string()),
    }
}

/// A TCP connection, or a TLS session over one.
#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    fn local_addr(&self) -> Option<SocketAddr> {
        match self {
            Stream::Tcp(tcp) => tcp.local_addr().ok(),
            Stream::Tls(tls) => tls.get_ref().0.local_addr().ok(),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(tcp) => Pin::new(tcp).poll_read(cx, buf),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(tcp) => Pin::new(tcp).poll_write(cx, buf),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(tcp) => Pin::new(tcp).poll_flush(cx),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(tcp) => Pin::new(tcp).poll_shutdown(cx),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The wildcard address of `addr`'s family, port 0: where a socket to `addr` binds.
fn unspecified(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    }
}

/// Idle connections to one upstream: connected UDP sockets and open TCP and TLS connections, each
/// reused while it has been idle for at most `expire`, at most `max_idle` of each kind
/// (0: no limit). Oldest first, as CoreDNS, so queries spread over source ports.
#[derive(Debug)]
struct Pool {
    expire: Duration,
    max_idle: usize,
    idle: Mutex<Idle>,
}

#[derive(Debug, Default)]
struct Idle {
    udp: VecDeque<Parked<UdpSocket>>,
    tcp: VecDeque<Parked<Stream>>,
    tls: VecDeque<Parked<Stream>>,
}

impl Idle {
    /// The queue of TCP or TLS connections.
    fn streams(&mut self, proto: Proto) -> &mut VecDeque<Parked<Stream>> {
        match proto {
            Proto::Tls => &mut self.tls,
            Proto::Udp | Proto::Tcp => &mut self.tcp,
        }
    }
}

#[derive(Debug)]
struct Parked<T> {
    conn: T,
    since: Instant,
}

impl Pool {
    fn new(expire: Duration, max_idle: usize) -> Self {
        Self {
            expire,
            max_idle,
            idle: Mutex::new(Idle::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Idle> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take_udp(&self) -> Option<UdpSocket> {
        let (found, expired) = take(&mut self.lock().udp, self.expire);
        drop(expired);
        found
    }

    fn take_stream(&self, proto: Proto) -> Option<Stream> {
        let (found, expired) = take(self.lock().streams(proto), self.expire);
        drop(expired);
        found
    }

    fn put_udp(&self, socket: UdpSocket) {
        if let Some(full) = put(&mut self.lock().udp, socket, self.expire, self.max_idle) {
            drop(full);
        }
    }

    fn put_stream(&self, proto: Proto, stream: Stream) {
        let kept = put(
            self.lock().streams(proto),
            stream,
            self.expire,
            self.max_idle,
        );
        drop(kept);
    }

    fn sweep(&self) {
        let now = Instant::now();
        let mut idle = self.lock();
        let udp = drain_expired(&mut idle.udp, now, self.expire);
        let tcp = drain_expired(&mut idle.tcp, now, self.expire);
        let tls = drain_expired(&mut idle.tls, now, self.expire);
        drop(idle);
        drop((udp, tcp, tls));
    }

    fn clear(&self) {
        let mut idle = self.lock();
        let closed = std::mem::take(&mut *idle);
        drop(idle);
        drop(closed);
    }
}

/// The oldest connection idle for at most `expire`, and the expired ones passed over (to
/// be closed once the lock is released).
fn take<T>(queue: &mut VecDeque<Parked<T>>, expire: Duration) -> (Option<T>, Vec<T>) {
    let mut expired = Vec::new();
    while let Some(parked) = queue.pop_front() {
        if parked.since.elapsed() <= expire {
            return (Some(parked.conn), expired);
        }
        expired.push(parked.conn);
    }
    (None, expired)
}

/// Parks `conn`; gives it back when it cannot be kept (the pool is full, or `expire` is 0).
fn put<T>(
    queue: &mut VecDeque<Parked<T>>,
    conn: T,
    expire: Duration,
    max_idle: usize,
) -> Option<T> {
    if expire.is_zero() || (max_idle != 0 && queue.len() >= max_idle) {
        return Some(conn);
    }
    queue.push_back(Parked {
        conn,
        since: Instant::now(),
    });
    None
}

/// Removes the connections idle for longer than `expire` (the queue is in parking order).
fn drain_expired<T>(queue: &mut VecDeque<Parked<T>>, now: Instant, expire: Duration) -> Vec<T> {
    let keep_from = queue
        .iter()
        .position(|parked| now.duration_since(parked.since) <= expire)
        .unwrap_or(queue.len());
    queue.drain(..keep_from).map(|parked| parked.conn).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_takes_the_oldest_live_connection_and_respects_its_bounds() {
        let mut queue = VecDeque::new();
        assert!(put(&mut queue, 1, Duration::from_secs(10), 2).is_none());
        assert!(put(&mut queue, 2, Duration::from_secs(10), 2).is_none());
        assert_eq!(put(&mut queue, 3, Duration::from_secs(10), 2), Some(3));
        assert_eq!(put(&mut queue, 4, Duration::ZERO, 0), Some(4));
        let (found, expired) = take(&mut queue, Duration::from_secs(10));
        assert_eq!((found, expired), (Some(1), vec![]));
        let (found, expired) = take(&mut queue, Duration::ZERO);
        assert_eq!(found, None);
        assert!(expired.len() <= 1);
    }

    #[test]
    fn sweeping_drops_only_expired_connections() {
        let now = Instant::now();
        let mut queue: VecDeque<Parked<u8>> = [30u64, 20, 5]
            .into_iter()
            .map(|ago| Parked {
                conn: ago as u8,
                since: now - Duration::from_secs(ago),
            })
            .collect();
        let expired = drain_expired(&mut queue, now, Duration::from_secs(10));
        assert_eq!(expired, vec![30, 20]);
        assert_eq!(queue.len(), 1);
    }
}
