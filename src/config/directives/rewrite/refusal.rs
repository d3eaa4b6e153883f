//! Why a rewrite rule is not taken: refused as CoreDNS refuses it, or taken by CoreDNS but
//! not by clusterdns.

/// Why a rule is not taken.
pub(super) enum Refusal {
    /// CoreDNS refuses it too (its message).
    Invalid(String),
    /// CoreDNS takes it; clusterdns does not.
    Unsupported {
        /// The rule's field.
        field: &'static str,
        /// Why.
        reason: &'static str,
    },
}

impl From<String> for Refusal {
    fn from(message: String) -> Self {
        Self::Invalid(message)
    }
}
