//! `/debug/why` and `query --why`: which plugin of which block answers a name, and why —
//! the Service, EndpointSlice, Pod or namespace rule behind each record or the NXDOMAIN
//! ([`crate::zone::why`]), or, for a name outside the cluster zone, where it is forwarded and
//! whether the cache holds its answer (and for how long still).
//!
//! Worked out on demand: the objects are read again from the block's objects files; nothing
//! on the query path records provenance.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};
use serde::Serialize;

use super::{Block, Transport};
use crate::cache::Hit;
use crate::http::Page;
use crate::wire::Request;
use crate::zone::name::{WireName, suffix_offset};

/// Why a name answers what it does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Why {
    /// The name asked, dotted with its final dot.
    pub name: String,
    /// The record type.
    #[serde(rename = "type")]
    pub qtype: String,
    /// The plugin that answers it: `kubernetes`, `forward`, `cache`, or `none`.
    pub plugin: String,
    /// The block's zone the name falls in.
    pub zone: Option<String>,
    /// One line per record, or for the NXDOMAIN or NODATA.
    pub reasons: Vec<String>,
}

impl Why {
    /// As text: a heading line, then the reasons indented.
    pub fn text(&self) -> String {
        let mut out = format!(
            "{} {}: {}{}\n",
            self.name,
            self.qtype,
            self.plugin,
            self.zone
                .as_deref()
                .map(|zone| format!(" (zone {zone})"))
                .unwrap_or_default()
        );
        for reason in &self.reasons {
            let _ = writeln!(out, "  {reason}");
        }
        out
    }
}

/// Why `name` `qtype` answers what it does in `blocks`; an error for a name or type that is
/// not one, or objects that cannot be read.
pub fn explain(blocks: &[Arc<Block>], name: &str, qtype: &str) -> Result<Why, String> {
    let parsed = Name::from_ascii(name).map_err(|_| format!("not a domain name: {name}"))?;
    let rtype: RecordType = qtype
        .to_ascii_uppercase()
        .parse()
        .map_err(|_| format!("not a record type: {qtype}"))?;
    let dotted = format!("{}.", name.trim_end_matches('.').to_ascii_lowercase());
    let wire = WireName::from_dotted(&dotted).map_err(|_| format!("not a domain name: {name}"))?;
    let mut why = Why {
        name: dotted.clone(),
        qtype: rtype.to_string(),
        plugin: "none".to_owned(),
        zone: None,
        reasons: Vec::new(),
    };
    let Some((block, zone)) = block_for(blocks, wire.as_bytes()) else {
        why.reasons
            .push("no server block serves this name: REFUSED".to_owned());
        return Ok(why);
    };
    why.zone = Some(zone.to_string());
    if let Some(kubernetes) = block.kubernetes() {
        let config = &kubernetes.config;
        let cluster_zone = config.zones.iter().find(|z| {
            WireName::from_dotted(&z.to_string())
                .is_ok_and(|z| suffix_offset(wire.as_bytes(), z.as_bytes()).is_some())
        });
        if let Some(cluster_zone) = cluster_zone {
            why.plugin = "kubernetes".to_owned();
            why.zone = Some(cluster_zone.to_string());
            if config.objects.is_empty() {
                why.reasons.push(
                    "this block watches the API server: the explanation needs its objects, \
                     which /debug/why reads only from objects files"
                        .to_owned(),
                );
                return Ok(why);
            }
            let loaded = crate::source::read_objects(&config.objects)
                .map_err(|error| format!("reading the objects files: {error}"))?;
            why.reasons = crate::zone::why::explain(
                config,
                &loaded.cluster,
                &cluster_zone.to_string(),
                &dotted,
                &why.qtype,
            );
            return Ok(why);
        }
    }
    if let Some((plugin, rcode)) = answered_locally(blocks, block, &parsed, rtype) {
        why.plugin = plugin;
        why.reasons
            .push(format!("answered by the block's {}: {rcode}", why.plugin));
        return Ok(why);
    }
    let upstreams: Vec<String> = block
        .forwarders()
        .iter()
        .flat_map(|f| f.health())
        .map(|health| {
            if health.down {
                format!(
                    "{} (down: {} failed health checks)",
                    health.name, health.fails
                )
            } else {
                health.name
            }
        })
        .collect();
    if let Some(cache) = block.cache()
        && let Some(ttl) = cached(block, cache, &parsed, rtype)
    {
        why.plugin = "cache".to_owned();
        why.reasons
            .push(format!("served from the cache, {ttl} s of its TTL left"));
    } else if !upstreams.is_empty() {
        why.plugin = "forward".to_owned();
    }
    if upstreams.is_empty() {
        why.reasons.push(
            "no plugin of the block makes this name and none forwards it: REFUSED".to_owned(),
        );
    } else {
        why.reasons.push(format!(
            "outside the cluster zone: forwarded upstream to {}",
            upstreams.join(", ")
        ));
    }
    Ok(why)
}

/// The block's *hosts* or *template*, and the rcode, when one of them answers the name.
fn answered_locally(
    blocks: &[Arc<Block>],
    block: &Block,
    name: &Name,
    qtype: RecordType,
) -> Option<(String, String)> {
    let directives = block.chain_directives();
    let local: Vec<&str> = ["hosts", "template"]
        .into_iter()
        .filter(|d| directives.contains(d))
        .collect();
    if local.is_empty() {
        return None;
    }
    let mut query = Message::new(0, MessageType::Query, OpCode::Query);
    query.metadata.recursion_desired = true;
    query.add_query(Query::query(name.clone(), qtype));
    let packet = query.to_vec().ok()?;
    let handler = super::Handler::new(blocks.to_vec());
    let mut out = Vec::new();
    match handler.respond(
        &packet,
        ([127, 0, 0, 1], 0).into(),
        Transport::Tcp,
        &mut out,
    ) {
        super::Outcome::Reply => {
            let rcode = crate::wire::reply::rcode(&out).ok()?;
            (rcode != crate::wire::rcode::REFUSED).then(|| {
                (
                    local.join(" or "),
                    crate::wire::rcode_name(rcode).to_string(),
                )
            })
        }
        _ => None,
    }
}

/// The block whose zones hold `qname` most specifically, and that zone.
fn block_for<'b>(blocks: &'b [Arc<Block>], qname: &[u8]) -> Option<(&'b Arc<Block>, &'b WireName)> {
    let mut best: Option<(&Arc<Block>, &WireName)> = None;
    for block in blocks {
        for zone in &block.zones {
            if suffix_offset(qname, zone.as_bytes()).is_some()
                && best.is_none_or(|(_, b)| zone.as_bytes().len() > b.as_bytes().len())
            {
                best = Some((block, zone));
            }
        }
    }
    best
}

/// The seconds left of the cached answer to `name` `qtype`, if the cache has one.
fn cached(
    block: &Block,
    cache: &crate::cache::Cache,
    name: &Name,
    qtype: RecordType,
) -> Option<u32> {
    let mut query = Message::new(0, MessageType::Query, OpCode::Query);
    query.metadata.recursion_desired = true;
    query.add_query(Query::query(name.clone(), qtype));
    let packet = query.to_vec().ok()?;
    let request = Request::parse(&packet).ok()?;
    if !cache.covers(request.question.name()) {
        return None;
    }
    let limit = block.chain.limit(&request, Transport::Tcp);
    let mut out = Vec::new();
    match cache.get(&request, Instant::now(), limit, &mut out)? {
        Hit::Stale => Some(0),
        Hit::Fresh | Hit::Prefetch => {
            let reply = Message::from_vec(&out).ok()?;
            reply
                .answers
                .iter()
                .chain(&reply.authorities)
                .map(|record| record.ttl)
                .min()
                .or(Some(0))
        }
    }
}

/// `/debug/why?name=N[&type=T][&format=json|text]`.
pub(crate) fn page(blocks: &[Arc<Block>], params: &[(String, String)]) -> Page {
    let json = match crate::http::debug::wants_json(params) {
        Ok(json) => json,
        Err(page) => return page,
    };
    let get = |key: &str| {
        params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let Some(name) = get("name").filter(|name| !name.is_empty()) else {
        return Page::bad_request(
            "name: missing (/debug/why?name=web.shop.svc.cluster.local&type=A)",
        );
    };
    match explain(blocks, name, get("type").unwrap_or("A")) {
        Ok(why) if json => match serde_json::to_string_pretty(&why) {
            Ok(body) => Page::json(body + "\n"),
            Err(error) => Page::bad_request(&error.to_string()),
        },
        Ok(why) => Page::text(why.text()),
        Err(error) => Page::bad_request(&error),
    }
}
