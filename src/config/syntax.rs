//! The Corefile's structure, before any directive is interpreted: server blocks made of keys
//! and lines, each line a name, its arguments and an optional block of further lines.
//!
//! - Keys: the tokens of the first line of a block; a key ending in `,` continues the list on
//!   the next line. `a.org,b.org` and `a.org, b.org` are both two keys.
//! - The block opens with `{` (on the key line or the next one) and closes with `}`. Without
//!   `{`, the rest of the file is the block (Caddy's brace-less single server).
//! - `(name) { ... }` defines a snippet instead of a server block.
//! - A line's arguments are the tokens on its own line; a `{` on that line ends the arguments
//!   and opens the line's block, whose lines are options (the first may follow the `{` on the
//!   same line). A `}` closes the innermost block, also at the end of an option's line.

use super::error::Error;
use super::lexer::{Token, TokenKind};
use super::stream::{Delivered, Stream};

/// Blocks nest at most this deep inside a server block.
const MAX_NESTING: usize = 16;

/// A server block as written.
#[derive(Debug, Clone)]
pub(crate) struct ServerBlockAst {
    /// The key tokens (commas not yet split).
    pub(crate) keys: Vec<Token>,
    /// Its directives.
    pub(crate) lines: Vec<Line>,
}

/// A directive or an option: a name, its arguments, and its block.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    /// The name token.
    pub(crate) name: Token,
    /// The arguments on the same line.
    pub(crate) args: Vec<Token>,
    /// The `{ ... }` block, if any.
    pub(crate) block: Option<Block>,
}

/// A `{ ... }` block.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    /// The lines inside.
    pub(crate) lines: Vec<Line>,
}

impl Line {
    /// The name as written.
    pub(crate) fn name(&self) -> &str {
        &self.name.text
    }

    /// The lines of its block (none when it has no block).
    pub(crate) fn options(&self) -> &[Line] {
        self.block
            .as_ref()
            .map_or(&[], |block| block.lines.as_slice())
    }
}

fn syntax(token: &Token, message: impl Into<String>) -> Error {
    Error::Syntax {
        file: token.file.to_path_buf(),
        line: token.line,
        message: message.into(),
    }
}

/// Reads every server block, defining snippets on the way.
pub(crate) fn parse(stream: &mut Stream<'_>) -> Result<Vec<ServerBlockAst>, Error> {
    let mut blocks = Vec::new();
    while let Some(Delivered { token: first, .. }) = stream.next()? {
        match first.kind {
            TokenKind::Close => return Err(syntax(&first, "unexpected '}'")),
            TokenKind::Open => {
                return Err(syntax(
                    &first,
                    "expected a server block key (such as '.:53') before '{'",
                ));
            }
            TokenKind::Word | TokenKind::Quoted => {}
        }
        let mut expecting_another = first.text.ends_with(',');
        let mut keys = vec![first];
        while let Some(next) = stream.peek()? {
            if next.token.is_brace() || (next.starts_line && !expecting_another) {
                break;
            }
            if let Some(next) = stream.next()? {
                expecting_another = next.token.text.ends_with(',');
                keys.push(next.token);
            }
        }
        let Some(last) = keys.last().cloned() else {
            continue;
        };
        if expecting_another {
            return Err(syntax(&last, "expected another server block key after ','"));
        }
        let opens = matches!(stream.peek()?, Some(next) if next.token.kind == TokenKind::Open);

        if let [key] = keys.as_slice()
            && key.kind == TokenKind::Word
            && let Some(name) = key.text.strip_prefix('(').and_then(|k| k.strip_suffix(')'))
        {
            if !opens {
                return Err(syntax(
                    key,
                    format!("snippet '{name}' needs a '{{ ... }}' block"),
                ));
            }
            if name.is_empty() {
                return Err(syntax(key, "a snippet needs a name: '(name) { ... }'"));
            }
            let open = stream.next_raw()?;
            let tokens = snippet_body(stream, open.as_ref().unwrap_or(key))?;
            stream.define_snippet(name, tokens, key)?;
            continue;
        }

        let lines = if opens {
            let open = stream.next()?.map_or_else(|| last.clone(), |d| d.token);
            let lines = parse_lines(stream, 0, Some(&open))?;
            if let Some(next) = stream.peek()?
                && !next.starts_line
                && next.token.kind == TokenKind::Open
            {
                return Err(syntax(
                    &next.token,
                    "unexpected '{' after the end of a server block",
                ));
            }
            lines
        } else {
            // Caddy's brace-less single server block: the rest of the file.
            parse_lines(stream, 0, None)?
        };
        blocks.push(ServerBlockAst { keys, lines });
    }
    Ok(blocks)
}

/// Reads a snippet's tokens up to the matching `}`, without expanding imports.
fn snippet_body(stream: &mut Stream<'_>, open: &Token) -> Result<Vec<Token>, Error> {
    let mut depth = 1usize;
    let mut tokens = Vec::new();
    while let Some(token) = stream.next_raw()? {
        match token.kind {
            TokenKind::Open => depth += 1,
            TokenKind::Close => {
                depth -= 1;
                if depth == 0 {
                    return Ok(tokens);
                }
            }
            TokenKind::Word | TokenKind::Quoted => {}
        }
        tokens.push(token);
    }
    Err(syntax(open, "snippet block is never closed (missing '}')"))
}

/// Reads lines until the `}` matching `open` (or the end of the file when `open` is `None`).
fn parse_lines(
    stream: &mut Stream<'_>,
    depth: usize,
    open: Option<&Token>,
) -> Result<Vec<Line>, Error> {
    let mut lines = Vec::new();
    loop {
        let Some(Delivered { token: name, .. }) = stream.next()? else {
            return match open {
                Some(open) => Err(syntax(open, "'{' is never closed (missing '}')")),
                None => Ok(lines),
            };
        };
        match name.kind {
            TokenKind::Close if open.is_some() => return Ok(lines),
            TokenKind::Close => return Err(syntax(&name, "unexpected '}' (no block is open)")),
            TokenKind::Open => {
                return Err(syntax(
                    &name,
                    "unexpected '{': a block must open on the line of its directive or option",
                ));
            }
            TokenKind::Word | TokenKind::Quoted => {}
        }
        let mut args = Vec::new();
        let mut block = None;
        while let Some(next) = stream.peek()? {
            if next.starts_line {
                break;
            }
            match next.token.kind {
                TokenKind::Close => break,
                TokenKind::Open => {
                    let Some(Delivered { token: brace, .. }) = stream.next()? else {
                        break;
                    };
                    if depth + 1 >= MAX_NESTING {
                        return Err(syntax(&brace, "blocks are nested too deeply"));
                    }
                    block = Some(Block {
                        lines: parse_lines(stream, depth + 1, Some(&brace))?,
                    });
                    if let Some(after) = stream.peek()?
                        && !after.starts_line
                        && after.token.kind != TokenKind::Close
                    {
                        let text = after.token.text.clone();
                        return Err(syntax(
                            &after.token,
                            format!("unexpected '{text}' after '}}'"),
                        ));
                    }
                    break;
                }
                TokenKind::Word | TokenKind::Quoted => {
                    if let Some(arg) = stream.next()? {
                        args.push(arg.token);
                    }
                }
            }
        }
        lines.push(Line { name, args, block });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::config::env::Environment;
    use crate::config::lexer;

    fn ast(text: &str) -> Result<Vec<ServerBlockAst>, Error> {
        let env = Environment::isolated();
        let file: Arc<Path> = Arc::from(Path::new("Corefile"));
        let tokens = lexer::lex(text, &file, &env)?;
        let mut stream = Stream::new(tokens, Path::new("/nonexistent/Corefile"), &env);
        parse(&mut stream)
    }

    /// A compact rendering: `keys { name args { ... } ; ... }`.
    fn render(blocks: &[ServerBlockAst]) -> String {
        fn lines(out: &mut String, lines: &[Line]) {
            for line in lines {
                out.push_str(&line.name.text);
                for arg in &line.args {
                    out.push(' ');
                    out.push_str(&arg.text);
                }
                if let Some(block) = &line.block {
                    out.push_str(" {");
                    lines_inner(out, &block.lines);
                    out.push('}');
                }
                out.push(';');
            }
        }
        fn lines_inner(out: &mut String, inner: &[Line]) {
            lines(out, inner);
        }
        let mut out = String::new();
        for block in blocks {
            let keys: Vec<&str> = block.keys.iter().map(|k| k.text.as_str()).collect();
            out.push_str(&keys.join(" "));
            out.push_str(" [");
            lines(&mut out, &block.lines);
            out.push_str("] ");
        }
        out.trim_end().to_owned()
    }

    #[test]
    fn structure() {
        let cases = [
            ("one block", ".:53 {\n errors\n}", ".:53 [errors;]"),
            (
                "brace on next line",
                ".:53\n{\n errors\n}",
                ".:53 [errors;]",
            ),
            ("keys", "a.org b.org:54 {\n}", "a.org b.org:54 []"),
            ("comma keys", "a.org,\n b.org {\n}", "a.org, b.org []"),
            (
                "option block",
                ". {\n kubernetes cluster.local {\n  pods insecure\n  ttl 30\n }\n}",
                ". [kubernetes cluster.local {pods insecure;ttl 30;};]",
            ),
            (
                "option after the brace",
                ". {\n health { lameduck 5s\n }\n}",
                ". [health {lameduck 5s;};]",
            ),
            (
                "one-line block",
                ". { health { lameduck 5s } }",
                ". [health {lameduck 5s;};]",
            ),
            (
                "empty option block",
                ". {\n health {\n }\n}",
                ". [health {};]",
            ),
            (
                "nested",
                ". {\n a {\n  b {\n   c\n  }\n }\n}",
                ". [a {b {c;};};]",
            ),
            (
                "braceless",
                ".:53\nerrors\nkubernetes",
                ".:53 [errors;kubernetes;]",
            ),
            ("keys only", ".:53", ".:53 []"),
            ("two blocks", "a {\n}\nb {\n x\n}", "a [] b [x;]"),
            ("blocks on one line", "a { } b { }", "a [] b []"),
            (
                "snippet",
                "(s) {\n errors\n}\n. {\n import s\n}",
                ". [errors;]",
            ),
            (
                "snippet with block",
                "(s) {\n k {\n  x\n }\n}\n. {\n import s\n}",
                ". [k {x;};]",
            ),
            (
                "snippet of keys",
                "(k) {\n a.org b.org\n}\nimport k\n{\n}",
                "a.org b.org []",
            ),
            (
                "nested snippets",
                "(a) {\n x\n}\n(b) {\n import a\n y\n}\n. {\n import b\n}",
                ". [x;y;]",
            ),
            ("empty", "", ""),
            ("comments only", "# nothing\n", ""),
        ];
        for (name, text, want) in cases {
            let got = ast(text).map(|blocks| render(&blocks));
            assert_eq!(
                got.as_deref().map_err(ToString::to_string),
                Ok(want),
                "{name}"
            );
        }
    }

    #[test]
    fn errors() {
        let cases = [
            ("stray close", "}", 1, "unexpected '}'"),
            ("stray open", "{", 1, "before '{'"),
            ("unclosed server block", ". {\n errors\n", 1, "never closed"),
            (
                "unclosed option block",
                ". {\n health {\n}",
                1,
                "never closed",
            ),
            (
                "brace on its own line",
                ". {\n health\n {\n }\n}",
                3,
                "must open on the line",
            ),
            ("after close", ". {\n health {\n } x\n}", 3, "after '}'"),
            ("braceless close", ".:53\nerrors\n}", 3, "no block is open"),
            ("dangling comma", "a.org,", 1, "another server block key"),
            (
                "snippet without block",
                "(s)\n",
                1,
                "needs a '{ ... }' block",
            ),
            ("snippet without name", "() {\n}", 1, "needs a name"),
            ("unclosed snippet", "(s) {\n x {\n}", 1, "never closed"),
            ("snippet twice", "(s) {\n}\n(s) {\n}", 3, "already defined"),
            (
                "snippet cycle",
                "(s) {\n import s\n}\n. {\n import s\n}",
                2,
                "import cycle",
            ),
            (
                "mutual snippets",
                "(a) {\n import b\n}\n(b) {\n import a\n}\n. {\n import a\n}",
                5,
                "import cycle: snippet 'a' -> snippet 'b' -> snippet 'a'",
            ),
            (
                "open after block",
                "a {\n} {\n}",
                2,
                "after the end of a server block",
            ),
            (
                "too deep",
                &format!(". {{\n{}", "a {\n".repeat(40)),
                17,
                "nested too deeply",
            ),
        ];
        for (name, text, line, want) in cases {
            let error = ast(text).unwrap_err();
            assert!(error.to_string().contains(want), "{name}: {error}");
            assert_eq!(error.line(), line, "{name}: {error}");
        }
    }
}
