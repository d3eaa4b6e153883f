//! *forward* on the request path, with the *cache* in front of it: all that a query for
//! upstream meets, in one place (*loop*, which guards it, is [`super::loop_detect`]).
//!
//! The chain's step ([`Forward::respond`]) takes a name one of the block's `forward`s
//! matches: a cached answer goes back at once (fetched again in the background when it is
//! due for `prefetch` or served stale), anything else goes upstream, packed as [`End::Forward`].
//! The handler finishes it asynchronously with [`upstream`]: the `forward`s in file order
//! (`next` moving on), the answer stored in the cache, and an expired answer served when
//! every upstream failed and `serve_stale verify` allows it. *autopath*'s walk asks the
//! names it forwards through [`walk_upstream`].
//!
//! *cache* holds what *forward* brings back and nothing else (docs/differences.md: the
//! cluster zone is never cached), so its step at its place in `plugin.cfg` only says the
//! block has one; its lookups and stores are here, where the upstream is.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use super::lifecycle::{Build, Lifecycle, Start};
use super::{Ctx, End, Flow, PluginChain, Query};
use crate::cache::Hit;
use crate::codes::rtype;
use crate::forward::{Forwarded, Forwarder, forward_metrics};
use crate::metrics::{Collect, Exposition};
use crate::plugin::Plugin;
use crate::server::error::StartError;
use crate::server::{Block, Transport};
use crate::wire::{self, OwnedRequest, Request, rcode};

/// *forward*: the block's `forward` directives, in file order.
#[derive(Debug)]
pub(crate) struct Forward {
    forwarders: Vec<Arc<Forwarder>>,
}

impl Forward {
    /// The step of `forwarders`.
    pub(crate) fn new(forwarders: Vec<Arc<Forwarder>>) -> Self {
        Self { forwarders }
    }

    /// The `forward`s, in file order.
    pub(crate) fn forwarders(&self) -> &[Arc<Forwarder>] {
        &self.forwarders
    }

    /// The first `forward` that takes `qname`.
    pub(super) fn first_for(&self, qname: &[u8]) -> Option<usize> {
        self.forwarders.iter().position(|f| f.matches(qname))
    }

    /// The step: *cache* first, a cached answer now, else the name goes upstream. Passes
    /// on when no `forward` takes the name.
    pub(crate) fn respond(
        &self,
        chain: &PluginChain,
        ctx: &Ctx<'_>,
        q: &Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        let request = q.request;
        let qname = request.question.name();
        let qtype = request.question.qtype;
        let Some(forwarder) = self.first_for(qname) else {
            return Flow::Pass;
        };
        // A query for upstream that is this server's own forward coming back: a loop. (Not
        // the *loop* plugin's probe, which must come back for the plugin to see it.)
        let probe = chain
            .get::<super::loop_detect::Loop>()
            .is_some_and(|probe| qtype == rtype::HINFO && qname == probe.probe().as_bytes());
        let looping = || {
            !probe
                && crate::forward::is_looping(
                    ctx.client.ip(),
                    qname,
                    qtype,
                    request.question.qclass,
                )
        };
        let looped = |out: &mut Vec<u8>| {
            wire::write_rcode(request, rcode::SERVFAIL, out);
            Flow::reply(Plugin::Forward)
        };
        if ctx.dry {
            return End::Forward(chain.pending(ctx, q, forwarder)).into();
        }
        let Some(cache) = chain.cache().filter(|cache| cache.covers(qname)) else {
            if looping() {
                return looped(out);
            }
            return End::Forward(chain.pending(ctx, q, forwarder)).into();
        };
        let refresh = match cache.get(request, ctx.started, q.limit, out) {
            Some(Hit::Fresh) => false,
            Some(Hit::Prefetch) => true,
            Some(Hit::Stale) if !cache.stale_is_verified() => true,
            Some(Hit::Stale) | None if looping() => return looped(out),
            Some(Hit::Stale) | None => {
                return End::Forward(chain.pending(ctx, q, forwarder)).into();
            }
        };
        chain.shuffle_out(out);
        if refresh {
            refresh_in_background(Arc::clone(ctx.block), chain.upstream_request(q), forwarder);
        }
        Flow::reply(Plugin::Cache)
    }
}

impl Lifecycle for Forward {
    const INTERNET_ONLY: bool = true;

    /// Each `forward` directive's upstreams; what is odd about them is logged.
    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        let forwarders: Vec<Arc<Forwarder>> = at
            .config
            .plugins
            .forward
            .iter()
            .map(|config| Arc::new(Forwarder::new(config, at.addrs)))
            .collect();
        for warning in forwarders.iter().flat_map(|f| f.warnings()) {
            tracing::error!("{warning}");
        }
        Ok((!forwarders.is_empty()).then(|| Self::new(forwarders)))
    }

    /// The upstreams' health checks.
    fn start(&self, at: &Start<'_>) -> impl Future<Output = Result<(), StartError>> + Send {
        for forwarder in &self.forwarders {
            forwarder.start(at.token.clone());
        }
        std::future::ready(Ok(()))
    }

    /// `coredns_forward_*` and `coredns_proxy_*`, for every `forward` of the process.
    fn process_collectors(out: &mut Vec<Arc<dyn Collect>>) {
        out.push(Arc::new(ForwardCollector));
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
        self.respond(chain, ctx, q, out)
    }
}

/// The forwarders' process-wide metrics, as a collector.
struct ForwardCollector;

impl Collect for ForwardCollector {
    fn collect(&self, out: &mut Exposition) {
        forward_metrics().collect(out);
    }
}

/// What the upstreams made of a query [`Forward::respond`] sent on.
pub(crate) enum Upstream {
    /// The answer, whole (stored in the cache when it covers the name).
    Reply(Vec<u8>),
    /// A `forward` had `max_concurrent` queries in flight: REFUSED.
    Refused,
    /// Every upstream failed (the error), and the cache's expired answer is in the output
    /// buffer, cut to the client's size (`serve_stale verify`).
    Stale(String),
    /// Every upstream failed, or none matched (the error): SERVFAIL.
    Failed(String),
}

/// Asks `request` (the query as sent, parsed) of the block's `forward`s from the `from`-th
/// on that take its name, in file order: the first reply, or under `next` the last
/// `forward`'s; stored in the cache. When they fail, `serve_stale verify`'s expired answer
/// is written into `out` for `limit`.
pub(crate) async fn upstream(
    chain: &PluginChain,
    from: usize,
    request: &Request<'_>,
    transport: Transport,
    limit: usize,
    out: &mut Vec<u8>,
) -> Upstream {
    let qname = request.question.name();
    let forwarders = chain.forward().map_or(&[][..], Forward::forwarders);
    let cache = chain.cache().filter(|cache| cache.covers(qname));
    let forwarders = forwarders.get(from..).unwrap_or(&[]);
    let failure = match exchange(forwarders, request, transport).await {
        Upstream::Reply(mut bytes) => {
            if let Some(cache) = cache {
                cache.put(request, &mut bytes, Instant::now());
            }
            return Upstream::Reply(bytes);
        }
        Upstream::Refused => return Upstream::Refused,
        Upstream::Failed(error) | Upstream::Stale(error) => error,
    };
    // `serve_stale verify`: the upstream failed, an expired answer is better.
    let stale = cache.is_some_and(|cache| {
        cache.stale_is_verified()
            && cache.get(request, Instant::now(), limit, out) == Some(Hit::Stale)
    });
    if stale {
        Upstream::Stale(failure)
    } else {
        Upstream::Failed(failure)
    }
}

/// One name of *autopath*'s walk through *cache* and *forward* (`request`, the query as
/// sent, over UDP): a fresh cached answer, or the upstream's (stored), or REFUSED when a
/// `forward` is full; `None` when every `forward` failed.
pub(crate) async fn walk_upstream(chain: &PluginChain, request: &Request<'_>) -> Option<Vec<u8>> {
    let qname = request.question.name();
    let cache = chain.cache().filter(|cache| cache.covers(qname));
    if let Some(cache) = cache {
        let mut hit = Vec::new();
        if cache.get(request, Instant::now(), usize::from(u16::MAX), &mut hit) == Some(Hit::Fresh) {
            return Some(hit);
        }
    }
    let forwarders = chain.forward().map_or(&[][..], Forward::forwarders);
    match exchange(forwarders, request, Transport::Udp).await {
        Upstream::Reply(mut bytes) => {
            if let Some(cache) = cache {
                cache.put(request, &mut bytes, Instant::now());
            }
            Some(bytes)
        }
        Upstream::Refused => {
            let mut out = Vec::new();
            wire::write_rcode(request, rcode::REFUSED, &mut out);
            Some(out)
        }
        Upstream::Failed(_) | Upstream::Stale(_) => None,
    }
}

/// `asked` (parsed, as it is sent) through those of `forwarders` that take its name, in
/// order: the first reply, or under `next` the last one's (never [`Upstream::Stale`]).
async fn exchange(
    forwarders: &[Arc<Forwarder>],
    asked: &Request<'_>,
    transport: Transport,
) -> Upstream {
    let qname = asked.question.name();
    let mut last = None;
    for forwarder in forwarders.iter().filter(|f| f.matches(qname)) {
        match forwarder.forward_request(asked, transport).await {
            Forwarded::Reply(bytes) => return Upstream::Reply(bytes),
            // `next`: this forward's answer stands only if no other forward follows.
            Forwarded::Next(bytes) => last = Some(bytes),
            Forwarded::Refused => return Upstream::Refused,
            Forwarded::Failed(error) => {
                if last.is_none() {
                    return Upstream::Failed(error.to_string());
                }
                break;
            }
        }
    }
    match last {
        Some(bytes) => Upstream::Reply(bytes),
        None => Upstream::Failed("no forward matched".to_owned()),
    }
}

/// `prefetch` and `serve_stale immediate`: ask upstream again and store the answer, after
/// the client has had the cached one. Offline (no runtime), there is nothing to refresh for.
fn refresh_in_background(block: Arc<Block>, asked: OwnedRequest, forwarder: usize) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let request = asked.request();
        let chain = &block.chain;
        let Some(forward) = chain.forward().and_then(|f| f.forwarders.get(forwarder)) else {
            return;
        };
        if let Forwarded::Reply(mut bytes) = forward.forward_request(&request, Transport::Udp).await
            && let Some(cache) = chain.cache()
        {
            cache.put(&request, &mut bytes, Instant::now());
        }
    });
}
