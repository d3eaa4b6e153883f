//! The *cache* plugin: answers from upstream, kept for their TTL and replayed with the TTL
//! counted down.
//!
//! Only what *forward* brings back is stored: the cluster zone is answered from the snapshot,
//! which is always current, so kubeadm's `disable success cluster.local` /
//! `disable denial cluster.local` is what happens whatever the Corefile says (the stale
//! answers of coredns/coredns#2501 and kubernetes/kubernetes#128325 cannot happen).
//!
//! As in CoreDNS: separate success and denial caches of 256 shards each, random eviction in a
//! full shard; success TTLs clamped to [min, max] (5, 3600), denial to (5, 1800), SERVFAIL kept
//! for `servfail` (5 s); truncated replies and other errors never stored; `prefetch` refreshes
//! popular entries before they expire; `serve_stale` answers from expired entries (TTL 0)
//! while refreshing.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::{CacheClass, CacheConfig, Prefetch, ServeStale};
use crate::metrics::{Collect, Counter, Exposition, MetricType};
use crate::name::{WireName, suffix_offset};
use crate::wire::reply::{self, BadReply};
use crate::wire::{FLAG_CD, FLAG_TC, HEADER_LEN, Request, rcode};

/// Shards per cache.
const SHARDS: usize = 256;

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// A live entry; nothing else to do.
    Fresh,
    /// A live entry, popular and close to expiry: refresh it in the background.
    Prefetch,
    /// An expired entry served under `serve_stale` (TTL 0): refresh it.
    Stale,
}

/// The answer class an entry belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Success,
    Denial,
}

/// One server block's cache.
#[derive(Debug)]
pub struct Cache {
    zones: Vec<WireName>,
    zones_label: String,
    server: String,
    success_bounds: CacheClass,
    denial_bounds: CacheClass,
    disable_success: Vec<WireName>,
    disable_denial: Vec<WireName>,
    prefetch: Option<Prefetch>,
    serve_stale: Option<ServeStale>,
    servfail: Duration,
    keepttl: bool,
    success: Shards,
    denial: Shards,
    hasher: ahash::RandomState,
    metrics: CacheMetrics,
}

#[derive(Debug, Default)]
struct CacheMetrics {
    requests: Counter,
    misses: Counter,
    hits: [Counter; 2],
    evictions: [Counter; 2],
    prefetch: Counter,
    served_stale: Counter,
    drops: Counter,
}

#[derive(Debug)]
struct Shards {
    shards: Box<[Mutex<HashMap<u64, Entry>>]>,
    per_shard: usize,
}

#[derive(Debug)]
struct Entry {
    /// Lower-case name, type, class, DO and CD: what the hash stands for.
    key: Box<[u8]>,
    /// The reply as received (any ID).
    message: Box<[u8]>,
    stored: Instant,
    ttl: Duration,
    /// Hits in the current prefetch window, and when the window's last hit was.
    hits: u32,
    last_hit: Instant,
}

impl Entry {
    fn expires(&self) -> Instant {
        self.stored + self.ttl
    }
}

impl Shards {
    fn new(capacity: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            per_shard: (capacity / SHARDS).max(1),
        }
    }

    fn shard(&self, hash: u64) -> &Mutex<HashMap<u64, Entry>> {
        &self.shards[(hash as usize) % SHARDS]
    }

    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.lock().map_or(0, |entries| entries.len()))
            .sum()
    }
}

impl Cache {
    /// The cache of one server block; `server` is its metrics label (`dns://:53`).
    pub fn new(config: &CacheConfig, server: &str) -> Self {
        let zones: Vec<WireName> = config.zones.iter().filter_map(wire).collect();
        let zones_label = config
            .zones
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        Self {
            zones,
            zones_label,
            server: server.to_owned(),
            success_bounds: config.success,
            denial_bounds: config.denial,
            disable_success: config.disable_success.iter().filter_map(wire).collect(),
            disable_denial: config.disable_denial.iter().filter_map(wire).collect(),
            prefetch: config.prefetch,
            serve_stale: config.serve_stale,
            servfail: config.servfail,
            keepttl: config.keepttl,
            success: Shards::new(config.success.capacity),
            denial: Shards::new(config.denial.capacity),
            hasher: ahash::RandomState::new(),
            metrics: CacheMetrics::default(),
        }
    }

    /// Whether names like `qname` (lower-case wire) are cached at all.
    pub fn covers(&self, qname: &[u8]) -> bool {
        self.zones
            .iter()
            .any(|zone| suffix_offset(qname, zone.as_bytes()).is_some())
    }

    /// Looks `request` up; on a hit writes the reply for it (its ID, its EDNS, TTLs counted
    /// down, cut to `limit`) into `out`.
    pub fn get(
        &self,
        request: &Request<'_>,
        now: Instant,
        limit: usize,
        out: &mut Vec<u8>,
    ) -> Option<Hit> {
        self.metrics.requests.inc();
        let (hash, tail) = self.key_parts(request);
        let name = request.question.name();
        for (index, shards) in [&self.success, &self.denial].into_iter().enumerate() {
            let Ok(mut shard) = shards.shard(hash).lock() else {
                continue;
            };
            let Some(entry) = shard
                .get_mut(&hash)
                .filter(|entry| key_is(&entry.key, name, &tail))
            else {
                continue;
            };
            let expires = entry.expires();
            let (hit, ttl) = if now < expires {
                // Whole seconds gone are taken off, as CoreDNS counts: a reply within the
                // first second of the entry still says its full TTL.
                let gone = now.duration_since(entry.stored).as_secs();
                let remaining = entry.ttl.as_secs().saturating_sub(gone).max(1) as u32;
                let hit = if self.should_prefetch(entry, now, remaining) {
                    Hit::Prefetch
                } else {
                    Hit::Fresh
                };
                (hit, remaining)
            } else if self
                .serve_stale
                .is_some_and(|stale| now.duration_since(expires) <= stale.duration)
            {
                (Hit::Stale, 0)
            } else {
                shard.remove(&hash);
                continue;
            };
            if reply::fit_for_client(
                &entry.message,
                request.id,
                request.edns.as_ref(),
                limit,
                out,
            )
            .is_err()
            {
                shard.remove(&hash);
                continue;
            }
            if !self.keepttl || hit == Hit::Stale {
                // The message was stored whole, so it walks again.
                let _ = reply::set_ttls(out, ttl);
            }
            reply::answered_from_cache(out, request);
            self.metrics.hits[index].inc();
            match hit {
                Hit::Prefetch => self.metrics.prefetch.inc(),
                Hit::Stale => self.metrics.served_stale.inc(),
                Hit::Fresh => {}
            }
            return Some(hit);
        }
        self.metrics.misses.inc();
        None
    }

    /// `serve_stale verified`: a stale entry is only for when the upstream fails.
    pub fn stale_is_verified(&self) -> bool {
        self.serve_stale.is_some_and(|stale| stale.verified)
    }

    /// CoreDNS `shouldPrefetch`: at least `amount` hits with no gap longer than `duration`,
    /// and the remaining TTL down to `percentage` of the original.
    fn should_prefetch(&self, entry: &mut Entry, now: Instant, remaining: u32) -> bool {
        let Some(prefetch) = self.prefetch else {
            return false;
        };
        if now.duration_since(entry.last_hit) > prefetch.duration {
            entry.hits = 0;
        }
        entry.hits = entry.hits.saturating_add(1);
        entry.last_hit = now;
        let threshold =
            (f64::from(prefetch.percentage) / 100.0 * entry.ttl.as_secs_f64()).ceil() as u32;
        entry.hits >= prefetch.amount && remaining <= threshold.max(1)
    }

    /// Stores `reply` (from upstream) as the answer to `request`, when its class is cached
    /// for that name.
    /// Stores `reply` to `request` if it is cached at all, its TTLs first set to how long it
    /// is kept (CoreDNS's cache does the same to the reply it passes on, so that the client's
    /// TTL does not jump from the upstream's to the cache's on the next query).
    pub fn put(&self, request: &Request<'_>, reply: &mut [u8], now: Instant) {
        match self.classify(request, reply) {
            Ok(Some((class, ttl))) => {
                if !self.keepttl {
                    let _ = reply::set_ttls(reply, ttl.as_secs() as u32);
                }
                let reply = &*reply;
                let (hash, key) = self.key(request);
                let shards = match class {
                    Class::Success => &self.success,
                    Class::Denial => &self.denial,
                };
                let Ok(mut shard) = shards.shard(hash).lock() else {
                    return;
                };
                if shard.len() >= shards.per_shard
                    && !shard.contains_key(&hash)
                    && let Some(victim) = shard.keys().next().copied()
                {
                    shard.remove(&victim);
                    self.metrics.evictions[class as usize].inc();
                }
                shard.insert(
                    hash,
                    Entry {
                        key,
                        message: reply.into(),
                        stored: now,
                        ttl,
                        hits: 0,
                        last_hit: now,
                    },
                );
            }
            Ok(None) => {}
            Err(BadReply) => self.metrics.drops.inc(),
        }
    }

    /// Which cache a reply goes in, and for how long; `None` when it is not cached.
    fn classify(
        &self,
        request: &Request<'_>,
        message: &[u8],
    ) -> Result<Option<(Class, Duration)>, BadReply> {
        if message.len() < HEADER_LEN || u16::from_be_bytes([message[2], message[3]]) & FLAG_TC != 0
        {
            return Ok(None);
        }
        let qname = request.question.name();
        let disabled = |zones: &[WireName]| {
            zones
                .iter()
                .any(|zone| suffix_offset(qname, zone.as_bytes()).is_some())
        };
        let answers = reply::counts(message)?[1];
        let min_ttl = reply::min_ttl(message)?;
        let (class, bounds) = match reply::rcode(message)? {
            rcode::NOERROR if answers > 0 => {
                if disabled(&self.disable_success) {
                    return Ok(None);
                }
                (Class::Success, self.success_bounds)
            }
            rcode::NOERROR | rcode::NXDOMAIN => {
                if disabled(&self.disable_denial) {
                    return Ok(None);
                }
                (Class::Denial, self.denial_bounds)
            }
            rcode::SERVFAIL if !self.servfail.is_zero() => {
                return Ok(Some((Class::Denial, self.servfail)));
            }
            _ => return Ok(None),
        };
        let ttl = min_ttl
            .unwrap_or(bounds.min_ttl)
            .clamp(bounds.min_ttl, bounds.max_ttl.max(bounds.min_ttl));
        Ok(Some((class, Duration::from_secs(u64::from(ttl)))))
    }

    /// The hash of `request`'s key, and the key's last bytes (type, class, DO and CD) that
    /// follow the name: hashed in two pieces, so that a lookup builds nothing.
    fn key_parts(&self, request: &Request<'_>) -> (u64, [u8; 5]) {
        let name = request.question.name();
        let [type_high, type_low] = request.question.qtype.to_be_bytes();
        let [class_high, class_low] = request.question.qclass.to_be_bytes();
        let dnssec_ok = request.edns.is_some_and(|edns| edns.dnssec_ok);
        let checking_disabled = request.flags & FLAG_CD != 0;
        let flags = u8::from(dnssec_ok) | u8::from(checking_disabled) << 1;
        let tail = [type_high, type_low, class_high, class_low, flags];
        let mut hasher = self.hasher.build_hasher();
        hasher.write(name);
        hasher.write(&tail);
        (hasher.finish(), tail)
    }

    /// The hash and the whole key of `request`, for storing.
    fn key(&self, request: &Request<'_>) -> (u64, Box<[u8]>) {
        let (hash, tail) = self.key_parts(request);
        let name = request.question.name();
        let mut key = Vec::with_capacity(name.len() + tail.len());
        key.extend_from_slice(name);
        key.extend_from_slice(&tail);
        (hash, key.into_boxed_slice())
    }
}

/// Whether a stored key is the name followed by the tail.
fn key_is(key: &[u8], name: &[u8], tail: &[u8; 5]) -> bool {
    key.len() == name.len() + tail.len() && key.starts_with(name) && key.ends_with(tail)
}

/// What the cache holds for a question, as [`Cache::peek`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peek {
    /// The reply as stored (its TTLs as received).
    pub message: Vec<u8>,
    /// How long it is served still (zero once expired).
    pub left: Duration,
    /// Expired, and served under `serve_stale`.
    pub stale: bool,
}

impl Cache {
    /// What the cache holds for `request` at `now`, read only (for `/debug/why`): nothing is
    /// counted, no entry is refreshed, removed or moved towards a prefetch.
    pub fn peek(&self, request: &Request<'_>, now: Instant) -> Option<Peek> {
        let (hash, key) = self.key(request);
        for shards in [&self.success, &self.denial] {
            let Ok(shard) = shards.shard(hash).lock() else {
                continue;
            };
            let Some(entry) = shard.get(&hash).filter(|entry| *entry.key == *key) else {
                continue;
            };
            let expires = entry.expires();
            let stale = now >= expires;
            let served = !stale
                || self
                    .serve_stale
                    .is_some_and(|serve| now.duration_since(expires) <= serve.duration);
            if !served {
                continue;
            }
            return Some(Peek {
                message: entry.message.to_vec(),
                left: expires.saturating_duration_since(now),
                stale,
            });
        }
        None
    }
}

fn wire(name: &hickory_proto::rr::Name) -> Option<WireName> {
    WireName::from_dotted(&name.to_ascii())
        .ok()
        .map(|n| n.to_lowercase())
}

impl Collect for Cache {
    fn collect(&self, out: &mut Exposition) {
        let (server, zones) = (self.server.as_str(), self.zones_label.as_str());
        for (index, kind) in ["success", "denial"].into_iter().enumerate() {
            let labels = [
                ("server", server),
                ("type", kind),
                ("view", ""),
                ("zones", zones),
            ];
            let entries = [&self.success, &self.denial][index].len() as f64;
            out.sample(
                "coredns_cache_entries",
                "The number of elements in the cache.",
                MetricType::Gauge,
                &labels,
                entries,
            );
            out.sample(
                "coredns_cache_hits_total",
                "The count of cache hits.",
                MetricType::Counter,
                &labels,
                self.metrics.hits[index].get() as f64,
            );
            out.sample(
                "coredns_cache_evictions_total",
                "The count of cache evictions.",
                MetricType::Counter,
                &labels,
                self.metrics.evictions[index].get() as f64,
            );
        }
        let labels = [("server", server), ("view", ""), ("zones", zones)];
        for (name, help, counter) in [
            (
                "coredns_cache_requests_total",
                "The count of cache requests.",
                &self.metrics.requests,
            ),
            (
                "coredns_cache_misses_total",
                "The count of cache misses. Deprecated, derive misses from cache hits/requests counters.",
                &self.metrics.misses,
            ),
            (
                "coredns_cache_prefetch_total",
                "The number of times the cache has prefetched a cached item.",
                &self.metrics.prefetch,
            ),
            (
                "coredns_cache_served_stale_total",
                "The number of requests served from stale cache entries.",
                &self.metrics.served_stale,
            ),
            (
                "coredns_cache_drops_total",
                "The number responses that are not cached, because the reply is malformed.",
                &self.metrics.drops,
            ),
        ] {
            out.sample(
                name,
                help,
                MetricType::Counter,
                &labels,
                counter.get() as f64,
            );
        }
    }
}

#[cfg(test)]
mod tests;
