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

mod jumps;
mod rule;
#[cfg(test)]
mod tests;

use crate::ruleset::{
    Action, AddrValue, Chain, Format, Match, ParseError, Rule, Ruleset, Table, TableFamily,
    Verdict, iptables_base,
};
use rule::RuleReader;

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
                let rule = read_rule(&words[start..], line, number)?;
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
    let mut ruleset = Ruleset {
        format: Format::IptablesSave,
        tables,
        assumed_jumps: Vec::new(),
    };
    jumps::assume(&mut ruleset);
    Ok(ruleset)
}

/// One `-A CHAIN options...` line read as a rule of line 0.
fn parse_rules(line: &str) -> Result<Vec<Rule>, ParseError> {
    let words = words(line, 0)?;
    Ok(vec![read_rule(
        words.get(2..).unwrap_or_default(),
        line,
        0,
    )?])
}

/// The options of a rule (after `-A CHAIN`) written as `text` on line `number`, read.
fn read_rule(options: &[String], text: &str, number: usize) -> Result<Rule, ParseError> {
    RuleReader {
        words: options,
        at: 0,
        line: number,
        rule: Rule {
            line: number,
            text: text.to_owned(),
            matches: Vec::new(),
            actions: Vec::new(),
            comment: None,
        },
        protocol: None,
        modules: Vec::new(),
    }
    .read()
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
