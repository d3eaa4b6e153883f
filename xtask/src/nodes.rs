//! Real Kubernetes nodes joined to a local control plane ([`crate::cluster`]): each node is a
//! network, mount and PID namespace of its own (see [`crate::netns`]) running Debian's
//! containerd and runc, the kubelet (registered with the API server as `system:node:NAME`),
//! the CNI bridge with the node's pod range, and kube-proxy — iptables mode on the first
//! node, nftables on the second. The nodes sit on one LAN, a bridge in a namespace of its own
//! (the "switch"), which also routes each node's pod range to it; the API server (on this
//! machine's 127.0.0.1) is reached through a relay at [`API`], which the `kubernetes`
//! Service's EndpointSlice names, so pods reach it as in any cluster (10.96.0.1:443, through
//! kube-proxy). A DNS upstream for the names outside the cluster lives in a third namespace,
//! at [`UPSTREAM`]: the nodes' resolv.conf, which the kubelet gives pods with `dnsPolicy:
//! Default` (the cluster DNS's own), names it.
//!
//! No address of these ranges is routed from this machine's own namespace: everything the
//! nodes send stays in the namespaces made here, and everything ends with this process
//! (the namespaces' holders die with it); what the kernel keeps — the nodes' cgroup
//! directories, and the three global sysctls the kubelet changes (`vm.overcommit_memory`,
//! `kernel.panic`, `kernel.panic_on_oops`) — is put back by a janitor process that waits for
//! this one to end.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use nix::sys::signal::Signal;
use serde_json::{Value, json};

use crate::images;
use crate::kube::{ControlPlane, Kubectl, wait_until};
use crate::netns::{self, Holder, Kinds, signal, tied};

/// The switch's address on the LAN, where the API server's relay listens.
pub const SWITCH: Ipv4Addr = Ipv4Addr::new(172, 30, 0, 1);
/// The API server as the nodes and pods reach it.
pub const API: SocketAddrV4 = SocketAddrV4::new(SWITCH, 6443);
/// The DNS upstream's address: the nameserver of the nodes' resolv.conf.
pub const UPSTREAM: Ipv4Addr = Ipv4Addr::new(172, 30, 0, 53);
/// The cluster's pod range (each node has the /24 of its number).
pub const CLUSTER_CIDR: &str = "10.244.0.0/16";
/// The kube-dns Service's address, which the kubelet writes into pods' resolv.conf.
pub const CLUSTER_DNS: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 10);
/// The cluster's DNS domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";
/// The node label that says which mode the node's kube-proxy runs in.
pub const PROXY_MODE_LABEL: &str = "clusterdns.test/kube-proxy";

/// kube-proxy's mode on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyMode {
    Iptables,
    Nftables,
}

impl ProxyMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Iptables => "iptables",
            Self::Nftables => "nftables",
        }
    }
}

/// What to bring up.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the nodes' files go (configs, logs, containerd's store); it should be new.
    pub dir: PathBuf,
    /// The nodes, by name and kube-proxy mode.
    pub nodes: Vec<(String, ProxyMode)>,
    /// Image archives imported on every node, beside the pause and client images.
    pub images: Vec<PathBuf>,
    /// A directory the janitor deletes whole once this process has ended (a test's
    /// temporary directory holding `dir`); without it, `dir`'s configurations and logs stay.
    pub remove_at_exit: Option<PathBuf>,
}

impl Options {
    /// Two nodes, `node-1` (kube-proxy in iptables mode) and `node-2` (nftables), in `dir`,
    /// with `images`.
    pub fn two(dir: &Path, images: Vec<PathBuf>) -> Self {
        Self {
            dir: dir.to_path_buf(),
            nodes: vec![
                ("node-1".into(), ProxyMode::Iptables),
                ("node-2".into(), ProxyMode::Nftables),
            ],
            images,
            remove_at_exit: None,
        }
    }
}

/// A JSON patch (RFC 6902) of one of deploy/'s objects, for [`Nodes::apply_dns`].
#[derive(Debug, Clone)]
pub struct Patch {
    pub kind: &'static str,
    pub name: &'static str,
    /// The patch's operations, a JSON array.
    pub operations: Value,
}

impl Patch {
    /// The ConfigMap's Corefile replaced by `corefile`.
    pub fn corefile(corefile: &str) -> Self {
        Self {
            kind: "ConfigMap",
            name: "coredns",
            operations: json!([{"op": "replace", "path": "/data/Corefile", "value": corefile}]),
        }
    }

    /// The readiness probe's period and failure threshold set to these.
    pub fn readiness(period_seconds: u32, failure_threshold: u32) -> Self {
        let probe = "/spec/template/spec/containers/0/readinessProbe";
        Self {
            kind: "Deployment",
            name: "coredns",
            operations: json!([
                {"op": "replace", "path": format!("{probe}/periodSeconds"), "value": period_seconds},
                {"op": "replace", "path": format!("{probe}/failureThreshold"), "value": failure_threshold},
            ]),
        }
    }
}

/// The nodes, running.
pub struct Nodes {
    pub dir: PathBuf,
    pub plane: ControlPlane,
    pub nodes: Vec<Node>,
    /// The namespace of the LAN's bridge: the route to every node and pod.
    pub switch: Holder,
    /// The namespace of the DNS upstream.
    pub upstream: Holder,
}

/// One node.
pub struct Node {
    pub name: String,
    /// Its number, from 1: its address is 172.30.0.(10+n), its pods' range 10.244.n.0/24.
    pub number: u8,
    pub proxy_mode: ProxyMode,
    pub dir: PathBuf,
    pub holder: Holder,
    pub containerd: Component,
    pub kubelet: Component,
    pub kube_proxy: Component,
}

/// A process of a node (containerd, the kubelet, kube-proxy), started by `nsenter` into the
/// node's namespaces; stopped and started again from any thread (an operation on the node
/// while load runs through it).
pub struct Component {
    pub name: &'static str,
    nsenter: Mutex<Option<Child>>,
    pub log: PathBuf,
    /// nsenter's arguments.
    command: Vec<std::ffi::OsString>,
}

impl Component {
    fn start(
        node: &Holder,
        name: &'static str,
        program: &Path,
        args: &[String],
        log: &Path,
    ) -> Result<Self> {
        let component = Self {
            name,
            nsenter: Mutex::new(None),
            log: log.to_path_buf(),
            command: node.nsenter(Kinds::Node, program, args),
        };
        component.launch()?;
        Ok(component)
    }

    fn nsenter(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.nsenter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn launch(&self) -> Result<()> {
        *self.nsenter() = Some(netns::spawn(tied("nsenter", &self.command, &self.log)?)?);
        Ok(())
    }

    /// Whether it is running.
    pub fn running(&self) -> bool {
        self.nsenter()
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// The component's own process (nsenter's child), by its PID here.
    pub fn pid(&self) -> Option<u32> {
        let id = self.nsenter().as_ref()?.id();
        netns::children(id).first().copied()
    }

    /// Stops it with SIGTERM (SIGKILL after 10 s) and waits for it.
    pub fn stop(&self) {
        if let Some(pid) = self.pid() {
            signal(pid, Signal::SIGTERM);
        }
        for _ in 0..100 {
            if !self.running() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if let Some(pid) = self.pid() {
            signal(pid, Signal::SIGKILL);
        }
        if let Some(mut nsenter) = self.nsenter().take() {
            let _ = nsenter.kill();
            let _ = nsenter.wait();
        }
    }

    /// Stops it and starts it again as it was started.
    pub fn restart(&self) -> Result<()> {
        self.stop();
        self.launch()
    }

    /// The end of its log, for an error.
    pub fn tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(12)..].join("\n")
    }
}

/// Node `number`'s address on the LAN.
pub fn node_address(number: u8) -> Ipv4Addr {
    Ipv4Addr::new(172, 30, 0, 10 + number)
}

/// Node `number`'s pod range.
pub fn pod_range(number: u8) -> String {
    format!("10.244.{number}.0/24")
}

impl Node {
    /// The node's address on the LAN.
    pub fn address(&self) -> Ipv4Addr {
        node_address(self.number)
    }

    /// Its pods' range.
    pub fn pod_range(&self) -> String {
        pod_range(self.number)
    }

    /// The containerd socket.
    pub fn containerd_socket(&self) -> PathBuf {
        self.dir.join("containerd.sock")
    }

    /// `PROGRAM ARGS` in the node's network namespace (iptables-save, nft, conntrack ...).
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<Output> {
        self.holder
            .command(Kinds::Net, program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("run {program} on {}", self.name))
    }

    /// `ctr -n k8s.io ARGS` against the node's containerd.
    pub fn ctr(&self, args: &[&str]) -> Result<Output> {
        ctr(&self.holder, &self.containerd_socket(), args)
    }

    /// Runs `args` in the container `id` (the part of a pod's `containerID` after
    /// `containerd://`), as `kubectl exec` would: its output, whatever its status.
    pub fn exec_in(&self, id: &str, args: &[&str]) -> Result<Output> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static EXECS: AtomicU64 = AtomicU64::new(0);
        let exec_id = format!(
            "xtask-{}-{}",
            std::process::id(),
            EXECS.fetch_add(1, Ordering::Relaxed)
        );
        let mut all = vec!["tasks", "exec", "--exec-id", &exec_id, id];
        all.extend_from_slice(args);
        self.ctr(&all)
    }
}

impl Nodes {
    /// Brings up `options.nodes` joined to `plane`, each with the pause and client images and
    /// `options.images`, and waits until every node is Ready and its kube-proxy healthy.
    pub fn up(plane: &ControlPlane, options: &Options) -> Result<Self> {
        check_tools()?;
        let dir = options.dir.clone();
        std::fs::create_dir_all(&dir)?;
        let kubectl = plane.kubectl();
        janitor(&dir, &options.nodes, options.remove_at_exit.as_deref())?;

        // The images every node gets: the sandbox and the client.
        let work = dir.join("images");
        std::fs::create_dir_all(&work)?;
        let mut archives = Vec::new();
        for (name, image) in [
            ("pause", images::pause(&work)?),
            ("client", images::client(&work)?),
        ] {
            let archive = work.join(format!("{name}.tar"));
            image.write(&archive)?;
            archives.push(archive);
        }
        archives.extend(options.images.iter().cloned());

        // The LAN, the upstream's namespace, and the API server's relay.
        let switch = Holder::new(Kinds::Net, &dir.join("switch.log"))?;
        switch.ip(&[
            "link set lo up".into(),
            "link add lan type bridge".into(),
            format!("addr add {SWITCH}/24 dev lan"),
            "link set lan up".into(),
        ])?;
        switch.sysctl(&["net.ipv4.ip_forward=1"])?;
        let upstream = Holder::new(Kinds::Net, &dir.join("upstream.log"))?;
        attach(&switch, &upstream, "upstream", UPSTREAM)?;
        netns::relay(
            &switch.net(),
            SocketAddr::V4(API),
            SocketAddr::from((Ipv4Addr::LOCALHOST, plane.api_port)),
        )?;
        cluster_objects(&kubectl)?;

        let count = options.nodes.len() as u8;
        let mut nodes = Vec::new();
        for (i, (name, mode)) in options.nodes.iter().enumerate() {
            let number = i as u8 + 1;
            let node = Prepared::start(plane, &switch, &dir, name, number, count, *mode)
                .and_then(|node| node.join(plane, &kubectl, &archives))
                .with_context(|| format!("node {name}"))?;
            nodes.push(node);
        }
        Ok(Self {
            dir,
            plane: plane.clone(),
            nodes,
            switch,
            upstream,
        })
    }

    /// kubectl as the admin.
    pub fn kubectl(&self) -> Kubectl {
        self.plane.kubectl()
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The node that runs pod `pod` in `namespace`, and the ID of its container `container`
    /// (the first when `None`), for [`Node::exec_in`].
    pub fn container(
        &self,
        namespace: &str,
        pod: &str,
        container: Option<&str>,
    ) -> Result<(&Node, String)> {
        let pod_json = self.kubectl().get(&["pod", "-n", namespace, pod])?;
        let node_name = pod_json["spec"]["nodeName"].as_str().unwrap_or_default();
        let node = self.node(node_name).with_context(|| {
            format!("{namespace}/{pod} is on {node_name:?}, not a node of ours")
        })?;
        let statuses = pod_json["status"]["containerStatuses"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let status = statuses
            .iter()
            .find(|s| container.is_none_or(|c| s["name"] == c))
            .with_context(|| format!("{namespace}/{pod} has no container {container:?} yet"))?;
        let id = status["containerID"]
            .as_str()
            .and_then(|id| id.strip_prefix("containerd://"))
            .with_context(|| format!("{namespace}/{pod}: no containerd container ID yet"))?;
        Ok((node, id.to_owned()))
    }

    /// `GET path` from `addr` (a pod's or node's address), asked from the switch, which routes
    /// to every node and pod.
    pub fn http_get(&self, addr: SocketAddr, path: &str) -> Result<(u16, String)> {
        netns::http_get(&self.switch.net(), addr, path)
    }

    /// deploy/ applied as `kubectl apply -k` would, with `image` in place of the image it
    /// names (kustomize's image override, in an overlay of ours) and `patches` applied to
    /// its objects; [`Nodes::wait_dns`] waits for its rollout.
    pub fn apply_dns(&self, image: &str, patches: &[Patch]) -> Result<()> {
        let overlay = self.dir.join("deploy");
        std::fs::create_dir_all(&overlay)?;
        let (name, tag) = image.rsplit_once(':').unwrap_or((image, "latest"));
        let base = relative(&overlay, &crate::root().join("deploy"));
        let mut kustomization = format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - {base}\nimages:\n  - name: clusterdns\n    newName: {name}\n    newTag: \"{tag}\"\n"
        );
        if !patches.is_empty() {
            kustomization.push_str("patches:\n");
        }
        for patch in patches {
            // A JSON patch is YAML too; in single quotes, a quote is written twice.
            let _ = write!(
                kustomization,
                "  - target:\n      kind: {}\n      name: {}\n    patch: '{}'\n",
                patch.kind,
                patch.name,
                patch.operations.to_string().replace('\'', "''")
            );
        }
        std::fs::write(overlay.join("kustomization.yaml"), kustomization)?;
        let overlay = overlay.display().to_string();
        self.kubectl()
            .run(&[
                "apply",
                "--server-side",
                "--force-conflicts",
                "-k",
                &overlay,
            ])
            .map(drop)
    }

    /// Waits for the DNS Deployment's rollout (deploy/'s `coredns` in kube-system).
    pub fn wait_dns(&self) -> Result<()> {
        self.kubectl()
            .run(&[
                "rollout",
                "status",
                "deployment/coredns",
                "-n",
                "kube-system",
                "--timeout=180s",
            ])
            .map(drop)
            .map_err(|e| e.context(self.pods_report("kube-system")))
    }

    /// Each pod of `namespace` with its phase, node and containers' states, and the nodes'
    /// components' logs' ends: what an error about pods needs.
    pub fn pods_report(&self, namespace: &str) -> String {
        let mut report = String::new();
        if let Ok(pods) = self
            .kubectl()
            .run(&["get", "pods", "-n", namespace, "-o", "wide"])
        {
            report.push_str(&pods);
        }
        if let Ok(events) = self.kubectl().run(&["get", "events", "-n", namespace]) {
            let _ = write!(report, "\nevents:\n{events}");
        }
        for node in &self.nodes {
            for component in [&node.kubelet, &node.containerd] {
                let _ = write!(
                    report,
                    "\n{} {} ({}):\n{}",
                    node.name,
                    component.name,
                    component.log.display(),
                    component.tail()
                );
            }
        }
        report
    }
}

/// A node whose containerd runs, before it joins the cluster.
struct Prepared {
    name: String,
    number: u8,
    proxy_mode: ProxyMode,
    dir: PathBuf,
    holder: Holder,
    containerd: Component,
}

impl Prepared {
    #[allow(clippy::too_many_arguments)]
    fn start(
        plane: &ControlPlane,
        switch: &Holder,
        dir: &Path,
        name: &str,
        number: u8,
        count: u8,
        proxy_mode: ProxyMode,
    ) -> Result<Self> {
        let dir = dir.join(name);
        std::fs::create_dir_all(&dir)?;
        let holder = Holder::new(Kinds::Node, &dir.join("holder.log"))?;
        let address = node_address(number);
        attach(switch, &holder, name, address)?;
        let routes: Vec<String> = (1..=count)
            .filter(|&n| n != number)
            .map(|other| format!("route add {} via {}", pod_range(other), node_address(other)))
            .collect();
        if !routes.is_empty() {
            holder.ip(&routes)?;
        }
        switch.ip(&[format!("route add {} via {address}", pod_range(number))])?;
        holder.sysctl(&[
            "net.ipv4.ip_forward=1",
            "net.bridge.bridge-nf-call-iptables=1",
            "net.bridge.bridge-nf-call-ip6tables=1",
        ])?;

        // The host paths containerd and the kubelet write whatever their configuration says,
        // made the node's own.
        let private = [
            "/run/containerd",
            "/var/lib/kubelet",
            "/var/lib/cni",
            "/var/log/containers",
            "/var/log/pods",
        ];
        let mut script = String::new();
        for path in private {
            let _ = write!(
                script,
                "mkdir -p {path} && mount -t tmpfs -o mode=0755 tmpfs {path} && "
            );
        }
        script.push_str("true");
        let out = holder
            .command(Kinds::Node, "/bin/sh")
            .args(["-c", &script])
            .output()?;
        ensure!(
            out.status.success(),
            "the node's private directories: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );

        write_files(plane, &dir, name, number, address)?;
        let containerd = Component::start(
            &holder,
            "containerd",
            Path::new("/usr/bin/containerd"),
            &[
                "--config".into(),
                dir.join("containerd.toml").display().to_string(),
            ],
            &dir.join("containerd.log"),
        )?;
        let node = Self {
            name: name.to_owned(),
            number,
            proxy_mode,
            dir,
            containerd,
            holder,
        };
        let socket = node.dir.join("containerd.sock");
        wait_until(
            &format!("{name}: containerd answers"),
            Duration::from_secs(30),
            || {
                ensure!(
                    node.containerd.running(),
                    "containerd exited:\n{}",
                    node.containerd.tail()
                );
                Ok(ctr(&node.holder, &socket, &["version"])?.status.success())
            },
        )?;
        Ok(node)
    }

    /// Imports `archives`, starts the kubelet and kube-proxy, and waits until the node is
    /// Ready and kube-proxy healthy.
    fn join(self, plane: &ControlPlane, kubectl: &Kubectl, archives: &[PathBuf]) -> Result<Node> {
        let Self {
            name,
            number,
            proxy_mode,
            dir,
            holder,
            containerd,
        } = self;
        let socket = dir.join("containerd.sock");
        for archive in archives {
            let shown = archive.display().to_string();
            let out = ctr(&holder, &socket, &["images", "import", &shown])?;
            ensure!(
                out.status.success(),
                "ctr images import {shown}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let address = node_address(number);
        make_cgroup_root(&name)?;
        let arg = |p: &Path| p.display().to_string();
        let kubelet = Component::start(
            &holder,
            "kubelet",
            &plane.peers.join("kubelet"),
            &[
                format!("--config={}", arg(&dir.join("kubelet.json"))),
                format!("--kubeconfig={}", arg(&dir.join("kubelet.kubeconfig"))),
                format!("--root-dir={}", arg(&dir.join("kubelet"))),
                format!("--cert-dir={}", arg(&dir.join("kubelet-pki"))),
                format!("--hostname-override={name}"),
                format!("--node-ip={address}"),
                format!("--node-labels={PROXY_MODE_LABEL}={}", proxy_mode.as_str()),
                "--v=2".into(),
            ],
            &dir.join("kubelet.log"),
        )?;
        wait_until(&format!("{name} Ready"), Duration::from_secs(90), || {
            ensure!(kubelet.running(), "the kubelet exited");
            let Ok(node) = kubectl.get(&["node", &name]) else {
                return Ok(false);
            };
            Ok(condition(&node, "Ready"))
        })
        .map_err(|e| e.context(kubelet.tail()))?;
        let kube_proxy = Component::start(
            &holder,
            "kube-proxy",
            &plane.peers.join("kube-proxy"),
            &[
                format!("--kubeconfig={}", arg(&dir.join("proxy.kubeconfig"))),
                format!("--hostname-override={name}"),
                format!("--proxy-mode={}", proxy_mode.as_str()),
                format!("--cluster-cidr={CLUSTER_CIDR}"),
                // Nothing outside the node's namespace: the conntrack table's size and its
                // TCP timeouts are the machine's.
                "--conntrack-max-per-core=0".into(),
                "--conntrack-min=0".into(),
                "--conntrack-tcp-timeout-established=0".into(),
                "--conntrack-tcp-timeout-close-wait=0".into(),
                "--oom-score-adj=0".into(),
                "--metrics-bind-address=127.0.0.1:10249".into(),
                "--healthz-bind-address=0.0.0.0:10256".into(),
                "--v=2".into(),
            ],
            &dir.join("kube-proxy.log"),
        )?;
        let node = Node {
            name,
            number,
            proxy_mode,
            dir,
            holder,
            containerd,
            kubelet,
            kube_proxy,
        };
        node.wait_kube_proxy()?;
        Ok(node)
    }
}

impl Node {
    /// Waits until kube-proxy's `/healthz` says 200 (it has synced).
    pub fn wait_kube_proxy(&self) -> Result<()> {
        let healthz = SocketAddr::from((self.address(), 10256));
        let net = self.holder.net();
        let kube_proxy = &self.kube_proxy;
        wait_until(
            &format!("{}: kube-proxy healthy", self.name),
            Duration::from_secs(60),
            || {
                ensure!(kube_proxy.running(), "kube-proxy exited");
                Ok(matches!(
                    netns::http_get(&net, healthz, "/healthz"),
                    Ok((200, _))
                ))
            },
        )
        .map_err(|e| e.context(self.kube_proxy.tail()))
    }
}

/// `ctr -n k8s.io ARGS` against the containerd at `socket`, from inside the node's mount
/// namespace (where the FIFOs of a process's standard streams must be, for containerd's shim
/// to open them).
fn ctr(node: &Holder, socket: &Path, args: &[&str]) -> Result<Output> {
    node.command(Kinds::Node, "ctr")
        .arg("--address")
        .arg(socket)
        .args(["-n", "k8s.io"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("run ctr (containerd)")
}

/// Whether `object`'s status has condition `kind` True.
pub fn condition(object: &Value, kind: &str) -> bool {
    object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

/// A veth from the switch's bridge (`port` on the switch) to `eth0` at `address` in
/// `holder`'s namespace, whose default route is then the switch.
fn attach(switch: &Holder, holder: &Holder, port: &str, address: Ipv4Addr) -> Result<()> {
    switch.ip(&[
        format!(
            "link add {port} type veth peer name eth0 netns {}",
            holder.pid
        ),
        format!("link set {port} master lan"),
        format!("link set {port} up"),
    ])?;
    holder.ip(&[
        "link set lo up".into(),
        format!("addr add {address}/24 dev eth0"),
        "link set eth0 up".into(),
        format!("route add default via {SWITCH}"),
    ])
}

/// The control plane's side: nodes may act as nodes (the API server authorizes with RBAC
/// only), and the `kubernetes` Service's endpoint is the relay.
fn cluster_objects(kubectl: &Kubectl) -> Result<()> {
    kubectl.apply(&format!(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: clusterdns-test-nodes
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:node
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: Group
    name: system:nodes
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kubernetes-relay
  namespace: default
  labels:
    kubernetes.io/service-name: kubernetes
    endpointslice.kubernetes.io/managed-by: clusterdns.test
addressType: IPv4
endpoints:
  - addresses: ["{}"]
    conditions:
      ready: true
ports:
  - name: https
    port: {}
    protocol: TCP
"#,
        API.ip(),
        API.port()
    ))
}

/// Every file a node's components read: certificates, kubeconfigs, containerd's, the CNI's
/// and the kubelet's configuration, and the node's resolv.conf.
fn write_files(
    plane: &ControlPlane,
    dir: &Path,
    name: &str,
    number: u8,
    address: Ipv4Addr,
) -> Result<()> {
    let d = |p: &str| dir.join(p).display().to_string();
    let (ca, _) = plane.ca();
    client_certificate(
        plane,
        dir,
        "kubelet",
        &format!("/O=system:nodes/CN=system:node:{name}"),
    )?;
    client_certificate(plane, dir, "proxy", "/CN=system:kube-proxy")?;
    for (file, user) in [
        ("kubelet.kubeconfig", "kubelet"),
        ("proxy.kubeconfig", "proxy"),
    ] {
        std::fs::write(
            dir.join(file),
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: https://{API}\n    certificate-authority: {}\n    tls-server-name: kubernetes\nusers:\n- name: {user}\n  user:\n    client-certificate: {}\n    client-key: {}\ncontexts:\n- name: local\n  context:\n    cluster: local\n    user: {user}\ncurrent-context: local\n",
                ca.display(),
                d(&format!("{user}.crt")),
                d(&format!("{user}.key")),
            ),
        )?;
    }
    std::fs::write(
        dir.join("containerd.toml"),
        format!(
            r#"version = 2
root = "{root}"
state = "{state}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{opt}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  # This machine's VM withholds CAP_SYS_RESOURCE: without it every sandbox fails.
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  netns_mounts_under_state_dir = true
  enable_unprivileged_ports = false

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "{runc}"

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{cni}"
  max_conf_num = 1
"#,
            root = d("containerd/root"),
            state = d("containerd/state"),
            socket = d("containerd.sock"),
            opt = d("containerd/opt"),
            pause = crate::image::normalize(images::PAUSE),
            runc = d("runc"),
            cni = d("cni"),
        ),
    )?;
    std::fs::create_dir_all(dir.join("cni"))?;
    let cni = json!({
        "cniVersion": "1.0.0",
        "name": "pods",
        "plugins": [{
            "type": "bridge",
            "bridge": "cni0",
            "isGateway": true,
            "hairpinMode": true,
            "ipMasq": false,
            "ipam": {
                "type": "host-local",
                "ranges": [[{"subnet": pod_range(number), "gateway": format!("10.244.{number}.1")}]],
                "routes": [{"dst": "0.0.0.0/0"}],
                "dataDir": d("cni-ipam"),
            },
        }],
    });
    std::fs::write(
        dir.join("cni/10-pods.conflist"),
        serde_json::to_vec_pretty(&cni)?,
    )?;
    std::fs::write(dir.join("resolv.conf"), format!("nameserver {UPSTREAM}\n"))?;
    let kubelet = json!({
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        // This machine mounts cgroup v1 hierarchies, which kubelets from 1.35 refuse unless
        // told; PID 1 is not systemd.
        "failCgroupV1": false,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root(name),
        "containerRuntimeEndpoint": format!("unix://{}", d("containerd.sock")),
        "clusterDNS": [CLUSTER_DNS.to_string()],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": d("resolv.conf"),
        "failSwapOn": false,
        "protectKernelDefaults": false,
        "podLogsDir": d("pod-logs"),
        "volumePluginDir": d("volume-plugins"),
        "address": address.to_string(),
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "authentication": {
            "anonymous": {"enabled": false},
            "webhook": {"enabled": false},
            "x509": {"clientCAFile": ca.display().to_string()},
        },
        "authorization": {"mode": "AlwaysAllow"},
        // Local images only, never collected; no eviction for this machine's shared disk.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "serializeImagePulls": false,
        "maxPods": 50,
        "rotateCertificates": false,
        "serverTLSBootstrap": false,
        "containerLogMaxSize": "2Mi",
        "shutdownGracePeriod": "0s",
    });
    std::fs::write(
        dir.join("kubelet.json"),
        serde_json::to_vec_pretty(&kubelet)?,
    )?;
    Ok(())
}

/// The cgroup (in every hierarchy) under which the kubelet of node `name` puts its pods:
/// named for this process, so that the janitor knows which are its.
fn cgroup_root(name: &str) -> String {
    format!("/clusterdns-{}-{name}", std::process::id())
}

/// The kubelet's cgroup root in every cgroup v1 hierarchy (the kubelet requires it to exist),
/// with the whole machine's CPUs and memory nodes in the cpuset one, as its parent has.
fn make_cgroup_root(name: &str) -> Result<()> {
    let root = cgroup_root(name);
    for hierarchy in std::fs::read_dir("/sys/fs/cgroup")? {
        let hierarchy = hierarchy?.path();
        if hierarchy.ends_with("unified") || !hierarchy.join("cgroup.procs").is_file() {
            continue;
        }
        let dir = hierarchy.join(root.trim_start_matches('/'));
        std::fs::create_dir_all(&dir).with_context(|| format!("mkdir {}", dir.display()))?;
        for file in ["cpuset.cpus", "cpuset.mems"] {
            if let Ok(value) = std::fs::read_to_string(hierarchy.join(file)) {
                std::fs::write(dir.join(file), value.trim())
                    .with_context(|| format!("write {}", dir.join(file).display()))?;
            }
        }
    }
    Ok(())
}

/// A client certificate `DIR/FILE.crt` (and `.key`) for `subject`, signed by the control
/// plane's CA.
fn client_certificate(plane: &ControlPlane, dir: &Path, file: &str, subject: &str) -> Result<()> {
    let (ca, ca_key) = plane.ca();
    let key = dir.join(format!("{file}.key"));
    let csr = dir.join(format!("{file}.csr"));
    let crt = dir.join(format!("{file}.crt"));
    let ext = dir.join(format!("{file}.ext"));
    std::fs::write(&ext, "extendedKeyUsage=clientAuth\n")?;
    let path = |p: &Path| p.display().to_string();
    let steps = [
        vec![
            "req".to_owned(),
            "-newkey".into(),
            "ec".into(),
            "-pkeyopt".into(),
            "ec_paramgen_curve:prime256v1".into(),
            "-nodes".into(),
            "-keyout".into(),
            path(&key),
            "-out".into(),
            path(&csr),
            "-subj".into(),
            subject.into(),
        ],
        vec![
            "x509".to_owned(),
            "-req".into(),
            "-in".into(),
            path(&csr),
            "-CA".into(),
            path(&ca),
            "-CAkey".into(),
            path(&ca_key),
            "-set_serial".into(),
            serial(),
            "-days".into(),
            "30".into(),
            "-extfile".into(),
            path(&ext),
            "-out".into(),
            path(&crt),
        ],
    ];
    for step in steps {
        let out = Command::new("openssl")
            .args(&step)
            .stdin(Stdio::null())
            .output()
            .context("run openssl")?;
        ensure!(
            out.status.success(),
            "openssl {:?}: {}",
            step,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// A serial number for a certificate: unique enough for one CA's few.
fn serial() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("{}", now ^ u128::from(std::process::id()) << 64)
}

/// A process that waits for this one to end, then removes the nodes' cgroups, puts back the
/// sysctls the kubelet changes (their values now), and deletes what is large in `dir` — the
/// nodes' image stores and the image archives (`images/`) — keeping the configurations and
/// the logs — or all of `remove`, when given.
fn janitor(dir: &Path, nodes: &[(String, ProxyMode)], remove: Option<&Path>) -> Result<()> {
    let mut restore = Vec::new();
    for key in [
        "vm.overcommit_memory",
        "kernel.panic",
        "kernel.panic_on_oops",
    ] {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        let value = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
        restore.push(format!("{key}={}", value.trim()));
    }
    let cgroups: Vec<String> = nodes
        .iter()
        .map(|(name, _)| format!("/sys/fs/cgroup/*{}", cgroup_root(name)))
        .collect();
    let mut script = format!(
        "while kill -0 {owner} 2>/dev/null; do sleep 1; done\n\
         for i in $(seq 30); do\n\
         \tfind {cgroups} -depth -type d -exec rmdir {{}} + 2>/dev/null\n\
         \tls -d {cgroups} >/dev/null 2>&1 || break\n\
         \tsleep 1\n\
         done\n\
         sysctl -qw {restore}\n\
         rm -rf {stores} '{dir}/images'\n",
        owner = std::process::id(),
        cgroups = cgroups.join(" "),
        restore = restore.join(" "),
        stores = nodes
            .iter()
            .map(|(name, _)| format!("'{}/{name}/containerd'", dir.display()))
            .collect::<Vec<_>>()
            .join(" "),
        dir = dir.display(),
    );
    if let Some(remove) = remove {
        script.push_str(&format!("rm -rf '{}'\n", remove.display()));
    }
    std::fs::write(dir.join("janitor.sh"), &script)?;
    Command::new("setsid")
        .args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(netns::append(&dir.join("janitor.log"))?)
        .spawn()
        .context("start the janitor (setsid, util-linux)")?;
    Ok(())
}

/// The programs the nodes need, each from Debian's packages unless said.
pub fn check_tools() -> Result<()> {
    let mut missing = Vec::new();
    for (program, package) in [
        ("containerd", "containerd"),
        ("containerd-shim-runc-v2", "containerd"),
        ("ctr", "containerd"),
        ("runc", "runc"),
        ("unshare", "util-linux"),
        ("nsenter", "util-linux"),
        ("setpriv", "util-linux"),
        ("setsid", "util-linux"),
        ("ip", "iproute2"),
        ("iptables", "iptables"),
        ("nft", "nftables"),
        ("openssl", "openssl"),
        ("busybox", "busybox-static"),
        ("musl-gcc", "musl-tools"),
        ("gcc", "gcc"),
        ("strip", "binutils"),
    ] {
        if images::which(program).is_err() {
            missing.push(format!("{program} ({package})"));
        }
    }
    for plugin in ["bridge", "host-local", "loopback"] {
        if !Path::new("/usr/lib/cni").join(plugin).is_file() {
            missing.push(format!(
                "/usr/lib/cni/{plugin} (containernetworking-plugins)"
            ));
        }
    }
    if !missing.is_empty() {
        bail!("missing: {}", missing.join(", "));
    }
    Ok(())
}

/// `to` as a path relative to `from` (both absolute).
fn relative(from: &Path, to: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for part in &to[common..] {
        path.push(part);
    }
    path.display().to_string()
}
