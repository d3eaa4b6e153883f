//! The kube-dns ConfigMap as node-cache reads it (kubernetes/dns `pkg/dns/config`): a
//! directory (`-kubednscm`, else `/etc/kube-dns` when it exists) of one file per key, the
//! ConfigMap volume's layout; hidden files (`..data`) and subdirectories skipped. Two keys
//! matter to node-cache: `stubDomains`, a JSON object of domain to nameservers, and
//! `upstreamNameservers`, a JSON array of at most three. `federations` is kube-dns's alone and
//! is ignored, as node-cache ignores it.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use super::error::Error;

/// The keys of the ConfigMap node-cache uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KubeDnsConfig {
    /// Domain to nameservers (`IP` or `IP:PORT`), sorted by domain.
    pub stub_domains: BTreeMap<String, Vec<String>>,
    /// The nameservers for names outside the cluster, instead of the node's resolv.conf.
    pub upstream_nameservers: Vec<String>,
}

/// Reads the directory `dir`; an error names the file and what was expected.
pub fn read_dir(dir: &Path) -> Result<KubeDnsConfig, Error> {
    let meta = std::fs::metadata(dir)
        .map_err(|error| Error::new(format!("kube-dns ConfigMap {}: {error}", dir.display())))?;
    if !meta.is_dir() {
        return Err(Error::new(format!(
            "kube-dns ConfigMap {}: not a directory (the ConfigMap is mounted as one, a file \
             per key)",
            dir.display()
        )));
    }
    let mut config = KubeDnsConfig::default();
    let read = |name: &str| -> Result<Option<String>, Error> {
        let path = dir.join(name);
        match std::fs::read(&path) {
            Ok(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| Error::new(format!("{}: not UTF-8", path.display()))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(Error::new(format!("{}: {error}", path.display()))),
        }
    };
    if let Some(text) = read("stubDomains")? {
        let path = dir.join("stubDomains");
        config.stub_domains = parse_json(
            &path,
            &text,
            "an object of domain to nameservers, \
            e.g. {\"acme.local\": [\"1.2.3.4\"]}",
        )?;
        for (domain, servers) in &config.stub_domains {
            if !is_dns1123_subdomain(domain) {
                return Err(Error::new(format!(
                    "{}: {domain:?} is not a domain name (lower-case letters, digits, '-' and \
                     '.', at most 253 characters)",
                    path.display()
                )));
            }
            for server in servers {
                if !is_nameserver(server) && !is_dns1123_subdomain(server) {
                    return Err(Error::new(format!(
                        "{}: .{domain}: {server:?} is not a nameserver (IP or IP:PORT)",
                        path.display()
                    )));
                }
            }
        }
    }
    if let Some(text) = read("upstreamNameservers")? {
        let path = dir.join("upstreamNameservers");
        config.upstream_nameservers =
            parse_json(&path, &text, "an array of nameservers, e.g. [\"8.8.8.8\"]")?;
        if config.upstream_nameservers.len() > 3 {
            return Err(Error::new(format!(
                "{}: {} nameservers; upstreamNameservers takes at most three",
                path.display(),
                config.upstream_nameservers.len()
            )));
        }
        for (index, server) in config.upstream_nameservers.iter().enumerate() {
            if !is_nameserver(server) {
                return Err(Error::new(format!(
                    "{}: [{index}]: {server:?} is not a nameserver (IP or IP:PORT)",
                    path.display()
                )));
            }
        }
    }
    Ok(config)
}

/// `text` as JSON of type `T`; the error names the file, the JSON path and `expected`.
fn parse_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
    expected: &str,
) -> Result<T, Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let at = error.path().to_string();
        let at = if at == "." {
            String::new()
        } else {
            format!(" at {at}")
        };
        Error::new(format!(
            "{}: invalid JSON{at}: {}; expected {expected}",
            path.display(),
            error.inner()
        ))
    })
}

/// `IP`, `IP:PORT` or `[IPv6]:PORT`.
fn is_nameserver(text: &str) -> bool {
    text.parse::<IpAddr>().is_ok() || text.parse::<SocketAddr>().is_ok()
}

/// Kubernetes's `IsDNS1123Subdomain`: at most 253 characters, labels of lower-case
/// alphanumerics and `-`, starting and ending alphanumeric, joined by `.`.
fn is_dns1123_subdomain(text: &str) -> bool {
    text.len() <= 253
        && !text.is_empty()
        && text.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn dir(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn reads_stub_domains_and_upstreams() {
        let d = dir(&[
            (
                "stubDomains",
                r#"{"acme.local": ["1.2.3.4", "5.6.7.8:5353"]}"#,
            ),
            ("upstreamNameservers", r#"["8.8.8.8", "8.8.4.4"]"#),
            ("federations", "ignored"),
            (".hidden", "{"),
        ]);
        let config = read_dir(d.path()).unwrap();
        assert_eq!(
            config.stub_domains["acme.local"],
            ["1.2.3.4", "5.6.7.8:5353"]
        );
        assert_eq!(config.upstream_nameservers, ["8.8.8.8", "8.8.4.4"]);
    }

    #[test]
    fn empty_directory_is_the_default() {
        let d = dir(&[]);
        assert_eq!(read_dir(d.path()).unwrap(), KubeDnsConfig::default());
    }

    #[test]
    fn bad_json_names_the_file_path_and_the_shape() {
        let d = dir(&[("stubDomains", r#"{"acme.local": "1.2.3.4"}"#)]);
        let error = read_dir(d.path()).unwrap_err().0;
        assert!(
            error.contains("stubDomains: invalid JSON at acme.local"),
            "{error}"
        );
        assert!(
            error.contains("expected an object of domain to nameservers"),
            "{error}"
        );
        let d = dir(&[("upstreamNameservers", r#"["1.1.1.1", "a", "b", "c"]"#)]);
        let error = read_dir(d.path()).unwrap_err().0;
        assert!(error.contains("at most three"), "{error}");
        let d = dir(&[("upstreamNameservers", r#"["dns.example"]"#)]);
        let error = read_dir(d.path()).unwrap_err().0;
        assert!(
            error.contains("[0]: \"dns.example\" is not a nameserver"),
            "{error}"
        );
        let d = dir(&[("stubDomains", r#"{"Acme_Local": ["1.2.3.4"]}"#)]);
        let error = read_dir(d.path()).unwrap_err().0;
        assert!(
            error.contains("\"Acme_Local\" is not a domain name"),
            "{error}"
        );
    }
}
