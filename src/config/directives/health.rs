//! `health [ADDRESS] { lameduck DURATION }`
//!
//! As CoreDNS's *health*: the address defaults to `:8080` (every IPv4 address); `lameduck`
//! (default 0) is how long DNS and `/health` keep answering after SIGTERM. Several server
//! blocks may name the same address (one endpoint) or different ones (one each); see
//! [`crate::config`] for the addresses that conflict. Once per server block (CoreDNS keeps the
//! last of several).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use super::{Context, arguments, duration, http_address, no_block, one_argument, unknown_property};
use crate::config::HealthConfig;
use crate::config::error::Error;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "health";

/// `:8080`.
pub(crate) const DEFAULT_ADDR: SocketAddr =
    SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 8080);

/// Parses the `health` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<HealthConfig, Error> {
    let addr = match arguments(DIRECTIVE, line, 0, Some(1))?.first() {
        Some(arg) => http_address(DIRECTIVE, line, arg)?,
        None => DEFAULT_ADDR,
    };
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
    Ok(HealthConfig {
        addr,
        lameduck,
        line: line.name.line,
    })
}
