//! `hosts [FILE [ZONES...]] { INLINE...; ttl SECONDS; reload DURATION; no_reverse;
//! fallthrough [ZONES...]; fallthrough_unsupported }`
//!
//! As CoreDNS's *hosts*: FILE defaults to `/etc/hosts` (a relative path is relative to the
//! Corefile, as `objects` is; CoreDNS takes it from its working directory or *root*); ZONES
//! default to the server block's. Lines of the block that are not options are inline
//! entries (`IP NAME...`), served after the file's; as in CoreDNS they must come before
//! `fallthrough` (after it a line that is not an option is an unknown property), and unlike
//! CoreDNS (which ignores it) one whose first word is not an IP address is an error, since it
//! is most likely a misspelt option. `ttl` defaults to 3600 (1 to 65535), `reload` to 5 s
//! (0 turns it off). `fallthrough_unsupported` needs `fallthrough`. Once per server block.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::rr::Name;

use super::{Context, arguments, bad_value, invalid, no_block, zones};
use crate::config::error::Error;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "hosts";

/// CoreDNS's defaults.
pub(crate) const DEFAULT_PATH: &str = "/etc/hosts";
pub(crate) const DEFAULT_TTL: u32 = 3600;
pub(crate) const DEFAULT_RELOAD: Duration = Duration::from_secs(5);

/// The *hosts* directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostsConfig {
    /// The hosts file (relative paths already made relative to the Corefile).
    pub path: PathBuf,
    /// The zones the plugin answers for (the server block's when none are given).
    pub zones: Vec<Name>,
    /// The inline entries, one line each (`IP NAME...`), in file order.
    pub inline: Vec<String>,
    /// `ttl` (default 3600).
    pub ttl: u32,
    /// `reload`: how often the file is checked for changes (default 5 s; 0: never).
    pub reload: Duration,
    /// `no_reverse`: no PTR records from the entries.
    pub no_reverse: bool,
    /// `fallthrough [ZONES...]`: `None` when absent; an empty list means every zone.
    pub fallthrough: Option<Vec<Name>>,
    /// `fallthrough_unsupported`: types other than A, AAAA and PTR for a name the entries
    /// hold go on too (within the `fallthrough` zones).
    pub fallthrough_unsupported: bool,
    /// Line of the directive.
    pub line: usize,
}

/// Whether `text` is an IP address as a hosts file writes one (an IPv6 zone allowed).
pub(crate) fn is_hosts_ip(text: &str) -> bool {
    let address = text.split('%').next().unwrap_or_default();
    address.parse::<std::net::IpAddr>().is_ok()
}

/// Parses the `hosts` line.
pub(crate) fn parse(line: &Line, context: &Context<'_>) -> Result<HostsConfig, Error> {
    let (path, zone_args) = match line.args.split_first() {
        None => (PathBuf::from(DEFAULT_PATH), &[][..]),
        Some((file, zones)) => {
            if file.text.is_empty() {
                return Err(bad_value(DIRECTIVE, line, file, "empty file name"));
            }
            let base = file.file.parent().unwrap_or(Path::new(""));
            (base.join(&file.text), zones)
        }
    };
    let zones = zones(DIRECTIVE, line, zone_args, context.block_zones)?;
    let mut config = HostsConfig {
        path,
        zones,
        inline: Vec::new(),
        ttl: DEFAULT_TTL,
        reload: DEFAULT_RELOAD,
        no_reverse: false,
        fallthrough: None,
        fallthrough_unsupported: false,
        line: line.name.line,
    };
    let mut unsupported_at = None;
    for option in line.options() {
        no_block(DIRECTIVE, option)?;
        match option.name() {
            "fallthrough" => {
                config.fallthrough = Some(super::zones(DIRECTIVE, option, &option.args, &[])?);
            }
            "fallthrough_unsupported" => {
                arguments(DIRECTIVE, option, 0, Some(0))?;
                config.fallthrough_unsupported = true;
                unsupported_at = Some(option);
            }
            "no_reverse" => {
                arguments(DIRECTIVE, option, 0, Some(0))?;
                config.no_reverse = true;
            }
            "ttl" => {
                let Some(arg) = option.args.first() else {
                    return Err(invalid(
                        &option.name,
                        DIRECTIVE,
                        "ttl needs a time in second",
                    ));
                };
                arguments(DIRECTIVE, option, 1, Some(1))?;
                let ttl: i64 = arg.text.parse().map_err(|_| {
                    bad_value(DIRECTIVE, option, arg, "ttl needs a number of second")
                })?;
                if !(1..=65535).contains(&ttl) {
                    return Err(bad_value(
                        DIRECTIVE,
                        option,
                        arg,
                        &format!("ttl provided is invalid: '{}' (1 to 65535)", arg.text),
                    ));
                }
                config.ttl = ttl as u32;
            }
            "reload" => {
                let [arg] = option.args.as_slice() else {
                    return Err(invalid(
                        &option.name,
                        DIRECTIVE,
                        "reload needs a duration (zero seconds to disable)",
                    ));
                };
                config.reload = super::duration(DIRECTIVE, option, arg)?;
            }
            name => {
                // Not an option, nor an inline entry (`IP NAME...`, before `fallthrough`).
                if config.fallthrough.is_some() || !is_hosts_ip(name) {
                    return Err(super::unknown_property(DIRECTIVE, option));
                }
                let mut entry = name.to_owned();
                for arg in &option.args {
                    entry.push(' ');
                    entry.push_str(&arg.text);
                }
                config.inline.push(entry);
            }
        }
    }
    if let Some(option) = unsupported_at
        && config.fallthrough.is_none()
    {
        return Err(invalid(
            &option.name,
            DIRECTIVE,
            "fallthrough_unsupported requires fallthrough",
        ));
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid, names};

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("defaults", " hosts", |s| {
                s.plugins.hosts.as_ref().is_some_and(|h| {
                    h.path == Path::new("/etc/hosts")
                        && names(&h.zones) == ["."]
                        && h.inline.is_empty()
                        && h.ttl == 3600
                        && h.reload == Duration::from_secs(5)
                        && !h.no_reverse
                        && h.fallthrough.is_none()
                        && !h.fallthrough_unsupported
                        && h.line == 2
                })
            }),
            (
                "k3s",
                " hosts /etc/coredns/NodeHosts {\n  ttl 60\n  reload 15s\n  fallthrough\n }",
                |s| {
                    s.plugins.hosts.as_ref().is_some_and(|h| {
                        h.path == Path::new("/etc/coredns/NodeHosts")
                            && h.ttl == 60
                            && h.reload == Duration::from_secs(15)
                            && h.fallthrough == Some(vec![])
                    })
                },
            ),
            (
                "minikube",
                " hosts {\n  192.168.49.1 host.minikube.internal\n  fallthrough\n }",
                |s| {
                    s.plugins.hosts.as_ref().is_some_and(|h| {
                        h.inline == ["192.168.49.1 host.minikube.internal"]
                            && h.fallthrough.is_some()
                    })
                },
            ),
            (
                "file and zones",
                " hosts example.hosts example.org Example.NET {\n  no_reverse\n }",
                |s| {
                    s.plugins.hosts.as_ref().is_some_and(|h| {
                        h.path == Path::new("example.hosts")
                            && names(&h.zones) == ["example.org.", "example.net."]
                            && h.no_reverse
                    })
                },
            ),
            (
                "inline aliases and v6",
                " hosts {\n  10.0.0.1 a.example.org a\n  fe80::1%eth0 b.example.org\n }",
                |s| {
                    s.plugins.hosts.as_ref().is_some_and(|h| {
                        h.inline == ["10.0.0.1 a.example.org a", "fe80::1%eth0 b.example.org"]
                    })
                },
            ),
            (
                "fallthrough zones",
                " hosts {\n  fallthrough in-addr.arpa 10.0.0.0/24\n  fallthrough_unsupported\n }",
                |s| {
                    s.plugins.hosts.as_ref().is_some_and(|h| {
                        h.fallthrough
                            .as_deref()
                            .is_some_and(|z| names(z) == ["in-addr.arpa.", "0.0.10.in-addr.arpa."])
                            && h.fallthrough_unsupported
                    })
                },
            ),
            ("reload off", " hosts {\n  reload 0\n }", |s| {
                s.plugins.hosts.as_ref().is_some_and(|h| h.reload.is_zero())
            }),
        ];
        check_valid(cases);
    }

    #[test]
    fn relative_file_is_relative_to_the_corefile() {
        let config = crate::config::parse_corefile_in(
            ". {\n hosts NodeHosts\n}",
            Path::new("/etc/coredns/Corefile"),
            &crate::config::test_support::env(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let hosts = config.servers[0]
            .plugins
            .hosts
            .as_ref()
            .map(|h| h.path.clone());
        assert_eq!(hosts, Some(PathBuf::from("/etc/coredns/NodeHosts")));
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "ttl missing",
                input: " hosts {\n  ttl\n }",
                line: 3,
                kind: "Invalid",
                message: "hosts: ttl needs a time in second",
            },
            Invalid {
                name: "ttl word",
                input: " hosts {\n  ttl long\n }",
                line: 3,
                kind: "Invalid",
                message: "hosts: ttl: ttl needs a number of second",
            },
            Invalid {
                name: "ttl zero",
                input: " hosts {\n  ttl 0\n }",
                line: 3,
                kind: "Invalid",
                message: "ttl provided is invalid: '0'",
            },
            Invalid {
                name: "ttl large",
                input: " hosts {\n  ttl 65536\n }",
                line: 3,
                kind: "Invalid",
                message: "ttl provided is invalid",
            },
            Invalid {
                name: "reload missing",
                input: " hosts {\n  reload\n }",
                line: 3,
                kind: "Invalid",
                message: "hosts: reload needs a duration (zero seconds to disable)",
            },
            Invalid {
                name: "reload bad",
                input: " hosts {\n  reload soon\n }",
                line: 3,
                kind: "Invalid",
                message: "hosts: reload: invalid duration 'soon'",
            },
            Invalid {
                name: "reload negative",
                input: " hosts {\n  reload -5s\n }",
                line: 3,
                kind: "Invalid",
                message: "must not be negative",
            },
            Invalid {
                name: "misspelt option",
                input: " hosts {\n  relaod 5s\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'relaod' in hosts",
            },
            Invalid {
                name: "entry after fallthrough",
                input: " hosts {\n  fallthrough\n  10.0.0.1 a.example.org\n }",
                line: 4,
                kind: "UnknownProperty",
                message: "unknown property '10.0.0.1' in hosts",
            },
            Invalid {
                name: "unsupported without fallthrough",
                input: " hosts {\n  fallthrough_unsupported\n }",
                line: 3,
                kind: "Invalid",
                message: "fallthrough_unsupported requires fallthrough",
            },
            Invalid {
                name: "no_reverse argument",
                input: " hosts {\n  no_reverse yes\n }",
                line: 3,
                kind: "Invalid",
                message: "no_reverse: expected exactly 0 arguments, got 1",
            },
            Invalid {
                name: "bad zone",
                input: " hosts /etc/hosts ex%ample",
                line: 2,
                kind: "Invalid",
                message: "hosts: zone 'ex%ample' has an invalid character",
            },
            Invalid {
                name: "twice",
                input: " hosts\n hosts",
                line: 3,
                kind: "Invalid",
                message: "plugin/hosts: this plugin can only be used once per Server Block (first at line 2)",
            },
        ];
        check_invalid(cases);
    }
}
