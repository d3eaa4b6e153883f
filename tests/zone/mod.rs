//! The cluster zone's answers, rule by rule (coredns-behaviour.md §1 and §7), asked through
//! the server's request path and written as zone-file text. The cases and their check are
//! here; the rules are in one module each, the plugin's options in three.

mod apex;
mod external_names;
mod filter_options;
mod options;
mod pod_options;
mod reverse;
mod services;

use crate::common::{Offline, Reply, expect};

/// The plugin as kubeadm configures it, on the fixture that exercises every rule.
const RULES: &str = r#"
.:53 {
    bind 127.0.0.1
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        ttl 30
        objects {FIXTURES}/rules.json
    }
}
"#;

/// One question and the whole expected answer. Negative answers must carry exactly the
/// SOA of the zone the name falls in; positive ones an empty authority section. A section
/// left out (`..Default::default()`) is empty.
#[derive(Default)]
struct Case {
    /// What the case shows, for the failure message.
    what: &'static str,
    /// The question's name.
    name: &'static str,
    /// The question's type.
    qtype: &'static str,
    /// The answer's rcode.
    rcode: &'static str,
    /// The answer section, as zone-file lines.
    answer: &'static [&'static str],
    /// The additional section, as zone-file lines.
    additional: &'static [&'static str],
}

const NXDOMAIN: &str = "NXDOMAIN";
const NOERROR: &str = "NOERROR";

fn soa_for(name: &str, ttl: u32) -> String {
    let lower = name.to_ascii_lowercase();
    let zone = [
        "in-addr.arpa.",
        "ip6.arpa.",
        "cluster.local.",
        "other.example.",
    ]
    .into_iter()
    .find(|zone| lower.ends_with(zone))
    .expect("a served zone");
    // The SOA is owned by the zone as the question spells it.
    let spelled = &name[name.len() - zone.len()..];
    format!(
        "{spelled} {} IN SOA ns.dns.{spelled} hostmaster.{spelled} SERIAL 7200 1800 86400 {ttl}",
        ttl.min(300)
    )
}

fn check(server: &Offline, cases: &[Case], ttl: u32) {
    let mut failures = Vec::new();
    for case in cases {
        let reply: Reply = server.ask(case.name, case.qtype);
        let negative = case.rcode == NXDOMAIN || case.answer.is_empty();
        let authority = if negative {
            vec![soa_for(case.name, ttl)]
        } else {
            Vec::new()
        };
        let want = (
            case.rcode.to_owned(),
            true,
            expect(case.answer),
            expect(&authority.iter().map(String::as_str).collect::<Vec<_>>()),
            expect(case.additional),
        );
        let got = (
            reply.rcode.clone(),
            reply.authoritative,
            reply.answer.clone(),
            reply.authority.clone(),
            reply.additional.clone(),
        );
        if want != got {
            failures.push(format!(
                "{} ({} {}):\n  want rcode {} aa {}\n    answer {:#?}\n    authority {:#?}\n    additional {:#?}\n  got rcode {} aa {}\n    answer {:#?}\n    authority {:#?}\n    additional {:#?}",
                case.what, case.name, case.qtype, want.0, want.1, want.2, want.3, want.4, got.0,
                got.1, got.2, got.3, got.4
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// The rules fixture with other plugin options.
fn rules_with(zones: &str, options: &str) -> Offline {
    Offline::new(&format!(
        r#"
.:53 {{
    bind 127.0.0.1
    kubernetes {zones} {{
        {options}
        objects {{FIXTURES}}/rules.json
    }}
}}
"#
    ))
}

const ZONES: &str = "cluster.local in-addr.arpa ip6.arpa";
