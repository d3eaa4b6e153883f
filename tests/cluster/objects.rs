//! The cluster zone from what the real controllers write: Deployments scaled, a
//! StatefulSet, a Service changing shape, dual-stack, a namespace deleted, `pods verified`,
//! and *k8s_external* from a Service's status.

use super::*;

#[test]
fn a_deployment_scaled_0_5_0_is_answered_from_the_controllers_slices() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "scale";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "web", 0));
    cluster.apply(&service(
        ns,
        "web-headless",
        "web",
        json!({"clusterIP": "None"}),
    ));
    cluster.apply(&service(ns, "web", "web", json!({})));
    let dns = clusterdns(cluster, "");
    let headless = "web-headless.scale.svc.cluster.local.";
    // It waited for the sync before it listened.
    let log = dns.log();
    let synced = log.find("synced with the API server").expect("synced");
    assert!(synced < log.find("listening on udp").unwrap(), "{log}");
    // The real API server answered every watched resource in protobuf.
    let line = log[synced..].lines().next().unwrap();
    assert!(
        line.contains("encoding=endpointslices protobuf, namespaces protobuf, services protobuf"),
        "{line}"
    );

    // No pods: the headless Service has no endpoints, NXDOMAIN; the ClusterIP answers.
    assert_eq!(dns.ask_udp(headless, "A").rcode, "NXDOMAIN");
    let cluster_ip = cluster.get(&["service", "web", "-n", ns])["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        dns.ask_udp("web.scale.svc.cluster.local.", "A").answer,
        expect(&[&format!(
            "web.scale.svc.cluster.local. 30 IN A {cluster_ip}"
        )])
    );

    cluster.kubectl(&["scale", "deployment/web", "-n", ns, "--replicas=5"]);
    let ips = wait_ready_pods(cluster, ns, "web", 5);
    let reply = until(&dns, headless, "A", |reply| addresses(reply) == ips);
    assert!(reply.authoritative);
    assert_eq!(
        slice_addresses(cluster, ns, "web-headless"),
        ips,
        "DNS follows the controller's slices"
    );
    // Each endpoint has its dashed name, an SRV per named port, and a PTR.
    let srv = dns.ask_udp("_http._tcp.web-headless.scale.svc.cluster.local.", "SRV");
    let mut targets: Vec<String> = ips
        .iter()
        .map(|ip| format!("{}.web-headless.scale.svc.cluster.local.", dashed(ip)))
        .collect();
    targets.sort();
    assert_eq!(srv_targets(&srv), targets);
    assert!(
        srv.answer.iter().all(|line| line.contains(" 8080 ")),
        "{:?}",
        srv.answer
    );
    assert_eq!(
        srv.additional.len(),
        5,
        "glue for each target: {:?}",
        srv.additional
    );
    let first = &ips[0];
    assert_eq!(
        dns.ask_udp(&targets[0], "A").answer,
        expect(&[&format!("{} 30 IN A {first}", targets[0])])
    );
    let reverse: Vec<&str> = first.split('.').rev().collect();
    // One PTR per Service the address is an endpoint of (the two Services' slices are
    // written one after the other: wait for both).
    let wanted = expect(&[
        &format!(
            "{}.in-addr.arpa. 30 IN PTR {}.web-headless.scale.svc.cluster.local.",
            reverse.join("."),
            dashed(first)
        ),
        &format!(
            "{}.in-addr.arpa. 30 IN PTR {}.web.scale.svc.cluster.local.",
            reverse.join("."),
            dashed(first)
        ),
    ]);
    until(
        &dns,
        &format!("{}.in-addr.arpa.", reverse.join(".")),
        "PTR",
        |reply| reply.answer == wanted,
    );

    // The controller stamps each slice it writes with the trigger time of the change: the
    // programming latency is measured from it, per kind of Service.
    eventually("a programming latency observation", || {
        metric_or_zero(
            &dns,
            "coredns_kubernetes_dns_programming_duration_seconds_count{service_kind=\"headless_with_selector\"} ",
        ) >= 1.0
    });

    // Scaled to 0: kwok takes the pods away, the controller empties the slice, NXDOMAIN again.
    cluster.kubectl(&["scale", "deployment/web", "-n", ns, "--replicas=0"]);
    until(&dns, headless, "A", |reply| reply.rcode == "NXDOMAIN");
    assert!(slice_addresses(cluster, ns, "web-headless").is_empty());
    assert_eq!(
        dns.ask_udp("web.scale.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
    // `pods insecure`: the pods are neither listed nor watched (no test runs ServiceAccount
    // kube-system/coredns with `pods verified`).
    let requests = requests_of(cluster, "system:serviceaccount:kube-system:coredns");
    assert!(!requests.is_empty());
    assert!(
        !requests.iter().any(|(_, resource, _)| resource == "pods"),
        "{requests:?}"
    );
}

#[test]
fn a_statefulsets_pods_have_their_own_names_and_srv() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "stateful";
    cluster.apply(&namespace(ns));
    cluster.apply(
        &json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "db", "namespace": ns},
            "spec": {"clusterIP": "None", "selector": {"app": "db"},
                     "ports": [{"name": "pg", "port": 5432}]},
        })
        .to_string(),
    );
    cluster.apply(
        &json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": ns},
            "spec": {
                "serviceName": "db", "replicas": 2, "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "pg", "image": "postgres",
                                             "ports": [{"name": "pg", "containerPort": 5432}]}]},
                },
            },
        })
        .to_string(),
    );
    let dns = clusterdns(cluster, "");
    wait_ready_pods(cluster, ns, "db", 2);
    let ip_of = |pod: &str| -> String {
        cluster.get(&["pod", pod, "-n", ns])["status"]["podIP"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for pod in ["db-0", "db-1"] {
        let name = format!("{pod}.db.stateful.svc.cluster.local.");
        let ip = ip_of(pod);
        until(&dns, &name, "A", |reply| {
            reply.answer == expect(&[&format!("{name} 30 IN A {ip}")])
        });
    }
    let srv = dns.ask_udp("_pg._tcp.db.stateful.svc.cluster.local.", "SRV");
    assert_eq!(
        srv.answer,
        expect(&[
            "_pg._tcp.db.stateful.svc.cluster.local. 30 IN SRV 0 50 5432 db-0.db.stateful.svc.cluster.local.",
            "_pg._tcp.db.stateful.svc.cluster.local. 30 IN SRV 0 50 5432 db-1.db.stateful.svc.cluster.local.",
        ])
    );
    assert_eq!(
        srv.additional,
        expect(&[
            &format!(
                "db-0.db.stateful.svc.cluster.local. 30 IN A {}",
                ip_of("db-0")
            ),
            &format!(
                "db-1.db.stateful.svc.cluster.local. 30 IN A {}",
                ip_of("db-1")
            ),
        ])
    );
}

#[test]
fn a_service_turned_headless_external_and_back_answers_each_shape() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "shapes";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "app", 2));
    let ips = wait_ready_pods(cluster, ns, "app", 2);
    cluster.apply(&service(ns, "flip", "app", json!({})));
    let dns = clusterdns(cluster, "");
    let name = "flip.shapes.svc.cluster.local.";
    let ip = cluster.get(&["service", "flip", "-n", ns])["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .to_owned();
    until(&dns, name, "A", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN A {ip}")])
    });

    // The API server refuses to make a ClusterIP headless in place (spec.clusterIP is
    // immutable): the way there is through ExternalName, which releases the address.
    let refused = cluster.try_kubectl_with(
        &["apply", "--server-side", "-f", "-"],
        &service(ns, "flip", "app", json!({"clusterIP": "None"})),
    );
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("may not change once set")),
        "{refused:?}"
    );
    let external = |target: &str| {
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "flip", "namespace": ns},
            "spec": {"type": "ExternalName", "externalName": target,
                     "ports": [{"name": "http", "port": 80}]},
        })
        .to_string()
    };
    cluster.apply(&external("web.shop.svc.cluster.local"));
    until(&dns, name, "CNAME", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN CNAME web.shop.svc.cluster.local.")])
    });
    cluster.apply(&service(
        ns,
        "flip",
        "app",
        json!({"type": "ClusterIP", "clusterIP": "None"}),
    ));
    until(&dns, name, "A", |reply| addresses(reply) == ips);
    cluster.apply(&external("example.com"));
    until(&dns, name, "CNAME", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN CNAME example.com.")])
    });
    // And back to a ClusterIP: a new address, its PTR, no trace of the other shapes.
    cluster.apply(&service(ns, "flip", "app", json!({"type": "ClusterIP"})));
    let ip = cluster.get(&["service", "flip", "-n", ns])["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .to_owned();
    until(&dns, name, "A", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN A {ip}")])
    });
    assert_eq!(dns.ask_udp(name, "CNAME").answer, Vec::<String>::new());
    let reverse: Vec<&str> = ip.split('.').rev().collect();
    assert_eq!(
        dns.ask_udp(&format!("{}.in-addr.arpa.", reverse.join(".")), "PTR")
            .answer,
        expect(&[&format!(
            "{}.in-addr.arpa. 30 IN PTR {name}",
            reverse.join(".")
        )])
    );
}

#[test]
fn a_dual_stack_service_answers_both_families() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "dual";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "app", 2));
    wait_ready_pods(cluster, ns, "app", 2);
    cluster.apply(&service(
        ns,
        "both",
        "app",
        json!({"ipFamilyPolicy": "RequireDualStack"}),
    ));
    cluster.apply(&service(
        ns,
        "both-headless",
        "app",
        json!({"clusterIP": "None", "ipFamilyPolicy": "RequireDualStack"}),
    ));
    let dns = clusterdns(cluster, "");
    let spec = cluster.get(&["service", "both", "-n", ns])["spec"].clone();
    let ips: Vec<String> = spec["clusterIPs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ip| ip.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ips.len(), 2, "{spec}");
    let (v4, v6) = (&ips[0], &ips[1]);
    let name = "both.dual.svc.cluster.local.";
    until(&dns, name, "A", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN A {v4}")])
    });
    assert_eq!(
        dns.ask_udp(name, "AAAA").answer,
        expect(&[&format!("{name} 30 IN AAAA {v6}")])
    );
    // The IPv6 ClusterIP's PTR, under ip6.arpa.
    let v6_addr: std::net::Ipv6Addr = v6.parse().unwrap();
    let nibbles: String = v6_addr
        .octets()
        .iter()
        .rev()
        .flat_map(|byte| [byte & 0xf, byte >> 4])
        .map(|n| format!("{n:x}."))
        .collect();
    let ptr_name = format!("{nibbles}ip6.arpa.");
    assert_eq!(
        dns.ask_udp(&ptr_name, "PTR").answer,
        expect(&[&format!("{ptr_name} 30 IN PTR {name}")])
    );
    // Headless: one slice per family from the controller, A and AAAA per pod.
    let headless = "both-headless.dual.svc.cluster.local.";
    let pods_v4 = ready_pod_ips(cluster, ns, "app", false);
    let pods_v6 = ready_pod_ips(cluster, ns, "app", true);
    assert_eq!(pods_v6.len(), 2, "kwok gives each pod an IPv6 address too");
    until(&dns, headless, "A", |reply| addresses(reply) == pods_v4);
    until(&dns, headless, "AAAA", |reply| addresses(reply) == pods_v6);
}

#[test]
fn a_deleted_namespace_takes_all_its_names() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "doomed";
    let ips = workload(cluster, ns, 2);
    let dns = clusterdns(cluster, "");
    until(
        &dns,
        "app-headless.doomed.svc.cluster.local.",
        "A",
        |reply| addresses(reply) == ips,
    );
    assert_eq!(
        dns.ask_udp("app.doomed.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );

    cluster.kubectl(&["delete", "namespace", ns, "--wait=false"]);
    for name in [
        "app.doomed.svc.cluster.local.",
        "app-headless.doomed.svc.cluster.local.",
        &format!("{}.app-headless.doomed.svc.cluster.local.", dashed(&ips[0])),
    ] {
        until(&dns, name, "A", |reply| reply.rcode == "NXDOMAIN");
    }
    // The namespace controller emptied it and the API server removed it.
    cluster.wait("namespace doomed gone", PATIENCE, || {
        cluster
            .try_kubectl_with(&["get", "namespace", ns], "")
            .is_err()
    });
    assert_eq!(
        dns.ask_udp("app.doomed.svc.cluster.local.", "A").rcode,
        "NXDOMAIN"
    );
}

#[test]
fn pods_verified_answers_the_real_pods_addresses_only() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "verified";
    cluster.apply(&namespace(ns));
    cluster.apply(&deployment(ns, "app", 1));
    let ip = wait_ready_pods(cluster, ns, "app", 1).remove(0);
    // The ConfigMap says `pods insecure`; a second `pods` line wins, as in CoreDNS.
    account(cluster, ns, "verifier", "system:coredns");
    let dns = clusterdns_as(cluster, ns, "verifier", "pods verified");
    let name = format!("{}.verified.pod.cluster.local.", dashed(&ip));
    until(&dns, &name, "A", |reply| {
        reply.answer == expect(&[&format!("{name} 30 IN A {ip}")])
    });
    // An address no pod has, and a real pod's address in another namespace: NXDOMAIN.
    assert_eq!(
        dns.ask_udp("10-244-250-250.verified.pod.cluster.local.", "A")
            .rcode,
        "NXDOMAIN"
    );
    assert_eq!(
        dns.ask_udp(&format!("{}.default.pod.cluster.local.", dashed(&ip)), "A")
            .rcode,
        "NXDOMAIN"
    );
    // The pod goes: so does its name.
    cluster.kubectl(&["scale", "deployment/app", "-n", ns, "--replicas=0"]);
    until(&dns, &name, "A", |reply| reply.rcode == "NXDOMAIN");
    // The audit log: this server watched pods, asking only for those not finished.
    let pods: Vec<String> = requests_of(cluster, "system:serviceaccount:verified:verifier")
        .into_iter()
        .filter(|(verb, resource, _)| resource == "pods" && (verb == "list" || verb == "watch"))
        .map(|(_, _, uri)| uri)
        .collect();
    assert!(!pods.is_empty(), "no pods requests in the audit log");
    for uri in pods {
        assert!(
            uri.contains(
                "fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed%2Cstatus.phase%21%3DUnknown"
            ),
            "{uri}"
        );
    }
}

#[test]
fn k8s_external_answers_the_addresses_written_into_a_services_status() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let ns = "external";
    cluster.apply(&namespace(ns));
    cluster.apply(&service(ns, "lb", "lb", json!({"type": "LoadBalancer"})));
    cluster.apply(&service(ns, "internal", "internal", json!({})));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = service_account_kubeconfig(
        cluster,
        dir.path(),
        "kube-system",
        "coredns",
        &cluster.url(),
    );
    let mut text = corefile_of_the_configmap(
        cluster,
        dir.path(),
        &format!("kubeconfig {}", kubeconfig.display()),
        "",
    );
    assert!(text.contains("    loadbalance\n"), "{text}");
    text = text.replace(
        "    loadbalance\n",
        "    loadbalance\n    k8s_external example.org\n",
    );
    let dns = serve_corefile(dir, &text);
    assert_eq!(
        dns.ask_udp("lb.external.example.org.", "A").rcode,
        "NXDOMAIN"
    );
    // What a cloud's controller does: an address in the load balancer's status; and an
    // external address in a ClusterIP Service's spec.
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.99"}]}}});
    cluster.kubectl(&[
        "patch",
        "service",
        "lb",
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
    cluster.kubectl(&[
        "patch",
        "service",
        "internal",
        "-n",
        ns,
        "--type=merge",
        "-p",
        r#"{"spec": {"externalIPs": ["192.0.2.40"]}}"#,
    ]);
    until(&dns, "lb.external.example.org.", "A", |r| {
        r.answer == expect(&["lb.external.example.org. 5 IN A 203.0.113.99"])
    });
    until(&dns, "internal.external.example.org.", "A", |r| {
        r.answer == expect(&["internal.external.example.org. 5 IN A 192.0.2.40"])
    });
}

/// The answer's SRV targets (the last field of each record), sorted.
fn srv_targets(reply: &Reply) -> Vec<String> {
    addresses(reply)
}
