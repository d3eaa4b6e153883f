//! `health [ADDRESS] { lameduck DURATION }`
//!
//! As CoreDNS's *health*: the address defaults to `:8080` (every IPv4 address); `lameduck`
//! (default 0) is how long DNS and `/health` keep answering after SIGTERM. Several server
//! blocks may name the same address (one endpoint) or different ones (one each); see
//! [`crate::config`] for the addresses that conflict. Once per server block (CoreDNS keeps the
//! last of several).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use super::{Context, duration, http_listen, no_block, one_argument, unknown_property};
use crate::config::error::Error;
use crate::config::syntax::Line;

/// The *health* directive: `health [ADDRESS] { lameduck DURATION }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthConfig {
    /// Where `/health` listens (default `:8080`, which is `0.0.0.0:8080`: every IPv4 address;
    /// CoreDNS's Go listener would also take IPv6 there).
    pub addr: SocketAddr,
    /// `lameduck`: how long to keep serving after SIGTERM.
    pub lameduck: Duration,
}

const DIRECTIVE: &str = "health";

/// `:8080`.
pub(crate) const DEFAULT_ADDR: SocketAddr =
    SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 8080);

/// Parses the `health` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<HealthConfig, Error> {
    let addr = http_listen(DIRECTIVE, line, DEFAULT_ADDR)?;
    let mut lameduck = Duration::ZERO;
    for option in line.options() {
        no_block(DIRECTIVE, option)?;
        match option.name() {
            "lameduck" => {
                lameduck = duration(DIRECTIVE, option, one_argument(DIRECTIVE, option)?)?;
            }
            _ => return Err(unknown_property(DIRECTIVE, option)),
        }
    }
    Ok(HealthConfig { addr, lameduck })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn health(server: &crate::config::ServerBlock) -> (String, Duration) {
        let health = server.plugins.health.as_ref().unwrap();
        (health.addr.to_string(), health.lameduck)
    }

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("default", " health", |s| {
                health(s) == ("0.0.0.0:8080".into(), Duration::ZERO)
            }),
            ("port", " health :8091", |s| health(s).0 == "0.0.0.0:8091"),
            ("ip", " health 10.0.0.1:8080", |s| {
                health(s).0 == "10.0.0.1:8080"
            }),
            ("localhost", " health localhost:8092", |s| {
                health(s).0 == "127.0.0.1:8092"
            }),
            ("v6", " health [::1]:8080", |s| health(s).0 == "[::1]:8080"),
            ("port zero", " health 127.0.0.1:0", |s| {
                health(s).0 == "127.0.0.1:0"
            }),
            ("lameduck", " health {\n  lameduck 5s\n }", |s| {
                health(s) == ("0.0.0.0:8080".into(), Duration::from_secs(5))
            }),
            (
                "address and lameduck",
                " health :8081 {\n  lameduck 1s\n  lameduck 2s\n }",
                |s| health(s) == ("0.0.0.0:8081".into(), Duration::from_secs(2)),
            ),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "twice",
                input: " health\n health :8081",
                line: 3,
                kind: "Invalid",
                message: "health: may be used only once per server block (first at line 2; CoreDNS would",
            },
            Invalid {
                name: "two addresses",
                input: " health :8080 :8081",
                line: 2,
                kind: "Invalid",
                message: "health: expected at most 1 argument, got 2",
            },
            Invalid {
                name: "no port",
                input: " health 10.0.0.1",
                line: 2,
                kind: "Invalid",
                message: "health: address '10.0.0.1' has no port",
            },
            Invalid {
                name: "bad port",
                input: " health :http",
                line: 2,
                kind: "Invalid",
                message: "port 'http' of ':http' is not a number",
            },
            Invalid {
                name: "empty port",
                input: " health localhost:",
                line: 2,
                kind: "Invalid",
                message: "port '' of 'localhost:'",
            },
            Invalid {
                name: "host name",
                input: " health example.org:8080",
                line: 2,
                kind: "Invalid",
                message: "host 'example.org' of 'example.org:8080' is not an IP address or localhost",
            },
            Invalid {
                name: "bare v6",
                input: " health ::1:8080",
                line: 2,
                kind: "Invalid",
                message: "must be in brackets",
            },
            Invalid {
                name: "bad v6",
                input: " health [fd00:::1]:8080",
                line: 2,
                kind: "Invalid",
                message: "'fd00:::1' in '[fd00:::1]:8080' is not an IPv6 address",
            },
            Invalid {
                name: "lameduck missing",
                input: " health {\n  lameduck\n }",
                line: 3,
                kind: "Invalid",
                message: "lameduck: expected exactly 1 argument, got 0",
            },
            Invalid {
                name: "lameduck unit",
                input: " health {\n  lameduck 5\n }",
                line: 3,
                kind: "Invalid",
                message: "lameduck: missing unit in duration '5'",
            },
            Invalid {
                name: "unknown",
                input: " health {\n  path /healthz\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'path' in health",
            },
        ];
        check_invalid(cases);
    }
}
