//! `log [NAMES...] [FORMAT] { class CLASSES...; minDuration [DURATION] }`
//!
//! As CoreDNS's *log*: NAMES default to `.`; FORMAT is the last argument when it holds a `{`
//! (`{common}` and `{combined}` stand for CoreDNS's two formats and are expanded here; any
//! other text is kept as written, placeholders and all). Unlike CoreDNS, a lone argument with
//! a `{` is a FORMAT too (CoreDNS would take `log {combined}` as a name that never matches),
//! and a `{` in any other argument is refused. `class` takes `success`, `denial`, `error` and
//! `all` (the default), and several `class` lines add up; `minDuration` (100 ms when given
//! without a duration) also logs answers slower than that, whatever their class. A server
//! block may have several `log` lines.

use std::time::Duration;

use hickory_proto::rr::Name;

use super::{Context, arguments, bad_value, duration, no_block, unknown_property, zones};
use crate::config::error::Error;
use crate::config::syntax::Line;

/// One *log* directive: `log [NAMES...] [FORMAT] { class CLASSES...; minDuration D }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// Names (and below) whose queries are logged (default `.`).
    pub names: Vec<Name>,
    /// The format, placeholders and all (`{common}` and `{combined}` already expanded).
    pub format: String,
    /// Which answers are logged.
    pub classes: LogClasses,
    /// `minDuration`: also log answers slower than this, whatever their class (100 ms when
    /// given without a value; `None` when absent or 0).
    pub min_duration: Option<Duration>,
}

/// *log*'s `class` set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogClasses {
    /// NOERROR with records.
    pub success: bool,
    /// NXDOMAIN and NODATA.
    pub denial: bool,
    /// SERVFAIL, REFUSED, NOTIMP, FORMERR...
    pub error: bool,
}

impl LogClasses {
    /// Every class (`class all`, the default).
    pub const ALL: Self = Self {
        success: true,
        denial: true,
        error: true,
    };
}

const DIRECTIVE: &str = "log";

/// CoreDNS's Common Log Format.
pub(crate) const COMMON_FORMAT: &str = "{remote}:{port} - {>id} \"{type} {class} {name} {proto} {size} {>do} {>bufsize}\" {rcode} {>rflags} {rsize} {duration}";

/// CoreDNS's Combined Log Format: the common one and the opcode.
pub(crate) const COMBINED_FORMAT: &str = "{remote}:{port} - {>id} \"{type} {class} {name} {proto} {size} {>do} {>bufsize}\" {rcode} {>rflags} {rsize} {duration} \"{>opcode}\"";

/// `minDuration` without a value.
const DEFAULT_MIN_DURATION: Duration = Duration::from_millis(100);

/// Parses one `log` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<LogConfig, Error> {
    let mut names = line.args.as_slice();
    let mut format = COMMON_FORMAT.to_owned();
    if let Some((last, rest)) = names.split_last()
        && last.text.contains('{')
    {
        format = match last.text.as_str() {
            "{common}" => COMMON_FORMAT.to_owned(),
            "{combined}" => COMBINED_FORMAT.to_owned(),
            other => other.to_owned(),
        };
        names = rest;
    }
    if let Some(arg) = names.iter().find(|arg| arg.text.contains('{')) {
        return Err(bad_value(
            DIRECTIVE,
            line,
            arg,
            &format!(
                "'{}' looks like a FORMAT, which must be the last argument",
                arg.text
            ),
        ));
    }
    let names = zones(DIRECTIVE, line, names, &[Name::root()])?;
    let mut classes: Option<LogClasses> = None;
    let mut min_duration = None;
    for option in line.options() {
        no_block(DIRECTIVE, option)?;
        match option.name() {
            "class" => {
                let set = classes.get_or_insert(LogClasses {
                    success: false,
                    denial: false,
                    error: false,
                });
                for arg in arguments(DIRECTIVE, option, 1, None)? {
                    match arg.text.as_str() {
                        "all" => *set = LogClasses::ALL,
                        "success" => set.success = true,
                        "denial" => set.denial = true,
                        "error" => set.error = true,
                        other => {
                            return Err(bad_value(
                                DIRECTIVE,
                                option,
                                arg,
                                &format!(
                                    "invalid class '{other}' (expected success, denial, error \
                                     or all)"
                                ),
                            ));
                        }
                    }
                }
            }
            "minDuration" => {
                let value = match arguments(DIRECTIVE, option, 0, Some(1))?.first() {
                    Some(arg) => duration(DIRECTIVE, option, arg)?,
                    None => DEFAULT_MIN_DURATION,
                };
                min_duration = (!value.is_zero()).then_some(value);
            }
            _ => return Err(unknown_property(DIRECTIVE, option)),
        }
    }
    Ok(LogConfig {
        names,
        format,
        classes: classes.unwrap_or(LogClasses::ALL),
        min_duration,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::ServerBlock;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn names(server: &ServerBlock, index: usize) -> Vec<String> {
        server.plugins.log[index]
            .names
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    const NONE: LogClasses = LogClasses {
        success: false,
        denial: false,
        error: false,
    };

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("default", " log", |s| {
                s.plugins.log
                    == [LogConfig {
                        names: vec![Name::root()],
                        format: COMMON_FORMAT.into(),
                        classes: LogClasses::ALL,
                        min_duration: None,
                    }]
            }),
            ("one name", " log example.org", |s| {
                names(s, 0) == ["example.org."]
            }),
            ("names", " log a.org B.org.", |s| {
                names(s, 0) == ["a.org.", "b.org."]
            }),
            ("cidr", " log 10.0.0.0/8", |s| {
                names(s, 0) == ["10.in-addr.arpa."]
            }),
            (
                "custom format",
                " log . \"{proto} Request: {name} {type} {>id}\"",
                |s| {
                    names(s, 0) == ["."]
                        && s.plugins.log[0].format == "{proto} Request: {name} {type} {>id}"
                },
            ),
            ("common", " log . {common}", |s| {
                s.plugins.log[0].format == COMMON_FORMAT
            }),
            ("combined", " log . {combined}", |s| {
                s.plugins.log[0].format == format!("{COMMON_FORMAT} \"{{>opcode}}\"")
            }),
            ("format alone", " log {combined}", |s| {
                names(s, 0) == ["."] && s.plugins.log[0].format == COMBINED_FORMAT
            }),
            ("class", " log example.org {\n  class denial\n }", |s| {
                s.plugins.log[0].classes
                    == LogClasses {
                        denial: true,
                        ..NONE
                    }
            }),
            (
                "classes",
                " log . {combined} {\n  class denial error\n }",
                |s| {
                    s.plugins.log[0].classes
                        == LogClasses {
                            denial: true,
                            error: true,
                            ..NONE
                        }
                },
            ),
            (
                "class lines add up",
                " log . {\n  class denial\n  class success\n }",
                |s| {
                    s.plugins.log[0].classes
                        == LogClasses {
                            denial: true,
                            success: true,
                            ..NONE
                        }
                },
            ),
            ("class all", " log {\n  class error all\n }", |s| {
                s.plugins.log[0].classes == LogClasses::ALL
            }),
            ("minDuration", " log {\n  minDuration 1s\n }", |s| {
                s.plugins.log[0].min_duration == Some(Duration::from_secs(1))
            }),
            ("minDuration default", " log {\n  minDuration\n }", |s| {
                s.plugins.log[0].min_duration == Some(Duration::from_millis(100))
            }),
            ("minDuration zero", " log {\n  minDuration 0s\n }", |s| {
                s.plugins.log[0].min_duration.is_none()
            }),
            (
                "several",
                " log a.org\n log b.org {\n  class error\n }",
                |s| {
                    s.plugins.log.len() == 2
                        && names(s, 1) == ["b.org."]
                        && s.plugins.log[0].classes == LogClasses::ALL
                        && s.plugins.log[1].classes
                            == LogClasses {
                                error: true,
                                ..NONE
                            }
                },
            ),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "format not last",
                input: " log {common} example.org",
                line: 2,
                kind: "Invalid",
                message: "log: '{common}' looks like a FORMAT, which must be the last argument",
            },
            Invalid {
                name: "bad name",
                input: " log a..b",
                line: 2,
                kind: "Invalid",
                message: "log: zone 'a..b' has an empty label",
            },
            Invalid {
                name: "class nothing",
                input: " log {\n  class\n }",
                line: 3,
                kind: "Invalid",
                message: "class: expected at least 1 argument",
            },
            Invalid {
                name: "class bad",
                input: " log {\n  class failure\n }",
                line: 3,
                kind: "Invalid",
                message: "class: invalid class 'failure'",
            },
            Invalid {
                name: "class case",
                input: " log {\n  class Denial\n }",
                line: 3,
                kind: "Invalid",
                message: "'Denial'",
            },
            Invalid {
                name: "minDuration two",
                input: " log {\n  minDuration 1s 2s\n }",
                line: 3,
                kind: "Invalid",
                message: "minDuration: expected at most 1 argument, got 2",
            },
            Invalid {
                name: "minDuration bad",
                input: " log {\n  minDuration fast\n }",
                line: 3,
                kind: "Invalid",
                message: "minDuration: invalid duration 'fast'",
            },
            Invalid {
                name: "unknown",
                input: " log {\n  format x\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'format' in log",
            },
        ];
        check_invalid(cases);
    }
}
