//! Tests of `endpoints`.

use std::net::IpAddr;

use super::*;
use crate::{Cluster, compute_slices};
use crate::{ContainerPort, PodDetails, PodPhase};

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("test IP")
}

/// A ClusterIP Service `shop/<name>` selecting `app=<name>`, one port http 80 → `target`.
fn service(name: &str, target: TargetPort) -> Service {
    Service {
        selector: Some(labels(&[("app", name)])),
        ..Service::for_test(name, target)
    }
}

fn named(port: &str) -> TargetPort {
    TargetPort::Name(port.to_owned())
}

/// A Running, Ready pod `shop/<name>` labelled `app=<app>` with one TCP container port.
fn pod(name: &str, app: &str, ips: &[&str], port: (&str, u16)) -> Pod {
    let mut pod = Pod::new(
        ObjectKey::new("shop", name),
        ips.iter().map(|text| ip(text)).collect(),
        PodPhase::Running,
    )
    .with_details(PodDetails {
        labels: labels(&[("app", app)]),
        node_name: Some("kind-worker".into()),
        container_ports: vec![ContainerPort {
            name: port.0.to_owned(),
            port: port.1,
            protocol: Protocol::Tcp,
        }],
        ..PodDetails::default()
    });
    pod.ready = true;
    pod
}

fn web(name: &str, address: &str) -> Pod {
    pod(name, "web", &[address], ("http", 8080))
}

/// One line per slice: `name type [ports] endpoints`, an endpoint as
/// `addresses/flags[/hostname]` with flags R/r ready, S/s serving, T/t terminating.
fn render(slices: &[EndpointSlice]) -> Vec<String> {
    slices
        .iter()
        .map(|slice| {
            let ports: Vec<String> = slice
                .ports
                .iter()
                .map(|port| {
                    let number = port.port.map_or("-".to_owned(), |n| n.to_string());
                    format!("{}/{}:{number}", port.name, port.protocol)
                })
                .collect();
            let endpoints: Vec<String> = slice
                .endpoints
                .iter()
                .map(|endpoint| {
                    let addresses: Vec<String> =
                        endpoint.addresses.iter().map(ToString::to_string).collect();
                    let c = endpoint.conditions;
                    let flags = format!(
                        "{}{}{}",
                        if c.ready() { 'R' } else { 'r' },
                        if c.serving() { 'S' } else { 's' },
                        if c.terminating() { 'T' } else { 't' },
                    );
                    let mut text = format!("{}/{flags}", addresses.join(","));
                    if let Some(hostname) = &endpoint.hostname {
                        text.push('/');
                        text.push_str(hostname);
                    }
                    text
                })
                .collect();
            format!(
                "{} {} [{}] {}",
                slice.key.name,
                slice.address_type.as_str(),
                ports.join(" "),
                endpoints.join(" ")
            )
            .trim_end()
            .to_owned()
        })
        .collect()
}

struct Case {
    name: &'static str,
    service: Service,
    pods: Vec<Pod>,
    want: Vec<&'static str>,
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();

    cases.push(Case {
        name: "three ready pods share one slice, ordered by IP numerically",
        service: service("web", named("http")),
        pods: vec![
            web("web-c", "10.244.1.10"),
            web("web-a", "10.244.2.7"),
            web("web-b", "10.244.1.9"),
        ],
        want: vec!["web-ipv4-0 IPv4 [http/TCP:8080] 10.244.1.9/RSt 10.244.1.10/RSt 10.244.2.7/RSt"],
    });

    cases.push(Case {
        name: "payments: a renamed container port lands the new pods in a slice without it",
        service: service("payments", named("http")),
        pods: vec![
            pod("payments-v1-a", "payments", &["10.244.1.5"], ("http", 8080)),
            pod("payments-v2-a", "payments", &["10.244.1.6"], ("web", 8080)),
            pod("payments-v2-b", "payments", &["10.244.1.4"], ("web", 8080)),
        ],
        want: vec![
            "payments-ipv4-0 IPv4 [] 10.244.1.4/RSt 10.244.1.6/RSt",
            "payments-ipv4-1 IPv4 [http/TCP:8080] 10.244.1.5/RSt",
        ],
    });

    cases.push(Case {
        name: "a numeric targetPort resolves in every pod",
        service: service("web", TargetPort::Number(9090)),
        pods: vec![
            web("web-a", "10.244.1.5"),
            pod("web-b", "web", &["10.244.1.6"], ("other", 1)),
        ],
        want: vec!["web-ipv4-0 IPv4 [http/TCP:9090] 10.244.1.5/RSt 10.244.1.6/RSt"],
    });

    let mut udp = service("dns", named("dns"));
    udp.ports[0].protocol = Protocol::Udp;
    cases.push(Case {
        name: "a named port resolves only with the same protocol",
        service: udp,
        pods: vec![pod("dns-a", "dns", &["10.244.0.2"], ("dns", 53))],
        want: vec!["dns-ipv4-0 IPv4 [] 10.244.0.2/RSt"],
    });

    let mut not_ready = web("web-canary", "10.244.2.8");
    not_ready.ready = false;
    cases.push(Case {
        name: "a not-ready pod is listed with ready=false serving=false",
        service: service("web", named("http")),
        pods: vec![web("web-a", "10.244.1.5"), not_ready.clone()],
        want: vec!["web-ipv4-0 IPv4 [http/TCP:8080] 10.244.1.5/RSt 10.244.2.8/rst"],
    });

    let mut terminating = web("web-old", "10.244.1.7");
    terminating.terminating = true;
    let mut terminating_unready = web("web-older", "10.244.1.8");
    terminating_unready.terminating = true;
    terminating_unready.ready = false;
    cases.push(Case {
        name: "a terminating pod is serving while Ready, never ready",
        service: service("web", named("http")),
        pods: vec![terminating.clone(), terminating_unready],
        want: vec!["web-ipv4-0 IPv4 [http/TCP:8080] 10.244.1.7/rST 10.244.1.8/rsT"],
    });

    let mut publish = service("web", named("http"));
    publish.publish_not_ready_addresses = true;
    cases.push(Case {
        name: "publishNotReadyAddresses forces ready but not serving",
        service: publish,
        pods: vec![not_ready, terminating],
        want: vec!["web-ipv4-0 IPv4 [http/TCP:8080] 10.244.1.7/RST 10.244.2.8/Rst"],
    });

    let mut finished = web("web-done", "10.244.1.3");
    finished.phase = PodPhase::Succeeded;
    let mut failed = web("web-failed", "10.244.1.4");
    failed.phase = PodPhase::Failed;
    let mut no_ip = web("web-pending", "10.244.1.1");
    no_ip.ips = Default::default();
    no_ip.phase = PodPhase::Pending;
    let mut elsewhere = web("web-elsewhere", "10.244.1.2");
    elsewhere.key = ObjectKey::new("other", &*elsewhere.key.name);
    let mut stranger = web("not-web", "10.244.1.6");
    stranger.edit_details(|d| d.labels = labels(&[("app", "webb")]));
    let mut superset = web("web-labelled", "10.244.1.5");
    superset.edit_details(|d| {
        d.labels.insert("track".to_owned(), "canary".to_owned());
    });
    cases.push(Case {
        name: "finished pods, pods without an IP, other namespaces and other labels are out",
        service: service("web", named("http")),
        pods: vec![finished, failed, no_ip, elsewhere, stranger, superset],
        want: vec!["web-ipv4-0 IPv4 [http/TCP:8080] 10.244.1.5/RSt"],
    });

    cases.push(Case {
        name: "a selector matching nothing gets one empty placeholder",
        service: service("empty", named("http")),
        pods: vec![web("web-a", "10.244.1.5")],
        want: vec!["empty-ipv4-0 IPv4 []"],
    });

    let mut dual = service("web", named("http"));
    dual.ip_families = vec![AddressType::IPv4, AddressType::IPv6];
    dual.cluster_ips = vec![ip("10.96.0.50"), ip("fd00:10:96::50")];
    cases.push(Case {
        name: "dual-stack: one slice per family, each with that family's pod IPs",
        service: dual.clone(),
        pods: vec![
            pod(
                "web-a",
                "web",
                &["10.244.1.5", "fd00:10:244:1::5"],
                ("http", 8080),
            ),
            pod(
                "web-b",
                "web",
                &["10.244.2.7", "fd00:10:244:2::7"],
                ("http", 8080),
            ),
        ],
        want: vec![
            "web-ipv4-0 IPv4 [http/TCP:8080] 10.244.1.5/RSt 10.244.2.7/RSt",
            "web-ipv6-0 IPv6 [http/TCP:8080] fd00:10:244:1::5/RSt fd00:10:244:2::7/RSt",
        ],
    });

    let mut ipv6_first = dual.clone();
    ipv6_first.ip_families = vec![AddressType::IPv6, AddressType::IPv4];
    cases.push(Case {
        name: "dual-stack with IPv4-only pods: the IPv6 family gets a placeholder",
        service: ipv6_first,
        pods: vec![web("web-a", "10.244.1.5")],
        want: vec![
            "web-ipv4-0 IPv4 [http/TCP:8080] 10.244.1.5/RSt",
            "web-ipv6-0 IPv6 []",
        ],
    });

    let mut v6 = service("web", named("http"));
    v6.ip_families = Vec::new();
    v6.cluster_ips = vec![ip("fd00:10:96::20")];
    cases.push(Case {
        name: "no ipFamilies: the ClusterIP's family",
        service: v6,
        pods: vec![pod(
            "web-a",
            "web",
            &["10.244.1.5", "fd00:10:244:1::5"],
            ("http", 8080),
        )],
        want: vec!["web-ipv6-0 IPv6 [http/TCP:8080] fd00:10:244:1::5/RSt"],
    });

    let mut headless = service("db", TargetPort::Number(5432));
    headless.ports[0].name = "pg".to_owned();
    headless.ip_families = Vec::new();
    headless.cluster_ips = Vec::new();
    headless.headless = true;
    let mut db0 = pod("db-0", "db", &["10.244.1.11"], ("pg", 5432));
    db0.edit_details(|d| d.hostname = Some("db-0".into()));
    db0.edit_details(|d| d.subdomain = Some("db".into()));
    let mut db1 = pod("db-1", "db", &["10.244.2.12"], ("pg", 5432));
    db1.edit_details(|d| d.hostname = Some("db-1".into()));
    db1.edit_details(|d| d.subdomain = Some("other".into()));
    cases.push(Case {
        name: "headless without ipFamilies: both families; hostname only with the subdomain",
        service: headless,
        pods: vec![db0, db1],
        want: vec![
            "db-ipv4-0 IPv4 [pg/TCP:5432] 10.244.1.11/RSt/db-0 10.244.2.12/RSt",
            "db-ipv6-0 IPv6 []",
        ],
    });

    let mut no_selector = service("kubernetes", TargetPort::Number(6443));
    no_selector.selector = None;
    cases.push(Case {
        name: "no selector: nothing",
        service: no_selector,
        pods: vec![web("web-a", "10.244.1.5")],
        want: vec![],
    });

    let mut external = service("web", named("http"));
    external.service_type = ServiceType::ExternalName;
    external.cluster_ips = Vec::new();
    cases.push(Case {
        name: "ExternalName: nothing, even with a selector",
        service: external,
        pods: vec![web("web-a", "10.244.1.5")],
        want: vec![],
    });

    let mut same_ip = web("web-b", "10.244.1.5");
    same_ip.edit_details(|d| d.node_name = None);
    cases.push(Case {
        name: "equal IPs are ordered by pod name",
        service: service("web", named("http")),
        pods: vec![same_ip, web("web-a", "10.244.1.5")],
        want: vec!["web-ipv4-0 IPv4 [http/TCP:8080] 10.244.1.5/RSt 10.244.1.5/RSt"],
    });

    cases
}

#[test]
fn reconcile_cases() {
    for case in cases() {
        let got = reconcile_slices(&case.service, &case.pods);
        assert_eq!(render(&got), case.want, "case: {}", case.name);
    }
}

#[test]
fn endpoint_fields_come_from_the_pod() {
    let mut service = service("web", named("http"));
    service.labels = labels(&[
        ("app", "web"),
        (LABEL_MANAGED_BY, "someone-else"),
        (LABEL_SERVICE_NAME, "wrong"),
    ]);
    let slices = reconcile_slices(&service, &[web("web-a", "10.244.1.5")]);
    let [slice] = slices.as_slice() else {
        panic!("one slice expected, got {slices:?}");
    };
    assert_eq!(slice.key, ObjectKey::new("shop", "web-ipv4-0"));
    assert_eq!(slice.service_name.as_deref(), Some("web"));
    assert_eq!(
        slice.labels,
        labels(&[
            ("app", "web"),
            (LABEL_MANAGED_BY, CONTROLLER_NAME),
            (LABEL_SERVICE_NAME, "web"),
        ])
    );
    let endpoint = &slice.endpoints[0];
    assert_eq!(endpoint.node_name(), Some("kind-worker"));
    assert_eq!(endpoint.target_pod(), Some("web-a"));
    assert_eq!(endpoint.zone(), None);
    assert_eq!(
        endpoint.conditions,
        EndpointConditions {
            ready: Some(true),
            serving: Some(true),
            terminating: Some(false),
        }
    );
}

#[test]
fn headless_slices_carry_the_headless_label() {
    let mut service = service("web-headless", named("http"));
    service.selector = Some(labels(&[("app", "web")]));
    service.cluster_ips = Vec::new();
    service.headless = true;
    let slices = reconcile_slices(&service, &[web("web-a", "10.244.1.5")]);
    assert_eq!(
        slices[0].labels.get(LABEL_HEADLESS).map(String::as_str),
        Some("")
    );
}

#[test]
fn groups_are_cut_at_one_hundred_endpoints() {
    let pods: Vec<Pod> = (0..250)
        .map(|n| {
            web(
                &format!("web-{n:03}"),
                &format!("10.244.{}.{}", n / 200, n % 200),
            )
        })
        .collect();
    let slices = reconcile_slices(&service("web", named("http")), &pods);
    let sizes: Vec<(String, usize)> = slices
        .iter()
        .map(|slice| (slice.key.name.to_string(), slice.endpoints.len()))
        .collect();
    assert_eq!(
        sizes,
        vec![
            ("web-ipv4-0".to_owned(), 100),
            ("web-ipv4-1".to_owned(), 100),
            ("web-ipv4-2".to_owned(), 50),
        ]
    );
    assert_eq!(slices[0].endpoints[0].target_pod(), Some("web-000"));
    assert_eq!(slices[2].endpoints[49].target_pod(), Some("web-249"));
}

#[test]
fn sidecar_ports_resolve_after_container_ports() {
    let mut pod = web("web-a", "10.244.1.5");
    pod.edit_details(|d| {
        d.container_ports.push(ContainerPort {
            name: "http".to_owned(),
            port: 15001,
            protocol: Protocol::Tcp,
        })
    });
    assert_eq!(
        resolve_target_port(&service("web", named("http")).ports[0], &pod),
        Some(8080)
    );
}

#[test]
fn compute_slices_covers_every_selecting_service() {
    let mut cluster = Cluster::default();
    for service in [
        service("web", named("http")),
        service("empty", named("http")),
    ] {
        cluster.services.insert(service.key.clone(), service);
    }
    let mut kubernetes = service("kubernetes", TargetPort::Number(6443));
    kubernetes.selector = None;
    cluster.services.insert(kubernetes.key.clone(), kubernetes);
    for pod in [web("web-a", "10.244.1.5"), web("web-b", "10.244.1.6")] {
        cluster.pods.insert(pod.key.clone(), pod);
    }
    assert_eq!(
        render(&compute_slices(&cluster)),
        vec![
            "empty-ipv4-0 IPv4 []",
            "web-ipv4-0 IPv4 [http/TCP:8080] 10.244.1.5/RSt 10.244.1.6/RSt",
        ]
    );
}

#[test]
fn an_endpoint_keeps_its_node_zone_and_pod_behind_one_pointer() {
    // A large cluster keeps one of these per pod: what the zone reads is inline.
    let size = std::mem::size_of::<Endpoint>();
    assert!(size <= 64, "{size}");
    let conditions = EndpointConditions::default();
    let bare = Endpoint::new([ip("10.244.1.5")].into(), conditions);
    let mut placed = bare.clone().with_details(EndpointDetails {
        node_name: Some("kind-worker".into()),
        ..EndpointDetails::default()
    });
    assert_eq!(placed.node_name(), Some("kind-worker"));
    assert_ne!(placed, bare);
    placed.details.edit(|details| details.node_name = None);
    assert!(placed.details.is_empty());
    assert_eq!(placed, bare);
}
