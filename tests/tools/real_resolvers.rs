//! The real stub resolvers against clusterdns: glibc's `getaddrinfo` (through `getent
//! ahosts` and Python's `socket.getaddrinfo`) and musl's (a small C program built with
//! Debian's `musl-gcc`) resolve a table of names in a private network and mount namespace,
//! where clusterdns serves the shop fixture on 127.0.0.1:53 with a `log` directive and a
//! resolv.conf written by `clusterdns resolv-conf` is bind-mounted over /etc/resolv.conf. The
//! queries clusterdns logged must be exactly the ones `resolve-cost --libc glibc|musl`
//! predicted, in order. glibc's and musl's `res_search` (SRV, PTR, TXT, MX lookups) are
//! checked the same way against `resolve-cost --type`.
//!
//! Each test re-runs itself in a fresh network and mount namespace
//! (`common::netns::in_fresh`: `unshare -mn` as root, `unshare -rmn` in a user namespace
//! otherwise). Where the machine refuses namespaces, it fails and says so.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::binary::TestServer;
use crate::common::names::NamesUpstream;
use crate::common::netns::{Fresh, Missing, in_fresh};
use crate::common::{fixture, root};

/// The names outside the cluster zone that exist (as the upstream answers them).
pub(crate) const EXTERNAL: &[&str] = &[
    "example.com",
    "api.example.com",
    "api.partner.example.com",
    "a.api.partner.example.com",
    "a.b.c.api.partner.example.com",
];

/// The node's search domain in the second configuration; the upstream answers SERVFAIL under
/// it.
const BROKEN: &str = "broken.example";

/// The names resolved with the kubelet's resolv.conf: short, namespaced, fully qualified
/// without and with the dot, external with 1–4 dots, five dots (ndots) that exist and do
/// not, NODATA names (the namespace itself; AAAA of an IPv4 Service), a headless Service, pod
/// names, and names that exist nowhere.
const NAMES: &[&str] = &[
    "web",
    "web.shop",
    "web.shop.svc",
    "web.shop.svc.cluster.local",
    "web.shop.svc.cluster.local.",
    "web-headless",
    "db-0.db",
    "10-244-1-5.shop.pod",
    "shop",
    "kube-dns.kube-system",
    "example.com",
    "api.example.com",
    "api.partner.example.com",
    "api.partner.example.com.",
    "a.api.partner.example.com",
    "a.b.c.api.partner.example.com",
    "x.y.z.nowhere.example.com",
    "nope",
    "nope.example.com",
];

#[test]
fn glibc_and_musl_ask_what_resolve_cost_predicts() {
    in_fresh(
        &crate::common::libtest_name(
            module_path!(),
            "glibc_and_musl_ask_what_resolve_cost_predicts",
        ),
        Fresh::NetMount,
        Missing::Fail,
        inside_the_namespace,
    );
}

fn run(program: &str, args: &[&str]) -> std::process::Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program}: {error} (is it installed?)"))
}

pub(crate) fn must(program: &str, args: &[&str]) {
    let output = run(program, args);
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The second configuration: the node adds a search domain whose names fail upstream, and
/// the pod's dnsConfig sets `ndots:2`, `single-request`, `timeout:1`, `attempts:1`.
const NAMES_SINGLE_REQUEST: &[&str] = &[
    "web",
    "db-0.db",
    "api.example.com",
    "nope.example.com",
    "nope",
];

/// The third configuration: the server runs autopath; the client's walk is one name, the
/// server's is the rest.
const NAMES_AUTOPATH: &[&str] = &[
    "web",
    "kube-dns.kube-system",
    "api.partner.example.com",
    "shop",
    "nope",
];

/// A resolv.conf, the names resolved under it, and the server that answers them.
struct Configuration<'s> {
    label: &'static str,
    /// `clusterdns resolv-conf` arguments.
    args: Vec<&'s str>,
    names: &'static [&'static str],
    server: &'s TestServer,
    /// The server runs autopath (predicted with `resolve-cost --autopath`).
    autopath: bool,
}

/// One resolver: a command that resolves its last argument, and the libc it uses.
struct Resolver {
    label: &'static str,
    libc: &'static str,
    command: Vec<String>,
}

fn inside_the_namespace() {
    must("ip", &["link", "set", "lo", "up"]);
    let dir = tempfile::tempdir().unwrap();
    let upstream = NamesUpstream::failing("127.0.0.1:5300".parse().unwrap(), EXTERNAL, &[BROKEN]);

    // The pod's files, bind-mounted over the real ones (in this mount namespace only).
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "127.0.0.1 localhost\n::1 localhost\n").unwrap();
    let nsswitch = dir.path().join("nsswitch.conf");
    std::fs::write(&nsswitch, "hosts: files dns\n").unwrap();
    for (file, over) in [(&hosts, "/etc/hosts"), (&nsswitch, "/etc/nsswitch.conf")] {
        must("mount", &["--bind", file.to_str().unwrap(), over]);
    }
    let node = dir.path().join("node-resolv.conf");
    std::fs::write(&node, format!("nameserver 172.18.0.1\nsearch {BROKEN}\n")).unwrap();
    let kubelet = [
        "resolv-conf",
        "--namespace",
        "shop",
        "--nameserver",
        "127.0.0.1",
    ];
    let single_request = [
        &kubelet[..],
        &[
            "--host-resolv-conf",
            node.to_str().unwrap(),
            "--dns-config",
            r#"{"options":[{"name":"ndots","value":"2"},{"name":"single-request"},{"name":"timeout","value":"1"},{"name":"attempts","value":"1"}]}"#,
        ],
    ]
    .concat();
    // The third: clusterdns with CoreDNS's autopath on 127.0.0.2 (the resolvers ask from
    // 127.0.0.1, the address of the `client` pod in shop).
    let autopath = [&kubelet[..4], &["127.0.0.2"]].concat();

    let corefile = |bind: &str, autopath: &str, objects: &str| {
        let path = dir.path().join(format!("Corefile-{bind}"));
        std::fs::write(
            &path,
            format!(
                ".:53 {{\n    bind {bind}\n    log\n{autopath}    kubernetes cluster.local in-addr.arpa ip6.arpa {{\n        pods {}\n        fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n        objects {objects}\n    }}\n    forward . {}\n}}\n",
                if autopath.is_empty() { "insecure" } else { "verified" },
                upstream.addr
            ),
        )
        .unwrap();
        path
    };
    let shop = format!("\"{}\"", fixture("shop.json").display());
    let clients = format!(
        "{shop} \"{}\"",
        root()
            .join("tests/fixtures/autopath-clients.json")
            .display()
    );
    let plain = corefile("127.0.0.1", "", &shop);
    let with_autopath = corefile(
        "127.0.0.2",
        "    autopath @kubernetes {\n        search\n    }\n",
        &clients,
    );
    let server = TestServer::start(&["serve", "--corefile", plain.to_str().unwrap()]);
    assert_eq!(server.addr, "127.0.0.1:53".parse::<SocketAddr>().unwrap());
    let autopath_server =
        TestServer::start(&["serve", "--corefile", with_autopath.to_str().unwrap()]);
    assert_eq!(
        autopath_server.addr,
        "127.0.0.2:53".parse::<SocketAddr>().unwrap()
    );

    let configurations = [
        Configuration {
            label: "the kubelet's resolv.conf",
            args: kubelet.to_vec(),
            names: NAMES,
            server: &server,
            autopath: false,
        },
        Configuration {
            label: "ndots:2, single-request, a failing node search domain",
            args: single_request,
            names: NAMES_SINGLE_REQUEST,
            server: &server,
            autopath: false,
        },
        Configuration {
            label: "autopath on the server",
            args: autopath,
            names: NAMES_AUTOPATH,
            server: &autopath_server,
            autopath: true,
        },
    ];

    let musl = build_musl_program(dir.path());
    let resolvers = [
        Resolver {
            label: "getent ahosts (glibc)",
            libc: "glibc",
            command: vec!["getent".into(), "ahosts".into()],
        },
        Resolver {
            label: "python3 getaddrinfo (glibc)",
            libc: "glibc",
            command: vec![
                "python3".into(),
                "-c".into(),
                "import socket, sys\ntry:\n    socket.getaddrinfo(sys.argv[1], None)\nexcept socket.gaierror:\n    sys.exit(2)".into(),
            ],
        },
        Resolver {
            label: "musl getaddrinfo",
            libc: "musl",
            command: vec![musl.display().to_string()],
        },
    ];

    let mut marker = 0;
    let mut seen = [0, 0];
    let mut failures = Vec::new();
    let mut checked = 0;
    for configuration in &configurations {
        let Configuration {
            label,
            args,
            names,
            server,
            autopath,
        } = configuration;
        let seen = &mut seen[usize::from(*autopath)];
        let resolv = dir.path().join(format!("resolv-{checked}.conf"));
        let written = crate::common::cli::ok(args);
        std::fs::write(&resolv, &written).unwrap();
        must(
            "mount",
            &["--bind", resolv.to_str().unwrap(), "/etc/resolv.conf"],
        );
        assert_eq!(
            std::fs::read_to_string("/etc/resolv.conf").unwrap(),
            written
        );
        for resolver in &resolvers {
            for name in *names {
                let predicted = predict(resolver.libc, name, &resolv, upstream.addr, *autopath);
                let mut command = Command::new(&resolver.command[0]);
                command.args(&resolver.command[1..]).arg(name);
                let output = command
                    .output()
                    .unwrap_or_else(|error| panic!("cannot run {}: {error}", resolver.command[0]));
                // A marker query after the resolver is done: what the log holds before it is
                // the resolver's.
                marker += 1;
                let marker_name = format!("marker-{marker}.cluster.local.");
                server.ask_udp(&marker_name, "TXT");
                let log = wait_for_line(server, &marker_name);
                let lines: Vec<&str> = log.lines().collect();
                let end = lines
                    .iter()
                    .position(|line| line.contains(&marker_name))
                    .unwrap();
                let logged: Vec<(String, String)> = lines[*seen..end]
                    .iter()
                    .filter_map(|line| query_of(line))
                    .collect();
                *seen = end + 1;
                checked += 1;
                let found = output.status.success();
                let mut problems = compare(&predicted, &logged, found);
                // With autopath, a name found anywhere on the search path costs the client
                // one name.
                if *autopath && found && group(&logged).len() != 1 {
                    problems.push("autopath should have answered the first name".to_owned());
                }
                if !problems.is_empty() {
                    failures.push(format!(
                        "{label}, {} {name}:\n  predicted: {}\n  logged:    {}\n  {}",
                        resolver.label,
                        show(&predicted.queries),
                        show(&logged),
                        problems.join("\n  ")
                    ));
                }
            }
        }
    }
    let asked_upstream = upstream.asked().len();
    eprintln!(
        "real resolvers: {checked} lookups ({} names × {} resolvers) checked against \
         resolve-cost's predictions; the upstream was asked {asked_upstream} questions",
        NAMES.len() + NAMES_SINGLE_REQUEST.len() + NAMES_AUTOPATH.len(),
        resolvers.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} lookups differ from the prediction:\n\n{}\n\nserver log:\n{}\n\
         autopath server log:\n{}",
        failures.len(),
        failures.join("\n\n"),
        server.stdout(),
        autopath_server.stdout()
    );
}

/// res_search lookups (SRV, PTR, TXT, MX), as `host -t SRV` and client libraries make them:
/// glibc's `res_search` (Python's ctypes) and musl's (a small C program built with
/// `musl-gcc`), under the kubelet's resolv.conf, against clusterdns serving the shop fixture;
/// the queries clusterdns logged, in order, and the h_errno each call ended with must be what
/// `resolve-cost --type T` predicts.
const RES_SEARCH_NAMES: &[(&str, &str)] = &[
    ("_http._tcp.web", "SRV"),
    ("_http._tcp.web.shop", "SRV"),
    ("_http._tcp.web.shop.svc.cluster.local", "SRV"),
    ("_http._tcp.web.shop.svc.cluster.local.", "SRV"),
    ("_ldap._tcp.web", "SRV"),
    ("web.shop.svc.cluster.local", "SRV"),
    ("20.0.96.10.in-addr.arpa", "PTR"),
    ("web", "TXT"),
    ("example.com", "MX"),
    ("x.broken.example", "TXT"),
];

#[test]
fn glibc_and_musl_res_search_ask_what_resolve_cost_predicts() {
    in_fresh(
        &crate::common::libtest_name(
            module_path!(),
            "glibc_and_musl_res_search_ask_what_resolve_cost_predicts",
        ),
        Fresh::NetMount,
        Missing::Fail,
        res_search_inside,
    );
}

fn res_search_inside() {
    must("ip", &["link", "set", "lo", "up"]);
    let dir = tempfile::tempdir().unwrap();
    let upstream = NamesUpstream::failing("127.0.0.1:5300".parse().unwrap(), EXTERNAL, &[BROKEN]);
    let corefile = dir.path().join("Corefile");
    std::fs::write(
        &corefile,
        format!(
            ".:53 {{\n    bind 127.0.0.1\n    log\n    kubernetes cluster.local in-addr.arpa ip6.arpa {{\n        pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n        objects \"{}\"\n    }}\n    forward . {}\n}}\n",
            fixture("shop.json").display(),
            upstream.addr
        ),
    )
    .unwrap();
    let server = TestServer::start(&["serve", "--corefile", corefile.to_str().unwrap()]);
    assert_eq!(server.addr, "127.0.0.1:53".parse::<SocketAddr>().unwrap());
    let resolv = dir.path().join("resolv.conf");
    let written = crate::common::cli::ok(&[
        "resolv-conf",
        "--namespace",
        "shop",
        "--nameserver",
        "127.0.0.1",
    ]);
    std::fs::write(&resolv, &written).unwrap();
    must(
        "mount",
        &["--bind", resolv.to_str().unwrap(), "/etc/resolv.conf"],
    );

    // Each prints `found` or the h_errno name.
    let musl_source = dir.path().join("musl_res_search.c");
    std::fs::write(
        &musl_source,
        "#include <netdb.h>\n#include <resolv.h>\n#include <stdio.h>\n#include <stdlib.h>\n\
         int main(int argc, char **argv) {\n\
         \tunsigned char answer[4096];\n\
         \tif (argc != 3) return 3;\n\
         \tif (res_search(argv[1], 1, atoi(argv[2]), answer, sizeof answer) > 0) { puts(\"found\"); return 0; }\n\
         \tswitch (h_errno) {\n\
         \tcase HOST_NOT_FOUND: puts(\"HOST_NOT_FOUND\"); break;\n\
         \tcase NO_DATA: puts(\"NO_DATA\"); break;\n\
         \tcase TRY_AGAIN: puts(\"TRY_AGAIN\"); break;\n\
         \tcase NO_RECOVERY: puts(\"NO_RECOVERY\"); break;\n\
         \tdefault: printf(\"h_errno %d\\n\", h_errno);\n\
         \t}\n\
         \treturn 2;\n}\n",
    )
    .unwrap();
    let musl = dir.path().join("musl_res_search");
    let output = Command::new("musl-gcc")
        .args(["-static", "-O1", "-o"])
        .arg(&musl)
        .arg(&musl_source)
        .output()
        .unwrap_or_else(|error| panic!("cannot run musl-gcc: {error}"));
    assert!(
        output.status.success(),
        "musl-gcc failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let python = "import ctypes, sys\n\
                  libc = ctypes.CDLL('libc.so.6')\n\
                  libc.__h_errno_location.restype = ctypes.POINTER(ctypes.c_int)\n\
                  answer = ctypes.create_string_buffer(4096)\n\
                  n = libc.res_search(sys.argv[1].encode(), 1, int(sys.argv[2]), answer, 4096)\n\
                  names = {1: 'HOST_NOT_FOUND', 2: 'TRY_AGAIN', 3: 'NO_RECOVERY', 4: 'NO_DATA'}\n\
                  h = libc.__h_errno_location()[0]\n\
                  print('found' if n > 0 else names.get(h, 'h_errno %d' % h))\n";
    let resolvers: [(&str, &str, Vec<String>); 2] = [
        (
            "python3 ctypes res_search (glibc)",
            "glibc",
            vec!["python3".into(), "-c".into(), python.into()],
        ),
        ("musl res_search", "musl", vec![musl.display().to_string()]),
    ];

    let mut seen = 0;
    let mut failures = Vec::new();
    let mut checked = 0;
    for (label, libc, command) in &resolvers {
        for (marker, (name, qtype)) in RES_SEARCH_NAMES.iter().enumerate() {
            let number = match *qtype {
                "SRV" => "33",
                "PTR" => "12",
                "TXT" => "16",
                "MX" => "15",
                other => panic!("no number for {other}"),
            };
            let report = predict_report(libc, name, &resolv, upstream.addr, &["--type", qtype]);
            let predicted = prediction_of(&report);
            let output = Command::new(&command[0])
                .args(&command[1..])
                .args([name, &number])
                .output()
                .unwrap_or_else(|error| panic!("cannot run {}: {error}", command[0]));
            let printed = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            let marker_name = format!("marker-{libc}-{marker}.cluster.local.");
            server.ask_udp(&marker_name, "TXT");
            let log = wait_for_line(&server, &marker_name);
            let lines: Vec<&str> = log.lines().collect();
            let end = lines
                .iter()
                .position(|line| line.contains(&marker_name))
                .unwrap();
            let logged: Vec<(String, String)> = lines[seen..end]
                .iter()
                .filter_map(|line| query_of(line))
                .collect();
            seen = end + 1;
            checked += 1;
            let mut problems = compare(&predicted, &logged, printed == "found");
            let expected = report["error"].as_str().unwrap_or("found");
            if printed != expected {
                problems.push(format!(
                    "resolve-cost says res_search ends with {expected}; it printed '{printed}' \
                     ({})",
                    String::from_utf8_lossy(&output.stderr).trim()
                ));
            }
            if !problems.is_empty() {
                failures.push(format!(
                    "{label}, {qtype} {name}:\n  predicted: {}\n  logged:    {}\n  {}",
                    show(&predicted.queries),
                    show(&logged),
                    problems.join("\n  ")
                ));
            }
        }
    }
    eprintln!(
        "real resolvers: {checked} res_search lookups checked against resolve-cost --type's \
         predictions"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} res_search lookups differ from the prediction:\n\n{}\n\nserver log:\n{}",
        failures.len(),
        failures.join("\n\n"),
        server.stdout()
    );
}

/// A name whose AAAA question the upstream never answers, one whose A it never answers, and
/// a name under a domain it answers SERVFAIL for.
const LOST_AAAA: &str = "lost-aaaa.example.com.";
const LOST_A: &str = "lost-a.example.com.";
const SERVFAIL_NAME: &str = "x.broken.example.";

/// Lost replies: glibc (Python's `getaddrinfo`, one process per list, each name in turn) and
/// musl (one process a name) ask an upstream that loses some replies, as the pod's only
/// nameserver (`timeout:1 attempts:2`, no search list); the questions the upstream saw, in
/// order, and the time each lookup took must be what `resolve-cost` predicts for the same
/// names in one run.
#[test]
fn glibc_and_musl_after_a_lost_reply_do_what_resolve_cost_predicts() {
    in_fresh(
        &crate::common::libtest_name(
            module_path!(),
            "glibc_and_musl_after_a_lost_reply_do_what_resolve_cost_predicts",
        ),
        Fresh::NetMount,
        Missing::Fail,
        lost_replies,
    );
}

fn lost_replies() {
    use hickory_proto::rr::RecordType;
    must("ip", &["link", "set", "lo", "up"]);
    let dir = tempfile::tempdir().unwrap();
    let upstream = NamesUpstream::losing(
        "127.0.0.1:53".parse().unwrap(),
        &[LOST_AAAA, LOST_A, "api.example.com"],
        &["broken.example"],
        &[(LOST_AAAA, RecordType::AAAA), (LOST_A, RecordType::A)],
    );
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "127.0.0.1 localhost\n").unwrap();
    let nsswitch = dir.path().join("nsswitch.conf");
    std::fs::write(&nsswitch, "hosts: files dns\n").unwrap();
    for (file, over) in [(&hosts, "/etc/hosts"), (&nsswitch, "/etc/nsswitch.conf")] {
        must("mount", &["--bind", file.to_str().unwrap(), over]);
    }
    let resolver = "import socket, sys, time\nfor name in sys.argv[1:]:\n    start = time.monotonic()\n    try:\n        socket.getaddrinfo(name, None)\n        found = 1\n    except socket.gaierror:\n        found = 0\n    print(name, found, int((time.monotonic() - start) * 1000), flush=True)";
    // (options, the names one process resolves in turn)
    let runs: &[(&str, &[&str])] = &[
        // The pair, single-request, single-request-reopen, A alone; the process stays in
        // single-request-reopen for the names after.
        ("", &[LOST_AAAA, "api.example.com.", LOST_AAAA]),
        // A lost: AAAA's answer is lost with it, and single-request stays.
        ("", &[LOST_A, LOST_A]),
        // Starting in single-request: one switch; SERVFAIL for A is asked again at once.
        ("single-request", &[LOST_AAAA, SERVFAIL_NAME]),
        ("single-request-reopen", &[SERVFAIL_NAME, LOST_AAAA]),
    ];
    let mut failures = Vec::new();
    for (index, (options, names)) in runs.iter().enumerate() {
        let resolv = dir.path().join(format!("resolv-lost-{index}.conf"));
        std::fs::write(
            &resolv,
            format!("nameserver 127.0.0.1\noptions timeout:1 attempts:2 {options}\n"),
        )
        .unwrap();
        must(
            "mount",
            &["--bind", resolv.to_str().unwrap(), "/etc/resolv.conf"],
        );
        // The prediction asks the upstream too (a lost question costs it 4 s): before the
        // resolver runs.
        let mut args = vec![
            "resolve-cost",
            "--namespace",
            "default",
            "--resolv-conf",
            resolv.to_str().unwrap(),
            "--upstream",
            "127.0.0.1:53",
            "--output",
            "json",
        ];
        args.extend_from_slice(names);
        let json: serde_json::Value = serde_json::from_str(&crate::common::cli::ok(&args)).unwrap();
        let before = upstream.asked().len();
        let output = Command::new("python3")
            .args(["-c", resolver])
            .args(*names)
            .output()
            .unwrap_or_else(|error| panic!("cannot run python3: {error}"));
        let asked: Vec<(String, String)> = upstream.asked()[before..]
            .iter()
            .map(|(name, qtype)| (name.clone(), qtype.to_string()))
            .collect();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        let mut predicted = Vec::new();
        for (at, name) in names.iter().enumerate() {
            let report = &json["reports"][at];
            for step in report["steps"].as_array().unwrap() {
                for query in step["queries"].as_array().unwrap() {
                    for _ in 0..query["sent"].as_u64().unwrap() {
                        predicted.push((
                            step["name"].as_str().unwrap().to_owned(),
                            query["type"].as_str().unwrap().to_owned(),
                        ));
                    }
                }
            }
            let waited: u64 = report["totals"]["waited_ms"].as_u64().unwrap();
            let found = !report["answered_by"].is_null();
            let want = format!("{name} {}", u8::from(found));
            let line = lines.get(at).copied().unwrap_or("(nothing)");
            let took: u64 = line
                .rsplit(' ')
                .next()
                .and_then(|ms| ms.parse().ok())
                .unwrap_or(u64::MAX);
            if !line.starts_with(&want) || took.abs_diff(waited) > 500 {
                failures.push(format!(
                    "options '{options}', {name}: resolve-cost says found={found} after \
                     {waited} ms waiting; python3 getaddrinfo printed '{line}' (name, found, \
                     ms)"
                ));
            }
        }
        // The JSON gives each name's count per type, not their interleaving.
        if type_counts(&asked) != type_counts(&predicted) {
            failures.push(format!(
                "options '{options}', names {names:?}:\n  predicted: {}\n  asked:     {}",
                show(&predicted),
                show(&asked)
            ));
        }
    }
    // musl: one lookup a process, nothing carried over; a lost reply is waited for until
    // `timeout`, asked again every `timeout / attempts`, and the lookup fails.
    let resolv = dir.path().join("resolv-lost-musl.conf");
    std::fs::write(
        &resolv,
        "nameserver 127.0.0.1\noptions timeout:1 attempts:2\n",
    )
    .unwrap();
    must(
        "mount",
        &["--bind", resolv.to_str().unwrap(), "/etc/resolv.conf"],
    );
    let musl = build_musl_program(dir.path());
    for name in [LOST_AAAA, LOST_A, SERVFAIL_NAME, "api.example.com."] {
        let json: serde_json::Value = serde_json::from_str(&crate::common::cli::ok(&[
            "resolve-cost",
            name,
            "--namespace",
            "default",
            "--resolv-conf",
            resolv.to_str().unwrap(),
            "--libc",
            "musl",
            "--upstream",
            "127.0.0.1:53",
            "--output",
            "json",
        ]))
        .unwrap();
        let report = &json["reports"][0];
        let before = upstream.asked().len();
        let start = Instant::now();
        let output = Command::new(&musl).arg(name).output().unwrap();
        let took = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        let asked: Vec<(String, String)> = upstream.asked()[before..]
            .iter()
            .map(|(name, qtype)| (name.clone(), qtype.to_string()))
            .collect();
        let mut predicted = Vec::new();
        for step in report["steps"].as_array().unwrap() {
            for query in step["queries"].as_array().unwrap() {
                for _ in 0..query["sent"].as_u64().unwrap() {
                    predicted.push((
                        step["name"].as_str().unwrap().to_owned(),
                        query["type"].as_str().unwrap().to_owned(),
                    ));
                }
            }
        }
        let waited = report["totals"]["waited_ms"].as_u64().unwrap();
        let found = !report["answered_by"].is_null();
        // musl shares its SERVFAIL retries between A and AAAA: totals per name compared.
        if group(&asked) != group(&predicted)
            || found != output.status.success()
            || took.abs_diff(waited) > 500
        {
            failures.push(format!(
                "musl, {name}: resolve-cost says found={found} after {waited} ms waiting, \
                 queries {}; musl found={} after {took} ms, queries {}",
                show(&predicted),
                output.status.success(),
                show(&asked)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "the resolvers after a lost reply differ from resolve-cost:\n\n{}",
        failures.join("\n\n")
    );
}

/// Consecutive queries for the same name, as (name, how many of each type).
fn type_counts(
    queries: &[(String, String)],
) -> Vec<(String, std::collections::BTreeMap<String, usize>)> {
    let mut out: Vec<(String, std::collections::BTreeMap<String, usize>)> = Vec::new();
    for (name, qtype) in queries {
        match out.last_mut() {
            Some((last, counts)) if last == name => *counts.entry(qtype.clone()).or_default() += 1,
            _ => out.push((name.clone(), [(qtype.clone(), 1)].into())),
        }
    }
    out
}

/// `musl-gcc -static` of tests/fixtures/musl_lookup.c.
fn build_musl_program(dir: &Path) -> PathBuf {
    let out = dir.join("musl_lookup");
    let source = root().join("tests/fixtures/musl_lookup.c");
    let output = Command::new("musl-gcc")
        .args(["-static", "-O1", "-o"])
        .arg(&out)
        .arg(&source)
        .output()
        .unwrap_or_else(|error| {
            panic!("cannot run musl-gcc: {error} (install Debian's musl-tools; .ci/run does)")
        });
    assert!(
        output.status.success(),
        "musl-gcc failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// What `resolve-cost` predicts for one lookup.
struct Prediction {
    /// (name, type) per query sent, in order.
    queries: Vec<(String, String)>,
    /// Whether the lookup ends with addresses.
    found: bool,
}

fn predict(
    libc: &str,
    name: &str,
    resolv: &Path,
    upstream: SocketAddr,
    autopath: bool,
) -> Prediction {
    let extra: &[&str] = if autopath { &["--autopath"] } else { &[] };
    prediction_of(&predict_report(libc, name, resolv, upstream, extra))
}

/// `resolve-cost`'s JSON report for one lookup, with `extra` arguments.
fn predict_report(
    libc: &str,
    name: &str,
    resolv: &Path,
    upstream: SocketAddr,
    extra: &[&str],
) -> serde_json::Value {
    let upstream = upstream.to_string();
    let objects = fixture("shop.json");
    let mut args = vec![
        "resolve-cost",
        name,
        "--namespace",
        "shop",
        "--objects",
        objects.to_str().unwrap(),
        "--resolv-conf",
        resolv.to_str().unwrap(),
        "--libc",
        libc,
        "--upstream",
        &upstream,
        "--output",
        "json",
    ];
    args.extend(extra);
    let out = crate::common::cli::ok(&args);
    let mut json: serde_json::Value = serde_json::from_str(&out).unwrap();
    json["reports"][0].take()
}

/// The queries a report predicts, and whether it finds an answer.
fn prediction_of(report: &serde_json::Value) -> Prediction {
    let mut queries = Vec::new();
    for step in report["steps"].as_array().unwrap() {
        for query in step["queries"].as_array().unwrap() {
            for _ in 0..query["sent"].as_u64().unwrap() {
                queries.push((
                    step["name"].as_str().unwrap().to_ascii_lowercase(),
                    query["type"].as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    Prediction {
        queries,
        found: !report["answered_by"].is_null(),
    }
}

/// (name, type) of a CoreDNS common-format log line.
fn query_of(line: &str) -> Option<(String, String)> {
    let quoted = line.split('"').nth(1)?;
    let mut words = quoted.split_ascii_whitespace();
    let qtype = words.next()?.to_owned();
    let _class = words.next()?;
    let name = words.next()?.to_ascii_lowercase();
    Some((name, qtype))
}

/// The differences between the prediction and the log. Queries are compared in order, the
/// queries of one name as a set (A and AAAA are sent together and may be logged either way
/// round).
fn compare(predicted: &Prediction, logged: &[(String, String)], found: bool) -> Vec<String> {
    let mut problems = Vec::new();
    if group(&predicted.queries) != group(logged) {
        problems.push("the queries differ".to_owned());
    }
    if predicted.found != found {
        problems.push(format!(
            "resolve-cost says the lookup {} addresses; the resolver {} them",
            if predicted.found { "finds" } else { "finds no" },
            if found { "found" } else { "did not find" }
        ));
    }
    problems
}

/// Consecutive queries for the same name, as (name, the types asked, how many queries).
/// Per-type counts are not compared: musl shares its SERVFAIL retries between the A and
/// AAAA queries of a name (`servfail_retry = 2 * nqueries` in res_msend.c), so which of the
/// two gets retried depends on which reply arrives first; the total does not.
fn group(queries: &[(String, String)]) -> Vec<(String, BTreeSet<String>, usize)> {
    let mut out: Vec<(String, BTreeSet<String>, usize)> = Vec::new();
    for (name, qtype) in queries {
        match out.last_mut() {
            Some((last, types, count)) if last == name => {
                types.insert(qtype.clone());
                *count += 1;
            }
            _ => out.push((name.clone(), BTreeSet::from([qtype.clone()]), 1)),
        }
    }
    out
}

fn show(queries: &[(String, String)]) -> String {
    if queries.is_empty() {
        return "(none)".to_owned();
    }
    queries
        .iter()
        .map(|(name, qtype)| format!("{qtype} {name}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The server's stdout once it holds `text` (its log lines arrive through a pipe).
fn wait_for_line(server: &TestServer, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = server.stdout();
        if out.contains(text) {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "the server never logged {text}:\n{out}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// CI runs on a fresh machine: `.ci/run` installs what this check needs.
#[test]
fn ci_installs_what_the_check_needs() {
    let ci = crate::common::read(".ci/run");
    for package in ["musl-tools", "python3", "iproute2", "util-linux"] {
        assert!(
            ci.contains(&format!("need+=({package})")),
            ".ci/run must install {package}"
        );
    }
}
