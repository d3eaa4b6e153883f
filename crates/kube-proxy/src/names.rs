//! Chain names: kube-proxy's own (`--kube-proxy-names`), or clusterdns's hex names.
//!
//! kube-proxy names a Service port's chains after a hash of its identity, so the names stay
//! the same when the Service is deleted and created again:
//!
//! - iptables (`pkg/proxy/iptables/proxier.go`, `portProtoHash`): the first 16 characters of
//!   the base32 (RFC 4648, upper case) encoding of SHA-256 over the port's name
//!   (`namespace/name:port`, or `namespace/name` for an unnamed port) followed by the
//!   lower-case protocol, after a prefix per chain kind (`KUBE-SVC-`, `KUBE-SVL-`, `KUBE-EXT-`,
//!   `KUBE-FW-`). An endpoint's `KUBE-SEP-` chain hashes the same string followed by the
//!   endpoint as `ip:port` (`[ip]:port` for IPv6), so one new pod changes one `KUBE-SEP-`
//!   name and no `KUBE-SVC-` name.
//! - nftables (`pkg/proxy/nftables/proxier.go`, `hashAndTruncate`): the readable name
//!   `namespace/name/protocol/port` (endpoints: `…__ip/port`, the colons of an IPv6 address
//!   written as dots) behind the first 8 base32 characters of its own SHA-256, after a prefix
//!   (`service-`, `local-`, `external-`, `firewall-`, `endpoint-`, `affinity-`).
//!
//! The [`NameScheme::Hex`] names hash the same strings and print the digest in hex
//! instead (16 hex digits for iptables, 8 for nftables): the chains line up one to one with
//! kube-proxy's, and a `KUBE-SVC-` made of hex digits is visibly not kube-proxy's. Compare
//! chains by what they contain, never by name.

use std::fmt::Write as _;
use std::net::IpAddr;

use sha2::{Digest, Sha256};

use super::plan::{ServicePortName, join_host_port};

/// Which names the renderers give the per-Service and per-endpoint chains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NameScheme {
    /// Hex digests (clusterdns's own names).
    #[default]
    Hex,
    /// kube-proxy's base32 digests, equal to the chains on a real node.
    KubeProxy,
}

/// The RFC 4648 base32 alphabet, as Go's `base32.StdEncoding` uses it.
const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// The first `len` characters of the base32 encoding of `bytes`, without `=` padding.
fn base32_prefix(bytes: &[u8], len: usize) -> String {
    let mut out = String::with_capacity(len);
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for byte in bytes {
        buffer = (buffer << 8) | u32::from(*byte);
        bits += 8;
        while bits >= 5 && out.len() < len {
            bits -= 5;
            out.push(char::from(BASE32[((buffer >> bits) & 0x1f) as usize]));
        }
        buffer &= (1 << bits) - 1;
        if out.len() == len {
            return out;
        }
    }
    if bits > 0 && out.len() < len {
        // The last group, padded with zero bits.
        out.push(char::from(BASE32[((buffer << (5 - bits)) & 0x1f) as usize]));
    }
    out
}

fn hex_prefix(bytes: &[u8], len: usize) -> String {
    let mut out = String::with_capacity(len);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
        if out.len() >= len {
            break;
        }
    }
    out.truncate(len);
    out
}

fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

impl NameScheme {
    /// The 16-character hash iptables chain names end in.
    fn iptables_hash(self, text: &str) -> String {
        let digest = sha256(text);
        match self {
            Self::KubeProxy => base32_prefix(&digest, 16),
            Self::Hex => hex_prefix(&digest, 16),
        }
    }

    fn port_proto(port: &ServicePortName) -> String {
        format!("{port}{}", port.protocol.lower())
    }

    /// `KUBE-SVC-…`: the Cluster-policy chain of a Service port.
    pub fn svc(self, port: &ServicePortName) -> String {
        format!("KUBE-SVC-{}", self.iptables_hash(&Self::port_proto(port)))
    }

    /// `KUBE-SVL-…`: the Local-policy chain.
    pub fn svl(self, port: &ServicePortName) -> String {
        format!("KUBE-SVL-{}", self.iptables_hash(&Self::port_proto(port)))
    }

    /// `KUBE-EXT-…`: the chain external traffic (NodePort, externalIPs, LoadBalancer) enters.
    pub fn ext(self, port: &ServicePortName) -> String {
        format!("KUBE-EXT-{}", self.iptables_hash(&Self::port_proto(port)))
    }

    /// `KUBE-FW-…`: the loadBalancerSourceRanges firewall.
    pub fn fw(self, port: &ServicePortName) -> String {
        format!("KUBE-FW-{}", self.iptables_hash(&Self::port_proto(port)))
    }

    /// `KUBE-SEP-…`: one endpoint of a Service port.
    pub fn sep(self, port: &ServicePortName, ip: IpAddr, target: u16) -> String {
        let text = format!("{}{}", Self::port_proto(port), join_host_port(ip, target));
        format!("KUBE-SEP-{}", self.iptables_hash(&text))
    }

    /// The nftables base of a Service port's chain names: `HASH-ns/name/proto/port`.
    fn nft_base(self, readable: String) -> String {
        let digest = sha256(&readable);
        let hash = match self {
            Self::KubeProxy => base32_prefix(&digest, 8),
            Self::Hex => hex_prefix(&digest, 8),
        };
        let mut name = format!("{hash}-{readable}");
        // knftables.NameLengthMax (256) minus the longest prefix (16): never reached by
        // valid Kubernetes names, kept for fidelity.
        const BASE_MAX: usize = 256 - 16;
        if name.len() > BASE_MAX {
            name.truncate(BASE_MAX - 3);
            name.push_str("...");
        }
        name
    }

    fn nft_port_readable(port: &ServicePortName) -> String {
        format!(
            "{}/{}/{}/{}",
            port.namespace,
            port.name,
            port.protocol.lower(),
            port.port
        )
    }

    /// The nftables per-port chain with `prefix` (`service-`, `local-`, `external-`,
    /// `firewall-`).
    pub fn nft_port(self, prefix: &str, port: &ServicePortName) -> String {
        format!("{prefix}{}", self.nft_base(Self::nft_port_readable(port)))
    }

    /// The nftables per-endpoint name with `prefix` (`endpoint-`, `affinity-`).
    pub fn nft_endpoint(
        self,
        prefix: &str,
        port: &ServicePortName,
        ip: IpAddr,
        target: u16,
    ) -> String {
        let ip = ip.to_string().replace(':', ".");
        let readable = format!("{}__{ip}/{target}", Self::nft_port_readable(port));
        format!("{prefix}{}", self.nft_base(readable))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clusterdns_model::Protocol;

    fn port(namespace: &str, name: &str, port: &str, protocol: Protocol) -> ServicePortName {
        ServicePortName {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            port: port.to_owned(),
            protocol,
        }
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("test IP")
    }

    /// The two chains that exist on every cluster, as the issue and the lesson quote them.
    #[test]
    fn kube_proxy_svc_names_match_every_cluster() {
        let names = NameScheme::KubeProxy;
        assert_eq!(
            names.svc(&port("default", "kubernetes", "https", Protocol::Tcp)),
            "KUBE-SVC-NPX46M4PTMTKRN6Y"
        );
        assert_eq!(
            names.svc(&port("kube-system", "kube-dns", "dns", Protocol::Udp)),
            "KUBE-SVC-TCOU7JCQXEZGVUNU"
        );
        assert_eq!(
            names.svc(&port("kube-system", "kube-dns", "dns-tcp", Protocol::Tcp)),
            "KUBE-SVC-ERIFXISQEP7F7OF4"
        );
    }

    /// The KUBE-SEP recipe (port name + protocol + `ip:port`), checked against chains quoted
    /// from real kind nodes' `iptables-save`: kube-dns's endpoints on 10.244.0.2 and 10.244.0.3.
    #[test]
    fn kube_proxy_sep_names_match_real_nodes() {
        let names = NameScheme::KubeProxy;
        let dns_tcp = port("kube-system", "kube-dns", "dns-tcp", Protocol::Tcp);
        let dns = port("kube-system", "kube-dns", "dns", Protocol::Udp);
        let metrics = port("kube-system", "kube-dns", "metrics", Protocol::Tcp);
        assert_eq!(
            names.sep(&dns_tcp, ip("10.244.0.2"), 53),
            "KUBE-SEP-IT2ZTR26TO4XFPTO"
        );
        assert_eq!(
            names.sep(&dns_tcp, ip("10.244.0.3"), 53),
            "KUBE-SEP-ZXMNUKOKXUTL2MK2"
        );
        assert_eq!(
            names.sep(&dns, ip("10.244.0.2"), 53),
            "KUBE-SEP-YIL6JZP7A3QYXJU2"
        );
        assert_eq!(
            names.sep(&dns, ip("10.244.0.3"), 53),
            "KUBE-SEP-6E7XQMQ4RAYOWTTM"
        );
        assert_eq!(
            names.sep(&metrics, ip("10.244.0.2"), 9153),
            "KUBE-SEP-N4G2XR5TDX7PQE7P"
        );
    }

    /// nftables names quoted from real nodes' `nft list table ip kube-proxy`.
    #[test]
    fn kube_proxy_nft_names_match_real_nodes() {
        let names = NameScheme::KubeProxy;
        assert_eq!(
            names.nft_port(
                "service-",
                &port("default", "kubernetes", "https", Protocol::Tcp)
            ),
            "service-2QRHZV4L-default/kubernetes/tcp/https"
        );
        assert_eq!(
            names.nft_port(
                "service-",
                &port("kube-system", "kube-dns", "dns", Protocol::Udp)
            ),
            "service-FY5PMXPG-kube-system/kube-dns/udp/dns"
        );
        assert_eq!(
            names.nft_endpoint(
                "endpoint-",
                &port("default", "kubernetes", "https", Protocol::Tcp),
                ip("10.128.0.16"),
                6443
            ),
            "endpoint-573J25N3-default/kubernetes/tcp/https__10.128.0.16/6443"
        );
        // An unnamed port leaves the last component empty.
        assert_eq!(
            names.nft_port(
                "external-",
                &port("riset", "hellopod-np-svc", "", Protocol::Tcp)
            ),
            "external-P6J77WGM-riset/hellopod-np-svc/tcp/"
        );
    }

    #[test]
    fn unnamed_ports_hash_without_a_colon() {
        let unnamed = port("default", "my-nginx", "", Protocol::Tcp);
        assert_eq!(unnamed.to_string(), "default/my-nginx");
        // From a real kind node: `default/my-nginx` (unnamed port 80 -> 10.244.2.3:80).
        assert_eq!(
            NameScheme::KubeProxy.svc(&unnamed),
            "KUBE-SVC-L65ENXXZWWSAPRCR"
        );
        assert_eq!(
            NameScheme::KubeProxy.sep(&unnamed, ip("10.244.2.3"), 80),
            "KUBE-SEP-TIQJFJVSHRJZTTZW"
        );
    }

    #[test]
    fn hex_names_hash_the_same_identity() {
        let web = port("shop", "web", "http", Protocol::Tcp);
        let svc = NameScheme::Hex.svc(&web);
        assert_eq!(svc.len(), "KUBE-SVC-".len() + 16);
        assert!(
            svc["KUBE-SVC-".len()..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit())
        );
        let digest = sha256("shop/web:httptcp");
        assert_eq!(&svc["KUBE-SVC-".len()..], &hex_prefix(&digest, 16));
        // Stable, and different per endpoint.
        assert_eq!(svc, NameScheme::Hex.svc(&web));
        assert_ne!(
            NameScheme::Hex.sep(&web, ip("10.244.1.5"), 8080),
            NameScheme::Hex.sep(&web, ip("10.244.1.6"), 8080)
        );
        // Chain names stay within iptables' 28 characters.
        assert!(NameScheme::Hex.sep(&web, ip("fd00::1"), 8080).len() <= 28);
    }

    #[test]
    fn ipv6_endpoints_join_with_brackets_and_dots() {
        assert_eq!(join_host_port(ip("fd00::5"), 80), "[fd00::5]:80");
        let web = port("shop", "web", "http", Protocol::Tcp);
        let name = NameScheme::KubeProxy.nft_endpoint("endpoint-", &web, ip("fd00::5"), 8080);
        assert!(name.ends_with("-shop/web/tcp/http__fd00..5/8080"), "{name}");
    }

    #[test]
    fn base32_matches_rfc4648() {
        // RFC 4648 test vectors, unpadded prefixes.
        assert_eq!(base32_prefix(b"foobar", 10), "MZXW6YTBOI");
        assert_eq!(base32_prefix(b"f", 2), "MY");
    }
}
