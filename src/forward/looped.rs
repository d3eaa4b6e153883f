//! Forwarding loops without the *loop* plugin: every question in flight to an upstream is
//! noted with the upstream's address, and a query that arrives *from* that address with the
//! same question while it is in flight is the query coming back — two servers forwarding
//! to each other. It is answered SERVFAIL at once instead of going round until
//! `max_concurrent` or the deadline stops it. Two clients asking the same name is not a
//! loop: only a query from the upstream's own address matches.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::wire::HEADER_LEN;

/// The upstream's address (canonical: an IPv4-mapped IPv6 address is the IPv4 one) and the
/// question: the lower-case name in wire format, then type and class.
type Key = (IpAddr, Vec<u8>);

/// The questions in flight, with how many times each.
static IN_FLIGHT: LazyLock<Mutex<HashMap<Key, usize>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));
/// How many entries [`IN_FLIGHT`] has, read without the lock (most of the time: none that
/// could match).
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// When a loop was last logged (Unix seconds).
static LOGGED: AtomicU64 = AtomicU64::new(0);

/// A question in flight to an upstream; forgotten when dropped.
#[derive(Debug)]
pub(super) struct InFlight(Option<Key>);

/// Notes that the question of `query` (the first `question_end` bytes hold its header and
/// question) goes to `upstream` now.
pub(super) fn note(upstream: IpAddr, query: &[u8], question_end: usize) -> InFlight {
    let Some(question) = query.get(HEADER_LEN..question_end) else {
        return InFlight(None);
    };
    let name_len = question.len().saturating_sub(4);
    let mut lower = Vec::with_capacity(question.len());
    lower.extend(question[..name_len].iter().map(u8::to_ascii_lowercase));
    lower.extend_from_slice(&question[name_len..]);
    let key = (upstream.to_canonical(), lower);
    let mut map = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
    *map.entry(key.clone()).or_insert(0) += 1;
    COUNT.store(map.len(), Ordering::Relaxed);
    InFlight(Some(key))
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let Some(key) = self.0.take() else { return };
        let mut map = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = map.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                map.remove(&key);
            }
        }
        COUNT.store(map.len(), Ordering::Relaxed);
    }
}

/// Whether a query from `client` for `qname` (lower-case wire format), `qtype`, `qclass`
/// is one this server is forwarding to `client` right now: a forwarding loop. Logged (at
/// most once a minute) when it is.
pub fn is_looping(client: IpAddr, qname: &[u8], qtype: u16, qclass: u16) -> bool {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let mut question = Vec::with_capacity(qname.len() + 4);
    question.extend_from_slice(qname);
    question.extend_from_slice(&qtype.to_be_bytes());
    question.extend_from_slice(&qclass.to_be_bytes());
    let key = (client.to_canonical(), question);
    let looping = IN_FLIGHT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains_key(&key);
    if looping {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let last = LOGGED.load(Ordering::Relaxed);
        if now >= last + 60
            && LOGGED
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::error!(
                "forwarding loop: a query for {} (type {qtype}) came back from the upstream \
                 {client} while this server was forwarding it there; answered SERVFAIL. The \
                 upstream forwards to this server: point forward at resolvers that do not.",
                dotted(qname)
            );
        }
    }
    looping
}

/// A wire-format name as text, for the log.
fn dotted(name: &[u8]) -> String {
    let mut text = String::new();
    let mut at = 0;
    while let Some(&len) = name.get(at) {
        let len = usize::from(len);
        if len == 0 || len > 63 {
            break;
        }
        let label = name.get(at + 1..at + 1 + len).unwrap_or_default();
        text.push_str(&String::from_utf8_lossy(label));
        text.push('.');
        at += 1 + len;
    }
    if text.is_empty() {
        text.push('.');
    }
    text
}
