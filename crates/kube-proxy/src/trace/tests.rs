use super::*;
use crate::cascade::cascade;
use crate::ruleset::parse;
use clusterdns_model::Protocol;

fn options(to: &str) -> TraceOptions {
    let to: std::net::SocketAddr = to.parse().expect("test address");
    TraceOptions {
        to: to.ip(),
        port: to.port(),
        protocol: Protocol::Tcp,
        from: None,
        local: false,
        node_local: false,
        node_ips: Vec::new(),
        icmp: false,
    }
}

fn run(text: &str, options: &TraceOptions) -> TraceReport {
    trace(&parse(text).expect("test ruleset parses"), options)
}

fn targets(report: &TraceReport) -> Vec<(String, u16)> {
    report
        .endpoints
        .iter()
        .map(|e| (e.address.clone(), e.port))
        .collect()
}

const NAT_HEAD: &str = "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n";

#[test]
fn goto_returns_to_the_callers_caller() {
    let text = format!(
        "{NAT_HEAD}:A - [0:0]\n:B - [0:0]\n:C - [0:0]\n-A PREROUTING -j A\n-A A -j B\n-A A -p tcp -j DNAT --to-destination 10.0.0.1:80\n-A B -g C\n-A B -p tcp -j DNAT --to-destination 10.0.0.2:80\nCOMMIT\n"
    );
    let report = run(&text, &options("10.96.0.1:80"));
    assert_eq!(report.verdict, TraceVerdict::Dnat);
    assert_eq!(targets(&report), [("10.0.0.1".to_owned(), 80)]);
}

#[test]
fn jump_returns_to_the_next_rule() {
    let text = format!(
        "{NAT_HEAD}:A - [0:0]\n-A PREROUTING -j A\n-A PREROUTING -p tcp -j DNAT --to-destination 10.0.0.3\n-A A -j RETURN\n-A A -p tcp -j DNAT --to-destination 10.0.0.4:80\nCOMMIT\n"
    );
    let report = run(&text, &options("10.96.0.1:8080"));
    // RETURN leaves A at once; the port is kept when DNAT gives none.
    assert_eq!(targets(&report), [("10.0.0.3".to_owned(), 8080)]);
}

#[test]
fn a_drop_policy_drops_what_falls_through() {
    let text = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\n-A FORWARD -d 10.0.0.9/32 -j ACCEPT\nCOMMIT\n";
    let dropped = run(text, &options("10.0.0.8:80"));
    assert_eq!(dropped.verdict, TraceVerdict::Drop);
    assert_eq!(
        dropped.terminal.as_ref().map(|s| s.rule.as_str()),
        Some("FORWARD policy DROP")
    );
    let passed = run(text, &options("10.0.0.9:80"));
    assert_eq!(passed.verdict, TraceVerdict::NoMatch);
}

#[test]
fn filter_reject_before_nothing_in_nat() {
    let text = format!(
        "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n-A FORWARD -m conntrack --ctstate NEW -j KUBE-SERVICES\n-A OUTPUT -m conntrack --ctstate NEW -j KUBE-SERVICES\n-A KUBE-SERVICES -d 10.96.0.40/32 -p tcp -m comment --comment \"shop/empty:http has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable\nCOMMIT\n{NAT_HEAD}COMMIT\n"
    );
    for local in [false, true] {
        let mut o = options("10.96.0.40:80");
        o.local = local;
        let report = run(&text, &o);
        assert_eq!(report.verdict, TraceVerdict::Reject, "local={local}");
        assert_eq!(report.terminal.as_ref().map(|s| s.line), Some(8));
    }
    // Another port of the same address is not rejected.
    assert_eq!(
        run(&text, &options("10.96.0.40:81")).verdict,
        TraceVerdict::NoMatch
    );
}

/// Every cascade up to 20 endpoints, walked as rules: each endpoint gets 1/n.
#[test]
fn walked_cascades_give_one_nth() {
    for n in 1..=20 {
        let mut text = format!("{NAT_HEAD}:KUBE-SVC-X - [0:0]\n");
        for i in 0..n {
            text.push_str(&format!(":KUBE-SEP-{i} - [0:0]\n"));
        }
        text.push_str("-A PREROUTING -d 10.96.0.20/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-X\n");
        for (i, p) in cascade(n).iter().enumerate() {
            let statistic = p
                .map(|p| format!(" -m statistic --mode random --probability {}", p.printed()))
                .unwrap_or_default();
            text.push_str(&format!("-A KUBE-SVC-X{statistic} -j KUBE-SEP-{i}\n"));
        }
        for i in 0..n {
            text.push_str(&format!(
                "-A KUBE-SEP-{i} -p tcp -m tcp -j DNAT --to-destination 10.244.0.{}:8080\n",
                i + 1
            ));
        }
        text.push_str("COMMIT\n");
        let report = run(&text, &options("10.96.0.20:80"));
        assert_eq!(report.endpoints.len(), n, "n={n}");
        let total: f64 = report.endpoints.iter().map(|e| e.share).sum();
        assert!((total - 1.0).abs() < 1e-12, "n={n}");
        for endpoint in &report.endpoints {
            assert!(
                (endpoint.share - 1.0 / n as f64).abs() <= n as f64 / STATISTIC_SCALE_FOR_TESTS,
                "n={n}: {} gets {}",
                endpoint.address,
                endpoint.share
            );
        }
    }
}

const STATISTIC_SCALE_FOR_TESTS: f64 = crate::cascade::STATISTIC_SCALE;

#[test]
fn unequal_cascades_show_their_real_shares() {
    let text = format!(
        "{NAT_HEAD}:S - [0:0]\n-A PREROUTING -j S\n-A S -m statistic --mode random --probability 0.33333333349 -p tcp -j DNAT --to-destination 10.0.0.1:80\n-A S -m statistic --mode random --probability 0.33333333349 -p tcp -j DNAT --to-destination 10.0.0.2:80\n-A S -p tcp -j DNAT --to-destination 10.0.0.3:80\nCOMMIT\n"
    );
    let report = run(&text, &options("10.96.0.1:80"));
    let shares: Vec<f64> = report.endpoints.iter().map(|e| e.share).collect();
    assert!((shares[0] - 1.0 / 3.0).abs() < 1e-9);
    assert!((shares[1] - 2.0 / 9.0).abs() < 1e-9);
    assert!((shares[2] - 4.0 / 9.0).abs() < 1e-9);
}

#[test]
fn unknown_shapes_are_reported_with_their_line_when_reached() {
    let text = format!(
        "{NAT_HEAD}:A - [0:0]\n-A PREROUTING -m set --match-set allowed src -j A\n-A PREROUTING -i eth0 -j A\n-A PREROUTING -d 10.1.1.1/32 -m socket -j A\n-A PREROUTING -p tcp -j DNAT --to-destination 10.0.0.1:80\nCOMMIT\n"
    );
    let report = run(&text, &options("10.96.0.1:80"));
    assert_eq!(report.verdict, TraceVerdict::Dnat);
    let lines: Vec<usize> = report.warnings.iter().map(|w| w.line).collect();
    // Line 9 is decided by its -d before the unknown module matters.
    assert_eq!(lines, [7, 8]);
    assert!(
        report.warnings[0]
            .problem
            .contains("cannot evaluate `-m set --match-set allowed src`")
    );
    assert!(report.warnings[1].problem.contains("incoming interface"));
}

#[test]
fn jump_loops_stop() {
    let text = format!(
        "{NAT_HEAD}:A - [0:0]\n:B - [0:0]\n-A PREROUTING -j A\n-A A -j B\n-A B -j A\nCOMMIT\n"
    );
    let report = run(&text, &options("10.96.0.1:80"));
    assert_eq!(report.verdict, TraceVerdict::NoMatch);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.problem.contains("nested jumps"))
    );
}

#[test]
fn source_tests_are_conditions_until_decided() {
    let text = format!(
        "{NAT_HEAD}:KUBE-MARK-MASQ - [0:0]\n:KUBE-POSTROUTING - [0:0]\n:SVC - [0:0]\n-A PREROUTING -j SVC\n-A POSTROUTING -j KUBE-POSTROUTING\n-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n-A KUBE-POSTROUTING -j MASQUERADE --random-fully\n-A SVC ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ\n-A SVC -s 192.168.0.0/16 -p tcp -j DNAT --to-destination 10.0.0.9:80\n-A SVC -p tcp -j DNAT --to-destination 10.0.0.1:80\nCOMMIT\n"
    );
    let unknown = run(&text, &options("10.96.0.1:80"));
    assert_eq!(targets(&unknown), [("10.0.0.1".to_owned(), 80)]);
    assert_eq!(unknown.masquerade.len(), 1);
    assert_eq!(
        unknown.masquerade[0].when.as_deref(),
        Some("the source is not in 10.244.0.0/16")
    );
    assert!(unknown.conditions[0].contains("taken only if the source is in 192.168.0.0/16"));

    let mut pod = options("10.96.0.1:80");
    pod.from = Some("10.244.3.3".parse().expect("ip"));
    let pod = run(&text, &pod);
    assert!(pod.masquerade.is_empty() && pod.conditions.is_empty());

    let mut outside = options("10.96.0.1:80");
    outside.from = Some("192.168.1.1".parse().expect("ip"));
    let outside = run(&text, &outside);
    assert_eq!(targets(&outside), [("10.0.0.9".to_owned(), 80)]);
    assert_eq!(outside.masquerade.len(), 1);
    assert_eq!(outside.masquerade[0].when, None);
    assert_eq!(
        outside.masquerade[0].marked_by.as_ref().map(|s| s.line),
        Some(15)
    );
}

#[test]
fn simulations_are_deterministic_for_a_seed() {
    let text = format!(
        "{NAT_HEAD}:S - [0:0]\n-A PREROUTING -j S\n-A S -m statistic --mode random --probability 0.33333333349 -p tcp -j DNAT --to-destination 10.0.0.1:80\n-A S -m statistic --mode random --probability 0.50000000000 -p tcp -j DNAT --to-destination 10.0.0.2:80\n-A S -p tcp -j DNAT --to-destination 10.0.0.3:80\nCOMMIT\n"
    );
    let ruleset = parse(&text).expect("parses");
    let o = options("10.96.0.1:80");
    let counts = |seed| {
        simulate(&ruleset, &o, 3000, seed)
            .counts
            .iter()
            .map(|c| (c.target.clone(), c.count))
            .collect::<Vec<_>>()
    };
    assert_eq!(counts(7), counts(7));
    assert_ne!(counts(7), counts(8));
    let total: u64 = counts(7).iter().map(|c| c.1).sum();
    assert_eq!(total, 3000);
    // Each of the three gets roughly a third (±5 standard deviations).
    for (_, count) in counts(7) {
        assert!((850..=1150).contains(&count), "{count}");
    }
}

#[test]
fn a_ruleset_of_the_other_family_says_so() {
    let ruleset =
        parse("*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -d 10.0.0.1/32 -j ACCEPT\nCOMMIT\n")
            .expect("parses");
    let report = trace(
        &ruleset,
        &TraceOptions {
            to: "fd00::1".parse().expect("ip"),
            port: 80,
            protocol: Protocol::Tcp,
            from: None,
            local: false,
            node_local: false,
            node_ips: Vec::new(),
            icmp: false,
        },
    );
    assert_eq!(report.verdict, TraceVerdict::NoMatch);
    assert_eq!(
        report.conditions,
        ["no table of the ruleset applies to IPv6 packets"]
    );
}
