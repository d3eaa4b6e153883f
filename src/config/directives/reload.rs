//! `reload [INTERVAL] [JITTER]`
//!
//! As CoreDNS's *reload*: INTERVAL defaults to 30 s and must be at least 2 s; JITTER defaults
//! to 15 s and must be at least 1 s, and a JITTER over half the INTERVAL is lowered to half of
//! it (silently, as CoreDNS does: `reload 10s` checks every 10 s ± 5 s). No options; once per
//! server block (the Corefile is one file, so every block's `reload` says the same thing).

use std::time::Duration;

use super::{Context, arguments, bad_value, duration, no_block};
use crate::config::error::Error;
use crate::config::syntax::Line;

/// The *reload* directive: `reload [INTERVAL] [JITTER]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadConfig {
    /// How often the Corefile is checked (default 30 s, at least 2 s).
    pub interval: Duration,
    /// Random spread (±) around each interval (default 15 s, at least 1 s; lowered to half the
    /// interval when larger, as CoreDNS does).
    pub jitter: Duration,
}

const DIRECTIVE: &str = "reload";

/// The default INTERVAL.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);
/// The default JITTER.
pub(crate) const DEFAULT_JITTER: Duration = Duration::from_secs(15);
const MIN_INTERVAL: Duration = Duration::from_secs(2);
const MIN_JITTER: Duration = Duration::from_secs(1);

/// Parses the `reload` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<ReloadConfig, Error> {
    no_block(DIRECTIVE, line)?;
    let args = arguments(DIRECTIVE, line, 0, Some(2))?;
    let mut interval = DEFAULT_INTERVAL;
    if let Some(arg) = args.first() {
        interval = duration(DIRECTIVE, line, arg)?;
        if interval < MIN_INTERVAL {
            return Err(bad_value(
                DIRECTIVE,
                line,
                arg,
                &format!(
                    "interval value must be greater or equal to 2s, not {}",
                    arg.text
                ),
            ));
        }
    }
    let mut jitter = DEFAULT_JITTER;
    if let Some(arg) = args.get(1) {
        jitter = duration(DIRECTIVE, line, arg)?;
        if jitter < MIN_JITTER {
            return Err(bad_value(
                DIRECTIVE,
                line,
                arg,
                &format!(
                    "jitter value must be greater or equal to 1s, not {}",
                    arg.text
                ),
            ));
        }
    }
    Ok(ReloadConfig {
        interval,
        jitter: jitter.min(interval / 2),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::ServerBlock;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn reload(server: &ServerBlock) -> (Duration, Duration) {
        let reload = server.plugins.reload.as_ref().unwrap();
        (reload.interval, reload.jitter)
    }

    const fn secs(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("default", " reload", |s| reload(s) == (secs(30), secs(15))),
            ("interval halves the jitter", " reload 10s", |s| {
                reload(s) == (secs(10), secs(5))
            }),
            ("long interval keeps the jitter", " reload 2m", |s| {
                reload(s) == (secs(120), secs(15))
            }),
            ("both", " reload 1m 10s", |s| {
                reload(s) == (secs(60), secs(10))
            }),
            ("jitter over half", " reload 10s 8s", |s| {
                reload(s) == (secs(10), secs(5))
            }),
            ("minimums", " reload 2s 1s", |s| {
                reload(s) == (secs(2), secs(1))
            }),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "three",
                input: " reload 1m 10s 1s",
                line: 2,
                kind: "Invalid",
                message: "reload: expected at most 2 arguments, got 3",
            },
            Invalid {
                name: "interval small",
                input: " reload 1s",
                line: 2,
                kind: "Invalid",
                message: "reload: interval value must be greater or equal to 2s, not 1s",
            },
            Invalid {
                name: "jitter small",
                input: " reload 30s 500ms",
                line: 2,
                kind: "Invalid",
                message: "jitter value must be greater or equal to 1s, not 500ms",
            },
            Invalid {
                name: "jitter zero",
                input: " reload 30s 0s",
                line: 2,
                kind: "Invalid",
                message: "jitter value",
            },
            Invalid {
                name: "interval unit",
                input: " reload 30",
                line: 2,
                kind: "Invalid",
                message: "reload: missing unit in duration '30'",
            },
            Invalid {
                name: "block",
                input: " reload {\n }",
                line: 2,
                kind: "Invalid",
                message: "reload: takes no '{ ... }' block",
            },
            Invalid {
                name: "twice",
                input: " reload\n reload 1m",
                line: 3,
                kind: "Invalid",
                message: "may be used only once per server block",
            },
        ];
        check_invalid(cases);
    }
}
