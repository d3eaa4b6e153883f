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
//!
//! - `lexer.rs`: tokens and a cursor; `elements.rs`: key values, verdicts, element lists;
//!   `rule.rs`: one rule; `declare.rs`: what both forms
//!   declare alike; `list.rs`: the list form; `transaction.rs`: the transaction form.

mod declare;
mod elements;
mod lexer;
mod list;
mod rule;
#[cfg(test)]
mod tests;
mod transaction;

use crate::ruleset::{Action, Format, MapRef, ParseError, Ruleset, Table, Verdict};
use lexer::lex;
use list::parse_list;
use transaction::parse_transaction;

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
    Ok(Ruleset {
        format,
        tables,
        assumed_jumps: Vec::new(),
    })
}
