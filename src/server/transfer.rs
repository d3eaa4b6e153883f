//! Zone transfers (AXFR, and IXFR answered as CoreDNS's *transfer* plugin does): the whole
//! zone, SOA first and last, to the clients a `transfer { to ... }` block allows.

use std::net::IpAddr;

use super::{Block, Outcome, Transport};
use crate::codes::rtype;
use crate::wire::{self, Request, rcode};
use crate::zone::name::suffix_offset;
use crate::zone::zonefile;

/// Answers an AXFR or IXFR query for `block`.
pub(super) fn respond(
    block: &Block,
    request: &Request<'_>,
    client: IpAddr,
    transport: Transport,
    out: &mut Vec<u8>,
) -> Outcome {
    let qname = request.question.name();
    // A `transfer` directive covers the zones at and below its own (CoreDNS
    // `plugin.Zones.Matches`); the zone itself must be one the plugin serves.
    let allowed = block.transfer.iter().any(|transfer| {
        transfer
            .zones
            .iter()
            .any(|zone| suffix_offset(qname, zone.as_bytes()).is_some())
            && transfer.config.to.iter().any(|peer| peer.allows(client))
    });
    let Some(kubernetes) = block.kubernetes.as_ref().filter(|_| allowed) else {
        wire::write_rcode(request, rcode::REFUSED, out);
        return Outcome::Reply;
    };
    let snapshot = kubernetes.store.snapshot();
    let Some(zone) = snapshot
        .zones()
        .iter()
        .position(|zone| zone.origin().as_bytes() == qname)
    else {
        wire::write_rcode(request, rcode::REFUSED, out);
        return Outcome::Reply;
    };
    if transport == Transport::Udp {
        // Transfers need TCP; a UDP request gets REFUSED, as from CoreDNS.
        wire::write_rcode(request, rcode::REFUSED, out);
        return Outcome::Reply;
    }
    let records = zonefile::zone_records(&snapshot, zone);
    let Some(soa) = records.first().cloned() else {
        wire::write_rcode(request, rcode::SERVFAIL, out);
        return Outcome::Reply;
    };
    let current = snapshot.serial();
    if request.question.qtype == rtype::IXFR
        && request
            .soa_serial
            .is_some_and(|theirs| !serial_lt(theirs, current))
    {
        // The client is up to date: IXFR answers with the SOA alone.
        return Outcome::Transfer(vec![soa]);
    }
    tracing::info!(zone = %snapshot.zones()[zone].origin(), %client, records = records.len(), "outgoing zone transfer");
    let mut stream = records;
    stream.push(soa);
    Outcome::Transfer(stream)
}

/// RFC 1982 serial number arithmetic: whether `a` is older than `b`.
fn serial_lt(a: u32, b: u32) -> bool {
    a != b && b.wrapping_sub(a) < 0x8000_0000
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
