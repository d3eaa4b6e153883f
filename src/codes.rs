//! The numbers of the DNS protocol: record types, classes, response codes and EDNS0 option
//! codes, in one place for every layer (the zone that prepares records, the wire that writes
//! them, the plugins, the metrics and the logs that name them).
//!
//! The header's layout and flags are the wire's ([`crate::wire`]); the numbers here are the
//! ones a zone, a config or a counter needs too.

/// Record types, by number.
pub mod rtype {
    /// A.
    pub const A: u16 = 1;
    /// NS.
    pub const NS: u16 = 2;
    /// CNAME.
    pub const CNAME: u16 = 5;
    /// SOA.
    pub const SOA: u16 = 6;
    /// PTR.
    pub const PTR: u16 = 12;
    /// HINFO (the *loop* plugin's probe).
    pub const HINFO: u16 = 13;
    /// MX.
    pub const MX: u16 = 15;
    /// TXT.
    pub const TXT: u16 = 16;
    /// AAAA.
    pub const AAAA: u16 = 28;
    /// SRV.
    pub const SRV: u16 = 33;
    /// A naming-authority pointer (RFC 3403).
    pub const NAPTR: u16 = 35;
    /// A delegation of a subtree's names (RFC 6672).
    pub const DNAME: u16 = 39;
    /// OPT (EDNS0 pseudo-record).
    pub const OPT: u16 = 41;
    /// DS.
    pub const DS: u16 = 43;
    /// RRSIG.
    pub const RRSIG: u16 = 46;
    /// NSEC.
    pub const NSEC: u16 = 47;
    /// DNSKEY.
    pub const DNSKEY: u16 = 48;
    /// NSEC3.
    pub const NSEC3: u16 = 50;
    /// HTTPS.
    pub const HTTPS: u16 = 65;
    /// IXFR.
    pub const IXFR: u16 = 251;
    /// AXFR.
    pub const AXFR: u16 = 252;
    /// ANY.
    pub const ANY: u16 = 255;
    /// CAA.
    pub const CAA: u16 = 257;

    /// A type by its mnemonic (`A`, `PTR`, `ANY`, ...; upper case, as CoreDNS takes them).
    pub fn by_name(text: &str) -> Option<u16> {
        use std::str::FromStr;
        match hickory_proto::rr::RecordType::from_str(text) {
            Ok(hickory_proto::rr::RecordType::Unknown(_)) | Err(_) => None,
            Ok(rtype) => Some(u16::from(rtype)),
        }
    }
}

/// Classes, by number.
pub mod class {
    /// IN, the Internet.
    pub const IN: u16 = 1;
    /// CS, CSNET.
    pub const CS: u16 = 2;
    /// CH, Chaos.
    pub const CH: u16 = 3;
    /// HS, Hesiod.
    pub const HS: u16 = 4;
    /// NONE (RFC 2136).
    pub const NONE: u16 = 254;
    /// ANY.
    pub const ANY: u16 = 255;

    /// A class by its mnemonic (miekg/dns's `StringToClass`).
    pub fn by_name(text: &str) -> Option<u16> {
        Some(match text {
            "IN" => IN,
            "CS" => CS,
            "CH" => CH,
            "HS" => HS,
            "NONE" => NONE,
            "ANY" => ANY,
            _ => return None,
        })
    }
}

/// Response codes, with the extended ones (over 15) carried partly in OPT.
pub mod rcode {
    /// No error.
    pub const NOERROR: u16 = 0;
    /// Format error.
    pub const FORMERR: u16 = 1;
    /// Server failure.
    pub const SERVFAIL: u16 = 2;
    /// Name error.
    pub const NXDOMAIN: u16 = 3;
    /// Not implemented.
    pub const NOTIMP: u16 = 4;
    /// Refused.
    pub const REFUSED: u16 = 5;
    /// A name exists that should not (RFC 2136).
    pub const YXDOMAIN: u16 = 6;
    /// An RRset exists that should not (RFC 2136).
    pub const YXRRSET: u16 = 7;
    /// An RRset that should exist does not (RFC 2136).
    pub const NXRRSET: u16 = 8;
    /// Not authoritative (RFC 2136), or not authorized (RFC 8945).
    pub const NOTAUTH: u16 = 9;
    /// A name not in the zone (RFC 2136).
    pub const NOTZONE: u16 = 10;
    /// Bad OPT version (RFC 6891), or a TSIG signature that fails (RFC 8945).
    pub const BADVERS: u16 = 16;
    /// Key not recognized (RFC 8945).
    pub const BADKEY: u16 = 17;
    /// Signature out of its time window (RFC 8945).
    pub const BADTIME: u16 = 18;
    /// Bad TKEY mode (RFC 2930).
    pub const BADMODE: u16 = 19;
    /// Duplicate key name (RFC 2930).
    pub const BADNAME: u16 = 20;
    /// Algorithm not supported (RFC 2930).
    pub const BADALG: u16 = 21;
    /// Bad truncation (RFC 8945).
    pub const BADTRUNC: u16 = 22;
    /// Bad or missing server cookie (RFC 7873).
    pub const BADCOOKIE: u16 = 23;

    /// An rcode by its name (miekg/dns's `StringToRcode`).
    pub fn by_name(text: &str) -> Option<u16> {
        Some(match text {
            "NOERROR" => NOERROR,
            "FORMERR" => FORMERR,
            "SERVFAIL" => SERVFAIL,
            "NXDOMAIN" => NXDOMAIN,
            "NOTIMP" => NOTIMP,
            "REFUSED" => REFUSED,
            "YXDOMAIN" => YXDOMAIN,
            "YXRRSET" => YXRRSET,
            "NXRRSET" => NXRRSET,
            "NOTAUTH" => NOTAUTH,
            "NOTZONE" => NOTZONE,
            "BADSIG" | "BADVERS" => BADVERS,
            "BADKEY" => BADKEY,
            "BADTIME" => BADTIME,
            "BADMODE" => BADMODE,
            "BADNAME" => BADNAME,
            "BADALG" => BADALG,
            "BADTRUNC" => BADTRUNC,
            "BADCOOKIE" => BADCOOKIE,
            _ => return None,
        })
    }
}

/// EDNS0 option codes (RFC 6891 §6.1.2).
pub mod option {
    /// NSID (RFC 5001).
    pub const NSID: u16 = 3;
    /// EDNS Client Subnet (RFC 7871).
    pub const SUBNET: u16 = 8;
    /// Extended DNS Error (RFC 8914).
    pub const EDE: u16 = 15;
}

/// The mnemonic dig prints for an rcode (`NOERROR`, `NXDOMAIN`, ...).
pub fn rcode_name(code: u16) -> &'static str {
    match code {
        rcode::NOERROR => "NOERROR",
        rcode::FORMERR => "FORMERR",
        rcode::SERVFAIL => "SERVFAIL",
        rcode::NXDOMAIN => "NXDOMAIN",
        rcode::NOTIMP => "NOTIMP",
        rcode::REFUSED => "REFUSED",
        rcode::YXDOMAIN => "YXDOMAIN",
        rcode::YXRRSET => "YXRRSET",
        rcode::NXRRSET => "NXRRSET",
        rcode::NOTAUTH => "NOTAUTH",
        rcode::NOTZONE => "NOTZONE",
        rcode::BADVERS => "BADVERS",
        _ => "RESERVED",
    }
}
