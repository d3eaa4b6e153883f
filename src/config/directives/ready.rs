//! `ready [ADDRESS] { monitor until-ready|continuously }`
//!
//! As CoreDNS's *ready*: the address defaults to `:8181` (every IPv4 address). `monitor
//! until-ready` (the default) latches the first success; `monitor continuously` keeps checking.
//! Once per server block; several blocks may share an address (one endpoint reporting for all
//! of them).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::{Context, bad_value, http_listen, no_block, one_argument, unknown_property};
use crate::config::error::Error;
use crate::config::syntax::Line;

/// The *ready* directive: `ready [ADDRESS] { monitor until-ready|continuously }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyConfig {
    /// Where `/ready` listens (default `:8181`, which is `0.0.0.0:8181`).
    pub addr: SocketAddr,
    /// `monitor continuously`: keep checking after the first success (default: latch).
    pub continuously: bool,
}

const DIRECTIVE: &str = "ready";

/// `:8181`.
pub(crate) const DEFAULT_ADDR: SocketAddr =
    SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 8181);

/// Parses the `ready` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<ReadyConfig, Error> {
    let addr = http_listen(DIRECTIVE, line, DEFAULT_ADDR)?;
    let mut continuously = false;
    for option in line.options() {
        no_block(DIRECTIVE, option)?;
        match option.name() {
            "monitor" => {
                let arg = one_argument(DIRECTIVE, option)?;
                continuously = match arg.text.as_str() {
                    "until-ready" => false,
                    "continuously" => true,
                    other => {
                        return Err(bad_value(
                            DIRECTIVE,
                            option,
                            arg,
                            &format!("'{other}' must be until-ready or continuously"),
                        ));
                    }
                };
            }
            _ => return Err(unknown_property(DIRECTIVE, option)),
        }
    }
    Ok(ReadyConfig { addr, continuously })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn ready(server: &crate::config::ServerBlock) -> (String, bool) {
        let ready = server.plugins.ready.as_ref().unwrap();
        (ready.addr.to_string(), ready.continuously)
    }

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("default", " ready", |s| {
                ready(s) == ("0.0.0.0:8181".into(), false)
            }),
            ("address", " ready localhost:1234", |s| {
                ready(s).0 == "127.0.0.1:1234"
            }),
            ("until-ready", " ready {\n  monitor until-ready\n }", |s| {
                !ready(s).1
            }),
            (
                "continuously",
                " ready localhost:1234 {\n  monitor continuously\n }",
                |s| ready(s) == ("127.0.0.1:1234".into(), true),
            ),
            (
                "last monitor wins",
                " ready {\n  monitor continuously\n  monitor until-ready\n }",
                |s| !ready(s).1,
            ),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "twice",
                input: " ready\n ready",
                line: 3,
                kind: "Invalid",
                message: "plugin/ready: this plugin can only be used once per Server Block",
            },
            Invalid {
                name: "two arguments",
                input: " ready localhost:1234 b",
                line: 2,
                kind: "Invalid",
                message: "expected at most 1 argument, got 2",
            },
            Invalid {
                name: "no port",
                input: " ready bla",
                line: 2,
                kind: "Invalid",
                message: "address 'bla' has no port",
            },
            Invalid {
                name: "monitor value",
                input: " ready localhost:1234 {\n  monitor 404\n }",
                line: 3,
                kind: "Invalid",
                message: "monitor: '404' must be until-ready or continuously",
            },
            Invalid {
                name: "monitor missing",
                input: " ready {\n  monitor\n }",
                line: 3,
                kind: "Invalid",
                message: "monitor: expected exactly 1 argument, got 0",
            },
            Invalid {
                name: "monitor extra",
                input: " ready {\n  monitor continuously extra\n }",
                line: 3,
                kind: "Invalid",
                message: "expected exactly 1 argument, got 2",
            },
            Invalid {
                name: "typo",
                input: " ready {\n  monitro continuously\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'monitro' in ready",
            },
        ];
        check_invalid(cases);
    }
}
