use super::*;
use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

/// A matcher as the test tables write it: `exact a.org.`, `regex (.*)`, ...
pub(super) fn matcher_text(matcher: &NameMatcher) -> String {
    match matcher {
        NameMatcher::Exact(x) => format!("exact {x}"),
        NameMatcher::Prefix(x) => format!("prefix {x}"),
        NameMatcher::Suffix(x) => format!("suffix {x}"),
        NameMatcher::Substring(x) => format!("substring {x}"),
        NameMatcher::Regex(x) => format!("regex {}", x.as_str()),
    }
}

fn name_rule_of(s: &crate::config::ServerBlock, index: usize) -> (String, String, bool, usize) {
    match &s.rewrite[index].action {
        RewriteAction::Name {
            matcher,
            replacement,
            auto,
            answers,
        } => (
            matcher_text(matcher),
            replacement.clone(),
            *auto,
            answers.len(),
        ),
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
                    && name_rule_of(s, 0) == ("substring service.".into(), "svc.".into(), false, 0)
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
