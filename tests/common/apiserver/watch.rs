//! What a watch sees: which objects a filter selects, the event and bookmark lines, a change as
//! the watch cache renders it, and a watch's start (the initial events, or why it cannot).

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc::unbounded_channel;

use super::status::{bad_request, status_body};
use super::store::set_version;
use super::{Change, Filter, Kind, State, WatchEntry, WatchInfo, WatchStart};

impl Filter {
    pub(super) fn matches(&self, object: &Value) -> bool {
        if let Some(ns) = &self.namespace {
            let object_ns = object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str);
            if object_ns != Some(ns.as_str()) {
                return false;
            }
        }
        self.labels.matches(object) && self.fields.matches(self.kind, object)
    }
}

/// One watch event line: `{"type":..,"object":..}` and a newline.
pub(super) fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = format!("{{\"type\":\"{kind}\",\"object\":");
    line.push_str(&serde_json::to_string(object).unwrap());
    line.push_str("}\n");
    Bytes::from(line)
}

pub(super) fn bookmark_line(kind: Kind, rv: u64, initial_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    event_line(
        "BOOKMARK",
        &json!({"kind": kind.name(), "apiVersion": kind.api_version(), "metadata": metadata}),
    )
}

/// What a watch with `filter` sees of a change: the watch cache's rules (an object that
/// stops matching is deleted for this watch, one that starts matching is added).
pub(super) fn render(change: &Change, filter: &Filter) -> Option<Bytes> {
    let was = change.old.as_deref().is_some_and(|old| filter.matches(old));
    if change.deleted {
        return was.then(|| event_line("DELETED", &change.object));
    }
    match (was, filter.matches(&change.object)) {
        (true, true) => Some(event_line("MODIFIED", &change.object)),
        (false, true) => Some(event_line("ADDED", &change.object)),
        (true, false) => {
            let mut gone = change.old.as_deref().cloned().unwrap_or_default();
            set_version(&mut gone, change.rv);
            Some(event_line("DELETED", &gone))
        }
        (false, false) => None,
    }
}

impl State {
    pub(super) fn start_watch(
        &mut self,
        filter: Filter,
        info: WatchInfo,
        send_initial: bool,
        timeout: Duration,
    ) -> Result<WatchStart, (u16, Value)> {
        let (tx, rx) = unbounded_channel();
        let mut start = WatchStart {
            id: 0,
            bookmarks: info.bookmarks,
            initial: Vec::new(),
            finished: false,
            last_rv: self.rv,
            timeout,
            rx,
            filter,
        };
        let rv = info.resource_version.as_str();
        if send_initial || rv.is_empty() || rv == "0" {
            for (key, object) in &self.objects {
                if key.0 == info.kind && start.filter.matches(object) {
                    start.initial.push(event_line("ADDED", object));
                }
            }
            if send_initial {
                start.initial.push(bookmark_line(info.kind, self.rv, true));
            }
        } else {
            let Ok(from) = rv.parse::<u64>() else {
                return Err(bad_request(&format!("invalid resource version: {rv:?}")));
            };
            if from < self.base_rv {
                let status = status_body(
                    410,
                    "Expired",
                    &format!("too old resource version: {from} ({})", self.base_rv),
                    None,
                );
                start.initial.push(event_line("ERROR", &status));
                start.finished = true;
                return Ok(start);
            }
            for change in self.log.iter().filter(|c| c.rv > from) {
                if change.key.0 == info.kind
                    && let Some(line) = render(change, &start.filter)
                {
                    start.initial.push(line);
                }
            }
        }
        start.id = self.next_watch;
        self.next_watch += 1;
        self.watches.insert(start.id, WatchEntry { info, tx });
        Ok(start)
    }
}
