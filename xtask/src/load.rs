//! `cargo xtask load`: gencluster's synthetic cluster (its kubectl `List` in JSON) created
//! through a real API server, as the benches load it (`cargo xtask bench vs-coredns`): the Namespaces,
//! then the Pods, each bound to a `bench-node-N` (PODS_PER_NODE to a node, in the file's
//! order), then the Services (with their selectors). A pod's status is the loader's too: once
//! created, the pod is patched Running and Ready with the next address of its node's /24, as a
//! kubelet whose containers start at once would, and annotated so that kwok's pod-running
//! stage leaves it alone (kwok patched 60–120 statuses a second here and played the stage
//! twice for many pods, the second patch refused for good: it was most of the load's time).
//! The EndpointSlice controller writes the slices; gencluster's EndpointSlices are not loaded.
//!
//! `concurrency` requests are in flight at once, each on a connection of its own (HTTP/1.1
//! over TLS, kube's client pools them), so the API server sets the pace. The bodies are JSON,
//! serialised before the clock starts; the responses are asked for in protobuf, which the API
//! server encodes for less than JSON and the loader never reads (bench/README.md, "Loading
//! objects", has the figures). A 429, a 5xx or a broken connection is retried (after
//! Retry-After, else a growing backoff) and counted as a refusal; a 409 (the object is there
//! already) is not a failure; anything else is a failure, reported.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ::kube::client::Body;
use ::kube::config::{KubeConfigOptions, Kubeconfig};
use ::kube::{Client, Config};
use anyhow::{Context, Result, bail};
use http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// The metadata the API server fills in itself: a create must not carry them.
const SERVER_SET: &[&str] = &[
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "ownerReferences",
];

/// A request body ready to send: where it goes, the object's name, its JSON; for a pod, the
/// merge patch of its status sent once it is created.
#[derive(Debug)]
pub struct Create {
    pub path: String,
    pub name: String,
    pub body: Vec<u8>,
    pub status: Option<Vec<u8>>,
}

/// The annotation on the pods whose status the loader writes itself: kwok's pod-running
/// stage (bench/peers/kwok.yaml) leaves them alone.
pub const STATUS_BY_LOADER: &str = "bench.clusterdns.io/status-by";

/// The most pods on one node: a node's /24 (the vs-coredns bench's `bench_nodes`) has 254 addresses.
pub const MAX_PODS_PER_NODE: usize = 254;

/// The address of the `slot`th pod on `bench-node-{node}`, from that node's /24 of
/// 10.248.0.0/13 as `cargo xtask bench vs-coredns` gives it (`.1` first;
/// xtask/src/bench/vs_coredns/measure.rs, `bench_nodes`).
pub fn pod_ip(node: usize, slot: usize) -> std::net::Ipv4Addr {
    let base = u32::from(std::net::Ipv4Addr::new(10, 248, 0, 0));
    let offset = u32::try_from(node * 256 + slot + 1).unwrap_or(u32::MAX);
    std::net::Ipv4Addr::from(base + offset)
}

/// The status a kubelet gives a pod that started at once and is Ready: Running, every
/// condition true, its address (as kwok's pod-running stage writes it, less the container
/// statuses the bench reads nothing from).
fn running_status(ip: std::net::Ipv4Addr) -> Value {
    // RFC 3339 in whole seconds, as the API server writes times.
    let now = jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or_else(|_| jiff::Timestamp::now())
        .to_string();
    let condition = |kind: &str| {
        serde_json::json!({"type": kind, "status": "True",
        "lastTransitionTime": now})
    };
    serde_json::json!({"status": {
        "phase": "Running",
        "conditions": [condition("PodScheduled"), condition("Initialized"),
            condition("ContainersReady"), condition("Ready")],
        "podIP": ip.to_string(),
        "podIPs": [{"ip": ip.to_string()}],
        "startTime": now,
    }})
}

/// gencluster's objects as creates, in the order they are sent.
#[derive(Debug, Default)]
pub struct Objects {
    pub namespaces: Vec<Create>,
    /// The Pods, then the Services: each Service's slices are then written once, whole, by
    /// the EndpointSlice controller (Services first had it update every slice once per pod
    /// turning Ready, and retry thousands of them with backoff after "EndpointSlice
    /// informer cache is out of date": minutes of tail at 150,000 pods).
    pub workloads: Vec<Create>,
    pub services: usize,
    pub pods: usize,
}

#[derive(Deserialize)]
struct List<'a> {
    #[serde(borrow)]
    items: Vec<&'a RawValue>,
}

/// Reads gencluster's `List` (`json`) into creates: the Namespaces but `default` and
/// `kube-system`, the Services but `default/kubernetes` (NodePort and LoadBalancer ones as
/// ClusterIP, without node ports: there are no real nodes), the Pods on
/// `bench-node-{i / pods_per_node}`.
pub fn objects(json: &[u8], pods_per_node: usize) -> Result<Objects> {
    if !(1..=MAX_PODS_PER_NODE).contains(&pods_per_node) {
        bail!("--pods-per-node {pods_per_node}: from 1 to {MAX_PODS_PER_NODE} (a node's /24)");
    }
    let list: List<'_> = serde_json::from_slice(json).context("not a List in JSON")?;
    let mut out = Objects::default();
    let mut pods = Vec::new();
    let mut services = Vec::new();
    for raw in list.items {
        let mut item: Value = serde_json::from_str(raw.get())?;
        let kind = item["kind"].as_str().unwrap_or_default().to_owned();
        let name = item["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let namespace = item["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let Some(object) = item.as_object_mut() {
            object.remove("status");
        }
        if let Some(meta) = item["metadata"].as_object_mut() {
            for key in SERVER_SET {
                meta.remove(*key);
            }
        }
        match kind.as_str() {
            "Namespace" if name != "default" && name != "kube-system" => {
                out.namespaces.push(Create {
                    path: "/api/v1/namespaces".into(),
                    body: serde_json::to_vec(&item)?,
                    status: None,
                    name,
                });
            }
            "Service" if (namespace.as_str(), name.as_str()) != ("default", "kubernetes") => {
                if let Some(spec) = item["spec"].as_object_mut() {
                    if matches!(
                        spec.get("type").and_then(Value::as_str),
                        Some("NodePort" | "LoadBalancer")
                    ) {
                        spec.insert("type".into(), "ClusterIP".into());
                    }
                    for key in [
                        "allocateLoadBalancerNodePorts",
                        "externalTrafficPolicy",
                        "healthCheckNodePort",
                    ] {
                        spec.remove(key);
                    }
                    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                            port.remove("nodePort");
                        }
                    }
                }
                services.push(Create {
                    path: format!("/api/v1/namespaces/{namespace}/services"),
                    body: serde_json::to_vec(&item)?,
                    status: None,
                    name,
                });
                out.services += 1;
            }
            "Pod" => {
                let (node, slot) = (pods.len() / pods_per_node, pods.len() % pods_per_node);
                if let Some(spec) = item["spec"].as_object_mut() {
                    spec.insert("nodeName".into(), format!("bench-node-{node}").into());
                }
                if let Some(meta) = item["metadata"].as_object_mut() {
                    let annotations = meta
                        .entry("annotations")
                        .or_insert_with(|| Value::Object(serde_json::Map::new()));
                    if let Some(annotations) = annotations.as_object_mut() {
                        annotations.insert(STATUS_BY_LOADER.into(), "cargo xtask load".into());
                    }
                }
                pods.push(Create {
                    path: format!("/api/v1/namespaces/{namespace}/pods"),
                    body: serde_json::to_vec(&item)?,
                    status: Some(serde_json::to_vec(&running_status(pod_ip(node, slot)))?),
                    name,
                });
            }
            _ => {}
        }
    }
    out.pods = pods.len();
    out.workloads = pods;
    out.workloads.extend(services);
    Ok(out)
}

/// What a load came to.
#[derive(Debug, Default)]
pub struct Tally {
    /// Objects the API server created (or had already: 409).
    pub created: AtomicUsize,
    /// Pods whose status the loader wrote (Running, Ready, an address).
    pub statuses: AtomicUsize,
    /// Requests refused for now (429, 5xx, a connection lost) and sent again.
    pub refused: AtomicUsize,
    /// Of those, 429s.
    pub too_many: AtomicUsize,
    /// Objects refused for good, with why (the first few).
    pub failures: std::sync::Mutex<Vec<String>>,
    pub failed: AtomicUsize,
}

/// An API-server client from a kubeconfig (kube's own retries off: the loader counts its).
pub async fn client(kubeconfig: &std::path::Path) -> Result<Client> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let mut config =
        Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    config.default_retry = false;
    config.read_timeout = Some(Duration::from_secs(120));
    Ok(Client::try_from(config)?)
}

/// Creates `creates` with `concurrency` requests in flight.
pub async fn create_all(
    client: &Client,
    creates: Arc<Vec<Create>>,
    concurrency: usize,
    tally: Arc<Tally>,
) -> Result<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (client, creates, next, tally) =
            (client.clone(), creates.clone(), next.clone(), tally.clone());
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(create) = creates.get(i) else {
                    return;
                };
                create_one(&client, create, &tally).await;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done?;
    }
    Ok(())
}

/// Creates the object, then writes its status when it has one to write.
async fn create_one(client: &Client, create: &Create, tally: &Tally) {
    let post = || Request::post(&create.path).header(header::CONTENT_TYPE, "application/json");
    if !send(client, create, tally, post, &create.body).await {
        return;
    }
    tally.created.fetch_add(1, Ordering::Relaxed);
    let Some(status) = &create.status else {
        return;
    };
    let path = format!("{}/{}/status", create.path, create.name);
    let patch =
        || Request::patch(&path).header(header::CONTENT_TYPE, "application/merge-patch+json");
    if send(client, create, tally, patch, status).await {
        tally.statuses.fetch_add(1, Ordering::Relaxed);
    }
}

/// Sends `body` in the request `start` begins until the API server takes it (a 409 is taken
/// as the object being there already); retried after a 429, a 5xx or a lost connection.
/// Whether it was taken; if not, the failure is in `tally`.
async fn send(
    client: &Client,
    create: &Create,
    tally: &Tally,
    start: impl Fn() -> http::request::Builder,
    body: &[u8],
) -> bool {
    let mut backoff = Duration::from_millis(100);
    for attempt in 1.. {
        let request = start()
            .header(
                header::ACCEPT,
                "application/vnd.kubernetes.protobuf, application/json",
            )
            .body(Body::from(body.to_vec()));
        let request = match request {
            Ok(request) => request,
            Err(error) => {
                fail(tally, create, format!("{error}"));
                return false;
            }
        };
        let (status, retry_after, text) = match client.send(request).await {
            Ok(response) => {
                let status = response.status();
                let retry_after = response
                    .headers()
                    .get(header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                    .map(Duration::from_secs);
                let body = response.into_body().collect().await;
                let text = match body {
                    Ok(body) if !status.is_success() => printable(&body.to_bytes()),
                    Ok(_) => String::new(),
                    Err(error) => format!("reading the response: {error}"),
                };
                (Some(status), retry_after, text)
            }
            Err(error) => (None, None, format!("{error}")),
        };
        match status {
            Some(status) if status.is_success() || status == StatusCode::CONFLICT => {
                return true;
            }
            Some(status)
                if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() =>
            {
                fail(tally, create, format!("{status} {text}"));
                return false;
            }
            _ if attempt >= 20 => {
                let status = status.map_or_else(|| "no response".into(), |s| s.to_string());
                fail(
                    tally,
                    create,
                    format!("{status} after {attempt} tries: {text}"),
                );
                return false;
            }
            _ => {
                tally.refused.fetch_add(1, Ordering::Relaxed);
                if status == Some(StatusCode::TOO_MANY_REQUESTS) {
                    tally.too_many.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(retry_after.unwrap_or(backoff)).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
    false
}

fn fail(tally: &Tally, create: &Create, why: String) {
    tally.failed.fetch_add(1, Ordering::Relaxed);
    let mut failures = tally
        .failures
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if failures.len() < 10 {
        failures.push(format!("{} {}: {why}", create.path, create.name));
    }
}

/// An error body, JSON or protobuf, as a line of text (protobuf's framing bytes dropped).
fn printable(bytes: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    text.chars().take(300).collect()
}

/// How far the cluster is: pods without an address, and the endpoints (with an address) the
/// EndpointSlices hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub pods_without_ip: usize,
    pub endpoints: usize,
}

/// GETs `path` (from the API server's watch cache) as JSON.
async fn get(client: &Client, path: &str, accept: &str) -> Result<Value> {
    let request = Request::get(path)
        .header(header::ACCEPT, accept)
        .body(Vec::new())?;
    let text = client.request_text(request).await?;
    Ok(serde_json::from_str(&text)?)
}

/// The pods with no address yet: only their metadata, from the watch cache, a field selector
/// doing the filtering (cheap beside a list of every pod).
pub async fn pods_without_ip(client: &Client) -> Result<usize> {
    let list = get(
        client,
        "/api/v1/pods?fieldSelector=status.podIP%3D&resourceVersion=0",
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    )
    .await?;
    Ok(list["items"].as_array().map_or(0, Vec::len))
}

/// The kinds `dump` writes, in kubectl's order: the list path, `apiVersion` and `kind`.
const DUMPED: [(&str, &str, &str); 4] = [
    ("/api/v1/namespaces", "v1", "Namespace"),
    ("/api/v1/services", "v1", "Service"),
    (
        "/apis/discovery.k8s.io/v1/endpointslices",
        "discovery.k8s.io/v1",
        "EndpointSlice",
    ),
    ("/api/v1/pods", "v1", "Pod"),
];

/// Writes the cluster's Namespaces, Services, EndpointSlices and Pods to `out` as one
/// kubectl `List` (what `kubectl get ns,svc,endpointslices,pods -A -o json` prints, less each
/// object's `managedFields`), listed 500 at a time and written as the pages come: one page in
/// memory, not the cluster (kubectl held 12.9 GB for 150,000 pods, and the kernel killed it).
/// How many objects of each kind it wrote, in that order.
pub async fn dump(client: &Client, out: &mut dyn std::io::Write) -> Result<[usize; 4]> {
    out.write_all(
        br#"{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":["#,
    )?;
    let mut written = 0;
    let mut counts = [0; 4];
    for (count, (path, api_version, kind)) in counts.iter_mut().zip(DUMPED) {
        let mut next: Option<String> = None;
        loop {
            let mut url = format!("{path}?limit=500");
            if let Some(token) = &next {
                url.push_str("&continue=");
                url.push_str(&percent(token));
            }
            let mut page = get(client, &url, "application/json").await?;
            let Some(items) = page["items"].as_array_mut() else {
                bail!("{url}: no items in the list");
            };
            for item in items.iter_mut() {
                if let Some(object) = item.as_object_mut() {
                    object.insert("apiVersion".into(), api_version.into());
                    object.insert("kind".into(), kind.into());
                }
                if let Some(meta) = item["metadata"].as_object_mut() {
                    meta.remove("managedFields");
                }
                if written > 0 {
                    out.write_all(b",")?;
                }
                serde_json::to_writer(&mut *out, item)?;
                written += 1;
                *count += 1;
            }
            next = page["metadata"]["continue"]
                .as_str()
                .filter(|token| !token.is_empty())
                .map(str::to_owned);
            if next.is_none() {
                break;
            }
        }
    }
    out.write_all(b"]}\n")?;
    out.flush()?;
    Ok(counts)
}

/// `text` for a query string: every byte but letters, digits and `-._~` as `%XX`.
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The endpoints with an address in every EndpointSlice (as the vs-coredns bench counts them).
pub async fn slice_endpoints(client: &Client) -> Result<usize> {
    let list = get(
        client,
        "/apis/discovery.k8s.io/v1/endpointslices?resourceVersion=0",
        "application/json",
    )
    .await?;
    let Some(items) = list["items"].as_array() else {
        bail!("no items in the EndpointSlice list");
    };
    Ok(items
        .iter()
        .filter_map(|slice| slice["endpoints"].as_array())
        .flatten()
        .filter(|endpoint| {
            endpoint["addresses"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        })
        .count())
}

/// Waits until every pod has an address and the slices' endpoints have stayed the same over
/// two looks `every` apart; reports progress on stderr. The endpoints, and the first of those
/// two looks (when the cluster was loaded, to within `every`).
pub async fn wait_loaded(
    client: &Client,
    start: Instant,
    every: Duration,
) -> Result<(usize, Instant)> {
    let mut last: Option<(usize, Instant)> = None;
    let mut all_ips = false;
    loop {
        let now = Instant::now();
        let pending = pods_without_ip(client).await?;
        if pending > 0 {
            eprintln!(
                "[load] {:>5.0} s: {pending} pods without an address",
                start.elapsed().as_secs_f64()
            );
            last = None;
            // A look lists the metadata of every pod still without an address: at 150,000
            // of them, tens of MB the API server encodes, so rarer while there are many.
            let many = Duration::from_secs(u64::try_from(pending / 5_000).unwrap_or(u64::MAX));
            tokio::time::sleep(many.min(Duration::from_secs(20))).await;
        } else {
            if !all_ips {
                all_ips = true;
                eprintln!(
                    "[load] {:>5.0} s: every pod has an address",
                    start.elapsed().as_secs_f64()
                );
            }
            let endpoints = slice_endpoints(client).await?;
            eprintln!(
                "[load] {:>5.0} s: the EndpointSlices hold {endpoints} endpoints",
                start.elapsed().as_secs_f64()
            );
            match last {
                Some((before, at)) if before == endpoints => return Ok((endpoints, at)),
                _ => last = Some((endpoints, now)),
            }
        }
        tokio::time::sleep(every).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gencluster_objects_become_creates() -> Result<()> {
        let list = serde_json::json!({"kind": "List", "items": [
            {"kind": "Namespace", "metadata": {"name": "default"}},
            {"kind": "Namespace", "metadata": {"name": "shop", "uid": "u"}},
            {"kind": "Service", "metadata": {"name": "kubernetes", "namespace": "default"}},
            {"kind": "Service", "metadata": {"name": "web", "namespace": "shop",
                "resourceVersion": "1"},
             "spec": {"type": "NodePort", "externalTrafficPolicy": "Local",
                 "ports": [{"port": 80, "nodePort": 30080}]}, "status": {}},
            {"kind": "EndpointSlice", "metadata": {"name": "web-1", "namespace": "shop"}},
            {"kind": "Pod", "metadata": {"name": "web-0", "namespace": "shop"}, "spec": {},
             "status": {"podIP": "10.0.0.1"}},
            {"kind": "Pod", "metadata": {"name": "web-1", "namespace": "shop"}, "spec": {}},
            {"kind": "Pod", "metadata": {"name": "web-2", "namespace": "shop"}, "spec": {}},
        ]});
        let objects = objects(&serde_json::to_vec(&list)?, 2)?;
        assert_eq!(
            (objects.namespaces.len(), objects.services, objects.pods),
            (1, 1, 3)
        );
        let body = |c: &Create| serde_json::from_slice::<Value>(&c.body);
        assert_eq!(
            body(&objects.namespaces[0])?,
            serde_json::json!({"kind": "Namespace", "metadata": {"name": "shop"}})
        );
        let service = &objects.workloads[3];
        assert_eq!(service.path, "/api/v1/namespaces/shop/services");
        assert_eq!(
            body(service)?,
            serde_json::json!({"kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
                "spec": {"type": "ClusterIP", "ports": [{"port": 80}]}})
        );
        let nodes: Vec<Value> = objects.workloads[..3]
            .iter()
            .map(|c| Ok(body(c)?["spec"]["nodeName"].clone()))
            .collect::<Result<_>>()?;
        assert_eq!(nodes, ["bench-node-0", "bench-node-0", "bench-node-1"]);
        assert!(body(&objects.workloads[0])?.get("status").is_none());
        assert_eq!(
            body(&objects.workloads[0])?["metadata"]["annotations"][STATUS_BY_LOADER],
            "cargo xtask load"
        );
        // Each pod's status: Running, Ready, the next address of its node's /24.
        let ips: Vec<Value> = objects.workloads[..3]
            .iter()
            .map(|c| {
                let status: Value = serde_json::from_slice(c.status.as_deref().unwrap_or(b"{}"))?;
                assert_eq!(status["status"]["phase"], "Running");
                assert_eq!(status["status"]["conditions"][3]["type"], "Ready");
                assert_eq!(status["status"]["conditions"][3]["status"], "True");
                Ok(status["status"]["podIP"].clone())
            })
            .collect::<Result<_>>()?;
        assert_eq!(ips, ["10.248.0.1", "10.248.0.2", "10.248.1.1"]);
        assert_eq!(pod_ip(300, 253).to_string(), "10.249.44.254");
        assert!(objects.namespaces[0].status.is_none());
        assert!(service.status.is_none());
        assert!(super::objects(&serde_json::to_vec(&list)?, 255).is_err());
        Ok(())
    }

    #[test]
    fn continue_tokens_are_escaped() {
        assert_eq!(percent("eyJ2Ijoi+/=="), "eyJ2Ijoi%2B%2F%3D%3D");
    }

    #[test]
    fn protobuf_errors_print() {
        assert_eq!(printable(b"k8s\0\x0a\x06Status"), "k8s   Status");
    }
}
