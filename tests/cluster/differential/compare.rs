//! Asking CoreDNS and clusterdns the same question the same way, and comparing the two
//! replies as a client sees them: rcode, the AA, TC and RA flags, the question echoed, EDNS,
//! and each section's RRsets with their TTLs (records sorted: order is normalised, since
//! *loadbalance* shuffles). A difference that goes away when asked again within a second is
//! one server having seen a change before the other ("transient"), counted apart.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::Name;

use super::corpus::{Question, VARIANTS, Variant};
use crate::common::{lines, rcode_name};

/// One server's reply, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Seen {
    pub rcode: String,
    pub flags: String,
    pub question: String,
    pub edns: String,
    pub answer: Vec<String>,
    pub authority: Vec<String>,
    pub additional: Vec<String>,
}

impl Seen {
    fn timeout() -> Self {
        Self {
            rcode: "TIMEOUT".to_owned(),
            flags: String::new(),
            question: String::new(),
            edns: String::new(),
            answer: Vec::new(),
            authority: Vec::new(),
            additional: Vec::new(),
        }
    }

    fn decode(bytes: &[u8]) -> Self {
        let Ok(message) = Message::from_vec(bytes) else {
            return Self {
                rcode: "UNPARSEABLE".to_owned(),
                ..Self::timeout()
            };
        };
        let meta = &message.metadata;
        let mut flags = Vec::new();
        for (set, name) in [
            (meta.authoritative, "aa"),
            (meta.truncation, "tc"),
            (meta.recursion_desired, "rd"),
            (meta.recursion_available, "ra"),
        ] {
            if set {
                flags.push(name);
            }
        }
        let question = message
            .queries
            .iter()
            .map(|q| format!("{} {}", q.name(), q.query_type()))
            .collect::<Vec<_>>()
            .join(", ");
        let edns = message.edns.as_ref().map_or_else(String::new, |edns| {
            format!(
                "payload {}{}",
                edns.max_payload(),
                if edns.flags().dnssec_ok { " do" } else { "" }
            )
        });
        Self {
            rcode: rcode_name(u16::from(meta.response_code)).to_owned(),
            flags: flags.join(" "),
            question,
            edns,
            answer: lower(lines(&message.answers)),
            authority: lower(lines(&message.authorities)),
            additional: lower(lines(&message.additionals)),
        }
    }

    /// The reply as dig would print its essentials, one line per part.
    pub fn text(&self) -> String {
        let mut text = format!(
            "{} [{}] edns [{}] question [{}]",
            self.rcode, self.flags, self.edns, self.question
        );
        for (section, records) in [
            ("answer", &self.answer),
            ("authority", &self.authority),
            ("additional", &self.additional),
        ] {
            for record in records {
                text.push_str(&format!("\n      {section}: {record}"));
            }
        }
        text
    }
}

/// Record lines with names in lower case: names compare without case (RFC 4343), and an
/// owner's case is whatever a cache or a compression pointer made it; the question's case,
/// which resolvers check, is compared as it is.
fn lower(mut lines: Vec<String>) -> Vec<String> {
    for line in &mut lines {
        *line = line.to_ascii_lowercase();
    }
    lines.sort();
    lines
}

/// What differs between CoreDNS's reply `a` and clusterdns's `b`: empty when nothing does.
pub(super) fn aspects(a: &Seen, b: &Seen) -> Vec<String> {
    let mut out = Vec::new();
    if a.rcode != b.rcode {
        out.push(format!("rcode {} / {}", a.rcode, b.rcode));
    }
    if a.flags != b.flags {
        out.push(format!("flags [{}] / [{}]", a.flags, b.flags));
    }
    if a.question != b.question {
        out.push("question".to_owned());
    }
    if a.edns != b.edns {
        out.push(format!("edns [{}] / [{}]", a.edns, b.edns));
    }
    for (section, x, y) in [
        ("answer", &a.answer, &b.answer),
        ("authority", &a.authority, &b.authority),
        ("additional", &a.additional, &b.additional),
    ] {
        if !same_records(x, y, 1) {
            out.push(section.to_owned());
        }
    }
    out
}

/// How far apart two caches' TTLs for a name outside the cluster's zones may be: each filled
/// its entry when a question first brought the name (an ExternalName's chase, a search-path
/// expansion), which is not the same moment for both.
const CACHE_SLACK: u32 = 30;

/// Whether two sections hold the same records, TTLs apart by at most `slack` seconds (two
/// caches asked a moment apart may sit on either side of a second), or [`CACHE_SLACK`] for
/// names outside the cluster's zones.
pub(super) fn same_records(x: &[String], y: &[String], slack: u32) -> bool {
    let split = |lines: &[String]| -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = lines
            .iter()
            .map(|line| {
                let mut words: Vec<&str> = line.split(' ').collect();
                let ttl = words.get(1).and_then(|t| t.parse().ok()).unwrap_or(0);
                if words.len() > 1 {
                    words.remove(1);
                }
                (words.join(" "), ttl)
            })
            .collect();
        out.sort();
        out
    };
    let (x, y) = (split(x), split(y));
    let outside = |line: &str| {
        let owner = line.split(' ').next().unwrap_or_default();
        !["cluster.local.", "in-addr.arpa.", "ip6.arpa."]
            .iter()
            .any(|zone| owner.ends_with(zone))
    };
    x.len() == y.len()
        && x.iter().zip(&y).all(|((a, s), (b, t))| {
            let slack = if outside(a) {
                slack.max(CACHE_SLACK)
            } else {
                slack
            };
            a == b && s.abs_diff(*t) <= slack
        })
}

/// A client of one server: a UDP socket and a TCP connection kept open.
struct Client {
    addr: SocketAddr,
    udp: UdpSocket,
    tcp: Option<TcpStream>,
    next_id: u16,
}

const TIMEOUT: Duration = Duration::from_secs(2);

impl Client {
    fn new(addr: SocketAddr) -> Self {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.connect(addr).unwrap();
        udp.set_read_timeout(Some(TIMEOUT)).unwrap();
        Self {
            addr,
            udp,
            tcp: None,
            next_id: 1,
        }
    }

    /// The reply to `question` asked as `variant`; a second try after a timeout.
    fn ask(&mut self, question: &Question, variant: Variant) -> Seen {
        for _ in 0..2 {
            self.next_id = self.next_id.wrapping_add(1);
            let packet = query(question, variant, self.next_id);
            let reply = if variant.tcp {
                self.tcp(&packet)
            } else {
                self.udp(&packet)
            };
            if let Some(reply) = reply {
                return Seen::decode(&reply);
            }
        }
        Seen::timeout()
    }

    fn udp(&mut self, packet: &[u8]) -> Option<Vec<u8>> {
        self.udp.send(packet).ok()?;
        let mut buf = vec![0u8; 65535];
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            let len = self.udp.recv(&mut buf).ok()?;
            // A late reply to an earlier try is not this one's.
            if len >= 2 && buf[..2] == packet[..2] {
                buf.truncate(len);
                return Some(buf);
            }
        }
        None
    }

    fn tcp(&mut self, packet: &[u8]) -> Option<Vec<u8>> {
        for _ in 0..2 {
            if self.tcp.is_none() {
                let stream = TcpStream::connect_timeout(&self.addr, TIMEOUT).ok()?;
                stream.set_read_timeout(Some(TIMEOUT)).ok()?;
                stream.set_nodelay(true).ok()?;
                self.tcp = Some(stream);
            }
            let stream = self.tcp.as_mut()?;
            let mut framed = (packet.len() as u16).to_be_bytes().to_vec();
            framed.extend_from_slice(packet);
            let reply = (|| {
                stream.write_all(&framed).ok()?;
                let mut len = [0u8; 2];
                stream.read_exact(&mut len).ok()?;
                let mut message = vec![0u8; u16::from_be_bytes(len) as usize];
                stream.read_exact(&mut message).ok()?;
                Some(message)
            })();
            match reply {
                Some(reply) => return Some(reply),
                // The server closed an idle connection: once more on a new one.
                None => self.tcp = None,
            }
        }
        None
    }
}

/// The query message for `question` as `variant`, RD set as stub resolvers set it.
fn query(question: &Question, variant: Variant, id: u16) -> Vec<u8> {
    let mut message = Message::new(id, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(
        Name::from_ascii(&question.name).unwrap(),
        question.qtype,
    ));
    if let Some(payload) = variant.edns {
        let mut edns = Edns::new();
        edns.set_max_payload(payload);
        edns.set_dnssec_ok(variant.dnssec_ok);
        message.edns = Some(edns);
    }
    message.to_vec().unwrap()
}

/// One question asked one way, and what the two servers said.
#[derive(Debug, Clone)]
pub(super) struct Difference {
    /// The `pods` mode of the servers asked.
    pub mode: &'static str,
    pub question: Question,
    pub variant: Variant,
    pub coredns: Seen,
    pub clusterdns: Seen,
    pub aspects: Vec<String>,
}

/// What a pass over a corpus found.
#[derive(Debug, Default)]
pub(super) struct Pass {
    pub asked: usize,
    pub differences: Vec<Difference>,
    /// Differences that went away when asked again.
    pub transient: usize,
    /// One of them, for the report.
    pub transient_example: Option<Difference>,
    /// Differences docs/differences.md does not list that stayed when asked again.
    settled: usize,
}

/// Asks every question of `questions` of both servers (CoreDNS at `coredns`, clusterdns at
/// `clusterdns`), the i-th in variant `(i + offset) % VARIANTS.len()`, on `threads` threads.
pub(super) fn pass(
    (coredns, clusterdns, mode): (SocketAddr, SocketAddr, &'static str),
    questions: &[Question],
    offset: usize,
    threads: usize,
    documented: fn(&Difference) -> bool,
) -> Pass {
    let chunk = questions.len().div_ceil(threads.max(1)).max(1);
    let results: Vec<Pass> = std::thread::scope(|scope| {
        let handles: Vec<_> = questions
            .chunks(chunk)
            .enumerate()
            .map(|(n, part)| {
                scope.spawn(move || {
                    let mut a = Client::new(coredns);
                    let mut b = Client::new(clusterdns);
                    let mut out = Pass::default();
                    for (i, question) in part.iter().enumerate() {
                        let variant = VARIANTS[(n * chunk + i + offset) % VARIANTS.len()];
                        let asked = Asked {
                            question,
                            variant,
                            mode,
                            documented,
                        };
                        compare(&mut a, &mut b, &asked, &mut out);
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut total = Pass::default();
    for part in results {
        total.absorb(part);
    }
    total
}

impl Pass {
    /// Adds what `more` found (the first transient example kept).
    pub(super) fn absorb(&mut self, more: Pass) {
        self.asked += more.asked;
        self.transient += more.transient;
        self.settled += more.settled;
        self.differences.extend(more.differences);
        self.transient_example = self.transient_example.take().or(more.transient_example);
    }
}

/// One question asked one way of one pair of servers.
struct Asked<'a> {
    question: &'a Question,
    variant: Variant,
    mode: &'static str,
    /// Whether a difference is one docs/differences.md lists: those are not asked again.
    documented: fn(&Difference) -> bool,
}

/// Asks one question of both; a difference is asked again before it counts.
fn compare(a: &mut Client, b: &mut Client, asked: &Asked<'_>, out: &mut Pass) {
    out.asked += 1;
    let (question, variant) = (asked.question, asked.variant);
    let first = (a.ask(question, variant), b.ask(question, variant));
    let found = aspects(&first.0, &first.1);
    if found.is_empty() {
        return;
    }
    let difference = Difference {
        mode: asked.mode,
        question: question.clone(),
        variant,
        aspects: found,
        coredns: first.0,
        clusterdns: first.1,
    };
    // A documented difference counts at once; so does any, once a thread's pass has found
    // enough that stayed for the test to fail (asking each of thousands again for a second
    // would turn a failure into a timeout).
    if (asked.documented)(&difference) || out.settled >= SETTLED_ENOUGH {
        out.differences.push(difference);
        return;
    }
    // One server may be a moment behind the other on a change: during churn, and idle too
    // (the controllers can still be writing the slices of pods kwok has just made ready).
    // So a difference is asked again, 100 ms apart, for up to a second, and counts only if
    // it is there every time; the last one seen is the one reported.
    let mut last = difference.clone();
    for _ in 0..RETRIES {
        std::thread::sleep(RETRY_PAUSE);
        let again = (a.ask(question, variant), b.ask(question, variant));
        let found = aspects(&again.0, &again.1);
        if found.is_empty() {
            out.transient += 1;
            out.transient_example.get_or_insert(difference);
            return;
        }
        last = Difference {
            aspects: found,
            coredns: again.0,
            clusterdns: again.1,
            ..last
        };
    }
    out.settled += 1;
    out.differences.push(last);
}

/// How many times a difference is asked again, and how far apart, before it counts.
const RETRIES: usize = 10;
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// How many undocumented differences that stayed a thread's pass asks again before it
/// counts the rest as they first come.
const SETTLED_ENOUGH: usize = 20;

/// A difference between CoreDNS and clusterdns that docs/differences.md describes, and how
/// to recognise it in a pair of replies.
pub(super) struct Known {
    /// Words of docs/differences.md's entry (checked to be there).
    pub doc: &'static str,
    /// What the report says about it.
    pub what: &'static str,
    pub matches: fn(&Difference) -> bool,
}

/// Differences grouped by kind: (`pods` mode, category, aspects) → (count, question types,
/// first example).
pub(super) type Groups = BTreeMap<(String, String, String), (usize, Vec<String>, Difference)>;

/// Groups `differences` by kind.
pub(super) fn group<'a>(differences: impl IntoIterator<Item = &'a Difference>) -> Groups {
    let mut groups = Groups::new();
    for difference in differences {
        let category = if difference.question.mixed {
            format!("{}, mixed case", difference.question.category)
        } else {
            difference.question.category.to_owned()
        };
        let key = (
            difference.mode.to_owned(),
            category,
            difference.aspects.join(", "),
        );
        let entry = groups
            .entry(key)
            .or_insert_with(|| (0, Vec::new(), difference.clone()));
        entry.0 += 1;
        let qtype = difference.question.qtype.to_string();
        if !entry.1.contains(&qtype) {
            entry.1.push(qtype);
        }
    }
    groups
}

/// The markdown lines of `groups`, one entry per kind with its example.
pub(super) fn describe(groups: &Groups) -> String {
    let mut text = String::new();
    for ((mode, category, aspects), (count, types, example)) in groups {
        text.push_str(&format!(
            "- **{category}** ({}; pods {mode}): {aspects} — {count} ×\n  e.g. `{} {}` ({})\n  - CoreDNS:    {}\n  - clusterdns: {}\n",
            types.join(" "),
            example.question.name,
            example.question.qtype,
            example.variant,
            example.coredns.text().replace('\n', "\n    "),
            example.clusterdns.text().replace('\n', "\n    "),
        ));
    }
    text
}
