//! Code shared by the benches and the examples (`examples/gencluster.rs`,
//! `examples/querymix.rs` include it with `#[path]`).

pub(crate) mod queries;
pub(crate) mod synth;
