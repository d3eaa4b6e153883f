//! Who answers the simulated queries: the cluster DNS, through the same plugin chain the
//! server answers with (a [`LocalServer`]: `resolve-cost` gives it the server's block), and
//! for every name it would send upstream an upstream — assumed, or a real server asked over
//! UDP.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::Duration;

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

use super::stub::{Answerer, Lookup, Qtype, Reply, Source};
use crate::name::WireName;
use crate::search_walk::SearchPath;
use crate::wire::rcode;
use crate::zone::{Rcode, Snapshot};

/// Where names outside the cluster zone are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamMode {
    /// Offline: the name as typed exists (for every type asked), every search-expanded name
    /// does not; a name of one label does not exist either, nor does one whose last label
    /// the search list completes to a cluster name (`_http._tcp.web`, `web.shop`: a cluster
    /// name written short).
    Assume,
    /// Ask this server (UDP, 2 s, twice).
    Server(SocketAddr),
}

/// The cluster DNS as the simulation asks it: a query in wire format, and the whole reply
/// when the server answers it from what it holds (`None`: it would send the name upstream).
pub trait LocalServer {
    /// The server's own reply to `packet`, if it has one.
    fn answer_locally(&self, packet: &[u8]) -> Option<Vec<u8>>;
}

/// Answers as the cluster DNS does: its block's chain for what it holds, upstream for the
/// rest, and optionally *autopath* in front.
pub struct ClusterAnswerer<'a> {
    /// The cluster DNS's block (without *autopath*: that is simulated here).
    block: &'a dyn LocalServer,
    /// Its cluster zone.
    snapshot: &'a Snapshot,
    upstream: UpstreamMode,
    /// The name as typed, lower case, without its final dot.
    typed: String,
    /// The name as typed is a cluster name written short (see [`UpstreamMode::Assume`]).
    typed_is_short: bool,
    autopath: Option<(&'a SearchPath, IpAddr)>,
    /// Upstream replies already fetched, shared between walks.
    asked: &'a UpstreamCache,
}

/// Upstream replies by (lower-case name, type): a real upstream is asked each question once,
/// however many walks (fixes) ask it.
pub type UpstreamCache = RefCell<HashMap<(String, Qtype), Reply>>;

impl<'a> ClusterAnswerer<'a> {
    /// Answers for the lookup of `typed` from `block`, whose cluster zone is `snapshot`;
    /// upstream replies are kept in `asked`.
    pub fn new(
        block: &'a dyn LocalServer,
        snapshot: &'a Snapshot,
        upstream: UpstreamMode,
        typed: &str,
        asked: &'a UpstreamCache,
    ) -> Self {
        Self {
            block,
            snapshot,
            upstream,
            typed: typed.trim_end_matches('.').to_ascii_lowercase(),
            typed_is_short: false,
            autopath: None,
            asked,
        }
    }

    /// With the client's search list: a name as typed whose last label it completes to a
    /// name of the cluster zone (a Service, a namespace) is not assumed to exist upstream.
    pub fn with_search(mut self, search: &[String]) -> Self {
        let last = self.typed.rsplit('.').next().unwrap_or_default().to_owned();
        self.typed_is_short = self.typed.contains('.')
            && search.iter().any(|domain| {
                let name = format!("{last}.{}.", domain.trim_matches('.'));
                WireName::from_dotted(&name).is_ok_and(|wire| {
                    self.snapshot
                        .lookup(wire.to_lowercase().as_bytes(), Qtype::A.number())
                        .is_some_and(|answer| answer.rcode == Rcode::NoError)
                })
            });
        self
    }

    /// With *autopath* in front, for a client at `client`.
    pub fn with_autopath(mut self, search: &'a SearchPath, client: IpAddr) -> Self {
        self.autopath = Some((search, client));
        self
    }

    /// The server's answer without autopath: the block's chain, or the upstream for what it
    /// sends on.
    fn direct(&mut self, name: &str, qtype: Qtype) -> Reply {
        let formerr = || Reply::new(rcode::FORMERR, 0, Source::Cluster);
        if WireName::from_dotted(name).is_err() {
            return formerr();
        }
        let Ok(qname) = Name::from_ascii(name) else {
            return formerr();
        };
        let mut message = Message::new(0, MessageType::Query, OpCode::Query);
        message.metadata.recursion_desired = true;
        message.add_query(Query::query(qname, RecordType::from(qtype.number())));
        let Ok(packet) = message.to_vec() else {
            return formerr();
        };
        match self.block.answer_locally(&packet) {
            Some(bytes) => match Message::from_vec(&bytes) {
                Ok(reply) => Reply::new(
                    u16::from(reply.metadata.response_code),
                    u16::try_from(reply.answers.len()).unwrap_or(u16::MAX),
                    Source::Cluster,
                ),
                Err(_) => Reply::new(rcode::SERVFAIL, 0, Source::Cluster),
            },
            None => self.upstream(name, qtype),
        }
    }

    fn upstream(&mut self, name: &str, qtype: Qtype) -> Reply {
        let key = (name.to_ascii_lowercase(), qtype);
        if let Some(reply) = self.asked.borrow().get(&key) {
            return reply.clone();
        }
        let reply = match self.upstream {
            // Per walk (it depends on the name typed): not kept.
            UpstreamMode::Assume => {
                let bare = key.0.trim_end_matches('.');
                return if bare == self.typed && bare.contains('.') && !self.typed_is_short {
                    Reply::new(rcode::NOERROR, 1, Source::Assumed)
                } else {
                    Reply::new(rcode::NXDOMAIN, 0, Source::Assumed)
                };
            }
            UpstreamMode::Server(addr) => ask_server(addr, name, qtype),
        };
        self.asked.borrow_mut().insert(key, reply.clone());
        reply
    }
}

impl Answerer for ClusterAnswerer<'_> {
    fn ask(&mut self, name: &str, qtype: Qtype) -> Reply {
        let Some((search, client)) = self.autopath else {
            return self.direct(name, qtype);
        };
        let plan = WireName::from_dotted(name).ok().and_then(|wire| {
            search.plan(wire.to_lowercase().as_bytes(), client, Some(self.snapshot))
        });
        let Some(plan) = plan else {
            return self.direct(name, qtype);
        };
        // The server's walk (see crate::server): the first reply that is not NXDOMAIN, with a
        // CNAME from the asked name when it has records; a failure ends the walk; when every
        // name is NXDOMAIN, the reply for the asked name.
        let mut lookups: Vec<Lookup> = Vec::new();
        let mut first: Option<Reply> = None;
        for (index, candidate) in plan.candidates.iter().enumerate() {
            let candidate = candidate.to_string();
            let reply = self.direct(&candidate, qtype);
            lookups.push(Lookup {
                name: candidate,
                rcode: reply.rcode.unwrap_or(rcode::SERVFAIL),
                source: reply.source.clone(),
            });
            if index == 0 {
                first = Some(reply.clone());
            }
            if reply.rcode == Some(rcode::NXDOMAIN) {
                continue;
            }
            let cname = u16::from(index > 0 && reply.answers > 0);
            return Reply {
                rcode: Some(reply.rcode.unwrap_or(rcode::SERVFAIL)),
                answers: reply.answers + cname,
                source: Source::Autopath { lookups },
            };
        }
        let first = first.unwrap_or_else(|| Reply::new(rcode::NXDOMAIN, 0, Source::Cluster));
        Reply {
            source: Source::Autopath { lookups },
            ..first
        }
    }
}

/// One question to a real server: rcode and answer count, `None` rcode after two silent
/// tries.
fn ask_server(addr: SocketAddr, name: &str, qtype: Qtype) -> Reply {
    let silent = Reply {
        rcode: None,
        answers: 0,
        source: Source::NoReply,
    };
    let Ok(qname) = Name::from_ascii(name) else {
        return silent;
    };
    let id: u16 = fastrand::u16(..);
    let mut message = Message::new(id, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(qname, RecordType::from(qtype.number())));
    let mut edns = Edns::new();
    edns.set_max_payload(1232);
    message.edns = Some(edns);
    let Ok(packet) = message.to_vec() else {
        return silent;
    };
    let bind: SocketAddr = if addr.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let Ok(socket) = UdpSocket::bind(bind) else {
        return silent;
    };
    if socket.connect(addr).is_err()
        || socket
            .set_read_timeout(Some(Duration::from_secs(2)))
            .is_err()
    {
        return silent;
    }
    let mut buffer = [0u8; 4096];
    for _ in 0..2 {
        if socket.send(&packet).is_err() {
            return silent;
        }
        while let Ok(len) = socket.recv(&mut buffer) {
            let Ok(reply) = Message::from_vec(&buffer[..len]) else {
                continue;
            };
            if reply.metadata.id != id {
                continue;
            }
            let answers = u16::try_from(reply.answers.len()).unwrap_or(u16::MAX);
            return Reply::new(
                u16::from(reply.metadata.response_code),
                answers,
                Source::Upstream,
            );
        }
    }
    silent
}
