//! The feed: one task per resource turning the kube-rs watcher's events into [`Change`]s of
//! the minimal model.
//!
//! [`Change`]: super::state::Change

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::state::{Change, namespace_key};
use crate::model::Kind;
use crate::model::{Object, ObjectKey, convert};

/// One resource's watch and where its changes go.
pub(super) struct Feed {
    pub(super) config: watcher::Config,
    pub(super) resource: Kind,
    /// Namespaces whose objects are kept (`None`: all).
    pub(super) namespaces: Option<Arc<HashSet<String>>>,
    pub(super) tx: mpsc::UnboundedSender<Change>,
    pub(super) stop: CancellationToken,
}

impl Feed {
    /// Runs kube-rs's watcher on `api` (with its default backoff on errors) until `stop`,
    /// converting each object with `convert` (which takes it: what it does not keep is moved
    /// into the model, not copied). A streaming list the API server refuses is sent once as
    /// [`Change::ListFallback`] and the watch starts again with paginated lists.
    pub(super) async fn run<K, F>(self, api: Api<K>, convert: F)
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
        F: Fn(K) -> Result<Object, convert::ConvertError> + Send + 'static,
    {
        let Self {
            mut config,
            resource,
            namespaces,
            tx,
            stop,
        } = self;
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
            let streaming =
                config.initial_list_strategy == watcher::InitialListStrategy::StreamingList;
            let stream = watcher::watcher(api.clone(), config.clone()).default_backoff();
            let mut stream = std::pin::pin!(stream);
            let mut listed = false;
            loop {
                let item = tokio::select! {
                    item = stream.next() => item,
                    () = stop.cancelled() => return,
                };
                let Some(item) = item else { return };
                let change = match item {
                    Ok(Event::Init) if stream_again && listed => {
                        config.initial_list_strategy = watcher::InitialListStrategy::StreamingList;
                        stream_again = false;
                        break;
                    }
                    Ok(Event::Init) => Change::Init(resource),
                    Ok(Event::InitDone) => {
                        listed = true;
                        ever_listed = true;
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
                    Ok(Event::Delete(object)) => {
                        Change::Delete(resource, key_of(&object, resource))
                    }
                    Err(error) if streaming && streaming_refused(&error) => {
                        config.initial_list_strategy = watcher::InitialListStrategy::ListWatch;
                        let change =
                            Change::ListFallback(resource, describe(&error, resource, true));
                        if tx.send(change).is_err() {
                            return;
                        }
                        break;
                    }
                    Err(error) if streaming && !ever_listed && forbidden_to_watch(&error) => {
                        config.initial_list_strategy = watcher::InitialListStrategy::ListWatch;
                        stream_again = true;
                        let change = Change::Failed(resource, describe(&error, resource, true));
                        if tx.send(change).is_err() {
                            return;
                        }
                        break;
                    }
                    // A 404 for ServiceImports: the Multi-Cluster Services CRD is not installed.
                    Err(error)
                        if resource == Kind::ServiceImport
                            && api_status(&error).is_some_and(|status| status.code == 404) =>
                    {
                        Change::Absent(resource)
                    }
                    Err(error) => Change::Failed(resource, describe(&error, resource, streaming)),
                };
                if tx.send(change).is_err() {
                    return;
                }
            }
        }
    }
}

/// Whether `error` is the API server refusing a streaming list (`sendInitialEvents`): an API
/// server older than 1.27, or one with the `WatchList` feature gate off, answers the watch
/// that asks for one 422 Invalid ("sendInitialEvents is forbidden for watch unless the
/// WatchList feature gate is enabled", "resourceVersionMatch is forbidden for watch"), a
/// proxy in between that does not know the parameters 400 Bad Request. Only the start of
/// the initial watch is judged: a streaming list under way that fails is retried as one.
pub(super) fn streaming_refused(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::WatchStartFailed(kube::Error::Api(status)) => {
            REFUSALS.contains(&status.code)
        }
        _ => false,
    }
}

/// Whether `error` is a 403 to the watch that starts a streaming list: the account may not
/// watch the resource (RBAC), which a paginated list does not need.
fn forbidden_to_watch(error: &watcher::Error) -> bool {
    matches!(
        error,
        watcher::Error::WatchStartFailed(kube::Error::Api(status)) if status.code == 403
    )
}

/// The HTTP codes that refuse a streaming list: the request is not understood or not allowed
/// as it is (never an outage, an expired credential or a throttle).
pub(super) const REFUSALS: [u16; 5] = [400, 406, 415, 422, 501];

/// The API server's Status in a watcher error, if it answered with one.
fn api_status(error: &watcher::Error) -> Option<&kube::core::Status> {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status))
        | watcher::Error::WatchError(status) => Some(status),
        _ => None,
    }
}

/// A watcher error as the log (and `/ready`) says it: the API server's own words when it
/// answered with a Status. A refusal by RBAC names what was refused and to whom, from the
/// server's message (`User "system:serviceaccount:kube-system:coredns" cannot list resource
/// "services" in API group "" at the cluster scope`), and what to grant.
fn describe(error: &watcher::Error, resource: Kind, streaming: bool) -> String {
    let Some(status) = api_status(error) else {
        return error.to_string();
    };
    let message = status.message.as_str();
    let phase = match error {
        watcher::Error::InitialListFailed(_) if !streaming => "listing",
        watcher::Error::InitialListFailed(_) | watcher::Error::WatchStartFailed(_) => {
            "starting the watch"
        }
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
