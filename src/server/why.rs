//! `/debug/why` and `query --why`: which plugin of which block answers a name, and why —
//! the Service, EndpointSlice, Pod or namespace rule behind each record or the NXDOMAIN
//! ([`crate::zone::why`]), or, for a name outside the cluster zone, where it is forwarded and
//! whether the cache holds its answer (and for how long still).
//!
//! Which plugin answers is the block's chain's own word: the question is run down it with
//! nothing recorded ([`Block::dry_run`]), so *rewrite*, *hosts*, `fallthrough`, *loop* and
//! *autopath* are what they are on the query path, with no model of the chain here.
//!
//! Worked out on demand, and nothing on the query path records provenance: the objects are
//! read again from the block's objects files, or, for a block watching the API server, asked
//! of the task that keeps the watched objects ([`ApiWatch::inspect`]). A forwarded name is
//! not asked upstream: the answer says which upstreams the query would go to, and what the
//! cache holds for it.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::rr::{Name, RecordType};
use serde::Serialize;

use super::chain::End;
use super::chain::rewrite::Rewrite;
use super::{Block, Pending, Transport};
use crate::http::Page;
use crate::metrics::dns::Writer;
use crate::name::{WireName, suffix_offset};
use crate::plugin::Plugin;
use crate::source::api::ApiWatch;
use crate::wire::Request;
use crate::zone::why::Listing;

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

/// Why `name` `qtype` answers what it does in `blocks`, offline (`query --why`): the
/// objects of a block watching the API server are the running server's only; an error for a
/// name or type that is not one, or objects that cannot be read.
pub fn explain(blocks: &[Arc<Block>], name: &str, qtype: &str) -> Result<Why, WhyError> {
    match prepare(blocks, name, qtype)? {
        Prepared::Done(why) => Ok(why),
        Prepared::Objects(mut why, block, zone, asked) => {
            let Some(kubernetes) = block.kubernetes() else {
                return Ok(why);
            };
            if kubernetes.config.objects.is_empty() {
                why.reasons.push(format!(
                    "this block watches the API server: its objects are the running server's; \
                     ask it: /debug/why?name={}&type={} on its metrics listener",
                    why.name, why.qtype
                ));
                return Ok(why);
            }
            let reasons = from_files(&kubernetes.config, &zone, &asked)?;
            why.reasons.extend(reasons);
            Ok(why)
        }
    }
}

/// [`explain`] on the running server (`/debug/why`): a block watching the API server is
/// explained from the objects its watch holds now.
pub async fn explain_live(blocks: &[Arc<Block>], name: &str, qtype: &str) -> Result<Why, WhyError> {
    match prepare(blocks, name, qtype)? {
        Prepared::Done(why) => Ok(why),
        Prepared::Objects(mut why, block, zone, asked) => {
            let Some(kubernetes) = block.kubernetes() else {
                return Ok(why);
            };
            let reasons = match kubernetes.api() {
                Some(api) if kubernetes.config.objects.is_empty() => {
                    from_watch(api, &zone, &asked).await
                }
                _ => {
                    // Reading and parsing the files is blocking work, off the runtime.
                    let config = kubernetes.config.clone();
                    tokio::task::spawn_blocking(move || from_files(&config, &zone, &asked))
                        .await
                        .map_err(|error| WhyError::Interrupted(error.to_string()))??
                }
            };
            why.reasons.extend(reasons);
            Ok(why)
        }
    }
}

/// Why a name cannot be explained.
#[derive(Debug, thiserror::Error)]
pub enum WhyError {
    /// The name asked about is not a domain name.
    #[error("not a domain name: {0}")]
    NotAName(String),
    /// The type asked about is not a record type.
    #[error("not a record type: {0}")]
    NotAType(String),
    /// The block's objects files cannot be read again.
    #[error("reading the objects files: {0}")]
    Objects(#[from] crate::source::Error),
    /// Reading them did not finish (the runtime is shutting down).
    #[error("reading the objects files: {0}")]
    Interrupted(String),
}

/// How far [`prepare`] got.
enum Prepared {
    /// The whole answer.
    Done(Why),
    /// A name of the cluster zone `String` of the block's *kubernetes*: its reasons are the
    /// objects' for the question the plugin is asked.
    Objects(Why, Arc<Block>, String, Asked),
}

/// The question the block's plugins after *rewrite* are asked: dotted, lower case, with its
/// final dot; the type's name.
#[derive(Debug, Clone)]
struct Asked {
    name: String,
    qtype: String,
}

/// Everything but the objects' reasons for a name of the cluster zone.
fn prepare(blocks: &[Arc<Block>], name: &str, qtype: &str) -> Result<Prepared, WhyError> {
    let not_a_name = || WhyError::NotAName(name.to_owned());
    let parsed = Name::from_ascii(name).map_err(|_| not_a_name())?;
    let rtype: RecordType = qtype
        .to_ascii_uppercase()
        .parse()
        .map_err(|_| WhyError::NotAType(qtype.to_owned()))?;
    let dotted = |name: &str| format!("{}.", name.trim_end_matches('.').to_ascii_lowercase());
    let wire = WireName::from_dotted(&dotted(name)).map_err(|_| not_a_name())?;
    let mut why = Why {
        name: dotted(name),
        qtype: rtype.to_string(),
        plugin: "none".to_owned(),
        zone: None,
        reasons: Vec::new(),
    };
    let Some((block, zone)) = block_for(blocks, wire.as_bytes()) else {
        why.reasons
            .push("no server block serves this name: REFUSED".to_owned());
        return Ok(Prepared::Done(why));
    };
    why.zone = Some(zone.to_string());
    // *rewrite* runs first: the plugins after it are asked its question.
    let (client_name, client_type) = (parsed.clone(), rtype);
    let (parsed, rtype, wire) = match rewritten(block, &parsed, rtype) {
        Some((new, new_type)) => {
            let new_dotted = dotted(&new.to_ascii());
            let new_wire = WireName::from_dotted(&new_dotted).map_err(|_| not_a_name())?;
            why.reasons
                .push(format!("rewrite: asked on as {new_dotted} {new_type}"));
            (new, new_type, new_wire)
        }
        None => (parsed, rtype, wire),
    };
    let asked = Asked {
        name: dotted(&parsed.to_ascii()),
        qtype: rtype.to_string(),
    };
    // The cluster zone the asked name falls in, when the block has *kubernetes*.
    let cluster_zone = block.kubernetes().and_then(|kubernetes| {
        kubernetes.config.zones.iter().find(|z| {
            WireName::from_dotted(&z.to_string())
                .is_ok_and(|z| suffix_offset(wire.as_bytes(), z.as_bytes()).is_some())
        })
    });
    // The chain itself is asked where the client's question ends, recording nothing.
    let packet = question(&client_name, client_type).ok_or_else(not_a_name)?;
    let run = block.dry_run(&packet).ok_or_else(not_a_name)?;
    let kubernetes = Writer::Plugin(Plugin::Kubernetes);
    match run.end {
        End::Reply(writer) if writer == kubernetes => {}
        End::Chase(chase) if chase.plugin == kubernetes => {}
        End::Reply(writer) => {
            let rcode = crate::wire::reply::rcode(&run.reply)
                .map(|rcode| crate::wire::rcode_name(rcode).to_string())
                .unwrap_or_else(|_| "an unreadable reply".to_owned());
            why.plugin = writer_name(writer);
            why.reasons.push(match writer {
                Writer::Plugin(plugin) => {
                    format!("answered by the block's {}: {rcode}", plugin.name())
                }
                Writer::Server => format!("answered by the server itself: {rcode}"),
            });
            return Ok(Prepared::Done(why));
        }
        End::Chase(chase) => {
            why.plugin = writer_name(chase.plugin);
            why.reasons.push(format!(
                "answered by the block's {}: a CNAME to {}, whose records are asked through \
                 the server again",
                why.plugin, chase.target
            ));
            return Ok(Prepared::Done(why));
        }
        End::Forward(pending) => {
            forwarded(
                block,
                &pending,
                cluster_zone.is_some(),
                &parsed,
                rtype,
                &mut why,
            );
            return Ok(Prepared::Done(why));
        }
        End::Transfer(_) => {
            why.plugin = Plugin::Transfer.name().to_owned();
            why.reasons
                .push("a zone transfer: the zone's records".to_owned());
            return Ok(Prepared::Done(why));
        }
        End::Refused => {
            why.reasons.push(if block.forwarders().is_empty() {
                "no plugin of the block makes this name and none forwards it: REFUSED".to_owned()
            } else {
                "no plugin of the block makes this name and no forward of it takes the name \
                 (outside its FROM, or an except name): REFUSED"
                    .to_owned()
            });
            return Ok(Prepared::Done(why));
        }
    }
    // *kubernetes* answered: its reasons are the objects'.
    let zone = cluster_zone.map_or_else(|| zone.to_string(), ToString::to_string);
    why.plugin = Plugin::Kubernetes.name().to_owned();
    why.zone = Some(zone.clone());
    Ok(Prepared::Objects(why, Arc::clone(block), zone, asked))
}

/// The name `Why::plugin` gives a reply's writer: the plugin's, or `none` for the server.
fn writer_name(writer: Writer) -> String {
    match writer {
        Writer::Plugin(plugin) => plugin.name().to_owned(),
        Writer::Server => "none".to_owned(),
    }
}

/// The question *rewrite*'s rules make of `name` `qtype` in `block` (as for a query from
/// loopback over UDP), when one matches and changes it: the step itself is asked.
fn rewritten(block: &Block, name: &Name, qtype: RecordType) -> Option<(Name, RecordType)> {
    let rewrite = block.chain.get::<Rewrite>()?;
    let packet = question(name, qtype)?;
    let request = Request::parse(&packet).ok()?;
    let client = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let rewritten = rewrite.apply(&request, client, Transport::Udp)?.ok()?;
    let asked = Request::parse(&rewritten.packet).ok()?;
    let asked_name = Name::from_labels(crate::name::labels(asked.question.name())).ok()?;
    let asked_type = RecordType::from(asked.question.qtype);
    let changed = asked_name != *name || asked_type != qtype;
    changed.then_some((asked_name, asked_type))
}

/// The reasons from the block's objects files, read again.
fn from_files(
    config: &crate::config::KubernetesConfig,
    zone: &str,
    why: &Asked,
) -> Result<Vec<String>, WhyError> {
    let loaded = crate::source::read_objects(&config.objects)?;
    Ok(crate::zone::why::explain(
        config,
        &loaded.cluster,
        zone,
        &why.name,
        &why.qtype,
    ))
}

/// The reasons from the objects the API watch holds now, after what is unsure about them:
/// not synced yet (a name not found is then answered SERVFAIL), or a resource being listed
/// again. A watch that cannot answer says why, as the one reason.
async fn from_watch(api: &ApiWatch, zone: &str, why: &Asked) -> Vec<String> {
    let config = api.config().clone();
    let (zone, name, qtype) = (zone.to_owned(), why.name.clone(), why.qtype.clone());
    let synced = api.status.is_synced();
    let answer = api
        .inspect(move |cluster, complete| {
            let reasons = crate::zone::why::explain_listed(
                &config,
                cluster,
                Listing::Selected,
                &zone,
                &name,
                &qtype,
            );
            (complete, reasons)
        })
        .await;
    match answer {
        Ok((complete, reasons)) => {
            let mut out = Vec::with_capacity(reasons.len() + 1);
            if !synced {
                out.push(
                    "not synced with the API server yet: from the objects listed so far; a \
                     name not found is answered SERVFAIL until the sync"
                        .to_owned(),
                );
            } else if !complete {
                out.push(
                    "the API watch is listing a resource again: from the objects as the list \
                     stands (the zone served is the last whole one)"
                        .to_owned(),
                );
            }
            out.extend(reasons);
            out
        }
        Err(error) => vec![error.to_string()],
    }
}

/// A name the chain sends upstream (`pending`): the *forward* that takes it (its upstreams,
/// the unhealthy ones marked), *autopath*'s walk when it goes there, and what the cache holds
/// for it. The upstream is not asked. `in_cluster`: the name is in the cluster zone, and
/// *kubernetes* passed it on (`fallthrough`).
fn forwarded(
    block: &Block,
    pending: &Pending,
    in_cluster: bool,
    name: &Name,
    qtype: RecordType,
    why: &mut Why,
) {
    if let Some(walk) = &pending.autopath {
        why.plugin = Plugin::Autopath.name().to_owned();
        let next = walk
            .candidates
            .first()
            .map(ToString::to_string)
            .unwrap_or_default();
        why.reasons.push(format!(
            "autopath: the client's search path is walked here, name {} of it ({next}) goes \
             upstream",
            walk.index + 1
        ));
        return;
    }
    let forwarders = block.forwarders();
    let index = pending.forwarder;
    let Some(forwarder) = forwarders.get(index) else {
        return;
    };
    let upstreams: Vec<String> = forwarder
        .health()
        .into_iter()
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
    why.plugin = Plugin::Forward.name().to_owned();
    let which = if forwarders.len() > 1 {
        format!(
            " (the block's forward number {} of {}, the first that takes the name)",
            index + 1,
            forwarders.len()
        )
    } else {
        String::new()
    };
    let whose = if in_cluster {
        "not in the cluster zone's objects, and kubernetes falls through"
    } else {
        "outside the cluster zone"
    };
    why.reasons.push(if upstreams.is_empty() {
        format!("{whose}: its forward has no upstream left{which}: SERVFAIL")
    } else {
        format!(
            "{whose}: forwarded upstream to {}{which}",
            upstreams.join(", ")
        )
    });
    let Some(cache) = block.cache() else {
        return;
    };
    match cached(cache, name, qtype) {
        Cached::NotCovered => why
            .reasons
            .push("the cache does not cover this name: every query goes upstream".to_owned()),
        Cached::Miss => why
            .reasons
            .push("not in the cache: the next query goes upstream".to_owned()),
        Cached::Hit {
            stale,
            ttl,
            rcode,
            answers,
        } => {
            let records = match answers {
                1 => "1 answer record".to_owned(),
                n => format!("{n} answer records"),
            };
            // `serve_stale ... verify`: the upstream is asked first, the stale entry is for
            // when it fails.
            let verified = stale && cache.stale_is_verified();
            if !verified {
                why.plugin = Plugin::Cache.name().to_owned();
            }
            why.reasons.push(if verified {
                format!(
                    "in the cache but expired: {rcode}, {records}; serve_stale verify: the \
                     upstream is asked, the stale answer is served only if it fails"
                )
            } else if stale {
                format!(
                    "served stale from the cache (serve_stale; its TTL ran out): {rcode}, \
                     {records}; it is fetched again upstream"
                )
            } else {
                format!("served from the cache, {ttl} s of its TTL left: {rcode}, {records}")
            });
        }
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

/// What the cache holds for a name.
enum Cached {
    /// The cache is not for names like it.
    NotCovered,
    /// Nothing.
    Miss,
    /// An answer: expired but served under `serve_stale`, or with `ttl` seconds left; its
    /// rcode and the number of its answer records.
    Hit {
        stale: bool,
        ttl: u32,
        rcode: String,
        answers: usize,
    },
}

/// A client's query (recursion desired) of `name` `qtype`.
fn question(name: &Name, qtype: RecordType) -> Option<Vec<u8>> {
    use hickory_proto::serialize::binary::BinEncodable;
    let name = name.to_bytes().ok()?;
    Some(crate::wire::write_query(0, 0x0100, &name, qtype.into()))
}

/// What the cache holds for `name` `qtype`, as a query from a client would find it; read
/// only ([`Cache::peek`](crate::cache::Cache::peek)): the cache's metrics do not count it.
fn cached(cache: &crate::cache::Cache, name: &Name, qtype: RecordType) -> Cached {
    let Some(packet) = question(name, qtype) else {
        return Cached::Miss;
    };
    let Ok(request) = Request::parse(&packet) else {
        return Cached::Miss;
    };
    if !cache.covers(request.question.name()) {
        return Cached::NotCovered;
    }
    let Some(peek) = cache.peek(&request, Instant::now()) else {
        return Cached::Miss;
    };
    let Ok([_, answers, ..]) = crate::wire::reply::counts(&peek.message) else {
        return Cached::Miss;
    };
    let rcode = crate::wire::reply::rcode(&peek.message)
        .map(|rcode| crate::wire::rcode_name(rcode).to_string())
        .unwrap_or_else(|_| "an unreadable rcode".to_owned());
    Cached::Hit {
        stale: peek.stale,
        // As a client is told: the whole seconds left.
        ttl: u32::try_from(peek.left.as_secs()).unwrap_or(u32::MAX),
        rcode,
        answers: usize::from(answers),
    }
}

/// `/debug/why?name=N[&type=T][&format=json|text]`.
pub(crate) async fn page(blocks: &[Arc<Block>], params: &[(String, String)]) -> Page {
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
    match explain_live(blocks, name, get("type").unwrap_or("A")).await {
        Ok(why) if json => match serde_json::to_string_pretty(&why) {
            Ok(body) => Page::json(body + "\n"),
            Err(error) => Page::bad_request(&error.to_string()),
        },
        Ok(why) => Page::text(why.text()),
        Err(error) => Page::bad_request(&error.to_string()),
    }
}
