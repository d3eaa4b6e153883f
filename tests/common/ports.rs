//! Ports a test chooses before it starts a server on them (a Corefile that names its own
//! port, two servers pointing at each other, CoreDNS beside clusterdns).
//!
//! Choosing a port and binding it are two steps, and the other tests running beside this
//! one may bind the port between them. [`on_free_ports`] chooses again when that happened.

use std::net::{TcpListener, UdpSocket};

/// How many times a start is tried on fresh ports before the test fails.
const ATTEMPTS: usize = 5;

/// `N` distinct ports on 127.0.0.1, each free for UDP and TCP both just now (nothing holds
/// them once this returns).
fn free_ports<const N: usize>() -> [u16; N] {
    let mut held = Vec::with_capacity(N);
    let mut ports = [0; N];
    for port in &mut ports {
        let (tcp, udp) = loop {
            let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = tcp.local_addr().unwrap().port();
            if let Ok(udp) = UdpSocket::bind(("127.0.0.1", port)) {
                break (tcp, udp);
            }
        };
        *port = tcp.local_addr().unwrap().port();
        held.push((tcp, udp));
    }
    ports
}

/// Whether a start failed only because its port was taken: what it printed says so, in
/// Rust's words or Go's.
fn port_was_taken(log: &str) -> bool {
    log.to_ascii_lowercase().contains("address already in use")
}

/// Runs `start` on `N` free ports, and again on fresh ones while it fails because one of
/// them was taken first (its error, the started program's log, says so; see
/// [`port_was_taken`]). Any other failure, or a port taken on every attempt, fails the test.
pub fn on_free_ports<const N: usize, T>(mut start: impl FnMut([u16; N]) -> Result<T, String>) -> T {
    let mut last = String::new();
    for _ in 0..ATTEMPTS {
        match start(free_ports()) {
            Ok(started) => return started,
            Err(log) if port_was_taken(&log) => last = log,
            Err(log) => panic!("did not start:\n{log}"),
        }
    }
    panic!("a port was taken before each of {ATTEMPTS} starts; the last:\n{last}")
}
