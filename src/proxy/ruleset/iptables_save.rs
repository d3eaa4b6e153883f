//! `iptables-save` output (and `iptables -S` output) into the ruleset model.
//!
//! `iptables-save` prints, per table, `*table`, a `:CHAIN POLICY [packets:bytes]` line per
//! chain, the rules as `-A CHAIN options...`, and `COMMIT`. `iptables -S` prints
//! `-P CHAIN POLICY`, `-N CHAIN` and `-A` lines without a table header; such a text is read
//! as the nat table when it has PREROUTING or POSTROUTING, else as filter. Options are read
//! in any order, the way `iptables-restore` reads them: a module's option may come after
//! other options (kube-proxy writes `-m tcp -p tcp -d 10.96.0.20 --dport 80`) and goes to the
//! last module of the rule that takes it, or to the protocol's own module (`-p tcp --dport
//! 80`); every known option and module is
//! turned into a match or an action, and an unknown module or target is kept as
//! unsupported (reported by the tracer if reached). Malformed text (an unknown option, an
//! option without its value, a bad address, a rule before its table, a jump to a chain that
//! does not exist) is an error with its line.

use super::values::{parse_destination, parse_net, parse_protocol};
use super::{
    Action, AddrValue, Chain, CtState, Format, Match, ParseError, ProtoValue, RecentOp, Rule,
    Ruleset, Side, Table, TableFamily, Verdict, iptables_base,
};
use crate::model::Protocol;
use crate::proxy::cascade::Stored;

/// Splits a line into words the way iptables-restore does: whitespace-separated, with
/// double- or single-quoted words in which a backslash escapes the next character.
fn words(line: &str, number: usize) -> Result<Vec<String>, ParseError> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return Ok(words);
        };
        let mut word = String::new();
        if first == '"' || first == '\'' {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                if c == '\\' {
                    if let Some(next) = chars.next() {
                        word.push(next);
                    }
                } else if c == first {
                    closed = true;
                    break;
                } else {
                    word.push(c);
                }
            }
            if !closed {
                return Err(ParseError::new(
                    number,
                    format!("unterminated {first} quote"),
                ));
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                word.push(c);
                chars.next();
            }
        }
        words.push(word);
    }
}

/// `80`, `1024:65535`, `:1023`, `1024:` (iptables' range syntax).
fn parse_port_range(text: &str) -> Option<(u16, u16)> {
    match text.split_once(':') {
        None => {
            let port = text.parse().ok()?;
            Some((port, port))
        }
        Some((low, high)) => {
            let low = if low.is_empty() { 0 } else { low.parse().ok()? };
            let high = if high.is_empty() {
                u16::MAX
            } else {
                high.parse().ok()?
            };
            (low <= high).then_some((low, high))
        }
    }
}

/// A number in iptables' syntax: decimal or `0x` hex.
fn parse_u32(text: &str) -> Option<u32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// `VALUE[/MASK]` (the mask defaults to all ones).
fn parse_value_mask(text: &str) -> Option<(u32, u32)> {
    match text.split_once('/') {
        Some((value, mask)) => Some((parse_u32(value)?, parse_u32(mask)?)),
        None => Some((parse_u32(text)?, u32::MAX)),
    }
}

fn ct_state(text: &str) -> Option<CtState> {
    Some(match text {
        "NEW" => CtState::New,
        "ESTABLISHED" => CtState::Established,
        "RELATED" => CtState::Related,
        "INVALID" => CtState::Invalid,
        "UNTRACKED" => CtState::Untracked,
        "DNAT" => CtState::Dnat,
        "SNAT" => CtState::Snat,
        _ => return None,
    })
}

/// Targets that do not end the walk and do not change what the tracer follows.
const NON_TERMINATING: &[&str] = &[
    "LOG",
    "NFLOG",
    "ULOG",
    "TRACE",
    "AUDIT",
    "CT",
    "NOTRACK",
    "CHECKSUM",
    "TCPMSS",
    "CONNMARK",
    "CLASSIFY",
    "DSCP",
    "TOS",
    "TTL",
    "HL",
    "SECMARK",
    "CONNSECMARK",
    "IDLETIMER",
    "LED",
];

/// The options each match module takes (`iptables -m NAME --help`), so that an option
/// written after other options (`-m tcp -p tcp -d 10.0.0.1 --dport 80`, as kube-proxy
/// writes its rules) reaches its module, as iptables' option parser has it.
fn module_takes(module: &str, option: &str) -> Option<bool> {
    let options: &[&str] = match module {
        "tcp" => &[
            "--dport",
            "--destination-port",
            "--sport",
            "--source-port",
            "--syn",
            "--tcp-flags",
            "--tcp-option",
        ],
        "udp" | "udplite" => &["--dport", "--destination-port", "--sport", "--source-port"],
        "sctp" => &[
            "--dport",
            "--destination-port",
            "--sport",
            "--source-port",
            "--chunk-types",
        ],
        "multiport" => &[
            "--dports",
            "--destination-ports",
            "--sports",
            "--source-ports",
            "--ports",
        ],
        "comment" => &["--comment"],
        "mark" => &["--mark"],
        "conntrack" => &[
            "--ctstate",
            "--ctproto",
            "--ctorigsrc",
            "--ctorigdst",
            "--ctreplsrc",
            "--ctrepldst",
            "--ctorigsrcport",
            "--ctorigdstport",
            "--ctreplsrcport",
            "--ctrepldstport",
            "--ctstatus",
            "--ctexpire",
            "--ctdir",
        ],
        "state" => &["--state"],
        "addrtype" => &[
            "--src-type",
            "--dst-type",
            "--limit-iface-in",
            "--limit-iface-out",
        ],
        "statistic" => &["--mode", "--probability", "--every", "--packet"],
        "recent" => &[
            "--set",
            "--rcheck",
            "--update",
            "--remove",
            "--name",
            "--seconds",
            "--reap",
            "--hitcount",
            "--rttl",
            "--mask",
            "--rsource",
            "--rdest",
        ],
        "nfacct" => &["--nfacct-name"],
        // A module clusterdns does not know: it may take anything.
        _ => return None,
    };
    Some(options.contains(&option))
}

/// One `-m NAME` of a rule, with its options (`!`, name, values), and where its matches go
/// among the rule's.
struct ModuleUse {
    at: usize,
    name: String,
    options: Vec<(bool, String, Vec<String>)>,
}

/// A rule's options, read word by word.
struct RuleReader<'a> {
    words: &'a [String],
    at: usize,
    line: usize,
    rule: Rule,
    /// The protocol of `-p`, for the port matches of `-m tcp`/`-m udp`.
    protocol: Option<Protocol>,
    /// The rule's modules, turned into matches once the whole rule is read.
    modules: Vec<ModuleUse>,
}

impl RuleReader<'_> {
    fn peek(&self) -> Option<&str> {
        self.words.get(self.at).map(String::as_str)
    }

    fn next(&mut self) -> Option<&str> {
        let word = self.words.get(self.at).map(String::as_str);
        self.at += 1;
        word
    }

    fn value(&mut self, option: &str) -> Result<String, ParseError> {
        let line = self.line;
        self.next()
            .map(str::to_owned)
            .ok_or_else(|| ParseError::new(line, format!("{option} needs a value")))
    }

    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError::new(self.line, message)
    }

    /// Whether the next words are an option of the current module: `--x`, or `! --x`.
    fn module_option_next(&self) -> bool {
        match self.peek() {
            Some("!") => self
                .words
                .get(self.at + 1)
                .is_some_and(|w| w.starts_with("--")),
            Some(word) => word.starts_with("--"),
            None => false,
        }
    }

    fn read(mut self) -> Result<Rule, ParseError> {
        while let Some(word) = self.next().map(str::to_owned) {
            let negated = word == "!";
            let option = if negated {
                self.next()
                    .map(str::to_owned)
                    .ok_or_else(|| self.error("`!` at the end of the rule"))?
            } else {
                word
            };
            match option.as_str() {
                "-s" | "--source" | "--src" | "-d" | "--destination" | "--dst" => {
                    let side = if option.starts_with("-s") || option.starts_with("--s") {
                        Side::Source
                    } else {
                        Side::Destination
                    };
                    let text = self.value(&option)?;
                    let net = parse_net(&text).ok_or_else(|| {
                        self.error(format!(
                            "{option}: expected an address or prefix, found {text:?}"
                        ))
                    })?;
                    self.rule.matches.push(Match::Addr {
                        side,
                        negated,
                        value: AddrValue::Net(net),
                    });
                }
                "-p" | "--protocol" => {
                    let text = self.value(&option)?;
                    if text.eq_ignore_ascii_case("all") || text == "0" {
                        continue;
                    }
                    let protocol = parse_protocol(&text);
                    if let ProtoValue::Known(known) = protocol {
                        self.protocol = Some(known);
                    }
                    self.rule.matches.push(Match::Protocol {
                        negated,
                        protocols: vec![protocol],
                    });
                }
                "-i" | "--in-interface" | "-o" | "--out-interface" => {
                    let name = self.value(&option)?;
                    self.rule.matches.push(Match::Interface {
                        out: option.starts_with("-o") || option.starts_with("--o"),
                        negated,
                        name,
                    });
                }
                "-f" | "--fragment" => self.rule.matches.push(Match::Unsupported(format!(
                    "{}-f",
                    if negated { "! " } else { "" }
                ))),
                "-m" | "--match" => {
                    let name = self.value(&option)?;
                    let options = self.module_options(&name);
                    self.modules.push(ModuleUse {
                        at: self.rule.matches.len(),
                        name,
                        options,
                    });
                }
                "-j" | "--jump" => {
                    let target = self.value(&option)?;
                    self.target(&target)?;
                }
                "-g" | "--goto" => {
                    let chain = self.value(&option)?;
                    self.rule
                        .actions
                        .push(Action::Verdict(Verdict::Goto(chain)));
                }
                "-c" | "--set-counters" => {
                    self.value(&option)?;
                    self.value(&option)?;
                }
                other if other.starts_with("--") => {
                    // An option of a module named earlier in the rule (the last one that
                    // takes it), or of the protocol's own module, which `-p tcp` loads.
                    let index = match self
                        .modules
                        .iter()
                        .rposition(|m| module_takes(&m.name, other) == Some(true))
                    {
                        Some(index) => index,
                        None => {
                            let implicit = match self.protocol {
                                Some(Protocol::Tcp) => "tcp",
                                Some(Protocol::Udp) => "udp",
                                Some(Protocol::Sctp) => "sctp",
                                None => "",
                            };
                            if module_takes(implicit, other) == Some(true) {
                                self.modules.push(ModuleUse {
                                    at: self.rule.matches.len(),
                                    name: implicit.to_owned(),
                                    options: Vec::new(),
                                });
                                self.modules.len() - 1
                            } else if let Some(index) = self
                                .modules
                                .iter()
                                .rposition(|m| module_takes(&m.name, other).is_none())
                            {
                                index
                            } else {
                                return Err(self.error(format!("unknown option {other:?}")));
                            }
                        }
                    };
                    let values = self.option_values();
                    self.modules[index]
                        .options
                        .push((negated, other.to_owned(), values));
                }
                other => {
                    return Err(self.error(format!("unknown option {other:?}")));
                }
            }
        }
        // The modules' matches, each where its `-m` was (the last first, so that the
        // earlier places stay put).
        let modules = std::mem::take(&mut self.modules);
        for module in modules.into_iter().rev() {
            let before = std::mem::take(&mut self.rule.matches);
            self.module(&module.name, module.options)?;
            let made = std::mem::replace(&mut self.rule.matches, before);
            let at = module.at.min(self.rule.matches.len());
            self.rule.matches.splice(at..at, made);
        }
        Ok(self.rule)
    }

    /// The values after a module option: the words up to the next option.
    fn option_values(&mut self) -> Vec<String> {
        let mut values = Vec::new();
        while let Some(word) = self.peek() {
            if word.starts_with('-')
                && word.len() > 1
                && !word[1..].starts_with(|c: char| c.is_ascii_digit())
                || word == "!"
            {
                break;
            }
            values.push(word.to_owned());
            self.next();
        }
        values
    }

    /// The options right after `-m NAME` that the module takes.
    fn module_options(&mut self, module: &str) -> Vec<(bool, String, Vec<String>)> {
        let mut options: Vec<(bool, String, Vec<String>)> = Vec::new();
        while self.module_option_next() {
            let negated = self.peek() == Some("!");
            let option = self.words[self.at + usize::from(negated)].as_str();
            if module_takes(module, option) == Some(false) {
                break;
            }
            if negated {
                self.next();
            }
            let name = self.next().unwrap_or_default().to_owned();
            let values = self.option_values();
            options.push((negated, name, values));
        }
        options
    }

    /// `-m NAME` and its options, turned into matches.
    fn module(
        &mut self,
        module: &str,
        options: Vec<(bool, String, Vec<String>)>,
    ) -> Result<(), ParseError> {
        let unsupported = |options: &[(bool, String, Vec<String>)]| {
            let mut text = format!("-m {module}");
            for (negated, name, values) in options {
                if *negated {
                    text.push_str(" !");
                }
                text.push(' ');
                text.push_str(name);
                for value in values {
                    text.push(' ');
                    text.push_str(value);
                }
            }
            Match::Unsupported(text)
        };
        let line = self.line;
        let one_value = |name: &str, values: &[String]| -> Result<String, ParseError> {
            match values {
                [value] => Ok(value.clone()),
                _ => Err(ParseError::new(
                    line,
                    format!("-m {module} {name} needs one value"),
                )),
            }
        };
        match module {
            "comment" => {
                for (_, name, values) in &options {
                    if name != "--comment" {
                        return Err(self.error(format!("-m comment: unknown option {name}")));
                    }
                    self.rule.comment = Some(values.join(" "));
                }
            }
            "tcp" | "udp" | "sctp" | "udplite" => {
                let protocol = match module {
                    "tcp" => Some(Protocol::Tcp),
                    "udp" => Some(Protocol::Udp),
                    "sctp" => Some(Protocol::Sctp),
                    _ => None,
                };
                for (negated, name, values) in &options {
                    let side = match name.as_str() {
                        "--dport" | "--destination-port" => Side::Destination,
                        "--sport" | "--source-port" => Side::Source,
                        "--syn" if module == "tcp" && !*negated => {
                            // A new TCP connection's first packet is a SYN.
                            continue;
                        }
                        _ => {
                            self.rule.matches.push(unsupported(&options));
                            return Ok(());
                        }
                    };
                    let text = one_value(name, values)?;
                    let range = parse_port_range(&text).ok_or_else(|| {
                        self.error(format!(
                            "-m {module} {name}: expected a port or range, found {text:?}"
                        ))
                    })?;
                    self.rule.matches.push(Match::Port {
                        side,
                        negated: *negated,
                        ranges: vec![range],
                        protocol,
                    });
                }
            }
            "multiport" => {
                for (negated, name, values) in &options {
                    let side = match name.as_str() {
                        "--dports" | "--destination-ports" => Side::Destination,
                        "--sports" | "--source-ports" => Side::Source,
                        _ => {
                            self.rule.matches.push(unsupported(&options));
                            return Ok(());
                        }
                    };
                    let text = one_value(name, values)?;
                    let ranges = text
                        .split(',')
                        .map(parse_port_range)
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| {
                            self.error(format!("-m multiport {name}: bad port list {text:?}"))
                        })?;
                    self.rule.matches.push(Match::Port {
                        side,
                        negated: *negated,
                        ranges,
                        protocol: self.protocol,
                    });
                }
            }
            "addrtype" => {
                for (negated, name, values) in &options {
                    let side = match name.as_str() {
                        "--src-type" => Side::Source,
                        "--dst-type" => Side::Destination,
                        _ => {
                            self.rule.matches.push(unsupported(&options));
                            return Ok(());
                        }
                    };
                    if one_value(name, values)? != "LOCAL" {
                        self.rule.matches.push(unsupported(&options));
                        return Ok(());
                    }
                    self.rule.matches.push(Match::Local {
                        side,
                        negated: *negated,
                    });
                }
            }
            "conntrack" | "state" => {
                for (negated, name, values) in &options {
                    if name != "--ctstate" && name != "--state" {
                        self.rule.matches.push(unsupported(&options));
                        return Ok(());
                    }
                    let text = one_value(name, values)?;
                    let states = text
                        .split(',')
                        .map(ct_state)
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| {
                            self.error(format!("-m {module} {name}: unknown state in {text:?}"))
                        })?;
                    self.rule.matches.push(Match::CtState {
                        negated: *negated,
                        states,
                    });
                }
            }
            "mark" => {
                for (negated, name, values) in &options {
                    if name != "--mark" {
                        return Err(self.error(format!("-m mark: unknown option {name}")));
                    }
                    let text = one_value(name, values)?;
                    let (value, mask) = parse_value_mask(&text).ok_or_else(|| {
                        self.error(format!(
                            "-m mark --mark: expected VALUE[/MASK], found {text:?}"
                        ))
                    })?;
                    self.rule.matches.push(Match::Mark {
                        negated: *negated,
                        value,
                        mask,
                    });
                }
            }
            "statistic" => {
                let mut random = false;
                let mut probability = None;
                for (negated, name, values) in &options {
                    match name.as_str() {
                        "--mode" => random = one_value(name, values)? == "random",
                        "--probability" => {
                            let text = one_value(name, values)?;
                            let value: f64 = text.parse().ok().filter(|p| (0.0..=1.0).contains(p)).ok_or_else(|| {
                                self.error(format!("-m statistic --probability: expected a number 0-1, found {text:?}"))
                            })?;
                            probability = Some((*negated, value, text));
                        }
                        _ => {}
                    }
                }
                match (random, probability) {
                    (true, Some((negated, value, text))) => {
                        self.rule.matches.push(Match::Statistic {
                            negated,
                            stored: Stored::from_probability(value),
                            text,
                        })
                    }
                    _ => self.rule.matches.push(unsupported(&options)),
                }
            }
            "recent" => {
                let mut op = None;
                let mut negated_match = false;
                let mut name = "DEFAULT".to_owned();
                for (negated, option, values) in &options {
                    match option.as_str() {
                        "--set" => op = Some(RecentOp::Set),
                        "--rcheck" => op = Some(RecentOp::Check),
                        "--update" => op = Some(RecentOp::Update),
                        "--remove" => op = Some(RecentOp::Remove),
                        "--name" => name = one_value(option, values)?,
                        _ => {}
                    }
                    negated_match |= *negated;
                }
                match op {
                    Some(op) => self.rule.matches.push(Match::Recent {
                        negated: negated_match,
                        op,
                        name,
                    }),
                    None => self.rule.matches.push(unsupported(&options)),
                }
            }
            "nfacct" => self.rule.matches.push(Match::Always),
            _ => self.rule.matches.push(unsupported(&options)),
        }
        Ok(())
    }

    /// `-j TARGET` and its options (the rest of the rule).
    fn target(&mut self, target: &str) -> Result<(), ParseError> {
        let mut rest: Vec<String> = Vec::new();
        while let Some(word) = self.peek() {
            if matches!(
                word,
                "-m" | "--match" | "-s" | "-d" | "-p" | "-i" | "-o" | "!" | "-j" | "-g"
            ) {
                break;
            }
            rest.push(word.to_owned());
            self.next();
        }
        let option = |name: &str| {
            rest.iter()
                .position(|w| w == name)
                .and_then(|at| rest.get(at + 1))
                .cloned()
        };
        let action = match target {
            "ACCEPT" => Action::Verdict(Verdict::Accept),
            "DROP" => Action::Verdict(Verdict::Drop),
            "RETURN" => Action::Verdict(Verdict::Return),
            "REJECT" => Action::Reject(option("--reject-with")),
            "DNAT" => {
                let to = option("--to-destination")
                    .or_else(|| option("--to"))
                    .ok_or_else(|| self.error("-j DNAT needs --to-destination"))?;
                match parse_destination(&to) {
                    Some((ip, port)) => Action::Dnat { ip, port },
                    None => Action::Unsupported(format!("-j DNAT --to-destination {to}")),
                }
            }
            "SNAT" => Action::Snat(option("--to-source").unwrap_or_default()),
            "MASQUERADE" => Action::Masquerade,
            "MARK" => {
                let mark = if let Some(text) = option("--set-xmark") {
                    parse_value_mask(&text).map(|(value, mask)| (!mask, value))
                } else if let Some(text) = option("--set-mark") {
                    parse_value_mask(&text).map(|(value, mask)| (!mask, value))
                } else if let Some(text) = option("--or-mark") {
                    parse_u32(&text).map(|value| (!value, value))
                } else if let Some(text) = option("--and-mark") {
                    parse_u32(&text).map(|value| (value, 0))
                } else if let Some(text) = option("--xor-mark") {
                    parse_u32(&text).map(|value| (u32::MAX, value))
                } else {
                    None
                };
                let (and, xor) = mark.ok_or_else(|| {
                    self.error(format!("-j MARK: expected --set-xmark VALUE/MASK (or --set-mark, --or-mark, --and-mark, --xor-mark), found {:?}", rest.join(" ")))
                })?;
                Action::SetMark { and, xor }
            }
            _ if NON_TERMINATING.contains(&target) => Action::Continue,
            chain => {
                if !rest.is_empty() {
                    return Err(self.error(format!(
                        "-j {chain}: unexpected {:?} after a jump to a chain",
                        rest.join(" ")
                    )));
                }
                Action::Verdict(Verdict::Jump(chain.to_owned()))
            }
        };
        self.rule.actions.push(action);
        Ok(())
    }
}

/// Reads `iptables-save` or `iptables -S` text.
pub fn parse(text: &str) -> Result<Ruleset, ParseError> {
    let mut tables: Vec<Table> = Vec::new();
    let mut open = false;
    let mut headerless = false;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('*') {
            if open {
                return Err(ParseError::new(
                    number,
                    format!("*{name} before COMMIT of the previous table"),
                ));
            }
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(ParseError::new(
                    number,
                    format!("expected *TABLE, found {line:?}"),
                ));
            }
            tables.push(Table::new(TableFamily::Ip, name, number));
            open = true;
            continue;
        }
        if line == "COMMIT" {
            if !open {
                return Err(ParseError::new(number, "COMMIT without a table"));
            }
            open = false;
            continue;
        }
        if !open {
            if tables.is_empty() || headerless {
                // `iptables -S` output: one table without a header.
                if tables.is_empty() {
                    tables.push(Table::new(TableFamily::Ip, String::new(), number));
                    headerless = true;
                }
            } else {
                return Err(ParseError::new(
                    number,
                    format!("{line:?} outside a table (after COMMIT)"),
                ));
            }
        }
        let table = tables
            .last_mut()
            .ok_or_else(|| ParseError::new(number, "no table"))?;
        if let Some(rest) = line.strip_prefix(':') {
            let mut parts = rest.split_whitespace();
            let name = parts.next().unwrap_or_default();
            let policy = parts.next().ok_or_else(|| {
                ParseError::new(
                    number,
                    format!("expected :CHAIN POLICY [packets:bytes], found {line:?}"),
                )
            })?;
            declare(table, name, policy, number)?;
            continue;
        }
        let mut words = words(line, number)?;
        if words
            .first()
            .is_some_and(|w| w.starts_with('[') && w.ends_with(']'))
        {
            words.remove(0);
        }
        match words.first().map(String::as_str) {
            Some("-P") => {
                let (Some(name), Some(policy)) = (words.get(1), words.get(2)) else {
                    return Err(ParseError::new(number, "expected -P CHAIN POLICY"));
                };
                declare(table, name, policy, number)?;
            }
            Some("-N") => {
                let Some(name) = words.get(1) else {
                    return Err(ParseError::new(number, "expected -N CHAIN"));
                };
                declare(table, name, "-", number)?;
            }
            Some("-A" | "--append" | "-I" | "--insert") => {
                let insert = matches!(words[0].as_str(), "-I" | "--insert");
                let chain = words.get(1).cloned().ok_or_else(|| {
                    ParseError::new(number, format!("{} needs a chain", words[0]))
                })?;
                let mut start = 2;
                let mut position = None;
                if insert && let Some(n) = words.get(2).and_then(|w| w.parse::<usize>().ok()) {
                    position = Some(n.saturating_sub(1));
                    start = 3;
                }
                let reader = RuleReader {
                    words: &words[start..],
                    at: 0,
                    line: number,
                    rule: Rule {
                        line: number,
                        text: line.to_owned(),
                        matches: Vec::new(),
                        actions: Vec::new(),
                        comment: None,
                    },
                    protocol: None,
                    modules: Vec::new(),
                };
                let rule = reader.read()?;
                if table.chain(&chain).is_none() && headerless {
                    declare(table, &chain, "-", number)?;
                }
                let Some(target) = table.chain_mut(&chain) else {
                    return Err(ParseError::new(
                        number,
                        format!("-A {chain}: the chain is not declared in *{}", table.name),
                    ));
                };
                match (insert, position) {
                    (false, _) => target.rules.push(rule),
                    (true, position) => {
                        let at = position.unwrap_or(0).min(target.rules.len());
                        target.rules.insert(at, rule);
                    }
                }
            }
            _ => {
                return Err(ParseError::new(
                    number,
                    format!("expected *TABLE, :CHAIN, -A, -P, -N or COMMIT, found {line:?}"),
                ));
            }
        }
    }
    if open {
        let table = tables
            .last()
            .map(|t| (t.name.clone(), t.line))
            .unwrap_or_default();
        return Err(ParseError::new(
            table.1,
            format!("*{} is not closed by COMMIT", table.0),
        ));
    }
    if headerless && let Some(table) = tables.first_mut() {
        let nat = table
            .chains
            .iter()
            .any(|c| c.name == "PREROUTING" || c.name == "POSTROUTING");
        table.name = if nat { "nat" } else { "filter" }.to_owned();
        let name = table.name.clone();
        for chain in &mut table.chains {
            chain.base = iptables_base(&name, &chain.name);
        }
    }
    for table in &mut tables {
        let v6 = table.chains.iter().flat_map(|c| &c.rules).any(|rule| {
            rule.matches.iter().any(|m| {
                matches!(m, Match::Addr { value: AddrValue::Net(net), .. } if net.addr().is_ipv6())
            }) || rule
                .actions
                .iter()
                .any(|a| matches!(a, Action::Dnat { ip, .. } if ip.is_ipv6()))
        });
        if v6 {
            table.family = TableFamily::Ip6;
        }
        check_targets(table)?;
    }
    Ok(Ruleset {
        format: Format::IptablesSave,
        tables,
    })
}

fn declare(table: &mut Table, name: &str, policy: &str, line: usize) -> Result<(), ParseError> {
    if name.is_empty() {
        return Err(ParseError::new(line, "a chain needs a name"));
    }
    let mut base = iptables_base(&table.name, name);
    match (policy, &mut base) {
        ("-", None) => {}
        ("ACCEPT", Some(base)) => base.policy_accept = true,
        ("DROP", Some(base)) => base.policy_accept = false,
        ("ACCEPT" | "DROP", None) if table.name.is_empty() => {}
        (policy, _) => {
            return Err(ParseError::new(
                line,
                format!(
                    "chain {name}: policy {policy:?} (expected ACCEPT or DROP for a built-in chain, - for others)"
                ),
            ));
        }
    }
    if table.chain(name).is_some() {
        return Err(ParseError::new(
            line,
            format!("chain {name} is declared twice"),
        ));
    }
    table.add_chain(Chain {
        name: name.to_owned(),
        line,
        base,
        rules: Vec::new(),
    });
    Ok(())
}

/// Every jump and goto names a chain of the table.
fn check_targets(table: &Table) -> Result<(), ParseError> {
    for chain in &table.chains {
        for rule in &chain.rules {
            for action in &rule.actions {
                if let Action::Verdict(Verdict::Jump(target) | Verdict::Goto(target)) = action
                    && table.chain(target).is_none()
                {
                    return Err(ParseError::new(
                        rule.line,
                        format!(
                            "-j {target}: no chain {target} in *{} and not a target clusterdns knows",
                            table.name
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(line: &str) -> Result<Rule, ParseError> {
        let text = format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SVC-X - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n{line}\nCOMMIT\n"
        );
        let ruleset = parse(&text)?;
        let table = &ruleset.tables[0];
        Ok(table
            .chains
            .iter()
            .flat_map(|c| c.rules.clone())
            .next()
            .expect("one rule"))
    }

    #[test]
    fn a_kube_proxy_rule() {
        let r = rule("-A KUBE-SVC-X ! -s 10.244.0.0/16 -d 10.96.0.20/32 -p tcp -m comment --comment \"shop/web:http cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ").expect("parses");
        assert_eq!(r.comment.as_deref(), Some("shop/web:http cluster IP"));
        assert_eq!(
            r.matches,
            vec![
                Match::Addr {
                    side: Side::Source,
                    negated: true,
                    value: AddrValue::Net("10.244.0.0/16".parse().expect("net")),
                },
                Match::Addr {
                    side: Side::Destination,
                    negated: false,
                    value: AddrValue::Net("10.96.0.20/32".parse().expect("net")),
                },
                Match::Protocol {
                    negated: false,
                    protocols: vec![ProtoValue::Known(Protocol::Tcp)],
                },
                Match::Port {
                    side: Side::Destination,
                    negated: false,
                    ranges: vec![(80, 80)],
                    protocol: Some(Protocol::Tcp),
                },
            ]
        );
        assert_eq!(
            r.actions,
            vec![Action::Verdict(Verdict::Jump("KUBE-MARK-MASQ".to_owned()))]
        );
    }

    #[test]
    fn statistic_recent_mark_and_dnat() {
        let r = rule("-A KUBE-SVC-X -m statistic --mode random --probability 0.33333333349 -j KUBE-MARK-MASQ").expect("parses");
        assert_eq!(
            r.matches,
            vec![Match::Statistic {
                negated: false,
                stored: Stored(715_827_883),
                text: "0.33333333349".to_owned(),
            }]
        );
        let r = rule("-A KUBE-SVC-X -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j KUBE-MARK-MASQ").expect("parses");
        assert_eq!(
            r.matches,
            vec![Match::Recent {
                negated: false,
                op: RecentOp::Check,
                name: "KUBE-SEP-A".to_owned()
            }]
        );
        let r = rule("-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000").expect("parses");
        assert_eq!(
            r.actions,
            vec![Action::SetMark {
                and: !0x4000,
                xor: 0x4000
            }]
        );
        let r = rule("-A KUBE-SVC-X -m mark ! --mark 0x4000/0x4000 -j RETURN").expect("parses");
        assert_eq!(
            r.matches,
            vec![Match::Mark {
                negated: true,
                value: 0x4000,
                mask: 0x4000
            }]
        );
        let r = rule("-A KUBE-SVC-X -p tcp -m tcp -j DNAT --to-destination [fd00::5]:8080")
            .expect("parses");
        assert_eq!(
            r.actions,
            vec![Action::Dnat {
                ip: "fd00::5".parse().expect("ip"),
                port: Some(8080)
            }]
        );
    }

    /// Rules as kube-proxy writes them for iptables-restore (its own test dumps,
    /// pkg/proxy/iptables/proxier_test.go): modules before the protocol, module options
    /// after other options, nfacct counters, `--random-fully`.
    #[test]
    fn options_in_the_order_kube_proxy_writes_them() {
        let written = rule("-A KUBE-SVC-X -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ").expect("parses");
        let saved = rule("-A KUBE-SVC-X ! -s 10.0.0.0/8 -d 172.30.0.41/32 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ").expect("parses");
        let sorted = |r: &Rule| {
            let mut matches: Vec<String> = r.matches.iter().map(|m| format!("{m:?}")).collect();
            matches.sort();
            matches
        };
        assert_eq!(sorted(&written), sorted(&saved));
        assert_eq!(written.comment, saved.comment);
        assert!(written.matches.contains(&Match::Port {
            side: Side::Destination,
            negated: false,
            ranges: vec![(80, 80)],
            protocol: Some(Protocol::Tcp),
        }));
        // The localhost NodePort rule with its nfacct counter.
        let r = rule("-A KUBE-SVC-X -m comment --comment ns2/svc2:p80 -m tcp -p tcp -d 127.0.0.0/8 --dport 3001 -m nfacct --nfacct-name localhost_nps_accepted_pkts -j KUBE-MARK-MASQ").expect("parses");
        assert!(r.matches.contains(&Match::Always));
        assert!(
            r.matches
                .iter()
                .any(|m| matches!(m, Match::Port { ranges, .. } if ranges == &[(3001, 3001)]))
        );
        let r = rule("-A KUBE-SVC-X -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP").expect("parses");
        assert_eq!(r.matches.len(), 2);
        // A module option after another module: the module that takes it.
        let r = rule("-A KUBE-SVC-X -m recent --name KUBE-SEP-X --set -m tcp -p tcp -j DNAT --to-destination 10.180.0.3:80").expect("parses");
        assert!(matches!(
            r.matches[0],
            Match::Recent {
                op: RecentOp::Set,
                ..
            }
        ));
        let r = rule("-A KUBE-SVC-X -m multiport -p udp --dports 53,5353 -j KUBE-MARK-MASQ")
            .expect("parses");
        assert!(r.matches.contains(&Match::Port {
            side: Side::Destination,
            negated: false,
            ranges: vec![(53, 53), (5353, 5353)],
            protocol: Some(Protocol::Udp),
        }));
        // `-p tcp --dport 80` loads tcp's match as iptables does.
        let r = rule("-A KUBE-SVC-X -p tcp --dport 80 -j KUBE-MARK-MASQ").expect("parses");
        assert!(r.matches.iter().any(|m| matches!(m, Match::Port { .. })));
        let r = rule("-A KUBE-SVC-X -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully").expect("parses");
        assert_eq!(r.actions, vec![Action::Masquerade]);
        // An option no module of the rule takes is still an error.
        let error = rule("-A KUBE-SVC-X -m comment --comment x --dport 80 -j ACCEPT")
            .map(|_| ())
            .expect_err("no tcp module");
        assert_eq!(error.to_string(), "line 5: unknown option \"--dport\"");
    }

    #[test]
    fn unknown_modules_are_kept_not_dropped() {
        let r = rule("-A KUBE-SVC-X -m set --match-set cali40all-hosts src -j KUBE-MARK-MASQ")
            .expect("parses");
        assert_eq!(
            r.matches,
            vec![Match::Unsupported(
                "-m set --match-set cali40all-hosts src".to_owned()
            )]
        );
        let r = rule("-A KUBE-SVC-X -m addrtype --src-type UNICAST -j RETURN").expect("parses");
        assert!(matches!(r.matches[0], Match::Unsupported(_)));
    }

    #[test]
    fn errors_name_the_line() {
        let cases: &[(&str, &str)] = &[
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -x 1\nCOMMIT\n",
                "line 3: unknown option \"-x\"",
            ),
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -d 10.96.0.300 -j ACCEPT\nCOMMIT\n",
                "line 3: -d: expected an address or prefix, found \"10.96.0.300\"",
            ),
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\n-A NOPE -j ACCEPT\nCOMMIT\n",
                "line 3: -A NOPE: the chain is not declared in *nat",
            ),
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\n\n-A PREROUTING -j KUBE-NOWHERE\nCOMMIT\n",
                "line 4: -j KUBE-NOWHERE: no chain KUBE-NOWHERE in *nat and not a target clusterdns knows",
            ),
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -m comment --comment \"open\nCOMMIT\n",
                "line 3: unterminated \" quote",
            ),
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\n",
                "line 1: *nat is not closed by COMMIT",
            ),
            (
                "*nat\nCOMMIT\n-A X -j ACCEPT\n",
                "line 3: \"-A X -j ACCEPT\" outside a table (after COMMIT)",
            ),
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -m statistic --mode random --probability 2 -j ACCEPT\nCOMMIT\n",
                "line 3: -m statistic --probability: expected a number 0-1, found \"2\"",
            ),
            (
                "*nat\n:PREROUTING MAYBE [0:0]\nCOMMIT\n",
                "line 2: chain PREROUTING: policy \"MAYBE\" (expected ACCEPT or DROP for a built-in chain, - for others)",
            ),
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j DNAT\nCOMMIT\n",
                "line 3: -j DNAT needs --to-destination",
            ),
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j MARK --set-foo 1\nCOMMIT\n",
                "line 3: -j MARK: expected --set-xmark VALUE/MASK (or --set-mark, --or-mark, --and-mark, --xor-mark), found \"--set-foo 1\"",
            ),
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -p tcp -m tcp --dport eighty -j ACCEPT\nCOMMIT\n",
                "line 3: -m tcp --dport: expected a port or range, found \"eighty\"",
            ),
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -s\nCOMMIT\n",
                "line 3: -s needs a value",
            ),
            (
                "*nat\n:KUBE-X - [0:0]\n:KUBE-X - [0:0]\nCOMMIT\n",
                "line 3: chain KUBE-X is declared twice",
            ),
            (
                "*nat\n:PREROUTING ACCEPT [0:0]\nbogus\nCOMMIT\n",
                "line 3: expected *TABLE, :CHAIN, -A, -P, -N or COMMIT, found \"bogus\"",
            ),
        ];
        for (text, want) in cases {
            let got = parse(text)
                .map(|_| ())
                .expect_err("must not parse")
                .to_string();
            assert_eq!(&got, want, "for:\n{text}");
        }
    }

    #[test]
    fn iptables_dash_s_output_is_read_as_one_table() {
        let text = "-P PREROUTING ACCEPT\n-P INPUT ACCEPT\n-P OUTPUT ACCEPT\n-P POSTROUTING ACCEPT\n-N KUBE-SERVICES\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n";
        let ruleset = parse(text).expect("parses");
        assert_eq!(ruleset.tables[0].name, "nat");
        let prerouting = ruleset.tables[0].chain("PREROUTING").expect("chain");
        assert!(prerouting.base.is_some());
        assert_eq!(prerouting.rules.len(), 1);
    }

    #[test]
    fn netmasks_and_ranges() {
        assert_eq!(parse_net("10.0.0.0/255.0.0.0"), "10.0.0.0/8".parse().ok());
        assert_eq!(parse_net("10.0.0.1"), "10.0.0.1/32".parse().ok());
        assert_eq!(parse_net("10.0.0.0/255.0.255.0"), None);
        assert_eq!(parse_port_range("1024:"), Some((1024, u16::MAX)));
        assert_eq!(parse_port_range(":1023"), Some((0, 1023)));
        assert_eq!(parse_port_range("9:1"), None);
        assert_eq!(
            parse_destination("10.0.0.1:80"),
            Some(("10.0.0.1".parse().expect("ip"), Some(80)))
        );
        assert_eq!(
            parse_destination("10.0.0.1"),
            Some(("10.0.0.1".parse().expect("ip"), None))
        );
        assert_eq!(
            parse_destination("[fd00::1]"),
            Some(("fd00::1".parse().expect("ip"), None))
        );
    }
}
