//! *autopath* on the request path (CoreDNS `plugin/autopath`): for a query carrying the
//! client's first search domain, the server walks the rest of the search path itself and
//! answers with the first name that is not NXDOMAIN, behind a CNAME from the asked name.
//!
//! The walk asks each name through the rest of the block's chain — the steps after
//! *autopath*: *template*, *hosts*, the cluster zone, then *cache* and *forward* — as far as
//! it goes without an upstream ([`Autopath`]'s step); from the first name that goes
//! upstream on, the rest of it is asynchronous ([`complete`], which the handler awaits). It
//! moves on only on NXDOMAIN, whatever the type asked: the cluster zone
//! answers a name the same way for every type (one name, one rcode), so A and AAAA for the
//! same name end at the same name. A failure (SERVFAIL, REFUSED, an upstream error) ends the
//! walk with that answer; when every name is NXDOMAIN the asked name's own NXDOMAIN goes back
//! and the client walks its search path itself. When the asked name exists, it is answered as
//! if autopath were not there.

use std::time::Instant;

use super::chase::{Chased, Chaser};
use super::lifecycle::{Build, Lifecycle};
use super::{Ctx, End, Flow, PluginChain, Query, forward};
use crate::codes::rtype;
use crate::config::{AutopathNamespace, AutopathSource};
use crate::name::{WireName, wire_zones};
use crate::plugin::Plugin;
use crate::search_walk::{NamespaceFrom, SearchPath, Source};
use crate::server::error::StartError;
use crate::wire::{self, Request, rcode, reply};

/// The rest of a walk that reached a name outside the cluster zone.
#[derive(Debug)]
pub(crate) struct AutopathRest {
    /// The names left to try, the next one first.
    pub(crate) candidates: Vec<WireName>,
    /// Which of the plan's names `candidates[0]` is (0: the asked name).
    pub(crate) index: usize,
    /// The asked name's own NXDOMAIN reply, when it was already written.
    pub(crate) first: Option<Vec<u8>>,
}

/// The query as it would have been asked for `name`: same ID, flags and EDNS.
pub(crate) fn ask_as(packet: &[u8], name: &WireName) -> Option<Vec<u8>> {
    wire::query_for_name(packet, name.as_bytes())
}

/// Asks `name` through the steps of the chain after *autopath*, as the query `packet` would
/// have asked it, writing a reply (for the candidate's question, up to 64 KiB) into `out`:
/// [`End::Reply`] (the end of the chain's REFUSED among them), [`End::Forward`] (it goes
/// upstream; the walk asks it itself, the packed query is not used) or [`End::Chase`] (a CNAME
/// whose target is asked through the server again). `None` where it cannot be asked.
pub(crate) fn local(
    ctx: &Ctx<'_>,
    packet: &[u8],
    name: &WireName,
    out: &mut Vec<u8>,
) -> Option<End> {
    let asked = ask_as(packet, name)?;
    let request = Request::parse(&asked).ok()?;
    let chain = &ctx.block.chain;
    let mut q = Query {
        packet: &asked,
        request: &request,
        limit: usize::from(u16::MAX),
        revert: None,
    };
    match chain.run(ctx, chain.after_autopath(), &mut q, out) {
        End::Refused => {
            wire::write_rcode(q.request, rcode::REFUSED, out);
            Some(End::Reply(crate::metrics::dns::Writer::Server))
        }
        End::Transfer(_) => None,
        end => Some(end),
    }
}

/// The reply to the client from `found`, the reply for the `index`-th name: the client's
/// question, and a CNAME from it to the name that answered ahead of the records.
pub(crate) fn rewrite(found: &[u8], packet: &[u8], index: usize) -> Option<Vec<u8>> {
    wire::reply_for_question(found, packet, index > 0)
}

/// Who a reply for the asked name itself is counted for.
pub(crate) fn plain_plugin(ctx: &Ctx<'_>) -> Plugin {
    if ctx.block.chain.kubernetes().is_some() {
        Plugin::Kubernetes
    } else {
        Plugin::Forward
    }
}

/// *autopath* of a block: its search path.
#[derive(Debug)]
pub(crate) struct Autopath(SearchPath);

impl Lifecycle for Autopath {
    const INTERNET_ONLY: bool = true;

    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        Ok(at.config.plugins.autopath.as_ref().map(|config| {
            let source = match config.source {
                AutopathSource::Kubernetes(AutopathNamespace::Pod) => {
                    Source::Kubernetes(NamespaceFrom::Pod)
                }
                AutopathSource::Kubernetes(AutopathNamespace::Query) => {
                    Source::Kubernetes(NamespaceFrom::Query)
                }
                AutopathSource::File(_) => Source::Static,
            };
            Self(SearchPath::new(
                wire_zones(&config.zones),
                source,
                wire_zones(&config.search),
            ))
        }))
    }

    /// The walk for `q`, if autopath takes it; else the query passes on (autopath does not
    /// apply, or the asked name answers).
    #[inline]
    fn answer(
        &self,
        _chain: &PluginChain,
        ctx: &Ctx<'_>,
        index: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        walk(&self.0, ctx, index, q, out).unwrap_or(Flow::Pass)
    }
}

/// The walk of [`Autopath`]'s step at `index`; `None` where autopath does not apply.
fn walk(
    search: &SearchPath,
    ctx: &Ctx<'_>,
    index: usize,
    q: &Query<'_>,
    out: &mut Vec<u8>,
) -> Option<Flow> {
    let block = ctx.block;
    let qtype = q.request.question.qtype;
    if qtype == rtype::AXFR || qtype == rtype::IXFR {
        return None;
    }
    debug_assert_eq!(block.chain.after_autopath(), index + 1);
    let plan = {
        let snapshot = block.chain.kubernetes().map(|k| k.store.load());
        search.plan(
            q.request.question.name(),
            ctx.client.ip(),
            snapshot.as_deref().map(|s| &**s),
        )?
    };
    let mut first = None;
    for (index, candidate) in plan.candidates.iter().enumerate() {
        let mut bytes = Vec::new();
        match local(ctx, q.packet, candidate, &mut bytes)? {
            End::Reply(_) if reply::rcode(&bytes) == Ok(rcode::NXDOMAIN) => {
                if index == 0 {
                    first = Some(bytes);
                }
            }
            // The asked name answers: the rest of the chain writes that.
            End::Reply(_) | End::Chase(_) if index == 0 => return None,
            End::Reply(_) => {
                let written = rewrite(&bytes, q.packet, index)?;
                super::fit(ctx, q.request, &block.chain.shuffled(&written), out);
                return Some(Flow::reply(Plugin::Autopath));
            }
            // It goes upstream, or is a CNAME whose target may.
            _ => {
                let mut pending = block.chain.pending(ctx, q, 0);
                pending.autopath = Some(Box::new(AutopathRest {
                    candidates: plan.candidates[index..].to_vec(),
                    index,
                    first,
                }));
                return Some(End::Forward(pending).into());
            }
        }
    }
    // Every name is NXDOMAIN: the asked name's reply, and the client walks on.
    let first = rewrite(&first?, q.packet, 0)?;
    super::fit(ctx, q.request, &first, out);
    Some(Flow::reply(plain_plugin(ctx)))
}

/// The walk's upstream part, for the query `packet` (as the chain asked it; `request` is
/// the client's), a chased CNAME asked through `server`: the whole reply and who it is
/// counted for, `None` for SERVFAIL.
pub(crate) async fn complete(
    server: &impl Chaser,
    ctx: &Ctx<'_>,
    request: &Request<'_>,
    packet: &[u8],
    rest: AutopathRest,
) -> Option<(Vec<u8>, Plugin)> {
    let block = ctx.block;
    let mut first = rest.first;
    for (offset, candidate) in rest.candidates.iter().enumerate() {
        let index = rest.index + offset;
        let mut bytes = Vec::new();
        let bytes = match local(ctx, packet, candidate, &mut bytes) {
            Some(End::Reply(_)) => bytes,
            Some(End::Chase(chase)) => {
                let asked = ask_as(packet, candidate)?;
                match server.chase_step(chase, &asked, ctx.client, ctx.transport) {
                    Chased::Done(bytes) => bytes,
                    Chased::Upstream(chase) => server.chase_complete(chase).await,
                }
            }
            // It goes upstream.
            Some(_) => match upstream(ctx, packet, candidate).await {
                Some(bytes) => bytes,
                None => {
                    let reason = format!("autopath: forwarding {candidate} failed");
                    if let Some(errors) = &block.errors {
                        errors.report(request, rcode::SERVFAIL, &reason, Instant::now());
                    }
                    return None;
                }
            },
            None => break,
        };
        if reply::rcode(&bytes) == Ok(rcode::NXDOMAIN) {
            if index == 0 {
                first = Some(bytes);
            }
            continue;
        }
        return rewrite(&bytes, packet, index).map(|written| (written, Plugin::Autopath));
    }
    first
        .and_then(|first| rewrite(&first, packet, 0))
        .map(|first| (first, plain_plugin(ctx)))
}

/// `name` through *cache* and *forward*; `None` when every forwarder failed.
async fn upstream(ctx: &Ctx<'_>, packet: &[u8], name: &WireName) -> Option<Vec<u8>> {
    let chain = &ctx.block.chain;
    let mut asked = ask_as(packet, name)?;
    chain.clamp(&mut asked);
    let request = Request::parse(&asked).ok()?;
    forward::walk_upstream(chain, &request).await
}
