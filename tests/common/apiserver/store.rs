//! The objects and their history: writes as the real server makes them (resourceVersions, uid
//! and creationTimestamp, no-op updates), and the objects as they were at a resourceVersion.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::{Change, Key, Kind, State, WatchMsg, key};

impl State {
    pub(super) fn apply(&mut self, mut object: Value) -> Result<u64, String> {
        let text = |field: &str| {
            object
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let (api_version, kind_name) = (text("apiVersion"), text("kind"));
        let Some(kind) = Kind::from_type(&api_version, &kind_name) else {
            return Err(format!(
                "unsupported object apiVersion {api_version:?} kind {kind_name:?} (serves: \
                 v1 Namespace, Service, Pod; discovery.k8s.io/v1 EndpointSlice)"
            ));
        };
        let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Err(format!("{kind_name} without metadata"));
        };
        let name = match metadata.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => return Err(format!("{kind_name} without metadata.name")),
        };
        let namespace = if kind.namespaced() {
            let ns = metadata
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|ns| !ns.is_empty())
                .unwrap_or("default")
                .to_owned();
            metadata.insert("namespace".to_owned(), Value::String(ns.clone()));
            ns
        } else {
            metadata.remove("namespace");
            String::new()
        };
        let key = (kind, namespace, name);
        let old = self.objects.get(&key).cloned();
        for field in ["uid", "creationTimestamp"] {
            if metadata.get(field).is_none_or(Value::is_null) {
                let value = match old.as_ref().and_then(|o| o["metadata"].get(field)) {
                    Some(value) => value.clone(),
                    None if field == "uid" => {
                        self.next_uid += 1;
                        Value::String(format!("00000000-0000-4000-8000-{:012x}", self.next_uid))
                    }
                    None => Value::String(
                        jiff::Timestamp::now()
                            .strftime("%Y-%m-%dT%H:%M:%SZ")
                            .to_string(),
                    ),
                };
                metadata.insert(field.to_owned(), value);
            }
        }
        if let Some(old) = &old
            && same_but_version(old, &object)
        {
            return Ok(self.rv);
        }
        self.rv += 1;
        set_version(&mut object, self.rv);
        let object = Arc::new(object);
        self.objects.insert(key.clone(), Arc::clone(&object));
        self.record(Change {
            rv: self.rv,
            key,
            old,
            object,
            deleted: false,
        });
        Ok(self.rv)
    }

    pub(super) fn delete(
        &mut self,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Result<u64, String> {
        let key = key(kind, namespace, name);
        let Some(old) = self.objects.remove(&key) else {
            return Err(format!(
                "no {} {:?} in namespace {namespace:?}",
                kind.name(),
                name
            ));
        };
        self.rv += 1;
        let mut last = (*old).clone();
        set_version(&mut last, self.rv);
        self.record(Change {
            rv: self.rv,
            key,
            old: Some(old),
            object: Arc::new(last),
            deleted: true,
        });
        Ok(self.rv)
    }

    pub(super) fn record(&mut self, change: Change) {
        let change = Arc::new(change);
        self.log.push(Arc::clone(&change));
        self.watches.retain(|_, watch| {
            watch.info.kind != change.key.0
                || watch.tx.send(WatchMsg::Change(Arc::clone(&change))).is_ok()
        });
    }

    /// The objects as they were at `rv` (`base_rv <= rv <= self.rv`).
    pub(super) fn objects_at(&self, rv: u64) -> std::borrow::Cow<'_, BTreeMap<Key, Arc<Value>>> {
        if rv >= self.rv {
            return std::borrow::Cow::Borrowed(&self.objects);
        }
        let mut objects = self.base.clone();
        for change in self.log.iter().take_while(|c| c.rv <= rv) {
            if change.deleted {
                objects.remove(&change.key);
            } else {
                objects.insert(change.key.clone(), Arc::clone(&change.object));
            }
        }
        std::borrow::Cow::Owned(objects)
    }
}

pub(super) fn set_version(object: &mut Value, rv: u64) {
    object["metadata"]["resourceVersion"] = Value::String(rv.to_string());
}

pub(super) fn same_but_version(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        v
    };
    strip(a) == strip(b)
}
