//! What rules and sets share: a key value (`10.0.0.1`, `tcp`, `80-90`), a verdict, and an
//! element list (`{ a . b : goto c, ... }`).

use std::net::IpAddr;

use super::lexer::{Tok, Token, describe};
use crate::ruleset::values::{parse_net, parse_protocol};
use crate::ruleset::{Element, KeyValue, ParseError, ProtoValue, Verdict};

/// One value of a set element's key.
pub(super) fn key_value(word: &str) -> KeyValue {
    if let Some(net) = parse_net(word) {
        return KeyValue::Net(net);
    }
    if let Some((low, high)) = word.split_once('-') {
        if let (Ok(low), Ok(high)) = (low.parse::<IpAddr>(), high.parse::<IpAddr>()) {
            return KeyValue::Range(low, high);
        }
        if let (Ok(low), Ok(high)) = (low.parse::<u16>(), high.parse::<u16>()) {
            return KeyValue::Port(low, high);
        }
    }
    if let Ok(port) = word.parse::<u16>() {
        return KeyValue::Port(port, port);
    }
    match parse_protocol(word) {
        ProtoValue::Known(p) => KeyValue::Proto(ProtoValue::Known(p)),
        _ if matches!(word, "icmp" | "icmpv6" | "gre" | "esp" | "ah" | "udplite") => {
            KeyValue::Proto(ProtoValue::Other(word.to_owned()))
        }
        _ => KeyValue::Other(word.to_owned()),
    }
}

pub(super) fn verdict_of(words: &[&str]) -> Option<Verdict> {
    match words {
        ["accept"] => Some(Verdict::Accept),
        ["drop"] => Some(Verdict::Drop),
        ["return"] => Some(Verdict::Return),
        ["continue"] => Some(Verdict::Continue),
        ["jump", chain] => Some(Verdict::Jump((*chain).to_owned())),
        ["goto", chain] => Some(Verdict::Goto((*chain).to_owned())),
        _ => None,
    }
}

/// Elements between `{` and `}`: `key [. key]* [comment "..."] [: verdict]`, comma-separated.
pub(super) fn parse_elements(tokens: &[Token], line: usize) -> Result<Vec<Element>, ParseError> {
    let mut elements = Vec::new();
    for part in tokens.split(|t| t.tok == Tok::Comma) {
        if part.is_empty() {
            continue;
        }
        let element_line = part.first().map_or(line, |t| t.line);
        let mut key = Vec::new();
        let mut comment = None;
        let mut value_words: Vec<&str> = Vec::new();
        let mut in_value = false;
        let mut index = 0;
        while index < part.len() {
            match &part[index].tok {
                Tok::Word(w) if w == ":" && !in_value => in_value = true,
                Tok::Word(w) if w == "comment" && !in_value => {
                    if let Some(Tok::Str(text)) = part.get(index + 1).map(|t| &t.tok) {
                        comment = Some(text.clone());
                        index += 1;
                    }
                }
                Tok::Word(w) if w == "." && !in_value => {}
                Tok::Word(w) if in_value => value_words.push(w),
                Tok::Word(w) if w == "timeout" || w == "expires" => {
                    index += 1;
                }
                Tok::Word(w) => key.push(key_value(w)),
                other => {
                    return Err(ParseError::new(
                        element_line,
                        format!("unexpected {} in a set element", describe(Some(other))),
                    ));
                }
            }
            index += 1;
        }
        if key.is_empty() {
            return Err(ParseError::new(element_line, "a set element without a key"));
        }
        let verdict = if in_value {
            Some(verdict_of(&value_words).ok_or_else(|| {
                ParseError::new(
                    element_line,
                    format!("expected a verdict (goto CHAIN, jump CHAIN, drop, accept, return), found {:?}", value_words.join(" ")),
                )
            })?)
        } else {
            None
        };
        elements.push(Element {
            key,
            verdict,
            comment,
            line: element_line,
        });
    }
    Ok(elements)
}
