//! Zone transfers (AXFR, and IXFR answered as CoreDNS's *transfer* plugin does): the whole
//! zone, SOA first and last, to the clients a `transfer { to ... }` block allows.

use std::net::IpAddr;

use super::kubernetes::Kubernetes;
use super::{End, Flow};
use crate::codes::rtype;
use crate::config::TransferConfig;
use crate::name::wire_zones;
use crate::name::{WireName, suffix_offset};
use crate::plugin::Plugin;
use crate::server::Transport;
use crate::wire::{self, Request, rcode};
use crate::zone::zonefile;
use super::lifecycle::{Build, Lifecycle};
use super::{Ctx, PluginChain, Query};
use crate::server::error::StartError;

/// *transfer*: the block's `transfer` directives (none refuses every transfer).
#[derive(Debug)]
pub(crate) struct Transfer {
    rules: Vec<Rule>,
}

/// One `transfer` directive.
#[derive(Debug)]
struct Rule {
    zones: Vec<WireName>,
    config: TransferConfig,
}

impl Transfer {
    /// The step of `directives`, for a block of `zones` (a directive without zones takes
    /// the block's).
    pub(crate) fn new(directives: &[TransferConfig], zones: &[WireName]) -> Self {
        let rules = directives
            .iter()
            .map(|transfer| Rule {
                zones: if transfer.zones.is_empty() {
                    zones.to_vec()
                } else {
                    wire_zones(&transfer.zones)
                },
                config: transfer.clone(),
            })
            .collect();
        Self { rules }
    }

    /// The step: an AXFR or IXFR query is answered with the zone's records (or refused);
    /// any other passes on.
    pub(crate) fn respond(
        &self,
        kubernetes: Option<&Kubernetes>,
        request: &Request<'_>,
        client: IpAddr,
        transport: Transport,
        out: &mut Vec<u8>,
    ) -> Flow {
        let qtype = request.question.qtype;
        if qtype != rtype::AXFR && qtype != rtype::IXFR {
            return Flow::Pass;
        }
        let refused = |out: &mut Vec<u8>| {
            wire::write_rcode(request, rcode::REFUSED, out);
            Flow::reply(Plugin::Transfer)
        };
        let qname = request.question.name();
        // A `transfer` directive covers the zones at and below its own (CoreDNS
        // `plugin.Zones.Matches`); the zone itself must be one the plugin serves.
        let allowed = self.rules.iter().any(|transfer| {
            transfer
                .zones
                .iter()
                .any(|zone| suffix_offset(qname, zone.as_bytes()).is_some())
                && transfer.config.to.iter().any(|peer| peer.allows(client))
        });
        let Some(kubernetes) = kubernetes.filter(|_| allowed) else {
            return refused(out);
        };
        let snapshot = kubernetes.store.snapshot();
        let Some(zone) = snapshot
            .zones()
            .iter()
            .position(|zone| zone.origin().as_bytes() == qname)
        else {
            return refused(out);
        };
        if transport == Transport::Udp {
            // Transfers need TCP; a UDP request gets REFUSED, as from CoreDNS.
            return refused(out);
        }
        let records = zonefile::zone_records(&snapshot, zone);
        let Some(soa) = records.first().cloned() else {
            wire::write_rcode(request, rcode::SERVFAIL, out);
            return Flow::reply(Plugin::Transfer);
        };
        let current = snapshot.serial();
        if request.question.qtype == rtype::IXFR
            && request
                .soa_serial
                .is_some_and(|theirs| !serial_lt(theirs, current))
        {
            // The client is up to date: IXFR answers with the SOA alone.
            return End::Transfer(vec![soa]).into();
        }
        tracing::info!(zone = %snapshot.zones()[zone].origin(), %client, records = records.len(), "outgoing zone transfer");
        let mut stream = records;
        stream.push(soa);
        End::Transfer(stream).into()
    }
}

/// RFC 1982 serial number arithmetic: whether `a` is older than `b`.
fn serial_lt(a: u32, b: u32) -> bool {
    a != b && b.wrapping_sub(a) < 0x8000_0000
}

impl Lifecycle for Transfer {
    const INTERNET_ONLY: bool = true;

    /// Every block has the step: without a `transfer` directive it refuses every transfer.
    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        Ok(Some(Self::new(&at.config.plugins.transfer, at.zones)))
    }

    #[inline]
    fn answer(
        &self,
        chain: &PluginChain,
        ctx: &Ctx<'_>,
        _index: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        self.respond(
            chain.kubernetes(),
            q.request,
            ctx.client.ip(),
            ctx.transport,
            out,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::serial_lt;

    #[test]
    fn serial_arithmetic_wraps() {
        assert!(serial_lt(1, 2));
        assert!(!serial_lt(2, 1));
        assert!(!serial_lt(5, 5));
        assert!(serial_lt(u32::MAX, 0));
        assert!(!serial_lt(0, u32::MAX));
    }
}
