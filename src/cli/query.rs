//! `clusterdns query`: one question through the server's request path, answered from the
//! live cluster's objects or objects files, without the network.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::Context as _;
use clap::Args;
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, Record, RecordType};
use serde::Serialize;

use super::Source;
use super::cluster::ClusterArgs;
use super::output::{Data, Output};
use crate::server::{Handler, Outcome, Transport};
use crate::zone::zonefile::{JsonRecord, rdata_text, record_line};

/// Arguments of `query`.
#[derive(Debug, Args)]
pub(super) struct QueryArgs {
    /// The name to ask for.
    name: String,
    /// The record type.
    #[arg(long = "type", short = 't', default_value = "A")]
    qtype: String,
    /// After the answer, why: the plugin, and the Service, EndpointSlice, Pod or namespace
    /// rule behind each record, or the NXDOMAIN or NODATA.
    #[arg(long)]
    why: bool,
    /// Only the data of the answer's records, one per line, as dig's `+short` (which works
    /// too, anywhere after `query`).
    #[arg(long)]
    short: bool,
    /// dig's `+WORD` options, rewritten from `+WORD` before parsing (see [`super::dig_words`]):
    /// checked in [`run`], which names those it takes.
    #[arg(long = DIG_WORD_FLAG, value_name = "WORD", hide = true)]
    plus: Vec<String>,
    /// Output format: dig's text, or the reply as JSON or YAML data.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
    output: Output,
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// The hidden flag a `+WORD` of dig's becomes (`--dig-word=WORD`), for [`run`] to check.
pub(super) const DIG_WORD_FLAG: &str = "dig-word";

/// The `+WORD` options of dig's that `query` takes.
const DIG_WORDS: &[&str] = &["short"];

/// How the reply is printed.
#[derive(Debug, Clone, Copy)]
enum Shown {
    /// dig's layout.
    Dig,
    /// The answers' data alone (`+short`).
    Short,
    /// JSON or YAML.
    Data(Data),
}

/// `--short` and the `+WORD`s checked, with `--output`: how to print.
fn shown(args: &QueryArgs) -> anyhow::Result<Shown> {
    let mut short = args.short;
    for word in &args.plus {
        match word.as_str() {
            "short" => short = true,
            _ => {
                let hint = crate::suggest::closest(word, DIG_WORDS.iter().copied()).map_or_else(
                    || ".".to_owned(),
                    |close| format!("; did you mean +{close}?"),
                );
                let taken: Vec<String> = DIG_WORDS.iter().map(|w| format!("+{w}")).collect();
                anyhow::bail!(
                    "+{word} is not an option of query{hint} Of dig's +options it takes {} \
                     (-t TYPE gives the record type, -o json|yaml prints the reply as data)",
                    taken.join(", ")
                );
            }
        }
    }
    Ok(match (short, args.output.data()) {
        (false, None) => Shown::Dig,
        (true, None) => Shown::Short,
        (false, Some(data)) => Shown::Data(data),
        (true, Some(_)) => anyhow::bail!(
            "+short (--short) prints the answers' data as text: it does not go with --output \
             json or yaml, which hold it as the answer's \"data\" fields"
        ),
    })
}

pub(super) fn run(args: &QueryArgs) -> anyhow::Result<ExitCode> {
    let shown = shown(args)?;
    let (config, _objects) = args.source.config_and_objects(&args.cluster)?;
    let blocks = args.source.load(&config)?;
    // `from_ascii` keeps the spelling (the answer's owner keeps it too); `from_str` would
    // lower-case it through IDNA, which non-ASCII names need.
    let name = Name::from_ascii(&args.name)
        .or_else(|_| Name::from_str(&args.name))
        .with_context(|| format!("not a domain name: {}", args.name))?;
    let qtype = RecordType::from_str(&args.qtype.to_ascii_uppercase())
        .with_context(|| format!("not a record type: {}", args.qtype))?;
    let mut query = Message::new(0, MessageType::Query, OpCode::Query);
    query.metadata.recursion_desired = true;
    query.add_query(Query::query(name, qtype));
    let mut edns = Edns::new();
    edns.set_max_payload(1232);
    query.edns = Some(edns);
    let packet = query.to_vec()?;
    let handler = Handler::new(blocks.into_iter().map(|loaded| loaded.block).collect());
    let why = if args.why {
        Some(crate::server::why::explain(
            handler.blocks(),
            &args.name,
            &args.qtype,
        )?)
    } else {
        None
    };
    let mut out = Vec::new();
    let (reply, note) = match handler.respond(
        &packet,
        ([127, 0, 0, 1], 0).into(),
        Transport::Tcp,
        &mut out,
    ) {
        Outcome::Reply => (Some(Message::from_vec(&out)?), None),
        Outcome::Forward(pending) if pending.chase_so_far().is_some() => {
            let Some((so_far, target)) = pending.chase_so_far() else {
                anyhow::bail!("no reply");
            };
            let note = format!(
                "{target} is outside the cluster zone: the server asks it upstream (forward) \
                 and puts its records after the CNAME; query does not ask upstream."
            );
            (Some(Message::from_vec(&so_far)?), Some(note))
        }
        Outcome::Forward(_) => {
            if let Some(code) = short_name(&handler, &args.name, qtype) {
                return Ok(code);
            }
            let note = format!(
                "{} is not in the cluster zone: the server forwards it upstream, which query \
                 does not do.",
                args.name
            );
            (None, Some(note))
        }
        Outcome::Drop | Outcome::Transfer(_) => anyhow::bail!("no reply"),
    };
    if reply
        .as_ref()
        .is_some_and(|reply| reply.metadata.response_code == ResponseCode::Refused)
        && let Some(code) = short_name(&handler, &args.name, qtype)
    {
        return Ok(code);
    }
    match shown {
        Shown::Dig => {
            if let Some(reply) = &reply {
                out!("{}", dig_text(reply));
            }
            if let Some(note) = &note {
                outln!("; {note}");
            }
            if let Some(why) = &why {
                out!("{}", why_text(why));
            }
        }
        Shown::Short => {
            for record in reply.iter().flat_map(|reply| &reply.answers) {
                outln!("{}", rdata_text(&record.data));
            }
            // Standard output holds the data alone; what query did not do goes beside it.
            if let Some(note) = &note {
                eprintln!("clusterdns: {note}");
            }
            if let Some(why) = &why {
                out!("{}", why_text(why));
            }
        }
        Shown::Data(data) => {
            let mut asked = args.name.clone();
            if !asked.ends_with('.') {
                asked.push('.');
            }
            let question = Question {
                name: asked,
                class: "IN",
                rtype: qtype.to_string(),
            };
            let report = QueryData::new(question, reply.as_ref(), note, why);
            out!("{}", data.render(&report)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `--output json|yaml` prints: dig's header, question and sections as typed fields (the
/// records as `records --output json` writes them), what query did not ask, and why.
#[derive(Debug, Serialize)]
struct QueryData {
    /// The reply's header: absent when the server would forward the name.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    header: Option<Header>,
    /// The question: the reply's, or the one asked when there is no reply.
    question: Vec<Question>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    sections: Option<Sections>,
    /// What query did not do: a name, or a CNAME's target, that the server asks upstream.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    /// With `--why`: the plugin, the zone and one reason per record (or for the NXDOMAIN or
    /// NODATA), as the server's `/debug/why` says them.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<crate::server::why::Why>,
}

/// dig's header line and flags.
#[derive(Debug, Serialize)]
struct Header {
    /// The response code's name: `NOERROR`, `NXDOMAIN`, `SERVFAIL`, `REFUSED`, ...
    status: &'static str,
    /// Its number.
    rcode: u16,
    opcode: String,
    id: u16,
    /// The header's flags that are set: `qr`, `aa`, `tc`, `rd`, `ra`.
    flags: Vec<&'static str>,
}

/// A question.
#[derive(Debug, Serialize)]
struct Question {
    name: String,
    class: &'static str,
    #[serde(rename = "type")]
    rtype: String,
}

/// The reply's sections, and its EDNS pseudo-record.
#[derive(Debug, Serialize)]
struct Sections {
    answer: Vec<JsonRecord>,
    authority: Vec<JsonRecord>,
    additional: Vec<JsonRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    edns: Option<EdnsData>,
}

/// The OPT pseudo-record: dig's `OPT PSEUDOSECTION`.
#[derive(Debug, Serialize)]
struct EdnsData {
    version: u8,
    /// `do` when set.
    flags: Vec<&'static str>,
    /// The largest UDP payload the server takes.
    udp: u16,
}

impl QueryData {
    fn new(
        asked: Question,
        reply: Option<&Message>,
        note: Option<String>,
        why: Option<crate::server::why::Why>,
    ) -> Self {
        let Some(reply) = reply else {
            return Self {
                header: None,
                question: vec![asked],
                sections: None,
                note,
                why,
            };
        };
        let meta = &reply.metadata;
        let records = |records: &[Record]| records.iter().map(JsonRecord::of).collect();
        Self {
            header: Some(Header {
                status: crate::wire::rcode_name(u16::from(meta.response_code)),
                rcode: u16::from(meta.response_code),
                opcode: format!("{:?}", meta.op_code).to_uppercase(),
                id: meta.id,
                flags: flags(reply),
            }),
            question: reply
                .queries
                .iter()
                .map(|query| Question {
                    name: query.name().to_string(),
                    class: "IN",
                    rtype: query.query_type().to_string(),
                })
                .collect(),
            sections: Some(Sections {
                answer: records(&reply.answers),
                authority: records(&reply.authorities),
                additional: records(&reply.additionals),
                edns: reply.edns.as_ref().map(|edns| EdnsData {
                    version: edns.version(),
                    flags: if edns.flags().dnssec_ok {
                        vec!["do"]
                    } else {
                        Vec::new()
                    },
                    udp: edns.max_payload(),
                }),
            }),
            note,
            why,
        }
    }
}

/// The header flags set in `reply`, in dig's order.
fn flags(reply: &Message) -> Vec<&'static str> {
    let meta = &reply.metadata;
    let mut flags = vec!["qr"];
    for (set, flag) in [
        (meta.authoritative, "aa"),
        (meta.truncation, "tc"),
        (meta.recursion_desired, "rd"),
        (meta.recursion_available, "ra"),
    ] {
        if set {
            flags.push(flag);
        }
    }
    flags
}

/// The `;; WHY SECTION:` after the answer.
fn why_text(why: &crate::server::why::Why) -> String {
    let mut out = format!(
        ";; WHY SECTION:\n;; {}{}\n",
        why.plugin,
        why.zone
            .as_deref()
            .map(|zone| format!(" (zone {zone})"))
            .unwrap_or_default()
    );
    for reason in &why.reasons {
        let _ = writeln!(out, ";; {reason}");
    }
    out.push('\n');
    out
}

/// A name outside the cluster zone typed as a pod's application would, relying on the
/// search path (`web`, `web.shop`, `web.shop.svc`): say so, point to `resolve-cost`, and
/// exit 1. `None` for other names.
fn short_name(handler: &Handler, name: &str, qtype: RecordType) -> Option<ExitCode> {
    if name.ends_with('.') {
        return None;
    }
    let zones: Vec<String> = handler
        .blocks()
        .iter()
        .filter_map(|block| block.kubernetes())
        .flat_map(|kubernetes| &kubernetes.config.zones)
        .map(|zone| zone.to_ascii())
        .filter(|zone| !zone.ends_with(".arpa."))
        .collect();
    // The names a pod's search path tries after `<ns>.svc.<zone>`.
    let found = zones.iter().find_map(|zone| {
        [format!("{name}.svc.{zone}"), format!("{name}.{zone}")]
            .into_iter()
            .find(|candidate| answers(handler, candidate, qtype))
    });
    if found.is_none() && name.contains('.') {
        return None;
    }
    // Names in prose end without the root's dot, which a full stop would double.
    let zone = zones
        .first()
        .map_or("cluster.local", |zone| zone.trim_end_matches('.'));
    let hint = match &found {
        Some(candidate) => format!(
            ", and reaches {0} (clusterdns query {0})",
            candidate.trim_end_matches('.')
        ),
        None => format!(" (from namespace NS: {name}.NS.svc.{zone})"),
    };
    eprintln!(
        "clusterdns: {name} is not in the cluster zone: query asks a name as given, where a \
         pod's resolver tries its search path first{hint}. For the walk a pod makes and what \
         it costs: clusterdns resolve-cost {name} -n NS"
    );
    Some(ExitCode::from(1))
}

/// Whether the server answers `name` (NOERROR) without going upstream.
fn answers(handler: &Handler, name: &str, qtype: RecordType) -> bool {
    let Ok(qname) = Name::from_ascii(name) else {
        return false;
    };
    let mut query = Message::new(0, MessageType::Query, OpCode::Query);
    query.add_query(Query::query(qname, qtype));
    let Ok(packet) = query.to_vec() else {
        return false;
    };
    let mut out = Vec::new();
    matches!(
        handler.respond(
            &packet,
            ([127, 0, 0, 1], 0).into(),
            Transport::Tcp,
            &mut out
        ),
        Outcome::Reply
    ) && Message::from_vec(&out)
        .is_ok_and(|reply| reply.metadata.response_code == ResponseCode::NoError)
}

/// A reply in dig's layout: header, flags and counts, then each non-empty section.
pub(crate) fn dig_text(reply: &Message) -> String {
    let mut out = String::new();
    let meta = &reply.metadata;
    let _ = writeln!(
        out,
        ";; ->>HEADER<<- opcode: {}, status: {}, id: {}",
        format!("{:?}", meta.op_code).to_uppercase(),
        crate::wire::rcode_name(u16::from(meta.response_code)),
        meta.id
    );
    let _ = writeln!(
        out,
        ";; flags: {}; QUERY: {}, ANSWER: {}, AUTHORITY: {}, ADDITIONAL: {}",
        flags(reply).join(" "),
        reply.queries.len(),
        reply.answers.len(),
        reply.authorities.len(),
        reply.additionals.len() + usize::from(reply.edns.is_some()),
    );
    if let Some(edns) = &reply.edns {
        let _ = write!(
            out,
            "\n;; OPT PSEUDOSECTION:\n; EDNS: version: {}, flags:{}; udp: {}\n",
            edns.version(),
            if edns.flags().dnssec_ok { " do" } else { "" },
            edns.max_payload()
        );
    }
    out.push_str("\n;; QUESTION SECTION:\n");
    for query in &reply.queries {
        let _ = writeln!(out, ";{}\t\tIN\t{}", query.name(), query.query_type());
    }
    for (title, records) in [
        ("ANSWER", &reply.answers),
        ("AUTHORITY", &reply.authorities),
        ("ADDITIONAL", &reply.additionals),
    ] {
        section(&mut out, title, records);
    }
    out.push('\n');
    out
}

fn section(out: &mut String, title: &str, records: &[Record]) {
    if records.is_empty() {
        return;
    }
    let _ = write!(out, "\n;; {title} SECTION:\n");
    for record in records {
        out.push_str(&record_line(record));
        out.push('\n');
    }
}
