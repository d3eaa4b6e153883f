//! Zone names: server block keys (`[dns://]ZONE[:PORT]`), zone arguments of directives, and
//! CIDRs standing for reverse zones.
//!
//! Zones come out lower-case and fully qualified (`cluster.local.`; the root is `.`). A CIDR
//! such as `10.0.0.0/24` or `fd00::/64` stands for its reverse zone; a prefix that does not end
//! on an octet (IPv4) or nibble (IPv6) boundary stands for every zone of the next boundary
//! (`10.0.0.0/23` is `0.0.10.in-addr.arpa.` and `1.0.10.in-addr.arpa.`), as CoreDNS's
//! `NormalizeExact` expands it.

use hickory_proto::rr::Name;
use ipnet::IpNet;

/// The default DNS port.
pub(crate) const DEFAULT_PORT: u16 = 53;

/// A CIDR never expands to more zones than this. With boundary-aligned expansion the most is
/// 128 (an IPv4 `/17`, `/9` or `/1`), so this only guards the arithmetic.
const MAX_REVERSE_ZONES: u32 = 256;

/// A parsed server block key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    /// The zones it stands for (one, or several for a CIDR).
    pub(crate) zones: Vec<Name>,
    /// The port (53 when not given).
    pub(crate) port: u16,
}

/// Parses a server block key: `[dns://]ZONE[:PORT]` or `[dns://]CIDR[:PORT]`.
pub(crate) fn parse_key(text: &str) -> Result<Key, String> {
    let rest = match text.find("://") {
        Some(at) => {
            let scheme = &text[..at];
            if !scheme.eq_ignore_ascii_case("dns") {
                return Err(format!(
                    "transport '{scheme}://' is not supported (clusterdns serves plain DNS: \
                     dns://)"
                ));
            }
            &text[at + 3..]
        }
        None => text,
    };
    let (host, port) = split_port(rest)?;
    let port = match port {
        Some(port) => port
            .parse::<u16>()
            .map_err(|_| format!("port '{port}' is not a number in 0..=65535"))?,
        None => DEFAULT_PORT,
    };
    Ok(Key {
        zones: parse_host(host)?,
        port,
    })
}

/// Parses a zone argument of a directive (`kubernetes ZONES...`, `fallthrough ZONES...`): a
/// zone or a CIDR, without scheme or port.
pub(crate) fn parse_zone_arg(text: &str) -> Result<Vec<Name>, String> {
    if text.contains("://") {
        return Err(format!("zone '{text}' must not have a scheme"));
    }
    let (host, port) = split_port(text)?;
    if port.is_some() {
        return Err(format!("zone '{text}' must not have a port"));
    }
    parse_host(host)
}

/// Splits `HOST[:PORT]`: the port is what follows the last `:` when it is all digits (so an
/// IPv6 CIDR, whose last colon is followed by `/LEN`, keeps its colons).
fn split_port(text: &str) -> Result<(&str, Option<&str>), String> {
    if text.ends_with(':') {
        return Err("expected a port after the last ':'".into());
    }
    match text.rfind(':') {
        Some(colon) if text[colon + 1..].bytes().all(|b| b.is_ascii_digit()) => {
            Ok((&text[..colon], Some(&text[colon + 1..])))
        }
        _ => Ok((text, None)),
    }
}

/// A cluster zone given on a command line (`explain --zone`): a domain name of letters,
/// digits, `-` and `_` between dots, with or without the final dot. It comes back lower-case
/// and without the dot, as a Corefile writes zones (so it is one plain Corefile token).
pub fn parse_cluster_zone(text: &str) -> Result<String, ZoneNameError> {
    let bare = text.strip_suffix('.').unwrap_or(text);
    let plain = !bare.is_empty()
        && bare.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
        });
    if !plain {
        return Err(ZoneNameError::NotLabels);
    }
    Name::from_ascii(bare).map_err(|error| ZoneNameError::Invalid(error.to_string()))?;
    Ok(bare.to_ascii_lowercase())
}

/// Why a text is not a cluster zone ([`parse_cluster_zone`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZoneNameError {
    /// Empty, an empty label, or a character other than letters, digits, `-` and `_`.
    #[error(
        "not a domain name: expected labels of letters, digits, '-' and '_' between dots, as cluster.local"
    )]
    NotLabels,
    /// Labels of the right characters that still make no domain name (too long).
    #[error("not a domain name: {0}")]
    Invalid(String),
}

/// A CIDR (`10.244.0.0/16`, `fd00::/64`); the error says what is wrong, in words (a
/// prefix too long, not "invalid IP address syntax"), without repeating the text.
pub fn parse_cidr(text: &str) -> Result<ipnet::IpNet, CidrError> {
    if let Ok(net) = text.parse() {
        return Ok(net);
    }
    let Some((address, prefix)) = text.split_once('/') else {
        return Err(CidrError::NoPrefix);
    };
    let Ok(ip) = address.parse::<std::net::IpAddr>() else {
        return Err(CidrError::Address(address.to_owned()));
    };
    let most = if ip.is_ipv4() { 32 } else { 128 };
    match prefix.parse::<u32>() {
        Ok(length) if length > most => Err(CidrError::TooLong {
            length,
            family: if ip.is_ipv4() { "IPv4" } else { "IPv6" },
            most,
        }),
        _ => Err(CidrError::Prefix {
            prefix: prefix.to_owned(),
            most,
        }),
    }
}

/// Why a text is not a CIDR ([`parse_cidr`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    /// No `/`.
    #[error("not a CIDR: expected ADDRESS/PREFIX, as 10.244.0.0/16")]
    NoPrefix,
    /// What comes before the `/` is not an address.
    #[error("'{0}' is not an IP address")]
    Address(String),
    /// A prefix longer than the family's addresses.
    #[error("prefix length {length} is too long (an {family} prefix is at most {most})")]
    TooLong {
        /// The prefix length given.
        length: u32,
        /// `IPv4` or `IPv6`.
        family: &'static str,
        /// The longest prefix of the family.
        most: u32,
    },
    /// What comes after the `/` is not a whole number.
    #[error("'{prefix}' is not a prefix length (a whole number, 0 to {most})")]
    Prefix {
        /// The text after the `/`.
        prefix: String,
        /// The longest prefix of the family.
        most: u32,
    },
}

/// A zone name or a CIDR.
fn parse_host(host: &str) -> Result<Vec<Name>, String> {
    if host.contains('/') {
        let net = parse_cidr(host).map_err(|why| format!("'{host}': {why}"))?;
        reverse_zones(net.trunc())
    } else {
        Ok(vec![parse_domain(host)?])
    }
}

/// A domain name: `.` or labels of letters, digits, `-` and `_`, with an optional final dot.
pub(crate) fn parse_domain(text: &str) -> Result<Name, String> {
    if text == "." {
        return Ok(Name::root());
    }
    let body = text.strip_suffix('.').unwrap_or(text);
    if body.is_empty() {
        return Err("empty zone name".into());
    }
    if body.len() > 253 {
        return Err(format!(
            "zone name is longer than 253 characters ({})",
            body.len()
        ));
    }
    for label in body.split('.') {
        if label.is_empty() {
            return Err(format!("zone '{text}' has an empty label"));
        }
        if label.len() > 63 {
            return Err(format!(
                "zone '{text}' has a label longer than 63 characters"
            ));
        }
        if let Some(bad) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!(
                "zone '{text}' has an invalid character '{}'",
                bad.escape_default()
            ));
        }
    }
    Name::from_ascii(format!("{}.", body.to_ascii_lowercase()))
        .map_err(|e| format!("zone '{text}' is not a valid domain name: {e}"))
}

/// The reverse zones a network stands for.
pub(crate) fn reverse_zones(net: IpNet) -> Result<Vec<Name>, String> {
    let (digit_bits, max_len) = match net {
        IpNet::V4(_) => (8u8, 32u8),
        IpNet::V6(_) => (4u8, 128u8),
    };
    let prefix = net.prefix_len().min(max_len);
    let aligned = prefix.div_ceil(digit_bits) * digit_bits;
    let count = 1u32 << (aligned - prefix).min(31);
    if count > MAX_REVERSE_ZONES {
        return Err(format!(
            "{net} expands to more than {MAX_REVERSE_ZONES} reverse zones"
        ));
    }
    let subnets: Vec<IpNet> = net
        .subnets(aligned)
        .map_err(|e| format!("cannot split {net}: {e}"))?
        .collect();
    subnets
        .into_iter()
        .map(|subnet| {
            let text = reverse_name(subnet, aligned / digit_bits);
            Name::from_ascii(&text).map_err(|e| format!("bad reverse zone {text}: {e}"))
        })
        .collect()
}

/// `d.c.b.a.in-addr.arpa.` or `n.n.n.ip6.arpa.` for the first `digits` octets or nibbles.
fn reverse_name(net: IpNet, digits: u8) -> String {
    let mut labels: Vec<String> = match net {
        IpNet::V4(net) => net.addr().octets().iter().map(u8::to_string).collect(),
        IpNet::V6(net) => net
            .addr()
            .octets()
            .iter()
            .flat_map(|byte| [byte >> 4, byte & 0xf])
            .map(|nibble| format!("{nibble:x}"))
            .collect(),
    };
    labels.truncate(usize::from(digits));
    labels.reverse();
    let suffix = match net {
        IpNet::V4(_) => "in-addr.arpa.",
        IpNet::V6(_) => "ip6.arpa.",
    };
    if labels.is_empty() {
        suffix.to_owned()
    } else {
        format!("{}.{suffix}", labels.join("."))
    }
}

/// Whether `zone` is a reverse zone (under `in-addr.arpa.` or `ip6.arpa.`).
pub(crate) fn is_reverse(zone: &Name) -> bool {
    let text = zone.to_ascii().to_ascii_lowercase();
    ["in-addr.arpa.", "ip6.arpa."]
        .iter()
        .any(|suffix| text == *suffix || text.ends_with(&format!(".{suffix}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::test_support::names;

    #[test]
    fn keys() {
        let cases: &[(&str, &str, &[&str], u16)] = &[
            ("root", ".", &["."], 53),
            ("root with port", ".:53", &["."], 53),
            ("scheme", "dns://.:1053", &["."], 1053),
            (
                "upper-case scheme",
                "DNS://example.org",
                &["example.org."],
                53,
            ),
            ("zone", "Cluster.Local", &["cluster.local."], 53),
            ("fqdn", "cluster.local.:5300", &["cluster.local."], 5300),
            ("port zero", "example.org:0", &["example.org."], 0),
            ("v4 octet", "10.0.0.0/24", &["0.0.10.in-addr.arpa."], 53),
            ("v4 octet port", "10.0.0.0/8:54", &["10.in-addr.arpa."], 54),
            ("v4 host bits", "10.1.2.3/16", &["1.10.in-addr.arpa."], 53),
            ("v4 /0", "0.0.0.0/0", &["in-addr.arpa."], 53),
            ("v4 /32", "10.1.2.3/32", &["3.2.1.10.in-addr.arpa."], 53),
            (
                "v4 /23",
                "10.0.0.0/23",
                &["0.0.10.in-addr.arpa.", "1.0.10.in-addr.arpa."],
                53,
            ),
            (
                "v6 nibble",
                "fd00::/64",
                &["0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa."],
                53,
            ),
            ("v6 port", "fd00::/8:53", &["d.f.ip6.arpa."], 53),
            (
                "v6 /6",
                "fc00::/6",
                &[
                    "c.f.ip6.arpa.",
                    "d.f.ip6.arpa.",
                    "e.f.ip6.arpa.",
                    "f.f.ip6.arpa.",
                ],
                53,
            ),
            ("reverse name", "10.in-addr.arpa", &["10.in-addr.arpa."], 53),
            ("underscore", "_tcp.example", &["_tcp.example."], 53),
        ];
        for (name, text, zones, port) in cases {
            let key = parse_key(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(names(&key.zones), *zones, "{name}");
            assert_eq!(key.port, *port, "{name}");
        }
    }

    #[test]
    fn expansion_counts() {
        let cases = [
            ("v4 /17", "10.0.0.0/17", 128),
            ("v4 /9", "10.0.0.0/9", 128),
            ("v6 /61", "fd00::/61", 8),
            ("v4 /1", "0.0.0.0/1", 128),
        ];
        for (name, text, count) in cases {
            assert_eq!(parse_key(text).unwrap().zones.len(), count, "{name}");
        }
        let zones = parse_key("10.0.0.0/17").unwrap().zones;
        assert_eq!(zones[127].to_string(), "127.0.10.in-addr.arpa.");
    }

    #[test]
    fn bad_keys() {
        let cases = [
            ("tls", "tls://.:853", "not supported"),
            ("https", "https://example.org", "not supported"),
            ("grpc", "grpc://.", "not supported"),
            ("dangling colon", ".:", "port after the last ':'"),
            ("big port", ".:65536", "0..=65535"),
            ("bad cidr", "10.0.0.0/33", "prefix length 33 is too long"),
            (
                "bad cidr address",
                "10.0.0/8",
                "'10.0.0' is not an IP address",
            ),
            ("bad char", "exa mple.org", "invalid character"),
            ("colon in zone", "a:b", "invalid character"),
            ("empty label", "a..b", "empty label"),
            ("empty", "", "empty zone"),
            (
                "long label",
                &format!("{}.org", "a".repeat(64)),
                "longer than 63",
            ),
            ("long name", &"a.".repeat(130), "longer than 253"),
            ("unicode", "пример.org", "invalid character"),
        ];
        for (name, text, want) in cases {
            let error = parse_key(text).unwrap_err();
            assert!(error.contains(want), "{name}: {error}");
        }
    }

    #[test]
    fn zone_args() {
        assert_eq!(
            names(&parse_zone_arg("in-addr.arpa").unwrap()),
            ["in-addr.arpa."]
        );
        assert_eq!(names(&parse_zone_arg("fd00::/64").unwrap()).len(), 1);
        assert!(
            parse_zone_arg("cluster.local:53")
                .unwrap_err()
                .contains("port")
        );
        assert!(
            parse_zone_arg("dns://cluster.local")
                .unwrap_err()
                .contains("scheme")
        );
    }

    #[test]
    fn reverse() {
        let cases = [
            ("in-addr", "in-addr.arpa.", true),
            ("under in-addr", "10.in-addr.arpa.", true),
            ("ip6", "ip6.arpa.", true),
            ("forward", "cluster.local.", false),
            ("root", ".", false),
            ("lookalike", "xin-addr.arpa.", false),
        ];
        for (name, zone, want) in cases {
            assert_eq!(is_reverse(&parse_domain(zone).unwrap()), want, "{name}");
        }
    }
}
