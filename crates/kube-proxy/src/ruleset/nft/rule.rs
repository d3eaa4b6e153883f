//! One nft rule read into matches and actions, statement by statement.

use std::net::IpAddr;

use ipnet::IpNet;

use super::elements::{key_value, parse_elements, verdict_of};
use super::lexer::{Tok, Token, describe, text_of};
use crate::ruleset::values::{parse_destination, parse_net, parse_protocol};
use crate::ruleset::{
    Action, AddrValue, CtState, DnatSlot, KeyPart, KeyValue, MapRef, Match, ParseError, Rule, Side,
    Slot, Verdict,
};
use clusterdns_model::Protocol;

/// What reading one statement leaves: more of the rule to read, or the rest kept as one
/// unsupported part.
enum Read {
    More,
    Done,
}

/// A rule's statements.
pub(super) struct RuleParser<'t> {
    pub(super) tokens: &'t [Token],
    pub(super) at: usize,
    pub(super) rule: Rule,
}

impl<'t> RuleParser<'t> {
    pub(super) fn word(&self, offset: usize) -> Option<&str> {
        match self.tokens.get(self.at + offset).map(|t| &t.tok) {
            Some(Tok::Word(w)) => Some(w.as_str()),
            _ => None,
        }
    }

    pub(super) fn take(&mut self) -> Option<Tok> {
        let tok = self.tokens.get(self.at).map(|t| t.tok.clone());
        self.at += 1;
        tok
    }

    pub(super) fn line(&self) -> usize {
        self.rule.line
    }

    pub(super) fn rest_text(&self) -> String {
        text_of(&self.tokens[self.at.min(self.tokens.len())..])
    }

    /// Everything from here on is not understood: keep it, report it when reached.
    pub(super) fn unsupported(&mut self) {
        let text = self.rest_text();
        self.rule.matches.push(Match::Unsupported(text));
        self.at = self.tokens.len();
    }

    /// An optional `==`/`!=`: whether negated.
    pub(super) fn operator(&mut self) -> bool {
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
    pub(super) fn values(&mut self) -> Result<Vec<String>, ParseError> {
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
    pub(super) fn concatenation(&mut self) -> Option<Vec<KeyPart>> {
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

    pub(super) fn parse(mut self) -> Result<Rule, ParseError> {
        while self.at < self.tokens.len() {
            let Some(word) = self.word(0).map(str::to_owned) else {
                self.unsupported();
                break;
            };
            if let Read::Done = self.statement(&word)? {
                break;
            }
        }
        Ok(self.rule)
    }

    /// Reads the statement at the cursor, which starts with `word`.
    fn statement(&mut self, word: &str) -> Result<Read, ParseError> {
        let start = self.at;
        // Concatenated lookups: `ip daddr . meta l4proto . th dport vmap @map`.
        if matches!(word, "ip" | "ip6" | "meta" | "th" | "tcp" | "udp")
            && self.lookahead_concatenation()
        {
            return self.verdict_map(start);
        }
        match word {
            "ip" | "ip6" => self.address(word),
            "tcp" | "udp" | "sctp" | "th" => self.port(word),
            "meta" if self.word(1) == Some("l4proto") => self.l4proto(),
            "meta" | "mark" if word == "mark" || self.word(1) == Some("mark") => {
                self.mark(word == "meta")?;
                Ok(Read::More)
            }
            "fib" => self.fib(start),
            "ct" => self.ct(start),
            "numgen" => {
                self.numgen()?;
                Ok(Read::More)
            }
            "iifname" | "oifname" | "iif" | "oif" => self.interface(word),
            "counter" => self.counter(),
            "log" => self.log(),
            "comment" => self.comment(),
            "jump" | "goto" => self.jump(word),
            "accept" | "drop" | "return" | "continue" => self.verdict(word),
            "reject" => self.reject(),
            "dnat" | "snat" => self.nat(word, start),
            "masquerade" => self.masquerade(),
            "update" | "add" if self.word(1).is_some_and(|w| w.starts_with('@')) => {
                self.set_update()
            }
            _ => {
                self.unsupported();
                Ok(Read::Done)
            }
        }
    }

    /// `SELECTOR . SELECTOR ... vmap MAP`: a concatenated lookup; `SELECTOR . ... @set`: a
    /// concatenated membership test.
    fn verdict_map(&mut self, start: usize) -> Result<Read, ParseError> {
        let key = self.concatenation().unwrap_or_default();
        let negated = self.word(0) == Some("!=");
        let member = self.word(usize::from(negated));
        if let Some(set) = member.and_then(|w| w.strip_prefix('@'))
            && !key.is_empty()
        {
            let set = set.to_owned();
            self.at += 1 + usize::from(negated);
            self.rule.matches.push(Match::KeySet { key, negated, set });
            return Ok(Read::More);
        }
        if self.word(0) != Some("vmap") {
            self.at = start;
            self.unsupported();
            return Ok(Read::Done);
        }
        self.at += 1;
        let map = self.map_ref()?;
        self.rule.actions.push(Action::VerdictMap { key, map });
        Ok(Read::More)
    }

    /// `ip`/`ip6 saddr`/`daddr`: a prefix, an anonymous set or `@set`.
    fn address(&mut self, word: &str) -> Result<Read, ParseError> {
        let side = match self.word(1) {
            Some("saddr") => Side::Source,
            Some("daddr") => Side::Destination,
            _ => {
                self.unsupported();
                return Ok(Read::Done);
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
        Ok(Read::More)
    }

    /// `tcp`/`udp`/`sctp`/`th dport`/`sport`: ports and ranges.
    fn port(&mut self, word: &str) -> Result<Read, ParseError> {
        let side = match self.word(1) {
            Some("dport") => Side::Destination,
            Some("sport") => Side::Source,
            _ => {
                self.unsupported();
                return Ok(Read::Done);
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
        let protocol = match word {
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
        Ok(Read::More)
    }

    /// `meta l4proto`.
    fn l4proto(&mut self) -> Result<Read, ParseError> {
        self.at += 2;
        let negated = self.operator();
        let protocols = self.values()?.iter().map(|w| parse_protocol(w)).collect();
        self.rule
            .matches
            .push(Match::Protocol { negated, protocols });
        Ok(Read::More)
    }

    /// `fib daddr|saddr type local`.
    fn fib(&mut self, start: usize) -> Result<Read, ParseError> {
        let side = match self.word(1) {
            Some("daddr") => Side::Destination,
            Some("saddr") => Side::Source,
            _ => {
                self.unsupported();
                return Ok(Read::Done);
            }
        };
        if self.word(2) != Some("type") {
            self.unsupported();
            return Ok(Read::Done);
        }
        self.at += 3;
        let negated = self.operator();
        let values = self.values()?;
        if values != ["local"] {
            self.at = start;
            self.unsupported();
            return Ok(Read::Done);
        }
        self.rule.matches.push(Match::Local { side, negated });
        Ok(Read::More)
    }

    /// `ct state`/`ct status`: the conntrack states.
    fn ct(&mut self, start: usize) -> Result<Read, ParseError> {
        match self.word(1) {
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
                                return Ok(Read::Done);
                            }
                        });
                    }
                }
                self.rule.matches.push(Match::CtState { negated, states });
            }
            _ => {
                self.unsupported();
                return Ok(Read::Done);
            }
        }
        Ok(Read::More)
    }

    /// `iifname`/`oifname`/`iif`/`oif`.
    fn interface(&mut self, word: &str) -> Result<Read, ParseError> {
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
        Ok(Read::More)
    }

    /// `counter [packets N bytes N]`: nothing the walk follows.
    fn counter(&mut self) -> Result<Read, ParseError> {
        self.at += 1;
        while matches!(self.word(0), Some("packets" | "bytes")) {
            self.at += 2;
        }
        Ok(Read::More)
    }

    /// `log` and its options: the walk goes on.
    fn log(&mut self) -> Result<Read, ParseError> {
        self.at += 1;
        while let Some(option) = self.word(0) {
            match option {
                "prefix" | "level" | "group" | "snaplen" | "queue-threshold" | "flags" => {
                    self.at += 2;
                }
                _ => break,
            }
        }
        self.rule.actions.push(Action::Continue);
        Ok(Read::More)
    }

    /// `comment "..."`.
    fn comment(&mut self) -> Result<Read, ParseError> {
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
        Ok(Read::More)
    }

    /// `jump`/`goto CHAIN`.
    fn jump(&mut self, word: &str) -> Result<Read, ParseError> {
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
        Ok(Read::More)
    }

    /// `accept`, `drop`, `return`, `continue`.
    fn verdict(&mut self, word: &str) -> Result<Read, ParseError> {
        self.at += 1;
        if let Some(verdict) = verdict_of(&[word]) {
            self.rule.actions.push(Action::Verdict(verdict));
        }
        Ok(Read::More)
    }

    /// `reject [with ...]`.
    fn reject(&mut self) -> Result<Read, ParseError> {
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
        Ok(Read::More)
    }

    /// `dnat`/`snat [ip|ip6] to ADDRESS` and its flags; `dnat ip [addr . port] to numgen
    /// random mod N map { ... }`.
    fn nat(&mut self, word: &str, start: usize) -> Result<Read, ParseError> {
        self.at += 1;
        if matches!(self.word(0), Some("ip" | "ip6")) {
            self.at += 1;
            // The transaction's spelling of an address-and-port mapping.
            if self.word(0) == Some("addr")
                && self.word(1) == Some(".")
                && self.word(2) == Some("port")
            {
                self.at += 3;
            }
        }
        if self.word(0) != Some("to") {
            self.at = start;
            self.unsupported();
            return Ok(Read::Done);
        }
        if word == "dnat" && self.word(1) == Some("numgen") {
            self.at += 1;
            return self.dnat_numgen(start);
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
        Ok(Read::More)
    }

    /// `numgen random mod N [offset K] map { SLOT : ADDRESS . PORT, ... }` after `dnat to`.
    fn dnat_numgen(&mut self, start: usize) -> Result<Read, ParseError> {
        let line = self.line();
        let Some((modulus, offset)) = self.numgen_head()? else {
            self.at = start;
            self.unsupported();
            return Ok(Read::Done);
        };
        if self.word(0) != Some("map") {
            self.at = start;
            self.unsupported();
            return Ok(Read::Done);
        }
        self.at += 1;
        let inner = self.braced()?;
        let mut slots = Vec::new();
        for part in inner.split(|t| t.tok == Tok::Comma) {
            let words: Vec<&str> = part
                .iter()
                .filter_map(|t| match &t.tok {
                    Tok::Word(w) => Some(w.as_str()),
                    _ => None,
                })
                .collect();
            if words.is_empty() {
                continue;
            }
            let Some((low, high, ip, port)) = dnat_slot(&words) else {
                return Err(ParseError::new(
                    line,
                    format!(
                        "dnat to numgen map: expected SLOT : ADDRESS . PORT, found {:?}",
                        words.join(" ")
                    ),
                ));
            };
            if high < offset {
                continue;
            }
            slots.push(DnatSlot {
                low: low.saturating_sub(offset),
                high: high - offset,
                ip,
                port,
            });
        }
        while matches!(self.word(0), Some("random" | "fully-random" | "persistent")) {
            self.at += 1;
        }
        self.rule.actions.push(Action::DnatMap { modulus, slots });
        Ok(Read::More)
    }

    /// `numgen random mod N [offset K]`, consumed: (N, K), or `None` for another numgen.
    fn numgen_head(&mut self) -> Result<Option<(u32, u32)>, ParseError> {
        if self.word(1) != Some("random") || self.word(2) != Some("mod") {
            return Ok(None);
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
        Ok(Some((modulus, offset)))
    }

    /// `masquerade` and its flags.
    fn masquerade(&mut self) -> Result<Read, ParseError> {
        self.at += 1;
        while matches!(self.word(0), Some("random" | "fully-random" | "persistent")) {
            self.at += 1;
        }
        self.rule.actions.push(Action::Masquerade);
        Ok(Read::More)
    }

    /// `update`/`add @set { ... }`: the walk goes on.
    fn set_update(&mut self) -> Result<Read, ParseError> {
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
        Ok(Read::More)
    }

    /// Whether the selector at the cursor is the first of a concatenation (`x . y`).
    pub(super) fn lookahead_concatenation(&self) -> bool {
        self.word(2) == Some(".")
    }

    /// `@name` or `{ elements }` after `vmap`.
    pub(super) fn map_ref(&mut self) -> Result<MapRef, ParseError> {
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
    pub(super) fn braced(&mut self) -> Result<&'t [Token], ParseError> {
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
    pub(super) fn mark(&mut self, meta: bool) -> Result<(), ParseError> {
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
    pub(super) fn numgen(&mut self) -> Result<(), ParseError> {
        let start = self.at;
        let Some((modulus, offset)) = self.numgen_head()? else {
            self.unsupported();
            return Ok(());
        };
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

/// One element of a `dnat to numgen` map, `SLOT : ADDRESS [. PORT]`: (low, high, address,
/// port).
fn dnat_slot(words: &[&str]) -> Option<(u32, u32, IpAddr, Option<u16>)> {
    let [key, ":", ip, rest @ ..] = words else {
        return None;
    };
    let port = match rest {
        [] => None,
        [".", port] => Some(port.parse::<u16>().ok()?),
        _ => return None,
    };
    let KeyValue::Port(low, high) = key_value(key) else {
        return None;
    };
    let ip = ip
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()?;
    Some((u32::from(low), u32::from(high), ip, port))
}

/// Parses the statements of one rule.
pub(super) fn parse_rule(tokens: &[Token], line: usize, text: String) -> Result<Rule, ParseError> {
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
