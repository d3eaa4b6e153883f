//! `loadbalance [round_robin]`
//!
//! As CoreDNS's *loadbalance* with its default policy: A, AAAA and MX records are shuffled in
//! every answer. The `weighted FILE` policy and the `prefer CIDR...` option are refused as not
//! supported. Once per server block (CoreDNS keeps the last of several).

use super::{Context, bad_value, unsupported_property};
use crate::config::LoadBalanceConfig;
use crate::config::error::Error;
use crate::config::syntax::Line;

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
    Ok(LoadBalanceConfig {
        line: line.name.line,
    })
}
