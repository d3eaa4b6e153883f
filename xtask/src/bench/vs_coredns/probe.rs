//! The prober: programming latency from outside (bench/README.md, "clusterdns beside CoreDNS").
//! It writes through the API server itself, as the admin, and polls both servers over UDP
//! about every 0.5 ms: a query to each server that has not answered as wanted yet, up to 2 ms
//! for the answers, 0.3 ms of sleep.
//!
//! - *new Service*: a ClusterIP Service POSTed; from the POST's response (the write
//!   committed) to each server's first A answer holding its ClusterIP;
//! - *Deployment scaled up*: a headless Service's Deployment scaled 1 -> 2 (back to 1 between
//!   samples); from the scale PATCH's response to each server's first A RRset with the new
//!   address, and from the moment a watch of the prober's own received the slice with it.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use http::{Request, header};
use http_body_util::BodyExt as _;
use kube::Client;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::UdpSocket;

/// How long the prober waits for the answers to one round of queries.
const ROUND: Duration = Duration::from_millis(2);
/// How long it sleeps between rounds.
const INTERVAL: Duration = Duration::from_micros(300);

/// One sample of the new-Service case, in milliseconds (none: the name did not answer
/// within 30 s).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ServiceSample {
    pub coredns_ms: Option<f64>,
    pub clusterdns_ms: Option<f64>,
    /// The POST's own round trip (not in the figures).
    pub request_ms: f64,
}

/// One sample of the scale-up case, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScaleSample {
    /// From the PATCH's response.
    pub coredns_ms: Option<f64>,
    pub clusterdns_ms: Option<f64>,
    /// From the prober's watch receiving the slice with the new address (may be negative).
    pub coredns_from_slice_ms: Option<f64>,
    pub clusterdns_from_slice_ms: Option<f64>,
    /// From the PATCH's response to the slice event.
    pub slice_ms: Option<f64>,
}

/// Where the prober asks and writes.
#[derive(Debug, Clone)]
pub struct Target {
    /// The servers' DNS ports on 127.0.0.1: CoreDNS's, then clusterdns's.
    pub ports: [u16; 2],
    pub namespace: String,
    /// The headless Service and its Deployment, of the same name, the scale case scales.
    pub deployment: String,
}

/// A DNS query for `name` A, recursion not desired.
pub fn query(name: &str, id: u16) -> Vec<u8> {
    let mut message = Vec::with_capacity(64);
    message.extend_from_slice(&id.to_be_bytes());
    message.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.') {
        message.push(label.len() as u8);
        message.extend_from_slice(label.as_bytes());
    }
    message.push(0);
    message.extend_from_slice(&[0, 1, 0, 1]);
    message
}

/// The end of the name at `at` (after its last label or its pointer).
fn skip_name(message: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let n = *message.get(at)?;
        if n == 0 {
            return Some(at + 1);
        }
        if n & 0xC0 == 0xC0 {
            return Some(at + 2);
        }
        at += usize::from(n) + 1;
    }
}

/// An answer's ID, rcode and A addresses; none if it is cut short.
pub fn answer(message: &[u8]) -> Option<(u16, u8, BTreeSet<Ipv4Addr>)> {
    let word = |at: usize| -> Option<u16> {
        Some(u16::from_be_bytes([
            *message.get(at)?,
            *message.get(at + 1)?,
        ]))
    };
    let id = word(0)?;
    let rcode = message.get(3)? & 0x0F;
    let (questions, answers) = (word(4)?, word(6)?);
    let mut at = 12;
    for _ in 0..questions {
        at = skip_name(message, at)? + 4;
    }
    let mut addresses = BTreeSet::new();
    for _ in 0..answers {
        at = skip_name(message, at)?;
        let rtype = word(at)?;
        let length = usize::from(word(at + 8)?);
        at += 10;
        let data = message.get(at..at + length)?;
        if rtype == 1
            && let Ok(octets) = <[u8; 4]>::try_from(data)
        {
            addresses.insert(Ipv4Addr::from(octets));
        }
        at += length;
    }
    Some((id, rcode, addresses))
}

/// The servers' sockets and the next query ID.
struct Poller {
    sockets: [UdpSocket; 2],
    id: u16,
}

impl Poller {
    async fn new(ports: [u16; 2]) -> Result<Self> {
        let mut sockets = Vec::new();
        for port in ports {
            let socket = UdpSocket::bind("127.0.0.1:0").await?;
            socket.connect(("127.0.0.1", port)).await?;
            sockets.push(socket);
        }
        let [a, b] =
            <[UdpSocket; 2]>::try_from(sockets).map_err(|_| anyhow::anyhow!("two sockets"))?;
        Ok(Self {
            sockets: [a, b],
            id: std::process::id() as u16,
        })
    }

    /// Polls both servers for `name` A until `done` holds for each one's answer (NOERROR) or
    /// `deadline` passes: when each first did.
    async fn until(
        &mut self,
        name: &str,
        done: impl Fn(&BTreeSet<Ipv4Addr>) -> bool,
        deadline: Instant,
    ) -> [Option<Instant>; 2] {
        let mut seen: [Option<Instant>; 2] = [None, None];
        let (mut buf_a, mut buf_b) = (vec![0u8; 4096], vec![0u8; 4096]);
        while seen.iter().any(Option::is_none) && Instant::now() < deadline {
            self.id = self.id.wrapping_add(1);
            let id = self.id;
            let message = query(name, id);
            let mut pending = [false; 2];
            for (i, socket) in self.sockets.iter().enumerate() {
                if seen[i].is_none() {
                    pending[i] = socket.send(&message).await.is_ok();
                }
            }
            let end = tokio::time::Instant::now() + ROUND;
            while pending.iter().any(|p| *p) {
                let [a, b] = &self.sockets;
                let (i, received) = tokio::select! {
                    r = a.recv(&mut buf_a), if pending[0] => (0, r.map(|n| buf_a[..n].to_vec())),
                    r = b.recv(&mut buf_b), if pending[1] => (1, r.map(|n| buf_b[..n].to_vec())),
                    () = tokio::time::sleep_until(end) => break,
                };
                let now = Instant::now();
                let Ok(message) = received else {
                    pending[i] = false;
                    continue;
                };
                let Some((got, rcode, addresses)) = answer(&message) else {
                    continue;
                };
                if got != id {
                    continue;
                }
                pending[i] = false;
                if rcode == 0 && done(&addresses) {
                    seen[i] = Some(now);
                }
            }
            // Not tokio's sleep: its timer has a millisecond's granularity, and would make the
            // rounds about 1 ms apart instead of 0.5. The prober runs on `block_on`'s own thread
            // (the slices' watch on the runtime's workers), so blocking it stalls nothing else.
            std::thread::sleep(INTERVAL);
        }
        seen
    }
}

/// Milliseconds from `from` to `to` (negative when `to` is earlier).
fn ms(from: Instant, to: Instant) -> f64 {
    if to >= from {
        (to - from).as_secs_f64() * 1000.0
    } else {
        -((from - to).as_secs_f64() * 1000.0)
    }
}

/// Sends `body` (JSON) as `method` to `path`: the response's JSON, when the request was sent
/// and when its response was read.
async fn call(
    client: &Client,
    method: http::Method,
    path: &str,
    body: &Value,
    content_type: &str,
) -> Result<(Value, Instant, Instant)> {
    let request = Request::builder()
        .method(method.clone())
        .uri(path)
        .header(header::CONTENT_TYPE, content_type)
        .body(serde_json::to_vec(body)?)?;
    let sent = Instant::now();
    let text = client
        .request_text(request)
        .await
        .with_context(|| format!("{method} {path}"))?;
    let received = Instant::now();
    let value = serde_json::from_str(&text).with_context(|| format!("{method} {path}"))?;
    Ok((value, sent, received))
}

/// The new-Service case: `samples` Services `lat-TAG-I` POSTed in turn.
pub async fn services(
    client: &Client,
    target: &Target,
    samples: u32,
    tag: &str,
) -> Result<Vec<ServiceSample>> {
    let mut poller = Poller::new(target.ports).await?;
    let ns = &target.namespace;
    let mut out = Vec::new();
    for i in 0..samples {
        let name = format!("lat-{tag}-{i}");
        let body = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"ports": [{"name": "http", "port": 80}]}});
        let (service, sent, received) = call(
            client,
            http::Method::POST,
            &format!("/api/v1/namespaces/{ns}/services"),
            &body,
            "application/json",
        )
        .await?;
        let ip: Ipv4Addr = service["spec"]["clusterIP"]
            .as_str()
            .context("the new Service has no clusterIP")?
            .parse()
            .context("the new Service's clusterIP")?;
        let seen = poller
            .until(
                &format!("{name}.{ns}.svc.cluster.local"),
                |a| a.contains(&ip),
                received + Duration::from_secs(30),
            )
            .await;
        out.push(ServiceSample {
            coredns_ms: seen[0].map(|t| ms(received, t)),
            clusterdns_ms: seen[1].map(|t| ms(received, t)),
            request_ms: ms(sent, received),
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(out)
}

/// What the prober's watch saw: when, and the ready IPv4 addresses of every slice then.
type Events = Arc<Mutex<Vec<(Instant, BTreeSet<Ipv4Addr>)>>>;

/// The ready IPv4 addresses of an EndpointSlice.
pub fn ready_addresses(slice: &Value) -> BTreeSet<Ipv4Addr> {
    slice["endpoints"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter(|e| e["conditions"]["ready"].as_bool() == Some(true))
        .filter_map(|e| e["addresses"].as_array())
        .flatten()
        .filter_map(|a| a.as_str()?.parse::<Ipv4Addr>().ok())
        .collect()
}

/// Watches the slices of Service `service` in `ns`, appending to `events` at each event.
async fn watch(client: Client, ns: String, service: String, events: Events) -> Result<()> {
    let path = format!(
        "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices?watch=1&labelSelector=kubernetes.io%2Fservice-name%3D{service}"
    );
    let request = Request::get(&path).body(kube::client::Body::from(Vec::new()))?;
    let response = client.send(request).await.context("the slices' watch")?;
    if !response.status().is_success() {
        bail!("the slices' watch: {}", response.status());
    }
    let mut body = response.into_body();
    let mut slices: std::collections::BTreeMap<String, BTreeSet<Ipv4Addr>> = Default::default();
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.context("the slices' watch")?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buffer.extend_from_slice(&data);
        while let Some(at) = buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=at).collect();
            let now = Instant::now();
            let event: Value = serde_json::from_slice(&line).context("a watch event")?;
            let object = &event["object"];
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if event["type"] == "DELETED" {
                slices.remove(&name);
            } else {
                slices.insert(name, ready_addresses(object));
            }
            let all: BTreeSet<Ipv4Addr> = slices.values().flatten().copied().collect();
            events
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((now, all));
        }
    }
    Ok(())
}

/// The scale-up case: `samples` times, the Deployment scaled to 2, then back to 1.
pub async fn scale_ups(client: &Client, target: &Target, samples: u32) -> Result<Vec<ScaleSample>> {
    let mut poller = Poller::new(target.ports).await?;
    let ns = &target.namespace;
    let events: Events = Arc::default();
    let watcher = tokio::spawn(watch(
        client.clone(),
        ns.clone(),
        target.deployment.clone(),
        events.clone(),
    ));
    let name = format!("{}.{ns}.svc.cluster.local", target.deployment);
    let scale = format!(
        "/apis/apps/v1/namespaces/{ns}/deployments/{}/scale",
        target.deployment
    );
    let patch = |replicas: u32| json!({"spec": {"replicas": replicas}});
    let merge = "application/merge-patch+json";
    tokio::time::sleep(Duration::from_secs(1)).await;
    let result = async {
        settle(&mut poller, &name).await?;
        let mut out = Vec::new();
        for _ in 0..samples {
            let base = last(&events);
            let (_, sent, received) =
                call(client, http::Method::PATCH, &scale, &patch(2), merge).await?;
            let seen = poller
                .until(
                    &name,
                    |a| a.len() == 2 && a.difference(&base).next().is_some(),
                    received + Duration::from_secs(30),
                )
                .await;
            let slice = events
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .find(|(t, a)| *t >= sent && a.difference(&base).next().is_some())
                .map(|(t, _)| *t);
            let from_slice = |i: usize| Some(ms(slice?, seen[i]?));
            out.push(ScaleSample {
                coredns_ms: seen[0].map(|t| ms(received, t)),
                clusterdns_ms: seen[1].map(|t| ms(received, t)),
                coredns_from_slice_ms: from_slice(0),
                clusterdns_from_slice_ms: from_slice(1),
                slice_ms: slice.map(|t| ms(received, t)),
            });
            call(client, http::Method::PATCH, &scale, &patch(1), merge).await?;
            settle(&mut poller, &name).await?;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(out)
    }
    .await;
    watcher.abort();
    result
}

/// The latest set of ready addresses the watch saw (none yet: empty).
fn last(events: &Events) -> BTreeSet<Ipv4Addr> {
    events
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .last()
        .map(|(_, a)| a.clone())
        .unwrap_or_default()
}

/// Waits (up to 60 s) until both servers answer `name` with one address.
async fn settle(poller: &mut Poller, name: &str) -> Result<()> {
    let seen = poller
        .until(
            name,
            |a| a.len() == 1,
            Instant::now() + Duration::from_secs(60),
        )
        .await;
    if seen.iter().any(Option::is_none) {
        bail!("the servers did not settle on 1 address for {name}");
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_query_asks_for_one_a_record() {
        let q = query("web.shop.svc.cluster.local.", 0x1234);
        assert_eq!(&q[..12], &[0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&q[12..16], b"\x03web");
        assert_eq!(&q[q.len() - 5..], &[0, 0, 1, 0, 1]);
        assert_eq!(query("a.b", 1).len(), 12 + 5 + 4);
    }

    /// An answer as a server sends it: the question, two A records (the first name a
    /// pointer to the question's, the second spelled out), a CNAME, and an AAAA.
    fn reply(rcode: u8) -> Vec<u8> {
        let mut m = vec![0xBE, 0xEF, 0x84, rcode, 0, 1, 0, 4, 0, 0, 0, 0];
        m.extend_from_slice(b"\x02hl\x08vs-probe\x03svc\x07cluster\x05local\x00\x00\x01\x00\x01");
        m.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 10, 248, 0, 7]);
        m.extend_from_slice(b"\x02hl\x08vs-probe\x03svc\x07cluster\x05local\x00");
        m.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 10, 248, 1, 9]);
        m.extend_from_slice(&[0xC0, 12, 0, 5, 0, 1, 0, 0, 0, 30, 0, 2, 0xC0, 12]);
        m.extend_from_slice(&[0xC0, 12, 0, 28, 0, 1, 0, 0, 0, 30, 0, 16]);
        m.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        m
    }

    #[test]
    fn answers_give_their_id_rcode_and_a_addresses() {
        let (id, rcode, addresses) = answer(&reply(0)).unwrap();
        assert_eq!((id, rcode), (0xBEEF, 0));
        let want: BTreeSet<Ipv4Addr> = ["10.248.0.7", "10.248.1.9"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        assert_eq!(addresses, want);
        assert_eq!(answer(&reply(3)).unwrap().1, 3);
        // Cut short anywhere in the records: no answer.
        let whole = reply(0);
        assert!(answer(&whole[..whole.len() - 1]).is_none());
        assert!(answer(&whole[..40]).is_none());
        assert!(answer(&[0, 1]).is_none());
    }

    #[test]
    fn a_slices_ready_ipv4_addresses_are_read() {
        let slice = json!({"metadata": {"name": "probe-hl-abcde"}, "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.244.0.5"], "conditions": {"ready": true, "serving": true}},
                {"addresses": ["10.244.0.6"], "conditions": {"ready": false}},
                {"addresses": ["10.244.1.7"], "conditions": {}},
                {"addresses": ["fd00::5"], "conditions": {"ready": true}},
                {"addresses": ["10.244.2.8"], "conditions": {"ready": true}}]});
        let ready: Vec<String> = ready_addresses(&slice)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(ready, ["10.244.0.5", "10.244.2.8"]);
        assert!(ready_addresses(&json!({"endpoints": null})).is_empty());
    }

    #[test]
    fn milliseconds_may_be_negative() {
        let t = Instant::now();
        let later = t + Duration::from_micros(2500);
        assert!((ms(t, later) - 2.5).abs() < 1e-9);
        assert!((ms(later, t) + 2.5).abs() < 1e-9);
    }
}
