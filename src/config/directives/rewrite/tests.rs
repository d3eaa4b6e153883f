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
    match &s.plugins.rewrite[index].action {
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
                s.plugins.rewrite[0].stop
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
                !s.plugins.rewrite[0].stop
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
            s.plugins.rewrite[0].action == RewriteAction::Type { from: 255, to: 13 }
        }),
        ("class", " rewrite class CH IN", |s| {
            s.plugins.rewrite[0].action == RewriteAction::Class { from: 3, to: 1 }
        }),
        ("ttl exact", " rewrite ttl example.com 15", |s| {
            s.plugins.rewrite[0].action
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
                    &s.plugins.rewrite[0].action,
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
                &s.plugins.rewrite[0].action,
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
                    &s.plugins.rewrite[0].action,
                    RewriteAction::Rcode { from: 2, to: 0, .. }
                )
            },
        ),
        (
            "several",
            " rewrite name a.org b.org\n rewrite continue type AAAA A",
            |s| {
                s.plugins.rewrite.len() == 2
                    && !s.plugins.rewrite[1].stop
                    && s.plugins.rewrite[1].line == 3
            },
        ),
    ];
    check_valid(cases);
}

#[test]
fn invalid() {
    let cases: &[Invalid<'_>] = &[
        Invalid {
            name: "nothing",
            input: " rewrite",
            line: 2,
            kind: "Invalid",
            message: "rewrite: no rule type specified for rewrite",
        },
        Invalid {
            name: "stop alone",
            input: " rewrite stop",
            line: 2,
            kind: "Invalid",
            message: "stop rule must begin with a rule type",
        },
        Invalid {
            name: "rule type",
            input: " rewrite nmae a b",
            line: 2,
            kind: "Invalid",
            message: "invalid rule type \"nmae\"",
        },
        Invalid {
            name: "answer first",
            input: " rewrite answer auto",
            line: 2,
            kind: "Invalid",
            message: "response rewrites must begin with a name rule",
        },
        Invalid {
            name: "name one",
            input: " rewrite name a",
            line: 2,
            kind: "Invalid",
            message: "too few arguments for a name rule",
        },
        Invalid {
            name: "match type",
            input: " rewrite name fuzzy a b",
            line: 2,
            kind: "Invalid",
            message: "name rule supports only exact, prefix, suffix, substring, and regex name matching, received: fuzzy",
        },
        Invalid {
            name: "regex",
            input: " rewrite name regex ([a b",
            line: 2,
            kind: "Invalid",
            message: "invalid regex matching pattern: ([a",
        },
        Invalid {
            name: "groups",
            input: " rewrite name regex (a).b {1}.{2}.c",
            line: 2,
            kind: "Invalid",
            message: "uses more subexpressions than its corresponding matching regex pattern",
        },
        Invalid {
            name: "answer junk",
            input: " rewrite name prefix a b junk more",
            line: 2,
            kind: "Invalid",
            message: "exceeded the number of arguments for a non-answer rule argument for prefix rule",
        },
        Invalid {
            name: "answer short",
            input: " rewrite name prefix a b answer",
            line: 2,
            kind: "Invalid",
            message: "invalid arguments for prefix rule",
        },
        Invalid {
            name: "answer name short",
            input: " rewrite name prefix a b answer name x",
            line: 2,
            kind: "Invalid",
            message: "name answer rule for prefix rule: 2 arguments required",
        },
        Invalid {
            name: "answer kind",
            input: " rewrite name prefix a b answer what",
            line: 2,
            kind: "Invalid",
            message: "invalid type \"what\" for answer rule for prefix rule",
        },
        Invalid {
            name: "auto and name",
            input: " rewrite name prefix a b answer auto answer name x y",
            line: 2,
            kind: "Invalid",
            message: "auto name answer rule cannot be combined with explicit name anwer rules",
        },
        Invalid {
            name: "type count",
            input: " rewrite type A",
            line: 2,
            kind: "Invalid",
            message: "type rules must have exactly two arguments",
        },
        Invalid {
            name: "type name",
            input: " rewrite type A AAA",
            line: 2,
            kind: "Invalid",
            message: "invalid type \"AAA\"",
        },
        Invalid {
            name: "class name",
            input: " rewrite class XX IN",
            line: 2,
            kind: "Invalid",
            message: "invalid class \"XX\"",
        },
        Invalid {
            name: "ttl few",
            input: " rewrite ttl a",
            line: 2,
            kind: "Invalid",
            message: "too few (1) arguments for a ttl rule",
        },
        Invalid {
            name: "ttl value",
            input: " rewrite ttl a b",
            line: 2,
            kind: "Invalid",
            message: "invalid TTL 'b' for a ttl rule",
        },
        Invalid {
            name: "ttl dash",
            input: " rewrite ttl a -",
            line: 2,
            kind: "Invalid",
            message: "invalid TTL '-' for a ttl rule",
        },
        Invalid {
            name: "ttl reversed",
            input: " rewrite ttl a 30-10",
            line: 2,
            kind: "Invalid",
            message: "invalid TTL '30-10'",
        },
        Invalid {
            name: "ttl match",
            input: " rewrite ttl fuzzy a 5",
            line: 2,
            kind: "Invalid",
            message: "ttl rule supports only exact, prefix, suffix, substring, and regex name matching",
        },
        Invalid {
            name: "rcode value",
            input: " rewrite rcode a.org NOPE NOERROR",
            line: 2,
            kind: "Invalid",
            message: "invalid matching RCODE 'NOPE' for a rcode rule",
        },
        Invalid {
            name: "rcode replacement",
            input: " rewrite rcode a.org 2 99",
            line: 2,
            kind: "Invalid",
            message: "invalid replacement RCODE '99' for a rcode rule",
        },
        Invalid {
            name: "edns0 {server_ip}",
            input: " rewrite edns0 local set 0xffee {server_ip}",
            line: 2,
            kind: "UnsupportedProperty",
            message: "property 'edns0' of rewrite is not supported",
        },
    ];
    check_invalid(cases);
}
