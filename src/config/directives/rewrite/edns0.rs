//! `rewrite [continue|stop] edns0 local|nsid|subnet set|replace|append|unset ...` (CoreDNS's
//! `newEdns0Rule`): what a rule does to the EDNS0 options of the query passed on.
//!
//! * `local set|replace|append CODE DATA [revert]`: an option of CODE (`0xffee`, decimal or
//!   any Go integer spelling up to 65535) with DATA: `0x...` is hex, `{qname}`, `{qtype}`,
//!   `{client_ip}`, `{client_port}` and `{protocol}` are the query's, anything else the bytes
//!   as written. `local unset CODE` removes it.
//! * `nsid set|replace|append [revert]`: an empty NSID option; `nsid unset` removes it.
//! * `subnet set|replace|append V4LEN V6LEN [revert]`: an EDNS Client Subnet option of the
//!   client's address cut to the prefix length of its family; `subnet unset` removes it.
//!
//! `{server_ip}` and `{server_port}` (the address the query came in on) and metadata labels
//! (`{plugin/label}`, which need the *metadata* plugin) are refused as not supported.

use super::refusal::Refusal;

/// One `edns0` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edns0Rule {
    /// What it does with a matching option.
    pub action: Edns0Action,
    /// The option.
    pub option: Edns0Option,
    /// `revert`: the option is not in the reply (the reply's OPT record is always the
    /// server's own here, so this changes nothing).
    pub revert: bool,
}

/// What an `edns0` rule does (CoreDNS's actions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edns0Action {
    /// `set`: the matching option changed, or the option added.
    Set,
    /// `replace`: the matching option changed; nothing when there is none.
    Replace,
    /// `append`: the option added when there is no matching one.
    Append,
    /// `unset`: the matching option removed.
    Unset,
}

/// The option an `edns0` rule is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edns0Option {
    /// `local CODE DATA`: an option of that code.
    Local {
        /// The option code.
        code: u16,
        /// Its data.
        data: Edns0Data,
    },
    /// `nsid`: NSID (code 3), empty.
    Nsid,
    /// `subnet V4LEN V6LEN`: EDNS Client Subnet (code 8) of the client's address.
    Subnet {
        /// The prefix length for an IPv4 client.
        v4: u8,
        /// The prefix length for an IPv6 client.
        v6: u8,
    },
}

/// The data of a `local` option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edns0Data {
    /// Bytes as written (hex when written `0x...`).
    Bytes(Vec<u8>),
    /// The query's `{qname}`: its name as text, with the final dot.
    QueryName,
    /// `{qtype}`: its type, two bytes.
    QueryType,
    /// `{client_ip}`: the client's address, 4 or 16 bytes.
    ClientIp,
    /// `{client_port}`: the client's port, two bytes.
    ClientPort,
    /// `{protocol}`: `udp` or `tcp`.
    Protocol,
}

/// A Go `strconv.ParseUint(text, 0, 16)`: decimal, `0x` hex, `0o`/`0` octal, `0b` binary.
fn code(text: &str) -> Result<u16, String> {
    let lower = text.to_ascii_lowercase();
    let parsed = if let Some(hex) = lower.strip_prefix("0x") {
        u16::from_str_radix(hex, 16)
    } else if let Some(binary) = lower.strip_prefix("0b") {
        u16::from_str_radix(binary, 2)
    } else if let Some(octal) = lower.strip_prefix("0o") {
        u16::from_str_radix(octal, 8)
    } else if lower.len() > 1 && lower.starts_with('0') {
        u16::from_str_radix(&lower[1..], 8)
    } else {
        lower.parse::<u16>()
    };
    parsed
        .map_err(|_| format!("strconv.ParseUint: parsing {text:?}: invalid syntax or out of range"))
}

/// A prefix length of a `subnet` rule, at most `max`.
fn prefix(text: &str, family: &str, max: u8) -> Result<u8, String> {
    let length = code(text)?;
    u8::try_from(length)
        .ok()
        .filter(|length| *length <= max)
        .ok_or_else(|| format!("invalid {family} bit mask length {length}"))
}

/// The data of a `local` rule.
fn data(text: &str) -> Result<Edns0Data, Refusal> {
    if text.starts_with('{') && text.ends_with('}') {
        return match text {
            "{qname}" => Ok(Edns0Data::QueryName),
            "{qtype}" => Ok(Edns0Data::QueryType),
            "{client_ip}" => Ok(Edns0Data::ClientIp),
            "{client_port}" => Ok(Edns0Data::ClientPort),
            "{protocol}" => Ok(Edns0Data::Protocol),
            "{server_ip}" | "{server_port}" => Err(Refusal::Unsupported {
                field: "edns0",
                reason: "the {server_ip} and {server_port} variables are not implemented",
            }),
            _ if text.contains('/') => Err(Refusal::Unsupported {
                field: "edns0",
                reason: "metadata variables need the metadata plugin, which clusterdns does not \
                         implement",
            }),
            _ => Err(format!("unsupported variable name {text:?}").into()),
        };
    }
    match text.strip_prefix("0x") {
        Some(hex) => decode_hex(hex)
            .map(Edns0Data::Bytes)
            .ok_or_else(|| format!("encoding/hex: invalid hex data {hex:?}").into()),
        None => Ok(Edns0Data::Bytes(text.as_bytes().to_vec())),
    }
}

/// Hex digits as bytes (an even number of them).
fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
        .collect()
}

/// Parses the arguments of an `edns0` rule (after `edns0`).
pub(super) fn edns0_rule(args: &[&str]) -> Result<Edns0Rule, Refusal> {
    let [kind, action, ..] = args else {
        return Err("too few arguments for an EDNS0 rule".to_owned().into());
    };
    let kind = kind.to_lowercase();
    let action = match action.to_lowercase().as_str() {
        "set" => Edns0Action::Set,
        "replace" => Edns0Action::Replace,
        "append" => Edns0Action::Append,
        "unset" => Edns0Action::Unset,
        other => return Err(format!("invalid action: {other:?}").into()),
    };
    if action == Edns0Action::Unset {
        let option = match (kind.as_str(), args.len()) {
            ("local", 3) => Edns0Option::Local {
                code: code(args[2])?,
                data: Edns0Data::Bytes(Vec::new()),
            },
            ("local", _) => {
                return Err("local unset action requires exactly two arguments"
                    .to_owned()
                    .into());
            }
            ("nsid", 2) => Edns0Option::Nsid,
            ("nsid", _) => {
                return Err("nsid unset action requires exactly one argument"
                    .to_owned()
                    .into());
            }
            ("subnet", 2) => Edns0Option::Subnet { v4: 0, v6: 0 },
            ("subnet", _) => {
                return Err("subnet unset action requires exactly one argument"
                    .to_owned()
                    .into());
            }
            _ => return Err(format!("invalid rule type {kind:?}").into()),
        };
        return Ok(Edns0Rule {
            action,
            option,
            revert: false,
        });
    }
    let (args, revert) = match args.split_last() {
        Some((&"revert", rest)) => (rest, true),
        _ => (args, false),
    };
    let option = match kind.as_str() {
        "local" => {
            let [_, _, code_text, data_text] = args else {
                return Err("EDNS0 local rules require three or four args"
                    .to_owned()
                    .into());
            };
            Edns0Option::Local {
                code: code(code_text)?,
                data: data(data_text)?,
            }
        }
        "nsid" => {
            if args.len() != 2 {
                return Err("EDNS0 NSID rules can accept no more than one arg"
                    .to_owned()
                    .into());
            }
            Edns0Option::Nsid
        }
        "subnet" => {
            let [_, _, v4, v6] = args else {
                return Err("EDNS0 subnet rules require three or four args"
                    .to_owned()
                    .into());
            };
            Edns0Option::Subnet {
                v4: prefix(v4, "IPv4", 32)?,
                v6: prefix(v6, "IPv6", 128)?,
            }
        }
        _ => return Err(format!("invalid rule type {kind:?}").into()),
    };
    Ok(Edns0Rule {
        action,
        option,
        revert,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::RewriteAction;
    use crate::config::test_support::{Invalid, Valid, check_invalid, check_valid};

    fn edns0_of(s: &crate::config::ServerBlock) -> &Edns0Rule {
        match &s.plugins.rewrite[0].action {
            RewriteAction::Edns0(rule) => rule,
            other => panic!("not an edns0 rule: {other:?}"),
        }
    }

    fn is(s: &crate::config::ServerBlock, action: Edns0Action, option: Edns0Option) -> bool {
        *edns0_of(s)
            == Edns0Rule {
                action,
                option,
                revert: false,
            }
    }

    #[test]
    fn valid() {
        use Edns0Action::*;
        let cases: &[Valid<'_>] = &[
            ("local text", " rewrite edns0 local set 0xffee abcd", |s| {
                is(
                    s,
                    Set,
                    Edns0Option::Local {
                        code: 0xffee,
                        data: Edns0Data::Bytes(b"abcd".to_vec()),
                    },
                )
            }),
            (
                "local hex",
                " rewrite edns0 local replace 65518 0x61626364",
                |s| {
                    is(
                        s,
                        Replace,
                        Edns0Option::Local {
                            code: 0xffee,
                            data: Edns0Data::Bytes(b"abcd".to_vec()),
                        },
                    )
                },
            ),
            (
                "local variable, revert",
                " rewrite edns0 local append 0xffed {client_ip} revert",
                |s| {
                    *edns0_of(s)
                        == Edns0Rule {
                            action: Append,
                            option: Edns0Option::Local {
                                code: 0xffed,
                                data: Edns0Data::ClientIp,
                            },
                            revert: true,
                        }
                },
            ),
            ("local unset", " rewrite edns0 local unset 0xffee", |s| {
                is(
                    s,
                    Unset,
                    Edns0Option::Local {
                        code: 0xffee,
                        data: Edns0Data::Bytes(Vec::new()),
                    },
                )
            }),
            ("nsid", " rewrite edns0 nsid set", |s| {
                is(s, Set, Edns0Option::Nsid)
            }),
            ("nsid unset", " rewrite edns0 NSID UNSET", |s| {
                is(s, Unset, Edns0Option::Nsid)
            }),
            ("subnet", " rewrite edns0 subnet set 24 56", |s| {
                is(s, Set, Edns0Option::Subnet { v4: 24, v6: 56 })
            }),
            ("subnet unset", " rewrite edns0 subnet unset", |s| {
                is(s, Unset, Edns0Option::Subnet { v4: 0, v6: 0 })
            }),
            ("octal code", " rewrite edns0 local set 017 x", |s| {
                matches!(edns0_of(s).option, Edns0Option::Local { code: 15, .. })
            }),
        ];
        check_valid(cases);
    }

    #[test]
    fn invalid() {
        let cases: &[Invalid<'_>] = &[
            Invalid {
                name: "too few",
                input: " rewrite edns0 local",
                line: 2,
                kind: "Invalid",
                message: "too few arguments for an EDNS0 rule",
            },
            Invalid {
                name: "action",
                input: " rewrite edns0 local add 0xffee abcd",
                line: 2,
                kind: "Invalid",
                message: "invalid action: \"add\"",
            },
            Invalid {
                name: "local arguments",
                input: " rewrite edns0 local set 0xffee",
                line: 2,
                kind: "Invalid",
                message: "EDNS0 local rules require three or four args",
            },
            Invalid {
                name: "local unset arguments",
                input: " rewrite edns0 local unset",
                line: 2,
                kind: "Invalid",
                message: "local unset action requires exactly two arguments",
            },
            Invalid {
                name: "nsid arguments",
                input: " rewrite edns0 nsid set x",
                line: 2,
                kind: "Invalid",
                message: "EDNS0 NSID rules can accept no more than one arg",
            },
            Invalid {
                name: "subnet arguments",
                input: " rewrite edns0 subnet set 24",
                line: 2,
                kind: "Invalid",
                message: "EDNS0 subnet rules require three or four args",
            },
            Invalid {
                name: "IPv4 length",
                input: " rewrite edns0 subnet set 33 56",
                line: 2,
                kind: "Invalid",
                message: "invalid IPv4 bit mask length 33",
            },
            Invalid {
                name: "IPv6 length",
                input: " rewrite edns0 subnet set 24 129",
                line: 2,
                kind: "Invalid",
                message: "invalid IPv6 bit mask length 129",
            },
            Invalid {
                name: "code",
                input: " rewrite edns0 local set 0xfffff abcd",
                line: 2,
                kind: "Invalid",
                message: "strconv.ParseUint",
            },
            Invalid {
                name: "hex",
                input: " rewrite edns0 local set 0xffee 0xabc",
                line: 2,
                kind: "Invalid",
                message: "invalid hex data",
            },
            Invalid {
                name: "variable",
                input: " rewrite edns0 local set 0xffee {nope}",
                line: 2,
                kind: "Invalid",
                message: "unsupported variable name \"{nope}\"",
            },
            Invalid {
                name: "type",
                input: " rewrite edns0 cookie set 1",
                line: 2,
                kind: "Invalid",
                message: "invalid rule type \"cookie\"",
            },
            Invalid {
                name: "metadata",
                input: " rewrite edns0 local set 0xffee {kubernetes/pod}",
                line: 2,
                kind: "UnsupportedProperty",
                message: "metadata plugin",
            },
        ];
        check_invalid(cases);
    }
}
