//! *any* (RFC 8482 §4.2): an ANY query is answered with one HINFO record, `"ANY obsoleted"
//! "See RFC 8482"`, TTL 8482; any other passes on.

use super::Flow;
use crate::codes::{class, rtype};
use crate::plugin::Plugin;
use crate::wire::{self, Request, rcode};

/// The step: RFC 8482's HINFO for an ANY question, cut to `limit`; any other passes on.
pub(crate) fn answer(request: &Request<'_>, limit: usize, out: &mut Vec<u8>) -> Flow {
    const HINFO: &[u8] = b"\x0dANY obsoleted\x0cSee RFC 8482";
    if request.question.qtype != rtype::ANY {
        return Flow::Pass;
    }
    let mut reply = wire::QuestionAnswers::new(request, out);
    reply.answer(rtype::HINFO, class::IN, 8482, HINFO);
    reply.finish(rcode::NOERROR, false, limit);
    Flow::reply(Plugin::Any)
}
