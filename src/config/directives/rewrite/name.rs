//! The `name` rule: its matcher and replacement, and the `answer name` / `answer value`
//! rules that rewrite the reply back (CoreDNS's `newNameRule` and `parseAnswerRules`).

use super::rule::{AnswerRewrite, MAX_REGEX_LEN, NameMatcher, RewriteAction, normalize};

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
pub(super) fn name_rule(args: &[&str]) -> Result<RewriteAction, String> {
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
