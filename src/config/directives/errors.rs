//! `errors [stdout] { stacktrace; consolidate DURATION REGEXP [LEVEL] [show_first] }`
//!
//! As CoreDNS's *errors*: the only argument allowed is `stdout`; `stacktrace` (or its older
//! name `panicRecoveryStacktrace`) logs a stack trace when a panic is recovered;
//! `consolidate` gathers the errors matching REGEXP (at most 10,000 characters; the `regex`
//! crate's syntax, which is RE2's as Go's is, without Go's few extensions) for DURATION and
//! logs one summary line at LEVEL (`warning`, `error` (the default), `info` or `debug`);
//! `show_first` logs the first error of each period as it comes. Rules are tried in file
//! order. Once per server block.

use super::{Context, arguments, bad_value, duration, invalid, no_block, unknown_property};
use crate::config::error::Error;
use crate::config::syntax::Line;
use crate::config::{Consolidate, ErrorsConfig, LogLevel};

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
        line: line.name.line,
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
