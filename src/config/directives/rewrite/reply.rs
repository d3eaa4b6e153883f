//! The `ttl` and `rcode` rules, which change the reply of the names they match
//! (CoreDNS's `newTTLRule` and `newRCodeRule`), and the name matcher they share.

use super::rule::{MAX_REGEX_LEN, NameMatcher, RewriteAction, normalize};

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
pub(super) fn ttl_rule(args: &[&str]) -> Result<RewriteAction, String> {
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
        _ => crate::codes::rcode::by_name(&text.to_uppercase()),
    }
}

/// CoreDNS's `newRCodeRule`.
pub(super) fn rcode_rule(args: &[&str]) -> Result<RewriteAction, String> {
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
