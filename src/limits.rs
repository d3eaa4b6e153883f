//! The descriptor budget: `RLIMIT_NOFILE` raised to its hard limit at start (as Go programs,
//! CoreDNS included, do), and the two things a client can make the server hold open bounded
//! within it — TCP connections (the longest-idle one is shed to make room for a new one) and
//! forwards in flight (each holds an upstream socket; past the cap a query is refused at
//! once). Both are process-wide, as descriptors are.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::metrics::{Collect, Counter, Exposition, MetricType};

/// Descriptors kept for everything that is neither a TCP client nor a forward: listeners,
/// the HTTP endpoints and their clients, the API server connection, objects files and their
/// watches, the runtime's own.
const RESERVED: u64 = 128;
/// No default cap above this, whatever the limit (memory, not descriptors, bounds them then).
const DEFAULT_CEILING: usize = 65_536;
/// No default cap below this, however low the limit.
const DEFAULT_FLOOR: usize = 16;

/// The descriptor limit before and after [`raise_nofile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdLimit {
    /// The soft limit the process started with.
    pub before: u64,
    /// The soft limit now.
    pub soft: u64,
    /// The hard limit.
    pub hard: Option<u64>,
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (an unlimited hard limit: to the
/// kernel's `fs.nr_open`). Under containerd 2 the soft limit is 1024, which a thousand idle
/// TCP clients use up.
pub fn raise_nofile() -> std::io::Result<FdLimit> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let before = limit.current.unwrap_or(u64::MAX);
    let target = match limit.maximum {
        Some(hard) => hard,
        None => std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(before),
    };
    if target > before {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(target),
                maximum: limit.maximum,
            },
        )?;
    }
    Ok(FdLimit {
        before,
        soft: before.max(target),
        hard: limit.maximum,
    })
}

/// The soft descriptor limit now.
pub fn soft_nofile() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

/// The default caps under a soft limit of `soft`: what is left after [`RESERVED`], half to
/// TCP connections and half to forwards in flight. (TCP connections, forwards in flight.)
pub fn derived_caps(soft: u64) -> (usize, usize) {
    let budget = usize::try_from(soft.saturating_sub(RESERVED)).unwrap_or(usize::MAX);
    let half = (budget / 2).clamp(DEFAULT_FLOOR, DEFAULT_CEILING);
    (half, half)
}

/// Sets the caps: `None` keeps the one derived from the descriptor limit now.
pub fn configure(tcp_connections: Option<usize>, forwards: Option<usize>) {
    let (tcp, forward) = derived_caps(soft_nofile());
    let state = limits();
    state
        .tcp
        .max
        .store(tcp_connections.unwrap_or(tcp).max(1), Ordering::Relaxed);
    state
        .forwards
        .max
        .store(forwards.unwrap_or(forward).max(1), Ordering::Relaxed);
}

/// The process-wide state.
#[derive(Debug)]
pub struct Limits {
    /// TCP client connections.
    pub tcp: Connections,
    /// Forwards in flight.
    pub forwards: Forwards,
}

static LIMITS: LazyLock<Limits> = LazyLock::new(|| {
    let (tcp, forwards) = derived_caps(soft_nofile());
    Limits {
        tcp: Connections::new(tcp),
        forwards: Forwards::new(forwards),
    }
});

/// The process-wide limits (derived from the descriptor limit when first used, unless
/// [`configure`]d).
pub fn limits() -> &'static Limits {
    &LIMITS
}

/// Milliseconds since the process first asked: connections' last activity.
fn now_ms() -> u64 {
    static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The open TCP client connections, each with its last activity, so that the longest-idle
/// one can be shed.
#[derive(Debug)]
pub struct Connections {
    max: AtomicUsize,
    table: Mutex<Table>,
    next: AtomicU64,
    shed: Counter,
    accept_errors: Counter,
}

/// The connections, and how many of them are not being shed.
#[derive(Debug, Default)]
struct Table {
    entries: HashMap<u64, Entry>,
    live: usize,
}

#[derive(Debug)]
struct Entry {
    activity: Arc<Activity>,
    shed: CancellationToken,
}

/// What a connection reports: when it last read or wrote a message, and how many of its
/// queries are still being answered (a connection waiting for an upstream is not idle).
#[derive(Debug)]
pub struct Activity {
    last: AtomicU64,
    busy: AtomicUsize,
}

impl Activity {
    /// A message was read or written now.
    pub fn touch(&self) {
        self.last.store(now_ms(), Ordering::Relaxed);
    }

    /// A query of the connection is being answered asynchronously (until the guard drops).
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::Relaxed);
        Busy(Arc::clone(self))
    }
}

/// See [`Activity::busy`].
#[derive(Debug)]
pub struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// A connection in the table; removed when dropped.
#[derive(Debug)]
pub struct Registered {
    id: u64,
    /// Where the connection reports its activity.
    pub activity: Arc<Activity>,
    /// Cancelled when the connection is shed: it must close.
    pub shed: CancellationToken,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut table = limits()
            .tcp
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = table.entries.remove(&self.id)
            && !entry.shed.is_cancelled()
        {
            table.live -= 1;
        }
    }
}

impl Connections {
    fn new(max: usize) -> Self {
        Self {
            max: AtomicUsize::new(max),
            table: Mutex::new(Table::default()),
            next: AtomicU64::new(0),
            shed: Counter::new(),
            accept_errors: Counter::new(),
        }
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max.load(Ordering::Relaxed)
    }

    /// Connections open now (shed ones still closing included).
    pub fn open(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
            .len()
    }

    /// Registers a new connection; at the cap, the longest-idle one is shed first.
    pub fn register(&self) -> Registered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity {
            last: AtomicU64::new(now_ms()),
            busy: AtomicUsize::new(0),
        });
        let shed = CancellationToken::new();
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if table.live >= self.max() {
            self.shed_longest_idle(&mut table);
        }
        table.entries.insert(
            id,
            Entry {
                activity: Arc::clone(&activity),
                shed: shed.clone(),
            },
        );
        table.live += 1;
        Registered { id, activity, shed }
    }

    /// `accept` failed for want of descriptors: counted, and the longest-idle connection is
    /// shed to free one. Whether there was one to shed.
    pub fn out_of_descriptors(&self) -> bool {
        self.accept_errors.inc();
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        self.shed_longest_idle(&mut table)
    }

    /// Another `accept` error.
    pub fn accept_failed(&self) {
        self.accept_errors.inc();
    }

    /// Sheds the connection idle the longest: one with nothing in progress if there is any.
    fn shed_longest_idle(&self, table: &mut Table) -> bool {
        let victim = table
            .entries
            .values()
            .filter(|entry| !entry.shed.is_cancelled())
            .min_by_key(|entry| {
                (
                    entry.activity.busy.load(Ordering::Relaxed) > 0,
                    entry.activity.last.load(Ordering::Relaxed),
                )
            });
        match victim {
            Some(entry) => {
                entry.shed.cancel();
                table.live -= 1;
                self.shed.inc();
                true
            }
            None => false,
        }
    }
}

/// Forwards in flight, process-wide.
#[derive(Debug)]
pub struct Forwards {
    max: AtomicUsize,
    in_flight: AtomicUsize,
    rejects: Counter,
    /// Whether reaching the cap has been logged since the count last fell below it.
    warned: AtomicBool,
}

/// One forward in flight; released on drop.
#[derive(Debug)]
pub struct ForwardSlot(&'static Forwards);

impl Drop for ForwardSlot {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Forwards {
    fn new(max: usize) -> Self {
        Self {
            max: AtomicUsize::new(max),
            in_flight: AtomicUsize::new(0),
            rejects: Counter::new(),
            warned: AtomicBool::new(false),
        }
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max.load(Ordering::Relaxed)
    }

    /// Forwards in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
}

/// A slot for one more forward, or `None` at the cap (counted, and logged once per time the
/// cap is reached).
pub fn forward_slot() -> Option<ForwardSlot> {
    let forwards = &limits().forwards;
    let before = forwards.in_flight.fetch_add(1, Ordering::AcqRel);
    let slot = ForwardSlot(forwards);
    if before < forwards.max() {
        if before + 1 < forwards.max() / 2 {
            forwards.warned.store(false, Ordering::Relaxed);
        }
        return Some(slot);
    }
    drop(slot);
    forwards.rejects.inc();
    if !forwards.warned.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            "{} forwards in flight, the most the descriptor budget allows: further queries \
             for upstream are refused until some finish (--max-forwards)",
            forwards.max()
        );
    }
    None
}

/// The limits' metrics.
#[derive(Debug, Default)]
pub struct LimitsCollector;

impl Collect for LimitsCollector {
    fn collect(&self, out: &mut Exposition) {
        let state = limits();
        let samples: [(&str, &str, MetricType, f64); 7] = [
            (
                "clusterdns_tcp_connections",
                "TCP client connections open.",
                MetricType::Gauge,
                state.tcp.open() as f64,
            ),
            (
                "clusterdns_tcp_connections_limit",
                "The most TCP client connections kept open; past it the longest-idle is shed.",
                MetricType::Gauge,
                state.tcp.max() as f64,
            ),
            (
                "clusterdns_tcp_connections_shed_total",
                "TCP client connections closed to make room for a new one.",
                MetricType::Counter,
                state.tcp.shed.get() as f64,
            ),
            (
                "clusterdns_tcp_accept_errors_total",
                "Failed accepts of TCP clients (out of descriptors, most often).",
                MetricType::Counter,
                state.tcp.accept_errors.get() as f64,
            ),
            (
                "clusterdns_forward_in_flight",
                "Queries waiting for an upstream.",
                MetricType::Gauge,
                state.forwards.in_flight() as f64,
            ),
            (
                "clusterdns_forward_in_flight_limit",
                "The most queries waiting for an upstream at once; past it they are refused.",
                MetricType::Gauge,
                state.forwards.max() as f64,
            ),
            (
                "clusterdns_forward_in_flight_rejects_total",
                "Queries refused because the forwards in flight were at their limit.",
                MetricType::Counter,
                state.forwards.rejects.get() as f64,
            ),
        ];
        for (name, help, kind, value) in samples {
            out.sample(name, help, kind, &[], value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_leave_a_reserve_and_have_a_floor_and_a_ceiling() {
        assert_eq!(derived_caps(1024), (448, 448));
        assert_eq!(derived_caps(256), (64, 64));
        assert_eq!(derived_caps(64), (DEFAULT_FLOOR, DEFAULT_FLOOR));
        assert_eq!(derived_caps(u64::MAX), (DEFAULT_CEILING, DEFAULT_CEILING));
    }
}
