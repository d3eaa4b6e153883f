//! NodeLocal DNSCache on the real nodes (issue 50): the add-on's objects as
//! deploy/nodelocaldns/node-local-dns.yaml declares them (node-cache's arguments as the add-on
//! passes them), its three variables filled as its header says for the transparent set-up
//! (`__PILLAR__DNS__SERVER__` 10.96.0.10, `__PILLAR__LOCAL__DNS__` 169.254.20.10,
//! `__PILLAR__DNS__DOMAIN__` cluster.local), with the image `clusterdns-node-cache:dev`
//! (xtask::images::node_cache), the DaemonSet on both nodes
//! — kube-proxy in iptables mode on node-1, nftables on node-2 — beside clusterdns as kube-dns.
//!
//! One patch, this machine's and not the manifest's: the kernel has no `dummy` link type, so
//! the DaemonSet's args get `--link-kind bridge` (the command's hidden, test-only flag; a
//! bridge with no ports holds the addresses as the dummy would). See docs/kind.md.
//!
//! What a user sees, checked: the DaemonSet Ready on both nodes; each node's `nodelocaldns`
//! link with both addresses and node-cache's 24 rules in its `iptables-save`; the client pods'
//! resolv.conf unchanged (the kubelet's, 10.96.0.10) and every lookup of answers.rs's table
//! (glibc, musl, getent) answered as `records` says, through the ClusterIP that is now the
//! node's own address; busybox's nslookup through 169.254.20.10; the node-cache of each node
//! counting the queries (its `prometheus :9253`); no conntrack entry on either node for the
//! local addresses while node-cache's own TCP connections to `kube-dns-upstream` are tracked
//! (the control); every kind of client on both nodes resolving 50 times a second loses no
//! lookup while the DaemonSet rolls out or a node-cache pod is deleted, and while a node-cache
//! container is SIGKILLed only that node's clients lose any (at most [`SIGKILL_BOUND`] each,
//! reported); and at the end, the DaemonSet deleted, the link and every rule gone from both
//! nodes (node-cache's teardown at SIGTERM) and pods resolving through kube-proxy again.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use xtask::nodes::{CLUSTER_DNS, Node, condition};
use xtask::operations::{Tallies, under_load};

use super::{RealCluster, items, sum};

/// The manifest of deploy/, a template.
const MANIFEST: &str = include_str!("../../../deploy/nodelocaldns/node-local-dns.yaml");
/// NodeLocal DNSCache's link-local address.
const LOCAL: &str = "169.254.20.10";
/// The comments node-cache's rules carry.
const RULE_COMMENT: &str = "NodeLocal DNS Cache";
/// The client pods, one on each node.
const CLIENTS: [&str; 2] = ["shop/client-node-1", "shop/client-node-2"];

/// The manifest as applied here: the variables filled as its header says, and this machine's
/// one patch (`--link-kind bridge`).
fn manifest() -> String {
    let args = r#""-pidfile", "/tmp/node-cache.pid" ]"#;
    // In the manifest's objects, not its header's comments.
    let count = |what: &str| {
        MANIFEST
            .lines()
            .filter(|line| !line.trim_start().starts_with('#') && line.contains(what))
            .count()
    };
    assert_eq!(
        count(args),
        1,
        "the manifest's args end as node-cache 1.26.4's do"
    );
    assert_eq!(
        count(&format!("image: {}", xtask::images::NODE_CACHE)),
        1,
        "the manifest runs {}",
        xtask::images::NODE_CACHE
    );
    let filled = MANIFEST
        .replace("__PILLAR__DNS__SERVER__", &CLUSTER_DNS.to_string())
        .replace("__PILLAR__LOCAL__DNS__", LOCAL)
        .replace("__PILLAR__DNS__DOMAIN__", "cluster.local")
        // This kernel has no dummy links (docs/kind.md).
        .replace(
            args,
            r#""-pidfile", "/tmp/node-cache.pid", "--link-kind", "bridge" ]"#,
        );
    // What node-cache fills itself is all that is left.
    let left: Vec<&str> = filled
        .match_indices("__PILLAR__")
        .map(|(at, _)| {
            filled[at..]
                .split(|c: char| !(c.is_ascii_uppercase() || c == '_'))
                .next()
                .unwrap()
        })
        .collect();
    assert!(
        left.iter()
            .all(|v| *v == "__PILLAR__CLUSTER__DNS__" || *v == "__PILLAR__UPSTREAM__SERVERS__"),
        "variables left unfilled: {left:?}"
    );
    filled
}

#[test]
fn node_local_dns_from_the_add_on_manifest_serves_pods_on_both_nodes_without_conntrack() {
    let Some(real) = RealCluster::shared(
        "real_node::node_cache::node_local_dns_from_the_add_on_manifest_serves_pods_on_both_nodes_without_conntrack",
    ) else {
        return;
    };
    import_image(&real);
    let kubectl = real.kubectl();
    let applied = Instant::now();
    kubectl
        .apply(&manifest())
        .unwrap_or_else(|e| panic!("the node-local-dns manifest: {e:#}"));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_daemonset(&real);
        eprintln!(
            "real nodes: node-local-dns Ready and set up on both nodes {:.1} s after the manifest was applied",
            applied.elapsed().as_secs_f64()
        );
        serves_without_conntrack(&real);
        lookups_through_rollouts(&real);
    }));
    // Whatever happened, the cluster goes back to how the rest of the group expects it.
    let removed = remove(&real);
    if let Err(panic) = result {
        if let Err(e) = &removed {
            eprintln!("node-local-dns's removal failed too: {e}");
        }
        std::panic::resume_unwind(panic);
    }
    removed.unwrap_or_else(|e| panic!("{e}"));
}

/// The node-cache image, built from the binary under test and imported on every node.
fn import_image(real: &RealCluster) {
    let work = real.nodes.dir.join("images/node-cache");
    std::fs::create_dir_all(&work).unwrap();
    let image = xtask::images::node_cache(Path::new(env!("CARGO_BIN_EXE_clusterdns")), &work)
        .unwrap_or_else(|e| panic!("the node-cache image: {e:#}"));
    let archive = work.join("node-cache.tar");
    image.write(&archive).unwrap();
    let shown = archive.display().to_string();
    for node in &real.nodes.nodes {
        let out = node.ctr(&["images", "import", &shown]).unwrap();
        assert!(
            out.status.success(),
            "{}: ctr images import {shown}: {}",
            node.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Waits for the DaemonSet's rollout: one Ready pod on each node.
fn wait_daemonset(real: &RealCluster) {
    real.kubectl()
        .run(&[
            "rollout",
            "status",
            "daemonset/node-local-dns",
            "-n",
            "kube-system",
            "--timeout=120s",
        ])
        .unwrap_or_else(|e| panic!("{e:#}\n{}", real.nodes.pods_report("kube-system")));
    let pods = node_cache_pods(real);
    let mut on: Vec<&str> = pods.iter().map(|(_, node)| node.as_str()).collect();
    on.sort_unstable();
    assert_eq!(
        on,
        ["node-1", "node-2"],
        "one node-cache pod Ready on each node"
    );
    // Ready is not set up: the manifest has no readiness probe, so the pod is Ready once its
    // container runs, before node-cache has made the link and written its rules (node-cache's
    // own pods too). What follows needs them: wait for both on every node.
    let ready = Instant::now();
    let mut last = String::new();
    xtask::kube::wait_until(
        "node-cache's link and 24 rules on every node",
        Duration::from_secs(60),
        || {
            last.clear();
            for node in &real.nodes.nodes {
                let (link, _) = on_node(node, "ip", &["link", "show", "nodelocaldns"]);
                let rules = node_cache_rules(node).len();
                if !link || rules != 24 {
                    last = format!("{}: link {link}, {rules} rules", node.name);
                    return Ok(false);
                }
            }
            Ok(true)
        },
    )
    .unwrap_or_else(|e| panic!("{e:#}: {last}\n{}", real.nodes.pods_report("kube-system")));
    eprintln!(
        "real nodes: node-cache's link and rules on both nodes {:.2} s after its pods were Ready",
        ready.elapsed().as_secs_f64()
    );
}

/// The node-local-dns pods that are Ready and not going, with their nodes.
fn node_cache_pods(real: &RealCluster) -> Vec<(String, String)> {
    items(&real.get(&["pods", "-n", "kube-system", "-l", "k8s-app=node-local-dns"]))
        .iter()
        .filter(|pod| condition(pod, "Ready") && pod["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|pod| {
            Some((
                pod["metadata"]["name"].as_str()?.to_owned(),
                pod["spec"]["nodeName"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

/// `PROGRAM ARGS` in `node`'s network namespace: its standard output, whatever its status.
fn on_node(node: &Node, program: &str, args: &[&str]) -> (bool, String) {
    let out = node
        .exec(program, args)
        .unwrap_or_else(|e| panic!("{}: {program}: {e:#}", node.name));
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Lines of the node's `iptables-save` that are node-cache's rules.
fn node_cache_rules(node: &Node) -> Vec<String> {
    let (ok, text) = on_node(node, "iptables-save", &[]);
    assert!(ok, "{}: iptables-save: {text}", node.name);
    text.lines()
        .filter(|line| line.contains(RULE_COMMENT))
        .map(str::to_owned)
        .collect()
}

/// The sum of node-cache's `coredns_dns_requests_total` on `node` (its Corefile's
/// `prometheus :9253`, on the node's address).
fn node_cache_requests(real: &RealCluster, node: &Node) -> f64 {
    let (status, body) = real
        .nodes
        .http_get(SocketAddr::from((node.address(), 9253)), "/metrics")
        .unwrap_or_else(|e| panic!("{}: node-cache's metrics: {e:#}", node.name));
    assert_eq!(status, 200, "{}: node-cache's metrics", node.name);
    sum(&body, "coredns_dns_requests_total", &[])
}

/// The connections in `node`'s conntrack table whose original destination is `address`, for
/// `protocol`, each as its original tuple (`src=.. dst=.. sport=.. dport=..`): the table as the
/// node's network namespace shows it (`/proc/self/net/nf_conntrack` read by a process in it;
/// this machine has no `conntrack` tool).
fn conntrack(node: &Node, protocol: &str, address: &str) -> BTreeSet<String> {
    let (ok, text) = on_node(node, "cat", &["/proc/self/net/nf_conntrack"]);
    assert!(ok, "{}: the conntrack table: {text}", node.name);
    let dst = format!("dst={address}");
    text.lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            // `ipv4 2 udp 17 TIMEOUT [STATE] src=.. dst=.. sport=.. dport=.. ...`: the first
            // four of these are the original direction's.
            (words.get(2) == Some(&protocol)).then_some(())?;
            let at = words.iter().position(|w| w.starts_with("src="))?;
            let original = words.get(at..at + 4)?;
            (original[1] == dst).then(|| original.join(" "))
        })
        .collect()
}

/// The interface, the rules, the answers through both addresses, the queries counted by each
/// node's node-cache, and no conntrack entry for them.
fn serves_without_conntrack(real: &RealCluster) {
    let upstream_ip =
        real.get(&["service", "kube-dns-upstream", "-n", "kube-system"])["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .to_owned();
    for node in &real.nodes.nodes {
        let (ok, link) = on_node(node, "ip", &["-o", "addr", "show", "dev", "nodelocaldns"]);
        assert!(ok, "{}: no nodelocaldns link: {link}", node.name);
        for address in [LOCAL.to_owned(), CLUSTER_DNS.to_string()] {
            assert!(
                link.contains(&format!("inet {address}/32")),
                "{}: nodelocaldns lacks {address}: {link}",
                node.name
            );
        }
        let rules = node_cache_rules(node);
        assert_eq!(
            rules.len(),
            24,
            "{} ({}): node-cache's twelve rules for each of the two addresses:\n{}",
            node.name,
            node.proxy_mode.as_str(),
            rules.join("\n")
        );
    }
    // Earlier tests' lookups through kube-proxy left entries for 10.96.0.10 (UDP: 30 s
    // unreplied, 120 s answered): what is there now is not counted after.
    let mut tracked_before = BTreeMap::new();
    for node in &real.nodes.nodes {
        for address in [LOCAL.to_owned(), CLUSTER_DNS.to_string()] {
            for protocol in ["udp", "tcp"] {
                let old = conntrack(node, protocol, &address);
                if !old.is_empty() {
                    eprintln!(
                        "real nodes: {}: {} conntrack entries for {protocol} to {address} \
                         from before node-local-dns",
                        node.name,
                        old.len()
                    );
                }
                tracked_before.insert((node.name.clone(), protocol, address.clone()), old);
            }
        }
    }
    let before: Vec<f64> = real
        .nodes
        .nodes
        .iter()
        .map(|node| node_cache_requests(real, node))
        .collect();

    // Through the ClusterIP, as the pods' resolv.conf says (answers.rs checks it is the
    // kubelet's, unchanged): every name kind, glibc, musl and getent, on both nodes.
    let (checked, failures) = super::answers::every_name_kind(real);
    if !failures.is_empty() {
        // What node-cache and kube-dns answer the ExternalName from node-1 (dig).
        let node = &real.nodes.nodes[0];
        let mut seen = String::new();
        for server in [
            LOCAL,
            CLUSTER_DNS.to_string().as_str(),
            upstream_ip.as_str(),
        ] {
            for tcp in ["+notcp", "+tcp"] {
                let (_, out) = on_node(
                    node,
                    "dig",
                    &[
                        tcp,
                        &format!("@{server}"),
                        "partner.shop.svc.cluster.local.",
                        "A",
                    ],
                );
                seen.push_str(&format!("== dig {tcp} @{server}\n{out}\n"));
            }
        }
        panic!(
            "through node-local-dns, {} of {checked} lookups differ from records:\n{}\n{seen}",
            failures.len(),
            failures.join("\n")
        );
    }
    // Through 169.254.20.10, with busybox's nslookup (the C libraries take the resolv.conf's
    // nameserver only).
    let web_ip = real.get(&["service", "web", "-n", "shop"])["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .to_owned();
    for client in CLIENTS {
        let (namespace, pod) = client.split_once('/').unwrap();
        for (name, address) in [
            ("web.shop.svc.cluster.local", web_ip.as_str()),
            ("api.partner.example", "192.0.2.10"),
        ] {
            let out = real.sh(namespace, pod, &format!("nslookup -type=a {name} {LOCAL}"));
            assert!(
                out.lines()
                    .any(|line| line.starts_with("Server:") && line.contains(LOCAL)),
                "{client}: nslookup {name} {LOCAL} asked another server:\n{out}"
            );
            assert!(
                out.contains(&format!("Address: {address}")),
                "{client}: nslookup {name} {LOCAL}: no {address}:\n{out}"
            );
        }
    }

    for (node, before) in real.nodes.nodes.iter().zip(before) {
        let after = node_cache_requests(real, node);
        eprintln!(
            "real nodes: {} ({}): node-cache counted {} queries from the lookups",
            node.name,
            node.proxy_mode.as_str(),
            after - before
        );
        // Each client's table (22 lookups, glibc and musl, A and AAAA, the search list) and
        // getent's, and the two nslookups: far more than 50 queries on each node.
        assert!(
            after - before >= 50.0,
            "{}: node-cache counted {} queries; the pods' lookups went elsewhere",
            node.name,
            after - before
        );
        for address in [LOCAL.to_owned(), CLUSTER_DNS.to_string()] {
            for protocol in ["udp", "tcp"] {
                let old = &tracked_before[&(node.name.clone(), protocol, address.clone())];
                let entries: Vec<String> = conntrack(node, protocol, &address)
                    .difference(old)
                    .cloned()
                    .collect();
                eprintln!(
                    "real nodes: {}: new conntrack entries for {protocol} to {address}: {}",
                    node.name,
                    entries.len()
                );
                assert!(
                    entries.is_empty(),
                    "{}: DNS to {address} created conntrack entries:\n{}",
                    node.name,
                    entries.join("\n")
                );
            }
        }
        // The control: conntrack does record on this node — node-cache's own connections to
        // kube-dns-upstream (TCP, `force_tcp`) are there.
        let tracked = conntrack(node, "tcp", &upstream_ip);
        eprintln!(
            "real nodes: {}: conntrack entries for node-cache's TCP to kube-dns-upstream {upstream_ip}: {}",
            node.name,
            tracked.len()
        );
        assert!(
            !tracked.is_empty(),
            "{}: no conntrack entry for node-cache's TCP to kube-dns-upstream {upstream_ip}: \
             the empty listings above prove nothing",
            node.name
        );
    }
}

/// The client pods on both nodes look a name up 50 times a second with every client kind
/// while the DaemonSet rolls out, while a node-cache pod is deleted, and while a node-cache
/// container is SIGKILLed: each lookup that failed is counted and reported.
fn lookups_through_rollouts(real: &RealCluster) {
    let kubectl = real.kubectl();
    let mut failed = Vec::new();
    let mut report = |what: &str, tallies: &Tallies| {
        for (pod, kinds) in tallies {
            for (kind, tally) in kinds {
                eprintln!(
                    "real nodes: node-local-dns {what}, {pod}, {kind}: {} lookups, {} failed, {} over 1 s",
                    tally.lookups, tally.failed, tally.slow
                );
                assert!(
                    tally.lookups >= 500,
                    "{what}: {pod} {kind}: {} lookups",
                    tally.lookups
                );
                failed.push((
                    what.to_owned(),
                    format!("{pod} {kind}"),
                    tally.failed,
                    tally.bad_at_ms.clone(),
                ));
            }
        }
    };

    // A rollout restart: each node's pod replaced in turn.
    let (tallies, done) = under_load(
        &real.nodes,
        &CLIENTS,
        50,
        20,
        Duration::from_secs(3),
        || {
            let started = Instant::now();
            kubectl.run(&[
                "rollout",
                "restart",
                "daemonset/node-local-dns",
                "-n",
                "kube-system",
            ])?;
            wait_daemonset(real);
            anyhow::Ok(started.elapsed())
        },
    )
    .unwrap();
    let took = done.unwrap_or_else(|e| panic!("{e:#}"));
    eprintln!(
        "real nodes: node-local-dns rollout restart done in {:.1} s",
        took.as_secs_f64()
    );
    report("rollout restart", &tallies);

    // node-1's pod deleted (SIGTERM: node-cache tears down and exits; the DaemonSet makes
    // another).
    let (tallies, ()) = under_load(
        &real.nodes,
        &CLIENTS,
        50,
        20,
        Duration::from_secs(3),
        || {
            let (pod, _) = node_cache_pods(real)
                .into_iter()
                .find(|(_, node)| node == "node-1")
                .expect("a node-cache pod on node-1");
            kubectl
                .run(&["delete", "pod", &pod, "-n", "kube-system", "--wait=false"])
                .unwrap();
            xtask::kube::wait_until(
                "node-1's node-cache pod replaced",
                Duration::from_secs(120),
                || {
                    Ok(node_cache_pods(real)
                        .iter()
                        .any(|(name, node)| node == "node-1" && *name != pod))
                },
            )
            .unwrap();
        },
    )
    .unwrap();
    report("pod deleted", &tallies);

    // node-2's node-cache SIGKILLed: no teardown, the kubelet starts the container again.
    let (tallies, ()) = under_load(
        &real.nodes,
        &CLIENTS,
        50,
        20,
        Duration::from_secs(3),
        || {
            let (pod, _) = node_cache_pods(real)
                .into_iter()
                .find(|(_, node)| node == "node-2")
                .expect("a node-cache pod on node-2");
            let restarts = || {
                real.get(&["pod", &pod, "-n", "kube-system"])["status"]["containerStatuses"][0]
                ["restartCount"]
                .as_u64()
                .unwrap_or(0)
            };
            let before = restarts();
            let (_, id) = real.nodes.container("kube-system", &pod, None).unwrap();
            let pid = xtask::operations::server_process(&id).unwrap();
            xtask::netns::signal(pid, Signal::SIGKILL);
            xtask::kube::wait_until(
                "node-2's node-cache restarted",
                Duration::from_secs(120),
                || {
                    let now = real.get(&["pod", &pod, "-n", "kube-system"]);
                    Ok(restarts() > before && condition(&now, "Ready"))
                },
            )
            .unwrap();
        },
    )
    .unwrap();
    report("container SIGKILLed", &tallies);

    let lost: u64 = failed.iter().map(|(_, _, n, _)| n).sum();
    eprintln!("real nodes: node-local-dns: {lost} lookups failed in all three operations");
    for (what, who, n, at) in &failed {
        if *n > 0 {
            eprintln!("real nodes: node-local-dns {what}: {who}: {n} failed, at {at:?} ms");
        }
    }
    // A pod replaced by SIGTERM (the rollout, the deletion) loses nothing: node-cache removes
    // its rules and link while it still answers (node-cache's order), and the queries after go
    // to kube-dns through kube-proxy until the new pod's rules are in. A SIGKILL leaves the
    // rules with nothing behind them until the kubelet has started the container again: that
    // node's clients lose what they send meanwhile (a new socket each lookup retries in a
    // second, and is slow rather than failed), the other node's nothing.
    let mut wrong = Vec::new();
    for (what, who, n, _) in &failed {
        let bound = match what.as_str() {
            "container SIGKILLed" if who.starts_with("shop/client-node-2") => SIGKILL_BOUND,
            _ => 0,
        };
        if *n > bound {
            wrong.push(format!(
                "{what}: {who}: {n} failed lookups, more than {bound}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The most lookups one client on the SIGKILLed node-cache's node may lose: 5 s of them at 50
/// a second (measured in three runs: 34–73 for one TCP connection, 0–4 for one UDP socket,
/// 0–1 for glibc, none for musl; the kubelet restarts the container in about 1.5 s).
const SIGKILL_BOUND: u64 = 250;

/// The DaemonSet and the manifest's other objects deleted; then on each node the link and
/// every rule gone (node-cache's teardown at SIGTERM), and lookups through kube-proxy again.
fn remove(real: &RealCluster) -> Result<(), String> {
    let kubectl = real.kubectl();
    let manifest = manifest();
    kubectl
        .run_with(
            &[
                "delete",
                "-f",
                "-",
                "--ignore-not-found",
                "--wait=true",
                "--timeout=120s",
            ],
            &manifest,
        )
        .map_err(|e| format!("deleting node-local-dns: {e:#}"))?;
    xtask::kube::wait_until(
        "the node-local-dns pods gone",
        Duration::from_secs(120),
        || {
            Ok(items(&kubectl.get(&[
                "pods",
                "-n",
                "kube-system",
                "-l",
                "k8s-app=node-local-dns",
            ])?)
            .is_empty())
        },
    )
    .map_err(|e| format!("{e:#}"))?;
    let mut left = Vec::new();
    for node in &real.nodes.nodes {
        let (link, said) = on_node(node, "ip", &["link", "show", "nodelocaldns"]);
        if link {
            left.push(format!("{}: the nodelocaldns link: {said}", node.name));
            let _ = node.exec("ip", &["link", "del", "nodelocaldns"]);
        }
        let rules = node_cache_rules(node);
        if !rules.is_empty() {
            left.push(format!(
                "{}: {} rules: {}",
                node.name,
                rules.len(),
                rules.join("; ")
            ));
        }
    }
    if !left.is_empty() {
        return Err(format!(
            "node-cache left, after its pods ended (-skipteardown false):\n{}",
            left.join("\n")
        ));
    }
    // kube-dns through kube-proxy again, from both nodes' pods.
    for client in CLIENTS {
        let (namespace, pod) = client.split_once('/').unwrap();
        let out = real.sh(
            namespace,
            pod,
            "lookup-musl addr kubernetes.default.svc.cluster.local",
        );
        if !out.contains("address 10.96.0.1") {
            return Err(format!(
                "{client}: after node-local-dns, kubernetes.default: {out}"
            ));
        }
    }
    Ok(())
}
