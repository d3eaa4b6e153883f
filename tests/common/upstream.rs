//! A DNS server for *forward* to forward to: UDP and TCP on one loopback port, answering an
//! A record for any name, or misbehaving the ways upstreams do (slow, silent, truncating,
//! failing, answering with someone else's ID first). It counts what it is asked. Started
//! with [`TestUpstream::start_tls`], its TCP port speaks DNS over TLS instead (RFC 7858),
//! with a certificate from a CA made for the test ([`super::dot`]).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hickory_proto::op::{Edns, Message, MessageType, Query, ResponseCode};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{Name, RData, Record, RecordType};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UdpSocket};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use super::dot::DotFiles;

/// How the upstream treats each query (health checks included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Answer at once.
    Answer,
    /// Answer after this long.
    Delay(Duration),
    /// Never reply.
    Silent,
    /// Over UDP, an empty reply with TC set; over TCP, the full answer.
    Truncate,
    /// Reply with this rcode and no records.
    Rcode(u16),
    /// Reply with this rcode and no question section either (a FORMERR from a server that
    /// could not read the query).
    Questionless(u16),
    /// First some garbage, a reply with another ID and one to another question (each
    /// answering 203.0.113.66), then the right answer.
    WrongFirst,
}

/// What the impostor replies of [`Behaviour::WrongFirst`] answer.
pub const WRONG_IP: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 66);

/// The transport a query came over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Udp,
    Tcp,
}

/// A running test upstream; stops when dropped.
pub struct TestUpstream {
    pub addr: SocketAddr,
    state: Arc<State>,
    tasks: Vec<JoinHandle<()>>,
}

struct State {
    behaviour: Mutex<Behaviour>,
    /// The first A record's address; further records count up from it.
    answer: Mutex<Ipv4Addr>,
    /// How many A records an answer has.
    records: AtomicUsize,
    /// Close each TCP connection after its first reply.
    close_tcp: AtomicBool,
    udp: AtomicUsize,
    tcp: AtomicUsize,
    health_checks: AtomicUsize,
    connections: AtomicUsize,
    /// TLS handshakes completed (DNS over TLS only).
    handshakes: AtomicUsize,
    /// TLS handshakes that failed (the client refused the certificate, or sent none).
    failed_handshakes: AtomicUsize,
    /// TCP connections still open.
    open: AtomicUsize,
    /// The last query that was not a health check, as received.
    last: Mutex<Option<Vec<u8>>>,
    /// The question names of every query that was not a health check, lowercased.
    names: Mutex<Vec<String>>,
}

impl TestUpstream {
    /// Starts an upstream on 127.0.0.1, UDP and TCP on the same free port, answering
    /// `192.0.2.1`.
    pub async fn start(behaviour: Behaviour) -> Self {
        Self::launch(behaviour, None).await
    }

    /// Starts a DNS-over-TLS upstream on 127.0.0.1 (its TCP port; UDP answers in the clear
    /// as before), answering `192.0.2.1`, with a certificate for `dns.test` and 127.0.0.1.
    /// With `require_client_cert`, the handshake needs the client certificate of `files`.
    pub async fn start_tls(behaviour: Behaviour, require_client_cert: bool) -> (Self, DotFiles) {
        let (files, config) = super::dot::generate(require_client_cert);
        let upstream = Self::launch(behaviour, Some(TlsAcceptor::from(Arc::new(config)))).await;
        (upstream, files)
    }

    async fn launch(behaviour: Behaviour, tls: Option<TlsAcceptor>) -> Self {
        let (udp, tcp) = bind_pair().await;
        let addr = udp.local_addr().unwrap();
        let state = Arc::new(State {
            behaviour: Mutex::new(behaviour),
            answer: Mutex::new(Ipv4Addr::new(192, 0, 2, 1)),
            records: AtomicUsize::new(1),
            close_tcp: AtomicBool::new(false),
            udp: AtomicUsize::new(0),
            tcp: AtomicUsize::new(0),
            health_checks: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            handshakes: AtomicUsize::new(0),
            failed_handshakes: AtomicUsize::new(0),
            open: AtomicUsize::new(0),
            last: Mutex::new(None),
            names: Mutex::new(Vec::new()),
        });
        let tasks = vec![
            tokio::spawn(serve_udp(Arc::new(udp), Arc::clone(&state))),
            tokio::spawn(serve_tcp(tcp, tls, Arc::clone(&state))),
        ];
        Self { addr, state, tasks }
    }

    /// Starts an upstream answering `ip`.
    pub async fn answering(ip: Ipv4Addr) -> Self {
        let upstream = Self::start(Behaviour::Answer).await;
        upstream.set_answer(ip);
        upstream
    }

    pub fn set(&self, behaviour: Behaviour) {
        *self.state.behaviour.lock().unwrap() = behaviour;
    }

    pub fn set_answer(&self, ip: Ipv4Addr) {
        *self.state.answer.lock().unwrap() = ip;
    }

    /// Answers carry `count` A records (the first address, counting up).
    pub fn set_records(&self, count: usize) {
        self.state.records.store(count, Ordering::SeqCst);
    }

    /// Closes every TCP connection after its first reply.
    pub fn close_tcp_after_reply(&self, close: bool) {
        self.state.close_tcp.store(close, Ordering::SeqCst);
    }

    /// Queries received over UDP, health checks (`. IN NS`) not counted.
    pub fn udp(&self) -> usize {
        self.state.udp.load(Ordering::SeqCst)
    }

    /// Queries received over TCP, health checks not counted.
    pub fn tcp(&self) -> usize {
        self.state.tcp.load(Ordering::SeqCst)
    }

    /// Queries over either transport, health checks not counted.
    pub fn queries(&self) -> usize {
        self.udp() + self.tcp()
    }

    /// Health checks (`. IN NS`) received.
    pub fn health_checks(&self) -> usize {
        self.state.health_checks.load(Ordering::SeqCst)
    }

    /// TCP connections accepted.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// TLS handshakes completed.
    pub fn handshakes(&self) -> usize {
        self.state.handshakes.load(Ordering::SeqCst)
    }

    /// TLS handshakes that failed.
    pub fn failed_handshakes(&self) -> usize {
        self.state.failed_handshakes.load(Ordering::SeqCst)
    }

    /// TCP connections open now (closed by either side are not).
    pub fn open_connections(&self) -> usize {
        self.state.open.load(Ordering::SeqCst)
    }

    /// Queries for `name` (any case, any type, either transport). Unlike `queries`, this
    /// ignores the loop plugin's probe, which arrives whenever the server gets to it.
    pub fn queries_for(&self, name: &str) -> usize {
        let name = name.to_ascii_lowercase();
        let names = self.state.names.lock().unwrap();
        names.iter().filter(|asked| **asked == name).count()
    }

    /// The last query (not a health check) as received.
    pub fn last_query(&self) -> Option<Vec<u8>> {
        self.state.last.lock().unwrap().clone()
    }
}

impl Drop for TestUpstream {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// An address where nothing listens (UDP or TCP): queries there are refused at once.
pub async fn dead_addr() -> SocketAddr {
    let (udp, _tcp) = bind_pair().await;
    udp.local_addr().unwrap()
}

/// A UDP socket and a TCP listener on the same free loopback port.
async fn bind_pair() -> (UdpSocket, TcpListener) {
    for _ in 0..100 {
        let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = udp.local_addr().unwrap();
        if let Ok(tcp) = TcpListener::bind(addr).await {
            return (udp, tcp);
        }
    }
    panic!("no free port for UDP and TCP");
}

async fn serve_udp(socket: Arc<UdpSocket>, state: Arc<State>) {
    let mut buffer = vec![0; 65_535];
    loop {
        let Ok((len, peer)) = socket.recv_from(&mut buffer).await else {
            continue;
        };
        let query = buffer[..len].to_vec();
        let socket = Arc::clone(&socket);
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            for reply in respond(&state, &query, Via::Udp).await {
                let _ = socket.send_to(&reply, peer).await;
            }
        });
    }
}

async fn serve_tcp(listener: TcpListener, tls: Option<TlsAcceptor>, state: Arc<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        state.connections.fetch_add(1, Ordering::SeqCst);
        state.open.fetch_add(1, Ordering::SeqCst);
        let state = Arc::clone(&state);
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => serve_connection(stream, &state).await,
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(session) => {
                        state.handshakes.fetch_add(1, Ordering::SeqCst);
                        serve_connection(session, &state).await;
                    }
                    Err(_) => {
                        state.failed_handshakes.fetch_add(1, Ordering::SeqCst);
                    }
                },
            }
            state.open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

async fn serve_connection(mut stream: impl AsyncRead + AsyncWrite + Unpin, state: &State) {
    loop {
        let mut length = [0u8; 2];
        if stream.read_exact(&mut length).await.is_err() {
            return;
        }
        let mut query = vec![0; usize::from(u16::from_be_bytes(length))];
        if stream.read_exact(&mut query).await.is_err() {
            return;
        }
        for reply in respond(state, &query, Via::Tcp).await {
            let mut framed = (reply.len() as u16).to_be_bytes().to_vec();
            framed.extend_from_slice(&reply);
            if stream.write_all(&framed).await.is_err() || stream.flush().await.is_err() {
                return;
            }
        }
        if state.close_tcp.load(Ordering::SeqCst) {
            return;
        }
    }
}

/// The messages to send back for `bytes`, in order (none for a query that does not parse).
async fn respond(state: &State, bytes: &[u8], via: Via) -> Vec<Vec<u8>> {
    let Ok(query) = Message::from_vec(bytes) else {
        return Vec::new();
    };
    let Some(question) = query.queries.first().cloned() else {
        return Vec::new();
    };
    if question.query_type() == RecordType::NS && question.name().is_root() {
        state.health_checks.fetch_add(1, Ordering::SeqCst);
    } else {
        match via {
            Via::Udp => state.udp.fetch_add(1, Ordering::SeqCst),
            Via::Tcp => state.tcp.fetch_add(1, Ordering::SeqCst),
        };
        *state.last.lock().unwrap() = Some(bytes.to_vec());
        let name = question.name().to_ascii().to_ascii_lowercase();
        state.names.lock().unwrap().push(name);
    }
    let behaviour = *state.behaviour.lock().unwrap();
    let answer = *state.answer.lock().unwrap();
    let records = state.records.load(Ordering::SeqCst);
    let id = query.metadata.id;
    match behaviour {
        Behaviour::Silent => Vec::new(),
        Behaviour::Answer => vec![reply(&query, id, &question, answer, records)],
        Behaviour::Delay(delay) => {
            tokio::time::sleep(delay).await;
            vec![reply(&query, id, &question, answer, records)]
        }
        Behaviour::Truncate if via == Via::Udp => {
            let mut message = reply_message(&query, id, &question);
            message.metadata.truncation = true;
            vec![message.to_vec().unwrap()]
        }
        Behaviour::Truncate => vec![reply(&query, id, &question, answer, records)],
        Behaviour::Rcode(rcode) => {
            let mut message = reply_message(&query, id, &question);
            message.metadata.response_code = ResponseCode::from_low(rcode as u8);
            vec![message.to_vec().unwrap()]
        }
        Behaviour::Questionless(rcode) => {
            let mut message = reply_message(&query, id, &question);
            message.metadata.response_code = ResponseCode::from_low(rcode as u8);
            message.queries.clear();
            vec![message.to_vec().unwrap()]
        }
        Behaviour::WrongFirst => {
            let other = Query::query(
                Name::from_ascii("impostor.example.").unwrap(),
                RecordType::A,
            );
            vec![
                vec![0xde, 0xad],
                bytes[..bytes.len().min(12)].to_vec(),
                reply(&query, id.wrapping_add(1), &question, WRONG_IP, 1),
                reply(&query, id, &other, WRONG_IP, 1),
                reply(&query, id, &question, answer, records),
            ]
        }
    }
}

/// A reply header and question for `query`, with EDNS (payload 1232, DO echoed) if the
/// query had it.
fn reply_message(query: &Message, id: u16, question: &Query) -> Message {
    let mut message = Message::new(id, MessageType::Response, query.metadata.op_code);
    message.metadata.recursion_desired = query.metadata.recursion_desired;
    message.metadata.recursion_available = true;
    message.add_query(question.clone());
    if let Some(edns) = &query.edns {
        let mut ours = Edns::new();
        ours.set_max_payload(1232);
        ours.set_dnssec_ok(edns.flags().dnssec_ok);
        message.set_edns(ours);
    }
    message
}

/// An answer: `records` A records counting up from `first` for A questions, NODATA for
/// others.
fn reply(query: &Message, id: u16, question: &Query, first: Ipv4Addr, records: usize) -> Vec<u8> {
    let mut message = reply_message(query, id, question);
    if question.query_type() == RecordType::A {
        for i in 0..records {
            let ip = Ipv4Addr::from(u32::from(first).wrapping_add(i as u32));
            message.add_answer(Record::from_rdata(
                question.name().clone(),
                60,
                RData::A(A(ip)),
            ));
        }
    }
    message.to_vec().unwrap()
}
