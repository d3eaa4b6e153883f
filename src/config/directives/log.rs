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
use crate::config::{LogClasses, LogConfig};

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
        line: line.name.line,
    })
}
