//! Connections: accepting (plain or TLS), the registry a reset (RST) goes through, and the
//! flushes a watch cut in the middle of a line waits for.

use std::convert::Infallible;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::task::AtomicWaker;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::serve::respond;

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
pub(super) struct Flushes {
    pub(super) count: AtomicU64,
    pub(super) waker: AtomicWaker,
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
