//! The live tracker: follows each client's search walk on the running server, by client
//! address, the name's stem and the query type, to the name that finally answered.
//!
//! Every answered query passes through [`Watch::observe`]. Its name is put in the classes of
//! the module ([`super`]): `<stem>.<ns>.svc.<zone>` (the first search domain, which starts a
//! walk in namespace `<ns>`), `<stem>.svc.<zone>`, `<stem>.<zone>`, `<stem>.<node domain>`,
//! and the stem as typed; a query that continues a walk of the same client, stem and type
//! (one step further down the list) is counted in it. An NXDOMAIN expansion is *wasted*; the
//! walk ends at the first NOERROR (*answered*) or at the name as typed (*unanswered* when
//! that fails too).
//!
//! Memory is fixed when the tracker is made: [`SHARDS`] × [`SLOTS`] walks in flight (a new
//! walk takes the slot its key hashes to), [`MAX_NAMESPACES`] namespaces with their own
//! counters (the first `limit` seen; later ones are counted as `other`), and the
//! [`STEMS`] stems with the most misses per namespace (a new stem takes an empty slot, and
//! when there is none, a miss replaces the stem with the fewest; a walk that ends with the
//! query that began it takes no slot). A query costs a hash of each stem its name may have
//! (one to four of them) and no allocation; it takes a lock only where it may change what
//! the lock guards: its client's shard when one of its keys is a live walk's or its walk
//! goes on, the namespace book when its stem's figures may change. Most queries (a name
//! the first search domain answers, a name in no walk) take none. On a loaded server
//! every query touches these tables, so what a query reads there is kept to a few cache
//! lines: the walks' keys and the stems' hashes, not their names.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::Stem;
use crate::codes::rcode::{NOERROR, NXDOMAIN};
use crate::metrics::{Collect, Counter, Exposition, Histogram, MetricType};

/// Namespaces with counters of their own, at most (the configured limit is lower or equal).
pub const MAX_NAMESPACES: usize = 64;
/// Namespaces labelled when the configuration does not say.
pub const DEFAULT_NAMESPACES: usize = 20;
/// Stems kept per namespace for `/debug/search-path`.
pub const STEMS: usize = 16;
/// Locks the walks are spread over (by client address).
pub const SHARDS: usize = 16;
/// Walks in flight per shard.
pub const SLOTS: usize = 256;
/// A walk not continued for this long is over (its slot is free for the next).
const WALK_TIMEOUT: Duration = Duration::from_secs(30);
/// Labels of a name followed (a name has at most 127).
const MAX_LABELS: usize = 128;
/// Node search domains followed, at most.
pub const MAX_NODE_DOMAINS: usize = 6;
/// `clusterdns_search_path_walk_length` buckets: names tried per walk.
pub const LENGTH_BUCKETS: [f64; 7] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0];

/// The step of a walk a query is: 0 to 2 the cluster's search domains, 3 and on the node's.
const AS_TYPED: u8 = u8::MAX;
/// The row of namespaces past the limit.
const OTHER: usize = MAX_NAMESPACES;

/// One walk in flight.
#[derive(Debug, Clone, Copy, Default)]
struct Walk {
    key: u64,
    at: Option<Instant>,
    /// Its namespace's row.
    namespace: u8,
    /// The last step seen.
    last: u8,
    /// Names tried so far.
    steps: u8,
    live: bool,
}

/// A shard of the walks.
#[derive(Debug)]
struct Shard {
    /// Each slot's walk key while its walk is live, else 0: written under the lock, read
    /// without it. A query none of whose keys is here continues no walk, and most queries
    /// (a name answered by the first search domain, a name in no walk) end there without
    /// taking the lock.
    keys: Box<[AtomicU64]>,
    walks: Mutex<Box<[Walk]>>,
}

impl Shard {
    fn lock(&self) -> MutexGuard<'_, Box<[Walk]>> {
        self.walks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A name held inline (no allocation after the tracker is made).
#[derive(Debug, Clone, Copy)]
struct Inline<const N: usize> {
    len: u8,
    bytes: [u8; N],
}

impl<const N: usize> Inline<N> {
    const EMPTY: Self = Self {
        len: 0,
        bytes: [0; N],
    };

    fn set(&mut self, bytes: &[u8]) {
        let len = bytes.len().min(N);
        self.bytes[..len].copy_from_slice(&bytes[..len]);
        self.len = len as u8;
    }

    fn of(bytes: &[u8]) -> Self {
        let mut inline = Self::EMPTY;
        inline.set(bytes);
        inline
    }

    fn get(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// The figures of one stem of a namespace.
#[derive(Debug, Clone, Copy, Default)]
struct StemSlot {
    counts: Stem,
    /// The step whose name answered ([`AS_TYPED`]: the name as typed).
    found_step: u8,
}

/// The namespaces seen, in the order first seen: read without a lock (a row is written
/// once, before `used` counts it), added to under the book's.
#[derive(Debug)]
struct Rows {
    names: Box<[OnceLock<Inline<63>>]>,
    /// The hash of each row's name ([`stem_hash`]).
    hashes: Box<[AtomicU64]>,
    used: AtomicUsize,
}

/// The stems of each namespace: their figures and names.
///
/// Every query that may start a walk looks for its stem in its namespace's row, so the
/// search goes through a compact array of hashes (the tracker's `stem_hashes`, two cache
/// lines a row, read without the lock) and reads a name only to confirm a hash that
/// matched: scanning the names themselves touched about 9 KB a query, enough to push a
/// large zone out of the CPU's caches. The book is locked only when a stem's figures may
/// change: it is held, its row has an empty slot, or a miss may take one; a stem's figures
/// are read only when it is found, or when a miss needs a slot and the one with the fewest
/// misses is chosen.
#[derive(Debug)]
struct Book {
    /// Each stem slot's figures, [`STEMS`] per row, the last row `other`'s.
    stems: Box<[StemSlot]>,
    /// Each stem slot's wire-format labels (no root).
    stem_names: Box<[Inline<255>]>,
}

/// The per-namespace counters.
#[derive(Debug, Default)]
struct Counts {
    wasted: Counter,
    upstream: Counter,
    answered: Counter,
    unanswered: Counter,
}

/// The tracker, one per process (its counters carry on across reloads).
#[derive(Debug)]
pub struct Tracker {
    shards: Box<[Shard]>,
    rows: Rows,
    /// The hash of each stem slot's name ([`stem_hash`], never 0); 0 for an empty slot.
    /// Written under the book's lock, read without it.
    stem_hashes: Box<[AtomicU64]>,
    book: Mutex<Book>,
    counts: Box<[Counts]>,
    lengths: Histogram,
    limit: AtomicUsize,
}

/// What the tracker saw in one namespace (for `/debug/search-path`).
#[derive(Debug, Clone)]
pub struct NamespaceView {
    /// The namespace, or `other`.
    pub namespace: String,
    /// NXDOMAIN expansions.
    pub wasted: u64,
    /// Those under the node's search domains (forwarded upstream).
    pub upstream: u64,
    /// Walks that ended in NOERROR.
    pub answered: u64,
    /// Walks that ended with the name as typed failing too.
    pub unanswered: u64,
    /// Its stems: the name as typed (dotted), its figures, the step that answered.
    pub stems: Vec<(String, Stem, Option<u8>)>,
}

impl Default for Tracker {
    fn default() -> Self {
        Self::new()
    }
}

impl Tracker {
    /// A tracker labelling [`DEFAULT_NAMESPACES`] namespaces.
    pub fn new() -> Self {
        let stem_slots = (MAX_NAMESPACES + 1) * STEMS;
        Self {
            shards: (0..SHARDS)
                .map(|_| Shard {
                    keys: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
                    walks: Mutex::new(vec![Walk::default(); SLOTS].into_boxed_slice()),
                })
                .collect(),
            rows: Rows {
                names: (0..MAX_NAMESPACES).map(|_| OnceLock::new()).collect(),
                hashes: (0..MAX_NAMESPACES).map(|_| AtomicU64::new(0)).collect(),
                used: AtomicUsize::new(0),
            },
            stem_hashes: (0..stem_slots).map(|_| AtomicU64::new(0)).collect(),
            book: Mutex::new(Book {
                stems: vec![StemSlot::default(); stem_slots].into_boxed_slice(),
                stem_names: vec![Inline::EMPTY; stem_slots].into_boxed_slice(),
            }),
            counts: (0..=MAX_NAMESPACES).map(|_| Counts::default()).collect(),
            lengths: Histogram::integral(&LENGTH_BUCKETS),
            limit: AtomicUsize::new(DEFAULT_NAMESPACES),
        }
    }

    /// Labels the first `limit` namespaces seen (at most [`MAX_NAMESPACES`]); namespaces
    /// already labelled keep their label.
    pub fn set_limit(&self, limit: usize) {
        self.limit
            .store(limit.min(MAX_NAMESPACES), Ordering::Relaxed);
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the tracker saw, per namespace, in the order first seen, `other` last.
    pub fn view(&self) -> Vec<NamespaceView> {
        let book = self.book();
        let used = self.rows.used.load(Ordering::Acquire);
        let rows = (0..used).chain(std::iter::once(OTHER));
        rows.filter_map(|row| {
            let counts = &self.counts[row];
            let namespace = if row == OTHER {
                "other".to_owned()
            } else {
                let name = self.rows.names[row].get().map_or(&[][..], Inline::get);
                String::from_utf8_lossy(name).into_owned()
            };
            let stems = (row * STEMS..(row + 1) * STEMS)
                .filter(|&index| self.stem_hashes[index].load(Ordering::Relaxed) != 0)
                .map(|index| {
                    let slot = &book.stems[index];
                    let found = slot.counts.found.then_some(slot.found_step);
                    (dotted(book.stem_names[index].get()), slot.counts, found)
                })
                .collect::<Vec<_>>();
            let view = NamespaceView {
                namespace,
                wasted: counts.wasted.get(),
                upstream: counts.upstream.get(),
                answered: counts.answered.get(),
                unanswered: counts.unanswered.get(),
                stems,
            };
            (row != OTHER || view.wasted + view.answered + view.unanswered > 0).then_some(view)
        })
        .collect()
    }

    /// The namespaces labelled, at most.
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }
}

impl Tracker {
    /// The row of `namespace`: its own, a new one under the limit, else `other`'s. Called
    /// without the book's lock (it takes it to add a row).
    fn row(&self, namespace: &[u8]) -> usize {
        let hash = stem_hash(namespace);
        if let Some(row) = self.find_row(namespace, hash) {
            return row;
        }
        let limit = self.limit().min(MAX_NAMESPACES);
        if self.rows.used.load(Ordering::Acquire) >= limit {
            return OTHER;
        }
        // Rows are added one at a time, under the book's lock.
        let _book = self.book();
        if let Some(row) = self.find_row(namespace, hash) {
            return row;
        }
        let used = self.rows.used.load(Ordering::Acquire);
        if used >= limit || self.rows.names[used].set(Inline::of(namespace)).is_err() {
            return OTHER;
        }
        self.rows.hashes[used].store(hash, Ordering::Relaxed);
        self.rows.used.store(used + 1, Ordering::Release);
        used
    }

    /// The row of `namespace` (whose [`stem_hash`] is `hash`), if it has one.
    fn find_row(&self, namespace: &[u8], hash: u64) -> Option<usize> {
        let used = self.rows.used.load(Ordering::Acquire);
        (0..used).find(|&row| {
            self.rows.hashes[row].load(Ordering::Relaxed) == hash
                && self.rows.names[row]
                    .get()
                    .is_some_and(|name| name.get() == namespace)
        })
    }

    /// Whether a query for the stem whose hash is `hash` (never 0) may change figures in
    /// `row` ([`Tracker::stem`] may give a slot): without the book's lock.
    fn stem_may_change(&self, row: usize, hash: u64, miss: bool) -> bool {
        miss || self.stem_hashes[row * STEMS..(row + 1) * STEMS]
            .iter()
            .any(|slot_hash| {
                let slot_hash = slot_hash.load(Ordering::Acquire);
                slot_hash == hash || slot_hash == 0
            })
    }

    /// The slot of `stem` (whose [`stem_hash`] is `hash`, never 0) in `row`, `book` being
    /// the book locked. A stem not held takes an empty slot; when there is none, a `miss`
    /// takes the slot with the fewest misses, and anything else is not kept (a stem that
    /// missed nothing would only take the place of another, one query after the other,
    /// when more stems than [`STEMS`] are asked).
    fn stem<'b>(
        &self,
        book: &'b mut Book,
        row: usize,
        stem: &[u8],
        hash: u64,
        miss: bool,
    ) -> Option<&'b mut StemSlot> {
        let range = row * STEMS..(row + 1) * STEMS;
        let hashes = &self.stem_hashes[range.clone()];
        let names = &mut book.stem_names[range.clone()];
        let slots = &mut book.stems[range];
        let found = hashes
            .iter()
            .zip(names.iter())
            .position(|(slot_hash, name)| {
                slot_hash.load(Ordering::Relaxed) == hash && name.get() == stem
            });
        let index = match found {
            Some(index) => index,
            None => {
                let empty = hashes
                    .iter()
                    .position(|slot_hash| slot_hash.load(Ordering::Relaxed) == 0);
                let index = match empty {
                    Some(empty) => empty,
                    None if miss => slots
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, slot)| (slot.counts.misses, slot.counts.first_step))
                        .map_or(0, |(index, _)| index),
                    None => return None,
                };
                slots[index] = StemSlot::default();
                names[index].set(stem);
                hashes[index].store(hash, Ordering::Release);
                index
            }
        };
        Some(&mut slots[index])
    }
}

/// The tracker as one listener's blocks see it: the cluster zone and the node's search
/// domains, in wire format, lower case.
#[derive(Debug, Clone)]
pub struct Watch {
    tracker: Arc<Tracker>,
    zone: Vec<u8>,
    node: Vec<Vec<u8>>,
}

/// Where a query's name may stand in a walk.
#[derive(Debug, Clone, Copy, Default)]
struct Candidate {
    step: u8,
    /// Bytes of the name that are the stem.
    stem_end: usize,
    key: u64,
}

impl Watch {
    /// The tracker following walks under `zone` and the node's `node` domains (both wire
    /// format; at most [`MAX_NODE_DOMAINS`] of them are followed).
    pub fn new(tracker: Arc<Tracker>, zone: &[u8], node: &[&[u8]]) -> Self {
        Self {
            tracker,
            zone: zone.to_ascii_lowercase(),
            node: node
                .iter()
                .take(MAX_NODE_DOMAINS)
                .map(|d| d.to_ascii_lowercase())
                .collect(),
        }
    }

    /// The tracker.
    pub fn tracker(&self) -> &Arc<Tracker> {
        &self.tracker
    }

    /// The cluster zone, wire format.
    pub fn zone(&self) -> &[u8] {
        &self.zone
    }

    /// The node's search domains, wire format.
    pub fn node_domains(&self) -> &[Vec<u8>] {
        &self.node
    }

    /// Counts one answered query: `name` in wire format, lower case.
    pub fn observe(&self, client: IpAddr, name: &[u8], qtype: u16, rcode: u16, now: Instant) {
        let mut starts = [0u8; MAX_LABELS];
        let Some(labels) = split(name, &mut starts) else {
            return;
        };
        let client_hash = hash_client(client, qtype);
        let mut candidates = [Candidate::default(); 4 + MAX_NODE_DOMAINS];
        let mut count = 0;
        let mut push = |step: u8, stem_labels: usize| {
            if stem_labels == 0 || count == candidates.len() {
                return;
            }
            let stem_end = if stem_labels == labels {
                name.len() - 1
            } else {
                usize::from(starts[stem_labels])
            };
            candidates[count] = Candidate {
                step,
                stem_end,
                key: stem_hash(&name[..stem_end]) ^ client_hash,
            };
            count += 1;
        };
        let mut namespace = None;
        if let Some(zone_at) = suffix_label(name, &starts[..labels], &self.zone) {
            let svc = zone_at >= 1 && label(name, starts[zone_at - 1]) == b"svc";
            if svc && zone_at >= 3 {
                namespace = Some(label(name, starts[zone_at - 2]));
                push(0, zone_at - 2);
            }
            if svc {
                push(1, zone_at - 1);
            }
            push(2, zone_at);
        }
        for (index, domain) in self.node.iter().enumerate() {
            if let Some(at) = suffix_label(name, &starts[..labels], domain) {
                push(3 + index as u8, at);
            }
        }
        push(AS_TYPED, labels);
        let candidates = &candidates[..count];
        self.tracker
            .record(client_hash, name, candidates, namespace, rcode, now);
    }
}

impl Tracker {
    /// Counts one query whose name may stand in a walk as `candidates` say.
    ///
    /// Locks are taken only where a query may change what they guard: the shard's when one
    /// of the query's keys is a live walk's there (read without the lock), or when a walk is
    /// kept for its next step; the book's when the stem's figures may change or a
    /// namespace is added. A query answered by the first search domain, or in no walk at
    /// all, takes neither once its stem's row is full: most queries on a busy server. Two
    /// queries of one client, name and type at once may then be counted as if one had come
    /// first; a stub resolver waits for each answer before the next step of its walk.
    fn record(
        &self,
        client_hash: u64,
        name: &[u8],
        candidates: &[Candidate],
        namespace: Option<&[u8]>,
        rcode: u16,
        now: Instant,
    ) {
        let shard = &self.shards[(client_hash as usize) % SHARDS];
        let fresh = |walk: &Walk| {
            walk.live
                && walk
                    .at
                    .is_some_and(|at| now.saturating_duration_since(at) < WALK_TIMEOUT)
        };
        // A step 0 continues nothing; the others only a live walk of their key.
        let may_continue = candidates
            .iter()
            .any(|c| c.step > 0 && shard.keys[slot(c.key)].load(Ordering::Acquire) == c.key);
        let mut walks = None;
        let continued = if may_continue {
            let walks = walks.insert(shard.lock());
            candidates.iter().find_map(|c| {
                let walk = walks[slot(c.key)];
                (walk.key == c.key && fresh(&walk) && walk.last < c.step).then_some((*c, walk))
            })
        } else {
            None
        };
        let (candidate, mut walk) = match (continued, namespace) {
            (Some(continued), _) => continued,
            // The first search domain starts a walk (or starts it again).
            (None, Some(namespace)) => {
                let Some(first) = candidates.iter().find(|c| c.step == 0) else {
                    return;
                };
                let walk = Walk {
                    key: first.key,
                    at: None,
                    namespace: self.row(namespace) as u8,
                    last: 0,
                    steps: 0,
                    live: true,
                };
                (*first, walk)
            }
            (None, None) => return,
        };
        walk.last = candidate.step;
        walk.steps = walk.steps.saturating_add(1);
        walk.at = Some(now);
        let row = usize::from(walk.namespace);
        let counts = &self.counts[row];
        let as_typed = candidate.step == AS_TYPED;
        let miss = rcode == NXDOMAIN && !as_typed;
        let hash = (candidate.key ^ client_hash).max(1);
        let mut book = self.stem_may_change(row, hash, miss).then(|| self.book());
        let mut stem = book
            .as_deref_mut()
            .and_then(|book| self.stem(book, row, &name[..candidate.stem_end], hash, miss));
        if let Some(stem) = stem.as_deref_mut()
            && candidate.step == 0
        {
            stem.counts.first_step += 1;
        }
        if miss {
            let upstream = candidate.step >= 3;
            if let Some(stem) = stem {
                stem.counts.misses += 1;
                stem.counts.upstream += u64::from(upstream);
            }
            counts.wasted.inc();
            if upstream {
                counts.upstream.inc();
            }
        } else if rcode == NOERROR {
            counts.answered.inc();
            if let Some(stem) = stem
                && !stem.counts.found
            {
                stem.counts.found = true;
                stem.counts.found_by_search = !as_typed;
                stem.found_step = candidate.step;
            }
            walk.live = false;
        } else if as_typed {
            counts.unanswered.inc();
            walk.live = false;
        }
        // Otherwise SERVFAIL on the way: the resolver goes on down the list.
        drop(book);
        if walk.live || continued.is_some() {
            // A walk that ended with the query that began it never takes a slot (the walk
            // in flight there goes on).
            let at = slot(candidate.key);
            walks.get_or_insert_with(|| shard.lock())[at] = walk;
            let key = if walk.live { walk.key } else { 0 };
            shard.keys[at].store(key, Ordering::Release);
        }
        if !walk.live {
            self.lengths.observe(f64::from(walk.steps));
        }
    }
}

impl Collect for Tracker {
    fn collect(&self, out: &mut Exposition) {
        const QUERIES: &str = "clusterdns_search_path_queries_total";
        const HELP: &str = "Queries of clients' search-path walks, by the client's namespace \
             (the first N seen; the rest as other): wasted NXDOMAIN expansions, the query \
             that answered, the name as typed failing too.";
        for view in self.view() {
            for (outcome, value) in [
                ("wasted", view.wasted),
                ("answered", view.answered),
                ("unanswered", view.unanswered),
            ] {
                out.sample(
                    QUERIES,
                    HELP,
                    MetricType::Counter,
                    &[("namespace", &view.namespace), ("outcome", outcome)],
                    value as f64,
                );
            }
        }
        out.histogram(
            "clusterdns_search_path_walk_length",
            "Names a client's search-path walk tried before it ended (answered, or the name \
             as typed failed too).",
            &[],
            &self.lengths,
        );
    }
}

/// The slot of a walk key in its shard.
fn slot(key: u64) -> usize {
    ((key >> 8) as usize) % SLOTS
}

/// Splits a wire name into label starts; the number of labels, or `None` for a name not
/// followed.
fn split(name: &[u8], starts: &mut [u8; MAX_LABELS]) -> Option<usize> {
    let mut at = 0;
    let mut labels = 0;
    loop {
        let len = usize::from(*name.get(at)?);
        if len == 0 {
            return (at + 1 == name.len()).then_some(labels);
        }
        if labels == MAX_LABELS - 1 {
            return None;
        }
        starts[labels] = u8::try_from(at).ok()?;
        labels += 1;
        name.get(at..at + 1 + len)?;
        at += 1 + len;
    }
}

/// The keys of the tracker's hashes. They are fixed: the book keeps its stems' hashes across
/// reloads, and each reload makes the listeners' `Watch`es again.
const KEYS: ahash::RandomState = ahash::RandomState::with_seeds(
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
);

/// The hash of a stem (the wire-format labels a name starts with): the walk's key, with its
/// client's, and the stem's in the book. Also a namespace's, for its row.
fn stem_hash(stem: &[u8]) -> u64 {
    KEYS.hash_one(stem)
}

/// The label index at which `suffix` (a wire name with its root) starts in `name`, if
/// `name` ends with it at a label boundary.
fn suffix_label(name: &[u8], starts: &[u8], suffix: &[u8]) -> Option<usize> {
    let at = name.len().checked_sub(suffix.len())?;
    let index = if at + 1 == name.len() {
        starts.len()
    } else {
        starts.iter().position(|start| usize::from(*start) == at)?
    };
    (name[at..] == *suffix).then_some(index)
}

/// The label starting at `at` (without its length byte).
fn label(name: &[u8], at: u8) -> &[u8] {
    let at = usize::from(at);
    let len = usize::from(name[at]);
    name.get(at + 1..at + 1 + len).unwrap_or_default()
}

/// A wire name's labels (no root), dotted.
pub fn dotted(wire: &[u8]) -> String {
    let mut out = String::new();
    let mut at = 0;
    while let Some(&len) = wire.get(at) {
        let len = usize::from(len);
        if len == 0 {
            break;
        }
        if !out.is_empty() {
            out.push('.');
        }
        let label = wire.get(at + 1..at + 1 + len).unwrap_or_default();
        out.push_str(&String::from_utf8_lossy(label));
        at += 1 + len;
    }
    out
}

/// The client's and the type's share of a walk key.
fn hash_client(client: IpAddr, qtype: u16) -> u64 {
    match client {
        IpAddr::V4(v4) => KEYS.hash_one((v4.to_bits(), qtype)),
        IpAddr::V6(v6) => KEYS.hash_one((v6.to_bits(), qtype)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::codes::rcode::SERVFAIL;

    /// `a.b.` in wire format.
    fn wire(dotted: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for label in dotted.trim_end_matches('.').split('.') {
            out.push(label.len() as u8);
            out.extend_from_slice(label.as_bytes());
        }
        out.push(0);
        out
    }

    fn watch(limit: usize) -> Watch {
        let tracker = Arc::new(Tracker::new());
        tracker.set_limit(limit);
        Watch::new(tracker, &wire("cluster.local"), &[&wire("corp.example")])
    }

    /// Asks `names` in turn from `client`, type A, each with its rcode.
    fn walk(watch: &Watch, client: [u8; 4], names: &[(&str, u16)]) {
        let now = Instant::now();
        for (name, rcode) in names {
            watch.observe(IpAddr::from(client), &wire(name), 1, *rcode, now);
        }
    }

    fn row<'v>(view: &'v [NamespaceView], namespace: &str) -> &'v NamespaceView {
        view.iter().find(|v| v.namespace == namespace).unwrap()
    }

    #[test]
    fn a_walk_through_the_cluster_and_node_domains_to_the_name_as_typed() {
        let watch = watch(20);
        walk(
            &watch,
            [10, 0, 0, 1],
            &[
                ("api.example.com.shop.svc.cluster.local.", NXDOMAIN),
                ("api.example.com.svc.cluster.local.", NXDOMAIN),
                ("api.example.com.cluster.local.", NXDOMAIN),
                ("api.example.com.corp.example.", NXDOMAIN),
                ("api.example.com.", NOERROR),
            ],
        );
        let view = watch.tracker().view();
        let shop = row(&view, "shop");
        assert_eq!((shop.wasted, shop.upstream, shop.answered), (4, 1, 1));
        let (name, stem, found) = &shop.stems[0];
        assert_eq!(name, "api.example.com");
        assert_eq!((stem.misses, stem.upstream, stem.first_step), (4, 1, 1));
        assert!(stem.found && !stem.found_by_search);
        assert_eq!(*found, Some(AS_TYPED));
        assert_eq!(watch.tracker().lengths.count(), 1);
        assert_eq!(watch.tracker().lengths.sum(), 5.0);
    }

    #[test]
    fn clients_and_types_walk_apart_and_unrelated_names_are_not_counted() {
        let watch = watch(20);
        let now = Instant::now();
        let first = wire("web.shop.shop.svc.cluster.local.");
        let second = wire("web.shop.svc.cluster.local.");
        // A and AAAA of one client, and another client: three walks.
        for (client, qtype) in [([10, 0, 0, 1], 1), ([10, 0, 0, 1], 28), ([10, 0, 0, 2], 1)] {
            watch.observe(IpAddr::from(client), &first, qtype, NXDOMAIN, now);
        }
        // Only the first client's A walk goes on; the others never end.
        watch.observe(IpAddr::from([10, 0, 0, 1]), &second, 1, NOERROR, now);
        // Names in no walk: another zone, the zone apex, a bare `svc` name.
        walk(
            &watch,
            [10, 0, 0, 3],
            &[
                ("example.org.", NXDOMAIN),
                ("cluster.local.", NOERROR),
                ("svc.cluster.local.", NXDOMAIN),
            ],
        );
        let view = watch.tracker().view();
        assert_eq!(view.len(), 1, "{view:?}");
        let shop = row(&view, "shop");
        assert_eq!((shop.wasted, shop.answered, shop.unanswered), (3, 1, 0));
        let found: Vec<_> = shop
            .stems
            .iter()
            .filter(|(_, stem, _)| stem.found_by_search)
            .map(|(name, _, step)| (name.as_str(), *step))
            .collect();
        assert_eq!(found, [("web.shop", Some(1))]);
    }

    #[test]
    fn namespaces_past_the_limit_are_other() {
        let watch = watch(2);
        for (index, namespace) in ["a", "b", "c", "d"].iter().enumerate() {
            let name = format!("x.{namespace}.svc.cluster.local.");
            walk(&watch, [10, 0, 0, index as u8], &[(&name, NXDOMAIN)]);
        }
        let names: Vec<(String, u64)> = watch
            .tracker()
            .view()
            .into_iter()
            .map(|v| (v.namespace, v.wasted))
            .collect();
        assert_eq!(
            names,
            [
                ("a".to_owned(), 1),
                ("b".to_owned(), 1),
                ("other".to_owned(), 2)
            ]
        );
    }

    #[test]
    fn a_namespace_keeps_the_stems_with_the_most_misses() {
        let watch = watch(20);
        // One stem with many misses, then more stems than a namespace keeps.
        for _ in 0..5 {
            walk(
                &watch,
                [10, 0, 0, 1],
                &[("big.shop.svc.cluster.local.", NXDOMAIN)],
            );
        }
        for index in 0..(STEMS * 2) {
            let name = format!("s{index}.shop.svc.cluster.local.");
            walk(&watch, [10, 0, 0, 1], &[(&name, NXDOMAIN)]);
        }
        let view = watch.tracker().view();
        let shop = row(&view, "shop");
        assert_eq!(shop.wasted, 5 + 2 * STEMS as u64);
        assert_eq!(shop.stems.len(), STEMS);
        assert!(
            shop.stems
                .iter()
                .any(|(name, stem, _)| name == "big" && stem.misses == 5)
        );
    }

    #[test]
    fn a_stem_that_missed_nothing_takes_no_other_stems_place() {
        let watch = watch(20);
        // A full row of stems, each answered by the first search domain.
        for index in 0..STEMS {
            let name = format!("s{index}.shop.svc.cluster.local.");
            walk(&watch, [10, 0, 0, 1], &[(&name, NOERROR)]);
        }
        walk(
            &watch,
            [10, 0, 0, 1],
            &[("late.shop.svc.cluster.local.", NOERROR)],
        );
        let view = watch.tracker().view();
        let shop = row(&view, "shop");
        assert_eq!(shop.answered, STEMS as u64 + 1, "every walk is counted");
        assert_eq!(shop.stems.len(), STEMS);
        assert!(shop.stems.iter().all(|(name, _, _)| name != "late"));
        let (name, stem, found) = &shop.stems[0];
        assert_eq!(name, "s0");
        assert_eq!((stem.first_step, stem.found, *found), (1, true, Some(0)));
        // A miss does take the place of one of them.
        walk(
            &watch,
            [10, 0, 0, 1],
            &[("miss.shop.svc.cluster.local.", NXDOMAIN)],
        );
        let view = watch.tracker().view();
        let shop = row(&view, "shop");
        assert_eq!(shop.stems.len(), STEMS);
        assert!(
            shop.stems
                .iter()
                .any(|(name, stem, _)| name == "miss" && stem.misses == 1)
        );
    }

    #[test]
    fn a_walk_that_ended_is_not_continued() {
        let watch = watch(20);
        walk(
            &watch,
            [10, 0, 0, 1],
            &[
                ("db.shop.svc.cluster.local.", NXDOMAIN),
                ("db.svc.cluster.local.", NOERROR),
            ],
        );
        // The next step of that walk, had it not ended: in no walk (it has no namespace).
        walk(&watch, [10, 0, 0, 1], &[("db.cluster.local.", NXDOMAIN)]);
        let view = watch.tracker().view();
        let shop = row(&view, "shop");
        assert_eq!((shop.wasted, shop.answered, shop.unanswered), (1, 1, 0));
        assert_eq!(watch.tracker().lengths.count(), 1);
        assert_eq!(watch.tracker().lengths.sum(), 2.0);
        // Unanswered there, it goes on.
        walk(
            &watch,
            [10, 0, 0, 1],
            &[
                ("db.shop.svc.cluster.local.", NXDOMAIN),
                ("db.svc.cluster.local.", SERVFAIL),
                ("db.cluster.local.", NXDOMAIN),
            ],
        );
        let view = watch.tracker().view();
        assert_eq!(row(&view, "shop").wasted, 3);
    }

    #[test]
    fn walks_on_many_threads_at_once_are_each_counted_once() {
        const THREADS: u8 = 8;
        const WALKS: u8 = 50;
        let watch = watch(20);
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let watch = &watch;
                scope.spawn(move || {
                    for index in 0..WALKS {
                        // Each thread its own clients, every thread the same namespaces in
                        // another order: rows are added while others read them.
                        let namespace = format!("ns{}", (index + thread) % 10);
                        let first = format!("web.{namespace}.{namespace}.svc.cluster.local.");
                        let second = format!("web.{namespace}.svc.cluster.local.");
                        walk(
                            watch,
                            [10, thread, index, 1],
                            &[(&first, NXDOMAIN), (&second, NOERROR)],
                        );
                    }
                });
            }
        });
        let view = watch.tracker().view();
        let mut namespaces: Vec<&str> = view.iter().map(|v| v.namespace.as_str()).collect();
        namespaces.sort_unstable();
        let expected: Vec<String> = (0..10).map(|index| format!("ns{index}")).collect();
        assert_eq!(namespaces, expected, "each namespace once, no other");
        let per_namespace = u64::from(THREADS) * u64::from(WALKS) / 10;
        for namespace in &view {
            assert_eq!(
                (namespace.wasted, namespace.answered),
                (per_namespace, per_namespace),
                "{}",
                namespace.namespace
            );
            let (name, stem, step) = &namespace.stems[0];
            assert_eq!(name, &format!("web.{}", namespace.namespace));
            assert_eq!(
                (stem.misses, stem.first_step, *step),
                (per_namespace, per_namespace, Some(1))
            );
        }
        assert_eq!(
            watch.tracker().lengths.count(),
            u64::from(THREADS) * u64::from(WALKS)
        );
    }

    #[test]
    fn names_that_are_not_names_are_ignored() {
        let watch = watch(20);
        let now = Instant::now();
        for bad in [&b""[..], b"\x03web", b"\x03web\x00extra", b"\x40abc\x00"] {
            watch.observe(IpAddr::from([10, 0, 0, 1]), bad, 1, NXDOMAIN, now);
        }
        assert!(watch.tracker().view().is_empty());
    }
}
