//! glibc's search walk (`getaddrinfo` and `res_search`).
//!
//! **glibc** (2.26 and later; `resolv/res_query.c` `__res_context_search`,
//! `__res_context_query`, `resolv/res_send.c` `send_dg`; nss_dns asks A and AAAA together):
//!
//! - A name ending in a dot is asked as it is, once, whatever the answer.
//! - A name with at least `ndots` dots is asked as it is first; if that does not answer, the
//!   search list follows, and the name is not asked again at the end.
//! - Otherwise every search domain is appended in turn, then the name is asked as it is last
//!   (unless a search domain is the root, or the name has no dot and `no-tld-query` is set).
//! - A step *answers* when A or AAAA has at least one record. NXDOMAIN and NODATA continue the
//!   walk; so does SERVFAIL (after every attempt on every nameserver failed); REFUSED, NOTIMP
//!   or a timeout end the search list, but the name as typed is still tried if it was not.
//!   When A and AAAA disagree, the answer that is not SERVFAIL/REFUSED/NOTIMP counts; between
//!   NXDOMAIN and NODATA, NXDOMAIN wins.
//! - A and AAAA go out together (`sendmmsg`) and are waited for together; with
//!   `single-request` AAAA is sent after A's reply, on the same socket; with
//!   `single-request-reopen`, on a new one. A SERVFAIL, REFUSED or NOTIMP for both is retried
//!   on every nameserver, `attempts` times. Under `single-request(-reopen)` such a reply to A
//!   leaves AAAA unsent and the next try goes out at once, on a new socket (glibc 2.36 as
//!   Debian ships it, checked with a server that answers SERVFAIL).
//! - When one reply of the pair never arrives and the other did, glibc does not give up on
//!   it: after the timeout it switches the *process* to `single-request` and asks both again
//!   (same nameserver, a fresh timeout); after the next timeout, to `single-request-reopen`,
//!   and asks again; after a third, it returns the reply it has. The switches stay for the
//!   rest of the process (`statp->options`), so later names start in that mode. If it is A's
//!   reply that is missing, in `single-request` mode AAAA is never sent again and the try
//!   fails (each later try waits out its timeout for A).
//! - `options no-aaaa` (glibc 2.36) asks A only.
//! - Timeouts: the k-th nameserver (from 0) is given `timeout << k` seconds, divided by the
//!   number of nameservers for k > 0 (at least 1 s); `attempts` rounds over all of them.
//! - Caps: `ndots` 15, `timeout` 30, `attempts` 5.
//!
//! **res_search** (a lookup of one type: SRV, PTR, TXT, MX, ...; what `host -t SRV` and
//! client libraries call): glibc's `res_nsearch` is the same `__res_context_search` walk as
//! above with that one type (one query per name, no A/AAAA pair), and it fails with `h_errno`
//! (HOST_NOT_FOUND, NO_DATA when a name answered NODATA, TRY_AGAIN on SERVFAIL) instead of an
//! `EAI_*` code. musl's `res_search` is a weak alias of `res_query`: the name as given, one
//! query, never the search list (`src/network/res_query.c`).

use super::*;

/// glibc's timeout for the k-th nameserver (from 0), milliseconds: `timeout << k` seconds,
/// divided by the number of nameservers for k > 0, at least one second.
pub(super) fn timeout_ms(config: &StubConfig, ns: usize) -> u64 {
    let mut seconds = u64::from(config.timeout) << ns;
    if ns > 0 {
        seconds /= config.nameservers as u64;
    }
    seconds.max(1) * 1000
}

/// What glibc's `h_errno` says after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Herrno {
    Found,
    HostNotFound,
    NoData,
    /// TRY_AGAIN; `true` when the reply kept was a SERVFAIL (the search goes on).
    TryAgain(bool),
    NoRecovery,
}

/// glibc's `__res_context_search` walk of `name` for `qtypes`, asking `answerer`, into `walk`.
pub(super) fn walk(
    config: &StubConfig,
    name: &str,
    qtypes: &[Qtype],
    answerer: &mut dyn Answerer,
    walk: &mut Walk,
) {
    let dots = name.matches('.').count();
    let trailing = name.ends_with('.');
    let mut step = |qname: String, walk: &mut Walk| -> Herrno {
        let (step, herrno) = glibc_step(config, qname, qtypes, answerer, &mut walk.send_mode_after);
        walk.steps.push(step);
        herrno
    };
    let mut tried_as_is = false;
    let mut saved = None;
    if dots >= config.ndots as usize || trailing {
        let herrno = step(join(name, None), walk);
        if herrno == Herrno::Found || trailing {
            finish_glibc(walk, herrno);
            return;
        }
        saved = Some(herrno);
        tried_as_is = true;
    }
    let mut searched = false;
    let mut root_on_list = false;
    let mut got_nodata = false;
    let mut got_servfail = false;
    let mut last = Herrno::HostNotFound;
    if !trailing {
        for domain in &config.search {
            searched = true;
            let domain = domain.strip_prefix('.').unwrap_or(domain);
            if domain.is_empty() {
                root_on_list = true;
            }
            let herrno = step(join(name, Some(domain)), walk);
            last = herrno;
            match herrno {
                Herrno::Found => {
                    finish_glibc(walk, herrno);
                    return;
                }
                Herrno::NoData => got_nodata = true,
                Herrno::HostNotFound => {}
                Herrno::TryAgain(true) => got_servfail = true,
                Herrno::TryAgain(false) | Herrno::NoRecovery => break,
            }
        }
    }
    let tld_allowed = dots > 0 || !searched || !config.no_tld_query;
    if tld_allowed && !tried_as_is && !root_on_list {
        let herrno = step(join(name, None), walk);
        if herrno == Herrno::Found {
            finish_glibc(walk, herrno);
            return;
        }
        last = herrno;
    }
    let final_herrno = saved.unwrap_or(if got_nodata {
        Herrno::NoData
    } else if got_servfail {
        Herrno::TryAgain(true)
    } else {
        last
    });
    finish_glibc(walk, final_herrno);
}

fn finish_glibc(walk: &mut Walk, herrno: Herrno) {
    if let Call::ResSearch { .. } = walk.call {
        // res_search returns -1 and leaves the reason in h_errno.
        walk.error = match herrno {
            Herrno::Found => None,
            Herrno::HostNotFound => Some("HOST_NOT_FOUND".to_owned()),
            Herrno::NoData => Some("NO_DATA".to_owned()),
            Herrno::TryAgain(_) => Some("TRY_AGAIN".to_owned()),
            Herrno::NoRecovery => Some("NO_RECOVERY".to_owned()),
        };
        return;
    }
    walk.error = match herrno {
        Herrno::Found => None,
        // getaddrinfo: HOST_NOT_FOUND is EAI_NONAME; NO_DATA (the name exists, without
        // addresses) is EAI_NODATA; TRY_AGAIN is EAI_AGAIN.
        Herrno::HostNotFound => Some("EAI_NONAME".to_owned()),
        Herrno::NoData => Some("EAI_NODATA".to_owned()),
        Herrno::TryAgain(_) => Some("EAI_AGAIN".to_owned()),
        Herrno::NoRecovery => Some("EAI_FAIL".to_owned()),
    };
}

/// What glibc makes of one reply in `send_dg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An answer it keeps (NOERROR, NXDOMAIN, ...).
    Kept,
    /// SERVFAIL, REFUSED or NOTIMP: the next server is tried.
    Rejected,
    /// Nothing came back.
    Lost,
}

fn kind(reply: &Reply) -> Kind {
    match reply.rcode {
        None => Kind::Lost,
        Some(_) if reply.rejected() => Kind::Rejected,
        Some(_) => Kind::Kept,
    }
}

/// What glibc does for one step: `send_dg` on each nameserver, `attempts` rounds.
struct Exchanges<'a> {
    kinds: &'a [Kind],
    /// A's rcode, for the notes.
    a_rcode: &'static str,
    tally: Tally,
}

impl Exchanges<'_> {
    fn send(&mut self, index: usize) {
        self.tally.sent[index] += 1;
        self.tally.round_trips += 1;
    }

    /// One `send_dg` call on a nameserver given `timeout` ms, in `mode`: the replies kept
    /// when it returns an answer, `None` when the next server is to be tried.
    fn send_dg(&mut self, mode: &mut SendMode, timeout: u64) -> Option<Vec<usize>> {
        if self.kinds.len() == 1 {
            self.send(0);
            return match self.kinds[0] {
                Kind::Kept => Some(vec![0]),
                Kind::Rejected => None,
                Kind::Lost => {
                    self.tally.waited_ms += timeout;
                    None
                }
            };
        }
        let seconds = timeout / 1000;
        loop {
            if *mode == SendMode::Parallel {
                self.tally.sent[0] += 1;
                self.tally.sent[1] += 1;
                self.tally.round_trips += 1;
                match (self.kinds[0], self.kinds[1]) {
                    (Kind::Kept, Kind::Kept) => return Some(vec![0, 1]),
                    (Kind::Kept, Kind::Rejected) => return Some(vec![0]),
                    (Kind::Rejected, Kind::Kept) => return Some(vec![1]),
                    (Kind::Rejected, Kind::Rejected) => return None,
                    (Kind::Kept, Kind::Lost) | (Kind::Lost, Kind::Kept) => {
                        let (lost, had) = if self.kinds[0] == Kind::Lost {
                            (Qtype::A, Qtype::Aaaa)
                        } else {
                            (Qtype::Aaaa, Qtype::A)
                        };
                        self.tally.waited_ms += timeout;
                        *mode = SendMode::SingleRequest;
                        self.tally.notes.push(format!(
                            "no {lost} reply in {seconds} s with {had}'s in hand: glibc switches \
                             the process to single-request and asks again"
                        ));
                        continue;
                    }
                    _ => {
                        self.tally.waited_ms += timeout;
                        return None;
                    }
                }
            }
            // single-request(-reopen): A first, AAAA after A's reply.
            self.send(0);
            match self.kinds[0] {
                Kind::Lost => {
                    self.tally.waited_ms += timeout;
                    return None;
                }
                Kind::Rejected => {
                    let note = format!(
                        "{} for A under {mode}: AAAA is not sent; the next try goes out at \
                         once, on a new socket",
                        self.a_rcode
                    );
                    if !self.tally.notes.contains(&note) {
                        self.tally.notes.push(note);
                    }
                    return None;
                }
                Kind::Kept => {}
            }
            self.send(1);
            match self.kinds[1] {
                Kind::Kept => return Some(vec![0, 1]),
                Kind::Rejected => return Some(vec![0]),
                Kind::Lost => {
                    self.tally.waited_ms += timeout;
                    if *mode == SendMode::SingleRequest {
                        *mode = SendMode::SingleRequestReopen;
                        self.tally.notes.push(format!(
                            "no AAAA reply in {seconds} s under single-request: glibc switches \
                             the process to single-request-reopen and asks again"
                        ));
                        continue;
                    }
                    self.tally.notes.push(format!(
                        "no AAAA reply in {seconds} s under single-request-reopen: glibc \
                         returns A's reply alone"
                    ));
                    return Some(vec![0]);
                }
            }
        }
    }
}

/// One glibc step: `__res_context_query` over `send_dg`, in the process's `mode` (which a
/// lost reply switches).
fn glibc_step(
    config: &StubConfig,
    name: String,
    qtypes: &[Qtype],
    answerer: &mut dyn Answerer,
    mode: &mut SendMode,
) -> (Attempt, Herrno) {
    let replies: Vec<Reply> = qtypes.iter().map(|&q| answerer.ask(&name, q)).collect();
    let kinds: Vec<Kind> = replies.iter().map(kind).collect();
    let mut exchanges = Exchanges {
        kinds: &kinds,
        a_rcode: replies
            .first()
            .and_then(|r| r.rcode)
            .map_or("no reply", crate::wire::rcode_name),
        tally: Tally::new(replies.len()),
    };
    let mut kept: Option<Vec<usize>> = None;
    'tries: for _ in 0..config.attempts {
        for ns in 0..config.nameservers {
            let timeout = timeout_ms(config, ns);
            if let Some(answer) = exchanges.send_dg(mode, timeout) {
                kept = Some(answer);
                break 'tries;
            }
        }
    }
    let Exchanges { tally, .. } = exchanges;
    let herrno = match &kept {
        None => {
            // Every try failed: the search goes on only if the reply left in the answer
            // buffer is a SERVFAIL (a kept reply of a pair whose other half was lost stays
            // there).
            let received: Vec<&Reply> = replies
                .iter()
                .zip(&tally.sent)
                .filter(|(r, sent)| **sent > 0 && r.rcode.is_some())
                .map(|(r, _)| r)
                .collect();
            let buffer = received
                .iter()
                .find(|r| kind(r) == Kind::Kept)
                .or_else(|| received.first());
            Herrno::TryAgain(buffer.is_some_and(|r| r.rcode == Some(rcode::SERVFAIL)))
        }
        Some(kept) if kept.iter().any(|&i| replies[i].has_records()) => Herrno::Found,
        Some(kept) => {
            // __res_context_query: the first reply's rcode unless it is NOERROR.
            let first = replies[kept[0]].rcode.unwrap_or(rcode::SERVFAIL);
            let second = kept.last().and_then(|&i| replies[i].rcode).unwrap_or(first);
            match if first == rcode::NOERROR {
                second
            } else {
                first
            } {
                rcode::NXDOMAIN => Herrno::HostNotFound,
                rcode::NOERROR => Herrno::NoData,
                _ => Herrno::NoRecovery,
            }
        }
    };
    let verdict = match herrno {
        Herrno::Found => Decision::Answer,
        Herrno::HostNotFound | Herrno::NoData | Herrno::TryAgain(true) => Decision::Continue,
        Herrno::TryAgain(false) | Herrno::NoRecovery => Decision::Stop,
    };
    (tally.step(name, qtypes, replies, verdict), herrno)
}
