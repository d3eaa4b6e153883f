//! Process-wide families: the Go client's `process_*` (read from `/proc/self` at scrape
//! time), `coredns_build_info`, `coredns_panics_total`, `coredns_plugin_enabled`, and
//! clusterdns's own store metrics.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;

use super::{Collect, Counter, Exposition, Gauge, MetricType, ProgrammingMetrics};
use crate::model::ServiceKind;

/// Panics caught on the query path (`coredns_panics_total`): the server adds one wherever
/// it catches an unwind; [`ProcessMetrics`] writes it.
pub static PANICS: Counter = Counter::new();

/// Linux's `USER_HZ`: the unit of the CPU times in `/proc/self/stat` (100 on every
/// architecture Linux runs on; the Go client's procfs assumes the same).
const USER_HZ: f64 = 100.0;

/// What `coredns_build_info` says about this build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildInfo {
    /// `version`: the crate's version.
    pub version: &'static str,
    /// `revision`: the git commit it was built from (`CLUSTERDNS_REVISION` at build time,
    /// else `git rev-parse --short=12 HEAD`), `""` when unknown — as CoreDNS's is when built
    /// without its Makefile.
    pub revision: &'static str,
    /// `goversion`: the compiler that built it, `rustc 1.95.0`.
    pub goversion: &'static str,
}

impl BuildInfo {
    /// This build's.
    pub const fn current() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION"),
            revision: match option_env!("CLUSTERDNS_REVISION") {
                Some(revision) => revision,
                None => "",
            },
            goversion: match option_env!("CLUSTERDNS_RUSTC_VERSION") {
                Some(version) => version,
                None => "rustc unknown",
            },
        }
    }
}

/// The process families: `process_*` as the Go client's process collector writes them,
/// plus `coredns_build_info` and `coredns_panics_total`. Register one per process.
///
/// On systems without `/proc` the `process_*` families are left out.
#[derive(Debug, Clone)]
pub struct ProcessMetrics {
    /// `/proc/self`.
    proc_self: PathBuf,
    /// `/proc/stat`, for the boot time.
    proc_stat: PathBuf,
    build: BuildInfo,
}

impl Default for ProcessMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcessMetrics {
    /// This process's metrics.
    pub fn new() -> Self {
        Self::at(Path::new("/proc/self"), Path::new("/proc/stat"))
    }

    /// Metrics read from another `proc` tree (tests).
    pub fn at(proc_self: &Path, proc_stat: &Path) -> Self {
        Self {
            proc_self: proc_self.to_owned(),
            proc_stat: proc_stat.to_owned(),
            build: BuildInfo::current(),
        }
    }

    /// The `process_*` values that could be read.
    pub fn read(&self) -> ProcessStats {
        let mut stats = ProcessStats::default();
        if let Ok(stat) = fs::read_to_string(self.proc_self.join("stat"))
            && let Some(fields) = stat_fields(&stat)
        {
            stats.cpu_seconds = fields.cpu_ticks.map(|ticks| ticks as f64 / USER_HZ);
            stats.virtual_memory_bytes = fields.vsize.map(|bytes| bytes as f64);
            if let (Some(start), Some(boot)) = (fields.start_ticks, self.boot_time()) {
                stats.start_time_seconds = Some(boot as f64 + start as f64 / USER_HZ);
            }
        }
        if let Ok(status) = fs::read_to_string(self.proc_self.join("status")) {
            stats.resident_memory_bytes =
                status_kib(&status, "VmRSS:").map(|kib| (kib * 1024) as f64);
        }
        if let Ok(entries) = fs::read_dir(self.proc_self.join("fd")) {
            stats.open_fds = Some(entries.count() as f64);
        }
        if let Ok(limits) = fs::read_to_string(self.proc_self.join("limits")) {
            stats.max_fds = soft_limit(&limits, "Max open files").map(|n| n as f64);
            stats.virtual_memory_max_bytes =
                soft_limit(&limits, "Max address space").map(|n| n as f64);
        }
        stats
    }

    /// Boot time, Unix seconds (`btime` of `/proc/stat`).
    fn boot_time(&self) -> Option<u64> {
        let stat = fs::read_to_string(&self.proc_stat).ok()?;
        stat.lines()
            .find_map(|line| line.strip_prefix("btime "))
            .and_then(|value| value.trim().parse().ok())
    }
}

/// The `process_*` values of one scrape (`None`: could not be read).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcessStats {
    /// `process_cpu_seconds_total`.
    pub cpu_seconds: Option<f64>,
    /// `process_open_fds`.
    pub open_fds: Option<f64>,
    /// `process_max_fds`.
    pub max_fds: Option<f64>,
    /// `process_virtual_memory_bytes`.
    pub virtual_memory_bytes: Option<f64>,
    /// `process_virtual_memory_max_bytes`.
    pub virtual_memory_max_bytes: Option<f64>,
    /// `process_resident_memory_bytes`.
    pub resident_memory_bytes: Option<f64>,
    /// `process_start_time_seconds`.
    pub start_time_seconds: Option<f64>,
}

/// The fields of `/proc/self/stat` the collector uses.
struct StatFields {
    /// utime + stime.
    cpu_ticks: Option<u64>,
    start_ticks: Option<u64>,
    vsize: Option<u64>,
}

/// Parses `/proc/self/stat`: the command name is in parentheses and may hold spaces and
/// parentheses itself, so fields are counted from the last `)`.
fn stat_fields(stat: &str) -> Option<StatFields> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After ")": field 3 (state) is index 0, so field N is index N - 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| {
        fields
            .get(n - 3)
            .and_then(|value| value.parse::<u64>().ok())
    };
    Some(StatFields {
        cpu_ticks: field(14).zip(field(15)).map(|(user, system)| user + system),
        start_ticks: field(22),
        vsize: field(23),
    })
}

/// A `Name:   123 kB` line of `/proc/self/status`, in KiB.
fn status_kib(status: &str, name: &str) -> Option<u64> {
    let line = status.lines().find_map(|line| line.strip_prefix(name))?;
    line.split_whitespace().next()?.parse().ok()
}

/// The soft limit of a `/proc/self/limits` row; `unlimited` is `u64::MAX`, as procfs has it.
fn soft_limit(limits: &str, name: &str) -> Option<u64> {
    let row = limits.lines().find_map(|line| line.strip_prefix(name))?;
    match row.split_whitespace().next()? {
        "unlimited" => Some(u64::MAX),
        value => value.parse().ok(),
    }
}

impl Collect for ProcessMetrics {
    fn collect(&self, out: &mut Exposition) {
        let stats = self.read();
        let families = [
            (
                "process_cpu_seconds_total",
                "Total user and system CPU time spent in seconds.",
                MetricType::Counter,
                stats.cpu_seconds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                MetricType::Gauge,
                stats.max_fds,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                MetricType::Gauge,
                stats.open_fds,
            ),
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                MetricType::Gauge,
                stats.resident_memory_bytes,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                MetricType::Gauge,
                stats.start_time_seconds,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                MetricType::Gauge,
                stats.virtual_memory_bytes,
            ),
            (
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
                MetricType::Gauge,
                stats.virtual_memory_max_bytes,
            ),
        ];
        for (name, help, kind, value) in families {
            if let Some(value) = value {
                out.sample(name, help, kind, &[], value);
            }
        }
        out.sample(
            "coredns_build_info",
            "A metric with a constant '1' value labeled by version, revision, and goversion \
             from which CoreDNS was built.",
            MetricType::Gauge,
            &[
                ("goversion", self.build.goversion),
                ("revision", self.build.revision),
                ("version", self.build.version),
            ],
            1.0,
        );
        out.sample(
            "coredns_panics_total",
            "A metrics that counts the number of panics.",
            MetricType::Counter,
            &[],
            PANICS.get() as f64,
        );
    }
}

/// One plugin enabled in one server block: a `coredns_plugin_enabled` series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnabledPlugin {
    /// `server`: as [`super::dns::server_label`] writes it.
    pub server: String,
    /// `zone`: one of the block's zones, with its trailing dot.
    pub zone: String,
    /// `view`: `""` without views.
    pub view: String,
    /// `name`: the plugin (`kubernetes`, `forward`, `cache`…).
    pub name: String,
}

/// `coredns_plugin_enabled{server,zone,view,name}`: which plugins each server block runs.
/// The server replaces the whole list whenever it loads a configuration.
#[derive(Debug, Default)]
pub struct PluginEnabled {
    plugins: ArcSwap<Vec<EnabledPlugin>>,
}

impl PluginEnabled {
    /// No plugins yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the list (a configuration was loaded).
    pub fn set(&self, plugins: Vec<EnabledPlugin>) {
        self.plugins.store(Arc::new(plugins));
    }

    /// The current list.
    pub fn get(&self) -> Arc<Vec<EnabledPlugin>> {
        self.plugins.load_full()
    }
}

impl Collect for PluginEnabled {
    fn collect(&self, out: &mut Exposition) {
        for plugin in self.plugins.load().iter() {
            out.sample(
                "coredns_plugin_enabled",
                "A metric that indicates whether a plugin is enabled on per server and zone \
                 basis.",
                MetricType::Gauge,
                &[
                    ("name", &plugin.name),
                    ("server", &plugin.server),
                    ("view", &plugin.view),
                    ("zone", &plugin.zone),
                ],
                1.0,
            );
        }
    }
}

/// How many objects of each kind a published snapshot holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObjectCounts {
    /// Namespace objects.
    pub namespaces: u64,
    /// Service objects.
    pub services: u64,
    /// EndpointSlice objects.
    pub endpoint_slices: u64,
    /// Pod objects (only kept with `pods verified`).
    pub pods: u64,
}

/// clusterdns's store metrics for one *kubernetes* store, labelled with its primary zone:
/// what replicas can be compared by (two replicas with different serials disagree).
///
/// - `clusterdns_store_generation{zone}`: snapshots published since start;
/// - `clusterdns_store_serial{zone}`: the SOA serial of the last one;
/// - `clusterdns_store_objects{zone,kind}`: its objects by kind (`Namespace`, `Service`,
///   `EndpointSlice`, `Pod`);
/// - `clusterdns_last_update_timestamp_seconds{zone}`: when it was published (so
///   `time() - clusterdns_last_update_timestamp_seconds` is the age of the answers).
///
/// Until the first publication only the generation (0) is written.
#[derive(Debug)]
pub struct StoreMetrics {
    zone: String,
    generation: AtomicU64,
    serial: AtomicU64,
    objects: [AtomicU64; 4],
    last_update: Gauge,
    /// Where the store's programming latencies go, if anywhere.
    programming: Option<Arc<ProgrammingMetrics>>,
}

const KINDS: [&str; 4] = ["EndpointSlice", "Namespace", "Pod", "Service"];

impl StoreMetrics {
    /// Metrics for the store serving `zone` (its first forward zone, `cluster.local.`).
    pub fn new(zone: &str) -> Self {
        Self {
            zone: zone.to_owned(),
            generation: AtomicU64::new(0),
            serial: AtomicU64::new(0),
            objects: [const { AtomicU64::new(0) }; 4],
            last_update: Gauge::new(),
            programming: None,
        }
    }

    /// The same, reporting programming latencies to `programming` (which it enables).
    pub fn reporting_programming(mut self, programming: Arc<ProgrammingMetrics>) -> Self {
        programming.enable();
        self.programming = Some(programming);
        self
    }

    /// A publication reflected changes `latencies` after they happened.
    pub fn programmed(&self, latencies: &[(ServiceKind, Duration)]) {
        if let Some(programming) = &self.programming {
            for (kind, latency) in latencies {
                programming.observe(*kind, *latency);
            }
        }
    }

    /// A snapshot with SOA `serial` and `objects` was published at `at`.
    pub fn published(&self, serial: u32, objects: ObjectCounts, at: SystemTime) {
        let counts = [
            objects.endpoint_slices,
            objects.namespaces,
            objects.pods,
            objects.services,
        ];
        for (gauge, count) in self.objects.iter().zip(counts) {
            gauge.store(count, Ordering::Relaxed);
        }
        self.serial.store(u64::from(serial), Ordering::Relaxed);
        let seconds = at
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |since| since.as_secs_f64());
        self.last_update.set(seconds);
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Snapshots published so far.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

impl Collect for StoreMetrics {
    fn collect(&self, out: &mut Exposition) {
        let zone = self.zone.as_str();
        let generation = self.generation();
        out.sample(
            "clusterdns_store_generation",
            "Snapshots of the cluster state published since the process started.",
            MetricType::Counter,
            &[("zone", zone)],
            generation as f64,
        );
        if generation == 0 {
            return;
        }
        out.sample(
            "clusterdns_store_serial",
            "SOA serial of the last published snapshot.",
            MetricType::Gauge,
            &[("zone", zone)],
            self.serial.load(Ordering::Relaxed) as f64,
        );
        for (kind, count) in KINDS.iter().zip(&self.objects) {
            out.sample(
                "clusterdns_store_objects",
                "Objects in the last published snapshot, by kind.",
                MetricType::Gauge,
                &[("kind", kind), ("zone", zone)],
                count.load(Ordering::Relaxed) as f64,
            );
        }
        out.sample(
            "clusterdns_last_update_timestamp_seconds",
            "Unix time at which the last snapshot was published.",
            MetricType::Gauge,
            &[("zone", zone)],
            self.last_update.get(),
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn proc_files_are_read_as_the_go_client_reads_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let proc_self = dir.path().join("self");
        fs::create_dir_all(proc_self.join("fd")).expect("mkdir");
        for fd in ["0", "1", "2", "7"] {
            fs::write(proc_self.join("fd").join(fd), "").expect("fd");
        }
        // The command name holds a space and a parenthesis.
        fs::write(
            proc_self.join("stat"),
            "4242 (cluster dns)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 130 0 0 20 0 9 0 \
             123456 2147483648 5000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
        )
        .expect("stat");
        fs::write(
            proc_self.join("status"),
            "Name:\tclusterdns\nVmSize:\t 2097152 kB\nVmRSS:\t   20480 kB\n",
        )
        .expect("status");
        fs::write(
            proc_self.join("limits"),
            "Limit                     Soft Limit           Hard Limit           Units     \n\
             Max open files            1048576              1048576              files     \n\
             Max address space         unlimited            unlimited            bytes     \n",
        )
        .expect("limits");
        let proc_stat = dir.path().join("stat");
        fs::write(&proc_stat, "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n").expect("stat");

        let metrics = ProcessMetrics::at(&proc_self, &proc_stat);
        let stats = metrics.read();
        assert_eq!(stats.cpu_seconds, Some(3.8));
        assert_eq!(stats.open_fds, Some(4.0));
        assert_eq!(stats.max_fds, Some(1_048_576.0));
        assert_eq!(stats.virtual_memory_bytes, Some(2_147_483_648.0));
        assert_eq!(stats.virtual_memory_max_bytes, Some(u64::MAX as f64));
        assert_eq!(stats.resident_memory_bytes, Some(20_971_520.0));
        assert_eq!(stats.start_time_seconds, Some(1_700_001_234.56));

        let mut out = Exposition::new();
        metrics.collect(&mut out);
        let text = out.finish();
        for expected in [
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n\
             # TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3.8\n",
            "# TYPE process_open_fds gauge\nprocess_open_fds 4\n",
            "process_max_fds 1048576\n",
            "process_resident_memory_bytes 20971520\n",
            "process_virtual_memory_bytes 2147483648\n",
            "process_start_time_seconds 1700001234.56\n",
            "# TYPE coredns_panics_total counter\n",
            "# TYPE coredns_build_info gauge\n",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
        let version = env!("CARGO_PKG_VERSION");
        assert!(text.contains(&format!(
            "coredns_build_info{{goversion=\"{}\",revision=\"{}\",version=\"{version}\"}} 1\n",
            BuildInfo::current().goversion,
            BuildInfo::current().revision,
        )));
    }

    #[test]
    fn a_missing_proc_leaves_out_the_process_families_only() {
        let metrics = ProcessMetrics::at(Path::new("/nonexistent/self"), Path::new("/nonexistent"));
        let mut out = Exposition::new();
        metrics.collect(&mut out);
        let text = out.finish();
        assert!(!text.contains("process_"));
        assert!(text.contains("coredns_build_info{"));
        assert!(text.contains("coredns_panics_total "));
    }

    #[test]
    fn this_process_can_be_read() {
        if !Path::new("/proc/self/stat").exists() {
            return;
        }
        let stats = ProcessMetrics::new().read();
        assert!(stats.resident_memory_bytes.is_some_and(|rss| rss > 0.0));
        assert!(stats.open_fds.is_some_and(|fds| fds >= 3.0));
        assert!(stats.start_time_seconds.is_some_and(|start| start > 1e9));
    }

    #[test]
    fn build_info_names_the_compiler() {
        let info = BuildInfo::current();
        assert!(info.goversion.starts_with("rustc "), "{}", info.goversion);
        assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn plugin_enabled_lists_the_current_configuration() {
        let enabled = PluginEnabled::new();
        let plugin = |name: &str| EnabledPlugin {
            server: "dns://:53".to_owned(),
            zone: ".".to_owned(),
            view: String::new(),
            name: name.to_owned(),
        };
        enabled.set(vec![plugin("cache"), plugin("kubernetes")]);
        enabled.set(vec![plugin("forward")]);
        let mut out = Exposition::new();
        enabled.collect(&mut out);
        assert_eq!(
            out.finish(),
            "# HELP coredns_plugin_enabled A metric that indicates whether a plugin is enabled \
             on per server and zone basis.\n# TYPE coredns_plugin_enabled gauge\n\
             coredns_plugin_enabled{name=\"forward\",server=\"dns://:53\",view=\"\",zone=\".\"} 1\n"
        );
    }

    #[test]
    fn store_metrics_follow_publications() {
        let store = StoreMetrics::new("cluster.local.");
        let mut out = Exposition::new();
        store.collect(&mut out);
        assert_eq!(
            out.finish(),
            "# HELP clusterdns_store_generation Snapshots of the cluster state published since \
             the process started.\n# TYPE clusterdns_store_generation counter\n\
             clusterdns_store_generation{zone=\"cluster.local.\"} 0\n"
        );
        let counts = ObjectCounts {
            namespaces: 3,
            services: 12,
            endpoint_slices: 14,
            pods: 0,
        };
        store.published(
            1_700_000_000,
            counts,
            UNIX_EPOCH + Duration::from_secs(1_700_000_005),
        );
        store.published(
            1_700_000_060,
            counts,
            UNIX_EPOCH + Duration::from_secs(1_700_000_065),
        );
        let mut out = Exposition::new();
        store.collect(&mut out);
        let text = out.finish();
        for expected in [
            "clusterdns_store_generation{zone=\"cluster.local.\"} 2\n",
            "clusterdns_store_serial{zone=\"cluster.local.\"} 1700000060\n",
            "clusterdns_store_objects{kind=\"EndpointSlice\",zone=\"cluster.local.\"} 14\n",
            "clusterdns_store_objects{kind=\"Namespace\",zone=\"cluster.local.\"} 3\n",
            "clusterdns_store_objects{kind=\"Pod\",zone=\"cluster.local.\"} 0\n",
            "clusterdns_store_objects{kind=\"Service\",zone=\"cluster.local.\"} 12\n",
            "clusterdns_last_update_timestamp_seconds{zone=\"cluster.local.\"} 1700000065\n",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
    }
}
