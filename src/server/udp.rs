//! The UDP loop: the path nearly every query takes.

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;

use super::{Handler, Outcome, Transport};

/// Largest UDP message accepted.
const MAX_DATAGRAM: usize = 65535;

/// Serves queries on `socket` until `shutdown`: receive, answer from the current snapshot,
/// send. Buffers are reused, so a query the cluster zone answers costs two system calls and
/// no allocation; one that goes upstream continues in a task of its own.
pub(crate) async fn serve(
    socket: Arc<UdpSocket>,
    current: Arc<ArcSwap<Handler>>,
    shutdown: CancellationToken,
) {
    let mut packet = vec![0u8; MAX_DATAGRAM];
    let mut out = Vec::with_capacity(4096);
    loop {
        let received = tokio::select! {
            received = socket.recv_from(&mut packet) => received,
            () = shutdown.cancelled() => return,
        };
        let (len, peer) = match received {
            Ok(received) => received,
            Err(error) => {
                // ICMP errors from earlier sends surface here (ECONNREFUSED); keep serving.
                tracing::debug!(%error, "udp receive");
                continue;
            }
        };
        // The handler of the running configuration; a reload swaps it between two queries.
        let handler = current.load();
        match handler.respond(&packet[..len], peer, Transport::Udp, &mut out) {
            Outcome::Reply => {
                if let Err(error) = socket.send_to(&out, peer).await {
                    tracing::debug!(%error, %peer, "udp send");
                }
            }
            Outcome::Forward(pending) => {
                let socket = Arc::clone(&socket);
                let handler = arc_swap::Guard::into_inner(handler);
                tokio::spawn(async move {
                    let mut out = Vec::new();
                    handler.complete(pending, &mut out).await;
                    if !out.is_empty()
                        && let Err(error) = socket.send_to(&out, peer).await
                    {
                        tracing::debug!(%error, %peer, "udp send");
                    }
                });
            }
            Outcome::Drop | Outcome::Transfer(_) => {}
        }
    }
}
