//! `explain` on the real node's rules (tests/fixtures/kube-proxy/iptables-save.txt and
//! nft-list.nft) edited to drift from the objects the way a node does: an endpoint's rules
//! gone, rules left behind for an endpoint that is gone, a probability that is not 1/n. Each
//! must be named.

use super::fixtures::{explain, fixture};

/// The dump, edited.
struct Drift {
    /// What happened to the node.
    what: &'static str,
    /// The Service explained.
    service: &'static str,
    /// The edit.
    edit: fn(&str) -> String,
    /// Words each finding line of the drift must have (all of them, in one line).
    words: &'static [&'static str],
}

/// The `KUBE-SEP-` chain of `endpoint` in the cascade commented `port -> endpoint`.
fn sep_chain(dump: &str, port: &str, endpoint: &str) -> String {
    let comment = format!("\"{port} -> {endpoint}\"");
    dump.lines()
        .find(|l| l.contains(&comment) && l.contains("-j KUBE-SEP-"))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or_else(|| panic!("no chain for {port} -> {endpoint}"))
        .to_owned()
}

/// Every line naming `chain` left out.
fn without(dump: &str, chain: &str) -> String {
    dump.lines()
        .filter(|l| !l.contains(chain))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A leftover chain (kube-proxy deletes stale chains a sync later; a crashed one never
/// does) with a DNAT to an address no endpoint has, for kp/multi:http.
fn stale_endpoint(dump: &str) -> String {
    let declaration = ":KUBE-SEP-LEFTOVER7QZ5X2ABC - [0:0]";
    let rules = "-A KUBE-SEP-LEFTOVER7QZ5X2ABC -s 10.244.2.9/32 -m comment --comment \"kp/multi:http\" -j KUBE-MARK-MASQ\n-A KUBE-SEP-LEFTOVER7QZ5X2ABC -p tcp -m comment --comment \"kp/multi:http\" -m tcp -j DNAT --to-destination 10.244.2.9:8080";
    let nat = dump.find("*nat\n").expect("a nat table");
    let after = dump[nat..].find("\n-A ").unwrap() + nat;
    let commit = dump[nat..].find("\nCOMMIT").unwrap() + nat;
    format!(
        "{}\n{declaration}{}\n{rules}{}",
        &dump[..after],
        &dump[after..commit],
        &dump[commit..]
    )
}

/// kp/multi:http's cascade with its first probability 1/2 instead of 1/3.
fn wrong_probability(dump: &str) -> String {
    dump.lines()
        .map(|l| {
            if l.contains("\"kp/multi:http -> 10.244.0.1:8080\"") {
                l.replace("--probability 0.33333333349", "--probability 0.50000000000")
            } else {
                l.to_owned()
            }
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

const DRIFTS: &[Drift] = &[
    Drift {
        what: "one endpoint's rules removed",
        service: "kp/multi",
        edit: |d| without(d, &sep_chain(d, "kp/multi:http", "10.244.2.1:8080")),
        words: &["missing-from-rules", "10.244.2.1:8080", "not reached"],
    },
    Drift {
        what: "a chain left for an endpoint that is gone",
        service: "kp/multi",
        edit: stale_endpoint,
        words: &["stale-rules", "10.244.2.9:8080", "no rule reaches"],
    },
    Drift {
        what: "a wrong probability on a statistic rule",
        service: "kp/multi",
        edit: wrong_probability,
        words: &["unequal-shares", "10.244.0.1:8080 50.00%"],
    },
];

/// kp/multi:http's DNAT map in kube-proxy 1.36's nftables rules.
const NFT_MULTI: &str =
    "mod 3 map { 0 : 10.244.0.1 . 8080, 1 : 10.244.1.1 . 8080, 2 : 10.244.2.1 . 8080 }";

/// kp/multi:http's Service chain with its DNAT map `map` instead.
fn nft_multi(dump: &str, map: &str) -> String {
    let chain = "chain service-5C5F4CRV-kp/multi/tcp/http {\n";
    let at = dump.find(chain).expect("kp/multi's chain") + chain.len();
    let end = at + dump[at..].find('\n').unwrap();
    assert!(dump[at..end].contains(NFT_MULTI), "{}", &dump[at..end]);
    format!(
        "{}{}{}",
        &dump[..at],
        dump[at..end].replace(NFT_MULTI, map),
        &dump[end..]
    )
}

const NFT_DRIFTS: &[Drift] = &[
    Drift {
        what: "one endpoint gone from the DNAT map",
        service: "kp/multi",
        edit: |d| {
            nft_multi(
                d,
                "mod 2 map { 0 : 10.244.0.1 . 8080, 1 : 10.244.1.1 . 8080 }",
            )
        },
        words: &["missing-from-rules", "10.244.2.1:8080", "not reached"],
    },
    Drift {
        what: "an endpoint that is gone left in the DNAT map",
        service: "kp/multi",
        edit: |d| {
            nft_multi(
                d,
                "mod 4 map { 0 : 10.244.0.1 . 8080, 1 : 10.244.1.1 . 8080, 2 : 10.244.2.1 . 8080, 3 : 10.244.2.9 . 8080 }",
            )
        },
        words: &["stale-rules", "10.244.2.9:8080", "which no endpoint has"],
    },
    Drift {
        what: "one endpoint in two slots of the DNAT map",
        service: "kp/multi",
        edit: |d| {
            nft_multi(
                d,
                "mod 4 map { 0 : 10.244.0.1 . 8080, 1 : 10.244.0.1 . 8080, 2 : 10.244.1.1 . 8080, 3 : 10.244.2.1 . 8080 }",
            )
        },
        words: &["unequal-shares", "10.244.0.1:8080 50.00%"],
    },
];

#[test]
fn explain_names_each_drift() {
    check_drifts("iptables-save.txt", DRIFTS);
}

#[test]
fn explain_names_each_drift_in_nftables_rules() {
    check_drifts("nft-list.nft", NFT_DRIFTS);
}

/// Each of `drifts` made to the fixture `file` is named by explain, which finds none in the
/// file as it is.
fn check_drifts(file: &str, drifts: &[Drift]) {
    let real = std::fs::read_to_string(fixture(file)).unwrap();
    let (code, findings) = explain("kp/multi", &fixture(file));
    assert_eq!(code, 0, "{file}: drift in the real dump: {findings:#?}");
    let dir = tempfile::tempdir().unwrap();
    for drift in drifts {
        let edited = (drift.edit)(&real);
        assert_ne!(edited, real, "{}: the edit changed nothing", drift.what);
        let path = dir.path().join("edited.txt");
        std::fs::write(&path, &edited).unwrap();
        let (code, findings) = explain(drift.service, &path);
        assert_eq!(code, 1, "{}: explain saw no drift", drift.what);
        assert!(
            findings
                .iter()
                .any(|f| drift.words.iter().all(|w| f.contains(w))),
            "{}: no finding with {:?}: {findings:#?}",
            drift.what,
            drift.words
        );
    }
}
