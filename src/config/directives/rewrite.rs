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
//! query's EDNS0 options. Error messages are CoreDNS's.

mod cname;
mod edns0;

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
        "name" => name_rule(rest)?,
        "class" | "type" => {
            let [from, to] = rest else {
                return Err(format!("{rule_type} rules must have exactly two arguments").into());
            };
            let (from_upper, to_upper) = (from.to_uppercase(), to.to_uppercase());
            if rule_type == "class" {
                let number = super::template::class_number;
                let from =
                    number(&from_upper).ok_or_else(|| format!("invalid class {from_upper:?}"))?;
                let to = number(&to_upper).ok_or_else(|| format!("invalid class {to_upper:?}"))?;
                RewriteAction::Class { from, to }
            } else {
                let number = super::template::type_number;
                let from =
                    number(&from_upper).ok_or_else(|| format!("invalid type {from_upper:?}"))?;
                let to = number(&to_upper).ok_or_else(|| format!("invalid type {to_upper:?}"))?;
                RewriteAction::Type { from, to }
            }
        }
        "ttl" => ttl_rule(rest)?,
        "rcode" => rcode_rule(rest)?,
        "edns0" => RewriteAction::Edns0(edns0::edns0_rule(rest)?),
        "cname" => cname::cname_rule(rest)?,
        _ => return Err(format!("invalid rule type {:?}", args[0]).into()),
    };
    Ok((stop, action))
}

fn regex(pattern: &str) -> Result<regex::Regex, String> {
    if pattern.len() > MAX_REGEX_LEN {
        return Err(format!(
            "regex pattern too long: {} > {MAX_REGEX_LEN}",
            pattern.len()
        ));
    }
    regex::Regex::new(pattern).map_err(|_| format!("invalid regex matching pattern: {pattern}"))
}

/// How many of `{0}` to `{100}` `text` uses.
fn groups_used(text: &str) -> usize {
    (0..=100)
        .filter(|i| text.contains(&format!("{{{i}}}")))
        .count()
}

/// A pattern whose replacement does not use more groups than it has.
fn pattern_for(from: &str, to: &str) -> Result<regex::Regex, String> {
    let pattern = regex(from)?;
    if groups_used(to) > pattern.captures_len() - 1 {
        return Err(format!(
            "the rewrite regex pattern ({to}) uses more subexpressions than its corresponding \
             matching regex pattern ({from})"
        ));
    }
    Ok(pattern)
}

/// CoreDNS's `newNameRule`.
fn name_rule(args: &[&str]) -> Result<RewriteAction, String> {
    if args.len() < 2 {
        return Err("too few arguments for a name rule".to_owned());
    }
    let (match_type, from, to) = if args.len() == 2 {
        ("exact".to_owned(), args[0], args[1])
    } else {
        (args[0].to_lowercase(), args[1], args[2])
    };
    let (from_name, to_name) = if match_type == "regex" {
        (from.to_owned(), to.to_owned())
    } else {
        (normalize(from), normalize(to))
    };
    let (auto, answers) = if args.len() > 3 {
        answer_rules(&match_type, &args[3..])?
    } else {
        (false, Vec::new())
    };
    let (matcher, replacement, auto) = match match_type.as_str() {
        "exact" => (NameMatcher::Exact(from_name), to_name, true),
        "prefix" => (NameMatcher::Prefix(from_name), to_name, auto),
        "suffix" => (NameMatcher::Suffix(from_name), to_name, auto),
        "substring" => (NameMatcher::Substring(from_name), to_name, auto),
        "regex" => {
            let pattern = pattern_for(&from_name, &to_name)?;
            (NameMatcher::Regex(pattern), normalize(to), auto)
        }
        other => {
            return Err(format!(
                "name rule supports only exact, prefix, suffix, substring, and regex name \
                 matching, received: {other}"
            ));
        }
    };
    Ok(RewriteAction::Name {
        matcher,
        replacement,
        auto,
        answers,
    })
}

/// CoreDNS's `parseAnswerRules`.
fn answer_rules(name: &str, args: &[&str]) -> Result<(bool, Vec<AnswerRewrite>), String> {
    if args.len() < 2 {
        return Err(format!("invalid arguments for {name} rule"));
    }
    let mut auto = false;
    let mut rules = Vec::new();
    let mut name_rules = 0;
    let mut at = 0;
    let mut last = "";
    while at < args.len() {
        if last.is_empty() && args[at] != "answer" {
            return Err(format!(
                "exceeded the number of arguments for a non-answer rule argument for {name} rule"
            ));
        }
        if args[at] == "answer" {
            at += 1;
        }
        let Some(kind) = args.get(at) else {
            return Err(format!("type missing for answer rule for {name} rule"));
        };
        last = kind;
        at += 1;
        match *kind {
            "auto" => auto = true,
            "name" | "value" => {
                let (Some(from), Some(to)) = (args.get(at), args.get(at + 1)) else {
                    return Err(format!(
                        "{kind} answer rule for {name} rule: 2 arguments required"
                    ));
                };
                let pattern = pattern_for(from, to)
                    .map_err(|error| format!("{kind} answer rule for {name} rule: {error}"))?;
                let replacement = normalize(to);
                rules.push(if *kind == "name" {
                    name_rules += 1;
                    AnswerRewrite::Name {
                        pattern,
                        replacement,
                    }
                } else {
                    AnswerRewrite::Value {
                        pattern,
                        replacement,
                    }
                });
                at += 2;
            }
            other => {
                return Err(format!(
                    "invalid type {other:?} for answer rule for {name} rule"
                ));
            }
        }
    }
    if auto && name_rules > 0 {
        return Err(
            "auto name answer rule cannot be combined with explicit name anwer rules".to_owned(),
        );
    }
    Ok((auto, rules))
}

/// A name matcher of a `ttl` or `rcode` rule (`what` names the rule in messages).
fn matcher(match_type: &str, text: &str, what: &str) -> Result<NameMatcher, String> {
    Ok(match match_type.to_lowercase().as_str() {
        "exact" => NameMatcher::Exact(normalize(text)),
        "prefix" => NameMatcher::Prefix(normalize(text)),
        "suffix" => NameMatcher::Suffix(normalize(text)),
        "substring" => NameMatcher::Substring(normalize(text)),
        "regex" => {
            if text.len() > MAX_REGEX_LEN {
                return Err(format!(
                    "regex pattern too long in a {what} rule: {} > {MAX_REGEX_LEN}",
                    text.len()
                ));
            }
            NameMatcher::Regex(
                regex::Regex::new(text)
                    .map_err(|_| format!("invalid regex pattern in a {what} rule: {text}"))?,
            )
        }
        _ => {
            return Err(format!(
                "{what} rule supports only exact, prefix, suffix, substring, and regex name \
                 matching"
            ));
        }
    })
}

/// CoreDNS's `isValidTTL`: `N`, `MIN-MAX`, `-MAX` or `MIN-`.
fn ttl_range(text: &str) -> Option<(u32, u32)> {
    let parse = |s: &str| s.parse::<u32>().ok();
    match text.split('-').collect::<Vec<_>>().as_slice() {
        [one] => parse(one).map(|n| (n, n)),
        ["", ""] => None,
        [min, max] => {
            let min = if min.is_empty() { 0 } else { parse(min)? };
            let max = if max.is_empty() {
                2_147_483_647
            } else {
                parse(max)?
            };
            (min <= max).then_some((min, max))
        }
        _ => None,
    }
}

/// CoreDNS's `newTTLRule`.
fn ttl_rule(args: &[&str]) -> Result<RewriteAction, String> {
    if args.len() < 2 {
        return Err(format!("too few ({}) arguments for a ttl rule", args.len()));
    }
    let text = match args.len() {
        2 => args[1],
        3 => args[2],
        _ => "",
    };
    let (min, max) =
        ttl_range(text).ok_or_else(|| format!("invalid TTL '{text}' for a ttl rule"))?;
    let matcher = match args.len() {
        2 => NameMatcher::Exact(normalize(args[0])),
        _ => matcher(args[0], args[1], "ttl")?,
    };
    Ok(RewriteAction::Ttl { matcher, min, max })
}

/// An rcode by number (0 to 23) or name.
fn rcode_value(text: &str) -> Option<u16> {
    match text.parse::<u32>() {
        Ok(n) if n <= 23 => Some(n as u16),
        _ => super::template::rcode_number(&text.to_uppercase()),
    }
}

/// CoreDNS's `newRCodeRule`.
fn rcode_rule(args: &[&str]) -> Result<RewriteAction, String> {
    if args.len() < 3 {
        return Err(format!(
            "too few ({}) arguments for a rcode rule",
            args.len()
        ));
    }
    let (old, new) = match args.len() {
        3 => (args[1], args[2]),
        4 => (args[2], args[3]),
        _ => ("", ""),
    };
    let from = rcode_value(old)
        .ok_or_else(|| format!("invalid matching RCODE '{old}' for a rcode rule"))?;
    let to = rcode_value(new)
        .ok_or_else(|| format!("invalid replacement RCODE '{new}' for a rcode rule"))?;
    let matcher = match args.len() {
        3 => NameMatcher::Exact(normalize(args[0])),
        _ => matcher(args[0], args[1], "rcode")?,
    };
    Ok(RewriteAction::Rcode { matcher, from, to })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn name_rule_of(s: &crate::config::ServerBlock, index: usize) -> (String, String, bool, usize) {
        match &s.rewrite[index].action {
            RewriteAction::Name {
                matcher,
                replacement,
                auto,
                answers,
            } => {
                let m = match matcher {
                    NameMatcher::Exact(x) => format!("exact {x}"),
                    NameMatcher::Prefix(x) => format!("prefix {x}"),
                    NameMatcher::Suffix(x) => format!("suffix {x}"),
                    NameMatcher::Substring(x) => format!("substring {x}"),
                    NameMatcher::Regex(x) => format!("regex {}", x.as_str()),
                };
                (m, replacement.clone(), *auto, answers.len())
            }
            other => panic!("not a name rule: {other:?}"),
        }
    }

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            (
                "exact by default",
                " rewrite name old.example.com new.default.svc.cluster.local",
                |s| {
                    s.rewrite[0].stop
                        && name_rule_of(s, 0)
                            == (
                                "exact old.example.com.".into(),
                                "new.default.svc.cluster.local.".into(),
                                true,
                                0,
                            )
                },
            ),
            ("prefix", " rewrite name prefix foo bar", |s| {
                name_rule_of(s, 0) == ("prefix foo.".into(), "bar.".into(), false, 0)
            }),
            (
                "suffix auto",
                " rewrite name suffix .svc.example.org .svc.cluster.local answer auto",
                |s| {
                    name_rule_of(s, 0)
                        == (
                            "suffix .svc.example.org.".into(),
                            ".svc.cluster.local.".into(),
                            true,
                            0,
                        )
                },
            ),
            (
                "substring",
                " rewrite continue name substring Service svc",
                |s| {
                    !s.rewrite[0].stop
                        && name_rule_of(s, 0)
                            == ("substring service.".into(), "svc.".into(), false, 0)
                },
            ),
            (
                "regex with answers",
                " rewrite stop {\n  name regex (.*)-(us-west-1)\\.example\\.org {1}.service.{2}.consul\n  answer name (.*)\\.service\\.(us-west-1)\\.consul {1}-{2}.example.org\n  answer value (.*)\\.service\\.consul\\. {1}.example.org.\n }",
                |s| {
                    name_rule_of(s, 0)
                        == (
                            "regex (.*)-(us-west-1)\\.example\\.org".into(),
                            "{1}.service.{2}.consul.".into(),
                            false,
                            2,
                        )
                },
            ),
            ("type", " rewrite type any hinfo", |s| {
                s.rewrite[0].action == RewriteAction::Type { from: 255, to: 13 }
            }),
            ("class", " rewrite class CH IN", |s| {
                s.rewrite[0].action == RewriteAction::Class { from: 3, to: 1 }
            }),
            ("ttl exact", " rewrite ttl example.com 15", |s| {
                s.rewrite[0].action
                    == RewriteAction::Ttl {
                        matcher: NameMatcher::Exact("example.com.".into()),
                        min: 15,
                        max: 15,
                    }
            }),
            (
                "ttl range",
                " rewrite continue {\n  ttl regex (.*)\\.coredns\\.rocks 30-\n }",
                |s| {
                    matches!(
                        &s.rewrite[0].action,
                        RewriteAction::Ttl {
                            min: 30,
                            max: 2_147_483_647,
                            ..
                        }
                    )
                },
            ),
            ("ttl cap", " rewrite ttl suffix example.com -30", |s| {
                matches!(
                    &s.rewrite[0].action,
                    RewriteAction::Ttl {
                        min: 0,
                        max: 30,
                        ..
                    }
                )
            }),
            (
                "rcode",
                " rewrite rcode regex (.*)\\.coredns\\.rocks SERVFAIL 0",
                |s| {
                    matches!(
                        &s.rewrite[0].action,
                        RewriteAction::Rcode { from: 2, to: 0, .. }
                    )
                },
            ),
            (
                "several",
                " rewrite name a.org b.org\n rewrite continue type AAAA A",
                |s| s.rewrite.len() == 2 && !s.rewrite[1].stop && s.rewrite[1].line == 3,
            ),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            (
                "nothing",
                " rewrite",
                2,
                "Invalid",
                "rewrite: no rule type specified for rewrite",
            ),
            (
                "stop alone",
                " rewrite stop",
                2,
                "Invalid",
                "stop rule must begin with a rule type",
            ),
            (
                "rule type",
                " rewrite nmae a b",
                2,
                "Invalid",
                "invalid rule type \"nmae\"",
            ),
            (
                "answer first",
                " rewrite answer auto",
                2,
                "Invalid",
                "response rewrites must begin with a name rule",
            ),
            (
                "name one",
                " rewrite name a",
                2,
                "Invalid",
                "too few arguments for a name rule",
            ),
            (
                "match type",
                " rewrite name fuzzy a b",
                2,
                "Invalid",
                "name rule supports only exact, prefix, suffix, substring, and regex name matching, received: fuzzy",
            ),
            (
                "regex",
                " rewrite name regex ([a b",
                2,
                "Invalid",
                "invalid regex matching pattern: ([a",
            ),
            (
                "groups",
                " rewrite name regex (a).b {1}.{2}.c",
                2,
                "Invalid",
                "uses more subexpressions than its corresponding matching regex pattern",
            ),
            (
                "answer junk",
                " rewrite name prefix a b junk more",
                2,
                "Invalid",
                "exceeded the number of arguments for a non-answer rule argument for prefix rule",
            ),
            (
                "answer short",
                " rewrite name prefix a b answer",
                2,
                "Invalid",
                "invalid arguments for prefix rule",
            ),
            (
                "answer name short",
                " rewrite name prefix a b answer name x",
                2,
                "Invalid",
                "name answer rule for prefix rule: 2 arguments required",
            ),
            (
                "answer kind",
                " rewrite name prefix a b answer what",
                2,
                "Invalid",
                "invalid type \"what\" for answer rule for prefix rule",
            ),
            (
                "auto and name",
                " rewrite name prefix a b answer auto answer name x y",
                2,
                "Invalid",
                "auto name answer rule cannot be combined with explicit name anwer rules",
            ),
            (
                "type count",
                " rewrite type A",
                2,
                "Invalid",
                "type rules must have exactly two arguments",
            ),
            (
                "type name",
                " rewrite type A AAA",
                2,
                "Invalid",
                "invalid type \"AAA\"",
            ),
            (
                "class name",
                " rewrite class XX IN",
                2,
                "Invalid",
                "invalid class \"XX\"",
            ),
            (
                "ttl few",
                " rewrite ttl a",
                2,
                "Invalid",
                "too few (1) arguments for a ttl rule",
            ),
            (
                "ttl value",
                " rewrite ttl a b",
                2,
                "Invalid",
                "invalid TTL 'b' for a ttl rule",
            ),
            (
                "ttl dash",
                " rewrite ttl a -",
                2,
                "Invalid",
                "invalid TTL '-' for a ttl rule",
            ),
            (
                "ttl reversed",
                " rewrite ttl a 30-10",
                2,
                "Invalid",
                "invalid TTL '30-10'",
            ),
            (
                "ttl match",
                " rewrite ttl fuzzy a 5",
                2,
                "Invalid",
                "ttl rule supports only exact, prefix, suffix, substring, and regex name matching",
            ),
            (
                "rcode value",
                " rewrite rcode a.org NOPE NOERROR",
                2,
                "Invalid",
                "invalid matching RCODE 'NOPE' for a rcode rule",
            ),
            (
                "rcode replacement",
                " rewrite rcode a.org 2 99",
                2,
                "Invalid",
                "invalid replacement RCODE '99' for a rcode rule",
            ),
            (
                "edns0 {server_ip}",
                " rewrite edns0 local set 0xffee {server_ip}",
                2,
                "UnsupportedProperty",
                "property 'edns0' of rewrite is not supported",
            ),
        ];
        check_invalid(cases);
    }
}
