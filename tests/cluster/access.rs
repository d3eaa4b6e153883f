//! What clusterdns may read and how it asks: each ClusterRole grant, both list modes, the
//! selectors it sends, and its credentials (a client certificate, a kubeconfig context, a
//! token file rotated), and a reload that keeps the watch.

use super::*;

/// The grants of ClusterRole `name` as the API server holds it: `(group, resource, verb)`.
fn grants(cluster: &Cluster, name: &str) -> Vec<(String, String, String)> {
    let role = cluster.get(&["clusterrole", name]);
    let mut grants = Vec::new();
    for rule in role["rules"].as_array().unwrap() {
        let strings = |key: &str| -> Vec<String> {
            rule[key]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        for group in strings("apiGroups") {
            for resource in strings("resources") {
                for verb in strings("verbs") {
                    grants.push((group.clone(), resource.clone(), verb));
                }
            }
        }
    }
    grants.sort();
    grants
}

/// The ClusterRole of kubeadm's CoreDNS (cmd/kubeadm/app/phases/addons/dns/manifests.go,
/// 1.36): list and watch on endpoints, services, pods, namespaces and endpointslices.
const KUBEADM_COREDNS_GRANTS: &[(&str, &str)] = &[
    ("", "endpoints"),
    ("", "services"),
    ("", "pods"),
    ("", "namespaces"),
    ("discovery.k8s.io", "endpointslices"),
];

#[test]
fn every_grant_of_the_cluster_role_is_needed_and_a_missing_one_is_named() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "rbac";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "app", 1));
    cluster.apply(&service(ns, "app", "app", json!({})));
    let ip = wait_ready_pods(cluster, ns, "app", 1).remove(0);
    let all = grants(cluster, "system:coredns");
    // No wider than kubeadm's CoreDNS: each grant is one of its grants.
    for (group, resource, verb) in &all {
        assert!(
            ["list", "watch"].contains(&verb.as_str())
                && KUBEADM_COREDNS_GRANTS.contains(&(group.as_str(), resource.as_str())),
            "{group}/{resource} {verb} is not in CoreDNS's ClusterRole"
        );
    }
    assert_eq!(all.len(), 8, "{all:?}");

    // For each grant, an account with all the others, and clusterdns running as it with the
    // ConfigMap's Corefile and `pods verified` (so that pods are read too). A streaming list
    // is a watch, for which the API server asks no `list` grant: `list` is what the watch
    // falls back on where streaming lists are refused, and is tested with `list_mode
    // paginated`. Without `watch`, the resource is listed in pages instead of streamed.
    let servers: Vec<((String, String, String), InCluster)> = all
        .iter()
        .map(|grant| {
            let (_, resource, verb) = grant;
            let name = format!("without-{resource}-{verb}");
            let mut rules: Vec<Value> = Vec::new();
            for (g, r, v) in all.iter().filter(|other| *other != grant) {
                rules.push(json!({"apiGroups": [g], "resources": [r], "verbs": [v]}));
            }
            let role = format!("clusterdns-test:{name}");
            cluster.apply(
                &json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": role}, "rules": rules,
                })
                .to_string(),
            );
            account(cluster, ns, &name, &role);
            let mode = if verb == "list" {
                "\n       list_mode paginated"
            } else {
                ""
            };
            let server = clusterdns_as(
                cluster,
                ns,
                &name,
                &format!("pods verified\n       startup_timeout 1s{mode}"),
            );
            (grant.clone(), server)
        })
        .collect();

    for ((group, resource, verb), server) in &servers {
        let user = format!("system:serviceaccount:{ns}:without-{resource}-{verb}");
        // One line names the resource, the verb and the account, and what to grant.
        let needle = format!("forbidden to {verb} {resource}");
        server.wait_log(&needle, PATIENCE);
        let log = server.log();
        let line = log.lines().find(|l| l.contains(&needle)).unwrap();
        assert!(line.contains(&user), "{line}");
        let group_name = if group.is_empty() {
            "\"\""
        } else {
            group.as_str()
        };
        assert!(line.contains(group_name), "{line}");
        // The metrics count the refusals, by resource.
        let (_, metrics) = server.http_get("metrics", "/metrics");
        assert!(
            metric(
                &metrics,
                "clusterdns_kubernetes_api_requests_total{code=\"403\",zone=\"cluster.local.\"} "
            ) >= 1.0
        );
        assert!(
            metric(
                &metrics,
                &format!(
                    "clusterdns_kubernetes_watch_errors_total{{resource=\"{resource}\",zone=\"cluster.local.\"}} "
                )
            ) >= 1.0
        );
        // What it still answers. Without a list nothing is ever whole: the cluster zone is
        // SERVFAIL (never a false NXDOMAIN) and /ready says it has not synced. Without a
        // watch, the listed state is served and /ready says the API server is failing.
        let (status, body) = server.http_get("ready", "/ready");
        let app = server.ask_udp("app.rbac.svc.cluster.local.", "A");
        let pod = server.ask_udp(&format!("{}.rbac.pod.cluster.local.", dashed(&ip)), "A");
        if verb == "list" {
            assert_eq!(status, 503, "{resource}: {body}");
            assert!(body.contains("not synced"), "{body}");
            assert_eq!(app.rcode, "SERVFAIL", "{resource}: {app:?}");
        } else {
            assert_eq!(status, 200, "{resource}: {body}");
            assert!(body.contains(&needle), "{resource}: {body}");
            assert_eq!(app.rcode, "NOERROR", "{resource}: {app:?}");
            assert_eq!(pod.rcode, "NOERROR", "{resource}: {pod:?}");
        }
    }

    // The grant given back (the role of one of them made deploy/'s whole again): picked up at
    // the next retry, no restart.
    let ((_, resource, verb), server) = &servers[0];
    let rules: Vec<Value> = all
        .iter()
        .map(|(g, r, v)| json!({"apiGroups": [g], "resources": [r], "verbs": [v]}))
        .collect();
    cluster.apply(
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": format!("clusterdns-test:without-{resource}-{verb}")},
            "rules": rules,
        })
        .to_string(),
    );
    until_within(RECOVERY, server, "app.rbac.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    eventually("ready once granted", || {
        server.http_get("ready", "/ready").0 == 200
    });
}

#[test]
fn both_list_modes_sync_the_same_zone_with_the_requests_they_name() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "modes";
    let ips = workload(cluster, ns, 3);
    account(cluster, ns, "streaming", "system:coredns");
    account(cluster, ns, "paginated", "system:coredns");
    let streaming = clusterdns_as(cluster, ns, "streaming", "list_mode streaming");
    let paginated = clusterdns_as(cluster, ns, "paginated", "list_mode paginated");
    for dns in [&streaming, &paginated] {
        until(dns, "app-headless.modes.svc.cluster.local.", "A", |reply| {
            addresses(reply) == ips
        });
    }
    for (name, qtype) in [
        ("app.modes.svc.cluster.local.", "A"),
        ("app-headless.modes.svc.cluster.local.", "A"),
        ("_http._tcp.app.modes.svc.cluster.local.", "SRV"),
        ("kube-dns.kube-system.svc.cluster.local.", "A"),
        ("kubernetes.default.svc.cluster.local.", "A"),
        ("nope.modes.svc.cluster.local.", "A"),
        ("cluster.local.", "SOA"),
    ] {
        let (a, b) = (
            streaming.ask_udp(name, qtype),
            paginated.ask_udp(name, qtype),
        );
        assert_eq!(
            (&a.rcode, &a.answer, &a.additional),
            (&b.rcode, &b.answer, &b.additional),
            "{name} {qtype}"
        );
    }
    // What each sent, from the audit log: the streaming one watched with
    // sendInitialEvents=true and never listed; the paginated one listed in pages of 500.
    let streamed = requests_of(cluster, &format!("system:serviceaccount:{ns}:streaming"));
    assert!(
        streamed.iter().all(|(verb, _, _)| verb == "watch"),
        "{streamed:?}"
    );
    for resource in ["services", "endpointslices", "namespaces"] {
        assert!(
            streamed
                .iter()
                .any(|(_, r, uri)| r == resource && uri.contains("sendInitialEvents=true")),
            "{resource}: {streamed:?}"
        );
    }
    // The watch that follows each list is sent once its list is done, and the API server
    // writes its audit event when the watch starts: it can be a moment behind the answers.
    let paginated_user = format!("system:serviceaccount:{ns}:paginated");
    eventually("the paginated one's watches in the audit log", || {
        let paged = requests_of(cluster, &paginated_user);
        ["services", "endpointslices", "namespaces"]
            .iter()
            .all(|resource| {
                paged
                    .iter()
                    .any(|(verb, r, _)| verb == "watch" && r == resource)
            })
    });
    let paged = requests_of(cluster, &paginated_user);
    for resource in ["services", "endpointslices", "namespaces"] {
        assert!(
            paged
                .iter()
                .any(|(verb, r, uri)| verb == "list" && r == resource && uri.contains("limit=500")),
            "{resource}: {paged:?}"
        );
    }
}

#[test]
fn filters_are_sent_as_server_side_selectors() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    for ns in ["filtered", "elsewhere"] {
        cluster.apply(&namespace(ns));
        for (name, tier) in [("front", "web"), ("back", "db")] {
            let mut svc: Value = serde_json::from_str(&service(ns, name, name, json!({}))).unwrap();
            svc["metadata"]["labels"] = json!({"tier": tier});
            cluster.apply(&svc.to_string());
        }
    }
    let ns = "filtered";
    account(cluster, ns, "selective", "system:coredns");
    let dns = clusterdns_as(
        cluster,
        ns,
        "selective",
        "namespaces filtered\n       labels tier=web",
    );
    until(&dns, "front.filtered.svc.cluster.local.", "A", |reply| {
        reply.rcode == "NOERROR"
    });
    // The other Service of the namespace, and the other namespace, are not served.
    assert_eq!(
        dns.ask_udp("back.filtered.svc.cluster.local.", "A").rcode,
        "NXDOMAIN"
    );
    assert_ne!(
        dns.ask_udp("front.elsewhere.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    let sent = requests_of(cluster, &format!("system:serviceaccount:{ns}:selective"));
    let find = |resource: &str| -> Vec<&String> {
        sent.iter()
            .filter(|(_, r, _)| r == resource)
            .map(|(_, _, uri)| uri)
            .collect()
    };
    // One namespace: its objects are read under /namespaces/filtered/, the namespace itself
    // by a field selector; the label selector goes with services and endpointslices.
    for uri in find("services").into_iter().chain(find("endpointslices")) {
        assert!(uri.contains("/namespaces/filtered/"), "{uri}");
        assert!(uri.contains("labelSelector=tier%3Dweb"), "{uri}");
    }
    let namespaces = find("namespaces");
    assert!(!namespaces.is_empty());
    for uri in namespaces {
        assert!(
            uri.contains("fieldSelector=metadata.name%3Dfiltered"),
            "{uri}"
        );
    }
}

/// `openssl ARGS`, split at spaces (no path here has one), which must succeed.
fn openssl(args: &str) {
    let out = std::process::Command::new("openssl")
        .args(args.split(' '))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A client certificate for `cn` in `dir`, signed by the CA `ca_cert` and `ca_key`: X.509
/// v3 for client authentication (rustls takes no v1 certificate). Its certificate and key.
fn client_certificate(dir: &Path, ca_cert: &Path, ca_key: &Path, cn: &str) -> (PathBuf, PathBuf) {
    let (cert, key, csr, ext) = (
        dir.join("client.crt"),
        dir.join("client.key"),
        dir.join("client.csr"),
        dir.join("client.ext"),
    );
    std::fs::write(&ext, "extendedKeyUsage=clientAuth\n").unwrap();
    openssl(&format!(
        "req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout {} -out {} -subj /CN={cn}",
        key.display(),
        csr.display()
    ));
    openssl(&format!(
        "x509 -req -in {} -CA {} -CAkey {} -CAcreateserial -CAserial {} -days 1 -extfile {} -out {}",
        csr.display(),
        ca_cert.display(),
        ca_key.display(),
        dir.join("ca.srl").display(),
        ext.display(),
        cert.display()
    ));
    (cert, key)
}

/// `endpoint` and `tls` lines reaching the cluster with `cert` and `key`.
fn tls_connection(cluster: &Cluster, cert: &Path, key: &Path) -> String {
    format!(
        "endpoint {}\n       tls {} {} {}",
        cluster.url(),
        cert.display(),
        key.display(),
        cluster.ca().display()
    )
}

#[test]
fn a_client_certificate_signed_by_the_cluster_ca_reaches_the_api_server() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let pki = cluster.dir().join("pki");
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = client_certificate(
        dir.path(),
        &pki.join("ca.crt"),
        &pki.join("ca.key"),
        "clusterdns-client",
    );
    cluster.apply(
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "clusterdns-test:client-certificate"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:coredns"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                          "name": "clusterdns-client"}],
        })
        .to_string(),
    );
    let connection = tls_connection(cluster, &cert, &key);
    let dns = clusterdns_with(cluster, dir, &connection, "");
    assert!(
        dns.log().contains("synced with the API server"),
        "{}",
        dns.log()
    );
    assert_eq!(
        dns.ask_udp("kube-dns.kube-system.svc.cluster.local.", "A")
            .answer,
        expect(&["kube-dns.kube-system.svc.cluster.local. 30 IN A 10.96.0.10"])
    );

    // The same name from a CA of its own, which the API server does not trust: refused,
    // never synced, and said.
    let stranger_dir = tempfile::tempdir().unwrap();
    let (ca_cert, ca_key) = (
        stranger_dir.path().join("ca.crt"),
        stranger_dir.path().join("ca.key"),
    );
    openssl(&format!(
        "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -keyout {} -out {} -subj /CN=stranger-ca",
        ca_key.display(),
        ca_cert.display()
    ));
    let (cert, key) =
        client_certificate(stranger_dir.path(), &ca_cert, &ca_key, "clusterdns-client");
    let stranger = clusterdns_with(
        cluster,
        tempfile::tempdir().unwrap(),
        &tls_connection(cluster, &cert, &key),
        "startup_timeout 1s",
    );
    assert_eq!(
        stranger
            .ask_udp("kube-dns.kube-system.svc.cluster.local.", "A")
            .rcode,
        "SERVFAIL"
    );
    stranger.wait_log("the credentials were refused", PATIENCE);
    assert_eq!(stranger.http_get("ready", "/ready").0, 503);
}

#[test]
fn the_kubeconfig_context_the_corefile_names_is_the_one_used() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "contexts";
    cluster.apply(&namespace(ns));
    cluster.apply(&service(ns, "web", "web", json!({})));
    account(cluster, ns, "reader", "system:coredns");
    // Two users: one with a token whose Secret is gone (refused), one with a good token; the
    // current context is the refused one.
    cluster.kubectl(&["create", "secret", "generic", "revoked", "-n", ns]);
    let revoked = cluster.token(
        ns,
        "reader",
        &[
            "--bound-object-kind",
            "Secret",
            "--bound-object-name",
            "revoked",
        ],
    );
    cluster.kubectl(&["delete", "secret", "revoked", "-n", ns]);
    let good = cluster.token(ns, "reader", &["--duration", "1h"]);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    cluster.write_kubeconfig_contexts(
        &kubeconfig,
        &cluster.url(),
        &[
            ("stale", &format!("    token: {revoked}")),
            ("kind-kind", &format!("    token: {good}")),
        ],
    );
    let right = clusterdns_with(
        cluster,
        tempfile::tempdir().unwrap(),
        &format!("kubeconfig {} kind-kind", kubeconfig.display()),
        "",
    );
    until(&right, "web.contexts.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    // Without a context, the current one: its token is refused.
    let wrong = clusterdns_with(
        cluster,
        tempfile::tempdir().unwrap(),
        &format!("kubeconfig {}", kubeconfig.display()),
        "startup_timeout 1s",
    );
    assert_eq!(
        wrong.ask_udp("web.contexts.svc.cluster.local.", "A").rcode,
        "SERVFAIL"
    );
    wrong.wait_log("the credentials were refused", PATIENCE);
    let (status, body) = wrong.http_get("ready", "/ready");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("401 Unauthorized"), "{body}");
}

#[test]
fn a_rotated_token_file_is_read_again_and_the_watch_carries_on() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "tokens";
    workload(cluster, ns, 1);
    account(cluster, ns, "rotating", "system:coredns");
    // Tokens bound to a Secret each: deleting the Secret ends its token at once, as expiry
    // would (the TokenRequest API issues nothing shorter than 10 minutes).
    for secret in ["token-a", "token-b"] {
        cluster.kubectl(&["create", "secret", "generic", secret, "-n", ns]);
    }
    let bound = |secret: &str| {
        cluster.token(
            ns,
            "rotating",
            &[
                "--bound-object-kind",
                "Secret",
                "--bound-object-name",
                secret,
                "--duration",
                "1h",
            ],
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    // Written as the kubelet writes a projected token: a new file renamed over the old.
    let rotate = |token: &str| {
        let next = dir.path().join("token.next");
        std::fs::write(&next, token).unwrap();
        std::fs::rename(&next, &token_file).unwrap();
    };
    rotate(&bound("token-a"));
    let partition =
        crate::common::partition::Partition::start(([127, 0, 0, 1], cluster.api_port).into());
    let kubeconfig = dir.path().join("kubeconfig");
    cluster.write_kubeconfig(
        &kubeconfig,
        &format!("https://{}", partition.addr()),
        &format!("    tokenFile: {}", token_file.display()),
    );
    let connection = format!("kubeconfig {}", kubeconfig.display());
    let dns = clusterdns_with(cluster, tempfile::tempdir().unwrap(), &connection, "");
    until(&dns, "app.tokens.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });

    rotate(&bound("token-b"));
    // kube reads a token file again once its copy is 50 s old; the old token stays good
    // meanwhile, as a projected token does until it expires.
    std::thread::sleep(Duration::from_secs(55));
    cluster.kubectl(&["delete", "secret", "token-a", "-n", ns]);
    // Every connection dropped: the watches come back with the token now in the file.
    partition.cut();
    partition.heal();
    cluster.apply(&service(ns, "after-rotation", "app", json!({})));
    until_within(
        RECOVERY,
        &dns,
        "after-rotation.tokens.svc.cluster.local.",
        "A",
        |r| r.rcode == "NOERROR",
    );
    assert_eq!(
        metric_or_zero(
            &dns,
            "clusterdns_kubernetes_api_requests_total{code=\"401\",zone=\"cluster.local.\"} "
        ),
        0.0,
        "{}",
        dns.log()
    );
}

#[test]
fn a_reload_that_keeps_the_block_keeps_the_watch() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "reloads";
    cluster.apply(&namespace(ns));
    cluster.apply(&service(ns, "web", "web", json!({})));
    account(cluster, ns, "reloader", "system:coredns");
    let dns = clusterdns_as(cluster, ns, "reloader", "");
    until(&dns, "web.reloads.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    let user = format!("system:serviceaccount:{ns}:reloader");
    let lists = || {
        requests_of(cluster, &user)
            .iter()
            .filter(|(verb, _, _)| verb == "list")
            .count()
    };
    let before = lists();
    // The ConfigMap's Corefile has `reload` (every 30 s): change it outside the block.
    let path = dns.dir.path().join("Corefile");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("    loadbalance\n"), "{text}");
    std::fs::write(
        &path,
        text.replace("    loadbalance\n", "    loadbalance\n    any\n"),
    )
    .unwrap();
    dns.wait_log("Corefile reloaded", Duration::from_secs(90));
    assert_eq!(
        dns.ask_udp("web.reloads.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    cluster.apply(&service(ns, "after-reload", "web", json!({})));
    until(&dns, "after-reload.reloads.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    assert_eq!(
        lists(),
        before,
        "the watch was kept: no list since the reload"
    );
}
