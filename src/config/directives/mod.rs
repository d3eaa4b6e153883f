//! Directives: which names are CoreDNS plugins, and the typed parsers of those clusterdns
//! implements.
//!
//! Adding a directive is one arm in [`apply`] and one module with a `parse` function returning
//! its typed struct (see [`bind`], [`kubernetes`], [`transfer`], [`forward`], [`cache`],
//! [`hosts`], [`template`], [`rewrite`], [`file`], [`k8s_external`], ...).
//! Every other CoreDNS plugin is accepted by the syntax and then refused with
//! [`Error::Unsupported`].

pub(crate) mod any;
pub(crate) mod autopath;
pub(crate) mod bind;
pub(crate) mod bufsize;
pub(crate) mod cache;
pub(crate) mod chaos;
pub(crate) mod errors;
pub(crate) mod file;
pub(crate) mod forward;
pub(crate) mod health;
pub(crate) mod hosts;
pub(crate) mod k8s_external;
pub(crate) mod kubernetes;
pub(crate) mod loadbalance;
pub(crate) mod log;
pub(crate) mod loop_detect;
pub(crate) mod multisocket;
pub(crate) mod prometheus;
pub(crate) mod ready;
pub(crate) mod reload;
pub(crate) mod rewrite;
pub(crate) mod template;
pub(crate) mod transfer;

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use hickory_proto::rr::Name;

use super::duration::parse_go_duration;
use super::env::Environment;
use super::error::Error;
use super::lexer::Token;
use super::syntax::Line;
use super::zone;
use super::{
    AnyConfig, AutopathConfig, BufsizeConfig, CacheConfig, ChaosConfig, ErrorsConfig, FileConfig,
    ForwardConfig, HealthConfig, HostsConfig, K8sExternalConfig, KubernetesConfig,
    LoadBalanceConfig, LogConfig, LoopConfig, MultisocketConfig, PrometheusConfig, ReadyConfig,
    ReloadConfig, RewriteRule, TemplateConfig, TransferConfig,
};

/// Every CoreDNS plugin directive, in `plugin.cfg` order, which is the order plugins handle a
/// query in (whatever the order in the Corefile): CoreDNS v1.14.7's `plugin.cfg` (and its
/// generated `core/dnsserver/zdirectives.go`), checked against the coredns/coredns
/// repository. `proxyproto`, `quic`, `grpc_server`, `https`, `https3` and `tls` configure
/// server transports; `on` is `github.com/coredns/caddy/onevent`. The request path
/// ([`crate::server`]'s chain) takes its order from this list.
pub const COREDNS_DIRECTIVES: &[&str] = &[
    "root",
    "metadata",
    "geoip",
    "cancel",
    "proxyproto",
    "quic",
    "grpc_server",
    "https",
    "https3",
    "timeouts",
    "multisocket",
    "reload",
    "nsid",
    "bufsize",
    "bind",
    "debug",
    "trace",
    "ready",
    "health",
    "pprof",
    "shed",
    "prometheus",
    "errors",
    "log",
    "dnstap",
    "local",
    "dns64",
    "any",
    "chaos",
    "loadbalance",
    "tsig",
    "rewrite",
    "autopath",
    "acl",
    "cache",
    "header",
    "dnssec",
    "tls",
    "minimal",
    "template",
    "transfer",
    "hosts",
    "route53",
    "azure",
    "clouddns",
    "k8s_external",
    "kubernetes",
    "file",
    "auto",
    "secondary",
    "etcd",
    "loop",
    "forward",
    "grpc",
    "erratic",
    "whoami",
    "on",
    "sign",
    "view",
    "nomad",
];

/// Whether `name` is a CoreDNS plugin directive.
pub(crate) fn is_known(name: &str) -> bool {
    COREDNS_DIRECTIVES.contains(&name)
}

/// What a directive parser may look at besides its own line.
pub(crate) struct Context<'a> {
    /// Environment variables and interfaces.
    pub(crate) env: &'a Environment,
    /// The zones of every key of the server block, for directives whose zones default to them.
    pub(crate) block_zones: &'a [Name],
}

/// What the directives of one server block produced.
#[derive(Debug, Default)]
pub(crate) struct Directives {
    /// `bind` addresses, consolidated over every `bind` of the block.
    pub(crate) bind: Vec<IpAddr>,
    /// The `kubernetes` directive.
    pub(crate) kubernetes: Option<KubernetesConfig>,
    /// The `transfer` directives.
    pub(crate) transfer: Vec<TransferConfig>,
    /// The `forward` directives, in file order.
    pub(crate) forward: Vec<ForwardConfig>,
    /// The `cache` directive.
    pub(crate) cache: Option<CacheConfig>,
    /// The `health` directive.
    pub(crate) health: Option<HealthConfig>,
    /// The `ready` directive.
    pub(crate) ready: Option<ReadyConfig>,
    /// The `prometheus` directive.
    pub(crate) prometheus: Option<PrometheusConfig>,
    /// The `errors` directive.
    pub(crate) errors: Option<ErrorsConfig>,
    /// The `log` directives, in file order.
    pub(crate) log: Vec<LogConfig>,
    /// The `loop` directive.
    pub(crate) loop_detect: Option<LoopConfig>,
    /// The `reload` directive.
    pub(crate) reload: Option<ReloadConfig>,
    /// The `loadbalance` directive.
    pub(crate) loadbalance: Option<LoadBalanceConfig>,
    /// The `autopath` directive.
    pub(crate) autopath: Option<AutopathConfig>,
    /// The `bufsize` directive.
    pub(crate) bufsize: Option<BufsizeConfig>,
    /// The `multisocket` directive.
    pub(crate) multisocket: Option<MultisocketConfig>,
    /// The `any` directive.
    pub(crate) any: Option<AnyConfig>,
    /// The `chaos` directive.
    pub(crate) chaos: Option<ChaosConfig>,
    /// The `hosts` directive.
    pub(crate) hosts: Option<HostsConfig>,
    /// The `k8s_external` directive (moved into the block's *kubernetes* once the block is
    /// read).
    pub(crate) k8s_external: Option<K8sExternalConfig>,
    /// The `template` directives, in file order.
    pub(crate) template: Vec<TemplateConfig>,
    /// The `file` directives, in file order.
    pub(crate) file: Vec<FileConfig>,
    /// The `rewrite` directives (one rule each), in file order.
    pub(crate) rewrite: Vec<RewriteRule>,
    /// The HTTP endpoints (`health`, `ready`, `prometheus`) the block names, for the checks
    /// across server blocks.
    pub(crate) endpoints: Vec<Endpoint>,
    /// The first CoreDNS directive that is not implemented yet.
    pub(crate) unsupported: Option<Error>,
}

/// An HTTP endpoint a directive asks for.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// The directive.
    pub(crate) directive: &'static str,
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    /// The file of the directive.
    pub(crate) file: std::path::PathBuf,
    /// Its line.
    pub(crate) line: usize,
}

impl Endpoint {
    fn new(directive: &'static str, addr: SocketAddr, line: &Line) -> Self {
        Self {
            directive,
            addr,
            file: line.name.file.to_path_buf(),
            line: line.name.line,
        }
    }
}

/// Interprets one directive line of a server block.
pub(crate) fn apply(line: &Line, context: &Context<'_>, out: &mut Directives) -> Result<(), Error> {
    match line.name() {
        "bind" => {
            for address in bind::parse(line, context)? {
                if !out.bind.contains(&address) {
                    out.bind.push(address);
                }
            }
        }
        "kubernetes" => {
            once(line, out.kubernetes.as_ref().map(|first| first.line))?;
            out.kubernetes = Some(kubernetes::parse(line, context)?);
        }
        "transfer" => out.transfer.push(transfer::parse(line, context)?),
        "forward" => out.forward.push(forward::parse(line, context)?),
        "log" => out.log.push(log::parse(line, context)?),
        "cache" => {
            once(line, out.cache.as_ref().map(|first| first.line))?;
            out.cache = Some(cache::parse(line, context)?);
        }
        "health" => {
            once(line, out.health.as_ref().map(|first| first.line))?;
            let health = health::parse(line, context)?;
            out.endpoints
                .push(Endpoint::new("health", health.addr, line));
            out.health = Some(health);
        }
        "ready" => {
            once(line, out.ready.as_ref().map(|first| first.line))?;
            let ready = ready::parse(line, context)?;
            out.endpoints.push(Endpoint::new("ready", ready.addr, line));
            out.ready = Some(ready);
        }
        "prometheus" => {
            once(line, out.prometheus.as_ref().map(|first| first.line))?;
            let prometheus = prometheus::parse(line, context)?;
            out.endpoints
                .push(Endpoint::new("prometheus", prometheus.addr, line));
            out.prometheus = Some(prometheus);
        }
        "errors" => {
            once(line, out.errors.as_ref().map(|first| first.line))?;
            out.errors = Some(errors::parse(line, context)?);
        }
        "loop" => {
            once(line, out.loop_detect.as_ref().map(|first| first.line))?;
            out.loop_detect = Some(loop_detect::parse(line, context)?);
        }
        "reload" => {
            once(line, out.reload.as_ref().map(|first| first.line))?;
            out.reload = Some(reload::parse(line, context)?);
        }
        "loadbalance" => {
            once(line, out.loadbalance.as_ref().map(|first| first.line))?;
            out.loadbalance = Some(loadbalance::parse(line, context)?);
        }
        "autopath" => {
            once(line, out.autopath.as_ref().map(|first| first.line))?;
            out.autopath = Some(autopath::parse(line, context)?);
        }
        "bufsize" => {
            once(line, out.bufsize.as_ref().map(|first| first.line))?;
            out.bufsize = Some(bufsize::parse(line, context)?);
        }
        "multisocket" => {
            once(line, out.multisocket.as_ref().map(|first| first.line))?;
            out.multisocket = Some(multisocket::parse(line, context)?);
        }
        "any" => {
            once(line, out.any.as_ref().map(|first| first.line))?;
            out.any = Some(any::parse(line, context)?);
        }
        "chaos" => {
            once(line, out.chaos.as_ref().map(|first| first.line))?;
            out.chaos = Some(chaos::parse(line, context)?);
        }
        "hosts" => {
            once(line, out.hosts.as_ref().map(|first| first.line))?;
            out.hosts = Some(hosts::parse(line, context)?);
        }
        "k8s_external" => {
            once(line, out.k8s_external.as_ref().map(|first| first.line))?;
            out.k8s_external = Some(k8s_external::parse(line, context)?);
        }
        "template" => out.template.push(template::parse(line, context)?),
        "file" => out.file.push(file::parse(line, context)?),
        "rewrite" => out.rewrite.push(rewrite::parse(line, context)?),
        name if is_known(name) => {
            out.unsupported.get_or_insert_with(|| Error::Unsupported {
                directive: name.to_owned(),
                file: line.name.file.to_path_buf(),
                line: line.name.line,
            });
        }
        name => return Err(unknown_directive(line, name)),
    }
    Ok(())
}

/// The error for a directive that is not a CoreDNS plugin.
pub(crate) fn unknown_directive(line: &Line, name: &str) -> Error {
    Error::UnknownDirective {
        name: name.to_owned(),
        file: line.name.file.to_path_buf(),
        line: line.name.line,
    }
}

/// A bad argument or value at `at`.
pub(crate) fn invalid(at: &Token, directive: &str, message: impl Into<String>) -> Error {
    Error::Invalid {
        directive: directive.to_owned(),
        message: message.into(),
        file: at.file.to_path_buf(),
        line: at.line,
    }
}

/// An option the directive does not have.
pub(crate) fn unknown_property(directive: &str, option: &Line) -> Error {
    Error::UnknownProperty {
        directive: directive.to_owned(),
        name: option.name().to_owned(),
        file: option.name.file.to_path_buf(),
        line: option.name.line,
    }
}

/// An option CoreDNS has and clusterdns refuses.
pub(crate) fn unsupported_property(directive: &str, option: &Line, reason: &str) -> Error {
    Error::UnsupportedProperty {
        directive: directive.to_owned(),
        name: option.name().to_owned(),
        reason: reason.to_owned(),
        file: option.name.file.to_path_buf(),
        line: option.name.line,
    }
}

/// The arguments of `line` (a directive, or an option when `line` is not the directive
/// itself), checked to number between `min` and `max`.
pub(crate) fn arguments<'l>(
    directive: &str,
    line: &'l Line,
    min: usize,
    max: Option<usize>,
) -> Result<&'l [Token], Error> {
    let count = line.args.len();
    if count >= min && max.is_none_or(|max| count <= max) {
        return Ok(&line.args);
    }
    let plural = |n: usize| if n == 1 { "argument" } else { "arguments" };
    let expected = match max {
        Some(max) if max == min => format!("exactly {min} {}", plural(min)),
        Some(max) if min == 0 => format!("at most {max} {}", plural(max)),
        Some(max) => format!("{min} to {max} arguments"),
        None => format!("at least {min} {}", plural(min)),
    };
    Err(invalid(
        &line.name,
        directive,
        format!(
            "{}expected {expected}, got {count}",
            prefix(directive, line)
        ),
    ))
}

/// `"option: "` for an option, nothing for the directive itself.
pub(crate) fn prefix(directive: &str, line: &Line) -> String {
    if line.name() == directive {
        String::new()
    } else {
        format!("{}: ", line.name())
    }
}

/// Refuses a block after an option (or a directive) that takes none.
pub(crate) fn no_block(directive: &str, line: &Line) -> Result<(), Error> {
    match line.block {
        Some(_) => Err(invalid(
            &line.name,
            directive,
            format!("{}takes no '{{ ... }}' block", prefix(directive, line)),
        )),
        None => Ok(()),
    }
}

/// A bad value `arg` of `line` (the directive or one of its options).
pub(crate) fn bad_value(directive: &str, line: &Line, arg: &Token, message: &str) -> Error {
    invalid(
        arg,
        directive,
        format!("{}{message}", prefix(directive, line)),
    )
}

/// The one argument of `line`.
pub(crate) fn one_argument<'l>(directive: &str, line: &'l Line) -> Result<&'l Token, Error> {
    arguments(directive, line, 1, Some(1))?
        .first()
        .ok_or_else(|| invalid(&line.name, directive, "missing argument"))
}

/// A Go duration (`5s`, `1m30s`) in `arg`.
pub(crate) fn duration(directive: &str, line: &Line, arg: &Token) -> Result<Duration, Error> {
    parse_go_duration(&arg.text).map_err(|message| bad_value(directive, line, arg, &message))
}

/// A non-negative integer in `arg`.
pub(crate) fn number<T: FromStr>(directive: &str, line: &Line, arg: &Token) -> Result<T, Error> {
    arg.text.parse::<T>().map_err(|_| {
        let why = if arg.text.starts_with('-') && arg.text[1..].bytes().all(|b| b.is_ascii_digit())
        {
            "must not be negative"
        } else {
            "is not a non-negative integer (or is too large)"
        };
        bad_value(directive, line, arg, &format!("'{}' {why}", arg.text))
    })
}

/// The `[ADDRESS]` argument of an HTTP endpoint's line (*health*, *ready*, *prometheus*:
/// at most one), as [`http_address`] reads it, or `default` without one.
pub(crate) fn http_listen(
    directive: &str,
    line: &Line,
    default: SocketAddr,
) -> Result<SocketAddr, Error> {
    match arguments(directive, line, 0, Some(1))?.first() {
        Some(arg) => http_address(directive, line, arg),
        None => Ok(default),
    }
}

/// The address an HTTP endpoint (*health*, *ready*, *prometheus*) listens on, as CoreDNS takes
/// it: `:PORT` (every IPv4 address), `IP:PORT`, `[IPV6]:PORT` or `localhost:PORT`
/// (127.0.0.1). Host names are refused: they would need a DNS lookup before the DNS server
/// is up.
fn http_address(directive: &str, line: &Line, arg: &Token) -> Result<SocketAddr, Error> {
    let bad = |why: String| bad_value(directive, line, arg, &why);
    let text = arg.text.as_str();
    let Some(colon) = text.rfind(':') else {
        return Err(bad(format!(
            "address '{text}' has no port (expected :PORT, IP:PORT, [IPV6]:PORT or \
             localhost:PORT)"
        )));
    };
    let (host, port) = (&text[..colon], &text[colon + 1..]);
    let port: u16 = port.parse().map_err(|_| {
        bad(format!(
            "port '{port}' of '{text}' is not a number in 0..=65535"
        ))
    })?;
    let ip: IpAddr = match host {
        "" => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        _ => match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(v6) => v6
                .parse::<Ipv6Addr>()
                .map(IpAddr::V6)
                .map_err(|_| bad(format!("'{v6}' in '{text}' is not an IPv6 address")))?,
            None => host.parse::<Ipv4Addr>().map(IpAddr::V4).map_err(|_| {
                if host.contains(':') {
                    bad(format!(
                        "IPv6 address in '{text}' must be in brackets: [{host}]:{port}"
                    ))
                } else {
                    bad(format!(
                        "host '{host}' of '{text}' is not an IP address or localhost (host \
                         names are not supported)"
                    ))
                }
            })?,
        },
    };
    Ok(SocketAddr::new(ip, port))
}

/// The plugins CoreDNS itself refuses twice in a server block (`plugin.ErrOnce` in their
/// setup).
const COREDNS_ONCE: &[&str] = &[
    "cache",
    "dnssec",
    "errors",
    "grpc",
    "hosts",
    "kubernetes",
    "loop",
    "nsid",
    "pprof",
    "prometheus",
    "ready",
    "shed",
    "tsig",
    "view",
];

/// Refuses a second `directive` in one server block (`first` is the line of the first): in
/// CoreDNS's words for the plugins CoreDNS refuses twice (`plugin/cache: this plugin can only
/// be used once per Server Block`); for the others, which CoreDNS accepts twice and then
/// silently uses one of (`health`, `reload`, ...), clusterdns refuses too, and says so.
pub(crate) fn once(line: &Line, first: Option<usize>) -> Result<(), Error> {
    let Some(first) = first else {
        return Ok(());
    };
    let name = line.name();
    if COREDNS_ONCE.contains(&name) {
        Err(invalid(
            &line.name,
            &format!("plugin/{name}"),
            format!("this plugin can only be used once per Server Block (first at line {first})"),
        ))
    } else {
        Err(invalid(
            &line.name,
            name,
            format!(
                "may be used only once per server block (first at line {first}; CoreDNS would \
                 silently keep only one of them)"
            ),
        ))
    }
}

/// Zones from arguments (CIDRs expanded), or `default` when there are none. Duplicates are
/// dropped.
pub(crate) fn zones(
    directive: &str,
    line: &Line,
    args: &[Token],
    default: &[Name],
) -> Result<Vec<Name>, Error> {
    if args.is_empty() {
        return Ok(default.to_vec());
    }
    let mut zones: Vec<Name> = Vec::new();
    let mut seen: HashSet<Name> = HashSet::new();
    for arg in args {
        let parsed = zone::parse_zone_arg(&arg.text).map_err(|message| {
            invalid(
                arg,
                directive,
                format!("{}{message}", prefix(directive, line)),
            )
        })?;
        for zone in parsed {
            if seen.insert(zone.clone()) {
                zones.push(zone);
            }
        }
    }
    Ok(zones)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directive_list() {
        assert_eq!(COREDNS_DIRECTIVES.len(), 60);
        for (i, name) in COREDNS_DIRECTIVES.iter().enumerate() {
            assert!(
                !COREDNS_DIRECTIVES[..i].contains(name),
                "{name} listed twice"
            );
        }
        let position = |name: &str| COREDNS_DIRECTIVES.iter().position(|d| *d == name);
        // The query path of kubeadm's Corefile and of the distributions' extras, in
        // CoreDNS's order (v1.14.7: rewrite and autopath before acl and cache).
        let order = [
            "bufsize",
            "prometheus",
            "errors",
            "log",
            "any",
            "chaos",
            "loadbalance",
            "rewrite",
            "autopath",
            "acl",
            "cache",
            "template",
            "transfer",
            "hosts",
            "k8s_external",
            "kubernetes",
            "file",
            "loop",
            "forward",
        ];
        let positions: Vec<Option<usize>> = order.iter().map(|name| position(name)).collect();
        assert!(positions.iter().all(Option::is_some));
        assert!(positions.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(is_known("errors") && !is_known("proxy") && !is_known("Kubernetes"));
    }
}
