//! TCP: an accept loop and one task per connection, framing RFC 1035 §4.2.2 messages and
//! handing each to [`Handler::respond`], the parser and path UDP takes — so a message is
//! answered, or dropped, the same over both transports.
//!
//! Connections are counted against the process-wide cap of [`crate::limits`]: at the cap the
//! longest-idle connection is shed to make room. An `accept` that fails for want of
//! descriptors (`EMFILE`, `ENFILE`) sheds one too and backs off, rather than spinning on a
//! listener that stays readable; UDP and the open connections are served meanwhile.
//! Queries pipelined on one connection are answered as each is ready (RFC 7766 §6.2.1.1):
//! one that waits for an upstream does not hold up those behind it.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use hickory_proto::op::{Message, Metadata};
use hickory_proto::rr::Record;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Handler, Outcome, Transport};
use crate::limits::{Registered, limits};

/// How many records go in one message of a zone transfer.
const TRANSFER_CHUNK: usize = 500;
/// How long a connection may sit without a complete message (CoreDNS: 10 s read timeout).
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Replies queued for one connection's writer.
const REPLY_QUEUE: usize = 32;
/// The first and the longest pause after an `accept` that failed for want of descriptors.
const BACKOFF_MIN: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Accepts connections on `listener` until `stop`; each is served by a task of its own.
pub(crate) async fn serve(
    listener: TcpListener,
    current: Arc<ArcSwap<Handler>>,
    stop: CancellationToken,
) {
    let mut backoff = BACKOFF_MIN;
    let mut shortage_logged = false;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                backoff = BACKOFF_MIN;
                shortage_logged = false;
                let registered = limits().tcp.register();
                tokio::spawn(connection(
                    stream,
                    peer,
                    Arc::clone(&current),
                    registered,
                    stop.clone(),
                ));
            }
            Err(error) if out_of_descriptors(&error) => {
                let shed = limits().tcp.out_of_descriptors();
                if !shortage_logged {
                    tracing::warn!(
                        %error,
                        "tcp accept: out of file descriptors; backing off{}",
                        if shed { ", the longest-idle connection shed" } else { "" }
                    );
                    shortage_logged = true;
                }
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = stop.cancelled() => return,
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
            Err(error) => {
                // A connection reset before it was accepted, and the like: the next one.
                limits().tcp.accept_failed();
                tracing::debug!(%error, "tcp accept");
            }
        }
    }
}

/// Whether an `accept` error is the process or the system out of descriptors (or of the
/// memory for a socket): retrying at once fails the same way.
fn out_of_descriptors(error: &io::Error) -> bool {
    const ENFILE: i32 = 23;
    const EMFILE: i32 = 24;
    const ENOBUFS: i32 = 105;
    const ENOMEM: i32 = 12;
    matches!(
        error.raw_os_error(),
        Some(EMFILE | ENFILE | ENOBUFS | ENOMEM)
    )
}

/// One connection: messages read one after another, each answered when ready; closed when
/// the client closes, after [`IDLE_TIMEOUT`] without a message, when shed, or at shutdown
/// (replies still being worked out are sent first).
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    current: Arc<ArcSwap<Handler>>,
    registered: Registered,
    stop: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.into_split();
    let (replies, mut queued) = mpsc::channel::<Vec<u8>>(REPLY_QUEUE);
    let activity = Arc::clone(&registered.activity);
    let shed = registered.shed.clone();
    let write_shed = shed.clone();
    let write_activity = Arc::clone(&activity);
    let writing = tokio::spawn(async move {
        loop {
            let framed = tokio::select! {
                framed = queued.recv() => framed,
                () = write_shed.cancelled() => None,
            };
            let Some(framed) = framed else { break };
            // A client that does not read its replies is not waited for beyond the idle time.
            match tokio::time::timeout(IDLE_TIMEOUT, writer.write_all(&framed)).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::debug!(%error, %peer, "tcp send");
                    write_shed.cancel();
                    break;
                }
                Err(_) => {
                    tracing::debug!(%peer, "tcp send: the client reads no replies");
                    write_shed.cancel();
                    break;
                }
            }
            write_activity.touch();
        }
        let _ = writer.shutdown().await;
    });
    let mut message = Vec::with_capacity(512);
    let mut out = Vec::with_capacity(4096);
    loop {
        let read = tokio::select! {
            read = tokio::time::timeout(IDLE_TIMEOUT, read_frame(&mut reader, &mut message)) => read,
            () = shed.cancelled() => break,
            () = stop.cancelled() => break,
        };
        match read {
            Ok(Ok(true)) => {}
            // Closed by the client, a read error, or idle too long.
            Ok(Ok(false) | Err(_)) | Err(_) => break,
        }
        activity.touch();
        if message.is_empty() {
            // A zero-length frame holds no message: nothing to answer, the next one follows.
            continue;
        }
        let handler = current.load_full();
        out.clear();
        match handler.respond(&message, peer, Transport::Tcp, &mut out) {
            Outcome::Reply => {
                if let Some(framed) = frame(&out)
                    && !queue(&replies, framed, &shed).await
                {
                    break;
                }
            }
            Outcome::Forward(pending) => {
                let replies = replies.clone();
                let busy = activity.busy();
                tokio::spawn(async move {
                    let mut out = Vec::new();
                    handler.complete(pending, &mut out).await;
                    if !out.is_empty()
                        && let Some(framed) = frame(&out)
                    {
                        let _ = replies.send(framed).await;
                    }
                    drop(busy);
                });
            }
            Outcome::Transfer(records) => {
                for framed in transfer_messages(&message, &records) {
                    if !queue(&replies, framed, &shed).await {
                        break;
                    }
                }
            }
            Outcome::Drop => {}
        }
    }
    // The writer ends once every reply still being worked out has been queued and sent.
    drop(replies);
    let _ = writing.await;
    drop(registered);
}

/// Queues a reply for the writer: false if the connection is closing.
async fn queue(replies: &mpsc::Sender<Vec<u8>>, framed: Vec<u8>, shed: &CancellationToken) -> bool {
    tokio::select! {
        sent = replies.send(framed) => sent.is_ok(),
        () = shed.cancelled() => false,
    }
}

/// Reads one length-prefixed message into `message`: false at a clean end of the stream.
async fn read_frame(
    reader: &mut tokio::net::tcp::OwnedReadHalf,
    message: &mut Vec<u8>,
) -> io::Result<bool> {
    let mut length = [0u8; 2];
    match reader.read_exact(&mut length).await {
        Ok(_) => {}
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(error) => return Err(error),
    }
    message.clear();
    message.resize(usize::from(u16::from_be_bytes(length)), 0);
    reader.read_exact(message).await?;
    Ok(true)
}

/// `reply` behind its two-byte length; `None` (logged) if it does not fit one.
fn frame(reply: &[u8]) -> Option<Vec<u8>> {
    let Ok(length) = u16::try_from(reply.len()) else {
        tracing::error!(len = reply.len(), "tcp reply longer than a message can be");
        return None;
    };
    let mut framed = Vec::with_capacity(reply.len() + 2);
    framed.extend_from_slice(&length.to_be_bytes());
    framed.extend_from_slice(reply);
    Some(framed)
}

/// A zone transfer: the records over as many framed messages as they need.
fn transfer_messages(query: &[u8], records: &[Record]) -> Vec<Vec<u8>> {
    let Ok(request) = Message::from_vec(query) else {
        return Vec::new();
    };
    let mut metadata = Metadata::response_from_request(&request.metadata);
    metadata.authoritative = true;
    let mut messages = Vec::new();
    for chunk in records.chunks(TRANSFER_CHUNK) {
        let mut reply = Message::response(metadata.id, metadata.op_code);
        reply.metadata = metadata;
        reply.add_queries(request.queries.iter().cloned());
        reply.add_answers(chunk.iter().cloned());
        match reply.to_vec() {
            Ok(bytes) => {
                if let Some(framed) = frame(&bytes) {
                    messages.push(framed);
                }
            }
            Err(error) => {
                tracing::warn!(%error, "zone transfer interrupted");
                break;
            }
        }
    }
    messages
}
