//! The Corefile, parsed into typed configuration.
//!
//! A leaf: nothing here depends on the rest of the crate except [`crate::selector`]. I/O is
//! confined to [`read_corefile`], to the files `import` names, to the resolv.conf files and
//! TLS certificate files `forward` names (through [`Environment`], so tests can fix them) and
//! to the system's trust anchors for `tls://` upstreams; everything else works
//! on strings so it can be tested with inline Corefiles.
//!
//! The syntax is CoreDNS's (Caddy v1): server blocks `ZONES[:PORT] { ... }`, directives with
//! their arguments on their own line and an optional `{ ... }` block of options, `#`
//! comments, quoted strings, `{$ENV}` substitution, and `(snippet) { ... }` / `import`. The
//! directives implemented are those of kubeadm's Corefile and those the distributions and
//! their operators add: `any`, `autopath`, `bind`, `bufsize`, `cache`, `chaos`, `errors`,
//! `file`, `forward`, `health`, `hosts`, `k8s_external`, `kubernetes`, `loadbalance`, `log`,
//! `loop`, `prometheus`, `ready`, `reload`, `rewrite`, `template` and `transfer`, each with
//! CoreDNS's syntax, defaults and checks (the module of each directive lists where it
//! differs). Every other CoreDNS plugin is refused with [`Error::Unsupported`] and any other
//! name with [`Error::UnknownDirective`].
//!
//! ```
//! use clusterdns::config::parse_corefile;
//! use std::path::Path;
//!
//! let config = parse_corefile(
//!     ".:1053 {\n  bind 127.0.0.1\n  kubernetes cluster.local in-addr.arpa {\n    pods insecure\n  }\n}\n",
//!     Path::new("Corefile"),
//! )?;
//! let kubernetes = config.servers[0].kubernetes.as_ref().expect("kubernetes block");
//! assert_eq!(kubernetes.zones[kubernetes.primary_zone].to_string(), "cluster.local.");
//! # Ok::<(), clusterdns::config::Error>(())
//! ```

mod build;
mod directives;
mod duration;
mod env;
mod error;
mod fs;
mod glob;
mod lexer;
mod resolv_conf;
mod shorthand;
mod stream;
mod syntax;
#[cfg(test)]
mod test_support;
mod tls;
mod zone;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::Name;
use ipnet::IpNet;

use crate::selector::LabelSelector;

pub use directives::COREDNS_DIRECTIVES;
pub use directives::any::AnyConfig;
pub use directives::bufsize::BufsizeConfig;
pub use directives::chaos::ChaosConfig;
pub use directives::file::FileConfig;
pub use directives::hosts::HostsConfig;
pub use directives::k8s_external::K8sExternalConfig;
pub(crate) use directives::kubernetes::is_dns_label;
pub use directives::rewrite::{
    AnswerRewrite, Edns0Action, Edns0Data, Edns0Option, Edns0Rule, NameMatcher, RewriteAction,
    RewriteRule,
};
pub use directives::template::TemplateConfig;
pub(crate) use directives::template::class_number;
pub use env::Environment;
pub use error::Error;
pub(crate) use fs::{read_regular, read_text_lossy};
pub use resolv_conf::{
    GLIBC_MAXNS, MAX_NDOTS, ReadResolvConfError, ResolvConf, ResolvConfError,
    Warning as ResolvConfWarning, parse_resolv_conf, read_resolv_conf,
};
pub use shorthand::{
    DEFAULT_RESOLV_CONF, SHORTHAND_FILE, ShorthandOptions, shorthand, shorthand_corefile,
    shorthand_corefile_with, shorthand_with,
};
pub(crate) use stream::MAX_FILE_BYTES;
pub use tls::{ClientIdentity, ForwardTls};
pub use zone::parse_cidr;

/// Reads and parses the Corefile at `path` (files it imports are relative to its directory).
pub fn read_corefile(path: &Path) -> Result<Config, Error> {
    read_corefile_in(path, &Environment::system())
}

/// [`read_corefile`] with the environment variables, interfaces and fixed files of `env`.
pub fn read_corefile_in(path: &Path, env: &Environment) -> Result<Config, Error> {
    let text = stream::read_text(path).map_err(|source| Error::Read {
        file: path.to_owned(),
        line: 0,
        error: source,
    })?;
    parse_corefile_in(&text, path, env)
}

/// Parses Corefile `text`; `file` names it in error messages and is the base directory of
/// relative `import`s and `objects` files. Environment variables and interfaces are the
/// process's and the machine's.
pub fn parse_corefile(text: &str, file: &Path) -> Result<Config, Error> {
    parse_corefile_in(text, file, &Environment::system())
}

/// [`parse_corefile`] with the environment variables and interfaces of `env`.
pub fn parse_corefile_in(text: &str, file: &Path, env: &Environment) -> Result<Config, Error> {
    let shared: Arc<Path> = Arc::from(file);
    let tokens = lexer::lex(text, &shared, env)?;
    let mut stream = stream::Stream::new(tokens, file, env);
    let blocks = syntax::parse(&mut stream)?;
    build::build(&blocks, file, env)
}

/// A whole Corefile: its server blocks, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// One entry per server block (a block with several keys on different ports is split).
    pub servers: Vec<ServerBlock>,
}

/// One server block: `ZONES:PORT { directives }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerBlock {
    /// The zones of the block's keys, lower-case and fully qualified (`.` for the root).
    pub zones: Vec<Name>,
    /// The port of the block's keys (53 when not given).
    pub port: u16,
    /// `bind` addresses; empty means every address.
    pub bind: Vec<IpAddr>,
    /// The *kubernetes* directive, if present.
    pub kubernetes: Option<KubernetesConfig>,
    /// The *transfer* directives.
    pub transfer: Vec<TransferConfig>,
    /// The *forward* directives, in file order (CoreDNS tries them in that order).
    pub forward: Vec<ForwardConfig>,
    /// The *cache* directive.
    pub cache: Option<CacheConfig>,
    /// The *health* directive.
    pub health: Option<HealthConfig>,
    /// The *ready* directive.
    pub ready: Option<ReadyConfig>,
    /// The *prometheus* directive.
    pub prometheus: Option<PrometheusConfig>,
    /// The *errors* directive.
    pub errors: Option<ErrorsConfig>,
    /// The *log* directives.
    pub log: Vec<LogConfig>,
    /// The *loop* directive.
    pub loop_detect: Option<LoopConfig>,
    /// The *reload* directive.
    pub reload: Option<ReloadConfig>,
    /// The *loadbalance* directive.
    pub loadbalance: Option<LoadBalanceConfig>,
    /// The *autopath* directive.
    pub autopath: Option<AutopathConfig>,
    /// The *bufsize* directive.
    pub bufsize: Option<BufsizeConfig>,
    /// The *any* directive.
    pub any: Option<AnyConfig>,
    /// The *chaos* directive.
    pub chaos: Option<ChaosConfig>,
    /// The *hosts* directive.
    pub hosts: Option<HostsConfig>,
    /// The *template* directives, in file order (tried in that order).
    pub template: Vec<TemplateConfig>,
    /// The *file* directives, in file order (a name goes to the first whose zones hold it).
    pub file: Vec<FileConfig>,
    /// The *rewrite* rules, one per directive, in file order.
    pub rewrite: Vec<RewriteRule>,
    /// Line of the block's first key, for messages.
    pub line: usize,
}

/// The *autopath* directive: `autopath [ZONES...] @kubernetes|RESOLV-CONF`.
#[derive(Debug, Clone, PartialEq)]
pub struct AutopathConfig {
    /// Zones autopath acts in (the server block's when none are given).
    pub zones: Vec<Name>,
    /// Where the search path comes from.
    pub source: AutopathSource,
    /// With `@kubernetes`: the search domains after the cluster's (the `search` option, else
    /// `/etc/resolv.conf`'s). With a resolv.conf: its search list.
    pub search: Vec<Name>,
    /// Line of the directive.
    pub line: usize,
}

/// Where *autopath*'s search path comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutopathSource {
    /// `@kubernetes`: the client's namespace (found as given), then the search domains.
    Kubernetes(AutopathNamespace),
    /// A resolv.conf file: the same search list for every client.
    File(PathBuf),
}

/// How `autopath @kubernetes` finds the client's namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutopathNamespace {
    /// From the running pod with the client's address (CoreDNS; needs `pods verified`).
    Pod,
    /// From the query name `<name>.<ns>.svc.<zone>` (clusterdns extension; no pod watch).
    Query,
}

/// The *forward* directive: `forward FROM TO... { ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ForwardConfig {
    /// **FROM**: the zone whose names are forwarded (`.` for every name).
    pub from: Name,
    /// **TO**: the upstreams, in file order (a resolv.conf contributes its `nameserver`s).
    pub to: Vec<Upstream>,
    /// `except`: names (and below) not forwarded.
    pub except: Vec<Name>,
    /// `force_tcp`.
    pub force_tcp: bool,
    /// `prefer_udp`.
    pub prefer_udp: bool,
    /// `expire`: how long an idle upstream connection is reused (default 10 s).
    pub expire: Duration,
    /// `max_idle_conns` (0: unlimited).
    pub max_idle_conns: usize,
    /// `max_fails`: failed health checks before an upstream is down (default 2; 0: never).
    pub max_fails: u32,
    /// `max_connect_attempts` per query (0: no cap).
    pub max_connect_attempts: u32,
    /// `policy` (default random).
    pub policy: ForwardPolicy,
    /// `health_check DURATION [no_rec] [domain FQDN]`: interval (default 0.5 s).
    pub health_check: Duration,
    /// `health_check ... no_rec`: health-check queries without RD.
    pub health_check_no_rec: bool,
    /// `health_check ... domain FQDN` (default `.`).
    pub health_check_domain: Name,
    /// `max_concurrent`: queries in flight above this are REFUSED (`max_concurrent 0`, like no
    /// `max_concurrent`, is `None`: no limit).
    pub max_concurrent: Option<usize>,
    /// `next RCODE...`: upstream rcodes that hand the query to the next *forward*.
    pub next: Vec<u16>,
    /// `failover RCODE...`: upstream rcodes that make the next upstream be tried.
    pub failover: Vec<u16>,
    /// `failfast_all_unhealthy_upstreams`.
    pub failfast_all_unhealthy_upstreams: bool,
    /// The TLS client settings of the `tls://` upstreams: the `tls` option's files, or the
    /// system's trust anchors; `None` when no upstream is `tls://`.
    pub tls: Option<ForwardTls>,
    /// Line of the directive.
    pub line: usize,
}

/// How *forward* reaches one upstream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum UpstreamTransport {
    /// Plain DNS over UDP and TCP (`dns://` or no scheme).
    #[default]
    Dns,
    /// DNS over TLS (`tls://`, RFC 7858): every query goes over TLS, whatever transport the
    /// client used.
    Tls {
        /// The name the upstream's certificate is verified for (and sent as SNI when it is
        /// a host name): `tls://IP%NAME`, else `tls_servername`, else the IP address.
        server_name: String,
    },
}

/// One upstream of *forward*.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Where to send queries.
    pub addr: SocketAddr,
    /// As CoreDNS names it in metrics' `to` label: `10.0.0.1:53`.
    pub name: String,
    /// The resolv.conf it was read from, if any (for messages).
    pub from_file: Option<PathBuf>,
    /// Plain DNS, or DNS over TLS.
    pub transport: UpstreamTransport,
}

/// *forward*'s `policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForwardPolicy {
    /// A random order per query (the default).
    #[default]
    Random,
    /// Rotate the starting upstream per query.
    RoundRobin,
    /// Always in file order.
    Sequential,
}

/// The *cache* directive: `cache [TTL] [ZONES...] { ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheConfig {
    /// Zones cached (the server block's when none are given).
    pub zones: Vec<Name>,
    /// Positive answers.
    pub success: CacheClass,
    /// NXDOMAIN and NODATA answers.
    pub denial: CacheClass,
    /// `disable success ZONES...`.
    pub disable_success: Vec<Name>,
    /// `disable denial ZONES...`.
    pub disable_denial: Vec<Name>,
    /// `prefetch AMOUNT [DURATION] [PERCENTAGE%]` (`None` also for an AMOUNT of 0, which
    /// CoreDNS treats as off).
    pub prefetch: Option<Prefetch>,
    /// `serve_stale [DURATION] [immediate|verify]`.
    pub serve_stale: Option<ServeStale>,
    /// `servfail DURATION` (default 5 s; 0 disables; at most 5 min).
    pub servfail: Duration,
    /// `keepttl`: answer with the TTLs as received.
    pub keepttl: bool,
    /// Line of the directive.
    pub line: usize,
}

/// Capacity and TTL bounds of one class of cached answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheClass {
    /// Entries (default 9984 = 256 shards × 39; rounded down to a multiple of 256, at least
    /// 1024).
    pub capacity: usize,
    /// Largest TTL kept (3600 for success, 1800 for denial; `cache TTL` lowers both).
    pub max_ttl: u32,
    /// Smallest TTL kept (default 5).
    pub min_ttl: u32,
}

/// *cache*'s `prefetch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefetch {
    /// Queries seen without a gap of `duration`...
    pub amount: u32,
    /// ... (default 1 m)...
    pub duration: Duration,
    /// ... refresh when the remaining TTL drops below this percentage (default 10).
    pub percentage: u8,
}

/// *cache*'s `serve_stale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeStale {
    /// How long past expiry an entry may still be served (default 1 h).
    pub duration: Duration,
    /// `verify` (CoreDNS's spelling): ask the upstream first, serve stale only if it fails
    /// (default `immediate`: serve stale at once and refresh in the background).
    pub verified: bool,
}

/// The *health* directive: `health [ADDRESS] { lameduck DURATION }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthConfig {
    /// Where `/health` listens (default `:8080`, which is `0.0.0.0:8080`: every IPv4 address;
    /// CoreDNS's Go listener would also take IPv6 there).
    pub addr: SocketAddr,
    /// `lameduck`: how long to keep serving after SIGTERM.
    pub lameduck: Duration,
    /// Line of the directive.
    pub line: usize,
}

/// The *ready* directive: `ready [ADDRESS] { monitor until-ready|continuously }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyConfig {
    /// Where `/ready` listens (default `:8181`, which is `0.0.0.0:8181`).
    pub addr: SocketAddr,
    /// `monitor continuously`: keep checking after the first success (default: latch).
    pub continuously: bool,
    /// Line of the directive.
    pub line: usize,
}

/// The *prometheus* directive: `prometheus [ADDRESS]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrometheusConfig {
    /// Where `/metrics` listens (default `localhost:9153`, which is `127.0.0.1:9153`; kubeadm
    /// writes `:9153`).
    pub addr: SocketAddr,
    /// Line of the directive.
    pub line: usize,
}

/// The *errors* directive: `errors { consolidate DURATION REGEXP [LEVEL] [show_first]; stacktrace }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorsConfig {
    /// `consolidate` rules, in file order (the first matching rule takes a message).
    pub consolidate: Vec<Consolidate>,
    /// `stacktrace` / `panicRecoveryStacktrace`.
    pub stacktrace: bool,
    /// Line of the directive.
    pub line: usize,
}

/// One `consolidate` rule.
#[derive(Debug, Clone)]
pub struct Consolidate {
    /// How long matching messages are gathered.
    pub period: Duration,
    /// Which messages.
    pub pattern: regex::Regex,
    /// The level of the summary line (default error).
    pub level: LogLevel,
    /// `show_first`: print the first message of a period as it comes.
    pub show_first: bool,
}

impl PartialEq for Consolidate {
    fn eq(&self, other: &Self) -> bool {
        self.period == other.period
            && self.pattern.as_str() == other.pattern.as_str()
            && self.level == other.level
            && self.show_first == other.show_first
    }
}

/// A log level, as `errors` and `log` name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogLevel {
    /// debug.
    Debug,
    /// info.
    Info,
    /// warning.
    Warning,
    /// error.
    #[default]
    Error,
}

/// One *log* directive: `log [NAMES...] [FORMAT] { class CLASSES...; minDuration D }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// Names (and below) whose queries are logged (default `.`).
    pub names: Vec<Name>,
    /// The format, placeholders and all (`{common}` and `{combined}` already expanded).
    pub format: String,
    /// Which answers are logged.
    pub classes: LogClasses,
    /// `minDuration`: also log answers slower than this, whatever their class (100 ms when
    /// given without a value; `None` when absent or 0).
    pub min_duration: Option<Duration>,
    /// Line of the directive.
    pub line: usize,
}

/// *log*'s `class` set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogClasses {
    /// NOERROR with records.
    pub success: bool,
    /// NXDOMAIN and NODATA.
    pub denial: bool,
    /// SERVFAIL, REFUSED, NOTIMP, FORMERR...
    pub error: bool,
}

impl LogClasses {
    /// Every class (`class all`, the default).
    pub const ALL: Self = Self {
        success: true,
        denial: true,
        error: true,
    };
}

/// The *loop* directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopConfig {
    /// Line of the directive.
    pub line: usize,
}

/// The *reload* directive: `reload [INTERVAL] [JITTER]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadConfig {
    /// How often the Corefile is checked (default 30 s, at least 2 s).
    pub interval: Duration,
    /// Random spread (±) around each interval (default 15 s, at least 1 s; lowered to half the
    /// interval when larger, as CoreDNS does).
    pub jitter: Duration,
    /// Line of the directive.
    pub line: usize,
}

/// The *loadbalance* directive: `loadbalance [round_robin]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadBalanceConfig {
    /// Line of the directive.
    pub line: usize,
}

/// The *kubernetes* directive.
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesConfig {
    /// Zones served (from the directive's arguments, else the server block's), lower-case
    /// and fully qualified; reverse zones from CIDR arguments are already expanded.
    pub zones: Vec<Name>,
    /// Index in `zones` of the first forward (non-reverse) zone: PTR targets live there.
    pub primary_zone: usize,
    /// `ttl` (default 5, range 0..=3600).
    pub ttl: u32,
    /// `pods`.
    pub pods: PodMode,
    /// `endpoint_pod_names`.
    pub endpoint_pod_names: bool,
    /// `namespaces` (empty: all namespaces).
    pub namespaces: Vec<String>,
    /// `namespace_labels`.
    pub namespace_labels: Option<LabelSelector>,
    /// `labels`.
    pub labels: Option<LabelSelector>,
    /// `noendpoints`.
    pub noendpoints: bool,
    /// `ignore empty_service`.
    pub ignore_empty_service: bool,
    /// `zonal`: headless Services also answer `<topology-zone>.pin._zone.<svc>.<ns>.svc.<zone>`
    /// (that zone's endpoints only) and `<topology-zone>.prefer._zone.…` (those, or every
    /// endpoint when the zone has none).
    pub zonal: bool,
    /// `fallthrough [ZONES...]`: `None` when absent; an empty list means every zone.
    pub fallthrough: Option<Vec<Name>>,
    /// `multicluster ZONES...`: zones among `zones` answered from ServiceImports (the
    /// Multi-Cluster Services API) instead of Services; empty when absent.
    pub multicluster: Vec<Name>,
    /// `objects FILE...` (clusterdns extension): static objects instead of the API watch.
    pub objects: Vec<PathBuf>,
    /// How to reach the API server when `objects` is not given.
    pub api: ApiConfig,
    /// `snapshot FILE` (clusterdns extension, API watch only): the last known objects are
    /// persisted here and served at start-up before the API server answers.
    pub snapshot: Option<PathBuf>,
    /// `startup_timeout` (default 5 s).
    pub startup_timeout: Duration,
    /// The block's *k8s_external* directive, when it has one: the zone built from these
    /// objects then also holds the external zones' names.
    pub external: Option<K8sExternalConfig>,
    /// Line of the directive, for messages.
    pub line: usize,
}

impl KubernetesConfig {
    /// The directive with CoreDNS's defaults (ttl 5, pods disabled, startup_timeout 5 s, no
    /// filters) for `zones`, whose first forward zone is at `primary_zone`.
    pub fn new(zones: Vec<Name>, primary_zone: usize, line: usize) -> Self {
        Self {
            zones,
            primary_zone,
            ttl: directives::kubernetes::DEFAULT_TTL,
            pods: PodMode::Disabled,
            endpoint_pod_names: false,
            namespaces: Vec::new(),
            namespace_labels: None,
            labels: None,
            noendpoints: false,
            zonal: false,
            ignore_empty_service: false,
            fallthrough: None,
            multicluster: Vec::new(),
            objects: Vec::new(),
            api: ApiConfig::default(),
            snapshot: None,
            startup_timeout: directives::kubernetes::DEFAULT_STARTUP_TIMEOUT,
            external: None,
            line,
        }
    }
}

/// `pods disabled|insecure|verified`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodMode {
    /// No pod records (the default).
    #[default]
    Disabled,
    /// A record from the name itself, without checking that the pod exists.
    Insecure,
    /// A record only if a pod with that IP exists in that namespace.
    Verified,
}

/// The API-server connection options of the *kubernetes* directive.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ApiConfig {
    /// `endpoint URL` (only the first URL is used, as in CoreDNS).
    pub endpoint: Option<String>,
    /// `tls CERT KEY CACERT`.
    pub tls: Option<TlsFiles>,
    /// `kubeconfig KUBECONFIG [CONTEXT]`.
    pub kubeconfig: Option<(PathBuf, Option<String>)>,
    /// `apiserver_qps`.
    pub qps: Option<f64>,
    /// `apiserver_burst`.
    pub burst: Option<u32>,
    /// `apiserver_max_inflight`.
    pub max_inflight: Option<u32>,
}

/// `tls CERT KEY CACERT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// Client certificate.
    pub cert: PathBuf,
    /// Client key.
    pub key: PathBuf,
    /// CA certificate.
    pub ca: PathBuf,
}

/// The *transfer* directive: `transfer [ZONES...] { to ADDRESS... }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferConfig {
    /// Zones this directive allows transfers of (the server block's when none are given).
    pub zones: Vec<Name>,
    /// Who may transfer.
    pub to: Vec<TransferPeer>,
    /// Line of the directive.
    pub line: usize,
}

/// One `to` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferPeer {
    /// `*`: anyone.
    Any,
    /// An address or a network.
    Net(IpNet),
}

impl TransferPeer {
    /// Whether a client at `ip` may transfer.
    pub fn allows(&self, ip: IpAddr) -> bool {
        match self {
            Self::Any => true,
            Self::Net(net) => net.contains(&ip),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    use test_support::{env, kind, parse};

    fn names(zones: &[Name]) -> Vec<String> {
        zones.iter().map(ToString::to_string).collect()
    }

    fn ips(texts: &[&str]) -> Vec<IpAddr> {
        texts.iter().map(|t| t.parse().unwrap()).collect()
    }

    /// `kubernetes cluster.local in-addr.arpa { OPTIONS }` in a `.:53` block; the options
    /// start on line 3.
    fn kubernetes(options: &str) -> Result<KubernetesConfig, Error> {
        let text =
            format!(".:53 {{\n kubernetes cluster.local in-addr.arpa {{\n{options}\n }}\n}}\n");
        let config = parse(&text)?;
        Ok(config.servers[0].kubernetes.clone().unwrap())
    }

    #[test]
    fn kubernetes_defaults() {
        let config = parse(". {\n kubernetes\n}").unwrap();
        let k = config.servers[0].kubernetes.as_ref().unwrap();
        assert_eq!(names(&k.zones), ["."]);
        assert_eq!(k.primary_zone, 0);
        assert_eq!(k.ttl, 5);
        assert_eq!(k.pods, PodMode::Disabled);
        assert_eq!(k.startup_timeout, Duration::from_secs(5));
        assert!(!k.endpoint_pod_names && !k.noendpoints && !k.ignore_empty_service);
        assert!(k.namespaces.is_empty() && k.objects.is_empty());
        assert!(k.labels.is_none() && k.namespace_labels.is_none() && k.fallthrough.is_none());
        assert_eq!(k.api, ApiConfig::default());
        assert_eq!(k.line, 2);
    }

    #[test]
    fn kubernetes_options() {
        type Check = fn(&KubernetesConfig) -> bool;
        let cases: &[(&str, &str, Check)] = &[
            ("ttl", "ttl 30", |k| k.ttl == 30),
            ("ttl zero", "ttl 0", |k| k.ttl == 0),
            ("ttl max", "ttl 3600", |k| k.ttl == 3600),
            ("ttl last wins", "ttl 1\nttl 2", |k| k.ttl == 2),
            ("pods insecure", "pods insecure", |k| {
                k.pods == PodMode::Insecure
            }),
            ("pods verified", "pods verified", |k| {
                k.pods == PodMode::Verified
            }),
            ("pods disabled", "pods disabled", |k| {
                k.pods == PodMode::Disabled
            }),
            ("endpoint_pod_names", "endpoint_pod_names", |k| {
                k.endpoint_pod_names
            }),
            ("noendpoints", "noendpoints", |k| k.noendpoints),
            ("ignore", "ignore empty_service", |k| k.ignore_empty_service),
            ("namespaces", "namespaces a b\nnamespaces b c", |k| {
                k.namespaces == ["a", "b", "c"]
            }),
            ("labels", "labels app in (a, b),tier=web", |k| {
                k.labels.as_ref().is_some_and(|l| l.requirements.len() == 2)
            }),
            ("namespace_labels", "namespace_labels team=dns", |k| {
                k.namespace_labels
                    .as_ref()
                    .is_some_and(|l| l.requirements.len() == 1)
            }),
            ("fallthrough all", "fallthrough", |k| {
                k.fallthrough == Some(vec![])
            }),
            (
                "fallthrough zones",
                "fallthrough in-addr.arpa ip6.arpa",
                |k| {
                    k.fallthrough
                        .as_deref()
                        .is_some_and(|z| names(z) == ["in-addr.arpa.", "ip6.arpa."])
                },
            ),
            ("fallthrough cidr", "fallthrough 10.0.0.0/23", |k| {
                k.fallthrough
                    .as_deref()
                    .is_some_and(|z| names(z) == ["0.0.10.in-addr.arpa.", "1.0.10.in-addr.arpa."])
            }),
            ("endpoint", "endpoint https://a:6443 https://b:6443", |k| {
                k.api.endpoint.as_deref() == Some("https://a:6443")
            }),
            ("tls", "tls c.pem k.pem ca.pem", |k| {
                k.api.tls
                    == Some(TlsFiles {
                        cert: "c.pem".into(),
                        key: "k.pem".into(),
                        ca: "ca.pem".into(),
                    })
            }),
            ("kubeconfig", "kubeconfig /k.yaml", |k| {
                k.api.kubeconfig == Some(("/k.yaml".into(), None))
            }),
            ("kubeconfig context", "kubeconfig k.yaml kind", |k| {
                k.api.kubeconfig == Some(("k.yaml".into(), Some("kind".into())))
            }),
            ("qps", "apiserver_qps 2.5", |k| k.api.qps == Some(2.5)),
            ("burst", "apiserver_burst 10", |k| k.api.burst == Some(10)),
            ("inflight", "apiserver_max_inflight 50", |k| {
                k.api.max_inflight == Some(50)
            }),
            ("startup_timeout", "startup_timeout 1m30s", |k| {
                k.startup_timeout == Duration::from_secs(90)
            }),
            ("startup_timeout zero", "startup_timeout 0", |k| {
                k.startup_timeout == Duration::ZERO
            }),
            (
                "objects",
                "objects a.json \"b c.json\"\nobjects /abs.json",
                |k| {
                    k.objects
                        == [
                            PathBuf::from("a.json"),
                            PathBuf::from("b c.json"),
                            PathBuf::from("/abs.json"),
                        ]
                },
            ),
            ("quoted option name", "\"ttl\" 7", |k| k.ttl == 7),
            ("comment", "ttl 9 # nine", |k| k.ttl == 9),
            ("env", "namespaces {$NOPE}x", |k| k.namespaces == ["x"]),
        ];
        for (name, options, check) in cases {
            let k = kubernetes(options).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(check(&k), "{name}: {k:?}");
        }
    }

    #[test]
    fn kubernetes_multicluster() {
        let cases: &[(&str, &str, &[&str])] = &[
            (
                "one zone",
                "kubernetes cluster.local clusterset.local {\n  multicluster clusterset.local\n }",
                &["clusterset.local."],
            ),
            (
                "spelling normalized",
                "kubernetes cluster.local clusterset.local {\n  multicluster ClusterSet.Local.\n }",
                &["clusterset.local."],
            ),
            (
                "two zones",
                "kubernetes cluster.local a.example b.example {\n  multicluster b.example a.example\n }",
                &["b.example.", "a.example."],
            ),
            (
                "last line wins",
                "kubernetes cluster.local a.example b.example {\n  multicluster a.example\n  multicluster b.example\n }",
                &["b.example."],
            ),
            (
                "no zones names none",
                "kubernetes cluster.local {\n  multicluster\n }",
                &[],
            ),
            ("absent", "kubernetes cluster.local", &[]),
        ];
        for (name, directive, expected) in cases {
            let text = format!(".:53 {{\n {directive}\n}}\n");
            let config = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let k = config.servers[0].kubernetes.as_ref().unwrap();
            assert_eq!(names(&k.multicluster), *expected, "{name}");
        }
    }

    #[test]
    fn kubernetes_zones() {
        let cases: &[(&str, &str, &[&str], usize)] = &[
            (
                "from args",
                ". {\n kubernetes cluster.local in-addr.arpa ip6.arpa\n}",
                &["cluster.local.", "in-addr.arpa.", "ip6.arpa."],
                0,
            ),
            (
                "from keys",
                "cluster.local 10.0.0.0/24 {\n kubernetes\n}",
                &["cluster.local.", "0.0.10.in-addr.arpa."],
                0,
            ),
            (
                "reverse first",
                ". {\n kubernetes in-addr.arpa Example.ORG\n}",
                &["in-addr.arpa.", "example.org."],
                1,
            ),
            (
                "cidr args",
                ". {\n kubernetes 10.0.0.0/23 cluster.local\n}",
                &[
                    "0.0.10.in-addr.arpa.",
                    "1.0.10.in-addr.arpa.",
                    "cluster.local.",
                ],
                2,
            ),
            (
                "duplicates dropped",
                ". {\n kubernetes a.org a.org.\n}",
                &["a.org."],
                0,
            ),
            (
                "env zone",
                ". {\n kubernetes {$ZONE}\n}",
                &["cluster.local."],
                0,
            ),
            (
                "all keys of the block",
                "10.in-addr.arpa:53 cluster.local:54 {\n kubernetes\n}",
                &["10.in-addr.arpa.", "cluster.local."],
                1,
            ),
        ];
        for (name, text, zones, primary) in cases {
            let config = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            for server in &config.servers {
                let k = server.kubernetes.as_ref().unwrap();
                assert_eq!(names(&k.zones), *zones, "{name}");
                assert_eq!(k.primary_zone, *primary, "{name}");
            }
        }
    }

    #[test]
    fn objects_are_relative_to_the_corefile() {
        let text = ". {\n kubernetes {\n  objects dump.json /abs.json\n }\n}";
        let config = parse_corefile_in(text, Path::new("/etc/coredns/Corefile"), &env()).unwrap();
        let k = config.servers[0].kubernetes.as_ref().unwrap();
        assert_eq!(
            k.objects,
            [
                PathBuf::from("/etc/coredns/dump.json"),
                PathBuf::from("/abs.json")
            ]
        );
    }

    #[test]
    fn server_blocks() {
        let text = "\
# two blocks, one split by port
cluster.local:53 example.org:5300, 10.0.0.0/24 {
    bind 127.0.0.1
}
.:53 {
}
";
        let config = parse(text).unwrap();
        let summary: Vec<(Vec<String>, u16, usize)> = config
            .servers
            .iter()
            .map(|s| (names(&s.zones), s.port, s.line))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    vec![
                        "cluster.local.".to_owned(),
                        "0.0.10.in-addr.arpa.".to_owned()
                    ],
                    53,
                    2
                ),
                (vec!["example.org.".to_owned()], 5300, 2),
                (vec![".".to_owned()], 53, 5),
            ]
        );
        assert_eq!(config.servers[1].bind, ips(&["127.0.0.1"]));
        assert!(config.servers[2].bind.is_empty() && config.servers[2].kubernetes.is_none());
    }

    #[test]
    fn keys_and_ports() {
        /// The zones and port of each server block.
        type Servers<'a> = &'a [(&'a [&'a str], u16)];
        let cases: &[(&str, &str, Servers<'_>)] = &[
            ("env port", ".:{$PORT} {\n}", &[(&["."], 1053)]),
            (
                "comma list",
                "a.org,b.org {\n}",
                &[(&["a.org.", "b.org."], 53)],
            ),
            (
                "comma across lines",
                "a.org,\nb.org:54 {\n}",
                &[(&["a.org."], 53), (&["b.org."], 54)],
            ),
            ("scheme", "dns://.:5353 {\n}", &[(&["."], 5353)]),
            ("braceless", ".:53\nkubernetes", &[(&["."], 53)]),
            ("keys only", "example.org", &[(&["example.org."], 53)]),
            (
                "same zone other port",
                ". {\n}\n.:54 {\n}",
                &[(&["."], 53), (&["."], 54)],
            ),
            (
                "v6 cidr",
                "fd00::/64:53 {\n}",
                &[(&["0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa."], 53)],
            ),
        ];
        for (name, text, want) in cases {
            let config = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let got: Vec<(Vec<String>, u16)> = config
                .servers
                .iter()
                .map(|s| (names(&s.zones), s.port))
                .collect();
            let want: Vec<(Vec<String>, u16)> = want
                .iter()
                .map(|(z, p)| (z.iter().map(|z| (*z).to_owned()).collect(), *p))
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn bind() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("one", "bind 127.0.0.1", &["127.0.0.1"]),
            (
                "several and v6",
                "bind 127.0.0.1 ::1",
                &["127.0.0.1", "::1"],
            ),
            (
                "duplicates",
                "bind 127.0.0.1 127.0.0.1\nbind 127.0.0.1",
                &["127.0.0.1"],
            ),
            (
                "lines add up",
                "bind 127.0.0.1\nbind 127.0.0.2",
                &["127.0.0.1", "127.0.0.2"],
            ),
            (
                "interface, link-local skipped",
                "bind eth0",
                &["10.1.1.1", "fd00::5"],
            ),
            (
                "except",
                "bind eth0 lo {\n except fd00::5 lo\n}",
                &["10.1.1.1"],
            ),
        ];
        for (name, directives, want) in cases {
            let config =
                parse(&format!(". {{\n{directives}\n}}")).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(config.servers[0].bind, ips(want), "{name}");
        }
    }

    #[test]
    fn transfer() {
        let text = "cluster.local {\n transfer {\n  to * 10.0.0.1:53\n  to 10.0.0.0/8\n }\n transfer example.org 10.0.0.0/24 {\n  to fd00::1\n }\n}";
        let config = parse(text).unwrap();
        let transfers = &config.servers[0].transfer;
        assert_eq!(transfers.len(), 2);
        assert_eq!(names(&transfers[0].zones), ["cluster.local."]);
        assert_eq!(
            transfers[0].to,
            [
                TransferPeer::Any,
                TransferPeer::Net("10.0.0.1/32".parse().unwrap()),
                TransferPeer::Net("10.0.0.0/8".parse().unwrap()),
            ]
        );
        assert_eq!(transfers[0].line, 2);
        assert_eq!(
            names(&transfers[1].zones),
            ["example.org.", "0.0.10.in-addr.arpa."]
        );
        assert!(transfers[1].to[0].allows("fd00::1".parse().unwrap()));
        assert!(!transfers[1].to[0].allows("fd00::2".parse().unwrap()));
    }

    #[test]
    fn snippets_and_imports() {
        let text = "\
(k8s) {
    kubernetes cluster.local {
        pods insecure
        import extra
    }
}
(extra) {
    ttl 30
}
.:53 {
    import k8s
}
";
        let config = parse(text).unwrap();
        let k = config.servers[0].kubernetes.as_ref().unwrap();
        assert_eq!((k.pods, k.ttl), (PodMode::Insecure, 30));

        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("conf.d")).unwrap();
        std::fs::write(
            dir.path().join("conf.d/1-a.conf"),
            "a.org {\n  kubernetes\n}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("conf.d/2-b.conf"),
            "b.org {\n  import ../options\n}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("options"), "bind 127.0.0.1\n").unwrap();
        let corefile = dir.path().join("Corefile");
        std::fs::write(&corefile, "import conf.d/*.conf\n").unwrap();
        let config = read_corefile(&corefile).unwrap();
        assert_eq!(config.servers.len(), 2);
        assert_eq!(names(&config.servers[0].zones), ["a.org."]);
        assert!(config.servers[0].kubernetes.is_some());
        assert_eq!(config.servers[1].bind, ips(&["127.0.0.1"]));

        std::fs::write(
            dir.path().join("conf.d/2-b.conf"),
            "b.org {\n  kubernetes {\n    bogus\n  }\n}\n",
        )
        .unwrap();
        let error = read_corefile(&corefile).unwrap_err();
        assert_eq!(error.file(), dir.path().join("conf.d/2-b.conf"));
        assert_eq!((kind(&error), error.line()), ("UnknownProperty", 3));
    }

    #[test]
    fn read_errors() {
        let error = read_corefile(Path::new("/nonexistent/Corefile")).unwrap_err();
        assert_eq!(kind(&error), "Read");
        assert!(
            error
                .to_string()
                .starts_with("/nonexistent/Corefile: cannot read"),
            "{error}"
        );
    }

    #[test]
    fn errors() {
        let cases: &[(&str, &str, usize, &str, &str)] = &[
            // Syntax.
            (
                "empty",
                "",
                0,
                "Syntax",
                "Corefile: the Corefile defines no server block",
            ),
            ("only snippets", "(s) {\n}", 0, "Syntax", "no server block"),
            (
                "unterminated quote",
                ". {\n kubernetes \"x\n}",
                2,
                "Syntax",
                "unterminated",
            ),
            (
                "unclosed",
                ". {\n kubernetes {\n",
                2,
                "Syntax",
                "never closed",
            ),
            ("empty key", "{$NOPE} {\n}", 1, "Syntax", "has no key"),
            // Keys.
            (
                "tls key",
                "tls://.:853 {\n}",
                1,
                "Key",
                "Corefile:1: invalid server block key 'tls://.:853': transport 'tls://' is not supported",
            ),
            (
                "bad zone",
                "ex%ample.org {\n}",
                1,
                "Key",
                "invalid server block key 'ex%ample.org'",
            ),
            ("bad port", ".:99999 {\n}", 1, "Key", "0..=65535"),
            // Duplicates.
            (
                "same zone twice",
                ". {\n}\n.:53 {\n}",
                3,
                "Duplicate",
                "Corefile:3: cannot serve dns://.:53 - it is already defined",
            ),
            (
                "same block twice",
                ". . {\n}",
                1,
                "Duplicate",
                "already defined",
            ),
            (
                "overlapping cidr",
                "10.0.0.0/24 0.0.10.in-addr.arpa {\n}",
                1,
                "Duplicate",
                "dns://0.0.10.in-addr.arpa.:53 - it is already defined",
            ),
            (
                "same bind twice",
                ". {\n bind 127.0.0.1\n}\n. {\n bind 127.0.0.1\n}",
                4,
                "Duplicate",
                "cannot serve dns://.:53 on 127.0.0.1 - it is already defined",
            ),
            (
                "wildcard overlap",
                ". {\n bind 127.0.0.1\n}\n. {\n}",
                4,
                "Duplicate",
                "cannot serve dns://.:53 - zone overlap listener capacity with dns://.:53 on 127.0.0.1",
            ),
            // Directives.
            (
                "unknown directive",
                ". {\n kubernetes\n proxy . 8.8.8.8\n}",
                3,
                "UnknownDirective",
                "Corefile:3: unknown directive 'proxy'",
            ),
            (
                "unknown before unsupported",
                ". {\n errors\n}\n. {\n nope\n}",
                5,
                "UnknownDirective",
                "'nope'",
            ),
            (
                "unsupported",
                ". {\n kubernetes\n dnstap /tmp/dnstap.sock {\n  identity x\n }\n}",
                3,
                "Unsupported",
                "Corefile:3: directive 'dnstap' is a CoreDNS plugin that clusterdns does not implement yet",
            ),
            (
                "unsupported after an implemented error",
                ". {\n dnstap /tmp/dnstap.sock\n cache 0\n}",
                3,
                "Invalid",
                "cache: TTL '0' must be a positive number",
            ),
            (
                "invalid after errors",
                ". {\n errors\n kubernetes {\n  ttl x\n }\n}",
                4,
                "Invalid",
                "ttl",
            ),
            (
                "kubernetes twice",
                ". {\n kubernetes\n kubernetes\n}",
                3,
                "Invalid",
                "plugin/kubernetes: this plugin can only be used once per Server Block (first at line 2)",
            ),
            // kubernetes.
            (
                "unknown property",
                ". {\n kubernetes {\n  foo bar\n }\n}",
                3,
                "UnknownProperty",
                "Corefile:3: unknown property 'foo' in kubernetes",
            ),
            (
                "unknown property with a block",
                ". {\n kubernetes {\n  foo {\n  }\n }\n}",
                3,
                "UnknownProperty",
                "unknown property 'foo' in kubernetes",
            ),
            (
                "removed upstream",
                ". {\n kubernetes {\n  upstream\n }\n}",
                3,
                "UnknownProperty",
                "'upstream'",
            ),
            (
                "multicluster zone not served",
                ". {\n kubernetes {\n  multicluster clusterset.local\n }\n}",
                3,
                "Invalid",
                "Corefile:3: kubernetes: is not authoritative for the multicluster zone \
                 clusterset.local. (authoritative zones: [.])",
            ),
            (
                "multicluster zone not among the directive's",
                ". {\n kubernetes cluster.local {\n  multicluster clusterset.local\n }\n}",
                3,
                "Invalid",
                "is not authoritative for the multicluster zone clusterset.local. \
                 (authoritative zones: [cluster.local.])",
            ),
            (
                "multicluster zone below a served zone",
                "clusterset.local cluster.local {\n kubernetes {\n  multicluster a.clusterset.local\n }\n}",
                3,
                "Invalid",
                "is not authoritative for the multicluster zone a.clusterset.local. \
                 (authoritative zones: [clusterset.local. cluster.local.])",
            ),
            (
                "multicluster zone not a name",
                ". {\n kubernetes {\n  multicluster clus..ter\n }\n}",
                3,
                "Invalid",
                "multicluster",
            ),
            (
                "zonal with noendpoints",
                ". {\n kubernetes {\n  noendpoints\n  zonal\n }\n}",
                4,
                "Invalid",
                "zonal requires the endpoint cache; remove noendpoints",
            ),
            (
                "zonal takes no argument",
                ". {\n kubernetes {\n  zonal pin\n }\n}",
                3,
                "Invalid",
                "zonal: expected exactly 0 arguments, got 1",
            ),
            (
                "reverse only",
                ". {\n kubernetes in-addr.arpa 10.0.0.0/8\n}",
                2,
                "Invalid",
                "non-reverse zone name must be used",
            ),
            (
                "reverse keys only",
                "10.0.0.0/8 {\n kubernetes\n}",
                2,
                "Invalid",
                "non-reverse zone name must be used",
            ),
            (
                "bad zone arg",
                ". {\n kubernetes cluster.local:53\n}",
                2,
                "Invalid",
                "kubernetes: zone 'cluster.local:53' must not have a port",
            ),
            (
                "ttl range",
                ". {\n kubernetes {\n  ttl 3601\n }\n}",
                3,
                "Invalid",
                "kubernetes: ttl: '3601' must be an integer in range [0, 3600]",
            ),
            (
                "ttl negative",
                ". {\n kubernetes {\n  ttl -1\n }\n}",
                3,
                "Invalid",
                "range [0, 3600]",
            ),
            (
                "ttl missing",
                ". {\n kubernetes {\n  ttl\n }\n}",
                3,
                "Invalid",
                "kubernetes: ttl: expected exactly 1 argument, got 0",
            ),
            (
                "ttl two",
                ". {\n kubernetes {\n  ttl 1 2\n }\n}",
                3,
                "Invalid",
                "expected exactly 1 argument, got 2",
            ),
            (
                "pods value",
                ". {\n kubernetes {\n  pods yes\n }\n}",
                3,
                "Invalid",
                "pods: 'yes' must be one of: disabled, insecure, verified",
            ),
            (
                "tls count",
                ". {\n kubernetes {\n  tls a b\n }\n}",
                3,
                "Invalid",
                "tls: expected exactly 3 arguments, got 2",
            ),
            (
                "kubeconfig count",
                ". {\n kubernetes {\n  kubeconfig a b c\n }\n}",
                3,
                "Invalid",
                "kubeconfig: expected 1 to 2 arguments, got 3",
            ),
            (
                "endpoint count",
                ". {\n kubernetes {\n  endpoint\n }\n}",
                3,
                "Invalid",
                "endpoint: expected at least 1 argument, got 0",
            ),
            (
                "flag with argument",
                ". {\n kubernetes {\n  noendpoints yes\n }\n}",
                3,
                "Invalid",
                "noendpoints: expected exactly 0 arguments, got 1",
            ),
            (
                "ignore value",
                ". {\n kubernetes {\n  ignore emptyservice\n }\n}",
                3,
                "Invalid",
                "'emptyservice' must be 'empty_service'",
            ),
            (
                "namespace name",
                ". {\n kubernetes {\n  namespaces Default\n }\n}",
                3,
                "Invalid",
                "'Default' is not a namespace name",
            ),
            (
                "both namespace filters",
                ". {\n kubernetes {\n  namespaces a\n  namespace_labels x=y\n }\n}",
                2,
                "Invalid",
                "namespaces and namespace_labels cannot both be set",
            ),
            (
                "labels",
                ". {\n kubernetes {\n  labels a in b\n }\n}",
                3,
                "Selector",
                "kubernetes: labels: invalid label selector 'a in b': found 'b', expected: '('",
            ),
            (
                "namespace_labels",
                ". {\n kubernetes {\n  namespace_labels a>1\n }\n}",
                3,
                "Selector",
                "namespace_labels",
            ),
            (
                "qps",
                ". {\n kubernetes {\n  apiserver_qps 0\n }\n}",
                3,
                "Invalid",
                "apiserver_qps: '0' must be a positive number",
            ),
            (
                "qps nan",
                ". {\n kubernetes {\n  apiserver_qps NaN\n }\n}",
                3,
                "Invalid",
                "positive number",
            ),
            (
                "burst",
                ". {\n kubernetes {\n  apiserver_burst -3\n }\n}",
                3,
                "Invalid",
                "apiserver_burst: '-3' must be a positive integer",
            ),
            (
                "inflight",
                ". {\n kubernetes {\n  apiserver_max_inflight many\n }\n}",
                3,
                "Invalid",
                "apiserver_max_inflight",
            ),
            (
                "startup_timeout",
                ". {\n kubernetes {\n  startup_timeout 5\n }\n}",
                3,
                "Invalid",
                "startup_timeout: missing unit in duration '5'",
            ),
            (
                "objects empty",
                ". {\n kubernetes {\n  objects \"\"\n }\n}",
                3,
                "Invalid",
                "objects: empty file name",
            ),
            (
                "objects and endpoint",
                ". {\n kubernetes {\n  endpoint https://x\n  objects a.json\n }\n}",
                4,
                "Invalid",
                "objects (static files) cannot be combined with endpoint (line 3)",
            ),
            (
                "snapshot and objects",
                ". {\n kubernetes {\n  objects a.json\n  snapshot s.json\n }\n}",
                4,
                "Invalid",
                "snapshot persists what the API watch saw; it cannot be combined with objects (line 3)",
            ),
            (
                "snapshot twice the argument",
                ". {\n kubernetes {\n  snapshot a b\n }\n}",
                3,
                "Invalid",
                "snapshot: expected",
            ),
            (
                "option block",
                ". {\n kubernetes {\n  ttl 5 {\n  }\n }\n}",
                3,
                "Invalid",
                "ttl: takes no '{ ... }' block",
            ),
            // bind.
            (
                "bind nothing",
                ". {\n bind\n}",
                2,
                "Invalid",
                "bind: expected at least 1 argument, got 0",
            ),
            (
                "bind bad",
                ". {\n bind 127.0.0.1 nope0\n}",
                2,
                "Invalid",
                "bind: not a valid IP address or interface name: 'nope0'",
            ),
            (
                "bind except bad",
                ". {\n bind eth0 {\n  except nope0\n }\n}",
                3,
                "Invalid",
                "bind: except: not a valid IP address",
            ),
            (
                "bind except all",
                ". {\n bind lo {\n  except 127.0.0.1\n }\n}",
                2,
                "Invalid",
                "every address is excluded",
            ),
            (
                "bind option",
                ". {\n bind lo {\n  only 127.0.0.1\n }\n}",
                3,
                "UnknownProperty",
                "unknown property 'only' in bind",
            ),
            (
                "bind except empty",
                ". {\n bind lo {\n  except\n }\n}",
                3,
                "Invalid",
                "except: expected at least 1 argument",
            ),
            // transfer.
            (
                "transfer without to",
                ". {\n transfer\n}",
                2,
                "Invalid",
                "transfer: 'to' is required",
            ),
            (
                "transfer empty block",
                ". {\n transfer {\n }\n}",
                2,
                "Invalid",
                "'to' is required",
            ),
            (
                "transfer bad peer",
                ". {\n transfer {\n  to example.org\n }\n}",
                3,
                "Invalid",
                "to: 'example.org' is not '*', an IP address",
            ),
            (
                "transfer source",
                ". {\n transfer {\n  to *\n  source 10.0.0.1\n }\n}",
                4,
                "UnsupportedProperty",
                "'source' of transfer",
            ),
            (
                "transfer option",
                ". {\n transfer {\n  from 10.0.0.1\n }\n}",
                3,
                "UnknownProperty",
                "unknown property 'from' in transfer",
            ),
            (
                "transfer zone",
                ". {\n transfer ex%ample {\n  to *\n }\n}",
                2,
                "Invalid",
                "transfer: zone 'ex%ample' has an invalid character",
            ),
            // import.
            (
                "missing import",
                ". {\n import nothing-here\n}",
                2,
                "Import",
                "import 'nothing-here': no snippet of that name is defined above",
            ),
            (
                "snippet used before definition",
                ". {\n import s\n}\n(s) {\n}",
                2,
                "Import",
                "no snippet",
            ),
        ];
        for (name, text, line, want_kind, want) in cases {
            let error = match parse(text) {
                Ok(config) => panic!("{name}: parsed: {config:?}"),
                Err(error) => error,
            };
            assert!(error.to_string().contains(want), "{name}: {error}");
            assert_eq!(
                (kind(&error), error.line()),
                (*want_kind, *line),
                "{name}: {error}"
            );
            assert_eq!(error.file(), Path::new("Corefile"), "{name}");
        }
    }

    /// kubeadm's Corefile (`coredns-behaviour.md` § 2a), exactly: every directive parses into
    /// its typed configuration.
    #[test]
    fn kubeadm_corefile_parses() {
        let text = "\
.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
";
        let config = parse(text).unwrap();
        let [server] = config.servers.as_slice() else {
            panic!("one server block: {config:?}")
        };
        assert_eq!(
            (names(&server.zones), server.port),
            (vec![".".to_owned()], 53)
        );
        let errors = server.errors.as_ref().unwrap();
        assert!(errors.consolidate.is_empty() && !errors.stacktrace && errors.line == 2);
        assert_eq!(
            server.health,
            Some(HealthConfig {
                addr: "0.0.0.0:8080".parse().unwrap(),
                lameduck: Duration::from_secs(5),
                line: 3,
            })
        );
        assert_eq!(
            server.ready,
            Some(ReadyConfig {
                addr: "0.0.0.0:8181".parse().unwrap(),
                continuously: false,
                line: 6,
            })
        );
        let k = server.kubernetes.as_ref().unwrap();
        assert_eq!((k.pods, k.ttl, k.line), (PodMode::Insecure, 30, 7));
        assert_eq!(
            server.prometheus,
            Some(PrometheusConfig {
                addr: "0.0.0.0:9153".parse().unwrap(),
                line: 12,
            })
        );
        let [forward] = server.forward.as_slice() else {
            panic!("one forward: {:?}", server.forward)
        };
        assert_eq!(forward.from, Name::root());
        let upstreams: Vec<(String, Option<PathBuf>)> = forward
            .to
            .iter()
            .map(|u| (u.name.clone(), u.from_file.clone()))
            .collect();
        let resolv_conf = Some(PathBuf::from("/etc/resolv.conf"));
        assert_eq!(
            upstreams,
            [
                ("192.0.2.53:53".to_owned(), resolv_conf.clone()),
                ("[2001:db8::53]:53".to_owned(), resolv_conf),
            ]
        );
        assert_eq!(forward.max_concurrent, Some(1000));
        assert_eq!(
            (forward.expire, forward.max_fails, forward.health_check),
            (Duration::from_secs(10), 2, Duration::from_millis(500))
        );
        assert_eq!((forward.policy, forward.line), (ForwardPolicy::Random, 13));
        let cache = server.cache.as_ref().unwrap();
        assert_eq!(names(&cache.zones), ["."]);
        assert_eq!(
            (cache.success, cache.denial),
            (
                CacheClass {
                    capacity: 9984,
                    max_ttl: 30,
                    min_ttl: 5
                },
                CacheClass {
                    capacity: 9984,
                    max_ttl: 30,
                    min_ttl: 5
                },
            )
        );
        assert_eq!(names(&cache.disable_success), ["cluster.local."]);
        assert_eq!(names(&cache.disable_denial), ["cluster.local."]);
        assert_eq!((cache.servfail, cache.line), (Duration::from_secs(5), 16));
        assert_eq!(server.loop_detect, Some(LoopConfig { line: 20 }));
        assert_eq!(
            server.reload,
            Some(ReloadConfig {
                interval: Duration::from_secs(30),
                jitter: Duration::from_secs(15),
                line: 21,
            })
        );
        assert_eq!(server.loadbalance, Some(LoadBalanceConfig { line: 22 }));
        assert!(server.log.is_empty() && server.transfer.is_empty() && server.bind.is_empty());
    }

    /// Random text and random edits of a real Corefile: any result, never a panic.
    #[test]
    fn garbage_never_panics() {
        let seed_text = ".:53 {\n  bind 127.0.0.1\n  errors {\n    consolidate 1m ^a(b|c)$ warning show_first\n  }\n  health :8080 {\n    lameduck 5s\n  }\n  ready\n  kubernetes cluster.local 10.0.0.0/23 {\n    pods insecure\n    labels a in (b, c)\n    startup_timeout 1m\n  }\n  prometheus :9153\n  forward . 10.0.0.1:53 /etc/resolv.conf {\n    max_concurrent 1000\n    health_check 1s domain a.b\n    failover SERVFAIL\n  }\n  cache 30 {\n    success 5000 60 1\n    prefetch 2 1m 20%\n    disable denial cluster.local\n  }\n  log . {combined} {\n    class denial\n  }\n  loop\n  reload 10s\n  loadbalance\n  transfer {\n    to * 10.0.0.0/8\n  }\n}\n(s) {\n  ttl 3\n}\n";
        let pieces = [
            "{",
            "}",
            "\"",
            "`",
            "#",
            "\n",
            " ",
            ",",
            ":",
            "/",
            "(",
            ")",
            "$",
            "%",
            "\\",
            ".",
            "import",
            "s",
            "kubernetes",
            "bind",
            "transfer",
            "forward",
            "cache",
            "health",
            "log",
            "errors",
            "consolidate",
            "reload",
            ":8080",
            "[::1]:53",
            "fe80::1",
            "%",
            "{common}",
            "(",
            "99999999999999999999",
            "-1",
            "/etc/resolv.conf",
            "to",
            "*",
            "ttl",
            "53",
            "10.0.0.0/8",
            "fd00::/61",
            "{$X}",
            "dns://",
            "tls://",
            "é",
            "\u{0}",
        ];
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut random = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("Corefile");
        for round in 0..3000 {
            let text: String = if round % 2 == 0 {
                (0..random(40))
                    .map(|_| pieces[random(pieces.len())])
                    .collect()
            } else {
                let mut text: Vec<char> = seed_text.chars().collect();
                for _ in 0..1 + random(4) {
                    let at = random(text.len() + 1);
                    if random(2) == 0 && at < text.len() {
                        text.remove(at);
                    } else {
                        let piece = pieces[random(pieces.len())];
                        for (i, c) in piece.chars().enumerate() {
                            text.insert(at + i, c);
                        }
                    }
                }
                text.into_iter().collect()
            };
            let _ = parse_corefile_in(&text, &file, &env()).map_err(|e| e.to_string());
        }
    }
}
