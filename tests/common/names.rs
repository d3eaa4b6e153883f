//! An upstream that knows a fixed set of names: each has an A (192.0.2.10) and an AAAA
//! (2001:db8::10) record; names under a failing suffix are SERVFAIL; questions it is told to
//! lose get no reply at all; every other name is NXDOMAIN. UDP on a loopback port, one thread.
//! It stands for the Internet in tests where a name as typed exists and its search-expanded
//! forms do not (`resolve-cost --upstream assume`).

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
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
    thread: Option<std::thread::JoinHandle<()>>,
}

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
        let (stop_flag, log) = (Arc::clone(&stop), Arc::clone(&asked));
        let thread = std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while !stop_flag.load(Ordering::Relaxed) {
                let Ok((len, peer)) = socket.recv_from(&mut buffer) else {
                    continue;
                };
                let Ok(query) = Message::from_vec(&buffer[..len]) else {
                    continue;
                };
                let Some(question) = query.queries.first().cloned() else {
                    continue;
                };
                let name = question.name().to_ascii().to_ascii_lowercase();
                let qtype = question.query_type();
                log.lock().unwrap().push((name.clone(), qtype));
                if lost.contains(&(name.clone(), qtype)) {
                    continue;
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
                if let Ok(bytes) = reply.to_vec() {
                    let _ = socket.send_to(&bytes, peer);
                }
            }
        });
        Self {
            addr,
            stop,
            asked,
            thread: Some(thread),
        }
    }

    /// Every question asked, in order.
    pub fn asked(&self) -> Vec<(String, RecordType)> {
        self.asked.lock().unwrap().clone()
    }
}

impl Drop for NamesUpstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
