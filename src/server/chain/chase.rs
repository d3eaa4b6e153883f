//! A CNAME's chase (an ExternalName's whose target lies outside its zone, a template's):
//! the replies so far and the name asked next. The handler drives it (asking each target
//! through the server again, CoreDNS's `Upstream.Lookup`); the chain's steps start it.

use std::sync::Arc;

use super::Revert;
use crate::metrics::dns::Writer;
use crate::name::WireName;
use crate::plugin::Plugin;
use crate::server::{Block, Pending};
use crate::wire::{self, Rebuilt, Request, reply};
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
        merged(first, &self.replies[1..], last, self.keep_rcode).unwrap_or_else(|| first.clone())
    }
}

/// [`Chase::merge`] of the replies `first`, `middle` and `last`: `first`'s header, question,
/// answers, authority and additional records, the answers of each of `middle` that reads,
/// and those of `last` when it reads and is NOERROR or NXDOMAIN, which then also gives its
/// TC bit (with `keep_rcode`), or its rcode, its TC bit (added) and, with no answer, its
/// authority (without). `None` when `first` does not read.
fn merged(
    first: &[u8],
    middle: &[Vec<u8>],
    last: Option<&[u8]>,
    keep_rcode: bool,
) -> Option<Vec<u8>> {
    let records = reply::records(first).ok()?;
    let [questions, ..] = reply::counts(first).ok()?;
    let question = first.get(wire::HEADER_LEN..reply::question_end(first).ok()?)?;
    let capacity =
        first.len() + middle.iter().map(Vec::len).sum::<usize>() + last.map_or(0, <[u8]>::len);
    let mut merged = Rebuilt::new(first, question, questions, capacity)?;
    merged.copy_section(first, &records, 1)?;
    for reply in middle {
        if let Ok(answers) = reply::records(reply) {
            // A reply whose answers do not read adds none.
            let _ = merged.copy_section(reply, &answers, 1);
        }
    }
    // The last reply, when it reads, is NOERROR or NXDOMAIN, and its answers go in.
    let last = last
        .and_then(|last| {
            let rcode = reply::rcode(last).ok()?;
            let records = reply::records(last).ok()?;
            Some((last, rcode, records))
        })
        .filter(|&(_, rcode, _)| rcode == wire::rcode::NOERROR || rcode == wire::rcode::NXDOMAIN)
        .filter(|(last, _, records)| merged.copy_section(last, records, 1).is_some());
    let mut authority = (first, &records[..]);
    if let Some((last, rcode, last_records)) = &last {
        let truncated = u16::from_be_bytes([last[2], last[3]]) & wire::FLAG_TC;
        let mut flags = merged.flags();
        if keep_rcode {
            flags = flags & !wire::FLAG_TC | truncated;
        } else {
            flags = flags & !wire::RCODE_BITS | rcode | truncated;
            if !last_records.iter().any(|record| record.section == 1) {
                // The target's negative answer, with the SOA its zone gives.
                authority = (last, last_records);
            }
        }
        merged.set_flags(flags);
    }
    merged.copy_section(authority.0, authority.1, 2)?;
    merged.copy_section(first, &records, 3)?;
    Some(merged.finish())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::str::FromStr;

    use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
    use hickory_proto::rr::rdata::{A, CNAME, SOA};
    use hickory_proto::rr::{Name, RData, Record, RecordType};

    use super::merged;

    /// What `Chase::merge` did before with hickory's codec: the reference.
    fn reference(first: &[u8], middle: &[Vec<u8>], last: Option<&[u8]>, keep: bool) -> Message {
        let mut message = Message::from_vec(first).unwrap();
        for reply in middle {
            if let Ok(reply) = Message::from_vec(reply) {
                message.answers.extend(reply.answers);
            }
        }
        if let Some(last) = last.and_then(|last| Message::from_vec(last).ok()) {
            let code = last.metadata.response_code;
            if matches!(code, ResponseCode::NoError | ResponseCode::NXDomain) {
                if keep {
                    message.answers.extend(last.answers);
                    message.metadata.truncation = last.metadata.truncation;
                    return message;
                }
                if last.answers.is_empty() {
                    message.authorities = last.authorities;
                }
                message.answers.extend(last.answers);
                message.metadata.response_code = code;
                message.metadata.truncation |= last.metadata.truncation;
            }
        }
        message
    }

    fn name(text: &str) -> Name {
        Name::from_str(text).unwrap()
    }

    fn message(asked: &str, answers: &[(&str, RData)], soa: bool, rcode: u16, tc: bool) -> Vec<u8> {
        let mut m = Message::new(9, MessageType::Response, OpCode::Query);
        m.metadata.recursion_desired = true;
        m.metadata.truncation = tc;
        m.metadata.response_code = ResponseCode::from_low(rcode as u8);
        m.add_query(Query::query(name(asked), RecordType::A));
        for (owner, data) in answers {
            m.add_answer(Record::from_rdata(name(owner), 60, data.clone()));
        }
        if soa {
            let zone = name("example.net.");
            m.add_authority(Record::from_rdata(
                zone.clone(),
                300,
                RData::SOA(SOA::new(zone.clone(), zone, 1, 2, 3, 4, 30)),
            ));
        }
        let mut edns = Edns::new();
        edns.set_max_payload(1232);
        m.edns = Some(edns);
        m.to_vec().unwrap()
    }

    fn cname(to: &str) -> RData {
        RData::CNAME(CNAME(name(to)))
    }

    #[test]
    fn merges_as_the_hickory_merge_did() {
        let first = message(
            "Ext.Default.svc.cluster.local.",
            &[("Ext.Default.svc.cluster.local.", cname("a.example.com."))],
            false,
            0,
            false,
        );
        let middle = vec![
            message(
                "a.example.com.",
                &[("a.example.com.", cname("b.example.net."))],
                false,
                0,
                false,
            ),
            b"not a message".to_vec(),
        ];
        let answer = message(
            "b.example.net.",
            &[
                ("b.example.net.", RData::A(A::new(192, 0, 2, 1))),
                ("b.example.net.", RData::A(A::new(192, 0, 2, 2))),
            ],
            false,
            0,
            false,
        );
        let nxdomain = message("b.example.net.", &[], true, 3, false);
        let truncated = message("b.example.net.", &[], false, 0, true);
        let servfail = message("b.example.net.", &[], true, 2, false);
        let lasts: [Option<&[u8]>; 6] = [
            None,
            Some(&answer),
            Some(&nxdomain),
            Some(&truncated),
            Some(&servfail),
            Some(b"garbage"),
        ];
        for (case, last) in lasts.into_iter().enumerate() {
            for keep in [false, true] {
                let ours = merged(&first, &middle, last, keep).unwrap();
                let ours = Message::from_vec(&ours).unwrap();
                let theirs = reference(&first, &middle, last, keep);
                assert_eq!(ours.metadata, theirs.metadata, "{case} {keep}");
                assert_eq!(ours.queries, theirs.queries, "{case} {keep}");
                assert_eq!(ours.answers, theirs.answers, "{case} {keep}");
                assert_eq!(ours.authorities, theirs.authorities, "{case} {keep}");
                assert_eq!(ours.additionals, theirs.additionals, "{case} {keep}");
                assert_eq!(ours.edns, theirs.edns, "{case} {keep}");
            }
        }
        assert_eq!(merged(b"short", &middle, Some(&answer), false), None);
        // Nothing read from a broken reply panics.
        for len in 0..answer.len() {
            for keep in [false, true] {
                let _ = merged(
                    &first,
                    &[answer[..len].to_vec()],
                    Some(&answer[..len]),
                    keep,
                );
                let _ = merged(&first[..len.min(first.len())], &middle, Some(&answer), keep);
            }
        }
    }
}
