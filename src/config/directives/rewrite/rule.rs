//! A rewrite rule as configured: what it matches and what it changes; the names its
//! matchers hold (lower case, fully qualified) and how long their patterns may be.

use super::edns0::Edns0Rule;

/// The longest regular expression (CoreDNS's `maxRegexpLen`).
pub(super) const MAX_REGEX_LEN: usize = 10_000;

/// CoreDNS's `plugin.Name(s).Normalize()`: lower case, fully qualified.
pub(super) fn normalize(text: &str) -> String {
    let mut name = text.to_lowercase();
    if !name.ends_with('.') {
        name.push('.');
    }
    name
}

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
