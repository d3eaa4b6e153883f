//! nft text as tokens: words, strings, braces, `;`, `,` and line ends, each with its line;
//! and a cursor over them.

use crate::ruleset::ParseError;

/// One token of nft text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    Word(String),
    Str(String),
    Open,
    Close,
    Semi,
    Comma,
    Newline,
}

#[derive(Debug, Clone)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) line: usize,
}

pub(super) fn lex(text: &str) -> Result<Vec<Token>, ParseError> {
    let mut tokens = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let mut chars = raw.chars().peekable();
        let mut word = String::new();
        let flush = |word: &mut String, tokens: &mut Vec<Token>| {
            if !word.is_empty() {
                tokens.push(Token {
                    tok: Tok::Word(std::mem::take(word)),
                    line,
                });
            }
        };
        while let Some(c) = chars.next() {
            match c {
                '"' => {
                    flush(&mut word, &mut tokens);
                    let mut text = String::new();
                    let mut closed = false;
                    while let Some(c) = chars.next() {
                        match c {
                            '\\' => {
                                if let Some(next) = chars.next() {
                                    text.push(next);
                                }
                            }
                            '"' => {
                                closed = true;
                                break;
                            }
                            c => text.push(c),
                        }
                    }
                    if !closed {
                        return Err(ParseError::new(line, "unterminated \" quote"));
                    }
                    tokens.push(Token {
                        tok: Tok::Str(text),
                        line,
                    });
                }
                '#' if word.is_empty() => break,
                '{' | '}' | ';' | ',' => {
                    flush(&mut word, &mut tokens);
                    tokens.push(Token {
                        tok: match c {
                            '{' => Tok::Open,
                            '}' => Tok::Close,
                            ';' => Tok::Semi,
                            _ => Tok::Comma,
                        },
                        line,
                    });
                }
                c if c.is_whitespace() => flush(&mut word, &mut tokens),
                c => word.push(c),
            }
        }
        flush(&mut word, &mut tokens);
        tokens.push(Token {
            tok: Tok::Newline,
            line,
        });
    }
    Ok(tokens)
}

/// A cursor over tokens.
pub(super) struct Cursor<'t> {
    pub(super) tokens: &'t [Token],
    pub(super) at: usize,
}

impl<'t> Cursor<'t> {
    pub(super) fn peek(&self) -> Option<&'t Tok> {
        self.tokens.get(self.at).map(|t| &t.tok)
    }

    pub(super) fn line(&self) -> usize {
        self.tokens
            .get(self.at)
            .or_else(|| self.tokens.last())
            .map_or(1, |t| t.line)
    }

    pub(super) fn next(&mut self) -> Option<&'t Tok> {
        let tok = self.tokens.get(self.at).map(|t| &t.tok);
        self.at += 1;
        tok
    }

    pub(super) fn peek_word(&self) -> Option<&'t str> {
        match self.peek() {
            Some(Tok::Word(w)) => Some(w.as_str()),
            _ => None,
        }
    }

    pub(super) fn expect_word(&mut self, what: &str) -> Result<&'t str, ParseError> {
        let line = self.line();
        match self.next() {
            Some(Tok::Word(w)) => Ok(w.as_str()),
            other => Err(ParseError::new(
                line,
                format!("expected {what}, found {}", describe(other)),
            )),
        }
    }

    pub(super) fn expect(&mut self, tok: &Tok, what: &str) -> Result<(), ParseError> {
        let line = self.line();
        match self.next() {
            Some(found) if found == tok => Ok(()),
            other => Err(ParseError::new(
                line,
                format!("expected {what}, found {}", describe(other)),
            )),
        }
    }

    pub(super) fn skip_newlines(&mut self) {
        while self.peek() == Some(&Tok::Newline) {
            self.at += 1;
        }
    }

    /// The tokens up to the end of the line (or a `;` at brace depth 0), consumed.
    pub(super) fn statement(&mut self) -> Vec<Token> {
        let mut out = Vec::new();
        let mut depth = 0usize;
        while let Some(token) = self.tokens.get(self.at) {
            match token.tok {
                Tok::Newline if depth == 0 => break,
                Tok::Semi if depth == 0 => break,
                Tok::Newline => {
                    self.at += 1;
                    continue;
                }
                Tok::Open => depth += 1,
                Tok::Close if depth == 0 => break,
                Tok::Close => depth -= 1,
                _ => {}
            }
            out.push(token.clone());
            self.at += 1;
        }
        out
    }
}

pub(super) fn describe(tok: Option<&Tok>) -> String {
    match tok {
        None => "the end of the text".to_owned(),
        Some(Tok::Word(w)) => format!("{w:?}"),
        Some(Tok::Str(s)) => format!("\"{s}\""),
        Some(Tok::Open) => "\"{\"".to_owned(),
        Some(Tok::Close) => "\"}\"".to_owned(),
        Some(Tok::Semi) => "\";\"".to_owned(),
        Some(Tok::Comma) => "\",\"".to_owned(),
        Some(Tok::Newline) => "the end of the line".to_owned(),
    }
}

pub(super) fn text_of(tokens: &[Token]) -> String {
    let mut out = String::new();
    for token in tokens {
        let piece = match &token.tok {
            Tok::Word(w) => w.clone(),
            Tok::Str(s) => format!("\"{s}\""),
            Tok::Open => "{".to_owned(),
            Tok::Close => "}".to_owned(),
            Tok::Semi => ";".to_owned(),
            Tok::Comma => ",".to_owned(),
            Tok::Newline => continue,
        };
        if !out.is_empty() && !matches!(token.tok, Tok::Comma) {
            out.push(' ');
        }
        out.push_str(&piece);
    }
    out
}

pub(super) fn words_of(tokens: &[Token]) -> Vec<&str> {
    tokens
        .iter()
        .map_while(|t| match &t.tok {
            Tok::Word(w) => Some(w.as_str()),
            _ => None,
        })
        .collect()
}
