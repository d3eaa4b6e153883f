//! Binding UDP and TCP on the same address and port.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, UdpSocket};

/// A UDP socket and a TCP listener on the same address and port.
#[derive(Debug)]
pub struct Listener {
    /// The UDP socket.
    pub udp: UdpSocket,
    /// The TCP listener.
    pub tcp: TcpListener,
    /// The address both are bound to (the real port when 0 was asked for).
    pub addr: SocketAddr,
}

/// How many ports to try when port 0 asks for any free one and TCP finds the port UDP got
/// already taken.
const PORT_ATTEMPTS: usize = 32;

/// Binds UDP and TCP on each address. Port 0 picks one free port for both.
pub async fn bind_all(addrs: &[SocketAddr]) -> io::Result<Vec<Listener>> {
    let mut listeners = Vec::with_capacity(addrs.len());
    for &addr in addrs {
        listeners.push(bind_pair(addr).await?);
    }
    Ok(listeners)
}

/// Binds `addr`. The IPv4 wildcard `0.0.0.0` (a block without `bind`) is bound as `[::]`
/// accepting both families where the host has IPv6, as CoreDNS's `.:53` listens on both.
async fn bind_pair(addr: SocketAddr) -> io::Result<Listener> {
    if addr.ip() == Ipv4Addr::UNSPECIFIED && ipv6_available() {
        return bind_pair_on(SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), addr.port())).await;
    }
    bind_pair_on(addr).await
}

/// Whether this host can open IPv6 sockets at all (a kernel booted with `ipv6.disable=1`,
/// or a container without IPv6, cannot).
fn ipv6_available() -> bool {
    std::net::UdpSocket::bind((Ipv6Addr::UNSPECIFIED, 0)).is_ok()
}

async fn bind_pair_on(addr: SocketAddr) -> io::Result<Listener> {
    if addr.port() != 0 {
        let udp = bind_udp(addr).map_err(|e| context(e, "udp", addr))?;
        let tcp = bind_tcp(addr).map_err(|e| context(e, "tcp", addr))?;
        return Ok(Listener { udp, tcp, addr });
    }
    let mut last = None;
    for _ in 0..PORT_ATTEMPTS {
        let udp = bind_udp(addr).map_err(|e| context(e, "udp", addr))?;
        let bound = udp.local_addr()?;
        match bind_tcp(bound) {
            Ok(tcp) => {
                return Ok(Listener {
                    udp,
                    tcp,
                    addr: bound,
                });
            }
            Err(error) if error.kind() == io::ErrorKind::AddrInUse => last = Some(error),
            Err(error) => return Err(context(error, "tcp", bound)),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free port for UDP and TCP together")))
}

/// A socket for `addr`: an IPv6 wildcard explicitly takes IPv4 too (whatever the
/// `net.ipv6.bindv6only` sysctl says), any other address only its own family.
fn socket(addr: SocketAddr, kind: Type, protocol: Protocol) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), kind, Some(protocol))?;
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        socket.set_only_v6(false)?;
    }
    socket.set_nonblocking(true)?;
    Ok(socket)
}

fn bind_udp(addr: SocketAddr) -> io::Result<UdpSocket> {
    let socket = socket(addr, Type::DGRAM, Protocol::UDP)?;
    socket.bind(&addr.into())?;
    UdpSocket::from_std(socket.into())
}

/// Backlog of the TCP listeners (what Go's listeners ask for, capped by somaxconn).
const TCP_BACKLOG: i32 = 4096;

fn bind_tcp(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = socket(addr, Type::STREAM, Protocol::TCP)?;
    // As tokio's and Go's listeners do: a restart does not wait out TIME_WAIT.
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(TCP_BACKLOG)?;
    TcpListener::from_std(socket.into())
}

fn context(error: io::Error, proto: &str, addr: SocketAddr) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("cannot listen on {proto} {addr}: {error}"),
    )
}

/// The addresses a server bound to `addrs` answers on: the addresses themselves, or every
/// interface address of the family for an unspecified (wildcard) one.
pub fn local_ips(addrs: &[SocketAddr]) -> Vec<IpAddr> {
    let mut ips = Vec::new();
    for addr in addrs {
        let ip = addr.ip();
        if ip.is_unspecified() {
            let interfaces = if_addrs::get_if_addrs().unwrap_or_default();
            ips.extend(
                interfaces
                    .iter()
                    .map(if_addrs::Interface::ip)
                    .filter(|candidate| candidate.is_ipv4() == ip.is_ipv4()),
            );
        } else {
            ips.push(ip);
        }
    }
    let mut seen = std::collections::HashSet::new();
    ips.retain(|ip| seen.insert(*ip));
    ips
}
