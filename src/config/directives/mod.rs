//! Directives: the typed parsers of the plugins clusterdns implements, one module each with a
//! `parse(line, context)` returning its typed configuration, and [`apply`], which hands each
//! directive line of a block to its plugin's parser.
//!
//! Which plugins there are, and whether a block may name each once or several times, is
//! [`crate::plugin::registry!`]'s table; [`Plugins`] and [`apply`]'s dispatch are expanded
//! from it here. Every other CoreDNS plugin is accepted by the syntax and then refused with
//! [`Error::Unsupported`].

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
use crate::plugin::{COREDNS_DIRECTIVES, Plugin, registry};

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

/// Expands [`crate::plugin::registry!`]'s table into [`Plugins`] and the parts of [`apply`]
/// that read each plugin's directive and refuse a second one of a plugin used once.
macro_rules! plugin_configs {
    ($($variant:ident $name:literal $role:ident $field:ident $how:ident $config:ident;)*) => {
        $(pub(crate) mod $field;)*

        /// Each plugin's configuration type (`config` re-exports them).
        pub(crate) mod types {
            $(pub use crate::config::directives::$field::$config;)*
        }

        /// The configuration of each plugin a server block has: one field per row of
        /// [`crate::plugin::registry!`], an `Option` for a plugin used once, a `Vec` for one
        /// used several times.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct Plugins {
            $(
                #[doc = concat!("The *", $name, "* directive", plugin_configs!(@doc $how), ".")]
                pub $field: plugin_configs!(@type $how $field::$config),
            )*
        }

        impl Plugins {
            /// Whether the block has `plugin`.
            pub fn has(&self, plugin: Plugin) -> bool {
                match plugin {
                    $(Plugin::$variant => plugin_configs!(@has $how self.$field),)*
                }
            }

            /// The plugins the block has, in `plugin.cfg` order.
            pub fn enabled(&self) -> impl Iterator<Item = Plugin> + '_ {
                Plugin::ALL.iter().copied().filter(|plugin| self.has(*plugin))
            }
        }

        /// Parses `line`, a directive of `plugin`, into `out`.
        fn parse_into(
            plugin: Plugin,
            line: &Line,
            context: &Context<'_>,
            out: &mut Plugins,
        ) -> Result<(), Error> {
            match plugin {
                $(Plugin::$variant => {
                    plugin_configs!(@put $how out.$field, $field::parse(line, context)?)
                })*
            }
            Ok(())
        }

        /// Whether a block may have only one directive of `plugin`.
        fn used_once(plugin: Plugin) -> bool {
            match plugin {
                $(Plugin::$variant => plugin_configs!(@once $how),)*
            }
        }

        /// Whether CoreDNS itself refuses a second directive of `plugin` in a block.
        fn coredns_refuses_twice(plugin: Plugin) -> bool {
            match plugin {
                $(Plugin::$variant => plugin_configs!(@coredns_once $how),)*
            }
        }
    };
    (@once once) => { true };
    (@once single) => { true };
    (@once each) => { false };
    (@once merge) => { false };
    (@coredns_once once) => { true };
    (@coredns_once $how:ident) => { false };
    (@type once $config:path) => { Option<$config> };
    (@type single $config:path) => { Option<$config> };
    (@type each $config:path) => { Vec<$config> };
    (@type merge $config:path) => { Vec<$config> };
    (@doc once) => { "" };
    (@doc single) => { "" };
    (@doc each) => { "s, in file order" };
    (@doc merge) => { "s' values, each once, in file order" };
    (@has once $field:expr) => { $field.is_some() };
    (@has single $field:expr) => { $field.is_some() };
    (@has each $field:expr) => { !$field.is_empty() };
    (@has merge $field:expr) => { !$field.is_empty() };
    (@put once $field:expr, $value:expr) => { $field = Some($value) };
    (@put single $field:expr, $value:expr) => { $field = Some($value) };
    (@put each $field:expr, $value:expr) => { $field.push($value) };
    (@put merge $field:expr, $values:expr) => {
        for value in $values {
            if !$field.contains(&value) {
                $field.push(value);
            }
        }
    };
}
registry!(plugin_configs);

/// What the directives of one server block produced.
#[derive(Debug, Default)]
pub(crate) struct Directives {
    /// Each plugin's configuration.
    pub(crate) plugins: Plugins,
    /// Where each plugin the block has is first named: its directive's line.
    pub(crate) first: Vec<(Plugin, usize)>,
    /// The HTTP endpoints (`health`, `ready`, `prometheus`) the block names, for the checks
    /// across server blocks.
    pub(crate) endpoints: Vec<Endpoint>,
    /// The first CoreDNS directive that is not implemented yet.
    pub(crate) unsupported: Option<Error>,
}

impl Directives {
    /// The line of the block's first directive of `plugin`.
    pub(crate) fn first_line(&self, plugin: Plugin) -> Option<usize> {
        self.first
            .iter()
            .find(|(seen, _)| *seen == plugin)
            .map(|(_, line)| *line)
    }
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

/// Interprets one directive line of a server block: the plugin it names parses it (a second
/// directive of a plugin used once is refused, naming the first's line), or it names a
/// CoreDNS plugin clusterdns does not implement (kept for [`Directives::unsupported`]), or it
/// is an error.
pub(crate) fn apply(line: &Line, context: &Context<'_>, out: &mut Directives) -> Result<(), Error> {
    let name = line.name();
    let Some(plugin) = Plugin::from_name(name) else {
        if is_known(name) {
            out.unsupported.get_or_insert_with(|| Error::Unsupported {
                directive: name.to_owned(),
                file: line.name.file.to_path_buf(),
                line: line.name.line,
            });
            return Ok(());
        }
        return Err(unknown_directive(line, name));
    };
    match out.first_line(plugin) {
        Some(first) if used_once(plugin) => return Err(once(plugin, line, first)),
        Some(_) => {}
        None => out.first.push((plugin, line.name.line)),
    }
    parse_into(plugin, line, context, &mut out.plugins)?;
    let endpoint = match plugin {
        Plugin::Health => out.plugins.health.as_ref().map(|h| h.addr),
        Plugin::Ready => out.plugins.ready.as_ref().map(|r| r.addr),
        Plugin::Prometheus => out.plugins.prometheus.as_ref().map(|p| p.addr),
        _ => None,
    };
    if let Some(addr) = endpoint {
        out.endpoints.push(Endpoint::new(plugin.name(), addr, line));
    }
    Ok(())
}

/// The error for a directive that is not a CoreDNS plugin.
pub(crate) fn unknown_directive(line: &Line, name: &str) -> Error {
    Error::UnknownDirective {
        name: name.to_owned(),
        hint: crate::config::error::did_you_mean(
            name,
            crate::plugin::COREDNS_DIRECTIVES.iter().copied(),
        ),
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
    unknown_property_of(directive, option, &[])
}

/// An option the directive does not have, with the one meant among `known` when it is near.
pub(crate) fn unknown_property_of(directive: &str, option: &Line, known: &[&str]) -> Error {
    Error::UnknownProperty {
        directive: directive.to_owned(),
        name: option.name().to_owned(),
        hint: crate::config::error::did_you_mean(option.name(), known.iter().copied()),
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

/// Refuses a second `directive` in one server block (`first` is the line of the first): in
/// CoreDNS's words for the plugins CoreDNS refuses twice (`plugin/cache: this plugin can only
/// be used once per Server Block`); for the others, which CoreDNS accepts twice and then
/// silently uses one of (`health`, `reload`, ...), clusterdns refuses too, and says so.
fn once(plugin: Plugin, line: &Line, first: usize) -> Error {
    let name = line.name();
    if coredns_refuses_twice(plugin) {
        invalid(
            &line.name,
            &format!("plugin/{name}"),
            format!("this plugin can only be used once per Server Block (first at line {first})"),
        )
    } else {
        invalid(
            &line.name,
            name,
            format!(
                "may be used only once per server block (first at line {first}; CoreDNS would \
                 silently keep only one of them)"
            ),
        )
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
