//! `clusterdns explain NS/NAME`: one Service across pods, slices, kube-proxy, a node's rules
//! and DNS, with the drift between them (exit 1 when there is any).

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::Context as _;
use clap::Args;
use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, RecordType};
use ipnet::IpNet;

use super::output::Output;
use crate::config::{self, ShorthandOptions};
use crate::model::ObjectKey;
use crate::proxy::explain::{DnsAnswer, ExplainInput, explain, report_text};
use crate::proxy::ruleset;
use crate::server::{self, Handler, Outcome, Transport};

/// Arguments of `explain`.
#[derive(Debug, Args)]
pub(super) struct ExplainArgs {
    /// The Service, as NAMESPACE/NAME.
    #[arg(value_name = "NS/NAME")]
    service: String,
    /// Objects files (`kubectl get svc,pods,endpointslices -o json` output).
    #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
    objects: Vec<PathBuf>,
    /// A node's ruleset (`iptables-save`, `nft list table ip kube-proxy`, or an `nft -f`
    /// transaction) to compare with the endpoints.
    #[arg(long, value_name = "FILE")]
    ruleset: Option<PathBuf>,
    /// The node the ruleset is from (for Services with a Local traffic policy).
    #[arg(long, value_name = "NODE")]
    node: Option<String>,
    /// The cluster's pod CIDRs (comma-separated).
    #[arg(long, value_name = "CIDR", value_delimiter = ',', value_parser = crate::config::parse_cidr)]
    cluster_cidr: Vec<IpNet>,
    /// The cluster zone DNS answers for: the lookup asks for NAME.NS.svc.ZONE of the objects
    /// served under it.
    #[arg(long, value_name = "ZONE", default_value = config::DEFAULT_ZONE,
          value_parser = config::parse_cluster_zone)]
    zone: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

/// What the cluster's DNS (the server's own request path, over the same objects, serving
/// `zone`) answers for `name`, A and AAAA.
fn lookup(objects: &[PathBuf], zone: &str, name: &str) -> anyhow::Result<DnsAnswer> {
    let mut options = ShorthandOptions::new(([127, 0, 0, 1], 0).into());
    options.resolv_conf = None;
    zone.clone_into(&mut options.zone);
    let config = config::shorthand_with(objects, &options).context("building the DNS view")?;
    let blocks = server::load(&config).map_err(|error| super::start_error(None, error))?;
    let handler = Handler::new(blocks.into_iter().map(|loaded| loaded.block).collect());
    let qname = Name::from_str(name).with_context(|| format!("not a domain name: {name}"))?;
    let mut answer = DnsAnswer {
        name: name.to_owned(),
        addresses: Vec::new(),
        rcode: "SERVFAIL".to_owned(),
        cname: None,
    };
    for qtype in [RecordType::A, RecordType::AAAA] {
        let mut query = Message::new(1, MessageType::Query, OpCode::Query);
        query.add_query(Query::query(qname.clone(), qtype));
        let mut out = Vec::new();
        let reply = match handler.respond(
            &query.to_vec()?,
            ([127, 0, 0, 1], 0).into(),
            Transport::Tcp,
            &mut out,
        ) {
            Outcome::Reply => Message::from_vec(&out)?,
            // An ExternalName's target goes upstream: the CNAME so far.
            Outcome::Forward(pending) => match pending.chase_so_far() {
                Some((so_far, _)) => Message::from_vec(&so_far)?,
                None => continue,
            },
            Outcome::Drop | Outcome::Transfer(_) => continue,
        };
        if qtype == RecordType::A {
            answer.rcode =
                crate::wire::rcode_name(u16::from(reply.metadata.response_code)).to_owned();
        }
        for record in reply.answers {
            match record.data {
                RData::A(a) => answer.addresses.push(IpAddr::V4(a.0)),
                RData::AAAA(aaaa) => answer.addresses.push(IpAddr::V6(aaaa.0)),
                RData::CNAME(target) if answer.cname.is_none() => {
                    answer.cname = Some(target.0.to_string());
                }
                _ => {}
            }
        }
    }
    Ok(answer)
}

pub(super) fn run(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let Some((namespace, name)) = args.service.split_once('/') else {
        anyhow::bail!("expected NAMESPACE/NAME, found {:?}", args.service);
    };
    let loaded = super::read_objects_flag(&args.objects)?;
    super::warn_unknown_node(&loaded.cluster, args.node.as_deref());
    let key = ObjectKey::new(namespace, name);
    let ruleset = match &args.ruleset {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
            let parsed = ruleset::parse(&text).map_err(|error| {
                anyhow::anyhow!("{}:{}: {}", path.display(), error.line, error.message)
            })?;
            Some((parsed, path.display().to_string()))
        }
    };
    let dns_name = format!("{name}.{namespace}.svc.{}.", args.zone);
    let dns = lookup(&args.objects, &args.zone, &dns_name)?;
    let slices_computed = loaded.computed_slices.contains(&key);
    let input = ExplainInput {
        cluster: &loaded.cluster,
        slices_computed,
        service: key,
        node: args.node.clone(),
        cluster_cidrs: args.cluster_cidr.clone(),
        ruleset: ruleset.as_ref().map(|(r, n)| (r, n.clone())),
        dns: Some(dns),
    };
    let Some(explanation) = explain(&input) else {
        anyhow::bail!("no Service {} in the objects", args.service);
    };
    match args.output.data() {
        None => out!("{}", report_text(&explanation)),
        Some(data) => out!("{}", data.render(&explanation)?),
    }
    Ok(if explanation.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
