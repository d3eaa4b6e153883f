//! Go's `text/template`, the part CoreDNS's *template* plugin answers with: text and
//! `{{ ... }}` actions (with `{{-`/`-}}` trimming and `{{/* comments */}}`), pipelines
//! (`a | b`), the plugin's data fields (`.Name`, `.Zone`, `.Class`, `.Type`, `.Regex`,
//! `.Remote`, `.Match`, `.Group`, `.Question`, `.Meta`), string and number literals, and the
//! functions real Corefiles call: `index`, `parseInt` (`strconv.ParseUint`), `print`,
//! `printf`, `println` and `len`. Values print as Go's `fmt` prints them (`[a b]` for a list,
//! `map[k:v]` for a map, `<no value>` for a missing map key).
//!
//! What a template uses is checked when the Corefile is read: an unknown field or function,
//! or a control structure (`if`, `range`, `with`, variables), is an error there rather than
//! a SERVFAIL at query time. Errors at execution (an index out of range, a `parseInt` that
//! fails) are errors of the query, as in CoreDNS.

mod ast;
mod eval;
mod lex;
mod parse;

use self::ast::Node;
pub use self::eval::Data;
use self::parse::Parser;

/// A compiled template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    nodes: Vec<Node>,
}

/// A template that does not compile; the message is what Go's `text/template` parser says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(String);

/// A template that failed while it ran (an index out of range, a function's bad argument);
/// the message is what Go's `text/template` says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ExecError(String);

impl Template {
    /// Compiles `source`; the error says what is wrong, as Go's parser would.
    pub fn parse(source: &str) -> Result<Self, ParseError> {
        Self::compile(source).map_err(ParseError)
    }

    /// [`Self::parse`] with the parser's message as it is.
    fn compile(source: &str) -> Result<Self, String> {
        let mut nodes = Vec::new();
        let mut rest = source;
        let mut trim_next = false;
        while !rest.is_empty() {
            let Some(open) = rest.find("{{") else {
                push_text(&mut nodes, rest, trim_next, false);
                break;
            };
            let mut action = &rest[open + 2..];
            let trim_before =
                action.starts_with("- ") || action.starts_with("-\t") || action.starts_with("-\n");
            push_text(&mut nodes, &rest[..open], trim_next, trim_before);
            if trim_before {
                action = &action[1..];
            }
            let Some(close) = find_close(action) else {
                return Err("unclosed action".to_owned());
            };
            let mut body = &action[..close];
            trim_next = false;
            if body.ends_with(" -") || body.ends_with("\t-") || body.ends_with("\n-") {
                body = &body[..body.len() - 1];
                trim_next = true;
            }
            rest = &action[close + 2..];
            let trimmed = body.trim();
            if trimmed.starts_with("/*") {
                if !trimmed.ends_with("*/") {
                    return Err("unclosed comment".to_owned());
                }
                continue;
            }
            let tokens = lex::tokens(body)?;
            let mut parser = Parser { tokens, at: 0 };
            let pipeline = parser.pipeline()?;
            if let Some(token) = parser.tokens.get(parser.at) {
                return Err(format!("unexpected {} in action", token.describe()));
            }
            nodes.push(Node::Action(pipeline));
        }
        Ok(Self {
            source: source.to_owned(),
            nodes,
        })
    }

    /// The template as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Executes the template with `data`.
    pub fn execute(&self, data: &Data<'_>) -> Result<String, ExecError> {
        let mut out = String::new();
        for node in &self.nodes {
            match node {
                Node::Text(text) => out.push_str(text),
                Node::Action(pipeline) => pipeline.eval(data).map_err(ExecError)?.write(&mut out),
            }
        }
        Ok(out)
    }
}

fn push_text(nodes: &mut Vec<Node>, text: &str, trim_start: bool, trim_end: bool) {
    let mut text = text;
    if trim_start {
        text = text.trim_start();
    }
    if trim_end {
        text = text.trim_end();
    }
    if !text.is_empty() {
        nodes.push(Node::Text(text.to_owned()));
    }
}

/// Where `}}` closes the action that starts `text`, quotes skipped.
fn find_close(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at + 1 < bytes.len() {
        match bytes[at] {
            b'"' => {
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    if bytes[at] == b'\\' {
                        at += 1;
                    }
                    at += 1;
                }
            }
            b'`' => {
                at += 1;
                while at < bytes.len() && bytes[at] != b'`' {
                    at += 1;
                }
            }
            b'}' if bytes[at + 1] == b'}' => return Some(at),
            _ => {}
        }
        at += 1;
    }
    None
}

#[cfg(test)]
mod tests;
