//! `/health`, `/ready` and `/metrics` over real HTTP: the endpoints on 127.0.0.1:0, asked by
//! a small client over `std::net::TcpStream` from the test thread while a tokio runtime
//! serves them.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clusterdns::http::{Endpoints, Lifecycle, Monitor, Readiness, ReadinessCheck, Route, Shared};
use clusterdns::metrics::dns::server_label;
use clusterdns::metrics::{
    DnsMetrics, EnabledPlugin, Family, HealthMetrics, ObjectCounts, Observation, PluginEnabled,
    ProcessMetrics, Proto, Registration, Registry, ReloadMetrics, StoreMetrics, Writer,
};
use clusterdns::plugin::Plugin;
use tokio::runtime::Runtime;

/// A parsed HTTP/1.1 response.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Reads one response from `stream` (Content-Length framed, or to the end).
fn read_reply(stream: &mut TcpStream) -> Reply {
    read_reply_to(stream, "GET")
}

/// Reads the response to a `method` request: a HEAD response has no body, whatever its
/// Content-Length says.
fn read_reply_to(stream: &mut TcpStream, method: &str) -> Reply {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).unwrap();
        assert!(
            n > 0,
            "connection closed in the head: {:?}",
            String::from_utf8_lossy(&raw)
        );
        raw.push(byte[0]);
    }
    let head = String::from_utf8(raw).unwrap();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (key, value) = line.split_once(':').unwrap();
            (key.trim().to_owned(), value.trim().to_owned())
        })
        .collect();
    let mut body = Vec::new();
    let length = headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("content-length"))
        .map(|(_, value)| value.parse::<usize>().unwrap());
    match length {
        _ if method == "HEAD" => {}
        Some(length) => {
            body.resize(length, 0);
            stream.read_exact(&mut body).unwrap();
        }
        None => {
            stream.read_to_end(&mut body).unwrap();
        }
    }
    Reply {
        status,
        headers,
        body: String::from_utf8(body).unwrap(),
    }
}

/// One request on a fresh connection.
fn request(addr: SocketAddr, method: &str, path: &str) -> Reply {
    let mut stream = connect(addr);
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    read_reply_to(&mut stream, method)
}

fn get(addr: SocketAddr, path: &str) -> Reply {
    request(addr, "GET", path)
}

/// Whatever the server sends back for `bytes`, until it closes.
fn raw(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut stream = connect(addr);
    // The server may close before reading everything (a 431 for huge headers).
    let _ = stream.write_all(bytes);
    let _ = stream.shutdown(Shutdown::Write);
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A readiness check that says `kubernetes` until `ready` is set.
fn flag(ready: &Arc<AtomicBool>) -> ReadinessCheck {
    let ready = Arc::clone(ready);
    Arc::new(move || {
        if ready.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(vec!["kubernetes".to_owned()])
        }
    })
}

/// The endpoints and what they answer from, served by their own runtime.
struct Harness {
    runtime: Runtime,
    endpoints: Option<Endpoints>,
    shared: Shared,
    _registrations: Vec<Registration>,
}

impl Harness {
    fn start(spec: &[(SocketAddr, Route)], readiness: Readiness) -> Self {
        Self::start_with(spec, readiness, Registry::new(), Vec::new())
    }

    fn start_with(
        spec: &[(SocketAddr, Route)],
        readiness: Readiness,
        registry: Registry,
        registrations: Vec<Registration>,
    ) -> Self {
        let runtime = crate::common::runtime(2);
        let shared = Shared {
            registry,
            readiness: Arc::new(readiness),
            lifecycle: Arc::new(Lifecycle::new()),
            health: Arc::new(HealthMetrics::new()),
            debug: None,
        };
        let endpoints = {
            let _entered = runtime.enter();
            Endpoints::start(spec, shared.clone()).unwrap()
        };
        Self {
            runtime,
            endpoints: Some(endpoints),
            shared,
            _registrations: registrations,
        }
    }

    fn endpoints(&mut self) -> &mut Endpoints {
        self.endpoints.as_mut().unwrap()
    }

    fn addr(&self, route: Route) -> SocketAddr {
        self.endpoints.as_ref().unwrap().local_addr(route).unwrap()
    }

    fn apply(&mut self, spec: &[(SocketAddr, Route)]) -> std::io::Result<()> {
        let _entered = self.runtime.enter();
        self.endpoints.as_mut().unwrap().apply(spec)
    }

    /// Stops and waits for the listeners to close.
    fn stop(&mut self) {
        self.shared.lifecycle.stop();
        if let Some(endpoints) = self.endpoints.take() {
            self.runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(10), endpoints.join())
                    .await
                    .unwrap();
            });
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.shared.lifecycle.stop();
    }
}

#[test]
fn health_answers_ok_and_other_paths_are_not_found() {
    let harness = Harness::start(&[(any_port(), Route::Health)], Readiness::always_ready());
    let addr = harness.addr(Route::Health);

    let reply = get(addr, "/health");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, "OK");
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(get(addr, "/health?verbose=1").status, 200);

    let head = request(addr, "HEAD", "/health");
    assert_eq!(head.status, 200);
    assert_eq!(head.body, "");

    for path in [
        "/ready",
        "/metrics",
        "/",
        "/health/",
        "/healthz",
        "/%2e%2e/etc/passwd",
    ] {
        let reply = get(addr, path);
        assert_eq!(reply.status, 404, "{path}");
        assert_eq!(reply.body, "404 page not found\n", "{path}");
    }
}

#[test]
fn ready_lists_the_plugins_not_ready_then_answers_ok() {
    let ready = Arc::new(AtomicBool::new(false));
    let readiness = Readiness::new(flag(&ready), Monitor::UntilReady);
    let harness = Harness::start(&[(any_port(), Route::Ready)], readiness);
    let addr = harness.addr(Route::Ready);

    let reply = get(addr, "/ready");
    assert_eq!(reply.status, 503);
    assert_eq!(reply.body, "kubernetes");

    ready.store(true, Ordering::SeqCst);
    let reply = get(addr, "/ready");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, "OK");
}

#[test]
fn several_plugins_not_ready_are_listed_sorted_and_comma_separated() {
    let check: ReadinessCheck = Arc::new(|| {
        Err(vec![
            "loop".to_owned(),
            "kubernetes".to_owned(),
            "forward".to_owned(),
        ])
    });
    let harness = Harness::start(
        &[(any_port(), Route::Ready)],
        Readiness::new(check, Monitor::UntilReady),
    );
    let reply = get(harness.addr(Route::Ready), "/ready");
    assert_eq!(reply.status, 503);
    assert_eq!(reply.body, "forward,kubernetes,loop");
}

#[test]
fn until_ready_latches_and_continuously_follows_the_check() {
    let ready = Arc::new(AtomicBool::new(true));
    let latched = Harness::start(
        &[(any_port(), Route::Ready)],
        Readiness::new(flag(&ready), Monitor::UntilReady),
    );
    let follows = Harness::start(
        &[(any_port(), Route::Ready)],
        Readiness::new(flag(&ready), Monitor::Continuously),
    );
    assert_eq!(get(latched.addr(Route::Ready), "/ready").status, 200);
    assert_eq!(get(follows.addr(Route::Ready), "/ready").status, 200);

    ready.store(false, Ordering::SeqCst);
    assert_eq!(get(latched.addr(Route::Ready), "/ready").status, 200);
    let reply = get(follows.addr(Route::Ready), "/ready");
    assert_eq!(reply.status, 503);
    assert_eq!(reply.body, "kubernetes");

    ready.store(true, Ordering::SeqCst);
    assert_eq!(get(follows.addr(Route::Ready), "/ready").status, 200);
}

#[test]
fn lameduck_turns_ready_off_at_once_while_health_stays_up_until_stop() {
    let mut harness = Harness::start(
        &[(any_port(), Route::Health), (any_port(), Route::Ready)],
        Readiness::always_ready(),
    );
    // 127.0.0.1:0 twice is one address: both routes share the listener.
    let addr = harness.addr(Route::Ready);
    assert_eq!(harness.addr(Route::Health), addr);

    // A kubelet-style keep-alive connection sees the change too.
    let mut kept = connect(addr);
    write!(kept, "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_reply(&mut kept).status, 200);

    harness.shared.lifecycle.begin_lameduck();
    let reply = get(addr, "/ready");
    assert_eq!(reply.status, 503);
    assert_eq!(reply.body, "Shutting down");
    write!(kept, "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_reply(&mut kept).status, 503);
    let health = get(addr, "/health");
    assert_eq!((health.status, health.body.as_str()), (200, "OK"));

    harness.stop();
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_err());
    // The keep-alive connection was closed too.
    let mut rest = Vec::new();
    let _ = kept.read_to_end(&mut rest);
}

#[test]
fn metrics_carry_coredns_names_help_and_types() {
    let registry = Registry::new();
    let dns = Arc::new(DnsMetrics::new());
    let server = server_label(None, 53);
    let zone = dns.server_zone(&server, ".", "");
    zone.record(&Observation {
        proto: Proto::Udp,
        family: Family::V4,
        qtype: 1,
        rcode: 0,
        plugin: Plugin::Kubernetes.into(),
        request_size: 60,
        response_size: 130,
        duration: Duration::from_micros(150),
        dnssec_ok: true,
    });
    dns.dropped(&server).record(&Observation {
        proto: Proto::Tcp,
        family: Family::V6,
        qtype: 16,
        rcode: 5,
        plugin: Writer::Server,
        request_size: 40,
        response_size: 40,
        duration: Duration::ZERO,
        dnssec_ok: false,
    });
    let plugins = Arc::new(PluginEnabled::new());
    plugins.set(
        ["cache", "forward", "kubernetes"]
            .into_iter()
            .map(|name| EnabledPlugin {
                server: server.clone(),
                zone: ".".to_owned(),
                view: String::new(),
                name: name.to_owned(),
            })
            .collect(),
    );
    let store = Arc::new(StoreMetrics::new("cluster.local."));
    store.published(
        1_700_000_000,
        ObjectCounts {
            namespaces: 2,
            services: 5,
            endpoint_slices: 6,
            pods: 0,
        },
        std::time::SystemTime::now(),
    );
    let reload = Arc::new(ReloadMetrics::new());
    reload.loaded("cafe");
    let health = Arc::new(HealthMetrics::new());
    let registrations = vec![
        registry.register(dns),
        registry.register(Arc::new(ProcessMetrics::new())),
        registry.register(plugins),
        registry.register(store),
        registry.register(reload),
        registry.register(Arc::clone(&health) as _),
    ];
    let harness = Harness::start_with(
        &[(any_port(), Route::Metrics)],
        Readiness::always_ready(),
        registry,
        registrations,
    );
    let addr = harness.addr(Route::Metrics);

    let reply = get(addr, "/metrics");
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = reply.body;
    for (name, kind, help) in [
        (
            "coredns_dns_requests_total",
            "counter",
            "Counter of DNS requests made per zone, protocol and family.",
        ),
        (
            "coredns_dns_responses_total",
            "counter",
            "Counter of response status codes.",
        ),
        (
            "coredns_dns_request_duration_seconds",
            "histogram",
            "Histogram of the time (in seconds) each request took per zone.",
        ),
        (
            "coredns_dns_request_size_bytes",
            "histogram",
            "Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.",
        ),
        (
            "coredns_dns_response_size_bytes",
            "histogram",
            "Size of the returned response in bytes.",
        ),
        (
            "coredns_dns_do_requests_total",
            "counter",
            "Counter of DNS requests with DO bit set per zone.",
        ),
        (
            "coredns_build_info",
            "gauge",
            "A metric with a constant '1' value labeled by version, revision, and goversion from which CoreDNS was built.",
        ),
        (
            "coredns_panics_total",
            "counter",
            "A metrics that counts the number of panics.",
        ),
        (
            "coredns_plugin_enabled",
            "gauge",
            "A metric that indicates whether a plugin is enabled on per server and zone basis.",
        ),
        (
            "coredns_health_request_duration_seconds",
            "histogram",
            "Histogram of the time (in seconds) each request took.",
        ),
        (
            "coredns_health_request_failures_total",
            "counter",
            "The number of times the health check failed.",
        ),
        (
            "coredns_reload_failed_total",
            "counter",
            "Counter of the number of failed reload attempts.",
        ),
        (
            "coredns_reload_version_info",
            "gauge",
            "A metric with a constant '1' value labeled by hash, and value which type of hash generated.",
        ),
        (
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
        ),
        (
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
        ),
        (
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size in bytes.",
        ),
        (
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
        ),
        (
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors.",
        ),
        (
            "process_start_time_seconds",
            "gauge",
            "Start time of the process since unix epoch in seconds.",
        ),
    ] {
        let header = format!("# HELP {name} {help}\n# TYPE {name} {kind}\n");
        assert_eq!(text.matches(&header).count(), 1, "{header} in\n{text}");
        assert_eq!(
            text.matches(&format!("# TYPE {name} ")).count(),
            1,
            "{name}"
        );
    }
    for sample in [
        "coredns_dns_requests_total{family=\"1\",proto=\"udp\",server=\"dns://:53\",type=\"A\",view=\"\",zone=\".\"} 1\n",
        "coredns_dns_requests_total{family=\"2\",proto=\"tcp\",server=\"dns://:53\",type=\"TXT\",view=\"\",zone=\"dropped\"} 1\n",
        "coredns_dns_responses_total{plugin=\"kubernetes\",rcode=\"NOERROR\",server=\"dns://:53\",view=\"\",zone=\".\"} 1\n",
        "coredns_dns_responses_total{plugin=\"\",rcode=\"REFUSED\",server=\"dns://:53\",view=\"\",zone=\"dropped\"} 1\n",
        "coredns_dns_do_requests_total{server=\"dns://:53\",view=\"\",zone=\".\"} 1\n",
        "coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.00025\"} 1\n",
        "coredns_dns_request_size_bytes_sum{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\"} 60\n",
        "coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"200\"} 1\n",
        "coredns_plugin_enabled{name=\"kubernetes\",server=\"dns://:53\",view=\"\",zone=\".\"} 1\n",
        "coredns_reload_version_info{hash=\"sha512\",value=\"cafe\"} 1\n",
        "coredns_health_request_duration_seconds_bucket{le=\"2.5\"} ",
        "clusterdns_store_serial{zone=\"cluster.local.\"} 1700000000\n",
        "clusterdns_store_objects{kind=\"Service\",zone=\"cluster.local.\"} 5\n",
        "clusterdns_store_generation{zone=\"cluster.local.\"} 1\n",
        "clusterdns_last_update_timestamp_seconds{zone=\"cluster.local.\"} ",
    ] {
        assert!(text.contains(sample), "{sample:?} in\n{text}");
    }
    assert!(text.contains("coredns_build_info{goversion=\"rustc "));
    // Every non-comment line is `name{labels} value` or `name value`, value a number.
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let value = line.rsplit(' ').next().unwrap();
        assert!(
            value.parse::<f64>().is_ok() || ["+Inf", "-Inf", "NaN"].contains(&value),
            "{line}"
        );
    }
}

#[test]
fn health_ready_and_metrics_can_share_one_port() {
    let harness = Harness::start(
        &[
            (any_port(), Route::Health),
            (any_port(), Route::Ready),
            (any_port(), Route::Metrics),
        ],
        Readiness::always_ready(),
    );
    let addr = harness.addr(Route::Health);
    assert_eq!(harness.addr(Route::Metrics), addr);
    assert_eq!(get(addr, "/health").status, 200);
    assert_eq!(get(addr, "/ready").status, 200);
    assert_eq!(get(addr, "/metrics").status, 200);
    assert_eq!(get(addr, "/other").status, 404);
}

#[test]
fn malformed_requests_get_400_and_the_listener_keeps_serving() {
    let harness = Harness::start(&[(any_port(), Route::Health)], Readiness::always_ready());
    let addr = harness.addr(Route::Health);

    for garbage in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET /health HTTP/9.9\r\n\r\n",
        b"GET /health HTTP/1.1\r\nHost x\r\n\r\n",
        b"\x00\x01\x02\x03\xff\xfe\r\n\r\n",
        b"GET /he alth HTTP/1.1\r\n\r\n",
    ] {
        let reply = raw(addr, garbage);
        assert!(
            reply.starts_with("HTTP/1.1 400") || reply.starts_with("HTTP/1.1 505"),
            "{garbage:?} got {reply:?}"
        );
    }
    // Headers without end, too large: 431 or a closed connection, never a crash.
    let mut huge = b"GET /health HTTP/1.1\r\nX-Big: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 1 << 20));
    let reply = raw(addr, &huge);
    assert!(
        reply.is_empty() || reply.starts_with("HTTP/1.1 431") || reply.starts_with("HTTP/1.1 400"),
        "{reply:?}"
    );
    // A client that connects and says nothing does not hold the listener.
    let _idle = connect(addr);
    // A POST with a body (not read: the connection closes after the answer).
    let reply = raw(
        addr,
        b"POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
    );
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    // Pipelined requests.
    let reply = raw(
        addr,
        b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(reply.matches("HTTP/1.1 200 OK").count(), 2, "{reply}");
    assert_eq!(
        reply.matches("HTTP/1.1 404 Not Found").count(),
        1,
        "{reply}"
    );

    let reply = get(addr, "/health");
    assert_eq!((reply.status, reply.body.as_str()), (200, "OK"));
}

#[test]
fn random_bytes_never_take_the_listener_down() {
    let harness = Harness::start(
        &[(any_port(), Route::Health), (any_port(), Route::Metrics)],
        Readiness::always_ready(),
    );
    let addr = harness.addr(Route::Health);
    // A fixed-seed xorshift: the same inputs every run.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let prefixes: [&[u8]; 4] = [
        b"",
        b"GET /",
        b"GET /metrics HTTP/1.1\r\n",
        b"POST /ready HTTP/1.0\r\n",
    ];
    for round in 0..200 {
        let mut bytes = prefixes[round % prefixes.len()].to_vec();
        let len = (next() % 300) as usize;
        bytes.extend((0..len).map(|_| next() as u8));
        if round % 3 == 0 {
            bytes.extend_from_slice(b"\r\n\r\n");
        }
        let reply = raw(addr, &bytes);
        assert!(
            reply.is_empty() || reply.starts_with("HTTP/1.1 "),
            "{reply:?}"
        );
    }
    let reply = get(addr, "/health");
    assert_eq!((reply.status, reply.body.as_str()), (200, "OK"));
    assert_eq!(get(addr, "/metrics").status, 200);
}

#[test]
fn a_reload_keeps_listeners_and_the_ready_latch() {
    let ready = Arc::new(AtomicBool::new(true));
    let mut harness = Harness::start(
        &[(any_port(), Route::Ready)],
        Readiness::new(flag(&ready), Monitor::UntilReady),
    );
    let addr = harness.addr(Route::Ready);
    assert_eq!(get(addr, "/ready").status, 200);

    // The reload's new check is not ready yet (its store still loading), and the new
    // configuration adds health on the same address and metrics on another.
    harness
        .shared
        .readiness
        .set(flag(&Arc::new(AtomicBool::new(false))), Monitor::UntilReady);
    let elsewhere: SocketAddr = "127.0.0.2:0".parse().unwrap();
    harness
        .apply(&[
            (any_port(), Route::Ready),
            (any_port(), Route::Health),
            (elsewhere, Route::Metrics),
        ])
        .unwrap();
    assert_eq!(harness.addr(Route::Ready), addr, "same listener");
    assert_eq!(get(addr, "/ready").status, 200, "no blink");
    assert_eq!(get(addr, "/health").status, 200);
    let metrics = harness.addr(Route::Metrics);
    assert_ne!(metrics, addr);
    assert_eq!(get(metrics, "/metrics").status, 200);

    // A binding that fails leaves everything as it was.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_addr = taken.local_addr().unwrap();
    let error = harness
        .apply(&[(any_port(), Route::Ready), (taken_addr, Route::Metrics)])
        .unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse);
    assert_eq!(
        error.to_string(),
        format!("cannot listen for metrics on {taken_addr}: address in use")
    );
    assert_eq!(get(metrics, "/metrics").status, 200);
    assert_eq!(get(addr, "/health").status, 200);

    // Dropping the metrics address closes its listener; dropping health from the shared
    // one makes /health a 404 there.
    harness.apply(&[(any_port(), Route::Ready)]).unwrap();
    assert_eq!(get(addr, "/health").status, 404);
    assert_eq!(get(addr, "/ready").status, 200);
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect_timeout(&metrics, Duration::from_secs(1)).is_ok() {
        assert!(Instant::now() < deadline, "{metrics} still listening");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(harness.endpoints().addresses().len(), 1);
}

#[test]
fn a_taken_port_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let runtime = Runtime::new().unwrap();
    let _entered = runtime.enter();
    let shared = Shared {
        registry: Registry::new(),
        readiness: Arc::new(Readiness::always_ready()),
        lifecycle: Arc::new(Lifecycle::new()),
        health: Arc::new(HealthMetrics::new()),
        debug: None,
    };
    let error =
        Endpoints::start(&[(addr, Route::Health), (addr, Route::Ready)], shared).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse);
    assert_eq!(
        error.to_string(),
        format!("cannot listen for health and ready on {addr}: address in use")
    );
}

#[test]
fn starting_outside_a_runtime_is_an_error_not_a_panic() {
    let shared = Shared {
        registry: Registry::new(),
        readiness: Arc::new(Readiness::always_ready()),
        lifecycle: Arc::new(Lifecycle::new()),
        health: Arc::new(HealthMetrics::new()),
        debug: None,
    };
    assert!(Endpoints::start(&[(any_port(), Route::Health)], shared).is_err());
}

#[test]
fn a_wildcard_ipv4_address_is_served_on_both_families_where_the_host_has_ipv6() {
    let wildcard: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let harness = Harness::start(&[(wildcard, Route::Health)], Readiness::always_ready());
    let bound = harness.addr(Route::Health);
    assert!(bound.ip().is_unspecified(), "{bound}");
    let v4 = SocketAddr::new([127, 0, 0, 1].into(), bound.port());
    assert_eq!(get(v4, "/health").status, 200);
    if bound.is_ipv6() {
        let v6 = SocketAddr::new(std::net::Ipv6Addr::LOCALHOST.into(), bound.port());
        if TcpStream::connect_timeout(&v6, Duration::from_secs(1)).is_ok() {
            assert_eq!(get(v6, "/health").status, 200);
        }
    }
    // The probe asks 127.0.0.1, the family asked for.
    let deadline = Instant::now() + Duration::from_secs(10);
    while harness.shared.health.probes() < 1 {
        assert!(Instant::now() < deadline, "no probe recorded");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(harness.shared.health.failures(), 0);
}

#[test]
fn the_health_self_probe_records_its_own_requests() {
    let harness = Harness::start(&[(any_port(), Route::Health)], Readiness::always_ready());
    let deadline = Instant::now() + Duration::from_secs(10);
    while harness.shared.health.probes() < 2 {
        assert!(Instant::now() < deadline, "no probe recorded");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(harness.shared.health.failures(), 0);
}
