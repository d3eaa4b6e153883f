//! musl's search walk (`getaddrinfo`, and `res_search` as `res_query`).
//!
//! **musl** (1.2.3, Debian's and Alpine 3.17's; `src/network/lookup_name.c`
//! `name_from_dns_search`, `src/network/res_msend.c`):
//!
//! - A name ending in a dot, or with at least `ndots` dots, is asked as it is only: musl never
//!   applies the search list to it.
//! - Otherwise every search domain in turn (a domain that would make the name longer than 254
//!   characters is skipped), then the name as it is.
//! - The walk continues only on NXDOMAIN (A's answer looked at first, then AAAA's): NODATA ends
//!   it ("no address"), and so do SERVFAIL and no reply.
//! - A and AAAA always go out together, to every nameserver at once. A SERVFAIL is asked again
//!   at once (at most twice per query per round); REFUSED and other codes are ignored, so
//!   such a query waits out the whole `timeout`, retried every `timeout / attempts`.
//! - musl reads resolv.conf its own way: keywords must start the line, a line longer than 254
//!   characters is skipped whole (a long `search` line is lost), only `ndots`, `attempts` and
//!   `timeout` options exist (caps 15, 10, 60).

use super::*;

/// How many times musl sends an unanswered query: at 0, `interval`, 2 `interval`, ... while
/// under `timeout`, with `interval = timeout / attempts` in milliseconds.
fn rounds(config: &StubConfig) -> u32 {
    let timeout = u64::from(config.timeout) * 1000;
    let interval = (timeout / u64::from(config.attempts.max(1))).max(1);
    u32::try_from(timeout.div_ceil(interval))
        .unwrap_or(u32::MAX)
        .max(1)
}

/// musl's `name_from_dns_search` walk of `name` for `qtypes`, asking `answerer`, into `walk`.
pub(super) fn walk(
    config: &StubConfig,
    name: &str,
    qtypes: &[Qtype],
    answerer: &mut dyn Answerer,
    walk: &mut Walk,
) {
    let dots = name.matches('.').count();
    let trailing = name.ends_with('.');
    let bare = name.strip_suffix('.').unwrap_or(name);
    if bare.is_empty() || bare.ends_with('.') {
        walk.error = Some("EAI_NONAME".to_owned());
        return;
    }
    let search: &[String] = if dots >= config.ndots as usize || trailing {
        &[]
    } else {
        &config.search
    };
    for domain in search {
        // canon[] holds 256 bytes: the name, a dot, the domain and a NUL.
        if domain.len() >= 256 - bare.len() - 1 {
            continue;
        }
        let (step, result) = musl_step(config, join(bare, Some(domain)), qtypes, answerer);
        walk.steps.push(step);
        if let Some(error) = result {
            walk.error = error;
            return;
        }
    }
    let (step, result) = musl_step(config, join(bare, None), qtypes, answerer);
    walk.steps.push(step);
    walk.error = match result {
        Some(error) => error,
        None => Some("EAI_NONAME".to_owned()),
    };
}

/// One musl step (`name_from_dns` over `__res_msend_rc`). `None`: NXDOMAIN, the walk goes
/// on; `Some(None)`: addresses; `Some(Some(error))`: the walk ends with `error`.
#[allow(clippy::option_option)]
fn musl_step(
    config: &StubConfig,
    name: String,
    qtypes: &[Qtype],
    answerer: &mut dyn Answerer,
) -> (Attempt, Option<Option<String>>) {
    let replies: Vec<Reply> = qtypes.iter().map(|&q| answerer.ask(&name, q)).collect();
    let accepted = |r: &Reply| matches!(r.rcode, Some(rcode::NOERROR | rcode::NXDOMAIN));
    let nns = config.nameservers as u32;
    let mut tally = Tally::new(replies.len());
    tally.round_trips = 1;
    if replies.iter().all(accepted) {
        // Every nameserver is asked; the first reply for each query is taken.
        tally.sent.iter_mut().for_each(|s| *s = nns);
    } else {
        // Rounds every timeout/attempts until the timeout: each unaccepted query goes to every
        // nameserver; SERVFAIL replies are re-sent at once while the round's budget (two per
        // query) lasts.
        tally.waited_ms = u64::from(config.timeout) * 1000;
        let rounds = rounds(config);
        tally.round_trips = rounds;
        for (index, reply) in replies.iter().enumerate() {
            tally.sent[index] = if accepted(reply) { nns } else { nns * rounds };
        }
        let servfails: Vec<usize> = (0..replies.len())
            .filter(|&i| replies[i].rcode == Some(rcode::SERVFAIL))
            .collect();
        if !servfails.is_empty() {
            for _ in 0..rounds {
                // The replies of a round come back in send order; each SERVFAIL is re-sent
                // (and SERVFAILs again) while the budget lasts.
                let mut budget = 2 * replies.len() as u32;
                let mut queue: Vec<usize> = servfails
                    .iter()
                    .flat_map(|&i| std::iter::repeat_n(i, nns as usize))
                    .collect();
                let mut at = 0;
                while at < queue.len() {
                    if budget > 0 {
                        budget -= 1;
                        tally.sent[queue[at]] += 1;
                        queue.push(queue[at]);
                    }
                    at += 1;
                }
            }
        }
    }
    // name_from_dns: A's reply first, then AAAA's.
    let mut result: Option<Option<String>> = Some(None);
    let mut decided = false;
    for reply in &replies {
        if !accepted(reply) {
            result = Some(Some("EAI_AGAIN".to_owned()));
            decided = true;
            break;
        }
        if reply.rcode == Some(rcode::NXDOMAIN) {
            result = None;
            decided = true;
            break;
        }
    }
    if !decided && !replies.iter().any(Reply::has_records) {
        result = Some(Some("EAI_NONAME".to_owned()));
    }
    let verdict = match &result {
        None => Decision::Continue,
        Some(None) => Decision::Answer,
        Some(Some(_)) => Decision::Stop,
    };
    (tally.step(name, qtypes, replies, verdict), result)
}

/// musl's `res_search`, a weak alias of `res_query` (`src/network/res_query.c`): the name as
/// given (`__res_mkquery` drops a final dot), one query through `__res_send`; no reply, or a
/// reply other than NOERROR/NXDOMAIN, is TRY_AGAIN; NXDOMAIN is HOST_NOT_FOUND; NOERROR
/// without answers is NO_DATA.
pub(super) fn res_query(
    config: &StubConfig,
    name: &str,
    qtypes: &[Qtype],
    answerer: &mut dyn Answerer,
    walk: &mut Walk,
) {
    let bare = name.strip_suffix('.').unwrap_or(name);
    if bare.is_empty() || bare.ends_with('.') {
        // __res_mkquery refuses the name: -1, h_errno untouched.
        walk.error = Some("NO_RECOVERY".to_owned());
        return;
    }
    let (mut step, _) = musl_step(config, join(bare, None), qtypes, answerer);
    let reply = step.queries.first().map(|q| &q.reply);
    walk.error = match reply.and_then(|r| r.rcode) {
        Some(rcode::NXDOMAIN) => Some("HOST_NOT_FOUND".to_owned()),
        Some(rcode::NOERROR) if reply.is_some_and(Reply::has_records) => None,
        Some(rcode::NOERROR) => Some("NO_DATA".to_owned()),
        _ => Some("TRY_AGAIN".to_owned()),
    };
    // One name: there is no walk to go on with or stop early.
    step.verdict = if walk.error.is_none() {
        Decision::Answer
    } else {
        Decision::Continue
    };
    walk.steps.push(step);
}
