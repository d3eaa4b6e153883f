//! What node-cache refuses: a bad flag, a missing Service environment, a bad kube-dns
//! ConfigMap, a template with a variable nobody fills, a server that cannot start — each a
//! clear error naming what was expected, exit status 2, and (run in a namespace of its own)
//! no interface and no rule left behind.

use std::process::Output;

use super::namespaces::{iptables_rules, link_addresses};
use super::{Files, MANIFEST_TEMPLATE, binary, installed_template};
use crate::common::netns::{self, Missing, Netns};

/// Runs node-cache in `node` with `args` (and `env`): its output.
fn run(node: &Netns, args: &[String], env: &[(&str, &str)]) -> Output {
    let mut command = node.command(binary(), &[]);
    command.args(args).env("RUST_LOG", "info");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

/// `out` failed with status 2 saying `expected`, and `node` has no interface and no rule.
fn refused(node: &Netns, out: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(expected),
        "expected {expected:?} in:\n{stderr}"
    );
    assert_eq!(link_addresses(node, "nodelocaldns"), None, "{stderr}");
    assert_eq!(iptables_rules(node), Vec::<String>::new(), "{stderr}");
}

fn with(args: Vec<String>, extra: &[&str]) -> Vec<String> {
    let mut args = args;
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    args
}

#[test]
fn node_cache_bad_flags_are_clear_errors() {
    let files = Files::new(&installed_template());
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "nope",
            &[],
            "-localip: \"nope\" is not an IP address (expected addresses separated by commas",
        ),
        (
            "169.254.20.10,fd00::a",
            &[],
            "-localip: fd00::a is not of the family of 169.254.20.10",
        ),
        (
            "169.254.20.10",
            &["-syncinterval", "5d"],
            "unknown unit \"d\"",
        ),
        (
            "169.254.20.10",
            &["-health-port", "http"],
            "invalid value 'http' for '--health-port",
        ),
        // Go's bool flags take their value after `=`: `-setupiptables false` is a stray word.
        (
            "169.254.20.10",
            &["-setupiptables", "false"],
            "unexpected argument 'false'",
        ),
        (
            "169.254.20.10",
            &["--netfilter", "ebtables"],
            "invalid value 'ebtables'",
        ),
    ];
    for (localip, extra, expected) in cases {
        let out = std::process::Command::new(binary())
            .args(with(files.args(localip), extra))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{localip} {extra:?}: {stderr}");
        assert!(
            stderr.contains(expected),
            "expected {expected:?} in:\n{stderr}"
        );
        assert!(!files.path("Corefile").exists(), "a Corefile was written");
    }
}

#[test]
fn node_cache_bad_inputs_leave_no_interface_or_rule() {
    let test = "node_cache_bad_inputs_leave_no_interface_or_rule";
    if netns::skip(test) {
        return;
    }
    let node = Netns::new("node").unwrap();
    let upstream = [("KUBE_DNS_UPSTREAM_SERVICE_HOST", "10.96.0.11")];
    let bridge = ["--link-kind", "bridge"];

    // No Service environment.
    let files = Files::new(&installed_template());
    let out = run(&node, &with(files.args("169.254.20.10"), &bridge), &[]);
    refused(
        &node,
        &out,
        "the template forwards to __PILLAR__CLUSTER__DNS__, and -upstreamsvc \
         kube-dns-upstream: $KUBE_DNS_UPSTREAM_SERVICE_HOST is not set",
    );
    let out = run(
        &node,
        &with(files.args("169.254.20.10"), &bridge),
        &[("KUBE_DNS_UPSTREAM_SERVICE_HOST", "kube-dns")],
    );
    refused(
        &node,
        &out,
        "$KUBE_DNS_UPSTREAM_SERVICE_HOST is \"kube-dns\", not an IP address",
    );

    // A bad kube-dns ConfigMap key.
    std::fs::write(
        files.path("kube-dns/stubDomains"),
        r#"{"acme.local": "1.2.3.4"}"#,
    )
    .unwrap();
    let out = run(
        &node,
        &with(files.args("169.254.20.10"), &bridge),
        &upstream,
    );
    refused(
        &node,
        &out,
        "stubDomains: invalid JSON at acme.local: invalid type: string \"1.2.3.4\", expected a \
         sequence",
    );

    // The installer's variable left in the template.
    let files = Files::new(MANIFEST_TEMPLATE);
    let out = run(
        &node,
        &with(files.args("169.254.20.10"), &bridge),
        &upstream,
    );
    refused(
        &node,
        &out,
        "Corefile.base:1: __PILLAR__DNS__DOMAIN__ is not a variable node-cache fills",
    );

    // A template that fills but is no Corefile.
    let files = Files::new(".:53 {\n    bind __PILLAR__LOCAL__DNS__\n    frobnicate\n}\n");
    let out = run(
        &node,
        &with(files.args("169.254.20.10"), &bridge),
        &upstream,
    );
    refused(&node, &out, "frobnicate");

    // The interface made, then the server cannot bind: the interface goes again.
    let files = Files::new(".:53 {\n    bind 192.0.2.1\n    errors\n}\n");
    let out = run(
        &node,
        &with(files.args("169.254.20.10"), &bridge),
        &upstream,
    );
    refused(&node, &out, "192.0.2.1");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("Added interface - nodelocaldns"), "{log}");
    assert!(log.contains("Tearing down"), "{log}");
}

#[test]
fn node_cache_dummy_link_is_the_default_and_its_absence_is_a_clear_error() {
    let test = "node_cache_dummy_link_is_the_default_and_its_absence_is_a_clear_error";
    if netns::skip(test) {
        return;
    }
    let node = Netns::new("node").unwrap();
    let probe = node.exec("ip", &["link", "add", "probe0", "type", "dummy"]);
    if probe.status.success() {
        netns::unavailable(
            test,
            "this kernel has the dummy link type: the error path is not reachable here",
            Missing::Skip,
        );
        return;
    }
    let files = Files::new(&installed_template());
    let out = run(
        &node,
        &files.args("169.254.20.10"),
        &[("KUBE_DNS_UPSTREAM_SERVICE_HOST", "10.96.0.11")],
    );
    refused(
        &node,
        &out,
        "ip link add nodelocaldns type dummy: Error: Unknown device type. (this kernel has no \
         dummy link type: its dummy module is missing)",
    );
}
