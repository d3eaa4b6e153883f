//! Synthetic clusters in kubectl's JSON, deterministic from a seed.
//!
//! Shared by `examples/gencluster.rs` (the command line) and `benches/lookup.rs` (which
//! generates its clusters into a temporary directory), through `#[path]` includes.
//!
//! The shape is what `kubectl get ns,svc,endpointslices,pods -A -o json` prints for a
//! cluster whose EndpointSlices were written by the EndpointSlice controller: a `v1 List`
//! of Namespaces, Services, EndpointSlices (`discovery.k8s.io/v1`, at most 100 endpoints per
//! slice, `kubernetes.io/service-name` label, owner reference to the Service, a placeholder
//! slice with `endpoints: null` for a Service that selects no pod) and Pods.
//!
//! Sizes go up to Kubernetes' published scalability thresholds (kubernetes/community,
//! `sig-scalability/configs-and-limits/thresholds.md`): 10,000 Services, 150,000 Pods,
//! 10,000 Namespaces, 5,000 Nodes, 110 pods per node; per namespace 5,000 Services and
//! 3,000 Pods; 250 endpoints per Service.
//!
//! Addresses: Services get ClusterIPs spread at random over 10.96.0.0/12 (`kubernetes` is
//! 10.96.0.1, `kube-dns` 10.96.0.10, as kubeadm allocates them). Pods get addresses from
//! per-node ranges: 10.244.0.0/16 with a /24 per node (kind's and kubeadm's default) while
//! the cluster has at most 256 nodes, else 10.244.0.0/14 with a /25 per node (2,048 nodes,
//! room for 126 pods each). No two objects share an address.

use std::collections::HashSet;
use std::io::{self, Write};
use std::net::Ipv4Addr;

use serde_json::{Value, json};

/// Kubernetes' cluster-scope thresholds.
pub(crate) const MAX_SERVICES: usize = 10_000;
/// Pods per cluster.
pub(crate) const MAX_PODS: usize = 150_000;
/// Namespaces per cluster.
pub(crate) const MAX_NAMESPACES: usize = 10_000;
/// Endpoints per Service (namespace-scope threshold).
const MAX_ENDPOINTS_PER_SERVICE: usize = 250;
/// The EndpointSlice controller's default `--max-endpoints-per-slice`.
const MAX_ENDPOINTS_PER_SLICE: usize = 100;
/// Pods per node aimed at, below the kubelet's default `maxPods`.
const PODS_PER_NODE: usize = 75;
/// The kubelet's default `maxPods`.
const MAX_PODS_PER_NODE: usize = 110;
/// The most nodes the /14 pod range holds with a /25 each.
const MAX_NODES: usize = 2048;

const TIMESTAMP: &str = "2026-03-14T09:20:11Z";

/// What to generate.
#[derive(Debug, Clone)]
pub(crate) struct Params {
    /// Services in all, including `default/kubernetes` and `kube-system/kube-dns`.
    pub(crate) services: usize,
    /// Pods in all, including the two CoreDNS pods.
    pub(crate) pods: usize,
    /// Application namespaces (besides `default` and `kube-system`).
    pub(crate) namespaces: usize,
    /// Share of application Services that are headless, in percent.
    pub(crate) headless_percent: u32,
    /// Share of application Services of type ExternalName, in percent.
    pub(crate) external_name_percent: u32,
    /// Share of pods that are running but not ready, in per mille.
    pub(crate) not_ready_permille: u32,
    /// The PRNG seed.
    pub(crate) seed: u64,
}

impl Params {
    /// The defaults for `services` Services: 15 pods per Service (150,000 at 10,000), one
    /// namespace per 25 Services, 10 % headless, 2 % ExternalName, 2 % of pods not ready.
    pub(crate) fn for_services(services: usize) -> Self {
        Self {
            services,
            pods: services.saturating_mul(15).min(MAX_PODS),
            namespaces: services.div_ceil(25).clamp(1, MAX_NAMESPACES),
            headless_percent: 10,
            external_name_percent: 2,
            not_ready_permille: 20,
            seed: 1,
        }
    }

    /// Rejects sizes the generator cannot lay out.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.services < 2 {
            return Err("--services must be at least 2 (kubernetes and kube-dns)".into());
        }
        if self.pods < 2 {
            return Err("--pods must be at least 2 (the CoreDNS pods)".into());
        }
        if self.namespaces == 0 {
            return Err("--namespaces must be at least 1".into());
        }
        if self.headless_percent + self.external_name_percent > 100 {
            return Err("--headless-percent and the ExternalName share exceed 100".into());
        }
        if self.not_ready_permille > 1000 {
            return Err("the not-ready share is in per mille, at most 1000".into());
        }
        let nodes = node_count(self.pods);
        if nodes > MAX_NODES {
            return Err(format!(
                "--pods {}: needs {nodes} nodes, more than the {MAX_NODES} the 10.244.0.0/14 \
                 pod range holds",
                self.pods
            ));
        }
        Ok(())
    }

    /// Warnings for sizes beyond Kubernetes' published thresholds (generated anyway).
    pub(crate) fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let over = |what: &str, n: usize, max: usize| {
            (n > max).then(|| format!("{what} {n} is beyond the scalability threshold {max}"))
        };
        out.extend(over("services", self.services, MAX_SERVICES));
        out.extend(over("pods", self.pods, MAX_PODS));
        out.extend(over("namespaces", self.namespaces, MAX_NAMESPACES));
        let per_ns_services = (self.services - 2).div_ceil(self.namespaces);
        out.extend(over("services per namespace", per_ns_services, 5_000));
        let per_ns_pods = (self.pods - 2).div_ceil(self.namespaces);
        out.extend(over("pods per namespace", per_ns_pods, 3_000));
        out
    }
}

/// SplitMix64: small, fast, and the same numbers on every platform.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Fisher-Yates.
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }

    /// `len` characters of the alphabet Kubernetes uses for generated name suffixes.
    fn suffix(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| char::from(ALPHABET[self.below(ALPHABET.len())]))
            .collect()
    }

    fn uid(&mut self) -> String {
        let a = self.next_u64();
        let b = self.next_u64();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0x0fff,
            (b >> 48) & 0x3fff | 0x8000,
            b & 0xffff_ffff_ffff
        )
    }
}

/// The alphabet of Kubernetes' generated name suffixes (no vowels, no look-alikes).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The `k`-th of a run of five-character suffixes that never repeat (27^5 of them): `k`
/// times a step coprime to 27^5, from a random start.
fn distinct_suffix(start: u64, k: usize) -> String {
    const SPACE: u64 = 27 * 27 * 27 * 27 * 27;
    let mut n = (start % SPACE + (k as u64 % SPACE) * 7919) % SPACE;
    let mut out = String::with_capacity(5);
    for _ in 0..5 {
        out.push(char::from(ALPHABET[(n % 27) as usize]));
        n /= 27;
    }
    out
}

const NAMESPACE_WORDS: &[&str] = &[
    "shop",
    "payments",
    "checkout",
    "catalog",
    "search",
    "identity",
    "billing",
    "orders",
    "inventory",
    "shipping",
    "analytics",
    "messaging",
    "media",
    "accounts",
    "ledger",
    "pricing",
    "reviews",
    "recommend",
    "notify",
    "gateway",
    "platform",
    "observability",
    "data",
    "ml",
    "support",
    "partner",
    "ads",
    "fraud",
    "loyalty",
    "tax",
];

const SERVICE_WORDS: &[&str] = &[
    "web",
    "api",
    "frontend",
    "backend",
    "auth",
    "cart",
    "session",
    "worker",
    "queue",
    "cache",
    "store",
    "search",
    "index",
    "render",
    "upload",
    "thumbnail",
    "mailer",
    "events",
    "audit",
    "report",
    "export",
    "import",
    "scheduler",
    "config",
    "profile",
    "feed",
    "quote",
    "invoice",
    "stock",
    "router",
];

/// StatefulSet-style workloads behind headless Services: (name stem, port name, port).
const STATEFUL: &[(&str, &str, u16)] = &[
    ("db", "pg", 5432),
    ("redis", "redis", 6379),
    ("kafka", "kafka", 9092),
    ("zk", "client", 2181),
    ("es", "http", 9200),
    ("mongo", "mongo", 27017),
    ("etcd", "client", 2379),
    ("nats", "client", 4222),
];

/// The role of a Service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A virtual IP in front of a Deployment.
    ClusterIp,
    /// Headless in front of a Deployment: dashed-IP endpoint names.
    Headless,
    /// Headless in front of a StatefulSet: hostname endpoint names, pods `<name>-<k>`.
    Stateful,
    /// A CNAME to a name outside the cluster.
    ExternalName,
}

/// A Service port.
#[derive(Debug, Clone)]
pub(crate) struct Port {
    /// Empty for a single unnamed port.
    pub(crate) name: String,
    pub(crate) protocol: &'static str,
    pub(crate) port: u16,
    pub(crate) target: u16,
    /// `nodePort`, for NodePort and LoadBalancer Services.
    pub(crate) node_port: Option<u16>,
}

/// One generated Service and its pods.
#[derive(Debug, Clone)]
pub(crate) struct ServicePlan {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) kind: Kind,
    /// `spec.type` for a ClusterIP Service.
    pub(crate) service_type: &'static str,
    /// `None` for headless and ExternalName Services.
    pub(crate) cluster_ip: Option<Ipv4Addr>,
    pub(crate) external_name: Option<String>,
    pub(crate) ports: Vec<Port>,
    /// `spec.selector` `app=<name>`; `false` for `kubernetes` and ExternalName Services.
    pub(crate) has_selector: bool,
    /// Indexes into [`Plan::pods`].
    pub(crate) pods: Vec<usize>,
    uid: String,
}

/// One generated Pod.
#[derive(Debug, Clone)]
pub(crate) struct PodPlan {
    pub(crate) namespace: String,
    pub(crate) name: String,
    /// The Service whose selector picks it (index into [`Plan::services`]).
    pub(crate) service: Option<usize>,
    pub(crate) ip: Ipv4Addr,
    pub(crate) node: usize,
    pub(crate) ready: bool,
    /// `spec.hostname` (StatefulSet pods).
    pub(crate) hostname: Option<String>,
    uid: String,
    labels: Vec<(String, String)>,
}

/// A whole generated cluster, before it is written out.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) namespaces: Vec<String>,
    pub(crate) services: Vec<ServicePlan>,
    pub(crate) pods: Vec<PodPlan>,
    pub(crate) nodes: usize,
    namespace_uids: Vec<String>,
}

/// What was written.
#[derive(Debug, Clone, Default)]
pub(crate) struct Summary {
    pub(crate) namespaces: usize,
    pub(crate) services: usize,
    pub(crate) headless: usize,
    pub(crate) external_name: usize,
    pub(crate) endpoint_slices: usize,
    pub(crate) endpoints: usize,
    pub(crate) not_ready: usize,
    pub(crate) pods: usize,
    pub(crate) nodes: usize,
    pub(crate) bytes: u64,
}

fn node_count(pods: usize) -> usize {
    let nodes = pods.div_ceil(PODS_PER_NODE).max(3);
    if nodes > MAX_NODES {
        // Past the thresholds: fill nodes up to the kubelet's default maxPods.
        pods.div_ceil(MAX_PODS_PER_NODE)
    } else {
        nodes
    }
}

/// The address of slot `slot` on node `node`.
fn pod_ip(node: usize, slot: usize, nodes: usize) -> Ipv4Addr {
    let base = u32::from(Ipv4Addr::new(10, 244, 0, 0));
    // Addresses .0 and .1 of each node range are the network and the bridge.
    if nodes <= 256 {
        Ipv4Addr::from(base + (node as u32) * 256 + 2 + slot as u32)
    } else {
        Ipv4Addr::from(base + (node as u32) * 128 + 2 + slot as u32)
    }
}

fn node_name(node: usize) -> String {
    if node == 0 {
        "control-plane".to_owned()
    } else {
        format!("worker-{node:04}")
    }
}

fn node_ip(node: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(172, 18, 0, 2)) + node as u32)
}

/// Unique names from a word list: the words, then the words with `-2`, `-3`, ...
fn nth_name(words: &[&str], n: usize) -> String {
    let word = words[n % words.len()];
    match n / words.len() {
        0 => word.to_owned(),
        round => format!("{word}-{}", round + 1),
    }
}

/// Lays out the cluster of `params` (call [`Params::check`] first).
pub(crate) fn plan(params: &Params) -> Plan {
    let mut rng = Rng::new(params.seed);
    let nodes = node_count(params.pods);

    // Namespaces: the two system ones, then the application ones.
    let mut namespaces = vec!["default".to_owned(), "kube-system".to_owned()];
    namespaces.extend((0..params.namespaces).map(|i| nth_name(NAMESPACE_WORDS, i)));
    let namespace_uids = namespaces.iter().map(|_| rng.uid()).collect();

    // ClusterIPs: 10.96.0.0/12 at random, the first 16 addresses kept for the system.
    let mut used_ips: HashSet<u32> = HashSet::new();
    let service_base = u32::from(Ipv4Addr::new(10, 96, 0, 0));
    let mut cluster_ip = |rng: &mut Rng| loop {
        let offset = 16 + rng.below((1 << 20) - 17) as u32;
        if used_ips.insert(offset) {
            return Ipv4Addr::from(service_base + offset);
        }
    };

    let mut services = vec![
        ServicePlan {
            namespace: "default".into(),
            name: "kubernetes".into(),
            kind: Kind::ClusterIp,
            service_type: "ClusterIP",
            cluster_ip: Some(Ipv4Addr::new(10, 96, 0, 1)),
            external_name: None,
            ports: vec![Port {
                name: "https".into(),
                protocol: "TCP",
                port: 443,
                target: 6443,
                node_port: None,
            }],
            has_selector: false,
            pods: Vec::new(),
            uid: rng.uid(),
        },
        ServicePlan {
            namespace: "kube-system".into(),
            name: "kube-dns".into(),
            kind: Kind::ClusterIp,
            service_type: "ClusterIP",
            cluster_ip: Some(Ipv4Addr::new(10, 96, 0, 10)),
            external_name: None,
            ports: vec![
                Port {
                    name: "dns".into(),
                    protocol: "UDP",
                    port: 53,
                    target: 53,
                    node_port: None,
                },
                Port {
                    name: "dns-tcp".into(),
                    protocol: "TCP",
                    port: 53,
                    target: 53,
                    node_port: None,
                },
                Port {
                    name: "metrics".into(),
                    protocol: "TCP",
                    port: 9153,
                    target: 9153,
                    node_port: None,
                },
            ],
            has_selector: true,
            pods: Vec::new(),
            uid: rng.uid(),
        },
    ];

    // Application Services: exact shares of each kind, shuffled; round-robin over namespaces.
    let apps = params.services - 2;
    let headless = apps * params.headless_percent as usize / 100;
    let external = apps * params.external_name_percent as usize / 100;
    let mut kinds: Vec<Kind> = Vec::with_capacity(apps);
    kinds.extend((0..headless).map(|i| {
        if i % 2 == 0 {
            Kind::Stateful
        } else {
            Kind::Headless
        }
    }));
    kinds.extend((0..external).map(|_| Kind::ExternalName));
    kinds.resize(apps, Kind::ClusterIp);
    rng.shuffle(&mut kinds);
    let mut per_namespace = vec![0usize; params.namespaces];
    let mut next_node_port = 0usize;
    for (i, kind) in kinds.into_iter().enumerate() {
        let ns = i % params.namespaces;
        let index = per_namespace[ns];
        per_namespace[ns] += 1;
        let namespace = namespaces[2 + ns].clone();
        let service = match kind {
            Kind::Stateful => {
                let (stem, port, number) = STATEFUL[index % STATEFUL.len()];
                let name = match index / STATEFUL.len() {
                    0 => stem.to_owned(),
                    round => format!("{stem}-{}", round + 1),
                };
                ServicePlan {
                    namespace,
                    name,
                    kind,
                    service_type: "ClusterIP",
                    cluster_ip: None,
                    external_name: None,
                    ports: vec![Port {
                        name: port.into(),
                        protocol: "TCP",
                        port: number,
                        target: number,
                        node_port: None,
                    }],
                    has_selector: true,
                    pods: Vec::new(),
                    uid: rng.uid(),
                }
            }
            Kind::ExternalName => ServicePlan {
                name: format!("{}-ext", nth_name(SERVICE_WORDS, index)),
                external_name: Some(format!(
                    "{}.{}.example.com",
                    nth_name(SERVICE_WORDS, rng.below(SERVICE_WORDS.len())),
                    namespace
                )),
                namespace,
                kind,
                service_type: "ExternalName",
                cluster_ip: None,
                ports: Vec::new(),
                has_selector: false,
                pods: Vec::new(),
                uid: rng.uid(),
            },
            Kind::ClusterIp | Kind::Headless => {
                let roll = rng.below(100);
                let service_type = match roll {
                    0..10 => "NodePort",
                    10..13 => "LoadBalancer",
                    _ => "ClusterIP",
                };
                let service_type = if kind == Kind::Headless {
                    "ClusterIP"
                } else {
                    service_type
                };
                let mut ports = ports(&mut rng);
                if service_type != "ClusterIP" {
                    for port in &mut ports {
                        // 30000-32767, in allocation order (wrapping past 2,768 ports).
                        port.node_port = Some(30000 + (next_node_port % 2768) as u16);
                        next_node_port += 1;
                    }
                }
                ServicePlan {
                    namespace,
                    name: nth_name(SERVICE_WORDS, index),
                    kind,
                    service_type,
                    cluster_ip: (kind == Kind::ClusterIp).then(|| cluster_ip(&mut rng)),
                    external_name: None,
                    ports,
                    has_selector: true,
                    pods: Vec::new(),
                    uid: rng.uid(),
                }
            }
        };
        services.push(service);
    }

    // Pods: two CoreDNS pods, then every Service with a selector gets one, then the rest
    // go by heavy-tailed weights (capped at 250 per Service); what is left over runs
    // behind no Service (jobs, daemons).
    let backed: Vec<usize> = (0..services.len())
        .filter(|&i| services[i].has_selector && services[i].name != "kube-dns")
        .collect();
    let mut counts = vec![0usize; services.len()];
    counts[1] = 2;
    let mut left = params.pods - 2;
    // About 1 % of Services select nothing: a placeholder slice, no endpoints.
    let empty: HashSet<usize> = backed
        .iter()
        .copied()
        .filter(|_| rng.below(100) == 0)
        .collect();
    let weights: Vec<f64> = backed
        .iter()
        .map(|i| {
            if empty.contains(i) {
                0.0
            } else {
                // Pareto with shape 1.2: most Services small, a few large.
                1.0 / (1.0 - rng.unit()).powf(1.0 / 1.2)
            }
        })
        .collect();
    for (&i, &weight) in backed.iter().zip(&weights) {
        if left > 0 && weight > 0.0 {
            counts[i] = 1;
            left -= 1;
        }
    }
    let total: f64 = weights.iter().sum();
    if total > 0.0 {
        let extra = left;
        for (&i, &weight) in backed.iter().zip(&weights) {
            let share = ((extra as f64) * weight / total) as usize;
            let add = share.min(MAX_ENDPOINTS_PER_SERVICE - counts[i]).min(left);
            counts[i] += add;
            left -= add;
        }
        // Rounding leftovers: one more each, round-robin, while there is room.
        let mut progress = true;
        while left > 0 && progress {
            progress = false;
            for (&i, &weight) in backed.iter().zip(&weights) {
                if left > 0 && weight > 0.0 && counts[i] < MAX_ENDPOINTS_PER_SERVICE {
                    counts[i] += 1;
                    left -= 1;
                    progress = true;
                }
            }
        }
    }

    let mut pods = Vec::with_capacity(params.pods);
    let mut slot = 0usize;
    let next_ip = |slot: &mut usize| {
        let node = *slot % nodes;
        let ip = pod_ip(node, *slot / nodes, nodes);
        *slot += 1;
        (node, ip)
    };
    for (index, service) in services.iter_mut().enumerate() {
        let template = rng.suffix(10);
        let offset = rng.next_u64();
        for k in 0..counts[index] {
            let (node, ip) = next_ip(&mut slot);
            let stateful = service.kind == Kind::Stateful;
            let name = if service.name == "kube-dns" {
                format!("coredns-674b8bbfcf-{}", distinct_suffix(offset, k))
            } else if stateful {
                format!("{}-{k}", service.name)
            } else {
                format!("{}-{template}-{}", service.name, distinct_suffix(offset, k))
            };
            let mut labels = vec![];
            if service.name == "kube-dns" {
                labels.push(("k8s-app".to_owned(), "kube-dns".to_owned()));
            } else {
                labels.push(("app".to_owned(), service.name.clone()));
            }
            if stateful {
                labels.push(("apps.kubernetes.io/pod-index".to_owned(), k.to_string()));
                labels.push((
                    "statefulset.kubernetes.io/pod-name".to_owned(),
                    name.clone(),
                ));
            } else {
                labels.push(("pod-template-hash".to_owned(), template.clone()));
            }
            let ready =
                service.name == "kube-dns" || rng.below(1000) >= params.not_ready_permille as usize;
            service.pods.push(pods.len());
            pods.push(PodPlan {
                namespace: service.namespace.clone(),
                hostname: stateful.then(|| name.clone()),
                name,
                service: Some(index),
                ip,
                node,
                ready,
                uid: rng.uid(),
                labels,
            });
        }
    }
    // Pods behind no Service.
    let mut standalone = 0usize;
    while pods.len() < params.pods {
        let (node, ip) = next_ip(&mut slot);
        let namespace = namespaces[2 + standalone % params.namespaces].clone();
        let job = format!("batch-{}", standalone / params.namespaces);
        standalone += 1;
        pods.push(PodPlan {
            namespace,
            name: format!("{job}-{}", rng.suffix(5)),
            service: None,
            ip,
            node,
            ready: true,
            uid: rng.uid(),
            labels: vec![("job-name".into(), job)],
            hostname: None,
        });
    }
    // The kube-dns Service's pods: kube-system's selector is k8s-app=kube-dns.
    Plan {
        namespaces,
        services,
        pods,
        nodes,
        namespace_uids,
    }
}

/// Ports of a Deployment's Service: mostly one named port, some two, a few unnamed or UDP.
fn ports(rng: &mut Rng) -> Vec<Port> {
    let named = |name: &str, port: u16, target: u16| Port {
        name: name.into(),
        protocol: "TCP",
        port,
        target,
        node_port: None,
    };
    match rng.below(100) {
        0..60 => vec![named("http", 80, 8080)],
        60..70 => vec![named("grpc", 9090, 9090)],
        70..78 => vec![named("https", 443, 8443)],
        78..93 => vec![named("http", 80, 8080), named("metrics", 9100, 9100)],
        93..97 => vec![Port {
            name: String::new(),
            protocol: "TCP",
            port: 8080,
            target: 8080,
            node_port: None,
        }],
        _ => vec![
            Port {
                name: "syslog".into(),
                protocol: "UDP",
                port: 514,
                target: 5514,
                node_port: None,
            },
            named("syslog-tcp", 601, 5601),
        ],
    }
}

impl Plan {
    /// Writes the cluster as one kubectl `List`, compact, items ordered as kubectl prints
    /// them (by kind, then namespace/name).
    pub(crate) fn write_json(&self, out: &mut impl Write) -> io::Result<Summary> {
        let mut rng = Rng::new(0x6a09_e667 ^ self.pods.len() as u64);
        let mut summary = Summary {
            namespaces: self.namespaces.len(),
            services: self.services.len(),
            nodes: self.nodes,
            pods: self.pods.len(),
            ..Summary::default()
        };
        let mut counter = Counting {
            inner: out,
            bytes: 0,
        };
        counter.write_all(b"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n")?;
        let mut first = true;
        let mut item = |value: &Value, counter: &mut Counting<'_, _>| -> io::Result<()> {
            if !first {
                counter.write_all(b",\n")?;
            }
            first = false;
            serde_json::to_writer(&mut *counter, value).map_err(io::Error::other)
        };
        let mut resource_version = 500u64;
        let mut rv = || {
            resource_version += 1;
            resource_version.to_string()
        };

        let mut order: Vec<usize> = (0..self.namespaces.len()).collect();
        order.sort_by(|&a, &b| self.namespaces[a].cmp(&self.namespaces[b]));
        for &i in &order {
            let name = &self.namespaces[i];
            let value = json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "creationTimestamp": TIMESTAMP,
                    "labels": {"kubernetes.io/metadata.name": name},
                    "name": name,
                    "resourceVersion": rv(),
                    "uid": self.namespace_uids[i],
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            });
            item(&value, &mut counter)?;
        }

        let mut services: Vec<&ServicePlan> = self.services.iter().collect();
        services.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        for service in &services {
            match service.kind {
                Kind::Headless | Kind::Stateful => summary.headless += 1,
                Kind::ExternalName => summary.external_name += 1,
                Kind::ClusterIp => {}
            }
            item(&self.service_json(service, rv()), &mut counter)?;
        }

        let mut slices = Vec::new();
        for service in &services {
            self.slices_json(service, &mut rng, &mut slices, &mut summary);
        }
        slices.sort_by(|(a, _), (b, _)| a.cmp(b));
        for (_, mut slice) in slices {
            slice["metadata"]["resourceVersion"] = Value::from(rv());
            item(&slice, &mut counter)?;
        }

        let mut pods: Vec<&PodPlan> = self.pods.iter().collect();
        pods.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        for pod in pods {
            item(&self.pod_json(pod, rv()), &mut counter)?;
        }
        counter.write_all(b"\n],\"metadata\":{\"resourceVersion\":\"\"}}\n")?;
        counter.flush()?;
        summary.bytes = counter.bytes;
        Ok(summary)
    }

    fn service_json(&self, service: &ServicePlan, resource_version: String) -> Value {
        let metadata = json!({
            "creationTimestamp": TIMESTAMP,
            "labels": if service.name == "kube-dns" {
                json!({"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
                       "kubernetes.io/name": "CoreDNS"})
            } else if service.name == "kubernetes" {
                json!({"component": "apiserver", "provider": "kubernetes"})
            } else {
                json!({"app": service.name})
            },
            "name": service.name,
            "namespace": service.namespace,
            "resourceVersion": resource_version,
            "uid": service.uid,
        });
        if let Some(target) = &service.external_name {
            return json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": metadata,
                "spec": {
                    "externalName": target,
                    "sessionAffinity": "None",
                    "type": "ExternalName",
                },
                "status": {"loadBalancer": {}},
            });
        }
        let ip = service
            .cluster_ip
            .map_or_else(|| "None".to_owned(), |ip| ip.to_string());
        let ports: Vec<Value> = service
            .ports
            .iter()
            .map(|port| {
                let mut value = json!({
                    "port": port.port,
                    "protocol": port.protocol,
                    "targetPort": port.target,
                });
                if !port.name.is_empty() {
                    value["name"] = Value::from(port.name.clone());
                }
                if let Some(node_port) = port.node_port {
                    value["nodePort"] = Value::from(node_port);
                }
                value
            })
            .collect();
        let mut spec = json!({
            "clusterIP": ip,
            "clusterIPs": [ip],
            "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "ports": ports,
            "sessionAffinity": "None",
            "type": service.service_type,
        });
        if service.has_selector {
            spec["selector"] = if service.name == "kube-dns" {
                json!({"k8s-app": "kube-dns"})
            } else {
                json!({"app": service.name})
            };
        }
        if matches!(service.service_type, "NodePort" | "LoadBalancer") {
            spec["externalTrafficPolicy"] = Value::from("Cluster");
        }
        if service.service_type == "LoadBalancer" {
            spec["allocateLoadBalancerNodePorts"] = Value::from(true);
        }
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata,
            "spec": spec,
            "status": {"loadBalancer": {}},
        })
    }

    /// The EndpointSlices the controller writes for `service` (none for ExternalName),
    /// keyed by namespace/name for sorting.
    fn slices_json(
        &self,
        service: &ServicePlan,
        rng: &mut Rng,
        out: &mut Vec<((String, String), Value)>,
        summary: &mut Summary,
    ) {
        if service.kind == Kind::ExternalName {
            return;
        }
        if service.name == "kubernetes" {
            // Written by the API server itself, not the controller.
            let slice = json!({
                "addressType": "IPv4",
                "apiVersion": "discovery.k8s.io/v1",
                "endpoints": [{"addresses": [node_ip(0).to_string()], "conditions": {"ready": true}}],
                "kind": "EndpointSlice",
                "metadata": {
                    "creationTimestamp": TIMESTAMP,
                    "generation": 1,
                    "labels": {"kubernetes.io/service-name": "kubernetes"},
                    "name": "kubernetes",
                    "namespace": "default",
                    "uid": rng.uid(),
                },
                "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}],
            });
            summary.endpoint_slices += 1;
            summary.endpoints += 1;
            out.push((("default".into(), "kubernetes".into()), slice));
            return;
        }
        let headless = matches!(service.kind, Kind::Headless | Kind::Stateful);
        let mut labels = json!({
            "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
            "kubernetes.io/service-name": service.name,
        });
        if service.name == "kube-dns" {
            labels["k8s-app"] = Value::from("kube-dns");
        } else {
            labels["app"] = Value::from(service.name.clone());
        }
        if headless {
            labels["service.kubernetes.io/headless"] = Value::from("");
        }
        let ports: Vec<Value> = service
            .ports
            .iter()
            .map(|port| {
                let mut value = json!({"port": port.target, "protocol": port.protocol});
                // The controller copies the name, empty included.
                value["name"] = Value::from(port.name.clone());
                value
            })
            .collect();
        let chunks: Vec<&[usize]> = if service.pods.is_empty() {
            vec![&[]]
        } else {
            service.pods.chunks(MAX_ENDPOINTS_PER_SLICE).collect()
        };
        let start = rng.next_u64();
        for (k, chunk) in chunks.into_iter().enumerate() {
            let name = format!(
                "{}-{}",
                truncate(&service.name, 57),
                distinct_suffix(start, k)
            );
            let endpoints: Vec<Value> = chunk
                .iter()
                .map(|&p| {
                    let pod = &self.pods[p];
                    summary.endpoints += 1;
                    if !pod.ready {
                        summary.not_ready += 1;
                    }
                    let mut endpoint = json!({
                        "addresses": [pod.ip.to_string()],
                        "conditions": {"ready": pod.ready, "serving": pod.ready, "terminating": false},
                        "nodeName": node_name(pod.node),
                        "targetRef": {
                            "kind": "Pod",
                            "name": pod.name,
                            "namespace": pod.namespace,
                            "uid": pod.uid,
                        },
                    });
                    if let Some(hostname) = &pod.hostname {
                        endpoint["hostname"] = Value::from(hostname.clone());
                    }
                    endpoint
                })
                .collect();
            let slice = json!({
                "addressType": "IPv4",
                "apiVersion": "discovery.k8s.io/v1",
                // The controller's placeholder slice for a Service that selects nothing.
                "endpoints": if endpoints.is_empty() { Value::Null } else { Value::from(endpoints) },
                "kind": "EndpointSlice",
                "metadata": {
                    "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": TIMESTAMP},
                    "creationTimestamp": TIMESTAMP,
                    "generateName": format!("{}-", truncate(&service.name, 57)),
                    "generation": 1,
                    "labels": labels,
                    "name": name,
                    "namespace": service.namespace,
                    "ownerReferences": [{
                        "apiVersion": "v1",
                        "blockOwnerDeletion": true,
                        "controller": true,
                        "kind": "Service",
                        "name": service.name,
                        "uid": service.uid,
                    }],
                    "uid": rng.uid(),
                },
                "ports": if ports.is_empty() { Value::Null } else { Value::from(ports.clone()) },
            });
            summary.endpoint_slices += 1;
            out.push(((service.namespace.clone(), name), slice));
        }
    }

    fn pod_json(&self, pod: &PodPlan, resource_version: String) -> Value {
        let labels: serde_json::Map<String, Value> = pod
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.clone())))
            .collect();
        let service = pod.service.map(|s| &self.services[s]);
        let container = service.map_or("main", |s| s.name.as_str());
        let container_ports: Vec<Value> = service
            .map(|s| {
                s.ports
                    .iter()
                    .map(|port| {
                        let mut value =
                            json!({"containerPort": port.target, "protocol": port.protocol});
                        if !port.name.is_empty() {
                            value["name"] = Value::from(port.name.clone());
                        }
                        value
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut container_json = json!({
            "image": format!("registry.example.com/{}/{}:1.0.0", pod.namespace, container),
            "imagePullPolicy": "IfNotPresent",
            "name": container,
            "resources": {},
        });
        if !container_ports.is_empty() {
            container_json["ports"] = Value::from(container_ports);
        }
        let owner = match (service.map(|s| s.kind), &pod.hostname) {
            (Some(Kind::Stateful), _) => json!({"kind": "StatefulSet", "name": container}),
            (None, _) => json!({"apiVersion": "batch/v1", "kind": "Job",
                                "name": pod.labels[0].1}),
            _ => json!({"kind": "ReplicaSet", "name": format!("{container}-{}",
                        pod.labels.last().map_or("", |(_, v)| v.as_str()))}),
        };
        let mut owner = owner;
        if owner.get("apiVersion").is_none() {
            owner["apiVersion"] = Value::from("apps/v1");
        }
        owner["blockOwnerDeletion"] = Value::from(true);
        owner["controller"] = Value::from(true);
        owner["uid"] = Value::from(format!("{}000000000000", &pod.uid[..24]));
        let mut spec = json!({
            "containers": [container_json],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": true,
            "nodeName": node_name(pod.node),
            "restartPolicy": if pod.service.is_some() { "Always" } else { "OnFailure" },
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
        });
        if let (Some(hostname), Some(service)) = (&pod.hostname, service) {
            spec["hostname"] = Value::from(hostname.clone());
            spec["subdomain"] = Value::from(service.name.clone());
        }
        let ready = if pod.ready { "True" } else { "False" };
        let condition = |kind: &str, status: &str| {
            json!({"lastProbeTime": null, "lastTransitionTime": TIMESTAMP,
                   "status": status, "type": kind})
        };
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "creationTimestamp": TIMESTAMP,
                "labels": labels,
                "name": pod.name,
                "namespace": pod.namespace,
                "ownerReferences": [owner],
                "resourceVersion": resource_version,
                "uid": pod.uid,
            },
            "spec": spec,
            "status": {
                "conditions": [
                    condition("Initialized", "True"),
                    condition("Ready", ready),
                    condition("ContainersReady", ready),
                    condition("PodScheduled", "True"),
                ],
                "hostIP": node_ip(pod.node).to_string(),
                "hostIPs": [{"ip": node_ip(pod.node).to_string()}],
                "phase": "Running",
                "podIP": pod.ip.to_string(),
                "podIPs": [{"ip": pod.ip.to_string()}],
                "qosClass": "BestEffort",
                "startTime": TIMESTAMP,
            },
        })
    }
}

/// At most `max` bytes of an ASCII name, without a trailing `-`.
fn truncate(name: &str, max: usize) -> &str {
    name[..name.len().min(max)].trim_end_matches('-')
}

/// A writer that counts what passes through.
struct Counting<'w, W: Write> {
    inner: &'w mut W,
    bytes: u64,
}

impl<W: Write> Write for Counting<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.bytes += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
