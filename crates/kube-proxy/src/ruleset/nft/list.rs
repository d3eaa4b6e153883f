//! The list form: `nft list table` / `nft list ruleset` output, tables in braces.

use super::declare::{family_of, new_set, parse_base, set_items};
use super::lexer::{Cursor, Tok, Token, describe};
use super::rule::parse_rule;
use crate::ruleset::{Chain, ParseError, Table, TableFamily};

/// The text of `line` (1-based, in `lines`), without a trailing `# handle N`.
pub(super) fn line_text(lines: &[&str], line: usize) -> String {
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

/// Reads `nft list` output.
pub(super) fn parse_list(text: &str, tokens: &[Token]) -> Result<Vec<Table>, ParseError> {
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
