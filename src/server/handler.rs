//! The request path: one query through a block's plugins, in CoreDNS's order — *loop*'s
//! probe check, *transfer*, *kubernetes*, then *cache* and *forward* for what the cluster
//! zone does not answer — with *prometheus*, *log*, *errors* and *loadbalance* around them.
//!
//! [`Handler::respond`] is synchronous and answers everything that needs no upstream (the
//! cluster zone, cache hits, errors) on the spot; a query that must go upstream comes back as
//! [`Outcome::Forward`] for [`Handler::complete`] to finish asynchronously.

mod autopath;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Block, Outcome, Pending, Transport, transfer};
use crate::cache::Hit;
use crate::forward::Forwarded;
use crate::metrics::dns::{Family, Observation, Plugin, Proto, ServerMetrics};
use crate::querylog::Entry;
use crate::wire::{self, Malformed, Request, rcode, reply};
use crate::zone::Rcode;
use crate::zone::name::suffix_offset;
use crate::zone::rrset::rtype;

pub(crate) use self::autopath::AutopathRest;

/// Answers messages for the blocks that share one listener.
#[derive(Debug)]
pub struct Handler {
    blocks: Vec<Arc<Block>>,
    /// The address the listener is bound to (`{local}` in query logs).
    local: SocketAddr,
    /// Queries no block takes (zone `dropped`), when metrics are on.
    dropped: Option<Arc<ServerMetrics>>,
}

/// Where a query got to: its block and zone, and what metrics and logs need.
struct Reached<'b> {
    block: &'b Block,
    /// Index of the block zone the name fell in.
    zone: usize,
    client: SocketAddr,
    transport: Transport,
    started: Instant,
}

impl Handler {
    /// A handler over the blocks bound to one address and port.
    pub fn new(blocks: Vec<Arc<Block>>) -> Self {
        Self::bound(blocks, SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// A handler over the blocks bound to `local`.
    pub fn bound(blocks: Vec<Arc<Block>>, local: SocketAddr) -> Self {
        Self {
            blocks,
            local,
            dropped: None,
        }
    }

    /// With `dropped` counting the queries no block takes.
    pub fn with_dropped(mut self, dropped: Arc<ServerMetrics>) -> Self {
        self.dropped = Some(dropped);
        self
    }

    /// The blocks this handler serves.
    pub fn blocks(&self) -> &[Arc<Block>] {
        &self.blocks
    }

    /// Answers one message, writing the reply into `out`; a query for upstream comes back as
    /// [`Outcome::Forward`].
    pub fn respond(
        &self,
        packet: &[u8],
        client: SocketAddr,
        transport: Transport,
        out: &mut Vec<u8>,
    ) -> Outcome {
        let started = Instant::now();
        // An IPv4 client of a dual-stack `[::]` socket arrives as `::ffff:a.b.c.d`: to ACLs,
        // metrics and logs it is the IPv4 client it is.
        let client = SocketAddr::new(client.ip().to_canonical(), client.port());
        let request = match Request::parse(packet) {
            Ok(request) => request,
            Err(Malformed::Ignore) => return Outcome::Drop,
            Err(Malformed::Reply {
                id, flags, rcode, ..
            }) => {
                wire::write_malformed(id, flags, rcode, out);
                return Outcome::Reply;
            }
        };
        if request.edns.is_some_and(|edns| edns.version != 0) {
            wire::write_rcode(&request, rcode::BADVERS, out);
            return Outcome::Reply;
        }
        let qname = request.question.name();
        let Some((block, zone)) = self.block_for(qname) else {
            wire::write_rcode(&request, rcode::REFUSED, out);
            if let Some(dropped) = &self.dropped {
                dropped.record(&observation(
                    &request,
                    out,
                    client,
                    transport,
                    Plugin::Server,
                    Duration::ZERO,
                ));
            }
            return Outcome::Reply;
        };
        let at = Reached {
            block,
            zone,
            client,
            transport,
            started,
        };
        if !wire::is_internet_class(request.question.qclass) {
            wire::write_rcode(&request, rcode::REFUSED, out);
            self.finish(&at, &request, out, Plugin::Server);
            return Outcome::Reply;
        }
        let qtype = request.question.qtype;
        if let Some(probe) = &block.loop_detect
            && probe.observe(qname, qtype)
        {
            tracing::error!(
                "loop detected for zone {}: a query this server sent to itself came back through \
                 forward three times; the upstream forwards back to this server. Forwarding is \
                 off for this block (SERVFAIL for names it would forward); the cluster zone is \
                 still answered. Point forward at resolvers that do not send queries back here.",
                block
                    .zones
                    .first()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            );
        }
        if qtype == rtype::AXFR || qtype == rtype::IXFR {
            let outcome = transfer::respond(block, &request, client.ip(), transport, out);
            if matches!(outcome, Outcome::Reply) {
                self.finish(&at, &request, out, Plugin::Transfer);
            }
            return outcome;
        }
        if let Some(outcome) = autopath::respond(self, block, &at, &request, packet, out) {
            return outcome;
        }
        let limit = limit(&request, transport);
        if let Some(kubernetes) = &block.kubernetes {
            let snapshot = kubernetes.store.load();
            if let Some(answer) = snapshot.lookup(qname, qtype) {
                // `fallthrough` hands an NXDOMAIN on to the rest of the block's chain.
                let nxdomain = answer.rcode == Rcode::NxDomain;
                let passes = nxdomain && kubernetes.falls_through(qname);
                if nxdomain && !passes && kubernetes.provisional() {
                    wire::write_rcode(&request, rcode::SERVFAIL, out);
                    self.finish(&at, &request, out, Plugin::Kubernetes);
                    return Outcome::Reply;
                }
                if !passes {
                    let zone = &snapshot.zones()[answer.zone];
                    wire::write_answer(&request, &answer, zone, limit, block.loadbalance, out);
                    self.finish(&at, &request, out, Plugin::Kubernetes);
                    return Outcome::Reply;
                }
            }
        }
        let Some(forwarder) = block.forward.iter().position(|f| f.matches(qname)) else {
            // The end of the chain: nothing in the block serves the name, nothing forwards it.
            wire::write_rcode(&request, rcode::REFUSED, out);
            self.finish(&at, &request, out, Plugin::Server);
            return Outcome::Reply;
        };
        if block
            .loop_detect
            .as_ref()
            .is_some_and(|probe| probe.looping())
        {
            wire::write_rcode(&request, rcode::SERVFAIL, out);
            self.finish(&at, &request, out, Plugin::Loop);
            return Outcome::Reply;
        }
        let pending = |packet: &[u8]| {
            Outcome::Forward(Box::new(Pending {
                block: Arc::clone(block),
                zone,
                packet: packet.to_vec(),
                client,
                transport,
                started,
                forwarder,
                autopath: None,
            }))
        };
        let Some(cache) = block.cache.as_ref().filter(|cache| cache.covers(qname)) else {
            return pending(packet);
        };
        let refresh = match cache.get(&request, started, limit, out) {
            Some(Hit::Fresh) => false,
            Some(Hit::Prefetch) => true,
            Some(Hit::Stale) if !cache.stale_is_verified() => true,
            Some(Hit::Stale) | None => return pending(packet),
        };
        if block.loadbalance
            && let Some(shuffled) = reply::shuffle(out)
        {
            *out = shuffled;
        }
        self.finish(&at, &request, out, Plugin::Cache);
        if refresh {
            refresh_in_background(Arc::clone(block), packet.to_vec(), forwarder);
        }
        Outcome::Reply
    }

    /// Finishes a query [`respond`](Self::respond) sent upstream, writing the reply into `out`.
    pub async fn complete(&self, pending: Box<Pending>, out: &mut Vec<u8>) {
        let Pending {
            block,
            zone,
            packet,
            client,
            transport,
            started,
            forwarder,
            autopath,
        } = *pending;
        let Ok(request) = Request::parse(&packet) else {
            return;
        };
        let at = Reached {
            block: &block,
            zone,
            client,
            transport,
            started,
        };
        if let Some(rest) = autopath {
            autopath::complete(self, &at, &request, &packet, *rest, out).await;
            return;
        }
        let limit = limit(&request, transport);
        let qname = request.question.name();
        let mut last = None;
        let mut failure = None;
        for forwarder in block.forward[forwarder..]
            .iter()
            .filter(|f| f.matches(qname))
        {
            match forwarder.forward(&packet, transport).await {
                Forwarded::Reply(bytes) => {
                    last = Some(bytes);
                    break;
                }
                // `next`: this forward's answer stands only if no other forward follows.
                Forwarded::Next(bytes) => last = Some(bytes),
                Forwarded::Refused => {
                    wire::write_rcode(&request, rcode::REFUSED, out);
                    self.finish(&at, &request, out, Plugin::Forward);
                    return;
                }
                Forwarded::Failed(error) => {
                    failure = Some(error.to_string());
                    break;
                }
            }
        }
        let cache = block.cache.as_ref().filter(|cache| cache.covers(qname));
        let mut plugin = Plugin::Forward;
        match last {
            Some(bytes) => {
                if let Some(cache) = cache {
                    cache.put(&request, &bytes, Instant::now());
                }
                let bytes = if block.loadbalance {
                    reply::shuffle(&bytes).unwrap_or(bytes)
                } else {
                    bytes
                };
                if reply::fit_for_client(&bytes, request.id, request.edns.as_ref(), limit, out)
                    .is_err()
                {
                    wire::write_rcode(&request, rcode::SERVFAIL, out);
                }
            }
            None => {
                let error = failure.unwrap_or_else(|| "no forward matched".to_owned());
                if let Some(errors) = &block.errors {
                    errors.report(&request, rcode::SERVFAIL, &error, Instant::now());
                }
                // `serve_stale verify`: the upstream failed, an expired answer is better.
                let stale = cache.is_some_and(|cache| {
                    cache.stale_is_verified()
                        && cache.get(&request, Instant::now(), limit, out) == Some(Hit::Stale)
                });
                if stale {
                    plugin = Plugin::Cache;
                } else {
                    wire::write_rcode(&request, rcode::SERVFAIL, out);
                }
            }
        }
        self.finish(&at, &request, out, plugin);
    }

    /// What every answered query goes through last: *prometheus* and *log*.
    fn finish(&self, at: &Reached<'_>, request: &Request<'_>, reply: &[u8], plugin: Plugin) {
        let block = at.block;
        if block.metrics.is_empty() && block.logs.is_empty() {
            return;
        }
        let duration = at.started.elapsed();
        if let Some(metrics) = block.metrics.get(at.zone) {
            metrics.record(&observation(
                request,
                reply,
                at.client,
                at.transport,
                plugin,
                duration,
            ));
        }
        if block.logs.is_empty() {
            return;
        }
        let entry = Entry {
            remote: at.client,
            local: self.local,
            proto: match at.transport {
                Transport::Udp => "udp",
                Transport::Tcp => "tcp",
            },
            request,
            reply,
            duration,
        };
        for log in &block.logs {
            log.log(&entry);
        }
    }

    /// The block whose zones hold `qname` most specifically (CoreDNS's server-block match),
    /// and which of its zones that is.
    fn block_for(&self, qname: &[u8]) -> Option<(&Arc<Block>, usize)> {
        let mut best: Option<(&Arc<Block>, usize, usize)> = None;
        for block in &self.blocks {
            for (index, zone) in block.zones.iter().enumerate() {
                let len = zone.as_bytes().len();
                if suffix_offset(qname, zone.as_bytes()).is_some()
                    && best.is_none_or(|(_, _, best_len)| len > best_len)
                {
                    best = Some((block, index, len));
                }
            }
        }
        best.map(|(block, index, _)| (block, index))
    }
}

/// CoreDNS's `vars.Report` arguments for one reply.
fn observation(
    request: &Request<'_>,
    reply: &[u8],
    client: SocketAddr,
    transport: Transport,
    plugin: Plugin,
    duration: Duration,
) -> Observation {
    Observation {
        proto: match transport {
            Transport::Udp => Proto::Udp,
            Transport::Tcp => Proto::Tcp,
        },
        family: Family::of(client.ip()),
        qtype: request.question.qtype,
        rcode: reply::rcode(reply).unwrap_or(rcode::SERVFAIL),
        plugin,
        request_size: request.bytes.len(),
        response_size: reply.len(),
        duration,
        dnssec_ok: request.edns.is_some_and(|edns| edns.dnssec_ok),
    }
}

/// The largest reply the client takes.
fn limit(request: &Request<'_>, transport: Transport) -> usize {
    match transport {
        Transport::Udp => request.udp_limit(),
        Transport::Tcp => usize::from(u16::MAX),
    }
}

/// `prefetch` and `serve_stale immediate`: ask upstream again and store the answer, after
/// the client has had the cached one. Offline (no runtime), there is nothing to refresh for.
fn refresh_in_background(block: Arc<Block>, packet: Vec<u8>, forwarder: usize) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let Ok(request) = Request::parse(&packet) else {
            return;
        };
        let Some(forward) = block.forward.get(forwarder) else {
            return;
        };
        if let Forwarded::Reply(bytes) = forward.forward(&packet, Transport::Udp).await
            && let Some(cache) = &block.cache
        {
            cache.put(&request, &bytes, Instant::now());
        }
    });
}
