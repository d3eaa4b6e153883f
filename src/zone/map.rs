//! The hash map the zone's indexes use: std's, with aHash.

use std::collections::HashMap;

/// A `HashMap` hashed with aHash.
pub(super) type Map<K, V> = HashMap<K, V, ahash::RandomState>;
