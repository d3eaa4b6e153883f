//! *hosts* on the request path (CoreDNS `plugin/hosts`): A, AAAA and PTR records from a hosts
//! file and the Corefile's inline entries.
//!
//! As CoreDNS: names outside the plugin's zones pass on (PTR queries are answered for any
//! address the entries hold, whatever the zones); a name with A or AAAA entries answers
//! NODATA for the other types (or passes on with `fallthrough_unsupported`); a name with none
//! passes on with `fallthrough`, else SERVFAIL (there is no SOA to make an NXDOMAIN of).
//! A leftmost `*` label matches one label (`*.example.com` answers `a.example.com`, not
//! `example.com` nor `a.b.example.com`), and makes no PTR. The file's entries come first,
//! then the inline ones. Answers are authoritative, with the plugin's `ttl`.
//!
//! The file is read at start and then every `reload` period when its modification time or
//! size changed; a file that is missing or cannot be read keeps the entries last read (none
//! at start, with a warning). Lookups take no lock and allocate nothing: the entries are
//! swapped whole.
//!
//! Metrics (CoreDNS's): `coredns_hosts_entries{hostsfile}` and
//! `coredns_hosts_reload_timestamp_seconds`, set each time the file is read.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use tokio_util::sync::CancellationToken;

use super::lifecycle::{Build, Lifecycle, Start};
use super::{Ctx, Flow, PluginChain, Query};
use crate::server::Block;
use crate::server::error::StartError;
use crate::codes::{class, rtype};
use crate::config::HostsConfig;
use crate::metrics::{Collect, Exposition, MetricType};
use crate::name::wire_zones;
use crate::name::{WireName, suffix_offset};
use crate::plugin::Plugin;
use crate::wire::{self, Request, rcode};

type Map<K, V> = HashMap<K, V, ahash::RandomState>;

/// What a hosts file (or the inline entries) holds: names in lower-case wire format.
#[derive(Debug, Default)]
struct Entries {
    v4: Map<Box<[u8]>, Vec<Ipv4Addr>>,
    v6: Map<Box<[u8]>, Vec<Ipv6Addr>>,
    /// Owners `*.<rest>`, by their whole wire name.
    wild4: Map<Box<[u8]>, Vec<Ipv4Addr>>,
    wild6: Map<Box<[u8]>, Vec<Ipv6Addr>>,
    /// The names of each address, for PTR (not with `no_reverse`).
    ptr: Map<IpAddr, Vec<Box<[u8]>>>,
}

impl Entries {
    /// CoreDNS's `Map.Len`: every address of every name, and every reverse name.
    fn len(&self) -> usize {
        self.v4.values().map(Vec::len).sum::<usize>()
            + self.v6.values().map(Vec::len).sum::<usize>()
            + self.wild4.values().map(Vec::len).sum::<usize>()
            + self.wild6.values().map(Vec::len).sum::<usize>()
            + self.ptr.values().map(Vec::len).sum::<usize>()
    }

    /// Parses hosts-file `text`: `IP NAME...` per line, `#` comments. Lines that do not parse
    /// and names outside `zones` are skipped, as CoreDNS skips them.
    fn parse(text: &str, zones: &[WireName], reverse: bool) -> Self {
        let mut entries = Self::default();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or_default();
            let mut fields = line.split_whitespace();
            let (Some(address), Some(_)) = (fields.next(), line.split_whitespace().nth(1)) else {
                continue;
            };
            let Ok(ip) = address
                .split('%')
                .next()
                .unwrap_or_default()
                .parse::<IpAddr>()
            else {
                continue;
            };
            // An IPv4-mapped address is the IPv4 address (Go's `To4`).
            let ip = match ip {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
                IpAddr::V4(_) => ip,
            };
            for name in fields {
                let mut dotted = name.to_lowercase();
                if !dotted.ends_with('.') {
                    dotted.push('.');
                }
                let Ok(wire) = WireName::from_dotted(&dotted) else {
                    continue;
                };
                let wire = wire.as_bytes();
                if !zones
                    .iter()
                    .any(|zone| suffix_offset(wire, zone.as_bytes()).is_some())
                {
                    continue;
                }
                let key: Box<[u8]> = wire.into();
                let wildcard = wire.starts_with(b"\x01*");
                match (ip, wildcard) {
                    (IpAddr::V4(v4), true) => entries.wild4.entry(key).or_default().push(v4),
                    (IpAddr::V6(v6), true) => entries.wild6.entry(key).or_default().push(v6),
                    (IpAddr::V4(v4), false) => {
                        entries.v4.entry(key.clone()).or_default().push(v4);
                    }
                    (IpAddr::V6(v6), false) => {
                        entries.v6.entry(key.clone()).or_default().push(v6);
                    }
                }
                if reverse && !wildcard {
                    entries.ptr.entry(ip).or_default().push(wire.into());
                }
            }
        }
        entries
    }

    /// The addresses of `qname`: its own, else a wildcard's one label up.
    fn lookup<'e, T>(
        exact: &'e Map<Box<[u8]>, Vec<T>>,
        wild: &'e Map<Box<[u8]>, Vec<T>>,
        qname: &[u8],
    ) -> &'e [T] {
        if let Some(found) = exact.get(qname) {
            return found;
        }
        if wild.is_empty() {
            return &[];
        }
        // `*.` + the name without its first label, when that leaves a label.
        let first = usize::from(qname.first().copied().unwrap_or(0));
        let rest = qname.get(1 + first..).unwrap_or_default();
        if first == 0 || rest.first().is_none_or(|&len| len == 0) {
            return &[];
        }
        let mut key = [0u8; 2 + 255];
        key[..2].copy_from_slice(b"\x01*");
        let len = (2 + rest.len()).min(key.len());
        key[2..len].copy_from_slice(&rest[..len - 2]);
        wild.get(&key[..len]).map_or(&[], Vec::as_slice)
    }

    fn v4(&self, qname: &[u8]) -> &[Ipv4Addr] {
        Self::lookup(&self.v4, &self.wild4, qname)
    }

    fn v6(&self, qname: &[u8]) -> &[Ipv6Addr] {
        Self::lookup(&self.v6, &self.wild6, qname)
    }
}

/// The plugin of one block.
#[derive(Debug)]
pub(crate) struct Hosts {
    config: Box<HostsConfig>,
    zones: Vec<WireName>,
    fallthrough: Option<Vec<WireName>>,
    inline: Box<Entries>,
    /// The file's entries, replaced whole when it changes.
    file: ArcSwap<Entries>,
    /// What the file looked like when last read.
    seen: Mutex<Seen>,
}

/// The file as last seen.
#[derive(Debug, Default)]
struct Seen {
    /// Its modification time and size when last read.
    stamp: Option<(SystemTime, u64)>,
    /// The last error reading it (logged once).
    error: Option<String>,
}

impl Hosts {
    /// The plugin for `config`, the file read (a missing one is a warning).
    pub(crate) fn load(config: &HostsConfig) -> Self {
        let zones = wire_zones(&config.zones);
        let inline = Box::new(Entries::parse(
            &config.inline.join("\n"),
            &zones,
            !config.no_reverse,
        ));
        let hosts = Self {
            config: Box::new(config.clone()),
            fallthrough: config.fallthrough.as_ref().map(|zones| wire_zones(zones)),
            zones,
            inline,
            file: ArcSwap::from_pointee(Entries::default()),
            seen: Mutex::new(Seen::default()),
        };
        if let Err(error) = hosts.read() {
            tracing::warn!(
                "hosts (line {}): {}: {error}; serving {} inline entries until it can be read",
                config.line,
                config.path.display(),
                hosts.inline.len()
            );
        }
        hosts
    }

    /// Reads the file again if its modification time or size changed. An error keeps the
    /// entries as they are.
    fn read(&self) -> Result<bool, String> {
        let metadata = std::fs::metadata(&self.config.path).map_err(|error| {
            if error.kind() == std::io::ErrorKind::NotFound {
                "file does not exist".to_owned()
            } else {
                error.to_string()
            }
        })?;
        if metadata.is_dir() {
            return Err("is a directory".to_owned());
        }
        let stamp = (
            metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            metadata.len(),
        );
        if self.seen.lock().is_ok_and(|seen| seen.stamp == Some(stamp)) {
            return Ok(false);
        }
        let bytes = crate::config::read_regular(&self.config.path, crate::config::MAX_FILE_BYTES)
            .map_err(|error| error.to_string())?;
        let entries = Entries::parse(
            &String::from_utf8_lossy(&bytes),
            &self.zones,
            !self.config.no_reverse,
        );
        let count = entries.len() + self.inline.len();
        self.file.store(Arc::new(entries));
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Seen {
                stamp: Some(stamp),
                error: None,
            };
        }
        let modified = stamp
            .0
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        METRICS.read(&self.config.path, count, modified);
        tracing::debug!(
            "hosts: parsed {} into {count} entries",
            self.config.path.display()
        );
        Ok(true)
    }

    /// One reload check: a changed file is read; a failure is logged once, and the entries
    /// last read stay.
    pub(crate) fn reload(&self) {
        match self.read() {
            Ok(true) => tracing::info!("hosts: reloaded {}", self.config.path.display()),
            Ok(false) => {}
            Err(error) => {
                let Ok(mut seen) = self.seen.lock() else {
                    return;
                };
                if seen.error.as_deref() != Some(error.as_str()) {
                    tracing::warn!(
                        "hosts: {}: {error}; keeping the entries last read",
                        self.config.path.display()
                    );
                    seen.error = Some(error);
                }
            }
        }
    }

    fn falls_through(&self, qname: &[u8]) -> bool {
        crate::name::falls_through(self.fallthrough.as_deref(), qname)
    }

    /// Answers `request` into `out`, or passes it on.
    pub(crate) fn respond(&self, request: &Request<'_>, limit: usize, out: &mut Vec<u8>) -> Flow {
        let question = &request.question;
        let qname = question.name();
        let qtype = question.qtype;
        let in_zone = self
            .zones
            .iter()
            .any(|zone| suffix_offset(qname, zone.as_bytes()).is_some());
        // PTR names need not be in the zones.
        if !in_zone && qtype != rtype::PTR {
            return Flow::Pass;
        }
        let file = self.file.load();
        let inline: &Entries = &self.inline;
        let ttl = self.config.ttl;
        let authoritative = true;
        match qtype {
            rtype::PTR => {
                let Some(ip) = crate::zone::rrset::address_of_reverse_wire(qname) else {
                    return Flow::Pass;
                };
                let names = [file.ptr.get(&ip), inline.ptr.get(&ip)];
                if names.iter().flatten().all(|names| names.is_empty()) {
                    return Flow::Pass;
                }
                let mut reply = wire::QuestionAnswers::new(request, out);
                for name in names.into_iter().flatten().flatten() {
                    reply.answer(rtype::PTR, class::IN, ttl, name);
                }
                reply.finish(rcode::NOERROR, authoritative, limit);
                return Flow::reply(Plugin::Hosts);
            }
            rtype::A => {
                let (mine, theirs) = (file.v4(qname), inline.v4(qname));
                if !mine.is_empty() || !theirs.is_empty() {
                    let mut reply = wire::QuestionAnswers::new(request, out);
                    for ip in mine.iter().chain(theirs) {
                        reply.answer(rtype::A, class::IN, ttl, &ip.octets());
                    }
                    reply.finish(rcode::NOERROR, authoritative, limit);
                    return Flow::reply(Plugin::Hosts);
                }
            }
            rtype::AAAA => {
                let (mine, theirs) = (file.v6(qname), inline.v6(qname));
                if !mine.is_empty() || !theirs.is_empty() {
                    let mut reply = wire::QuestionAnswers::new(request, out);
                    for ip in mine.iter().chain(theirs) {
                        reply.answer(rtype::AAAA, class::IN, ttl, &ip.octets());
                    }
                    reply.finish(rcode::NOERROR, authoritative, limit);
                    return Flow::reply(Plugin::Hosts);
                }
            }
            _ => {
                if self.config.fallthrough_unsupported && self.falls_through(qname) {
                    return Flow::Pass;
                }
            }
        }
        let exists = [&*file, inline]
            .iter()
            .any(|entries| !entries.v4(qname).is_empty() || !entries.v6(qname).is_empty());
        if !exists {
            if self.falls_through(qname) {
                return Flow::Pass;
            }
            // An NXDOMAIN needs a SOA, which a hosts file has not: SERVFAIL, as CoreDNS.
            wire::write_rcode(request, rcode::SERVFAIL, out);
            return Flow::reply(Plugin::Hosts);
        }
        // The name exists, not with this type: NODATA.
        wire::QuestionAnswers::new(request, out).finish(rcode::NOERROR, authoritative, limit);
        Flow::reply(Plugin::Hosts)
    }
}

/// The plugin's metrics, process-wide as CoreDNS's are.
#[derive(Debug)]
struct HostsMetrics {
    /// `coredns_hosts_entries` by file.
    entries: Mutex<BTreeMap<String, usize>>,
    /// `coredns_hosts_reload_timestamp_seconds`: the last file read's modification time.
    reloaded: Mutex<Option<Duration>>,
}

static METRICS: HostsMetrics = HostsMetrics {
    entries: Mutex::new(BTreeMap::new()),
    reloaded: Mutex::new(None),
};

impl HostsMetrics {
    fn read(&self, path: &Path, count: usize, modified: Duration) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(path.display().to_string(), count);
        }
        if let Ok(mut reloaded) = self.reloaded.lock() {
            *reloaded = Some(modified);
        }
    }
}

/// The *hosts* metrics, for the registry.
#[derive(Debug)]
pub(crate) struct HostsCollector;

impl Collect for HostsCollector {
    fn collect(&self, out: &mut Exposition) {
        if let Ok(entries) = METRICS.entries.lock() {
            for (path, count) in entries.iter() {
                out.sample(
                    "coredns_hosts_entries",
                    "The combined number of entries in hosts and Corefile.",
                    MetricType::Gauge,
                    &[("hostsfile", path)],
                    *count as f64,
                );
            }
        }
        if let Ok(reloaded) = METRICS.reloaded.lock()
            && let Some(at) = *reloaded
        {
            out.sample(
                "coredns_hosts_reload_timestamp_seconds",
                "The timestamp of the last reload of hosts file.",
                MetricType::Gauge,
                &[],
                at.as_secs_f64(),
            );
        }
    }
}

impl Lifecycle for Hosts {
    const INTERNET_ONLY: bool = true;

    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        Ok(at.config.plugins.hosts.as_ref().map(Self::load))
    }

    /// Reads the file again every `reload` period (not at all with `reload 0`).
    fn start(&self, at: &Start<'_>) -> impl Future<Output = Result<(), StartError>> + Send {
        let period = self.config.reload;
        if !period.is_zero() {
            tokio::spawn(watch(Arc::clone(at.block), period, at.token.clone()));
        }
        std::future::ready(Ok(()))
    }

    fn process_collectors(out: &mut Vec<Arc<dyn Collect>>) {
        out.push(Arc::new(HostsCollector));
    }

    #[inline]
    fn answer(
        &self,
        _chain: &PluginChain,
        _ctx: &Ctx<'_>,
        _index: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        self.respond(q.request, q.limit, out)
    }
}

/// Checks `block`'s hosts file every `period` until `shutdown`.
async fn watch(block: Arc<Block>, period: Duration, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = shutdown.cancelled() => return,
        }
        if let Some(hosts) = block.chain.get::<Hosts>() {
            hosts.reload();
        }
    }
}

#[cfg(test)]
mod tests;
