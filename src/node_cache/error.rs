//! The one error type of [`crate::node_cache`]: what failed, said whole.

/// A node-cache step that failed, with what was expected or what the tool said.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Error(pub String);

impl Error {
    /// An error from a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}
