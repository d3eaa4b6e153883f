use super::declare::parse_priority;
use super::*;
use crate::ruleset::{
    Action, ChainKind, DnatSlot, Hook, KeyPart, Match, Slot, TableFamily, Verdict,
};

const LIST: &str = "table ip kube-proxy { # handle 18
\tcomment \"rules for kube-proxy\"
\tset cluster-ips {
\t\ttype ipv4_addr
\t\tcomment \"Active ClusterIPs\"
\t\telements = { 10.96.0.1, 10.96.0.10,
\t\t\t     10.96.0.20 }
\t}

\tmap service-ips {
\t\ttype ipv4_addr . inet_proto . inet_service : verdict
\t\telements = { 10.96.0.20 . tcp . 80 : goto service-X,
\t\t\t     10.96.0.40 . tcp . 80 comment \"shop/empty:http\" : goto reject-chain }
\t}

\tchain nat-prerouting {
\t\ttype nat hook prerouting priority dstnat; policy accept;
\t\tjump services
\t}

\tchain services {
\t\tip daddr . meta l4proto . th dport vmap @service-ips
\t}

\tchain reject-chain {
\t\tcomment \"helper\"
\t\treject
\t}

\tchain service-X {
\t\tip daddr 10.96.0.20 tcp dport 80 ip saddr != 10.244.0.0/16 jump mark-for-masquerade # handle 7
\t\tnumgen random mod 2 vmap { 0 : goto endpoint-a, 1 : goto endpoint-b }
\t}

\tchain mark-for-masquerade {
\t\tmeta mark set meta mark | 0x00004000
\t}

\tchain endpoint-a {
\t\tip saddr 10.244.1.5 jump mark-for-masquerade
\t\tmeta l4proto tcp dnat to 10.244.1.5:8080
\t}

\tchain endpoint-b {
\t\tmeta l4proto tcp dnat to [fd00::1]:8080
\t}
}
";

#[test]
fn reads_nft_list_output() {
    let ruleset = parse(LIST, Format::NftList).expect("parses");
    let table = &ruleset.tables[0];
    assert_eq!(
        (table.family, table.name.as_str()),
        (TableFamily::Ip, "kube-proxy")
    );
    assert_eq!(table.sets["cluster-ips"].elements.len(), 3);
    let map = &table.sets["service-ips"];
    assert!(map.is_map);
    assert_eq!(map.elements[1].comment.as_deref(), Some("shop/empty:http"));
    assert_eq!(
        map.elements[1].verdict,
        Some(Verdict::Goto("reject-chain".to_owned()))
    );
    assert_eq!(map.elements[1].line, 13);
    let base = table
        .chain("nat-prerouting")
        .and_then(|c| c.base)
        .expect("base chain");
    assert_eq!(
        (base.hook, base.priority, base.kind),
        (Hook::Prerouting, -100, ChainKind::Nat)
    );
    let service = table.chain("service-X").expect("chain");
    assert_eq!(service.rules[0].line, 31);
    assert!(!service.rules[0].text.contains("handle"));
    assert_eq!(service.rules[0].matches.len(), 3);
    assert_eq!(
        service.rules[1].actions,
        vec![Action::Numgen {
            modulus: 2,
            slots: vec![
                Slot {
                    low: 0,
                    high: 0,
                    verdict: Verdict::Goto("endpoint-a".to_owned())
                },
                Slot {
                    low: 1,
                    high: 1,
                    verdict: Verdict::Goto("endpoint-b".to_owned())
                },
            ],
        }]
    );
    assert_eq!(
        table.chain("mark-for-masquerade").expect("chain").rules[0].actions,
        vec![Action::SetMark {
            and: !0x4000,
            xor: 0x4000
        }]
    );
    assert_eq!(
        table.chain("endpoint-b").expect("chain").rules[0].actions,
        vec![Action::Dnat {
            ip: "fd00::1".parse().expect("ip"),
            port: Some(8080)
        }]
    );
}

#[test]
fn reads_transactions() {
    let text = "add table ip kube-proxy { comment \"rules for kube-proxy\" ; }
add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment \"x\" ; }
add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }
add chain ip kube-proxy services
add chain ip kube-proxy masquerading
add rule ip kube-proxy nat-prerouting jump services
add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips
add rule ip kube-proxy masquerading mark and 0x4000 == 0 return
add rule ip kube-proxy masquerading mark set mark xor 0x4000
# a comment line
add element ip kube-proxy service-ips { 10.96.0.20 . tcp . 80 : goto services }
add element ip kube-proxy service-ips { 10.96.0.30 . tcp . 80 : goto services }
delete element ip kube-proxy service-ips { 10.96.0.30 . tcp . 80 }
flush chain ip kube-proxy nat-prerouting
add rule ip kube-proxy nat-prerouting jump masquerading
";
    let ruleset = parse(text, Format::NftTransaction).expect("parses");
    let table = &ruleset.tables[0];
    assert_eq!(table.sets["service-ips"].elements.len(), 1);
    let prerouting = table.chain("nat-prerouting").expect("chain");
    assert_eq!(prerouting.rules.len(), 1, "flushed, then one rule");
    assert_eq!(prerouting.rules[0].line, 15);
    let masquerading = table.chain("masquerading").expect("chain");
    assert_eq!(
        masquerading.rules[0].matches,
        vec![Match::Mark {
            negated: false,
            value: 0,
            mask: 0x4000
        }]
    );
    assert_eq!(
        masquerading.rules[1].actions,
        vec![Action::SetMark {
            and: u32::MAX,
            xor: 0x4000
        }]
    );
}

#[test]
fn errors_name_the_line() {
    let cases: &[(Format, &str, &str)] = &[
        (
            Format::NftList,
            "table ip t {\n\tchain c {\n\t\tjump nowhere\n\t}\n}\n",
            "line 3: jump or goto to nowhere: no chain nowhere in table t",
        ),
        (
            Format::NftList,
            "table ip t {\n\tchain c {\n\t\tip daddr 10.0.0.300 accept\n\t}\n}\n",
            "line 3: ip daddr: expected an address or prefix, found \"10.0.0.300\"",
        ),
        (
            Format::NftList,
            "table ip t {\n\tchain c {\n\t\taccept\n",
            "line 2: chain c is not closed",
        ),
        (
            Format::NftList,
            "table ip t {\n\tflowtable f {\n\t}\n}\n",
            "line 2: expected set, map, chain or comment in table t, found \"flowtable\"",
        ),
        (
            Format::NftList,
            "table ip t {\n\tchain c {\n\t\ttype nat hook prerouting priority sometimes; policy accept;\n\t}\n}\n",
            "line 3: expected a chain priority, found \"sometimes\"",
        ),
        (
            Format::NftList,
            "table ip t {\n\tchain c {\n\t\tcomment \"open\n\t}\n}\n",
            "line 3: unterminated \" quote",
        ),
        (
            Format::NftTransaction,
            "add rule ip t c accept\n",
            "line 1: add rule: no table t (add table first)",
        ),
        (
            Format::NftTransaction,
            "add table ip t\nadd rule ip t c accept\n",
            "line 2: add rule: no chain c in table t",
        ),
        (
            Format::NftTransaction,
            "add table ip t\nadd chain ip t c\ndelete rule ip t c handle 4\n",
            "line 3: `delete rule` by handle is not supported (only add and insert)",
        ),
        (
            Format::NftTransaction,
            "add table ip t\nadd element ip t s { 1.2.3.4 }\n",
            "line 2: add element: no set or map s in table t",
        ),
        (
            Format::NftTransaction,
            "add table ip t\nadd map ip t m { type ipv4_addr : verdict ; }\nadd element ip t m { 1.2.3.4 : goto }\n",
            "line 3: expected a verdict (goto CHAIN, jump CHAIN, drop, accept, return), found \"goto\"",
        ),
        (
            Format::NftTransaction,
            "add table ip t\nadd chain ip t c\nadd rule ip t c numgen random mod 0 vmap { 0 : drop }\n",
            "line 3: numgen random mod: expected a positive number",
        ),
    ];
    for (format, text, want) in cases {
        let got = parse(text, *format)
            .map(|_| ())
            .expect_err("must not parse")
            .to_string();
        assert_eq!(&got, want, "for:\n{text}");
    }
}

#[test]
fn unknown_statements_are_kept() {
    let text = "table inet t {\n\tchain c {\n\t\tlimit rate 10/second accept\n\t\tip daddr 10.0.0.1 meter m { ip saddr } drop\n\t}\n}\n";
    let ruleset = parse(text, Format::NftList).expect("parses");
    let chain = ruleset.tables[0].chain("c").expect("chain");
    assert_eq!(
        chain.rules[0].matches,
        vec![Match::Unsupported("limit rate 10/second accept".to_owned())]
    );
    assert!(
        matches!(chain.rules[1].matches.last(), Some(Match::Unsupported(text)) if text.starts_with("meter m"))
    );
    assert_eq!(ruleset.tables[0].family, TableFamily::Inet);
}

#[test]
fn priorities() {
    for (words, want) in [
        (&["-110"][..], -110),
        (&["dstnat"][..], -100),
        (&["dstnat", "-", "10"][..], -110),
        (&["dstnat-10"][..], -110),
        (&["srcnat", "+", "5"][..], 105),
        (&["filter"][..], 0),
    ] {
        assert_eq!(parse_priority(words, 1).expect("parses"), want, "{words:?}");
    }
}

/// The one rule of `chain` in a transaction holding `rule` there (and set `hp`).
fn one_rule(rule: &str) -> crate::ruleset::Rule {
    let text = format!(
        "add table ip t\nadd set ip t hp {{ type ipv4_addr . ipv4_addr . inet_proto . inet_service ; }}\n\
         add chain ip t c\nadd rule ip t c {rule}\n"
    );
    let ruleset = parse(&text, Format::NftTransaction).expect("parses");
    ruleset.tables[0].chain("c").expect("chain").rules[0].clone()
}

#[test]
fn kube_proxy_136s_dnat_maps_and_hairpin_set() {
    // The listing's and the transaction's spellings of one rule.
    for rule in [
        "meta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.244.0.1 . 8080, 1 : 10.244.1.1 . 8080 }",
        "meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.244.0.1 . 8080 , 1 : 10.244.1.1 . 8080 }",
    ] {
        let parsed = one_rule(rule);
        assert_eq!(
            parsed.actions,
            vec![Action::DnatMap {
                modulus: 2,
                slots: vec![
                    DnatSlot {
                        low: 0,
                        high: 0,
                        ip: "10.244.0.1".parse().expect("ip"),
                        port: Some(8080),
                    },
                    DnatSlot {
                        low: 1,
                        high: 1,
                        ip: "10.244.1.1".parse().expect("ip"),
                        port: Some(8080),
                    },
                ],
            }],
            "{rule}"
        );
    }
    let v6 = one_rule("dnat ip6 to numgen random mod 1 map { 0 : fd00:10:244::1 . 53 }");
    assert!(
        matches!(&v6.actions[..], [Action::DnatMap { slots, .. }] if slots[0].ip == "fd00:10:244::1".parse::<std::net::IpAddr>().expect("ip")),
        "{v6:?}"
    );
    let hairpin = one_rule(
        "ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hp masquerade fully-random",
    );
    assert_eq!(
        hairpin.matches[1],
        Match::KeySet {
            key: vec![
                KeyPart::Saddr,
                KeyPart::Daddr,
                KeyPart::L4proto,
                KeyPart::Dport
            ],
            negated: false,
            set: "hp".to_owned(),
        }
    );
    assert_eq!(hairpin.actions, vec![Action::Masquerade]);
    let error = parse(
        "add table ip t\nadd chain ip t c\nadd rule ip t c dnat ip to numgen random mod 2 map { 0 : nowhere }\n",
        Format::NftTransaction,
    )
    .expect_err("a bad element");
    assert!(
        error.message.contains("expected SLOT : ADDRESS . PORT"),
        "{error}"
    );
}
