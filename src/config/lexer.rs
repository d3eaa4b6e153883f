//! The Corefile lexer (CoreDNS's Caddy v1 syntax).
//!
//! - Tokens are separated by whitespace; `\r` is ignored, `\n` counts lines.
//! - A `#` that starts a token comments out the rest of the line (`a#b` is one token).
//! - `"quoted strings"` may hold whitespace and newlines; `\"` is a quote, any other `\x`
//!   stays as written with its backslash (Caddy v1). A quote that does not start a token is an
//!   ordinary character.
//! - `` `backtick strings` `` are raw: no escapes and no environment substitution.
//! - A token that is exactly `{` or `}` (and not quoted) is a brace.
//! - `{$VAR}` and `{%VAR%}` are replaced by the variable's value (empty when unset) in words
//!   and double-quoted strings, in one left-to-right pass (a value is not expanded again).

use std::path::Path;
use std::sync::Arc;

use super::env::Environment;
use super::error::Error;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// An unquoted word.
    Word,
    /// A double- or backtick-quoted string.
    Quoted,
    /// `{`.
    Open,
    /// `}`.
    Close,
}

/// One token with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    /// The text, after unquoting and environment substitution.
    pub(crate) text: String,
    /// What it is.
    pub(crate) kind: TokenKind,
    /// The file it was read from.
    pub(crate) file: Arc<Path>,
    /// The line it starts on (1-based).
    pub(crate) line: usize,
    /// The line it ends on (differs from `line` for a quoted string spanning lines).
    pub(crate) end_line: usize,
}

impl Token {
    /// Whether this is a brace.
    pub(crate) fn is_brace(&self) -> bool {
        matches!(self.kind, TokenKind::Open | TokenKind::Close)
    }
}

/// Whether `next` starts a new line after `previous` (another file counts as a new line).
pub(crate) fn on_new_line(previous: &Token, next: &Token) -> bool {
    previous.file != next.file || previous.end_line < next.line
}

/// The rest of a string opened by `quote` (`"` or a backquote), up to the closing quote;
/// `None` when the text ends first. `line` counts the newlines inside. A carriage return is
/// dropped. Inside double quotes (Caddy v1) `\"` is a quote, and `\` with any other
/// character stays as written, both of them (so `\\` is two backslashes, and does not escape
/// a following quote); a backquoted string has no escapes.
fn quoted(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    quote: char,
    line: &mut usize,
) -> Option<String> {
    let mut value = String::new();
    while let Some(c) = chars.next() {
        match c {
            c if c == quote => return Some(value),
            '\\' if quote == '"' => match chars.next() {
                Some('"') => value.push('"'),
                Some(next) => {
                    if next == '\n' {
                        *line += 1;
                    }
                    value.push('\\');
                    value.push(next);
                }
                None => value.push('\\'),
            },
            '\n' => {
                *line += 1;
                value.push('\n');
            }
            '\r' => {}
            c => value.push(c),
        }
    }
    None
}

/// Splits `text` (read from `file`) into tokens.
pub(crate) fn lex(text: &str, file: &Arc<Path>, env: &Environment) -> Result<Vec<Token>, Error> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1usize;
    while let Some(&c) = chars.peek() {
        match c {
            '\n' => {
                line += 1;
                chars.next();
            }
            c if c.is_whitespace() => {
                chars.next();
            }
            '#' => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            quote @ ('"' | '`') => {
                chars.next();
                let start = line;
                let Some(value) = quoted(&mut chars, quote, &mut line) else {
                    return Err(syntax(
                        file,
                        start,
                        &format!("unterminated quoted string (missing '{quote}')"),
                    ));
                };
                tokens.push(Token {
                    // Backquoted text is taken as written, without `{$ENV}` substitution.
                    text: if quote == '"' {
                        substitute(&value, env)
                    } else {
                        value
                    },
                    kind: TokenKind::Quoted,
                    file: file.clone(),
                    line: start,
                    end_line: line,
                });
            }
            _ => {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                let kind = match word.as_str() {
                    "{" => TokenKind::Open,
                    "}" => TokenKind::Close,
                    _ => TokenKind::Word,
                };
                let text = if kind == TokenKind::Word {
                    substitute(&word, env)
                } else {
                    word
                };
                tokens.push(Token {
                    text,
                    kind,
                    file: file.clone(),
                    line,
                    end_line: line,
                });
            }
        }
    }
    Ok(tokens)
}

fn syntax(file: &Arc<Path>, line: usize, message: &str) -> Error {
    Error::Syntax {
        file: file.to_path_buf(),
        line,
        message: message.to_owned(),
    }
}

/// Replaces `{$VAR}` and `{%VAR%}` by the variable's value (empty when unset).
pub(crate) fn substitute(text: &str, env: &Environment) -> String {
    if !text.contains("{$") && !text.contains("{%") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let dollar = rest.find("{$");
        let percent = rest.find("{%");
        let (start, close) = match (dollar, percent) {
            (Some(d), Some(p)) if p < d => (p, "%}"),
            (Some(d), _) => (d, "}"),
            (None, Some(p)) => (p, "%}"),
            (None, None) => break,
        };
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find(close) {
            Some(end) if end > 0 => {
                if let Some(value) = env.var(&after[..end]) {
                    out.push_str(&value);
                }
                rest = &after[end + close.len()..];
            }
            _ => {
                // Not a reference (`{$}` or no closing delimiter): keep the two characters.
                out.push_str(&rest[start..start + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Text, kind and line of a token.
    type Seen = (String, TokenKind, usize);

    fn words(text: &str) -> Vec<Seen> {
        let env = Environment::isolated()
            .with_var("ZONE", "cluster.local")
            .with_var("E", "");
        let file: Arc<Path> = Arc::from(Path::new("Corefile"));
        lex(text, &file, &env)
            .unwrap()
            .into_iter()
            .map(|t| (t.text, t.kind, t.line))
            .collect()
    }

    fn w(text: &str, line: usize) -> Seen {
        (text.to_owned(), TokenKind::Word, line)
    }

    fn q(text: &str, line: usize) -> Seen {
        (text.to_owned(), TokenKind::Quoted, line)
    }

    #[test]
    fn tokens() {
        let cases: Vec<(&str, &str, Vec<Seen>)> = vec![
            ("empty", "", vec![]),
            ("words", "a b\tc", vec![w("a", 1), w("b", 1), w("c", 1)]),
            (
                "lines",
                "a\n\nb\r\nc",
                vec![w("a", 1), w("b", 3), w("c", 4)],
            ),
            (
                "braces",
                ". {\n}",
                vec![
                    w(".", 1),
                    ("{".into(), TokenKind::Open, 1),
                    ("}".into(), TokenKind::Close, 2),
                ],
            ),
            ("brace inside a word", ".:53{", vec![w(".:53{", 1)]),
            ("comment", "a # b c\nd", vec![w("a", 1), w("d", 2)]),
            ("hash inside a word", "a#b", vec![w("a#b", 1)]),
            ("quoted", "\"a b\" c", vec![q("a b", 1), w("c", 1)]),
            ("escaped quote", r#""a\"b""#, vec![q("a\"b", 1)]),
            (
                "other escapes stay",
                r#""a\nb\\" c"#,
                vec![q(r"a\nb\\", 1), w("c", 1)],
            ),
            (
                "escaped backslash then quote",
                r#""a\\\"b""#,
                vec![q(r#"a\\"b"#, 1)],
            ),
            ("quoted braces are not braces", "\"{\"", vec![q("{", 1)]),
            (
                "multi-line quote",
                "\"a\nb\" c\nd",
                vec![q("a\nb", 1), w("c", 2), w("d", 3)],
            ),
            ("empty quote", "a \"\"", vec![w("a", 1), q("", 1)]),
            ("quote ends the token", "\"a\"b", vec![q("a", 1), w("b", 1)]),
            ("quote inside a word", "a\"b", vec![w("a\"b", 1)]),
            (
                "backticks",
                "`a \"b\" {$ZONE}`",
                vec![q("a \"b\" {$ZONE}", 1)],
            ),
            ("env", "{$ZONE}:53", vec![w("cluster.local:53", 1)]),
            ("windows env", "{%ZONE%}", vec![w("cluster.local", 1)]),
            (
                "env in quotes",
                "\"x {$ZONE}\"",
                vec![q("x cluster.local", 1)],
            ),
            ("unset env", "a{$NOPE}b", vec![w("ab", 1)]),
            ("empty env", "{$E}", vec![w("", 1)]),
            ("not a reference", "{$} {$X", vec![w("{$}", 1), w("{$X", 1)]),
        ];
        for (name, text, want) in cases {
            assert_eq!(words(text), want, "{name}");
        }
    }

    #[test]
    fn end_lines() {
        let file: Arc<Path> = Arc::from(Path::new("F"));
        let tokens = lex("\"a\n\nb\" c", &file, &Environment::isolated()).unwrap();
        assert_eq!((tokens[0].line, tokens[0].end_line), (1, 3));
        assert!(!on_new_line(&tokens[0], &tokens[1]));
    }

    #[test]
    fn errors() {
        let cases = [
            ("unterminated quote", "a\n\"b\nc", 2),
            ("unterminated backtick", "`b", 1),
        ];
        let file: Arc<Path> = Arc::from(Path::new("F"));
        for (name, text, line) in cases {
            let error = lex(text, &file, &Environment::isolated()).unwrap_err();
            assert_eq!(error.line(), line, "{name}");
            assert!(
                error.to_string().contains("unterminated"),
                "{name}: {error}"
            );
        }
    }

    #[test]
    fn substitution_is_not_recursive() {
        let env = Environment::isolated().with_var("A", "{$A}");
        assert_eq!(substitute("{$A}{$A}", &env), "{$A}{$A}");
        assert_eq!(substitute("x{%A%}y", &env), "x{$A}y");
    }
}
