//! `loop`
//!
//! As CoreDNS's *loop*: no arguments, no options, once per server block. (The probe's name is
//! under the block's first zone; the server knows that from the block.)

use super::{Context, arguments, no_block};
use crate::config::error::Error;
use crate::config::syntax::Line;

/// The *loop* directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopConfig {}

const DIRECTIVE: &str = "loop";

/// Parses the `loop` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<LoopConfig, Error> {
    arguments(DIRECTIVE, line, 0, Some(0))?;
    no_block(DIRECTIVE, line)?;
    Ok(LoopConfig {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[("loop", " loop", |s| {
            s.plugins.loop_detect == Some(LoopConfig {})
        })];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "argument",
                input: " loop 1",
                line: 2,
                kind: "Invalid",
                message: "loop: expected exactly 0 arguments, got 1",
            },
            Invalid {
                name: "block",
                input: " loop {\n }",
                line: 2,
                kind: "Invalid",
                message: "loop: takes no '{ ... }' block",
            },
            Invalid {
                name: "twice",
                input: " loop\n loop",
                line: 3,
                kind: "Invalid",
                message: "plugin/loop: this plugin can only be used once per Server Block (first at line 2)",
            },
        ];
        check_invalid(cases);
    }
}
