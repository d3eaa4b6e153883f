//! nftables rulesets (placeholder until the nft reader lands).

use super::{Format, ParseError, Ruleset};

/// Reads `nft list` output or an `nft -f` transaction.
pub fn parse(_text: &str, _format: Format) -> Result<Ruleset, ParseError> {
    Err(ParseError::new(1, "nftables rulesets are not read yet"))
}
