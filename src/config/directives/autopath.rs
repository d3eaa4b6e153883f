//! `autopath [ZONES...] @kubernetes|RESOLV-CONF { namespace pod|query; search DOMAIN... }`
//!
//! As CoreDNS's *autopath*: the zones default to the server block's; the last argument is
//! `@kubernetes` (the search path comes from the *kubernetes* plugin: the client pod's
//! namespace, then the server's own search domains) or a resolv.conf whose `search` list is
//! the path for every client. clusterdns extensions, with `@kubernetes` only:
//!
//! - `namespace pod` (CoreDNS's way, the default) finds the client's namespace from the pod
//!   with its address, which needs `pods verified`; `namespace query` takes it from the query
//!   name (`<name>.<ns>.svc.<zone>` is the first search domain of a pod in `<ns>`) and needs
//!   no pod watch.
//! - `search DOMAIN...` sets the search domains tried after the cluster's; without it, those
//!   of `/etc/resolv.conf`, as CoreDNS reads them (on a `dnsPolicy: Default` pod, the node's).
//!   `search` with no domain: none.
//!
//! Checked with the rest of the block ([`super::super::build`]): `@kubernetes` needs a
//! *kubernetes* directive, and `namespace pod` its `pods verified`.

use std::path::PathBuf;

use std::path::Path;

use hickory_proto::rr::Name;

use super::{Context, arguments, invalid, no_block, unknown_property, zones};
use crate::config::error::Error;
use crate::config::resolv_conf::read_resolv_conf_in;
use crate::config::syntax::Line;

/// The *autopath* directive: `autopath [ZONES...] @kubernetes|RESOLV-CONF`.
#[derive(Debug, Clone, PartialEq)]
pub struct AutopathConfig {
    /// Zones autopath acts in (the server block's when none are given).
    pub zones: Vec<Name>,
    /// Where the search path comes from.
    pub source: AutopathSource,
    /// With `@kubernetes`: the search domains after the cluster's (the `search` option, else
    /// `/etc/resolv.conf`'s). With a resolv.conf: its search list.
    pub search: Vec<Name>,
}

/// Where *autopath*'s search path comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutopathSource {
    /// `@kubernetes`: the client's namespace (found as given), then the search domains.
    Kubernetes(AutopathNamespace),
    /// A resolv.conf file: the same search list for every client.
    File(PathBuf),
}

/// How `autopath @kubernetes` finds the client's namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutopathNamespace {
    /// From the running pod with the client's address (CoreDNS; needs `pods verified`).
    Pod,
    /// From the query name `<name>.<ns>.svc.<zone>` (clusterdns extension; no pod watch).
    Query,
}

const DIRECTIVE: &str = "autopath";

/// Where CoreDNS reads its own search domains.
const SYSTEM_RESOLV_CONF: &str = "/etc/resolv.conf";

/// Parses one `autopath` line.
pub(crate) fn parse(line: &Line, context: &Context<'_>) -> Result<AutopathConfig, Error> {
    let args = arguments(DIRECTIVE, line, 1, None)?;
    let (last, zone_args) = args
        .split_last()
        .ok_or_else(|| invalid(&line.name, DIRECTIVE, "no resolv-conf specified"))?;
    let zones = zones(DIRECTIVE, line, zone_args, context.block_zones)?;
    let mut namespace = None;
    let mut search: Option<Vec<Name>> = None;
    for option in line.options() {
        match option.name() {
            "namespace" => {
                no_block(DIRECTIVE, option)?;
                let value = arguments(DIRECTIVE, option, 1, Some(1))?;
                namespace = Some(match value[0].text.as_str() {
                    "pod" => AutopathNamespace::Pod,
                    "query" => AutopathNamespace::Query,
                    other => {
                        return Err(invalid(
                            &value[0],
                            DIRECTIVE,
                            format!("namespace: '{other}' must be pod or query"),
                        ));
                    }
                });
            }
            "search" => {
                no_block(DIRECTIVE, option)?;
                let mut domains = Vec::new();
                for arg in &option.args {
                    let name = Name::from_ascii(&arg.text)
                        .map(|name| name.to_lowercase())
                        .map_err(|_| {
                            invalid(
                                arg,
                                DIRECTIVE,
                                format!("search: '{}' is not a domain name", arg.text),
                            )
                        })?;
                    domains.push(name);
                }
                search = Some(domains);
            }
            _ => return Err(unknown_property(DIRECTIVE, option)),
        }
    }
    let source = match last.text.strip_prefix('@') {
        Some("kubernetes") => {
            AutopathSource::Kubernetes(namespace.unwrap_or(AutopathNamespace::Pod))
        }
        Some(other) => {
            return Err(invalid(
                last,
                DIRECTIVE,
                format!("'@{other}': only @kubernetes gives a search path (or name a resolv.conf)"),
            ));
        }
        None => {
            if namespace.is_some() || search.is_some() {
                return Err(invalid(
                    &line.name,
                    DIRECTIVE,
                    "the namespace and search options go with @kubernetes; a resolv.conf gives \
                     the whole search path",
                ));
            }
            let base = last.file.parent().unwrap_or(Path::new(""));
            let path = base.join(&last.text);
            let conf = read_resolv_conf_in(context.env, &path).map_err(|error| {
                invalid(
                    last,
                    DIRECTIVE,
                    format!("failed to parse {}: {error}", path.display()),
                )
            })?;
            let domains = names(&conf.search);
            if domains.is_empty() {
                return Err(invalid(
                    last,
                    DIRECTIVE,
                    format!("{} has no search domains", path.display()),
                ));
            }
            search = Some(domains);
            AutopathSource::File(path)
        }
    };
    let search = match search {
        Some(search) => search,
        // CoreDNS's searchFromResolvConf: the server's own /etc/resolv.conf, if readable.
        None => read_resolv_conf_in(context.env, Path::new(SYSTEM_RESOLV_CONF))
            .map(|conf| names(&conf.search))
            .unwrap_or_default(),
    };
    Ok(AutopathConfig {
        zones,
        source,
        search,
    })
}

/// The domains of a search list that are names (others are dropped).
fn names(domains: &[String]) -> Vec<Name> {
    domains
        .iter()
        .filter_map(|domain| Name::from_ascii(domain).ok())
        .map(|name| {
            let mut name = name.to_lowercase();
            name.set_fqdn(true);
            name
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use crate::config::{
        AutopathNamespace, AutopathSource, Config, Environment, Error, parse_corefile_in,
    };

    fn parse_with(text: &str, env: &Environment) -> Result<Config, Error> {
        parse_corefile_in(text, Path::new("/cfg/Corefile"), env)
    }

    fn env() -> Environment {
        Environment::isolated()
            .with_file(
                "/etc/resolv.conf",
                "nameserver 10.0.0.2\nsearch us-east-1.compute.internal\n",
            )
            .with_file("/cfg/my-resolv.conf", "search a.example b.example\n")
    }

    #[test]
    fn forms() {
        let config = parse_with(
            ". {\n  autopath @kubernetes\n  kubernetes cluster.local {\n    pods verified\n  }\n}\n",
            &env(),
        )
        .unwrap();
        let autopath = config.servers[0].plugins.autopath.clone().unwrap();
        assert_eq!(
            autopath.source,
            AutopathSource::Kubernetes(AutopathNamespace::Pod)
        );
        assert_eq!(autopath.zones[0].to_ascii(), ".");
        assert_eq!(autopath.search[0].to_ascii(), "us-east-1.compute.internal.");
        // The zone keeps the pods' namespaces by address for it, and only for it.
        let keeps_clients = |config: &Config| {
            let kubernetes = config.servers[0].plugins.kubernetes.as_ref();
            kubernetes.unwrap().client_namespaces
        };
        assert!(keeps_clients(&config));

        let config = parse_with(
            "cluster.local {\n  autopath @kubernetes {\n    namespace query\n    search\n  }\n  kubernetes\n}\n",
            &env(),
        )
        .unwrap();
        let autopath = config.servers[0].plugins.autopath.clone().unwrap();
        assert_eq!(
            autopath.source,
            AutopathSource::Kubernetes(AutopathNamespace::Query)
        );
        assert!(autopath.search.is_empty());
        assert!(!keeps_clients(&config));
        let config = parse_with(
            ". {\n  kubernetes cluster.local {\n    pods verified\n  }\n}\n",
            &env(),
        )
        .unwrap();
        assert!(
            !keeps_clients(&config),
            "pods verified without autopath keeps no clients"
        );

        let config = parse_with(". {\n  autopath example.org my-resolv.conf\n}\n", &env()).unwrap();
        let autopath = config.servers[0].plugins.autopath.clone().unwrap();
        assert_eq!(autopath.zones[0].to_ascii(), "example.org.");
        assert_eq!(autopath.search.len(), 2);
    }

    #[test]
    fn errors() {
        let cases = [
            (
                ". {\n  autopath\n}\n",
                "Corefile:2: autopath: expected at least 1 argument",
            ),
            (". {\n  autopath @etcd\n}\n", "'@etcd': only @kubernetes"),
            (
                ". {\n  autopath nothere.conf\n}\n",
                "failed to parse /cfg/nothere.conf",
            ),
            (
                ". {\n  autopath @kubernetes\n}\n",
                "Corefile:2: autopath: @kubernetes needs a kubernetes directive in the server block",
            ),
            (
                ". {\n  autopath @kubernetes\n  kubernetes cluster.local\n}\n",
                "needs `pods verified` in the kubernetes block (line 3), or `namespace query`",
            ),
            (
                ". {\n  autopath @kubernetes {\n    namespace node\n  }\n  kubernetes\n}\n",
                "namespace: 'node' must be pod or query",
            ),
            (
                ". {\n  autopath @kubernetes {\n    fallthrough\n  }\n  kubernetes\n}\n",
                "fallthrough",
            ),
            (
                ". {\n  autopath my-resolv.conf {\n    namespace query\n  }\n}\n",
                "go with @kubernetes",
            ),
            (
                ". {\n  autopath @kubernetes\n  autopath @kubernetes\n  kubernetes {\n    pods verified\n  }\n}\n",
                "only once per server block",
            ),
        ];
        for (text, want) in cases {
            let error = parse_with(text, &env()).unwrap_err().to_string();
            assert!(
                error.contains(want),
                "{text}: {error} should contain {want}"
            );
        }
    }
}
