//! The integration tests: one binary, one module per area.

mod common;
mod corefile;
mod loader;
mod protocol;
mod zone;
