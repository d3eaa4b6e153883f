//! *template* on the request path (CoreDNS `plugin/template`): replies made from Go
//! templates for the questions a template's class, type, zones and regular expressions
//! select.
//!
//! As CoreDNS: a query outside every template's zones passes on. Templates are tried in file
//! order; one whose zone, class and type fit but whose regular expressions do not match
//! answers SERVFAIL, unless its `fallthrough` covers the name (the next template is tried,
//! then the rest of the chain). A match answers authoritatively with the template's rcode
//! and records (`rcode SERVFAIL` answers SERVFAIL with none). For an A or AAAA question, a
//! CNAME answer's target is asked through the server and its answers follow (the rcode
//! stays the template's). A template that fails to execute, or gives text that is not an
//! RR, answers SERVFAIL and is counted.
//!
//! Metrics (CoreDNS's): `coredns_template_matches_total{server,zone,view,class,type}`,
//! `coredns_template_template_failures_total` and `coredns_template_rr_failures_total`
//! (`{server,zone,view,class,type,section,template}`).

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};

use super::chase::Chase;
use super::{Ctx, End, Flow, Query};
use crate::codes::{class, option, rtype as wire_type};
use crate::config::TemplateConfig;
use crate::gotemplate::{self, Data};
use crate::metrics::{Collect, Exposition, MetricType};
use crate::name::{WireName, suffix_offset};
use crate::plugin::Plugin;
use crate::wire::{self, Rebuilt, rcode, reply};
use super::lifecycle::{Build, Lifecycle};
use super::PluginChain;
use crate::server::error::StartError;

/// One template, its zones ready.
#[derive(Debug)]
struct One {
    config: TemplateConfig,
    /// Lower-case wire, with the dotted spelling for `.Zone`.
    zones: Vec<(WireName, String)>,
    fallthrough: Option<Vec<WireName>>,
}

/// The *template* directives of one block.
#[derive(Debug)]
pub(crate) struct Template {
    /// Every template's zones.
    zones: Vec<WireName>,
    templates: Vec<One>,
    metrics: Arc<TemplateMetrics>,
}

fn wire(name: &Name) -> Option<WireName> {
    WireName::from_dotted(&name.to_ascii())
        .ok()
        .map(|name| name.to_lowercase())
}

/// A class's mnemonic, as miekg/dns's `ClassToString` gives it.
pub(crate) fn class_name(class: u16) -> String {
    match class {
        class::IN => "IN".to_owned(),
        class::CS => "CS".to_owned(),
        class::CH => "CH".to_owned(),
        class::HS => "HS".to_owned(),
        class::NONE => "NONE".to_owned(),
        class::ANY => "ANY".to_owned(),
        other => format!("CLASS{other}"),
    }
}

/// A type's mnemonic.
pub(crate) fn type_name(rtype: u16) -> String {
    match RecordType::from(rtype) {
        RecordType::Unknown(n) => format!("TYPE{n}"),
        known => known.to_string(),
    }
}

/// The lower-case dotted name of a lower-case wire name, with its final dot (`.` for the
/// root).
fn dotted(qname: &[u8]) -> String {
    let mut out = String::with_capacity(qname.len() + 1);
    let _ = crate::name::write_dotted(qname, &mut out);
    out
}

impl Template {
    /// The templates of a block whose `server` label is as given.
    pub(crate) fn new(configs: &[TemplateConfig], server: &str) -> Self {
        let templates: Vec<One> = configs
            .iter()
            .map(|config| One {
                zones: config
                    .zones
                    .iter()
                    .filter_map(|zone| wire(zone).map(|w| (w, zone.to_ascii().to_lowercase())))
                    .collect(),
                fallthrough: config
                    .fallthrough
                    .as_ref()
                    .map(|zones| zones.iter().filter_map(wire).collect()),
                config: config.clone(),
            })
            .collect();
        let mut zones: Vec<WireName> = Vec::new();
        for (zone, _) in templates.iter().flat_map(|one| &one.zones) {
            if !zones.contains(zone) {
                zones.push(zone.clone());
            }
        }
        Self {
            zones,
            templates,
            metrics: Arc::new(TemplateMetrics::new(server)),
        }
    }

    /// The plugin's metrics.
    #[cfg(test)]
    pub(crate) fn metrics(&self) -> &Arc<TemplateMetrics> {
        &self.metrics
    }

    /// Answers `q` into `out`, or passes it on.
    pub(crate) fn respond(&self, ctx: &Ctx<'_>, q: &Query<'_>, out: &mut Vec<u8>) -> Flow {
        let request = q.request;
        let qname = request.question.name();
        if !self
            .zones
            .iter()
            .any(|zone| suffix_offset(qname, zone.as_bytes()).is_some())
        {
            return Flow::Pass;
        }
        let name = dotted(qname);
        let (qclass, qtype) = (request.question.qclass, request.question.qtype);
        for one in &self.templates {
            let Some((_, zone)) = one
                .zones
                .iter()
                .filter(|(wire, _)| suffix_offset(qname, wire.as_bytes()).is_some())
                .max_by_key(|(wire, _)| wire.as_bytes().len())
            else {
                continue;
            };
            let config = &one.config;
            if config.class != class::ANY && qclass != class::ANY && qclass != config.class {
                continue;
            }
            if config.qtype != wire_type::ANY && qtype != wire_type::ANY && qtype != config.qtype {
                continue;
            }
            let found = config
                .regex
                .iter()
                .find_map(|regex| regex.captures(&name).map(|captures| (regex, captures)));
            let Some((regex, captures)) = found else {
                let falls = one.fallthrough.as_ref().is_some_and(|zones| {
                    zones.is_empty()
                        || zones
                            .iter()
                            .any(|zone| suffix_offset(qname, zone.as_bytes()).is_some())
                });
                if falls {
                    continue;
                }
                wire::write_rcode(request, rcode::SERVFAIL, out);
                return Flow::reply(Plugin::Template);
            };
            let class = class_name(if qclass == class::ANY {
                config.class
            } else {
                qclass
            });
            let rtype = type_name(if qtype == wire_type::ANY {
                config.qtype
            } else {
                qtype
            });
            if !ctx.dry {
                self.metrics.matched(zone, &class, &rtype);
            }
            if config.rcode == rcode::SERVFAIL {
                wire::write_rcode(request, rcode::SERVFAIL, out);
                return Flow::reply(Plugin::Template);
            }
            let matches: Vec<String> = captures
                .iter()
                .map(|group| group.map_or_else(String::new, |g| g.as_str().to_owned()))
                .collect();
            let mut groups: Vec<(String, String)> = matches
                .iter()
                .enumerate()
                .map(|(index, text)| (index.to_string(), text.clone()))
                .collect();
            for (index, group) in regex.capture_names().enumerate() {
                if let Some(group) = group {
                    groups.push((group.to_owned(), matches[index].clone()));
                }
            }
            let remote = ctx.client.ip().to_string();
            let data = Data {
                zone,
                name: &name,
                regex: regex.as_str(),
                matches: &matches,
                groups: &groups,
                class: &class,
                qtype: &rtype,
                remote: &remote,
                question: (qtype, qclass),
            };
            return match self.reply(ctx, q, one, &data, out) {
                Ok(answered) => answered,
                Err(error) => {
                    if let Some(errors) = &ctx.block.errors {
                        errors.report(request, rcode::SERVFAIL, &error, Instant::now());
                    }
                    wire::write_rcode(request, rcode::SERVFAIL, out);
                    Flow::reply(Plugin::Template)
                }
            };
        }
        Flow::Pass
    }

    /// The reply of template `one` for `data`.
    fn reply(
        &self,
        ctx: &Ctx<'_>,
        q: &Query<'_>,
        one: &One,
        data: &Data<'_>,
        out: &mut Vec<u8>,
    ) -> Result<Flow, String> {
        let request = q.request;
        let config = &one.config;
        let sections: [(&str, &[gotemplate::Template]); 3] = [
            ("answer", &config.answer),
            ("additional", &config.additional),
            ("authority", &config.authority),
        ];
        let mut records: [Vec<(Record, String)>; 3] = Default::default();
        for (index, (section, templates)) in sections.into_iter().enumerate() {
            for template in templates {
                let text = template.execute(data).map_err(|error| {
                    self.metrics
                        .failed(Failure::Template, data, section, template);
                    format!("template: {section}: {error}")
                })?;
                let record = parse_rr(&text).map_err(|error| {
                    self.metrics.failed(Failure::Rr, data, section, template);
                    format!("template: {section}: {text:?} is not an RR: {error}")
                })?;
                records[index].push((record, text));
            }
        }
        let [answer, additional, authority] = records;
        let qtype = request.question.qtype;
        let cname = answer.iter().find_map(|(record, _)| match &record.data {
            RData::CNAME(target) if qtype == wire_type::A || qtype == wire_type::AAAA => {
                wire(&target.0)
            }
            _ => None,
        });
        let mut message = Rebuilt::reply_to(request, true, config.rcode);
        for (number, records) in [(1, answer), (2, authority), (3, additional)] {
            for (record, text) in records {
                message
                    .push_record(&record, number)
                    .ok_or_else(|| format!("template: {text:?} does not encode"))?;
            }
        }
        let whole = message.finish();
        if let Some(target) = cname {
            return Ok(End::Chase(Chase::from_template(
                ctx.block, ctx.zone, request, whole, target,
            ))
            .into());
        }
        let chain = &ctx.block.chain;
        let edns = chain.edns(request);
        if reply::fit_for_client(&whole, request.id, edns.as_ref(), q.limit, out).is_err() {
            return Err("template: the reply does not encode".to_owned());
        }
        if let (Some((code, text)), Some(_)) = (&config.ederror, edns) {
            extended_error(out, *code, text);
        }
        Ok(Flow::reply(Plugin::Template))
    }
}

/// Adds an Extended DNS Error option (RFC 8914) to the OPT record that ends `reply`.
fn extended_error(reply: &mut Vec<u8>, code: u16, text: &str) {
    // The OPT record fit_for_client writes last: owner, TYPE, CLASS, TTL, RDLENGTH 0.
    let Some(rdlen_at) = reply.len().checked_sub(2) else {
        return;
    };
    let option_len = 2 + text.len();
    let Ok(option_len) = u16::try_from(option_len) else {
        return;
    };
    reply.extend_from_slice(&option::EDE.to_be_bytes());
    reply.extend_from_slice(&option_len.to_be_bytes());
    reply.extend_from_slice(&code.to_be_bytes());
    reply.extend_from_slice(text.as_bytes());
    let rdlen = (reply.len() - rdlen_at - 2) as u16;
    reply[rdlen_at..rdlen_at + 2].copy_from_slice(&rdlen.to_be_bytes());
}

/// One RR in zone-file syntax, as miekg/dns's `NewRR` reads it with the root as origin:
/// `NAME [TTL] [CLASS] TYPE RDATA` (TTL and CLASS in either order; TTL 3600 and class IN
/// when absent; relative names are under the root).
pub(crate) fn parse_rr(text: &str) -> Result<Record, String> {
    let text = text.trim();
    let mut rest = text;
    let mut next = || {
        rest = rest.trim_start();
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        rest = after;
        word
    };
    let owner = next();
    if owner.is_empty() {
        return Err("empty RR".to_owned());
    }
    let name = if owner == "@" {
        Name::root()
    } else {
        let mut name = Name::from_ascii(owner).map_err(|error| format!("bad owner: {error}"))?;
        name.set_fqdn(true);
        name
    };
    let mut ttl = None;
    let mut class = None;
    let rtype = loop {
        let word = next();
        if word.is_empty() {
            return Err("no type".to_owned());
        }
        let upper = word.to_ascii_uppercase();
        if ttl.is_none() && word.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
            ttl = Some(parse_ttl(word)?);
            continue;
        }
        if class.is_none()
            && let Some(number) = crate::codes::class::by_name(&upper)
        {
            class = Some(number);
            continue;
        }
        break RecordType::from_str(&upper).map_err(|_| format!("unknown type {word:?}"))?;
    };
    let rdata_text = rest.trim();
    let mut data =
        RData::try_from_str(rtype, rdata_text).map_err(|error| format!("bad {rtype}: {error}"))?;
    qualify(&mut data);
    let mut record = Record::from_rdata(name, ttl.unwrap_or(3600), data);
    record.dns_class = DNSClass::from(class.unwrap_or(1));
    Ok(record)
}

/// A TTL as miekg/dns reads one: seconds, or with `s`, `m`, `h`, `d`, `w` units.
fn parse_ttl(text: &str) -> Result<u32, String> {
    if let Ok(seconds) = text.parse::<u32>() {
        return Ok(seconds);
    }
    hickory_proto::serialize::txt::parse_ttl(text).map_err(|_| format!("bad TTL {text:?}"))
}

/// Names in RDATA made fully qualified (relative to the root).
fn qualify(data: &mut RData) {
    let fqdn = |name: &mut Name| name.set_fqdn(true);
    match data {
        RData::CNAME(target) => fqdn(&mut target.0),
        RData::PTR(target) => fqdn(&mut target.0),
        RData::NS(target) => fqdn(&mut target.0),
        RData::ANAME(target) => fqdn(&mut target.0),
        RData::MX(mx) => fqdn(&mut mx.exchange),
        RData::SRV(srv) => fqdn(&mut srv.target),
        RData::SOA(soa) => {
            fqdn(&mut soa.mname);
            fqdn(&mut soa.rname);
        }
        RData::NAPTR(naptr) => fqdn(&mut naptr.replacement),
        _ => {}
    }
}

/// Which failure a template had.
enum Failure {
    /// The Go template did not execute.
    Template,
    /// Its text is not an RR.
    Rr,
}

type Labels = (String, String, String, String, String);

/// The plugin's counters for one block.
#[derive(Debug)]
pub(crate) struct TemplateMetrics {
    server: String,
    /// By zone, class and type.
    matches: Mutex<BTreeMap<(String, String, String), u64>>,
    /// By zone, class, type, section and template.
    template_failures: Mutex<BTreeMap<Labels, u64>>,
    rr_failures: Mutex<BTreeMap<Labels, u64>>,
}

impl TemplateMetrics {
    fn new(server: &str) -> Self {
        Self {
            server: server.to_owned(),
            matches: Mutex::new(BTreeMap::new()),
            template_failures: Mutex::new(BTreeMap::new()),
            rr_failures: Mutex::new(BTreeMap::new()),
        }
    }

    fn matched(&self, zone: &str, class: &str, rtype: &str) {
        if let Ok(mut matches) = self.matches.lock() {
            *matches
                .entry((zone.to_owned(), class.to_owned(), rtype.to_owned()))
                .or_default() += 1;
        }
    }

    fn failed(&self, failure: Failure, data: &Data<'_>, section: &str, template: &gotemplate::Template) {
        let counts = match failure {
            Failure::Template => &self.template_failures,
            Failure::Rr => &self.rr_failures,
        };
        if let Ok(mut counts) = counts.lock() {
            *counts
                .entry((
                    data.zone.to_owned(),
                    data.class.to_owned(),
                    data.qtype.to_owned(),
                    section.to_owned(),
                    template.source().to_owned(),
                ))
                .or_default() += 1;
        }
    }

    /// The matches counted for `zone`, `class` and `type` (for tests).
    #[cfg(test)]
    pub(crate) fn matches(&self, zone: &str, class: &str, rtype: &str) -> u64 {
        self.matches.lock().map_or(0, |matches| {
            matches
                .get(&(zone.to_owned(), class.to_owned(), rtype.to_owned()))
                .copied()
                .unwrap_or(0)
        })
    }
}

impl Collect for TemplateMetrics {
    fn collect(&self, out: &mut Exposition) {
        if let Ok(matches) = self.matches.lock() {
            for ((zone, class, rtype), count) in matches.iter() {
                out.sample(
                    "coredns_template_matches_total",
                    "Counter of template regex matches.",
                    MetricType::Counter,
                    &[
                        ("server", &self.server),
                        ("zone", zone),
                        ("view", ""),
                        ("class", class),
                        ("type", rtype),
                    ],
                    *count as f64,
                );
            }
        }
        let families = [
            (
                "coredns_template_template_failures_total",
                "Counter of go template failures.",
                &self.template_failures,
            ),
            (
                "coredns_template_rr_failures_total",
                "Counter of mis-templated RRs.",
                &self.rr_failures,
            ),
        ];
        for (name, help, counts) in families {
            let Ok(counts) = counts.lock() else {
                continue;
            };
            for ((zone, class, rtype, section, template), count) in counts.iter() {
                out.sample(
                    name,
                    help,
                    MetricType::Counter,
                    &[
                        ("server", &self.server),
                        ("zone", zone),
                        ("view", ""),
                        ("class", class),
                        ("type", rtype),
                        ("section", section),
                        ("template", template),
                    ],
                    *count as f64,
                );
            }
        }
    }
}

impl Lifecycle for Template {
    const INTERNET_ONLY: bool = false;

    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        let configs = &at.config.plugins.template;
        Ok((!configs.is_empty()).then(|| Self::new(configs, at.server)))
    }

    fn collectors(&self, out: &mut Vec<Arc<dyn Collect>>) {
        out.push(Arc::clone(&self.metrics) as Arc<dyn Collect>);
    }

    #[inline]
    fn answer(
        &self,
        _chain: &PluginChain,
        ctx: &Ctx<'_>,
        _index: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        self.respond(ctx, q, out)
    }
}

#[cfg(test)]
mod tests;
