//! How the API watch is doing ([`ApiStatus`]): synced or not, the API server answering or
//! failing since when and why, and the `clusterdns_kubernetes_*` metrics behind it.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::metrics::{self as metrics, Collect, Exposition};
use crate::model::Kind;

/// How the watch of one block is doing.
#[derive(Debug)]
pub struct ApiStatus {
    pub(super) zone: String,
    pub(super) synced: AtomicBool,
    pub(super) synced_tx: tokio::sync::watch::Sender<bool>,
    pub(super) state: Mutex<State>,
}

#[derive(Debug, Default)]
pub(super) struct State {
    /// When the store first synced.
    pub(super) synced_at: Option<SystemTime>,
    /// The snapshot file being served (when it was written), until the first sync.
    pub(super) restored: Option<SystemTime>,
    /// The zone of the watch this one replaced is served until the first sync.
    pub(super) inherited: bool,
    /// Since when, and why, the API server has not answered (or answered with an error): for
    /// a resource (its requests refused: cleared by its next success), or for all (`None`: no
    /// answer at all, cleared by any success).
    pub(super) failing: BTreeMap<Option<Kind>, (SystemTime, String)>,
    /// When the API server last answered a request successfully.
    pub(super) last_success: Option<SystemTime>,
    /// Responses by HTTP status code; `error` for requests that got none.
    pub(super) requests: BTreeMap<String, u64>,
    /// Watch failures by resource.
    pub(super) watch_errors: BTreeMap<&'static str, u64>,
    /// Re-lists (after the first list) by resource.
    pub(super) relists: BTreeMap<&'static str, u64>,
    /// Resources whose streaming list the API server refused (listed in pages since).
    pub(super) paginated: BTreeMap<&'static str, u64>,
    /// Resources the API server said it does not have (logged once each).
    pub(super) absent: HashSet<Kind>,
    /// How the API server last encoded each resource's responses (`protobuf`, `json`).
    pub(super) encodings: BTreeMap<&'static str, &'static str>,
    /// Successful responses by resource, media type and content coding.
    pub(super) responses: BTreeMap<(&'static str, &'static str, &'static str), u64>,
}

impl ApiStatus {
    /// The status of the watch serving `zone` (its first forward zone).
    pub fn new(zone: &str) -> Self {
        let (synced_tx, _) = tokio::sync::watch::channel(false);
        Self {
            zone: zone.to_owned(),
            synced: AtomicBool::new(false),
            synced_tx,
            state: Mutex::new(State::default()),
        }
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the store has synced with the API server (every resource listed).
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Waits until the store has synced, at most `timeout`; whether it has.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let mut rx = self.synced_tx.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|synced| *synced))
            .await
            .is_ok_and(|result| result.is_ok())
    }

    /// The store serves the snapshot file written at `written` until it syncs.
    pub fn restored(&self, written: SystemTime) {
        self.state().restored = Some(written);
    }

    /// The store serves the zone of the watch this one replaced (a reloaded Corefile changed
    /// the block) until it syncs.
    pub fn inherited(&self) {
        self.state().inherited = true;
    }

    /// The snapshot file being served, if the store has not synced yet.
    pub fn serving_snapshot(&self) -> Option<SystemTime> {
        self.state().restored
    }

    pub(super) fn mark_synced(&self, at: SystemTime) {
        let mut state = self.state();
        state.restored = None;
        state.inherited = false;
        state.synced_at.get_or_insert(at);
        drop(state);
        self.synced.store(true, Ordering::Release);
        self.synced_tx.send_replace(true);
    }

    /// The API server answered a request about `resource` (if one of the watched resources)
    /// with HTTP `code`.
    pub(super) fn answered(&self, code: u16, resource: Option<Kind>) {
        let mut state = self.state();
        *state.requests.entry(code.to_string()).or_default() += 1;
        if code == 404 {
            // An answer, not an outage: a resource the server lacks (a CRD not installed).
            return;
        }
        if (200..300).contains(&code) {
            state.last_success = Some(SystemTime::now());
            let since = state.failing.values().map(|(since, _)| *since).min();
            state.failing.remove(&None);
            if resource.is_some() {
                state.failing.remove(&resource);
            }
            if let Some(since) = since.filter(|_| state.failing.is_empty()) {
                let down = SystemTime::now().duration_since(since).unwrap_or_default();
                tracing::info!(
                    zone = %self.zone,
                    "API server answers again after {:.1} s",
                    down.as_secs_f64()
                );
            }
        } else {
            let reason = match code {
                401 => "401 Unauthorized: the credentials were refused".to_owned(),
                403 => "403 Forbidden: the service account may not list/watch (check the \
                        ClusterRole)"
                    .to_owned(),
                429 => "429 Too Many Requests: the API server's priority and fairness turns \
                        this client away; retrying as its Retry-After says"
                    .to_owned(),
                _ => format!("HTTP {code}"),
            };
            self.failing(&mut state, resource, reason);
        }
    }

    /// A successful response about `resource` came encoded as `media` says, gzipped or not.
    pub(super) fn encoded(&self, resource: Kind, media: &str, gzip: bool) {
        let protobuf = media.starts_with(super::protobuf::MEDIA_TYPE);
        let encoding = match (protobuf, gzip) {
            (true, false) => "protobuf",
            (true, true) => "protobuf gzip",
            (false, false) => "json",
            (false, true) => "json gzip",
        };
        let mut state = self.state();
        state.encodings.insert(resource.plural(), encoding);
        let key = (
            resource.plural(),
            if protobuf { "protobuf" } else { "json" },
            if gzip { "gzip" } else { "none" },
        );
        *state.responses.entry(key).or_default() += 1;
    }

    /// Each resource with the encoding of its last response: `services protobuf,
    /// endpointslices protobuf gzip, …`.
    pub(super) fn encodings(&self) -> String {
        let state = self.state();
        let all: Vec<String> = state
            .encodings
            .iter()
            .map(|(resource, encoding)| format!("{resource} {encoding}"))
            .collect();
        all.join(", ")
    }

    /// The API server answered with HTTP `code`, and that says nothing of its health.
    pub(super) fn counted(&self, code: u16) {
        *self.state().requests.entry(code.to_string()).or_default() += 1;
    }

    /// A request got no answer.
    pub(super) fn unreachable(&self, error: &str) {
        let mut state = self.state();
        *state.requests.entry("error".to_owned()).or_default() += 1;
        self.failing(&mut state, None, error.to_owned());
    }

    /// Records that requests for `resource` (`None`: all) fail for `reason`; the first failure
    /// of an outage is logged.
    pub(super) fn failing(&self, state: &mut State, resource: Option<Kind>, reason: String) {
        let first = state.failing.is_empty();
        match state.failing.get_mut(&resource) {
            Some((_, last)) => *last = reason,
            None => {
                if first {
                    tracing::warn!(
                        zone = %self.zone,
                        "API server request failed: {reason}; still serving the last known \
                         state, retrying with backoff"
                    );
                }
                state.failing.insert(resource, (SystemTime::now(), reason));
            }
        }
    }

    /// The watch of `resource` failed with `error` (which says more than the HTTP code the
    /// request got: it is what `/ready` tells from now on).
    pub(super) fn watch_failed(&self, resource: Kind, error: &str) {
        let mut state = self.state();
        let known =
            state.failing.contains_key(&Some(resource)) || state.failing.contains_key(&None);
        let count = state.watch_errors.entry(resource.plural()).or_default();
        *count += 1;
        if *count == 1 || !known {
            tracing::warn!(zone = %self.zone, resource = resource.plural(), "watch failed: {error}");
        } else {
            tracing::debug!(zone = %self.zone, resource = resource.plural(), "watch failed: {error}");
        }
        if let Some((_, reason)) = state.failing.get_mut(&Some(resource)) {
            *reason = error.to_owned();
        }
    }

    /// The API server has no `resource` (its CRD is not installed).
    pub(super) fn absent(&self, resource: Kind) {
        if self.state().absent.insert(resource) {
            tracing::warn!(
                zone = %self.zone,
                resource = resource.plural(),
                "the API server does not have this resource (404: the Multi-Cluster Services \
                 CRD is not installed); answering as if there were none, retrying with backoff"
            );
        }
    }

    /// The API server refused a streaming list of `resource` (`why`): it is listed in pages
    /// from now on. Said once per resource and counted.
    pub(super) fn list_fallback(&self, resource: Kind, why: &str) {
        let mut state = self.state();
        let count = state.paginated.entry(resource.plural()).or_default();
        *count += 1;
        if *count == 1 {
            tracing::warn!(
                zone = %self.zone,
                resource = resource.plural(),
                "the API server refused a streaming list ({why}); listing in pages of 500 \
                 instead (an API server before 1.27, the WatchList feature gate off, or a \
                 proxy in between; `list_mode paginated` starts that way)"
            );
        }
    }

    pub(super) fn relisted(&self, resource: Kind) {
        *self.state().relists.entry(resource.plural()).or_default() += 1;
        tracing::info!(zone = %self.zone, resource = resource.plural(), "re-listing");
    }

    /// Whether `/ready` may say OK: the store has synced, or serves a snapshot file.
    pub fn is_ready(&self) -> bool {
        if self.is_synced() {
            return true;
        }
        let state = self.state();
        state.restored.is_some() || state.inherited
    }

    /// What `/ready` adds to its body about this watch (nothing when all is well).
    pub fn notes(&self, now: SystemTime) -> Vec<String> {
        let state = self.state();
        let age = |at: SystemTime| now.duration_since(at).unwrap_or_default().as_secs();
        let mut notes = Vec::new();
        if let Some(written) = state.restored {
            notes.push(format!(
                "kubernetes {}: serving the snapshot file (age {} s) until the API server is \
                 synced",
                self.zone,
                age(written)
            ));
        } else if !self.is_synced() {
            notes.push(format!(
                "kubernetes {}: not synced with the API server yet",
                self.zone
            ));
        }
        for (resource, (since, reason)) in &state.failing {
            let what = resource.map_or(String::new(), |r| format!(" for {}", r.plural()));
            notes.push(format!(
                "kubernetes {}: API server failing{what} for {} s ({reason}); serving the last \
                 known state",
                self.zone,
                age(*since)
            ));
        }
        notes
    }
}

impl Collect for ApiStatus {
    fn collect(&self, out: &mut Exposition) {
        let zone = self.zone.as_str();
        let state = self.state();
        let now = SystemTime::now();
        out.sample(
            "clusterdns_kubernetes_synced",
            "1 once every state resource has been listed from the API server.",
            metrics::MetricType::Gauge,
            &[("zone", zone)],
            f64::from(u8::from(self.is_synced())),
        );
        out.sample(
            "clusterdns_kubernetes_api_up",
            "1 when the API server answered the last request successfully.",
            metrics::MetricType::Gauge,
            &[("zone", zone)],
            f64::from(u8::from(
                state.failing.is_empty() && state.last_success.is_some(),
            )),
        );
        if let Some(at) = state.last_success {
            out.sample(
                "clusterdns_kubernetes_api_last_success_timestamp_seconds",
                "Unix time of the API server's last successful answer.",
                metrics::MetricType::Gauge,
                &[("zone", zone)],
                unix_seconds(at),
            );
        }
        for (code, count) in &state.requests {
            out.sample(
                "clusterdns_kubernetes_api_requests_total",
                "Requests to the API server, by HTTP status code (error: no answer).",
                metrics::MetricType::Counter,
                &[("code", code), ("zone", zone)],
                *count as f64,
            );
        }
        for ((resource, media, compression), count) in &state.responses {
            out.sample(
                "clusterdns_kubernetes_api_responses_total",
                "Successful API server responses, by resource, encoding (protobuf, json) and \
                 compression (gzip, none).",
                metrics::MetricType::Counter,
                &[
                    ("compression", compression),
                    ("encoding", media),
                    ("resource", resource),
                    ("zone", zone),
                ],
                *count as f64,
            );
        }
        for (resource, count) in &state.watch_errors {
            out.sample(
                "clusterdns_kubernetes_watch_errors_total",
                "Failed lists and watches, by resource.",
                metrics::MetricType::Counter,
                &[("resource", resource), ("zone", zone)],
                *count as f64,
            );
        }
        for (resource, count) in &state.paginated {
            out.sample(
                "clusterdns_kubernetes_list_fallbacks_total",
                "Streaming lists the API server refused, by resource: that resource is listed \
                 in pages since.",
                metrics::MetricType::Counter,
                &[("resource", resource), ("zone", zone)],
                *count as f64,
            );
        }
        for (resource, count) in &state.relists {
            out.sample(
                "clusterdns_kubernetes_relists_total",
                "Re-lists after the first list (a watch too old, 410 Gone), by resource.",
                metrics::MetricType::Counter,
                &[("resource", resource), ("zone", zone)],
                *count as f64,
            );
        }
        if let Some(written) = state.restored {
            out.sample(
                "clusterdns_kubernetes_snapshot_age_seconds",
                "Age of the snapshot file served until the API server is synced.",
                metrics::MetricType::Gauge,
                &[("zone", zone)],
                now.duration_since(written)
                    .unwrap_or_default()
                    .as_secs_f64(),
            );
        }
    }
}

pub(super) fn unix_seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}
