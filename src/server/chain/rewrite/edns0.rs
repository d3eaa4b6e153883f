//! *rewrite*'s `edns0` rules on the query (CoreDNS `plugin/rewrite/edns0.go`): the OPT
//! record passed down the chain, and so to the upstream, with an option set, replaced,
//! appended or removed.
//!
//! As CoreDNS: a query without an OPT record gets one (payload 4096). `set` changes the first
//! option of the code or adds one; `replace` only changes; `append` adds (for `local` with
//! literal data and for `nsid` even when one is there, as CoreDNS's code does; for
//! `subnet` and `local` with a variable only when none is); `unset` removes every option of
//! the code. The rule counts as applied (for `stop`) except for a `replace` that found
//! nothing and an `append` that did not add.

use std::net::{IpAddr, SocketAddr};

use crate::codes::option::{NSID, SUBNET};
use crate::codes::rtype;
use crate::config::{Edns0Action, Edns0Data, Edns0Option, Edns0Rule};
use crate::wire::{Request, Transport, reply};

/// The payload of an OPT record a rule adds (CoreDNS's `SetEdns0(4096, false)`).
const ADDED_PAYLOAD: u16 = 4096;

/// The query's OPT record, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Opt {
    /// The CLASS field: the UDP payload size.
    payload: u16,
    /// The TTL field: extended rcode, version and flags.
    ttl: u32,
    /// The options, in order.
    options: Vec<(u16, Vec<u8>)>,
}

impl Opt {
    /// The OPT record of `request`, or a new one.
    pub(super) fn of(request: &Request<'_>) -> Self {
        let bytes = request.bytes;
        let record = reply::records(bytes).ok().and_then(|records| {
            records
                .into_iter()
                .find(|record| record.section == 3 && record.rtype == rtype::OPT)
        });
        record
            .and_then(|record| Self::parse(bytes.get(record.start..record.end)?))
            .unwrap_or(Self {
                payload: ADDED_PAYLOAD,
                ttl: 0,
                options: Vec::new(),
            })
    }

    /// An OPT record's bytes (its owner the root).
    fn parse(record: &[u8]) -> Option<Self> {
        let fixed = record.get(1..11)?;
        let payload = u16::from_be_bytes([fixed[2], fixed[3]]);
        let ttl = u32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
        let mut rdata = record.get(11..)?;
        let mut options = Vec::new();
        while rdata.len() >= 4 {
            let code = u16::from_be_bytes([rdata[0], rdata[1]]);
            let len = usize::from(u16::from_be_bytes([rdata[2], rdata[3]]));
            let data = rdata.get(4..4 + len)?;
            options.push((code, data.to_vec()));
            rdata = &rdata[4 + len..];
        }
        Some(Self {
            payload,
            ttl,
            options,
        })
    }

    /// The record on the wire.
    pub(super) fn encode(&self) -> Vec<u8> {
        let length: usize = self.options.iter().map(|(_, data)| 4 + data.len()).sum();
        let mut out = Vec::with_capacity(11 + length);
        out.push(0);
        out.extend_from_slice(&rtype::OPT.to_be_bytes());
        out.extend_from_slice(&self.payload.to_be_bytes());
        out.extend_from_slice(&self.ttl.to_be_bytes());
        out.extend_from_slice(&u16::try_from(length).unwrap_or(u16::MAX).to_be_bytes());
        for (code, data) in &self.options {
            out.extend_from_slice(&code.to_be_bytes());
            out.extend_from_slice(&u16::try_from(data.len()).unwrap_or(u16::MAX).to_be_bytes());
            out.extend_from_slice(data);
        }
        out
    }

    fn position(&self, code: u16) -> Option<usize> {
        self.options.iter().position(|(c, _)| *c == code)
    }
}

/// What a rule's data may come from: the query as the rules before it left it.
pub(super) struct Asked<'a> {
    /// The name, lower case with its final dot.
    pub(super) name: &'a str,
    /// The type.
    pub(super) qtype: u16,
    /// The client.
    pub(super) client: SocketAddr,
    /// How it asked.
    pub(super) transport: Transport,
}

/// The EDNS Client Subnet option of `ip` cut to its family's prefix length (RFC 7871 §6:
/// the address truncated to the prefix's bytes).
fn subnet(ip: IpAddr, v4: u8, v6: u8) -> Vec<u8> {
    let (family, length, octets): (u16, u8, Vec<u8>) = match ip {
        IpAddr::V4(v4_ip) => (1, v4, v4_ip.octets().to_vec()),
        IpAddr::V6(v6_ip) => (2, v6, v6_ip.octets().to_vec()),
    };
    let bytes = usize::from(length).div_ceil(8);
    let mut address: Vec<u8> = octets.into_iter().take(bytes).collect();
    let spare = (bytes * 8).saturating_sub(usize::from(length));
    if let Some(last) = address.last_mut() {
        *last &= 0xffu8.checked_shl(spare as u32).unwrap_or(0);
    }
    let mut data = Vec::with_capacity(4 + address.len());
    data.extend_from_slice(&family.to_be_bytes());
    data.push(length);
    data.push(0);
    data.extend_from_slice(&address);
    data
}

/// The data of a `local` rule for `asked`.
fn local_data(data: &Edns0Data, asked: &Asked<'_>) -> Vec<u8> {
    match data {
        Edns0Data::Bytes(bytes) => bytes.clone(),
        Edns0Data::QueryName => asked.name.as_bytes().to_vec(),
        Edns0Data::QueryType => asked.qtype.to_be_bytes().to_vec(),
        Edns0Data::ClientIp => match asked.client.ip() {
            IpAddr::V4(ip) => ip.octets().to_vec(),
            IpAddr::V6(ip) => ip.octets().to_vec(),
        },
        Edns0Data::ClientPort => asked.client.port().to_be_bytes().to_vec(),
        Edns0Data::Protocol => match asked.transport {
            Transport::Udp => b"udp".to_vec(),
            Transport::Tcp => b"tcp".to_vec(),
        },
    }
}

/// Applies `rule` to `opt`: whether it counts as applied.
pub(super) fn apply(rule: &Edns0Rule, opt: &mut Opt, asked: &Asked<'_>) -> bool {
    let (code, data, append_always) = match &rule.option {
        Edns0Option::Local { code, data } => (
            *code,
            local_data(data, asked),
            matches!(data, Edns0Data::Bytes(_)),
        ),
        Edns0Option::Nsid => (NSID, Vec::new(), true),
        Edns0Option::Subnet { v4, v6 } => (SUBNET, subnet(asked.client.ip(), *v4, *v6), false),
    };
    let action = rule.action;
    if action == Edns0Action::Unset {
        opt.options.retain(|(c, _)| *c != code);
        return true;
    }
    if let Some(at) = opt.position(code) {
        match action {
            Edns0Action::Set | Edns0Action::Replace => {
                opt.options[at].1 = data;
                return true;
            }
            _ if !append_always => return false,
            _ => {}
        }
    }
    match action {
        Edns0Action::Set | Edns0Action::Append => {
            opt.options.push((code, data));
            true
        }
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn asked(client: &str) -> Asked<'static> {
        Asked {
            name: "a.example.org.",
            qtype: 1,
            client: client.parse().unwrap_or_else(|e| panic!("{client}: {e}")),
            transport: Transport::Udp,
        }
    }

    fn rule(action: Edns0Action, option: Edns0Option) -> Edns0Rule {
        Edns0Rule {
            action,
            option,
            revert: false,
        }
    }

    fn local(code: u16, data: Edns0Data) -> Edns0Option {
        Edns0Option::Local { code, data }
    }

    fn bytes(text: &str) -> Edns0Data {
        Edns0Data::Bytes(text.as_bytes().to_vec())
    }

    /// CoreDNS's edns0 cases: the rule, the options before, whether it applies, after.
    #[test]
    fn rules() {
        use Edns0Action::*;
        type Options = Vec<(u16, Vec<u8>)>;
        let old: Options = vec![(0xffee, b"old".to_vec())];
        let cases: Vec<(&str, Edns0Rule, Options, bool, Options)> = vec![
            (
                "set adds",
                rule(Set, local(0xffee, bytes("abcd"))),
                vec![],
                true,
                vec![(0xffee, b"abcd".to_vec())],
            ),
            (
                "set changes",
                rule(Set, local(0xffee, bytes("abcd"))),
                old.clone(),
                true,
                vec![(0xffee, b"abcd".to_vec())],
            ),
            (
                "replace without one does nothing",
                rule(Replace, local(0xffee, bytes("abcd"))),
                vec![],
                false,
                vec![],
            ),
            (
                "replace changes",
                rule(Replace, local(0xffee, bytes("abcd"))),
                old.clone(),
                true,
                vec![(0xffee, b"abcd".to_vec())],
            ),
            (
                "append with literal data adds even beside one (CoreDNS's code)",
                rule(Append, local(0xffee, bytes("abcd"))),
                old.clone(),
                true,
                vec![(0xffee, b"old".to_vec()), (0xffee, b"abcd".to_vec())],
            ),
            (
                "append with a variable does not add beside one",
                rule(Append, local(0xffee, Edns0Data::ClientIp)),
                old.clone(),
                false,
                old.clone(),
            ),
            (
                "unset removes every one",
                rule(Unset, local(0xffee, bytes(""))),
                vec![(0xffee, vec![]), (10, vec![1]), (0xffee, vec![2])],
                true,
                vec![(10, vec![1])],
            ),
            (
                "variables",
                rule(Set, local(1, Edns0Data::QueryName)),
                vec![],
                true,
                vec![(1, b"a.example.org.".to_vec())],
            ),
            (
                "qtype",
                rule(Set, local(1, Edns0Data::QueryType)),
                vec![],
                true,
                vec![(1, vec![0, 1])],
            ),
            (
                "client ip",
                rule(Set, local(1, Edns0Data::ClientIp)),
                vec![],
                true,
                vec![(1, vec![10, 1, 2, 3])],
            ),
            (
                "client port",
                rule(Set, local(1, Edns0Data::ClientPort)),
                vec![],
                true,
                vec![(1, vec![0x30, 0x39])],
            ),
            (
                "protocol",
                rule(Set, local(1, Edns0Data::Protocol)),
                vec![],
                true,
                vec![(1, b"udp".to_vec())],
            ),
            (
                "nsid set empties",
                rule(Set, Edns0Option::Nsid),
                vec![(NSID, b"x".to_vec())],
                true,
                vec![(NSID, vec![])],
            ),
            (
                "nsid append adds",
                rule(Append, Edns0Option::Nsid),
                vec![],
                true,
                vec![(NSID, vec![])],
            ),
            (
                "subnet /24",
                rule(Set, Edns0Option::Subnet { v4: 24, v6: 56 }),
                vec![],
                true,
                vec![(SUBNET, vec![0, 1, 24, 0, 10, 1, 2])],
            ),
            (
                "subnet append beside one does nothing",
                rule(Append, Edns0Option::Subnet { v4: 24, v6: 56 }),
                vec![(SUBNET, vec![0, 1, 8, 0, 9])],
                false,
                vec![(SUBNET, vec![0, 1, 8, 0, 9])],
            ),
        ];
        for (name, rule, before, applies, after) in cases {
            let mut opt = Opt {
                payload: 1232,
                ttl: 0,
                options: before,
            };
            assert_eq!(
                apply(&rule, &mut opt, &asked("10.1.2.3:12345")),
                applies,
                "{name}"
            );
            assert_eq!(opt.options, after, "{name}");
        }
    }

    #[test]
    fn subnets_are_cut_to_their_prefix() {
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        assert_eq!(subnet(ip("10.1.255.3"), 20, 56), [0, 1, 20, 0, 10, 1, 0xf0]);
        assert_eq!(subnet(ip("10.1.2.3"), 0, 56), [0, 1, 0, 0]);
        assert_eq!(subnet(ip("10.1.2.3"), 32, 56), [0, 1, 32, 0, 10, 1, 2, 3]);
        assert_eq!(
            subnet(ip("2001:db8:1:2ff::1"), 24, 56),
            [0, 2, 56, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 2]
        );
    }

    #[test]
    fn the_opt_record_round_trips() {
        let opt = Opt {
            payload: 1232,
            ttl: 0x8000,
            options: vec![
                (10, vec![1, 2, 3, 4, 5, 6, 7, 8]),
                (0xffee, b"abcd".to_vec()),
            ],
        };
        let wire = opt.encode();
        assert_eq!(wire.len(), 11 + 12 + 8);
        assert_eq!(Opt::parse(&wire), Some(opt));
        assert_eq!(Opt::parse(&wire[..5]), None);
    }
}
