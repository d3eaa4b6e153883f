//! Values both ruleset readers parse alike: addresses and prefixes, protocols, DNAT
//! destinations.

use std::net::IpAddr;

use ipnet::IpNet;

use super::ProtoValue;
use clusterdns_model::Protocol;

/// A parsed address: `10.0.0.0/8`, `10.0.0.1` (a host), `10.0.0.0/255.0.0.0`.
pub(super) fn parse_net(text: &str) -> Option<IpNet> {
    if let Ok(net) = text.parse::<IpNet>() {
        return Some(net);
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(IpNet::from(ip));
    }
    let (addr, mask) = text.split_once('/')?;
    let addr: IpAddr = addr.parse().ok()?;
    let mask: IpAddr = mask.parse().ok()?;
    let prefix = match mask {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            (bits.leading_ones() + bits.trailing_zeros() == 32).then(|| bits.leading_ones())?
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            (bits.leading_ones() + bits.trailing_zeros() == 128).then(|| bits.leading_ones())?
        }
    };
    IpNet::new(addr, u8::try_from(prefix).ok()?).ok()
}

/// A protocol name or number.
pub(super) fn parse_protocol(text: &str) -> ProtoValue {
    match text.to_ascii_lowercase().as_str() {
        "tcp" | "6" => ProtoValue::Known(Protocol::Tcp),
        "udp" | "17" => ProtoValue::Known(Protocol::Udp),
        "sctp" | "132" => ProtoValue::Known(Protocol::Sctp),
        other => ProtoValue::Other(other.to_owned()),
    }
}

/// `IP[:PORT]` or `[IPv6]:PORT`, as `--to-destination` takes it (ranges are not modelled).
pub(super) fn parse_destination(text: &str) -> Option<(IpAddr, Option<u16>)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (ip, port) = rest.split_once(']')?;
        let ip = ip.parse().ok()?;
        let port = match port.strip_prefix(':') {
            Some(port) => Some(port.parse().ok()?),
            None if port.is_empty() => None,
            None => return None,
        };
        return Some((ip, port));
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some((ip, None));
    }
    let (ip, port) = text.rsplit_once(':')?;
    Some((ip.parse().ok()?, Some(port.parse().ok()?)))
}
