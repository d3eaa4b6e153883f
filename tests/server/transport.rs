//! The transports of the real binary under the shapes of traffic their batching must keep
//! whole: bursts longer than one UDP batch, pipelined TCP with an upstream in the middle,
//! messages split across reads, a client that half-closes, and one UDP socket per CPU the
//! process may use.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::binary::TestServer;
use crate::common::netns::{self, Fresh, Missing};
use crate::common::upstream::{Behaviour, TestUpstream};
use crate::common::{Reply, TempCorefile, expect, query, runtime};

/// A Corefile serving the shop fixture, every other name forwarded to `upstream`.
fn corefile(upstream: SocketAddr) -> TempCorefile {
    TempCorefile::new(&format!(
        ".:0 {{\n bind 127.0.0.1\n kubernetes cluster.local in-addr.arpa {{\n  objects {{FIXTURES}}/shop.json\n }}\n forward . {upstream}\n}}\n"
    ))
}

fn serve(corefile: &TempCorefile) -> TestServer {
    TestServer::start(&["serve", "--corefile", corefile.path.to_str().unwrap()])
}

/// `query` with the message ID `id`.
fn query_with_id(name: &str, qtype: &str, id: u16) -> Vec<u8> {
    let mut packet = query(name, qtype, Some(1232));
    packet[..2].copy_from_slice(&id.to_be_bytes());
    packet
}

/// The questions of client `client`'s burst, cycling through a cluster-zone answer, a miss,
/// a reverse name and a forwarded name, with what each must answer. Forwarded names differ
/// between clients: the same name asked from 127.0.0.1 while it is being forwarded to
/// 127.0.0.1 is what *forward*'s loop detection takes for a loop.
fn burst_question(
    client: usize,
    index: usize,
) -> (String, &'static str, Vec<String>, &'static str) {
    match index % 4 {
        0 => (
            "web.shop.svc.cluster.local.".to_owned(),
            "A",
            expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"]),
            "NOERROR",
        ),
        1 => (
            "nope.shop.svc.cluster.local.".to_owned(),
            "A",
            Vec::new(),
            "NXDOMAIN",
        ),
        2 => (
            "20.0.96.10.in-addr.arpa.".to_owned(),
            "PTR",
            expect(&["20.0.96.10.in-addr.arpa. 5 IN PTR web.shop.svc.cluster.local."]),
            "NOERROR",
        ),
        _ => {
            let name = format!("host{index}.client{client}.example.org.");
            let answer = expect(&[&format!("{name} 60 IN A 192.0.2.1")]);
            (name, "A", answer, "NOERROR")
        }
    }
}

/// Replies read from `socket` by ID until `count` have come or five seconds pass.
fn read_replies(socket: &UdpSocket, count: usize) -> BTreeMap<u16, Reply> {
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut replies = BTreeMap::new();
    let mut buf = vec![0u8; 65535];
    while replies.len() < count && Instant::now() < deadline {
        let Ok(len) = socket.recv(&mut buf) else {
            continue;
        };
        let reply = Reply::decode(&buf[..len]);
        let id = reply.message.metadata.id;
        assert!(
            replies.insert(id, reply).is_none(),
            "query {id} answered twice"
        );
    }
    replies
}

/// Many more queries than one `recvmmsg` takes, all sent before any reply is read, from
/// one client and then from several at once: every query gets its own answer, once.
#[test]
fn a_burst_larger_than_a_batch_gets_every_answer() {
    let rt = runtime(1);
    let upstream = rt.block_on(TestUpstream::start(Behaviour::Answer));
    let corefile = corefile(upstream.addr);
    let server = serve(&corefile);
    // Four batches and a bit, then the same again from four clients together.
    for clients in [1usize, 4] {
        let per_client = if clients == 1 { 4 * 32 + 5 } else { 40 };
        let sockets: Vec<UdpSocket> = (0..clients)
            .map(|_| {
                let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
                socket.connect(server.addr).unwrap();
                socket
            })
            .collect();
        for (client, socket) in sockets.iter().enumerate() {
            for index in 0..per_client {
                let (name, qtype, _, _) = burst_question(client, index);
                socket
                    .send(&query_with_id(&name, qtype, index as u16))
                    .unwrap();
            }
        }
        for (client, socket) in sockets.iter().enumerate() {
            let replies = read_replies(socket, per_client);
            assert_eq!(
                replies.len(),
                per_client,
                "client {client} of {clients}: answered {:?}",
                replies.keys().collect::<Vec<_>>()
            );
            for (id, reply) in &replies {
                let (name, _, answer, rcode) = burst_question(client, usize::from(*id));
                assert_eq!(reply.message.queries[0].name().to_ascii(), name, "id {id}");
                assert_eq!(reply.rcode, rcode, "{name}");
                assert_eq!(reply.answer, answer, "{name}");
            }
        }
    }
    drop(upstream);
}

/// Framed `packet` for TCP.
fn framed(packet: &[u8]) -> Vec<u8> {
    let mut framed = (packet.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(packet);
    framed
}

fn read_framed(stream: &mut TcpStream) -> Reply {
    let mut length = [0u8; 2];
    stream.read_exact(&mut length).expect("tcp reply length");
    let mut message = vec![0u8; usize::from(u16::from_be_bytes(length))];
    stream.read_exact(&mut message).expect("tcp reply");
    Reply::decode(&message)
}

/// Pipelined over one connection, a query that waits for a slow upstream is answered last
/// and the cluster-zone answers behind it do not wait for it; a client that then
/// half-closes still gets the slow one.
#[test]
fn pipelined_tcp_answers_what_is_ready_and_the_upstream_reply_after() {
    let rt = runtime(1);
    let upstream = rt.block_on(TestUpstream::start(Behaviour::Delay(
        Duration::from_millis(300),
    )));
    let corefile = corefile(upstream.addr);
    let server = serve(&corefile);
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut pipelined = framed(&query_with_id("slow.example.org.", "A", 1));
    for (id, name) in [
        (2, "web.shop.svc.cluster.local."),
        (3, "nope.shop.svc.cluster.local."),
        (4, "db.shop.svc.cluster.local."),
    ] {
        pipelined.extend(framed(&query_with_id(name, "A", id)));
    }
    stream.write_all(&pipelined).unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    let order: Vec<(u16, String)> = (0..4)
        .map(|_| {
            let reply = read_framed(&mut stream);
            (reply.message.metadata.id, reply.rcode)
        })
        .collect();
    assert_eq!(
        order,
        [
            (2, "NOERROR".to_owned()),
            (3, "NXDOMAIN".to_owned()),
            (4, "NOERROR".to_owned()),
            (1, "NOERROR".to_owned()),
        ]
    );
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "the server closes after the last reply");
    drop(upstream);
}

/// A message that arrives in pieces — its length split from its body, then a byte at a
/// time — is answered once it is whole, and one that follows in the same piece as the end
/// of the first is answered too.
#[test]
fn tcp_messages_split_across_reads_are_answered_when_whole() {
    let rt = runtime(1);
    let upstream = rt.block_on(TestUpstream::start(Behaviour::Answer));
    let corefile = corefile(upstream.addr);
    let server = serve(&corefile);
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let first = framed(&query_with_id("web.shop.svc.cluster.local.", "A", 7));
    let second = framed(&query_with_id("db.shop.svc.cluster.local.", "A", 8));
    stream.write_all(&first[..1]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    for byte in &first[1..first.len() - 1] {
        stream.write_all(std::slice::from_ref(byte)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    let mut tail = first[first.len() - 1..].to_vec();
    tail.extend_from_slice(&second);
    stream.write_all(&tail).unwrap();
    let replies: Vec<(u16, Vec<String>)> = (0..2)
        .map(|_| {
            let reply = read_framed(&mut stream);
            (reply.message.metadata.id, reply.answer)
        })
        .collect();
    assert_eq!(
        replies,
        [
            (
                7,
                expect(&["web.shop.svc.cluster.local. 5 IN A 10.96.0.20"])
            ),
            (
                8,
                expect(&[
                    "db.shop.svc.cluster.local. 5 IN A 10.244.1.11",
                    "db.shop.svc.cluster.local. 5 IN A 10.244.2.12",
                ])
            ),
        ]
    );
    drop(upstream);
}

/// The UDP sockets bound to `port` on 127.0.0.1, as `ss` reads them from the kernel with
/// the port as its filter. /proc/net/udp is not used: it is read a page at a time, and
/// sockets other tests open and close between two pages shift lines past the reader.
fn udp_sockets_on(port: u16) -> usize {
    let output = Command::new("ss")
        .args(["-H", "-n", "-u", "-a", "src"])
        .arg(format!("127.0.0.1:{port}"))
        .output()
        .expect("ss (iproute2) runs");
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8(output.stdout).unwrap();
    let local = format!("127.0.0.1:{port}");
    table
        .lines()
        .filter(|line| line.split_whitespace().nth(3) == Some(local.as_str()))
        .count()
}

/// One UDP socket (and worker) per CPU the process may run on: pinned to one CPU with
/// taskset, one; on two, two — and both answer.
#[test]
fn one_udp_socket_per_usable_cpu() {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    if Command::new("taskset").arg("-V").output().is_err() {
        eprintln!("taskset not installed: skipped");
        return;
    }
    let shop = crate::common::fixture("shop.json");
    for (mask, expected) in [("0", 1), ("0,1", cpus.min(2))] {
        let mut command = Command::new("taskset");
        command
            .args(["-c", mask])
            .arg(env!("CARGO_BIN_EXE_clusterdns"));
        let server = TestServer::start_with(
            command,
            &[
                "serve",
                "--objects",
                shop.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ],
        );
        assert_eq!(
            udp_sockets_on(server.addr.port()),
            expected,
            "taskset -c {mask}"
        );
        assert!(
            server
                .log()
                .contains(&format!("{expected} udp workers, one socket each")),
            "{}",
            server.log()
        );
        each_socket_answers(&server, 30);
    }
}

/// Asks from eight client sockets, which the kernel spreads over the server's sockets by
/// their ports: each gets web's address, with `ttl`.
fn each_socket_answers(server: &TestServer, ttl: u32) {
    for _ in 0..8 {
        let reply = server.ask_udp("web.shop.svc.cluster.local.", "A");
        assert_eq!(
            reply.answer,
            expect(&[&format!(
                "web.shop.svc.cluster.local. {ttl} IN A 10.96.0.20"
            )])
        );
    }
}

/// *multisocket* sets the count whatever the CPUs: three sockets on the port, each
/// answering; the address's first block decides.
#[test]
fn multisocket_sets_the_udp_sockets_of_the_address() {
    let corefile = TempCorefile::new(
        ".:0 {\n bind 127.0.0.1\n multisocket 3\n kubernetes cluster.local {\n  objects {FIXTURES}/shop.json\n }\n}\n",
    );
    let server = serve(&corefile);
    assert_eq!(udp_sockets_on(server.addr.port()), 3);
    assert!(
        server.log().contains("3 udp workers, one socket each"),
        "{}",
        server.log()
    );
    each_socket_answers(&server, 5);
}

/// On a wildcard bind, a reply leaves from the address its query was sent to, as CoreDNS's
/// do: in a network namespace of its own with two IPv4 and two IPv6 addresses on one link,
/// each address is asked from a client socket bound to the other one and `connect()`ed to
/// the address asked — such a socket, as dig's, takes no reply from any other address; the
/// kernel's own choice of source for the reply would be the client's address. Both the
/// cluster zone's answers (the batched path) and forwarded ones (sent from the runtime),
/// then bursts to all four addresses together, whose batches mix them.
/// Skipped where `ip` or `unshare` is missing or the machine refuses a network namespace.
#[test]
fn wildcard_udp_replies_leave_from_the_address_asked() {
    let test = crate::common::libtest_name(
        module_path!(),
        "wildcard_udp_replies_leave_from_the_address_asked",
    );
    let test = test.as_str();
    if let Some(problem) = netns::missing_tools(&["ip"]) {
        netns::unavailable(test, &problem, Missing::Skip);
        return;
    }
    netns::in_fresh(
        test,
        Fresh::Net,
        Missing::Skip,
        replies_from_the_address_asked,
    );
}

/// The namespace's side of [`wildcard_udp_replies_leave_from_the_address_asked`].
fn replies_from_the_address_asked() {
    let ip = |args: &str| {
        let output = Command::new("ip").args(args.split(' ')).output().unwrap();
        assert!(
            output.status.success(),
            "ip {args}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    ip("link set lo up");
    ip("link add cdns0 type veth peer name cdns1");
    ip("link set cdns0 up");
    ip("link set cdns1 up");
    for address in ["10.77.0.1/24", "10.77.0.2/24"] {
        ip(&format!("addr add {address} dev cdns0"));
    }
    for address in ["fd77::1/64", "fd77::2/64"] {
        ip(&format!("addr add {address} dev cdns0 nodad"));
    }
    let rt = runtime(1);
    let upstream = rt.block_on(TestUpstream::start(Behaviour::Answer));
    let corefile = TempCorefile::new(&format!(
        ".:0 {{\n kubernetes cluster.local {{\n  objects {{FIXTURES}}/shop.json\n }}\n forward . {}\n}}\n",
        upstream.addr
    ));
    let server = serve(&corefile);
    assert!(
        server.log().contains("listening on udp [::]:"),
        "{}",
        server.log()
    );
    let port = server.addr.port();
    let pairs = [
        ("10.77.0.1", "10.77.0.2"),
        ("10.77.0.2", "10.77.0.1"),
        ("fd77::1", "fd77::2"),
        ("fd77::2", "fd77::1"),
    ];
    let mut sockets = Vec::new();
    for (index, (client, asked)) in pairs.into_iter().enumerate() {
        let client: std::net::IpAddr = client.parse().unwrap();
        let asked: std::net::IpAddr = asked.parse().unwrap();
        let socket = UdpSocket::bind((client, 0)).unwrap();
        socket.connect((asked, port)).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        let forwarded = format!("host{index}.example.org.");
        for (name, answer) in [
            (
                "web.shop.svc.cluster.local.",
                "web.shop.svc.cluster.local. 5 IN A 10.96.0.20".to_owned(),
            ),
            (&forwarded, format!("{forwarded} 60 IN A 192.0.2.1")),
        ] {
            socket.send(&query(name, "A", Some(1232))).unwrap();
            let mut buf = vec![0u8; 65535];
            let len = socket.recv(&mut buf).unwrap_or_else(|error| {
                panic!("{name} asked of {asked} from {client}: no reply from {asked} ({error})")
            });
            let reply = Reply::decode(&buf[..len]);
            assert_eq!(reply.answer, expect(&[&answer]), "{name} asked of {asked}");
        }
        sockets.push(socket);
    }
    // Bursts to all four addresses at once, so that batches hold replies from several.
    let per_socket = 48;
    for socket in &sockets {
        for id in 0..per_socket {
            let packet = query_with_id("web.shop.svc.cluster.local.", "A", id);
            socket.send(&packet).unwrap();
        }
    }
    for (socket, (_, asked)) in sockets.iter().zip(pairs) {
        let replies = read_replies(socket, usize::from(per_socket));
        assert_eq!(replies.len(), usize::from(per_socket), "burst to {asked}");
    }
    drop(upstream);
}
