//! What a DNS Deployment lives through on the real nodes, measured from pods that keep
//! resolving: clients of every kind (xtask/programs/load.c — glibc's and musl's getaddrinfo,
//! a new socket each lookup; one UDP socket and source port for every query, as c-ares,
//! dnsmasq and systemd-resolved keep theirs; one TCP connection) look a name up at a steady
//! rate through the kube-dns ClusterIP while an [`Operation`] happens, and each lookup that
//! failed, or took over a second, is counted. The test of tests/deploy/real_node/operations.rs and
//! `cargo xtask operations` (both servers, every operation, a table) use it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use nix::sys::signal::Signal;

use crate::kube::{Kubectl, wait_until};
use crate::nodes::{CLUSTER_DNS, Nodes, condition};

/// The name every client looks up: one that always exists, fully qualified (with the final
/// dot for the C libraries: no search list, one A and one AAAA query a lookup).
pub const NAME: &str = "kubernetes.default.svc.cluster.local";

/// The kinds of client, and how load.c runs each (in the client image).
pub const CLIENTS: [(&str, &str, &str); 4] = [
    ("glibc", "load-glibc", "libc"),
    ("musl", "load-musl", "libc"),
    ("one UDP socket", "load-musl", "udp"),
    ("one TCP connection", "load-musl", "tcp"),
];

/// How one client's lookups went.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub lookups: u64,
    pub failed: u64,
    /// Over a second.
    pub slow: u64,
    /// Each lookup's time, microseconds.
    pub took_us: Vec<u64>,
    /// When the failed and slow ones started, milliseconds from the client's start.
    pub bad_at_ms: Vec<u64>,
}

impl Tally {
    /// load.c's output, read.
    pub fn parse(output: &str) -> Result<Self> {
        let mut tally = Self::default();
        let mut summary = false;
        for line in output.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words[..] {
                ["at", at, "took", took, outcome] => {
                    let took: u64 = took.parse()?;
                    tally.took_us.push(took);
                    if outcome != "ok" || took > 1_000_000 {
                        tally.bad_at_ms.push(at.parse()?);
                    }
                }
                ["lookups", n, "failed", f, "slow", s] => {
                    tally.lookups = n.parse()?;
                    tally.failed = f.parse()?;
                    tally.slow = s.parse()?;
                    summary = true;
                }
                _ => {}
            }
        }
        ensure!(summary, "load.c ended without its summary:\n{output}");
        Ok(tally)
    }

    /// Adds `other`'s lookups to these.
    pub fn add(&mut self, other: &Self) {
        self.lookups += other.lookups;
        self.failed += other.failed;
        self.slow += other.slow;
        self.took_us.extend_from_slice(&other.took_us);
        self.bad_at_ms.extend_from_slice(&other.bad_at_ms);
    }

    /// The `q` quantile of the lookups' times, milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let mut sorted = self.took_us.clone();
        sorted.sort_unstable();
        if sorted.is_empty() {
            return 0.0;
        }
        sorted[((sorted.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0
    }
}

/// The tallies of a load: by pod, then by client kind.
pub type Tallies = BTreeMap<String, BTreeMap<&'static str, Tally>>;

/// Every client kind in each of `pods` (`namespace/name`, pods of the client image) looking
/// up [`NAME`] `rate` times a second for `seconds`, through the kube-dns ClusterIP; `during`
/// runs `lead` after they start. The tallies, and what `during` gave.
pub fn under_load<T: Send>(
    nodes: &Nodes,
    pods: &[&str],
    rate: u32,
    seconds: u32,
    lead: Duration,
    during: impl FnOnce() -> T + Send,
) -> Result<(Tallies, T)> {
    let mut runs = Vec::new();
    for pod in pods {
        let (namespace, name) = pod
            .split_once('/')
            .with_context(|| format!("{pod}: not NAMESPACE/NAME"))?;
        let (node, id) = nodes.container(namespace, name, None)?;
        for (kind, program, mode) in CLIENTS {
            let mut args = vec![
                program.to_owned(),
                mode.to_owned(),
                rate.to_string(),
                seconds.to_string(),
            ];
            if mode == "libc" {
                args.push(format!("{NAME}."));
            } else {
                args.push(CLUSTER_DNS.to_string());
                args.push(NAME.to_owned());
            }
            runs.push((pod.to_string(), kind, node, id.clone(), args));
        }
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|(pod, kind, node, id, args)| {
                scope.spawn(move || -> Result<(String, &'static str, Tally)> {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let out = node.exec_in(id, &args)?;
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    let tally = Tally::parse(&stdout).with_context(|| {
                        format!("{pod} {kind}: {}", String::from_utf8_lossy(&out.stderr))
                    })?;
                    Ok((pod.clone(), *kind, tally))
                })
            })
            .collect();
        std::thread::sleep(lead);
        let result = during();
        let mut tallies = Tallies::new();
        for handle in handles {
            let (pod, kind, tally) = handle
                .join()
                .map_err(|_| anyhow::anyhow!("a load client's thread panicked"))??;
            tallies.entry(pod).or_default().insert(kind, tally);
        }
        Ok((tallies, result))
    })
}

/// The tallies of every pod, by client kind.
pub fn by_kind(tallies: &Tallies) -> BTreeMap<&'static str, Tally> {
    let mut sum: BTreeMap<&'static str, Tally> = BTreeMap::new();
    for kinds in tallies.values() {
        for (kind, tally) in kinds {
            sum.entry(kind).or_default().add(tally);
        }
    }
    sum
}

/// What happens to the DNS Deployment or around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `kubectl rollout restart deployment/coredns`, until the rollout is complete.
    RolloutRestart,
    /// One DNS pod deleted (`kubectl delete pod --wait=false`).
    DeletePod,
    /// One DNS container's server killed with SIGKILL (the kubelet restarts it).
    KillContainer,
    /// The API server stopped and started again (`cargo xtask cluster restart kube-apiserver`).
    RestartApiServer,
    /// kube-proxy of node N (from 1) stopped and started again.
    RestartKubeProxy(u8),
}

impl Operation {
    /// Every operation, for two nodes.
    pub const ALL: [Self; 6] = [
        Self::RolloutRestart,
        Self::DeletePod,
        Self::KillContainer,
        Self::RestartApiServer,
        Self::RestartKubeProxy(1),
        Self::RestartKubeProxy(2),
    ];

    /// What it is, for a table.
    pub fn describe(self) -> String {
        match self {
            Self::RolloutRestart => "rollout restart".into(),
            Self::DeletePod => "one DNS pod deleted".into(),
            Self::KillContainer => "one DNS container SIGKILLed".into(),
            Self::RestartApiServer => "API server restarted".into(),
            Self::RestartKubeProxy(n) => format!("kube-proxy of node-{n} restarted"),
        }
    }
}

/// What an operation took: how long until it was done (for a rollout, until it completed).
#[derive(Debug, Clone, Copy)]
pub struct Done {
    pub took: Duration,
}

/// Performs `operation` on `nodes` (the DNS Deployment is deploy/'s `kube-system/coredns`),
/// and waits until it is done: the rollout complete, the pods Ready again, the API server
/// ready, kube-proxy healthy.
pub fn perform(nodes: &Nodes, operation: Operation) -> Result<Done> {
    let kubectl = nodes.kubectl();
    let started = Instant::now();
    match operation {
        Operation::RolloutRestart => {
            kubectl.run(&[
                "rollout",
                "restart",
                "deployment/coredns",
                "-n",
                "kube-system",
            ])?;
            nodes.wait_dns()?;
        }
        Operation::DeletePod => {
            let pod = dns_pods(&kubectl)?
                .into_iter()
                .next()
                .context("no DNS pod to delete")?;
            kubectl.run(&["delete", "pod", &pod, "-n", "kube-system", "--wait=false"])?;
            wait_dns_ready(&kubectl, Some(&pod))?;
        }
        Operation::KillContainer => {
            // The pod restarted least (the first of them by name): kills spread over the
            // pods, each container restarted at once rather than after a back-off.
            let restarts = |pod: &serde_json::Value| {
                pod["status"]["containerStatuses"][0]["restartCount"]
                    .as_u64()
                    .unwrap_or(0)
            };
            let pods = kubectl.get(&["pods", "-n", "kube-system", "-l", "k8s-app=kube-dns"])?;
            let (pod, before) = pods["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|pod| pod["metadata"]["deletionTimestamp"].is_null())
                .filter_map(|pod| {
                    Some((pod["metadata"]["name"].as_str()?.to_owned(), restarts(pod)))
                })
                .min_by_key(|(name, restarts)| (*restarts, name.clone()))
                .context("no DNS pod to kill")?;
            let (_, id) = nodes.container("kube-system", &pod, None)?;
            let pid = server_process(&id)?;
            crate::netns::signal(pid, Signal::SIGKILL);
            // The kubelet sees the container die, starts it again, and it turns Ready.
            wait_until(
                &format!("{pod} restarted"),
                Duration::from_secs(120),
                || {
                    let pod = kubectl.get(&["pod", &pod, "-n", "kube-system"])?;
                    Ok(restarts(&pod) > before && condition(&pod, "Ready"))
                },
            )?;
        }
        Operation::RestartApiServer => {
            let mut cluster = crate::cluster::Cluster::new(&nodes.plane.dir)?;
            cluster.verbose = true;
            cluster
                .restart(crate::cluster::Component::KubeApiserver)
                .context("restarting kube-apiserver")?;
        }
        Operation::RestartKubeProxy(number) => {
            let node = nodes
                .nodes
                .iter()
                .find(|node| node.number == number)
                .with_context(|| format!("no node-{number}"))?;
            node.kube_proxy.restart()?;
            node.wait_kube_proxy()?;
        }
    }
    Ok(Done {
        took: started.elapsed(),
    })
}

/// For each of the `count` pods matching `selector` in `namespace` (but those in `before`,
/// which were there already): how long from when it was first seen (polling every 100 ms
/// from `since`) to when it was Ready. Polls until that many pods were seen and each is
/// Ready, for up to two minutes.
pub fn ready_times(
    kubectl: &Kubectl,
    namespace: &str,
    selector: &str,
    count: usize,
    before: &BTreeSet<String>,
    since: Instant,
) -> Vec<(String, Duration)> {
    let mut seen: BTreeMap<String, (Instant, Option<Instant>)> = BTreeMap::new();
    let deadline = since + Duration::from_secs(120);
    while Instant::now() < deadline {
        if let Ok(pods) = kubectl.get(&["pods", "-n", namespace, "-l", selector]) {
            let now = Instant::now();
            for pod in pods["items"].as_array().into_iter().flatten() {
                let name = pod["metadata"]["name"].as_str().unwrap_or_default();
                if before.contains(name) {
                    continue;
                }
                let entry = seen.entry(name.to_owned()).or_insert((now, None));
                if entry.1.is_none() && condition(pod, "Ready") {
                    entry.1 = Some(now);
                }
            }
        }
        if seen.len() >= count && seen.values().all(|(_, ready)| ready.is_some()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    seen.into_iter()
        .filter_map(|(name, (first, ready))| Some((name, ready? - first)))
        .collect()
}

/// Waits until the DNS Deployment has its two pods Ready and no other, then 3 s more (the
/// endpoints and kube-proxy follow).
pub fn settle(kubectl: &Kubectl) -> Result<()> {
    wait_until("the DNS pods settled", Duration::from_secs(120), || {
        let pods = kubectl.get(&["pods", "-n", "kube-system", "-l", "k8s-app=kube-dns"])?;
        let items = pods["items"].as_array().cloned().unwrap_or_default();
        Ok(items.len() == 2 && items.iter().all(|p| condition(p, "Ready")))
    })?;
    std::thread::sleep(Duration::from_secs(3));
    Ok(())
}

/// The DNS pods that are not being deleted, by name.
pub fn dns_pods(kubectl: &Kubectl) -> Result<Vec<String>> {
    let pods = kubectl.get(&["pods", "-n", "kube-system", "-l", "k8s-app=kube-dns"])?;
    Ok(pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|pod| pod["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|pod| pod["metadata"]["name"].as_str().map(str::to_owned))
        .collect())
}

/// Waits until the DNS Deployment has two Ready pods again, none of them `gone`.
fn wait_dns_ready(kubectl: &Kubectl, gone: Option<&str>) -> Result<()> {
    wait_until("two DNS pods Ready", Duration::from_secs(120), || {
        let pods = kubectl.get(&["pods", "-n", "kube-system", "-l", "k8s-app=kube-dns"])?;
        let ready = pods["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|pod| pod["metadata"]["name"].as_str() != gone)
            .filter(|pod| pod["metadata"]["deletionTimestamp"].is_null() && condition(pod, "Ready"))
            .count();
        Ok(ready == 2)
    })
}

/// The PID (here) of the server in container `id`: the process whose cgroup path names the
/// container and whose parent is not in it (the container's first process).
pub fn server_process(id: &str) -> Result<u32> {
    let in_container = |pid: &str| -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|c| c.contains(id))
    };
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if !in_container(pid) {
            continue;
        }
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        let parent = status
            .lines()
            .find_map(|line| line.strip_prefix("PPid:"))
            .map(str::trim)
            .unwrap_or_default();
        if !in_container(parent) {
            return Ok(pid.parse()?);
        }
    }
    bail!("no process in container {id}")
}

/// One server's result for an operation: the tallies by client kind, and what the operation
/// took (none for a window without one).
pub type Outcome = (BTreeMap<&'static str, Tally>, Option<Done>);

/// A Markdown table of `rows`: an operation, then each server's [`Outcome`].
pub fn table(servers: &[&str], rows: &[(String, Vec<Outcome>)]) -> String {
    let mut out = String::new();
    let _ = write!(out, "| operation | client |");
    for server in servers {
        let _ = write!(out, " {server}: failed / slow / lookups |");
    }
    out.push('\n');
    let _ = write!(out, "| --- | --- |");
    for _ in servers {
        out.push_str(" ---: |");
    }
    out.push('\n');
    for (operation, results) in rows {
        for (index, (kind, _, _)) in CLIENTS.iter().enumerate() {
            let label = if index == 0 {
                let took: Vec<String> = results
                    .iter()
                    .zip(servers)
                    .filter_map(|((_, done), server)| {
                        done.map(|d| format!("{server} {:.1} s", d.took.as_secs_f64()))
                    })
                    .collect();
                if took.is_empty() {
                    operation.clone()
                } else {
                    format!("{operation} (done in {})", took.join(", "))
                }
            } else {
                String::new()
            };
            let _ = write!(out, "| {label} | {kind} |");
            for (tallies, _) in results {
                let tally = tallies.get(kind).cloned().unwrap_or_default();
                let _ = write!(
                    out,
                    " {} / {} / {} |",
                    tally.failed, tally.slow, tally.lookups
                );
            }
            out.push('\n');
        }
    }
    out
}

/// deploy/configmap.yaml's Corefile without the lines clusterdns adds to kubeadm's (its
/// `snapshot`): what CoreDNS runs.
pub fn kubeadm_corefile() -> Result<String> {
    Ok(configmap_corefile()?
        .lines()
        .filter(|line| !line.trim_start().starts_with("snapshot "))
        .map(|line| format!("{line}\n"))
        .collect())
}

/// deploy/configmap.yaml's Corefile as clusterdns's pod runs it (its `snapshot` line kept).
pub fn configmap_corefile() -> Result<String> {
    let path = crate::root().join("deploy/configmap.yaml");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    let (_, rest) = text
        .split_once("Corefile: |\n")
        .context("deploy/configmap.yaml has no Corefile")?;
    Ok(rest
        .lines()
        .take_while(|line| line.is_empty() || line.starts_with("    "))
        .map(|line| format!("{}\n", line.strip_prefix("    ").unwrap_or(line)))
        .collect())
}
