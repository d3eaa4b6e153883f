//! nftables text into the ruleset model: `nft list table` / `nft list ruleset` output (with or
//! without `-a` handles), and the `nft -f` transactions kube-proxy writes (`add table`,
//! `add chain`, `add set`/`add map`, `add rule`, `add element`, `flush`, `delete`).
//!
//! The statements kube-proxy uses, and the common ones around them, are read into matches
//! and actions: `ip`/`ip6 saddr`/`daddr` (prefixes, anonymous sets, `@set`), `tcp`/`udp`/
//! `sctp`/`th dport`, `meta l4proto`, concatenated keys looked up with `vmap`,
//! `fib daddr|saddr type local`, `ct state`, `meta mark` tests and `meta mark set`,
//! `numgen random mod N vmap { ... }`, `jump`/`goto`/`accept`/`drop`/`return`/`reject`,
//! `dnat to`, `snat to`, `masquerade`, `update @set { ... }`, `counter`, `log`, `comment`.
//! Anything else in a rule is kept as an unsupported part and reported by the tracer when
//! reached. Text that does not have nft's structure is an error with its line.

use std::net::IpAddr;

use ipnet::IpNet;

use super::iptables_save::{parse_destination, parse_net, parse_protocol};
use super::{
    Action, AddrValue, Base, Chain, ChainKind, CtState, Element, Format, Hook, KeyPart, KeyValue,
    MapRef, Match, NamedSet, ParseError, ProtoValue, Rule, Ruleset, Side, Slot, Table, TableFamily,
    Verdict,
};
use crate::model::Protocol;

/// One token of nft text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    Str(String),
    Open,
    Close,
    Semi,
    Comma,
    Newline,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

fn lex(text: &str) -> Result<Vec<Token>, ParseError> {
    let mut tokens = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let mut chars = raw.chars().peekable();
        let mut word = String::new();
        let flush = |word: &mut String, tokens: &mut Vec<Token>| {
            if !word.is_empty() {
                tokens.push(Token {
                    tok: Tok::Word(std::mem::take(word)),
                    line,
                });
            }
        };
        while let Some(c) = chars.next() {
            match c {
                '"' => {
                    flush(&mut word, &mut tokens);
                    let mut text = String::new();
                    let mut closed = false;
                    while let Some(c) = chars.next() {
                        match c {
                            '\\' => {
                                if let Some(next) = chars.next() {
                                    text.push(next);
                                }
                            }
                            '"' => {
                                closed = true;
                                break;
                            }
                            c => text.push(c),
                        }
                    }
                    if !closed {
                        return Err(ParseError::new(line, "unterminated \" quote"));
                    }
                    tokens.push(Token {
                        tok: Tok::Str(text),
                        line,
                    });
                }
                '#' if word.is_empty() => break,
                '{' | '}' | ';' | ',' => {
                    flush(&mut word, &mut tokens);
                    tokens.push(Token {
                        tok: match c {
                            '{' => Tok::Open,
                            '}' => Tok::Close,
                            ';' => Tok::Semi,
                            _ => Tok::Comma,
                        },
                        line,
                    });
                }
                c if c.is_whitespace() => flush(&mut word, &mut tokens),
                c => word.push(c),
            }
        }
        flush(&mut word, &mut tokens);
        tokens.push(Token {
            tok: Tok::Newline,
            line,
        });
    }
    Ok(tokens)
}

/// A cursor over tokens.
struct Cursor<'t> {
    tokens: &'t [Token],
    at: usize,
}

impl<'t> Cursor<'t> {
    fn peek(&self) -> Option<&'t Tok> {
        self.tokens.get(self.at).map(|t| &t.tok)
    }

    fn line(&self) -> usize {
        self.tokens
            .get(self.at)
            .or_else(|| self.tokens.last())
            .map_or(1, |t| t.line)
    }

    fn next(&mut self) -> Option<&'t Tok> {
        let tok = self.tokens.get(self.at).map(|t| &t.tok);
        self.at += 1;
        tok
    }

    fn peek_word(&self) -> Option<&'t str> {
        match self.peek() {
            Some(Tok::Word(w)) => Some(w.as_str()),
            _ => None,
        }
    }

    fn expect_word(&mut self, what: &str) -> Result<&'t str, ParseError> {
        let line = self.line();
        match self.next() {
            Some(Tok::Word(w)) => Ok(w.as_str()),
            other => Err(ParseError::new(
                line,
                format!("expected {what}, found {}", describe(other)),
            )),
        }
    }

    fn expect(&mut self, tok: &Tok, what: &str) -> Result<(), ParseError> {
        let line = self.line();
        match self.next() {
            Some(found) if found == tok => Ok(()),
            other => Err(ParseError::new(
                line,
                format!("expected {what}, found {}", describe(other)),
            )),
        }
    }

    fn skip_newlines(&mut self) {
        while self.peek() == Some(&Tok::Newline) {
            self.at += 1;
        }
    }

    /// The tokens up to the end of the line (or a `;` at brace depth 0), consumed.
    fn statement(&mut self) -> Vec<Token> {
        let mut out = Vec::new();
        let mut depth = 0usize;
        while let Some(token) = self.tokens.get(self.at) {
            match token.tok {
                Tok::Newline if depth == 0 => break,
                Tok::Semi if depth == 0 => break,
                Tok::Newline => {
                    self.at += 1;
                    continue;
                }
                Tok::Open => depth += 1,
                Tok::Close if depth == 0 => break,
                Tok::Close => depth -= 1,
                _ => {}
            }
            out.push(token.clone());
            self.at += 1;
        }
        out
    }
}

fn describe(tok: Option<&Tok>) -> String {
    match tok {
        None => "the end of the text".to_owned(),
        Some(Tok::Word(w)) => format!("{w:?}"),
        Some(Tok::Str(s)) => format!("\"{s}\""),
        Some(Tok::Open) => "\"{\"".to_owned(),
        Some(Tok::Close) => "\"}\"".to_owned(),
        Some(Tok::Semi) => "\";\"".to_owned(),
        Some(Tok::Comma) => "\",\"".to_owned(),
        Some(Tok::Newline) => "the end of the line".to_owned(),
    }
}

fn text_of(tokens: &[Token]) -> String {
    let mut out = String::new();
    for token in tokens {
        let piece = match &token.tok {
            Tok::Word(w) => w.clone(),
            Tok::Str(s) => format!("\"{s}\""),
            Tok::Open => "{".to_owned(),
            Tok::Close => "}".to_owned(),
            Tok::Semi => ";".to_owned(),
            Tok::Comma => ",".to_owned(),
            Tok::Newline => continue,
        };
        if !out.is_empty() && !matches!(token.tok, Tok::Comma) {
            out.push(' ');
        }
        out.push_str(&piece);
    }
    out
}

fn family_of(word: &str) -> Option<TableFamily> {
    Some(match word {
        "ip" => TableFamily::Ip,
        "ip6" => TableFamily::Ip6,
        "inet" => TableFamily::Inet,
        "arp" | "bridge" | "netdev" => TableFamily::Other,
        _ => return None,
    })
}

fn hook_of(word: &str) -> Option<Hook> {
    Some(match word {
        "prerouting" => Hook::Prerouting,
        "input" => Hook::Input,
        "forward" => Hook::Forward,
        "output" => Hook::Output,
        "postrouting" => Hook::Postrouting,
        _ => return None,
    })
}

fn standard_priority(name: &str) -> Option<i32> {
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
fn parse_priority(words: &[&str], line: usize) -> Result<i32, ParseError> {
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
fn parse_base(tokens: &[Token], policy: Option<&str>) -> Result<Option<Base>, ParseError> {
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

/// One value of a set element's key.
fn key_value(word: &str) -> KeyValue {
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

fn verdict_of(words: &[&str]) -> Option<Verdict> {
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
fn parse_elements(tokens: &[Token], line: usize) -> Result<Vec<Element>, ParseError> {
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

/// A rule's statements.
struct RuleParser<'t> {
    tokens: &'t [Token],
    at: usize,
    rule: Rule,
}

impl<'t> RuleParser<'t> {
    fn word(&self, offset: usize) -> Option<&str> {
        match self.tokens.get(self.at + offset).map(|t| &t.tok) {
            Some(Tok::Word(w)) => Some(w.as_str()),
            _ => None,
        }
    }

    fn take(&mut self) -> Option<Tok> {
        let tok = self.tokens.get(self.at).map(|t| t.tok.clone());
        self.at += 1;
        tok
    }

    fn line(&self) -> usize {
        self.rule.line
    }

    fn rest_text(&self) -> String {
        text_of(&self.tokens[self.at.min(self.tokens.len())..])
    }

    /// Everything from here on is not understood: keep it, report it when reached.
    fn unsupported(&mut self) {
        let text = self.rest_text();
        self.rule.matches.push(Match::Unsupported(text));
        self.at = self.tokens.len();
    }

    /// An optional `==`/`!=`: whether negated.
    fn operator(&mut self) -> bool {
        match self.word(0) {
            Some("!=") => {
                self.at += 1;
                true
            }
            Some("==" | "eq") => {
                self.at += 1;
                false
            }
            Some("ne") => {
                self.at += 1;
                true
            }
            _ => false,
        }
    }

    /// `{ a, b }` or one word: the words.
    fn values(&mut self) -> Result<Vec<String>, ParseError> {
        match self.take() {
            Some(Tok::Word(w)) => Ok(vec![w]),
            Some(Tok::Open) => {
                let mut out = Vec::new();
                loop {
                    match self.take() {
                        Some(Tok::Close) => break,
                        Some(Tok::Comma) => {}
                        Some(Tok::Word(w)) => out.push(w),
                        other => {
                            return Err(ParseError::new(
                                self.line(),
                                format!("unexpected {} in a set", describe(other.as_ref())),
                            ));
                        }
                    }
                }
                Ok(out)
            }
            other => Err(ParseError::new(
                self.line(),
                format!("expected a value, found {}", describe(other.as_ref())),
            )),
        }
    }

    /// `ip daddr . meta l4proto . th dport` (from the current position): the key, up to
    /// `vmap`.
    fn concatenation(&mut self) -> Option<Vec<KeyPart>> {
        let mut parts = Vec::new();
        loop {
            let part = match (self.word(0)?, self.word(1)?) {
                ("ip" | "ip6", "saddr") => KeyPart::Saddr,
                ("ip" | "ip6", "daddr") => KeyPart::Daddr,
                ("meta", "l4proto") => KeyPart::L4proto,
                ("th" | "tcp" | "udp" | "sctp", "dport") => KeyPart::Dport,
                ("th" | "tcp" | "udp" | "sctp", "sport") => KeyPart::Sport,
                _ => return None,
            };
            parts.push(part);
            self.at += 2;
            match self.word(0) {
                Some(".") => self.at += 1,
                _ => return Some(parts),
            }
        }
    }

    fn parse(mut self) -> Result<Rule, ParseError> {
        while self.at < self.tokens.len() {
            let Some(word) = self.word(0).map(str::to_owned) else {
                self.unsupported();
                break;
            };
            let start = self.at;
            // Concatenated lookups: `ip daddr . meta l4proto . th dport vmap @map`.
            if matches!(word.as_str(), "ip" | "ip6" | "meta" | "th" | "tcp" | "udp")
                && self.lookahead_concatenation()
            {
                let key = self.concatenation().unwrap_or_default();
                if self.word(0) != Some("vmap") {
                    self.at = start;
                    self.unsupported();
                    break;
                }
                self.at += 1;
                let map = self.map_ref()?;
                self.rule.actions.push(Action::VerdictMap { key, map });
                continue;
            }
            match word.as_str() {
                "ip" | "ip6" => {
                    let side = match self.word(1) {
                        Some("saddr") => Side::Source,
                        Some("daddr") => Side::Destination,
                        _ => {
                            self.unsupported();
                            break;
                        }
                    };
                    self.at += 2;
                    let negated = self.operator();
                    let value = if let Some(set) = self.word(0).and_then(|w| w.strip_prefix('@')) {
                        // `ip saddr @affinity-X goto endpoint-X`: membership, then the verdict.
                        let set = set.to_owned();
                        self.at += 1;
                        AddrValue::Set(set)
                    } else {
                        let words = self.values()?;
                        let nets = words
                            .iter()
                            .map(|w| parse_net(w))
                            .collect::<Option<Vec<IpNet>>>()
                            .ok_or_else(|| {
                                ParseError::new(
                                    self.line(),
                                    format!(
                                        "{word} {}: expected an address or prefix, found {:?}",
                                        if side == Side::Source {
                                            "saddr"
                                        } else {
                                            "daddr"
                                        },
                                        words.join(", ")
                                    ),
                                )
                            })?;
                        if nets.len() == 1 {
                            AddrValue::Net(nets[0])
                        } else {
                            AddrValue::List(nets)
                        }
                    };
                    self.rule.matches.push(Match::Addr {
                        side,
                        negated,
                        value,
                    });
                }
                "tcp" | "udp" | "sctp" | "th" => {
                    let side = match self.word(1) {
                        Some("dport") => Side::Destination,
                        Some("sport") => Side::Source,
                        _ => {
                            self.unsupported();
                            break;
                        }
                    };
                    self.at += 2;
                    let negated = self.operator();
                    let words = self.values()?;
                    let ranges = words
                        .iter()
                        .map(|w| match key_value(w) {
                            KeyValue::Port(low, high) => Some((low, high)),
                            _ => None,
                        })
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| {
                            ParseError::new(
                                self.line(),
                                format!(
                                    "{word} port: expected a port or range, found {:?}",
                                    words.join(", ")
                                ),
                            )
                        })?;
                    let protocol = match word.as_str() {
                        "tcp" => Some(Protocol::Tcp),
                        "udp" => Some(Protocol::Udp),
                        "sctp" => Some(Protocol::Sctp),
                        _ => None,
                    };
                    self.rule.matches.push(Match::Port {
                        side,
                        negated,
                        ranges,
                        protocol,
                    });
                }
                "meta" if self.word(1) == Some("l4proto") => {
                    self.at += 2;
                    let negated = self.operator();
                    let protocols = self.values()?.iter().map(|w| parse_protocol(w)).collect();
                    self.rule
                        .matches
                        .push(Match::Protocol { negated, protocols });
                }
                "meta" | "mark" if word == "mark" || self.word(1) == Some("mark") => {
                    self.mark(word == "meta")?;
                }
                "fib" => {
                    let side = match self.word(1) {
                        Some("daddr") => Side::Destination,
                        Some("saddr") => Side::Source,
                        _ => {
                            self.unsupported();
                            break;
                        }
                    };
                    if self.word(2) != Some("type") {
                        self.unsupported();
                        break;
                    }
                    self.at += 3;
                    let negated = self.operator();
                    let values = self.values()?;
                    if values != ["local"] {
                        self.at = start;
                        self.unsupported();
                        break;
                    }
                    self.rule.matches.push(Match::Local { side, negated });
                }
                "ct" => match self.word(1) {
                    Some("state" | "status") => {
                        let status = self.word(1) == Some("status");
                        self.at += 2;
                        let negated = self.operator();
                        let mut states = Vec::new();
                        for value in self.values()? {
                            for name in value.split(',') {
                                states.push(match (status, name) {
                                    (false, "new") => CtState::New,
                                    (false, "established") => CtState::Established,
                                    (false, "related") => CtState::Related,
                                    (false, "invalid") => CtState::Invalid,
                                    (false, "untracked") => CtState::Untracked,
                                    (true, "dnat") => CtState::Dnat,
                                    (true, "snat") => CtState::Snat,
                                    _ => {
                                        self.at = start;
                                        self.unsupported();
                                        return Ok(self.rule);
                                    }
                                });
                            }
                        }
                        self.rule.matches.push(Match::CtState { negated, states });
                    }
                    _ => {
                        self.unsupported();
                        break;
                    }
                },
                "numgen" => self.numgen()?,
                "iifname" | "oifname" | "iif" | "oif" => {
                    self.at += 1;
                    let negated = self.operator();
                    let name = match self.take() {
                        Some(Tok::Word(w)) => w,
                        Some(Tok::Str(s)) => s,
                        other => {
                            return Err(ParseError::new(
                                self.line(),
                                format!(
                                    "{word}: expected an interface, found {}",
                                    describe(other.as_ref())
                                ),
                            ));
                        }
                    };
                    self.rule.matches.push(Match::Interface {
                        out: word.starts_with('o'),
                        negated,
                        name,
                    });
                }
                "counter" => {
                    self.at += 1;
                    while matches!(self.word(0), Some("packets" | "bytes")) {
                        self.at += 2;
                    }
                }
                "log" => {
                    self.at += 1;
                    while let Some(option) = self.word(0) {
                        match option {
                            "prefix" | "level" | "group" | "snaplen" | "queue-threshold"
                            | "flags" => {
                                self.at += 2;
                            }
                            _ => break,
                        }
                    }
                    self.rule.actions.push(Action::Continue);
                }
                "comment" => {
                    self.at += 1;
                    match self.take() {
                        Some(Tok::Str(text)) => self.rule.comment = Some(text),
                        other => {
                            return Err(ParseError::new(
                                self.line(),
                                format!(
                                    "comment: expected a quoted string, found {}",
                                    describe(other.as_ref())
                                ),
                            ));
                        }
                    }
                }
                "jump" | "goto" => {
                    let Some(chain) = self.word(1).map(str::to_owned) else {
                        return Err(ParseError::new(
                            self.line(),
                            format!("{word} needs a chain"),
                        ));
                    };
                    self.at += 2;
                    self.rule.actions.push(Action::Verdict(if word == "jump" {
                        Verdict::Jump(chain)
                    } else {
                        Verdict::Goto(chain)
                    }));
                }
                "accept" | "drop" | "return" | "continue" => {
                    self.at += 1;
                    if let Some(verdict) = verdict_of(&[word.as_str()]) {
                        self.rule.actions.push(Action::Verdict(verdict));
                    }
                }
                "reject" => {
                    self.at += 1;
                    let mut with = Vec::new();
                    if self.word(0) == Some("with") {
                        self.at += 1;
                        while let Some(w) = self.word(0) {
                            if w == "comment" {
                                break;
                            }
                            with.push(w.to_owned());
                            self.at += 1;
                        }
                    }
                    self.rule
                        .actions
                        .push(Action::Reject((!with.is_empty()).then(|| with.join(" "))));
                }
                "dnat" | "snat" => {
                    self.at += 1;
                    if matches!(self.word(0), Some("ip" | "ip6")) {
                        self.at += 1;
                    }
                    if self.word(0) != Some("to") {
                        self.at = start;
                        self.unsupported();
                        break;
                    }
                    let Some(target) = self.word(1).map(str::to_owned) else {
                        return Err(ParseError::new(
                            self.line(),
                            format!("{word} to needs an address"),
                        ));
                    };
                    self.at += 2;
                    while matches!(self.word(0), Some("random" | "fully-random" | "persistent")) {
                        self.at += 1;
                    }
                    if word == "snat" {
                        self.rule.actions.push(Action::Snat(target));
                    } else {
                        match parse_destination(&target) {
                            Some((ip, port)) => self.rule.actions.push(Action::Dnat { ip, port }),
                            None => {
                                self.rule
                                    .actions
                                    .push(Action::Unsupported(format!("dnat to {target}")));
                            }
                        }
                    }
                }
                "masquerade" => {
                    self.at += 1;
                    while matches!(self.word(0), Some("random" | "fully-random" | "persistent")) {
                        self.at += 1;
                    }
                    self.rule.actions.push(Action::Masquerade);
                }
                "update" | "add" if self.word(1).is_some_and(|w| w.starts_with('@')) => {
                    self.at += 2;
                    if self.tokens.get(self.at).map(|t| &t.tok) == Some(&Tok::Open) {
                        let mut depth = 0;
                        while let Some(tok) = self.take() {
                            match tok {
                                Tok::Open => depth += 1,
                                Tok::Close => {
                                    depth -= 1;
                                    if depth == 0 {
                                        break;
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    self.rule.actions.push(Action::Continue);
                }
                _ => {
                    self.unsupported();
                    break;
                }
            }
        }
        Ok(self.rule)
    }

    /// Whether the selector at the cursor is the first of a concatenation (`x . y`).
    fn lookahead_concatenation(&self) -> bool {
        self.word(2) == Some(".")
    }

    /// `@name` or `{ elements }` after `vmap`.
    fn map_ref(&mut self) -> Result<MapRef, ParseError> {
        if let Some(name) = self.word(0).and_then(|w| w.strip_prefix('@')) {
            let name = name.to_owned();
            self.at += 1;
            return Ok(MapRef::Named(name));
        }
        let line = self.line();
        let inner = self.braced()?;
        Ok(MapRef::Inline(parse_elements(inner, line)?))
    }

    /// The tokens between `{` and its `}`, consumed.
    fn braced(&mut self) -> Result<&'t [Token], ParseError> {
        let tokens: &'t [Token] = self.tokens;
        if self.tokens.get(self.at).map(|t| &t.tok) != Some(&Tok::Open) {
            return Err(ParseError::new(
                self.line(),
                format!(
                    "expected \"{{\", found {}",
                    describe(self.tokens.get(self.at).map(|t| &t.tok))
                ),
            ));
        }
        let start = self.at + 1;
        let mut depth = 0usize;
        while let Some(token) = self.tokens.get(self.at) {
            match token.tok {
                Tok::Open => depth += 1,
                Tok::Close => {
                    depth -= 1;
                    if depth == 0 {
                        let inner = &tokens[start..self.at];
                        self.at += 1;
                        return Ok(inner);
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
        Err(ParseError::new(self.line(), "unclosed \"{\""))
    }

    /// `meta mark & M == V`, `meta mark != V`, `meta mark set meta mark | V` and the input
    /// spellings `mark and M == V`, `mark set mark or V`.
    fn mark(&mut self, meta: bool) -> Result<(), ParseError> {
        let start = self.at;
        self.at += if meta { 2 } else { 1 };
        let number = |w: &str| -> Option<u32> {
            w.strip_prefix("0x")
                .map_or_else(|| w.parse().ok(), |hex| u32::from_str_radix(hex, 16).ok())
        };
        if self.word(0) == Some("set") {
            self.at += 1;
            // `meta mark set meta mark | V` / `mark set mark or V` / `meta mark set V`.
            let words: Vec<String> = (0..4)
                .filter_map(|i| self.word(i).map(str::to_owned))
                .collect();
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let (and, xor, used) = match words.as_slice() {
                ["meta", "mark", op, value, ..] | ["mark", op, value, ..]
                    if matches!(*op, "|" | "or" | "^" | "xor" | "&" | "and") =>
                {
                    let used = if words[0] == "meta" { 4 } else { 3 };
                    let value = number(value).ok_or_else(|| {
                        ParseError::new(self.line(), format!("meta mark set: bad value {value:?}"))
                    })?;
                    match *op {
                        "|" | "or" => (!value, value, used),
                        "^" | "xor" => (u32::MAX, value, used),
                        _ => (value, 0, used),
                    }
                }
                [value, ..] if number(value).is_some() => (0, number(value).unwrap_or(0), 1),
                _ => {
                    self.at = start;
                    self.unsupported();
                    return Ok(());
                }
            };
            self.at += used;
            self.rule.actions.push(Action::SetMark { and, xor });
            return Ok(());
        }
        // A test.
        let mut mask = u32::MAX;
        if matches!(self.word(0), Some("&" | "and")) {
            let Some(value) = self.word(1).and_then(number) else {
                self.at = start;
                self.unsupported();
                return Ok(());
            };
            mask = value;
            self.at += 2;
        }
        let negated = self.operator();
        let Some(value) = self.word(0).and_then(number) else {
            self.at = start;
            self.unsupported();
            return Ok(());
        };
        self.at += 1;
        self.rule.matches.push(Match::Mark {
            negated,
            value,
            mask,
        });
        Ok(())
    }

    /// `numgen random mod N [offset K] vmap { slot : verdict, ... }`.
    fn numgen(&mut self) -> Result<(), ParseError> {
        let start = self.at;
        if self.word(1) != Some("random") || self.word(2) != Some("mod") {
            self.unsupported();
            return Ok(());
        }
        let Some(modulus) = self
            .word(3)
            .and_then(|w| w.parse::<u32>().ok())
            .filter(|m| *m > 0)
        else {
            return Err(ParseError::new(
                self.line(),
                "numgen random mod: expected a positive number",
            ));
        };
        self.at += 4;
        let mut offset = 0;
        if self.word(0) == Some("offset") {
            offset = self
                .word(1)
                .and_then(|w| w.parse::<u32>().ok())
                .unwrap_or(0);
            self.at += 2;
        }
        if self.word(0) != Some("vmap") {
            self.at = start;
            self.unsupported();
            return Ok(());
        }
        self.at += 1;
        let line = self.line();
        let elements = match self.map_ref()? {
            MapRef::Inline(elements) => elements,
            MapRef::Named(name) => {
                self.rule.actions.push(Action::Unsupported(format!(
                    "numgen random mod {modulus} vmap @{name}"
                )));
                return Ok(());
            }
        };
        let mut slots = Vec::new();
        for element in elements {
            let (low, high) = match element.key.as_slice() {
                [KeyValue::Port(low, high)] => (u32::from(*low), u32::from(*high)),
                _ => {
                    return Err(ParseError::new(
                        line,
                        "numgen vmap: expected numbers or ranges as keys",
                    ));
                }
            };
            let verdict = element.verdict.ok_or_else(|| {
                ParseError::new(line, "numgen vmap: an element without a verdict")
            })?;
            // The map is keyed by the generated number plus the offset.
            if high < offset {
                continue;
            }
            slots.push(Slot {
                low: low.saturating_sub(offset),
                high: high - offset,
                verdict,
            });
        }
        self.rule.actions.push(Action::Numgen { modulus, slots });
        Ok(())
    }
}

/// Parses the statements of one rule.
fn parse_rule(tokens: &[Token], line: usize, text: String) -> Result<Rule, ParseError> {
    RuleParser {
        tokens,
        at: 0,
        rule: Rule {
            line,
            text,
            matches: Vec::new(),
            actions: Vec::new(),
            comment: None,
        },
    }
    .parse()
}

/// The text of `line` (1-based, in `lines`), without a trailing `# handle N`.
fn line_text(lines: &[&str], line: usize) -> String {
    let raw = lines
        .get(line.saturating_sub(1))
        .copied()
        .unwrap_or("")
        .trim();
    match raw.rfind(" # handle ") {
        Some(at) => raw[..at].trim_end().to_owned(),
        None => raw.to_owned(),
    }
}

/// Set/map declaration items from `type ...`, `flags ...`, `comment "..."`, `elements = {...}`.
fn set_items(set: &mut NamedSet, statement: &[Token], line: usize) -> Result<(), ParseError> {
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

fn new_set(name: &str, line: usize, map: bool) -> NamedSet {
    NamedSet {
        name: name.to_owned(),
        line,
        is_map: map,
        type_text: String::new(),
        comment: None,
        elements: Vec::new(),
    }
}

/// Reads `nft list` output.
fn parse_list(text: &str, tokens: &[Token]) -> Result<Vec<Table>, ParseError> {
    let source_lines: Vec<&str> = text.lines().collect();
    let mut cursor = Cursor { tokens, at: 0 };
    let mut tables = Vec::new();
    loop {
        cursor.skip_newlines();
        if cursor.peek().is_none() {
            break;
        }
        let line = cursor.line();
        let keyword = cursor.expect_word("`table`")?;
        if keyword != "table" {
            return Err(ParseError::new(
                line,
                format!("expected `table`, found {keyword:?}"),
            ));
        }
        let mut family_word = cursor.expect_word("a family or a table name")?;
        let family = match family_of(family_word) {
            Some(family) => {
                family_word = cursor.expect_word("a table name")?;
                family
            }
            None => TableFamily::Ip,
        };
        let mut table = Table::new(family, family_word, line);
        cursor.expect(&Tok::Open, "\"{\" after the table name")?;
        loop {
            cursor.skip_newlines();
            let line = cursor.line();
            match cursor.next() {
                Some(Tok::Close) => break,
                Some(Tok::Word(word)) => match word.as_str() {
                    "comment" | "flags" => {
                        cursor.statement();
                    }
                    "set" | "map" => {
                        let name = cursor.expect_word("a set name")?;
                        cursor.expect(&Tok::Open, "\"{\" after the set name")?;
                        let mut set = new_set(name, line, word == "map");
                        loop {
                            cursor.skip_newlines();
                            if cursor.peek() == Some(&Tok::Close) {
                                cursor.next();
                                break;
                            }
                            if cursor.peek().is_none() {
                                return Err(ParseError::new(
                                    line,
                                    format!("set {name} is not closed"),
                                ));
                            }
                            let statement = cursor.statement();
                            if cursor.peek() == Some(&Tok::Semi) {
                                cursor.next();
                            }
                            set_items(&mut set, &statement, cursor.line())?;
                        }
                        table.sets.insert(set.name.clone(), set);
                    }
                    "chain" => {
                        let name = cursor.expect_word("a chain name")?;
                        cursor.expect(&Tok::Open, "\"{\" after the chain name")?;
                        let mut chain = Chain {
                            name: name.to_owned(),
                            line,
                            base: None,
                            rules: Vec::new(),
                        };
                        loop {
                            cursor.skip_newlines();
                            match cursor.peek() {
                                Some(Tok::Close) => {
                                    cursor.next();
                                    break;
                                }
                                None => {
                                    return Err(ParseError::new(
                                        line,
                                        format!("chain {name} is not closed"),
                                    ));
                                }
                                _ => {}
                            }
                            let rule_line = cursor.line();
                            match cursor.peek_word() {
                                Some("comment") if chain.rules.is_empty() => {
                                    cursor.statement();
                                }
                                Some("type") => {
                                    let declaration = cursor.statement();
                                    let mut policy: Option<String> = None;
                                    if cursor.peek() == Some(&Tok::Semi) {
                                        cursor.next();
                                        let more = cursor.statement();
                                        if let [
                                            Token {
                                                tok: Tok::Word(p), ..
                                            },
                                            Token {
                                                tok: Tok::Word(value),
                                                ..
                                            },
                                        ] = more.as_slice()
                                            && p == "policy"
                                        {
                                            policy = Some(value.clone());
                                        }
                                        while cursor.peek() == Some(&Tok::Semi) {
                                            cursor.next();
                                        }
                                    }
                                    chain.base = parse_base(&declaration, policy.as_deref())?;
                                }
                                _ => {
                                    let statement = cursor.statement();
                                    if statement.is_empty() {
                                        return Err(ParseError::new(
                                            rule_line,
                                            format!(
                                                "unexpected {} in chain {name}",
                                                describe(cursor.peek())
                                            ),
                                        ));
                                    }
                                    chain.rules.push(parse_rule(
                                        &statement,
                                        rule_line,
                                        line_text(&source_lines, rule_line),
                                    )?);
                                }
                            }
                        }
                        table.add_chain(chain);
                    }
                    other => {
                        return Err(ParseError::new(
                            line,
                            format!(
                                "expected set, map, chain or comment in table {}, found {other:?}",
                                table.name
                            ),
                        ));
                    }
                },
                other => {
                    return Err(ParseError::new(
                        line,
                        format!(
                            "expected set, map, chain or \"}}\" in table {}, found {}",
                            table.name,
                            describe(other)
                        ),
                    ));
                }
            }
        }
        tables.push(table);
    }
    Ok(tables)
}

/// Reads an `nft -f` transaction.
fn parse_transaction(tokens: &[Token]) -> Result<Vec<Table>, ParseError> {
    let mut tables: Vec<Table> = Vec::new();
    let mut cursor = Cursor { tokens, at: 0 };
    loop {
        cursor.skip_newlines();
        if cursor.peek().is_none() {
            break;
        }
        let line = cursor.line();
        let mut command: Vec<Token> = Vec::new();
        // A command is one line (braces may not span lines in kube-proxy's transactions, but
        // nft allows it).
        let mut depth = 0usize;
        while let Some(token) = cursor.tokens.get(cursor.at) {
            match token.tok {
                Tok::Newline if depth == 0 => break,
                Tok::Newline => {}
                Tok::Open => {
                    depth += 1;
                    command.push(token.clone());
                }
                Tok::Close => {
                    depth = depth.saturating_sub(1);
                    command.push(token.clone());
                }
                _ => command.push(token.clone()),
            }
            cursor.at += 1;
        }
        transaction_command(&command, line, &mut tables)?;
    }
    Ok(tables)
}

fn words_of(tokens: &[Token]) -> Vec<&str> {
    tokens
        .iter()
        .map_while(|t| match &t.tok {
            Tok::Word(w) => Some(w.as_str()),
            _ => None,
        })
        .collect()
}

fn transaction_command(
    command: &[Token],
    line: usize,
    tables: &mut Vec<Table>,
) -> Result<(), ParseError> {
    let words = words_of(command);
    let (Some(&verb), Some(&object)) = (words.first(), words.get(1)) else {
        return Err(ParseError::new(
            line,
            format!("expected an nft command, found {:?}", text_of(command)),
        ));
    };
    // `add table ip kube-proxy` / `add chain ip kube-proxy NAME` (the family may be omitted).
    let mut at = 2;
    let family = match words.get(at).and_then(|w| family_of(w)) {
        Some(family) => {
            at += 1;
            family
        }
        None => TableFamily::Ip,
    };
    let Some(&table_name) = words.get(at) else {
        return Err(ParseError::new(
            line,
            format!("{verb} {object}: expected a table name"),
        ));
    };
    at += 1;
    let find = |tables: &mut Vec<Table>| {
        tables
            .iter()
            .position(|t| t.name == table_name && t.family == family)
    };
    if object == "table" {
        match verb {
            "add" | "create" => {
                if find(tables).is_none() {
                    tables.push(Table::new(family, table_name, line));
                }
            }
            "delete" | "destroy" => {
                if let Some(index) = find(tables) {
                    tables.remove(index);
                }
            }
            "flush" => {
                if let Some(index) = find(tables) {
                    for chain in &mut tables[index].chains {
                        chain.rules.clear();
                    }
                    for set in tables[index].sets.values_mut() {
                        set.elements.clear();
                    }
                }
            }
            _ => {
                return Err(ParseError::new(
                    line,
                    format!("unsupported command `{verb} table`"),
                ));
            }
        }
        return Ok(());
    }
    let Some(index) = find(tables) else {
        if matches!(verb, "delete" | "destroy" | "flush") {
            return Ok(());
        }
        return Err(ParseError::new(
            line,
            format!("{verb} {object}: no table {table_name} (add table first)"),
        ));
    };
    let table = &mut tables[index];
    let name = words.get(at).copied();
    let body_start = command.iter().position(|t| t.tok == Tok::Open);
    match (verb, object) {
        ("add" | "create", "chain") => {
            let name =
                name.ok_or_else(|| ParseError::new(line, "add chain: expected a chain name"))?;
            if table.chain(name).is_none() {
                table.add_chain(Chain {
                    name: name.to_owned(),
                    line,
                    base: None,
                    rules: Vec::new(),
                });
            }
            if let Some(open) = body_start {
                let body = &command[open + 1..command.len().saturating_sub(1)];
                let statements: Vec<&[Token]> = body.split(|t| t.tok == Tok::Semi).collect();
                let declaration = statements
                    .iter()
                    .find(|s| words_of(s).first() == Some(&"type"));
                let policy = statements
                    .iter()
                    .find_map(|s| match words_of(s).as_slice() {
                        ["policy", value] => Some(*value),
                        _ => None,
                    });
                if let Some(declaration) = declaration
                    && let Some(chain) = table.chain_mut(name)
                {
                    chain.base = parse_base(declaration, policy)?;
                }
            }
        }
        ("flush", "chain") => {
            if let Some(chain) = name.and_then(|n| table.chain_mut(n)) {
                chain.rules.clear();
            }
        }
        ("delete" | "destroy", "chain") => {
            if let Some(name) = name {
                table.remove_chain(name);
            }
        }
        ("add" | "create", "set" | "map") => {
            let name = name
                .ok_or_else(|| ParseError::new(line, format!("add {object}: expected a name")))?;
            let mut set = table
                .sets
                .remove(name)
                .unwrap_or_else(|| new_set(name, line, object == "map"));
            if let Some(open) = body_start {
                let body = &command[open + 1..command.len().saturating_sub(1)];
                for statement in body.split(|t| t.tok == Tok::Semi) {
                    set_items(&mut set, statement, line)?;
                }
            }
            table.sets.insert(name.to_owned(), set);
        }
        ("flush", "set" | "map") => {
            if let Some(set) = name.and_then(|n| table.sets.get_mut(n)) {
                set.elements.clear();
            }
        }
        ("delete" | "destroy", "set" | "map") => {
            if let Some(name) = name {
                table.sets.remove(name);
            }
        }
        ("add" | "create" | "delete" | "destroy", "element") => {
            let name = name.ok_or_else(|| {
                ParseError::new(line, format!("{verb} element: expected a set name"))
            })?;
            let open = body_start.ok_or_else(|| {
                ParseError::new(line, format!("{verb} element: expected {{ elements }}"))
            })?;
            let inner = &command[open + 1..command.len().saturating_sub(1)];
            let elements = parse_elements(inner, line)?;
            let set = table.sets.get_mut(name).ok_or_else(|| {
                ParseError::new(
                    line,
                    format!("{verb} element: no set or map {name} in table {table_name}"),
                )
            })?;
            for element in elements {
                set.elements.retain(|e| e.key != element.key);
                if matches!(verb, "add" | "create") {
                    set.elements.push(element);
                }
            }
        }
        ("add" | "insert", "rule") => {
            let chain_name = name.ok_or_else(|| {
                ParseError::new(line, format!("{verb} rule: expected a chain name"))
            })?;
            let rule_tokens = &command[at + 1..];
            if matches!(
                words_of(rule_tokens).first(),
                Some(&"position" | &"handle" | &"index")
            ) {
                return Err(ParseError::new(
                    line,
                    format!(
                        "{verb} rule ... {}: rule positions and handles are not supported",
                        words_of(rule_tokens)[0]
                    ),
                ));
            }
            let text = text_of(rule_tokens);
            let rule = parse_rule(rule_tokens, line, text)?;
            let chain = table.chain_mut(chain_name).ok_or_else(|| {
                ParseError::new(
                    line,
                    format!("{verb} rule: no chain {chain_name} in table {table_name}"),
                )
            })?;
            if verb == "insert" {
                chain.rules.insert(0, rule);
            } else {
                chain.rules.push(rule);
            }
        }
        (verb, "rule") => {
            return Err(ParseError::new(
                line,
                format!("`{verb} rule` by handle is not supported (only add and insert)"),
            ));
        }
        (verb, object) => {
            return Err(ParseError::new(
                line,
                format!("unsupported command `{verb} {object}`"),
            ));
        }
    }
    Ok(())
}

/// Every jump and goto names a chain of its table.
fn check_targets(tables: &[Table]) -> Result<(), ParseError> {
    for table in tables {
        for chain in &table.chains {
            for rule in &chain.rules {
                let mut targets: Vec<&str> = Vec::new();
                for action in &rule.actions {
                    match action {
                        Action::Verdict(Verdict::Jump(t) | Verdict::Goto(t)) => targets.push(t),
                        Action::Numgen { slots, .. } => {
                            for slot in slots {
                                if let Verdict::Jump(t) | Verdict::Goto(t) = &slot.verdict {
                                    targets.push(t);
                                }
                            }
                        }
                        Action::VerdictMap {
                            map: MapRef::Inline(elements),
                            ..
                        } => {
                            for element in elements {
                                if let Some(Verdict::Jump(t) | Verdict::Goto(t)) = &element.verdict
                                {
                                    targets.push(t);
                                }
                            }
                        }
                        _ => {}
                    }
                }
                for target in targets {
                    if table.chain(target).is_none() {
                        return Err(ParseError::new(
                            rule.line,
                            format!(
                                "jump or goto to {target}: no chain {target} in table {}",
                                table.name
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Reads `nft list` output or an `nft -f` transaction.
pub fn parse(text: &str, format: Format) -> Result<Ruleset, ParseError> {
    let tokens = lex(text)?;
    let tables = match format {
        Format::NftTransaction => parse_transaction(&tokens)?,
        _ => parse_list(text, &tokens)?,
    };
    check_targets(&tables)?;
    Ok(Ruleset { format, tables })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "table ip kube-proxy { # handle 18
\tcomment \"rules for kube-proxy\"
\tset cluster-ips {
\t\ttype ipv4_addr
\t\tcomment \"Active ClusterIPs\"
\t\telements = { 10.96.0.1, 10.96.0.10,
\t\t\t     10.96.0.20 }
\t}

\tmap service-ips {
\t\ttype ipv4_addr . inet_proto . inet_service : verdict
\t\telements = { 10.96.0.20 . tcp . 80 : goto service-X,
\t\t\t     10.96.0.40 . tcp . 80 comment \"shop/empty:http\" : goto reject-chain }
\t}

\tchain nat-prerouting {
\t\ttype nat hook prerouting priority dstnat; policy accept;
\t\tjump services
\t}

\tchain services {
\t\tip daddr . meta l4proto . th dport vmap @service-ips
\t}

\tchain reject-chain {
\t\tcomment \"helper\"
\t\treject
\t}

\tchain service-X {
\t\tip daddr 10.96.0.20 tcp dport 80 ip saddr != 10.244.0.0/16 jump mark-for-masquerade # handle 7
\t\tnumgen random mod 2 vmap { 0 : goto endpoint-a, 1 : goto endpoint-b }
\t}

\tchain mark-for-masquerade {
\t\tmeta mark set meta mark | 0x00004000
\t}

\tchain endpoint-a {
\t\tip saddr 10.244.1.5 jump mark-for-masquerade
\t\tmeta l4proto tcp dnat to 10.244.1.5:8080
\t}

\tchain endpoint-b {
\t\tmeta l4proto tcp dnat to [fd00::1]:8080
\t}
}
";

    #[test]
    fn reads_nft_list_output() {
        let ruleset = parse(LIST, Format::NftList).expect("parses");
        let table = &ruleset.tables[0];
        assert_eq!(
            (table.family, table.name.as_str()),
            (TableFamily::Ip, "kube-proxy")
        );
        assert_eq!(table.sets["cluster-ips"].elements.len(), 3);
        let map = &table.sets["service-ips"];
        assert!(map.is_map);
        assert_eq!(map.elements[1].comment.as_deref(), Some("shop/empty:http"));
        assert_eq!(
            map.elements[1].verdict,
            Some(Verdict::Goto("reject-chain".to_owned()))
        );
        assert_eq!(map.elements[1].line, 13);
        let base = table
            .chain("nat-prerouting")
            .and_then(|c| c.base)
            .expect("base chain");
        assert_eq!(
            (base.hook, base.priority, base.kind),
            (Hook::Prerouting, -100, ChainKind::Nat)
        );
        let service = table.chain("service-X").expect("chain");
        assert_eq!(service.rules[0].line, 31);
        assert!(!service.rules[0].text.contains("handle"));
        assert_eq!(service.rules[0].matches.len(), 3);
        assert_eq!(
            service.rules[1].actions,
            vec![Action::Numgen {
                modulus: 2,
                slots: vec![
                    Slot {
                        low: 0,
                        high: 0,
                        verdict: Verdict::Goto("endpoint-a".to_owned())
                    },
                    Slot {
                        low: 1,
                        high: 1,
                        verdict: Verdict::Goto("endpoint-b".to_owned())
                    },
                ],
            }]
        );
        assert_eq!(
            table.chain("mark-for-masquerade").expect("chain").rules[0].actions,
            vec![Action::SetMark {
                and: !0x4000,
                xor: 0x4000
            }]
        );
        assert_eq!(
            table.chain("endpoint-b").expect("chain").rules[0].actions,
            vec![Action::Dnat {
                ip: "fd00::1".parse().expect("ip"),
                port: Some(8080)
            }]
        );
    }

    #[test]
    fn reads_transactions() {
        let text = "add table ip kube-proxy { comment \"rules for kube-proxy\" ; }
add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment \"x\" ; }
add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }
add chain ip kube-proxy services
add chain ip kube-proxy masquerading
add rule ip kube-proxy nat-prerouting jump services
add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips
add rule ip kube-proxy masquerading mark and 0x4000 == 0 return
add rule ip kube-proxy masquerading mark set mark xor 0x4000
# a comment line
add element ip kube-proxy service-ips { 10.96.0.20 . tcp . 80 : goto services }
add element ip kube-proxy service-ips { 10.96.0.30 . tcp . 80 : goto services }
delete element ip kube-proxy service-ips { 10.96.0.30 . tcp . 80 }
flush chain ip kube-proxy nat-prerouting
add rule ip kube-proxy nat-prerouting jump masquerading
";
        let ruleset = parse(text, Format::NftTransaction).expect("parses");
        let table = &ruleset.tables[0];
        assert_eq!(table.sets["service-ips"].elements.len(), 1);
        let prerouting = table.chain("nat-prerouting").expect("chain");
        assert_eq!(prerouting.rules.len(), 1, "flushed, then one rule");
        assert_eq!(prerouting.rules[0].line, 15);
        let masquerading = table.chain("masquerading").expect("chain");
        assert_eq!(
            masquerading.rules[0].matches,
            vec![Match::Mark {
                negated: false,
                value: 0,
                mask: 0x4000
            }]
        );
        assert_eq!(
            masquerading.rules[1].actions,
            vec![Action::SetMark {
                and: u32::MAX,
                xor: 0x4000
            }]
        );
    }

    #[test]
    fn errors_name_the_line() {
        let cases: &[(Format, &str, &str)] = &[
            (
                Format::NftList,
                "table ip t {\n\tchain c {\n\t\tjump nowhere\n\t}\n}\n",
                "line 3: jump or goto to nowhere: no chain nowhere in table t",
            ),
            (
                Format::NftList,
                "table ip t {\n\tchain c {\n\t\tip daddr 10.0.0.300 accept\n\t}\n}\n",
                "line 3: ip daddr: expected an address or prefix, found \"10.0.0.300\"",
            ),
            (
                Format::NftList,
                "table ip t {\n\tchain c {\n\t\taccept\n",
                "line 2: chain c is not closed",
            ),
            (
                Format::NftList,
                "table ip t {\n\tflowtable f {\n\t}\n}\n",
                "line 2: expected set, map, chain or comment in table t, found \"flowtable\"",
            ),
            (
                Format::NftList,
                "table ip t {\n\tchain c {\n\t\ttype nat hook prerouting priority sometimes; policy accept;\n\t}\n}\n",
                "line 3: expected a chain priority, found \"sometimes\"",
            ),
            (
                Format::NftList,
                "table ip t {\n\tchain c {\n\t\tcomment \"open\n\t}\n}\n",
                "line 3: unterminated \" quote",
            ),
            (
                Format::NftTransaction,
                "add rule ip t c accept\n",
                "line 1: add rule: no table t (add table first)",
            ),
            (
                Format::NftTransaction,
                "add table ip t\nadd rule ip t c accept\n",
                "line 2: add rule: no chain c in table t",
            ),
            (
                Format::NftTransaction,
                "add table ip t\nadd chain ip t c\ndelete rule ip t c handle 4\n",
                "line 3: `delete rule` by handle is not supported (only add and insert)",
            ),
            (
                Format::NftTransaction,
                "add table ip t\nadd element ip t s { 1.2.3.4 }\n",
                "line 2: add element: no set or map s in table t",
            ),
            (
                Format::NftTransaction,
                "add table ip t\nadd map ip t m { type ipv4_addr : verdict ; }\nadd element ip t m { 1.2.3.4 : goto }\n",
                "line 3: expected a verdict (goto CHAIN, jump CHAIN, drop, accept, return), found \"goto\"",
            ),
            (
                Format::NftTransaction,
                "add table ip t\nadd chain ip t c\nadd rule ip t c numgen random mod 0 vmap { 0 : drop }\n",
                "line 3: numgen random mod: expected a positive number",
            ),
        ];
        for (format, text, want) in cases {
            let got = parse(text, *format)
                .map(|_| ())
                .expect_err("must not parse")
                .to_string();
            assert_eq!(&got, want, "for:\n{text}");
        }
    }

    #[test]
    fn unknown_statements_are_kept() {
        let text = "table inet t {\n\tchain c {\n\t\tlimit rate 10/second accept\n\t\tip daddr 10.0.0.1 meter m { ip saddr } drop\n\t}\n}\n";
        let ruleset = parse(text, Format::NftList).expect("parses");
        let chain = ruleset.tables[0].chain("c").expect("chain");
        assert_eq!(
            chain.rules[0].matches,
            vec![Match::Unsupported("limit rate 10/second accept".to_owned())]
        );
        assert!(
            matches!(chain.rules[1].matches.last(), Some(Match::Unsupported(text)) if text.starts_with("meter m"))
        );
        assert_eq!(ruleset.tables[0].family, TableFamily::Inet);
    }

    #[test]
    fn priorities() {
        for (words, want) in [
            (&["-110"][..], -110),
            (&["dstnat"][..], -100),
            (&["dstnat", "-", "10"][..], -110),
            (&["dstnat-10"][..], -110),
            (&["srcnat", "+", "5"][..], 105),
            (&["filter"][..], 0),
        ] {
            assert_eq!(parse_priority(words, 1).expect("parses"), want, "{words:?}");
        }
    }
}
