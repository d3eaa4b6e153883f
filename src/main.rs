use std::process::ExitCode;

/// jemalloc rather than glibc's malloc: loading a large objects file allocates and frees
/// hundreds of megabytes in small blocks, which glibc keeps resident afterwards; jemalloc's
/// background thread returns them to the system within seconds (dirty-page decay), and its
/// size classes keep the zone's many small blocks compact.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    // Without the background thread, freed pages are only purged when the allocator is used
    // again, and the UDP path does not allocate.
    if let Err(error) = tikv_jemalloc_ctl::background_thread::write(true) {
        eprintln!("clusterdns: jemalloc background thread not started: {error}");
    }
    clusterdns::cli::main()
}
