//! `any`
//!
//! As CoreDNS's *any*: an ANY query is answered with one HINFO record, `"ANY obsoleted" "See
//! RFC 8482"` (RFC 8482 §4.2), TTL 8482. No arguments, no options. Once per server block.

use super::{Context, arguments, unknown_property};
use crate::config::error::Error;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "any";

/// The *any* directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnyConfig {}

/// Parses the `any` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<AnyConfig, Error> {
    arguments(DIRECTIVE, line, 0, Some(0))?;
    if let Some(option) = line.options().first() {
        return Err(unknown_property(DIRECTIVE, option));
    }
    Ok(AnyConfig {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[("plain", " any", |s| s.plugins.any == Some(AnyConfig {}))];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "argument",
                input: " any HINFO",
                line: 2,
                kind: "Invalid",
                message: "any: expected exactly 0 arguments, got 1",
            },
            Invalid {
                name: "option",
                input: " any {\n  ttl 5\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'ttl' in any",
            },
            Invalid {
                name: "twice",
                input: " any\n any",
                line: 3,
                kind: "Invalid",
                message: "any: may be used only once per server block (first at line 2;",
            },
        ];
        check_invalid(cases);
    }
}
