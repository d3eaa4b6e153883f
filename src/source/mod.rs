//! Where objects come from.

pub mod watcher;
