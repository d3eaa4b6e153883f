//! `forward FROM TO... { ... }`
//!
//! As CoreDNS's *forward* (`plugin/forward/setup.go`):
//!
//! - **FROM** is a zone or a CIDR; a CIDR that stands for several reverse zones keeps the first,
//!   as CoreDNS does (it logs a warning).
//! - **TO** is `IP`, `IP:PORT`, `[IPV6]:PORT`, any of these after `dns://`, or the path of a
//!   resolv.conf whose `nameserver`s (port 53) are the upstreams. A relative path is relative to
//!   the Corefile's directory (CoreDNS: the working directory), like `import` and `objects`. At
//!   most 15 upstreams in all. `tls://IP[:PORT]` (port 853) is DNS over TLS, and
//!   `tls://IP%NAME[:PORT]` (`tls://[IPV6%NAME]:PORT`) gives that upstream its own server name.
//!   The transports CoreDNS's *forward* refuses too (`grpc://`, `quic://`, ...) and DNS over
//!   HTTPS are refused, and so are host names (CoreDNS reads them as file names and fails) and
//!   IPv6 link-local upstreams (they need an interface scope). A link-local `nameserver` of a
//!   resolv.conf is skipped with a warning in the log, since its scope cannot be kept; the file
//!   must still give at least one usable upstream.
//! - `tls [CERT KEY] [CA]` and `tls_servername NAME` set up the `tls://` upstreams (see
//!   [`crate::config::ForwardTls`]); the files are read when the Corefile is, relative to its
//!   directory. Unlike CoreDNS, which ignores them then, either option without a `tls://`
//!   upstream is an error: it says the operator expects TLS where there is none. A server
//!   name given both ways is CoreDNS's error.
//! - Options: `except ZONES...`, `force_tcp`, `prefer_udp`, `expire DURATION` (10 s),
//!   `max_idle_conns N`, `max_fails N` (2), `max_connect_attempts N`,
//!   `policy random|round_robin|sequential`, `health_check DURATION [no_rec] [domain FQDN]`
//!   (0.5 s, `.`), `max_concurrent N`, `next RCODE...`, `failover RCODE...` (not NOERROR),
//!   `failfast_all_unhealthy_upstreams`, `tls`, `tls_servername`. CoreDNS's `max_age` is
//!   refused as not supported.
//! - A server block may have several `forward`s (kept in file order).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::rr::Name;

use super::{
    Context, arguments, bad_value, duration, invalid, no_block, number, one_argument,
    unknown_property, unsupported_property, zones,
};
use crate::config::ForwardTls;
use crate::config::error::Error;
use crate::config::lexer::Token;
use crate::config::resolv_conf::{ReadResolvConfError, read_resolv_conf_in};
use crate::config::syntax::Line;
use crate::config::zone;

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

const DIRECTIVE: &str = "forward";

/// CoreDNS's limit on the upstreams of one `forward`.
pub(crate) const MAX_UPSTREAMS: usize = 15;
/// The default `expire`.
pub(crate) const DEFAULT_EXPIRE: Duration = Duration::from_secs(10);
/// The default `max_fails`.
pub(crate) const DEFAULT_MAX_FAILS: u32 = 2;
/// The default `health_check` interval.
pub(crate) const DEFAULT_HEALTH_CHECK: Duration = Duration::from_millis(500);
/// The port of a resolv.conf `nameserver`, and of an upstream given without one.
const DNS_PORT: u16 = 53;
/// The port of a `tls://` upstream given without one (RFC 7858).
const TLS_PORT: u16 = 853;

/// Parses one `forward` line.
pub(crate) fn parse(line: &Line, context: &Context<'_>) -> Result<ForwardConfig, Error> {
    let args = arguments(DIRECTIVE, line, 2, None)?;
    let Some((from_arg, to_args)) = args.split_first() else {
        return Err(invalid(&line.name, DIRECTIVE, "missing FROM"));
    };
    let from = zone::parse_zone_arg(&from_arg.text)
        .map_err(|message| bad_value(DIRECTIVE, line, from_arg, &message))?
        .into_iter()
        .next()
        .ok_or_else(|| bad_value(DIRECTIVE, line, from_arg, "FROM stands for no zone"))?;
    let mut to: Vec<Upstream> = Vec::new();
    for arg in to_args {
        upstreams(line, arg, context, &mut to)?;
    }
    if to.len() > MAX_UPSTREAMS {
        return Err(invalid(
            &line.name,
            DIRECTIVE,
            format!(
                "more than {MAX_UPSTREAMS} TOs configured: {} (CoreDNS's limit)",
                to.len()
            ),
        ));
    }
    let mut config = ForwardConfig::new(from, to);
    let mut tls = TlsOptions::default();
    for option in line.options() {
        option_line(option, &mut config, &mut tls)?;
    }
    tls_settings(line, &mut config, &tls, context)?;
    Ok(config)
}

/// The block's `tls` and `tls_servername` lines (the last of each counts, as in CoreDNS).
#[derive(Default)]
struct TlsOptions<'l> {
    tls: Option<&'l Line>,
    servername: Option<&'l Line>,
}

/// Gives the `tls://` upstreams their server names and the forward its TLS settings, or says
/// why the `tls` options do not fit the upstreams.
fn tls_settings(
    line: &Line,
    config: &mut ForwardConfig,
    options: &TlsOptions<'_>,
    context: &Context<'_>,
) -> Result<(), Error> {
    let servername = match options.servername {
        Some(option) => {
            let arg = one_argument(DIRECTIVE, option)?;
            if tokio_rustls::rustls::pki_types::ServerName::try_from(arg.text.as_str()).is_err() {
                return Err(bad_value(
                    DIRECTIVE,
                    option,
                    arg,
                    &format!(
                        "'{}' is not a host name or IP address to verify the upstream's \
                         certificate for",
                        arg.text
                    ),
                ));
            }
            Some(arg.text.clone())
        }
        None => None,
    };
    let mut any_tls = false;
    for upstream in &mut config.to {
        let UpstreamTransport::Tls { server_name } = &mut upstream.transport else {
            continue;
        };
        any_tls = true;
        match (&servername, server_name.is_empty()) {
            (Some(forward_level), false) => {
                return Err(invalid(
                    &line.name,
                    DIRECTIVE,
                    format!(
                        "both forward ('{forward_level}') and proxy level ('{server_name}') TLS \
                         servernames are set for upstream proxy 'tls://{}'",
                        upstream.name
                    ),
                ));
            }
            (Some(forward_level), true) => server_name.clone_from(forward_level),
            (None, true) => *server_name = upstream.addr.ip().to_string(),
            (None, false) => {}
        }
    }
    for option in [options.tls, options.servername].into_iter().flatten() {
        if !any_tls {
            return Err(invalid(
                &option.name,
                DIRECTIVE,
                format!(
                    "{}: no upstream of this forward is tls:// (write TO as tls://IP to forward \
                     over TLS)",
                    option.name()
                ),
            ));
        }
    }
    if !any_tls {
        return Ok(());
    }
    let settings = match options.tls {
        Some(option) => {
            let args: Vec<&str> = arguments(DIRECTIVE, option, 0, Some(3))?
                .iter()
                .map(|arg| arg.text.as_str())
                .collect();
            let base = option.name.file.parent().unwrap_or(Path::new(""));
            ForwardTls::read(&args, base, context.env)
                .map_err(|message| invalid(&option.name, DIRECTIVE, format!("tls: {message}")))?
        }
        None => ForwardTls::system_roots().map_err(|message| {
            invalid(
                &line.name,
                DIRECTIVE,
                format!("tls:// upstreams: {message}"),
            )
        })?,
    };
    config.tls = Some(settings);
    Ok(())
}

/// One line of the block.
fn option_line<'l>(
    option: &'l Line,
    config: &mut ForwardConfig,
    tls: &mut TlsOptions<'l>,
) -> Result<(), Error> {
    let flag = |option: &Line| arguments(DIRECTIVE, option, 0, Some(0)).map(|_| true);
    match option.name() {
        "tls" => {
            no_block(DIRECTIVE, option)?;
            arguments(DIRECTIVE, option, 0, Some(3))?;
            tls.tls = Some(option);
            return Ok(());
        }
        "tls_servername" => {
            no_block(DIRECTIVE, option)?;
            one_argument(DIRECTIVE, option)?;
            tls.servername = Some(option);
            return Ok(());
        }
        "max_age" => {
            return Err(unsupported_property(
                DIRECTIVE,
                option,
                "connections are not given a maximum age (use expire for idle ones)",
            ));
        }
        "doh_method" | "resolver" => {
            return Err(unsupported_property(
                DIRECTIVE,
                option,
                "clusterdns forwards DNS over UDP, TCP and TLS to IP addresses only",
            ));
        }
        _ => {}
    }
    no_block(DIRECTIVE, option)?;
    match option.name() {
        "except" => {
            let args = arguments(DIRECTIVE, option, 1, None)?;
            for name in zones(DIRECTIVE, option, args, &[])? {
                if !config.except.contains(&name) {
                    config.except.push(name);
                }
            }
        }
        "force_tcp" => config.force_tcp = flag(option)?,
        "prefer_udp" => config.prefer_udp = flag(option)?,
        "failfast_all_unhealthy_upstreams" => {
            config.failfast_all_unhealthy_upstreams = flag(option)?;
        }
        "expire" => config.expire = duration(DIRECTIVE, option, one_argument(DIRECTIVE, option)?)?,
        "max_idle_conns" => {
            config.max_idle_conns = number(DIRECTIVE, option, one_argument(DIRECTIVE, option)?)?;
        }
        "max_fails" => {
            config.max_fails = number(DIRECTIVE, option, one_argument(DIRECTIVE, option)?)?;
        }
        "max_connect_attempts" => {
            config.max_connect_attempts =
                number(DIRECTIVE, option, one_argument(DIRECTIVE, option)?)?;
        }
        "max_concurrent" => {
            let limit: usize = number(DIRECTIVE, option, one_argument(DIRECTIVE, option)?)?;
            config.max_concurrent = (limit > 0).then_some(limit);
        }
        "policy" => {
            let arg = one_argument(DIRECTIVE, option)?;
            config.policy = match arg.text.as_str() {
                "random" => ForwardPolicy::Random,
                "round_robin" => ForwardPolicy::RoundRobin,
                "sequential" => ForwardPolicy::Sequential,
                other => {
                    return Err(bad_value(
                        DIRECTIVE,
                        option,
                        arg,
                        &format!(
                            "unknown policy '{other}' (expected random, round_robin or sequential)"
                        ),
                    ));
                }
            };
        }
        "health_check" => health_check(option, config)?,
        "next" => config.next = rcodes(option, true)?,
        "failover" => config.failover = rcodes(option, false)?,
        _ => return Err(unknown_property(DIRECTIVE, option)),
    }
    Ok(())
}

/// `health_check DURATION [no_rec] [domain FQDN]`. As in CoreDNS, each `health_check` line sets
/// the domain back to `.` unless it names one.
fn health_check(option: &Line, config: &mut ForwardConfig) -> Result<(), Error> {
    let args = arguments(DIRECTIVE, option, 1, None)?;
    let Some((interval, rest)) = args.split_first() else {
        return Err(invalid(
            &option.name,
            DIRECTIVE,
            "health_check: missing DURATION",
        ));
    };
    config.health_check = duration(DIRECTIVE, option, interval)?;
    config.health_check_domain = Name::root();
    let mut rest = rest.iter();
    while let Some(arg) = rest.next() {
        match arg.text.as_str() {
            "no_rec" => config.health_check_no_rec = true,
            "domain" => {
                let Some(domain) = rest.next() else {
                    return Err(bad_value(
                        DIRECTIVE,
                        option,
                        arg,
                        "'domain' needs a domain name after it",
                    ));
                };
                config.health_check_domain = zone::parse_domain(&domain.text).map_err(|e| {
                    bad_value(
                        DIRECTIVE,
                        option,
                        domain,
                        &format!("invalid domain name '{}': {e}", domain.text),
                    )
                })?;
            }
            other => {
                return Err(bad_value(
                    DIRECTIVE,
                    option,
                    arg,
                    &format!("unknown option '{other}' (expected no_rec or domain FQDN)"),
                ));
            }
        }
    }
    Ok(())
}

/// The rcodes of `next` or `failover`, by their names (any case), as miekg/dns spells them.
fn rcodes(option: &Line, allow_noerror: bool) -> Result<Vec<u16>, Error> {
    let mut out = Vec::new();
    for arg in arguments(DIRECTIVE, option, 1, None)? {
        let Some(rcode) = rcode(&arg.text) else {
            return Err(bad_value(
                DIRECTIVE,
                option,
                arg,
                &format!(
                    "'{}' is not a valid rcode (such as SERVFAIL or REFUSED)",
                    arg.text
                ),
            ));
        };
        if rcode == 0 && !allow_noerror {
            return Err(bad_value(
                DIRECTIVE,
                option,
                arg,
                "NOERROR cannot be used in failover",
            ));
        }
        if !out.contains(&rcode) {
            out.push(rcode);
        }
    }
    Ok(out)
}

/// An rcode by name (miekg/dns's `StringToRcode`, which CoreDNS uses).
pub(crate) fn rcode(name: &str) -> Option<u16> {
    const RCODES: &[(&str, u16)] = &[
        ("NOERROR", 0),
        ("FORMERR", 1),
        ("SERVFAIL", 2),
        ("NXDOMAIN", 3),
        ("NOTIMP", 4),
        ("NOTIMPL", 4),
        ("REFUSED", 5),
        ("YXDOMAIN", 6),
        ("YXRRSET", 7),
        ("NXRRSET", 8),
        ("NOTAUTH", 9),
        ("NOTZONE", 10),
        ("DSOTYPENI", 11),
        ("BADSIG", 16),
        ("BADKEY", 17),
        ("BADTIME", 18),
        ("BADMODE", 19),
        ("BADNAME", 20),
        ("BADALG", 21),
        ("BADTRUNC", 22),
        ("BADCOOKIE", 23),
    ];
    RCODES
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(name))
        .map(|(_, code)| *code)
}

/// The upstreams one **TO** argument stands for, appended to `out`.
fn upstreams(
    line: &Line,
    arg: &Token,
    context: &Context<'_>,
    out: &mut Vec<Upstream>,
) -> Result<(), Error> {
    let bad = |message: String| bad_value(DIRECTIVE, line, arg, &message);
    let text = arg.text.as_str();
    let host = match text.split_once("://") {
        Some((scheme, rest)) => match scheme.to_ascii_lowercase().as_str() {
            "dns" => rest,
            "tls" => {
                out.push(tls_upstream(rest).map_err(|why| bad(format!("'{text}' {why}")))?);
                return Ok(());
            }
            "https" => {
                return Err(bad(format!(
                    "'{text}': DNS over HTTPS is not supported (clusterdns forwards DNS over \
                     UDP, TCP and TLS)"
                )));
            }
            "grpc" | "quic" | "h3" | "https3" | "unix" => {
                return Err(bad(format!(
                    "'{scheme}' is not supported as a destination protocol in forward: {text}"
                )));
            }
            _ => {
                return Err(bad(format!(
                    "'{text}': unknown transport '{scheme}://' (expected an IP address, \
                     IP:PORT, dns:// or tls://)"
                )));
            }
        },
        None => text,
    };
    if host.is_empty() {
        return Err(bad(format!("'{text}' names no upstream")));
    }
    if let Some(addr) = socket_address(host).map_err(|why| bad(format!("'{text}' {why}")))? {
        out.push(upstream(addr, None));
        return Ok(());
    }
    // Not an address: a resolv.conf, as for CoreDNS (which tries any other word as a file).
    let base = arg.file.parent().unwrap_or(Path::new(""));
    let path = base.join(host);
    let conf = match read_resolv_conf_in(context.env, &path) {
        Ok(conf) => conf,
        Err(ReadResolvConfError::Read { error, .. })
            if error.kind() == std::io::ErrorKind::NotFound && looks_like_host(host) =>
        {
            return Err(bad(format!(
                "'{host}' is not an IP address, and host names are not supported (no file of \
                 that name exists either; give the upstream's IP address)"
            )));
        }
        Err(ReadResolvConfError::Read { error, .. }) => {
            return Err(bad(format!(
                "cannot read the resolv.conf {}: {error}",
                path.display()
            )));
        }
        Err(error) => return Err(bad(format!("bad resolv.conf: {error}"))),
    };
    let mut usable = 0;
    for ip in conf.nameservers {
        if is_link_local_v6(ip) {
            tracing::warn!(
                resolv_conf = %path.display(),
                nameserver = %ip,
                "forward (line {}): skipping an IPv6 link-local nameserver (it needs an \
                 interface scope, which clusterdns does not keep)",
                line.name.line
            );
            continue;
        }
        usable += 1;
        out.push(upstream(SocketAddr::new(ip, DNS_PORT), Some(path.clone())));
    }
    if usable == 0 {
        return Err(bad(format!(
            "the resolv.conf {} has no usable nameserver line",
            path.display()
        )));
    }
    Ok(())
}

fn upstream(addr: SocketAddr, from_file: Option<PathBuf>) -> Upstream {
    Upstream {
        from_file,
        ..Upstream::dns(addr)
    }
}

impl ForwardConfig {
    /// `forward FROM TO...` without options: CoreDNS's defaults.
    pub fn new(from: Name, to: Vec<Upstream>) -> Self {
        Self {
            from,
            to,
            except: Vec::new(),
            force_tcp: false,
            prefer_udp: false,
            expire: DEFAULT_EXPIRE,
            max_idle_conns: 0,
            max_fails: DEFAULT_MAX_FAILS,
            max_connect_attempts: 0,
            policy: ForwardPolicy::Random,
            health_check: DEFAULT_HEALTH_CHECK,
            health_check_no_rec: false,
            health_check_domain: Name::root(),
            max_concurrent: None,
            next: Vec::new(),
            failover: Vec::new(),
            failfast_all_unhealthy_upstreams: false,
            tls: None,
        }
    }
}

impl Upstream {
    /// Plain DNS to `addr`, named by it.
    pub fn dns(addr: SocketAddr) -> Self {
        Self {
            addr,
            name: addr.to_string(),
            from_file: None,
            transport: UpstreamTransport::Dns,
        }
    }
}

/// The upstream of `tls://HOST`: `IP[%NAME][:PORT]` or `[IPV6[%NAME]][:PORT]`, port 853 by
/// default. An empty server name is filled in by [`tls_settings`].
fn tls_upstream(host: &str) -> Result<Upstream, String> {
    if host.is_empty() {
        return Err("names no upstream".into());
    }
    // CoreDNS's splitZone: the last '%' starts the server name; a ':PORT' after it belongs
    // to the address.
    let (address, server_name) = match host.rsplit_once('%') {
        None => (host.to_owned(), String::new()),
        Some((before, after)) => {
            let (name, port) = match after.rsplit_once(':') {
                Some((name, port)) => (name, Some(port)),
                None => (after, None),
            };
            let (name, closing) = match name.strip_suffix(']') {
                Some(name) => (name, "]"),
                None => (name, ""),
            };
            if name.is_empty() {
                return Err("has an empty server name after '%'".into());
            }
            if tokio_rustls::rustls::pki_types::ServerName::try_from(name).is_err() {
                return Err(format!(
                    "has server name '{name}', which is not a host name or IP address"
                ));
            }
            let port = port.map(|port| format!(":{port}")).unwrap_or_default();
            (format!("{before}{closing}{port}"), name.to_owned())
        }
    };
    let Some(addr) = socket_address(&address)? else {
        return Err(
            "is not an IP address (tls:// takes IP[:PORT]; host names and resolv.conf files \
             are not supported over TLS)"
                .into(),
        );
    };
    // Without a port, DNS over TLS's.
    let has_port = address.starts_with('[') && address.contains("]:")
        || !address.starts_with('[') && address.parse::<IpAddr>().is_err();
    let addr = if has_port {
        addr
    } else {
        SocketAddr::new(addr.ip(), TLS_PORT)
    };
    Ok(Upstream {
        addr,
        name: addr.to_string(),
        from_file: None,
        transport: UpstreamTransport::Tls { server_name },
    })
}

/// `IP`, `IP:PORT`, `[IPV6]` or `[IPV6]:PORT` as an upstream address; `Ok(None)` when `text`
/// is not written as an address at all (then it is a file name).
fn socket_address(text: &str) -> Result<Option<SocketAddr>, String> {
    let (ip, port) = if let Ok(ip) = text.parse::<IpAddr>() {
        (ip, DNS_PORT)
    } else if let Some(rest) = text.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return Err("has no closing ']'".into());
        };
        let ip = inside
            .parse::<IpAddr>()
            .ok()
            .filter(IpAddr::is_ipv6)
            .ok_or_else(|| {
                format!("'{inside}' is not an IPv6 address (a scope is not supported)")
            })?;
        let port = match after {
            "" => DNS_PORT,
            _ => match after.strip_prefix(':') {
                Some(port) => parse_port(port)?,
                None => return Err("has text after ']' that is not ':PORT'".into()),
            },
        };
        (ip, port)
    } else if let Some((host, port)) = text.rsplit_once(':')
        && let Ok(ip) = host.parse::<std::net::Ipv4Addr>()
    {
        (IpAddr::V4(ip), parse_port(port)?)
    } else {
        if text.contains('%')
            && text
                .split('%')
                .next()
                .is_some_and(|h| h.parse::<IpAddr>().is_ok())
        {
            return Err("has an interface scope, which is not supported".into());
        }
        return Ok(None);
    };
    if is_link_local_v6(ip) {
        return Err(
            "is an IPv6 link-local address, which needs an interface scope (not supported)".into(),
        );
    }
    Ok(Some(SocketAddr::new(ip, port)))
}

fn parse_port(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(0) => Err("has port 0".into()),
        Ok(port) => Ok(port),
        Err(_) => Err(format!("has a bad port '{text}' (expected 1..=65535)")),
    }
}

fn is_link_local_v6(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.is_unicast_link_local())
}

/// Whether `text` reads as a host name, with or without a port (`dns.google`, `ns1:53`), rather
/// than a path.
fn looks_like_host(text: &str) -> bool {
    let host = match text.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => text,
    };
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
