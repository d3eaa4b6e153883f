//! The stub resolvers' search walk, as `getaddrinfo` makes it, modelled from the libcs'
//! source.
//!
//! The walks themselves, with what each libc does, are in `stub/glibc.rs` and `stub/musl.rs`.

mod glibc;
mod musl;

use std::fmt;

use serde::Serialize;

use crate::codes::{rcode, rtype};
use crate::config::ResolvConf;

/// Which C library's resolver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Libc {
    /// GNU libc (Debian, Ubuntu, RHEL, distroless).
    Glibc,
    /// musl (Alpine).
    Musl,
}

impl fmt::Display for Libc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Glibc => "glibc",
            Self::Musl => "musl",
        })
    }
}

/// The address families asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Families {
    /// A and AAAA (`getaddrinfo` with `AF_UNSPEC`).
    Both,
    /// A only (`AF_INET`, or glibc's `no-aaaa`).
    A,
    /// AAAA only (`AF_INET6`).
    Aaaa,
}

/// A question's type: A and AAAA (getaddrinfo's), or another type asked with `res_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Qtype {
    /// IPv4 address.
    A,
    /// IPv6 address.
    Aaaa,
    /// Service (port and target).
    Srv,
    /// Pointer (reverse lookup).
    Ptr,
    /// Text.
    Txt,
    /// Mail exchanger.
    Mx,
    /// Alias.
    Cname,
    /// Name server.
    Ns,
    /// Start of authority.
    Soa,
    /// Certification authority authorization.
    Caa,
}

impl Qtype {
    /// Every type `resolve-cost --type` takes.
    pub const ALL: [Self; 10] = [
        Self::A,
        Self::Aaaa,
        Self::Srv,
        Self::Ptr,
        Self::Txt,
        Self::Mx,
        Self::Cname,
        Self::Ns,
        Self::Soa,
        Self::Caa,
    ];

    /// The record type number.
    pub fn number(self) -> u16 {
        match self {
            Self::A => rtype::A,
            Self::Aaaa => rtype::AAAA,
            Self::Srv => rtype::SRV,
            Self::Ptr => rtype::PTR,
            Self::Txt => rtype::TXT,
            Self::Mx => rtype::MX,
            Self::Cname => rtype::CNAME,
            Self::Ns => rtype::NS,
            Self::Soa => rtype::SOA,
            Self::Caa => rtype::CAA,
        }
    }

    /// The type its mnemonic names (any case).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|qtype| qtype.to_string().eq_ignore_ascii_case(text))
    }
}

impl fmt::Display for Qtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::A => "A",
            Self::Aaaa => "AAAA",
            Self::Srv => "SRV",
            Self::Ptr => "PTR",
            Self::Txt => "TXT",
            Self::Mx => "MX",
            Self::Cname => "CNAME",
            Self::Ns => "NS",
            Self::Soa => "SOA",
            Self::Caa => "CAA",
        })
    }
}

/// The library call whose lookup is modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "function", rename_all = "snake_case")]
pub enum Call {
    /// `getaddrinfo`: A and/or AAAA, failing with an `EAI_*` code.
    Getaddrinfo {
        /// The families asked.
        families: Families,
    },
    /// `res_search` (what `host -t SRV` and client libraries' SRV, PTR, TXT, MX lookups
    /// call): one query type, one query per name, failing with an `h_errno` value.
    ResSearch {
        /// The type asked.
        #[serde(rename = "type")]
        qtype: Qtype,
    },
}

impl Families {
    fn qtypes(self) -> &'static [Qtype] {
        match self {
            Self::Both => &[Qtype::A, Qtype::Aaaa],
            Self::A => &[Qtype::A],
            Self::Aaaa => &[Qtype::Aaaa],
        }
    }
}

/// How glibc sends a name's A and AAAA queries (`RES_SNGLKUP`, `RES_SNGLKUPREOP`): from the
/// options, and switched for the rest of the process when a reply of a pair is lost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SendMode {
    /// Both at once (`sendmmsg`), waited for together.
    #[default]
    Parallel,
    /// AAAA after A's reply, on the same socket (`single-request`).
    SingleRequest,
    /// AAAA after A's reply, on a new socket (`single-request-reopen`).
    SingleRequestReopen,
}

impl fmt::Display for SendMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Parallel => "parallel",
            Self::SingleRequest => "single-request",
            Self::SingleRequestReopen => "single-request-reopen",
        })
    }
}

/// What the resolver options come to, for one libc.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StubConfig {
    /// The search list.
    pub search: Vec<String>,
    /// `ndots` (default 1).
    pub ndots: u32,
    /// `attempts` (default 2).
    pub attempts: u32,
    /// `timeout`, seconds (default 5).
    pub timeout: u32,
    /// How many nameservers are used (at most 3).
    pub nameservers: usize,
    /// glibc `single-request` / `single-request-reopen`: how the process starts.
    pub send_mode: SendMode,
    /// glibc `no-aaaa`.
    pub no_aaaa: bool,
    /// glibc `no-tld-query`.
    pub no_tld_query: bool,
    /// Notes on what the libc makes of the file (a search line musl cannot read, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The libcs' defaults.
const DEFAULT_NDOTS: u32 = 1;
const DEFAULT_ATTEMPTS: u32 = 2;
const DEFAULT_TIMEOUT: u32 = 5;

impl StubConfig {
    /// glibc's reading of a parsed resolv.conf (see [`crate::config::parse_resolv_conf`]).
    pub fn glibc(conf: &ResolvConf) -> Self {
        Self {
            search: conf.search.clone(),
            ndots: conf.ndots.unwrap_or(DEFAULT_NDOTS).min(15),
            attempts: conf.attempts.unwrap_or(DEFAULT_ATTEMPTS).clamp(1, 5),
            timeout: conf.timeout.unwrap_or(DEFAULT_TIMEOUT).min(30),
            nameservers: conf.nameservers.len().clamp(1, 3),
            send_mode: if conf.has_option("single-request-reopen") {
                SendMode::SingleRequestReopen
            } else if conf.has_option("single-request") {
                SendMode::SingleRequest
            } else {
                SendMode::Parallel
            },
            no_aaaa: conf.has_option("no-aaaa"),
            no_tld_query: conf.has_option("no-tld-query") || conf.has_option("no_tld_query"),
            notes: Vec::new(),
        }
    }

    /// musl's reading of resolv.conf `text` (its own parser: see the module documentation).
    pub fn musl(text: &str) -> Self {
        let mut config = Self {
            search: Vec::new(),
            ndots: DEFAULT_NDOTS,
            attempts: DEFAULT_ATTEMPTS,
            timeout: DEFAULT_TIMEOUT,
            nameservers: 0,
            send_mode: SendMode::Parallel,
            no_aaaa: false,
            no_tld_query: false,
            notes: Vec::new(),
        };
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for (index, raw) in lines.iter().enumerate() {
            let line = raw.strip_suffix('\n').unwrap_or(raw);
            // fgets into 256 bytes: a line that does not fit (with its newline) is skipped.
            let last = index + 1 == lines.len() && !raw.ends_with('\n');
            if line.len() > 255 || (line.len() == 255 && !last) {
                if line.starts_with("search") || line.starts_with("domain") {
                    config.notes.push(format!(
                        "musl skips line {} ({} characters; it reads at most 254): its search \
                         domains are lost",
                        index + 1,
                        line.len()
                    ));
                }
                continue;
            }
            let keyword = |word: &str| {
                line.strip_prefix(word)
                    .filter(|rest| rest.starts_with([' ', '\t']))
            };
            if let Some(rest) = keyword("options") {
                for option in rest.split_ascii_whitespace() {
                    let number = |prefix: &str| {
                        option.strip_prefix(prefix).and_then(|value| {
                            let digits = value.bytes().take_while(u8::is_ascii_digit).count();
                            (digits > 0).then(|| value[..digits].parse::<u32>().unwrap_or(u32::MAX))
                        })
                    };
                    if let Some(n) = number("ndots:") {
                        config.ndots = n.min(15);
                    } else if let Some(n) = number("attempts:") {
                        config.attempts = n.clamp(1, 10);
                    } else if let Some(n) = number("timeout:") {
                        config.timeout = n.min(60);
                    }
                }
            } else if let Some(rest) = keyword("nameserver") {
                if config.nameservers < 3 && rest.split_ascii_whitespace().next().is_some() {
                    config.nameservers += 1;
                }
            } else if let Some(rest) = keyword("domain").or_else(|| keyword("search")) {
                config.search = rest.split_ascii_whitespace().map(str::to_owned).collect();
            }
        }
        config.nameservers = config.nameservers.max(1);
        config
    }

    /// The families `getaddrinfo(AF_UNSPEC)` asks for under this configuration.
    pub fn families(&self, asked: Families, libc: Libc) -> Families {
        if libc == Libc::Glibc && self.no_aaaa && asked == Families::Both {
            Families::A
        } else {
            asked
        }
    }
}

/// Who answered a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// The cluster zone (the server's own lookup).
    Cluster,
    /// An upstream server that was asked.
    Upstream,
    /// Upstream, assumed (`--upstream assume`): the name as typed exists, search-expanded
    /// names do not.
    Assumed,
    /// No reply from upstream.
    NoReply,
    /// Server-side autopath: these lookups, in order, the last one answering.
    Autopath {
        /// The server's own lookups.
        lookups: Vec<Lookup>,
    },
}

impl Source {
    /// Whether the query was sent beyond the cluster DNS (to its upstream).
    pub fn left_cluster(&self) -> bool {
        match self {
            Self::Upstream | Self::Assumed | Self::NoReply => true,
            Self::Cluster => false,
            Self::Autopath { lookups } => lookups.iter().any(|l| l.source.left_cluster()),
        }
    }
}

/// One lookup made by the server itself (autopath).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lookup {
    /// The name, fully qualified.
    pub name: String,
    /// Its rcode.
    #[serde(serialize_with = "rcode_text")]
    pub rcode: u16,
    /// Who answered it.
    pub source: Source,
}

/// A reply to one query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reply {
    /// The rcode; `None` when nothing came back.
    #[serde(serialize_with = "optional_rcode_text")]
    pub rcode: Option<u16>,
    /// Records in the answer section.
    pub answers: u16,
    /// Who answered.
    #[serde(flatten)]
    pub source: Source,
}

impl Reply {
    /// A reply with `rcode` and `answers` records from `source`.
    pub fn new(rcode: u16, answers: u16, source: Source) -> Self {
        Self {
            rcode: Some(rcode),
            answers,
            source,
        }
    }

    fn has_records(&self) -> bool {
        self.rcode == Some(rcode::NOERROR) && self.answers > 0
    }

    /// SERVFAIL, REFUSED or NOTIMP: glibc tries the next server.
    fn rejected(&self) -> bool {
        matches!(
            self.rcode,
            Some(rcode::SERVFAIL | rcode::REFUSED | rcode::NOTIMP) | None
        )
    }

    /// How the reply reads in a report: `NOERROR` with the records it answers with
    /// (`NOERROR, 2 records`), `NODATA`, an rcode, or `no reply`.
    pub fn summary(&self) -> String {
        match self.rcode {
            None => "no reply".to_owned(),
            Some(rcode::NOERROR) if self.answers == 0 => "NODATA".to_owned(),
            Some(rcode::NOERROR) if self.answers == 1 => "NOERROR, 1 record".to_owned(),
            Some(rcode::NOERROR) => format!("NOERROR, {} records", self.answers),
            Some(code) => crate::wire::rcode_name(code).to_owned(),
        }
    }
}

fn rcode_text<S: serde::Serializer>(rcode: &u16, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(crate::wire::rcode_name(*rcode))
}

fn optional_rcode_text<S: serde::Serializer>(rcode: &Option<u16>, s: S) -> Result<S::Ok, S::Error> {
    match rcode {
        Some(rcode) => s.serialize_str(crate::wire::rcode_name(*rcode)),
        None => s.serialize_none(),
    }
}

/// Answers the stub resolver's queries.
pub trait Answerer {
    /// The reply to `qtype` for `name` (fully qualified, with its trailing dot).
    fn ask(&mut self, name: &str, qtype: Qtype) -> Reply;
}

/// One query on the wire, and what came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Query {
    /// A or AAAA.
    #[serde(rename = "type")]
    pub qtype: Qtype,
    /// What came back.
    #[serde(flatten)]
    pub reply: Reply,
    /// How many times it was sent (retries and nameservers included); 0 when it never was.
    pub sent: u32,
}

/// One name the resolver tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attempt {
    /// The name, fully qualified.
    pub name: String,
    /// Its queries.
    pub queries: Vec<Query>,
    /// What the resolver made of the answers.
    pub verdict: Decision,
    /// Sequential exchanges with the server in this step.
    pub round_trips: u32,
    /// Time spent waiting for replies that never came (timeouts), in milliseconds.
    pub waited_ms: u64,
    /// What the resolver did on the way (a switch to single-request, a resend at once).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A step's exchanges as they add up: how many times each query was sent (retries and
/// nameservers included), the sequential round trips, the time waited on timeouts, and what
/// the resolver did on the way.
#[derive(Debug, Default)]
struct Tally {
    sent: Vec<u32>,
    round_trips: u32,
    waited_ms: u64,
    notes: Vec<String>,
}

impl Tally {
    /// Nothing sent yet, for `queries` queries.
    fn new(queries: usize) -> Self {
        Self {
            sent: vec![0; queries],
            ..Self::default()
        }
    }

    /// The step that asked `name` for `qtypes` and got `replies` (in the same order), with
    /// the resolver's `verdict`.
    fn step(
        self,
        name: String,
        qtypes: &[Qtype],
        replies: Vec<Reply>,
        verdict: Decision,
    ) -> Attempt {
        let queries = qtypes
            .iter()
            .zip(replies)
            .zip(self.sent)
            .map(|((&qtype, reply), sent)| Query { qtype, reply, sent })
            .collect();
        Attempt {
            name,
            queries,
            verdict,
            round_trips: self.round_trips,
            waited_ms: self.waited_ms,
            notes: self.notes,
        }
    }
}

/// What a step means to the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Addresses: the lookup is done.
    Answer,
    /// No addresses here; the walk goes on.
    Continue,
    /// The walk stops here without addresses.
    Stop,
}

/// The whole lookup of one name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Walk {
    /// The name as typed.
    pub name: String,
    /// The resolver.
    pub libc: Libc,
    /// The call modelled: getaddrinfo and its families, or res_search and its type.
    #[serde(flatten)]
    pub call: Call,
    /// Every name tried, in order.
    pub steps: Vec<Attempt>,
    /// The name that gave addresses, if any.
    pub answered_by: Option<String>,
    /// What the application gets when there is no answer: getaddrinfo's `EAI_NONAME`, ...;
    /// res_search's `h_errno` (`HOST_NOT_FOUND`, `NO_DATA`, `TRY_AGAIN`, `NO_RECOVERY`).
    pub error: Option<String>,
    /// How glibc sent the pairs when the walk started, and after it (the process keeps it for
    /// its next lookups).
    pub send_mode: SendMode,
    /// The mode after the walk.
    pub send_mode_after: SendMode,
}

/// Counts over a walk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Names tried.
    pub names: usize,
    /// Names tried that were NXDOMAIN (for every family asked).
    pub nxdomain_names: usize,
    /// Queries sent (retries included).
    pub queries: u32,
    /// Queries answered NXDOMAIN.
    pub nxdomain_queries: u32,
    /// Queries the cluster DNS sent on to its upstream.
    pub upstream_queries: u32,
    /// Sequential exchanges.
    pub round_trips: u32,
    /// Time spent in timeouts, milliseconds.
    pub waited_ms: u64,
}

impl Walk {
    /// The counts.
    pub fn totals(&self) -> Totals {
        let mut totals = Totals {
            names: self.steps.len(),
            ..Totals::default()
        };
        for step in &self.steps {
            if !step.queries.is_empty()
                && step
                    .queries
                    .iter()
                    .all(|q| q.reply.rcode == Some(rcode::NXDOMAIN))
            {
                totals.nxdomain_names += 1;
            }
            for query in &step.queries {
                totals.queries += query.sent;
                if query.reply.rcode == Some(rcode::NXDOMAIN) {
                    totals.nxdomain_queries += query.sent;
                }
                // Autopath's own upstream lookups count one by one.
                let upstream = match &query.reply.source {
                    Source::Autopath { lookups } => {
                        lookups.iter().filter(|l| l.source.left_cluster()).count() as u32
                    }
                    source => u32::from(source.left_cluster()),
                };
                totals.upstream_queries += upstream * query.sent;
            }
            totals.round_trips += step.round_trips;
            totals.waited_ms += step.waited_ms;
        }
        totals
    }
}

/// The time the libc gives one step before it gives up, milliseconds: glibc `attempts`
/// rounds over every nameserver, the k-th (from 0) waited on `timeout << k` seconds divided
/// by the number of nameservers for k > 0 (at least one second); musl `timeout` in all.
pub fn step_budget_ms(libc: Libc, config: &StubConfig) -> u64 {
    match libc {
        Libc::Glibc => {
            let per_round: u64 = (0..config.nameservers)
                .map(|ns| glibc::timeout_ms(config, ns))
                .sum();
            u64::from(config.attempts) * per_round
        }
        Libc::Musl => u64::from(config.timeout) * 1000,
    }
}

/// Walks `name` the way `libc` does under `config`, asking `answerer`, in a new process.
pub fn walk(
    libc: Libc,
    config: &StubConfig,
    name: &str,
    families: Families,
    answerer: &mut dyn Answerer,
) -> Walk {
    walk_in(libc, config, config.send_mode, name, families, answerer)
}

/// [`walk`], in a process whose glibc resolver is in `mode` (an earlier lookup may have
/// switched it); the walk's `send_mode_after` is the mode it leaves.
pub fn walk_in(
    libc: Libc,
    config: &StubConfig,
    mode: SendMode,
    name: &str,
    families: Families,
    answerer: &mut dyn Answerer,
) -> Walk {
    call_in(
        libc,
        config,
        mode,
        name,
        Call::Getaddrinfo { families },
        answerer,
    )
}

/// `res_search(name, C_IN, qtype)` as `libc` makes it under `config`, in a new process:
/// glibc's walks the search list as getaddrinfo does (`__res_context_search`, one query
/// per name); musl's is `res_query`, the name as given.
pub fn res_search(
    libc: Libc,
    config: &StubConfig,
    name: &str,
    qtype: Qtype,
    answerer: &mut dyn Answerer,
) -> Walk {
    call_in(
        libc,
        config,
        config.send_mode,
        name,
        Call::ResSearch { qtype },
        answerer,
    )
}

/// The lookup `call` makes for `name`, in a process whose glibc resolver is in `mode`.
pub fn call_in(
    libc: Libc,
    config: &StubConfig,
    mode: SendMode,
    name: &str,
    call: Call,
    answerer: &mut dyn Answerer,
) -> Walk {
    let call = match call {
        Call::Getaddrinfo { families } => Call::Getaddrinfo {
            families: config.families(families, libc),
        },
        res_search @ Call::ResSearch { .. } => res_search,
    };
    let qtypes: &[Qtype] = match &call {
        Call::Getaddrinfo { families } => families.qtypes(),
        Call::ResSearch { qtype } => std::slice::from_ref(qtype),
    };
    let mode = if libc == Libc::Glibc {
        mode
    } else {
        SendMode::Parallel
    };
    let mut walk = Walk {
        name: name.to_owned(),
        libc,
        call,
        steps: Vec::new(),
        answered_by: None,
        error: None,
        send_mode: mode,
        send_mode_after: mode,
    };
    match (libc, call) {
        (Libc::Glibc, _) => glibc::walk(config, name, qtypes, answerer, &mut walk),
        (Libc::Musl, Call::Getaddrinfo { .. }) => {
            musl::walk(config, name, qtypes, answerer, &mut walk);
        }
        (Libc::Musl, Call::ResSearch { .. }) => {
            musl::res_query(config, name, qtypes, answerer, &mut walk);
        }
    }
    if let Some(step) = walk.steps.last()
        && step.verdict == Decision::Answer
    {
        walk.answered_by = Some(step.name.clone());
    }
    walk
}

/// `name` and `domain` joined, fully qualified.
fn join(name: &str, domain: Option<&str>) -> String {
    let name = name.trim_end_matches('.');
    match domain.map(|d| d.trim_matches('.')) {
        Some("") | None => format!("{name}."),
        Some(domain) => format!("{name}.{domain}."),
    }
}

#[cfg(test)]
mod tests;
