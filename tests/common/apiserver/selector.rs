//! `labelSelector` and `fieldSelector` as the API server parses and evaluates them
//! (apimachinery's `labels.Parse` and `fields.ParseSelector`): the equality forms `a=b`,
//! `a==b`, `a!=b`, the set forms `a in (x,y)`, `a notin (x)`, `a`, `!a`, the numeric `a>1`,
//! `a<1`, comma-joined; field selectors take `=`, `==`, `!=` on the fields each kind
//! supports. Anything else is an error the server answers with 400.

use serde_json::Value;

use super::Kind;

/// A parsed `labelSelector`: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Greater(i64),
    Less(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Not,
    Equals,
    DoubleEquals,
    NotEquals,
    Greater,
    Less,
    Open,
    Close,
    Comma,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Self::Word(word) => format!("'{word}'"),
            Self::Not => "'!'".to_owned(),
            Self::Equals => "'='".to_owned(),
            Self::DoubleEquals => "'=='".to_owned(),
            Self::NotEquals => "'!='".to_owned(),
            Self::Greater => "'>'".to_owned(),
            Self::Less => "'<'".to_owned(),
            Self::Open => "'('".to_owned(),
            Self::Close => "')'".to_owned(),
            Self::Comma => "','".to_owned(),
        }
    }
}

fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' | ',' | '<' | '>' => {
                chars.next();
                tokens.push(match c {
                    '(' => Token::Open,
                    ')' => Token::Close,
                    ',' => Token::Comma,
                    '<' => Token::Less,
                    _ => Token::Greater,
                });
            }
            '!' => {
                chars.next();
                if chars.peek() == Some(&'=') {
                    chars.next();
                    tokens.push(Token::NotEquals);
                } else {
                    tokens.push(Token::Not);
                }
            }
            '=' => {
                chars.next();
                if chars.peek() == Some(&'=') {
                    chars.next();
                    tokens.push(Token::DoubleEquals);
                } else {
                    tokens.push(Token::Equals);
                }
            }
            _ => {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || "()<>,!=".contains(c) {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                tokens.push(Token::Word(word));
            }
        }
    }
    tokens
}

impl LabelSelector {
    /// Parses a `labelSelector` query value; the error is the Status message.
    pub fn parse(text: &str) -> Result<Self, String> {
        let tokens = tokenize(text);
        let mut requirements = Vec::new();
        let mut pos = 0;
        if tokens.is_empty() {
            return Ok(Self::default());
        }
        loop {
            let (requirement, next) = parse_requirement(&tokens, pos)
                .map_err(|e| format!("unable to parse requirement: {e}"))?;
            requirements.push(requirement);
            pos = next;
            match tokens.get(pos) {
                None => break,
                Some(Token::Comma) => {
                    pos += 1;
                    if pos == tokens.len() {
                        return Err(
                            "unable to parse requirement: found '', expected: identifier after ','"
                                .to_owned(),
                        );
                    }
                }
                Some(other) => {
                    return Err(format!(
                        "found {}, expected: ',' or 'end of string'",
                        other.describe()
                    ));
                }
            }
        }
        Ok(Self { requirements })
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.requirements.iter().all(|r| {
            let value = label(&r.key);
            match &r.op {
                Op::In(values) => value.is_some_and(|v| values.iter().any(|x| x == v)),
                Op::NotIn(values) => !value.is_some_and(|v| values.iter().any(|x| x == v)),
                Op::Exists => value.is_some(),
                Op::DoesNotExist => value.is_none(),
                Op::Greater(n) => value
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|v| v > *n),
                Op::Less(n) => value
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|v| v < *n),
            }
        })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

fn parse_requirement(tokens: &[Token], mut pos: usize) -> Result<(Requirement, usize), String> {
    let negated = tokens.get(pos) == Some(&Token::Not);
    if negated {
        pos += 1;
    }
    let key = match tokens.get(pos) {
        Some(Token::Word(word)) if word != "in" && word != "notin" => word.clone(),
        Some(other) => {
            return Err(format!("found {}, expected: identifier", other.describe()));
        }
        None => return Err("found '', expected: identifier".to_owned()),
    };
    validate_key(&key)?;
    pos += 1;
    if negated {
        return Ok((
            Requirement {
                key,
                op: Op::DoesNotExist,
            },
            pos,
        ));
    }
    let op = match tokens.get(pos) {
        None | Some(Token::Comma) => {
            return Ok((
                Requirement {
                    key,
                    op: Op::Exists,
                },
                pos,
            ));
        }
        Some(op) => op.clone(),
    };
    pos += 1;
    let single = |pos: usize| -> Result<String, String> {
        match tokens.get(pos) {
            Some(Token::Word(word)) => Ok(word.clone()),
            // `a=` selects the empty value, as in Kubernetes.
            None | Some(Token::Comma) => Ok(String::new()),
            Some(other) => Err(format!("found {}, expected: identifier", other.describe())),
        }
    };
    let advance = |pos: usize| match tokens.get(pos) {
        Some(Token::Word(_)) => pos + 1,
        _ => pos,
    };
    match op {
        Token::Equals | Token::DoubleEquals | Token::NotEquals => {
            let value = single(pos)?;
            validate_value(&value)?;
            let op = if op == Token::NotEquals {
                Op::NotIn(vec![value])
            } else {
                Op::In(vec![value])
            };
            Ok((Requirement { key, op }, advance(pos)))
        }
        Token::Greater | Token::Less => {
            let value = single(pos)?;
            let number: i64 = value.parse().map_err(|_| {
                format!("for 'Gt', 'Lt' operators, the value must be an integer, not {value:?}")
            })?;
            let op = if op == Token::Greater {
                Op::Greater(number)
            } else {
                Op::Less(number)
            };
            Ok((Requirement { key, op }, advance(pos)))
        }
        Token::Word(word) if word == "in" || word == "notin" => {
            if tokens.get(pos) != Some(&Token::Open) {
                return Err(format!(
                    "found {}, expected: '('",
                    tokens.get(pos).map_or("''".to_owned(), Token::describe)
                ));
            }
            pos += 1;
            let mut values = Vec::new();
            loop {
                match tokens.get(pos) {
                    Some(Token::Word(value)) => {
                        validate_value(value)?;
                        values.push(value.clone());
                        pos += 1;
                    }
                    // `(a,)` and `(,a)` hold an empty value.
                    Some(Token::Comma | Token::Close) => values.push(String::new()),
                    other => {
                        return Err(format!(
                            "found {}, expected: ',', ')' or identifier",
                            other.map_or("''".to_owned(), Token::describe)
                        ));
                    }
                }
                match tokens.get(pos) {
                    Some(Token::Comma) => pos += 1,
                    Some(Token::Close) => {
                        pos += 1;
                        break;
                    }
                    other => {
                        return Err(format!(
                            "found {}, expected: ',' or ')'",
                            other.map_or("''".to_owned(), Token::describe)
                        ));
                    }
                }
            }
            if values == [String::new()] && tokens.get(pos - 2) == Some(&Token::Open) {
                return Err(format!("for '{word}' operator, values set can't be empty"));
            }
            let op = if word == "in" {
                Op::In(values)
            } else {
                Op::NotIn(values)
            };
            Ok((Requirement { key, op }, pos))
        }
        other => Err(format!(
            "found {}, expected: '=', '!=', '==', 'in', 'notin', '<' or '>'",
            other.describe()
        )),
    }
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// characters.
fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let ok = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
        if !ok {
            return Err(format!(
                "invalid label key {key:?}: prefix part must be a lowercase DNS subdomain"
            ));
        }
    }
    if name.is_empty() || !is_label_name(name) {
        return Err(format!(
            "invalid label key {key:?}: name part must consist of alphanumeric characters, \
             '-', '_' or '.', and must start and end with an alphanumeric character, \
             at most 63 characters"
        ));
    }
    Ok(())
}

fn validate_value(value: &str) -> Result<(), String> {
    if value.is_empty() || is_label_name(value) {
        Ok(())
    } else {
        Err(format!(
            "invalid label value: {value:?}: a valid label must be an empty string or consist \
             of alphanumeric characters, '-', '_' or '.', and must start and end with an \
             alphanumeric character, at most 63 characters"
        ))
    }
}

fn is_label_name(text: &str) -> bool {
    text.len() <= 63
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text.ends_with(|c: char| c.is_ascii_alphanumeric())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A parsed `fieldSelector`: every term must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldTerm {
    field: String,
    value: String,
    equal: bool,
}

impl FieldSelector {
    /// Parses a `fieldSelector` for `kind`; the error is the Status message.
    pub fn parse(kind: Kind, text: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        for term in split_unescaped(text, ',') {
            if term.is_empty() {
                continue;
            }
            let (field, value, equal) = if let Some((f, v)) = find_operator(&term, "!=") {
                (f, v, false)
            } else if let Some((f, v)) = find_operator(&term, "==") {
                (f, v, true)
            } else if let Some((f, v)) = find_operator(&term, "=") {
                (f, v, true)
            } else {
                return Err(format!(
                    "invalid selector: '{text}'; can't understand '{term}'"
                ));
            };
            let field = field.trim().to_owned();
            if field_value(kind, &field, &Value::Null).is_none() {
                return Err(format!(
                    "field label not supported: {field}{}",
                    if field.is_empty() { " (empty)" } else { "" }
                ));
            }
            terms.push(FieldTerm {
                field,
                value: unescape(&value),
                equal,
            });
        }
        Ok(Self { terms })
    }

    pub fn matches(&self, kind: Kind, object: &Value) -> bool {
        self.terms.iter().all(|term| {
            let value = field_value(kind, &term.field, object).unwrap_or_default();
            (value == term.value) == term.equal
        })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// The value of a selectable field, or None when `kind` cannot select on `field` (the
/// fields the API server's registry offers for each kind).
fn field_value(kind: Kind, field: &str, object: &Value) -> Option<String> {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .map(|v| match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            })
            .unwrap_or_default()
    };
    let pointer = match (kind, field) {
        (_, "metadata.name") => "/metadata/name",
        (_, "metadata.namespace") => "/metadata/namespace",
        (Kind::Namespace, "status.phase") => "/status/phase",
        (Kind::Service, "spec.clusterIP") => "/spec/clusterIP",
        (Kind::Service, "spec.type") => "/spec/type",
        (Kind::Pod, "spec.nodeName") => "/spec/nodeName",
        (Kind::Pod, "spec.restartPolicy") => "/spec/restartPolicy",
        (Kind::Pod, "spec.schedulerName") => "/spec/schedulerName",
        (Kind::Pod, "spec.serviceAccountName") => "/spec/serviceAccountName",
        (Kind::Pod, "status.phase") => "/status/phase",
        (Kind::Pod, "status.podIP") => "/status/podIP",
        (Kind::Pod, "status.nominatedNodeName") => "/status/nominatedNodeName",
        (Kind::Pod, "spec.hostNetwork") => {
            let on = object.pointer("/spec/hostNetwork").and_then(Value::as_bool);
            return Some(on.unwrap_or(false).to_string());
        }
        _ => return None,
    };
    Some(text(pointer))
}

/// `text` split at `sep` where it is not escaped with a backslash.
fn split_unescaped(text: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            current.push('\\');
            current.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    parts.push(current);
    parts
}

/// The first unescaped `op` in `term`: (field, raw value).
fn find_operator(term: &str, op: &str) -> Option<(String, String)> {
    let bytes = term.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if term[i..].starts_with(op) {
            return Some((term[..i].to_owned(), term[i + op.len()..].to_owned()));
        }
        i += 1;
    }
    None
}

fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else {
            out.push(c);
        }
    }
    out
}
