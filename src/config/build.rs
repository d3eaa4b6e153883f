//! From the Corefile's structure to typed configuration: keys to zones and ports, directives
//! to their typed structs, and the checks that span server blocks.
//!
//! Errors come in this order, so that the most actionable one is reported: syntax (while
//! reading), then the first unknown directive of the file, then per server block the keys
//! and the implemented directives, then zones defined twice, then HTTP endpoints whose
//! addresses collide, and last the first CoreDNS directive that is not implemented yet.
//!
//! HTTP endpoints (*health*, *ready*, *prometheus*): as in CoreDNS, server blocks may name the
//! same address for the same endpoint (one listener serves them all) or different addresses
//! (one listener each). Two listeners collide when they share a port (not 0, which picks a
//! free one) and their addresses overlap: the same address, or a wildcard (`:PORT`, that is
//! 0.0.0.0, covers the IPv4 addresses; `[::]` covers every address) and an address it covers.
//! So `health :8080` with `ready :8080`, `health :8080` with `health 127.0.0.1:8080`, and
//! `prometheus :53` with a DNS server on port 53 (its TCP listener) are errors.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

use hickory_proto::rr::Name;

use super::blocks::{Config, ServerBlock};
use super::directives::{self, Context, Directives, Endpoint};
use super::env::Environment;
use super::error::Error;
use super::syntax::ServerBlockAst;
use super::zone;
use crate::plugin::Plugin;

/// Builds the configuration from parsed server blocks.
pub(crate) fn build(
    blocks: &[ServerBlockAst],
    file: &Path,
    env: &Environment,
) -> Result<Config, Error> {
    for block in blocks {
        for line in &block.lines {
            if !directives::is_known(line.name()) {
                return Err(directives::unknown_directive(line, line.name()));
            }
        }
    }

    let mut parsed: Vec<(Vec<KeyAt>, Directives)> = Vec::new();
    let mut unsupported: Option<Error> = None;
    for block in blocks {
        let keys = keys(block)?;
        let mut block_zones: Vec<Name> = Vec::new();
        let mut seen: HashSet<&Name> = HashSet::new();
        for key in &keys {
            for zone in &key.zones {
                if seen.insert(zone) {
                    block_zones.push(zone.clone());
                }
            }
        }
        let context = Context {
            env,
            block_zones: &block_zones,
        };
        let mut found = Directives::default();
        for line in &block.lines {
            directives::apply(line, &context, &mut found)?;
        }
        check_autopath(&found, block)?;
        attach_autopath(&mut found);
        attach_external(&mut found, block)?;
        if unsupported.is_none() {
            unsupported = found.unsupported.take();
        }
        parsed.push((keys, found));
    }

    let mut servers: Vec<ServerBlock> = Vec::new();
    let mut served = Served::default();
    let mut endpoints: Vec<Endpoint> = Vec::new();
    let mut dns_listeners: Vec<DnsListener> = Vec::new();
    for (keys, found) in &parsed {
        endpoints.extend(found.endpoints.iter().cloned());
        for key in keys {
            let ips = if found.plugins.bind.is_empty() {
                vec![IpAddr::V6(Ipv6Addr::UNSPECIFIED)]
            } else {
                found.plugins.bind.clone()
            };
            for ip in ips {
                dns_listeners.push(DnsListener {
                    addr: SocketAddr::new(ip, key.port),
                    file: key.file.clone(),
                    line: key.line,
                });
            }
        }
    }
    for (keys, found) in parsed {
        // One ServerBlock per port, in the order the ports first appear.
        let mut by_port: Vec<ServerBlock> = Vec::new();
        for key in &keys {
            for zone in &key.zones {
                served.register(zone, key.port, &found.plugins.bind, key)?;
            }
            match by_port.iter_mut().find(|server| server.port == key.port) {
                Some(server) => server.zones.extend(key.zones.iter().cloned()),
                None => by_port.push(ServerBlock {
                    zones: key.zones.clone(),
                    port: key.port,
                    plugins: found.plugins.clone(),
                    line: key.line,
                }),
            }
        }
        servers.extend(by_port);
    }
    check_endpoints(&endpoints, &dns_listeners)?;
    if let Some(error) = unsupported {
        return Err(error);
    }
    if servers.is_empty() {
        return Err(Error::Syntax {
            file: file.to_owned(),
            line: 0,
            message: "the Corefile defines no server block".into(),
        });
    }
    Ok(Config { servers })
}

/// Refuses HTTP endpoints whose listeners would collide with each other or with a DNS
/// server's (see the module documentation).
/// `autopath @kubernetes` needs the block's *kubernetes* plugin, and with `namespace pod` its
/// `pods verified` (the client's pod is found by address in the pod watch).
fn check_autopath(found: &Directives, block: &ServerBlockAst) -> Result<(), Error> {
    let Some(autopath) = &found.plugins.autopath else {
        return Ok(());
    };
    let super::AutopathSource::Kubernetes(namespace) = autopath.source else {
        return Ok(());
    };
    let (file, line) = directive_at(block, Plugin::Autopath);
    let error = |message: String| Error::Invalid {
        directive: "autopath".to_owned(),
        message,
        file: file.clone(),
        line,
    };
    let Some(kubernetes) = &found.plugins.kubernetes else {
        return Err(error(
            "@kubernetes needs a kubernetes directive in the server block".to_owned(),
        ));
    };
    if namespace == super::AutopathNamespace::Pod && kubernetes.pods != super::PodMode::Verified {
        return Err(error(format!(
            "@kubernetes finds the client's namespace from its pod, which needs `pods verified` \
             in the kubernetes block (line {}), or `namespace query` in an autopath block to \
             take it from the query name",
            kubernetes.line
        )));
    }
    Ok(())
}

/// `autopath @kubernetes` finding a client's namespace from its pod reads the namespaces of
/// the pods' addresses, which the *kubernetes* zone then keeps (and only then).
fn attach_autopath(found: &mut Directives) {
    let from_pod = found.plugins.autopath.as_ref().is_some_and(|autopath| {
        autopath.source == super::AutopathSource::Kubernetes(super::AutopathNamespace::Pod)
    });
    if let Some(kubernetes) = found.plugins.kubernetes.as_mut() {
        kubernetes.client_namespaces = from_pod;
    }
}

/// *k8s_external* reads the block's *kubernetes* plugin (CoreDNS looks it up at start-up and
/// fails without it): its configuration is copied into the *kubernetes* one, whose zone then
/// holds the external names too.
fn attach_external(found: &mut Directives, block: &ServerBlockAst) -> Result<(), Error> {
    let Some(external) = found.plugins.k8s_external.clone() else {
        return Ok(());
    };
    let Some(kubernetes) = found.plugins.kubernetes.as_mut() else {
        let (file, line) = directive_at(block, Plugin::K8sExternal);
        return Err(Error::Invalid {
            directive: "plugin/k8s_external".to_owned(),
            message: "kubernetes plugin not loaded".to_owned(),
            file,
            line,
        });
    };
    kubernetes.external = Some(external);
    Ok(())
}

/// The file and line of `plugin`'s first directive in `block`.
fn directive_at(block: &ServerBlockAst, plugin: Plugin) -> (PathBuf, usize) {
    block
        .lines
        .iter()
        .find(|line| line.name() == plugin.name())
        .map_or_else(
            || (PathBuf::new(), 0),
            |line| (line.name.file.to_path_buf(), line.name.line),
        )
}

fn check_endpoints(endpoints: &[Endpoint], dns_listeners: &[DnsListener]) -> Result<(), Error> {
    let describe = |endpoint: &Endpoint| {
        format!(
            "{} {} ({}:{})",
            endpoint.directive,
            endpoint.addr,
            endpoint.file.display(),
            endpoint.line
        )
    };
    for (index, endpoint) in endpoints.iter().enumerate() {
        let collide = |error: String| Error::Invalid {
            directive: endpoint.directive.to_owned(),
            message: error,
            file: endpoint.file.clone(),
            line: endpoint.line,
        };
        for earlier in &endpoints[..index] {
            let shared = earlier.directive == endpoint.directive && earlier.addr == endpoint.addr;
            if !shared && overlap(earlier.addr, endpoint.addr) {
                return Err(collide(format!(
                    "address {} collides with {}: two HTTP listeners cannot share a port on \
                     overlapping addresses",
                    endpoint.addr,
                    describe(earlier)
                )));
            }
        }
        for listener in dns_listeners {
            if overlap(listener.addr, endpoint.addr) {
                return Err(collide(format!(
                    "address {} collides with the DNS server on port {} ({}:{})",
                    endpoint.addr,
                    listener.addr.port(),
                    listener.file.display(),
                    listener.line
                )));
            }
        }
    }
    Ok(())
}

/// Where a server block's DNS server listens (its TCP side can collide with HTTP).
struct DnsListener {
    /// The address (`[::]` for a block without `bind`).
    addr: SocketAddr,
    /// The file of the key.
    file: std::path::PathBuf,
    /// The line of the key.
    line: usize,
}

/// Whether listeners on `a` and `b` would want the same socket.
fn overlap(a: SocketAddr, b: SocketAddr) -> bool {
    let covers =
        |wide: IpAddr, other: IpAddr| wide.is_unspecified() && (wide.is_ipv6() || other.is_ipv4());
    a.port() != 0
        && a.port() == b.port()
        && (a.ip() == b.ip() || covers(a.ip(), b.ip()) || covers(b.ip(), a.ip()))
}

/// One key of a server block, parsed.
struct KeyAt {
    zones: Vec<Name>,
    port: u16,
    file: std::path::PathBuf,
    line: usize,
}

/// The keys of a block: each key token split at commas, each piece parsed.
fn keys(block: &ServerBlockAst) -> Result<Vec<KeyAt>, Error> {
    let mut out = Vec::new();
    for token in &block.keys {
        for piece in token.text.split(',').filter(|piece| !piece.is_empty()) {
            let key = zone::parse_key(piece).map_err(|message| Error::Key {
                key: piece.to_owned(),
                file: token.file.to_path_buf(),
                line: token.line,
                message,
            })?;
            out.push(KeyAt {
                zones: key.zones,
                port: key.port,
                file: token.file.to_path_buf(),
                line: token.line,
            });
        }
    }
    if out.is_empty() {
        let (file, line) = block
            .keys
            .first()
            .map_or((Path::new("").to_owned(), 0), |t| {
                (t.file.to_path_buf(), t.line)
            });
        return Err(Error::Syntax {
            file,
            line,
            message: "server block has no key (an empty environment variable?)".into(),
        });
    }
    Ok(out)
}

/// The (zone, port, address) triples served so far, as CoreDNS checks them: the same triple
/// twice is "already defined"; a zone and port on the wildcard address and on a specific one
/// is an "overlap".
#[derive(Default)]
struct Served {
    addresses: HashMap<(Name, u16), Vec<Option<IpAddr>>>,
}

impl Served {
    fn register(
        &mut self,
        zone: &Name,
        port: u16,
        bind: &[IpAddr],
        at: &KeyAt,
    ) -> Result<(), Error> {
        let wanted: Vec<Option<IpAddr>> = if bind.is_empty() {
            vec![None]
        } else {
            bind.iter().copied().map(Some).collect()
        };
        let describe = |address: Option<IpAddr>| match address {
            Some(address) => format!("dns://{zone}:{port} on {address}"),
            None => format!("dns://{zone}:{port}"),
        };
        let served = self.addresses.entry((zone.clone(), port)).or_default();
        for address in wanted {
            for other in served.iter() {
                let message = if *other == address {
                    format!("cannot serve {} - it is already defined", describe(address))
                } else if other.is_none() || address.is_none() {
                    format!(
                        "cannot serve {} - zone overlap listener capacity with {}",
                        describe(address),
                        describe(*other)
                    )
                } else {
                    continue;
                };
                return Err(Error::Duplicate {
                    file: at.file.clone(),
                    line: at.line,
                    message,
                });
            }
            served.push(address);
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::test_support::{kind, parse};

    #[test]
    fn overlaps() {
        let addr = |text: &str| text.parse::<SocketAddr>().unwrap();
        let cases = [
            ("same", "10.0.0.1:80", "10.0.0.1:80", true),
            ("other port", "10.0.0.1:80", "10.0.0.1:81", false),
            ("other address", "10.0.0.1:80", "10.0.0.2:80", false),
            ("v4 wildcard", "0.0.0.0:80", "10.0.0.1:80", true),
            ("v4 wildcard, v6", "0.0.0.0:80", "[::1]:80", false),
            ("v6 wildcard covers v4", "[::]:80", "127.0.0.1:80", true),
            ("v6 wildcard covers v6", "[::1]:80", "[::]:80", true),
            ("port zero", "127.0.0.1:0", "127.0.0.1:0", false),
        ];
        for (name, a, b, want) in cases {
            assert_eq!(overlap(addr(a), addr(b)), want, "{name}");
            assert_eq!(overlap(addr(b), addr(a)), want, "{name} (swapped)");
        }
    }

    #[test]
    fn shared_endpoints() {
        let cases = [
            (
                "same health in two blocks",
                "a.org {\n health :8080\n}\nb.org {\n health :8080\n}",
            ),
            (
                "one block split by port",
                "a.org, b.org:54 {\n prometheus :9153\n ready\n}",
            ),
            (
                "different addresses",
                "a.org {\n health :8080\n}\nb.org {\n health :8081\n}",
            ),
            (
                "different interfaces",
                "a.org {\n health 127.0.0.1:8080\n}\nb.org {\n health 127.0.0.2:8080\n}",
            ),
            (
                "ephemeral ports",
                ". {\n health 127.0.0.1:0\n ready 127.0.0.1:0\n prometheus 127.0.0.1:0\n}",
            ),
            (
                "dns on another address",
                ".:8080 {\n bind 127.0.0.1\n}\nexample.org {\n health 127.0.0.2:8080\n}",
            ),
            ("dns port zero", ".:0 {\n health 127.0.0.1:0\n}"),
        ];
        for (name, text) in cases {
            parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn colliding_endpoints() {
        let cases = [
            (
                "health and ready",
                ". {\n health :8080\n ready :8080\n}",
                3,
                "ready: address 0.0.0.0:8080 collides with health 0.0.0.0:8080 (Corefile:2)",
            ),
            (
                "wildcard and address",
                "a.org {\n health :8080\n}\nb.org {\n health 127.0.0.1:8080\n}",
                5,
                "health: address 127.0.0.1:8080 collides with health 0.0.0.0:8080 (Corefile:2)",
            ),
            (
                "prometheus on health's default",
                ". {\n health\n prometheus :8080\n}",
                3,
                "collides with health",
            ),
            (
                "dns port",
                ". {\n prometheus :53\n}",
                2,
                "prometheus: address 0.0.0.0:53 collides with the DNS server on port 53 (Corefile:1)",
            ),
            (
                "bound dns",
                ".:1053 {\n bind 127.0.0.1\n}\nexample.org {\n ready 127.0.0.1:1053\n}",
                5,
                "collides with the DNS server on port 1053",
            ),
        ];
        for (name, text, line, want) in cases {
            let error = parse(text).unwrap_err();
            assert!(error.to_string().contains(want), "{name}: {error}");
            assert_eq!((kind(&error), error.line()), ("Invalid", line), "{name}");
        }
    }
}
