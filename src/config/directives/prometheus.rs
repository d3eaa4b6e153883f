//! `prometheus [ADDRESS] { search_path on|off; search_path_namespaces N;
//! search_path_domains DOMAIN... }`
//!
//! As CoreDNS's *prometheus* (the *metrics* plugin): the address defaults to `localhost:9153`
//! (127.0.0.1; kubeadm writes `:9153`). Once per server block; several blocks may share an
//! address (one endpoint), as CoreDNS does. CoreDNS's plugin has no options; the block holds
//! clusterdns's search-path tracker's (`docs/observability.md`): `search_path off` turns it
//! off (it is on), `search_path_namespaces N` labels the first N namespaces seen (1 to 64,
//! default 20; the rest are `other`), `search_path_domains` names the node's search domains
//! to follow walks through.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use hickory_proto::rr::Name;

use super::{
    Context, arguments, bad_value, http_listen, no_block, number, one_argument, unknown_property,
};
use crate::config::error::Error;
use crate::config::syntax::Line;

/// The *prometheus* directive: `prometheus [ADDRESS]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrometheusConfig {
    /// Where `/metrics` listens (default `localhost:9153`, which is `127.0.0.1:9153`; kubeadm
    /// writes `:9153`).
    pub addr: SocketAddr,
    /// clusterdns's search-path tracker (options in the directive's block).
    pub search_path: SearchPathConfig,
}

/// The search-path tracker's options, in *prometheus*'s block (a clusterdns extension).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPathConfig {
    /// `search_path on|off` (default on).
    pub enabled: bool,
    /// `search_path_namespaces N`: namespaces labelled (default 20).
    pub namespaces: usize,
    /// `search_path_domains`: the node's search domains, lower case.
    pub domains: Vec<String>,
}

impl Default for SearchPathConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            namespaces: 20,
            domains: Vec::new(),
        }
    }
}

const DIRECTIVE: &str = "prometheus";

/// `localhost:9153`.
pub(crate) const DEFAULT_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9153);

/// Parses the `prometheus` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<PrometheusConfig, Error> {
    let addr = http_listen(DIRECTIVE, line, DEFAULT_ADDR)?;
    let mut search_path = SearchPathConfig::default();
    for option in line.options() {
        no_block(DIRECTIVE, option)?;
        match option.name() {
            "search_path" => {
                let arg = one_argument(DIRECTIVE, option)?;
                search_path.enabled = match arg.text.as_str() {
                    "on" => true,
                    "off" => false,
                    other => {
                        return Err(bad_value(
                            DIRECTIVE,
                            option,
                            arg,
                            &format!("'{other}' must be on or off"),
                        ));
                    }
                };
            }
            "search_path_namespaces" => {
                let arg = one_argument(DIRECTIVE, option)?;
                let n: usize = number(DIRECTIVE, option, arg)?;
                if !(1..=MAX_NAMESPACES).contains(&n) {
                    return Err(bad_value(
                        DIRECTIVE,
                        option,
                        arg,
                        &format!("{n} is not between 1 and {MAX_NAMESPACES}"),
                    ));
                }
                search_path.namespaces = n;
            }
            "search_path_domains" => {
                let args = arguments(DIRECTIVE, option, 1, Some(MAX_DOMAINS))?;
                search_path.domains = args
                    .iter()
                    .map(|arg| {
                        Name::from_ascii(&arg.text)
                            .map(|name| name.to_lowercase().to_string())
                            .map_err(|_| {
                                bad_value(
                                    DIRECTIVE,
                                    option,
                                    arg,
                                    &format!("'{}' is not a domain name", arg.text),
                                )
                            })
                    })
                    .collect::<Result<_, _>>()?;
            }
            _ => return Err(unknown_property(DIRECTIVE, option)),
        }
    }
    Ok(PrometheusConfig { addr, search_path })
}

/// Namespaces the tracker can label (`search_path::live::MAX_NAMESPACES`).
const MAX_NAMESPACES: usize = 64;
/// Node search domains the tracker follows (`search_path::live::MAX_NODE_DOMAINS`).
const MAX_DOMAINS: usize = 6;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn addr(server: &crate::config::ServerBlock) -> String {
        server.plugins.prometheus.as_ref().unwrap().addr.to_string()
    }

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("default", " prometheus", |s| addr(s) == "127.0.0.1:9153"),
            ("kubeadm", " prometheus :9153", |s| {
                addr(s) == "0.0.0.0:9153"
            }),
            ("v6", " prometheus [::]:9153", |s| addr(s) == "[::]:9153"),
            ("ip", " prometheus 10.0.0.1:9253", |s| {
                addr(s) == "10.0.0.1:9253"
            }),
            ("search path on by default", " prometheus", |s| {
                s.plugins.prometheus.as_ref().unwrap().search_path
                    == super::SearchPathConfig::default()
            }),
            (
                "search path options",
                " prometheus :9153 {\n  search_path off\n  search_path_namespaces 5\n  search_path_domains Us-East-1.compute.internal. example.org\n }",
                |s| {
                    let p = &s.plugins.prometheus.as_ref().unwrap().search_path;
                    !p.enabled
                        && p.namespaces == 5
                        && p.domains == ["us-east-1.compute.internal.", "example.org"]
                },
            ),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "twice",
                input: " prometheus\n prometheus :9153",
                line: 3,
                kind: "Invalid",
                message: "plugin/prometheus: this plugin can only be used once per Server Block (first at line 2)",
            },
            Invalid {
                name: "two",
                input: " prometheus :9153 :9154",
                line: 2,
                kind: "Invalid",
                message: "expected at most 1 argument, got 2",
            },
            Invalid {
                name: "no port",
                input: " prometheus localhost",
                line: 2,
                kind: "Invalid",
                message: "has no port",
            },
            Invalid {
                name: "unknown option",
                input: " prometheus :9153 {\n  lameduck 5s\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "lameduck",
            },
            Invalid {
                name: "search_path value",
                input: " prometheus {\n  search_path maybe\n }",
                line: 3,
                kind: "Invalid",
                message: "search_path: 'maybe' must be on or off",
            },
            Invalid {
                name: "too many namespaces",
                input: " prometheus {\n  search_path_namespaces 65\n }",
                line: 3,
                kind: "Invalid",
                message: "search_path_namespaces: 65 is not between 1 and 64",
            },
        ];
        check_invalid(cases);
    }
}
