//! A CNAME's chase (an ExternalName's whose target lies outside its zone, a template's):
//! the replies so far and the name asked next. The handler drives it (asking each target
//! through the server again, CoreDNS's `Upstream.Lookup`); the chain's steps start it.

use std::sync::Arc;

use hickory_proto::op::{Message, ResponseCode};

use super::Revert;
use crate::metrics::dns::Writer;
use crate::name::WireName;
use crate::plugin::Plugin;
use crate::server::{Block, Pending};
use crate::wire::{self, Request};
use crate::zone::{Answer, ServedZone};

/// What asks a chase's targets: the whole server again (the handler), every block, *cache*
/// and *forward* included.
pub(crate) trait Chaser: Sync {
    /// Follows `chase` (for the query `packet` from `client`) as far as the server answers
    /// without an upstream.
    fn chase_step(
        &self,
        chase: Box<Chase>,
        packet: &[u8],
        client: std::net::SocketAddr,
        transport: crate::server::Transport,
    ) -> Chased;

    /// Finishes a chase that went upstream: the merged reply.
    fn chase_complete(
        &self,
        chase: Box<Chase>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<u8>> + Send + '_>>;
}

/// Where a chase got to without an upstream.
pub(crate) enum Chased {
    /// The reply for the question asked, whole (not yet cut to the client's size).
    Done(Vec<u8>),
    /// Waiting for the upstream's answer to the last target.
    Upstream(Box<Chase>),
}

/// A CNAME's chase (an ExternalName's, a template's): the CNAMEs so far, and the name to
/// ask next.
#[derive(Debug)]
pub(crate) struct Chase {
    /// The block and zone of the question asked.
    pub(crate) block: Arc<Block>,
    pub(crate) zone: usize,
    /// The replies, in order, whose answers make the chain: the first answers the question
    /// asked (its header and question are the reply's); the others, targets in other zones.
    pub(crate) replies: Vec<Vec<u8>>,
    /// The reply for a loop: NODATA for the question asked.
    pub(crate) nodata: Vec<u8>,
    /// The next name to ask.
    pub(crate) target: WireName,
    /// The names asked so far, lower case (the question asked first).
    pub(crate) visited: Vec<WireName>,
    /// The last target's query, gone upstream.
    pub(crate) upstream: Option<Box<Pending>>,
    /// Who answered the question asked (counted for it).
    pub(crate) plugin: Writer,
    /// The first reply's rcode and authority stand, whatever the target's (a template's
    /// CNAME: CoreDNS appends the target's answers only).
    pub(crate) keep_rcode: bool,
    /// What *rewrite* turns back in the reply.
    pub(crate) revert: Option<Box<Revert>>,
    /// Started by *rewrite*'s `cname` rule (its reply is not retargeted again).
    pub(crate) retargeted: bool,
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
        Box::new(Self::start(
            block,
            zone_index,
            request,
            nodata,
            reply,
            WireName::from_wire_unchecked(target.to_vec()),
            Plugin::Kubernetes.into(),
        ))
    }

    /// A chase of `request` from `reply` to `target`, for `plugin`, `nodata` its reply for
    /// a loop; the target's rcode counts, and nothing has been retargeted.
    fn start(
        block: &Arc<Block>,
        zone_index: usize,
        request: &Request<'_>,
        nodata: Vec<u8>,
        reply: Vec<u8>,
        target: WireName,
        plugin: Writer,
    ) -> Self {
        Self {
            block: Arc::clone(block),
            zone: zone_index,
            replies: vec![reply],
            nodata,
            target,
            visited: vec![WireName::from_wire_unchecked(
                request.question.name().to_vec(),
            )],
            upstream: None,
            plugin,
            keep_rcode: false,
            revert: None,
            retargeted: false,
        }
    }

    /// The chase of a template's `reply` to `request`, a CNAME to `target` (lower-case
    /// wire): the target's answers are added to the reply, whose rcode stands.
    pub(crate) fn from_template(
        block: &Arc<Block>,
        zone_index: usize,
        request: &Request<'_>,
        reply: Vec<u8>,
        target: WireName,
    ) -> Box<Self> {
        Box::new(Self {
            keep_rcode: true,
            ..Self::start(
                block,
                zone_index,
                request,
                reply.clone(),
                reply,
                target,
                Plugin::Template.into(),
            )
        })
    }

    /// The chase of `reply`, another plugin's whole reply to `request` (*file*'s) whose
    /// CNAMEs end at `target` (lower-case wire): the target's answers, rcode and (when it
    /// has no answers) authority become the reply's.
    pub(crate) fn from_reply(
        block: &Arc<Block>,
        zone_index: usize,
        request: &Request<'_>,
        reply: Vec<u8>,
        target: WireName,
        plugin: Writer,
    ) -> Box<Self> {
        Box::new(Self::start(
            block,
            zone_index,
            request,
            reply.clone(),
            reply,
            target,
            plugin,
        ))
    }

    /// The chase *rewrite*'s `cname` rule starts: `reply` (a whole reply to `request`) with
    /// its answer ending at the retargeted CNAME, whose new `target` is asked; the target's
    /// answers are added, the rcode stays. `original` is the reply as it was, for a loop.
    pub(crate) fn retarget(
        block: &Arc<Block>,
        zone_index: usize,
        request: &Request<'_>,
        (reply, target): (Vec<u8>, WireName),
        original: Vec<u8>,
        plugin: Writer,
    ) -> Box<Self> {
        Box::new(Self {
            keep_rcode: true,
            retargeted: true,
            ..Self::start(block, zone_index, request, original, reply, target, plugin)
        })
    }

    /// The reply so far: the CNAMEs, whole, without the last target's records.
    pub(crate) fn so_far(&self) -> Vec<u8> {
        self.merge(None)
    }

    /// The chain's reply, ending with `last`, the reply for the last target: its records
    /// follow the CNAMEs with their own TTLs, and its rcode (NOERROR or NXDOMAIN) is the
    /// reply's. Without a usable `last` (the upstream failed, SERVFAIL, REFUSED) the CNAMEs
    /// alone, NOERROR, as CoreDNS answers.
    pub(crate) fn merge(&self, last: Option<&[u8]>) -> Vec<u8> {
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
                if self.keep_rcode {
                    message.answers.extend(last.answers);
                    message.metadata.truncation = last.metadata.truncation;
                    return message.to_vec().unwrap_or_else(|_| first.clone());
                }
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
