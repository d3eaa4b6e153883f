//! The feed: one task per resource turning the kube-rs watcher's events into [`Change`]s of
//! the minimal model.
//!
//! [`Change`]: super::watched::Change

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

use super::Resource;
use super::watched::{Change, namespace_key};
use crate::model::{Object, ObjectKey, convert};
use crate::source::mcs;

/// One resource's watch and where its changes go.
pub(super) struct Feed {
    pub(super) config: watcher::Config,
    pub(super) resource: Resource,
    /// Namespaces whose objects are kept (`None`: all).
    pub(super) namespaces: Option<Arc<HashSet<String>>>,
    pub(super) tx: mpsc::UnboundedSender<Change>,
    pub(super) stop: CancellationToken,
}

impl Feed {
    /// Runs kube-rs's watcher on `api` (with its default backoff on errors) until `stop`,
    /// converting each object with `convert`.
    pub(super) async fn run<K, F>(self, api: Api<K>, convert: F)
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
        F: Fn(&K) -> Result<Object, convert::ConvertError> + Send + 'static,
    {
        let Self {
            config,
            resource,
            namespaces,
            tx,
            stop,
        } = self;
        let stream = watcher::watcher(api, config).default_backoff();
        let mut stream = std::pin::pin!(stream);
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                () = stop.cancelled() => return,
            };
            let Some(item) = item else { return };
            let change = match item {
                Ok(Event::Init) => Change::Init(resource),
                Ok(Event::InitDone) => Change::InitDone(resource),
                Ok(Event::InitApply(object) | Event::Apply(object)) => {
                    let key = key_of(&object, resource);
                    if namespaces
                        .as_ref()
                        .is_some_and(|keep| !keep.contains(&key.namespace))
                    {
                        continue;
                    }
                    match convert(&object) {
                        Ok(object) => Change::Upsert(Box::new(object)),
                        Err(error) => {
                            tracing::warn!(
                                resource = resource.as_str(),
                                "{}: {error}; left out of the zone",
                                display_key(&key)
                            );
                            Change::Delete(resource, key)
                        }
                    }
                }
                Ok(Event::Delete(object)) => Change::Delete(resource, key_of(&object, resource)),
                Err(error) if resource == Resource::ServiceImports && mcs::is_absent(&error) => {
                    Change::Absent(resource)
                }
                Err(error) => Change::Failed(resource, error.to_string()),
            };
            if tx.send(change).is_err() {
                return;
            }
        }
    }
}

pub(super) fn key_of<K: kube::Resource>(object: &K, resource: Resource) -> ObjectKey {
    let meta = object.meta();
    let name = meta.name.clone().unwrap_or_default();
    if resource == Resource::Namespaces {
        namespace_key(&name)
    } else {
        ObjectKey::new(meta.namespace.clone().unwrap_or_default(), name)
    }
}

pub(super) fn display_key(key: &ObjectKey) -> String {
    if key.namespace.is_empty() {
        key.name.clone()
    } else {
        format!("{}/{}", key.namespace, key.name)
    }
}
