use super::*;
use clusterdns_model::{
    Endpoint, EndpointConditions, EndpointDetails, EndpointPort, EndpointSlice, LABEL_SERVICE_NAME,
    Labels, ServicePort, TargetPort,
};

fn ip(text: &str) -> IpAddr {
    text.parse().expect("test IP")
}

/// A ClusterIP Service `shop/<name>` at 10.96.0.20 with one port, http 80/TCP → 8080, no
/// selector, every policy at its default (the model's `Service::for_test`, which is test code
/// of the model's crate and so not reachable here).
fn service(name: &str) -> Service {
    Service {
        key: ObjectKey::new("shop", name),
        labels: Labels::new(),
        selector: None,
        service_type: ServiceType::ClusterIp,
        cluster_ips: vec![[10, 96, 0, 20].into()],
        headless: false,
        external_name: None,
        ports: vec![ServicePort {
            name: "http".to_owned(),
            protocol: Protocol::Tcp,
            port: 80,
            target_port: TargetPort::Number(8080),
            node_port: None,
        }],
        publish_not_ready_addresses: false,
        ip_families: vec![AddressType::IPv4],
        external_traffic_policy: TrafficPolicy::Cluster,
        internal_traffic_policy: TrafficPolicy::Cluster,
        session_affinity: SessionAffinity::None,
        external_ips: Vec::new(),
        load_balancer_ips: Vec::new(),
        load_balancer_hostnames: Vec::new(),
        load_balancer_source_ranges: Vec::new(),
        health_check_node_port: None,
    }
}

/// (address, node, ready, serving, terminating)
type Row<'a> = (&'a str, &'a str, bool, bool, bool);

fn slice(
    name: &str,
    service: &str,
    ports: &[(&str, Protocol, u16)],
    rows: &[Row<'_>],
) -> EndpointSlice {
    let family = if rows.first().is_some_and(|row| row.0.contains(':')) {
        AddressType::IPv6
    } else {
        AddressType::IPv4
    };
    EndpointSlice {
        key: ObjectKey::new("shop", name),
        service_name: Some(service.to_owned()),
        labels: Labels::from([(LABEL_SERVICE_NAME.to_owned(), service.to_owned())]),
        address_type: family,
        endpoints: rows
            .iter()
            .map(|(address, node, ready, serving, terminating)| {
                let conditions = EndpointConditions {
                    ready: Some(*ready),
                    serving: Some(*serving),
                    terminating: Some(*terminating),
                };
                Endpoint::new([ip(address)].into(), conditions).with_details(EndpointDetails {
                    node_name: Some((*node).into()),
                    ..EndpointDetails::default()
                })
            })
            .collect(),
        ports: ports
            .iter()
            .map(|(name, protocol, port)| EndpointPort {
                name: (*name).to_owned(),
                protocol: *protocol,
                port: Some(*port),
            })
            .collect(),
        trigger_time: None,
    }
}

fn cluster(services: Vec<Service>, slices: Vec<EndpointSlice>) -> Cluster {
    let mut cluster = Cluster::default();
    for service in services {
        cluster.services.insert(service.key.clone(), service);
    }
    for slice in slices {
        cluster.endpoint_slices.insert(slice.key.clone(), slice);
    }
    cluster
}

fn addrs(endpoints: &[ProxyEndpoint]) -> Vec<String> {
    endpoints.iter().map(ProxyEndpoint::addr_port).collect()
}

fn options(node: Option<&str>) -> PlanOptions {
    PlanOptions {
        family: IpFamily::V4,
        node: node.map(str::to_owned),
        cluster_cidrs: vec!["10.244.0.0/16".parse().expect("net")],
    }
}

const HTTP: &[(&str, Protocol, u16)] = &[("http", Protocol::Tcp, 8080)];

#[test]
fn ready_endpoints_sorted_by_text_like_kube_proxy() {
    let cluster = cluster(
        vec![service("web")],
        vec![slice(
            "web-a",
            "web",
            HTTP,
            &[
                ("10.244.1.9", "w1", true, true, false),
                ("10.244.1.10", "w1", true, true, false),
                ("10.244.2.8", "w2", false, false, false),
            ],
        )],
    );
    let plan = plan(&cluster, &options(None));
    let [web] = plan.ports.as_slice() else {
        panic!("one port: {:?}", plan.ports);
    };
    assert_eq!(web.name.to_string(), "shop/web:http");
    // "10.244.1.10:8080" < "10.244.1.9:8080" as text: kube-proxy's byEndpoint order.
    assert_eq!(
        addrs(&web.cluster_endpoints),
        ["10.244.1.10:8080", "10.244.1.9:8080"]
    );
    assert!(web.has_endpoints && !web.cluster_fallback);
    assert_eq!(addrs(&web.reachable), addrs(&web.cluster_endpoints));
    assert_eq!(web.endpoints.len(), 3);
}

#[test]
fn terminating_fallback_only_without_ready_endpoints() {
    let rows: &[Row<'_>] = &[
        ("10.244.1.5", "w1", false, true, true),
        ("10.244.1.6", "w1", false, false, true),
        ("10.244.1.7", "w1", false, false, false),
    ];
    let cluster = cluster(
        vec![service("web")],
        vec![slice("web-a", "web", HTTP, rows)],
    );
    let web = &plan(&cluster, &options(None)).ports[0];
    assert!(web.cluster_fallback && web.has_endpoints);
    assert_eq!(addrs(&web.cluster_endpoints), ["10.244.1.5:8080"]);

    let mut with_ready = rows.to_vec();
    with_ready.push(("10.244.1.8", "w1", true, true, false));
    let cluster = self::cluster(
        vec![service("web")],
        vec![slice("web-a", "web", HTTP, &with_ready)],
    );
    let web = &plan(&cluster, &options(None)).ports[0];
    assert!(!web.cluster_fallback);
    assert_eq!(addrs(&web.cluster_endpoints), ["10.244.1.8:8080"]);
}

#[test]
fn slices_match_by_port_name_and_protocol() {
    let mut svc = service("dns");
    svc.ports = vec![
        ServicePort {
            name: "dns".to_owned(),
            protocol: Protocol::Udp,
            port: 53,
            target_port: TargetPort::Number(53),
            node_port: None,
        },
        ServicePort {
            name: "dns-tcp".to_owned(),
            protocol: Protocol::Tcp,
            port: 53,
            target_port: TargetPort::Number(53),
            node_port: None,
        },
    ];
    let cluster = cluster(
        vec![svc],
        vec![
            // A slice whose port has the right name but the wrong protocol, and one
            // without the port at all (the payments shape).
            slice(
                "dns-a",
                "dns",
                &[("dns", Protocol::Tcp, 53), ("dns-tcp", Protocol::Tcp, 53)],
                &[("10.244.0.2", "cp", true, true, false)],
            ),
            slice(
                "dns-b",
                "dns",
                &[],
                &[("10.244.0.3", "cp", true, true, false)],
            ),
        ],
    );
    let ports = plan(&cluster, &options(None)).ports;
    let by_name: BTreeMap<String, Vec<String>> = ports
        .iter()
        .map(|p| {
            (
                format!("{}/{}", p.name, p.name.protocol),
                addrs(&p.cluster_endpoints),
            )
        })
        .collect();
    assert_eq!(by_name["shop/dns:dns/UDP"], Vec::<String>::new());
    assert_eq!(by_name["shop/dns:dns-tcp/TCP"], ["10.244.0.2:53"]);
}

#[test]
fn external_local_uses_only_this_nodes_endpoints() {
    let mut svc = service("checkout");
    svc.service_type = ServiceType::NodePort;
    svc.ports[0].node_port = Some(30080);
    svc.external_traffic_policy = TrafficPolicy::Local;
    let rows: &[Row<'_>] = &[
        ("10.244.1.9", "kind-worker", true, true, false),
        ("10.244.2.9", "kind-worker2", true, true, false),
    ];
    let cluster = cluster(vec![svc], vec![slice("c", "checkout", HTTP, rows)]);

    let on_worker = &plan(&cluster, &options(Some("kind-worker"))).ports[0];
    assert!(on_worker.external_local && on_worker.uses_external_chain());
    assert_eq!(addrs(&on_worker.local_endpoints), ["10.244.1.9:8080"]);
    assert_eq!(addrs(&on_worker.cluster_endpoints).len(), 2);
    assert!(on_worker.has_external_endpoints());

    let elsewhere = &plan(&cluster, &options(Some("kind-control-plane"))).ports[0];
    assert!(elsewhere.local_endpoints.is_empty());
    assert!(elsewhere.has_internal_endpoints() && !elsewhere.has_external_endpoints());
    assert!(elsewhere.uses_external_chain(), "short-circuit rules stay");
}

#[test]
fn internal_local_without_local_endpoints_has_no_internal_endpoints() {
    let mut svc = service("web");
    svc.internal_traffic_policy = TrafficPolicy::Local;
    let rows: &[Row<'_>] = &[("10.244.1.5", "kind-worker", true, true, false)];
    let cluster = cluster(vec![svc], vec![slice("w", "web", HTTP, rows)]);
    let worker = &plan(&cluster, &options(Some("kind-worker"))).ports[0];
    assert!(worker.has_internal_endpoints() && worker.uses_local_chain());
    assert!(
        !worker.uses_cluster_chain(),
        "iTP Local never uses Cluster policy"
    );
    let control = &plan(&cluster, &options(Some("kind-control-plane"))).ports[0];
    assert!(control.has_endpoints && !control.has_internal_endpoints());
    assert!(control.reachable.is_empty());
}

#[test]
fn skipped_services_and_families() {
    let mut headless = service("db");
    headless.headless = true;
    headless.cluster_ips.clear();
    assert_eq!(skipped(&headless, IpFamily::V4), Some(Skipped::Headless));
    let mut external = service("ext");
    external.service_type = ServiceType::ExternalName;
    assert_eq!(
        skipped(&external, IpFamily::V4),
        Some(Skipped::ExternalName)
    );
    assert_eq!(
        skipped(&service("web"), IpFamily::V6),
        Some(Skipped::OtherFamily)
    );

    let mut dual = service("web");
    dual.cluster_ips.push(ip("fd00:10:96::20"));
    dual.external_ips = vec![ip("192.0.2.10"), ip("2001:db8::10")];
    let cluster = cluster(
        vec![dual],
        vec![
            slice(
                "web-4",
                "web",
                HTTP,
                &[("10.244.1.5", "w", true, true, false)],
            ),
            slice(
                "web-6",
                "web",
                HTTP,
                &[("fd00:10:244:1::5", "w", true, true, false)],
            ),
        ],
    );
    let v6 = plan(
        &cluster,
        &PlanOptions {
            family: IpFamily::V6,
            ..options(None)
        },
    );
    assert_eq!(v6.ports[0].cluster_ip, ip("fd00:10:96::20"));
    assert_eq!(v6.ports[0].external_ips, [ip("2001:db8::10")]);
    assert_eq!(
        addrs(&v6.ports[0].cluster_endpoints),
        ["[fd00:10:244:1::5]:8080"]
    );
    assert_eq!(
        options(None).cluster_cidr(),
        Some("10.244.0.0/16".parse().expect("net"))
    );
}

#[test]
fn duplicate_endpoints_across_slices_are_one() {
    let rows: &[Row<'_>] = &[("10.244.1.5", "w1", true, true, false)];
    let cluster = cluster(
        vec![service("web")],
        vec![slice("a", "web", HTTP, rows), slice("b", "web", HTTP, rows)],
    );
    assert_eq!(plan(&cluster, &options(None)).ports[0].endpoints.len(), 1);
}
