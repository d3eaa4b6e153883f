//! *any* (RFC 8482 §4.2): an ANY query is answered with one HINFO record, `"ANY obsoleted"
//! "See RFC 8482"`, TTL 8482; any other passes on.

use super::lifecycle::{Build, Lifecycle};
use super::{Ctx, Flow, PluginChain, Query};
use crate::codes::{class, rtype};
use crate::plugin::Plugin;
use crate::server::error::StartError;
use crate::wire::{self, rcode};

/// *any* of a block.
#[derive(Debug)]
pub(crate) struct Any;

impl Lifecycle for Any {
    const INTERNET_ONLY: bool = false;

    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        Ok(at.config.plugins.any.as_ref().map(|_| Self))
    }

    /// RFC 8482's HINFO for an ANY question, cut to the query's limit; any other passes on.
    #[inline]
    fn answer(
        &self,
        _chain: &PluginChain,
        _ctx: &Ctx<'_>,
        _index: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        const HINFO: &[u8] = b"\x0dANY obsoleted\x0cSee RFC 8482";
        if q.request.question.qtype != rtype::ANY {
            return Flow::Pass;
        }
        let mut reply = wire::QuestionAnswers::new(q.request, out);
        reply.answer(rtype::HINFO, class::IN, 8482, HINFO);
        reply.finish(rcode::NOERROR, false, q.limit);
        Flow::reply(Plugin::Any)
    }
}
