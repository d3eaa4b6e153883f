use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

/// The identity of a namespaced object: `namespace/name`.
///
/// Both parts are shared, not copied: a cluster's objects live in a few namespaces, so each
/// namespace's name is held once (interned) and every key of it points at that copy; a key's
/// clones — the map that holds the object, the object itself, the index by address — share
/// one name. A key is two pointers, and cloning one allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// `metadata.namespace` (empty for a cluster-scoped object).
    pub namespace: Arc<str>,
    /// `metadata.name`.
    pub name: Arc<str>,
}

impl ObjectKey {
    /// A key from its two parts.
    pub fn new(namespace: impl AsRef<str>, name: impl AsRef<str>) -> Self {
        Self {
            namespace: intern_namespace(namespace.as_ref()),
            name: Arc::from(name.as_ref()),
        }
    }

    /// The smallest key of `namespace`, for range scans over one namespace.
    pub(crate) fn namespace_start(namespace: &str) -> Self {
        Self::new(namespace, "")
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The namespaces' names held once, and how many were held after the last sweep.
struct Namespaces {
    held: HashSet<Arc<str>>,
    swept_at: usize,
}

static NAMESPACES: LazyLock<Mutex<Namespaces>> = LazyLock::new(|| {
    Mutex::new(Namespaces {
        held: HashSet::new(),
        swept_at: 0,
    })
});

/// The shared copy of a namespace's name. Names no key holds any more are dropped whenever
/// the set has doubled since the last sweep, so namespaces created and deleted by the
/// thousand (test runs, CI) do not accumulate.
fn intern_namespace(namespace: &str) -> Arc<str> {
    // The set stays consistent whatever a panicking holder did: it only inserts and retains.
    let mut namespaces = NAMESPACES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(held) = namespaces.held.get(namespace) {
        return Arc::clone(held);
    }
    if namespaces.held.len() >= 2 * namespaces.swept_at.max(64) {
        namespaces.held.retain(|held| Arc::strong_count(held) > 1);
        namespaces.swept_at = namespaces.held.len();
    }
    let shared: Arc<str> = Arc::from(namespace);
    namespaces.held.insert(Arc::clone(&shared));
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_one_namespace_share_its_name() {
        let a = ObjectKey::new("shop-interning", "web");
        let b = ObjectKey::new(String::from("shop-interning"), "db");
        assert!(Arc::ptr_eq(&a.namespace, &b.namespace));
        assert_eq!(a.to_string(), "shop-interning/web");
        // Ordered by namespace, then name, as the range scans over one namespace need.
        assert!(ObjectKey::new("a", "z") < ObjectKey::new("b", "a"));
        assert!(b < a);
        assert!(ObjectKey::namespace_start("shop-interning") < b);
    }

    #[test]
    fn namespaces_no_key_holds_are_swept() {
        for n in 0..1000 {
            drop(ObjectKey::new(format!("gone-{n}"), "x"));
        }
        let held = NAMESPACES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .held
            .len();
        assert!(held < 500, "{held} namespaces still held");
    }
}
