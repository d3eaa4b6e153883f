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
//!
//! A socket bound to a wildcard (`0.0.0.0`, `[::]`) has the kernel say where each query was
//! sent (`IP_PKTINFO`, `IPV6_PKTINFO`, which [`super::listen`] asks for), and its reply
//! leaves from that address, as CoreDNS's do: a client that asked one of the host's
//! addresses takes no reply from another (dig, and any `connect()`ed socket). A batch's
//! replies are grouped by that address, one `sendmmsg` per address.

use std::io::{IoSlice, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use arc_swap::ArcSwap;
use nix::errno::Errno;
use nix::libc;
use nix::sys::socket::{
    ControlMessage, ControlMessageOwned, MsgFlags, MultiHeaders, RecvMsg, Shutdown,
    SockaddrStorage, recvmmsg, sendmmsg, sendmsg, shutdown,
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

/// What one batch received: the datagrams' lengths, senders, and the addresses they were
/// sent to (what the reply leaves from; unspecified on a socket bound to one address).
struct Received {
    len: usize,
    peer: Option<SocketAddr>,
    local: IpAddr,
}

/// Where a socket's replies leave from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// A socket bound to one address: the kernel sends from it.
    Bound,
    /// The IPv4 wildcard: each reply from its query's address, given with `IP_PKTINFO`.
    Any4,
    /// The IPv6 wildcard, IPv4 included (as mapped addresses): with `IPV6_PKTINFO`.
    Any6,
}

impl Origin {
    fn of(socket: &UdpSocket) -> Self {
        match socket.local_addr() {
            Ok(SocketAddr::V4(addr)) if addr.ip().is_unspecified() => Self::Any4,
            Ok(SocketAddr::V6(addr)) if addr.ip().is_unspecified() => Self::Any6,
            _ => Self::Bound,
        }
    }

    /// Room for one datagram's control message: exactly one packet-info message, the one
    /// the socket receives and sends. Exactly, because the kernel writes back the room a
    /// receive used and `recvmmsg` does not restore it: room for more would shrink to one.
    fn control_space(self) -> Option<Vec<u8>> {
        match self {
            Self::Bound => None,
            Self::Any4 => Some(nix::cmsg_space!(libc::in_pktinfo)),
            Self::Any6 => Some(nix::cmsg_space!(libc::in6_pktinfo)),
        }
    }

    /// The address `message` was sent to; `None` when the kernel did not say.
    fn local(self, message: &RecvMsg<'_, '_, SockaddrStorage>) -> Option<IpAddr> {
        if self == Self::Bound {
            return Some(Ipv4Addr::UNSPECIFIED.into());
        }
        message.cmsgs().ok()?.find_map(|cmsg| match cmsg {
            // The local address the kernel would reply from: the destination of a unicast
            // query, an address of the interface for a broadcast one.
            ControlMessageOwned::Ipv4PacketInfo(info) => {
                let ip = Ipv4Addr::from(info.ipi_spec_dst.s_addr.to_ne_bytes());
                Some(IpAddr::V4(ip))
            }
            ControlMessageOwned::Ipv6PacketInfo(info) => {
                let ip = Ipv6Addr::from(info.ipi6_addr.s6_addr);
                // No reply leaves from a multicast (or IPv4 broadcast) address: the kernel
                // chooses, as without packet info.
                let group = ip.is_multicast()
                    || ip
                        .to_ipv4_mapped()
                        .is_some_and(|v4| v4.is_multicast() || v4.is_broadcast());
                Some(IpAddr::V6(if group { unspecified_like(ip) } else { ip }))
            }
            _ => None,
        })
    }

    /// The source that leaves the choice to the kernel, for a reply to `peer`.
    fn any(self, peer: SocketAddr) -> IpAddr {
        match (self, peer.ip()) {
            (Self::Any6, IpAddr::V6(ip)) => IpAddr::V6(unspecified_like(ip)),
            _ => Ipv4Addr::UNSPECIFIED.into(),
        }
    }
}

/// `::` for an IPv6 address, `::ffff:0.0.0.0` for an IPv4-mapped one: the unspecified
/// source the kernel takes for each (a mapped destination wants a mapped source).
fn unspecified_like(ip: Ipv6Addr) -> Ipv6Addr {
    if ip.to_ipv4_mapped().is_some() {
        Ipv4Addr::UNSPECIFIED.to_ipv6_mapped()
    } else {
        Ipv6Addr::UNSPECIFIED
    }
}

/// The packet-info control message that sends a reply from `source`: `IP_PKTINFO` for an
/// IPv4 address, `IPV6_PKTINFO` for an IPv6 (or IPv4-mapped) one; no interface, so the
/// route to the client decides it, as CoreDNS's replies.
enum PacketInfo {
    V4(libc::in_pktinfo),
    V6(libc::in6_pktinfo),
}

impl PacketInfo {
    fn new(source: IpAddr) -> Self {
        match source {
            IpAddr::V4(ip) => Self::V4(libc::in_pktinfo {
                ipi_ifindex: 0,
                ipi_spec_dst: libc::in_addr {
                    s_addr: u32::from_ne_bytes(ip.octets()),
                },
                ipi_addr: libc::in_addr { s_addr: 0 },
            }),
            IpAddr::V6(ip) => Self::V6(libc::in6_pktinfo {
                ipi6_addr: libc::in6_addr {
                    s6_addr: ip.octets(),
                },
                ipi6_ifindex: 0,
            }),
        }
    }

    fn message(&self) -> ControlMessage<'_> {
        match self {
            Self::V4(info) => ControlMessage::Ipv4PacketInfo(info),
            Self::V6(info) => ControlMessage::Ipv6PacketInfo(info),
        }
    }
}

impl Worker {
    fn run(self) {
        // The handler spawns on the runtime (prefetch, forwarded queries) from this thread.
        let _runtime = self.runtime.enter();
        let fd = self.socket.as_raw_fd();
        let origin = Origin::of(&self.socket);
        // One zeroed block for the whole batch: its pages are only touched (and resident) as
        // far as datagrams reach into them.
        let mut packets = vec![0u8; BATCH * MAX_DATAGRAM];
        let mut replies: Vec<Vec<u8>> = (0..BATCH).map(|_| Vec::with_capacity(4096)).collect();
        let mut receiving =
            MultiHeaders::<SockaddrStorage>::preallocate(BATCH, origin.control_space());
        let mut sending =
            MultiHeaders::<SockaddrStorage>::preallocate(BATCH, origin.control_space());
        let mut received: SmallVec<[Received; BATCH]> = SmallVec::new();
        let mut destinations: SmallVec<[Option<SockaddrStorage>; BATCH]> = SmallVec::new();
        let mut sources: SmallVec<[IpAddr; BATCH]> = SmallVec::new();
        loop {
            received.clear();
            // A wildcard socket's datagram that came without its packet info.
            let mut unlocated = false;
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
                    received.extend(messages.map(|message| {
                        let peer = message.address.as_ref().and_then(socket_addr);
                        let local = origin.local(&message).unwrap_or_else(|| {
                            unlocated = true;
                            peer.map_or(Ipv4Addr::UNSPECIFIED.into(), |peer| origin.any(peer))
                        });
                        Received {
                            len: message.bytes,
                            peer,
                            local,
                        }
                    }));
                })
            };
            if unlocated {
                // The kernel wrote back how much control room that receive used, none: the
                // slot would take no packet info again. Fresh headers, in this rare case.
                tracing::debug!("udp receive without packet info");
                receiving = MultiHeaders::preallocate(BATCH, origin.control_space());
            }
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
            sources.clear();
            for (index, datagram) in received.iter().enumerate() {
                let Some(peer) = datagram.peer else { continue };
                let reply = &mut replies[destinations.len()];
                reply.clear();
                let packet = &packets[index * MAX_DATAGRAM..][..datagram.len];
                match handler.respond(packet, peer, Transport::Udp, reply) {
                    Outcome::Reply => {
                        destinations.push(Some(SockaddrStorage::from(peer)));
                        sources.push(datagram.local);
                    }
                    Outcome::Forward(pending) => {
                        let handler = Arc::clone(&handler);
                        let socket = Arc::clone(&self.socket);
                        let source = (origin != Origin::Bound).then_some(datagram.local);
                        self.runtime.spawn(async move {
                            let mut out = Vec::new();
                            handler.complete(pending, &mut out).await;
                            if !out.is_empty() {
                                send_one(&socket, &out, peer, source).await;
                            }
                        });
                    }
                    Outcome::Drop | Outcome::Transfer(_) => {}
                }
            }
            drop(handler);
            let count = destinations.len();
            if origin == Origin::Bound {
                send_batch(fd, &mut sending, &replies[..count], &destinations, None);
                continue;
            }
            group_by_source(&mut replies[..count], &mut destinations, &mut sources);
            let mut start = 0;
            while start < count {
                let source = sources[start];
                let end = start
                    + sources[start..]
                        .iter()
                        .take_while(|s| **s == source)
                        .count();
                send_batch(
                    fd,
                    &mut sending,
                    &replies[start..end],
                    &destinations[start..end],
                    Some(&PacketInfo::new(source)),
                );
                start = end;
            }
        }
    }
}

/// Orders a batch's replies (with their destinations) so that those leaving from the same
/// address are next to each other: an insertion sort, in place and stable, which for the
/// common batch (one address) only compares.
fn group_by_source(
    replies: &mut [Vec<u8>],
    destinations: &mut [Option<SockaddrStorage>],
    sources: &mut [IpAddr],
) {
    for next in 1..sources.len() {
        let mut at = next;
        while at > 0 && sources[at - 1] > sources[at] {
            replies.swap(at - 1, at);
            destinations.swap(at - 1, at);
            sources.swap(at - 1, at);
            at -= 1;
        }
    }
}

/// Sends `replies[i]` to `destinations[i]`, from the address of `source` when given, as few
/// `sendmmsg` calls as it takes: a reply the kernel refuses (an unreachable client, say) is
/// skipped, the rest still go.
fn send_batch(
    fd: std::os::fd::RawFd,
    headers: &mut MultiHeaders<SockaddrStorage>,
    replies: &[Vec<u8>],
    destinations: &[Option<SockaddrStorage>],
    source: Option<&PacketInfo>,
) {
    let control = source.map(PacketInfo::message);
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
            control.as_slice(),
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
/// From `source` when given (the address a wildcard socket's query was sent to).
async fn send_one(socket: &UdpSocket, reply: &[u8], peer: SocketAddr, source: Option<IpAddr>) {
    let destination = SockaddrStorage::from(peer);
    let source = source.map(PacketInfo::new);
    for _ in 0..SEND_TRIES {
        let control = source.as_ref().map(PacketInfo::message);
        match sendmsg(
            socket.as_raw_fd(),
            &[IoSlice::new(reply)],
            control.as_slice(),
            MsgFlags::MSG_DONTWAIT,
            Some(&destination),
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use nix::sys::socket::{setsockopt, sockopt};

    use super::*;

    /// An IPv4 wildcard socket (what `.:53` binds where the host has no IPv6) replies from
    /// the address each query was sent to: asked at 127.0.0.2 from 127.0.0.1, the reply
    /// reaches a socket `connect()`ed to 127.0.0.2, which takes nothing from elsewhere.
    #[test]
    fn an_ipv4_wildcard_replies_from_the_address_asked() {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let socket = UdpSocket::bind("0.0.0.0:0").expect("bind");
        setsockopt(&socket, sockopt::Ipv4PacketInfo, &true).expect("IP_PKTINFO");
        socket
            .set_read_timeout(Some(Duration::from_secs(1)))
            .expect("timeout");
        let port = socket.local_addr().expect("address").port();
        let handler = Arc::new(ArcSwap::from_pointee(Handler::new(Vec::new())));
        let workers = start(vec![socket], &handler, runtime.handle()).expect("workers");
        // The header of a query for `.` IN A, ID 7.
        let query = [0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1];
        for (client, asked) in [
            ([127, 0, 0, 1], [127, 0, 0, 2]),
            ([127, 0, 0, 2], [127, 0, 0, 1]),
        ] {
            let client = UdpSocket::bind((Ipv4Addr::from(client), 0)).expect("client");
            client
                .connect((Ipv4Addr::from(asked), port))
                .expect("connect");
            client
                .set_read_timeout(Some(Duration::from_secs(3)))
                .expect("timeout");
            client.send(&query).expect("send");
            let mut reply = [0u8; 512];
            let len = client
                .recv(&mut reply)
                .expect("a reply from the address asked");
            assert!(len >= 12 && reply[..2] == [0, 7], "{:?}", &reply[..len]);
        }
        runtime.block_on(workers.stop());
    }
}
