//! `explain` on the real node's rules (tests/fixtures/kube-proxy/iptables-save.txt) edited to
//! drift from the objects the way a node does: an endpoint's rules gone, a chain left behind
//! for an endpoint that is gone, a probability that is not 1/n. Each must be named.

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

#[test]
fn explain_names_each_drift() {
    let real = std::fs::read_to_string(fixture("iptables-save.txt")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for drift in DRIFTS {
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
