//! *chaos* on the request path (CoreDNS `plugin/chaos`): TXT in class CH for the server's
//! version, authors and host name; everything else passes on.

use super::Flow;
use crate::codes::{class, rtype};
use crate::config::ChaosConfig;
use crate::plugin::Plugin;
use crate::wire::{self, Request, rcode};
use super::lifecycle::{Build, Lifecycle};
use super::{Ctx, PluginChain, Query};
use crate::server::error::StartError;

/// The plugin, its answers ready as TXT RDATA.
#[derive(Debug)]
pub(crate) struct Chaos {
    version: Vec<u8>,
    authors: Vec<Vec<u8>>,
    hostname: Vec<u8>,
}

/// One TXT character-string (at most 255 bytes).
fn txt(text: &str) -> Vec<u8> {
    let bytes = &text.as_bytes()[..text.len().min(255)];
    let mut rdata = Vec::with_capacity(1 + bytes.len());
    rdata.push(bytes.len() as u8);
    rdata.extend_from_slice(bytes);
    rdata
}

/// The host name, as Go's `os.Hostname` gives it (`localhost` when it cannot be read).
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| {
            std::env::var("HOSTNAME")
                .ok()
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_owned())
}

impl Chaos {
    /// The plugin for `config`; the host name is read now.
    pub(crate) fn new(config: &ChaosConfig) -> Self {
        Self::with_hostname(config, &hostname())
    }

    fn with_hostname(config: &ChaosConfig, hostname: &str) -> Self {
        Self {
            version: txt(&config.version),
            authors: config.authors.iter().map(|author| txt(author)).collect(),
            hostname: txt(hostname),
        }
    }

    /// Answers `request` into `out` if it is a CH TXT question for one of the plugin's
    /// names: `authors.bind` (the authors in a random order), `version.bind` and
    /// `version.server`, `hostname.bind` and `id.server`. TTL 0, not authoritative.
    pub(crate) fn respond(&self, request: &Request<'_>, limit: usize, out: &mut Vec<u8>) -> Flow {
        let question = &request.question;
        if question.qclass != class::CH || question.qtype != rtype::TXT {
            return Flow::Pass;
        }
        let mut reply = |records: &mut dyn Iterator<Item = &Vec<u8>>| {
            let mut answers = wire::QuestionAnswers::new(request, out);
            for rdata in records {
                answers.answer(rtype::TXT, class::CH, 0, rdata);
            }
            answers.finish(rcode::NOERROR, false, limit);
        };
        match question.name() {
            b"\x07authors\x04bind\x00" => {
                let mut order: Vec<&Vec<u8>> = self.authors.iter().collect();
                fastrand::shuffle(&mut order);
                reply(&mut order.into_iter());
            }
            b"\x07version\x04bind\x00" | b"\x07version\x06server\x00" => {
                reply(&mut std::iter::once(&self.version));
            }
            b"\x08hostname\x04bind\x00" | b"\x02id\x06server\x00" => {
                reply(&mut std::iter::once(&self.hostname));
            }
            _ => return Flow::Pass,
        }
        Flow::reply(Plugin::Chaos)
    }
}

impl Lifecycle for Chaos {
    const INTERNET_ONLY: bool = false;

    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        Ok(at.config.plugins.chaos.as_ref().map(Self::new))
    }

    #[inline]
    fn answer(
        &self,
        _chain: &PluginChain,
        _ctx: &Ctx<'_>,
        _index: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        self.respond(q.request, q.limit, out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use hickory_proto::op::{Message, MessageType, OpCode, Query};
    use hickory_proto::rr::{DNSClass, Name, RData, RecordType};

    fn ask(chaos: &Chaos, name: &str, qtype: RecordType, class: DNSClass) -> Option<Message> {
        let mut query = Query::query(Name::from_ascii(name).unwrap(), qtype);
        query.set_query_class(class);
        let mut message = Message::new(7, MessageType::Query, OpCode::Query);
        message.add_query(query);
        let packet = message.to_vec().unwrap();
        let request = Request::parse(&packet).unwrap();
        let mut out = Vec::new();
        matches!(
            chaos.respond(&request, 512, &mut out),
            Flow::Done(crate::server::chain::End::Reply(_))
        )
        .then(|| Message::from_vec(&out).unwrap())
    }

    fn texts(reply: &Message) -> Vec<String> {
        reply
            .answers
            .iter()
            .map(|record| match &record.data {
                RData::TXT(txt) => txt.to_string(),
                other => panic!("not TXT: {other:?}"),
            })
            .collect()
    }

    /// CoreDNS's `chaos_test.go`, as a table: name, type, class, and the TXT strings (none:
    /// passed on).
    #[test]
    fn answers() {
        let config = ChaosConfig {
            version: "CoreDNS-001".to_owned(),
            authors: vec!["alice".to_owned(), "bob".to_owned()],
        };
        let chaos = Chaos::with_hostname(&config, "node-1");
        let cases: &[(&str, RecordType, DNSClass, Option<&[&str]>)] = &[
            (
                "version.bind.",
                RecordType::TXT,
                DNSClass::CH,
                Some(&["CoreDNS-001"]),
            ),
            (
                "Version.Server.",
                RecordType::TXT,
                DNSClass::CH,
                Some(&["CoreDNS-001"]),
            ),
            (
                "hostname.bind.",
                RecordType::TXT,
                DNSClass::CH,
                Some(&["node-1"]),
            ),
            (
                "id.server.",
                RecordType::TXT,
                DNSClass::CH,
                Some(&["node-1"]),
            ),
            ("version.bind.", RecordType::A, DNSClass::CH, None),
            ("version.bind.", RecordType::TXT, DNSClass::IN, None),
            ("example.org.", RecordType::TXT, DNSClass::CH, None),
        ];
        for (name, qtype, class, want) in cases {
            let reply = ask(&chaos, name, *qtype, *class);
            match (want, reply) {
                (None, None) => {}
                (Some(want), Some(reply)) => {
                    assert_eq!(texts(&reply), *want, "{name}");
                    let record = &reply.answers[0];
                    assert_eq!((record.ttl, record.dns_class), (0, DNSClass::CH), "{name}");
                    assert_eq!(record.name.to_ascii(), *name, "the question's spelling");
                    assert!(!reply.metadata.authoritative);
                }
                (want, reply) => panic!("{name}: want {want:?}, got {reply:?}"),
            }
        }
        let authors = ask(&chaos, "authors.bind.", RecordType::TXT, DNSClass::CH).unwrap();
        let mut got = texts(&authors);
        got.sort();
        assert_eq!(got, ["alice", "bob"]);
    }
}
