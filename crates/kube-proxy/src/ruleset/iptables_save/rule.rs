//! One `-A CHAIN ...` rule read into matches and actions: options in any order, each
//! module option given to the module that takes it, targets.

use crate::cascade::Stored;
use crate::ruleset::values::{parse_destination, parse_net, parse_protocol};
use crate::ruleset::{
    Action, AddrValue, CtState, Match, ParseError, ProtoValue, RecentOp, Rule, Side, Verdict,
};
use clusterdns_model::Protocol;

/// `80`, `1024:65535`, `:1023`, `1024:` (iptables' range syntax).
pub(super) fn parse_port_range(text: &str) -> Option<(u16, u16)> {
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
pub(super) fn parse_u32(text: &str) -> Option<u32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// `VALUE[/MASK]` (the mask defaults to all ones).
pub(super) fn parse_value_mask(text: &str) -> Option<(u32, u32)> {
    match text.split_once('/') {
        Some((value, mask)) => Some((parse_u32(value)?, parse_u32(mask)?)),
        None => Some((parse_u32(text)?, u32::MAX)),
    }
}

pub(super) fn ct_state(text: &str) -> Option<CtState> {
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
pub(super) const NON_TERMINATING: &[&str] = &[
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
pub(super) fn module_takes(module: &str, option: &str) -> Option<bool> {
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
pub(super) struct ModuleUse {
    at: usize,
    name: String,
    options: Vec<(bool, String, Vec<String>)>,
}

/// A rule's options, read word by word.
pub(super) struct RuleReader<'a> {
    pub(super) words: &'a [String],
    pub(super) at: usize,
    pub(super) line: usize,
    pub(super) rule: Rule,
    /// The protocol of `-p`, for the port matches of `-m tcp`/`-m udp`.
    pub(super) protocol: Option<Protocol>,
    /// The rule's modules, turned into matches once the whole rule is read.
    pub(super) modules: Vec<ModuleUse>,
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

    pub(super) fn read(mut self) -> Result<Rule, ParseError> {
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
