//! `bufsize [SIZE]`
//!
//! As CoreDNS's *bufsize*: the EDNS UDP payload size a client advertises is lowered to SIZE
//! (default 1232, the DNS Flag Day 2020 value; 512 to 4096) for the rest of the chain and the
//! upstream; a query without EDNS is unchanged. SIZE is also the most a UDP reply carries
//! (without *bufsize*, 1232). Once per server block.

use super::{Context, arguments, invalid, unknown_property};
use crate::config::error::Error;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "bufsize";

/// CoreDNS's default (`defaultBufSize`).
pub(crate) const DEFAULT_SIZE: u16 = 1232;

/// The *bufsize* directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufsizeConfig {
    /// The largest EDNS payload size passed on (512..=4096).
    pub size: u16,
}

/// Parses the `bufsize` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<BufsizeConfig, Error> {
    let size = match arguments(DIRECTIVE, line, 0, Some(1))?.first() {
        None => DEFAULT_SIZE,
        Some(arg) => match arg.text.parse::<u16>() {
            Ok(size) if (512..=4096).contains(&size) => size,
            _ => {
                return Err(invalid(
                    arg,
                    DIRECTIVE,
                    format!(
                        "'{}' is not a buffer size: SIZE must be an integer from 512 to 4096 \
                         (RFC 6891)",
                        arg.text
                    ),
                ));
            }
        },
    };
    if let Some(option) = line.options().first() {
        return Err(unknown_property(DIRECTIVE, option));
    }
    Ok(BufsizeConfig { size })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("default", " bufsize", |s| {
                s.plugins.bufsize == Some(BufsizeConfig { size: 1232 })
            }),
            ("openshift", " bufsize 1232", |s| {
                s.plugins.bufsize.as_ref().is_some_and(|b| b.size == 1232)
            }),
            ("smallest", " bufsize 512", |s| {
                s.plugins.bufsize.as_ref().is_some_and(|b| b.size == 512)
            }),
            ("largest", " bufsize 4096", |s| {
                s.plugins.bufsize.as_ref().is_some_and(|b| b.size == 4096)
            }),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "too small",
                input: " bufsize 511",
                line: 2,
                kind: "Invalid",
                message: "bufsize: '511' is not a buffer size: SIZE must be an integer from 512 to 4096",
            },
            Invalid {
                name: "too large",
                input: " bufsize 4097",
                line: 2,
                kind: "Invalid",
                message: "'4097'",
            },
            Invalid {
                name: "not a number",
                input: " bufsize big",
                line: 2,
                kind: "Invalid",
                message: "'big'",
            },
            Invalid {
                name: "two",
                input: " bufsize 512 1024",
                line: 2,
                kind: "Invalid",
                message: "bufsize: expected at most 1 argument, got 2",
            },
            Invalid {
                name: "option",
                input: " bufsize {\n  size 512\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'size' in bufsize",
            },
            Invalid {
                name: "twice",
                input: " bufsize\n bufsize 512",
                line: 3,
                kind: "Invalid",
                message: "bufsize: may be used only once per server block (first at line 2;",
            },
        ];
        check_invalid(cases);
    }
}
