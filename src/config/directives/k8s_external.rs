//! `k8s_external [ZONES...] { apex APEX; ttl TTL; headless; fallthrough [ZONES...] }`
//!
//! As CoreDNS's *k8s_external* (`plugin/k8s_external/setup.go`): ZONES default to the server
//! block's; `apex` (default `dns`) is the label under which the zone's name server lives
//! (`ns1.<apex>.<zone>`); `ttl` defaults to 5 and must lie in [0, 3600]; `headless` answers
//! headless Services without external addresses from their endpoints; `fallthrough` hands an
//! NXDOMAIN on to the next plugin. The plugin needs a *kubernetes* directive in the same
//! server block (checked once the whole block is read, in CoreDNS's words:
//! `plugin/k8s_external: kubernetes plugin not loaded`).
//!
//! Where clusterdns is stricter than CoreDNS: `apex` must be one DNS label (CoreDNS joins
//! whatever it is given into the names it writes), `ttl` and `apex` take exactly one
//! argument (CoreDNS ignores any after the first), and the directive may appear once per
//! server block (CoreDNS would chain two instances, the first shadowing the second).

use hickory_proto::rr::Name;

use super::{Context, arguments, bad_value, invalid, no_block, one_argument, zones};
use crate::config::error::Error;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "k8s_external";

/// CoreDNS's defaults.
pub(crate) const DEFAULT_APEX: &str = "dns";
pub(crate) const DEFAULT_TTL: u32 = 5;
/// The largest `ttl` CoreDNS accepts.
const MAX_TTL: i64 = 3600;

/// The *k8s_external* directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct K8sExternalConfig {
    /// The zones the plugin is authoritative for (the server block's when none are given),
    /// lower-case and fully qualified.
    pub zones: Vec<Name>,
    /// `apex`: the label of the zone's name-server names (default `dns`), lower case.
    pub apex: String,
    /// `ttl` (default 5, range 0..=3600).
    pub ttl: u32,
    /// `headless`: headless Services without external addresses answer with their ready
    /// endpoints.
    pub headless: bool,
    /// `fallthrough [ZONES...]`: `None` when absent; an empty list means every zone.
    pub fallthrough: Option<Vec<Name>>,
}

/// Parses the `k8s_external` line.
pub(crate) fn parse(line: &Line, context: &Context<'_>) -> Result<K8sExternalConfig, Error> {
    let zones = zones(DIRECTIVE, line, &line.args, context.block_zones)?;
    let mut config = K8sExternalConfig {
        zones,
        apex: DEFAULT_APEX.to_owned(),
        ttl: DEFAULT_TTL,
        headless: false,
        fallthrough: None,
    };
    for option in line.options() {
        no_block(DIRECTIVE, option)?;
        match option.name() {
            "ttl" => config.ttl = ttl(option)?,
            "apex" => config.apex = apex(option)?,
            "headless" => {
                arguments(DIRECTIVE, option, 0, Some(0))?;
                config.headless = true;
            }
            "fallthrough" => {
                config.fallthrough = Some(zones_of(option)?);
            }
            _ => return Err(super::unknown_property(DIRECTIVE, option)),
        }
    }
    Ok(config)
}

/// `fallthrough [ZONES...]`: its zones (empty: every zone).
fn zones_of(option: &Line) -> Result<Vec<Name>, Error> {
    super::zones(DIRECTIVE, option, &option.args, &[])
}

/// `ttl TTL`: an integer in [0, 3600], in CoreDNS's words when it is not.
fn ttl(option: &Line) -> Result<u32, Error> {
    if option.args.is_empty() {
        return Err(invalid(
            &option.name,
            DIRECTIVE,
            "ttl: Wrong argument count or unexpected line ending after 'ttl'",
        ));
    }
    let arg = one_argument(DIRECTIVE, option)?;
    let value: i64 = arg.text.parse().map_err(|_| {
        bad_value(
            DIRECTIVE,
            option,
            arg,
            &format!("strconv.Atoi: parsing \"{}\": invalid syntax", arg.text),
        )
    })?;
    if !(0..=MAX_TTL).contains(&value) {
        return Err(bad_value(
            DIRECTIVE,
            option,
            arg,
            &format!("ttl must be in range [0, 3600]: {value}"),
        ));
    }
    // In [0, 3600].
    Ok(value as u32)
}

/// `apex APEX`: one DNS label, lower-cased.
fn apex(option: &Line) -> Result<String, Error> {
    if option.args.is_empty() {
        return Err(invalid(
            &option.name,
            DIRECTIVE,
            "apex: Wrong argument count or unexpected line ending after 'apex'",
        ));
    }
    let arg = one_argument(DIRECTIVE, option)?;
    let label = arg.text.trim_end_matches('.');
    let fits = !label.is_empty()
        && label.len() <= 63
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !fits {
        return Err(bad_value(
            DIRECTIVE,
            option,
            arg,
            &format!(
                "'{}' is not a DNS label (the apex is one label: ns1.APEX.ZONE)",
                arg.text
            ),
        ));
    }
    Ok(label.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn external(s: &crate::config::ServerBlock) -> Option<&super::K8sExternalConfig> {
        s.plugins.kubernetes.as_ref()?.external.as_ref()
    }

    fn names(zones: &[hickory_proto::rr::Name]) -> Vec<String> {
        zones.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            (
                "defaults",
                " kubernetes cluster.local\n k8s_external",
                |s| {
                    external(s).is_some_and(|e| {
                        names(&e.zones) == ["."]
                            && e.apex == "dns"
                            && e.ttl == 5
                            && !e.headless
                            && e.fallthrough.is_none()
                    })
                },
            ),
            (
                "zone",
                " kubernetes cluster.local\n k8s_external example.org",
                |s| external(s).is_some_and(|e| names(&e.zones) == ["example.org."]),
            ),
            (
                "before kubernetes",
                " k8s_external Example.ORG other.org\n kubernetes cluster.local",
                |s| external(s).is_some_and(|e| names(&e.zones) == ["example.org.", "other.org."]),
            ),
            (
                "apex",
                " kubernetes cluster.local\n k8s_external example.org {\n  apex testdns\n }",
                |s| external(s).is_some_and(|e| e.apex == "testdns"),
            ),
            (
                "headless",
                " kubernetes cluster.local\n k8s_external example.org {\n  headless\n }",
                |s| external(s).is_some_and(|e| e.headless),
            ),
            (
                "fallthrough",
                " kubernetes cluster.local\n k8s_external example.org {\n  fallthrough\n }",
                |s| external(s).is_some_and(|e| e.fallthrough == Some(vec![])),
            ),
            (
                "fallthrough zones",
                " kubernetes cluster.local\n k8s_external example.org {\n  fallthrough ip6.arpa in-addr.arpa foo.com\n }",
                |s| {
                    external(s).is_some_and(|e| {
                        e.fallthrough.as_deref().map(names)
                            == Some(vec![
                                "ip6.arpa.".to_owned(),
                                "in-addr.arpa.".to_owned(),
                                "foo.com.".to_owned(),
                            ])
                    })
                },
            ),
            (
                "ttl bounds",
                " kubernetes cluster.local\n k8s_external example.org {\n  ttl 0\n  ttl 3600\n }",
                |s| external(s).is_some_and(|e| e.ttl == 3600),
            ),
            ("absent", " kubernetes cluster.local", |s| {
                external(s).is_none()
            }),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "no kubernetes",
                input: " k8s_external example.org",
                line: 2,
                kind: "Invalid",
                message: "plugin/k8s_external: kubernetes plugin not loaded",
            },
            Invalid {
                name: "ttl missing",
                input: " kubernetes cluster.local\n k8s_external {\n  ttl\n }",
                line: 4,
                kind: "Invalid",
                message: "k8s_external: ttl: Wrong argument count or unexpected line ending after 'ttl'",
            },
            Invalid {
                name: "ttl word",
                input: " kubernetes cluster.local\n k8s_external {\n  ttl five\n }",
                line: 4,
                kind: "Invalid",
                message: "k8s_external: ttl: strconv.Atoi: parsing \"five\": invalid syntax",
            },
            Invalid {
                name: "ttl negative",
                input: " kubernetes cluster.local\n k8s_external {\n  ttl -1\n }",
                line: 4,
                kind: "Invalid",
                message: "k8s_external: ttl: ttl must be in range [0, 3600]: -1",
            },
            Invalid {
                name: "ttl large",
                input: " kubernetes cluster.local\n k8s_external {\n  ttl 3601\n }",
                line: 4,
                kind: "Invalid",
                message: "ttl must be in range [0, 3600]: 3601",
            },
            Invalid {
                name: "ttl two",
                input: " kubernetes cluster.local\n k8s_external {\n  ttl 5 6\n }",
                line: 4,
                kind: "Invalid",
                message: "ttl: expected exactly 1 argument, got 2",
            },
            Invalid {
                name: "apex missing",
                input: " kubernetes cluster.local\n k8s_external {\n  apex\n }",
                line: 4,
                kind: "Invalid",
                message: "k8s_external: apex: Wrong argument count or unexpected line ending after 'apex'",
            },
            Invalid {
                name: "apex two labels",
                input: " kubernetes cluster.local\n k8s_external {\n  apex a.b\n }",
                line: 4,
                kind: "Invalid",
                message: "k8s_external: apex: 'a.b' is not a DNS label",
            },
            Invalid {
                name: "headless argument",
                input: " kubernetes cluster.local\n k8s_external {\n  headless yes\n }",
                line: 4,
                kind: "Invalid",
                message: "headless: expected exactly 0 arguments, got 1",
            },
            Invalid {
                name: "unknown",
                input: " kubernetes cluster.local\n k8s_external {\n  fallthru\n }",
                line: 4,
                kind: "UnknownProperty",
                message: "unknown property 'fallthru' in k8s_external",
            },
            Invalid {
                name: "bad zone",
                input: " kubernetes cluster.local\n k8s_external ex%ample",
                line: 3,
                kind: "Invalid",
                message: "k8s_external: zone 'ex%ample' has an invalid character",
            },
            Invalid {
                name: "twice",
                input: " kubernetes cluster.local\n k8s_external a.org\n k8s_external b.org",
                line: 4,
                kind: "Invalid",
                message: "k8s_external: may be used only once per server block (first at line 3",
            },
        ];
        check_invalid(cases);
    }
}
