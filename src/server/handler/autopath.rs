//! *autopath*'s walk when it reaches a name outside the cluster zone: the rest of the walk,
//! asynchronously, through *cache* and *forward* (the synchronous part is the chain's step,
//! `server::chain::autopath`).

use std::time::Instant;

use super::{Chased, Handler};
use crate::cache::Hit;
use crate::forward::Forwarded;
use crate::plugin::Plugin;
use crate::server::Transport;
use crate::server::chain::Ctx;
use crate::server::chain::autopath::{AutopathRest, Tried, ask_as, local, plain_plugin, rewrite};
use crate::wire::{self, Request, rcode, reply};
use crate::zone::name::WireName;

/// The walk's upstream part, for the query `packet` (as the chain asked it; `request` is
/// the client's): the whole reply and who it is counted for, `None` for SERVFAIL.
pub(super) async fn complete(
    handler: &Handler,
    ctx: &Ctx<'_>,
    request: &Request<'_>,
    packet: &[u8],
    rest: AutopathRest,
) -> Option<(Vec<u8>, Plugin)> {
    let block = ctx.block;
    let mut first = rest.first;
    for (offset, candidate) in rest.candidates.iter().enumerate() {
        let index = rest.index + offset;
        let bytes = match local(ctx, packet, candidate) {
            Some(Tried::Reply(bytes)) => bytes,
            Some(Tried::Chase(chase)) => {
                let asked = ask_as(packet, candidate)?;
                match handler.chase_step(chase, &asked, ctx.client, ctx.transport) {
                    Chased::Done(bytes) => bytes,
                    Chased::Upstream(chase) => handler.chase_complete(chase).await,
                }
            }
            Some(Tried::Upstream) => match upstream(ctx, packet, candidate).await {
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
    let block = ctx.block;
    let mut asked = ask_as(packet, name)?;
    block.chain.clamp(&mut asked);
    let request = Request::parse(&asked).ok()?;
    let qname = request.question.name();
    let cache = block.cache.as_ref().filter(|cache| cache.covers(qname));
    if let Some(cache) = cache {
        let mut hit = Vec::new();
        if cache.get(&request, Instant::now(), usize::from(u16::MAX), &mut hit) == Some(Hit::Fresh)
        {
            return Some(hit);
        }
    }
    let mut last = None;
    for forwarder in block.forward.iter().filter(|f| f.matches(qname)) {
        match forwarder.forward(&asked, Transport::Udp).await {
            Forwarded::Reply(bytes) => {
                last = Some(bytes);
                break;
            }
            Forwarded::Next(bytes) => last = Some(bytes),
            Forwarded::Refused => {
                let mut out = Vec::new();
                wire::write_rcode(&request, rcode::REFUSED, &mut out);
                return Some(out);
            }
            Forwarded::Failed(_) => return None,
        }
    }
    let mut bytes = last?;
    if let Some(cache) = cache {
        cache.put(&request, &mut bytes, Instant::now());
    }
    Some(bytes)
}
