//! clusterdns beside the real CoreDNS (v1.14.7, bench/peers/build.sh), both with kubeadm's
//! Corefile (deploy/'s ConfigMap, read back from the cluster) on ports of their own, both
//! watching the same API server as ServiceAccount kube-system/coredns, both forwarding to the
//! same upstream. A corpus generated from the cluster's objects ([`corpus`]) is asked of both,
//! idle and while the controllers churn slices, and each pair of replies compared
//! ([`compare`]). A difference must be one docs/differences.md lists ([`KNOWN`]); every other
//! fails the test, grouped by kind with one example each.
//!
//! `cargo xtask bench differential` runs the same at a larger scale (the ignored test here),
//! writes the report to bench/out/ and its figures as JSON beside it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{InCluster, configmap_corefile, private_turn, service_account_kubeconfig};
use crate::common::binary::TestServer;
use crate::common::cluster::Cluster;
use crate::common::coredns::CoreDns;
use crate::common::ports::on_free_ports;
use crate::common::upstream::{Behaviour, TestUpstream};
use crate::common::{read, runtime};
use compare::{Difference, Known, Pass, Seen};
use corpus::{Question, Scope};
use hickory_proto::rr::RecordType;

mod compare;
mod corpus;

/// The `pods` modes both servers are compared in.
const MODES: [&str; 3] = ["insecure", "disabled", "verified"];

/// The Corefile both servers run: the ConfigMap's (kubeadm's, plus clusterdns's `snapshot`
/// line, which becomes the connection here), on the ports given, forwarding to `upstream`,
/// `pods MODE`.
fn kubeadm(
    configmap: &str,
    ports: [u16; 4],
    connection: &str,
    upstream: SocketAddr,
    pods: &str,
) -> String {
    let [dns, health, ready, metrics] = ports;
    let mut corefile = configmap.to_owned();
    for (from, to) in [
        (
            ".:53 {".to_owned(),
            format!(".:{dns} {{\n    bind 127.0.0.1"),
        ),
        (
            "health {".to_owned(),
            format!("health 127.0.0.1:{health} {{"),
        ),
        (
            "\n    ready\n".to_owned(),
            format!("\n    ready 127.0.0.1:{ready}\n"),
        ),
        (
            "prometheus :9153".to_owned(),
            format!("prometheus 127.0.0.1:{metrics}"),
        ),
        (
            "snapshot /var/lib/clusterdns/snapshot.json".to_owned(),
            connection.to_owned(),
        ),
        ("pods insecure".to_owned(), format!("pods {pods}")),
        (
            "forward . /etc/resolv.conf".to_owned(),
            format!("forward . {upstream}"),
        ),
    ] {
        assert!(corefile.contains(&from), "no {from:?} in:\n{corefile}");
        corefile = corefile.replacen(&from, &to, 1);
    }
    corefile
}

/// CoreDNS and clusterdns side by side in one `pods` mode.
struct Side {
    mode: &'static str,
    coredns: CoreDns,
    clusterdns: InCluster,
}

/// Both servers with kubeadm's Corefile in `pods` mode `mode`, both ready.
fn side(cluster: &Cluster, upstream: SocketAddr, mode: &'static str) -> Side {
    let configmap = configmap_corefile(cluster);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = service_account_kubeconfig(
        cluster,
        dir.path(),
        "kube-system",
        "coredns",
        &cluster.url(),
    );
    let connection = format!("kubeconfig {}", kubeconfig.display());
    let (coredns, theirs) = on_free_ports(|theirs| {
        let corefile = kubeadm(&configmap, theirs, &connection, upstream, mode);
        CoreDns::try_start(&corefile, theirs[0], theirs[2]).map(|coredns| (coredns, theirs))
    });
    let path = dir.path().join("Corefile");
    let server = on_free_ports(|ours| {
        std::fs::write(
            &path,
            kubeadm(&configmap, ours, &connection, upstream, mode),
        )
        .unwrap();
        TestServer::try_start(&["serve", "--corefile", path.to_str().unwrap()])
    });
    let clusterdns = InCluster { server, dir };
    cluster.wait("clusterdns ready", Duration::from_secs(60), || {
        clusterdns.http_get("ready", "/ready").0 == 200
    });
    let metrics = SocketAddr::from(([127, 0, 0, 1], theirs[3]));
    let (_, coredns_metrics) = crate::common::binary::http_get(metrics, "/metrics");
    let (_, our_metrics) = clusterdns.http_get("metrics", "/metrics");
    assert_eq!(
        enabled_plugins(&our_metrics),
        enabled_plugins(&coredns_metrics),
        "coredns_plugin_enabled: clusterdns's names, then CoreDNS's"
    );
    Side {
        mode,
        coredns,
        clusterdns,
    }
}

/// The `name` labels of `coredns_plugin_enabled` in a `/metrics` text, sorted: the plugins
/// CoreDNS counts as handlers of a block (not *bind*, *health*, *ready*, *reload*).
fn enabled_plugins(metrics: &str) -> Vec<String> {
    let mut names: Vec<String> = metrics
        .lines()
        .filter_map(|line| line.strip_prefix("coredns_plugin_enabled{"))
        .filter_map(|labels| labels.split("name=\"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The objects of `namespaces` namespaces `diff-N` with `services` Services among them, of
/// every kind the zone answers for: ClusterIP (single-port, several ports, an unnamed port,
/// dual-stack, IPv6-only, selecting nothing) and headless (a StatefulSet's, a Deployment's,
/// one with hand-written slices and no selector) behind Deployments and StatefulSets, and
/// ExternalName (out of the zone and into it).
fn objects(namespaces: usize, services: usize) -> (Vec<String>, Vec<Value>) {
    let names: Vec<String> = (0..namespaces).map(|n| format!("diff-{n}")).collect();
    let mut items: Vec<Value> = names
        .iter()
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}))
        .collect();
    let http = json!([{"name": "http", "port": 80, "targetPort": "http"}]);
    for i in 0..services {
        let n = i % namespaces;
        let ns = &names[n];
        let name = format!("svc-{}", i / namespaces);
        let meta = json!({"name": name, "namespace": ns});
        let service = |spec: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec});
        let kind = (i / namespaces) % 10;
        match kind {
            0..=2 => {
                let ports = match kind {
                    0 => http.clone(),
                    1 => json!([
                        {"name": "http", "port": 80, "targetPort": "http"},
                        {"name": "metrics", "port": 9090, "targetPort": 9090},
                    ]),
                    _ => json!([{"port": 8080, "targetPort": 8080}]),
                };
                items.push(service(json!({"selector": {"app": name}, "ports": ports})));
                items.push(workload("Deployment", ns, &name, kind + 1));
            }
            3 => {
                items.push(service(json!({
                    "selector": {"app": name},
                    "ipFamilyPolicy": "PreferDualStack",
                    "ports": [
                        {"name": "http", "port": 80, "targetPort": "http"},
                        {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 5353},
                        {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 5353},
                    ],
                })));
                items.push(workload("Deployment", ns, &name, 2));
            }
            4 => {
                items.push(service(json!({
                    "selector": {"app": name},
                    "ipFamilies": ["IPv6"],
                    "ports": http,
                })));
                items.push(workload("Deployment", ns, &name, 1));
            }
            5 => {
                items.push(service(json!({
                    "selector": {"app": name}, "clusterIP": "None", "ports": http,
                })));
                items.push(workload("StatefulSet", ns, &name, 2));
            }
            6 => {
                items.push(service(json!({
                    "selector": {"app": name}, "clusterIP": "None",
                    "ports": [
                        {"name": "http", "port": 80, "targetPort": "http"},
                        {"name": "grpc", "port": 9000, "targetPort": 9000},
                    ],
                })));
                items.push(workload("Deployment", ns, &name, 2));
            }
            7 => {
                let target = if i % 20 == 7 {
                    format!("svc-0.{}.svc.cluster.local", names[0])
                } else {
                    format!("ext-{i}.example.net")
                };
                items.push(service(
                    json!({"type": "ExternalName", "externalName": target}),
                ));
            }
            8 => {
                items.push(service(
                    json!({"selector": {"app": "nothing"}, "ports": http}),
                ));
            }
            _ => {
                items.push(service(json!({"clusterIP": "None", "ports": http})));
                let (a, b) = (n % 250, (i / namespaces) % 250);
                let slice = |family: &str, suffix: &str, endpoints: Value| {
                    json!({
                        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                        "metadata": {
                            "name": format!("{name}-{suffix}"), "namespace": ns,
                            "labels": {"kubernetes.io/service-name": name,
                                       "endpointslice.kubernetes.io/managed-by": "differential"},
                        },
                        "addressType": family,
                        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                        "endpoints": endpoints,
                    })
                };
                items.push(slice(
                    "IPv4",
                    "v4",
                    json!([
                        {"addresses": [format!("10.250.{a}.{b}")], "hostname": "host-a",
                         "conditions": {"ready": true}},
                        {"addresses": [format!("10.251.{a}.{b}")],
                         "conditions": {"ready": false}},
                        {"addresses": [format!("10.252.{a}.{b}")]},
                    ]),
                ));
                items.push(slice(
                    "IPv6",
                    "v6",
                    json!([{"addresses": [
                        std::net::Ipv6Addr::new(0xfd00, 0x250, 0, 0, 0, 0, a as u16, b as u16)
                            .to_string()
                    ], "hostname": "host-a"}]),
                ));
            }
        }
    }
    (names, items)
}

/// A Deployment or StatefulSet of `replicas` pods labelled `app: NAME` (port 8080 `http`).
fn workload(kind: &str, namespace: &str, name: &str, replicas: usize) -> Value {
    let mut spec = json!({
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{
                "name": "app", "image": "app",
                "ports": [{"name": "http", "containerPort": 8080}],
            }]},
        },
    });
    if kind == "StatefulSet" {
        spec["serviceName"] = json!(name);
        spec["podManagementPolicy"] = json!("Parallel");
    }
    json!({"apiVersion": "apps/v1", "kind": kind,
           "metadata": {"name": name, "namespace": namespace}, "spec": spec})
}

/// Applies `items` and waits until every workload in `namespaces` has its pods Ready and
/// the slices have stopped changing; the objects then, as kubectl prints them.
fn populate(cluster: &Cluster, namespaces: &[String], items: Vec<Value>) -> Value {
    for chunk in items.chunks(500) {
        cluster.apply(&json!({"apiVersion": "v1", "kind": "List", "items": chunk}).to_string());
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut last = String::new();
    loop {
        let workloads = cluster.get(&["deployments,statefulsets", "-A"]);
        let pending = workloads["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| {
                namespaces.iter().any(|n| w["metadata"]["namespace"] == *n)
                    && w["status"]["readyReplicas"].as_u64().unwrap_or(0)
                        != w["spec"]["replicas"].as_u64().unwrap_or(1)
            })
            .count();
        let dump = cluster.get(&["namespaces,services,endpointslices,pods", "-A"]);
        let versions: String = dump["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                i["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join(",");
        if pending == 0 && versions == last {
            return dump;
        }
        assert!(
            Instant::now() < deadline,
            "{pending} workloads not Ready after 300 s"
        );
        last = versions;
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// Scales the Deployments `targets` (namespace, name) up and down until `stop` is set:
/// the ReplicaSet controller makes and deletes pods, kwok runs them, and the EndpointSlice
/// controller rewrites their slices. How many scalings it made.
fn churn(cluster: &Cluster, targets: &[(String, String)], stop: &AtomicBool) -> usize {
    let mut round = 0;
    while !stop.load(Ordering::SeqCst) {
        for (namespace, name) in targets {
            let replicas = 1 + (round % 4);
            cluster.kubectl(&[
                "scale",
                "deployment",
                name,
                "-n",
                namespace,
                &format!("--replicas={replicas}"),
            ]);
            round += 1;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    round
}

/// docs/differences.md's differences as the corpus meets them. The first that matches a
/// difference claims it.
const KNOWN: &[Known] = &[
    Known {
        doc: "**One name, one rcode (RFC 8020).**",
        what: "a name that exists: NXDOMAIN from CoreDNS, NODATA from clusterdns",
        matches: |d| {
            d.coredns.rcode == "NXDOMAIN"
                && d.clusterdns.rcode == "NOERROR"
                && d.clusterdns.answer.is_empty()
                && d.aspects
                    .iter()
                    .all(|a| a.starts_with("rcode") || a == "authority")
        },
    },
    Known {
        doc: "NODATA for SOA at a name that does not exist",
        what: "SOA at a name that does not exist: NODATA from CoreDNS, NXDOMAIN from clusterdns",
        matches: |d| {
            d.question.qtype == RecordType::SOA
                && d.coredns.rcode == "NOERROR"
                && d.coredns.answer.is_empty()
                && d.clusterdns.rcode == "NXDOMAIN"
        },
    },
    Known {
        doc: "each sends the other server upstream",
        what: "a reverse name one server answers and the other forwards (fallthrough)",
        matches: |d| {
            // What comes back from upstream has RA; the zone's own answers do not.
            let forwarded = |s: &Seen| s.flags.contains("ra");
            let own_nodata = |s: &Seen| {
                !forwarded(s)
                    && s.flags.contains("aa")
                    && s.rcode == "NOERROR"
                    && s.answer.is_empty()
            };
            matches!(d.question.category, "ptr" | "reverse")
                && ((forwarded(&d.coredns) && own_nodata(&d.clusterdns))
                    || (forwarded(&d.clusterdns) && own_nodata(&d.coredns)))
        },
    },
    Known {
        doc: "**A server on loopback names itself.**",
        what: "the apex NS and ns.dns's address of a server bound to 127.0.0.1",
        matches: |d| {
            matches!(d.question.category, "apex" | "ns.dns")
                && d.coredns.rcode == "NOERROR"
                && d.coredns.answer.is_empty()
                && d.clusterdns.answer.iter().all(|r| {
                    r.ends_with(" in ns ns.dns.cluster.local.") || r.ends_with(" in a 127.0.0.1")
                })
        },
    },
    Known {
        doc: "**Pod names are one label.**",
        what: "a name below a pod name: CoreDNS answers it as the pod's",
        matches: |d| {
            d.question.category == "pod"
                && d.question.name.to_ascii_lowercase().starts_with("x.")
                && d.coredns.rcode == "NOERROR"
                && d.clusterdns.rcode == "NXDOMAIN"
        },
    },
    Known {
        doc: "**Pod names have no SRV.**",
        what: "SRV at a pod name: port 0 from CoreDNS, NODATA from clusterdns",
        matches: |d| {
            d.question.category == "pod"
                && d.question.qtype == RecordType::SRV
                && d.coredns.answer.iter().all(|r| r.contains(" srv 0 100 0 "))
                && d.clusterdns.rcode == "NOERROR"
                && d.clusterdns.answer.is_empty()
        },
    },
    Known {
        doc: "**An ExternalName is a CNAME for every type.**",
        what: "another type at an ExternalName: NODATA from CoreDNS, the CNAME from clusterdns",
        matches: |d| {
            d.question.category == "service"
                && !matches!(d.question.qtype, RecordType::A | RecordType::AAAA)
                && d.coredns.answer.is_empty()
                && d.clusterdns.answer.iter().any(|r| r.contains(" cname "))
        },
    },
    Known {
        doc: "**TTLs are the records' own.**",
        what: "every TTL of CoreDNS's reply made the smallest by its cache",
        matches: |d| {
            let ttls = |lines: &[String]| -> Vec<u32> {
                lines
                    .iter()
                    .filter_map(|l| l.split(' ').nth(1).and_then(|t| t.parse().ok()))
                    .collect()
            };
            let theirs = ttls(&d.coredns.answer);
            matches!(d.question.category, "dns-version" | "service")
                && d.aspects == ["answer"]
                && theirs.windows(2).all(|w| w[0] == w[1])
                && compare::same_records(&d.coredns.answer, &d.clusterdns.answer, 28800)
        },
    },
    Known {
        doc: "CoreDNS caches the reverse zones",
        what: "a reverse-zone answer from CoreDNS's cache: its TTL counted down, or no longer true",
        matches: |d| {
            let cached = |s: &Seen| {
                let ttls: Vec<u32> = s
                    .answer
                    .iter()
                    .chain(&s.authority)
                    .filter_map(|l| l.split(' ').nth(1).and_then(|t| t.parse().ok()))
                    .collect();
                !s.flags.contains("ra") && !ttls.is_empty() && ttls.iter().all(|&t| t < 30)
            };
            let same = d.coredns.rcode == d.clusterdns.rcode
                && [
                    (&d.coredns.answer, &d.clusterdns.answer),
                    (&d.coredns.authority, &d.clusterdns.authority),
                    (&d.coredns.additional, &d.clusterdns.additional),
                ]
                .iter()
                .all(|(x, y)| compare::same_records(x, y, 30));
            matches!(d.question.category, "ptr" | "reverse") && (same || cached(&d.coredns))
        },
    },
];

/// Whether `difference` is one of [`KNOWN`].
fn documented(difference: &Difference) -> bool {
    KNOWN.iter().any(|known| (known.matches)(difference))
}

/// The outcome of a whole check: the passes, the differences not in [`KNOWN`], the report.
struct Outcome {
    undocumented: Vec<Difference>,
    seen: Vec<bool>,
    report: String,
}

/// The whole check on a cluster with `namespaces` namespaces and `services` Services:
/// every `pods` mode idle (the full corpus in `insecure`, pod names and every tenth other
/// question in the others), then `insecure` during churn; each corpus asked `rounds` times,
/// each time in the next variant.
fn check(cluster: &Cluster, namespaces: usize, services: usize, rounds: usize) -> Outcome {
    let started = Instant::now();
    let rt = runtime(1);
    let upstream = rt.block_on(TestUpstream::start(Behaviour::Answer));
    upstream.set_records(2);
    let (names, items) = objects(namespaces, services);
    let dump = populate(cluster, &names, items);
    let populated = started.elapsed();
    let scope = Scope {
        namespaces: &names,
        zone: "cluster.local",
    };
    let questions = corpus::questions(&dump, &scope);
    let sides: Vec<Side> = MODES
        .iter()
        .map(|mode| side(cluster, upstream.addr, mode))
        .collect();
    let threads = 2;
    let mut passes: Vec<(String, Pass)> = Vec::new();
    for side in &sides {
        let asked: Vec<Question> = if side.mode == "insecure" {
            questions.clone()
        } else {
            questions
                .iter()
                .enumerate()
                .filter(|(i, q)| q.category == "pod" || i % 10 == 0)
                .map(|(_, q)| q.clone())
                .collect()
        };
        let mut pass = Pass::default();
        for round in 0..rounds {
            let more = compare::pass(
                (side.coredns.addr, side.clusterdns.addr, side.mode),
                &asked,
                round,
                threads,
                documented,
            );
            pass.absorb(more);
        }
        passes.push((format!("idle, pods {}", side.mode), pass));
    }

    // During churn: the first namespace's single-port Deployments scaled up and down.
    let targets: Vec<(String, String)> = dump["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "Service" && i["metadata"]["namespace"] == names[0])
        .filter_map(|i| i["metadata"]["name"].as_str())
        .filter(|name| {
            name.strip_prefix("svc-")
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n % 10 <= 2)
        })
        .take(6)
        .map(|name| (names[0].clone(), name.to_owned()))
        .collect();
    let stop = AtomicBool::new(false);
    let main = &sides[0];
    let (churn_pass, scalings) = std::thread::scope(|scope| {
        let churner = scope.spawn(|| churn(cluster, &targets, &stop));
        let mut pass = Pass::default();
        for round in 0..rounds {
            let more = compare::pass(
                (main.coredns.addr, main.clusterdns.addr, main.mode),
                &questions,
                round + 3,
                threads,
                documented,
            );
            pass.absorb(more);
        }
        stop.store(true, Ordering::SeqCst);
        (pass, churner.join().unwrap())
    });
    passes.push((
        format!(
            "during churn ({scalings} scalings of {} Deployments), pods insecure",
            targets.len()
        ),
        churn_pass,
    ));

    let docs = read("docs/differences.md");
    for known in KNOWN {
        assert!(
            docs.contains(known.doc),
            "KNOWN names {:?}, which docs/differences.md does not say",
            known.doc
        );
    }
    let mut seen = vec![false; KNOWN.len()];
    let mut documented: Vec<Vec<Difference>> = vec![Vec::new(); KNOWN.len()];
    let mut undocumented = Vec::new();
    for (_, pass) in &passes {
        for difference in &pass.differences {
            match KNOWN.iter().position(|k| (k.matches)(difference)) {
                Some(k) => {
                    seen[k] = true;
                    documented[k].push(difference.clone());
                }
                None => undocumented.push(difference.clone()),
            }
        }
    }

    let total: usize = passes.iter().map(|(_, p)| p.asked).sum();
    let pods = dump["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "Pod")
        .count();
    let mut report = format!(
        "# clusterdns beside CoreDNS: the differential check\n\n\
         {} {}; {services} Services in {namespaces} namespaces, {pods} pods (kwok); \
         {} distinct questions; {total} queries asked of each server; populated in {:.0} s, \
         whole check {:.0} s.\n\n| pass | queries | differences | transient |\n| --- | ---: | ---: | ---: |\n",
        crate::common::coredns::version(),
        concat!("clusterdns ", env!("CARGO_PKG_VERSION")),
        questions.len(),
        populated.as_secs_f64(),
        started.elapsed().as_secs_f64(),
    );
    for (name, pass) in &passes {
        report.push_str(&format!(
            "| {name} | {} | {} | {} |\n",
            pass.asked,
            pass.differences.len(),
            pass.transient
        ));
    }
    report.push_str(&format!(
        "\n## Not documented: {}\n\n{}",
        undocumented.len(),
        compare::describe(&compare::group(&undocumented))
    ));
    report.push_str("\n## Documented in docs/differences.md\n\n");
    for (known, differences) in KNOWN.iter().zip(&documented) {
        report.push_str(&format!(
            "### {} ({} ×; docs/differences.md: \"{}\")\n\n{}\n",
            known.what,
            differences.len(),
            known.doc,
            compare::describe(&compare::group(differences))
        ));
    }
    if let Some((name, example)) = passes
        .iter()
        .find_map(|(name, p)| p.transient_example.as_ref().map(|e| (name, e)))
    {
        report.push_str(&format!(
            "\n## Transient (gone when asked again within a second)\n\nFirst in \"{name}\":\n{}",
            compare::describe(&compare::group([example]))
        ));
    }
    drop(upstream);
    Outcome {
        undocumented,
        seen,
        report,
    }
}

#[test]
fn clusterdns_answers_as_coredns_does_but_where_documented() {
    let _turn = private_turn();
    let Some(cluster) = Cluster::private() else {
        return;
    };
    if crate::common::coredns::binary().is_none() {
        assert!(
            std::env::var_os("CLUSTERDNS_REQUIRE_PEERS").is_none(),
            "CoreDNS is not built: run bench/peers/build.sh"
        );
        eprintln!("skipped: CoreDNS is not built (bench/peers/build.sh)");
        return;
    }
    cluster.apply_deploy();
    let outcome = check(&cluster, 4, 120, 1);
    eprintln!("{}", outcome.report);
    assert!(
        outcome.undocumented.is_empty(),
        "{} differences from CoreDNS that docs/differences.md does not list:\n{}",
        outcome.undocumented.len(),
        compare::describe(&compare::group(&outcome.undocumented))
    );
    for (known, seen) in KNOWN.iter().zip(&outcome.seen) {
        assert!(seen, "the corpus no longer meets: {}", known.what);
    }
}

/// `cargo xtask bench differential`: the check at `DIFF_SERVICES` Services (600) in
/// `DIFF_NAMESPACES` (12), each corpus asked `DIFF_ROUNDS` times (3); the report to
/// `DIFF_REPORT` (else stderr).
#[test]
#[ignore = "a benchmark-sized run: `cargo xtask bench differential`"]
fn differential_at_scale() {
    let Some(cluster) = Cluster::start(&["--nodes", "6"]) else {
        return;
    };
    let var = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    cluster.apply_deploy();
    let outcome = check(
        &cluster,
        var("DIFF_NAMESPACES", 12),
        var("DIFF_SERVICES", 600),
        var("DIFF_ROUNDS", 3),
    );
    match std::env::var_os("DIFF_REPORT") {
        Some(path) => std::fs::write(path, &outcome.report).unwrap(),
        None => eprintln!("{}", outcome.report),
    }
    assert!(
        outcome.undocumented.is_empty(),
        "{} undocumented differences (see the report)",
        outcome.undocumented.len()
    );
}
