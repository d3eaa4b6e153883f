//! The request path: one query through the server — its block, then the block's plugin
//! chain ([`super::chain`]), in CoreDNS's order — with *prometheus*, *log* and *errors*
//! around it.
//!
//! [`Handler::respond`] is synchronous and answers everything that needs no upstream (the
//! cluster zone, *hosts*, *template*, cache hits, errors) on the spot; a query that must go
//! upstream comes back as [`Outcome::Forward`] for [`Handler::complete`] to finish
//! asynchronously.
//!
//! An ExternalName whose target lies outside its zone is *chased* (CoreDNS's
//! `Upstream.Lookup`): the target is asked through this handler again, and the reply is the
//! CNAME followed by the target's records. A template's CNAME is chased the same way.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_proto::rr::Record;

use super::chain::autopath;
use super::chain::chase::{Chase, Chased, Chaser};
use super::chain::forward::{self, Upstream};
use super::chain::{Ctx, End, Query, Revert, fit};
use super::{Block, Pending, Transport};
use crate::metrics::dns::{Family, Observation, Proto, ServerMetrics, Writer};
use crate::name::suffix_offset;
use crate::plugin::Plugin;
use crate::querylog::Entry;
use crate::search_tracker::live::Watch;
use crate::wire::{self, Malformed, OwnedRequest, Request, rcode, reply};

/// Answers messages for the blocks that share one listener.
#[derive(Debug)]
pub struct Handler {
    blocks: Vec<Arc<Block>>,
    /// The address the listener is bound to (`{local}` in query logs).
    local: SocketAddr,
    /// Queries no block takes (zone `dropped`), when metrics are on.
    dropped: Option<Arc<ServerMetrics>>,
    /// The search-path tracker, when metrics are on and it is not turned off.
    search_path: Option<Watch>,
}

/// Where one query's walk through the server ends ([`Handler::route`]).
enum Routed {
    /// Answered: the reply is in the output buffer, counted and logged.
    Answered,
    /// On its way upstream.
    Forward(Box<Pending>),
    /// A CNAME to chase: unanswered, not yet counted or logged.
    Chase(Box<Chase>),
    /// A zone transfer's records.
    Transfer(Vec<Record>),
}

/// A reply on its way to the client ([`Handler::deliver`]), and how far it is made for them.
#[derive(Clone, Copy)]
enum Made<'b> {
    /// Written for the client by the step that answered, or the server's own error: in the
    /// output buffer, shuffled for *loadbalance* and cut to the client's size.
    Written,
    /// Whole, as an upstream, a chase or *autopath*'s walk made it: still to shuffle and cut.
    Whole(&'b [u8]),
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
            search_path: None,
        }
    }

    /// With `watch` following clients' search-path walks.
    pub fn with_search_path(mut self, watch: Watch) -> Self {
        self.search_path = Some(watch);
        self
    }

    /// The search-path tracker this handler feeds, if any.
    pub fn search_path(&self) -> Option<&Watch> {
        self.search_path.as_ref()
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
        match self.route(packet, &request, client, transport, started, false, out) {
            Routed::Answered => Outcome::Reply,
            Routed::Forward(pending) => Outcome::Forward(pending),
            Routed::Chase(chase) => self.chase(chase, &request, client, transport, started, out),
            Routed::Transfer(records) => Outcome::Transfer(records),
        }
    }

    /// One query through its block's chain, and where it ends up. `chased`: the query is a
    /// chase's lookup of a target, not the client's.
    #[allow(clippy::too_many_arguments)]
    fn route(
        &self,
        packet: &[u8],
        request: &Request<'_>,
        client: SocketAddr,
        transport: Transport,
        started: Instant,
        chased: bool,
        out: &mut Vec<u8>,
    ) -> Routed {
        // An IPv4 client of a dual-stack `[::]` socket arrives as `::ffff:a.b.c.d`: to ACLs,
        // metrics and logs it is the IPv4 client it is.
        let client = SocketAddr::new(client.ip().to_canonical(), client.port());
        if request.edns.is_some_and(|edns| edns.version != 0) {
            wire::write_rcode(request, rcode::BADVERS, out);
            return Routed::Answered;
        }
        let qname = request.question.name();
        let Some((block, zone)) = self.block_for(qname) else {
            wire::write_rcode(request, rcode::REFUSED, out);
            if let Some(dropped) = &self.dropped {
                dropped.record(&observation(
                    request,
                    out,
                    client,
                    transport,
                    Writer::Server,
                    Duration::ZERO,
                ));
            }
            return Routed::Answered;
        };
        let ctx = Ctx {
            block,
            zone,
            client,
            transport,
            started,
            request,
            chased,
            dry: false,
        };
        let mut q = Query::new(&block.chain, packet, request, transport);
        let end = block.chain.run(&ctx, 0, &mut q, out);
        let revert = q.revert.take();
        match end {
            End::Reply(plugin) => {
                // *rewrite*'s `cname` rule: the new target is asked next.
                if let Some(retarget) = revert.as_ref().and_then(|revert| revert.retarget(out)) {
                    let original = std::mem::take(out);
                    let mut chase =
                        Chase::retarget(block, zone, request, retarget, original, plugin);
                    chase.revert = revert;
                    return Routed::Chase(chase);
                }
                self.deliver(&ctx, request, Made::Written, plugin, revert.as_deref(), out);
                Routed::Answered
            }
            End::Refused => {
                wire::write_rcode(request, rcode::REFUSED, out);
                self.deliver(&ctx, request, Made::Written, Writer::Server, None, out);
                Routed::Answered
            }
            End::Forward(mut pending) => {
                pending.revert = revert;
                Routed::Forward(pending)
            }
            End::Chase(mut chase) => {
                chase.revert = revert;
                Routed::Chase(chase)
            }
            End::Transfer(records) => Routed::Transfer(records),
        }
    }

    /// Finishes a query [`respond`](Self::respond) sent upstream, writing the reply into `out`.
    pub async fn complete(&self, mut pending: Box<Pending>, out: &mut Vec<u8>) {
        let Some(mut chase) = pending.chase.take() else {
            return self.complete_plain(pending, out).await;
        };
        let request = pending.query.request();
        let ctx = Ctx {
            block: &pending.block,
            zone: pending.zone,
            client: pending.client,
            transport: pending.transport,
            started: pending.started,
            request: &request,
            chased: pending.chased,
            dry: false,
        };
        let revert = chase.revert.take();
        let plugin = chase.plugin;
        let retargeted = chase.retargeted;
        let mut merged = self.chase_complete(chase).await;
        if !retargeted {
            merged = self
                .retargeted(&ctx, &request, merged, revert.as_deref(), plugin)
                .await;
        }
        self.deliver(
            &ctx,
            &request,
            Made::Whole(&merged),
            plugin,
            revert.as_deref(),
            out,
        );
    }

    /// *rewrite*'s `cname` rule on a whole reply: the reply with its retargeted CNAME and
    /// the new target's answers, or `bytes` as they were when the rule takes none of its
    /// CNAMEs.
    async fn retargeted(
        &self,
        ctx: &Ctx<'_>,
        request: &Request<'_>,
        bytes: Vec<u8>,
        revert: Option<&Revert>,
        plugin: Writer,
    ) -> Vec<u8> {
        let Some(retarget) = revert.and_then(|revert| revert.retarget(&bytes)) else {
            return bytes;
        };
        let chase = Chase::retarget(ctx.block, ctx.zone, request, retarget, bytes, plugin);
        match self.chase_step(chase, ctx.request.bytes, ctx.client, ctx.transport) {
            Chased::Done(merged) => merged,
            Chased::Upstream(chase) => self.chase_complete(chase).await,
        }
    }

    /// [`complete`](Self::complete) for a query that is not a CNAME's chase.
    async fn complete_plain(&self, pending: Box<Pending>, out: &mut Vec<u8>) {
        let Pending {
            block,
            zone,
            query,
            asked,
            client,
            transport,
            started,
            chased,
            forwarder,
            autopath,
            chase: _,
            revert,
        } = *pending;
        let request = query.request();
        let ctx = Ctx {
            block: &block,
            zone,
            client,
            transport,
            started,
            request: &request,
            chased,
            dry: false,
        };
        // The query as the chain sent it on (rewritten, its payload lowered by *bufsize*).
        let asked_request = asked
            .as_ref()
            .map_or_else(|| request.clone(), OwnedRequest::request);
        let asked = asked_request.bytes;
        let revert = revert.as_deref();
        if let Some(rest) = autopath {
            match autopath::complete(self, &ctx, &request, asked, *rest).await {
                Some((bytes, plugin)) => {
                    let made = Made::Whole(&bytes);
                    self.deliver(&ctx, &request, made, plugin.into(), revert, out);
                }
                None => {
                    wire::write_rcode(&request, rcode::SERVFAIL, out);
                    let autopath = Plugin::Autopath.into();
                    self.deliver(&ctx, &request, Made::Written, autopath, None, out);
                }
            }
            return;
        }
        let limit = block.chain.limit(&request, transport);
        let upstream = forward::upstream(
            &block.chain,
            forwarder,
            &asked_request,
            transport,
            limit,
            out,
        );
        let (error, stale) = match upstream.await {
            Upstream::Reply(bytes) => {
                let bytes = self
                    .retargeted(&ctx, &request, bytes, revert, Plugin::Forward.into())
                    .await;
                let made = Made::Whole(&bytes);
                self.deliver(&ctx, &request, made, Plugin::Forward.into(), revert, out);
                return;
            }
            Upstream::Refused => {
                wire::write_rcode(&request, rcode::REFUSED, out);
                let forward = Plugin::Forward.into();
                self.deliver(&ctx, &request, Made::Written, forward, None, out);
                return;
            }
            Upstream::Stale(error) => (error, true),
            Upstream::Failed(error) => (error, false),
        };
        if let Some(errors) = &block.errors {
            errors.report(&request, rcode::SERVFAIL, &error, Instant::now());
        }
        if !stale {
            wire::write_rcode(&request, rcode::SERVFAIL, out);
            let forward = Plugin::Forward.into();
            self.deliver(&ctx, &request, Made::Written, forward, None, out);
            return;
        }
        // `serve_stale verify`: the cache's expired answer is in `out`, written for the
        // client as a fresh hit is, and shuffled as one is.
        block.chain.shuffle_out(out);
        self.deliver(
            &ctx,
            &request,
            Made::Written,
            Plugin::Cache.into(),
            revert,
            out,
        );
    }

    /// A CNAME whose target lies outside the zone: the target asked through this server
    /// again — every block, *cache* and *forward* included — as CoreDNS's `Upstream.Lookup`
    /// does; what needs no upstream is answered at once.
    fn chase(
        &self,
        mut chase: Box<Chase>,
        request: &Request<'_>,
        client: SocketAddr,
        transport: Transport,
        started: Instant,
        out: &mut Vec<u8>,
    ) -> Outcome {
        let packet = request.bytes;
        let block = Arc::clone(&chase.block);
        let zone = chase.zone;
        let revert = chase.revert.take();
        let plugin = chase.plugin;
        let retargeted = chase.retargeted;
        match self.chase_step(chase, packet, client, transport) {
            Chased::Done(merged) => {
                // *rewrite*'s `cname` rule on the chased reply: once.
                if !retargeted
                    && let Some(retarget) = revert.as_ref().and_then(|r| r.retarget(&merged))
                {
                    let mut next = Chase::retarget(&block, zone, request, retarget, merged, plugin);
                    next.revert = revert;
                    return self.chase(next, request, client, transport, started, out);
                }
                let ctx = Ctx {
                    block: &block,
                    zone,
                    client,
                    transport,
                    started,
                    request,
                    chased: false,
                    dry: false,
                };
                let made = Made::Whole(&merged);
                self.deliver(&ctx, request, made, plugin, revert.as_deref(), out);
                Outcome::Reply
            }
            Chased::Upstream(mut chase) => {
                chase.revert = revert;
                Outcome::Forward(Box::new(Pending {
                    block,
                    zone,
                    query: OwnedRequest::new(request),
                    asked: None,
                    client,
                    transport,
                    started,
                    chased: false,
                    forwarder: 0,
                    autopath: None,
                    chase: Some(chase),
                    revert: None,
                }))
            }
        }
    }

    /// Every reply of a block leaves through here, with the reply-side plugins applied in
    /// `plugin.cfg` order, as CoreDNS's response writers apply them (the plugin nearest the
    /// answer first): *rewrite* turns it back for the client, *loadbalance* shuffles it, it is
    /// cut to the client's size (EDNS, *bufsize*, truncation), then [`finish`](Self::finish)
    /// counts and logs it for `plugin`. A reply a step [`Made::Written`] is already shuffled and
    /// cut; without a *rewrite* to revert it goes out as written, copied nowhere.
    fn deliver(
        &self,
        at: &Ctx<'_>,
        request: &Request<'_>,
        made: Made<'_>,
        plugin: Writer,
        revert: Option<&Revert>,
        out: &mut Vec<u8>,
    ) {
        match (made, revert) {
            (Made::Written, None) => {}
            (Made::Written, Some(revert)) => {
                let mut whole = std::mem::take(out);
                revert.apply(&mut whole);
                fit(at, request, &whole, out);
            }
            (Made::Whole(bytes), revert) => {
                let reverted = revert.map(|revert| {
                    let mut whole = bytes.to_vec();
                    revert.apply(&mut whole);
                    whole
                });
                let whole = reverted.as_deref().unwrap_or(bytes);
                fit(at, request, &at.block.chain.shuffled(whole), out);
            }
        }
        self.finish(at, request, out, plugin);
    }

    /// What every answered query goes through last: the search-path tracker (the client's
    /// own queries: a chase's lookup is no step of its walk), *prometheus* and *log*.
    fn finish(&self, at: &Ctx<'_>, request: &Request<'_>, reply: &[u8], plugin: Writer) {
        let block = at.block;
        if let Some(watch) = self.search_path.as_ref().filter(|_| !at.chased) {
            watch.observe(
                at.client.ip(),
                request.question.name(),
                request.question.qtype,
                // The header's four bits: NOERROR and NXDOMAIN are all the tracker tells
                // apart, and reading them parses nothing.
                reply
                    .get(3)
                    .map_or(rcode::SERVFAIL, |flags| u16::from(flags & 0x0f)),
                at.started,
            );
        }
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

impl Chaser for Handler {
    /// Follows `chase` as far as the server answers without an upstream: the merged reply, or
    /// the chase waiting for the upstream's answer to its last target.
    fn chase_step(
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
            let Ok(request) = Request::parse(&asked) else {
                return Chased::Done(chase.merge(None));
            };
            let mut reply = Vec::new();
            match self.route(
                &asked,
                &request,
                client,
                transport,
                Instant::now(),
                true,
                &mut reply,
            ) {
                Routed::Answered => return Chased::Done(chase.merge(Some(&reply))),
                Routed::Forward(pending) => {
                    chase.upstream = Some(pending);
                    return Chased::Upstream(chase);
                }
                Routed::Transfer(_) => return Chased::Done(chase.merge(None)),
                Routed::Chase(next) => {
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
    fn chase_complete(
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
}

/// How many names a chase asks before it counts as a loop (CoreDNS's
/// `maxCnameChainLength`).
const MAX_CHASE: usize = 10;

impl Pending {
    /// For an ExternalName's chase waiting for an upstream: the reply so far (the CNAMEs,
    /// NOERROR, whole) and the name that goes upstream.
    pub fn chase_so_far(&self) -> Option<(Vec<u8>, String)> {
        let chase = self.chase.as_ref()?;
        let mut so_far = chase.merge(None);
        if let Some(revert) = &chase.revert {
            revert.apply(&mut so_far);
        }
        Some((so_far, chase.target.to_string()))
    }
}

/// CoreDNS's `vars.Report` arguments for one reply.
fn observation(
    request: &Request<'_>,
    reply: &[u8],
    client: SocketAddr,
    transport: Transport,
    plugin: Writer,
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

/// What to send back for one message.
#[derive(Debug)]
pub enum Outcome {
    /// The reply is in the output buffer.
    Reply,
    /// Send nothing.
    Drop,
    /// A zone transfer: these records, in order, over as many messages as needed.
    Transfer(Vec<Record>),
    /// The query goes upstream: finish it with [`Handler::complete`].
    Forward(Box<Pending>),
}
