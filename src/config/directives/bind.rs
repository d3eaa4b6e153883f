//! `bind ADDRESS|INTERFACE ... [{ except ADDRESS|INTERFACE ... }]`
//!
//! As CoreDNS's *bind*: each argument is an IP address or the name of a network interface
//! (all of its addresses); `except` removes addresses again. Several `bind` lines in one
//! server block add up. IPv6 link-local addresses of an interface are skipped: they cannot be
//! bound without a scope, which an `IpAddr` does not carry.

/// Its configuration type, as the plugin registry names it: one address.
pub use std::net::IpAddr;

use super::{Context, arguments, invalid, no_block, unknown_property};
use crate::config::error::Error;
use crate::config::lexer::Token;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "bind";

/// The addresses one `bind` line stands for, duplicates removed.
pub(crate) fn parse(line: &Line, context: &Context<'_>) -> Result<Vec<IpAddr>, Error> {
    let addresses = resolve(line, arguments(DIRECTIVE, line, 1, None)?, context)?;
    let mut except = Vec::new();
    for option in line.options() {
        match option.name() {
            "except" => {
                no_block(DIRECTIVE, option)?;
                except.extend(resolve(
                    option,
                    arguments(DIRECTIVE, option, 1, None)?,
                    context,
                )?);
            }
            _ => return Err(unknown_property(DIRECTIVE, option)),
        }
    }
    let mut out: Vec<IpAddr> = Vec::new();
    for address in addresses {
        if !except.contains(&address) && !out.contains(&address) {
            out.push(address);
        }
    }
    if out.is_empty() {
        return Err(invalid(
            &line.name,
            DIRECTIVE,
            "every address is excluded by 'except'",
        ));
    }
    Ok(out)
}

fn resolve(line: &Line, args: &[Token], context: &Context<'_>) -> Result<Vec<IpAddr>, Error> {
    let mut out = Vec::new();
    for arg in args {
        if let Ok(address) = arg.text.parse::<IpAddr>() {
            out.push(address);
            continue;
        }
        let found = context.env.interface_addresses(&arg.text).map_err(|e| {
            invalid(
                arg,
                DIRECTIVE,
                format!("cannot list the network interfaces: {e}"),
            )
        })?;
        let Some(addresses) = found else {
            return Err(invalid(
                arg,
                DIRECTIVE,
                format!(
                    "{}not a valid IP address or interface name: '{}'",
                    super::prefix(DIRECTIVE, line),
                    arg.text
                ),
            ));
        };
        out.extend(addresses.into_iter().filter(|address| match address {
            IpAddr::V6(v6) => !v6.is_unicast_link_local(),
            IpAddr::V4(_) => true,
        }));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::config::test_support::{Invalid, check_invalid_corefiles, ips, parse};

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
            assert_eq!(config.servers[0].plugins.bind, ips(want), "{name}");
        }
    }

    /// Errors of the *bind* directive, in whole Corefiles.
    #[test]
    fn errors() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "bind nothing",
                input: ". {\n bind\n}",
                line: 2,
                kind: "Invalid",
                message: "bind: expected at least 1 argument, got 0",
            },
            Invalid {
                name: "bind bad",
                input: ". {\n bind 127.0.0.1 nope0\n}",
                line: 2,
                kind: "Invalid",
                message: "bind: not a valid IP address or interface name: 'nope0'",
            },
            Invalid {
                name: "bind except bad",
                input: ". {\n bind eth0 {\n  except nope0\n }\n}",
                line: 3,
                kind: "Invalid",
                message: "bind: except: not a valid IP address",
            },
            Invalid {
                name: "bind except all",
                input: ". {\n bind lo {\n  except 127.0.0.1\n }\n}",
                line: 2,
                kind: "Invalid",
                message: "every address is excluded",
            },
            Invalid {
                name: "bind option",
                input: ". {\n bind lo {\n  only 127.0.0.1\n }\n}",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'only' in bind",
            },
            Invalid {
                name: "bind except empty",
                input: ". {\n bind lo {\n  except\n }\n}",
                line: 3,
                kind: "Invalid",
                message: "except: expected at least 1 argument",
            },
        ];
        check_invalid_corefiles(cases);
    }
}
