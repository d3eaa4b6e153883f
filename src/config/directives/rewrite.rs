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
//! `rcode` in [`reply`]. Error messages are CoreDNS's.

mod cname;
mod edns0;
mod name;
mod reply;

pub use self::edns0::{Edns0Action, Edns0Data, Edns0Option, Edns0Rule};
use super::{Context, invalid, unsupported_property};
use crate::config::error::Error;
use crate::config::lexer::Token;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "rewrite";

/// The longest regular expression (CoreDNS's `maxRegexpLen`).
const MAX_REGEX_LEN: usize = 10_000;

/// One `rewrite` line.
#[derive(Debug, Clone)]
pub struct RewriteRule {
    /// `stop` (the default) or `continue`.
    pub stop: bool,
    /// What it does.
    pub action: RewriteAction,
    /// Line of the directive.
    pub line: usize,
}

/// What a rewrite rule changes.
#[derive(Debug, Clone)]
pub enum RewriteAction {
    /// `name`: the query name; `answer` options turn names in the reply back.
    Name {
        /// What names it takes.
        matcher: NameMatcher,
        /// What they become (for `regex`, with `{N}` for the groups).
        replacement: String,
        /// `answer auto` (always, for `exact`): the reply's names turned back.
        auto: bool,
        /// `answer name|value FROM TO`, in order.
        answers: Vec<AnswerRewrite>,
    },
    /// `type FROM TO`.
    Type {
        /// The type asked.
        from: u16,
        /// What is asked instead.
        to: u16,
    },
    /// `class FROM TO`.
    Class {
        /// The class asked.
        from: u16,
        /// What is asked instead.
        to: u16,
    },
    /// `ttl`: the reply's TTLs for the names matched, kept within `min..=max`.
    Ttl {
        /// What names it takes.
        matcher: NameMatcher,
        /// Lowest TTL.
        min: u32,
        /// Highest TTL.
        max: u32,
    },
    /// `rcode`: the reply's rcode `from` becomes `to`, for the names matched.
    Rcode {
        /// What names it takes.
        matcher: NameMatcher,
        /// The rcode replaced.
        from: u16,
        /// Its replacement.
        to: u16,
    },
    /// `cname`: the first CNAME in the reply whose target matches gets the new target, the
    /// records after it are dropped, and the new target is asked through the server (its
    /// answers follow). Applies to every query.
    Cname {
        /// What targets it takes (lower case, with the final dot).
        matcher: NameMatcher,
        /// What they become (for `regex`, with `{N}` for the groups).
        replacement: String,
    },
    /// `edns0`: an EDNS0 option of the query passed on.
    Edns0(Edns0Rule),
}

/// How a rule matches the query name (lower case, with its final dot).
#[derive(Debug, Clone)]
pub enum NameMatcher {
    /// The name is this.
    Exact(String),
    /// The name starts with this.
    Prefix(String),
    /// The name ends with this.
    Suffix(String),
    /// The name contains this.
    Substring(String),
    /// The name matches this.
    Regex(regex::Regex),
}

/// `answer name FROM TO` or `answer value FROM TO`.
#[derive(Debug, Clone)]
pub enum AnswerRewrite {
    /// The owner names of the reply's records.
    Name {
        /// What names it takes.
        pattern: regex::Regex,
        /// What they become (`{N}` for the groups).
        replacement: String,
    },
    /// The names in the records' data (CNAME, PTR, SRV and MX targets, NS, SOA's MNAME, ...).
    Value {
        /// What names it takes.
        pattern: regex::Regex,
        /// What they become.
        replacement: String,
    },
}

impl PartialEq for NameMatcher {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Exact(a), Self::Exact(b))
            | (Self::Prefix(a), Self::Prefix(b))
            | (Self::Suffix(a), Self::Suffix(b))
            | (Self::Substring(a), Self::Substring(b)) => a == b,
            (Self::Regex(a), Self::Regex(b)) => a.as_str() == b.as_str(),
            _ => false,
        }
    }
}

impl PartialEq for AnswerRewrite {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Self::Name {
                    pattern: a,
                    replacement: x,
                },
                Self::Name {
                    pattern: b,
                    replacement: y,
                },
            )
            | (
                Self::Value {
                    pattern: a,
                    replacement: x,
                },
                Self::Value {
                    pattern: b,
                    replacement: y,
                },
            ) => a.as_str() == b.as_str() && x == y,
            _ => false,
        }
    }
}

impl PartialEq for RewriteAction {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Self::Name {
                    matcher: a,
                    replacement: b,
                    auto: c,
                    answers: d,
                },
                Self::Name {
                    matcher: w,
                    replacement: x,
                    auto: y,
                    answers: z,
                },
            ) => a == w && b == x && c == y && d == z,
            (Self::Type { from: a, to: b }, Self::Type { from: x, to: y })
            | (Self::Class { from: a, to: b }, Self::Class { from: x, to: y }) => a == x && b == y,
            (
                Self::Ttl {
                    matcher: a,
                    min: b,
                    max: c,
                },
                Self::Ttl {
                    matcher: x,
                    min: y,
                    max: z,
                },
            ) => a == x && b == y && c == z,
            (
                Self::Rcode {
                    matcher: a,
                    from: b,
                    to: c,
                },
                Self::Rcode {
                    matcher: x,
                    from: y,
                    to: z,
                },
            ) => a == x && b == y && c == z,
            (
                Self::Cname {
                    matcher: a,
                    replacement: b,
                },
                Self::Cname {
                    matcher: x,
                    replacement: y,
                },
            ) => a == x && b == y,
            (Self::Edns0(a), Self::Edns0(b)) => a == b,
            _ => false,
        }
    }
}

impl PartialEq for RewriteRule {
    fn eq(&self, other: &Self) -> bool {
        self.stop == other.stop && self.action == other.action && self.line == other.line
    }
}

/// CoreDNS's `plugin.Name(s).Normalize()`: lower case, fully qualified.
pub(crate) fn normalize(text: &str) -> String {
    let mut name = text.to_lowercase();
    if !name.ends_with('.') {
        name.push('.');
    }
    name
}

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

/// Why a rule is not taken.
enum Refusal {
    /// CoreDNS refuses it too (its message).
    Invalid(String),
    /// CoreDNS takes it; clusterdns does not.
    Unsupported {
        /// The rule's field.
        field: &'static str,
        /// Why.
        reason: &'static str,
    },
}

impl From<String> for Refusal {
    fn from(message: String) -> Self {
        Self::Invalid(message)
    }
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
