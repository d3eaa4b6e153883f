//! `loop`
//!
//! As CoreDNS's *loop*: no arguments, no options, once per server block. (The probe's name is
//! under the block's first zone; the server knows that from the block.)

use super::{Context, arguments, no_block};
use crate::config::LoopConfig;
use crate::config::error::Error;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "loop";

/// Parses the `loop` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<LoopConfig, Error> {
    arguments(DIRECTIVE, line, 0, Some(0))?;
    no_block(DIRECTIVE, line)?;
    Ok(LoopConfig {
        line: line.name.line,
    })
}
