//! A hash map split into copy-on-write shards: the zone's index of names.
//!
//! A lookup hashes its key once, picks the shard from the hash and probes that shard's
//! table with the same hash — one probe, no allocation, as with one flat table. A change
//! clones only the shards it touches ([`Arc::make_mut`]): the next snapshot shares every
//! other shard with the one being served, so an update that touches ten names copies about
//! ten small tables, not the zone.
//!
//! The shard count is chosen when the map is built whole (about [`NAMES_PER_SHARD`] keys a
//! shard) and kept by every map derived from it.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::Arc;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

/// About how many keys a shard holds after a full build: small enough that copying one
/// on a change is cheap, large enough that the shard table itself costs little.
const NAMES_PER_SHARD: usize = 32;
/// At most 2^16 shards.
const MAX_SHARD_BITS: u32 = 16;

/// An entry of a [`Sharded`] map: a value that carries its own key.
pub(crate) trait Keyed {
    /// What the entry is found by.
    type Key: ?Sized + Hash + Eq;
    /// The entry's key.
    fn key(&self) -> &Self::Key;
}

/// A pair is keyed by its first half.
impl<K: Hash + Eq, V> Keyed for (K, V) {
    type Key = K;
    fn key(&self) -> &K {
        &self.0
    }
}

/// One shard: a table of entries, shared until a change copies it.
type Shard<T> = Arc<HashTable<T>>;

/// A copy-on-write sharded hash map of entries that carry their keys.
#[derive(Debug, Clone)]
pub(crate) struct Sharded<T> {
    hasher: ahash::RandomState,
    shards: Box<[Shard<T>]>,
    len: usize,
}

impl<T> Default for Sharded<T> {
    fn default() -> Self {
        Self::with_shards(0)
    }
}

impl<T> Sharded<T> {
    /// An empty map with `2^bits` shards.
    fn with_shards(bits: u32) -> Self {
        Self {
            hasher: ahash::RandomState::new(),
            shards: (0..1usize << bits)
                .map(|_| Arc::new(HashTable::new()))
                .collect(),
            len: 0,
        }
    }
}

impl<T> Sharded<T> {
    /// An empty map sharded for about `count` entries.
    pub(crate) fn for_count(count: usize) -> Self {
        let wanted = count / NAMES_PER_SHARD;
        Self::with_shards((usize::BITS - wanted.leading_zeros()).min(MAX_SHARD_BITS))
    }
}

impl<T: Keyed + Clone> Sharded<T> {
    /// A map of `entries`, sharded for their number. A key given twice keeps its last entry.
    pub(crate) fn from_entries(entries: impl ExactSizeIterator<Item = T>) -> Self {
        let mut map = Self::for_count(entries.len());
        for entry in entries {
            map.insert(entry);
        }
        map
    }

    fn shard_of(&self, hash: u64) -> usize {
        // hashbrown takes a bucket from the low bits and a tag from the top seven: the
        // shard comes from bits in between, so keys of one shard still spread in its table.
        ((hash >> 32) as usize) & (self.shards.len() - 1)
    }

    /// The entry of `key`.
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&T>
    where
        T::Key: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        self.shards[self.shard_of(hash)].find(hash, |entry| entry.key().borrow() == key)
    }

    /// Whether `key` is present.
    pub(crate) fn contains_key<Q>(&self, key: &Q) -> bool
    where
        T::Key: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get(key).is_some()
    }

    /// Puts `entry` in, in place of the entry with its key; that entry.
    pub(crate) fn insert(&mut self, entry: T) -> Option<T> {
        let hash = self.hasher.hash_one(entry.key());
        let index = self.shard_of(hash);
        let hasher = &self.hasher;
        let shard = Arc::make_mut(&mut self.shards[index]);
        match shard.entry(
            hash,
            |present| present.key() == entry.key(),
            |present| hasher.hash_one(present.key()),
        ) {
            Entry::Occupied(mut occupied) => Some(std::mem::replace(occupied.get_mut(), entry)),
            Entry::Vacant(vacant) => {
                vacant.insert(entry);
                self.len += 1;
                None
            }
        }
    }

    /// Removes the entry of `key`, and gives it.
    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<T>
    where
        T::Key: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let index = self.shard_of(hash);
        // Look before copying: removing an absent key leaves the shard shared.
        self.shards[index].find(hash, |entry| entry.key().borrow() == key)?;
        let shard = Arc::make_mut(&mut self.shards[index]);
        let (entry, _) = shard
            .find_entry(hash, |entry| entry.key().borrow() == key)
            .ok()?
            .remove();
        self.len -= 1;
        Some(entry)
    }

    /// How many entries the map holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Every entry, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.shards.iter().flat_map(|shard| shard.iter())
    }

    /// How many shards two maps share (the same table, not copies): for tests and
    /// measurements of structural sharing.
    #[cfg(test)]
    pub(crate) fn shared_with(&self, other: &Self) -> usize {
        self.shards
            .iter()
            .zip(other.shards.iter())
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count()
    }

    /// The number of shards.
    #[cfg(test)]
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn behaves_as_a_map_and_shares_what_a_change_does_not_touch() {
        let entries: Vec<(Box<[u8]>, u32)> = (0..10_000u32)
            .map(|n| (n.to_string().into_bytes().into_boxed_slice(), n))
            .collect();
        let map: Sharded<(Box<[u8]>, u32)> = Sharded::from_entries(entries.into_iter());
        assert_eq!(map.len(), 10_000);
        assert!(map.shard_count() >= 256, "{}", map.shard_count());
        assert_eq!(map.get(&b"1234"[..]).map(|e| e.1), Some(1234));
        assert_eq!(map.get(&b"nope"[..]), None);

        let mut next = map.clone();
        assert_eq!(
            next.insert((b"1234".to_vec().into_boxed_slice(), 7))
                .map(|e| e.1),
            Some(1234)
        );
        assert_eq!(next.insert((b"new".to_vec().into_boxed_slice(), 8)), None);
        assert_eq!(next.remove(&b"99"[..]).map(|e| e.1), Some(99));
        assert_eq!(next.remove(&b"99"[..]), None);
        assert_eq!(next.len(), 10_000);
        // The old map is untouched.
        assert_eq!(map.get(&b"1234"[..]).map(|e| e.1), Some(1234));
        assert_eq!(map.get(&b"99"[..]).map(|e| e.1), Some(99));
        assert_eq!(map.get(&b"new"[..]), None);
        assert_eq!(next.get(&b"1234"[..]).map(|e| e.1), Some(7));
        assert_eq!(next.get(&b"new"[..]).map(|e| e.1), Some(8));
        // At most three shards were copied.
        assert!(
            next.shared_with(&map) >= map.shard_count() - 3,
            "{} of {}",
            next.shared_with(&map),
            map.shard_count()
        );
        let mut all: Vec<u32> = next.iter().map(|(_, v)| *v).collect();
        all.sort_unstable();
        assert_eq!(all.len(), 10_000);
    }

    #[test]
    fn a_small_map_has_one_shard() {
        let map: Sharded<(u32, u32)> = Sharded::from_entries([(1, 1), (2, 2)].into_iter());
        assert_eq!(map.shard_count(), 1);
        assert_eq!(map.get(&2), Some(&(2, 2)));
        let empty: Sharded<(u32, u32)> = Sharded::default();
        assert_eq!(empty.get(&2), None);
    }
}
