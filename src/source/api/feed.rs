//! The feed: one task per resource turning the [`Reflector`]'s events into [`Change`]s of
//! the minimal model.
//!
//! [`Change`]: super::state::Change

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::reflector::{Error, Event, Params, Reflector, Watched};
use super::state::{Change, namespace_key};
use crate::model::Kind;
use crate::model::{Object, ObjectKey, convert};

/// One resource's watch and where its changes go.
pub(super) struct Feed {
    pub(super) params: Params,
    pub(super) resource: Kind,
    /// The one namespace watched (`None`: all).
    pub(super) namespace: Option<String>,
    /// Namespaces whose objects are kept (`None`: all).
    pub(super) namespaces: Option<Arc<HashSet<String>>>,
    pub(super) tx: mpsc::UnboundedSender<Change>,
    pub(super) stop: CancellationToken,
}

impl Feed {
    /// Lists and watches `K` until `stop`, backing off after each error as kube-rs's default
    /// backoff does, converting each object with `convert`. A streaming list the API server
    /// refuses is sent once as [`Change::ListFallback`] and the resource is listed in pages
    /// from then on.
    pub(super) async fn run<K, F>(self, client: Client, convert: F)
    where
        K: Watched,
        F: Fn(K) -> Result<Object, convert::ConvertError> + Send + 'static,
    {
        let Self {
            params,
            resource,
            namespace,
            namespaces,
            tx,
            stop,
        } = self;
        let mut reflector = Reflector::<K>::new(client, namespace.as_deref(), params);
        let mut backoff = Backoff::default();
        // A watch starts with a streaming list unless told to page; the first refusal of
        // one turns this resource to paginated lists for good, as client-go's reflector does.
        // A 403 to the first streaming list (an account that may list the resource but not
        // watch it): that list is paged, so that what the account may do is served, and the
        // next re-list streams again. A 403 to a later one is retried as it is: an
        // API server that has just restarted refuses service accounts until its RBAC caches
        // are filled, and paging every re-list then would cost it more, not less.
        let mut stream_again = false;
        let mut ever_listed = false;
        loop {
            let streaming = reflector.params.streaming;
            let item = tokio::select! {
                item = reflector.next() => item,
                () = stop.cancelled() => return,
            };
            let change = match item {
                Ok(Event::Init) => Change::Init(resource),
                Ok(Event::InitDone) => {
                    ever_listed = true;
                    if stream_again {
                        reflector.params.streaming = true;
                        stream_again = false;
                    }
                    Change::InitDone(resource)
                }
                Ok(Event::InitApply(object) | Event::Apply(object)) => {
                    let key = key_of(&object, resource);
                    if namespaces
                        .as_ref()
                        .is_some_and(|keep| !keep.contains(&*key.namespace))
                    {
                        continue;
                    }
                    match convert(object) {
                        Ok(object) => Change::Upsert(Box::new(object)),
                        Err(error) => {
                            tracing::warn!(
                                resource = resource.plural(),
                                "{}: {error}; left out of the zone",
                                display_key(&key)
                            );
                            Change::Delete(resource, key)
                        }
                    }
                }
                Ok(Event::Delete(object)) => Change::Delete(resource, key_of(&object, resource)),
                Err(error) if streaming && streaming_refused(&error) => {
                    reflector.params.streaming = false;
                    Change::ListFallback(resource, describe(&error, resource, true))
                }
                Err(error) if streaming && !ever_listed && forbidden_to_watch(&error) => {
                    reflector.params.streaming = false;
                    stream_again = true;
                    Change::Failed(resource, describe(&error, resource, true))
                }
                Err(error) => {
                    // A 404 for ServiceImports: the Multi-Cluster Services CRD is not installed.
                    let change = if resource == Kind::ServiceImport
                        && error.status().is_some_and(|status| status.code == 404)
                    {
                        Change::Absent(resource)
                    } else {
                        Change::Failed(resource, describe(&error, resource, streaming))
                    };
                    if tx.send(change).is_err() {
                        return;
                    }
                    tokio::select! {
                        () = tokio::time::sleep(backoff.next()) => {}
                        () = stop.cancelled() => return,
                    }
                    continue;
                }
            };
            if tx.send(change).is_err() {
                return;
            }
        }
    }
}

/// kube-rs's default backoff between retries: 0.8 s doubling to 30 s, with jitter, from
/// the start again when the last error is more than two minutes old.
#[derive(Default)]
struct Backoff {
    next: Option<Duration>,
    last: Option<tokio::time::Instant>,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(800);
    const MOST: Duration = Duration::from_secs(30);
    const RESET: Duration = Duration::from_secs(120);

    fn next(&mut self) -> Duration {
        let now = tokio::time::Instant::now();
        if self.last.is_some_and(|last| now - last > Self::RESET) {
            self.next = None;
        }
        self.last = Some(now);
        let delay = self.next.unwrap_or(Self::FIRST);
        self.next = Some((delay * 2).min(Self::MOST));
        // Jitter: anywhere from the delay to twice it, as the exponential backoff's.
        delay.mul_f64(1.0 + fastrand::f64()).min(Self::MOST)
    }
}

/// Whether `error` is the API server refusing a streaming list (`sendInitialEvents`): an API
/// server older than 1.27, or one with the `WatchList` feature gate off, answers the watch
/// that asks for one 422 Invalid ("sendInitialEvents is forbidden for watch unless the
/// WatchList feature gate is enabled", "resourceVersionMatch is forbidden for watch"), a
/// proxy in between that does not know the parameters 400 Bad Request. Only the start of
/// the initial watch is judged: a streaming list under way that fails is retried as one.
pub(super) fn streaming_refused(error: &Error) -> bool {
    matches!(error, Error::WatchStartFailed(_))
        && error
            .status()
            .is_some_and(|status| REFUSALS.contains(&status.code))
}

/// Whether `error` is a 403 to the watch that starts a streaming list: the account may not
/// watch the resource (RBAC), which a paginated list does not need.
fn forbidden_to_watch(error: &Error) -> bool {
    matches!(error, Error::WatchStartFailed(_))
        && error.status().is_some_and(|status| status.code == 403)
}

/// The HTTP codes that refuse a streaming list: the request is not understood or not allowed
/// as it is (never an outage, an expired credential or a throttle).
pub(super) const REFUSALS: [u16; 5] = [400, 406, 415, 422, 501];

/// An error as the log (and `/ready`) says it: the API server's own words when it
/// answered with a Status. A refusal by RBAC names what was refused and to whom, from the
/// server's message (`User "system:serviceaccount:kube-system:coredns" cannot list resource
/// "services" in API group "" at the cluster scope`), and what to grant.
fn describe(error: &Error, resource: Kind, streaming: bool) -> String {
    let Some(status) = error.status() else {
        return error.to_string();
    };
    let message = status.message.as_str();
    let phase = match error {
        Error::ListFailed(_) if !streaming => "listing",
        Error::ListFailed(_) | Error::WatchStartFailed(_) => "starting the watch",
        _ => "watching",
    };
    match status.code {
        401 => format!(
            "401 Unauthorized: the credentials were refused {phase} {} (an expired or revoked \
             token, or a client certificate the API server does not trust): {message}",
            resource.plural()
        ),
        403 => {
            let after = |prefix: &str, end: char| -> Option<&str> {
                let rest = &message[message.find(prefix)? + prefix.len()..];
                rest.find(end).map(|at| &rest[..at])
            };
            let verb =
                after("cannot ", ' ').unwrap_or(if phase == "listing" { "list" } else { "watch" });
            let user = after("User \"", '"').unwrap_or("this account");
            let group = after("in API group \"", '"').unwrap_or_default();
            let plural = resource.plural();
            format!(
                "forbidden to {verb} {plural} in API group \"{group}\" as {user}: the \
                 ClusterRole bound to it needs {verb} on {plural} (403: {message})"
            )
        }
        code => format!(
            "{code} {} {phase} {}: {message}",
            status.reason,
            resource.plural()
        ),
    }
}

pub(super) fn key_of<K: kube::Resource>(object: &K, resource: Kind) -> ObjectKey {
    let meta = object.meta();
    let name = meta.name.clone().unwrap_or_default();
    if resource == Kind::Namespace {
        namespace_key(&name)
    } else {
        ObjectKey::new(meta.namespace.clone().unwrap_or_default(), name)
    }
}

pub(super) fn display_key(key: &ObjectKey) -> String {
    if key.namespace.is_empty() {
        key.name.to_string()
    } else {
        format!("{}/{}", key.namespace, key.name)
    }
}
