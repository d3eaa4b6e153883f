//! A watch stream: its parameters, the task that turns changes into event lines, and the chunked
//! body that ends cleanly or is cut.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame};
use tokio::sync::mpsc;

use super::connection::Flushes;
use super::serve::{Outcome, bad, parse_bool};
use super::status::status_body;
use super::watch::{bookmark_line, event_line, render};
use super::{Cut, Filter, Kind, Request, Shared, WatchInfo, WatchMsg, WatchStart};

/// The watch timeout when the request names none (the real server picks 30–60 min).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

pub(super) fn watch(
    shared: &Arc<Shared>,
    kind: Kind,
    filter: Filter,
    request: &Request,
    limit: Option<Duration>,
    flushes: Arc<Flushes>,
) -> Outcome {
    let flag = |name: &str| request.param(name).map(parse_bool);
    let bookmarks = match flag("allowWatchBookmarks") {
        None => false,
        Some(Some(on)) => on,
        Some(None) => return Outcome::Json(400, bad("invalid value for allowWatchBookmarks")),
    };
    let send_initial = match flag("sendInitialEvents") {
        None => false,
        Some(Some(on)) => on,
        Some(None) => return Outcome::Json(400, bad("invalid value for sendInitialEvents")),
    };
    if send_initial && !bookmarks {
        return Outcome::Json(
            400,
            bad("sendInitialEvents is forbidden for watch unless allowWatchBookmarks=true"),
        );
    }
    let mut timeout = match request.param("timeoutSeconds").filter(|t| !t.is_empty()) {
        None => DEFAULT_WATCH_TIMEOUT,
        Some(text) => match text.parse::<u64>() {
            Ok(seconds) => Duration::from_secs(seconds),
            Err(_) => return Outcome::Json(400, bad(&format!("invalid timeoutSeconds: {text:?}"))),
        },
    };
    if let Some(limit) = limit {
        timeout = timeout.min(limit);
    }
    let info = WatchInfo {
        kind,
        namespace: filter.namespace.clone(),
        label_selector: request.param("labelSelector").map(str::to_owned),
        field_selector: request.param("fieldSelector").map(str::to_owned),
        resource_version: request.param("resourceVersion").unwrap_or("").to_owned(),
        bookmarks,
    };
    let start = match shared
        .state
        .lock()
        .unwrap()
        .start_watch(filter, info, send_initial, timeout)
    {
        Ok(start) => start,
        Err((status, body)) => return Outcome::Json(status, body),
    };
    let (tx, rx) = mpsc::unbounded_channel();
    shared
        .handle
        .spawn(run_watch(Arc::clone(shared), kind, start, tx));
    Outcome::Watch(WatchBody {
        rx,
        flushes,
        cut_after: None,
    })
}

/// What the watch task hands the response body.
enum BodyItem {
    Data(Bytes),
    /// Send this, then fail the body (closing the connection) once it is flushed.
    Cut(Bytes),
    /// Fail the body now.
    Abort,
}

/// Removes a watch from the registry when its task ends.
struct WatchGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        if let Ok(mut state) = self.shared.state.lock() {
            state.watches.remove(&self.id);
        }
    }
}

fn half(line: &Bytes) -> Bytes {
    line.slice(..line.len() / 2)
}

async fn run_watch(
    shared: Arc<Shared>,
    kind: Kind,
    mut watch: WatchStart,
    out: mpsc::UnboundedSender<BodyItem>,
) {
    let _guard = WatchGuard {
        shared: Arc::clone(&shared),
        id: watch.id,
    };
    drop(shared);
    for line in std::mem::take(&mut watch.initial) {
        if out.send(BodyItem::Data(line)).is_err() {
            return;
        }
    }
    if watch.finished {
        return;
    }
    let deadline = tokio::time::sleep(watch.timeout);
    tokio::pin!(deadline);
    let mut armed = false;
    loop {
        let message = tokio::select! {
            () = &mut deadline => {
                if watch.bookmarks {
                    let line = bookmark_line(kind, watch.last_rv, false);
                    let _ = out.send(BodyItem::Data(line));
                }
                return;
            }
            () = out.closed() => return,
            message = watch.rx.recv() => message,
        };
        let Some(message) = message else { return };
        let item = match message {
            WatchMsg::Change(change) => {
                watch.last_rv = watch.last_rv.max(change.rv);
                let Some(line) = render(&change, &watch.filter) else {
                    continue;
                };
                if armed {
                    let _ = out.send(BodyItem::Cut(half(&line)));
                    return;
                }
                BodyItem::Data(line)
            }
            WatchMsg::Bookmark(rv) => {
                watch.last_rv = watch.last_rv.max(rv);
                if !watch.bookmarks {
                    continue;
                }
                BodyItem::Data(bookmark_line(kind, rv, false))
            }
            WatchMsg::Gone => {
                let status = status_body(
                    410,
                    "Expired",
                    &format!(
                        "too old resource version: {} ({})",
                        watch.last_rv,
                        watch.last_rv + 1
                    ),
                    None,
                );
                let _ = out.send(BodyItem::Data(event_line("ERROR", &status)));
                return;
            }
            WatchMsg::Close(Cut::Clean) => return,
            WatchMsg::Close(Cut::Abort) => {
                let _ = out.send(BodyItem::Abort);
                return;
            }
            WatchMsg::Close(Cut::MidLine) => {
                let line = bookmark_line(kind, watch.last_rv, false);
                let _ = out.send(BodyItem::Cut(half(&line)));
                return;
            }
            WatchMsg::Close(Cut::NextEvent) => {
                armed = true;
                continue;
            }
        };
        if out.send(item).is_err() {
            return;
        }
    }
}

/// A watch response body: each line one chunk; ends cleanly when the watch task ends,
/// or fails (so hyper closes the connection without the last chunk).
pub(super) struct WatchBody {
    rx: mpsc::UnboundedReceiver<BodyItem>,
    flushes: Arc<Flushes>,
    /// After a cut: fail once the flush count passes this.
    cut_after: Option<u64>,
}

impl Body for WatchBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        if let Some(after) = this.cut_after {
            this.flushes.waker.register(cx.waker());
            if this.flushes.count.load(Ordering::SeqCst) > after {
                return Poll::Ready(Some(Err(io::Error::other("watch cut by the test"))));
            }
            return Poll::Pending;
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(BodyItem::Data(data))) => Poll::Ready(Some(Ok(Frame::data(data)))),
            Poll::Ready(Some(BodyItem::Cut(data))) => {
                this.cut_after = Some(this.flushes.count.load(Ordering::SeqCst));
                Poll::Ready(Some(Ok(Frame::data(data))))
            }
            Poll::Ready(Some(BodyItem::Abort)) => {
                Poll::Ready(Some(Err(io::Error::other("watch aborted by the test"))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
