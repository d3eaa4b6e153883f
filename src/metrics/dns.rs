//! CoreDNS's `coredns_dns_*` families (`plugin/metrics/vars`): what every answered query
//! adds to, per server and zone.
//!
//! One [`ServerMetrics`] holds the counters of one (server, zone, view) triple in fixed
//! arrays, indexed by protocol, address family, query type, rcode and answering plugin, so
//! [`ServerMetrics::record`] is a handful of relaxed atomic adds: no label hashing, no lock,
//! no allocation. [`DnsMetrics`] is the process-wide set of them; it outlives configuration
//! reloads, so counters carry on across a reload as CoreDNS's do.
//!
//! The label values follow CoreDNS's `vars.Report`:
//!
//! - `server`: `dns://` and the listen address as the Corefile gives it: `dns://:53`,
//!   `dns://127.0.0.1:1053` (see [`server_label`]);
//! - `zone`: the server block's zone that holds the query name, with its trailing dot (`.`,
//!   `cluster.local.`), or `dropped` for queries the server refused before any plugin saw
//!   them (no zone matched, a class other than IN);
//! - `view`: the view's name, `""` without views;
//! - `proto`: `udp` or `tcp`;
//! - `family`: `1` for an IPv4 client (IPv4-mapped IPv6 included), `2` for IPv6;
//! - `type`: one of CoreDNS's monitored query types (A, AAAA, CNAME, DNSKEY, DS, MX, NSEC3,
//!   NSEC, NS, PTR, RRSIG, SOA, SRV, TXT, HTTPS, IXFR, AXFR, ANY), else `other`;
//! - `rcode`: the rcode's name as miekg/dns spells it (`NOERROR`, `NXDOMAIN`, `BADSIG`…), or
//!   `RCODE` and the number for an unnamed one (`RCODE12`);
//! - `plugin`: the plugin that wrote the reply, `""` when the server itself did.
//!
//! `coredns_dns_request_duration_seconds` has no `type` label: CoreDNS's README says it has
//! one, its code does not.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::codes::rtype;
use crate::plugin::Plugin;

use super::{Collect, Counter, DURATION_BUCKETS, Exposition, Histogram, MetricType, SIZE_BUCKETS};

/// The zone label of queries that never reached a plugin (CoreDNS's `vars.Dropped`: no
/// trailing dot, so it can not be a real zone).
pub const DROPPED: &str = "dropped";

const REQUESTS: &str = "coredns_dns_requests_total";
const REQUESTS_HELP: &str = "Counter of DNS requests made per zone, protocol and family.";
const DURATION: &str = "coredns_dns_request_duration_seconds";
const DURATION_HELP: &str = "Histogram of the time (in seconds) each request took per zone.";
const REQUEST_SIZE: &str = "coredns_dns_request_size_bytes";
const REQUEST_SIZE_HELP: &str =
    "Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.";
const DO_REQUESTS: &str = "coredns_dns_do_requests_total";
const DO_REQUESTS_HELP: &str = "Counter of DNS requests with DO bit set per zone.";
const RESPONSE_SIZE: &str = "coredns_dns_response_size_bytes";
const RESPONSE_SIZE_HELP: &str = "Size of the returned response in bytes.";
const RESPONSES: &str = "coredns_dns_responses_total";
const RESPONSES_HELP: &str = "Counter of response status codes.";

/// The transport a query came over (`proto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proto {
    /// `tcp`.
    Tcp = 0,
    /// `udp`.
    Udp = 1,
}

impl Proto {
    /// Both, in label order.
    pub const ALL: [Self; 2] = [Self::Tcp, Self::Udp];

    /// The label value.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Tcp => "tcp",
            Self::Udp => "udp",
        }
    }
}

/// The client's address family (`family`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `1`: IPv4.
    V4 = 0,
    /// `2`: IPv6.
    V6 = 1,
}

impl Family {
    /// Both, in label order.
    pub const ALL: [Self; 2] = [Self::V4, Self::V6];

    /// The family of a client address, as CoreDNS decides it (`net.IP.To4`): an
    /// IPv4-mapped IPv6 address is IPv4.
    pub fn of(client: IpAddr) -> Self {
        match client {
            IpAddr::V4(_) => Self::V4,
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => Self::V4,
            IpAddr::V6(_) => Self::V6,
        }
    }

    /// The label value.
    pub const fn label(self) -> &'static str {
        match self {
            Self::V4 => "1",
            Self::V6 => "2",
        }
    }
}

/// Who wrote a reply: `responses_total`'s `plugin` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Writer {
    /// `""`: the server itself (REFUSED for a name no block serves, FORMERR, BADVERS, the
    /// SERVFAIL written for a plugin's error).
    Server,
    /// A plugin: its name.
    Plugin(Plugin),
}

impl From<Plugin> for Writer {
    fn from(plugin: Plugin) -> Self {
        Self::Plugin(plugin)
    }
}

impl Writer {
    /// How many there are: the server and each plugin.
    pub const COUNT: usize = 1 + Plugin::ALL.len();

    /// Every writer, the server first and then the plugins in `plugin.cfg` order.
    pub fn all() -> impl Iterator<Item = Self> {
        std::iter::once(Self::Server).chain(Plugin::ALL.iter().map(|p| Self::Plugin(*p)))
    }

    /// Its place in the counters: 0 for the server, then the plugins' in [`Plugin::ALL`].
    const fn index(self) -> usize {
        match self {
            Self::Server => 0,
            Self::Plugin(plugin) => 1 + plugin as usize,
        }
    }

    /// The label value.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Server => "",
            Self::Plugin(plugin) => plugin.name(),
        }
    }
}

/// What one answered query contributes: the arguments of CoreDNS's `vars.Report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observation {
    /// The transport.
    pub proto: Proto,
    /// The client's address family ([`Family::of`]).
    pub family: Family,
    /// The question's type.
    pub qtype: u16,
    /// The reply's rcode, extended rcode bits included (0–4095).
    pub rcode: u16,
    /// Who wrote the reply.
    pub plugin: Writer,
    /// The request message's length in bytes, as received.
    pub request_size: usize,
    /// The reply's length in bytes (0 when nothing was sent).
    pub response_size: usize,
    /// From receiving the request to writing the reply.
    pub duration: Duration,
    /// The request's EDNS DO bit.
    pub dnssec_ok: bool,
}

/// The query types CoreDNS counts by name (`monitorType`), in label order; anything else is
/// `other`, at index [`OTHER_TYPE`].
const TYPE_LABELS: [&str; 19] = [
    "A", "AAAA", "ANY", "AXFR", "CNAME", "DNSKEY", "DS", "HTTPS", "IXFR", "MX", "NS", "NSEC",
    "NSEC3", "PTR", "RRSIG", "SOA", "SRV", "TXT", "other",
];
const TYPES: usize = TYPE_LABELS.len();
const OTHER_TYPE: usize = TYPES - 1;

/// The index of `qtype` in [`TYPE_LABELS`].
const fn type_index(qtype: u16) -> usize {
    match qtype {
        rtype::A => 0,
        rtype::AAAA => 1,
        rtype::ANY => 2,
        rtype::AXFR => 3,
        rtype::CNAME => 4,
        rtype::DNSKEY => 5,
        rtype::DS => 6,
        rtype::HTTPS => 7,
        rtype::IXFR => 8,
        rtype::MX => 9,
        rtype::NS => 10,
        rtype::NSEC => 11,
        rtype::NSEC3 => 12,
        rtype::PTR => 13,
        rtype::RRSIG => 14,
        rtype::SOA => 15,
        rtype::SRV => 16,
        rtype::TXT => 17,
        _ => OTHER_TYPE,
    }
}

/// The `type` label of a query type.
pub const fn type_label(qtype: u16) -> &'static str {
    TYPE_LABELS[type_index(qtype)]
}

/// Rcodes 0–23 are counted in arrays; larger ones (rare: only upstream replies with
/// extended rcodes carry them) in a short list behind a lock.
const RCODES: usize = 24;

/// The names miekg/dns gives rcodes 0–23 (`RcodeToString`); `None` where it has none.
const RCODE_NAMES: [Option<&str>; RCODES] = [
    Some("NOERROR"),
    Some("FORMERR"),
    Some("SERVFAIL"),
    Some("NXDOMAIN"),
    Some("NOTIMP"),
    Some("REFUSED"),
    Some("YXDOMAIN"),
    Some("YXRRSET"),
    Some("NXRRSET"),
    Some("NOTAUTH"),
    Some("NOTZONE"),
    Some("DSOTYPENI"),
    None,
    None,
    None,
    None,
    Some("BADSIG"),
    Some("BADKEY"),
    Some("BADTIME"),
    Some("BADMODE"),
    Some("BADNAME"),
    Some("BADALG"),
    Some("BADTRUNC"),
    Some("BADCOOKIE"),
];

/// The `rcode` label of an rcode, as CoreDNS's `rcode.ToString` writes it: the name where
/// miekg/dns has one, else `RCODE` and the number.
pub fn rcode_label(rcode: u16) -> String {
    match RCODE_NAMES.get(usize::from(rcode)).copied().flatten() {
        Some(name) => name.to_owned(),
        None => format!("RCODE{rcode}"),
    }
}

/// The `server` label of a listener: `dns://` and the address as a Corefile would give it —
/// the port alone when the block binds no address (`dns://:53`), else the bound address
/// (`dns://127.0.0.1:1053`, `dns://[::1]:53`).
pub fn server_label(bind: Option<IpAddr>, port: u16) -> String {
    match bind {
        None => format!("dns://:{port}"),
        Some(IpAddr::V4(ip)) => format!("dns://{ip}:{port}"),
        Some(IpAddr::V6(ip)) => format!("dns://[{ip}]:{port}"),
    }
}

/// The `coredns_dns_*` metrics of one (server, zone, view).
///
/// The counters are kept in [`SHARDS`] cache-line-aligned copies, one picked per thread,
/// and summed at scrape time: threads answering queries side by side do not fight over the
/// same cache lines.
#[derive(Debug)]
pub struct ServerMetrics {
    server: String,
    zone: String,
    view: String,
    shards: Box<[Shard]>,
    /// `responses_total` for rcodes above 23: (rcode, plugin, count).
    rare_responses: Mutex<Vec<(u16, Writer, u64)>>,
}

/// Copies of the counters kept apart so that threads do not share cache lines.
pub const SHARDS: usize = 8;

/// One copy of the counters.
#[derive(Debug)]
#[repr(align(128))]
struct Shard {
    /// `requests_total`, by [family][proto][type].
    requests: [[[Counter; TYPES]; 2]; 2],
    /// `do_requests_total`.
    do_requests: Counter,
    /// `responses_total`, by [plugin][rcode] for rcodes below [`RCODES`].
    responses: [[Counter; RCODES]; Writer::COUNT],
    /// `request_duration_seconds`.
    duration: Histogram,
    /// `request_size_bytes`, by proto.
    request_size: [Histogram; 2],
    /// `response_size_bytes`, by proto.
    response_size: [Histogram; 2],
}

impl Shard {
    fn new() -> Self {
        Self {
            requests: [const { [const { [const { Counter::new() }; TYPES] }; 2] }; 2],
            do_requests: Counter::new(),
            responses: [const { [const { Counter::new() }; RCODES] }; Writer::COUNT],
            duration: Histogram::new(&DURATION_BUCKETS),
            request_size: [
                Histogram::integral(&SIZE_BUCKETS),
                Histogram::integral(&SIZE_BUCKETS),
            ],
            response_size: [
                Histogram::integral(&SIZE_BUCKETS),
                Histogram::integral(&SIZE_BUCKETS),
            ],
        }
    }
}

/// This thread's shard index: threads take indexes in turn on first use.
fn shard_index() -> usize {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|index| {
        let mut value = index.get();
        if value == usize::MAX {
            value = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
            index.set(value);
        }
        value
    })
}

impl ServerMetrics {
    /// Zeroed metrics for `server` ([`server_label`]), `zone` (with its trailing dot, or
    /// [`DROPPED`]) and `view` (`""` without views).
    pub fn new(server: &str, zone: &str, view: &str) -> Self {
        Self {
            server: server.to_owned(),
            zone: zone.to_owned(),
            view: view.to_owned(),
            shards: (0..SHARDS).map(|_| Shard::new()).collect(),
            rare_responses: Mutex::new(Vec::new()),
        }
    }

    /// The `server` label.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The `zone` label.
    pub fn zone(&self) -> &str {
        &self.zone
    }

    /// The `view` label.
    pub fn view(&self) -> &str {
        &self.view
    }

    /// Counts one answered (or dropped) query: eight or nine relaxed atomic adds on this
    /// thread's shard, no lock and no allocation (an rcode above 23 takes a lock).
    pub fn record(&self, observation: &Observation) {
        let shard = &self.shards[shard_index()];
        let proto = observation.proto as usize;
        shard.requests[observation.family as usize][proto][type_index(observation.qtype)].inc();
        if observation.dnssec_ok {
            shard.do_requests.inc();
        }
        shard.duration.observe(observation.duration.as_secs_f64());
        shard.request_size[proto].observe(observation.request_size as f64);
        shard.response_size[proto].observe(observation.response_size as f64);
        match shard.responses[observation.plugin.index()].get(usize::from(observation.rcode)) {
            Some(counter) => counter.inc(),
            None => self.record_rare(observation.rcode, observation.plugin),
        }
    }

    #[cold]
    fn record_rare(&self, rcode: u16, plugin: Writer) {
        let mut rare = self
            .rare_responses
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match rare
            .iter_mut()
            .find(|(code, by, _)| *code == rcode && *by == plugin)
        {
            Some((_, _, count)) => *count += 1,
            None => rare.push((rcode, plugin, 1)),
        }
    }

    /// The sum over shards of the counter `pick` selects.
    fn total(&self, pick: impl Fn(&Shard) -> &Counter) -> u64 {
        self.shards.iter().map(|shard| pick(shard).get()).sum()
    }

    /// The shards' histograms that `pick` selects, merged.
    fn merged(&self, pick: impl Fn(&Shard) -> &Histogram) -> Histogram {
        let merged = pick(&self.shards[0]).empty_like();
        for shard in self.shards.iter() {
            merged.absorb(pick(shard));
        }
        merged
    }

    /// Requests counted so far with this proto, family and query type.
    pub fn requests(&self, proto: Proto, family: Family, qtype: u16) -> u64 {
        let (proto, family, qtype) = (proto as usize, family as usize, type_index(qtype));
        self.total(|shard| &shard.requests[family][proto][qtype])
    }

    /// Replies counted so far with this rcode, written by `plugin`.
    pub fn responses(&self, rcode: u16, plugin: Writer) -> u64 {
        let index = usize::from(rcode);
        if index < RCODES {
            return self.total(|shard| &shard.responses[plugin.index()][index]);
        }
        self.rare_responses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(code, by, _)| *code == rcode && *by == plugin)
            .map_or(0, |(_, _, count)| *count)
    }
}

impl Collect for ServerMetrics {
    /// Writes the series that have been counted at least once (a Go `*Vec` shows a label
    /// combination only after its first use), labels in the Go client's order (by name).
    fn collect(&self, out: &mut Exposition) {
        let (server, zone, view) = (self.server.as_str(), self.zone.as_str(), self.view.as_str());
        for family in Family::ALL {
            for proto in Proto::ALL {
                for (index, qtype) in TYPE_LABELS.iter().enumerate() {
                    let value =
                        self.total(|shard| &shard.requests[family as usize][proto as usize][index]);
                    if value == 0 {
                        continue;
                    }
                    let labels = [
                        ("family", family.label()),
                        ("proto", proto.label()),
                        ("server", server),
                        ("type", qtype),
                        ("view", view),
                        ("zone", zone),
                    ];
                    out.sample(
                        REQUESTS,
                        REQUESTS_HELP,
                        MetricType::Counter,
                        &labels,
                        value as f64,
                    );
                }
            }
        }

        let do_requests = self.total(|shard| &shard.do_requests);
        if do_requests > 0 {
            let labels = [("server", server), ("view", view), ("zone", zone)];
            out.sample(
                DO_REQUESTS,
                DO_REQUESTS_HELP,
                MetricType::Counter,
                &labels,
                do_requests as f64,
            );
        }

        let duration = self.merged(|shard| &shard.duration);
        if duration.count() > 0 {
            let labels = [("server", server), ("view", view), ("zone", zone)];
            out.histogram(DURATION, DURATION_HELP, &labels, &duration);
        }

        for (name, help, request) in [
            (REQUEST_SIZE, REQUEST_SIZE_HELP, true),
            (RESPONSE_SIZE, RESPONSE_SIZE_HELP, false),
        ] {
            for proto in Proto::ALL {
                let p = proto as usize;
                let histogram = self.merged(|shard| {
                    if request {
                        &shard.request_size[p]
                    } else {
                        &shard.response_size[p]
                    }
                });
                if histogram.count() == 0 {
                    continue;
                }
                let labels = [
                    ("proto", proto.label()),
                    ("server", server),
                    ("view", view),
                    ("zone", zone),
                ];
                out.histogram(name, help, &labels, &histogram);
            }
        }

        let rare = self
            .rare_responses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut writers: Vec<Writer> = Writer::all().collect();
        writers.sort_by_key(|writer| writer.label());
        for plugin in writers {
            let common = (0..RCODES).map(|rcode| {
                let count = self.total(|shard| &shard.responses[plugin.index()][rcode]);
                (rcode as u16, count)
            });
            let uncommon = rare
                .iter()
                .filter(|(_, by, _)| *by == plugin)
                .map(|&(rcode, _, count)| (rcode, count));
            for (rcode, value) in common.chain(uncommon) {
                if value == 0 {
                    continue;
                }
                let rcode = rcode_label(rcode);
                let labels = [
                    ("plugin", plugin.label()),
                    ("rcode", rcode.as_str()),
                    ("server", server),
                    ("view", view),
                    ("zone", zone),
                ];
                out.sample(
                    RESPONSES,
                    RESPONSES_HELP,
                    MetricType::Counter,
                    &labels,
                    value as f64,
                );
            }
        }
    }
}

/// Every [`ServerMetrics`] of the process: one collector, registered once, whose members
/// survive configuration reloads (a reload that keeps a server and zone keeps counting on
/// the same counters).
#[derive(Debug, Default)]
pub struct DnsMetrics {
    servers: Mutex<Vec<Arc<ServerMetrics>>>,
}

impl DnsMetrics {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The metrics of (`server`, `zone`, `view`), created on first use. Called when a
    /// configuration is loaded, never per query.
    pub fn server_zone(&self, server: &str, zone: &str, view: &str) -> Arc<ServerMetrics> {
        let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = servers.iter().find(|metrics| {
            metrics.server == server && metrics.zone == zone && metrics.view == view
        }) {
            return Arc::clone(found);
        }
        let metrics = Arc::new(ServerMetrics::new(server, zone, view));
        servers.push(Arc::clone(&metrics));
        metrics
    }

    /// The metrics of queries `server` refused before any plugin saw them (zone
    /// [`DROPPED`]).
    pub fn dropped(&self, server: &str) -> Arc<ServerMetrics> {
        self.server_zone(server, DROPPED, "")
    }

    /// How many (server, zone, view) triples have been created.
    pub fn len(&self) -> usize {
        self.servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether none has.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Collect for DnsMetrics {
    fn collect(&self, out: &mut Exposition) {
        let servers = self
            .servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for metrics in servers {
            metrics.collect(out);
        }
    }
}

#[cfg(test)]
mod tests;
