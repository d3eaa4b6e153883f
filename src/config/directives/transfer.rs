//! `transfer [ZONES...] { to ADDRESS... }`
//!
//! As CoreDNS's *transfer*: zones default to the server block's; `to` (required, may repeat)
//! takes `*` (anyone), an IP, `IP:PORT` (the port is ignored: it named where NOTIFYs go, and
//! clusterdns sends none) or a CIDR.

use hickory_proto::rr::Name;

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

use super::{Context, arguments, invalid, no_block, unknown_property, unsupported_property, zones};
use crate::config::error::Error;
use crate::config::syntax::Line;

/// The *transfer* directive: `transfer [ZONES...] { to ADDRESS... }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferConfig {
    /// Zones this directive allows transfers of (the server block's when none are given).
    pub zones: Vec<Name>,
    /// Who may transfer.
    pub to: Vec<TransferPeer>,
}

/// One `to` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferPeer {
    /// `*`: anyone.
    Any,
    /// An address or a network.
    Net(IpNet),
}

impl TransferPeer {
    /// Whether a client at `ip` may transfer.
    pub fn allows(&self, ip: IpAddr) -> bool {
        match self {
            Self::Any => true,
            Self::Net(net) => net.contains(&ip),
        }
    }
}

const DIRECTIVE: &str = "transfer";

/// Parses one `transfer` line.
pub(crate) fn parse(line: &Line, context: &Context<'_>) -> Result<TransferConfig, Error> {
    let zones = zones(DIRECTIVE, line, &line.args, context.block_zones)?;
    let mut to: Vec<TransferPeer> = Vec::new();
    for option in line.options() {
        match option.name() {
            "to" => {
                no_block(DIRECTIVE, option)?;
                for arg in arguments(DIRECTIVE, option, 1, None)? {
                    let peer = parse_peer(&arg.text).ok_or_else(|| {
                        invalid(
                            arg,
                            DIRECTIVE,
                            format!(
                                "to: '{}' is not '*', an IP address, IP:PORT or a CIDR",
                                arg.text
                            ),
                        )
                    })?;
                    if !to.contains(&peer) {
                        to.push(peer);
                    }
                }
            }
            "source" => {
                return Err(unsupported_property(
                    DIRECTIVE,
                    option,
                    "it sets the source address of NOTIFY messages, and clusterdns sends none",
                ));
            }
            _ => return Err(unknown_property(DIRECTIVE, option)),
        }
    }
    if to.is_empty() {
        return Err(invalid(
            &line.name,
            DIRECTIVE,
            "'to' is required: transfer [ZONES...] { to ADDRESS... }",
        ));
    }
    Ok(TransferConfig { zones, to })
}

fn parse_peer(text: &str) -> Option<TransferPeer> {
    if text == "*" {
        return Some(TransferPeer::Any);
    }
    if let Ok(net) = text.parse::<IpNet>() {
        return Some(TransferPeer::Net(net.trunc()));
    }
    let address = match text.parse::<IpAddr>() {
        Ok(address) => address,
        Err(_) => text.parse::<SocketAddr>().ok()?.ip(),
    };
    Some(TransferPeer::Net(IpNet::from(address)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::test_support::{Invalid, check_invalid_corefiles, names, parse};

    #[test]
    fn peers() {
        let net = |text: &str| Some(TransferPeer::Net(text.parse().unwrap()));
        let cases = [
            ("any", "*", Some(TransferPeer::Any)),
            ("v4", "10.0.0.1", net("10.0.0.1/32")),
            ("v4 port", "10.0.0.1:53", net("10.0.0.1/32")),
            ("v6", "fd00::1", net("fd00::1/128")),
            ("v6 port", "[fd00::1]:53", net("fd00::1/128")),
            ("cidr", "10.0.0.0/8", net("10.0.0.0/8")),
            ("cidr host bits", "10.1.0.0/8", net("10.0.0.0/8")),
            ("name", "example.org", None),
            ("bad cidr", "10.0.0.0/40", None),
        ];
        for (name, text, want) in cases {
            assert_eq!(parse_peer(text), want, "{name}");
        }
    }

    #[test]
    fn transfer() {
        let text = "cluster.local {\n transfer {\n  to * 10.0.0.1:53\n  to 10.0.0.0/8\n }\n transfer example.org 10.0.0.0/24 {\n  to fd00::1\n }\n}";
        let config = parse(text).unwrap();
        let transfers = &config.servers[0].plugins.transfer;
        assert_eq!(transfers.len(), 2);
        assert_eq!(names(&transfers[0].zones), ["cluster.local."]);
        assert_eq!(
            transfers[0].to,
            [
                TransferPeer::Any,
                TransferPeer::Net("10.0.0.1/32".parse().unwrap()),
                TransferPeer::Net("10.0.0.0/8".parse().unwrap()),
            ]
        );
        assert_eq!(
            names(&transfers[1].zones),
            ["example.org.", "0.0.10.in-addr.arpa."]
        );
        assert!(transfers[1].to[0].allows("fd00::1".parse().unwrap()));
        assert!(!transfers[1].to[0].allows("fd00::2".parse().unwrap()));
    }

    /// Errors of the *transfer* directive, in whole Corefiles.
    #[test]
    fn errors() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "transfer without to",
                input: ". {\n transfer\n}",
                line: 2,
                kind: "Invalid",
                message: "transfer: 'to' is required",
            },
            Invalid {
                name: "transfer empty block",
                input: ". {\n transfer {\n }\n}",
                line: 2,
                kind: "Invalid",
                message: "'to' is required",
            },
            Invalid {
                name: "transfer bad peer",
                input: ". {\n transfer {\n  to example.org\n }\n}",
                line: 3,
                kind: "Invalid",
                message: "to: 'example.org' is not '*', an IP address",
            },
            Invalid {
                name: "transfer source",
                input: ". {\n transfer {\n  to *\n  source 10.0.0.1\n }\n}",
                line: 4,
                kind: "UnsupportedProperty",
                message: "'source' of transfer",
            },
            Invalid {
                name: "transfer option",
                input: ". {\n transfer {\n  from 10.0.0.1\n }\n}",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'from' in transfer",
            },
            Invalid {
                name: "transfer zone",
                input: ". {\n transfer ex%ample {\n  to *\n }\n}",
                line: 2,
                kind: "Invalid",
                message: "transfer: zone 'ex%ample' has an invalid character",
            },
        ];
        check_invalid_corefiles(cases);
    }
}
