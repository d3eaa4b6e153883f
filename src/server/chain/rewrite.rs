//! *rewrite* on the request path (CoreDNS `plugin/rewrite`): the query the rest of the chain
//! sees is rewritten (name, type, class), and the reply is turned back for the client.
//!
//! Rules are tried in file order on the query as the rules before them left it; a rule that
//! matches applies and, unless it is a `continue` rule, ends the list. Names are matched in
//! lower case with their final dot. The reply always carries the client's question again
//! (CoreDNS restores it only when a rule has a response part, so a `type` rule or a
//! `prefix` rule without `answer auto` sends the rewritten question back, which resolvers
//! reject); the response parts — `answer auto` (always for `exact`), `answer name`, `answer
//! value`, `ttl`, `rcode` — apply to every record, in the reverse order of the rules that
//! matched. A rewritten name that is not a domain name answers SERVFAIL.
//!
//! `edns0` rules change the OPT record of the query passed on ([`edns0`]); a `cname` rule
//! applies to every query, and its part is done on the reply by the handler ([`cname`]).
//!
//! A block with *rewrite* spells each query's name out once to match it (a short string);
//! nothing else is done unless a rule matches.

mod cname;
mod edns0;
mod names;

use std::net::SocketAddr;
use std::time::Instant;

use self::cname::CnameTarget;
use self::edns0::{Asked, Opt};
use self::names::{dotted, matches, rename, substitute};
use super::lifecycle::{Build, Lifecycle};
use super::{Ctx, Flow, PluginChain};
use crate::codes::rtype;
use crate::config::{AnswerRewrite, NameMatcher, RewriteAction, RewriteRule};
use crate::metrics::dns::Writer;
use crate::name::WireName;
use crate::server::error::StartError;
use crate::wire::{self, Edit, HEADER_LEN, Rebuilt, Request, Transport, rcode, reply};

/// The *rewrite* rules of one block.
#[derive(Debug)]
pub(crate) struct Rewrite {
    rules: Vec<RewriteRule>,
}

/// A query a rule rewrote, and how to turn its reply back.
pub(crate) struct Rewritten {
    /// The rewritten query (the client's header and OPT record, the new question).
    pub(crate) packet: Vec<u8>,
    /// What the reply gets back.
    pub(crate) revert: Box<Revert>,
}

/// What *rewrite* does to the reply: the client's question put back, then the response rules
/// of the rules that matched, the last rule's first.
#[derive(Debug)]
pub(crate) struct Revert {
    /// The client's question section, as asked.
    question: Vec<u8>,
    rules: Vec<ResponseRule>,
    /// The first `cname` rule reached, for the handler to apply to the reply.
    cname: Option<CnameTarget>,
}

/// One rule applied to the reply.
#[derive(Debug, Clone)]
enum ResponseRule {
    /// Owner names.
    Name(Strings),
    /// Names in RDATA.
    Value(Strings),
    /// TTLs kept within the range.
    Ttl(u32, u32),
    /// The rcode replaced.
    Rcode(u16, u16),
}

/// How a response rule rewrites a name (CoreDNS's `stringRewriter`s).
#[derive(Debug, Clone)]
enum Strings {
    /// `answer name|value FROM TO`: a name matching the pattern becomes the replacement,
    /// `{N}` the groups.
    Regex(regex::Regex, String),
    /// `answer auto`: the rewritten name (and names below it) back to the asked one.
    Remap { from: String, to: String },
    /// `answer auto` of a `suffix` rule: the new suffix back to the old.
    Suffix { from: String, to: String },
}

impl Strings {
    fn apply(&self, name: &str) -> Option<String> {
        match self {
            Self::Regex(pattern, replacement) => {
                let captures = pattern.captures(name)?;
                Some(substitute(replacement, &captures))
            }
            Self::Remap { from, to } => {
                if name == from {
                    return Some(to.clone());
                }
                let below = name.strip_suffix(from.as_str())?;
                below.ends_with('.').then(|| format!("{below}{to}"))
            }
            Self::Suffix { from, to } => name
                .strip_suffix(from.as_str())
                .map(|before| format!("{before}{to}")),
        }
    }
}

impl Lifecycle for Rewrite {
    const INTERNET_ONLY: bool = false;

    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        let rules = &at.config.plugins.rewrite;
        Ok((!rules.is_empty()).then(|| Self::new(rules)))
    }

    /// When a rule matches, the rest of the chain runs on the rewritten query and the
    /// reversal is kept in `q` for the client's reply. Passes on when no rule matched.
    fn answer(
        &self,
        chain: &PluginChain,
        ctx: &Ctx<'_>,
        index: usize,
        q: &mut super::Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        let rewritten = match self.apply(q.request, ctx.client, ctx.transport) {
            None => return Flow::Pass,
            Some(Ok(rewritten)) => rewritten,
            Some(Err(message)) => {
                if let Some(errors) = &ctx.block.errors {
                    errors.report(q.request, rcode::SERVFAIL, &message, Instant::now());
                }
                wire::write_rcode(q.request, rcode::SERVFAIL, out);
                return Flow::reply(Writer::Server);
            }
        };
        let Ok(request) = Request::parse(&rewritten.packet) else {
            wire::write_rcode(q.request, rcode::SERVFAIL, out);
            return Flow::reply(Writer::Server);
        };
        let mut inner = super::Query {
            packet: &rewritten.packet,
            request: &request,
            limit: q.limit,
            revert: None,
        };
        let end = chain.run(ctx, index + 1, &mut inner, out);
        q.revert = Some(rewritten.revert);
        Flow::Done(end)
    }
}

impl Rewrite {
    /// The rules of a block.
    pub(crate) fn new(rules: &[RewriteRule]) -> Self {
        Self {
            rules: rules.to_vec(),
        }
    }

    /// The rules applied to `request` (from `client` over `transport`): `None` when none
    /// matched, an error (for SERVFAIL) when a name rule made something that is not a domain
    /// name.
    pub(crate) fn apply(
        &self,
        request: &Request<'_>,
        client: SocketAddr,
        transport: Transport,
    ) -> Option<Result<Rewritten, String>> {
        let mut name = dotted(request.question.name())?;
        let mut qtype = request.question.qtype;
        let mut qclass = request.question.qclass;
        let mut responses: Vec<ResponseRule> = Vec::new();
        let mut cname: Option<CnameTarget> = None;
        let mut opt: Option<Opt> = None;
        let mut matched = false;
        for rule in &self.rules {
            let done = match &rule.action {
                RewriteAction::Name {
                    matcher,
                    replacement,
                    auto,
                    answers,
                } => match rename(matcher, replacement, &name) {
                    None => false,
                    Some(new) => {
                        if *auto {
                            let strings = match matcher {
                                NameMatcher::Suffix(suffix) => Strings::Suffix {
                                    from: replacement.clone(),
                                    to: suffix.clone(),
                                },
                                _ => Strings::Remap {
                                    from: new.clone(),
                                    to: name.clone(),
                                },
                            };
                            responses.push(ResponseRule::Name(strings.clone()));
                            responses.push(ResponseRule::Value(strings));
                        }
                        for answer in answers {
                            responses.push(match answer {
                                AnswerRewrite::Name {
                                    pattern,
                                    replacement,
                                } => ResponseRule::Name(Strings::Regex(
                                    pattern.clone(),
                                    replacement.clone(),
                                )),
                                AnswerRewrite::Value {
                                    pattern,
                                    replacement,
                                } => ResponseRule::Value(Strings::Regex(
                                    pattern.clone(),
                                    replacement.clone(),
                                )),
                            });
                        }
                        if WireName::from_dotted(&new).is_err() || new.contains("..") {
                            return Some(Err(format!("invalid name after rewrite: {new}")));
                        }
                        name = new;
                        true
                    }
                },
                RewriteAction::Type { from, to } => {
                    let hit = qtype == *from;
                    if hit {
                        qtype = *to;
                    }
                    hit
                }
                RewriteAction::Class { from, to } => {
                    let hit = qclass == *from;
                    if hit {
                        qclass = *to;
                    }
                    hit
                }
                RewriteAction::Ttl { matcher, min, max } => {
                    let hit = matches(matcher, &name);
                    if hit {
                        responses.push(ResponseRule::Ttl(*min, *max));
                    }
                    hit
                }
                RewriteAction::Rcode { matcher, from, to } => {
                    let hit = matches(matcher, &name);
                    if hit {
                        responses.push(ResponseRule::Rcode(*from, *to));
                    }
                    hit
                }
                RewriteAction::Cname {
                    matcher,
                    replacement,
                } => {
                    cname.get_or_insert_with(|| CnameTarget {
                        matcher: matcher.clone(),
                        replacement: replacement.clone(),
                    });
                    true
                }
                RewriteAction::Edns0(edns0_rule) => {
                    let asked = Asked {
                        name: &name,
                        qtype,
                        client,
                        transport,
                    };
                    let opt = opt.get_or_insert_with(|| Opt::of(request));
                    edns0::apply(edns0_rule, opt, &asked)
                }
            };
            if done {
                matched = true;
                if rule.stop {
                    break;
                }
            }
        }
        if !matched {
            return None;
        }
        let Ok(wire) = WireName::from_dotted(&name) else {
            return Some(Err(format!("invalid name after rewrite: {name}")));
        };
        let question = request.question_bytes().to_vec();
        let opt = opt.map(|opt| opt.encode());
        Some(Ok(Rewritten {
            packet: rebuild(request, wire.as_bytes(), qtype, qclass, opt.as_deref()),
            revert: Box::new(Revert {
                question,
                rules: responses,
                cname,
            }),
        }))
    }
}

/// The query with another question: the client's header, the new question, the client's
/// OPT record or `edited` (other records dropped: they could point into the old question).
fn rebuild(
    request: &Request<'_>,
    qname: &[u8],
    qtype: u16,
    qclass: u16,
    edited: Option<&[u8]>,
) -> Vec<u8> {
    let bytes = request.bytes;
    let opt = edited.or_else(|| {
        reply::records(bytes).ok().and_then(|records| {
            records
                .into_iter()
                .find(|record| record.section == 3 && record.rtype == rtype::OPT)
                .map(|record| &bytes[record.start..record.end])
        })
    });
    let mut packet = Vec::with_capacity(HEADER_LEN + qname.len() + 4 + 11);
    packet.extend_from_slice(&bytes[..HEADER_LEN]);
    packet[4..HEADER_LEN].copy_from_slice(&[0, 1, 0, 0, 0, 0, 0, u8::from(opt.is_some())]);
    packet.extend_from_slice(qname);
    packet.extend_from_slice(&qtype.to_be_bytes());
    packet.extend_from_slice(&qclass.to_be_bytes());
    if let Some(opt) = opt {
        packet.extend_from_slice(opt);
    }
    packet
}

impl ResponseRule {
    /// The rule on one record: its owner and its value as text (lower case, with the final
    /// dot; `None` for a value the type lacks or a name the rules cannot read), and its TTL.
    /// A name rule's result that is not a domain name leaves the name as it was.
    fn apply(&self, owner: &mut Option<String>, value: &mut Option<String>, ttl: &mut u32) {
        let (name, strings) = match self {
            Self::Name(strings) => (owner, strings),
            Self::Value(strings) => (value, strings),
            Self::Ttl(min, max) => {
                *ttl = (*ttl).clamp(*min, *max);
                return;
            }
            Self::Rcode(..) => return,
        };
        if let Some(new) = name.as_deref().and_then(|text| strings.apply(text))
            && WireName::from_dotted(&new).is_ok()
        {
            *name = Some(new);
        }
    }
}

impl Revert {
    /// *rewrite*'s `cname` rule on `reply` (a whole message): the reply with the retargeted
    /// CNAME last in its answer, and the new target to ask. `None` without a `cname` rule
    /// or when it takes no CNAME of the reply.
    pub(crate) fn retarget(&self, reply: &[u8]) -> Option<(Vec<u8>, WireName)> {
        self.cname.as_ref()?.retarget(reply)
    }

    /// Turns `reply` (a whole message) back for the client: the client's question, the
    /// rcode and every record but OPT through the response rules. A reply that does not
    /// read is left as it is.
    pub(crate) fn apply(&self, reply: &mut Vec<u8>) {
        if let Some(turned) = self.turned(reply) {
            *reply = turned;
        }
    }

    fn turned(&self, reply: &[u8]) -> Option<Vec<u8>> {
        let records = reply::records(reply).ok()?;
        let mut code = reply::rcode(reply).ok()?;
        for rule in self.rules.iter().rev() {
            if let ResponseRule::Rcode(from, to) = rule
                && code == *from
            {
                code = *to;
            }
        }
        let capacity = reply.len() + self.question.len() + 64;
        let mut turned = Rebuilt::new(reply, &self.question, 1, capacity)?;
        turned.set_flags(turned.flags() & !wire::RCODE_BITS | code & wire::RCODE_BITS);
        let text = |at: Option<usize>| {
            at.and_then(|at| wire::name_at(reply, at))
                .and_then(|name| dotted(&name.to_ascii_lowercase()))
        };
        for record in &records {
            if record.rtype == rtype::OPT {
                // The rcode's extended bits are OPT's; the rules touch nothing else of it.
                let ttl = record.ttl & 0x00ff_ffff | u32::from(code >> 4 & 0xff) << 24;
                let edit = Edit {
                    ttl: Some(ttl),
                    ..Edit::default()
                };
                turned.copy_edited(reply, record, record.section, &edit)?;
                continue;
            }
            let (mut owner, mut value, mut ttl) = (
                text(Some(record.start)),
                text(wire::value_name_at(reply, record)),
                record.ttl,
            );
            let (owner_before, value_before) = (owner.clone(), value.clone());
            for rule in self.rules.iter().rev() {
                rule.apply(&mut owner, &mut value, &mut ttl);
            }
            let wire_of = |now: Option<String>, before: Option<String>| {
                now.filter(|now| Some(now) != before.as_ref())
                    .and_then(|now| WireName::from_dotted(&now).ok())
            };
            let owner = wire_of(owner, owner_before);
            let value = wire_of(value, value_before);
            let edit = Edit {
                owner: owner.as_ref().map(WireName::as_bytes),
                value: value.as_ref().map(WireName::as_bytes),
                ttl: Some(ttl),
            };
            turned.copy_edited(reply, record, record.section, &edit)?;
        }
        Some(turned.finish())
    }
}

#[cfg(test)]
mod tests;
