//! The DNS server: listeners, and the request path they share.
//!
//! UDP, where nearly every query arrives, is served by workers of our own ([`udp`]): a
//! thread and a `SO_REUSEPORT` socket per CPU the process may use, each taking datagrams in
//! batches (`recvmmsg`), parsing the question in place, looking the name up in the current
//! snapshot, copying the prepared records out, and sending the batch's replies together
//! (`sendmmsg`) — no task, no allocation per query. TCP ([`tcp`]) serves each connection in
//! one task, capped process-wide, answering the messages that arrived together with the same
//! [`Handler::respond`] and writing their replies at once. Zone transfers ([`transfer`]) are
//! TCP only.

mod chain;
mod debug;
mod error;
mod generation;
mod handler;
mod listen;
mod load;
mod observability;
mod reload;
mod run;
mod tcp;
mod udp;
pub mod why;

pub use crate::wire::Transport;
pub use chain::Local;
pub use chain::block::{Block, Pending};
pub use chain::kubernetes::Kubernetes;
pub use error::StartError;
pub use handler::{Handler, Outcome};
pub use listen::{Listener, bind_all, local_ips};
pub use load::{LoadedBlock, block_addresses, load, server_label};
pub use observability::Observability;
pub use reload::{Check, CorefileWatch, next_wait};
pub use run::{Running, start};
