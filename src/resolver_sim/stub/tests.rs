#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use super::*;
use crate::config::parse_resolv_conf;

type Replies = [(Option<u16>, u16); 2];

/// Replies by name: (A rcode, A records, AAAA rcode, AAAA records); NXDOMAIN otherwise. Any
/// other type (SRV, PTR, ...) gets the first reply.
struct Fake {
    names: HashMap<String, Replies>,
    asked: Vec<(String, Qtype)>,
}

const OK: (Option<u16>, u16) = (Some(rcode::NOERROR), 1);
const NODATA: (Option<u16>, u16) = (Some(rcode::NOERROR), 0);
const NX: (Option<u16>, u16) = (Some(rcode::NXDOMAIN), 0);
const SERVFAIL: (Option<u16>, u16) = (Some(rcode::SERVFAIL), 0);
const REFUSED: (Option<u16>, u16) = (Some(rcode::REFUSED), 0);
const SILENT: (Option<u16>, u16) = (None, 0);

impl Fake {
    fn new(names: &[(&str, Replies)]) -> Self {
        Self {
            names: names
                .iter()
                .map(|(name, replies)| ((*name).to_owned(), *replies))
                .collect(),
            asked: Vec::new(),
        }
    }
}

impl Answerer for Fake {
    fn ask(&mut self, name: &str, qtype: Qtype) -> Reply {
        self.asked.push((name.to_owned(), qtype));
        let (rcode, answers) = self
            .names
            .get(name)
            .map_or(NX, |r| r[usize::from(qtype == Qtype::Aaaa)]);
        Reply {
            rcode,
            answers,
            source: Source::Cluster,
        }
    }
}

const SHOP: &str = "search shop.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n";

fn config(libc: Libc, text: &str) -> StubConfig {
    match libc {
        Libc::Glibc => StubConfig::glibc(&parse_resolv_conf(text).unwrap()),
        Libc::Musl => StubConfig::musl(text),
    }
}

/// The walk of `name` for both families, `libc` reading `conf`.
fn walk_both(libc: Libc, conf: &str, name: &str, fake: &mut Fake) -> Walk {
    super::walk(libc, &config(libc, conf), name, Families::Both, fake)
}

fn names(walk: &Walk) -> Vec<&str> {
    walk.steps.iter().map(|s| s.name.as_str()).collect()
}

/// The seed lesson's figures: from `shop`, `api.partner.example.com` is four names, three of
/// them NXDOMAIN, eight queries; with a trailing dot, one name.
#[test]
fn the_seed_figures() {
    for libc in [Libc::Glibc, Libc::Musl] {
        let mut fake = Fake::new(&[("api.partner.example.com.", [OK, OK])]);
        let walk = walk_both(libc, SHOP, "api.partner.example.com", &mut fake);
        assert_eq!(
            names(&walk),
            [
                "api.partner.example.com.shop.svc.cluster.local.",
                "api.partner.example.com.svc.cluster.local.",
                "api.partner.example.com.cluster.local.",
                "api.partner.example.com.",
            ],
            "{libc}"
        );
        let totals = walk.totals();
        assert_eq!(
            (
                totals.names,
                totals.nxdomain_names,
                totals.queries,
                totals.nxdomain_queries
            ),
            (4, 3, 8, 6),
            "{libc}"
        );
        assert_eq!(totals.round_trips, 4);
        assert_eq!(
            walk.answered_by.as_deref(),
            Some("api.partner.example.com.")
        );
        // In order, A then AAAA for each name.
        assert_eq!(
            fake.asked[0],
            (
                "api.partner.example.com.shop.svc.cluster.local.".to_owned(),
                Qtype::A
            )
        );
        assert_eq!(fake.asked[1].1, Qtype::Aaaa);

        let walk = walk_both(libc, SHOP, "api.partner.example.com.", &mut fake);
        assert_eq!(names(&walk), ["api.partner.example.com."]);
        assert_eq!(walk.totals().queries, 2);
    }
}

/// One walk: what it shows, the libc and its resolv.conf, the name asked, the replies by
/// name, the names it tries and the error it ends with.
struct Case {
    what: &'static str,
    libc: Libc,
    conf: &'static str,
    name: &'static str,
    replies: &'static [(&'static str, Replies)],
    tried: &'static [&'static str],
    error: Option<&'static str>,
}

#[test]
fn walks() {
    let cases = [
        Case {
            what: "short cluster name: first search domain answers",
            libc: Libc::Glibc,
            conf: SHOP,
            name: "web",
            replies: &[("web.shop.svc.cluster.local.", [OK, NODATA])],
            tried: &["web.shop.svc.cluster.local."],
            error: None,
        },
        Case {
            what: "namespaced name: second search domain",
            libc: Libc::Musl,
            conf: SHOP,
            name: "web.payments",
            replies: &[("web.payments.svc.cluster.local.", [OK, NODATA])],
            tried: &[
                "web.payments.shop.svc.cluster.local.",
                "web.payments.svc.cluster.local.",
            ],
            error: None,
        },
        Case {
            what: "an FQDN without its dot costs four names",
            libc: Libc::Glibc,
            conf: SHOP,
            name: "web.shop.svc.cluster.local",
            replies: &[("web.shop.svc.cluster.local.", [OK, NODATA])],
            tried: &[
                "web.shop.svc.cluster.local.shop.svc.cluster.local.",
                "web.shop.svc.cluster.local.svc.cluster.local.",
                "web.shop.svc.cluster.local.cluster.local.",
                "web.shop.svc.cluster.local.",
            ],
            error: None,
        },
        Case {
            what: "glibc: five dots go as-is first, then the search list, not as-is again",
            libc: Libc::Glibc,
            conf: SHOP,
            name: "a.b.c.d.e.f",
            replies: &[],
            tried: &[
                "a.b.c.d.e.f.",
                "a.b.c.d.e.f.shop.svc.cluster.local.",
                "a.b.c.d.e.f.svc.cluster.local.",
                "a.b.c.d.e.f.cluster.local.",
            ],
            error: Some("EAI_NONAME"),
        },
        Case {
            what: "musl: five dots go as-is only",
            libc: Libc::Musl,
            conf: SHOP,
            name: "a.b.c.d.e.f",
            replies: &[],
            tried: &["a.b.c.d.e.f."],
            error: Some("EAI_NONAME"),
        },
        Case {
            what: "glibc: as-is first answers",
            libc: Libc::Glibc,
            conf: SHOP,
            name: "a.b.c.d.e.f",
            replies: &[("a.b.c.d.e.f.", [OK, OK])],
            tried: &["a.b.c.d.e.f."],
            error: None,
        },
        Case {
            what: "glibc: NODATA continues the walk",
            libc: Libc::Glibc,
            conf: SHOP,
            name: "shop",
            replies: &[("shop.svc.cluster.local.", [NODATA, NODATA])],
            tried: &[
                "shop.shop.svc.cluster.local.",
                "shop.svc.cluster.local.",
                "shop.cluster.local.",
                "shop.",
            ],
            // The name exists without addresses: getaddrinfo says EAI_NODATA ("No address
            // associated with hostname"), as glibc 2.36 does.
            error: Some("EAI_NODATA"),
        },
        Case {
            what: "glibc: a name asked as is that is NODATA ends in EAI_NODATA",
            libc: Libc::Glibc,
            conf: SHOP,
            name: "shop.svc.cluster.local.",
            replies: &[("shop.svc.cluster.local.", [NODATA, NODATA])],
            tried: &["shop.svc.cluster.local."],
            error: Some("EAI_NODATA"),
        },
        Case {
            what: "musl: NODATA ends the walk",
            libc: Libc::Musl,
            conf: SHOP,
            name: "shop",
            replies: &[("shop.svc.cluster.local.", [NODATA, NODATA])],
            tried: &["shop.shop.svc.cluster.local.", "shop.svc.cluster.local."],
            error: Some("EAI_NONAME"),
        },
        Case {
            what: "glibc: SERVFAIL continues the walk",
            libc: Libc::Glibc,
            conf: SHOP,
            name: "x.y",
            replies: &[
                ("x.y.shop.svc.cluster.local.", [SERVFAIL, SERVFAIL]),
                ("x.y.", [OK, OK]),
            ],
            tried: &[
                "x.y.shop.svc.cluster.local.",
                "x.y.svc.cluster.local.",
                "x.y.cluster.local.",
                "x.y.",
            ],
            error: None,
        },
        Case {
            what: "musl: SERVFAIL ends the walk",
            libc: Libc::Musl,
            conf: SHOP,
            name: "x.y",
            replies: &[
                ("x.y.shop.svc.cluster.local.", [SERVFAIL, SERVFAIL]),
                ("x.y.", [OK, OK]),
            ],
            tried: &["x.y.shop.svc.cluster.local."],
            error: Some("EAI_AGAIN"),
        },
        Case {
            what: "glibc: REFUSED ends the search list, the name is still tried as typed",
            libc: Libc::Glibc,
            conf: SHOP,
            name: "x.y",
            replies: &[
                ("x.y.shop.svc.cluster.local.", [REFUSED, REFUSED]),
                ("x.y.", [OK, OK]),
            ],
            tried: &["x.y.shop.svc.cluster.local.", "x.y."],
            error: None,
        },
        Case {
            what: "glibc: an AAAA SERVFAIL is dropped when A answers",
            libc: Libc::Glibc,
            conf: SHOP,
            name: "web",
            replies: &[("web.shop.svc.cluster.local.", [OK, SERVFAIL])],
            tried: &["web.shop.svc.cluster.local."],
            error: None,
        },
        Case {
            what: "glibc: records for one family answer, whatever the other says",
            libc: Libc::Glibc,
            conf: SHOP,
            name: "odd.example",
            replies: &[("odd.example.shop.svc.cluster.local.", [NX, OK])],
            tried: &["odd.example.shop.svc.cluster.local."],
            error: None,
        },
        Case {
            what: "musl: A's NXDOMAIN is read first and the walk goes on",
            libc: Libc::Musl,
            conf: SHOP,
            name: "odd.example",
            replies: &[
                ("odd.example.shop.svc.cluster.local.", [NX, OK]),
                ("odd.example.", [OK, OK]),
            ],
            tried: &[
                "odd.example.shop.svc.cluster.local.",
                "odd.example.svc.cluster.local.",
                "odd.example.cluster.local.",
                "odd.example.",
            ],
            error: None,
        },
        Case {
            what: "glibc: no-tld-query skips a bare name as typed",
            libc: Libc::Glibc,
            conf: "search a.example\noptions no-tld-query\n",
            name: "host",
            replies: &[],
            tried: &["host.a.example."],
            error: Some("EAI_NONAME"),
        },
        Case {
            what: "glibc: a root search domain replaces the last try",
            libc: Libc::Glibc,
            conf: "search a.example .\n",
            name: "host",
            replies: &[],
            tried: &["host.a.example.", "host."],
            error: Some("EAI_NONAME"),
        },
        Case {
            what: "ndots:1 (the libcs' default): one dot goes as-is first",
            libc: Libc::Glibc,
            conf: "search a.example\n",
            name: "host.corp",
            replies: &[],
            tried: &["host.corp.", "host.corp.a.example."],
            error: Some("EAI_NONAME"),
        },
        Case {
            what: "no search list: only the name",
            libc: Libc::Musl,
            conf: "nameserver 1.1.1.1\n",
            name: "host",
            replies: &[],
            tried: &["host."],
            error: Some("EAI_NONAME"),
        },
        Case {
            what: "musl: a search line it cannot read",
            libc: Libc::Musl,
            // 260 characters: musl skips the line; glibc would use it.
            conf: "search aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.example ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc.example ddddddddddddddddddddddddddddddddddddddddddd.example\noptions ndots:5\n",
            name: "web",
            replies: &[],
            tried: &["web."],
            error: Some("EAI_NONAME"),
        },
        Case {
            what: "musl: two trailing dots are refused before any query",
            libc: Libc::Musl,
            conf: SHOP,
            name: "web..",
            replies: &[],
            tried: &[],
            error: Some("EAI_NONAME"),
        },
    ];
    for Case {
        what,
        libc,
        conf,
        name,
        replies,
        tried,
        error,
    } in &cases
    {
        let mut fake = Fake::new(replies);
        let walk = walk_both(*libc, conf, name, &mut fake);
        assert_eq!(names(&walk), *tried, "{what}");
        assert_eq!(walk.error.as_deref(), *error, "{what}");
    }
}

#[test]
fn retries_and_waits() {
    let servfail = [("x.shop.svc.cluster.local.", [SERVFAIL, SERVFAIL])];
    // glibc, parallel: both rejected, retried on the one nameserver twice; no waiting.
    let walk = walk_both(Libc::Glibc, SHOP, "x", &mut Fake::new(&servfail));
    let first = &walk.steps[0];
    assert_eq!(
        (
            first.queries[0].sent,
            first.queries[1].sent,
            first.round_trips,
            first.waited_ms
        ),
        (2, 2, 2, 0)
    );
    // glibc, single-request(-reopen): A's SERVFAIL leaves AAAA unsent, and the next try goes
    // out at once on a new socket: no waiting (glibc 2.36: two A queries, 0 s).
    for option in ["single-request", "single-request-reopen"] {
        let single = format!("{SHOP}options {option}\n");
        let walk = walk_both(Libc::Glibc, &single, "x", &mut Fake::new(&servfail));
        let first = &walk.steps[0];
        assert_eq!(
            (
                first.queries[0].sent,
                first.queries[1].sent,
                first.round_trips,
                first.waited_ms
            ),
            (2, 0, 2, 0),
            "{option}"
        );
        assert_eq!(first.verdict, Decision::Continue, "{option}");
        assert!(
            first.notes[0].contains("at once, on a new socket"),
            "{option}"
        );
    }
    let single = format!("{SHOP}options single-request\n");
    // single-request doubles the round trips of a plain walk.
    let walk = walk_both(
        Libc::Glibc,
        &single,
        "api.partner.example.com",
        &mut Fake::new(&[]),
    );
    assert_eq!(walk.totals().round_trips, 8);
    // musl: each round sends both, SERVFAILs are re-sent at once (4 per round), 2 rounds,
    // and the whole timeout is waited.
    let walk = walk_both(Libc::Musl, SHOP, "x", &mut Fake::new(&servfail));
    let first = &walk.steps[0];
    assert_eq!(
        (
            first.queries[0].sent + first.queries[1].sent,
            first.waited_ms
        ),
        (12, 5000)
    );
    // musl: REFUSED is ignored, re-sent every timeout/attempts (attempts:3 → 4 rounds).
    let refused = [("x.shop.svc.cluster.local.", [REFUSED, OK])];
    let text = format!("{SHOP}options attempts:3\n");
    let walk = walk_both(Libc::Musl, &text, "x", &mut Fake::new(&refused));
    let first = &walk.steps[0];
    assert_eq!((first.queries[0].sent, first.queries[1].sent), (4, 1));
    assert_eq!(walk.error.as_deref(), Some("EAI_AGAIN"));
    // glibc, no reply at all: every attempt waits its timeout, the search list ends, the
    // name as typed is still asked.
    let silent = [
        ("x.y.shop.svc.cluster.local.", [SILENT, SILENT]),
        ("x.y.", [OK, OK]),
    ];
    let walk = walk_both(Libc::Glibc, SHOP, "x.y", &mut Fake::new(&silent));
    assert_eq!(names(&walk), ["x.y.shop.svc.cluster.local.", "x.y."]);
    assert_eq!(
        (walk.steps[0].queries[0].sent, walk.steps[0].waited_ms),
        (2, 10_000)
    );
    assert_eq!(walk.answered_by.as_deref(), Some("x.y."));
}

#[test]
fn options() {
    let text = "search a.example\nnameserver 10.0.0.1\nnameserver 10.0.0.2\nnameserver 10.0.0.3\nnameserver 10.0.0.4\noptions ndots:20 timeout:45 attempts:9 no-aaaa single-request-reopen\n";
    let glibc = config(Libc::Glibc, text);
    assert_eq!(
        (
            glibc.ndots,
            glibc.timeout,
            glibc.attempts,
            glibc.nameservers
        ),
        (15, 30, 5, 3)
    );
    assert_eq!(glibc.send_mode, SendMode::SingleRequestReopen);
    assert!(glibc.no_aaaa);
    let plain = config(Libc::Glibc, "options single-request\n");
    assert_eq!(plain.send_mode, SendMode::SingleRequest);
    assert_eq!(config(Libc::Glibc, SHOP).send_mode, SendMode::Parallel);
    let musl = config(Libc::Musl, text);
    assert_eq!(
        (musl.ndots, musl.timeout, musl.attempts, musl.nameservers),
        (15, 45, 9, 3)
    );
    assert!(musl.send_mode == SendMode::Parallel && !musl.no_aaaa);
    // no-aaaa: glibc asks A only.
    let walk = super::walk(
        Libc::Glibc,
        &glibc,
        "host",
        Families::Both,
        &mut Fake::new(&[]),
    );
    assert!(
        walk.steps
            .iter()
            .all(|s| s.queries.len() == 1 && s.queries[0].qtype == Qtype::A)
    );
    // musl: leading blanks hide a keyword; glibc reads it.
    let indented = "  search a.example\n";
    assert_eq!(config(Libc::Musl, indented).search, Vec::<String>::new());
    assert_eq!(config(Libc::Glibc, indented).search, ["a.example"]);
    // Budgets: glibc 2 attempts × (5 + 10/3 + 20/3) s over three nameservers; musl 5 s.
    let three = "nameserver 1.1.1.1\nnameserver 1.0.0.1\nnameserver 8.8.8.8\n";
    assert_eq!(
        step_budget_ms(Libc::Glibc, &config(Libc::Glibc, three)),
        28_000
    );
    assert_eq!(
        step_budget_ms(Libc::Glibc, &config(Libc::Glibc, SHOP)),
        10_000
    );
    assert_eq!(
        step_budget_ms(Libc::Musl, &config(Libc::Musl, three)),
        5_000
    );
}

/// One step's (A sent, AAAA sent, round trips, seconds waited).
fn counts(step: &Attempt) -> (u32, u32, u32, u64) {
    (
        step.queries[0].sent,
        step.queries[1].sent,
        step.round_trips,
        step.waited_ms / 1000,
    )
}

/// A lost AAAA reply, as glibc 2.36 handles it (recorded with `getaddrinfo` against a server
/// that never answers AAAA, `timeout:1 attempts:2`): the pair, a timeout; single-request,
/// both again, a timeout; single-request-reopen, both again, a timeout; A's addresses. The
/// process stays in single-request-reopen: its next lookup of that name waits once.
#[test]
fn a_lost_aaaa_reply_switches_the_process_to_single_request() {
    let conf = "nameserver 127.0.0.1\noptions timeout:1 attempts:2\n";
    let glibc = config(Libc::Glibc, conf);
    let lost = [("lost.example.", [OK, SILENT]), ("ok.example.", [OK, OK])];
    let walk = super::walk(
        Libc::Glibc,
        &glibc,
        "lost.example.",
        Families::Both,
        &mut Fake::new(&lost),
    );
    assert_eq!(walk.answered_by.as_deref(), Some("lost.example."));
    assert_eq!(counts(&walk.steps[0]), (3, 3, 5, 3));
    assert_eq!(walk.steps[0].notes.len(), 3, "{:?}", walk.steps[0].notes);
    assert_eq!(
        (walk.send_mode, walk.send_mode_after),
        (SendMode::Parallel, SendMode::SingleRequestReopen)
    );
    // The process's next names: one query after the other.
    let after = walk.send_mode_after;
    let next = walk_in(
        Libc::Glibc,
        &glibc,
        after,
        "ok.example.",
        Families::Both,
        &mut Fake::new(&lost),
    );
    assert_eq!(counts(&next.steps[0]), (1, 1, 2, 0));
    let again = walk_in(
        Libc::Glibc,
        &glibc,
        after,
        "lost.example.",
        Families::Both,
        &mut Fake::new(&lost),
    );
    assert_eq!(counts(&again.steps[0]), (1, 1, 2, 1));
    assert_eq!(again.answered_by.as_deref(), Some("lost.example."));
    // Starting in single-request: one switch, two timeouts.
    let single = config(Libc::Glibc, &format!("{conf}options single-request\n"));
    let walk = super::walk(
        Libc::Glibc,
        &single,
        "lost.example.",
        Families::Both,
        &mut Fake::new(&lost),
    );
    assert_eq!(counts(&walk.steps[0]), (2, 2, 4, 2));
    assert_eq!(walk.send_mode_after, SendMode::SingleRequestReopen);
    // A NODATA A with the AAAA lost: three timeouts, then NODATA, and the walk goes on.
    let nodata = [("web.shop.svc.cluster.local.", [NODATA, SILENT])];
    let walk = super::walk(
        Libc::Glibc,
        &config(
            Libc::Glibc,
            "search shop.svc.cluster.local\nnameserver 127.0.0.1\noptions timeout:1 attempts:2\n",
        ),
        "web",
        Families::Both,
        &mut Fake::new(&nodata),
    );
    assert_eq!(names(&walk), ["web.shop.svc.cluster.local.", "web."]);
    assert_eq!(counts(&walk.steps[0]), (3, 3, 5, 3));
    assert_eq!(walk.error.as_deref(), Some("EAI_NODATA"));
}

/// A lost A reply with AAAA's in hand (glibc 2.36, `timeout:1 attempts:2`): the pair, a
/// timeout; single-request sends A alone and waits again; the second try, A alone, a third
/// timeout; no addresses (EAI_AGAIN), and the process stays in single-request.
#[test]
fn a_lost_a_reply_loses_the_aaaa_answer_too() {
    let glibc = config(
        Libc::Glibc,
        "nameserver 127.0.0.1\noptions timeout:1 attempts:2\n",
    );
    let lost = [("lost.example.", [SILENT, OK])];
    let walk = super::walk(
        Libc::Glibc,
        &glibc,
        "lost.example.",
        Families::Both,
        &mut Fake::new(&lost),
    );
    assert_eq!(walk.answered_by, None);
    assert_eq!(walk.error.as_deref(), Some("EAI_AGAIN"));
    assert_eq!(counts(&walk.steps[0]), (3, 1, 3, 3));
    assert_eq!(walk.send_mode_after, SendMode::SingleRequest);
    let again = walk_in(
        Libc::Glibc,
        &glibc,
        walk.send_mode_after,
        "lost.example.",
        Families::Both,
        &mut Fake::new(&lost),
    );
    assert_eq!(counts(&again.steps[0]), (2, 0, 2, 2));
}

/// `res_search` (`host -t SRV`, a client library's SRV or PTR lookup): glibc walks the same
/// search list with the same ndots rule, one query of the type per name, and fails with
/// h_errno (not an EAI_* code).
#[test]
fn glibc_res_search_walks_the_search_list_with_one_query_per_name() {
    let glibc = config(Libc::Glibc, SHOP);
    let srv = "_http._tcp.web.shop.svc.cluster.local.";
    let mut fake = Fake::new(&[(srv, [OK, NX])]);
    let walk = super::res_search(Libc::Glibc, &glibc, "_http._tcp.web", Qtype::Srv, &mut fake);
    assert_eq!(names(&walk), [srv]);
    assert_eq!(walk.call, Call::ResSearch { qtype: Qtype::Srv });
    assert_eq!(fake.asked, [(srv.to_owned(), Qtype::Srv)]);
    assert_eq!(walk.steps[0].queries.len(), 1);
    assert_eq!(walk.answered_by.as_deref(), Some(srv));
    assert_eq!(walk.error, None);
    assert_eq!(walk.totals().queries, 1);

    // Nowhere: every search domain, then the name as typed; HOST_NOT_FOUND.
    let mut fake = Fake::new(&[]);
    let walk = super::res_search(Libc::Glibc, &glibc, "_ldap._tcp.dc", Qtype::Srv, &mut fake);
    assert_eq!(
        names(&walk),
        [
            "_ldap._tcp.dc.shop.svc.cluster.local.",
            "_ldap._tcp.dc.svc.cluster.local.",
            "_ldap._tcp.dc.cluster.local.",
            "_ldap._tcp.dc.",
        ]
    );
    assert!(fake.asked.iter().all(|(_, qtype)| *qtype == Qtype::Srv));
    assert_eq!(walk.error.as_deref(), Some("HOST_NOT_FOUND"));
    assert_eq!(walk.totals().queries, 4);

    // A name that answered NODATA on the way: NO_DATA at the end.
    let mut fake = Fake::new(&[("web.shop.svc.cluster.local.", [NODATA, NODATA])]);
    let walk = super::res_search(Libc::Glibc, &glibc, "web", Qtype::Srv, &mut fake);
    assert_eq!(names(&walk).len(), 4);
    assert_eq!(walk.error.as_deref(), Some("NO_DATA"));

    // SERVFAIL everywhere: the walk goes on (after every attempt), TRY_AGAIN at the end.
    let servfail: Vec<(String, Replies)> = [
        "x.shop.svc.cluster.local.",
        "x.svc.cluster.local.",
        "x.cluster.local.",
        "x.",
    ]
    .iter()
    .map(|n| ((*n).to_owned(), [SERVFAIL, SERVFAIL]))
    .collect();
    let servfail: Vec<(&str, Replies)> = servfail.iter().map(|(n, r)| (n.as_str(), *r)).collect();
    let walk = super::res_search(
        Libc::Glibc,
        &glibc,
        "x",
        Qtype::Txt,
        &mut Fake::new(&servfail),
    );
    assert_eq!(names(&walk).len(), 4);
    assert_eq!(walk.steps[0].queries[0].sent, 2);
    assert_eq!(walk.error.as_deref(), Some("TRY_AGAIN"));

    // REFUSED ends the search list; the name as typed is still asked.
    let mut fake = Fake::new(&[("x.shop.svc.cluster.local.", [REFUSED, REFUSED])]);
    let walk = super::res_search(Libc::Glibc, &glibc, "x", Qtype::Mx, &mut fake);
    assert_eq!(names(&walk), ["x.shop.svc.cluster.local.", "x."]);

    // A PTR name has five dots: with ndots 5 it is asked as it is first.
    let ptr = "20.0.96.10.in-addr.arpa.";
    let walk = super::res_search(
        Libc::Glibc,
        &glibc,
        "20.0.96.10.in-addr.arpa",
        Qtype::Ptr,
        &mut Fake::new(&[(ptr, [OK, NX])]),
    );
    assert_eq!(names(&walk), [ptr]);
    assert_eq!(walk.answered_by.as_deref(), Some(ptr));
}

/// musl's `res_search` is `res_query` (a weak alias): the name as given, one query, no
/// search list whatever ndots says.
#[test]
fn musl_res_search_asks_the_name_as_given_only() {
    let musl = config(Libc::Musl, SHOP);
    let mut fake = Fake::new(&[("_http._tcp.web.shop.svc.cluster.local.", [OK, NX])]);
    let walk = super::res_search(Libc::Musl, &musl, "_http._tcp.web", Qtype::Srv, &mut fake);
    assert_eq!(names(&walk), ["_http._tcp.web."]);
    assert_eq!(fake.asked, [("_http._tcp.web.".to_owned(), Qtype::Srv)]);
    assert_eq!(walk.answered_by, None);
    assert_eq!(walk.error.as_deref(), Some("HOST_NOT_FOUND"));

    let full = "_http._tcp.web.shop.svc.cluster.local.";
    for typed in [full, full.trim_end_matches('.')] {
        let walk = super::res_search(
            Libc::Musl,
            &musl,
            typed,
            Qtype::Srv,
            &mut Fake::new(&[(full, [OK, NX])]),
        );
        assert_eq!(names(&walk), [full]);
        assert_eq!(walk.answered_by.as_deref(), Some(full));
        assert_eq!(walk.error, None);
    }
    // NODATA is NO_DATA; SERVFAIL or silence is TRY_AGAIN after the whole timeout.
    let walk = super::res_search(
        Libc::Musl,
        &musl,
        "web.shop.svc.cluster.local",
        Qtype::Srv,
        &mut Fake::new(&[("web.shop.svc.cluster.local.", [NODATA, NODATA])]),
    );
    assert_eq!(walk.error.as_deref(), Some("NO_DATA"));
    for failure in [SERVFAIL, SILENT, REFUSED] {
        let walk = super::res_search(
            Libc::Musl,
            &musl,
            "x.example",
            Qtype::Txt,
            &mut Fake::new(&[("x.example.", [failure, failure])]),
        );
        assert_eq!(names(&walk), ["x.example."]);
        assert_eq!(walk.error.as_deref(), Some("TRY_AGAIN"));
        assert_eq!(walk.steps[0].waited_ms, 5_000);
    }
}

/// getaddrinfo keeps its EAI_* codes; the walk says which call it models.
#[test]
fn getaddrinfo_walks_say_so() {
    let walk = super::walk(
        Libc::Glibc,
        &config(Libc::Glibc, SHOP),
        "nowhere",
        Families::A,
        &mut Fake::new(&[]),
    );
    assert_eq!(
        walk.call,
        Call::Getaddrinfo {
            families: Families::A
        }
    );
    assert_eq!(walk.error.as_deref(), Some("EAI_NONAME"));
    assert_eq!(Qtype::parse("srv"), Some(Qtype::Srv));
    assert_eq!(Qtype::parse("AAAA"), Some(Qtype::Aaaa));
    assert_eq!(Qtype::parse("SPF"), None);
    assert_eq!(Qtype::Ptr.number(), 12);
    assert_eq!(Qtype::Srv.to_string(), "SRV");
}

/// A reply's cell in the report says what its number counts.
#[test]
fn a_replys_summary_names_what_it_counts() {
    let summary = |rcode, answers| Reply::new(rcode, answers, Source::Upstream).summary();
    assert_eq!(summary(rcode::NOERROR, 1), "NOERROR, 1 record");
    assert_eq!(summary(rcode::NOERROR, 2), "NOERROR, 2 records");
    assert_eq!(summary(rcode::NOERROR, 0), "NODATA");
    assert_eq!(summary(rcode::NXDOMAIN, 0), "NXDOMAIN");
}
