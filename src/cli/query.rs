//! `clusterdns query`: one question through the server's request path, answered from the
//! live cluster's objects or objects files, without the network.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::Context as _;
use clap::Args;
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, Record, RecordType};

use super::Source;
use super::cluster::ClusterArgs;
use crate::server::{Handler, Outcome, Transport};
use crate::zone::zonefile::record_line;

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
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    cluster: ClusterArgs,
}

pub(super) fn run(args: &QueryArgs) -> anyhow::Result<ExitCode> {
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
    let why = || -> anyhow::Result<()> {
        if args.why {
            let why = crate::server::why::explain(handler.blocks(), &args.name, &args.qtype)?;
            out!("{}", why_text(&why));
        }
        Ok(())
    };
    let mut out = Vec::new();
    let reply = match handler.respond(
        &packet,
        ([127, 0, 0, 1], 0).into(),
        Transport::Tcp,
        &mut out,
    ) {
        Outcome::Reply => Message::from_vec(&out)?,
        Outcome::Forward(pending) if pending.chase_so_far().is_some() => {
            let Some((so_far, target)) = pending.chase_so_far() else {
                anyhow::bail!("no reply");
            };
            out!("{}", dig_text(&Message::from_vec(&so_far)?));
            outln!(
                "; {target} is outside the cluster zone: the server asks it upstream (forward) \
                 and puts its records after the CNAME; query does not ask upstream."
            );
            why()?;
            return Ok(ExitCode::SUCCESS);
        }
        Outcome::Forward(_) => {
            if let Some(code) = short_name(&handler, &args.name, qtype) {
                return Ok(code);
            }
            outln!(
                "; {} is not in the cluster zone: the server forwards it upstream, which query \
                 does not do.",
                args.name
            );
            why()?;
            return Ok(ExitCode::SUCCESS);
        }
        Outcome::Drop | Outcome::Transfer(_) => anyhow::bail!("no reply"),
    };
    if reply.metadata.response_code == ResponseCode::Refused
        && let Some(code) = short_name(&handler, &args.name, qtype)
    {
        return Ok(code);
    }
    out!("{}", dig_text(&reply));
    why()?;
    Ok(ExitCode::SUCCESS)
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
    let _ = writeln!(
        out,
        ";; flags: {}; QUERY: {}, ANSWER: {}, AUTHORITY: {}, ADDITIONAL: {}",
        flags.join(" "),
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
