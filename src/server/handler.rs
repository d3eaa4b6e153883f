//! The request path: one query through a block's plugins, in CoreDNS's order — *loop*'s
//! probe check, *transfer*, *kubernetes*, then *cache* and *forward* for what the cluster
//! zone does not answer — with *prometheus*, *log*, *errors* and *loadbalance* around them.
//!
//! [`Handler::respond`] is synchronous and answers everything that needs no upstream (the
//! cluster zone, cache hits, errors) on the spot; a query that must go upstream comes back as
//! [`Outcome::Forward`] for [`Handler::complete`] to finish asynchronously.
//!
//! An ExternalName whose target lies outside its zone is *chased* (CoreDNS's
//! `Upstream.Lookup`): the target is asked through this handler again, and the reply is the
//! CNAME followed by the target's records.

mod autopath;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, ResponseCode};

use super::{Block, Outcome, Pending, Transport, transfer};
use crate::cache::Hit;
use crate::forward::Forwarded;
use crate::metrics::dns::{Family, Observation, Plugin, Proto, ServerMetrics};
use crate::querylog::Entry;
use crate::wire::{self, Malformed, Request, rcode, reply};
use crate::zone::name::{WireName, suffix_offset};
use crate::zone::rrset::rtype;
use crate::zone::{Answer, Rcode, ServedZone};

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
        match self.step(packet, client, transport, started, out) {
            Step::Done(outcome) => outcome,
            Step::Chase(chase) => self.chase(chase, packet, client, transport, started, out),
        }
    }

    /// [`respond`](Self::respond), except that an ExternalName whose target lies outside
    /// the zone comes back as [`Step::Chase`], unanswered and not yet logged.
    fn step(
        &self,
        packet: &[u8],
        client: SocketAddr,
        transport: Transport,
        started: Instant,
        out: &mut Vec<u8>,
    ) -> Step {
        // An IPv4 client of a dual-stack `[::]` socket arrives as `::ffff:a.b.c.d`: to ACLs,
        // metrics and logs it is the IPv4 client it is.
        let client = SocketAddr::new(client.ip().to_canonical(), client.port());
        let request = match Request::parse(packet) {
            Ok(request) => request,
            Err(Malformed::Ignore) => return Step::Done(Outcome::Drop),
            Err(Malformed::Reply {
                id, flags, rcode, ..
            }) => {
                wire::write_malformed(id, flags, rcode, out);
                return Step::Done(Outcome::Reply);
            }
        };
        if request.edns.is_some_and(|edns| edns.version != 0) {
            wire::write_rcode(&request, rcode::BADVERS, out);
            return Step::Done(Outcome::Reply);
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
            return Step::Done(Outcome::Reply);
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
            return Step::Done(Outcome::Reply);
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
            return Step::Done(outcome);
        }
        if let Some(outcome) = autopath::respond(self, block, &at, &request, packet, out) {
            return Step::Done(outcome);
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
                    return Step::Done(Outcome::Reply);
                }
                if !passes {
                    let zone = &snapshot.zones()[answer.zone];
                    if let Some(target) = answer.chase {
                        return Step::Chase(Chase::new(
                            block, at.zone, &request, &answer, zone, target,
                        ));
                    }
                    wire::write_answer(&request, &answer, zone, limit, block.loadbalance, out);
                    self.finish(&at, &request, out, Plugin::Kubernetes);
                    return Step::Done(Outcome::Reply);
                }
            }
        }
        let Some(forwarder) = block.forward.iter().position(|f| f.matches(qname)) else {
            // The end of the chain: nothing in the block serves the name, nothing forwards it.
            wire::write_rcode(&request, rcode::REFUSED, out);
            self.finish(&at, &request, out, Plugin::Server);
            return Step::Done(Outcome::Reply);
        };
        if block
            .loop_detect
            .as_ref()
            .is_some_and(|probe| probe.looping())
        {
            wire::write_rcode(&request, rcode::SERVFAIL, out);
            self.finish(&at, &request, out, Plugin::Loop);
            return Step::Done(Outcome::Reply);
        }
        // A query for upstream that is this server's own forward coming back: a loop. (Not
        // the *loop* plugin's probe, which must come back for the plugin to see it.)
        let probe = block
            .loop_detect
            .as_ref()
            .is_some_and(|probe| qtype == rtype::HINFO && qname == probe.probe().as_bytes());
        let looping = || {
            !probe && crate::forward::is_looping(client.ip(), qname, qtype, request.question.qclass)
        };
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
                chase: None,
            }))
        };
        let Some(cache) = block.cache.as_ref().filter(|cache| cache.covers(qname)) else {
            if looping() {
                return Step::Done(self.looped(&at, &request, out));
            }
            return Step::Done(pending(packet));
        };
        let refresh = match cache.get(&request, started, limit, out) {
            Some(Hit::Fresh) => false,
            Some(Hit::Prefetch) => true,
            Some(Hit::Stale) if !cache.stale_is_verified() => true,
            Some(Hit::Stale) | None if looping() => {
                return Step::Done(self.looped(&at, &request, out));
            }
            Some(Hit::Stale) | None => return Step::Done(pending(packet)),
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
        Step::Done(Outcome::Reply)
    }

    /// Finishes a query [`respond`](Self::respond) sent upstream, writing the reply into `out`.
    pub async fn complete(&self, mut pending: Box<Pending>, out: &mut Vec<u8>) {
        let Some(chase) = pending.chase.take() else {
            return self.complete_plain(pending, out).await;
        };
        let Ok(request) = Request::parse(&pending.packet) else {
            return;
        };
        let at = Reached {
            block: &pending.block,
            zone: pending.zone,
            client: pending.client,
            transport: pending.transport,
            started: pending.started,
        };
        let merged = self.chase_complete(chase).await;
        self.deliver(&at, &request, &merged, out, Plugin::Kubernetes);
    }

    /// [`complete`](Self::complete) for a query that is not an ExternalName's chase.
    async fn complete_plain(&self, pending: Box<Pending>, out: &mut Vec<u8>) {
        let Pending {
            block,
            zone,
            packet,
            client,
            transport,
            started,
            forwarder,
            autopath,
            chase: _,
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
            autopath::complete(self, &block, &at, &request, &packet, *rest, out).await;
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

    /// An ExternalName whose target lies outside the zone: the target asked through this
    /// server again — every block, *cache* and *forward* included — as CoreDNS's
    /// `Upstream.Lookup` does; what needs no upstream is answered at once.
    fn chase(
        &self,
        chase: Box<Chase>,
        packet: &[u8],
        client: SocketAddr,
        transport: Transport,
        started: Instant,
        out: &mut Vec<u8>,
    ) -> Outcome {
        let Ok(request) = Request::parse(packet) else {
            return Outcome::Drop;
        };
        let block = Arc::clone(&chase.block);
        let zone = chase.zone;
        match self.chase_step(chase, packet, client, transport) {
            Chased::Done(merged) => {
                let at = Reached {
                    block: &block,
                    zone,
                    client,
                    transport,
                    started,
                };
                self.deliver(&at, &request, &merged, out, Plugin::Kubernetes);
                Outcome::Reply
            }
            Chased::Upstream(chase) => Outcome::Forward(Box::new(Pending {
                block,
                zone,
                packet: packet.to_vec(),
                client,
                transport,
                started,
                forwarder: 0,
                autopath: None,
                chase: Some(chase),
            })),
        }
    }

    /// Follows `chase` as far as the server answers without an upstream: the merged reply, or
    /// the chase waiting for the upstream's answer to its last target.
    pub(crate) fn chase_step(
        &self,
        mut chase: Box<Chase>,
        packet: &[u8],
        client: SocketAddr,
        transport: Transport,
    ) -> Chased {
        loop {
            let target = chase.target.to_lowercase();
            // A target seen before in this chase (names in two zones pointing at each
            // other) or a chain longer than CoreDNS follows: what an in-zone loop gives.
            if chase.visited.len() > MAX_CHASE || chase.visited.contains(&target) {
                return Chased::Done(std::mem::take(&mut chase.nodata));
            }
            chase.visited.push(target);
            let Some(asked) = autopath::ask_as(packet, &chase.target) else {
                return Chased::Done(chase.merge(None));
            };
            let mut reply = Vec::new();
            match self.step(&asked, client, transport, Instant::now(), &mut reply) {
                Step::Done(Outcome::Reply) => return Chased::Done(chase.merge(Some(&reply))),
                Step::Done(Outcome::Forward(pending)) => {
                    chase.upstream = Some(pending);
                    return Chased::Upstream(chase);
                }
                Step::Done(Outcome::Drop | Outcome::Transfer(_)) => {
                    return Chased::Done(chase.merge(None));
                }
                Step::Chase(next) => {
                    let Chase {
                        replies, target, ..
                    } = *next;
                    chase.replies.extend(replies);
                    chase.target = target;
                }
            }
        }
    }

    /// Finishes a chase that went upstream: the merged reply. Boxed, as a trait object:
    /// the target's query may be an *autopath* walk, which may chase again.
    pub(crate) fn chase_complete(
        &self,
        mut chase: Box<Chase>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<u8>> + Send + '_>> {
        Box::pin(async move {
            let Some(pending) = chase.upstream.take() else {
                return chase.merge(None);
            };
            let mut reply = Vec::new();
            self.complete_plain(pending, &mut reply).await;
            chase.merge((!reply.is_empty()).then_some(&reply[..]))
        })
    }

    /// Sends a reply made of other replies (a chase's, autopath's): shuffled for
    /// *loadbalance*, cut to the client's size, counted for `plugin`.
    fn deliver(
        &self,
        at: &Reached<'_>,
        request: &Request<'_>,
        bytes: &[u8],
        out: &mut Vec<u8>,
        plugin: Plugin,
    ) {
        let shuffled = if at.block.loadbalance {
            reply::shuffle(bytes)
        } else {
            None
        };
        fit(at, request, shuffled.as_deref().unwrap_or(bytes), out);
        self.finish(at, request, out, plugin);
    }

    /// Answers a query that is this server's own forward come back: SERVFAIL at once.
    fn looped(&self, at: &Reached<'_>, request: &Request<'_>, out: &mut Vec<u8>) -> Outcome {
        wire::write_rcode(request, rcode::SERVFAIL, out);
        self.finish(at, request, out, Plugin::Forward);
        Outcome::Reply
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

/// `bytes` (a whole reply) cut to the client's size into `out`; SERVFAIL if it cannot be.
fn fit(at: &Reached<'_>, request: &Request<'_>, bytes: &[u8], out: &mut Vec<u8>) {
    if reply::fit_for_client(
        bytes,
        request.id,
        request.edns.as_ref(),
        limit(request, at.transport),
        out,
    )
    .is_err()
    {
        wire::write_rcode(request, rcode::SERVFAIL, out);
    }
}

/// How many names a chase asks before it counts as a loop (CoreDNS's
/// `maxCnameChainLength`).
const MAX_CHASE: usize = 10;

/// What [`Handler::step`] came to.
enum Step {
    /// Answered, or on its way upstream.
    Done(Outcome),
    /// An ExternalName to chase.
    Chase(Box<Chase>),
}

/// Where a chase got to without an upstream.
pub(crate) enum Chased {
    /// The reply for the question asked, whole (not yet cut to the client's size).
    Done(Vec<u8>),
    /// Waiting for the upstream's answer to the last target.
    Upstream(Box<Chase>),
}

/// An ExternalName's chase: the CNAMEs so far, and the name to ask next.
#[derive(Debug)]
pub(crate) struct Chase {
    /// The block and zone of the question asked.
    block: Arc<Block>,
    zone: usize,
    /// The replies, in order, whose answers make the chain: the first answers the question
    /// asked (its header and question are the reply's); the others, targets in other zones.
    replies: Vec<Vec<u8>>,
    /// The reply for a loop: NODATA for the question asked.
    nodata: Vec<u8>,
    /// The next name to ask.
    target: WireName,
    /// The names asked so far, lower case (the question asked first).
    visited: Vec<WireName>,
    /// The last target's query, gone upstream.
    upstream: Option<Box<Pending>>,
}

impl Chase {
    /// The chase of `answer`, the zone's answer to `request`, whose chain ends at `target`.
    pub(crate) fn new(
        block: &Arc<Block>,
        zone_index: usize,
        request: &Request<'_>,
        answer: &Answer<'_>,
        zone: &ServedZone,
        target: &[u8],
    ) -> Box<Self> {
        let mut reply = Vec::new();
        wire::write_answer(
            request,
            answer,
            zone,
            usize::from(u16::MAX),
            false,
            &mut reply,
        );
        let mut nodata = Vec::new();
        let empty = Answer {
            rcode: crate::zone::Rcode::NoError,
            zone: answer.zone,
            answer: Default::default(),
            additional: Default::default(),
            chase: None,
        };
        wire::write_answer(
            request,
            &empty,
            zone,
            usize::from(u16::MAX),
            false,
            &mut nodata,
        );
        Box::new(Self {
            block: Arc::clone(block),
            zone: zone_index,
            replies: vec![reply],
            nodata,
            target: WireName::from_wire_unchecked(target.to_vec()),
            visited: vec![WireName::from_wire_unchecked(
                request.question.name().to_vec(),
            )],
            upstream: None,
        })
    }

    /// The chain's reply, ending with `last`, the reply for the last target: its records
    /// follow the CNAMEs with their own TTLs, and its rcode (NOERROR or NXDOMAIN) is the
    /// reply's. Without a usable `last` (the upstream failed, SERVFAIL, REFUSED) the CNAMEs
    /// alone, NOERROR, as CoreDNS answers.
    fn merge(&self, last: Option<&[u8]>) -> Vec<u8> {
        let first = &self.replies[0];
        let Ok(mut message) = Message::from_vec(first) else {
            return first.clone();
        };
        for reply in &self.replies[1..] {
            if let Ok(reply) = Message::from_vec(reply) {
                message.answers.extend(reply.answers);
            }
        }
        if let Some(last) = last.and_then(|last| Message::from_vec(last).ok()) {
            let code = last.metadata.response_code;
            if matches!(code, ResponseCode::NoError | ResponseCode::NXDomain) {
                if last.answers.is_empty() {
                    // The target's negative answer, with the SOA its zone gives.
                    message.authorities = last.authorities;
                }
                message.answers.extend(last.answers);
                message.metadata.response_code = code;
                message.metadata.truncation |= last.metadata.truncation;
            }
        }
        message.to_vec().unwrap_or_else(|_| first.clone())
    }
}

impl Pending {
    /// For an ExternalName's chase waiting for an upstream: the reply so far (the CNAMEs,
    /// NOERROR, whole) and the name that goes upstream.
    pub fn chase_so_far(&self) -> Option<(Vec<u8>, String)> {
        let chase = self.chase.as_ref()?;
        Some((chase.merge(None), chase.target.to_string()))
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
