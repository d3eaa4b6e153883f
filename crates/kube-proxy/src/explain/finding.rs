//! One disagreement `explain` finds between what the objects say and what a server or a node
//! does, with its fix.

use serde::Serialize;

use super::facts::Fix;

/// One disagreement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Its kind (see the module documentation).
    pub kind: &'static str,
    /// What is wrong, in a sentence.
    pub message: String,
    /// What to change to mend it: the field and its value, or where to look.
    pub fix: String,
    /// The change in an object that mends it, when there is one to make.
    pub change: Option<Fix>,
    /// The command that shows what to look at, when there is one.
    pub command: Option<String>,
}

impl Finding {
    /// A finding whose fix is outside the objects (a controller or kube-proxy to check).
    pub(crate) fn new(kind: &'static str, message: String, fix: impl Into<String>) -> Self {
        Self {
            kind,
            message,
            fix: fix.into(),
            change: None,
            command: None,
        }
    }
}
