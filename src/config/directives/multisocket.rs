//! `multisocket [NUM_SOCKETS]`
//!
//! As CoreDNS's *multisocket*: how many UDP sockets (`SO_REUSEPORT`), each with a worker of its
//! own, listen on the block's address and port; 1 to 1024. Without NUM_SOCKETS, and without
//! the directive at all, one per CPU the process may use (CoreDNS: GOMAXPROCS with the
//! directive, one socket without it). The first block of an address decides, as in CoreDNS.
//! Once per server block.

use std::num::NonZeroUsize;

use super::{Context, arguments, invalid, unknown_property};
use crate::config::error::Error;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "multisocket";

/// CoreDNS's `maxNumSockets`.
const MAX_SOCKETS: usize = 1024;

/// The *multisocket* directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultisocketConfig {
    /// NUM_SOCKETS; `None`: one per CPU the process may use.
    pub sockets: Option<NonZeroUsize>,
}

/// Parses the `multisocket` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<MultisocketConfig, Error> {
    let sockets = match arguments(DIRECTIVE, line, 0, Some(1))?.first() {
        None => None,
        Some(arg) => match arg.text.parse::<i64>() {
            Ok(n) if n < 1 => {
                return Err(invalid(
                    arg,
                    DIRECTIVE,
                    format!("num sockets can not be zero or negative: {n}"),
                ));
            }
            Ok(n) if n > MAX_SOCKETS as i64 => {
                return Err(invalid(
                    arg,
                    DIRECTIVE,
                    format!("num sockets exceeds maximum ({MAX_SOCKETS}): {n}"),
                ));
            }
            Ok(n) => usize::try_from(n).ok().and_then(NonZeroUsize::new),
            Err(_) => {
                return Err(invalid(
                    arg,
                    DIRECTIVE,
                    format!(
                        "invalid num sockets: '{}' is not an integer from 1 to {MAX_SOCKETS}",
                        arg.text
                    ),
                ));
            }
        },
    };
    if let Some(option) = line.options().first() {
        return Err(unknown_property(DIRECTIVE, option));
    }
    Ok(MultisocketConfig { sockets })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn sockets(n: usize) -> Option<NonZeroUsize> {
        NonZeroUsize::new(n)
    }

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("default", " multisocket", |s| {
                s.plugins.multisocket == Some(MultisocketConfig { sockets: None })
            }),
            ("five", " multisocket 5", |s| {
                s.plugins
                    .multisocket
                    .as_ref()
                    .is_some_and(|m| m.sockets == sockets(5))
            }),
            ("one", " multisocket 1", |s| {
                s.plugins
                    .multisocket
                    .as_ref()
                    .is_some_and(|m| m.sockets == sockets(1))
            }),
            ("the most", " multisocket 1024", |s| {
                s.plugins
                    .multisocket
                    .as_ref()
                    .is_some_and(|m| m.sockets == sockets(1024))
            }),
            ("absent", " errors", |s| s.plugins.multisocket.is_none()),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases = &[
            Invalid {
                name: "zero",
                input: " multisocket 0",
                line: 2,
                kind: "Invalid",
                message: "multisocket: num sockets can not be zero or negative: 0",
            },
            Invalid {
                name: "negative",
                input: " multisocket -2",
                line: 2,
                kind: "Invalid",
                message: "num sockets can not be zero or negative: -2",
            },
            Invalid {
                name: "too many",
                input: " multisocket 1025",
                line: 2,
                kind: "Invalid",
                message: "multisocket: num sockets exceeds maximum (1024): 1025",
            },
            Invalid {
                name: "not a number",
                input: " multisocket many",
                line: 2,
                kind: "Invalid",
                message: "invalid num sockets: 'many' is not an integer from 1 to 1024",
            },
            Invalid {
                name: "two",
                input: " multisocket 2 3",
                line: 2,
                kind: "Invalid",
                message: "multisocket: expected at most 1 argument, got 2",
            },
            Invalid {
                name: "option",
                input: " multisocket {\n  sockets 2\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'sockets' in multisocket",
            },
            Invalid {
                name: "twice",
                input: " multisocket\n multisocket 2",
                line: 3,
                kind: "Invalid",
                message: "multisocket: may be used only once per server block (first at line 2;",
            },
        ];
        check_invalid(cases);
    }
}
