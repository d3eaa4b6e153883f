//! Directives: which names are CoreDNS plugins, and the typed parsers of those clusterdns
//! implements.
//!
//! Adding a directive is one arm in [`apply`] and one module with a `parse` function returning
//! its typed struct (see [`bind`], [`kubernetes`], [`transfer`]). Every other CoreDNS plugin is
//! accepted by the syntax and then refused with [`Error::Unsupported`].

pub(crate) mod bind;
pub(crate) mod kubernetes;
pub(crate) mod transfer;

use std::collections::HashSet;
use std::net::IpAddr;

use hickory_proto::rr::Name;

use super::env::Environment;
use super::error::Error;
use super::lexer::Token;
use super::syntax::Line;
use super::zone;
use super::{KubernetesConfig, TransferConfig};

/// Every CoreDNS plugin directive, in `plugin.cfg` order, which is the order plugins handle a
/// query in (whatever the order in the Corefile). Taken from recent CoreDNS `plugin.cfg` files
/// (with `multisocket`, `view` and `nomad`; `quic`, `grpc_server`, `https`, `https3` and
/// `proxyproto` configure server transports). One uncertainty: `acl` is placed where CoreDNS
/// 1.11's generated `zdirectives.go` has it (before `any`); a newer `plugin.cfg` seen in
/// documentation lists it after `rewrite`. Only the set matters to the parser; check the
/// order again before relying on it for the query path.
pub const COREDNS_DIRECTIVES: &[&str] = &[
    "root",
    "metadata",
    "geoip",
    "cancel",
    "tls",
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
    "prometheus",
    "errors",
    "log",
    "dnstap",
    "local",
    "dns64",
    "acl",
    "any",
    "chaos",
    "loadbalance",
    "tsig",
    "cache",
    "rewrite",
    "header",
    "dnssec",
    "autopath",
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
    /// The first CoreDNS directive that is not implemented yet.
    pub(crate) unsupported: Option<Error>,
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
            if let Some(first) = &out.kubernetes {
                return Err(invalid(
                    &line.name,
                    "kubernetes",
                    format!(
                        "may be used only once per server block (first at line {})",
                        first.line
                    ),
                ));
            }
            out.kubernetes = Some(kubernetes::parse(line, context)?);
        }
        "transfer" => out.transfer.push(transfer::parse(line, context)?),
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
        assert_eq!(COREDNS_DIRECTIVES.len(), 59);
        for (i, name) in COREDNS_DIRECTIVES.iter().enumerate() {
            assert!(
                !COREDNS_DIRECTIVES[..i].contains(name),
                "{name} listed twice"
            );
        }
        let position = |name: &str| COREDNS_DIRECTIVES.iter().position(|d| *d == name);
        // The query path of kubeadm's Corefile, in CoreDNS's order.
        let order = [
            "prometheus",
            "errors",
            "loadbalance",
            "cache",
            "transfer",
            "kubernetes",
            "loop",
            "forward",
        ];
        let positions: Vec<Option<usize>> = order.iter().map(|name| position(name)).collect();
        assert!(positions.iter().all(Option::is_some));
        assert!(positions.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(is_known("errors") && !is_known("proxy") && !is_known("Kubernetes"));
    }
}
