//! `errors [stdout] { stacktrace; consolidate DURATION REGEXP [LEVEL] [show_first] }`
//!
//! As CoreDNS's *errors*: the only argument allowed is `stdout`; `stacktrace` (or its older
//! name `panicRecoveryStacktrace`) logs a stack trace when a panic is recovered;
//! `consolidate` gathers the errors matching REGEXP (at most 10,000 characters; the `regex`
//! crate's syntax, which is RE2's as Go's is, without Go's few extensions) for DURATION and
//! logs one summary line at LEVEL (`warning`, `error` (the default), `info` or `debug`);
//! `show_first` logs the first error of each period as it comes. Rules are tried in file
//! order. Once per server block.

use std::time::Duration;

use super::{Context, arguments, bad_value, duration, invalid, no_block, unknown_property};
use crate::config::error::Error;
use crate::config::syntax::Line;

/// The *errors* directive: `errors { consolidate DURATION REGEXP [LEVEL] [show_first]; stacktrace }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorsConfig {
    /// `consolidate` rules, in file order (the first matching rule takes a message).
    pub consolidate: Vec<Consolidate>,
    /// `stacktrace` / `panicRecoveryStacktrace`.
    pub stacktrace: bool,
}

/// One `consolidate` rule.
#[derive(Debug, Clone)]
pub struct Consolidate {
    /// How long matching messages are gathered.
    pub period: Duration,
    /// Which messages.
    pub pattern: regex::Regex,
    /// The level of the summary line (default error).
    pub level: LogLevel,
    /// `show_first`: print the first message of a period as it comes.
    pub show_first: bool,
}

impl PartialEq for Consolidate {
    fn eq(&self, other: &Self) -> bool {
        self.period == other.period
            && self.pattern.as_str() == other.pattern.as_str()
            && self.level == other.level
            && self.show_first == other.show_first
    }
}

/// A log level, as `errors` and `log` name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogLevel {
    /// debug.
    Debug,
    /// info.
    Info,
    /// warning.
    Warning,
    /// error.
    #[default]
    Error,
}

const DIRECTIVE: &str = "errors";

/// CoreDNS's limit on a `consolidate` REGEXP.
const MAX_PATTERN_CHARS: usize = 10_000;

/// Parses the `errors` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<ErrorsConfig, Error> {
    if let Some(arg) = arguments(DIRECTIVE, line, 0, Some(1))?.first()
        && arg.text != "stdout"
    {
        return Err(bad_value(
            DIRECTIVE,
            line,
            arg,
            &format!("invalid log file: '{}' (errors go to stdout)", arg.text),
        ));
    }
    let mut config = ErrorsConfig {
        consolidate: Vec::new(),
        stacktrace: false,
    };
    for option in line.options() {
        no_block(DIRECTIVE, option)?;
        match option.name() {
            "stacktrace" | "panicRecoveryStacktrace" => {
                arguments(DIRECTIVE, option, 0, Some(0))?;
                config.stacktrace = true;
            }
            "consolidate" => config.consolidate.push(consolidate(option)?),
            _ => return Err(unknown_property(DIRECTIVE, option)),
        }
    }
    Ok(config)
}

/// `consolidate DURATION REGEXP [LEVEL] [show_first]`.
fn consolidate(option: &Line) -> Result<Consolidate, Error> {
    let args = arguments(DIRECTIVE, option, 2, Some(4))?;
    let [period, pattern, rest @ ..] = args else {
        return Err(invalid(
            &option.name,
            DIRECTIVE,
            "consolidate: expected DURATION REGEXP",
        ));
    };
    let period = duration(DIRECTIVE, option, period)?;
    if pattern.text.chars().count() > MAX_PATTERN_CHARS {
        return Err(bad_value(
            DIRECTIVE,
            option,
            pattern,
            &format!("REGEXP is longer than {MAX_PATTERN_CHARS} characters"),
        ));
    }
    let regex = regex::Regex::new(&pattern.text).map_err(|e| {
        bad_value(
            DIRECTIVE,
            option,
            pattern,
            &format!("invalid REGEXP '{}': {}", pattern.text, regex_message(&e)),
        )
    })?;
    let mut level = LogLevel::Error;
    let mut show_first = false;
    for (index, arg) in rest.iter().enumerate() {
        match arg.text.as_str() {
            "show_first" if index + 1 == rest.len() => show_first = true,
            text if index == 0 => {
                level = match text {
                    "warning" => LogLevel::Warning,
                    "error" => LogLevel::Error,
                    "info" => LogLevel::Info,
                    "debug" => LogLevel::Debug,
                    _ => {
                        return Err(bad_value(
                            DIRECTIVE,
                            option,
                            arg,
                            &format!(
                                "unknown log level argument in consolidate: '{text}' (expected \
                                 warning, error, info or debug, then optionally show_first)"
                            ),
                        ));
                    }
                };
            }
            text => {
                return Err(bad_value(
                    DIRECTIVE,
                    option,
                    arg,
                    &format!("expected show_first after the level, not '{text}'"),
                ));
            }
        }
    }
    Ok(Consolidate {
        period,
        pattern: regex,
        level,
        show_first,
    })
}

/// The gist of a `regex` error on one line (its syntax errors draw the pattern over several).
fn regex_message(error: &regex::Error) -> String {
    let text = error.to_string();
    let last = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("invalid regular expression");
    last.strip_prefix("error: ").unwrap_or(last).to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::ServerBlock;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn errors(server: &ServerBlock) -> &ErrorsConfig {
        server.plugins.errors.as_ref().unwrap()
    }

    /// The rules as (period, pattern, level, show_first).
    fn rules(server: &ServerBlock) -> Vec<(Duration, String, LogLevel, bool)> {
        errors(server)
            .consolidate
            .iter()
            .map(|c| {
                (
                    c.period,
                    c.pattern.as_str().to_owned(),
                    c.level,
                    c.show_first,
                )
            })
            .collect()
    }

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("default", " errors", |s| {
                *errors(s)
                    == ErrorsConfig {
                        consolidate: vec![],
                        stacktrace: false,
                    }
            }),
            ("stdout", " errors stdout", |s| {
                errors(s).consolidate.is_empty()
            }),
            ("stacktrace", " errors {\n  stacktrace\n }", |s| {
                errors(s).stacktrace
            }),
            (
                "old stacktrace",
                " errors {\n  panicRecoveryStacktrace\n }",
                |s| errors(s).stacktrace,
            ),
            (
                "consolidate",
                " errors {\n  consolidate 1m ^exact$\n }",
                |s| {
                    rules(s)
                        == [(
                            Duration::from_secs(60),
                            "^exact$".into(),
                            LogLevel::Error,
                            false,
                        )]
                },
            ),
            (
                "quoted",
                " errors {\n  consolidate 5m \".* i/o timeout$\" warning\n }",
                |s| {
                    rules(s)
                        == [(
                            Duration::from_secs(300),
                            ".* i/o timeout$".into(),
                            LogLevel::Warning,
                            false,
                        )]
                },
            ),
            (
                "levels",
                " errors {\n  consolidate 1s a info\n  consolidate 1s b debug\n  consolidate 1s c error\n }",
                |s| {
                    rules(s).iter().map(|r| r.2).collect::<Vec<_>>()
                        == [LogLevel::Info, LogLevel::Debug, LogLevel::Error]
                },
            ),
            (
                "show_first",
                " errors {\n  consolidate 1m .* show_first\n }",
                |s| rules(s) == [(Duration::from_secs(60), ".*".into(), LogLevel::Error, true)],
            ),
            (
                "level and show_first",
                " errors {\n  consolidate 30s ^read warning show_first\n }",
                |s| {
                    rules(s)
                        == [(
                            Duration::from_secs(30),
                            "^read".into(),
                            LogLevel::Warning,
                            true,
                        )]
                },
            ),
            (
                "in order",
                " errors {\n  consolidate 1m error1\n  consolidate 5s error2\n }",
                |s| {
                    rules(s).iter().map(|r| r.1.clone()).collect::<Vec<_>>() == ["error1", "error2"]
                },
            ),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let long = format!(" errors {{\n  consolidate 1m {}\n }}", "a".repeat(10_001));
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "twice",
                input: " errors\n errors",
                line: 3,
                kind: "Invalid",
                message: "plugin/errors: this plugin can only be used once per Server Block (first at line 2)",
            },
            Invalid {
                name: "file",
                input: " errors errors.txt",
                line: 2,
                kind: "Invalid",
                message: "errors: invalid log file: 'errors.txt'",
            },
            Invalid {
                name: "two arguments",
                input: " errors a b",
                line: 2,
                kind: "Invalid",
                message: "expected at most 1 argument, got 2",
            },
            Invalid {
                name: "unknown",
                input: " errors {\n  log visible\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'log' in errors",
            },
            Invalid {
                name: "consolidate nothing",
                input: " errors {\n  consolidate\n }",
                line: 3,
                kind: "Invalid",
                message: "consolidate: expected 2 to 4 arguments, got 0",
            },
            Invalid {
                name: "consolidate one",
                input: " errors {\n  consolidate 1m\n }",
                line: 3,
                kind: "Invalid",
                message: "expected 2 to 4 arguments, got 1",
            },
            Invalid {
                name: "consolidate five",
                input: " errors {\n  consolidate 1m .* error show_first x\n }",
                line: 3,
                kind: "Invalid",
                message: "got 5",
            },
            Invalid {
                name: "bad level",
                input: " errors {\n  consolidate 1m .* extra\n }",
                line: 3,
                kind: "Invalid",
                message: "unknown log level argument in consolidate: 'extra'",
            },
            Invalid {
                name: "warn",
                input: " errors {\n  consolidate 1m .* warn\n }",
                line: 3,
                kind: "Invalid",
                message: "'warn'",
            },
            Invalid {
                name: "show_first first",
                input: " errors {\n  consolidate 1m .* show_first error\n }",
                line: 3,
                kind: "Invalid",
                message: "unknown log level argument in consolidate: 'show_first'",
            },
            Invalid {
                name: "not show_first",
                input: " errors {\n  consolidate 1m .* error first\n }",
                line: 3,
                kind: "Invalid",
                message: "expected show_first after the level, not 'first'",
            },
            Invalid {
                name: "duration",
                input: " errors {\n  consolidate abc .*\n }",
                line: 3,
                kind: "Invalid",
                message: "consolidate: invalid duration 'abc'",
            },
            Invalid {
                name: "duration unit",
                input: " errors {\n  consolidate 1 .*\n }",
                line: 3,
                kind: "Invalid",
                message: "missing unit",
            },
            Invalid {
                name: "regex",
                input: " errors {\n  consolidate 1m ())\n }",
                line: 3,
                kind: "Invalid",
                message: "consolidate: invalid REGEXP '())': unopened group",
            },
            Invalid {
                name: "stacktrace argument",
                input: " errors {\n  stacktrace yes\n }",
                line: 3,
                kind: "Invalid",
                message: "stacktrace: expected exactly 0 arguments",
            },
        ];
        check_invalid(cases);
        check_invalid(&[Invalid {
            name: "long regex",
            input: &long,
            line: 3,
            kind: "Invalid",
            message: "REGEXP is longer than 10000 characters",
        }]);
    }
}
