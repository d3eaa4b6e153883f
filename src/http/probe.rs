//! The *health* plugin's self-probe (`overloaded.go`): once a second, GET our own
//! `/health` and record how long it took; a slow answer means an overloaded process.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::metrics::HealthMetrics;

/// How often the probe runs.
pub(crate) const INTERVAL: Duration = Duration::from_secs(1);
/// How long one probe may take (CoreDNS's client timeout).
const TIMEOUT: Duration = Duration::from_secs(3);
/// A local probe slower than this is logged.
const SLOW: Duration = Duration::from_secs(1);

/// Where to reach a listener bound to `bound`: its own address, or loopback for a wildcard.
pub(crate) fn reachable(bound: SocketAddr) -> SocketAddr {
    let ip = match bound.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, bound.port())
}

/// Probes `target` (when set) every [`INTERVAL`] until `stop`.
pub(crate) async fn run(
    target: Arc<ArcSwapOption<SocketAddr>>,
    metrics: Arc<HealthMetrics>,
    stop: CancellationToken,
) {
    let mut tick = tokio::time::interval(INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate; CoreDNS's first probe is a second after start.
    tick.tick().await;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let Some(addr) = target.load_full() else {
            continue;
        };
        let start = Instant::now();
        let outcome = tokio::select! {
            () = stop.cancelled() => return,
            outcome = tokio::time::timeout(TIMEOUT, probe(*addr)) => outcome,
        };
        let elapsed = start.elapsed();
        match outcome {
            Ok(Ok(())) => {
                metrics.observe(elapsed.as_secs_f64());
                if elapsed > SLOW {
                    tracing::warn!(
                        "local health request to \"http://{addr}/health\" took more than 1s: \
                         {elapsed:?}"
                    );
                }
            }
            Ok(Err(error)) => {
                metrics.failed(elapsed.as_secs_f64());
                tracing::warn!("local health request to \"http://{addr}/health\" failed: {error}");
            }
            Err(_) => {
                metrics.failed(elapsed.as_secs_f64());
                tracing::warn!(
                    "local health request to \"http://{addr}/health\" failed: timed out after \
                     {TIMEOUT:?}"
                );
            }
        }
    }
}

/// One `GET /health`: succeeds on a `200` status line.
async fn probe(addr: SocketAddr) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!(
        "GET /health HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: clusterdns-health\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    // The status line is all we need; the body is "OK".
    let mut response = Vec::with_capacity(256);
    let mut chunk = [0u8; 256];
    while !response.windows(2).any(|pair| pair == b"\r\n") && response.len() < 4096 {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        response.extend_from_slice(&chunk[..n]);
    }
    let status_line = response.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut parts = status_line.split(|&b| b == b' ');
    let version = parts.next().unwrap_or_default();
    let status = parts.next().unwrap_or_default();
    if version.starts_with(b"HTTP/1.") && status == b"200" {
        Ok(())
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("answered {:?}", String::from_utf8_lossy(status_line)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_are_reached_on_loopback() {
        assert_eq!(
            reachable("0.0.0.0:8080".parse().expect("addr")),
            "127.0.0.1:8080".parse::<SocketAddr>().expect("addr")
        );
        assert_eq!(
            reachable("[::]:8080".parse().expect("addr")),
            "[::1]:8080".parse::<SocketAddr>().expect("addr")
        );
        assert_eq!(
            reachable("10.0.0.5:8080".parse().expect("addr")),
            "10.0.0.5:8080".parse::<SocketAddr>().expect("addr")
        );
    }
}
