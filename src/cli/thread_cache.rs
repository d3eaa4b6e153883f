//! jemalloc's thread caches for the runtime's threads while the server starts, and not after.
//!
//! The binary runs jemalloc with one arena and no thread caches (src/main.rs,
//! .cargo/config.toml): what lives (the zone, the objects held) is packed into the fewest
//! slabs, which is most of why the watch's steady RSS is what docs/kind.md says. The price
//! is that every allocation and free takes the arena's lock, and the first sync, which
//! decodes and builds hundreds of thousands of objects, spent two fifths of its CPU in that
//! lock and the arena's slow paths (`perf`, 10,000 Services with `pods verified`).
//!
//! So the runtime's threads start with a cache of their own ([`on_thread_start`]), and once
//! the server has started ([`started`]) each worker gives its cache back the next time it has
//! nothing to do ([`on_thread_park`]; blocking threads when they exit, or at their start when
//! it is later). The caches are jemalloc's own (`thread.tcache.enabled`); turning one off
//! flushes it into the arena. Under another allocator (the tests') the writes go to a
//! jemalloc nobody allocates from, and change nothing.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use tikv_jemalloc_ctl::{Access, AsName};

/// Whether the server has started: from then on no thread keeps a cache.
static STARTED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Whether this thread's cache is on.
    static CACHING: Cell<bool> = const { Cell::new(false) };
}

/// Turns this thread's cache on or off (it stays off where jemalloc refuses).
fn set(on: bool) {
    let written = b"thread.tcache.enabled\0".name().write(on).is_ok();
    CACHING.with(|caching| caching.set(written && on));
}

/// For the runtime's `on_thread_start`: a cache while the server is starting.
pub(super) fn on_thread_start() {
    if !STARTED.load(Ordering::Relaxed) {
        set(true);
    }
}

/// For the runtime's `on_thread_park`: the cache given back once the server has started.
pub(super) fn on_thread_park() {
    if STARTED.load(Ordering::Relaxed) && CACHING.with(Cell::get) {
        set(false);
    }
}

/// The server has started: caches are given back as threads go idle.
pub(super) fn started() {
    STARTED.store(true, Ordering::Relaxed);
}
