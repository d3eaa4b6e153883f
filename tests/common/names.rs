//! An upstream that knows a fixed set of names: each has an A (192.0.2.10) and an AAAA
//! (2001:db8::10) record; names under a failing suffix are SERVFAIL; questions it is told to
//! lose get no reply at all; every other name is NXDOMAIN. UDP on a loopback port, one thread;
//! [`NamesUpstream::with_tcp`] answers the same over TCP too (a forwarder asks over TCP what it
//! was asked over TCP: NodeLocal DNSCache's `force_tcp` to kube-dns, say).
//! It stands for the Internet in tests where a name as typed exists and its search-expanded
//! forms do not (`resolve-cost --upstream assume`).

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA};
use hickory_proto::rr::{RData, Record, RecordType};

pub struct NamesUpstream {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    asked: Arc<Mutex<Vec<(String, RecordType)>>>,
    answer: Answer,
    thread: Option<std::thread::JoinHandle<()>>,
    tcp: Option<std::thread::JoinHandle<()>>,
}

/// The upstream's reply to a query's bytes (none: lost, or not a query).
type Answer = Arc<dyn Fn(&[u8]) -> Option<Vec<u8>> + Send + Sync>;

impl NamesUpstream {
    /// Serves `names` (lower case, with or without the final dot) on `bind` (port 0 for any).
    pub fn start(bind: SocketAddr, names: &[&str]) -> Self {
        Self::failing(bind, names, &[])
    }

    /// [`start`](Self::start), answering SERVFAIL for names under `failing` domains.
    pub fn failing(bind: SocketAddr, names: &[&str], failing: &[&str]) -> Self {
        Self::losing(bind, names, failing, &[])
    }

    /// [`failing`](Self::failing), never answering the questions in `lost` (name, type).
    pub fn losing(
        bind: SocketAddr,
        names: &[&str],
        failing: &[&str],
        lost: &[(&str, RecordType)],
    ) -> Self {
        Self::on(UdpSocket::bind(bind).unwrap(), names, failing, lost)
    }

    /// [`losing`](Self::losing), on a socket bound already (in a network namespace of the
    /// test's, say).
    pub fn on(
        socket: UdpSocket,
        names: &[&str],
        failing: &[&str],
        lost: &[(&str, RecordType)],
    ) -> Self {
        let lost: HashSet<(String, RecordType)> = lost
            .iter()
            .map(|(n, t)| {
                (
                    format!("{}.", n.trim_end_matches('.').to_ascii_lowercase()),
                    *t,
                )
            })
            .collect();
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let addr = socket.local_addr().unwrap();
        let known: HashSet<String> = names
            .iter()
            .map(|n| format!("{}.", n.trim_end_matches('.').to_ascii_lowercase()))
            .collect();
        let failing: Vec<String> = failing
            .iter()
            .map(|d| format!(".{}.", d.trim_end_matches('.').to_ascii_lowercase()))
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&asked);
        let answer: Answer = Arc::new(move |bytes: &[u8]| -> Option<Vec<u8>> {
            let query = Message::from_vec(bytes).ok()?;
            let question = query.queries.first().cloned()?;
            let name = question.name().to_ascii().to_ascii_lowercase();
            let qtype = question.query_type();
            log.lock().unwrap().push((name.clone(), qtype));
            if lost.contains(&(name.clone(), qtype)) {
                return None;
            }
            let mut reply = Message::new(
                query.metadata.id,
                MessageType::Response,
                query.metadata.op_code,
            );
            reply.metadata.recursion_desired = query.metadata.recursion_desired;
            reply.metadata.recursion_available = true;
            reply.add_query(question.clone());
            if failing.iter().any(|suffix| name.ends_with(suffix.as_str())) {
                reply.metadata.response_code = ResponseCode::ServFail;
            } else if known.contains(&name) {
                let rdata = match qtype {
                    RecordType::A => Some(RData::A(A(Ipv4Addr::new(192, 0, 2, 10)))),
                    RecordType::AAAA => Some(RData::AAAA(AAAA(Ipv6Addr::new(
                        0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x10,
                    )))),
                    _ => None,
                };
                if let Some(rdata) = rdata {
                    reply.add_answer(Record::from_rdata(question.name().clone(), 60, rdata));
                }
            } else {
                reply.metadata.response_code = ResponseCode::NXDomain;
            }
            reply.to_vec().ok()
        });
        let stop_flag = Arc::clone(&stop);
        let udp = Arc::clone(&answer);
        let thread = std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while !stop_flag.load(Ordering::Relaxed) {
                let Ok((len, peer)) = socket.recv_from(&mut buffer) else {
                    continue;
                };
                if let Some(bytes) = udp(&buffer[..len]) {
                    let _ = socket.send_to(&bytes, peer);
                }
            }
        });
        Self {
            addr,
            stop,
            asked,
            answer,
            thread: Some(thread),
            tcp: None,
        }
    }

    /// The same answers over TCP on `listener` (bound already), each connection's queries in
    /// turn until the client closes it.
    pub fn with_tcp(mut self, listener: TcpListener) -> Self {
        listener.set_nonblocking(true).unwrap();
        let (stop, answer) = (Arc::clone(&self.stop), Arc::clone(&self.answer));
        self.tcp = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                let answer = Arc::clone(&answer);
                std::thread::spawn(move || {
                    let _ = stream.set_nonblocking(false);
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    loop {
                        let mut length = [0u8; 2];
                        if stream.read_exact(&mut length).is_err() {
                            return;
                        }
                        let mut query = vec![0u8; u16::from_be_bytes(length) as usize];
                        if stream.read_exact(&mut query).is_err() {
                            return;
                        }
                        if let Some(reply) = answer(&query) {
                            let mut framed = (reply.len() as u16).to_be_bytes().to_vec();
                            framed.extend_from_slice(&reply);
                            if stream.write_all(&framed).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        }));
        self
    }

    /// Every question asked, in order.
    pub fn asked(&self) -> Vec<(String, RecordType)> {
        self.asked.lock().unwrap().clone()
    }
}

impl Drop for NamesUpstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in [self.thread.take(), self.tcp.take()].into_iter().flatten() {
            let _ = thread.join();
        }
    }
}
