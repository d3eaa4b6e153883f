use std::process::ExitCode;

/// jemalloc rather than glibc's malloc: loading a large objects file allocates and frees
/// hundreds of megabytes in small blocks, which glibc keeps resident afterwards; jemalloc's
/// background thread returns them to the system within seconds (dirty-page decay), and its
/// size classes keep the zone's many small blocks compact.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

// jemalloc's options are built in (.cargo/config.toml, `JEMALLOC_SYS_WITH_MALLOC_CONF`; the
// environment's `_RJEM_MALLOC_CONF` still overrides them). Measured with `cargo xtask bench
// watch-memory` at 10,000 Services (docs/kind.md, "Sizing"): without thread caches, the objects
// that live (the zone's names, the objects held) are packed into the fewest slabs instead of being
// handed out in batches spread over many, and one arena rather than four per CPU lets one thread's
// free blocks serve the next; the watch's steady RSS fell from 157 to 122 MB, and answering from
// the zone over UDP, which does not allocate, is not slowed. Freed pages go back after a second
// rather than ten, and at once rather than kept lazily freed. While the server starts, the
// runtime's threads do have caches (src/cli/thread_cache.rs): the first sync's allocations then
// skip the arena's lock.

fn main() -> ExitCode {
    // Without the background thread, freed pages are only purged when the allocator is used
    // again, and the UDP path does not allocate.
    if let Err(error) = tikv_jemalloc_ctl::background_thread::write(true) {
        eprintln!("clusterdns: jemalloc background thread not started: {error}");
    }
    clusterdns::cli::main()
}
