//! `ready [ADDRESS] { monitor until-ready|continuously }`
//!
//! As CoreDNS's *ready*: the address defaults to `:8181` (every IPv4 address). `monitor
//! until-ready` (the default) latches the first success; `monitor continuously` keeps checking.
//! Once per server block; several blocks may share an address (one endpoint reporting for all
//! of them).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::{
    Context, arguments, bad_value, http_address, no_block, one_argument, unknown_property,
};
use crate::config::ReadyConfig;
use crate::config::error::Error;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "ready";

/// `:8181`.
pub(crate) const DEFAULT_ADDR: SocketAddr =
    SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 8181);

/// Parses the `ready` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<ReadyConfig, Error> {
    let addr = match arguments(DIRECTIVE, line, 0, Some(1))?.first() {
        Some(arg) => http_address(DIRECTIVE, line, arg)?,
        None => DEFAULT_ADDR,
    };
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
    Ok(ReadyConfig {
        addr,
        continuously,
        line: line.name.line,
    })
}
