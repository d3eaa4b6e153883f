use super::rule::parse_port_range;
use super::*;
use crate::cascade::Stored;
use crate::ruleset::values::{parse_destination, parse_net};
use crate::ruleset::{
    Action, AddrValue, Match, ParseError, ProtoValue, RecentOp, Rule, Side, Verdict,
};
use clusterdns_model::Protocol;

fn rule(line: &str) -> Result<Rule, ParseError> {
    let text = format!(
        "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SVC-X - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n{line}\nCOMMIT\n"
    );
    let ruleset = parse(&text)?;
    let table = &ruleset.tables[0];
    Ok(table
        .chains
        .iter()
        .flat_map(|c| c.rules.clone())
        .next()
        .expect("one rule"))
}

#[test]
fn a_kube_proxy_rule() {
    let r = rule("-A KUBE-SVC-X ! -s 10.244.0.0/16 -d 10.96.0.20/32 -p tcp -m comment --comment \"shop/web:http cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ").expect("parses");
    assert_eq!(r.comment.as_deref(), Some("shop/web:http cluster IP"));
    assert_eq!(
        r.matches,
        vec![
            Match::Addr {
                side: Side::Source,
                negated: true,
                value: AddrValue::Net("10.244.0.0/16".parse().expect("net")),
            },
            Match::Addr {
                side: Side::Destination,
                negated: false,
                value: AddrValue::Net("10.96.0.20/32".parse().expect("net")),
            },
            Match::Protocol {
                negated: false,
                protocols: vec![ProtoValue::Known(Protocol::Tcp)],
            },
            Match::Port {
                side: Side::Destination,
                negated: false,
                ranges: vec![(80, 80)],
                protocol: Some(Protocol::Tcp),
            },
        ]
    );
    assert_eq!(
        r.actions,
        vec![Action::Verdict(Verdict::Jump("KUBE-MARK-MASQ".to_owned()))]
    );
}

#[test]
fn statistic_recent_mark_and_dnat() {
    let r = rule(
        "-A KUBE-SVC-X -m statistic --mode random --probability 0.33333333349 -j KUBE-MARK-MASQ",
    )
    .expect("parses");
    assert_eq!(
        r.matches,
        vec![Match::Statistic {
            negated: false,
            stored: Stored(715_827_883),
            text: "0.33333333349".to_owned(),
        }]
    );
    let r = rule("-A KUBE-SVC-X -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j KUBE-MARK-MASQ").expect("parses");
    assert_eq!(
        r.matches,
        vec![Match::Recent {
            negated: false,
            op: RecentOp::Check,
            name: "KUBE-SEP-A".to_owned()
        }]
    );
    let r = rule("-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000").expect("parses");
    assert_eq!(
        r.actions,
        vec![Action::SetMark {
            and: !0x4000,
            xor: 0x4000
        }]
    );
    let r = rule("-A KUBE-SVC-X -m mark ! --mark 0x4000/0x4000 -j RETURN").expect("parses");
    assert_eq!(
        r.matches,
        vec![Match::Mark {
            negated: true,
            value: 0x4000,
            mask: 0x4000
        }]
    );
    let r = rule("-A KUBE-SVC-X -p tcp -m tcp -j DNAT --to-destination [fd00::5]:8080")
        .expect("parses");
    assert_eq!(
        r.actions,
        vec![Action::Dnat {
            ip: "fd00::5".parse().expect("ip"),
            port: Some(8080)
        }]
    );
}

/// Rules as kube-proxy writes them for iptables-restore (its own test dumps,
/// pkg/proxy/iptables/proxier_test.go): modules before the protocol, module options
/// after other options, nfacct counters, `--random-fully`.
#[test]
fn options_in_the_order_kube_proxy_writes_them() {
    let written = rule("-A KUBE-SVC-X -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ").expect("parses");
    let saved = rule("-A KUBE-SVC-X ! -s 10.0.0.0/8 -d 172.30.0.41/32 -p tcp -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ").expect("parses");
    let sorted = |r: &Rule| {
        let mut matches: Vec<String> = r.matches.iter().map(|m| format!("{m:?}")).collect();
        matches.sort();
        matches
    };
    assert_eq!(sorted(&written), sorted(&saved));
    assert_eq!(written.comment, saved.comment);
    assert!(written.matches.contains(&Match::Port {
        side: Side::Destination,
        negated: false,
        ranges: vec![(80, 80)],
        protocol: Some(Protocol::Tcp),
    }));
    // The localhost NodePort rule with its nfacct counter.
    let r = rule("-A KUBE-SVC-X -m comment --comment ns2/svc2:p80 -m tcp -p tcp -d 127.0.0.0/8 --dport 3001 -m nfacct --nfacct-name localhost_nps_accepted_pkts -j KUBE-MARK-MASQ").expect("parses");
    assert!(r.matches.contains(&Match::Always));
    assert!(
        r.matches
            .iter()
            .any(|m| matches!(m, Match::Port { ranges, .. } if ranges == &[(3001, 3001)]))
    );
    let r = rule("-A KUBE-SVC-X -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP").expect("parses");
    assert_eq!(r.matches.len(), 2);
    // A module option after another module: the module that takes it.
    let r = rule("-A KUBE-SVC-X -m recent --name KUBE-SEP-X --set -m tcp -p tcp -j DNAT --to-destination 10.180.0.3:80").expect("parses");
    assert!(matches!(
        r.matches[0],
        Match::Recent {
            op: RecentOp::Set,
            ..
        }
    ));
    let r = rule("-A KUBE-SVC-X -m multiport -p udp --dports 53,5353 -j KUBE-MARK-MASQ")
        .expect("parses");
    assert!(r.matches.contains(&Match::Port {
        side: Side::Destination,
        negated: false,
        ranges: vec![(53, 53), (5353, 5353)],
        protocol: Some(Protocol::Udp),
    }));
    // `-p tcp --dport 80` loads tcp's match as iptables does.
    let r = rule("-A KUBE-SVC-X -p tcp --dport 80 -j KUBE-MARK-MASQ").expect("parses");
    assert!(r.matches.iter().any(|m| matches!(m, Match::Port { .. })));
    let r = rule("-A KUBE-SVC-X -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully").expect("parses");
    assert_eq!(r.actions, vec![Action::Masquerade]);
    // An option no module of the rule takes is still an error.
    let error = rule("-A KUBE-SVC-X -m comment --comment x --dport 80 -j ACCEPT")
        .map(|_| ())
        .expect_err("no tcp module");
    assert_eq!(error.to_string(), "line 5: unknown option \"--dport\"");
}

#[test]
fn unknown_modules_are_kept_not_dropped() {
    let r = rule("-A KUBE-SVC-X -m set --match-set cali40all-hosts src -j KUBE-MARK-MASQ")
        .expect("parses");
    assert_eq!(
        r.matches,
        vec![Match::Unsupported(
            "-m set --match-set cali40all-hosts src".to_owned()
        )]
    );
    let r = rule("-A KUBE-SVC-X -m addrtype --src-type UNICAST -j RETURN").expect("parses");
    assert!(matches!(r.matches[0], Match::Unsupported(_)));
}

#[test]
fn errors_name_the_line() {
    let cases: &[(&str, &str)] = &[
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -x 1\nCOMMIT\n",
            "line 3: unknown option \"-x\"",
        ),
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -d 10.96.0.300 -j ACCEPT\nCOMMIT\n",
            "line 3: -d: expected an address or prefix, found \"10.96.0.300\"",
        ),
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\n-A NOPE -j ACCEPT\nCOMMIT\n",
            "line 3: -A NOPE: the chain is not declared in *nat",
        ),
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\n\n-A PREROUTING -j KUBE-NOWHERE\nCOMMIT\n",
            "line 4: -j KUBE-NOWHERE: no chain KUBE-NOWHERE in *nat and not a target clusterdns knows",
        ),
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -m comment --comment \"open\nCOMMIT\n",
            "line 3: unterminated \" quote",
        ),
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\n",
            "line 1: *nat is not closed by COMMIT",
        ),
        (
            "*nat\nCOMMIT\n-A X -j ACCEPT\n",
            "line 3: \"-A X -j ACCEPT\" outside a table (after COMMIT)",
        ),
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -m statistic --mode random --probability 2 -j ACCEPT\nCOMMIT\n",
            "line 3: -m statistic --probability: expected a number 0-1, found \"2\"",
        ),
        (
            "*nat\n:PREROUTING MAYBE [0:0]\nCOMMIT\n",
            "line 2: chain PREROUTING: policy \"MAYBE\" (expected ACCEPT or DROP for a built-in chain, - for others)",
        ),
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j DNAT\nCOMMIT\n",
            "line 3: -j DNAT needs --to-destination",
        ),
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j MARK --set-foo 1\nCOMMIT\n",
            "line 3: -j MARK: expected --set-xmark VALUE/MASK (or --set-mark, --or-mark, --and-mark, --xor-mark), found \"--set-foo 1\"",
        ),
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -p tcp -m tcp --dport eighty -j ACCEPT\nCOMMIT\n",
            "line 3: -m tcp --dport: expected a port or range, found \"eighty\"",
        ),
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -s\nCOMMIT\n",
            "line 3: -s needs a value",
        ),
        (
            "*nat\n:KUBE-X - [0:0]\n:KUBE-X - [0:0]\nCOMMIT\n",
            "line 3: chain KUBE-X is declared twice",
        ),
        (
            "*nat\n:PREROUTING ACCEPT [0:0]\nbogus\nCOMMIT\n",
            "line 3: expected *TABLE, :CHAIN, -A, -P, -N or COMMIT, found \"bogus\"",
        ),
    ];
    for (text, want) in cases {
        let got = parse(text)
            .map(|_| ())
            .expect_err("must not parse")
            .to_string();
        assert_eq!(&got, want, "for:\n{text}");
    }
}

#[test]
fn iptables_dash_s_output_is_read_as_one_table() {
    let text = "-P PREROUTING ACCEPT\n-P INPUT ACCEPT\n-P OUTPUT ACCEPT\n-P POSTROUTING ACCEPT\n-N KUBE-SERVICES\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n";
    let ruleset = parse(text).expect("parses");
    assert_eq!(ruleset.tables[0].name, "nat");
    let prerouting = ruleset.tables[0].chain("PREROUTING").expect("chain");
    assert!(prerouting.base.is_some());
    assert_eq!(prerouting.rules.len(), 1);
}

#[test]
fn netmasks_and_ranges() {
    assert_eq!(parse_net("10.0.0.0/255.0.0.0"), "10.0.0.0/8".parse().ok());
    assert_eq!(parse_net("10.0.0.1"), "10.0.0.1/32".parse().ok());
    assert_eq!(parse_net("10.0.0.0/255.0.255.0"), None);
    assert_eq!(parse_port_range("1024:"), Some((1024, u16::MAX)));
    assert_eq!(parse_port_range(":1023"), Some((0, 1023)));
    assert_eq!(parse_port_range("9:1"), None);
    assert_eq!(
        parse_destination("10.0.0.1:80"),
        Some(("10.0.0.1".parse().expect("ip"), Some(80)))
    );
    assert_eq!(
        parse_destination("10.0.0.1"),
        Some(("10.0.0.1".parse().expect("ip"), None))
    );
    assert_eq!(
        parse_destination("[fd00::1]"),
        Some(("fd00::1".parse().expect("ip"), None))
    );
}

/// The chain names of `chain`'s rules' jump targets, in order.
fn jumps_of(ruleset: &Ruleset, table: &str, chain: &str) -> Vec<String> {
    let table = ruleset
        .tables
        .iter()
        .find(|t| t.name == table)
        .expect("table");
    table
        .chain(chain)
        .map(|c| {
            c.rules
                .iter()
                .flat_map(|r| &r.actions)
                .filter_map(|a| match a {
                    Action::Verdict(Verdict::Jump(to)) => Some(to.clone()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn kube_proxys_jumps_are_assumed_only_where_none_exists() {
    let own = "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-POSTROUTING - [0:0]\n-A KUBE-POSTROUTING -j RETURN\nCOMMIT\n\
               *filter\n:KUBE-SERVICES - [0:0]\n:KUBE-FORWARD - [0:0]\n:KUBE-NODEPORTS - [0:0]\nCOMMIT\n";
    let ruleset = parse(own).expect("parses");
    assert_eq!(jumps_of(&ruleset, "nat", "PREROUTING"), ["KUBE-SERVICES"]);
    assert_eq!(
        jumps_of(&ruleset, "nat", "POSTROUTING"),
        ["KUBE-POSTROUTING"]
    );
    // Only to chains the text has: no KUBE-PROXY-FIREWALL, KUBE-EXTERNAL-SERVICES or
    // KUBE-FIREWALL here.
    assert_eq!(jumps_of(&ruleset, "filter", "INPUT"), ["KUBE-NODEPORTS"]);
    assert_eq!(
        jumps_of(&ruleset, "filter", "FORWARD"),
        ["KUBE-FORWARD", "KUBE-SERVICES"]
    );
    assert_eq!(
        ruleset.assumed_jumps.len(),
        7,
        "{:?}",
        ruleset.assumed_jumps
    );
    assert!(ruleset.assumed_jumps[0].starts_with("*nat -A PREROUTING "));
    let chain = ruleset.tables[0].chain("PREROUTING").expect("added");
    assert_eq!(chain.base.map(|b| b.priority), Some(-100));
    assert_eq!(chain.rules[0].line, 0);

    // One jump of the node's own is enough: nothing is assumed in that table.
    let node = "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n\
                -A PREROUTING -j KUBE-SERVICES\nCOMMIT\n";
    let ruleset = parse(node).expect("parses");
    assert!(ruleset.assumed_jumps.is_empty());
    assert_eq!(jumps_of(&ruleset, "nat", "OUTPUT"), Vec::<String>::new());
    // A table that is not kube-proxy's is left alone.
    let other = "*filter\n:INPUT ACCEPT [0:0]\n:MINE - [0:0]\nCOMMIT\n";
    assert!(parse(other).expect("parses").assumed_jumps.is_empty());
}
