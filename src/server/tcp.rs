//! TCP: an accept loop and one task per connection, framing RFC 1035 §4.2.2 messages and
//! handing each to [`Handler::respond`], the parser and path UDP takes — so a message is
//! answered, or dropped, the same over both transports.
//!
//! Connections are counted against the process-wide cap of [`crate::limits`]: at the cap the
//! longest-idle connection is shed to make room. An `accept` that fails for want of
//! descriptors (`EMFILE`, `ENFILE`) sheds one too and backs off, rather than spinning on a
//! listener that stays readable; UDP and the open connections are served meanwhile.
//! Queries pipelined on one connection are answered as each is ready (RFC 7766 §6.2.1.1):
//! one that waits for an upstream does not hold up those behind it. A connection is one
//! task: the queries that arrived together are answered together and their replies leave
//! in one write.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use hickory_proto::rr::Record;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Handler, Outcome, Transport};
use crate::limits::{Registered, limits};
use crate::wire::{Rebuilt, Request, rcode};

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

/// One connection, served by this one task: what the client sent is read in as large a
/// piece as it comes, every complete message in it is answered in turn into one output
/// buffer, and the buffer goes out in one write. Pipelined queries for the cluster zone
/// therefore cost no task and no allocation of their own; one that waits for an upstream
/// continues in a task, and its reply joins the output when it is ready, so it holds up
/// none behind it.
///
/// Closed when the client closes, after [`IDLE_TIMEOUT`] without a complete message, when
/// shed, or at shutdown; replies still being worked out are sent first, except when shed.
async fn connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    current: Arc<ArcSwap<Handler>>,
    registered: Registered,
    stop: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.split();
    let (replies, mut forwarded) = mpsc::channel::<Vec<u8>>(REPLY_QUEUE);
    let activity = &registered.activity;
    let shed = &registered.shed;
    let mut input: Vec<u8> = Vec::with_capacity(READ_SIZE);
    let mut output: Vec<u8> = Vec::with_capacity(4096);
    let mut reply: Vec<u8> = Vec::with_capacity(4096);
    let mut in_flight = 0usize;
    let mut reading = true;
    let idle = tokio::time::sleep(IDLE_TIMEOUT);
    tokio::pin!(idle);
    while reading || in_flight > 0 {
        tokio::select! {
            read = reader.read_buf(&mut input), if reading => match read {
                Ok(0) | Err(_) => reading = false,
                Ok(_) => {}
            },
            Some(framed) = forwarded.recv(), if in_flight > 0 => {
                in_flight -= 1;
                output.extend_from_slice(&framed);
            }
            () = &mut idle, if reading => reading = false,
            () = stop.cancelled(), if reading => reading = false,
            () = shed.cancelled() => break,
        }
        let mut frames = Frames(&input);
        if let Some(first) = frames.next() {
            activity.touch();
            idle.as_mut()
                .reset(tokio::time::Instant::now() + IDLE_TIMEOUT);
            let handler = current.load();
            for message in std::iter::once(first).chain(frames.by_ref()) {
                if message.is_empty() {
                    // A zero-length frame holds no message: nothing to answer.
                    continue;
                }
                reply.clear();
                match handler.respond(message, peer, Transport::Tcp, &mut reply) {
                    Outcome::Reply => push_framed(&mut output, &reply),
                    Outcome::Forward(pending) => {
                        in_flight += 1;
                        let handler = Arc::clone(&handler);
                        let replies = replies.clone();
                        let busy = activity.busy();
                        tokio::spawn(async move {
                            let mut out = Vec::new();
                            handler.complete(pending, &mut out).await;
                            // An empty frame stands for no reply: the count still comes down.
                            let mut framed = Vec::with_capacity(out.len() + 2);
                            if !out.is_empty() {
                                push_framed(&mut framed, &out);
                            }
                            let _ = replies.send(framed).await;
                            drop(busy);
                        });
                    }
                    Outcome::Transfer(records) => {
                        for framed in transfer_messages(message, &records) {
                            output.extend_from_slice(&framed);
                        }
                    }
                    Outcome::Drop => {}
                }
            }
        }
        let consumed = input.len() - frames.0.len();
        input.drain(..consumed);
        // Room for the whole of a message that has begun, so one read can complete it.
        if let Some(whole) = frame_length(&input) {
            input.reserve(whole.saturating_sub(input.len()));
        }
        if !output.is_empty() {
            if !write_out(&mut writer, &output, peer).await {
                break;
            }
            activity.touch();
            output.clear();
            if output.capacity() > OUTPUT_KEPT {
                output.shrink_to(OUTPUT_KEPT);
            }
        }
    }
    let _ = writer.shutdown().await;
    drop(registered);
}

/// Writes `output`, each [`WRITE_CHUNK`] of it within [`IDLE_TIMEOUT`]: a client that does
/// not read its replies is not waited for beyond the idle time, and a zone transfer that
/// keeps moving is not cut off for taking longer as a whole. False when the connection is
/// done for.
async fn write_out(
    writer: &mut tokio::net::tcp::WriteHalf<'_>,
    output: &[u8],
    peer: SocketAddr,
) -> bool {
    for chunk in output.chunks(WRITE_CHUNK) {
        match tokio::time::timeout(IDLE_TIMEOUT, writer.write_all(chunk)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::debug!(%error, %peer, "tcp send");
                return false;
            }
            Err(_) => {
                tracing::debug!(%peer, "tcp send: the client reads no replies");
                return false;
            }
        }
    }
    true
}

/// How much of a connection's output one timed write carries.
const WRITE_CHUNK: usize = 64 * 1024;
/// How much a connection reads at a time, at least.
const READ_SIZE: usize = 4096;
/// The output buffer a connection keeps between writes; a zone transfer's is given back.
const OUTPUT_KEPT: usize = 64 * 1024;

/// The length of the frame `bytes` begins with, its two-byte prefix included, once the
/// prefix is there.
fn frame_length(bytes: &[u8]) -> Option<usize> {
    let prefix = bytes.get(..2)?;
    Some(2 + usize::from(u16::from_be_bytes([prefix[0], prefix[1]])))
}

/// The messages of the whole length-prefixed frames at the start of a buffer, in order; what
/// is left (a frame not yet complete) stays in `.0`.
struct Frames<'a>(&'a [u8]);

impl<'a> Iterator for Frames<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let whole = frame_length(self.0)?;
        let message = self.0.get(2..whole)?;
        self.0 = &self.0[whole..];
        Some(message)
    }
}

/// Appends `reply` behind its two-byte length; logged and left out if it does not fit one.
fn push_framed(output: &mut Vec<u8>, reply: &[u8]) {
    let Ok(length) = u16::try_from(reply.len()) else {
        tracing::error!(len = reply.len(), "tcp reply longer than a message can be");
        return;
    };
    output.extend_from_slice(&length.to_be_bytes());
    output.extend_from_slice(reply);
}

/// A zone transfer: the records over as many framed messages as they need, each the
/// authoritative reply to `query` with the next records in its answer (no OPT record).
fn transfer_messages(query: &[u8], records: &[Record]) -> Vec<Vec<u8>> {
    let Ok(request) = Request::parse(query) else {
        return Vec::new();
    };
    let mut messages = Vec::new();
    for chunk in records.chunks(TRANSFER_CHUNK) {
        let mut reply = Rebuilt::reply_to(&request, true, rcode::NOERROR).without_opt();
        if chunk
            .iter()
            .try_for_each(|record| reply.push_record(record, 1))
            .is_none()
        {
            tracing::warn!("zone transfer interrupted: a record does not encode");
            break;
        }
        let bytes = reply.finish();
        if bytes.len() > usize::from(u16::MAX) {
            tracing::warn!(
                len = bytes.len(),
                "zone transfer interrupted: a message too long"
            );
            break;
        }
        let mut framed = Vec::with_capacity(bytes.len() + 2);
        push_framed(&mut framed, &bytes);
        messages.push(framed);
    }
    messages
}
