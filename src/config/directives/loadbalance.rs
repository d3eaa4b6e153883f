//! `loadbalance [round_robin]`
//!
//! As CoreDNS's *loadbalance* with its default policy: A, AAAA and MX records are shuffled in
//! every answer. The `weighted FILE` policy and the `prefer CIDR...` option are refused as not
//! supported. Once per server block (CoreDNS keeps the last of several).

use super::{Context, bad_value, unsupported_property};
use crate::config::error::Error;
use crate::config::syntax::Line;

/// The *loadbalance* directive: `loadbalance [round_robin]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadBalanceConfig {}

const DIRECTIVE: &str = "loadbalance";

/// Parses the `loadbalance` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<LoadBalanceConfig, Error> {
    match line.args.as_slice() {
        [] => {}
        [policy, rest @ ..] => match policy.text.as_str() {
            "round_robin" => {
                if let Some(extra) = rest.first() {
                    return Err(bad_value(
                        DIRECTIVE,
                        line,
                        extra,
                        &format!("unknown property '{}' for round_robin", extra.text),
                    ));
                }
            }
            "weighted" => {
                return Err(bad_value(
                    DIRECTIVE,
                    line,
                    policy,
                    "the 'weighted' policy is not supported (clusterdns shuffles with \
                     round_robin only)",
                ));
            }
            other => {
                return Err(bad_value(
                    DIRECTIVE,
                    line,
                    policy,
                    &format!("unknown policy: '{other}' (expected round_robin)"),
                ));
            }
        },
    }
    if let Some(option) = line.options().first() {
        return Err(match option.name() {
            "prefer" => unsupported_property(
                DIRECTIVE,
                option,
                "answers are shuffled, not ordered by preferred subnets",
            ),
            _ => super::unknown_property(DIRECTIVE, option),
        });
    }
    Ok(LoadBalanceConfig {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("default", " loadbalance", |s| {
                s.plugins.loadbalance == Some(LoadBalanceConfig {})
            }),
            ("round_robin", " loadbalance round_robin", |s| {
                s.plugins.loadbalance.is_some()
            }),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "weighted",
                input: " loadbalance weighted /etc/weights",
                line: 2,
                kind: "Invalid",
                message: "loadbalance: the 'weighted' policy is not supported",
            },
            Invalid {
                name: "unknown policy",
                input: " loadbalance random",
                line: 2,
                kind: "Invalid",
                message: "loadbalance: unknown policy: 'random'",
            },
            Invalid {
                name: "extra",
                input: " loadbalance round_robin x",
                line: 2,
                kind: "Invalid",
                message: "unknown property 'x' for round_robin",
            },
            Invalid {
                name: "prefer",
                input: " loadbalance {\n  prefer 10.0.0.0/8\n }",
                line: 3,
                kind: "UnsupportedProperty",
                message: "property 'prefer' of loadbalance is not supported",
            },
            Invalid {
                name: "unknown option",
                input: " loadbalance {\n  weights x\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'weights' in loadbalance",
            },
            Invalid {
                name: "twice",
                input: " loadbalance\n loadbalance",
                line: 3,
                kind: "Invalid",
                message: "loadbalance: may be used only once per server block (first at line 2;",
            },
        ];
        check_invalid(cases);
    }
}
