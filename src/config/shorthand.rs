//! `clusterdns serve --objects FILE... [--listen ADDR]`: kubeadm's default Corefile, restricted
//! to what is implemented, with the `objects` store. The shorthand *is* a Corefile: it is
//! written out as text and parsed like any other.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use super::env::Environment;
use super::error::Error;
use super::lexer;
use super::{Config, parse_corefile_in};

/// The line of `objects` in [`shorthand_corefile`].
const OBJECTS_LINE: usize = 7;

/// The name the shorthand Corefile has in error messages. It has no directory, so relative
/// `objects` paths stay relative to the working directory, as given on the command line.
pub const SHORTHAND_FILE: &str = "(--objects shorthand)";

/// The Corefile that `--objects` stands for: kubeadm's (see `coredns-behaviour.md` §2a) with
/// the directives clusterdns implements so far, listening on `listen`.
///
/// ```text
/// .:PORT {
///     bind IP
///     kubernetes cluster.local in-addr.arpa ip6.arpa {
///         pods insecure
///         fallthrough in-addr.arpa ip6.arpa
///         ttl 30
///         objects "FILE" ...
///     }
/// }
/// ```
pub fn shorthand_corefile(objects: &[PathBuf], listen: SocketAddr) -> String {
    let files: Vec<String> = objects.iter().map(|path| quote(path)).collect();
    format!(
        ".:{port} {{\n    bind {ip}\n    kubernetes cluster.local in-addr.arpa ip6.arpa {{\n        \
         pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n        \
         objects {files}\n    }}\n}}\n",
        port = listen.port(),
        ip = listen.ip(),
        files = files.join(" "),
    )
}

/// Parses [`shorthand_corefile`] (with no environment variables and no interfaces), and
/// checks that every path survived the trip through Corefile quoting.
pub fn shorthand(objects: &[PathBuf], listen: SocketAddr) -> Result<Config, Error> {
    let file = Path::new(SHORTHAND_FILE);
    let isolated = Environment::isolated();
    for path in objects {
        let shared: Arc<Path> = Arc::from(file);
        let token = lexer::lex(&quote(path), &shared, &isolated).ok();
        let exact = match token.as_deref() {
            Some([token]) => Some(Path::new(&token.text)) == Some(path.as_path()),
            _ => false,
        };
        if !exact {
            return Err(Error::Invalid {
                directive: "kubernetes".into(),
                message: format!(
                    "objects: the file name '{}' cannot be written in a Corefile (it is not \
                     UTF-8, holds a carriage return, or holds a backtick together with a \
                     backslash before a quote or an environment reference)",
                    path.display()
                ),
                file: file.to_owned(),
                line: OBJECTS_LINE,
            });
        }
    }
    parse_corefile_in(&shorthand_corefile(objects, listen), file, &isolated)
}

/// A path as a Corefile token: double-quoted when that is exact, else backtick-quoted (raw),
/// else double-quoted with `\"` escapes.
fn quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    let substitutes = text.contains("{$") || text.contains("{%");
    if !text.contains(['"', '\\']) && !substitutes {
        format!("\"{text}\"")
    } else if !text.contains('`') {
        format!("`{text}`")
    } else {
        format!("\"{}\"", text.replace('"', "\\\""))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::PodMode;

    fn listen() -> SocketAddr {
        "127.0.0.1:1053".parse().unwrap()
    }

    #[test]
    fn text() {
        let text = shorthand_corefile(
            &[PathBuf::from("dump.json"), PathBuf::from("a b.json")],
            listen(),
        );
        assert_eq!(
            text,
            ".:1053 {\n    bind 127.0.0.1\n    kubernetes cluster.local in-addr.arpa ip6.arpa {\n        \
             pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n        \
             objects \"dump.json\" \"a b.json\"\n    }\n}\n"
        );
    }

    #[test]
    fn config() {
        let config = shorthand(&[PathBuf::from("dump.json")], "[::1]:0".parse().unwrap()).unwrap();
        let [server] = config.servers.as_slice() else {
            panic!("one server")
        };
        assert_eq!(server.port, 0);
        assert_eq!(
            server.bind,
            vec!["::1".parse::<std::net::IpAddr>().unwrap()]
        );
        assert_eq!(server.zones, vec![hickory_proto::rr::Name::root()]);
        let kubernetes = server.kubernetes.as_ref().unwrap();
        let zones: Vec<String> = kubernetes.zones.iter().map(ToString::to_string).collect();
        assert_eq!(zones, ["cluster.local.", "in-addr.arpa.", "ip6.arpa."]);
        assert_eq!(kubernetes.primary_zone, 0);
        assert_eq!(kubernetes.pods, PodMode::Insecure);
        assert_eq!(kubernetes.ttl, 30);
        let fallthrough: Vec<String> = kubernetes
            .fallthrough
            .as_ref()
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(fallthrough, ["in-addr.arpa.", "ip6.arpa."]);
        assert_eq!(kubernetes.objects, [PathBuf::from("dump.json")]);
    }

    #[test]
    fn awkward_paths_round_trip() {
        let cases = [
            ("space", "my dump.json"),
            ("absolute", "/tmp/x/dump.json"),
            ("quote", "a\"b.json"),
            ("backslash", "a\\b.json"),
            ("backslash quote", "a\\\"b"),
            ("env lookalike", "{$HOME}/dump.json"),
            ("windows env lookalike", "{%HOME%}.json"),
            ("hash", "#dump.json"),
            ("braces", "{"),
            ("newline", "a\nb.json"),
            ("backtick", "a`b.json"),
            ("backtick and quote", "a`b\"c"),
            ("import", "import"),
        ];
        for (name, path) in cases {
            let objects = [PathBuf::from(path), PathBuf::from("second.json")];
            let config = shorthand(&objects, listen()).unwrap_or_else(|e| panic!("{name}: {e}"));
            let kubernetes = config.servers[0].kubernetes.as_ref().unwrap();
            assert_eq!(kubernetes.objects, objects, "{name}");
        }
    }

    #[test]
    fn unrepresentable_and_empty() {
        for path in ["a`{$HOME}", "a`b\\\"c", "a\rb"] {
            let error = shorthand(&[PathBuf::from(path)], listen()).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("cannot be written in a Corefile"),
                "{error}"
            );
        }
        let error = shorthand(&[], listen()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("objects: expected at least 1 argument"),
            "{error}"
        );
    }
}
