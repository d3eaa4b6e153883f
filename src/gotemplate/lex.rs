//! The lexer of an action's body (`{{ ... }}`): words, fields, strings, numbers, pipes
//! and parentheses.

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Token {
    /// `.A.B` (empty: `.` itself).
    Field(Vec<String>),
    Ident(String),
    Str(String),
    Int(i64),
    Pipe,
    Open,
    Close,
    Var(String),
}

impl Token {
    pub(super) fn describe(&self) -> String {
        match self {
            Self::Field(path) => format!("<.{}>", path.join(".")),
            Self::Ident(name) => format!("<{name}>"),
            Self::Str(text) => format!("{text:?}"),
            Self::Int(n) => format!("<{n}>"),
            Self::Pipe => "<|>".to_owned(),
            Self::Open => "<(>".to_owned(),
            Self::Close => "<)>".to_owned(),
            Self::Var(name) => format!("<{name}>"),
        }
    }
}

pub(super) fn tokens(body: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = body.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while at < chars.len() {
        let c = chars[at];
        match c {
            ' ' | '\t' | '\n' | '\r' => at += 1,
            '|' => {
                tokens.push(Token::Pipe);
                at += 1;
            }
            '(' => {
                tokens.push(Token::Open);
                at += 1;
            }
            ')' => {
                tokens.push(Token::Close);
                at += 1;
            }
            '.' => {
                let mut path = Vec::new();
                while at < chars.len() && chars[at] == '.' {
                    at += 1;
                    let start = at;
                    while at < chars.len() && ident(chars[at]) {
                        at += 1;
                    }
                    if start == at {
                        if path.is_empty() && (at >= chars.len() || !ident(chars[at])) {
                            break;
                        }
                        return Err("bad field syntax".to_owned());
                    }
                    path.push(chars[start..at].iter().collect());
                }
                tokens.push(Token::Field(path));
            }
            '"' => {
                let mut text = String::new();
                at += 1;
                loop {
                    let Some(&c) = chars.get(at) else {
                        return Err("unterminated quoted string".to_owned());
                    };
                    at += 1;
                    match c {
                        '"' => break,
                        '\\' => {
                            let Some(&escaped) = chars.get(at) else {
                                return Err("unterminated quoted string".to_owned());
                            };
                            at += 1;
                            text.push(match escaped {
                                'n' => '\n',
                                't' => '\t',
                                'r' => '\r',
                                '\\' => '\\',
                                '"' => '"',
                                '\'' => '\'',
                                other => {
                                    return Err(format!("unknown escape sequence: \\{other}"));
                                }
                            });
                        }
                        other => text.push(other),
                    }
                }
                tokens.push(Token::Str(text));
            }
            '`' => {
                at += 1;
                let start = at;
                while at < chars.len() && chars[at] != '`' {
                    at += 1;
                }
                if at >= chars.len() {
                    return Err("unterminated raw quoted string".to_owned());
                }
                tokens.push(Token::Str(chars[start..at].iter().collect()));
                at += 1;
            }
            '$' => {
                let start = at;
                at += 1;
                while at < chars.len() && ident(chars[at]) {
                    at += 1;
                }
                tokens.push(Token::Var(chars[start..at].iter().collect()));
            }
            c if c.is_ascii_digit() || c == '-' || c == '+' => {
                let start = at;
                at += 1;
                while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '_') {
                    at += 1;
                }
                let text: String = chars[start..at].iter().collect();
                tokens.push(Token::Int(parse_int_literal(&text)?));
            }
            c if ident(c) => {
                let start = at;
                while at < chars.len() && ident(chars[at]) {
                    at += 1;
                }
                tokens.push(Token::Ident(chars[start..at].iter().collect()));
            }
            ':' | '=' => {
                return Err(
                    "variable assignment is not supported (clusterdns templates have no \
                     variables)"
                        .to_owned(),
                );
            }
            other => return Err(format!("unexpected {other:?} in command")),
        }
    }
    Ok(tokens)
}

pub(super) fn parse_int_literal(text: &str) -> Result<i64, String> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let digits = digits.replace('_', "");
    let value = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(hex, 16)
    } else if let Some(octal) = digits
        .strip_prefix("0o")
        .or_else(|| digits.strip_prefix("0O"))
    {
        i64::from_str_radix(octal, 8)
    } else if let Some(binary) = digits
        .strip_prefix("0b")
        .or_else(|| digits.strip_prefix("0B"))
    {
        i64::from_str_radix(binary, 2)
    } else {
        digits.parse::<i64>()
    }
    .map_err(|_| format!("bad number syntax: {text:?}"))?;
    Ok(if negative { -value } else { value })
}
