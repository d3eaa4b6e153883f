//! Where objects come from.
//!
//! - [`file`]: `kubectl get -o json` files, read whole (the `objects` store and every offline
//!   command).

pub mod file;

pub use file::{Error, Loaded, Loader, parse_objects, read_objects};
