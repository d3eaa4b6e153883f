//! What a hostile client, an odd file or a signal must not do to the server: the real
//! binary, run under `prlimit` or sent signals with kill(1).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::common::binary::{TestServer, http_get};
use crate::common::ports::on_free_ports;
use crate::common::{Reply, TempCorefile, fixture, query};

fn shop() -> String {
    fixture("shop.json").display().to_string()
}

/// `serve --objects shop.json` on a free loopback port, with `/metrics`, under `nofile`.
fn serve_limited(nofile: &str, extra: &[&str]) -> TestServer {
    let objects = shop();
    let mut args = vec![
        "serve",
        "--objects",
        &objects,
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
        "--upstream",
        "none",
    ];
    args.extend_from_slice(extra);
    TestServer::start_limited(nofile, &args)
}

/// The soft `Max open files` of a process, from /proc/PID/limits.
fn soft_nofile(pid: u32) -> u64 {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .unwrap();
    line.split_whitespace().nth(3).unwrap().parse().unwrap()
}

/// One sample of `/metrics` (its value), if the series is there.
fn metric(server: &TestServer, series: &str) -> Option<f64> {
    let (_, body) = http_get(server.http_addr("metrics"), "/metrics");
    body.lines()
        .find(|line| line.starts_with(series) && line[series.len()..].starts_with(' '))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

/// One query over a connection already open; the reply, or `None` if the connection is gone
/// or silent for `wait`.
fn ask_on(stream: &mut TcpStream, name: &str, wait: Duration) -> Option<Reply> {
    stream.set_read_timeout(Some(wait)).unwrap();
    let packet = query(name, "A", None);
    let mut framed = (packet.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&packet);
    stream.write_all(&framed).ok()?;
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).ok()?;
    let mut message = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut message).ok()?;
    Some(Reply::decode(&message))
}

/// A query over a new TCP connection, within `wait`.
fn ask_new_tcp(addr: SocketAddr, name: &str, wait: Duration) -> Option<Reply> {
    let mut stream = TcpStream::connect_timeout(&addr, wait).ok()?;
    ask_on(&mut stream, name, wait)
}

/// CPU the server uses over `window`, as a share of one core.
fn cpu_share(server: &TestServer, window: Duration) -> f64 {
    let before = server.cpu_time();
    std::thread::sleep(window);
    (server.cpu_time() - before).as_secs_f64() / window.as_secs_f64()
}

#[test]
fn the_soft_descriptor_limit_is_raised_to_the_hard_one_and_logged() {
    let server = serve_limited("200:4096", &[]);
    assert_eq!(soft_nofile(server.pid()), 4096);
    server.wait_log("file descriptor limit", Duration::from_secs(5));
    let log = server.log();
    let line = log
        .lines()
        .find(|line| line.contains("file descriptor limit"))
        .unwrap();
    assert!(
        line.contains("200") && line.contains("4096"),
        "the line says from what to what: {line}"
    );
    assert_eq!(
        metric(&server, "clusterdns_tcp_connections_limit").map(|v| v > 0.0),
        Some(true)
    );
}

#[test]
fn idle_tcp_clients_cannot_exhaust_descriptors() {
    // Under 256 descriptors that cannot be raised, 400 idle clients: the oldest are shed,
    // new clients and UDP are served, and the accept loop does not spin.
    let server = serve_limited("256:256", &[]);
    let name = "web.shop.svc.cluster.local.";
    let mut idle = Vec::new();
    for _ in 0..400 {
        idle.push(TcpStream::connect(server.addr).unwrap());
    }
    // Let the server take them all in.
    std::thread::sleep(Duration::from_millis(500));
    let share = cpu_share(&server, Duration::from_secs(1));
    assert!(share < 0.3, "the server spins: {share:.2} of a core");
    assert_eq!(server.ask_udp(name, "A").rcode, "NOERROR");
    let started = Instant::now();
    let reply = ask_new_tcp(server.addr, name, Duration::from_secs(3))
        .expect("a new TCP client is answered");
    assert_eq!(reply.rcode, "NOERROR");
    assert!(started.elapsed() < Duration::from_secs(1));
    // The newest of the idle clients were kept.
    let newest = idle.last_mut().unwrap();
    assert_eq!(
        ask_on(newest, name, Duration::from_secs(3))
            .expect("the newest idle connection is still served")
            .rcode,
        "NOERROR"
    );
    let limit = metric(&server, "clusterdns_tcp_connections_limit").unwrap();
    assert!(limit > 0.0 && limit < 256.0, "{limit}");
    let open = metric(&server, "clusterdns_tcp_connections").unwrap();
    assert!(open <= limit, "{open} open over a limit of {limit}");
    let shed = metric(&server, "clusterdns_tcp_connections_shed_total").unwrap();
    assert!(shed >= 400.0 - limit, "{shed} shed");
}

#[test]
fn a_descriptor_shortage_is_waited_out_without_spinning() {
    // A connection cap above what the descriptors allow: accept meets EMFILE, backs off,
    // sheds the longest-idle connection, and keeps UDP and the other connections served.
    let server = serve_limited("256:256", &["--max-tcp-connections", "10000"]);
    let name = "web.shop.svc.cluster.local.";
    let mut idle = Vec::new();
    for _ in 0..400 {
        idle.push(TcpStream::connect(server.addr).unwrap());
    }
    std::thread::sleep(Duration::from_millis(500));
    let share = cpu_share(&server, Duration::from_secs(1));
    assert!(share < 0.3, "the server spins: {share:.2} of a core");
    assert_eq!(server.ask_udp(name, "A").rcode, "NOERROR");
    let reply = ask_new_tcp(server.addr, name, Duration::from_secs(5))
        .expect("a new TCP client is answered once descriptors are freed");
    assert_eq!(reply.rcode, "NOERROR");
    assert!(metric(&server, "clusterdns_tcp_accept_errors_total").unwrap() >= 1.0);
}

#[test]
fn forwards_in_flight_are_bounded() {
    // An upstream that never answers, and 600 distinct names forwarded to it under 256
    // descriptors: past the cap, queries are refused at once; the cluster zone keeps being
    // answered over UDP and TCP.
    let blackhole = UdpSocket::bind("127.0.0.1:0").unwrap();
    let corefile = TempCorefile::new(&format!(
        ".:0 {{
    bind 127.0.0.1
    kubernetes cluster.local {{
       objects {{FIXTURES}}/shop.json
    }}
    prometheus 127.0.0.1:0
    forward . {}
}}
",
        blackhole.local_addr().unwrap()
    ));
    let server = TestServer::start_limited(
        "256:256",
        &["serve", "--corefile", corefile.path.to_str().unwrap()],
    );
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    for n in 0..600 {
        let packet = query(&format!("n{n}.example.com."), "A", Some(1232));
        client.send_to(&packet, server.addr).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let name = "web.shop.svc.cluster.local.";
    assert_eq!(server.ask_udp(name, "A").rcode, "NOERROR");
    let reply = ask_new_tcp(server.addr, name, Duration::from_secs(2))
        .expect("a TCP client is answered while forwards are stuck");
    assert_eq!(reply.rcode, "NOERROR");
    let limit = metric(&server, "clusterdns_forward_in_flight_limit").unwrap();
    assert!(limit > 0.0 && limit < 256.0, "{limit}");
    let in_flight = metric(&server, "clusterdns_forward_in_flight").unwrap();
    assert!(in_flight <= limit, "{in_flight} over {limit}");
    assert!(metric(&server, "clusterdns_forward_in_flight_rejects_total").unwrap() >= 1.0);
}

/// A Corefile serving the fixture with `ttl`, and lameduck 5 s.
fn signals_corefile(ttl: u32) -> String {
    format!(
        ".:0 {{
    bind 127.0.0.1
    health 127.0.0.1:0 {{
       lameduck 5s
    }}
    kubernetes cluster.local {{
       ttl {ttl}
       objects {{FIXTURES}}/shop.json
    }}
}}
"
    )
}

fn ttl_of(server: &TestServer) -> u32 {
    server
        .ask_udp("web.shop.svc.cluster.local.", "A")
        .message
        .answers[0]
        .ttl
}

#[test]
fn sigusr1_reloads_the_corefile_and_a_broken_one_keeps_the_running() {
    let corefile = TempCorefile::new(&signals_corefile(30));
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    assert_eq!(ttl_of(&server), 30);
    let changed = signals_corefile(7).replace(
        "{FIXTURES}",
        &crate::common::root().join("fixtures").display().to_string(),
    );
    std::fs::write(&corefile.path, changed).unwrap();
    server.signal("USR1");
    server.wait_log("Corefile reloaded", Duration::from_secs(5));
    assert_eq!(ttl_of(&server), 7);
    std::fs::write(&corefile.path, ".:0 {\n    nonsense\n}\n").unwrap();
    server.signal("USR1");
    server.wait_log("Corefile reload failed", Duration::from_secs(5));
    assert_eq!(ttl_of(&server), 7, "the running configuration stays");
}

#[test]
fn sighup_is_logged_and_ignored() {
    let corefile = TempCorefile::new(&signals_corefile(30));
    let mut server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    server.signal("HUP");
    server.wait_log("SIGHUP", Duration::from_secs(5));
    assert!(server.wait_exit(Duration::from_millis(300)).is_none());
    assert_eq!(ttl_of(&server), 30);
}

#[test]
fn sigquit_exits_at_once_without_lameduck() {
    let corefile = TempCorefile::new(&signals_corefile(30));
    let mut server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    let started = Instant::now();
    server.signal("QUIT");
    let status = server
        .wait_exit(Duration::from_secs(3))
        .expect("exits at once");
    assert!(started.elapsed() < Duration::from_secs(2), "no lameduck");
    assert!(status.success(), "{status:?}");
    assert!(server.log().contains("SIGQUIT"), "{}", server.log());
}

#[test]
fn sigterm_and_sigint_keep_lameduck() {
    for signal in ["TERM", "INT"] {
        let corefile = TempCorefile::new(&signals_corefile(30).replace("5s", "1s"));
        let mut server =
            TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
        let started = Instant::now();
        server.signal(signal);
        server.wait_log("lameduck", Duration::from_secs(5));
        assert_eq!(ttl_of(&server), 30, "answers during lameduck");
        let status = server.wait_exit(Duration::from_secs(5)).expect("exits");
        assert!(status.success(), "{signal}: {status:?}");
        assert!(started.elapsed() >= Duration::from_millis(900), "{signal}");
        // Said once, with the signal.
        let log = server.log();
        assert_eq!(log.matches("shutting down").count(), 1, "{log}");
        assert!(
            log.contains(&format!("SIG{signal}: shutting down")),
            "{log}"
        );
    }
}

/// `clusterdns ARGS...`, given `within` to exit: its status and stderr (`None` if it was
/// still running, and then killed).
fn run_briefly(args: &[&str], within: Duration) -> Option<(std::process::ExitStatus, String)> {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            return Some((status, stderr));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn fifo(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    path
}

/// A start that must fail at once with status 2 and a message naming `path` and `why`.
fn refused(args: &[&str], path: &str, why: &str) {
    let (status, stderr) = run_briefly(args, Duration::from_secs(5))
        .unwrap_or_else(|| panic!("{args:?}: still running after 5 s"));
    assert_eq!(status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(path) && stderr.contains(why),
        "{args:?}: {stderr}"
    );
}

#[test]
fn a_corefile_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo(dir.path());
    let fifo = fifo.to_str().unwrap();
    refused(&["serve", "--corefile", fifo], fifo, "not a regular file");
    refused(
        &["serve", "--corefile", "/dev/zero"],
        "/dev/zero",
        "not a regular file",
    );
    refused(&["-conf", "/dev/zero"], "/dev/zero", "not a regular file");
}

#[test]
fn an_objects_file_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo(dir.path());
    let fifo = fifo.to_str().unwrap();
    for command in ["serve", "records"] {
        let mut args = vec![command, "--objects", fifo];
        if command == "serve" {
            args.extend(["--listen", "127.0.0.1:0"]);
        }
        refused(&args, fifo, "not a regular file");
        args[2] = "/dev/zero";
        refused(&args, "/dev/zero", "not a regular file");
    }
}

#[test]
fn an_unusable_upstream_file_is_a_start_error() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo(dir.path());
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "# no nameserver\n").unwrap();
    let shop = shop();
    for (file, why) in [
        (fifo.to_str().unwrap(), "not a regular file"),
        ("/dev/null", "not a regular file"),
        (dir.path().to_str().unwrap(), "is a directory"),
        (empty.to_str().unwrap(), "nameserver"),
    ] {
        refused(
            &[
                "serve",
                "--objects",
                &shop,
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                file,
            ],
            file,
            why,
        );
    }
}

#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    let shop = shop();
    for args in [
        vec!["records", "--objects", &shop],
        vec!["records", "--objects", &shop, "--format", "json"],
        vec!["query", "web.shop.svc.cluster.local", "--objects", &shop],
        vec!["endpoints", "--objects", &shop],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_clusterdns"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // `| head -0`: the reader is gone before the command writes.
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("clusterdns:") && !stderr.contains("ERROR"),
            "{args:?}: quietly: {stderr}"
        );
        assert!(
            output.status.success() || output.status.code().is_none(),
            "{args:?}: {:?}",
            output.status
        );
    }
}

/// A query for `web.shop.svc.cluster.local. A` with these section counts (an, ns, ar) and
/// `records` after the question.
fn raw_query(counts: [u16; 3], records: &[u8]) -> Vec<u8> {
    let mut packet = vec![0x12, 0x34, 0x01, 0x00, 0, 1];
    for count in counts {
        packet.extend_from_slice(&count.to_be_bytes());
    }
    for label in ["web", "shop", "svc", "cluster", "local"] {
        packet.push(label.len() as u8);
        packet.extend_from_slice(label.as_bytes());
    }
    packet.extend_from_slice(&[0, 0, 1, 0, 1]);
    packet.extend_from_slice(records);
    packet
}

/// An OPT record (payload 1232) with `rdata`.
fn opt(rdata: &[u8]) -> Vec<u8> {
    let mut record = vec![0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0];
    record.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    record.extend_from_slice(rdata);
    record
}

fn rcode_of(reply: &[u8]) -> u8 {
    reply[3] & 0x0f
}

#[test]
fn odd_queries_get_the_same_answer_over_udp_and_tcp() {
    let server = serve_limited("1024:1024", &[]);
    let question_end = raw_query([0, 0, 0], &[]).len();
    // A record whose owner is a pointer to itself.
    let mut looped = vec![0xc0 | (question_end >> 8) as u8, question_end as u8];
    looped.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 192, 0, 2, 1]);
    let mut tsig = vec![3, b'k', b'e', b'y', 0, 0, 250, 0, 255, 0, 0, 0, 0];
    let mut tsig_rdata = b"\x0bhmac-sha256\x00".to_vec();
    tsig_rdata.extend_from_slice(&[0, 0, 0x65, 0, 0, 0, 1, 44, 0, 0, 0x12, 0x34, 0, 0, 0, 0]);
    tsig.extend_from_slice(&(tsig_rdata.len() as u16).to_be_bytes());
    tsig.extend_from_slice(&tsig_rdata);
    let cases: [(&str, Vec<u8>, u8); 6] = [
        ("a plain query", raw_query([0, 0, 1], &opt(&[])), 0),
        (
            "an EDNS option overrunning its OPT record (RFC 6891 6.1.2)",
            raw_query([0, 0, 1], &opt(&[0, 10, 0, 8])),
            1,
        ),
        (
            "ECS with an unknown family: an option clusterdns does not implement, ignored",
            raw_query([0, 0, 1], &opt(&[0, 8, 0, 4, 0, 3, 0, 0])),
            0,
        ),
        (
            "an unsigned TSIG: TSIG is not implemented, the record is ignored",
            raw_query([0, 0, 1], &tsig),
            0,
        ),
        (
            "an OPT in the answer section (RFC 6891 6.1.1)",
            raw_query([1, 0, 0], &opt(&[])),
            1,
        ),
        (
            "a compression loop in an additional record",
            raw_query([0, 0, 1], &looped),
            1,
        ),
    ];
    for (what, packet, rcode) in cases {
        let udp = server.udp(&packet);
        let mut framed = (packet.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&packet);
        let tcp = server.tcp_messages_raw(&framed, 1).remove(0);
        assert_eq!(rcode_of(&udp), rcode, "{what}: over UDP");
        assert_eq!(rcode_of(&tcp), rcode, "{what}: over TCP");
        assert_eq!(udp[..4], tcp[..4], "{what}: the same header");
    }
}

#[test]
fn tcp_drops_responses_and_empty_frames_and_answers_what_follows() {
    let server = serve_limited("1024:1024", &[]);
    let good = raw_query([0, 0, 0], &[]);
    // A response (QR=1) hickory cannot parse: garbage after the header.
    let mut response = vec![0x55, 0x55, 0x80, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    response.extend_from_slice(&[0xff; 7]);
    let mut stream = Vec::new();
    for message in [&response[..], &[][..], &good[..]] {
        stream.extend_from_slice(&(message.len() as u16).to_be_bytes());
        stream.extend_from_slice(message);
    }
    let replies = server.tcp_messages_raw(&stream, 1);
    assert_eq!(
        replies[0][..2],
        [0x12, 0x34],
        "the query behind them is answered"
    );
    assert_eq!(rcode_of(&replies[0]), 0);
    // And over UDP the response gets nothing either.
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    socket.send_to(&response, server.addr).unwrap();
    let mut buf = [0u8; 512];
    assert!(
        socket.recv_from(&mut buf).is_err(),
        "no reply to a response"
    );
}

/// A server on `port` (0: any) serving the fixture and forwarding the rest to `upstream`
/// as kubeadm does, without *loop*; its log if it did not start.
fn forwarding_server(
    port: u16,
    upstream: SocketAddr,
) -> Result<(TestServer, TempCorefile), String> {
    let corefile = TempCorefile::new(&format!(
        ".:{port} {{
    bind 127.0.0.1
    kubernetes cluster.local {{
       objects {{FIXTURES}}/shop.json
    }}
    prometheus 127.0.0.1:0
    forward . {upstream} {{
       max_concurrent 1000
    }}
}}
"
    ));
    let server = TestServer::try_start(&["serve", "--corefile", corefile.path.to_str().unwrap()])?;
    Ok((server, corefile))
}

/// What a server's `coredns_dns_requests_total` series add up to.
fn requests_total(server: &TestServer) -> f64 {
    let (_, body) = http_get(server.http_addr("metrics"), "/metrics");
    body.lines()
        .filter(|line| line.starts_with("coredns_dns_requests_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn two_servers_forwarding_to_each_other_answer_servfail_at_once() {
    // b's port is chosen first, for a to point at it; a, on any port, may take it.
    let ((a, _a_file), (b, _b_file), port_b) = on_free_ports(|[port_b]| {
        let a = forwarding_server(0, SocketAddr::from(([127, 0, 0, 1], port_b)))?;
        let b = forwarding_server(port_b, a.0.addr)?;
        Ok((a, b, port_b))
    });
    assert_eq!(b.addr.port(), port_b);
    let started = Instant::now();
    let reply = a.ask_udp("loop.example.com.", "A");
    assert_eq!(reply.rcode, "SERVFAIL");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "answered at once, not after the deadline: {:?}",
        started.elapsed()
    );
    std::thread::sleep(Duration::from_millis(200));
    let total = requests_total(&a) + requests_total(&b);
    assert!(total <= 6.0, "one query became {total}");
    // The cluster zone is answered as ever.
    assert_eq!(
        a.ask_udp("web.shop.svc.cluster.local.", "A").rcode,
        "NOERROR"
    );
}

#[test]
fn two_clients_asking_the_same_name_at_once_is_not_a_loop() {
    let runtime = crate::common::runtime(1);
    let upstream = runtime.block_on(crate::common::upstream::TestUpstream::start(
        crate::common::upstream::Behaviour::Delay(Duration::from_millis(500)),
    ));
    let (server, _file) = forwarding_server(0, upstream.addr).unwrap();
    let packet = query("same.example.com.", "A", Some(1232));
    // Two clients, neither of them the upstream's address (127.0.0.1).
    let clients: Vec<UdpSocket> = ["127.0.0.2:0", "127.0.0.3:0"]
        .into_iter()
        .map(|addr| UdpSocket::bind(addr).unwrap())
        .collect();
    for client in &clients {
        client.send_to(&packet, server.addr).unwrap();
    }
    for client in &clients {
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 1232];
        let (len, _) = client.recv_from(&mut buf).unwrap();
        assert_eq!(Reply::decode(&buf[..len]).rcode, "NOERROR");
    }
}
