//! The UDP workers: the path nearly every query takes.
//!
//! Each worker is a thread of its own with a socket of its own, one of the group
//! [`super::listen`] binds with `SO_REUSEPORT`: the kernel hashes a client to one socket,
//! so a packet wakes the one worker that takes it and no worker waits on another's queue.
//! A worker blocks in `recvmmsg` until a datagram is there and takes up to [`BATCH`] that
//! are queued behind it, answers each from the running handler, and sends the replies with
//! one `sendmmsg`: under load a batch costs two system calls, and an idle worker costs
//! none. The buffers are the worker's for its life, so a query the cluster zone answers
//! costs no allocation.
//!
//! A query that goes upstream leaves the batch: it continues as a task on the runtime,
//! which sends its reply on the worker's socket without blocking (`MSG_DONTWAIT`).

use std::io::{IoSlice, IoSliceMut};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use arc_swap::ArcSwap;
use nix::errno::Errno;
use nix::sys::socket::{
    MsgFlags, MultiHeaders, Shutdown, SockaddrStorage, recvmmsg, sendmmsg, sendto, shutdown,
};
use smallvec::SmallVec;
use tokio::runtime::Handle;

use super::{Handler, Outcome, Transport};

/// Room for the largest UDP message, per datagram of a batch.
const MAX_DATAGRAM: usize = 65536;
/// Datagrams taken by one `recvmmsg`, and replies sent by one `sendmmsg`.
pub(crate) const BATCH: usize = 32;
/// The pause after a receive error other than a timeout, an interruption or an ICMP
/// report, so that a socket in a lasting error state is not spun on.
const ERROR_PAUSE: Duration = Duration::from_millis(10);
/// Tries of a forwarded reply's send when the socket's buffer is full.
const SEND_TRIES: usize = 3;

/// The workers of one listener's UDP sockets.
#[derive(Debug)]
pub(crate) struct Workers {
    stop: Arc<AtomicBool>,
    sockets: Vec<Arc<UdpSocket>>,
    threads: Vec<JoinHandle<()>>,
}

/// Starts one worker per socket, answering with the handler `current` holds at each batch;
/// forwarded queries continue on `runtime`.
pub(crate) fn start(
    sockets: Vec<UdpSocket>,
    current: &Arc<ArcSwap<Handler>>,
    runtime: &Handle,
) -> std::io::Result<Workers> {
    let stop = Arc::new(AtomicBool::new(false));
    let sockets: Vec<Arc<UdpSocket>> = sockets.into_iter().map(Arc::new).collect();
    let mut workers = Workers {
        stop: Arc::clone(&stop),
        sockets: sockets.clone(),
        threads: Vec::with_capacity(sockets.len()),
    };
    for (index, socket) in sockets.into_iter().enumerate() {
        let worker = Worker {
            socket,
            current: Arc::clone(current),
            runtime: runtime.clone(),
            stop: Arc::clone(&stop),
        };
        let spawned = std::thread::Builder::new()
            .name(format!("clusterdns-udp-{index}"))
            .spawn(move || worker.run());
        match spawned {
            Ok(thread) => workers.threads.push(thread),
            Err(error) => {
                workers.signal();
                return Err(error);
            }
        }
    }
    Ok(workers)
}

impl Workers {
    /// How many workers (and sockets) there are.
    pub(crate) fn len(&self) -> usize {
        self.threads.len()
    }

    /// Tells every worker to stop and wakes it: a shut-down socket ends a blocked receive.
    fn signal(&self) {
        self.stop.store(true, Ordering::Release);
        for socket in &self.sockets {
            // An unconnected UDP socket reports ENOTCONN, and is shut down all the same.
            let _ = shutdown(socket.as_raw_fd(), Shutdown::Read);
        }
    }

    /// Stops the workers and waits for them; forwarded queries still in flight finish and
    /// send their replies.
    pub(crate) async fn stop(mut self) {
        self.signal();
        let threads = std::mem::take(&mut self.threads);
        let _ = tokio::task::spawn_blocking(move || {
            for thread in threads {
                let _ = thread.join();
            }
        })
        .await;
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.signal();
        }
    }
}

struct Worker {
    socket: Arc<UdpSocket>,
    current: Arc<ArcSwap<Handler>>,
    runtime: Handle,
    stop: Arc<AtomicBool>,
}

/// What one batch received: the datagrams' lengths and senders.
struct Received {
    len: usize,
    peer: Option<SocketAddr>,
}

impl Worker {
    fn run(self) {
        // The handler spawns on the runtime (prefetch, forwarded queries) from this thread.
        let _runtime = self.runtime.enter();
        let fd = self.socket.as_raw_fd();
        // One zeroed block for the whole batch: its pages are only touched (and resident) as
        // far as datagrams reach into them.
        let mut packets = vec![0u8; BATCH * MAX_DATAGRAM];
        let mut replies: Vec<Vec<u8>> = (0..BATCH).map(|_| Vec::with_capacity(4096)).collect();
        let mut receiving = MultiHeaders::<SockaddrStorage>::preallocate(BATCH, None);
        let mut sending = MultiHeaders::<SockaddrStorage>::preallocate(BATCH, None);
        let mut received: SmallVec<[Received; BATCH]> = SmallVec::new();
        let mut destinations: SmallVec<[Option<SockaddrStorage>; BATCH]> = SmallVec::new();
        loop {
            received.clear();
            let result = {
                // An array (no drop of its own), so that its borrow may last as long as the
                // receive's results.
                let mut chunks = packets.chunks_mut(MAX_DATAGRAM);
                let mut slices: [[IoSliceMut<'_>; 1]; BATCH] =
                    std::array::from_fn(|_| [IoSliceMut::new(chunks.next().unwrap_or_default())]);
                recvmmsg(
                    fd,
                    &mut receiving,
                    slices.iter_mut(),
                    MsgFlags::MSG_WAITFORONE,
                    None,
                )
                .map(|messages| {
                    received.extend(messages.map(|message| Received {
                        len: message.bytes,
                        peer: message.address.as_ref().and_then(socket_addr),
                    }));
                })
            };
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            match result {
                Ok(()) => {}
                // The receive timeout, a signal, or an ICMP error from an earlier send.
                Err(Errno::EAGAIN | Errno::EINTR | Errno::ECONNREFUSED) => continue,
                Err(error) => {
                    tracing::debug!(%error, "udp receive");
                    std::thread::sleep(ERROR_PAUSE);
                    continue;
                }
            }
            // The handler of the running configuration; a reload swaps it between batches.
            let handler = self.current.load();
            destinations.clear();
            for (index, datagram) in received.iter().enumerate() {
                let Some(peer) = datagram.peer else { continue };
                let reply = &mut replies[destinations.len()];
                reply.clear();
                let packet = &packets[index * MAX_DATAGRAM..][..datagram.len];
                match handler.respond(packet, peer, Transport::Udp, reply) {
                    Outcome::Reply => destinations.push(Some(SockaddrStorage::from(peer))),
                    Outcome::Forward(pending) => {
                        let handler = Arc::clone(&handler);
                        let socket = Arc::clone(&self.socket);
                        self.runtime.spawn(async move {
                            let mut out = Vec::new();
                            handler.complete(pending, &mut out).await;
                            if !out.is_empty() {
                                send_one(&socket, &out, peer).await;
                            }
                        });
                    }
                    Outcome::Drop | Outcome::Transfer(_) => {}
                }
            }
            drop(handler);
            send_batch(
                fd,
                &mut sending,
                &replies[..destinations.len()],
                &destinations,
            );
        }
    }
}

/// Sends `replies[i]` to `destinations[i]`, as few `sendmmsg` calls as it takes: a reply
/// the kernel refuses (an unreachable client, say) is skipped, the rest still go.
fn send_batch(
    fd: std::os::fd::RawFd,
    headers: &mut MultiHeaders<SockaddrStorage>,
    replies: &[Vec<u8>],
    destinations: &[Option<SockaddrStorage>],
) {
    let mut start = 0;
    while start < replies.len() {
        let mut pending = replies[start..].iter();
        let slices: [[IoSlice<'_>; 1]; BATCH] =
            std::array::from_fn(|_| [IoSlice::new(pending.next().map_or(&[], Vec::as_slice))]);
        let sent = sendmmsg(
            fd,
            headers,
            slices[..replies.len() - start].iter(),
            &destinations[start..],
            [],
            MsgFlags::empty(),
        )
        .map(Iterator::count);
        match sent {
            Ok(0) => return,
            Ok(sent) => start += sent,
            Err(Errno::EINTR) => {}
            Err(error) => {
                tracing::debug!(%error, "udp send");
                start += 1;
            }
        }
    }
}

/// Sends a forwarded query's reply from the runtime, without blocking it: a full socket
/// buffer is retried a few times, then the reply is dropped as a lost datagram would be.
async fn send_one(socket: &UdpSocket, reply: &[u8], peer: SocketAddr) {
    let destination = SockaddrStorage::from(peer);
    for _ in 0..SEND_TRIES {
        match sendto(
            socket.as_raw_fd(),
            reply,
            &destination,
            MsgFlags::MSG_DONTWAIT,
        ) {
            Ok(_) => return,
            Err(Errno::EAGAIN | Errno::EINTR) => tokio::task::yield_now().await,
            Err(error) => {
                tracing::debug!(%error, %peer, "udp send");
                return;
            }
        }
    }
    tracing::debug!(%peer, "udp send: socket buffer full, reply dropped");
}

/// The sender of a datagram, as the standard library spells it.
fn socket_addr(address: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = address.as_sockaddr_in() {
        return Some(SocketAddr::V4(SocketAddrV4::from(*v4)));
    }
    address
        .as_sockaddr_in6()
        .map(|v6| SocketAddr::V6(SocketAddrV6::from(*v6)))
}
