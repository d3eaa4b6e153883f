//! `rewrite [continue|stop] FIELD [TYPE] [FROM TO | TTL] [OPTIONS]`, or the same in a block
//! (`rewrite [continue|stop] { ... }`, every token of the block taken in order, as CoreDNS
//! reads it).
//!
//! As CoreDNS's *rewrite*: fields `name` (match `exact` — the default —, `prefix`, `suffix`,
//! `substring` or `regex`, with `answer auto`, `answer name FROM TO` and `answer value FROM
//! TO`), `type`, `class`, `ttl` (`SECONDS` or `MIN-MAX`, either side open) and `rcode`. Names
//! are lower-cased and, except regular expressions, fully qualified, as CoreDNS normalizes
//! them (so `prefix foo bar` rewrites `foo.example.org` to `bar.example.org`, not `foobar`).
//! Each `rewrite` line is one rule; rules are tried in file order and a rule that matches
//! ends the list (`stop`, the default) or lets the next ones apply (`continue`). `cname`
//! rules ([`cname`]) rewrite CNAME targets in the reply; `edns0` rules ([`edns0`]) change the
//! query's EDNS0 options. The `name` rule and its `answer` rules are in [`name`], `ttl` and
//! `rcode` in [`reply`]. The rule's types are in `rule.rs`, why a rule is not taken in
//! `refusal.rs`; this file reads a line and dispatches on its field. Error messages are
//! CoreDNS's.

mod cname;
mod edns0;
mod name;
mod refusal;
mod reply;
mod rule;

pub use self::edns0::{Edns0Action, Edns0Data, Edns0Option, Edns0Rule};
use self::refusal::Refusal;
pub use self::rule::{AnswerRewrite, NameMatcher, RewriteAction, RewriteRule};
use super::{Context, invalid, unsupported_property};
use crate::config::error::Error;
use crate::config::lexer::Token;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "rewrite";

/// Parses one `rewrite` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<RewriteRule, Error> {
    let mut tokens: Vec<&Token> = line.args.iter().collect();
    if tokens.len() < 2 {
        // The rule in a block: every token of it, in order.
        for option in line.options() {
            tokens.push(&option.name);
            tokens.extend(option.args.iter());
            if let Some(nested) = &option.block
                && let Some(first) = nested.lines.first()
            {
                return Err(invalid(
                    &first.name,
                    DIRECTIVE,
                    "a rule's block holds tokens, not blocks",
                ));
            }
        }
    }
    let args: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
    let error = |message: String| invalid(&line.name, DIRECTIVE, message);
    let action = rule(&args).map_err(|message| match message {
        Refusal::Invalid(message) => error(message),
        Refusal::Unsupported { field, reason } => unsupported_property(
            DIRECTIVE,
            &Line {
                name: Token {
                    text: field.to_owned(),
                    ..line.name.clone()
                },
                args: Vec::new(),
                block: None,
            },
            reason,
        ),
    })?;
    Ok(RewriteRule {
        stop: action.0,
        action: action.1,
        line: line.name.line,
    })
}

/// CoreDNS's `newRule`.
fn rule(args: &[&str]) -> Result<(bool, RewriteAction), Refusal> {
    let Some(first) = args.first() else {
        return Err("no rule type specified for rewrite".to_owned().into());
    };
    let first = first.to_lowercase();
    let (stop, rule_type, rest) = match first.as_str() {
        "continue" | "stop" => {
            let Some(rule_type) = args.get(1) else {
                return Err(format!("{first} rule must begin with a rule type").into());
            };
            (first == "stop", rule_type.to_lowercase(), &args[2..])
        }
        _ => (true, first.clone(), &args[1..]),
    };
    let action = match rule_type.as_str() {
        "answer" => {
            return Err("response rewrites must begin with a name rule"
                .to_owned()
                .into());
        }
        "name" => name::name_rule(rest)?,
        "class" | "type" => {
            let [from, to] = rest else {
                return Err(format!("{rule_type} rules must have exactly two arguments").into());
            };
            let (from_upper, to_upper) = (from.to_uppercase(), to.to_uppercase());
            if rule_type == "class" {
                let number = crate::codes::class::by_name;
                let from =
                    number(&from_upper).ok_or_else(|| format!("invalid class {from_upper:?}"))?;
                let to = number(&to_upper).ok_or_else(|| format!("invalid class {to_upper:?}"))?;
                RewriteAction::Class { from, to }
            } else {
                let number = crate::codes::rtype::by_name;
                let from =
                    number(&from_upper).ok_or_else(|| format!("invalid type {from_upper:?}"))?;
                let to = number(&to_upper).ok_or_else(|| format!("invalid type {to_upper:?}"))?;
                RewriteAction::Type { from, to }
            }
        }
        "ttl" => reply::ttl_rule(rest)?,
        "rcode" => reply::rcode_rule(rest)?,
        "edns0" => RewriteAction::Edns0(edns0::edns0_rule(rest)?),
        "cname" => cname::cname_rule(rest)?,
        _ => return Err(format!("invalid rule type {:?}", args[0]).into()),
    };
    Ok((stop, action))
}

#[cfg(test)]
mod tests;
