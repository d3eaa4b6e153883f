//! The stub resolvers' search walk, as `getaddrinfo` makes it, modelled from the libcs'
//! source.
//!
//! **glibc** (2.26 and later; `resolv/res_query.c` `__res_context_search`,
//! `__res_context_query`, `resolv/res_send.c` `send_dg`; nss_dns asks A and AAAA together):
//!
//! - A name ending in a dot is asked as it is, once, whatever the answer.
//! - A name with at least `ndots` dots is asked as it is first; if that does not answer, the
//!   search list follows, and the name is not asked again at the end.
//! - Otherwise every search domain is appended in turn, then the name is asked as it is last
//!   (unless a search domain is the root, or the name has no dot and `no-tld-query` is set).
//! - A step *answers* when A or AAAA has at least one record. NXDOMAIN and NODATA continue the
//!   walk; so does SERVFAIL (after every attempt on every nameserver failed); REFUSED, NOTIMP
//!   or a timeout end the search list, but the name as typed is still tried if it was not.
//!   When A and AAAA disagree, the answer that is not SERVFAIL/REFUSED/NOTIMP counts; between
//!   NXDOMAIN and NODATA, NXDOMAIN wins.
//! - A and AAAA go out together (`sendmmsg`) and are waited for together; with
//!   `single-request` AAAA is sent after A's reply, on the same socket; with
//!   `single-request-reopen`, on a new one. A SERVFAIL, REFUSED or NOTIMP for both is retried
//!   on every nameserver, `attempts` times. Under `single-request(-reopen)` such a reply to A
//!   leaves AAAA unsent and the next try goes out at once, on a new socket (glibc 2.36 as
//!   Debian ships it, checked with a server that answers SERVFAIL).
//! - When one reply of the pair never arrives and the other did, glibc does not give up on
//!   it: after the timeout it switches the *process* to `single-request` and asks both again
//!   (same nameserver, a fresh timeout); after the next timeout, to `single-request-reopen`,
//!   and asks again; after a third, it returns the reply it has. The switches stay for the
//!   rest of the process (`statp->options`), so later names start in that mode. If it is A's
//!   reply that is missing, in `single-request` mode AAAA is never sent again and the try
//!   fails (each later try waits out its timeout for A).
//! - `options no-aaaa` (glibc 2.36) asks A only.
//! - Timeouts: the k-th nameserver (from 0) is given `timeout << k` seconds, divided by the
//!   number of nameservers for k > 0 (at least 1 s); `attempts` rounds over all of them.
//! - Caps: `ndots` 15, `timeout` 30, `attempts` 5.
//!
//! **res_search** (a lookup of one type: SRV, PTR, TXT, MX, ...; what `host -t SRV` and
//! client libraries call): glibc's `res_nsearch` is the same `__res_context_search` walk as
//! above with that one type (one query per name, no A/AAAA pair), and it fails with `h_errno`
//! (HOST_NOT_FOUND, NO_DATA when a name answered NODATA, TRY_AGAIN on SERVFAIL) instead of an
//! `EAI_*` code. musl's `res_search` is a weak alias of `res_query`: the name as given, one
//! query, never the search list (`src/network/res_query.c`).
//!
//! **musl** (1.2.3, Debian's and Alpine 3.17's; `src/network/lookup_name.c`
//! `name_from_dns_search`, `src/network/res_msend.c`):
//!
//! - A name ending in a dot, or with at least `ndots` dots, is asked as it is only: musl never
//!   applies the search list to it.
//! - Otherwise every search domain in turn (a domain that would make the name longer than 254
//!   characters is skipped), then the name as it is.
//! - The walk continues only on NXDOMAIN (A's answer looked at first, then AAAA's): NODATA ends
//!   it ("no address"), and so do SERVFAIL and no reply.
//! - A and AAAA always go out together, to every nameserver at once. A SERVFAIL is asked again
//!   at once (at most twice per query per round); REFUSED and other codes are ignored, so
//!   such a query waits out the whole `timeout`, retried every `timeout / attempts`.
//! - musl reads resolv.conf its own way: keywords must start the line, a line longer than 254
//!   characters is skipped whole (a long `search` line is lost), only `ndots`, `attempts` and
//!   `timeout` options exist (caps 15, 10, 60).

use std::fmt;

use serde::Serialize;

use crate::config::ResolvConf;
use crate::wire::rcode;

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
            Self::A => 1,
            Self::Aaaa => 28,
            Self::Srv => 33,
            Self::Ptr => 12,
            Self::Txt => 16,
            Self::Mx => 15,
            Self::Cname => 5,
            Self::Ns => 2,
            Self::Soa => 6,
            Self::Caa => 257,
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

    /// How the reply reads in a report: `NOERROR` with its count, `NODATA`, an rcode, or
    /// `no reply`.
    pub fn summary(&self) -> String {
        match self.rcode {
            None => "no reply".to_owned(),
            Some(rcode::NOERROR) if self.answers == 0 => "NODATA".to_owned(),
            Some(rcode::NOERROR) => format!("NOERROR ({})", self.answers),
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
pub struct Step {
    /// The name, fully qualified.
    pub name: String,
    /// Its queries.
    pub queries: Vec<Query>,
    /// What the resolver made of the answers.
    pub verdict: Verdict,
    /// Sequential exchanges with the server in this step.
    pub round_trips: u32,
    /// Time spent waiting for replies that never came (timeouts), in milliseconds.
    pub waited_ms: u64,
    /// What the resolver did on the way (a switch to single-request, a resend at once).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// What a step means to the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
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
    pub steps: Vec<Step>,
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

/// glibc's timeout for the k-th nameserver (from 0), milliseconds: `timeout << k` seconds,
/// divided by the number of nameservers for k > 0, at least one second.
fn glibc_timeout_ms(config: &StubConfig, ns: usize) -> u64 {
    let mut seconds = u64::from(config.timeout) << ns;
    if ns > 0 {
        seconds /= config.nameservers as u64;
    }
    seconds.max(1) * 1000
}

/// The time the libc gives one step before it gives up, milliseconds: glibc `attempts`
/// rounds over every nameserver, the k-th (from 0) waited on `timeout << k` seconds divided
/// by the number of nameservers for k > 0 (at least one second); musl `timeout` in all.
pub fn step_budget_ms(libc: Libc, config: &StubConfig) -> u64 {
    match libc {
        Libc::Glibc => {
            let per_round: u64 = (0..config.nameservers)
                .map(|ns| glibc_timeout_ms(config, ns))
                .sum();
            u64::from(config.attempts) * per_round
        }
        Libc::Musl => u64::from(config.timeout) * 1000,
    }
}

/// How many times musl sends an unanswered query: at 0, `interval`, 2 `interval`, ... while
/// under `timeout`, with `interval = timeout / attempts` in milliseconds.
fn musl_rounds(config: &StubConfig) -> u32 {
    let timeout = u64::from(config.timeout) * 1000;
    let interval = (timeout / u64::from(config.attempts.max(1))).max(1);
    u32::try_from(timeout.div_ceil(interval))
        .unwrap_or(u32::MAX)
        .max(1)
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
        (Libc::Glibc, _) => glibc_walk(config, name, qtypes, answerer, &mut walk),
        (Libc::Musl, Call::Getaddrinfo { .. }) => {
            musl_walk(config, name, qtypes, answerer, &mut walk);
        }
        (Libc::Musl, Call::ResSearch { .. }) => {
            musl_res_query(config, name, qtypes, answerer, &mut walk);
        }
    }
    if let Some(step) = walk.steps.last()
        && step.verdict == Verdict::Answer
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

/// What glibc's `h_errno` says after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Herrno {
    Found,
    HostNotFound,
    NoData,
    /// TRY_AGAIN; `true` when the reply kept was a SERVFAIL (the search goes on).
    TryAgain(bool),
    NoRecovery,
}

fn glibc_walk(
    config: &StubConfig,
    name: &str,
    qtypes: &[Qtype],
    answerer: &mut dyn Answerer,
    walk: &mut Walk,
) {
    let dots = name.matches('.').count();
    let trailing = name.ends_with('.');
    let mut step = |qname: String, walk: &mut Walk| -> Herrno {
        let (step, herrno) = glibc_step(config, qname, qtypes, answerer, &mut walk.send_mode_after);
        walk.steps.push(step);
        herrno
    };
    let mut tried_as_is = false;
    let mut saved = None;
    if dots >= config.ndots as usize || trailing {
        let herrno = step(join(name, None), walk);
        if herrno == Herrno::Found || trailing {
            finish_glibc(walk, herrno);
            return;
        }
        saved = Some(herrno);
        tried_as_is = true;
    }
    let mut searched = false;
    let mut root_on_list = false;
    let mut got_nodata = false;
    let mut got_servfail = false;
    let mut last = Herrno::HostNotFound;
    if !trailing {
        for domain in &config.search {
            searched = true;
            let domain = domain.strip_prefix('.').unwrap_or(domain);
            if domain.is_empty() {
                root_on_list = true;
            }
            let herrno = step(join(name, Some(domain)), walk);
            last = herrno;
            match herrno {
                Herrno::Found => {
                    finish_glibc(walk, herrno);
                    return;
                }
                Herrno::NoData => got_nodata = true,
                Herrno::HostNotFound => {}
                Herrno::TryAgain(true) => got_servfail = true,
                Herrno::TryAgain(false) | Herrno::NoRecovery => break,
            }
        }
    }
    let tld_allowed = dots > 0 || !searched || !config.no_tld_query;
    if tld_allowed && !tried_as_is && !root_on_list {
        let herrno = step(join(name, None), walk);
        if herrno == Herrno::Found {
            finish_glibc(walk, herrno);
            return;
        }
        last = herrno;
    }
    let final_herrno = saved.unwrap_or(if got_nodata {
        Herrno::NoData
    } else if got_servfail {
        Herrno::TryAgain(true)
    } else {
        last
    });
    finish_glibc(walk, final_herrno);
}

fn finish_glibc(walk: &mut Walk, herrno: Herrno) {
    if let Call::ResSearch { .. } = walk.call {
        // res_search returns -1 and leaves the reason in h_errno.
        walk.error = match herrno {
            Herrno::Found => None,
            Herrno::HostNotFound => Some("HOST_NOT_FOUND".to_owned()),
            Herrno::NoData => Some("NO_DATA".to_owned()),
            Herrno::TryAgain(_) => Some("TRY_AGAIN".to_owned()),
            Herrno::NoRecovery => Some("NO_RECOVERY".to_owned()),
        };
        return;
    }
    walk.error = match herrno {
        Herrno::Found => None,
        // getaddrinfo: HOST_NOT_FOUND is EAI_NONAME; NO_DATA (the name exists, without
        // addresses) is EAI_NODATA; TRY_AGAIN is EAI_AGAIN.
        Herrno::HostNotFound => Some("EAI_NONAME".to_owned()),
        Herrno::NoData => Some("EAI_NODATA".to_owned()),
        Herrno::TryAgain(_) => Some("EAI_AGAIN".to_owned()),
        Herrno::NoRecovery => Some("EAI_FAIL".to_owned()),
    };
}

/// What glibc makes of one reply in `send_dg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An answer it keeps (NOERROR, NXDOMAIN, ...).
    Kept,
    /// SERVFAIL, REFUSED or NOTIMP: the next server is tried.
    Rejected,
    /// Nothing came back.
    Lost,
}

fn kind(reply: &Reply) -> Kind {
    match reply.rcode {
        None => Kind::Lost,
        Some(_) if reply.rejected() => Kind::Rejected,
        Some(_) => Kind::Kept,
    }
}

/// What glibc does for one step: `send_dg` on each nameserver, `attempts` rounds.
struct Exchanges<'a> {
    kinds: &'a [Kind],
    /// A's rcode, for the notes.
    a_rcode: &'static str,
    sent: Vec<u32>,
    round_trips: u32,
    waited_ms: u64,
    notes: Vec<String>,
}

impl Exchanges<'_> {
    fn send(&mut self, index: usize) {
        self.sent[index] += 1;
        self.round_trips += 1;
    }

    /// One `send_dg` call on a nameserver given `timeout` ms, in `mode`: the replies kept
    /// when it returns an answer, `None` when the next server is to be tried.
    fn send_dg(&mut self, mode: &mut SendMode, timeout: u64) -> Option<Vec<usize>> {
        if self.kinds.len() == 1 {
            self.send(0);
            return match self.kinds[0] {
                Kind::Kept => Some(vec![0]),
                Kind::Rejected => None,
                Kind::Lost => {
                    self.waited_ms += timeout;
                    None
                }
            };
        }
        let seconds = timeout / 1000;
        loop {
            if *mode == SendMode::Parallel {
                self.sent[0] += 1;
                self.sent[1] += 1;
                self.round_trips += 1;
                match (self.kinds[0], self.kinds[1]) {
                    (Kind::Kept, Kind::Kept) => return Some(vec![0, 1]),
                    (Kind::Kept, Kind::Rejected) => return Some(vec![0]),
                    (Kind::Rejected, Kind::Kept) => return Some(vec![1]),
                    (Kind::Rejected, Kind::Rejected) => return None,
                    (Kind::Kept, Kind::Lost) | (Kind::Lost, Kind::Kept) => {
                        let (lost, had) = if self.kinds[0] == Kind::Lost {
                            (Qtype::A, Qtype::Aaaa)
                        } else {
                            (Qtype::Aaaa, Qtype::A)
                        };
                        self.waited_ms += timeout;
                        *mode = SendMode::SingleRequest;
                        self.notes.push(format!(
                            "no {lost} reply in {seconds} s with {had}'s in hand: glibc switches \
                             the process to single-request and asks again"
                        ));
                        continue;
                    }
                    _ => {
                        self.waited_ms += timeout;
                        return None;
                    }
                }
            }
            // single-request(-reopen): A first, AAAA after A's reply.
            self.send(0);
            match self.kinds[0] {
                Kind::Lost => {
                    self.waited_ms += timeout;
                    return None;
                }
                Kind::Rejected => {
                    let note = format!(
                        "{} for A under {mode}: AAAA is not sent; the next try goes out at \
                         once, on a new socket",
                        self.a_rcode
                    );
                    if !self.notes.contains(&note) {
                        self.notes.push(note);
                    }
                    return None;
                }
                Kind::Kept => {}
            }
            self.send(1);
            match self.kinds[1] {
                Kind::Kept => return Some(vec![0, 1]),
                Kind::Rejected => return Some(vec![0]),
                Kind::Lost => {
                    self.waited_ms += timeout;
                    if *mode == SendMode::SingleRequest {
                        *mode = SendMode::SingleRequestReopen;
                        self.notes.push(format!(
                            "no AAAA reply in {seconds} s under single-request: glibc switches \
                             the process to single-request-reopen and asks again"
                        ));
                        continue;
                    }
                    self.notes.push(format!(
                        "no AAAA reply in {seconds} s under single-request-reopen: glibc \
                         returns A's reply alone"
                    ));
                    return Some(vec![0]);
                }
            }
        }
    }
}

/// One glibc step: `__res_context_query` over `send_dg`, in the process's `mode` (which a
/// lost reply switches).
fn glibc_step(
    config: &StubConfig,
    name: String,
    qtypes: &[Qtype],
    answerer: &mut dyn Answerer,
    mode: &mut SendMode,
) -> (Step, Herrno) {
    let replies: Vec<Reply> = qtypes.iter().map(|&q| answerer.ask(&name, q)).collect();
    let kinds: Vec<Kind> = replies.iter().map(kind).collect();
    let mut exchanges = Exchanges {
        kinds: &kinds,
        a_rcode: replies
            .first()
            .and_then(|r| r.rcode)
            .map_or("no reply", crate::wire::rcode_name),
        sent: vec![0; replies.len()],
        round_trips: 0,
        waited_ms: 0,
        notes: Vec::new(),
    };
    let mut kept: Option<Vec<usize>> = None;
    'tries: for _ in 0..config.attempts {
        for ns in 0..config.nameservers {
            let timeout = glibc_timeout_ms(config, ns);
            if let Some(answer) = exchanges.send_dg(mode, timeout) {
                kept = Some(answer);
                break 'tries;
            }
        }
    }
    let Exchanges {
        sent,
        round_trips,
        waited_ms,
        notes,
        ..
    } = exchanges;
    let herrno = match &kept {
        None => {
            // Every try failed: the search goes on only if the reply left in the answer
            // buffer is a SERVFAIL (a kept reply of a pair whose other half was lost stays
            // there).
            let received: Vec<&Reply> = replies
                .iter()
                .zip(&sent)
                .filter(|(r, sent)| **sent > 0 && r.rcode.is_some())
                .map(|(r, _)| r)
                .collect();
            let buffer = received
                .iter()
                .find(|r| kind(r) == Kind::Kept)
                .or_else(|| received.first());
            Herrno::TryAgain(buffer.is_some_and(|r| r.rcode == Some(rcode::SERVFAIL)))
        }
        Some(kept) if kept.iter().any(|&i| replies[i].has_records()) => Herrno::Found,
        Some(kept) => {
            // __res_context_query: the first reply's rcode unless it is NOERROR.
            let first = replies[kept[0]].rcode.unwrap_or(rcode::SERVFAIL);
            let second = kept.last().and_then(|&i| replies[i].rcode).unwrap_or(first);
            match if first == rcode::NOERROR {
                second
            } else {
                first
            } {
                rcode::NXDOMAIN => Herrno::HostNotFound,
                rcode::NOERROR => Herrno::NoData,
                _ => Herrno::NoRecovery,
            }
        }
    };
    let verdict = match herrno {
        Herrno::Found => Verdict::Answer,
        Herrno::HostNotFound | Herrno::NoData | Herrno::TryAgain(true) => Verdict::Continue,
        Herrno::TryAgain(false) | Herrno::NoRecovery => Verdict::Stop,
    };
    let queries = qtypes
        .iter()
        .zip(replies)
        .zip(sent)
        .map(|((&qtype, reply), sent)| Query { qtype, reply, sent })
        .collect();
    (
        Step {
            name,
            queries,
            verdict,
            round_trips,
            waited_ms,
            notes,
        },
        herrno,
    )
}

fn musl_walk(
    config: &StubConfig,
    name: &str,
    qtypes: &[Qtype],
    answerer: &mut dyn Answerer,
    walk: &mut Walk,
) {
    let dots = name.matches('.').count();
    let trailing = name.ends_with('.');
    let bare = name.strip_suffix('.').unwrap_or(name);
    if bare.is_empty() || bare.ends_with('.') {
        walk.error = Some("EAI_NONAME".to_owned());
        return;
    }
    let search: &[String] = if dots >= config.ndots as usize || trailing {
        &[]
    } else {
        &config.search
    };
    for domain in search {
        // canon[] holds 256 bytes: the name, a dot, the domain and a NUL.
        if domain.len() >= 256 - bare.len() - 1 {
            continue;
        }
        let (step, result) = musl_step(config, join(bare, Some(domain)), qtypes, answerer);
        walk.steps.push(step);
        if let Some(error) = result {
            walk.error = error;
            return;
        }
    }
    let (step, result) = musl_step(config, join(bare, None), qtypes, answerer);
    walk.steps.push(step);
    walk.error = match result {
        Some(error) => error,
        None => Some("EAI_NONAME".to_owned()),
    };
}

/// One musl step (`name_from_dns` over `__res_msend_rc`). `None`: NXDOMAIN, the walk goes
/// on; `Some(None)`: addresses; `Some(Some(error))`: the walk ends with `error`.
#[allow(clippy::option_option)]
fn musl_step(
    config: &StubConfig,
    name: String,
    qtypes: &[Qtype],
    answerer: &mut dyn Answerer,
) -> (Step, Option<Option<String>>) {
    let replies: Vec<Reply> = qtypes.iter().map(|&q| answerer.ask(&name, q)).collect();
    let accepted = |r: &Reply| matches!(r.rcode, Some(rcode::NOERROR | rcode::NXDOMAIN));
    let nns = config.nameservers as u32;
    let mut sent = vec![0u32; replies.len()];
    let mut waited_ms = 0;
    let mut round_trips = 1;
    if replies.iter().all(accepted) {
        // Every nameserver is asked; the first reply for each query is taken.
        sent.iter_mut().for_each(|s| *s = nns);
    } else {
        // Rounds every timeout/attempts until the timeout: each unaccepted query goes to every
        // nameserver; SERVFAIL replies are re-sent at once while the round's budget (two per
        // query) lasts.
        waited_ms = u64::from(config.timeout) * 1000;
        let rounds = musl_rounds(config);
        round_trips = rounds;
        for (index, reply) in replies.iter().enumerate() {
            sent[index] = if accepted(reply) { nns } else { nns * rounds };
        }
        let servfails: Vec<usize> = (0..replies.len())
            .filter(|&i| replies[i].rcode == Some(rcode::SERVFAIL))
            .collect();
        if !servfails.is_empty() {
            for _ in 0..rounds {
                // The replies of a round come back in send order; each SERVFAIL is re-sent
                // (and SERVFAILs again) while the budget lasts.
                let mut budget = 2 * replies.len() as u32;
                let mut queue: Vec<usize> = servfails
                    .iter()
                    .flat_map(|&i| std::iter::repeat_n(i, nns as usize))
                    .collect();
                let mut at = 0;
                while at < queue.len() {
                    if budget > 0 {
                        budget -= 1;
                        sent[queue[at]] += 1;
                        queue.push(queue[at]);
                    }
                    at += 1;
                }
            }
        }
    }
    // name_from_dns: A's reply first, then AAAA's.
    let mut result: Option<Option<String>> = Some(None);
    let mut decided = false;
    for reply in &replies {
        if !accepted(reply) {
            result = Some(Some("EAI_AGAIN".to_owned()));
            decided = true;
            break;
        }
        if reply.rcode == Some(rcode::NXDOMAIN) {
            result = None;
            decided = true;
            break;
        }
    }
    if !decided && !replies.iter().any(Reply::has_records) {
        result = Some(Some("EAI_NONAME".to_owned()));
    }
    let verdict = match &result {
        None => Verdict::Continue,
        Some(None) => Verdict::Answer,
        Some(Some(_)) => Verdict::Stop,
    };
    let queries = qtypes
        .iter()
        .zip(replies)
        .zip(sent)
        .map(|((&qtype, reply), sent)| Query { qtype, reply, sent })
        .collect();
    (
        Step {
            name,
            queries,
            verdict,
            round_trips,
            waited_ms,
            notes: Vec::new(),
        },
        result,
    )
}

/// musl's `res_search`, a weak alias of `res_query` (`src/network/res_query.c`): the name as
/// given (`__res_mkquery` drops a final dot), one query through `__res_send`; no reply, or a
/// reply other than NOERROR/NXDOMAIN, is TRY_AGAIN; NXDOMAIN is HOST_NOT_FOUND; NOERROR
/// without answers is NO_DATA.
fn musl_res_query(
    config: &StubConfig,
    name: &str,
    qtypes: &[Qtype],
    answerer: &mut dyn Answerer,
    walk: &mut Walk,
) {
    let bare = name.strip_suffix('.').unwrap_or(name);
    if bare.is_empty() || bare.ends_with('.') {
        // __res_mkquery refuses the name: -1, h_errno untouched.
        walk.error = Some("NO_RECOVERY".to_owned());
        return;
    }
    let (mut step, _) = musl_step(config, join(bare, None), qtypes, answerer);
    let reply = step.queries.first().map(|q| &q.reply);
    walk.error = match reply.and_then(|r| r.rcode) {
        Some(rcode::NXDOMAIN) => Some("HOST_NOT_FOUND".to_owned()),
        Some(rcode::NOERROR) if reply.is_some_and(Reply::has_records) => None,
        Some(rcode::NOERROR) => Some("NO_DATA".to_owned()),
        _ => Some("TRY_AGAIN".to_owned()),
    };
    // One name: there is no walk to go on with or stop early.
    step.verdict = if walk.error.is_none() {
        Verdict::Answer
    } else {
        Verdict::Continue
    };
    walk.steps.push(step);
}

#[cfg(test)]
mod tests;
