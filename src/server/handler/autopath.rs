//! *autopath* on the request path (CoreDNS `plugin/autopath`): for a query carrying the
//! client's first search domain, the server walks the rest of the search path itself and
//! answers with the first name that is not NXDOMAIN, behind a CNAME from the asked name.
//!
//! The walk asks each name through the rest of the block's chain — the cluster zone, then
//! *cache* and *forward* — so names outside the zone are forwarded (asynchronously, in
//! [`complete`]). It moves on only on NXDOMAIN, whatever the type asked: the cluster zone
//! answers a name the same way for every type (one name, one rcode), so A and AAAA for the
//! same name end at the same name. A failure (SERVFAIL, REFUSED, an upstream error) ends the
//! walk with that answer; when every name is NXDOMAIN the asked name's own NXDOMAIN goes back
//! and the client walks its search path itself. When the asked name exists, it is answered as
//! if autopath were not there.

use std::sync::Arc;
use std::time::Instant;

use hickory_proto::op::Message;
use hickory_proto::rr::rdata::CNAME;
use hickory_proto::rr::{Name, RData, Record};

use super::{Chase, Chased, Handler, Reached};
use crate::cache::Hit;
use crate::forward::Forwarded;
use crate::metrics::dns::Plugin;
use crate::server::{Block, Outcome, Pending, Transport};
use crate::wire::{self, Request, rcode, reply};
use crate::zone::Rcode;
use crate::zone::name::WireName;

/// The rest of a walk that reached a name outside the cluster zone.
#[derive(Debug)]
pub(crate) struct AutopathRest {
    /// The names left to try, the next one first.
    candidates: Vec<WireName>,
    /// Which of the plan's names `candidates[0]` is (0: the asked name).
    index: usize,
    /// The asked name's own NXDOMAIN reply, when it was already written.
    first: Option<Vec<u8>>,
}

/// What one name of the walk got.
enum Step {
    /// A reply (for the candidate's question, up to 64 KiB).
    Reply(Vec<u8>),
    /// It goes upstream.
    Upstream,
    /// An ExternalName whose target is asked through the server again.
    Chase(Box<Chase>),
}

/// The query as it would have been asked for `name`: same ID, flags and EDNS.
pub(super) fn ask_as(packet: &[u8], name: &WireName) -> Option<Vec<u8>> {
    let mut message = Message::from_vec(packet).ok()?;
    let query = message.queries.first_mut()?;
    query.set_name(Name::from_ascii(name.to_string()).ok()?);
    message.to_vec().ok()
}

/// Answers `name` from the cluster zone, as the handler's *kubernetes* step does, or says it
/// goes upstream (outside the zone, or `fallthrough`).
fn local(block: &Arc<Block>, packet: &[u8], name: &WireName) -> Option<Step> {
    let asked = ask_as(packet, name)?;
    let request = Request::parse(&asked).ok()?;
    let qname = request.question.name();
    let mut out = Vec::new();
    if let Some(kubernetes) = &block.kubernetes {
        let snapshot = kubernetes.store.load();
        if let Some(answer) = snapshot.lookup(qname, request.question.qtype) {
            let nxdomain = answer.rcode == Rcode::NxDomain;
            let passes = nxdomain && kubernetes.falls_through(qname);
            if nxdomain && !passes && kubernetes.provisional() {
                wire::write_rcode(&request, rcode::SERVFAIL, &mut out);
                return Some(Step::Reply(out));
            }
            if !passes {
                let zone = &snapshot.zones()[answer.zone];
                if let Some(target) = answer.chase {
                    let zone_index = 0;
                    let chase = Chase::new(block, zone_index, &request, &answer, zone, target);
                    return Some(Step::Chase(chase));
                }
                wire::write_answer(
                    &request,
                    &answer,
                    zone,
                    usize::from(u16::MAX),
                    false,
                    &mut out,
                );
                return Some(Step::Reply(out));
            }
        }
    }
    if block.forward.iter().any(|f| f.matches(qname)) {
        return Some(Step::Upstream);
    }
    // The end of the chain.
    wire::write_rcode(&request, rcode::REFUSED, &mut out);
    Some(Step::Reply(out))
}

/// The reply to the client from `found`, the reply for the `index`-th name: the client's
/// question, and a CNAME from it to the name that answered ahead of the records.
fn rewrite(found: &[u8], packet: &[u8], index: usize) -> Option<Vec<u8>> {
    let original = Message::from_vec(packet).ok()?;
    let question = original.queries.first()?.clone();
    let mut message = Message::from_vec(found).ok()?;
    if index > 0
        && let Some(first) = message.answers.first()
        && first.name.to_lowercase() != question.name().to_lowercase()
    {
        let cname = Record::from_rdata(
            question.name().clone(),
            first.ttl,
            RData::CNAME(CNAME(first.name.clone())),
        );
        message.answers.insert(0, cname);
    }
    message.queries = vec![question];
    message.to_vec().ok()
}

/// The walk for a query, if autopath takes it: `None` leaves it to the usual path (autopath
/// does not apply, or the asked name is not NXDOMAIN).
pub(super) fn respond(
    handler: &Handler,
    shared: &Arc<Block>,
    at: &Reached<'_>,
    request: &Request<'_>,
    packet: &[u8],
    out: &mut Vec<u8>,
) -> Option<Outcome> {
    let block = at.block;
    let search = block.autopath.as_ref()?;
    let plan = {
        let snapshot = block.kubernetes.as_ref().map(|k| k.store.load());
        search.plan(
            request.question.name(),
            at.client.ip(),
            snapshot.as_deref().map(|s| &**s),
        )?
    };
    let mut first = None;
    for (index, candidate) in plan.candidates.iter().enumerate() {
        match local(shared, packet, candidate)? {
            Step::Reply(bytes) if reply::rcode(&bytes) == Ok(rcode::NXDOMAIN) => {
                if index == 0 {
                    first = Some(bytes);
                }
            }
            // The asked name answers: the usual path writes that.
            Step::Reply(_) | Step::Chase(_) if index == 0 => return None,
            Step::Reply(bytes) => {
                let written = rewrite(&bytes, packet, index)?;
                handler.deliver(at, request, &written, out, Plugin::Autopath);
                return Some(Outcome::Reply);
            }
            Step::Upstream | Step::Chase(_) => {
                return Some(Outcome::Forward(Box::new(Pending {
                    block: Arc::clone(shared),
                    zone: at.zone,
                    packet: packet.to_vec(),
                    client: at.client,
                    transport: at.transport,
                    started: at.started,
                    forwarder: 0,
                    autopath: Some(Box::new(AutopathRest {
                        candidates: plan.candidates[index..].to_vec(),
                        index,
                        first,
                    })),
                    chase: None,
                })));
            }
        }
    }
    // Every name is NXDOMAIN: the asked name's reply, and the client walks on.
    let first = rewrite(&first?, packet, 0)?;
    deliver_plain(handler, at, request, &first, out);
    Some(Outcome::Reply)
}

/// The walk's upstream part.
pub(super) async fn complete(
    handler: &Handler,
    shared: &Arc<Block>,
    at: &Reached<'_>,
    request: &Request<'_>,
    packet: &[u8],
    rest: AutopathRest,
    out: &mut Vec<u8>,
) {
    let block = at.block;
    let mut first = rest.first;
    for (offset, candidate) in rest.candidates.iter().enumerate() {
        let index = rest.index + offset;
        let bytes = match local(shared, packet, candidate) {
            Some(Step::Reply(bytes)) => bytes,
            Some(Step::Chase(chase)) => {
                let Some(asked) = ask_as(packet, candidate) else {
                    break;
                };
                match handler.chase_step(chase, &asked, at.client, at.transport) {
                    Chased::Done(bytes) => bytes,
                    Chased::Upstream(chase) => handler.chase_complete(chase).await,
                }
            }
            Some(Step::Upstream) => match upstream(block, packet, candidate).await {
                Some(bytes) => bytes,
                None => {
                    let reason = format!("autopath: forwarding {candidate} failed");
                    if let Some(errors) = &block.errors {
                        errors.report(request, rcode::SERVFAIL, &reason, Instant::now());
                    }
                    wire::write_rcode(request, rcode::SERVFAIL, out);
                    handler.finish(at, request, out, Plugin::Autopath);
                    return;
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
        let written = rewrite(&bytes, packet, index);
        match written {
            Some(written) => handler.deliver(at, request, &written, out, Plugin::Autopath),
            None => {
                wire::write_rcode(request, rcode::SERVFAIL, out);
                handler.finish(at, request, out, Plugin::Autopath);
            }
        }
        return;
    }
    match first.and_then(|first| rewrite(&first, packet, 0)) {
        Some(first) => deliver_plain(handler, at, request, &first, out),
        None => {
            wire::write_rcode(request, rcode::SERVFAIL, out);
            handler.finish(at, request, out, Plugin::Autopath);
        }
    }
}

/// `name` through *cache* and *forward*; `None` when every forwarder failed.
async fn upstream(block: &Block, packet: &[u8], name: &WireName) -> Option<Vec<u8>> {
    let asked = ask_as(packet, name)?;
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
    let bytes = last?;
    if let Some(cache) = cache {
        cache.put(&request, &bytes, Instant::now());
    }
    Some(bytes)
}

/// Sends the asked name's own reply (no rewriting needed).
fn deliver_plain(
    handler: &Handler,
    at: &Reached<'_>,
    request: &Request<'_>,
    bytes: &[u8],
    out: &mut Vec<u8>,
) {
    super::fit(at, request, bytes, out);
    let plugin = if at.block.kubernetes.is_some() {
        Plugin::Kubernetes
    } else {
        Plugin::Forward
    };
    handler.finish(at, request, out, plugin);
}
