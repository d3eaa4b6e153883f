//! `prometheus [ADDRESS]`
//!
//! As CoreDNS's *prometheus* (the *metrics* plugin): the address defaults to `localhost:9153`
//! (127.0.0.1; kubeadm writes `:9153`). Once per server block; several blocks may share an
//! address (one endpoint), as CoreDNS does. No options.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::{Context, arguments, http_address, no_block};
use crate::config::error::Error;
use crate::config::syntax::Line;

/// The *prometheus* directive: `prometheus [ADDRESS]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrometheusConfig {
    /// Where `/metrics` listens (default `localhost:9153`, which is `127.0.0.1:9153`; kubeadm
    /// writes `:9153`).
    pub addr: SocketAddr,
    /// Line of the directive.
    pub line: usize,
}

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn addr(server: &crate::config::ServerBlock) -> String {
        server.prometheus.as_ref().unwrap().addr.to_string()
    }

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("default", " prometheus", |s| {
                addr(s) == "127.0.0.1:9153" && s.prometheus.as_ref().is_some_and(|p| p.line == 2)
            }),
            ("kubeadm", " prometheus :9153", |s| {
                addr(s) == "0.0.0.0:9153"
            }),
            ("v6", " prometheus [::]:9153", |s| addr(s) == "[::]:9153"),
            ("ip", " prometheus 10.0.0.1:9253", |s| {
                addr(s) == "10.0.0.1:9253"
            }),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            (
                "twice",
                " prometheus\n prometheus :9153",
                3,
                "Invalid",
                "plugin/prometheus: this plugin can only be used once per Server Block (first at line 2)",
            ),
            (
                "two",
                " prometheus :9153 :9154",
                2,
                "Invalid",
                "expected at most 1 argument, got 2",
            ),
            (
                "no port",
                " prometheus localhost",
                2,
                "Invalid",
                "has no port",
            ),
            (
                "block",
                " prometheus :9153 {\n }",
                2,
                "Invalid",
                "prometheus: takes no '{ ... }' block",
            ),
        ];
        check_invalid(cases);
    }
}
