//! The transaction form: the `nft -f` commands kube-proxy writes (`add`, `flush`,
//! `delete` of tables, chains, sets, maps, rules and elements).

use super::declare::{family_of, new_set, parse_base, set_items};
use super::elements::parse_elements;
use super::lexer::{Cursor, Tok, Token, text_of, words_of};
use super::rule::parse_rule;
use crate::ruleset::{Chain, ParseError, Table, TableFamily};

/// Reads an `nft -f` transaction.
pub(super) fn parse_transaction(tokens: &[Token]) -> Result<Vec<Table>, ParseError> {
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

pub(super) fn transaction_command(
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
