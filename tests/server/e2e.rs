//! The real binary on port 0, asked over real sockets.

use std::process::Command;
use std::time::{Duration, Instant};

use hickory_proto::op::Message;

use crate::common::binary::TestServer;
use crate::common::cli::clusterdns;
use crate::common::{TempCorefile, expect, fixture, lines, query};

fn serve_shop() -> TestServer {
    let shop = fixture("shop.json");
    TestServer::start(&[
        "serve",
        "--objects",
        shop.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ])
}

/// The seed lesson's questions, over UDP and over TCP: the same answers both ways.
#[test]
fn seed_questions_over_udp_and_tcp() {
    let server = serve_shop();
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "web-headless.shop.svc.cluster.local.",
            "A",
            "NOERROR",
            &[
                "web-headless.shop.svc.cluster.local. 30 IN A 10.244.1.5",
                "web-headless.shop.svc.cluster.local. 30 IN A 10.244.1.6",
                "web-headless.shop.svc.cluster.local. 30 IN A 10.244.2.7",
            ],
        ),
        (
            "_pg._tcp.db.shop.svc.cluster.local.",
            "SRV",
            "NOERROR",
            &[
                "_pg._tcp.db.shop.svc.cluster.local. 30 IN SRV 0 50 5432 db-0.db.shop.svc.cluster.local.",
                "_pg._tcp.db.shop.svc.cluster.local. 30 IN SRV 0 50 5432 db-1.db.shop.svc.cluster.local.",
            ],
        ),
        (
            "20.0.96.10.in-addr.arpa.",
            "PTR",
            "NOERROR",
            &["20.0.96.10.in-addr.arpa. 30 IN PTR web.shop.svc.cluster.local."],
        ),
        (
            "10-244-1-5.shop.pod.cluster.local.",
            "A",
            "NOERROR",
            &["10-244-1-5.shop.pod.cluster.local. 30 IN A 10.244.1.5"],
        ),
        (
            "web.shop.svc.cluster.local.",
            "A",
            "NOERROR",
            &["web.shop.svc.cluster.local. 30 IN A 10.96.0.20"],
        ),
        ("web.shop.svc.cluster.local.", "AAAA", "NOERROR", &[]),
        ("nope.shop.svc.cluster.local.", "A", "NXDOMAIN", &[]),
        (
            "kube-dns.kube-system.svc.cluster.local.",
            "A",
            "NOERROR",
            &["kube-dns.kube-system.svc.cluster.local. 30 IN A 10.96.0.10"],
        ),
    ];
    for &(name, qtype, rcode, answer) in cases {
        let udp = server.ask_udp(name, qtype);
        let tcp = server.ask_tcp(name, qtype);
        assert_eq!(
            (udp.rcode.as_str(), &udp.answer),
            (rcode, &expect(answer)),
            "UDP {name} {qtype}"
        );
        assert_eq!(
            (
                &tcp.rcode,
                &tcp.answer,
                &tcp.authority,
                &tcp.additional,
                tcp.authoritative
            ),
            (
                &udp.rcode,
                &udp.answer,
                &udp.authority,
                &udp.additional,
                udp.authoritative
            ),
            "TCP and UDP differ for {name} {qtype}"
        );
    }
    let nx = server.ask_udp("nope.shop.svc.cluster.local.", "A");
    assert_eq!(
        nx.authority,
        expect(&[
            "cluster.local. 30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. SERIAL 7200 1800 86400 30"
        ])
    );
}

#[test]
fn tcp_connection_carries_several_queries() {
    let server = serve_shop();
    let mut packet = Vec::new();
    for name in [
        "web.shop.svc.cluster.local.",
        "db.shop.svc.cluster.local.",
        "nope.shop.svc.cluster.local.",
    ] {
        let q = query(name, "A", None);
        packet.extend_from_slice(&(q.len() as u16).to_be_bytes());
        packet.extend_from_slice(&q);
    }
    // Three framed queries in one write: pipelined, answered in order.
    let messages = server.tcp_messages_raw(&packet, 3);
    assert_eq!(messages.len(), 3);
    let rcodes: Vec<String> = messages
        .iter()
        .map(|m| crate::common::Reply::decode(m).rcode)
        .collect();
    assert_eq!(rcodes, ["NOERROR", "NOERROR", "NXDOMAIN"]);
}

#[test]
fn zone_transfer_over_tcp_matches_records() {
    let corefile = TempCorefile::new(
        ".:0 {\n bind 127.0.0.1\n kubernetes cluster.local in-addr.arpa {\n  pods insecure\n  ttl 30\n  objects {FIXTURES}/shop.json\n }\n transfer {\n  to 127.0.0.1\n }\n}\n",
    );
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    let messages = server.tcp_messages(&query("cluster.local.", "AXFR", None), |messages| {
        let soas: usize = messages
            .iter()
            .map(|m| {
                Message::from_vec(m)
                    .unwrap()
                    .answers
                    .iter()
                    .filter(|r| r.record_type().is_soa())
                    .count()
            })
            .sum();
        soas >= 2
    });
    let mut records = Vec::new();
    for message in &messages {
        records.extend(Message::from_vec(message).unwrap().answers);
    }
    assert!(
        records.first().unwrap().record_type().is_soa()
            && records.last().unwrap().record_type().is_soa()
    );
    let transferred = lines(&records[..records.len() - 1]);
    let listed = records_of(&corefile, "cluster.local");
    assert_eq!(transferred, listed, "AXFR and `records` differ");
    // IXFR from the current serial: the SOA alone.
    let serial = match &records[0].data {
        hickory_proto::rr::RData::SOA(soa) => soa.serial,
        _ => unreachable!(),
    };
    let mut ixfr = Message::from_vec(&query("cluster.local.", "IXFR", None)).unwrap();
    let soa = records[0].clone();
    ixfr.authorities.push(soa);
    let replies = server.tcp_messages(&ixfr.to_vec().unwrap(), |m| !m.is_empty());
    let reply = Message::from_vec(&replies[0]).unwrap();
    assert_eq!(reply.answers.len(), 1, "IXFR at serial {serial}: SOA only");
}

/// `records --format zone` for one zone, as normalized lines.
fn records_of(corefile: &TempCorefile, zone: &str) -> Vec<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args([
            "records",
            "--corefile",
            corefile.path.to_str().unwrap(),
            "--zone",
            zone,
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter(|line| !line.starts_with('$') && !line.is_empty())
        .map(crate::common::normalize)
        .collect();
    lines.sort();
    lines
}

#[test]
fn objects_changes_are_served_and_bad_reloads_keep_the_last_good_zone() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects.json");
    let original = std::fs::read_to_string(fixture("shop.json")).unwrap();
    std::fs::write(&objects, &original).unwrap();
    let server = TestServer::start(&[
        "serve",
        "--objects",
        objects.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    let serial = |server: &TestServer| -> String {
        let reply = server.udp(&query("cluster.local.", "SOA", None));
        match &Message::from_vec(&reply).unwrap().answers[0].data {
            hickory_proto::rr::RData::SOA(soa) => soa.serial.to_string(),
            _ => unreachable!(),
        }
    };
    let before = serial(&server);
    assert_eq!(
        server
            .ask_udp("web.shop.svc.cluster.local.", "A")
            .answer
            .len(),
        1
    );

    // A change: web's ClusterIP moves. Written by rename, as editors and ConfigMaps do, in
    // a later second than the first file: the serial is the file's modification time, in
    // seconds (changes within one second share it). The kernel stamps files from its coarse
    // clock, a few milliseconds behind this one: wait for a tenth of a second past the turn.
    let next_second = Duration::from_secs(before.parse::<u64>().unwrap() + 1);
    while std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        < next_second + Duration::from_millis(100)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let changed = original.replace("10.96.0.20", "10.96.0.21");
    let staged = dir.path().join(".objects.json.tmp");
    std::fs::write(&staged, &changed).unwrap();
    std::fs::rename(&staged, &objects).unwrap();
    let want = expect(&["web.shop.svc.cluster.local. 30 IN A 10.96.0.21"]);
    wait_for(
        || server.ask_udp("web.shop.svc.cluster.local.", "A").answer == want,
        &server,
    );
    let after = serial(&server);
    assert!(
        after.parse::<u64>().unwrap() > before.parse::<u64>().unwrap(),
        "serial {before} -> {after}"
    );

    // A broken file: the last good zone stays, and the log says why.
    std::fs::write(&objects, "{\"kind\": \"List\", \"items\": [").unwrap();
    let failure = reload_failure(&server);
    assert!(
        failure.contains(&format!("{}:1:27: invalid JSON", objects.display())),
        "the reload error names the file and the place: {failure}"
    );
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        want
    );
    assert_eq!(serial(&server), after);
}

/// The log line of the first failed objects reload, once there is one.
fn reload_failure(server: &TestServer) -> String {
    wait_for(|| server.log().contains("objects reload failed"), server);
    let log = server.log();
    log.lines()
        .find(|line| line.contains("objects reload failed"))
        .unwrap()
        .to_owned()
}

/// The Corefile's `objects` files are watched the same way: a rewrite with bad JSON, and
/// then with an object of the wrong shape, is logged with the file (as the Corefile names
/// it, relative to the Corefile's directory) and the line or JSON path, as a bad file at
/// start is; the last good zone is still served.
#[test]
fn a_bad_reload_of_a_corefile_objects_file_names_the_file() {
    let corefile = TempCorefile::new(
        ".:0 {\n bind 127.0.0.1\n kubernetes cluster.local {\n  objects shop.json\n }\n}\n",
    );
    let objects = corefile.dir.path().join("shop.json");
    std::fs::copy(fixture("shop.json"), &objects).unwrap();
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    let want = expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"]);
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        want
    );

    std::fs::write(&objects, "{\"kind\": \"List\",\n \"items\": [").unwrap();
    let failure = reload_failure(&server);
    assert!(
        failure.contains(&format!("{}:2:11: invalid JSON", objects.display())),
        "the reload error names the file and the place: {failure}"
    );
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        want
    );

    std::fs::write(
        &objects,
        r#"{"kind": "List", "items": [{"kind": "Service", "apiVersion": "v1", "metadata": {"name": "x", "namespace": "y"}, "spec": {"ports": "bad"}}]}"#,
    )
    .unwrap();
    let wrong_shape = format!("{}: items[0] (Service y/x): spec.ports:", objects.display());
    server.wait_log(&wrong_shape, Duration::from_secs(10));
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        want
    );
}

fn wait_for(mut condition: impl FnMut() -> bool, server: &TestServer) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "timed out; log:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn coredns_conf_flag_starts_the_server() {
    let corefile = TempCorefile::new(
        ".:0 {\n bind 127.0.0.1\n kubernetes cluster.local {\n  objects {FIXTURES}/shop.json\n }\n}\n",
    );
    let server = TestServer::start(&["-conf", corefile.path.to_str().unwrap()]);
    let reply = server.ask_udp("web.shop.svc.cluster.local.", "A");
    assert_eq!(
        reply.answer,
        expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"])
    );
}

/// Runs the binary and returns (exit code, stderr).
fn run(args: &[&str]) -> (i32, String) {
    let run = clusterdns(args);
    (run.code, run.stderr)
}

#[test]
fn bad_input_is_a_clear_error_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"shop"},"spec":{"ports":[{"port":70000}]}}]}"#,
    )
    .unwrap();
    let (code, stderr) = run(&[
        "serve",
        "--objects",
        bad.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(code, 2, "{stderr}");
    for part in [
        "bad.json",
        "items[0]",
        "shop/web",
        "spec.ports[0].port",
        "70000",
    ] {
        assert!(stderr.contains(part), "{part} missing from: {stderr}");
    }

    let corefile = dir.path().join("Corefile");
    std::fs::write(
        &corefile,
        ".:53 {\n  kubernetes cluster.local {\n    podz insecure\n  }\n}\n",
    )
    .unwrap();
    let (code, stderr) = run(&["serve", "--corefile", corefile.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(":3:") && stderr.contains("podz"),
        "{stderr}"
    );

    let (code, stderr) = run(&[
        "records",
        "--objects",
        dir.path().join("missing.json").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("missing.json"), "{stderr}");
}

/// Runs the binary: (exit code, stdout, stderr).
fn run_all(args: &[&str]) -> (i32, String, String) {
    let run = clusterdns(args);
    (run.code, run.stdout, run.stderr)
}

/// Each message says what the user wrote, where, and what is wrong with it, in words.
#[test]
fn error_messages_say_what_the_user_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().unwrap();

    // A missing --objects file: the flag and the file, not a line of a Corefile never written.
    for command in ["records", "endpoints"] {
        let (code, _, stderr) = run_all(&[command, "--objects", missing]);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains(&format!("--objects {missing}: No such file")),
            "{command}: {stderr}"
        );
        assert!(!stderr.contains("(line"), "{command}: {stderr}");
    }

    // An objects error inside a Corefile names the Corefile and its line; a Rust type does
    // not leak into it.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"shop"},"spec":{"ports":[{"port":"eighty"}]}}]}"#,
    )
    .unwrap();
    let corefile = dir.path().join("Corefile");
    std::fs::write(
        &corefile,
        format!(
            ".:53 {{\n  kubernetes cluster.local {{\n    objects {}\n  }}\n}}\n",
            bad.display()
        ),
    )
    .unwrap();
    let (code, _, stderr) = run_all(&["records", "--corefile", corefile.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("{}:2: kubernetes: objects ", corefile.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("spec.ports[0].port") && stderr.contains("expected a whole number"),
        "{stderr}"
    );
    assert!(!stderr.contains("i32"), "{stderr}");

    // `import` of a path that does not exist: the file, not a snippet.
    std::fs::write(&corefile, ".:53 {\n  import /nonexistent/x\n}\n").unwrap();
    let (code, _, stderr) = run_all(&["records", "--corefile", corefile.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("file /nonexistent/x does not exist") && !stderr.contains("snippet"),
        "{stderr}"
    );

    // A /33 prefix is too long, not "invalid IP address syntax".
    let (code, _, stderr) = run_all(&[
        "proxy",
        "render",
        "--mode",
        "iptables",
        "--objects",
        "fixtures/shop.json",
        "--cluster-cidr",
        "10.244.0.0/33",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("prefix length 33 is too long (an IPv4 prefix is at most 32)"),
        "{stderr}"
    );
    // The same in a Corefile's reverse-zone key.
    std::fs::write(&corefile, "fd00::/129:53 {\n  whoami\n}\n").unwrap();
    let (code, _, stderr) = run_all(&["records", "--corefile", corefile.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "'fd00::/129': prefix length 129 is too long (an IPv6 prefix is at most 128)"
        ),
        "{stderr}"
    );

    // A namespace name is an RFC 1123 label.
    for command in [
        &["resolv-conf", "--namespace", "Shop_1"][..],
        &["resolve-cost", "web", "--namespace", "Shop_1"],
    ] {
        let (code, _, stderr) = run_all(command);
        assert_eq!(code, 2, "{command:?}: {stderr}");
        assert!(
            stderr.contains("--namespace 'Shop_1' is not a namespace name (an RFC 1123 label"),
            "{command:?}: {stderr}"
        );
    }

    // An --ndots past what resolvers take is used as 15, with a warning.
    let (code, stdout, stderr) = run_all(&[
        "resolve-cost",
        "web",
        "--namespace",
        "shop",
        "--ndots",
        "20",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("ndots:15"), "{stdout}");
    assert!(
        stderr.contains("warning: --ndots 20 is more than 15"),
        "{stderr}"
    );

    // `-n` is `--namespace`, as in kubectl and the other commands.
    for command in [&["resolve-cost", "web"][..], &["resolv-conf"]] {
        let long = run_all(&[command, &["--namespace", "shop"]].concat());
        let short = run_all(&[command, &["-n", "shop"]].concat());
        assert_eq!(long.0, 0, "{command:?}: {}", long.2);
        assert_eq!(short, long, "{command:?}");
    }

    // One endpoint is one endpoint.
    let one = dir.path().join("one.json");
    std::fs::write(
        &one,
        r#"{"apiVersion":"v1","kind":"List","items":[
        {"apiVersion":"v1","kind":"Service","metadata":{"name":"solo","namespace":"shop"},
         "spec":{"clusterIP":"10.96.0.50","ports":[{"name":"http","port":80,"protocol":"TCP"}]}},
        {"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
         "metadata":{"name":"solo-a","namespace":"shop","labels":{"kubernetes.io/service-name":"solo"}},
         "addressType":"IPv4","ports":[{"name":"http","port":8080,"protocol":"TCP"}],
         "endpoints":[{"addresses":["10.244.1.9"],"conditions":{"ready":true}}]}]}"#,
    )
    .unwrap();
    let (_, stdout, stderr) =
        run_all(&["explain", "shop/solo", "--objects", one.to_str().unwrap()]);
    assert!(
        stdout.contains("solo-a (IPv4): 1 endpoint, 1 ready"),
        "{stdout}{stderr}"
    );
}

/// `query` asks a name as given: a short name a pod would complete through its search path
/// is not in the zone, says so, points to resolve-cost, and exits 1.
#[test]
fn query_with_a_short_name_points_to_resolve_cost() {
    for (name, reaches) in [
        (
            "web.shop",
            ", and reaches web.shop.svc.cluster.local (clusterdns query \
             web.shop.svc.cluster.local).",
        ),
        ("web", " (from namespace NS: web.NS.svc.cluster.local)."),
    ] {
        let (code, stdout, stderr) = run_all(&[
            "query",
            name,
            "--objects",
            "fixtures/shop.json",
            "--upstream",
            "none",
        ]);
        assert_eq!(code, 1, "{name}: {stdout}{stderr}");
        assert!(
            stderr.contains(&format!("{name} is not in the cluster zone"))
                && stderr.contains(reaches),
            "{name}: {stderr}"
        );
        assert!(
            stderr.contains(&format!("clusterdns resolve-cost {name} -n NS\n")),
            "{name}: {stderr}"
        );
        assert!(!stderr.contains(".."), "{name}: {stderr}");
    }
    // A name outside the zone that is not short is still asked as given.
    let (code, stdout, _) = run_all(&[
        "query",
        "example.com.",
        "--objects",
        "fixtures/shop.json",
        "--upstream",
        "none",
    ]);
    assert_eq!(code, 0);
    assert!(stdout.contains("status: REFUSED"), "{stdout}");
}

#[test]
fn query_prints_like_dig() {
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args([
            "query",
            "web.shop.svc.cluster.local",
            "--objects",
            fixture("shop.json").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success());
    assert!(
        text.contains(";; ->>HEADER<<- opcode: QUERY, status: NOERROR"),
        "{text}"
    );
    assert!(
        text.contains(";; flags: qr aa rd; QUERY: 1, ANSWER: 1, AUTHORITY: 0"),
        "{text}"
    );
    assert!(
        text.contains(";; ANSWER SECTION:\nweb.shop.svc.cluster.local.\t30\tIN\tA\t10.96.0.20"),
        "{text}"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args([
            "query",
            "nope.shop.svc.cluster.local",
            "-t",
            "aaaa",
            "--objects",
            fixture("shop.json").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("status: NXDOMAIN")
            && text.contains(";; AUTHORITY SECTION:\ncluster.local.\t30\tIN\tSOA"),
        "{text}"
    );
}

#[test]
fn a_block_without_bind_answers_both_families() {
    let corefile = TempCorefile::new(
        ".:0 {\n log\n kubernetes cluster.local {\n  objects {FIXTURES}/shop.json\n }\n}\n",
    );
    let server = TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()]);
    let want = expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"]);
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        want
    );
    // The IPv4 client is logged as one, not as `::ffff:127.0.0.1`.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.stdout().contains("[INFO] 127.0.0.1:") {
        assert!(
            Instant::now() < deadline,
            "no log line: {}",
            server.stdout()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!server.stdout().contains("::ffff:"), "{}", server.stdout());
    // Where the host has IPv6, the same block answers on it too, UDP and TCP.
    let Ok(socket) = std::net::UdpSocket::bind("[::1]:0") else {
        return;
    };
    assert!(
        server.log().contains("listening on udp [::]:"),
        "{}",
        server.log()
    );
    let v6 = std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, server.addr.port()));
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    socket
        .send_to(&query("web.shop.svc.cluster.local.", "A", None), v6)
        .unwrap();
    let mut buf = [0u8; 512];
    let (len, _) = socket.recv_from(&mut buf).expect("an answer over IPv6");
    assert_eq!(crate::common::Reply::decode(&buf[..len]).answer, want);
    assert!(std::net::TcpStream::connect(v6).is_ok(), "TCP on IPv6");
}

#[test]
fn services_in_namespaces_the_input_does_not_list_are_served() {
    // The input lists the `shop` Namespace only; `batch` has a Service and no Namespace
    // object. CoreDNS serves a Service whatever its Namespace object: so do we, and say so.
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects.json");
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
         "spec": {"clusterIP": "10.96.0.20", "ports": [{"port": 80}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "jobs", "namespace": "batch"},
         "spec": {"clusterIP": "10.96.0.30", "ports": [{"port": 80}]}},
    ]});
    std::fs::write(&objects, list.to_string()).unwrap();
    let server = TestServer::start(&[
        "serve",
        "--objects",
        objects.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(
        server.ask_udp("jobs.batch.svc.cluster.local.", "A").answer,
        expect(&["jobs.batch.svc.cluster.local. 30 IN A 10.96.0.30"])
    );
    assert_eq!(
        server.ask_udp("web.shop.svc.cluster.local.", "A").answer,
        expect(&["web.shop.svc.cluster.local. 30 IN A 10.96.0.20"])
    );
    let log = server.log();
    assert_eq!(
        log.matches("not in the input").count(),
        1,
        "said once:\n{log}"
    );
    assert!(log.contains("batch"), "{log}");
}

/// A bad Corefile is named once, with its line, and a misspelt directive gets the one meant.
#[test]
fn a_misspelt_directive_is_named_once_with_the_one_meant() {
    let corefile =
        crate::common::root().join("tests/fixtures/corefiles/invalid/misspelt-directive.Corefile");
    let (code, _, stderr) = run_all(&["serve", "--corefile", corefile.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "clusterdns: {}:4: unknown directive 'loadbalence'; did you mean 'loadbalance'?\n",
            corefile.display()
        )
    );
}

/// Each command takes only the flags it uses: the server's listeners are `serve`'s alone,
/// and the tools refuse them rather than ignore them.
#[test]
fn the_tools_do_not_take_the_servers_flags() {
    for command in ["query", "records"] {
        let (_, help, _) = run_all(&[command, "--help"]);
        for flag in ["--listen", "--health", "--ready", "--metrics"] {
            assert!(
                !help.contains(flag),
                "{command} --help lists {flag}:\n{help}"
            );
        }
        let (code, _, stderr) = run_all(&[
            command,
            "--objects",
            "fixtures/shop.json",
            "--listen",
            "127.0.0.1:1",
        ]);
        assert_eq!(code, 2, "{command}: {stderr}");
        assert!(
            stderr.contains("unexpected argument '--listen'"),
            "{command}: {stderr}"
        );
    }
    let (_, help, _) = run_all(&["serve", "--help"]);
    assert!(
        help.contains("--listen") && help.contains("--context"),
        "{help}"
    );
}
