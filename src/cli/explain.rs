//! `clusterdns explain NS/NAME`: one Service across pods, slices, kube-proxy, a node's rules
//! and DNS, with the drift between them (exit 1 when there is any).

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use clap_complete::engine::ArgValueCompleter;
use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, RecordType};
use ipnet::IpNet;

use super::cluster::{ClusterArgs, Objects, Scope, service_kinds};
use super::output::Output;
use crate::config::{self, ShorthandOptions};
use crate::kube_proxy::explain::{
    DnsAnswer, ExplainInput, Explanation, LiveDns, Survey, explain, report_text, survey_text,
};
use crate::kube_proxy::ruleset;
use crate::model::ObjectKey;
use crate::server::{self, Handler, Outcome, Transport};
use crate::source::live::{ListKind, Wanted};

/// Arguments of `explain`.
#[derive(Debug, Args)]
pub(super) struct ExplainArgs {
    /// The Service, as NAMESPACE/NAME, or NAME with `-n` (or, reading the cluster, in the
    /// context's namespace). Without it, every Service of the namespace (`-n`, or the
    /// context's), or of every namespace with `-A`, listing only those with findings.
    #[arg(value_name = "NS/NAME", conflicts_with = "all_namespaces",
          add = ArgValueCompleter::new(super::complete::services))]
    service: Option<String>,
    #[command(flatten)]
    scope: Scope,
    /// Objects files (`kubectl get svc,pods,endpointslices -o json` output); without them,
    /// the live cluster's objects in the Service's namespace.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    objects: Vec<PathBuf>,
    #[command(flatten)]
    cluster: ClusterArgs,
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
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// The cluster's DNS server to ask too (`IP` or `IP:PORT`), and compare with what the
    /// objects say. Reading the cluster, the default is Service kube-system/kube-dns;
    /// `none` asks no server.
    #[arg(long, value_name = "ADDR|none")]
    dns_server: Option<String>,
}

/// How long the live DNS server has to answer each question.
const LIVE_DNS_TIMEOUT: Duration = Duration::from_secs(2);

/// The cluster's DNS server to ask: `--dns-server`, else (reading the cluster) the
/// kube-dns Service's first ClusterIP and its DNS port.
fn live_dns_server(
    flag: Option<&str>,
    live: bool,
    cluster: &crate::model::Cluster,
) -> anyhow::Result<Option<Result<SocketAddr, String>>> {
    match flag {
        Some("none") => Ok(None),
        Some(text) => {
            let address = text
                .parse::<SocketAddr>()
                .or_else(|_| text.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 53)))
                .map_err(|_| {
                    anyhow::anyhow!("--dns-server: expected IP, IP:PORT or none, found {text:?}")
                })?;
            Ok(Some(Ok(address)))
        }
        None if live => {
            let key = ObjectKey::new("kube-system", "kube-dns");
            let Some(service) = cluster.services.get(&key) else {
                return Ok(Some(Err(
                    "the cluster has no Service kube-system/kube-dns (give --dns-server)"
                        .to_owned(),
                )));
            };
            let Some(ip) = service.cluster_ips.first() else {
                return Ok(Some(Err(
                    "Service kube-system/kube-dns has no ClusterIP (give --dns-server)".to_owned(),
                )));
            };
            let port = service
                .ports
                .iter()
                .find(|port| port.protocol == crate::model::Protocol::Udp)
                .map_or(53, |port| port.port);
            Ok(Some(Ok(SocketAddr::new(*ip, port))))
        }
        None => Ok(None),
    }
}

/// Asks `server` for `name`, A then AAAA, over UDP (TCP when the answer is truncated).
fn ask_live(server: SocketAddr, name: &str) -> Result<DnsAnswer, String> {
    let qname = Name::from_str(name).map_err(|error| format!("{name}: {error}"))?;
    let mut answer = DnsAnswer {
        name: name.to_owned(),
        addresses: Vec::new(),
        rcode: "SERVFAIL".to_owned(),
        cname: None,
    };
    let bind: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(bind).map_err(|error| format!("a UDP socket: {error}"))?;
    socket
        .set_read_timeout(Some(LIVE_DNS_TIMEOUT))
        .map_err(|error| error.to_string())?;
    for (id, qtype) in [(0x4c01, RecordType::A), (0x4c02, RecordType::AAAA)] {
        let mut query = Message::new(id, MessageType::Query, OpCode::Query);
        query.metadata.recursion_desired = true;
        query.add_query(Query::query(qname.clone(), qtype));
        let bytes = query.to_vec().map_err(|error| error.to_string())?;
        socket
            .send_to(&bytes, server)
            .map_err(|error| format!("not reachable: {error}"))?;
        let mut buffer = vec![0; 65535];
        let reply = loop {
            let (len, from) = socket.recv_from(&mut buffer).map_err(|error| {
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) {
                    format!(
                        "no answer in {} s (not reachable from here?)",
                        LIVE_DNS_TIMEOUT.as_secs()
                    )
                } else {
                    format!("not reachable: {error}")
                }
            })?;
            let Ok(reply) = Message::from_vec(&buffer[..len]) else {
                continue;
            };
            if from == server && reply.metadata.id == id {
                break reply;
            }
        };
        let reply = if reply.metadata.truncation {
            ask_tcp(server, &bytes)?
        } else {
            reply
        };
        if qtype == RecordType::A {
            answer.rcode =
                crate::wire::rcode_name(u16::from(reply.metadata.response_code)).to_owned();
        }
        collect(&mut answer, reply);
    }
    Ok(answer)
}

/// One question over TCP.
fn ask_tcp(server: SocketAddr, query: &[u8]) -> Result<Message, String> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect_timeout(&server, LIVE_DNS_TIMEOUT)
        .map_err(|error| format!("not reachable over TCP: {error}"))?;
    stream
        .set_read_timeout(Some(LIVE_DNS_TIMEOUT))
        .map_err(|error| error.to_string())?;
    let mut framed = (query.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(query);
    stream
        .write_all(&framed)
        .map_err(|error| format!("over TCP: {error}"))?;
    let mut length = [0; 2];
    stream
        .read_exact(&mut length)
        .map_err(|error| format!("over TCP: {error}"))?;
    let mut reply = vec![0; usize::from(u16::from_be_bytes(length))];
    stream
        .read_exact(&mut reply)
        .map_err(|error| format!("over TCP: {error}"))?;
    Message::from_vec(&reply)
        .map_err(|error| format!("over TCP, an answer that is not DNS: {error}"))
}

/// The addresses and the first CNAME of `reply`'s answer section, into `answer`.
fn collect(answer: &mut DnsAnswer, reply: Message) {
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

/// The cluster's DNS over the objects read: the server's own request path, serving `zone`.
struct ZoneDns {
    handler: Handler,
}

impl ZoneDns {
    fn new(objects: &[PathBuf], zone: &str) -> anyhow::Result<Self> {
        let mut options = ShorthandOptions::new(([127, 0, 0, 1], 0).into());
        options.resolv_conf = None;
        zone.clone_into(&mut options.zone);
        let config = config::shorthand_with(objects, &options).context("building the DNS view")?;
        let blocks = server::load(&config).map_err(|error| super::start_error(None, error))?;
        Ok(Self {
            handler: Handler::new(blocks.into_iter().map(|loaded| loaded.block).collect()),
        })
    }

    /// What it answers for `name`, A and AAAA.
    fn ask(&self, name: &str) -> anyhow::Result<DnsAnswer> {
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
            let reply = match self.handler.respond(
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
            collect(&mut answer, reply);
        }
        Ok(answer)
    }
}

/// The cluster's running DNS server, asked Service after Service: once it cannot be asked
/// (not reachable, no answer in time), the rest are not asked, for the same reason.
struct LiveAsker {
    server: Option<Result<SocketAddr, String>>,
    failed: Option<String>,
}

impl LiveAsker {
    fn ask(&mut self, name: &str) -> Option<LiveDns> {
        let server = self.server.as_ref()?;
        Some(match (server, &self.failed) {
            (Err(reason), _) => LiveDns {
                server: "kube-dns".to_owned(),
                answer: Err(reason.clone()),
            },
            (Ok(server), Some(reason)) => LiveDns {
                server: server.to_string(),
                answer: Err(reason.clone()),
            },
            (Ok(server), None) => {
                let answer = ask_live(*server, name);
                if let Err(reason) = &answer {
                    self.failed = Some(reason.clone());
                }
                LiveDns {
                    server: server.to_string(),
                    answer,
                }
            }
        })
    }
}

/// What every explanation of one run shares: the objects, the node's rules, the DNS views.
struct Explainer {
    loaded: crate::source::file::Loaded,
    ruleset: Option<(ruleset::Ruleset, String)>,
    zone: ZoneDns,
    live: LiveAsker,
}

impl Explainer {
    fn new(args: &ExplainArgs, objects: &Objects) -> anyhow::Result<Self> {
        let loaded = super::read_objects_flag(&objects.paths)?;
        super::warn_unknown_node(&loaded.cluster, args.node.as_deref());
        let ruleset = match &args.ruleset {
            None => None,
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
                let parsed = ruleset::parse(&text).map_err(|error| {
                    anyhow::anyhow!("{}:{}: {}", path.display(), error.line, error.message)
                })?;
                Some((parsed, path.display().to_string()))
            }
        };
        let zone = ZoneDns::new(&objects.paths, &args.zone)?;
        let server = live_dns_server(
            args.dns_server.as_deref(),
            objects.live.is_some(),
            &loaded.cluster,
        )?;
        Ok(Self {
            loaded,
            ruleset,
            zone,
            live: LiveAsker {
                server,
                failed: None,
            },
        })
    }

    /// The explanation of Service `key`; `None` when there is no such Service.
    fn explain(
        &mut self,
        args: &ExplainArgs,
        key: ObjectKey,
    ) -> anyhow::Result<Option<Explanation>> {
        if !self.loaded.cluster.services.contains_key(&key) {
            return Ok(None);
        }
        let dns_name = format!("{}.{}.svc.{}.", key.name, key.namespace, args.zone);
        let dns = self.zone.ask(&dns_name)?;
        let live_dns = self.live.ask(&dns_name);
        let input = ExplainInput {
            cluster: &self.loaded.cluster,
            slices_computed: self.loaded.computed_slices.contains(&key),
            service: key,
            node: args.node.clone(),
            cluster_cidrs: args.cluster_cidr.clone(),
            ruleset: self.ruleset.as_ref().map(|(r, n)| (r, n.clone())),
            dns: Some(dns),
            live_dns,
        };
        Ok(explain(&input))
    }
}

/// The objects to read from the cluster: the Services' kinds in `namespace` (`None`: all),
/// and Service kube-system/kube-dns when the cluster's DNS is to be asked.
fn wanted(args: &ExplainArgs, namespace: Option<&str>) -> Vec<Wanted> {
    let mut kinds = service_kinds(namespace);
    if args.dns_server.is_none() && namespace.is_some_and(|namespace| namespace != "kube-system") {
        // Where the cluster's DNS is: Service kube-system/kube-dns.
        let mut dns = Wanted::in_namespace(ListKind::Services, Some("kube-system"));
        dns.fields = Some("metadata.name=kube-dns".to_owned());
        kinds.push(dns);
    }
    kinds
}

pub(super) fn run(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let Some(service) = &args.service else {
        return run_all(args);
    };
    let named = |default: Option<&str>| match (service.split_once('/'), default) {
        (Some((namespace, name)), _) => Some((namespace.to_owned(), name.to_owned())),
        (None, Some(namespace)) => Some((namespace.to_owned(), service.clone())),
        (None, None) => None,
    };
    let objects = Objects::read(&args.objects, &args.cluster, |context| {
        let default = args.scope.namespace.as_deref().unwrap_or(context);
        let namespace = named(Some(default)).map(|(namespace, _)| namespace);
        wanted(args, Some(namespace.as_deref().unwrap_or(default)))
    })?;
    let default = args.scope.default_namespace(&objects);
    let Some((namespace, name)) = named(default.as_deref()) else {
        anyhow::bail!(
            "expected NAMESPACE/NAME (or NAME with -n NAMESPACE), found {service:?}; or no \
             Service, to check every one (-A: in every namespace)"
        );
    };
    let mut explainer = Explainer::new(args, &objects)?;
    let key = ObjectKey::new(&namespace, &name);
    let Some(explanation) = explainer.explain(args, key)? else {
        let hint = elsewhere(&explainer.loaded.cluster, &namespace, &name)?;
        anyhow::bail!("no Service {namespace}/{name} in the objects{hint}");
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

/// `explain` without a Service: every Service in the scope, listing those with findings.
fn run_all(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let objects = Objects::read(&args.objects, &args.cluster, |context| {
        wanted(args, args.scope.live_namespace(&[], context))
    })?;
    let shown = args.scope.shown_namespace(&objects);
    let mut explainer = Explainer::new(args, &objects)?;
    if let Some(namespace) = &shown {
        super::check_namespace(&explainer.loaded.cluster, namespace)?;
    }
    let keys: Vec<ObjectKey> = explainer
        .loaded
        .cluster
        .services
        .keys()
        .filter(|key| {
            shown
                .as_ref()
                .is_none_or(|namespace| *key.namespace == **namespace)
        })
        .cloned()
        .collect();
    let mut survey = Survey::new(shown.clone());
    for key in keys {
        let Some(explanation) = explainer.explain(args, key)? else {
            continue;
        };
        survey.add(explanation);
    }
    match args.output.data() {
        None => out!("{}", survey_text(&survey)),
        Some(data) => out!("{}", data.render(&survey)?),
    }
    Ok(if survey.findings == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Where the Service meant may be when `namespace/name` is not there: the same name in other
/// namespaces (`; there is pay/payments`), else a near name in the
/// namespace (`; did you mean shop/web?`); empty when there is neither. An error when there
/// is neither and the namespace is nowhere in the objects: that is the mistake to name.
pub(super) fn elsewhere(
    cluster: &crate::model::Cluster,
    namespace: &str,
    name: &str,
) -> anyhow::Result<String> {
    let same_name: Vec<String> = cluster
        .services
        .keys()
        .filter(|key| &*key.name == name)
        .map(ToString::to_string)
        .collect();
    if !same_name.is_empty() {
        return Ok(format!("; there is {}", same_name.join(", ")));
    }
    let names: Vec<&str> = cluster
        .services
        .keys()
        .filter(|key| &*key.namespace == namespace)
        .map(|key| &*key.name)
        .collect();
    match crate::suggest::closest(name, names) {
        Some(close) => Ok(format!("; did you mean {namespace}/{close}?")),
        None => super::check_namespace(cluster, namespace).map(|()| String::new()),
    }
}
