//! Binding UDP and TCP on the same address and port.
//!
//! UDP is bound as a group of sockets sharing the port (`SO_REUSEPORT`): the kernel hashes
//! each client's address and port to one socket of the group, so the worker blocked on that
//! socket is the only one woken for the packet. The sockets are blocking: a worker waits in
//! `recvmmsg` itself rather than in a reactor (see [`super::udp`]).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use nix::sys::socket::{setsockopt, sockopt};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;

/// UDP sockets and a TCP listener on the same address and port.
#[derive(Debug)]
pub struct Listener {
    /// The UDP sockets, one per worker, all bound to `addr`.
    pub udp: Vec<std::net::UdpSocket>,
    /// The TCP listener.
    pub tcp: TcpListener,
    /// The address both are bound to (the real port when 0 was asked for).
    pub addr: SocketAddr,
}

/// How many ports to try when port 0 asks for any free one and TCP, or the UDP group, finds
/// the port a lone UDP socket got already taken.
const PORT_ATTEMPTS: usize = 32;

/// How long a UDP worker's receive waits before it looks whether it should stop. Stopping
/// wakes it at once (`shutdown`); this only bounds a wake-up that went missing.
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(1);

/// Binds TCP and `udp_sockets` UDP sockets (at least one) on each address. Port 0 picks one
/// free port for all of them.
pub async fn bind_all(addrs: &[SocketAddr], udp_sockets: usize) -> io::Result<Vec<Listener>> {
    let mut listeners = Vec::with_capacity(addrs.len());
    for &addr in addrs {
        listeners.push(bind_pair(addr, udp_sockets.max(1)).await?);
    }
    Ok(listeners)
}

/// Binds `addr`. The IPv4 wildcard `0.0.0.0` (a block without `bind`) is bound as `[::]`
/// accepting both families where the host has IPv6, as CoreDNS's `.:53` listens on both.
async fn bind_pair(addr: SocketAddr, udp_sockets: usize) -> io::Result<Listener> {
    if addr.ip() == Ipv4Addr::UNSPECIFIED && ipv6_available() {
        let wildcard = SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), addr.port());
        return bind_pair_on(wildcard, udp_sockets).await;
    }
    bind_pair_on(addr, udp_sockets).await
}

/// Whether this host can open IPv6 sockets at all (a kernel booted with `ipv6.disable=1`,
/// or a container without IPv6, cannot).
fn ipv6_available() -> bool {
    std::net::UdpSocket::bind((Ipv6Addr::UNSPECIFIED, 0)).is_ok()
}

async fn bind_pair_on(addr: SocketAddr, udp_sockets: usize) -> io::Result<Listener> {
    if addr.port() != 0 {
        let udp = bind_udp_group(addr, udp_sockets)?;
        let tcp = bind_tcp(addr).map_err(|e| context(e, "tcp", addr))?;
        return Ok(Listener { udp, tcp, addr });
    }
    // Port 0 is found by a lone UDP socket, not by the group's first: Linux gives a socket
    // with `SO_REUSEPORT` a port another group of the same user already holds (it could
    // join it), and that group would then take a share of our datagrams. A socket without
    // it is only given a port nothing holds. The group takes the port once the lone socket
    // is closed; if anything came between, the next port is tried.
    let mut last = None;
    for _ in 0..PORT_ATTEMPTS {
        let lone = socket(addr, Type::DGRAM, Protocol::UDP)
            .and_then(|socket| socket.bind(&addr.into()).map(|()| socket))
            .map_err(|e| context(e, "udp", addr))?;
        let bound = lone
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("a UDP socket without an IP address"))?;
        let tcp = match bind_tcp(bound) {
            Ok(tcp) => tcp,
            Err(error) if error.kind() == io::ErrorKind::AddrInUse => {
                last = Some(context(error, "tcp", bound));
                continue;
            }
            Err(error) => return Err(context(error, "tcp", bound)),
        };
        drop(lone);
        match bind_udp_group(bound, udp_sockets) {
            Ok(udp) => {
                return Ok(Listener {
                    udp,
                    tcp,
                    addr: bound,
                });
            }
            Err(error) if error.kind() == io::ErrorKind::AddrInUse => last = Some(error),
            Err(error) => return Err(error),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free port for UDP and TCP together")))
}

/// `count` UDP sockets sharing `addr` (its port given).
fn bind_udp_group(addr: SocketAddr, count: usize) -> io::Result<Vec<std::net::UdpSocket>> {
    (0..count)
        .map(|_| bind_udp(addr).map_err(|e| context(e, "udp", addr)))
        .collect()
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

/// One socket of a UDP group: blocking, with `SO_REUSEPORT` so the next one can share the
/// port (the kernel only lets sockets of the same user join a group). A wildcard's socket
/// is told each datagram's destination (`IP_PKTINFO`; `IPV6_RECVPKTINFO`, which covers the
/// IPv4 it takes too), for its reply to leave from that address (see [`super::udp`]).
fn bind_udp(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
    let socket = socket(addr, Type::DGRAM, Protocol::UDP)?;
    socket.set_nonblocking(false)?;
    socket.set_reuse_port(true)?;
    socket.set_read_timeout(Some(RECEIVE_TIMEOUT))?;
    if addr.ip().is_unspecified() {
        if addr.is_ipv6() {
            setsockopt(&socket, sockopt::Ipv6RecvPacketInfo, &true)?;
        } else {
            setsockopt(&socket, sockopt::Ipv4PacketInfo, &true)?;
        }
    }
    socket.bind(&addr.into())?;
    Ok(socket.into())
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

/// The addresses a server bound to `addrs` answers on, which name it in the zone (`ns.dns`
/// and the apex NS's glue): the addresses themselves, or for an unspecified (wildcard) one,
/// as CoreDNS's `boundIPs`, every address of the machine's interfaces — both families, IPv6
/// link-local included — but loopback, unless loopback is all there is.
pub fn local_ips(addrs: &[SocketAddr]) -> Vec<IpAddr> {
    let interfaces: Vec<IpAddr> = if addrs.iter().any(|addr| addr.ip().is_unspecified()) {
        if_addrs::get_if_addrs()
            .unwrap_or_default()
            .iter()
            .map(if_addrs::Interface::ip)
            .collect()
    } else {
        Vec::new()
    };
    local_ips_among(addrs, &interfaces)
}

/// [`local_ips`], the machine's interfaces having `interfaces`.
fn local_ips_among(addrs: &[SocketAddr], interfaces: &[IpAddr]) -> Vec<IpAddr> {
    let mut ips = Vec::new();
    for addr in addrs {
        let ip = addr.ip();
        if ip.is_unspecified() {
            let outside: Vec<IpAddr> = interfaces
                .iter()
                .copied()
                .filter(|candidate| !candidate.is_loopback())
                .collect();
            if outside.is_empty() {
                ips.extend(interfaces.iter().copied());
            } else {
                ips.extend(outside);
            }
        } else {
            ips.push(ip);
        }
    }
    let mut seen = std::collections::HashSet::new();
    ips.retain(|ip| seen.insert(*ip));
    ips
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A server with no `bind` (or a wildcard one) is named by every address of the
    /// machine's interfaces but loopback, IPv6 and link-local ones included, as CoreDNS
    /// names it; by its loopback addresses where it has no other; a bound one by its own.
    #[test]
    fn a_wildcard_server_is_named_by_every_interface_address_but_loopback() {
        let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
        let interfaces = [
            ip("127.0.0.1"),
            ip("::1"),
            ip("10.244.1.2"),
            ip("fe80::a8c1:abff:fe12:3456"),
            ip("fd00:10:244:1::2"),
        ];
        let any4 = SocketAddr::from(([0, 0, 0, 0], 53));
        assert_eq!(
            local_ips_among(&[any4], &interfaces),
            interfaces[2..].to_vec()
        );
        let any6 = SocketAddr::from((Ipv6Addr::UNSPECIFIED, 53));
        assert_eq!(
            local_ips_among(&[any4, any6], &interfaces),
            interfaces[2..].to_vec()
        );
        assert_eq!(
            local_ips_among(&[any4], &interfaces[..2]),
            interfaces[..2].to_vec(),
            "loopback alone names the server"
        );
        let bound = SocketAddr::from(([127, 0, 0, 1], 1053));
        assert_eq!(local_ips_among(&[bound], &interfaces), [ip("127.0.0.1")]);
    }

    /// Port 0 never lands on a port another `SO_REUSEPORT` group of this user holds, which
    /// a first socket with `SO_REUSEPORT` would be given (and share) about once in 28 tries
    /// with a thousand such ports held.
    #[tokio::test]
    async fn port_0_never_shares_a_port_another_group_holds() {
        crate::limits::raise_nofile().unwrap();
        let loopback = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let others: Vec<std::net::UdpSocket> =
            (0..1000).map(|_| bind_udp(loopback).unwrap()).collect();
        let held: std::collections::HashSet<u16> = others
            .iter()
            .map(|socket| socket.local_addr().unwrap().port())
            .collect();
        for _ in 0..200 {
            let listeners = bind_all(&[loopback], 2).await.unwrap();
            let port = listeners[0].addr.port();
            assert!(!held.contains(&port), "port {port} is another group's");
            for udp in &listeners[0].udp {
                assert_eq!(udp.local_addr().unwrap().port(), port);
            }
            assert_eq!(listeners[0].tcp.local_addr().unwrap().port(), port);
        }
    }
}
