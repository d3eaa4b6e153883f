//! resolv.conf(5), as the stub resolvers read it: `nameserver`, `search`, `domain` and
//! `options`.
//!
//! [`parse_resolv_conf`] is pure (text in, [`ResolvConf`] out); [`read_resolv_conf`] does the
//! I/O. *forward* takes its upstreams from here (`forward . /etc/resolv.conf`), and the
//! search-path simulator its `search` and `ndots`.
//!
//! The rules are glibc's, with the differences listed here:
//!
//! - A line whose first non-blank character is `#` or `;` is a comment. So is the rest of a
//!   `search`, `domain` or `options` line from a word starting with `#` or `;` (glibc would take
//!   such a word as a domain or an option; nobody means that).
//! - Keywords are case-sensitive and must be the first word; unknown keywords (`sortlist`,
//!   BSD's `lookup` and `family`, ...) are ignored, as by glibc and musl.
//! - `nameserver ADDRESS`: one IPv4 or IPv6 address; anything after it on the line is ignored.
//!   A `nameserver` line without an address, or whose address is not an IP address, is an
//!   error naming its line (glibc and musl skip it silently, which hides the typo). A scope
//!   (`fe80::1%eth0`) is dropped with a [`Warning`]. Every `nameserver` is kept, in order:
//!   glibc only uses the first [`GLIBC_MAXNS`] (musl too), *forward* uses them all, as CoreDNS.
//! - `search DOMAIN...` and `domain DOMAIN` both set the search list; the last such line wins
//!   (glibc and musl). A `search` or `domain` line without a domain is ignored. Domains are
//!   kept as written.
//! - `options`: `ndots:N` (capped at [`MAX_NDOTS`], as both libcs do), `timeout:N` and
//!   `attempts:N` (kept as written: glibc caps them at 30 and 5, musl at 60 and 10); a value
//!   that does not start with a digit is ignored with a [`Warning`] (musl ignores it; glibc
//!   reads it as 0). Every other option (`rotate`, `edns0`, `use-vc`, `single-request`, ...) is
//!   kept by name in [`ResolvConf::options`]. Later values win; several `options` lines add up.
//! - The `LOCALDOMAIN` and `RES_OPTIONS` environment variables are not applied here.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use super::env::Environment;

/// How many name servers glibc (and musl) use: later `nameserver` lines are ignored by them.
pub const GLIBC_MAXNS: usize = 3;

/// The largest `ndots` glibc and musl accept; larger values are lowered to it.
pub const MAX_NDOTS: u32 = 15;

/// A parsed resolv.conf.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvConf {
    /// The `nameserver` addresses, in file order (all of them; see [`GLIBC_MAXNS`]).
    pub nameservers: Vec<IpAddr>,
    /// The search list, from the last `search` or `domain` line (empty when there is none).
    pub search: Vec<String>,
    /// `options ndots:N`, capped at [`MAX_NDOTS`] (the libcs' default when absent is 1).
    pub ndots: Option<u32>,
    /// `options timeout:N`, in seconds, as written.
    pub timeout: Option<u32>,
    /// `options attempts:N`, as written.
    pub attempts: Option<u32>,
    /// Every other option, by name, in the order first seen (`rotate`, `edns0`, ...).
    pub options: Vec<String>,
    /// Lines that were understood only in part.
    pub warnings: Vec<Warning>,
}

impl ResolvConf {
    /// Whether the option `name` (such as `rotate` or `use-vc`) is set.
    pub fn has_option(&self, name: &str) -> bool {
        self.options.iter().any(|option| option == name)
    }
}

/// Something in a resolv.conf that was ignored or only partly used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The line (1-based).
    pub line: usize,
    /// What was ignored, and why.
    pub message: String,
}

/// A line of a resolv.conf that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ResolvConfError {
    /// The line (1-based).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Why [`read_resolv_conf`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadResolvConfError {
    /// The file could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The file was read and has a bad line.
    #[error("{}:{}: {}", path.display(), error.line, error.message)]
    Parse {
        /// The file.
        path: PathBuf,
        /// The bad line.
        error: ResolvConfError,
    },
}

impl ReadResolvConfError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::Read { path, .. } | Self::Parse { path, .. } => path,
        }
    }
}

/// Reads and parses the resolv.conf at `path`.
pub fn read_resolv_conf(path: &Path) -> Result<ResolvConf, ReadResolvConfError> {
    read_resolv_conf_in(&Environment::system(), path)
}

/// [`read_resolv_conf`], with the files of `env` shadowing the disk's.
pub(crate) fn read_resolv_conf_in(
    env: &Environment,
    path: &Path,
) -> Result<ResolvConf, ReadResolvConfError> {
    let text = env
        .read_small_file(path)
        .map_err(|error| ReadResolvConfError::Read {
            path: path.to_owned(),
            error,
        })?;
    parse_resolv_conf(&text).map_err(|error| ReadResolvConfError::Parse {
        path: path.to_owned(),
        error,
    })
}

/// Parses resolv.conf `text` (see the module documentation for the rules).
pub fn parse_resolv_conf(text: &str) -> Result<ResolvConf, ResolvConfError> {
    let mut conf = ResolvConf::default();
    for (index, raw) in text.split('\n').enumerate() {
        let line = index + 1;
        let trimmed = raw.trim_start();
        if trimmed.starts_with(['#', ';']) {
            continue;
        }
        let mut words = trimmed.split_ascii_whitespace();
        let Some(keyword) = words.next() else {
            continue;
        };
        // The words before a comment.
        let args: Vec<&str> = words
            .take_while(|word| !word.starts_with(['#', ';']))
            .collect();
        match keyword {
            "nameserver" => {
                let Some(address) = trimmed.split_ascii_whitespace().nth(1) else {
                    return Err(ResolvConfError {
                        line,
                        message: "nameserver without an address".into(),
                    });
                };
                conf.nameservers
                    .push(parse_nameserver(address, line, &mut conf.warnings)?);
            }
            "search" if !args.is_empty() => {
                conf.search = args.iter().map(|domain| (*domain).to_owned()).collect();
            }
            "domain" => {
                if let Some(domain) = args.first() {
                    conf.search = vec![(*domain).to_owned()];
                }
            }
            "options" => {
                for option in args {
                    apply_option(&mut conf, option, line);
                }
            }
            _ => {}
        }
    }
    Ok(conf)
}

/// One `nameserver` address: an IP, with an IPv6 scope dropped (and warned about).
fn parse_nameserver(
    text: &str,
    line: usize,
    warnings: &mut Vec<Warning>,
) -> Result<IpAddr, ResolvConfError> {
    let bad = |why: &str| ResolvConfError {
        line,
        message: format!("nameserver '{text}' {why}"),
    };
    if let Ok(address) = text.parse::<IpAddr>() {
        return Ok(address);
    }
    if let Some((address, scope)) = text.split_once('%')
        && let Ok(IpAddr::V6(v6)) = address.parse::<IpAddr>()
    {
        if scope.is_empty() {
            return Err(bad("has an empty scope after '%'"));
        }
        warnings.push(Warning {
            line,
            message: format!(
                "the scope '%{scope}' of nameserver {v6} is ignored (a link-local address is \
                 unreachable without it)"
            ),
        });
        return Ok(IpAddr::V6(v6));
    }
    Err(bad(
        "is not an IP address (a resolv.conf names its servers by address)",
    ))
}

/// One word of an `options` line.
fn apply_option(conf: &mut ResolvConf, option: &str, line: usize) {
    let numeric = [("ndots:", 0usize), ("timeout:", 1), ("attempts:", 2)];
    for (prefix, which) in numeric {
        let Some(value) = option.strip_prefix(prefix) else {
            continue;
        };
        let digits: &str = &value[..value.bytes().take_while(u8::is_ascii_digit).count()];
        if digits.is_empty() {
            conf.warnings.push(Warning {
                line,
                message: format!(
                    "option '{option}' has no number and is ignored (musl ignores it; glibc \
                     reads it as 0)"
                ),
            });
            return;
        }
        // Leading digits, as atoi and strtoul read them; absurdly long numbers saturate.
        let number = digits.parse::<u32>().unwrap_or(u32::MAX);
        match which {
            0 => conf.ndots = Some(number.min(MAX_NDOTS)),
            1 => conf.timeout = Some(number),
            _ => conf.attempts = Some(number),
        }
        return;
    }
    if !conf.options.iter().any(|known| known == option) {
        conf.options.push(option.to_owned());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ips(texts: &[&str]) -> Vec<IpAddr> {
        texts.iter().map(|text| text.parse().unwrap()).collect()
    }

    #[test]
    fn valid() {
        type Check = fn(&ResolvConf) -> bool;
        let cases: &[(&str, &str, Check)] = &[
            ("empty", "", |c| *c == ResolvConf::default()),
            ("blank lines", "\n\n   \n\t\n", |c| {
                *c == ResolvConf::default()
            }),
            ("one nameserver", "nameserver 10.96.0.10\n", |c| {
                c.nameservers == ips(&["10.96.0.10"])
            }),
            ("no final newline", "nameserver 1.1.1.1", |c| {
                c.nameservers == ips(&["1.1.1.1"])
            }),
            ("crlf", "nameserver 1.1.1.1\r\nsearch a b\r\n", |c| {
                c.nameservers == ips(&["1.1.1.1"]) && c.search == ["a", "b"]
            }),
            (
                "all nameservers in order",
                "nameserver 10.0.0.1\nnameserver fd00::53\nnameserver 10.0.0.3\nnameserver 10.0.0.4\n",
                |c| c.nameservers == ips(&["10.0.0.1", "fd00::53", "10.0.0.3", "10.0.0.4"]),
            ),
            (
                "duplicates kept",
                "nameserver 1.1.1.1\nnameserver 1.1.1.1",
                |c| c.nameservers.len() == 2,
            ),
            (
                "trailing words ignored",
                "nameserver 1.1.1.1 extra # comment",
                |c| c.nameservers == ips(&["1.1.1.1"]),
            ),
            ("tabs", "nameserver\t1.1.1.1\t", |c| {
                c.nameservers == ips(&["1.1.1.1"])
            }),
            ("leading blanks", "   nameserver 1.1.1.1", |c| {
                c.nameservers == ips(&["1.1.1.1"])
            }),
            ("hash comment", "# nameserver 1.1.1.1\n", |c| {
                c.nameservers.is_empty()
            }),
            ("semicolon comment", "; nameserver 1.1.1.1\n", |c| {
                c.nameservers.is_empty()
            }),
            ("indented comment", "   # nameserver x\n", |c| {
                c.nameservers.is_empty()
            }),
            ("scope dropped", "nameserver fe80::1%eth0", |c| {
                c.nameservers == ips(&["fe80::1"])
                    && c.warnings.len() == 1
                    && c.warnings[0].line == 1
                    && c.warnings[0].message.contains("'%eth0'")
            }),
            (
                "kubelet ClusterFirst",
                "search shop.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n",
                |c| {
                    c.search
                        == [
                            "shop.svc.cluster.local",
                            "svc.cluster.local",
                            "cluster.local",
                        ]
                        && c.nameservers == ips(&["10.96.0.10"])
                        && c.ndots == Some(5)
                },
            ),
            ("search comment", "search a b # c d\n", |c| {
                c.search == ["a", "b"]
            }),
            ("search semicolon", "search a ;b\n", |c| c.search == ["a"]),
            ("last search wins", "search a b\nsearch c\n", |c| {
                c.search == ["c"]
            }),
            ("domain after search", "search a b\ndomain d\n", |c| {
                c.search == ["d"]
            }),
            ("search after domain", "domain d\nsearch a b\n", |c| {
                c.search == ["a", "b"]
            }),
            ("domain extra words", "domain d e\n", |c| c.search == ["d"]),
            (
                "empty search ignored",
                "search a\nsearch\nsearch   \n",
                |c| c.search == ["a"],
            ),
            ("empty domain ignored", "search a\ndomain\n", |c| {
                c.search == ["a"]
            }),
            ("search only comment", "search a\nsearch # x\n", |c| {
                c.search == ["a"]
            }),
            ("trailing dot kept", "search example.org.\n", |c| {
                c.search == ["example.org."]
            }),
            ("ndots", "options ndots:2", |c| c.ndots == Some(2)),
            ("ndots zero", "options ndots:0", |c| c.ndots == Some(0)),
            ("ndots cap", "options ndots:20", |c| c.ndots == Some(15)),
            ("ndots huge", "options ndots:99999999999999999999", |c| {
                c.ndots == Some(15)
            }),
            ("ndots leading digits", "options ndots:3x", |c| {
                c.ndots == Some(3)
            }),
            ("ndots last wins", "options ndots:2\noptions ndots:4", |c| {
                c.ndots == Some(4)
            }),
            ("ndots not a number", "options ndots:x ndots:", |c| {
                c.ndots.is_none() && c.warnings.len() == 2 && c.warnings[0].line == 1
            }),
            (
                "timeout and attempts",
                "options timeout:40 attempts:7",
                |c| c.timeout == Some(40) && c.attempts == Some(7),
            ),
            (
                "flags",
                "options rotate edns0\noptions use-vc rotate single-request-reopen",
                |c| {
                    c.options == ["rotate", "edns0", "use-vc", "single-request-reopen"]
                        && c.has_option("use-vc")
                        && !c.has_option("inet6")
                },
            ),
            ("options comment", "options rotate # ndots:9", |c| {
                c.options == ["rotate"] && c.ndots.is_none()
            }),
            (
                "unknown keywords",
                "sortlist 10.0.0.0\nlookup file bind\nfamily inet4",
                |c| *c == ResolvConf::default(),
            ),
            ("keyword case", "Nameserver 1.1.1.1\nSEARCH a", |c| {
                *c == ResolvConf::default()
            }),
            ("keyword prefix", "nameservers 1.1.1.1\nsearches a", |c| {
                *c == ResolvConf::default()
            }),
            ("non-ascii comment", "# résumé\nnameserver 1.1.1.1", |c| {
                c.nameservers.len() == 1
            }),
        ];
        for (name, text, check) in cases {
            let conf = parse_resolv_conf(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(check(&conf), "{name}: {conf:?}");
        }
    }

    #[test]
    fn invalid() {
        let cases = [
            (
                "no address",
                "nameserver\n",
                1,
                "line 1: nameserver without an address",
            ),
            (
                "only blanks",
                "# x\nnameserver   \t\n",
                2,
                "nameserver without an address",
            ),
            (
                "host name",
                "nameserver 1.1.1.1\nnameserver dns.google\n",
                2,
                "line 2: nameserver 'dns.google' is not an IP address",
            ),
            (
                "with port",
                "nameserver 1.1.1.1:53",
                1,
                "'1.1.1.1:53' is not an IP address",
            ),
            (
                "inline comment glued",
                "nameserver 1.1.1.1#c",
                1,
                "'1.1.1.1#c'",
            ),
            ("short form", "nameserver 127.1", 1, "'127.1'"),
            ("bad v6", "nameserver fd00:::1", 1, "'fd00:::1'"),
            (
                "v4 scope",
                "nameserver 10.0.0.1%eth0",
                1,
                "not an IP address",
            ),
            ("empty scope", "nameserver fe80::1%", 1, "empty scope"),
            (
                "comment word",
                "nameserver # nothing",
                1,
                "'#' is not an IP address",
            ),
        ];
        for (name, text, line, want) in cases {
            let error = parse_resolv_conf(text).unwrap_err();
            assert_eq!(error.line, line, "{name}: {error}");
            assert!(error.to_string().contains(want), "{name}: {error}");
        }
    }

    #[test]
    fn never_panics() {
        let pieces = [
            "nameserver",
            "search",
            "domain",
            "options",
            "ndots:",
            "9",
            "%",
            "#",
            ";",
            " ",
            "\t",
            "\n",
            "\r",
            "fe80::1",
            "1.2.3.4",
            "é",
            "\u{0}",
            ":",
            "timeout:",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut text = String::new();
            for _ in 0..(state % 30) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push_str(pieces[(state % pieces.len() as u64) as usize]);
            }
            let _ = parse_resolv_conf(&text);
        }
    }

    #[test]
    fn read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("resolv.conf");
        std::fs::write(&path, b"# caf\xe9\nnameserver 192.0.2.1\nsearch a\n").unwrap();
        let conf = read_resolv_conf(&path).unwrap();
        assert_eq!(conf.nameservers, ips(&["192.0.2.1"]));
        assert_eq!(conf.search, ["a"]);

        std::fs::write(&path, "nameserver 192.0.2.1\nnameserver x\n").unwrap();
        let error = read_resolv_conf(&path).unwrap_err();
        assert_eq!(error.path(), path);
        assert_eq!(
            error.to_string(),
            format!(
                "{}:2: nameserver 'x' is not an IP address (a resolv.conf names its servers by address)",
                path.display()
            )
        );

        let missing = dir.path().join("missing");
        let error = read_resolv_conf(&missing).unwrap_err();
        assert!(matches!(error, ReadResolvConfError::Read { .. }));
        assert!(
            error
                .to_string()
                .starts_with(&format!("cannot read {}:", missing.display()))
        );

        let error = read_resolv_conf(dir.path()).unwrap_err();
        assert!(error.to_string().contains("is a directory"), "{error}");

        let error = read_resolv_conf(Path::new("/dev/null")).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }
}
