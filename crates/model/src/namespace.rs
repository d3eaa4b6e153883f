//! A Namespace.

use super::Labels;

/// A Namespace object (or one synthesized from the objects that live in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`, matched by `namespace_labels`.
    pub labels: Labels,
}
