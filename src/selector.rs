//! Label selectors in kubectl's string syntax (`app=web,tier!=db,env in (a,b),!legacy`), as
//! the *kubernetes* plugin's `labels` and `namespace_labels` options take them.
//!
//! The grammar is apimachinery's (`k8s.io/apimachinery/pkg/labels`, which CoreDNS calls through
//! `metav1.ParseToLabelSelector`):
//!
//! ```text
//! selector    := "" | requirement ("," requirement)*
//! requirement := ["!"] KEY
//!              | KEY ("=" | "==" | "!=") VALUE
//!              | KEY ("in" | "notin") "(" VALUE ("," VALUE)* ")"
//! ```
//!
//! Whitespace between tokens is ignored. Keys are Kubernetes qualified names (an optional DNS
//! subdomain prefix and `/`, then a name of at most 63 characters); values are empty or at most
//! 63 characters of `[A-Za-z0-9._-]` starting and ending alphanumeric. `<` and `>` (numeric
//! comparisons) are refused, as `ParseToLabelSelector` refuses them.

use std::collections::BTreeMap;

/// A parsed label selector: every requirement must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    /// The requirements, in the order written.
    pub requirements: Vec<Requirement>,
}

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` or `key==value`.
    Equals(String, String),
    /// `key!=value` (also true when the key is absent).
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)` (also true when the key is absent).
    NotIn(String, Vec<String>),
    /// `key`: the key is present.
    Exists(String),
    /// `!key`: the key is absent.
    DoesNotExist(String),
}

impl LabelSelector {
    /// Whether `labels` satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements
            .iter()
            .all(|requirement| requirement.matches(labels))
    }
}

/// The selector in the API's query syntax (`labelSelector=`), as client-go's
/// `Selector.String()` writes it: requirements joined by `,`, set values sorted.
impl std::fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (index, requirement) in self.requirements.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            let set = |values: &[String]| {
                let mut values = values.to_vec();
                values.sort();
                values.dedup();
                values.join(",")
            };
            match requirement {
                Requirement::Equals(key, value) => write!(f, "{key}={value}")?,
                Requirement::NotEquals(key, value) => write!(f, "{key}!={value}")?,
                Requirement::In(key, values) => write!(f, "{key} in ({})", set(values))?,
                Requirement::NotIn(key, values) => write!(f, "{key} notin ({})", set(values))?,
                Requirement::Exists(key) => f.write_str(key)?,
                Requirement::DoesNotExist(key) => write!(f, "!{key}")?,
            }
        }
        Ok(())
    }
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::Equals(key, value) => labels.get(key) == Some(value),
            Self::NotEquals(key, value) => labels.get(key) != Some(value),
            Self::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
            Self::NotIn(key, values) => labels.get(key).is_none_or(|v| !values.contains(v)),
            Self::Exists(key) => labels.contains_key(key),
            Self::DoesNotExist(key) => !labels.contains_key(key),
        }
    }
}

/// Why a label selector does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SelectorError {
    message: String,
}

impl SelectorError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// What is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl LabelSelector {
    /// Parses kubectl's selector syntax (see the module documentation). The empty string (or
    /// only whitespace) is the selector that matches everything.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let tokens = lex(text);
        let mut parser = Parser {
            tokens,
            position: 0,
        };
        let mut requirements = Vec::new();
        loop {
            match parser.peek() {
                Tok::End => return Ok(Self { requirements }),
                Tok::Ident(_) | Tok::Not | Tok::In | Tok::NotIn => {}
                other => {
                    return Err(SelectorError::new(format!(
                        "found '{}', expected: '!', a key, or the end",
                        other.text()
                    )));
                }
            }
            requirements.push(parser.requirement()?);
            match parser.next() {
                Tok::End => return Ok(Self { requirements }),
                Tok::Comma => match parser.peek() {
                    Tok::Ident(_) | Tok::Not | Tok::In | Tok::NotIn => {}
                    other => {
                        return Err(SelectorError::new(format!(
                            "found '{}', expected: a key after ','",
                            other.text()
                        )));
                    }
                },
                other => {
                    return Err(SelectorError::new(format!(
                        "found '{}', expected: ',' or the end",
                        other.text()
                    )));
                }
            }
        }
    }
}

/// A selector token.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Equals,
    DoubleEquals,
    NotEquals,
    Not,
    In,
    NotIn,
    Open,
    Close,
    Comma,
    Greater,
    Less,
    End,
}

impl Tok {
    fn text(&self) -> &str {
        match self {
            Self::Ident(text) => text,
            Self::Equals => "=",
            Self::DoubleEquals => "==",
            Self::NotEquals => "!=",
            Self::Not => "!",
            Self::In => "in",
            Self::NotIn => "notin",
            Self::Open => "(",
            Self::Close => ")",
            Self::Comma => ",",
            Self::Greater => ">",
            Self::Less => "<",
            Self::End => "",
        }
    }

    /// In key and value positions `in` and `notin` are ordinary words.
    fn as_word(&self) -> Option<&str> {
        match self {
            Self::Ident(text) => Some(text),
            Self::In => Some("in"),
            Self::NotIn => Some("notin"),
            _ => None,
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '<' | '>')
}

fn lex(text: &str) -> Vec<Tok> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if is_special(c) {
            chars.next();
            let token = match (c, chars.peek()) {
                ('=', Some('=')) => {
                    chars.next();
                    Tok::DoubleEquals
                }
                ('!', Some('=')) => {
                    chars.next();
                    Tok::NotEquals
                }
                ('=', _) => Tok::Equals,
                ('!', _) => Tok::Not,
                ('(', _) => Tok::Open,
                (')', _) => Tok::Close,
                (',', _) => Tok::Comma,
                ('<', _) => Tok::Less,
                _ => Tok::Greater,
            };
            tokens.push(token);
            continue;
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || is_special(c) {
                break;
            }
            word.push(c);
            chars.next();
        }
        tokens.push(match word.as_str() {
            "in" => Tok::In,
            "notin" => Tok::NotIn,
            _ => Tok::Ident(word),
        });
    }
    tokens
}

struct Parser {
    tokens: Vec<Tok>,
    position: usize,
}

impl Parser {
    fn peek(&self) -> Tok {
        self.tokens.get(self.position).cloned().unwrap_or(Tok::End)
    }

    fn next(&mut self) -> Tok {
        let token = self.peek();
        self.position += 1;
        token
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        let mut token = self.next();
        let negated = token == Tok::Not;
        if negated {
            token = self.next();
        }
        let Some(key) = token.as_word().map(str::to_owned) else {
            return Err(SelectorError::new(format!(
                "found '{}', expected: a key",
                token.text()
            )));
        };
        validate_key(&key)?;
        if negated {
            return Ok(Requirement::DoesNotExist(key));
        }
        match self.peek() {
            Tok::End | Tok::Comma => return Ok(Requirement::Exists(key)),
            _ => {}
        }
        match self.next() {
            Tok::Equals | Tok::DoubleEquals => {
                let value = self.exact_value()?;
                Ok(Requirement::Equals(key, value))
            }
            Tok::NotEquals => {
                let value = self.exact_value()?;
                Ok(Requirement::NotEquals(key, value))
            }
            Tok::In => Ok(Requirement::In(key, self.value_set()?)),
            Tok::NotIn => Ok(Requirement::NotIn(key, self.value_set()?)),
            op @ (Tok::Greater | Tok::Less) => Err(SelectorError::new(format!(
                "'{}' is not a valid label selector operator (numeric comparisons are not \
                 supported)",
                op.text()
            ))),
            other => Err(SelectorError::new(format!(
                "found '{}', expected: one of '=', '==', '!=', 'in', 'notin'",
                other.text()
            ))),
        }
    }

    /// The value after `=`, `==` or `!=` (empty at the end or before a comma).
    fn exact_value(&mut self) -> Result<String, SelectorError> {
        let value = match self.peek() {
            Tok::End | Tok::Comma => String::new(),
            token => match token.as_word() {
                Some(word) => {
                    let word = word.to_owned();
                    self.position += 1;
                    word
                }
                None => {
                    return Err(SelectorError::new(format!(
                        "found '{}', expected: a value",
                        token.text()
                    )));
                }
            },
        };
        validate_value(&value)?;
        Ok(value)
    }

    /// `( VALUE, ... )`; empty elements are empty values, as apimachinery has it.
    fn value_set(&mut self) -> Result<Vec<String>, SelectorError> {
        let open = self.next();
        if open != Tok::Open {
            return Err(SelectorError::new(format!(
                "found '{}', expected: '('",
                open.text()
            )));
        }
        let mut values: Vec<String> = Vec::new();
        let mut push = |value: String| {
            if !values.contains(&value) {
                values.push(value);
            }
        };
        let mut expecting_value = true;
        loop {
            let token = self.next();
            match token {
                Tok::Close => {
                    if expecting_value {
                        push(String::new());
                    }
                    break;
                }
                Tok::Comma => {
                    if expecting_value {
                        push(String::new());
                    }
                    expecting_value = true;
                }
                ref other => match other.as_word() {
                    Some(word) if expecting_value => {
                        validate_value(word)?;
                        push(word.to_owned());
                        expecting_value = false;
                    }
                    _ => {
                        return Err(SelectorError::new(format!(
                            "found '{}', expected: ',', ')' or a value",
                            other.text()
                        )));
                    }
                },
            }
        }
        Ok(values)
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 characters.
fn is_label_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            text.len() <= 63
                && first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// A DNS-1123 subdomain: lower-case labels of `[a-z0-9-]` joined by dots, at most 253.
fn is_dns_subdomain(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| {
            let bytes = label.as_bytes();
            match (bytes.first(), bytes.last()) {
                (Some(first), Some(last)) => {
                    (first.is_ascii_lowercase() || first.is_ascii_digit())
                        && (last.is_ascii_lowercase() || last.is_ascii_digit())
                        && bytes
                            .iter()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                }
                _ => false,
            }
        })
}

/// A label key: `[PREFIX/]NAME` (Kubernetes' qualified name).
fn validate_key(key: &str) -> Result<(), SelectorError> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && !is_dns_subdomain(prefix)
    {
        return Err(SelectorError::new(format!(
            "invalid label key '{key}': the prefix must be a lower-case DNS subdomain (such as \
             'example.com') of at most 253 characters"
        )));
    }
    if !is_label_name(name) {
        return Err(SelectorError::new(format!(
            "invalid label key '{key}': the name must be 1 to 63 characters of letters, digits, \
             '-', '_' or '.', starting and ending with a letter or digit"
        )));
    }
    Ok(())
}

/// A label value: empty, or a label name.
fn validate_value(value: &str) -> Result<(), SelectorError> {
    if value.is_empty() || is_label_name(value) {
        Ok(())
    } else {
        Err(SelectorError::new(format!(
            "invalid label value '{value}': at most 63 characters of letters, digits, '-', '_' \
             or '.', starting and ending with a letter or digit"
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn s(text: &str) -> String {
        text.to_owned()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (s(k), s(v))).collect()
    }

    #[test]
    fn parses() {
        use Requirement::*;
        let long = format!("a={}", "v".repeat(63));
        let cases: Vec<(&str, &str, Vec<Requirement>)> = vec![
            ("empty", "", vec![]),
            ("blank", "  \t", vec![]),
            ("equals", "a=b", vec![Equals(s("a"), s("b"))]),
            ("double equals", "a==b", vec![Equals(s("a"), s("b"))]),
            ("not equals", "a!=b", vec![NotEquals(s("a"), s("b"))]),
            ("empty value", "a=", vec![Equals(s("a"), s(""))]),
            (
                "empty value before comma",
                "a=,b",
                vec![Equals(s("a"), s("")), Exists(s("b"))],
            ),
            ("exists", "a", vec![Exists(s("a"))]),
            ("does not exist", "!a", vec![DoesNotExist(s("a"))]),
            ("spaced not", "! a", vec![DoesNotExist(s("a"))]),
            (
                "in",
                "env in (a,b)",
                vec![In(s("env"), vec![s("a"), s("b")])],
            ),
            (
                "notin spaced",
                "env notin ( a , b )",
                vec![NotIn(s("env"), vec![s("a"), s("b")])],
            ),
            ("in dedup", "env in (a,a)", vec![In(s("env"), vec![s("a")])]),
            ("in empty set", "env in ()", vec![In(s("env"), vec![s("")])]),
            (
                "in empty element",
                "env in (a,)",
                vec![In(s("env"), vec![s("a"), s("")])],
            ),
            (
                "whitespace tolerant",
                " a = b , c != d ",
                vec![Equals(s("a"), s("b")), NotEquals(s("c"), s("d"))],
            ),
            (
                "coredns readme",
                "environment in (staging, qa),application=nginx",
                vec![
                    In(s("environment"), vec![s("staging"), s("qa")]),
                    Equals(s("application"), s("nginx")),
                ],
            ),
            (
                "prefixed key",
                "app.kubernetes.io/name=web",
                vec![Equals(s("app.kubernetes.io/name"), s("web"))],
            ),
            (
                "keyword as key",
                "in=notin",
                vec![Equals(s("in"), s("notin"))],
            ),
            (
                "dotted value",
                "v=1.2.3_a-b",
                vec![Equals(s("v"), s("1.2.3_a-b"))],
            ),
            ("63 characters", &long, vec![Equals(s("a"), "v".repeat(63))]),
        ];
        for (name, text, want) in cases {
            let got = LabelSelector::parse(text);
            assert_eq!(got, Ok(LabelSelector { requirements: want }), "{name}");
        }
    }

    #[test]
    fn rejects() {
        let cases = [
            ("only operator", "=", "expected: '!', a key, or the end"),
            ("missing key", "=b", "expected: '!', a key"),
            ("trailing comma", "a=b,", "a key after ','"),
            ("double comma", "a,,b", "a key after ','"),
            ("not with value", "!a=b", "expected: ',' or the end"),
            ("two values", "a=b c", "expected: ',' or the end"),
            ("bad operator", "a b", "expected: one of"),
            ("greater", "a>1", "not a valid label selector operator"),
            ("less", "a<1", "not a valid label selector operator"),
            ("in without parens", "a in b", "expected: '('"),
            ("unclosed set", "a in (b", "expected: ',', ')' or a value"),
            (
                "set without comma",
                "a in (b c)",
                "expected: ',', ')' or a value",
            ),
            ("operator as value", "a=(", "expected: a value"),
            ("bad key char", "a$=b", "invalid label key"),
            (
                "key too long",
                &format!("{}=b", "k".repeat(64)),
                "invalid label key",
            ),
            ("key starts with dash", "-a=b", "invalid label key"),
            ("bad prefix", "Example.com/a=b", "prefix must be"),
            ("empty prefix", "/a=b", "prefix must be"),
            ("empty name", "example.com/=b", "the name must be"),
            ("two slashes", "a/b/c=d", "the name must be"),
            ("bad value", "a=b$", "invalid label value"),
            (
                "value too long",
                &format!("a={}", "v".repeat(64)),
                "invalid label value",
            ),
            ("value ends with dot", "a=b.", "invalid label value"),
            (
                "bad value in set",
                "a in (b, c!)",
                "expected: ',', ')' or a value",
            ),
            (
                "bad value in set chars",
                "a in (b, c$)",
                "invalid label value",
            ),
            ("bang alone", "!", "expected: a key"),
        ];
        for (name, text, want) in cases {
            let error = LabelSelector::parse(text).unwrap_err();
            assert!(error.message().contains(want), "{name}: {error}");
        }
    }

    #[test]
    fn matching() {
        let cases = [
            ("equals", "app=web", &[("app", "web")][..], true),
            ("equals other", "app=web", &[("app", "db")][..], false),
            ("not equals absent", "app!=web", &[][..], true),
            ("in", "env in (a,b)", &[("env", "b")][..], true),
            ("in absent", "env in (a,b)", &[][..], false),
            ("notin absent", "env notin (a,b)", &[][..], true),
            (
                "notin present",
                "env notin (a,b)",
                &[("env", "a")][..],
                false,
            ),
            ("exists", "app", &[("app", "")][..], true),
            ("does not exist", "!app", &[("app", "")][..], false),
            (
                "all must hold",
                "a=1,b=2",
                &[("a", "1"), ("b", "3")][..],
                false,
            ),
            ("everything", "", &[("x", "y")][..], true),
        ];
        for (name, text, pairs, want) in cases {
            let selector = LabelSelector::parse(text).unwrap();
            assert_eq!(selector.matches(&labels(pairs)), want, "{name}");
        }
    }

    #[test]
    fn garbage_never_panics() {
        let alphabet: Vec<char> = "a=!(),<> in notin/._-$\u{0}é\t".chars().collect();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..5000 {
            let mut text = String::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 24) as usize;
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            let _ = LabelSelector::parse(&text);
        }
    }

    #[test]
    fn selectors_print_in_the_query_syntax_and_read_back() {
        for (input, printed) in [
            ("a=b", "a=b"),
            ("a==b, c!=d", "a=b,c!=d"),
            (
                "env in (prod, dev),tier notin (web)",
                "env in (dev,prod),tier notin (web)",
            ),
            ("k8s.io/app,!legacy", "k8s.io/app,!legacy"),
        ] {
            let selector = LabelSelector::parse(input).expect(input);
            assert_eq!(selector.to_string(), printed, "{input}");
            let back = LabelSelector::parse(printed).expect(printed);
            assert_eq!(back.to_string(), printed, "{input} read back");
        }
    }
}
