//! Execution: a pipeline's value over the query's data, and Go's `fmt` printing of it.

use super::ast::{Command, Func, Operand, Pipeline};

use std::fmt::Write as _;

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
pub(super) enum Value<'d> {
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
    pub(super) fn is_string(&self) -> bool {
        matches!(self, Self::Str(_))
    }

    /// As Go's `fmt.Sprint` writes it.
    pub(super) fn write(&self, out: &mut String) {
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

    pub(super) fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

impl Pipeline {
    pub(super) fn eval<'d>(&self, data: &Data<'d>) -> Result<Value<'d>, String> {
        let mut previous: Option<Value<'d>> = None;
        for command in &self.0 {
            previous = Some(command.eval(data, previous)?);
        }
        previous.ok_or_else(|| "empty pipeline".to_owned())
    }
}

impl Command {
    pub(super) fn eval<'d>(
        &self,
        data: &Data<'d>,
        piped: Option<Value<'d>>,
    ) -> Result<Value<'d>, String> {
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
    pub(super) fn eval<'d>(&self, data: &Data<'d>) -> Result<Value<'d>, String> {
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

pub(super) fn lookup<'d>(entries: &'d [(String, String)], key: &str) -> Value<'d> {
    entries
        .iter()
        .rev()
        .find(|(name, _)| name == key)
        .map_or(Value::Missing, |(_, value)| Value::Str(value.clone()))
}

pub(super) fn field<'d>(data: &Data<'d>, path: &[String]) -> Result<Value<'d>, String> {
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

pub(super) fn int_arg(value: &Value<'_>) -> Result<i64, String> {
    match value {
        Value::Int(n) => Ok(*n),
        Value::Uint(n) => i64::try_from(*n).map_err(|_| format!("{n} overflows int")),
        other => Err(format!("expected an integer; found {}", other.text())),
    }
}

pub(super) fn call<'d>(func: Func, args: Vec<Value<'d>>) -> Result<Value<'d>, String> {
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

pub(super) fn type_name(value: &Value<'_>) -> &'static str {
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
pub(super) fn parse_uint(text: &str, base: i64, bits: i64) -> Result<u64, String> {
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
pub(super) fn sprint(args: &[Value<'_>]) -> String {
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
pub(super) fn sprintf(format: &str, args: &[Value<'_>]) -> String {
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
