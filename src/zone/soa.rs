//! The zones the plugin is authoritative for, and their SOA.

use std::borrow::Cow;

use crate::name::WireName;

/// One zone the plugin is authoritative for.
#[derive(Debug, Clone)]
pub struct ServedZone {
    pub(super) origin: WireName,
    pub(super) reverse: bool,
    /// A `multicluster` zone: answered from ServiceImports, not Services.
    pub(super) multicluster: bool,
    pub(super) soa: Soa,
    /// The labels of the SOA's MNAME and RNAME in front of the origin, in wire format.
    pub(super) soa_prefixes: (Cow<'static, [u8]>, Cow<'static, [u8]>),
}

/// The cluster zone's SOA names: `ns.dns.<zone>` and `hostmaster.<zone>` (CoreDNS
/// `plugin/kubernetes`).
pub(crate) const CLUSTER_SOA_PREFIXES: (Cow<'static, [u8]>, Cow<'static, [u8]>) = (
    Cow::Borrowed(b"\x02ns\x03dns"),
    Cow::Borrowed(b"\x0ahostmaster"),
);

/// The SOA fields, as CoreDNS writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Soa {
    /// TTL of the SOA record itself: `min(ttl, 300)`.
    pub ttl: u32,
    /// Serial: the time of the last change, monotonic.
    pub serial: u32,
    /// 7200.
    pub refresh: u32,
    /// 1800.
    pub retry: u32,
    /// 86400.
    pub expire: u32,
    /// The negative-caching TTL: the plugin's `ttl`.
    pub minimum: u32,
}

impl Soa {
    /// The SOA of a zone whose records use `ttl`.
    pub fn new(ttl: u32, serial: u32) -> Self {
        Self {
            ttl: ttl.min(300),
            serial,
            refresh: 7200,
            retry: 1800,
            expire: 86400,
            minimum: ttl,
        }
    }

    /// The five integers that end the SOA RDATA.
    pub fn tail(&self) -> [u8; 20] {
        let mut out = [0u8; 20];
        for (index, value) in [
            self.serial,
            self.refresh,
            self.retry,
            self.expire,
            self.minimum,
        ]
        .into_iter()
        .enumerate()
        {
            out[index * 4..index * 4 + 4].copy_from_slice(&value.to_be_bytes());
        }
        out
    }
}

impl ServedZone {
    /// The zone's apex, lower case.
    pub fn origin(&self) -> &WireName {
        &self.origin
    }

    /// Whether this is a reverse (`in-addr.arpa`/`ip6.arpa`) zone.
    pub fn is_reverse(&self) -> bool {
        self.reverse
    }

    /// Whether this is a `multicluster` zone (its Services are ServiceImports).
    pub fn is_multicluster(&self) -> bool {
        self.multicluster
    }

    /// The zone's SOA fields.
    pub fn soa(&self) -> Soa {
        self.soa
    }

    /// The labels of the SOA's MNAME and RNAME in front of the origin, in wire format
    /// (`ns.dns` and `hostmaster` for the cluster zone).
    pub fn soa_prefixes(&self) -> (&[u8], &[u8]) {
        (&self.soa_prefixes.0, &self.soa_prefixes.1)
    }
}
