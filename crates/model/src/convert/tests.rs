//! Tests of `convert`.

use super::*;
use serde_json::{Value, json};
use std::time::Duration;

fn svc(spec: Value) -> std::result::Result<Service, String> {
    let object: core::Service = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
        "spec": spec,
    }))
    .expect("test Service");
    service(&object).map_err(|error| error.to_string())
}

fn pod_of(value: Value) -> std::result::Result<Pod, String> {
    let mut object = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "shop"},
    });
    if let (Some(target), Some(source)) = (object.as_object_mut(), value.as_object()) {
        target.extend(source.clone());
    }
    let object: core::Pod = serde_json::from_value(object).expect("test Pod");
    pod(&object).map_err(|error| error.to_string())
}

fn slice_of(value: Value) -> std::result::Result<EndpointSlice, String> {
    let mut object = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "web-abcde",
            "namespace": "shop",
            "labels": {"kubernetes.io/service-name": "web"},
        },
    });
    if let (Some(target), Some(source)) = (object.as_object_mut(), value.as_object()) {
        target.extend(source.clone());
    }
    let object: discovery::EndpointSlice =
        serde_json::from_value(object).expect("test EndpointSlice");
    endpoint_slice(&object).map_err(|error| error.to_string())
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("test IP")
}

#[test]
fn service_errors_name_the_field() {
    let cases: &[(&str, Value, &str)] = &[
        (
            "port out of range",
            json!({"ports": [{"port": 80}, {"port": 70000}]}),
            "spec.ports[1].port: expected a port number 1-65535, found 70000",
        ),
        (
            "port missing",
            json!({"ports": [{"name": "http"}]}),
            "spec.ports[0].port: expected a port number 1-65535, found 0",
        ),
        (
            "targetPort out of range",
            json!({"ports": [{"port": 80}, {"port": 81, "targetPort": -1}]}),
            "spec.ports[1].targetPort: expected a port number 1-65535, found -1",
        ),
        (
            "numeric string targetPort out of range",
            json!({"ports": [{"port": 80, "targetPort": "99999"}]}),
            "spec.ports[0].targetPort: expected a port number 1-65535, found \"99999\"",
        ),
        (
            "nodePort out of range",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 65536}]}),
            "spec.ports[0].nodePort: expected a port number 1-65535, found 65536",
        ),
        (
            "unknown protocol",
            json!({"ports": [{"port": 80, "protocol": "tcp"}]}),
            "spec.ports[0].protocol: expected TCP, UDP or SCTP, found \"tcp\"",
        ),
        (
            "unknown type",
            json!({"type": "Headless"}),
            "spec.type: expected ClusterIP, NodePort, LoadBalancer or ExternalName, found \"Headless\"",
        ),
        (
            "bad clusterIP",
            json!({"clusterIP": "10.96.0.300"}),
            "spec.clusterIP: expected an IP address, found \"10.96.0.300\"",
        ),
        (
            "bad second clusterIP",
            json!({"clusterIP": "10.96.0.50", "clusterIPs": ["10.96.0.50", "fd00::zz"]}),
            "spec.clusterIPs[1]: expected an IP address, found \"fd00::zz\"",
        ),
        (
            "unknown ipFamily",
            json!({"ipFamilies": ["IPv4", "IPv5"]}),
            "spec.ipFamilies[1]: expected IPv4 or IPv6, found \"IPv5\"",
        ),
        (
            "unknown externalTrafficPolicy",
            json!({"externalTrafficPolicy": "Global"}),
            "spec.externalTrafficPolicy: expected Cluster or Local, found \"Global\"",
        ),
        (
            "unknown internalTrafficPolicy",
            json!({"internalTrafficPolicy": "PreferLocal"}),
            "spec.internalTrafficPolicy: expected Cluster or Local, found \"PreferLocal\"",
        ),
        (
            "unknown sessionAffinity",
            json!({"sessionAffinity": "Cookie"}),
            "spec.sessionAffinity: expected None or ClientIP, found \"Cookie\"",
        ),
        (
            "affinity timeout out of range",
            json!({"sessionAffinity": "ClientIP",
                       "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}}}),
            "spec.sessionAffinityConfig.clientIP.timeoutSeconds: expected seconds 1-86400, found 0",
        ),
        (
            "bad externalIP",
            json!({"externalIPs": ["example.com"]}),
            "spec.externalIPs[0]: expected an IP address, found \"example.com\"",
        ),
        (
            "bad source range",
            json!({"loadBalancerSourceRanges": ["10.0.0.0/33"]}),
            "spec.loadBalancerSourceRanges[0]: expected a CIDR such as 10.0.0.0/8, found \"10.0.0.0/33\"",
        ),
    ];
    for (name, spec, want) in cases {
        assert_eq!(
            svc(spec.clone()).err().as_deref(),
            Some(*want),
            "case: {name}"
        );
    }
}

#[test]
fn service_fields_and_defaults() {
    let service = svc(json!({
        "type": "NodePort",
        "clusterIP": "10.96.0.30",
        "clusterIPs": ["10.96.0.30"],
        "ipFamilies": ["IPv4"],
        "selector": {"app": "checkout"},
        "externalTrafficPolicy": "Local",
        "sessionAffinity": "ClientIP",
        "ports": [
            {"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30080},
            {"name": "grpc", "port": 9090, "targetPort": "grpc", "protocol": "TCP"},
            {"name": "num", "port": 81, "targetPort": "8081"},
            {"name": "dns", "port": 53, "protocol": "UDP"},
            {"name": "zero", "port": 82, "targetPort": 0},
        ],
    }))
    .expect("valid Service");
    assert_eq!(service.key, ObjectKey::new("shop", "web"));
    assert_eq!(service.service_type, ServiceType::NodePort);
    assert_eq!(service.cluster_ips, vec![ip("10.96.0.30")]);
    assert!(!service.headless);
    assert_eq!(service.ip_families, vec![AddressType::IPv4]);
    assert_eq!(service.external_traffic_policy, TrafficPolicy::Local);
    assert_eq!(service.internal_traffic_policy, TrafficPolicy::Cluster);
    assert_eq!(
        service.session_affinity,
        SessionAffinity::ClientIp {
            timeout_seconds: 10_800
        }
    );
    let targets: Vec<(&str, &TargetPort, Protocol, Option<u16>)> = service
        .ports
        .iter()
        .map(|port| {
            (
                port.name.as_str(),
                &port.target_port,
                port.protocol,
                port.node_port,
            )
        })
        .collect();
    assert_eq!(
        targets,
        vec![
            (
                "http",
                &TargetPort::Number(8080),
                Protocol::Tcp,
                Some(30080)
            ),
            (
                "grpc",
                &TargetPort::Name("grpc".to_owned()),
                Protocol::Tcp,
                None
            ),
            ("num", &TargetPort::Number(8081), Protocol::Tcp, None),
            ("dns", &TargetPort::Number(53), Protocol::Udp, None),
            ("zero", &TargetPort::Number(82), Protocol::Tcp, None),
        ]
    );
}

#[test]
fn service_cluster_ips() {
    let cases: &[(&str, Value, Vec<IpAddr>, bool)] = &[
        (
            "clusterIPs win",
            json!({"clusterIP": "10.96.0.50", "clusterIPs": ["10.96.0.50", "fd00:10:96::50"]}),
            vec![ip("10.96.0.50"), ip("fd00:10:96::50")],
            false,
        ),
        (
            "clusterIP alone",
            json!({"clusterIP": "10.96.0.50"}),
            vec![ip("10.96.0.50")],
            false,
        ),
        (
            "None is headless",
            json!({"clusterIP": "None"}),
            vec![],
            true,
        ),
        (
            "None in clusterIPs is headless",
            json!({"clusterIP": "None", "clusterIPs": ["None"]}),
            vec![],
            true,
        ),
        (
            "ExternalName has none",
            json!({"type": "ExternalName", "externalName": "db.example.com"}),
            vec![],
            false,
        ),
        (
            "IPv4-mapped IPv6 reads as IPv4, like Go",
            json!({"clusterIP": "::ffff:10.96.0.9"}),
            vec![ip("10.96.0.9")],
            false,
        ),
    ];
    for (name, spec, ips, headless) in cases {
        let service = svc(spec.clone()).expect(name);
        assert_eq!(&service.cluster_ips, ips, "case: {name}");
        assert_eq!(service.headless, *headless, "case: {name}");
    }
}

#[test]
fn service_selector_and_external_name() {
    let none = svc(json!({"clusterIP": "10.96.0.1"})).expect("no selector");
    assert_eq!(none.selector, None);
    let empty = svc(json!({"selector": {}})).expect("empty selector");
    assert_eq!(empty.selector, None, "an empty selector is no selector");
    let external = svc(json!({"type": "ExternalName", "externalName": "db.example.com"}))
        .expect("ExternalName");
    assert_eq!(external.external_name.as_deref(), Some("db.example.com"));
    let stale = svc(json!({"type": "ClusterIP", "externalName": "db.example.com"}))
        .expect("stale externalName");
    assert_eq!(stale.external_name, None);
    let lb = svc(json!({"type": "LoadBalancer"})).expect("LoadBalancer");
    assert_eq!(lb.service_type, ServiceType::LoadBalancer);
}

#[test]
fn service_health_check_node_port() {
    let lb = svc(
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                            "healthCheckNodePort": 32123}),
    )
    .expect("valid");
    assert_eq!(lb.health_check_node_port, Some(32123));
    assert_eq!(svc(json!({})).expect("valid").health_check_node_port, None);
    assert_eq!(
        svc(json!({"healthCheckNodePort": 0}))
            .expect("valid")
            .health_check_node_port,
        None
    );
    assert_eq!(
        svc(json!({"healthCheckNodePort": 70000})).err().as_deref(),
        Some("spec.healthCheckNodePort: expected a port number 1-65535, found 70000")
    );
}

#[test]
fn service_load_balancer_status() {
    let object: core::Service = serde_json::from_value(json!({
        "metadata": {"name": "lb"},
        "spec": {"type": "LoadBalancer", "loadBalancerSourceRanges": [" 10.0.0.0/8 "]},
        "status": {"loadBalancer": {"ingress": [
            {"ip": "172.18.255.200"}, {"hostname": "lb.example.com"}
        ]}},
    }))
    .expect("test Service");
    let service = service(&object).expect("valid");
    assert_eq!(service.key, ObjectKey::new("default", "lb"));
    assert_eq!(service.load_balancer_ips, vec![ip("172.18.255.200")]);
    assert_eq!(service.load_balancer_hostnames, vec!["lb.example.com"]);
    assert_eq!(
        service.load_balancer_source_ranges,
        vec!["10.0.0.0/8".parse::<IpNet>().expect("net")]
    );

    let object: core::Service = serde_json::from_value(json!({
        "metadata": {"name": "lb"},
        "status": {"loadBalancer": {"ingress": [{"hostname": "x"}, {"ip": "nope"}]}},
    }))
    .expect("test Service");
    assert_eq!(
        service_error(&object),
        "status.loadBalancer.ingress[1].ip: expected an IP address, found \"nope\""
    );
}

fn service_error(object: &core::Service) -> String {
    service(object)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn missing_name_is_an_error() {
    let object: core::Service =
        serde_json::from_value(json!({"metadata": {"namespace": "shop"}})).expect("test");
    assert_eq!(
        service_error(&object),
        "metadata.name: expected the object's name, found nothing"
    );
    let object: core::Namespace = serde_json::from_value(json!({"metadata": {}})).expect("test");
    assert!(namespace(&object).is_err());
}

#[test]
fn pod_fields() {
    let pod = pod_of(json!({
        "metadata": {
            "name": "db-0", "namespace": "shop", "labels": {"app": "db"},
            "deletionTimestamp": "2026-01-02T03:04:05Z",
        },
        "spec": {
            "hostname": "db-0", "subdomain": "db", "nodeName": "kind-worker",
            "initContainers": [
                {"name": "init", "ports": [{"name": "init", "containerPort": 1}]},
                {"name": "proxy", "restartPolicy": "Always",
                 "ports": [{"name": "proxy", "containerPort": 15001}]},
            ],
            "containers": [
                {"name": "pg", "ports": [{"name": "pg", "containerPort": 5432}]},
                {"name": "metrics", "ports": [
                    {"name": "metrics", "containerPort": 9187, "protocol": "TCP"},
                    {"containerPort": 53, "protocol": "UDP"},
                ]},
            ],
        },
        "status": {
            "phase": "Running",
            "podIP": "10.244.1.11",
            "podIPs": [{"ip": "10.244.1.11"}, {"ip": "fd00:10:244:1::b"}],
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
        },
    }))
    .expect("valid Pod");
    assert_eq!(pod.key, ObjectKey::new("shop", "db-0"));
    assert_eq!(pod.ips[..], [ip("10.244.1.11"), ip("fd00:10:244:1::b")]);
    assert_eq!(pod.primary_ip(), Some(ip("10.244.1.11")));
    assert_eq!(pod.phase, PodPhase::Running);
    assert!(pod.ready);
    assert!(pod.terminating);
    assert_eq!(pod.details().hostname.as_deref(), Some("db-0"));
    assert_eq!(pod.details().subdomain.as_deref(), Some("db"));
    assert_eq!(pod.details().node_name.as_deref(), Some("kind-worker"));
    let ports: Vec<(&str, u16, Protocol)> = pod
        .details()
        .container_ports
        .iter()
        .map(|port| (port.name.as_str(), port.port, port.protocol))
        .collect();
    assert_eq!(
        ports,
        vec![
            ("pg", 5432, Protocol::Tcp),
            ("metrics", 9187, Protocol::Tcp),
            ("", 53, Protocol::Udp),
            ("proxy", 15001, Protocol::Tcp),
        ]
    );
}

#[test]
fn pod_readiness_and_ips() {
    let cases: &[(&str, Value, bool, Vec<IpAddr>, PodPhase)] = &[
        (
            "podIP fallback, Ready False",
            json!({"status": {"phase": "Running", "podIP": "10.244.2.8",
                       "conditions": [{"type": "Ready", "status": "False"}]}}),
            false,
            vec![ip("10.244.2.8")],
            PodPhase::Running,
        ),
        (
            "no status at all",
            json!({}),
            false,
            vec![],
            PodPhase::Unknown,
        ),
        (
            "first Ready condition wins",
            json!({"status": {"phase": "Pending", "conditions": [
                    {"type": "Ready", "status": "Unknown"}, {"type": "Ready", "status": "True"}]}}),
            false,
            vec![],
            PodPhase::Pending,
        ),
        (
            "Succeeded",
            json!({"status": {"phase": "Succeeded", "podIPs": [{"ip": "10.244.1.3"}],
                       "conditions": [{"type": "Ready", "status": "True"}]}}),
            true,
            vec![ip("10.244.1.3")],
            PodPhase::Succeeded,
        ),
    ];
    for (name, value, ready, ips, phase) in cases {
        let pod = pod_of(value.clone()).expect(name);
        assert_eq!(pod.ready, *ready, "case: {name}");
        assert_eq!(&pod.ips[..], &ips[..], "case: {name}");
        assert_eq!(pod.phase, *phase, "case: {name}");
        assert!(!pod.terminating, "case: {name}");
    }
}

#[test]
fn pod_errors_name_the_field() {
    let cases: &[(&str, Value, &str)] = &[
        (
            "bad podIPs entry",
            json!({"status": {"podIPs": [{"ip": "10.244.1.5"}, {"ip": "fd00::g"}]}}),
            "status.podIPs[1].ip: expected an IP address, found \"fd00::g\"",
        ),
        (
            "bad podIP",
            json!({"status": {"podIP": "10.244.1"}}),
            "status.podIP: expected an IP address, found \"10.244.1\"",
        ),
        (
            "unknown phase",
            json!({"status": {"phase": "Evicted"}}),
            "status.phase: expected Pending, Running, Succeeded, Failed or Unknown, found \"Evicted\"",
        ),
        (
            "container port out of range",
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "ports": [
                    {"containerPort": 80}, {"containerPort": 0}]}]}}),
            "spec.containers[1].ports[1].containerPort: expected a port number 1-65535, found 0",
        ),
        (
            "container port protocol",
            json!({"spec": {"containers": [{"name": "a", "ports": [
                    {"containerPort": 80, "protocol": "HTTP"}]}]}}),
            "spec.containers[0].ports[0].protocol: expected TCP, UDP or SCTP, found \"HTTP\"",
        ),
        (
            "sidecar port",
            json!({"spec": {"containers": [], "initContainers": [
                    {"name": "a", "restartPolicy": "Always", "ports": [{"containerPort": 70000}]}]}}),
            "spec.initContainers[0].ports[0].containerPort: expected a port number 1-65535, found 70000",
        ),
    ];
    for (name, value, want) in cases {
        assert_eq!(
            pod_of(value.clone()).err().as_deref(),
            Some(*want),
            "case: {name}"
        );
    }
}

#[test]
fn endpoint_slice_fields() {
    let slice = slice_of(json!({
        "addressType": "IPv4",
        "endpoints": [
            {"addresses": ["10.244.1.5"],
             "conditions": {"ready": true, "serving": true, "terminating": false},
             "nodeName": "kind-worker", "zone": "a", "hostname": "web-0",
             "targetRef": {"kind": "Pod", "name": "web-0", "namespace": "shop"}},
            {"addresses": ["172.18.0.2"], "conditions": {},
             "targetRef": {"kind": "Node", "name": "kind-control-plane"}},
        ],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {}],
    }))
    .expect("valid slice");
    assert_eq!(slice.key, ObjectKey::new("shop", "web-abcde"));
    assert_eq!(slice.service_name.as_deref(), Some("web"));
    assert_eq!(slice.address_type, AddressType::IPv4);
    assert_eq!(slice.endpoints.len(), 2);
    let first = &slice.endpoints[0];
    assert_eq!(first.addresses[..], [ip("10.244.1.5")]);
    assert_eq!(first.hostname.as_deref(), Some("web-0"));
    assert_eq!(first.node_name(), Some("kind-worker"));
    assert_eq!(first.zone(), Some("a"));
    assert_eq!(first.target_pod(), Some("web-0"));
    let second = &slice.endpoints[1];
    assert_eq!(second.target_pod(), None, "a Node targetRef is not a pod");
    assert!(second.conditions.ready() && second.conditions.serving());
    assert!(!second.conditions.terminating());
    assert_eq!(
        slice.ports,
        vec![
            EndpointPort {
                name: "http".to_owned(),
                protocol: Protocol::Tcp,
                port: Some(8080)
            },
            EndpointPort {
                name: String::new(),
                protocol: Protocol::Tcp,
                port: None
            },
        ]
    );
}

#[test]
fn endpoint_slice_kinds() {
    let fqdn = slice_of(json!({
        "addressType": "FQDN",
        "endpoints": [{"addresses": ["db.example.com"]}],
    }))
    .expect("FQDN slice");
    assert_eq!(fqdn.address_type, AddressType::Fqdn);
    assert!(fqdn.endpoints[0].addresses.is_empty());

    let placeholder = slice_of(json!({"addressType": "IPv6", "endpoints": null, "ports": null}))
        .expect("placeholder");
    assert!(placeholder.endpoints.is_empty() && placeholder.ports.is_empty());

    let object: discovery::EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": "mirror", "namespace": "shop"}, "addressType": "IPv4",
    }))
    .expect("test");
    assert_eq!(endpoint_slice(&object).expect("valid").service_name, None);
}

#[test]
fn endpoint_slice_trigger_time_annotation() {
    let stamped = |stamp: &str| {
        let object: discovery::EndpointSlice = serde_json::from_value(json!({
            "metadata": {
                "name": "web-abcde", "namespace": "shop",
                "annotations": {ANNOTATION_TRIGGER_TIME: stamp},
            },
            "addressType": "IPv4",
        }))
        .expect("test");
        endpoint_slice(&object).expect("valid").trigger_time
    };
    let epoch = |nanos: u64| Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos));
    assert_eq!(
        stamped("2024-01-01T00:00:00Z"),
        epoch(1_704_067_200_000_000_000)
    );
    assert_eq!(
        stamped("2024-01-01T01:00:00.5+01:00"),
        epoch(1_704_067_200_500_000_000)
    );
    // Free-form to the API server: a value that does not parse is no stamp, not an error.
    assert_eq!(stamped("yesterday"), None);
    assert_eq!(
        slice_of(json!({"addressType": "IPv4"}))
            .expect("valid")
            .trigger_time,
        None
    );
}

#[test]
fn endpoint_slice_errors_name_the_field() {
    let cases: &[(&str, Value, &str)] = &[
        (
            "unknown addressType",
            json!({"addressType": "IP"}),
            "addressType: expected IPv4, IPv6 or FQDN, found \"IP\"",
        ),
        (
            "missing addressType",
            json!({}),
            "addressType: expected IPv4, IPv6 or FQDN, found nothing",
        ),
        (
            "bad address",
            json!({"addressType": "IPv4", "endpoints": [
                    {"addresses": ["10.244.1.5"]}, {"addresses": ["10.244.1.256"]}]}),
            "endpoints[1].addresses[0]: expected an IP address, found \"10.244.1.256\"",
        ),
        (
            "wrong family",
            json!({"addressType": "IPv4", "endpoints": [{"addresses": ["fd00::1"]}]}),
            "endpoints[0].addresses[0]: expected an IPv4 address (addressType IPv4), found fd00::1",
        ),
        (
            "port out of range",
            json!({"addressType": "IPv4", "ports": [{"port": 65536}]}),
            "ports[0].port: expected a port number 1-65535, found 65536",
        ),
        (
            "port protocol",
            json!({"addressType": "IPv4", "ports": [{"port": 53, "protocol": "udp"}]}),
            "ports[0].protocol: expected TCP, UDP or SCTP, found \"udp\"",
        ),
    ];
    for (name, value, want) in cases {
        assert_eq!(
            slice_of(value.clone()).err().as_deref(),
            Some(*want),
            "case: {name}"
        );
    }
}

#[test]
fn namespace_labels() {
    let object: core::Namespace = serde_json::from_value(json!({
        "metadata": {"name": "shop", "labels": {"kubernetes.io/metadata.name": "shop"}},
    }))
    .expect("test");
    let namespace = namespace(&object).expect("valid");
    assert_eq!(namespace.name, "shop");
    assert_eq!(
        namespace
            .labels
            .get("kubernetes.io/metadata.name")
            .map(String::as_str),
        Some("shop")
    );
}
