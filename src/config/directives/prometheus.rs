//! `prometheus [ADDRESS]`
//!
//! As CoreDNS's *prometheus* (the *metrics* plugin): the address defaults to `localhost:9153`
//! (127.0.0.1; kubeadm writes `:9153`). Once per server block; several blocks may share an
//! address (one endpoint), as CoreDNS does. No options.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::{Context, arguments, http_address, no_block};
use crate::config::PrometheusConfig;
use crate::config::error::Error;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "prometheus";

/// `localhost:9153`.
pub(crate) const DEFAULT_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9153);

/// Parses the `prometheus` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<PrometheusConfig, Error> {
    no_block(DIRECTIVE, line)?;
    let addr = match arguments(DIRECTIVE, line, 0, Some(1))?.first() {
        Some(arg) => http_address(DIRECTIVE, line, arg)?,
        None => DEFAULT_ADDR,
    };
    Ok(PrometheusConfig {
        addr,
        line: line.name.line,
    })
}
