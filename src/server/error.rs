//! Why a server could not start: what loading, building and starting a configuration's
//! blocks reports.

use crate::source::{api, file};

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A block's objects failed to load.
    #[error("kubernetes (line {line}): {error}")]
    Objects {
        /// Line of the *kubernetes* directive.
        line: usize,
        /// What went wrong.
        error: Box<file::Error>,
    },
    /// An offline command met a *kubernetes* block without `objects`.
    #[error(
        "kubernetes (line {line}): the block watches the API server; offline commands need \
         its objects as files (`objects FILE...`, or --objects)"
    )]
    NoObjects {
        /// Line of the directive.
        line: usize,
    },
    /// The API server connection is misconfigured.
    #[error("kubernetes (line {line}): {error}")]
    Api {
        /// Line of the directive.
        line: usize,
        /// What is wrong.
        error: api::ConnectError,
    },
    /// A listener could not be bound.
    #[error(transparent)]
    Bind(#[from] std::io::Error),
    /// Objects files could not be watched.
    #[error("watching objects files: {0}")]
    Watch(notify::Error),
    /// A plugin's directive cannot be served (a *file* directive's zone file does not read).
    #[error("{plugin} (line {line}): {error}")]
    Plugin {
        /// The plugin.
        plugin: crate::plugin::Plugin,
        /// Line of its directive.
        line: usize,
        /// What is wrong.
        error: String,
    },
}
