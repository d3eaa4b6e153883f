//! `chaos [VERSION] [AUTHORS...]`
//!
//! As CoreDNS's *chaos*: TXT queries in class CH for `version.bind` and `version.server`
//! answer VERSION (default `clusterdns-<version>`, where CoreDNS says `CoreDNS-<version>`),
//! `authors.bind` the AUTHORS (one TXT record each, in a random order; duplicates dropped,
//! sorted), `hostname.bind` and `id.server` the host name. A single argument is the version
//! alone (the authors stay the default). Strings are cut to 255 bytes, the most a TXT string
//! holds. No options. Once per server block.

use super::{Context, unknown_property};
use crate::config::error::Error;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "chaos";

/// The *chaos* directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChaosConfig {
    /// What `version.bind` and `version.server` answer.
    pub version: String,
    /// What `authors.bind` answers, one TXT record each.
    pub authors: Vec<String>,
}

/// The version answered by default.
pub(crate) fn default_version() -> String {
    format!("clusterdns-{}", env!("CARGO_PKG_VERSION"))
}

/// The authors answered by default.
pub(crate) fn default_authors() -> Vec<String> {
    vec!["clusterdns".to_owned()]
}

/// At most 255 bytes (on a character boundary).
fn trim(text: &str) -> String {
    if text.len() < 256 {
        return text.to_owned();
    }
    let mut end = 255;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Parses the `chaos` line.
pub(crate) fn parse(line: &Line, _context: &Context<'_>) -> Result<ChaosConfig, Error> {
    let (version, authors) = match line.args.as_slice() {
        [] => (default_version(), default_authors()),
        [version] => (trim(&version.text), default_authors()),
        [version, authors @ ..] => {
            let mut list: Vec<String> = authors.iter().map(|a| trim(&a.text)).collect();
            list.sort();
            list.dedup();
            (trim(&version.text), list)
        }
    };
    if let Some(option) = line.options().first() {
        return Err(unknown_property(DIRECTIVE, option));
    }
    Ok(ChaosConfig { version, authors })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("defaults", " chaos", |s| {
                s.plugins.chaos.as_ref().is_some_and(|c| {
                    c.version == default_version() && c.authors == default_authors()
                })
            }),
            ("version", " chaos CoreDNS-001", |s| {
                s.plugins
                    .chaos
                    .as_ref()
                    .is_some_and(|c| c.version == "CoreDNS-001" && c.authors == default_authors())
            }),
            (
                "authors",
                " chaos CoreDNS-001 info@coredns.io bob alice bob",
                |s| {
                    s.plugins.chaos.as_ref().is_some_and(|c| {
                        c.version == "CoreDNS-001"
                            && c.authors == ["alice", "bob", "info@coredns.io"]
                    })
                },
            ),
            ("quoted", " chaos \"my server\"", |s| {
                s.plugins
                    .chaos
                    .as_ref()
                    .is_some_and(|c| c.version == "my server")
            }),
        ];
        check_valid(cases);
        let long = format!(" chaos {}", "v".repeat(300));
        let server = crate::config::test_support::block(&long).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(server.plugins.chaos.map(|c| c.version.len()), Some(255));
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "option",
                input: " chaos {\n  version 1\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'version' in chaos",
            },
            Invalid {
                name: "twice",
                input: " chaos\n chaos",
                line: 3,
                kind: "Invalid",
                message: "chaos: may be used only once per server block (first at line 2;",
            },
        ];
        check_invalid(cases);
    }
}
