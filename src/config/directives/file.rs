//! `file DBFILE [ZONES...] { reload DURATION; reload_by_mtime; fallthrough [ZONES...] }`
//!
//! As CoreDNS's *file* (v1.14): DBFILE is an RFC 1035 zone file, read once for each of the
//! ZONES (the server block's when none are given) with that zone as its origin. A relative
//! DBFILE is relative to the Corefile's directory, as `hosts`'s is (CoreDNS takes it from
//! *root*, or its working directory). `reload` (default 1 minute, `0` turns it off) is how
//! often the file is read again; it is reloaded when its SOA serial changed, or with
//! `reload_by_mtime` when its modification time moved on. `fallthrough` hands the names of
//! its zones that have no records on to the next plugin. CoreDNS's old `upstream` option is
//! accepted and ignored, as CoreDNS does. The file itself is read when the server loads
//! ([`crate::server`]), not here. A block may have several `file` directives (each is a
//! plugin of its own in CoreDNS: a name goes to the first whose zones hold it).

use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::rr::Name;

use super::{Context, arguments, invalid, no_block, zones};
use crate::config::error::Error;
use crate::config::syntax::Line;

const DIRECTIVE: &str = "file";

/// CoreDNS's default `reload`.
pub(crate) const DEFAULT_RELOAD: Duration = Duration::from_secs(60);

/// The *file* directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileConfig {
    /// The zone file (a relative path already made relative to the Corefile).
    pub path: PathBuf,
    /// The zones (origins) it is read for: the server block's when none are given.
    pub zones: Vec<Name>,
    /// `reload`: how often the file is checked (default 1 minute; 0: never).
    pub reload: Duration,
    /// `reload_by_mtime`: reload when the modification time moves on, not the SOA serial.
    pub reload_by_mtime: bool,
    /// `fallthrough [ZONES...]`: `None` when absent; an empty list means every zone.
    pub fallthrough: Option<Vec<Name>>,
    /// Line of the directive.
    pub line: usize,
}

/// Parses the `file` line.
pub(crate) fn parse(line: &Line, context: &Context<'_>) -> Result<FileConfig, Error> {
    let Some((file, zone_args)) = line.args.split_first() else {
        return Err(invalid(
            &line.name,
            DIRECTIVE,
            "expected a zone file (file DBFILE [ZONES...])",
        ));
    };
    if file.text.is_empty() {
        return Err(invalid(file, DIRECTIVE, "empty file name"));
    }
    let base = file.file.parent().unwrap_or(Path::new(""));
    let mut config = FileConfig {
        path: base.join(&file.text),
        zones: zones(DIRECTIVE, line, zone_args, context.block_zones)?,
        reload: DEFAULT_RELOAD,
        reload_by_mtime: false,
        fallthrough: None,
        line: line.name.line,
    };
    for option in line.options() {
        no_block(DIRECTIVE, option)?;
        match option.name() {
            "fallthrough" => {
                config.fallthrough = Some(zones(DIRECTIVE, option, &option.args, &[])?);
            }
            "reload" => {
                let Some(arg) = option.args.first() else {
                    return Err(invalid(
                        &option.name,
                        DIRECTIVE,
                        "reload duration value is expected",
                    ));
                };
                arguments(DIRECTIVE, option, 1, Some(1))?;
                config.reload = super::duration(DIRECTIVE, option, arg)?;
            }
            "reload_by_mtime" => {
                arguments(DIRECTIVE, option, 0, Some(0))?;
                config.reload_by_mtime = true;
            }
            // CoreDNS's "remove soon": accepted, its arguments ignored.
            "upstream" => {}
            _ => return Err(super::unknown_property(DIRECTIVE, option)),
        }
    }
    Ok(config)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid, names};

    #[test]
    fn valid() {
        let cases: &[Valid<'_>] = &[
            ("defaults", " file db.example.org", |s| {
                s.plugins.file.first().is_some_and(|f| {
                    f.path == Path::new("db.example.org")
                        && names(&f.zones) == ["."]
                        && f.reload == Duration::from_secs(60)
                        && !f.reload_by_mtime
                        && f.fallthrough.is_none()
                        && f.line == 2
                })
            }),
            (
                "zones and options",
                " file /zones/db example.org example.net {\n  reload 30s\n  reload_by_mtime\n  \
                 fallthrough in-addr.arpa\n  upstream 8.8.8.8\n }",
                |s| {
                    s.plugins.file.first().is_some_and(|f| {
                        f.path == Path::new("/zones/db")
                            && names(&f.zones) == ["example.org.", "example.net."]
                            && f.reload == Duration::from_secs(30)
                            && f.reload_by_mtime
                            && f.fallthrough
                                == Some(vec![Name::from_ascii("in-addr.arpa.").unwrap()])
                    })
                },
            ),
            ("reload 0", " file db {\n  reload 0\n }", |s| {
                s.plugins.file.first().is_some_and(|f| f.reload.is_zero())
            }),
            (
                "fallthrough everywhere",
                " file db {\n  fallthrough\n }",
                |s| {
                    s.plugins
                        .file
                        .first()
                        .is_some_and(|f| f.fallthrough == Some(vec![]))
                },
            ),
            ("twice", " file db.a a.org\n file db.b b.org", |s| {
                s.plugins.file.len() == 2 && s.plugins.file[1].path == Path::new("db.b")
            }),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "no file",
                input: " file",
                line: 2,
                kind: "Invalid",
                message: "file: expected a zone file (file DBFILE [ZONES...])",
            },
            Invalid {
                name: "reload without a value",
                input: " file db {\n  reload\n }",
                line: 3,
                kind: "Invalid",
                message: "file: reload duration value is expected",
            },
            Invalid {
                name: "bad reload",
                input: " file db {\n  reload soon\n }",
                line: 3,
                kind: "Invalid",
                message: "file: reload: invalid duration 'soon'",
            },
            Invalid {
                name: "reload twice",
                input: " file db {\n  reload 1s 2s\n }",
                line: 3,
                kind: "Invalid",
                message: "reload: expected exactly 1 argument, got 2",
            },
            Invalid {
                name: "unknown option",
                input: " file db {\n  transfer to *\n }",
                line: 3,
                kind: "UnknownProperty",
                message: "unknown property 'transfer' in file",
            },
            Invalid {
                name: "reload_by_mtime with an argument",
                input: " file db {\n  reload_by_mtime yes\n }",
                line: 3,
                kind: "Invalid",
                message: "reload_by_mtime: expected exactly 0 arguments, got 1",
            },
            Invalid {
                name: "bad zone",
                input: " file db exa..mple",
                line: 2,
                kind: "Invalid",
                message: "file: ",
            },
        ];
        check_invalid(cases);
    }
}
