//! What both forms declare alike: a table's family, a base chain's hook, priority and
//! policy, a set's or map's items.

use super::elements::parse_elements;
use super::lexer::{Tok, Token, describe, text_of};
use crate::ruleset::{Base, ChainKind, Hook, NamedSet, ParseError, TableFamily};

pub(super) fn family_of(word: &str) -> Option<TableFamily> {
    Some(match word {
        "ip" => TableFamily::Ip,
        "ip6" => TableFamily::Ip6,
        "inet" => TableFamily::Inet,
        "arp" | "bridge" | "netdev" => TableFamily::Other,
        _ => return None,
    })
}

pub(super) fn hook_of(word: &str) -> Option<Hook> {
    Some(match word {
        "prerouting" => Hook::Prerouting,
        "input" => Hook::Input,
        "forward" => Hook::Forward,
        "output" => Hook::Output,
        "postrouting" => Hook::Postrouting,
        _ => return None,
    })
}

pub(super) fn standard_priority(name: &str) -> Option<i32> {
    Some(match name {
        "raw" => -300,
        "mangle" => -150,
        "dstnat" => -100,
        "filter" => 0,
        "security" => 50,
        "srcnat" => 100,
        _ => return None,
    })
}

/// `-110`, `dstnat`, `dstnat - 10`, `dstnat-10`, `srcnat + 5`.
pub(super) fn parse_priority(words: &[&str], line: usize) -> Result<i32, ParseError> {
    let joined = words.join("");
    let bad = || {
        ParseError::new(
            line,
            format!("expected a chain priority, found {:?}", words.join(" ")),
        )
    };
    if let Ok(number) = joined.parse::<i32>() {
        return Ok(number);
    }
    let split = joined
        .find(['+', '-'])
        .map_or((joined.as_str(), ""), |at| joined.split_at(at));
    let base = standard_priority(split.0).ok_or_else(bad)?;
    if split.1.is_empty() {
        return Ok(base);
    }
    let offset: i32 = split.1[1..].parse().map_err(|_| bad())?;
    Ok(if split.1.starts_with('-') {
        base - offset
    } else {
        base + offset
    })
}

/// The base-chain declaration `type T hook H [device D] priority P [; policy Q]`.
pub(super) fn parse_base(
    tokens: &[Token],
    policy: Option<&str>,
) -> Result<Option<Base>, ParseError> {
    let line = tokens.first().map_or(1, |t| t.line);
    let words: Vec<&str> = tokens
        .iter()
        .filter_map(|t| match &t.tok {
            Tok::Word(w) => Some(w.as_str()),
            _ => None,
        })
        .collect();
    let get = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|at| words.get(at + 1))
    };
    let kind = match get("type").copied() {
        Some("filter") => ChainKind::Filter,
        Some("nat") => ChainKind::Nat,
        Some(_) => ChainKind::Other,
        None => return Err(ParseError::new(line, "a base chain needs `type`")),
    };
    let hook_name =
        get("hook").ok_or_else(|| ParseError::new(line, "a base chain needs `hook`"))?;
    let Some(hook) = hook_of(hook_name) else {
        // ingress/egress hooks never see the traced packet.
        return Ok(None);
    };
    let at = words
        .iter()
        .position(|w| *w == "priority")
        .ok_or_else(|| ParseError::new(line, "a base chain needs `priority`"))?;
    let priority = parse_priority(&words[at + 1..], line)?;
    let policy_accept = match policy {
        None | Some("accept") => true,
        Some("drop") => false,
        Some(other) => {
            return Err(ParseError::new(
                line,
                format!("chain policy: expected accept or drop, found {other:?}"),
            ));
        }
    };
    Ok(Some(Base {
        hook,
        priority,
        kind,
        policy_accept,
    }))
}

/// Set/map declaration items from `type ...`, `flags ...`, `comment "..."`, `elements = {...}`.
pub(super) fn set_items(
    set: &mut NamedSet,
    statement: &[Token],
    line: usize,
) -> Result<(), ParseError> {
    let Some(first) = statement.first() else {
        return Ok(());
    };
    match &first.tok {
        Tok::Word(w) => match w.as_str() {
            "type" | "typeof" => {
                set.type_text = text_of(&statement[1..]);
                set.is_map = set.is_map || set.type_text.contains(" : ");
            }
            "comment" => {
                if let Some(Tok::Str(text)) = statement.get(1).map(|t| &t.tok) {
                    set.comment = Some(text.clone());
                }
            }
            "elements" => {
                let open = statement
                    .iter()
                    .position(|t| t.tok == Tok::Open)
                    .ok_or_else(|| ParseError::new(first.line, "elements = { ... } expected"))?;
                let inner = &statement[open + 1..];
                let inner = match inner.last().map(|t| &t.tok) {
                    Some(Tok::Close) => &inner[..inner.len() - 1],
                    _ => inner,
                };
                set.elements.extend(parse_elements(inner, first.line)?);
            }
            "flags" | "timeout" | "gc-interval" | "size" | "policy" | "counter" | "auto-merge" => {}
            other => {
                return Err(ParseError::new(
                    first.line,
                    format!("unknown set property {other:?}"),
                ));
            }
        },
        other => {
            return Err(ParseError::new(
                line,
                format!("unexpected {} in a set", describe(Some(other))),
            ));
        }
    }
    Ok(())
}

pub(super) fn new_set(name: &str, line: usize, map: bool) -> NamedSet {
    NamedSet {
        name: name.to_owned(),
        line,
        is_map: map,
        type_text: String::new(),
        comment: None,
        elements: Vec::new(),
    }
}
