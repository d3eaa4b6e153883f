#![allow(clippy::unwrap_used)]

use hickory_proto::rr::{DNSClass, RecordType};

use crate::server::chain::testing::{answers, ask, ask_packet, block, query_class, rcode};

/// A block whose rest of chain echoes the question it sees (CoreDNS's tests use a
/// `msgPrinter` for this): an A record owned by the name asked, a TXT with the class and type.
fn echo(rules: &str) -> std::sync::Arc<crate::server::Block> {
    block(&format!(
        r#". {{
{rules}
    template ANY A {{
        answer "{{{{ .Name }}}} 60 IN A 10.0.0.1"
    }}
    template ANY ANY {{
        answer "{{{{ .Name }}}} 60 IN TXT \"{{{{ .Class }}}} {{{{ .Type }}}}\""
    }}
}}"#
    ))
}

/// Name rules, as CoreDNS's name_test.go tables: the rules, the question, and the owner of
/// the echoed answer the client gets (the question itself always comes back as asked).
#[test]
fn names() {
    let cases: &[(&str, &str, &str)] = &[
        // exact: always turned back.
        (
            "rewrite name exact coredns.rocks service.consul",
            "coredns.rocks.",
            "coredns.rocks.",
        ),
        (
            "rewrite name coredns.rocks. service.consul.",
            "Coredns.Rocks.",
            "coredns.rocks.",
        ),
        (
            "rewrite name exact coredns.org service.consul",
            "coredns.rocks.",
            "coredns.rocks.",
        ),
        // prefix and suffix at label boundaries, turned back only with answer auto.
        (
            "rewrite name prefix foo bar",
            "foo.example.com.",
            "bar.example.com.",
        ),
        (
            "rewrite name prefix foo bar answer auto",
            "foo.example.com.",
            "foo.example.com.",
        ),
        (
            "rewrite name prefix foo bar",
            "coredns.foo.",
            "coredns.foo.",
        ),
        (
            "rewrite name suffix com org",
            "foo.example.com.",
            "foo.example.org.",
        ),
        (
            "rewrite name suffix .com .org answer auto",
            "foo.example.com.",
            "foo.example.com.",
        ),
        (
            "rewrite name suffix com org",
            "com.coredns.",
            "com.coredns.",
        ),
        (
            "rewrite name suffix .ingress.coredns.rocks nginx.coredns.rocks",
            "coredns.ingress.coredns.rocks.",
            "corednsnginx.coredns.rocks.",
        ),
        (
            "rewrite name suffix .ingress.coredns.rocks nginx.coredns.rocks answer auto",
            "coredns.ingress.coredns.rocks.",
            "coredns.ingress.coredns.rocks.",
        ),
        (
            "rewrite name substring service.us-west-1.example.org service.us-west-1.consul",
            "ftp.service.us-west-1.example.org.",
            "ftp.service.us-west-1.consul.",
        ),
        (
            "rewrite name substring service.us-west-1.example.org service.us-west-1.consul answer auto",
            "ftp.service.us-west-1.example.org.",
            "ftp.service.us-west-1.example.org.",
        ),
        (
            r"rewrite name regex (.*)-(us-west-1)\.coredns\.rocks {1}.service.{2}.consul",
            "ftp-us-west-1.coredns.rocks.",
            "ftp.service.us-west-1.consul.",
        ),
        (
            "rewrite stop {\n name regex (.*)-(us-west-1)\\.coredns\\.rocks {1}.service.{2}.consul\n answer name (.*)\\.service\\.(us-west-1)\\.consul {1}-{2}.coredns.rocks\n }",
            "ftp-us-west-1.coredns.rocks.",
            "ftp-us-west-1.coredns.rocks.",
        ),
        (
            r"rewrite name regex (.*)-(us-west-1)\.coredns\.rocks {1}.service.{2}.consul answer auto",
            "ftp-us-west-1.coredns.rocks.",
            "ftp-us-west-1.coredns.rocks.",
        ),
        // stop (the default) ends the rules; continue lets the next apply, and the replies
        // are turned back in reverse.
        (
            "rewrite name exact a.example.org b.example.org\n rewrite name exact b.example.org c.example.org",
            "b.example.org.",
            "b.example.org.",
        ),
        (
            "rewrite name prefix a b\n rewrite name prefix b c",
            "a.example.org.",
            "b.example.org.",
        ),
        (
            "rewrite continue name prefix a b\n rewrite name prefix b c",
            "a.example.org.",
            "c.example.org.",
        ),
        (
            "rewrite continue name exact a.example.org b.example.org\n rewrite name exact b.example.org c.example.org",
            "a.example.org.",
            "a.example.org.",
        ),
        // A rule that does not match does not stop the list.
        (
            "rewrite name exact x.example.org y.example.org\n rewrite name prefix a b",
            "a.example.org.",
            "b.example.org.",
        ),
    ];
    for (rules, name, owner) in cases {
        let block = echo(rules);
        let reply = ask(&block, name, RecordType::A).unwrap_or_else(|| panic!("{rules}"));
        assert_eq!(
            reply.queries[0].name().to_ascii(),
            *name,
            "{rules}: the client's question, as asked"
        );
        assert_eq!(
            answers(&reply),
            [format!("{owner} 60 IN A 10.0.0.1")],
            "{rules}"
        );
    }
}

/// `answer value` rewrites names in RDATA; `ttl` and `rcode` rules change the reply.
#[test]
fn response_rules() {
    let block = crate::server::chain::testing::block(
        r#". {
    rewrite stop {
        name suffix .arpa .arpa
        answer value (.*)\.service\.consul\. {1}.coredns.rocks.
    }
    rewrite ttl short.example. 15
    rewrite ttl ranged.example. 30-300
    rewrite continue ttl prefix low -10
    rewrite rcode gone.example. NXDOMAIN NOERROR
    template IN PTR in-addr.arpa {
        answer "{{ .Name }} 60 IN PTR ftp-us-west-1.service.consul."
    }
    template IN A example {
        match ^(short|ranged|low[.].*)[.]example[.]$
        answer "{{ .Name }} 60 IN A 10.0.0.1"
        answer "{{ .Name }} 5 IN A 10.0.0.2"
        fallthrough
    }
    template IN A example {
        rcode NXDOMAIN
    }
}"#,
    );
    let ptr = ask(&block, "30.30.30.10.in-addr.arpa.", RecordType::PTR).unwrap();
    assert_eq!(
        answers(&ptr),
        ["30.30.30.10.in-addr.arpa. 60 IN PTR ftp-us-west-1.coredns.rocks."]
    );
    let ttls = |name: &str| -> Vec<u32> {
        ask(&block, name, RecordType::A)
            .unwrap()
            .answers
            .iter()
            .map(|record| record.ttl)
            .collect()
    };
    assert_eq!(ttls("short.example."), [15, 15]);
    assert_eq!(ttls("ranged.example."), [60, 30]);
    assert_eq!(ttls("low.a.example."), [10, 5]);
    let gone = ask(&block, "gone.example.", RecordType::A).unwrap();
    assert_eq!(rcode(&gone), "NOERROR");
    let other = ask(&block, "other.example.", RecordType::A).unwrap();
    assert_eq!(rcode(&other), "NXDOMAIN");
}

/// `answer value` reaches the name of every type CoreDNS's `getRecordValueForRewrite` reads
/// (an SOA's MNAME, not its RNAME; a NAPTR's replacement, after its strings), and no other;
/// an owner no rule changes keeps its spelling.
#[test]
fn value_rules_reach_each_type_with_a_value() {
    let block = crate::server::chain::testing::block(
        r#". {
    rewrite stop {
        name suffix .example. .example.
        answer value (.*)\.old\. {1}.new.
    }
    template IN SRV example {
        answer "{{ .Name }} 60 IN SRV 0 0 80 web.old."
    }
    template IN MX example {
        answer "{{ .Name }} 60 IN MX 10 mail.old."
    }
    template IN NAPTR example {
        answer "{{ .Name }} 60 IN NAPTR 100 10 \"S\" \"SIP+D2U\" \"\" _sip._udp.old."
    }
    template IN NS example {
        answer "{{ .Name }} 60 IN NS ns.old."
    }
    template IN SOA example {
        answer "{{ .Name }} 60 IN SOA ns.old. host.old. 1 2 3 4 5"
    }
    template IN CNAME example {
        answer "{{ .Name }} 60 IN CNAME www.old."
    }
    template IN TXT example {
        answer "Kept.Example. 60 IN TXT \"x.old.\""
    }
}"#,
    );
    let cases = [
        (RecordType::SRV, "q.example. 60 IN SRV 0 0 80 web.new."),
        (RecordType::MX, "q.example. 60 IN MX 10 mail.new."),
        (
            RecordType::NAPTR,
            "q.example. 60 IN NAPTR 100 10 \"S\" \"SIP+D2U\" \"\" _sip._udp.new.",
        ),
        (RecordType::NS, "q.example. 60 IN NS ns.new."),
        (RecordType::SOA, "q.example. 60 IN SOA ns.new. host.old. 1 2 3 4 5"),
        (RecordType::CNAME, "q.example. 60 IN CNAME www.new."),
        (RecordType::TXT, "Kept.Example. 60 IN TXT \"x.old.\""),
    ];
    for (qtype, answer) in cases {
        let reply = ask(&block, "q.example.", qtype).unwrap();
        assert_eq!(answers(&reply), [answer], "{qtype}");
    }
}

/// `type` and `class` rules change what the rest of the chain is asked.
#[test]
fn types_and_classes() {
    let block = echo("rewrite continue type ANY HINFO\n rewrite class CH IN");
    let reply = ask(&block, "example.org.", RecordType::ANY).unwrap();
    assert_eq!(
        answers(&reply),
        ["example.org. 60 IN TXT \"IN HINFO\""],
        "the type asked was rewritten"
    );
    assert_eq!(
        reply.queries[0].query_type(),
        RecordType::ANY,
        "the client's question"
    );
    let chaos = ask_packet(
        &block,
        &query_class("example.org.", RecordType::TXT, DNSClass::CH),
    )
    .unwrap();
    assert_eq!(answers(&chaos), ["example.org. 60 IN TXT \"IN TXT\""]);
    assert_eq!(chaos.queries[0].query_class(), DNSClass::CH);
}

/// A rewritten name that is not a domain name is SERVFAIL.
#[test]
fn invalid_names() {
    let cases = [
        "rewrite name exact example.org. example..org.",
        r"rewrite name regex (.*)\.org {1}..x",
        "rewrite name suffix .org .aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.org",
    ];
    for rules in cases {
        let block = echo(rules);
        let reply = ask(&block, "example.org.", RecordType::A).unwrap();
        assert_eq!(rcode(&reply), "SERVFAIL", "{rules}");
    }
}

/// The most common customization: a name outside the cluster answered as a Service.
#[test]
fn into_the_cluster_zone() {
    let block = block(
        ".:53 {
    rewrite name exact db.example.com web.shop.svc.cluster.local
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        objects {FIXTURES}/shop.json
    }
}",
    );
    let reply = ask(&block, "db.example.com.", RecordType::A).unwrap();
    assert_eq!(rcode(&reply), "NOERROR");
    assert_eq!(answers(&reply), ["db.example.com. 5 IN A 10.96.0.20"]);
    assert!(reply.metadata.authoritative);
    // Names the rule does not take are untouched.
    let web = ask(&block, "web.shop.svc.cluster.local.", RecordType::A).unwrap();
    assert_eq!(
        answers(&web),
        ["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"]
    );
}
