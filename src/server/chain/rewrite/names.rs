//! The names *rewrite*'s rules read and write: a name's text as the rules see it, and a name
//! rule's match and replacement (regex groups substituted).

use crate::config::NameMatcher;

/// The lower-case dotted spelling of a lower-case wire name, with its final dot; `None` for
/// a label that dotted text cannot carry plainly (a dot, a backslash, a space or a byte
/// outside printable ASCII), which no rule can be meant to match.
pub(super) fn dotted(qname: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(qname.len() + 1);
    for label in crate::name::labels(qname) {
        for &byte in label {
            if !(0x21..=0x7e).contains(&byte) || byte == b'.' || byte == b'\\' {
                return None;
            }
            out.push(byte as char);
        }
        out.push('.');
    }
    if out.is_empty() {
        out.push('.');
    }
    Some(out)
}

pub(super) fn matches(matcher: &NameMatcher, name: &str) -> bool {
    match matcher {
        NameMatcher::Exact(from) => name == from,
        NameMatcher::Prefix(prefix) => name.starts_with(prefix.as_str()),
        NameMatcher::Suffix(suffix) => name.ends_with(suffix.as_str()),
        NameMatcher::Substring(part) => name.contains(part.as_str()),
        NameMatcher::Regex(pattern) => pattern.is_match(name),
    }
}

/// The name a name rule makes of `name`, if it matches.
pub(super) fn rename(matcher: &NameMatcher, replacement: &str, name: &str) -> Option<String> {
    match matcher {
        NameMatcher::Exact(from) => (name == from).then(|| replacement.to_owned()),
        NameMatcher::Prefix(prefix) => name
            .strip_prefix(prefix.as_str())
            .map(|rest| format!("{replacement}{rest}")),
        NameMatcher::Suffix(suffix) => name
            .strip_suffix(suffix.as_str())
            .map(|before| format!("{before}{replacement}")),
        NameMatcher::Substring(part) => name
            .contains(part.as_str())
            .then(|| name.replace(part.as_str(), replacement)),
        NameMatcher::Regex(pattern) => pattern
            .captures(name)
            .map(|captures| substitute(replacement, &captures)),
    }
}

/// `replacement` with `{0}`, `{1}`, ... replaced by the groups of `captures`.
pub(super) fn substitute(replacement: &str, captures: &regex::Captures<'_>) -> String {
    let mut text = replacement.to_owned();
    for index in 0..captures.len() {
        let group = captures.get(index).map_or("", |group| group.as_str());
        text = text.replace(&format!("{{{index}}}"), group);
    }
    text
}
