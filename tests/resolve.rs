//! `resolv-conf` and `resolve-cost` through the real binary: what a user types and sees.

use std::process::{Command, Output};

use crate::common::fixture;

/// Runs `clusterdns ARGS...`.
pub fn clusterdns(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(args)
        .output()
        .expect("run clusterdns")
}

/// Its stdout, after checking it exited 0.
pub fn stdout_of(args: &[&str]) -> String {
    let output = clusterdns(args);
    assert!(
        output.status.success(),
        "clusterdns {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Its stderr, after checking it exited 2.
fn error_of(args: &[&str]) -> String {
    let output = clusterdns(args);
    assert_eq!(output.status.code(), Some(2), "clusterdns {args:?}");
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn resolv_conf_is_what_the_kubelet_writes() {
    assert_eq!(
        stdout_of(&[
            "resolv-conf",
            "--namespace",
            "shop",
            "--nameserver",
            "10.96.0.10"
        ]),
        "search shop.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("resolv.conf");
    std::fs::write(
        &node,
        "nameserver 172.18.0.1\nsearch us-east-1.compute.internal\noptions edns0\n",
    )
    .unwrap();
    let node = node.to_str().unwrap();
    assert_eq!(
        stdout_of(&[
            "resolv-conf",
            "--namespace",
            "batch",
            "--nameserver",
            "10.96.0.10",
            "--host-resolv-conf",
            node,
            "--dns-config",
            r#"{"options":[{"name":"ndots","value":"2"}]}"#,
        ]),
        "search batch.svc.cluster.local svc.cluster.local cluster.local us-east-1.compute.internal\nnameserver 10.96.0.10\noptions ndots:2\n"
    );
    // hostNetwork with ClusterFirst gets the node's file; ClusterFirstWithHostNet the cluster's.
    let host = [
        "resolv-conf",
        "--namespace",
        "x",
        "--host-resolv-conf",
        node,
        "--host-network",
    ];
    assert_eq!(
        stdout_of(&host),
        "search us-east-1.compute.internal\nnameserver 172.18.0.1\noptions edns0\n"
    );
    let with_host_net = [&host[..], &["--dns-policy", "ClusterFirstWithHostNet"]].concat();
    assert!(stdout_of(&with_host_net).starts_with("search x.svc.cluster.local "));
}

#[test]
fn resolv_conf_errors_say_where() {
    let error = error_of(&[
        "resolv-conf",
        "--namespace",
        "shop",
        "--dns-config",
        r#"{"options":[{"name":"ndots","vlue":"2"}]}"#,
    ]);
    assert!(
        error.contains("--dns-config at options[0].vlue: unknown field `vlue`"),
        "{error}"
    );
    let error = error_of(&[
        "resolv-conf",
        "--namespace",
        "shop",
        "--dns-config",
        r#"{"nameservers":["dns.google"]}"#,
    ]);
    assert!(
        error.contains("spec.dnsConfig.nameservers[0]: 'dns.google' must be a valid IP address"),
        "{error}"
    );
    let error = error_of(&["resolv-conf", "--namespace", "shop", "--dns-policy", "None"]);
    assert!(
        error.contains("must provide `dnsConfig` when `dnsPolicy` is None"),
        "{error}"
    );
    let missing = fixture("no-such-resolv.conf");
    let error = error_of(&[
        "resolv-conf",
        "--namespace",
        "shop",
        "--host-resolv-conf",
        missing.to_str().unwrap(),
    ]);
    assert!(error.contains("no-such-resolv.conf"), "{error}");
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("resolv.conf");
    std::fs::write(&node, "search a\nnameserver\n").unwrap();
    let error = error_of(&[
        "resolv-conf",
        "--namespace",
        "shop",
        "--host-resolv-conf",
        node.to_str().unwrap(),
    ]);
    assert!(
        error.contains("resolv.conf: line 2: nameserver list is empty"),
        "{error}"
    );
}
