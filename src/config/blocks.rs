//! The typed configuration: a Corefile's server blocks, each with its zones, its port and
//! its plugins' configuration.

use hickory_proto::rr::Name;

use super::directives::Plugins;

/// A whole Corefile: its server blocks, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// One entry per server block (a block with several keys on different ports is split).
    pub servers: Vec<ServerBlock>,
}

/// One server block: `ZONES:PORT { directives }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerBlock {
    /// The zones of the block's keys, lower-case and fully qualified (`.` for the root).
    pub zones: Vec<Name>,
    /// The port of the block's keys (53 when not given).
    pub port: u16,
    /// The configuration of each plugin the block has (`bind`'s addresses empty means every
    /// address).
    pub plugins: Plugins,
    /// Line of the block's first key, for messages.
    pub line: usize,
}
