//! `clusterdns serve --objects FILE... [--listen ADDR]`: kubeadm's Corefile with the `objects`
//! store. The shorthand *is* a Corefile: it is written out as text and parsed like any other.
//!
//! It is kubeadm's Corefile (`coredns-behaviour.md` § 2a) with three changes for a laptop:
//!
//! - it listens on one address (`bind IP`, port from `--listen`, default `127.0.0.1:1053`);
//! - `health`, `ready` and `prometheus` are there only when asked for
//!   ([`ShorthandOptions::health`], [`ShorthandOptions::ready`], [`ShorthandOptions::metrics`],
//!   the CLI's `--health`, `--ready` and `--metrics`), without `lameduck` (a laptop's Ctrl-C
//!   should not wait 5 s); `reload` is left out (the objects files are watched anyway, and the
//!   shorthand has no Corefile to re-read);
//! - **the resolv.conf rule**: `forward . /etc/resolv.conf { max_concurrent 1000 }` is there
//!   only when that file (or [`ShorthandOptions::resolv_conf`]) can be read and gives between
//!   1 and 15 usable `nameserver`s. Otherwise (a sandbox or container without one, an empty
//!   one) the shorthand still starts, without `forward`, and logs a warning saying why: names
//!   outside the cluster zone are then not forwarded anywhere. A file named with
//!   [`ShorthandOptions::resolv_conf_required`] (`--upstream FILE`) must be usable: it is
//!   an error at start, as `forward . FILE` in a Corefile is.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::blocks::Config;
use super::corefile::parse_corefile_in;
use super::directives::forward::MAX_UPSTREAMS;
use super::env::Environment;
use super::error::Error;
use super::lexer;
use super::resolv_conf::read_resolv_conf_in;

/// The name the shorthand Corefile has in error messages. It has no directory, so relative
/// `objects` paths stay relative to the working directory, as given on the command line.
pub const SHORTHAND_FILE: &str = "(--objects shorthand)";

/// The cluster zone of kubeadm's Corefile.
pub const DEFAULT_ZONE: &str = "cluster.local";

/// The resolv.conf the shorthand forwards to, as kubeadm's Corefile does.
pub const DEFAULT_RESOLV_CONF: &str = "/etc/resolv.conf";

/// What the shorthand Corefile is built from besides the objects files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShorthandOptions {
    /// The DNS listen address (`bind` and the block's port).
    pub listen: SocketAddr,
    /// `health ADDR`, when wanted.
    pub health: Option<SocketAddr>,
    /// `ready ADDR`, when wanted.
    pub ready: Option<SocketAddr>,
    /// `prometheus ADDR`, when wanted.
    pub metrics: Option<SocketAddr>,
    /// The resolv.conf `forward` takes its upstreams from ([`DEFAULT_RESOLV_CONF`] by
    /// default); `None` leaves `forward` out. [`shorthand_with`] also leaves it out when the
    /// file gives no usable upstream.
    pub resolv_conf: Option<PathBuf>,
    /// Whether `resolv_conf` was asked for (`--upstream FILE`): then a file that gives no
    /// usable upstream is an error, as in a Corefile, rather than a warning.
    pub resolv_conf_required: bool,
    /// The cluster zone *kubernetes* serves (and *cache* leaves alone): `cluster.local`
    /// unless a command was given another (`explain --zone`); [`shorthand_with`] refuses one
    /// that [`super::parse_cluster_zone`] does not take.
    pub zone: String,
    /// With no objects files, the API server the zone is watched from: a kubeconfig file
    /// and a context in it other than its current one (`kubeconfig FILE [CONTEXT]`); `None`
    /// watches the cluster of the pod's service account, as kubeadm's Corefile does.
    pub kubeconfig: Option<(PathBuf, Option<String>)>,
}

impl ShorthandOptions {
    /// Listening on `listen`, forwarding to `/etc/resolv.conf`, no HTTP endpoint.
    pub fn new(listen: SocketAddr) -> Self {
        Self {
            listen,
            health: None,
            ready: None,
            metrics: None,
            resolv_conf: Some(PathBuf::from(DEFAULT_RESOLV_CONF)),
            resolv_conf_required: false,
            zone: DEFAULT_ZONE.to_owned(),
            kubeconfig: None,
        }
    }
}

/// The Corefile that `--objects` stands for with default options, listening on `listen`:
///
/// ```text
/// .:PORT {
///     bind IP
///     errors
///     kubernetes cluster.local in-addr.arpa ip6.arpa {
///         pods insecure
///         fallthrough in-addr.arpa ip6.arpa
///         ttl 30
///         objects "FILE" ...
///     }
///     forward . /etc/resolv.conf {
///         max_concurrent 1000
///     }
///     cache 30 {
///         disable success cluster.local
///         disable denial cluster.local
///     }
///     loop
///     loadbalance
/// }
/// ```
///
/// This is the text whatever the machine's resolv.conf; [`shorthand`] applies the resolv.conf
/// rule (see the module documentation).
pub fn shorthand_corefile(objects: &[PathBuf], listen: SocketAddr) -> String {
    shorthand_corefile_with(objects, &ShorthandOptions::new(listen))
}

/// The shorthand Corefile for `options`, in kubeadm's directive order (`health` and `ready`
/// before `kubernetes`, `prometheus` after it). `forward` is written when
/// `options.resolv_conf` is set, whether or not the file is usable.
pub fn shorthand_corefile_with(objects: &[PathBuf], options: &ShorthandOptions) -> String {
    build(objects, options).0
}

/// The text and the lines of `objects` (or `kubeconfig`) and `forward` in it (0 when absent).
fn build(objects: &[PathBuf], options: &ShorthandOptions) -> (String, usize, usize) {
    let mut lines: Vec<String> = vec![
        format!(".:{} {{", options.listen.port()),
        format!("    bind {}", options.listen.ip()),
        "    errors".to_owned(),
    ];
    if let Some(health) = options.health {
        lines.push(format!("    health {health}"));
    }
    if let Some(ready) = options.ready {
        lines.push(format!("    ready {ready}"));
    }
    lines.extend([
        format!("    kubernetes {} in-addr.arpa ip6.arpa {{", options.zone),
        "        pods insecure".to_owned(),
        "        fallthrough in-addr.arpa ip6.arpa".to_owned(),
        "        ttl 30".to_owned(),
    ]);
    if !objects.is_empty() {
        let files: Vec<String> = objects.iter().map(|path| quote(path)).collect();
        lines.push(format!("        objects {}", files.join(" ")));
    } else if let Some((path, context)) = &options.kubeconfig {
        let context = context
            .as_deref()
            .map(|context| format!(" {}", quote(Path::new(context))))
            .unwrap_or_default();
        lines.push(format!("        kubeconfig {}{context}", quote(path)));
    }
    let objects_line = lines.len();
    lines.push("    }".to_owned());
    if let Some(metrics) = options.metrics {
        lines.push(format!("    prometheus {metrics}"));
    }
    let mut forward_line = 0;
    if let Some(resolv_conf) = &options.resolv_conf {
        lines.push(format!("    forward . {} {{", bare_or_quoted(resolv_conf)));
        forward_line = lines.len();
        lines.extend(["        max_concurrent 1000".to_owned(), "    }".to_owned()]);
    }
    lines.extend([
        "    cache 30 {".to_owned(),
        format!("        disable success {}", options.zone),
        format!("        disable denial {}", options.zone),
        "    }".to_owned(),
        "    loop".to_owned(),
        "    loadbalance".to_owned(),
        "}".to_owned(),
    ]);
    let mut text = lines.join("\n");
    text.push('\n');
    (text, objects_line, forward_line)
}

/// [`shorthand_with`] with default options, listening on `listen`.
pub fn shorthand(objects: &[PathBuf], listen: SocketAddr) -> Result<Config, Error> {
    shorthand_with(objects, &ShorthandOptions::new(listen))
}

/// Parses the shorthand Corefile for `options` (with no environment variables and no
/// interfaces), after applying the resolv.conf rule (see the module documentation), and
/// checks that every path survived the trip through Corefile quoting.
pub fn shorthand_with(objects: &[PathBuf], options: &ShorthandOptions) -> Result<Config, Error> {
    let file = Path::new(SHORTHAND_FILE);
    let isolated = Environment::isolated();
    let mut options = options.clone();
    if let Some(path) = &options.resolv_conf
        && !options.resolv_conf_required
        && let Err(reason) = usable_resolv_conf(&isolated, path)
    {
        tracing::warn!(
            resolv_conf = %path.display(),
            "the --objects shorthand runs without forward: {reason}; names outside the \
             cluster zone will not be forwarded"
        );
        options.resolv_conf = None;
    }
    options.zone = super::parse_cluster_zone(&options.zone).map_err(|message| Error::Invalid {
        directive: "kubernetes".into(),
        message: format!("the zone '{}': {message}", options.zone),
        file: file.to_owned(),
        line: 0,
    })?;
    let (text, objects_line, forward_line) = build(objects, &options);
    for path in objects {
        check_quoting(path, "kubernetes", "objects", objects_line, quote)?;
    }
    if let Some((path, context)) = options.kubeconfig.as_ref().filter(|_| objects.is_empty()) {
        check_quoting(path, "kubernetes", "kubeconfig", objects_line, quote)?;
        if let Some(context) = context {
            check_quoting(
                Path::new(context),
                "kubernetes",
                "the context",
                objects_line,
                quote,
            )?;
        }
    }
    if let Some(path) = &options.resolv_conf {
        check_quoting(
            path,
            "forward",
            "the resolv.conf",
            forward_line,
            bare_or_quoted,
        )?;
    }
    parse_corefile_in(&text, file, &isolated)
}

/// Why the resolv.conf at `path` cannot give *forward* its upstreams, if it cannot.
fn usable_resolv_conf(env: &Environment, path: &Path) -> Result<(), String> {
    let conf = read_resolv_conf_in(env, path).map_err(|error| error.to_string())?;
    let usable = conf
        .nameservers
        .iter()
        .filter(|ip| !matches!(ip, std::net::IpAddr::V6(v6) if v6.is_unicast_link_local()))
        .count();
    match usable {
        0 => Err(format!("{} has no usable nameserver line", path.display())),
        n if n > MAX_UPSTREAMS => Err(format!(
            "{} has {n} nameservers, more than forward's {MAX_UPSTREAMS}",
            path.display()
        )),
        _ => Ok(()),
    }
}

/// Refuses a path that `write` cannot write exactly.
fn check_quoting(
    path: &Path,
    directive: &str,
    what: &str,
    line: usize,
    write: fn(&Path) -> String,
) -> Result<(), Error> {
    let file = Path::new(SHORTHAND_FILE);
    let shared: Arc<Path> = Arc::from(file);
    let token = lexer::lex(&write(path), &shared, &Environment::isolated()).ok();
    let exact = match token.as_deref() {
        Some([token]) => Path::new(&token.text) == path,
        _ => false,
    };
    if exact {
        return Ok(());
    }
    Err(Error::Invalid {
        directive: directive.into(),
        message: format!(
            "{what}: the file name '{}' cannot be written in a Corefile (it is not UTF-8, holds \
             a carriage return, or holds a backtick together with a backslash before a quote \
             or an environment reference)",
            path.display()
        ),
        file: file.to_owned(),
        line,
    })
}

/// A path as a Corefile token, unquoted when it is only letters, digits and `/._-` (as
/// kubeadm writes `/etc/resolv.conf`), else as [`quote`] writes it.
fn bare_or_quoted(path: &Path) -> String {
    let text = path.to_string_lossy();
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-'));
    if plain {
        text.into_owned()
    } else {
        quote(path)
    }
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
    use std::time::Duration;

    use super::*;
    use crate::config::{CacheClass, PodMode};

    fn listen() -> SocketAddr {
        "127.0.0.1:1053".parse().unwrap()
    }

    /// Options forwarding to a resolv.conf with `text`, kept alive by the returned directory.
    fn with_resolv_conf(text: &str) -> (tempfile::TempDir, ShorthandOptions) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("resolv.conf");
        std::fs::write(&path, text).unwrap();
        let options = ShorthandOptions {
            resolv_conf: Some(path),
            ..ShorthandOptions::new(listen())
        };
        (dir, options)
    }

    const KUBEADM_TAIL: &str = "    forward . /etc/resolv.conf {\n        max_concurrent 1000\n    }\n    \
         cache 30 {\n        disable success cluster.local\n        disable denial cluster.local\n    }\n    \
         loop\n    loadbalance\n}\n";

    #[test]
    fn text() {
        let text = shorthand_corefile(
            &[PathBuf::from("dump.json"), PathBuf::from("a b.json")],
            listen(),
        );
        let want = format!(
            ".:1053 {{\n    bind 127.0.0.1\n    errors\n    kubernetes cluster.local in-addr.arpa ip6.arpa {{\n        \
             pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n        \
             objects \"dump.json\" \"a b.json\"\n    }}\n{KUBEADM_TAIL}"
        );
        assert_eq!(text, want);
    }

    #[test]
    fn text_with_endpoints() {
        let options = ShorthandOptions {
            health: Some("127.0.0.1:8080".parse().unwrap()),
            ready: Some("[::1]:8181".parse().unwrap()),
            metrics: Some("0.0.0.0:9153".parse().unwrap()),
            ..ShorthandOptions::new(listen())
        };
        let text = shorthand_corefile_with(&[PathBuf::from("d.json")], &options);
        let want = format!(
            ".:1053 {{\n    bind 127.0.0.1\n    errors\n    health 127.0.0.1:8080\n    ready [::1]:8181\n    \
             kubernetes cluster.local in-addr.arpa ip6.arpa {{\n        pods insecure\n        \
             fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n        objects \"d.json\"\n    }}\n    \
             prometheus 0.0.0.0:9153\n{KUBEADM_TAIL}"
        );
        assert_eq!(text, want);
        let no_forward = ShorthandOptions {
            resolv_conf: None,
            ..options
        };
        let text = shorthand_corefile_with(&[PathBuf::from("d.json")], &no_forward);
        assert!(
            !text.contains("forward") && text.contains("cache 30"),
            "{text}"
        );
    }

    #[test]
    fn config() {
        let (_dir, options) = with_resolv_conf("nameserver 192.0.2.1\nnameserver 192.0.2.2\n");
        let options = ShorthandOptions {
            listen: "[::1]:0".parse().unwrap(),
            ..options
        };
        let config = shorthand_with(&[PathBuf::from("dump.json")], &options).unwrap();
        let [server] = config.servers.as_slice() else {
            panic!("one server")
        };
        assert_eq!(server.port, 0);
        assert_eq!(
            server.plugins.bind,
            vec!["::1".parse::<std::net::IpAddr>().unwrap()]
        );
        assert_eq!(server.zones, vec![hickory_proto::rr::Name::root()]);
        let kubernetes = server.plugins.kubernetes.as_ref().unwrap();
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
        assert!(server.plugins.errors.is_some());
        let [forward] = server.plugins.forward.as_slice() else {
            panic!("one forward")
        };
        let upstreams: Vec<&str> = forward.to.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(upstreams, ["192.0.2.1:53", "192.0.2.2:53"]);
        assert_eq!(forward.to[0].from_file, options.resolv_conf);
        assert_eq!(forward.max_concurrent, Some(1000));
        let cache = server.plugins.cache.as_ref().unwrap();
        assert_eq!(
            cache.success,
            CacheClass {
                capacity: 9984,
                max_ttl: 30,
                min_ttl: 5
            }
        );
        assert_eq!(cache.disable_success, cache.disable_denial);
        assert!(server.plugins.loop_detect.is_some() && server.plugins.loadbalance.is_some());
        assert!(
            server.plugins.health.is_none()
                && server.plugins.ready.is_none()
                && server.plugins.prometheus.is_none()
        );
        assert!(server.plugins.reload.is_none() && server.plugins.log.is_empty());
    }

    #[test]
    fn endpoints() {
        let (_dir, options) = with_resolv_conf("nameserver 192.0.2.1\n");
        let options = ShorthandOptions {
            health: Some("127.0.0.1:0".parse().unwrap()),
            ready: Some("127.0.0.1:18181".parse().unwrap()),
            metrics: Some("[::1]:19153".parse().unwrap()),
            ..options
        };
        let config = shorthand_with(&[PathBuf::from("d.json")], &options).unwrap();
        let server = &config.servers[0];
        let health = server.plugins.health.as_ref().unwrap();
        assert_eq!(
            (health.addr, health.lameduck),
            (options.health.unwrap(), Duration::ZERO)
        );
        assert_eq!(server.plugins.ready.as_ref().map(|r| r.addr), options.ready);
        assert_eq!(
            server.plugins.prometheus.as_ref().map(|p| p.addr),
            options.metrics
        );

        // An endpoint on the DNS port is refused like in any Corefile.
        let clash = ShorthandOptions {
            metrics: Some(listen()),
            ..options
        };
        let error = shorthand_with(&[PathBuf::from("d.json")], &clash).unwrap_err();
        assert!(
            error.to_string().contains("collides with the DNS server"),
            "{error}"
        );
    }

    /// The resolv.conf rule: no usable file, no forward, and the shorthand still starts.
    #[test]
    fn resolv_conf_rule() {
        let dir = tempfile::tempdir().unwrap();
        let sixteen: String = (1..=16)
            .map(|i| format!("nameserver 192.0.2.{i}\n"))
            .collect();
        let cases: &[(&str, Option<&str>, usize)] = &[
            ("usable", Some("nameserver 192.0.2.1\n"), 1),
            ("missing", None, 0),
            ("empty", Some(""), 0),
            (
                "comments only",
                Some("# managed by nobody\nsearch lan\n"),
                0,
            ),
            (
                "malformed",
                Some("nameserver 192.0.2.1\nnameserver dns\n"),
                0,
            ),
            ("link-local only", Some("nameserver fe80::1%eth0\n"), 0),
            (
                "link-local and one",
                Some("nameserver fe80::1%eth0\nnameserver 192.0.2.1\n"),
                1,
            ),
            ("sixteen", Some(&sixteen), 0),
        ];
        for (index, (name, text, forwards)) in cases.iter().enumerate() {
            let path = dir.path().join(format!("resolv-{index}.conf"));
            if let Some(text) = text {
                std::fs::write(&path, text).unwrap();
            }
            let options = ShorthandOptions {
                resolv_conf: Some(path),
                ..ShorthandOptions::new(listen())
            };
            let config = shorthand_with(&[PathBuf::from("d.json")], &options)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(config.servers[0].plugins.forward.len(), *forwards, "{name}");
            assert!(config.servers[0].plugins.cache.is_some(), "{name}");
        }
        let none = ShorthandOptions {
            resolv_conf: None,
            ..ShorthandOptions::new(listen())
        };
        let config = shorthand_with(&[PathBuf::from("d.json")], &none).unwrap();
        assert!(config.servers[0].plugins.forward.is_empty());
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
            let kubernetes = config.servers[0].plugins.kubernetes.as_ref().unwrap();
            assert_eq!(kubernetes.objects, objects, "{name}");
        }
        // The resolv.conf path is quoted the same way.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("my resolv {$X}.conf");
        std::fs::write(&path, "nameserver 192.0.2.1\n").unwrap();
        let options = ShorthandOptions {
            resolv_conf: Some(path.clone()),
            ..ShorthandOptions::new(listen())
        };
        let config = shorthand_with(&[PathBuf::from("d.json")], &options).unwrap();
        assert_eq!(
            config.servers[0].plugins.forward[0].to[0].from_file,
            Some(path)
        );
    }

    #[test]
    fn unrepresentable_and_empty() {
        for path in ["a`{$HOME}", "a`b\\\"c", "a\rb"] {
            let error = shorthand(&[PathBuf::from(path)], listen()).unwrap_err();
            assert!(
                error.to_string().contains("objects: the file name")
                    && error
                        .to_string()
                        .contains("cannot be written in a Corefile"),
                "{error}"
            );
            assert_eq!(error.line(), 8, "{error}");
        }
        // No objects file: the cluster is watched, through the pod's service account.
        let config = shorthand(&[], listen()).unwrap();
        let kubernetes = config.servers[0].plugins.kubernetes.as_ref().unwrap();
        assert!(kubernetes.objects.is_empty());
        assert_eq!(kubernetes.api.kubeconfig, None);
    }

    #[test]
    fn without_objects_a_kubeconfig_context_is_watched() {
        let options = ShorthandOptions {
            kubeconfig: Some((
                PathBuf::from("/home/me/.kube/config"),
                Some("kind kind".to_owned()),
            )),
            ..ShorthandOptions::new(listen())
        };
        let text = shorthand_corefile_with(&[], &options);
        assert!(
            text.contains("        kubeconfig \"/home/me/.kube/config\" \"kind kind\"\n"),
            "{text}"
        );
        assert!(!text.contains("objects"), "{text}");
        let config = shorthand_with(&[], &options).unwrap();
        let kubernetes = config.servers[0].plugins.kubernetes.as_ref().unwrap();
        assert_eq!(
            kubernetes.api.kubeconfig,
            Some((
                PathBuf::from("/home/me/.kube/config"),
                Some("kind kind".to_owned())
            ))
        );
        // Objects files win: the kubeconfig is for when there are none.
        let text = shorthand_corefile_with(&[PathBuf::from("shop.json")], &options);
        assert!(text.contains("objects \"shop.json\"") && !text.contains("kubeconfig"));
    }
}
