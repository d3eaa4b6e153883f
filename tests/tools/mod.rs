//! The commands beside the server: the command line's contract (`command_line`), `query`
//! and `query --why` with `/debug/why` (`why`), `resolve-cost` and the search-path tracker
//! against the real glibc and musl resolvers (`resolve`, `search_path`, `real_resolvers`),
//! `records --format zone` (`zonefile`), and the README's own commands (`readme`).

mod command_line;
mod readme;
pub(crate) mod real_resolvers;
mod resolve;
mod search_path;
mod why;
mod zonefile;
