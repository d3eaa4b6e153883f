//! `rewrite [continue|stop] cname [exact|prefix|suffix|substring|regex] FROM TO` (CoreDNS's
//! `newCNAMERule`): FROM and TO lower-cased, and for `exact` fully qualified; two arguments
//! are an `exact` rule. A regular expression's `{N}` in TO are its groups.

use super::rule::{MAX_REGEX_LEN, NameMatcher, RewriteAction, normalize};

/// Parses the arguments of a `cname` rule.
pub(super) fn cname_rule(args: &[&str]) -> Result<RewriteAction, String> {
    let (match_type, from, to) = match args {
        [from, to] => ("exact".to_owned(), from.to_lowercase(), to.to_lowercase()),
        [match_type, from, to] => (
            match_type.to_lowercase(),
            from.to_lowercase(),
            to.to_lowercase(),
        ),
        _ => {
            return Err(format!(
                "too few ({}) arguments for a cname rule",
                args.len()
            ));
        }
    };
    let (matcher, replacement) = match match_type.as_str() {
        "exact" => (NameMatcher::Exact(normalize(&from)), normalize(&to)),
        "prefix" => (NameMatcher::Prefix(from), to),
        "suffix" => (NameMatcher::Suffix(from), to),
        "substring" => (NameMatcher::Substring(from), to),
        "regex" => {
            if from.len() > MAX_REGEX_LEN {
                return Err(format!(
                    "regex pattern too long in a cname rule: {} > {MAX_REGEX_LEN}",
                    from.len()
                ));
            }
            let pattern = regex::Regex::new(&from)
                .map_err(|error| format!("invalid cname rewrite regex pattern: {error}"))?;
            (NameMatcher::Regex(pattern), to)
        }
        other => return Err(format!("unknown cname rewrite type: {other}")),
    };
    Ok(RewriteAction::Cname {
        matcher,
        replacement,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::tests::matcher_text;
    use crate::config::RewriteAction;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn cname_of(s: &crate::config::ServerBlock) -> (String, String) {
        match &s.plugins.rewrite[0].action {
            RewriteAction::Cname {
                matcher,
                replacement,
            } => (matcher_text(matcher), replacement.clone()),
            other => panic!("not a cname rule: {other:?}"),
        }
    }

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            (
                "exact by default, normalized",
                " rewrite cname A.org B.org",
                |s| {
                    cname_of(s) == ("exact a.org.".into(), "b.org.".into())
                        && s.plugins.rewrite[0].stop
                },
            ),
            (
                "suffix, lower case, not qualified",
                " rewrite continue cname suffix .CDN.example.net. .other.cdn.com.",
                |s| {
                    cname_of(s) == ("suffix .cdn.example.net.".into(), ".other.cdn.com.".into())
                        && !s.plugins.rewrite[0].stop
                },
            ),
            (
                "regex",
                " rewrite cname regex (.*).cdn.example.net. {1}.other.cdn.com.",
                |s| {
                    cname_of(s)
                        == (
                            "regex (.*).cdn.example.net.".into(),
                            "{1}.other.cdn.com.".into(),
                        )
                },
            ),
            ("prefix", " rewrite cname prefix edge- core-", |s| {
                cname_of(s) == ("prefix edge-".into(), "core-".into())
            }),
            ("substring", " rewrite cname substring cdn origin", |s| {
                cname_of(s) == ("substring cdn".into(), "origin".into())
            }),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "one argument",
                input: " rewrite cname a.org",
                line: 2,
                kind: "Invalid",
                message: "too few (1) arguments for a cname rule",
            },
            Invalid {
                name: "four arguments",
                input: " rewrite cname exact a.org b.org c.org",
                line: 2,
                kind: "Invalid",
                message: "too few (4) arguments for a cname rule",
            },
            Invalid {
                name: "match type",
                input: " rewrite cname fuzzy a.org b.org",
                line: 2,
                kind: "Invalid",
                message: "unknown cname rewrite type: fuzzy",
            },
            Invalid {
                name: "regex",
                input: " rewrite cname regex (a b.org",
                line: 2,
                kind: "Invalid",
                message: "invalid cname rewrite regex pattern",
            },
        ];
        check_invalid(cases);
    }
}
