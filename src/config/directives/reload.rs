//! `reload [INTERVAL] [JITTER]`
//!
//! As CoreDNS's *reload*: INTERVAL defaults to 30 s and must be at least 2 s; JITTER defaults
//! to 15 s and must be at least 1 s, and a JITTER over half the INTERVAL is lowered to half of
//! it (silently, as CoreDNS does: `reload 10s` checks every 10 s ± 5 s). No options; once per
//! server block (the Corefile is one file, so every block's `reload` says the same thing).

use std::time::Duration;

use super::{Context, arguments, bad_value, duration, no_block};
use crate::config::ReloadConfig;
use crate::config::error::Error;
use crate::config::syntax::Line;

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
        line: line.name.line,
    })
}
