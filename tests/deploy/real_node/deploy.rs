//! deploy/ on real nodes: the kubelet runs both replicas of the `coredns` Deployment from
//! the clusterdns image, one per node, with the securityContext exactly as written holding in
//! the running process; each replica answers on port 53 of its pod and serves its probes; the
//! RBAC deploy/ grants is all it asks for.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, RecordType};
use serde_json::Value;
use xtask::nodes::condition;

use super::{RealCluster, items};

#[test]
fn clusterdns_runs_as_kube_dns_with_deploys_security_context() {
    let Some(real) =
        RealCluster::shared("real_node::clusterdns_runs_as_kube_dns_with_deploys_security_context")
    else {
        return;
    };
    let deployment = real.get(&["deployment", "coredns", "-n", "kube-system"]);
    assert_eq!(deployment["status"]["readyReplicas"], 2, "{deployment:#}");
    let pods = real.get(&["pods", "-n", "kube-system", "-l", "k8s-app=kube-dns"]);
    let pods: Vec<Value> = items(&pods)
        .into_iter()
        .filter(|pod| pod["metadata"]["deletionTimestamp"].is_null())
        .collect();
    assert_eq!(pods.len(), 2, "two replicas");
    assert_eq!(
        real.dns_nodes,
        ["node-1", "node-2"],
        "one replica per node (the anti-affinity)"
    );
    for (name, ready, listening) in &real.dns_ready {
        eprintln!(
            "real nodes: DNS pod {name} from created to Ready in {:.2} s; the server listened \
             {:.0} ms after it started (the rest: the kubelet, the runtime, the probe)",
            ready.as_secs_f64(),
            listening.as_secs_f64() * 1000.0
        );
    }

    for pod in &pods {
        let name = pod["metadata"]["name"].as_str().unwrap();
        assert!(
            condition(pod, "Ready"),
            "{name} is Ready (the kubelet's readiness probe)"
        );
        let status = &pod["status"]["containerStatuses"][0];
        assert_eq!(status["restartCount"], 0, "{name}: {status:#}");
        assert_eq!(
            status["image"], "docker.io/library/clusterdns:dev",
            "{name} runs the image"
        );
        let id = status["containerID"]
            .as_str()
            .unwrap()
            .trim_start_matches("containerd://");
        let process = process_of(id);
        let field = |key: &str| -> String {
            process
                .lines()
                .find_map(|line| line.strip_prefix(&format!("{key}:")))
                .unwrap_or_else(|| panic!("{name}: no {key} in\n{process}"))
                .trim()
                .to_owned()
        };
        // runAsUser and runAsGroup 65532; every capability dropped but NET_BIND_SERVICE
        // (bit 10), which the file capability makes effective; allowPrivilegeEscalation
        // false; the RuntimeDefault seccomp profile.
        assert_eq!(field("Uid"), "65532\t65532\t65532\t65532", "{name}");
        assert_eq!(field("Gid"), "65532\t65532\t65532\t65532", "{name}");
        assert_eq!(field("CapBnd"), "0000000000000400", "{name}: bounding set");
        assert_eq!(field("CapEff"), "0000000000000400", "{name}: effective set");
        assert_eq!(field("NoNewPrivs"), "1", "{name}");
        assert_eq!(field("Seccomp"), "2", "{name}: a seccomp filter");
        // readOnlyRootFilesystem: the container's / is mounted read-only.
        let pid = field("Pid");
        let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
        let root = mounts
            .lines()
            .find(|line| line.split_whitespace().nth(4) == Some("/"))
            .unwrap_or_else(|| panic!("{name}: no / in\n{mounts}"));
        let options = root.split_whitespace().nth(5).unwrap();
        assert!(
            options.split(',').any(|o| o == "ro"),
            "{name}: / is mounted {options}"
        );

        let ip: Ipv4Addr = pod["status"]["podIP"].as_str().unwrap().parse().unwrap();
        for (port, path) in [(8080, "/health"), (8181, "/ready")] {
            let (code, body) = real
                .nodes
                .http_get(SocketAddr::from((ip, port)), path)
                .unwrap();
            assert_eq!((code, body.trim()), (200, "OK"), "{name} {path}");
        }
        // Port 53 of the pod, asked directly (not through the Service).
        let answer = ask(&real, ip, "kubernetes.default.svc.cluster.local.");
        assert_eq!(answer, [Ipv4Addr::new(10, 96, 0, 1)], "{name} on port 53");
    }

    // deploy/rbac.yaml is all the server needs: no request of its ServiceAccount was refused.
    let refused: Vec<String> = real
        .control_plane()
        .audit()
        .iter()
        .filter(|event| event["user"]["username"] == "system:serviceaccount:kube-system:coredns")
        .filter(|event| event["responseStatus"]["code"].as_u64().unwrap_or(200) == 403)
        .map(|event| format!("{} {}", event["verb"], event["requestURI"]))
        .collect();
    assert!(refused.is_empty(), "refused: {refused:#?}");
}

/// /proc/PID/status of the server in container `id`.
fn process_of(id: &str) -> String {
    let pid = xtask::operations::server_process(id).unwrap();
    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap()
}

/// The A records `name` has, asked of `server`:53 from the switch (which routes to every pod).
pub fn ask(real: &RealCluster, server: Ipv4Addr, name: &str) -> Vec<Ipv4Addr> {
    let mut query = Message::new(0x5151, MessageType::Query, OpCode::Query);
    query.metadata.recursion_desired = true;
    query.add_query(Query::query(Name::from_ascii(name).unwrap(), RecordType::A));
    let bytes = query.to_vec().unwrap();
    let reply = xtask::netns::in_netns(&real.nodes.switch.net(), move || {
        let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        socket.send_to(&bytes, (server, 53)).unwrap();
        let mut buffer = [0u8; 4096];
        let (len, _) = socket.recv_from(&mut buffer).unwrap();
        buffer[..len].to_vec()
    })
    .unwrap();
    let reply = Message::from_vec(&reply).unwrap();
    reply
        .answers
        .iter()
        .filter_map(|record| match &record.data {
            RData::A(a) => Some(a.0),
            _ => None,
        })
        .collect()
}
