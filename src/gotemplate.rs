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

use std::fmt::Write as _;

/// A compiled template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Text(String),
    Action(Pipeline),
}

/// Commands joined by `|`: each one's value is the last argument of the next.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pipeline(Vec<Command>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Command {
    /// One operand.
    Operand(Operand),
    /// A function and its arguments.
    Call(Func, Vec<Operand>),
    /// `.Meta NAME`: the metadata plugin's value (always empty: clusterdns has no
    /// *metadata*).
    Meta(Vec<Operand>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Operand {
    /// `.`, or `.A.B`: the fields of the data.
    Field(Vec<String>),
    Str(String),
    Int(i64),
    Bool(bool),
    /// `( pipeline )`, optionally followed by fields.
    Sub(Box<Pipeline>, Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Index,
    ParseInt,
    Print,
    Printf,
    Println,
    Len,
}

impl Func {
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "index" => Self::Index,
            "parseInt" => Self::ParseInt,
            "print" => Self::Print,
            "printf" => Self::Printf,
            "println" => Self::Println,
            "len" => Self::Len,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Index => "index",
            Self::ParseInt => "parseInt",
            Self::Print => "print",
            Self::Printf => "printf",
            Self::Println => "println",
            Self::Len => "len",
        }
    }
}

/// What a template is executed with: CoreDNS's `templateData`.
#[derive(Debug, Clone, Default)]
pub struct Data<'d> {
    /// `.Zone`: the template's zone that matched.
    pub zone: &'d str,
    /// `.Name`: the query name, lower case, with its final dot.
    pub name: &'d str,
    /// `.Regex`: the regular expression that matched.
    pub regex: &'d str,
    /// `.Match`: the whole match and the groups.
    pub matches: &'d [String],
    /// `.Group`: the groups by number (`"0"`, `"1"`, ...) and by name.
    pub groups: &'d [(String, String)],
    /// `.Class`: `IN`, `CH`, ...
    pub class: &'d str,
    /// `.Type`: `A`, `PTR`, ...
    pub qtype: &'d str,
    /// `.Remote`: the client's address.
    pub remote: &'d str,
    /// `.Question.Qtype` and `.Question.Qclass`, as numbers.
    pub question: (u16, u16),
}

/// A value while executing.
#[derive(Debug, Clone)]
enum Value<'d> {
    Str(String),
    Int(i64),
    Uint(u64),
    Bool(bool),
    List(&'d [String]),
    Map(&'d [(String, String)]),
    /// A missing map key (`<no value>`).
    Missing,
}

impl Value<'_> {
    fn is_string(&self) -> bool {
        matches!(self, Self::Str(_))
    }

    /// As Go's `fmt.Sprint` writes it.
    fn write(&self, out: &mut String) {
        match self {
            Self::Str(text) => out.push_str(text),
            Self::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Self::Uint(n) => {
                let _ = write!(out, "{n}");
            }
            Self::Bool(b) => {
                let _ = write!(out, "{b}");
            }
            Self::List(items) => {
                out.push('[');
                out.push_str(&items.join(" "));
                out.push(']');
            }
            Self::Map(entries) => {
                let mut sorted: Vec<&(String, String)> = entries.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                sorted.dedup_by(|a, b| a.0 == b.0);
                out.push_str("map[");
                for (i, (key, value)) in sorted.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    let _ = write!(out, "{key}:{value}");
                }
                out.push(']');
            }
            Self::Missing => out.push_str("<no value>"),
        }
    }

    fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

/// The data's fields a template may name (`.Meta` is a method).
const FIELDS: &[&str] = &[
    "Zone", "Name", "Regex", "Match", "Group", "Class", "Type", "Remote", "Question",
];

/// The fields of `.Question`.
const QUESTION_FIELDS: &[&str] = &["Name", "Qtype", "Qclass"];

impl Template {
    /// Compiles `source`; the error says what is wrong, as Go's parser would.
    pub fn parse(source: &str) -> Result<Self, String> {
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
            let tokens = lex(body)?;
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
    pub fn execute(&self, data: &Data<'_>) -> Result<String, String> {
        let mut out = String::new();
        for node in &self.nodes {
            match node {
                Node::Text(text) => out.push_str(text),
                Node::Action(pipeline) => pipeline.eval(data)?.write(&mut out),
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

#[derive(Debug, Clone, PartialEq)]
enum Token {
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
    fn describe(&self) -> String {
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

fn lex(body: &str) -> Result<Vec<Token>, String> {
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

fn parse_int_literal(text: &str) -> Result<i64, String> {
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

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn pipeline(&mut self) -> Result<Pipeline, String> {
        let mut commands = vec![self.command()?];
        while self.peek() == Some(&Token::Pipe) {
            self.at += 1;
            let command = self.command()?;
            if matches!(command, Command::Operand(Operand::Str(_) | Operand::Int(_))) {
                return Err("non executable command in pipeline stage 2".to_owned());
            }
            commands.push(command);
        }
        Ok(Pipeline(commands))
    }

    fn command(&mut self) -> Result<Command, String> {
        let Some(first) = self.peek().cloned() else {
            return Err("missing value for command".to_owned());
        };
        match first {
            Token::Ident(name) => {
                self.at += 1;
                match name.as_str() {
                    "true" => return Ok(Command::Operand(Operand::Bool(true))),
                    "false" => return Ok(Command::Operand(Operand::Bool(false))),
                    "if" | "range" | "with" | "else" | "end" | "define" | "template" | "block"
                    | "break" | "continue" => {
                        return Err(format!(
                            "{{{{{name}}}}} is not supported (clusterdns templates have no \
                             control structures)"
                        ));
                    }
                    _ => {}
                }
                let Some(func) = Func::named(&name) else {
                    return Err(format!("function {name:?} not defined"));
                };
                let args = self.operands()?;
                Ok(Command::Call(func, args))
            }
            Token::Field(path) if path.first().is_some_and(|f| f == "Meta") => {
                self.at += 1;
                if path.len() > 1 {
                    return Err("can't evaluate field of .Meta".to_owned());
                }
                Ok(Command::Meta(self.operands()?))
            }
            _ => {
                let operand = self.operand()?;
                if self.at < self.tokens.len() && !matches!(self.peek(), Some(Token::Pipe)) {
                    if matches!(self.peek(), Some(Token::Close)) {
                        return Ok(Command::Operand(operand));
                    }
                    let what = self.peek().map(Token::describe).unwrap_or_default();
                    return Err(format!(
                        "can't give argument to non-function {}",
                        what_operand(&operand, &what)
                    ));
                }
                Ok(Command::Operand(operand))
            }
        }
    }

    /// The operands up to the end of the command.
    fn operands(&mut self) -> Result<Vec<Operand>, String> {
        let mut args = Vec::new();
        while let Some(token) = self.peek() {
            if matches!(token, Token::Pipe | Token::Close) {
                break;
            }
            args.push(self.operand()?);
        }
        Ok(args)
    }

    fn operand(&mut self) -> Result<Operand, String> {
        let Some(token) = self.peek().cloned() else {
            return Err("missing operand".to_owned());
        };
        self.at += 1;
        match token {
            Token::Field(path) => {
                check_fields(&path)?;
                Ok(Operand::Field(path))
            }
            Token::Str(text) => Ok(Operand::Str(text)),
            Token::Int(n) => Ok(Operand::Int(n)),
            Token::Ident(name) if name == "true" || name == "false" => {
                Ok(Operand::Bool(name == "true"))
            }
            Token::Ident(name) => match Func::named(&name) {
                Some(func) => Ok(Operand::Sub(
                    Box::new(Pipeline(vec![Command::Call(func, Vec::new())])),
                    Vec::new(),
                )),
                None => Err(format!("function {name:?} not defined")),
            },
            Token::Open => {
                let inner = self.pipeline()?;
                if self.peek() != Some(&Token::Close) {
                    return Err("unclosed left paren".to_owned());
                }
                self.at += 1;
                let fields = match self.peek() {
                    Some(Token::Field(path)) if !path.is_empty() => {
                        let path = path.clone();
                        self.at += 1;
                        path
                    }
                    _ => Vec::new(),
                };
                Ok(Operand::Sub(Box::new(inner), fields))
            }
            Token::Var(name) => Err(format!(
                "variable {name} is not supported (clusterdns templates have no variables)"
            )),
            other => Err(format!("unexpected {} in operand", other.describe())),
        }
    }
}

fn what_operand(operand: &Operand, next: &str) -> String {
    match operand {
        Operand::Field(path) => format!(".{} (followed by {next})", path.join(".")),
        _ => format!("value (followed by {next})"),
    }
}

/// Refuses a field the data does not have.
fn check_fields(path: &[String]) -> Result<(), String> {
    let Some(first) = path.first() else {
        return Ok(());
    };
    if first == "Message" {
        return Err(
            "can't evaluate field Message: clusterdns templates do not offer the whole message \
             (use .Name, .Type, .Class or .Question)"
                .to_owned(),
        );
    }
    if !FIELDS.contains(&first.as_str()) {
        return Err(format!(
            "can't evaluate field {first} in type *template.templateData"
        ));
    }
    match (first.as_str(), path.get(1)) {
        (_, None) | ("Group", Some(_)) if path.len() <= 2 => Ok(()),
        ("Question", Some(field)) if path.len() == 2 => {
            if QUESTION_FIELDS.contains(&field.as_str()) {
                Ok(())
            } else {
                Err(format!(
                    "can't evaluate field {field} in type *dns.Question"
                ))
            }
        }
        _ => Err(format!(
            "can't evaluate field {} in type string",
            path.last().map(String::as_str).unwrap_or_default()
        )),
    }
}

impl Pipeline {
    fn eval<'d>(&self, data: &Data<'d>) -> Result<Value<'d>, String> {
        let mut previous: Option<Value<'d>> = None;
        for command in &self.0 {
            previous = Some(command.eval(data, previous)?);
        }
        previous.ok_or_else(|| "empty pipeline".to_owned())
    }
}

impl Command {
    fn eval<'d>(&self, data: &Data<'d>, piped: Option<Value<'d>>) -> Result<Value<'d>, String> {
        match self {
            Self::Operand(operand) => {
                if piped.is_some() {
                    return Err("can't give argument to non-function".to_owned());
                }
                operand.eval(data)
            }
            Self::Meta(args) => {
                let mut values = Vec::new();
                for arg in args {
                    values.push(arg.eval(data)?);
                }
                values.extend(piped);
                if values.len() != 1 {
                    return Err(format!(
                        "wrong number of args for Meta: want 1 got {}",
                        values.len()
                    ));
                }
                Ok(Value::Str(String::new()))
            }
            Self::Call(func, args) => {
                let mut values = Vec::new();
                for arg in args {
                    values.push(arg.eval(data)?);
                }
                values.extend(piped);
                call(*func, values)
                    .map_err(|error| format!("error calling {}: {error}", func.name()))
            }
        }
    }
}

impl Operand {
    fn eval<'d>(&self, data: &Data<'d>) -> Result<Value<'d>, String> {
        match self {
            Self::Field(path) => field(data, path),
            Self::Str(text) => Ok(Value::Str(text.clone())),
            Self::Int(n) => Ok(Value::Int(*n)),
            Self::Bool(b) => Ok(Value::Bool(*b)),
            Self::Sub(pipeline, fields) => {
                let value = pipeline.eval(data)?;
                match (fields.as_slice(), &value) {
                    ([], _) => Ok(value),
                    ([key], Value::Map(entries)) => Ok(lookup(entries, key)),
                    _ => Err(format!("can't evaluate field {}", fields.join("."))),
                }
            }
        }
    }
}

fn lookup<'d>(entries: &'d [(String, String)], key: &str) -> Value<'d> {
    entries
        .iter()
        .rev()
        .find(|(name, _)| name == key)
        .map_or(Value::Missing, |(_, value)| Value::Str(value.clone()))
}

fn field<'d>(data: &Data<'d>, path: &[String]) -> Result<Value<'d>, String> {
    let Some(first) = path.first() else {
        return Err("can't print the whole template data (use one of its fields)".to_owned());
    };
    let text = |s: &str| Value::Str(s.to_owned());
    Ok(match (first.as_str(), path.get(1).map(String::as_str)) {
        ("Zone", None) => text(data.zone),
        ("Name", None) => text(data.name),
        ("Regex", None) => text(data.regex),
        ("Class", None) => text(data.class),
        ("Type", None) => text(data.qtype),
        ("Remote", None) => text(data.remote),
        ("Match", None) => Value::List(data.matches),
        ("Group", None) => Value::Map(data.groups),
        ("Group", Some(key)) => lookup(data.groups, key),
        ("Question", Some("Name")) => text(data.name),
        ("Question", Some("Qtype")) => Value::Uint(u64::from(data.question.0)),
        ("Question", Some("Qclass")) => Value::Uint(u64::from(data.question.1)),
        ("Question", None) => Value::Str(format!(
            "{{{} {} {}}}",
            data.name, data.question.0, data.question.1
        )),
        _ => return Err(format!("can't evaluate field {}", path.join("."))),
    })
}

fn int_arg(value: &Value<'_>) -> Result<i64, String> {
    match value {
        Value::Int(n) => Ok(*n),
        Value::Uint(n) => i64::try_from(*n).map_err(|_| format!("{n} overflows int")),
        other => Err(format!("expected an integer; found {}", other.text())),
    }
}

fn call<'d>(func: Func, args: Vec<Value<'d>>) -> Result<Value<'d>, String> {
    match func {
        Func::Index => {
            let mut args = args.into_iter();
            let Some(mut item) = args.next() else {
                return Err("wrong number of args for index: want at least 1 got 0".to_owned());
            };
            for key in args {
                item = match (&item, &key) {
                    (Value::List(items), _) => {
                        let index = int_arg(&key)?;
                        let slot = usize::try_from(index)
                            .ok()
                            .and_then(|index| items.get(index));
                        match slot {
                            Some(found) => Value::Str(found.clone()),
                            None => return Err(format!("index out of range: {index}")),
                        }
                    }
                    (Value::Map(entries), Value::Str(name)) => match lookup(entries, name) {
                        Value::Missing => Value::Str(String::new()),
                        found => found,
                    },
                    (Value::Map(_), _) => {
                        return Err("value has type int; should be string".to_owned());
                    }
                    (Value::Missing, _) => {
                        return Err("index of untyped nil".to_owned());
                    }
                    (other, _) => {
                        return Err(format!("can't index item of type {}", type_name(other)));
                    }
                };
            }
            Ok(item)
        }
        Func::ParseInt => {
            let [text, base, bits] = args.as_slice() else {
                return Err(format!(
                    "wrong number of args for parseInt: want 3 got {}",
                    args.len()
                ));
            };
            let Value::Str(text) = text else {
                return Err(format!(
                    "wrong type for value; expected string; got {}",
                    type_name(text)
                ));
            };
            let base = int_arg(base)?;
            let bits = int_arg(bits)?;
            parse_uint(text, base, bits).map(Value::Uint)
        }
        Func::Print => Ok(Value::Str(sprint(&args))),
        Func::Println => {
            let mut out = String::new();
            for (i, arg) in args.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                arg.write(&mut out);
            }
            out.push('\n');
            Ok(Value::Str(out))
        }
        Func::Printf => {
            let mut args = args.into_iter();
            let Some(Value::Str(format)) = args.next() else {
                return Err("printf needs a format string".to_owned());
            };
            Ok(Value::Str(sprintf(&format, &args.collect::<Vec<_>>())))
        }
        Func::Len => match args.as_slice() {
            [Value::Str(text)] => Ok(Value::Int(text.len() as i64)),
            [Value::List(items)] => Ok(Value::Int(items.len() as i64)),
            [Value::Map(entries)] => Ok(Value::Int(entries.len() as i64)),
            [other] => Err(format!("len of type {}", type_name(other))),
            _ => Err(format!(
                "wrong number of args for len: want 1 got {}",
                args.len()
            )),
        },
    }
}

fn type_name(value: &Value<'_>) -> &'static str {
    match value {
        Value::Str(_) => "string",
        Value::Int(_) => "int",
        Value::Uint(_) => "uint64",
        Value::Bool(_) => "bool",
        Value::List(_) => "[]string",
        Value::Map(_) => "map[string]string",
        Value::Missing => "<nil>",
    }
}

/// `strconv.ParseUint(text, base, bits)`.
fn parse_uint(text: &str, base: i64, bits: i64) -> Result<u64, String> {
    let syntax = || format!("strconv.ParseUint: parsing {text:?}: invalid syntax");
    let range = || format!("strconv.ParseUint: parsing {text:?}: value out of range");
    let (base, digits) = match base {
        0 => {
            let lower = text.to_ascii_lowercase();
            if let Some(rest) = lower.strip_prefix("0x") {
                (16, rest.to_owned())
            } else if let Some(rest) = lower.strip_prefix("0o") {
                (8, rest.to_owned())
            } else if let Some(rest) = lower.strip_prefix("0b") {
                (2, rest.to_owned())
            } else if lower.len() > 1 && lower.starts_with('0') {
                (8, lower[1..].to_owned())
            } else {
                (10, lower)
            }
        }
        2..=36 => (base as u32, text.to_owned()),
        _ => {
            return Err(format!(
                "strconv.ParseUint: parsing {text:?}: invalid base {base}"
            ));
        }
    };
    let bits = match bits {
        0 => 64,
        1..=64 => bits as u32,
        _ => {
            return Err(format!(
                "strconv.ParseUint: parsing {text:?}: invalid bit size {bits}"
            ));
        }
    };
    if digits.is_empty() || digits.starts_with('+') || digits.starts_with('-') {
        return Err(syntax());
    }
    let value = u64::from_str_radix(&digits, base).map_err(|error| {
        if matches!(error.kind(), std::num::IntErrorKind::PosOverflow) {
            range()
        } else {
            syntax()
        }
    })?;
    if bits < 64 && value >> bits != 0 {
        return Err(range());
    }
    Ok(value)
}

/// `fmt.Sprint`: a space between two operands when neither is a string.
fn sprint(args: &[Value<'_>]) -> String {
    let mut out = String::new();
    for (i, arg) in args.iter().enumerate() {
        if i > 0 && !arg.is_string() && !args[i - 1].is_string() {
            out.push(' ');
        }
        arg.write(&mut out);
    }
    out
}

/// `fmt.Sprintf` for the verbs templates use: `%s`, `%v`, `%d`, `%x`, `%X`, `%q`, `%%`.
fn sprintf(format: &str, args: &[Value<'_>]) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.next() else {
            let _ = write!(out, "%!{verb}(MISSING)");
            continue;
        };
        match verb {
            'x' | 'X' => match arg {
                Value::Int(n) => {
                    let _ = if verb == 'x' {
                        write!(out, "{n:x}")
                    } else {
                        write!(out, "{n:X}")
                    };
                }
                Value::Uint(n) => {
                    let _ = if verb == 'x' {
                        write!(out, "{n:x}")
                    } else {
                        write!(out, "{n:X}")
                    };
                }
                other => {
                    for byte in other.text().bytes() {
                        let _ = if verb == 'x' {
                            write!(out, "{byte:02x}")
                        } else {
                            write!(out, "{byte:02X}")
                        };
                    }
                }
            },
            'q' => {
                let _ = write!(out, "{:?}", arg.text());
            }
            _ => arg.write(&mut out),
        }
    }
    for extra in args {
        let _ = write!(out, "%!(EXTRA {}={})", type_name(extra), extra.text());
    }
    out
}

#[cfg(test)]
mod tests;
