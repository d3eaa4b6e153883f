//! The API server misbehaving for real, each on a private cluster: restarted, compacting
//! etcd under a partitioned watch, and turning clusterdns away with 429.

use super::*;

#[test]
fn a_restarted_api_server_is_ridden_out_and_followed_again() {
    let _turn = private_turn();
    let Some(cluster) = Cluster::private() else {
        return;
    };
    cluster.apply_deploy();
    let ns = "restart";
    workload(&cluster, ns, 2);
    cluster.apply(&service(ns, "leaving", "app", json!({})));
    let dns = clusterdns(&cluster, "");
    until(&dns, "leaving.restart.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    let snapshot = dns.dir.path().join("snapshot.json");
    eventually("the snapshot file written", || snapshot.exists());
    let configmap = configmap_corefile(&cluster);

    cluster.script(&["stop", "kube-apiserver"]);
    dns.wait_log("API server request failed", PATIENCE);
    // The last state is served, NXDOMAIN stays NXDOMAIN (it has synced), and it is said.
    assert_eq!(
        dns.ask_udp("leaving.restart.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    assert_eq!(
        dns.ask_udp("nope.restart.svc.cluster.local.", "A").rcode,
        "NXDOMAIN"
    );
    let (status, body) = dns.http_get("ready", "/ready");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("API server failing for"), "{body}");
    assert_eq!(
        metric_or_zero(
            &dns,
            "clusterdns_kubernetes_api_up{zone=\"cluster.local.\"} "
        ),
        0.0
    );
    assert!(
        metric_or_zero(
            &dns,
            "clusterdns_kubernetes_api_requests_total{code=\"error\",zone=\"cluster.local.\"} "
        ) >= 1.0
    );

    // A replica started meanwhile serves the snapshot file the first one wrote, at once,
    // and says so; what it does not know is SERVFAIL, never NXDOMAIN, until it syncs.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&snapshot, dir.path().join("snapshot.json")).unwrap();
    let kubeconfig = service_account_kubeconfig_offline(&dns, dir.path());
    let text = adapted(
        &configmap,
        dir.path(),
        &format!("kubeconfig {}", kubeconfig.display()),
        "",
    );
    let second = serve_corefile(dir, &text);
    let from_snapshot = second.ask_udp("leaving.restart.svc.cluster.local.", "A");
    assert_eq!(from_snapshot.rcode, "NOERROR");
    assert!(
        from_snapshot.message.answers.iter().all(|r| r.ttl <= 5),
        "a snapshot's answers live 5 s at most: {from_snapshot:?}"
    );
    assert_eq!(
        second.ask_udp("nope.restart.svc.cluster.local.", "A").rcode,
        "SERVFAIL"
    );
    assert!(
        metric_or_zero(
            &second,
            "clusterdns_kubernetes_snapshot_age_seconds{zone=\"cluster.local.\"} "
        ) > 0.0
    );
    let (status, body) = second.http_get("ready", "/ready");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("serving the snapshot file"), "{body}");

    // Back, and changed at once, while the watch is still backing off.
    cluster.script(&["start", "kube-apiserver"]);
    cluster.kubectl(&["delete", "service", "leaving", "-n", ns]);
    cluster.apply(&service(ns, "arriving", "app", json!({})));
    cluster.kubectl(&["scale", "deployment/app", "-n", ns, "--replicas=3"]);
    let ips = wait_ready_pods(&cluster, ns, "app", 3);
    until_within(
        RECOVERY,
        &dns,
        "leaving.restart.svc.cluster.local.",
        "A",
        |r| r.rcode == "NXDOMAIN",
    );
    until(&dns, "arriving.restart.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    until(&dns, "app-headless.restart.svc.cluster.local.", "A", |r| {
        addresses(r) == ips
    });
    dns.wait_log("API server answers again", RECOVERY);
    for server in [&dns, &second] {
        eventually("/ready OK again", || {
            server.http_get("ready", "/ready") == (200, "OK".to_owned())
        });
        assert_eq!(
            metric_or_zero(
                server,
                "clusterdns_kubernetes_api_up{zone=\"cluster.local.\"} "
            ),
            1.0
        );
    }
    second.wait_log("synced with the API server", RECOVERY);
    let (_, metrics) = second.http_get("metrics", "/metrics");
    assert!(
        !metrics.contains("snapshot_age"),
        "synced: no snapshot age any more"
    );
    until(&second, "leaving.restart.svc.cluster.local.", "A", |r| {
        r.rcode == "NXDOMAIN"
    });
    until(
        &second,
        "app-headless.restart.svc.cluster.local.",
        "A",
        |r| addresses(r) == ips,
    );
}

#[test]
fn with_the_watch_list_gate_off_each_resource_is_listed_in_pages_by_itself() {
    let _turn = private_turn();
    // An API server that refuses streaming lists, as one before 1.27 does: 422 Invalid,
    // "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled".
    let Some(cluster) = Cluster::start(&["--feature-gates", "WatchList=false"]) else {
        return;
    };
    cluster.apply_deploy();
    let ns = "gate";
    let ips = workload(&cluster, ns, 2);
    // Slices enough that a page of them is over 128 KiB, which the API server sends gzipped.
    cluster.apply(&service(
        ns,
        "big",
        "none",
        json!({"clusterIP": "None", "ports": [{"name": "http", "port": 80}]}),
    ));
    cluster.apply(&big_slices(ns, "big", 6, 1000));
    let dns = clusterdns(&cluster, "");
    until(&dns, "app-headless.gate.svc.cluster.local.", "A", |r| {
        addresses(r) == ips
    });
    until(&dns, "h-5999.big.gate.svc.cluster.local.", "A", |r| {
        addresses(r) == ["10.223.23.111"]
    });
    let gzipped = |resource: &str| {
        metric_or_zero(
            &dns,
            &format!(
                "clusterdns_kubernetes_api_responses_total{{compression=\"gzip\",encoding=\"protobuf\",resource=\"{resource}\",zone=\"cluster.local.\"}} "
            ),
        )
    };
    assert!(
        gzipped("endpointslices") >= 1.0,
        "a page of slices came gzipped"
    );
    assert_eq!(gzipped("namespaces"), 0.0, "a small list does not");
    let fallbacks = |dns: &InCluster| -> Vec<f64> {
        ["services", "endpointslices", "namespaces"]
            .iter()
            .map(|resource| {
                metric_or_zero(
                    dns,
                    &format!(
                        "clusterdns_kubernetes_list_fallbacks_total{{resource=\"{resource}\",zone=\"cluster.local.\"}} "
                    ),
                )
            })
            .collect()
    };
    assert_eq!(fallbacks(&dns), [1.0; 3]);
    let log = dns.log();
    assert_eq!(
        log.matches("refused a streaming list").count(),
        3,
        "said once per resource:\n{log}"
    );
    assert!(
        log.contains("WatchList feature gate"),
        "the server's words:\n{log}"
    );
    assert!(
        !log.contains("API server request failed"),
        "no outage:\n{log}"
    );
    assert_eq!(dns.http_get("ready", "/ready"), (200, "OK".to_owned()));
    // From the audit log: each resource asked to stream, then listed in pages of 500.
    let sent = requests_of(&cluster, "system:serviceaccount:kube-system:coredns");
    for resource in ["services", "endpointslices", "namespaces"] {
        let of = |verb: &str, part: &str| {
            sent.iter()
                .filter(|(v, r, uri)| v == verb && r == resource && uri.contains(part))
                .count()
        };
        assert!(
            of("watch", "sendInitialEvents=true") >= 1,
            "{resource}: {sent:?}"
        );
        assert!(of("list", "limit=500") >= 1, "{resource}: {sent:?}");
    }

    let streams = |sent: &[(String, String, String)]| {
        sent.iter()
            .filter(|(_, _, uri)| uri.contains("sendInitialEvents"))
            .count()
    };
    let streamed = streams(&sent);

    // Across a restart of the API server the watch goes on in pages, never asking again.
    cluster.script(&["restart", "kube-apiserver"]);
    cluster.apply(&service(ns, "after", "app", json!({})));
    until_within(RECOVERY, &dns, "after.gate.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    assert_eq!(fallbacks(&dns), [1.0; 3]);
    let sent = requests_of(&cluster, "system:serviceaccount:kube-system:coredns");
    assert_eq!(streams(&sent), streamed, "{sent:?}");
}

/// `slices` EndpointSlices of `service` with `each` ready endpoints apiece, named
/// `h-0000`, `h-0001`, … at 10.223.0.0, 10.223.0.1, …, as a kubectl List.
fn big_slices(namespace: &str, service: &str, slices: usize, each: usize) -> String {
    let items: Vec<Value> = (0..slices)
        .map(|slice| {
            let endpoints: Vec<Value> = (slice * each..(slice + 1) * each)
                .map(|n| {
                    json!({
                        "addresses": [format!("10.223.{}.{}", n / 256, n % 256)],
                        "hostname": format!("h-{n:04}"),
                        "conditions": {"ready": true},
                    })
                })
                .collect();
            json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {
                    "name": format!("{service}-{slice}"), "namespace": namespace,
                    "labels": {"kubernetes.io/service-name": service},
                },
                "addressType": "IPv4",
                "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
                "endpoints": endpoints,
            })
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

/// The kubeconfig `dns` was started with (its token is still good), copied into `dir`.
fn service_account_kubeconfig_offline(dns: &InCluster, dir: &Path) -> PathBuf {
    let source = std::fs::read_dir(dns.dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|e| e == "kubeconfig"))
        .expect("the first server's kubeconfig");
    let copy = dir.join(source.file_name().unwrap());
    std::fs::copy(&source, &copy).unwrap();
    copy
}

#[test]
fn after_etcd_compacts_a_resumed_watch_gets_410_gone_and_relists() {
    let _turn = private_turn();
    // The API server compacts etcd itself, every 5 s here (5 min by default). Its watch
    // cache answers 410 only for a watch from before the cache's own window, which etcd's
    // compaction does not move: with the services' cache off, as some clusters run, etcd
    // serves their watches and a watch from before the compaction is 410 Gone.
    let Some(cluster) = Cluster::start(&[
        "--compaction-interval",
        "5s",
        "--watch-cache-sizes",
        "services#0",
    ]) else {
        return;
    };
    cluster.apply_deploy();
    let ns = "compact";
    workload(&cluster, ns, 1);
    cluster.apply(&service(ns, "leaving", "app", json!({})));
    // clusterdns reaches the API server through a relay the test can cut: a partition
    // between this one client and the API server, the cluster going on meanwhile.
    let partition =
        crate::common::partition::Partition::start(([127, 0, 0, 1], cluster.api_port).into());
    let dir = tempfile::tempdir().unwrap();
    let relayed = format!("https://{}", partition.addr());
    let kubeconfig =
        service_account_kubeconfig(&cluster, dir.path(), "kube-system", "coredns", &relayed);
    let dns = clusterdns_with(
        &cluster,
        dir,
        &format!("kubeconfig {}", kubeconfig.display()),
        "",
    );
    until(&dns, "leaving.compact.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    let list: Value = serde_json::from_str(&cluster.kubectl(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{ns}/services"),
    ]))
    .unwrap();
    let before: String = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();

    partition.cut();
    dns.wait_log("API server request failed", PATIENCE);
    cluster.kubectl(&["delete", "service", "leaving", "-n", ns]);
    cluster.apply(&service(ns, "arriving", "app", json!({})));
    // The API server's compactor compacts etcd to the revision of its previous round: from
    // then on a watch from before the changes is answered 410 Gone. Seen from here, as admin.
    cluster.wait("the watch cache compacted", Duration::from_secs(60), || {
        let events = cluster.kubectl(&[
            "get",
            "--raw",
            &format!("/api/v1/namespaces/{ns}/services?watch=true&resourceVersion={before}&timeoutSeconds=1"),
        ]);
        events.contains("\"code\":410")
    });

    partition.heal();
    until_within(
        RECOVERY,
        &dns,
        "leaving.compact.svc.cluster.local.",
        "A",
        |r| r.rcode == "NXDOMAIN",
    );
    let arriving = until(&dns, "arriving.compact.svc.cluster.local.", "A", |r| {
        r.rcode == "NOERROR"
    });
    assert_eq!(arriving.answer.len(), 1, "no double: {arriving:?}");
    dns.wait_log("re-listing", PATIENCE);
    assert!(
        metric_or_zero(
            &dns,
            "clusterdns_kubernetes_relists_total{resource=\"services\",zone=\"cluster.local.\"} "
        ) >= 1.0
    );
    // The state is whole: every Service of the namespace answers, once.
    for name in ["app", "arriving"] {
        let reply = dns.ask_udp(&format!("{name}.compact.svc.cluster.local."), "A");
        assert_eq!(reply.answer.len(), 1, "{name}: {reply:?}");
    }
}

#[test]
fn priority_and_fairness_rejections_are_retried_as_retry_after_says() {
    let _turn = private_turn();
    let Some(cluster) = Cluster::private() else {
        return;
    };
    cluster.apply_deploy();
    // A priority level with no seats of its own, lending and borrowing none, rejecting what
    // it cannot run, and a flow schema putting kube-system/coredns and kube-system/hog in it.
    // Priority and fairness runs one request of such a level while none of it runs; the hog
    // keeps one running (a list waiting 3 s for a resourceVersion that never comes), so every
    // request of clusterdns's is rejected: 429, with a Retry-After that grows while it lasts.
    account(&cluster, "kube-system", "hog", "system:coredns");
    let subject = |name: &str| json!({"kind": "ServiceAccount", "serviceAccount": {"name": name, "namespace": "kube-system"}});
    cluster.apply(
        &json!({
            "apiVersion": "v1", "kind": "List",
            "items": [
                {"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                 "kind": "PriorityLevelConfiguration",
                 "metadata": {"name": "clusterdns-test-starved"},
                 "spec": {"type": "Limited", "limited": {
                     "nominalConcurrencyShares": 0, "lendablePercent": 0,
                     "borrowingLimitPercent": 0, "limitResponse": {"type": "Reject"}}}},
                {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                 "metadata": {"name": "clusterdns-test-starved"},
                 "spec": {
                     "priorityLevelConfiguration": {"name": "clusterdns-test-starved"},
                     "matchingPrecedence": 100,
                     "distinguisherMethod": {"type": "ByUser"},
                     "rules": [{
                         "subjects": [subject("coredns"), subject("hog")],
                         "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                            "resources": ["*"], "clusterScope": true,
                                            "namespaces": ["*"]}]}]}},
            ],
        })
        .to_string(),
    );
    cluster.wait("the flow schema in force", PATIENCE, || {
        let schema = cluster.get(&["flowschema", "clusterdns-test-starved"]);
        schema["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Dangling" && c["status"] == "False")
        })
    });
    let hogging = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let hog = {
        let hogging = std::sync::Arc::clone(&hogging);
        let token = cluster.token("kube-system", "hog", &[]);
        let url = format!(
            "{}/api/v1/services?resourceVersion=999999999&resourceVersionMatch=NotOlderThan&limit=1",
            cluster.url()
        );
        let ca = cluster.ca();
        std::thread::spawn(move || {
            while hogging.load(std::sync::atomic::Ordering::Acquire) {
                let _ = std::process::Command::new("curl")
                    .args(["-s", "-o", "/dev/null", "--cacert"])
                    .arg(&ca)
                    .args(["-H", &format!("Authorization: Bearer {token}"), &url])
                    .status();
            }
        })
    };
    let dns = clusterdns(&cluster, "startup_timeout 1s");
    std::thread::sleep(Duration::from_secs(10));
    // Never admitted: not synced, SERVFAIL rather than a false NXDOMAIN, and said.
    assert_eq!(dns.http_get("ready", "/ready").0, 503);
    assert_eq!(
        dns.ask_udp("kube-dns.kube-system.svc.cluster.local.", "A")
            .rcode,
        "SERVFAIL"
    );
    assert!(
        metric_or_zero(
            &dns,
            "clusterdns_kubernetes_api_requests_total{code=\"429\",zone=\"cluster.local.\"} "
        ) >= 1.0,
        "{}",
        dns.log()
    );
    // The audit log has each rejected request: the same request is asked again no sooner
    // than Retry-After (a second at least) says, not at kube's own 5 ms backoff.
    let mut asked: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut seen = std::collections::HashSet::new();
    for event in cluster.audit() {
        if event["user"]["username"] != "system:serviceaccount:kube-system:coredns"
            || event["responseStatus"]["code"] != 429
            || !seen.insert(event["auditID"].to_string())
        {
            continue;
        }
        let at = seconds_of(
            event["requestReceivedTimestamp"]
                .as_str()
                .unwrap_or_default(),
        );
        let uri = event["requestURI"].as_str().unwrap_or_default().to_owned();
        asked.entry(uri).or_default().push(at);
    }
    let rejected: usize = asked.values().map(Vec::len).sum();
    assert!(rejected >= 3, "{asked:?}");
    for (uri, times) in &mut asked {
        times.sort_by(f64::total_cmp);
        for pair in times.windows(2) {
            let gap = pair[1] - pair[0];
            assert!(
                gap >= 0.9,
                "{uri} asked again {gap:.3} s after a 429: {times:?}"
            );
        }
    }
    // The hog gone, the next retry is admitted and the watch syncs.
    hogging.store(false, std::sync::atomic::Ordering::Release);
    hog.join().unwrap();
    let stopped = Instant::now();
    eventually("synced once admitted", || {
        dns.http_get("ready", "/ready").0 == 200
    });
    assert_eq!(
        dns.ask_udp("kube-dns.kube-system.svc.cluster.local.", "A")
            .answer,
        expect(&["kube-dns.kube-system.svc.cluster.local. 30 IN A 10.96.0.10"])
    );
    eprintln!(
        "{rejected} requests rejected with 429 in 10 s; synced {:.1} s after the hog stopped",
        stopped.elapsed().as_secs_f64()
    );
}

/// Seconds of an RFC 3339 timestamp with a fractional part (`2026-12-01T20:01:02.123456Z`),
/// from the start of its day: enough to compare times within a test.
fn seconds_of(at: &str) -> f64 {
    let time = at
        .split('T')
        .nth(1)
        .unwrap_or_default()
        .trim_end_matches('Z');
    let mut parts = time.split(':');
    let h: f64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0.0);
    let m: f64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0.0);
    let s: f64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0.0);
    h * 3600.0 + m * 60.0 + s
}
