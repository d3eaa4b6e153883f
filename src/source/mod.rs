//! Where objects come from.
//!
//! - [`file`]: `kubectl get -o json` files, read whole (the `objects` store and every offline
//!   command).
//! - [`api`]: the API watch (kube-rs), for a *kubernetes* block without `objects`.
//! - [`file_watch`]: a store kept current with its objects files.
//! - [`publish`]: the one place that turns changes of objects into published zones.
//! - [`programming`]: DNS programming latency, from the slices' change stamps.

pub mod api;
pub mod file;
pub mod file_watch;
mod mcs;
pub mod programming;
pub mod publish;

pub use file::{Error, Loaded, Loader, parse_objects, read_objects};
