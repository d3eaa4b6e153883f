//! The *log* and *errors* plugins: one line per query in CoreDNS's Common Log Format (or a
//! custom format), and query-processing errors, consolidated when asked.
//!
//! Both write to standard output as CoreDNS does (`[INFO] ...`, `[ERROR] plugin/errors: ...`),
//! so existing log pipelines and greps keep working; clusterdns's own logs go to stderr.

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::codes::class;
use crate::config::{Consolidate, ErrorsConfig, LogConfig, LogLevel};
use crate::name::{WireName, suffix_offset, write_dotted};
use crate::wire::{Request, rcode_name};

/// What a query log line is made of.
#[derive(Debug)]
pub struct Entry<'a> {
    /// The client.
    pub remote: SocketAddr,
    /// The address the query arrived on.
    pub local: SocketAddr,
    /// `udp` or `tcp`.
    pub proto: &'a str,
    /// The query.
    pub request: &'a Request<'a>,
    /// The reply as sent.
    pub reply: &'a [u8],
    /// Time from receipt to reply.
    pub duration: Duration,
}

/// One *log* directive.
#[derive(Debug)]
pub struct QueryLog {
    names: Vec<WireName>,
    format: Vec<Piece>,
    config: LogConfig,
}

/// A compiled format: text and placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Type,
    Name,
    Class,
    Proto,
    Remote,
    Local,
    Size,
    Port,
    Duration,
    Rcode,
    Rsize,
    Rflags,
    Bufsize,
    Do,
    Id,
    Opcode,
    /// `{/label}`: metadata, which clusterdns does not produce: `-`.
    Metadata,
}

impl QueryLog {
    /// A *log* directive ready to write.
    pub fn new(config: &LogConfig) -> Self {
        Self {
            names: config
                .names
                .iter()
                .filter_map(|name| WireName::from_dotted(&name.to_ascii()).ok())
                .map(|name| name.to_lowercase())
                .collect(),
            format: compile(&config.format),
            config: config.clone(),
        }
    }

    /// Writes the line for `entry` to stdout when its name and class are logged.
    pub fn log(&self, entry: &Entry<'_>) {
        if let Some(line) = self.line(entry) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "[INFO] {line}");
        }
    }

    /// The line for `entry`, or `None` when it is not to be logged.
    pub fn line(&self, entry: &Entry<'_>) -> Option<String> {
        let qname = entry.request.question.name();
        if !self
            .names
            .iter()
            .any(|name| suffix_offset(qname, name.as_bytes()).is_some())
        {
            return None;
        }
        let classes = self.config.classes;
        let wanted = match class_of(entry.reply) {
            Class::Success => classes.success,
            Class::Denial => classes.denial,
            Class::Error => classes.error,
        };
        let slow = self
            .config
            .min_duration
            .is_some_and(|min| entry.duration >= min);
        (wanted || slow).then(|| render(&self.format, entry))
    }
}

/// CoreDNS's response classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Success,
    Denial,
    Error,
}

fn class_of(reply: &[u8]) -> Class {
    let (Ok(rcode), Ok(counts)) = (
        crate::wire::reply::rcode(reply),
        crate::wire::reply::counts(reply),
    ) else {
        return Class::Error;
    };
    match rcode {
        crate::wire::rcode::NXDOMAIN => Class::Denial,
        crate::wire::rcode::NOERROR if counts[1] == 0 => Class::Denial,
        crate::wire::rcode::NOERROR => Class::Success,
        _ => Class::Error,
    }
}

fn compile(format: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = format;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let name = &rest[open + 1..open + close];
        let piece = match name {
            "type" => Some(Piece::Type),
            "name" => Some(Piece::Name),
            "class" => Some(Piece::Class),
            "proto" => Some(Piece::Proto),
            "remote" => Some(Piece::Remote),
            "local" => Some(Piece::Local),
            "size" => Some(Piece::Size),
            "port" => Some(Piece::Port),
            "duration" => Some(Piece::Duration),
            "rcode" => Some(Piece::Rcode),
            "rsize" => Some(Piece::Rsize),
            ">rflags" => Some(Piece::Rflags),
            ">bufsize" => Some(Piece::Bufsize),
            ">do" => Some(Piece::Do),
            ">id" => Some(Piece::Id),
            ">opcode" => Some(Piece::Opcode),
            label if label.starts_with('/') => Some(Piece::Metadata),
            _ => None,
        };
        text.push_str(&rest[..open]);
        match piece {
            Some(piece) => {
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(piece);
            }
            // Unknown placeholders are written as they are, as CoreDNS's replacer does.
            None => text.push_str(&rest[open..=open + close]),
        }
        rest = &rest[open + close + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    pieces
}

fn address(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

fn render(pieces: &[Piece], entry: &Entry<'_>) -> String {
    let request = entry.request;
    let mut out = String::with_capacity(128);
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Type => out.push_str(&type_name(request.question.qtype)),
            Piece::Name => {
                let _ = write_dotted(request.question.name(), &mut out);
            }
            Piece::Class => out.push_str(&class_name(request.question.qclass)),
            Piece::Proto => out.push_str(entry.proto),
            Piece::Remote => out.push_str(&address(entry.remote.ip())),
            Piece::Local => out.push_str(&address(entry.local.ip())),
            Piece::Size => {
                let _ = write!(out, "{}", request.bytes.len());
            }
            Piece::Port => {
                let _ = write!(out, "{}", entry.remote.port());
            }
            Piece::Duration => {
                let _ = write!(out, "{}s", entry.duration.as_secs_f64());
            }
            Piece::Rcode => {
                out.push_str(crate::wire::reply::rcode(entry.reply).map_or("-", rcode_name))
            }
            Piece::Rsize => {
                let _ = write!(out, "{}", entry.reply.len());
            }
            Piece::Rflags => out.push_str(&flags(entry.reply)),
            Piece::Bufsize => {
                let _ = write!(out, "{}", request.edns.map_or(512, |edns| edns.payload));
            }
            Piece::Do => out.push_str(if request.edns.is_some_and(|e| e.dnssec_ok) {
                "true"
            } else {
                "false"
            }),
            Piece::Id => {
                let _ = write!(out, "{}", request.id);
            }
            Piece::Opcode => out.push_str(match request.opcode {
                0 => "QUERY",
                1 => "IQUERY",
                2 => "STATUS",
                4 => "NOTIFY",
                5 => "UPDATE",
                _ => "-",
            }),
            Piece::Metadata => out.push('-'),
        }
    }
    out
}

/// The reply's flags as CoreDNS's `{>rflags}` lists them: `qr,aa,rd`.
fn flags(reply: &[u8]) -> String {
    let (Some(&high), Some(&low)) = (reply.get(2), reply.get(3)) else {
        return String::new();
    };
    let set = [
        (high & 0x80 != 0, "qr"),
        (high & 0x04 != 0, "aa"),
        (high & 0x02 != 0, "tc"),
        (high & 0x01 != 0, "rd"),
        (low & 0x80 != 0, "ra"),
        (low & 0x40 != 0, "z"),
        (low & 0x20 != 0, "ad"),
        (low & 0x10 != 0, "cd"),
    ];
    set.iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect::<Vec<_>>()
        .join(",")
}

/// A record type's mnemonic (`TYPE65534` for unknown ones, as dig writes them).
pub fn type_name(rtype: u16) -> String {
    hickory_proto::rr::RecordType::from(rtype).to_string()
}

fn class_name(class: u16) -> String {
    match class {
        class::IN => "IN".to_owned(),
        class::CH => "CH".to_owned(),
        class::HS => "HS".to_owned(),
        class::NONE => "NONE".to_owned(),
        class::ANY => "ANY".to_owned(),
        other => format!("CLASS{other}"),
    }
}

/// The *errors* plugin of a block.
#[derive(Debug)]
pub struct ErrorLog {
    rules: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    config: Consolidate,
    /// Messages gathered in the current period, and when it started.
    state: Mutex<Option<(Instant, u64)>>,
}

impl ErrorLog {
    /// The plugin with its `consolidate` rules.
    pub fn new(config: &ErrorsConfig) -> Self {
        Self {
            rules: config
                .consolidate
                .iter()
                .map(|config| Rule {
                    config: config.clone(),
                    state: Mutex::new(None),
                })
                .collect(),
        }
    }

    /// Reports a query that failed: `rcode qname qtype: error` (CoreDNS's format), or counts it
    /// under the first `consolidate` rule it matches.
    pub fn report(&self, request: &Request<'_>, rcode: u16, error: &str, now: Instant) {
        let mut name = String::new();
        let _ = write_dotted(request.question.name(), &mut name);
        let message = format!(
            "{rcode} {name} {}: {error}",
            type_name(request.question.qtype)
        );
        for line in self.lines(&message, error, now) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
        }
    }

    /// The lines to print for one error (and for consolidation periods it closes).
    fn lines(&self, message: &str, error: &str, now: Instant) -> Vec<String> {
        let mut out = self.flush(now);
        let Some(rule) = self
            .rules
            .iter()
            .find(|rule| rule.config.pattern.is_match(error))
        else {
            out.push(format!("[ERROR] plugin/errors: {message}"));
            return out;
        };
        let Ok(mut state) = rule.state.lock() else {
            return out;
        };
        match &mut *state {
            Some((_, count)) => *count += 1,
            None => {
                *state = Some((now, 1));
                if rule.config.show_first {
                    out.push(format!(
                        "{} plugin/errors: {message}",
                        level(rule.config.level)
                    ));
                }
            }
        }
        out
    }

    /// Closes the consolidation periods that have run out, with their summary lines. The
    /// server calls this once a second so that a quiet period still ends on time.
    pub fn flush(&self, now: Instant) -> Vec<String> {
        let mut out = Vec::new();
        for rule in &self.rules {
            let Ok(mut state) = rule.state.lock() else {
                continue;
            };
            if let Some((started, count)) = *state
                && now.duration_since(started) >= rule.config.period
            {
                out.push(format!(
                    "{} {count} errors like '{}' occurred in last {}",
                    level(rule.config.level),
                    rule.config.pattern.as_str(),
                    go_duration(rule.config.period)
                ));
                *state = None;
            }
        }
        out
    }

    /// Prints what [`flush`](Self::flush) returns.
    pub fn tick(&self, now: Instant) {
        for line in self.flush(now) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
        }
    }
}

fn level(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Debug => "[DEBUG]",
        LogLevel::Info => "[INFO]",
        LogLevel::Warning => "[WARNING]",
        LogLevel::Error => "[ERROR]",
    }
}

/// A duration as Go prints it (`30s`, `5m0s`, `1h0m0s`, `1.5s`).
fn go_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    let frac = duration.subsec_nanos();
    let seconds = if frac == 0 {
        format!("{}s", secs % 60)
    } else {
        let text = format!("{}.{:09}", secs % 60, frac);
        format!("{}s", text.trim_end_matches('0'))
    };
    match (secs / 3600, secs / 60 % 60) {
        (0, 0) => seconds,
        (0, minutes) => format!("{minutes}m{seconds}"),
        (hours, minutes) => format!("{hours}h{minutes}m{seconds}"),
    }
}

#[cfg(test)]
mod tests;
