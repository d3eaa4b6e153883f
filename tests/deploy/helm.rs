//! The Helm chart (`deploy/helm/clusterdns`) against the kustomize manifests and against its
//! own values: with the default values `helm template` renders exactly the objects of
//! `kubectl kustomize deploy/`; with the autoscaler on, deploy/autoscaler.yaml's too; other
//! values render what they say (two servers, the ServiceMonitor and the PDB, a release beside
//! kube-system's), and wrong values fail naming the value. helm and kubectl are the peers'
//! (bench/peers/build.sh); without them these tests say so and pass, unless
//! `CLUSTERDNS_REQUIRE_PEERS` is set.

use std::collections::BTreeMap;
use std::path::Path;

use clusterdns::config::{Environment, parse_corefile_in};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{Value, json};

use super::{AUTOSCALER, object, strict};
use crate::common::helm::{Tools, by_id, chart};
use crate::common::read;

/// The objects' differences, one line each: what only one side has, and for an object both
/// have, the first JSON path where they differ.
fn differences(
    chart: &BTreeMap<String, Value>,
    reference: &BTreeMap<String, Value>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (id, object) in chart {
        match reference.get(id) {
            None => out.push(format!("only the chart has {id}")),
            Some(expected) => {
                if let Some(at) = super::difference(expected, object, "") {
                    out.push(format!(
                        "{id}: {at} (written: the reference's; read as: the chart's)"
                    ));
                }
            }
        }
    }
    for id in reference.keys().filter(|id| !chart.contains_key(*id)) {
        out.push(format!("only the reference has {id}"));
    }
    out
}

/// kubeadm's install: release `coredns` in kube-system.
fn default_release(tools: &Tools, values: &str) -> BTreeMap<String, Value> {
    tools.objects("coredns", "kube-system", values)
}

#[test]
fn the_default_values_render_the_kustomize_manifests() {
    let Some(tools) = Tools::find() else { return };
    let kustomize = tools.kustomize();
    assert_eq!(kustomize.len(), 6, "{:?}", kustomize.keys());
    let rendered = default_release(&tools, "");
    assert_eq!(differences(&rendered, &kustomize), Vec::<String>::new());
    // And every object is a Kubernetes object field for field (deploy/'s own test, here
    // through the chart).
    for (id, document) in rendered {
        object(&id, document).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn the_autoscaler_adds_deploy_autoscaler_yaml_and_takes_the_replicas() {
    let Some(tools) = Tools::find() else { return };
    let mut expected = tools.kustomize();
    expected.extend(by_id(&read(format!("deploy/{AUTOSCALER}"))));
    // The autoscaler owns the Deployment's replicas: the chart leaves the field out, so
    // an upgrade does not undo its sizing.
    let deployment = expected.get_mut("Deployment kube-system/coredns").unwrap();
    assert_eq!(deployment["spec"]["replicas"], json!(2));
    deployment["spec"]
        .as_object_mut()
        .unwrap()
        .remove("replicas");
    let rendered = default_release(&tools, "autoscaler: {enabled: true}\n");
    assert_eq!(differences(&rendered, &expected), Vec::<String>::new());
    // Its parameters are values.
    let tuned = default_release(
        &tools,
        "autoscaler: {enabled: true, nodesPerReplica: 4, min: 3, max: 9, preventSinglePointFailure: false}\n",
    );
    let linear = &tuned["ConfigMap kube-system/kube-dns-autoscaler"]["data"]["linear"];
    let linear: Value = serde_json::from_str(linear.as_str().unwrap()).unwrap();
    assert_eq!(
        linear,
        json!({"coresPerReplica": 256, "nodesPerReplica": 4, "min": 3, "max": 9,
               "preventSinglePointFailure": false, "includeUnschedulableNodes": true})
    );
}

#[test]
fn helm_lint_passes_with_the_defaults_and_with_everything_on() {
    let Some(tools) = Tools::find() else { return };
    let chart = chart();
    let chart = chart.to_str().unwrap();
    tools
        .helm(&["lint", "--strict", chart])
        .unwrap_or_else(|e| panic!("helm lint: {e}"));
    tools
        .helm(&[
            "lint",
            "--strict",
            chart,
            "--set",
            "autoscaler.enabled=true,prometheus.monitor.enabled=true,podDisruptionBudget.maxUnavailable=1",
        ])
        .unwrap_or_else(|e| panic!("helm lint: {e}"));
}

/// Two server blocks: kubeadm's cluster zone, and a second one on another port with a zone
/// file, two zones (one over TCP too) and its own metrics address.
const TWO_SERVERS: &str = r#"
servers:
  - zones: [{zone: ., use_tcp: true}]
    port: 53
    plugins:
      - name: errors
      - name: health
        parameters: :8091
      - name: ready
      - name: kubernetes
        parameters: cluster.local in-addr.arpa ip6.arpa
        configBlock: |-
          pods insecure
          fallthrough in-addr.arpa ip6.arpa
      - name: prometheus
        parameters: 0.0.0.0:9153
      - name: forward
        parameters: . /etc/resolv.conf
  - zones:
      - zone: example.org
      - zone: example.net.
        scheme: dns://
        use_tcp: true
    port: 1053
    servicePort: 5353
    plugins:
      - name: errors
      - name: file
        parameters: /etc/coredns/example.db example.org example.net
      - name: prometheus
        parameters: :9154
zoneFiles:
  - filename: example.db
    domain: example.org
    contents: |
      @ 3600 IN SOA ns.example.org. admin.example.org. 1 7200 3600 1209600 3600
      www 300 IN A 192.0.2.10
"#;

#[test]
fn two_servers_render_into_the_corefile_the_ports_and_the_volume() {
    let Some(tools) = Tools::find() else { return };
    let rendered = default_release(&tools, TWO_SERVERS);
    let configmap = &rendered["ConfigMap kube-system/coredns"]["data"];
    let zone_file = configmap["example.db"].as_str().unwrap();
    assert!(zone_file.contains("www 300 IN A 192.0.2.10"), "{zone_file}");
    // The Corefile as the pod reads it: the zone file mounted beside it.
    let env = Environment::system()
        .with_file("/etc/resolv.conf", "nameserver 172.18.0.1\n")
        .with_file("/etc/coredns/example.db", zone_file);
    let corefile = configmap["Corefile"].as_str().unwrap();
    let config = parse_corefile_in(corefile, Path::new("/etc/coredns/Corefile"), &env)
        .unwrap_or_else(|e| panic!("{e}\n{corefile}"));
    let blocks: Vec<(Vec<String>, u16)> = config
        .servers
        .iter()
        .map(|s| (s.zones.iter().map(ToString::to_string).collect(), s.port))
        .collect();
    assert_eq!(
        blocks,
        [
            (vec![".".to_owned()], 53),
            (
                vec!["example.org.".to_owned(), "example.net.".to_owned()],
                1053
            )
        ]
    );
    let second = &config.servers[1].plugins;
    assert_eq!(second.file[0].path, Path::new("/etc/coredns/example.db"));
    assert_eq!(second.prometheus.as_ref().unwrap().addr.port(), 9154);
    let first = &config.servers[0].plugins;
    assert_eq!(first.health.as_ref().unwrap().addr.port(), 8091);

    // The container's ports come from the servers: the second one's over UDP and (use_tcp)
    // TCP, its metrics address, and the probes' on health's and ready's ports.
    let deployment = &rendered["Deployment kube-system/coredns"];
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let ports: Vec<(String, u64, String)> = container["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                p["containerPort"].as_u64().unwrap(),
                p["protocol"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected_ports: Vec<(String, u64, String)> = [
        ("dns", 53, "UDP"),
        ("dns-tcp", 53, "TCP"),
        ("dns-1053", 1053, "UDP"),
        ("dns-tcp-1053", 1053, "TCP"),
        ("metrics", 9153, "TCP"),
        ("metrics-9154", 9154, "TCP"),
        ("liveness-probe", 8091, "TCP"),
        ("readiness-probe", 8181, "TCP"),
    ]
    .into_iter()
    .map(|(n, p, t)| (n.to_owned(), p, t.to_owned()))
    .collect();
    assert_eq!(ports, expected_ports);
    assert_eq!(
        container["livenessProbe"]["httpGet"]["port"],
        "liveness-probe"
    );
    // The Service: every DNS port (the second on its servicePort) and both metrics ports.
    let service = &rendered["Service kube-system/kube-dns"];
    let service_ports: Vec<(String, u64, u64)> = service["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                p["port"].as_u64().unwrap(),
                p["targetPort"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected_service: Vec<(String, u64, u64)> = [
        ("dns", 53, 53),
        ("dns-tcp", 53, 53),
        ("dns-1053", 5353, 1053),
        ("dns-tcp-1053", 5353, 1053),
        ("metrics", 9153, 9153),
        ("metrics-9154", 9154, 9154),
    ]
    .into_iter()
    .map(|(n, p, t)| (n.to_owned(), p, t))
    .collect();
    assert_eq!(service_ports, expected_service);
    // The zone file is mounted beside the Corefile.
    let volume = &deployment["spec"]["template"]["spec"]["volumes"][0];
    assert_eq!(
        volume["configMap"]["items"],
        json!([{"key": "Corefile", "path": "Corefile"}, {"key": "example.db", "path": "example.db"}])
    );
    for (id, document) in rendered {
        object(&id, document).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn the_service_monitor_and_the_pdb_select_what_the_chart_runs() {
    let Some(tools) = Tools::find() else { return };
    let rendered = default_release(
        &tools,
        "prometheus:\n  monitor: {enabled: true, interval: 15s, additionalLabels: {release: prom}}\npodDisruptionBudget: {maxUnavailable: 1}\n",
    );
    let service = &rendered["Service kube-system/kube-dns"];
    let pod_labels =
        &rendered["Deployment kube-system/coredns"]["spec"]["template"]["metadata"]["labels"];

    let monitor = &rendered["ServiceMonitor kube-system/coredns"];
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(monitor["metadata"]["labels"]["release"], "prom");
    let spec = &monitor["spec"];
    assert_eq!(
        spec["namespaceSelector"],
        json!({"matchNames": ["kube-system"]})
    );
    for (key, value) in spec["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(&service["metadata"]["labels"][key], value, "{key}");
    }
    assert_eq!(
        spec["endpoints"],
        json!([{"port": "metrics", "interval": "15s"}])
    );
    let named: Vec<&Value> = service["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "metrics")
        .collect();
    assert_eq!(named.len(), 1, "the Service has one port named metrics");

    let document = rendered["PodDisruptionBudget kube-system/coredns"].clone();
    let pdb: PodDisruptionBudget =
        strict("PodDisruptionBudget", document).unwrap_or_else(|e| panic!("{e}"));
    let spec = pdb.spec.unwrap();
    assert_eq!(
        spec.max_unavailable,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1))
    );
    for (key, value) in spec.selector.unwrap().match_labels.unwrap() {
        assert_eq!(pod_labels[&key], json!(value), "{key}");
    }

    // Off by default, and a monitor without a metrics port to scrape is refused.
    let plain = default_release(&tools, "");
    assert!(
        !plain
            .keys()
            .any(|id| id.starts_with("ServiceMonitor") || id.starts_with("PodDisruptionBudget"))
    );
    let error = tools
        .template(
            "coredns",
            "kube-system",
            "prometheus: {monitor: {enabled: true}}\nservers: [{plugins: [{name: errors}, {name: health}, {name: ready}]}]\n",
        )
        .unwrap_err();
    assert!(
        error.contains("prometheus.monitor.enabled: no server has the prometheus plugin"),
        "{error}"
    );
}

#[test]
fn a_release_beside_kube_systems_names_its_cluster_wide_objects_after_itself() {
    let Some(tools) = Tools::find() else { return };
    let kustomize = tools.kustomize();
    let mut kube_system = by_id(&read(format!("deploy/{AUTOSCALER}")));
    kube_system.extend(kustomize);
    let rendered = tools.objects(
        "dns-two",
        "dns-two",
        "service: {clusterIP: \"\"}\nautoscaler: {enabled: true, name: \"\"}\n",
    );
    let ids: Vec<&String> = rendered.keys().collect();
    assert_eq!(
        ids,
        [
            "ClusterRole system:dns-two",
            "ClusterRole system:dns-two-autoscaler",
            "ClusterRoleBinding system:dns-two",
            "ClusterRoleBinding system:dns-two-autoscaler",
            "ConfigMap dns-two/dns-two",
            "ConfigMap dns-two/dns-two-autoscaler",
            "Deployment dns-two/dns-two",
            "Deployment dns-two/dns-two-autoscaler",
            "Role dns-two/dns-two-autoscaler",
            "RoleBinding dns-two/dns-two-autoscaler",
            "Service dns-two/kube-dns",
            "ServiceAccount dns-two/dns-two",
            "ServiceAccount dns-two/dns-two-autoscaler",
        ]
    );
    for id in rendered.keys() {
        assert!(!kube_system.contains_key(id), "{id} is kube-system's too");
    }
    // The references follow the names.
    let binding = &rendered["ClusterRoleBinding system:dns-two"];
    assert_eq!(binding["roleRef"]["name"], "system:dns-two");
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "dns-two", "namespace": "dns-two"}])
    );
    let pod = &rendered["Deployment dns-two/dns-two"]["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "dns-two");
    assert_eq!(pod["volumes"][0]["configMap"]["name"], "dns-two");
    let command = &rendered["Deployment dns-two/dns-two-autoscaler"]["spec"]["template"]["spec"]["containers"]
        [0]["command"];
    assert_eq!(
        command,
        &json!([
            "/cluster-proportional-autoscaler",
            "--namespace=dns-two",
            "--configmap=dns-two-autoscaler",
            "--target=deployment/dns-two",
            "--v=2"
        ])
    );
    assert_eq!(
        rendered["Role dns-two/dns-two-autoscaler"]["rules"][0]["resourceNames"],
        json!(["dns-two"])
    );
    assert!(
        rendered["Service dns-two/kube-dns"]["spec"]
            .get("clusterIP")
            .is_none()
    );
    for (id, document) in rendered {
        object(&id, document).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn wrong_values_fail_naming_the_value() {
    let Some(tools) = Tools::find() else { return };
    let cases = [
        (
            "servers: [{zones: [{zone: ., scheme: \"tls://\"}], plugins: [{name: errors}]}]\nlivenessProbe: {enabled: false}\nreadinessProbe: {enabled: false}\n",
            "/servers/0/zones/0/scheme",
        ),
        ("replicas: 3\n", "'replicas' not allowed"),
        (
            "servers: [{port: 70000, plugins: [{name: errors}]}]\n",
            "/servers/0/port",
        ),
        (
            "servers: [{plugins: [{name: errors, configblock: x}]}]\n",
            "'configblock' not allowed",
        ),
        ("servers: []\n", "/servers"),
        (
            "servers: [{plugins: [{name: errors}, {name: ready}]}]\n",
            "livenessProbe.enabled: no server has the health plugin",
        ),
        (
            "servers: [{plugins: [{name: health, parameters: localhost}, {name: ready}]}]\n",
            "\"localhost\" has no port",
        ),
        (
            "deployment: {dnsPolicy: None}\n",
            "deployment.dnsPolicy: None needs deployment.dnsConfig",
        ),
    ];
    for (values, expected) in cases {
        let error = tools
            .template("coredns", "kube-system", values)
            .expect_err(values);
        assert!(error.contains(expected), "{values}: {error}");
    }
}

/// docs/helm.md's values table has a row for every top-level value of values.yaml, and no
/// row for a value the chart does not have.
#[test]
fn the_docs_table_lists_every_value() {
    let values: serde_json::Map<String, Value> =
        serde_saphyr::from_str(&read("deploy/helm/clusterdns/values.yaml")).unwrap();
    let schema: Value =
        serde_json::from_str(&read("deploy/helm/clusterdns/values.schema.json")).unwrap();
    let page = read("docs/helm.md");
    let table = page
        .split("## Values")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    let mut documented = std::collections::BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split('|').nth(1).unwrap();
        for key in first.split('`').skip(1).step_by(2) {
            let top = key.split('.').next().unwrap().to_owned();
            assert!(
                schema["properties"].get(&top).is_some(),
                "docs/helm.md documents {key}, which the chart does not have"
            );
            documented.insert(top);
        }
    }
    let mut expected: std::collections::BTreeSet<String> = values.keys().cloned().collect();
    expected.insert("global".to_owned());
    assert_eq!(documented, expected);
    // And the schema knows every value of values.yaml (the defaults pass it: helm lint).
    for key in values.keys() {
        assert!(schema["properties"].get(key).is_some(), "{key}");
    }
}
