//! `bind ADDRESS|INTERFACE ... [{ except ADDRESS|INTERFACE ... }]`
//!
//! As CoreDNS's *bind*: each argument is an IP address or the name of a network interface
//! (all of its addresses); `except` removes addresses again. Several `bind` lines in one
//! server block add up. IPv6 link-local addresses of an interface are skipped: they cannot be
//! bound without a scope, which an `IpAddr` does not carry.

use std::net::IpAddr;

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
