//! A hash map split into copy-on-write shards: the zone's index of names.
//!
//! A lookup hashes its key once, picks the shard from the hash and probes that shard's
//! table with the same hash — one probe, no allocation, as with one flat table. A change
//! clones only the shards it touches ([`Arc::make_mut`]): the next snapshot shares every
//! other shard with the one being served, so an update that touches ten names copies about
//! ten small tables, not the zone.
//!
//! The shards are held in groups of 2^[`GROUP_BITS`] and the groups in one shared list, each
//! copy-on-write too: a map is cloned by one reference count, and a change copies the list
//! of groups and the list of shards of each group it touches — a few hundred pointers, not
//! one per shard of the map (at 10,000 Services the zone has tens of thousands of shards, and
//! copying and dropping their pointers was most of the CPU an update took).
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
/// 2^6 shards a group. An update touching k groups copies and later drops 2^(bits-6) + 64k
/// pointers: the fewest for the ten or so groups a small update touches at the 2^12-2^14
/// shards of 2,000-10,000 Services (2^8 a group took a quarter more time an update at
/// 10,000 Services, 2^5 no less than 2^6: `update/*` in benches/lookup.rs, run in turn).
const GROUP_BITS: u32 = 6;

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

/// A group of shards, shared until a change to one of them copies the group's list.
type Group<T> = Arc<[Shard<T>]>;

/// A copy-on-write sharded hash map of entries that carry their keys.
#[derive(Debug, Clone)]
pub(crate) struct Sharded<T> {
    hasher: ahash::RandomState,
    groups: Arc<[Group<T>]>,
    /// 2^bits shards.
    bits: u32,
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
        let in_group = 1usize << bits.min(GROUP_BITS);
        let groups = 1usize << bits.saturating_sub(GROUP_BITS);
        Self {
            hasher: ahash::RandomState::new(),
            groups: (0..groups)
                .map(|_| {
                    (0..in_group)
                        .map(|_| Arc::new(HashTable::new()))
                        .collect::<Group<T>>()
                })
                .collect(),
            bits,
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

    /// The group and the shard in it of a key's `hash`.
    fn shard_of(&self, hash: u64) -> (usize, usize) {
        // hashbrown takes a bucket from the low bits and a tag from the top seven: the
        // shard comes from bits in between, so keys of one shard still spread in its table.
        let index = ((hash >> 32) as usize) & ((1usize << self.bits) - 1);
        (
            index >> GROUP_BITS,
            index & ((1usize << GROUP_BITS.min(self.bits)) - 1),
        )
    }

    /// The shard of a key's `hash`.
    fn shard(&self, hash: u64) -> &HashTable<T> {
        let (group, shard) = self.shard_of(hash);
        &self.groups[group][shard]
    }

    /// The shard of a key's `hash`, to change: copied (with the lists that lead to it)
    /// where another map shares it.
    fn shard_mut(&mut self, hash: u64) -> &mut HashTable<T> {
        let (group, shard) = self.shard_of(hash);
        let groups = Arc::make_mut(&mut self.groups);
        let shards = Arc::make_mut(&mut groups[group]);
        Arc::make_mut(&mut shards[shard])
    }

    /// The entry of `key`.
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&T>
    where
        T::Key: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        self.shard(hash)
            .find(hash, |entry| entry.key().borrow() == key)
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
        let hasher = self.hasher.clone();
        let shard = self.shard_mut(hash);
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
        // Look before copying: removing an absent key leaves the shard shared.
        self.shard(hash)
            .find(hash, |entry| entry.key().borrow() == key)?;
        let shard = self.shard_mut(hash);
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
        self.shards().flat_map(|shard| shard.iter())
    }

    fn shards(&self) -> impl Iterator<Item = &Shard<T>> + '_ {
        self.groups.iter().flat_map(|group| group.iter())
    }

    /// How many shards two maps share (the same table, not copies): for tests and
    /// measurements of structural sharing.
    #[cfg(test)]
    pub(crate) fn shared_with(&self, other: &Self) -> usize {
        self.shards()
            .zip(other.shards())
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count()
    }

    /// How many groups of shards two maps share (the same list, not copies).
    #[cfg(test)]
    fn groups_shared_with(&self, other: &Self) -> usize {
        self.groups
            .iter()
            .zip(other.groups.iter())
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count()
    }

    /// The number of shards.
    #[cfg(test)]
    pub(crate) fn shard_count(&self) -> usize {
        1 << self.bits
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
    fn a_clone_and_a_change_copy_a_few_lists_not_one_pointer_per_shard() {
        let entries: Vec<(u32, u32)> = (0..2_000_000u32).map(|n| (n, n)).collect();
        let map: Sharded<(u32, u32)> = Sharded::from_entries(entries.into_iter());
        assert_eq!(map.shard_count(), 1 << MAX_SHARD_BITS);
        let mut next = map.clone();
        // A clone is one reference count: the list of groups itself is shared.
        assert!(Arc::ptr_eq(&map.groups, &next.groups));
        next.insert((7, 70));
        next.remove(&8);
        let groups = map.groups.len();
        assert_eq!(groups, 1 << (MAX_SHARD_BITS - GROUP_BITS));
        // Two shards changed: at most two groups' lists were copied, and the list of groups.
        assert!(!Arc::ptr_eq(&map.groups, &next.groups));
        assert!(next.groups_shared_with(&map) >= groups - 2);
        assert_eq!(next.shared_with(&map), map.shard_count() - 2);
        assert_eq!(map.get(&7), Some(&(7, 7)));
        assert_eq!(next.get(&7), Some(&(7, 70)));
        assert_eq!(map.get(&8), Some(&(8, 8)));
        assert_eq!(next.get(&8), None);
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
