//! Binding UDP and TCP on the same address and port.

use std::io;
use std::net::{IpAddr, SocketAddr};

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

async fn bind_pair(addr: SocketAddr) -> io::Result<Listener> {
    if addr.port() != 0 {
        let udp = UdpSocket::bind(addr)
            .await
            .map_err(|e| context(e, "udp", addr))?;
        let tcp = TcpListener::bind(addr)
            .await
            .map_err(|e| context(e, "tcp", addr))?;
        return Ok(Listener { udp, tcp, addr });
    }
    let mut last = None;
    for _ in 0..PORT_ATTEMPTS {
        let udp = UdpSocket::bind(addr)
            .await
            .map_err(|e| context(e, "udp", addr))?;
        let bound = udp.local_addr()?;
        match TcpListener::bind(bound).await {
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
