//! Tests of `config` as a whole: server blocks and their keys, snippets and imports, read
//! errors, the errors no one directive owns, kubeadm's Corefile, garbage. Each directive's
//! own tests are beside its parser in `directives/`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::rr::Name;

use super::*;

use test_support::{Invalid, check_invalid_corefiles, env, ips, kind, names, parse};

#[test]
fn server_blocks() {
    let text = "\
# two blocks, one split by port
cluster.local:53 example.org:5300, 10.0.0.0/24 {
    bind 127.0.0.1
}
.:53 {
}
";
    let config = parse(text).unwrap();
    let summary: Vec<(Vec<String>, u16, usize)> = config
        .servers
        .iter()
        .map(|s| (names(&s.zones), s.port, s.line))
        .collect();
    assert_eq!(
        summary,
        [
            (
                vec![
                    "cluster.local.".to_owned(),
                    "0.0.10.in-addr.arpa.".to_owned()
                ],
                53,
                2
            ),
            (vec!["example.org.".to_owned()], 5300, 2),
            (vec![".".to_owned()], 53, 5),
        ]
    );
    assert_eq!(config.servers[1].plugins.bind, ips(&["127.0.0.1"]));
    assert!(
        config.servers[2].plugins.bind.is_empty() && config.servers[2].plugins.kubernetes.is_none()
    );
}

#[test]
fn keys_and_ports() {
    /// The zones and port of each server block.
    type Servers<'a> = &'a [(&'a [&'a str], u16)];
    let cases: &[(&str, &str, Servers<'_>)] = &[
        ("env port", ".:{$PORT} {\n}", &[(&["."], 1053)]),
        (
            "comma list",
            "a.org,b.org {\n}",
            &[(&["a.org.", "b.org."], 53)],
        ),
        (
            "comma across lines",
            "a.org,\nb.org:54 {\n}",
            &[(&["a.org."], 53), (&["b.org."], 54)],
        ),
        ("scheme", "dns://.:5353 {\n}", &[(&["."], 5353)]),
        ("braceless", ".:53\nkubernetes", &[(&["."], 53)]),
        ("keys only", "example.org", &[(&["example.org."], 53)]),
        (
            "same zone other port",
            ". {\n}\n.:54 {\n}",
            &[(&["."], 53), (&["."], 54)],
        ),
        (
            "v6 cidr",
            "fd00::/64:53 {\n}",
            &[(&["0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa."], 53)],
        ),
    ];
    for (name, text, want) in cases {
        let config = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got: Vec<(Vec<String>, u16)> = config
            .servers
            .iter()
            .map(|s| (names(&s.zones), s.port))
            .collect();
        let want: Vec<(Vec<String>, u16)> = want
            .iter()
            .map(|(z, p)| (z.iter().map(|z| (*z).to_owned()).collect(), *p))
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn snippets_and_imports() {
    let text = "\
(k8s) {
    kubernetes cluster.local {
        pods insecure
        import extra
    }
}
(extra) {
    ttl 30
}
.:53 {
    import k8s
}
";
    let config = parse(text).unwrap();
    let k = config.servers[0].plugins.kubernetes.as_ref().unwrap();
    assert_eq!((k.pods, k.ttl), (PodMode::Insecure, 30));

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("conf.d")).unwrap();
    std::fs::write(
        dir.path().join("conf.d/1-a.conf"),
        "a.org {\n  kubernetes\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("conf.d/2-b.conf"),
        "b.org {\n  import ../options\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("options"), "bind 127.0.0.1\n").unwrap();
    let corefile = dir.path().join("Corefile");
    std::fs::write(&corefile, "import conf.d/*.conf\n").unwrap();
    let config = read_corefile(&corefile).unwrap();
    assert_eq!(config.servers.len(), 2);
    assert_eq!(names(&config.servers[0].zones), ["a.org."]);
    assert!(config.servers[0].plugins.kubernetes.is_some());
    assert_eq!(config.servers[1].plugins.bind, ips(&["127.0.0.1"]));

    std::fs::write(
        dir.path().join("conf.d/2-b.conf"),
        "b.org {\n  kubernetes {\n    bogus\n  }\n}\n",
    )
    .unwrap();
    let error = read_corefile(&corefile).unwrap_err();
    assert_eq!(error.file(), dir.path().join("conf.d/2-b.conf"));
    assert_eq!((kind(&error), error.line()), ("UnknownProperty", 3));
}

#[test]
fn read_errors() {
    let error = read_corefile(Path::new("/nonexistent/Corefile")).unwrap_err();
    assert_eq!(kind(&error), "Read");
    assert!(
        error
            .to_string()
            .starts_with("/nonexistent/Corefile: cannot read"),
        "{error}"
    );
}

#[test]
fn errors() {
    let cases: &[Invalid<'_>] = &[
        // Syntax.
        Invalid {
            name: "empty",
            input: "",
            line: 0,
            kind: "Syntax",
            message: "Corefile: the Corefile defines no server block",
        },
        Invalid {
            name: "only snippets",
            input: "(s) {\n}",
            line: 0,
            kind: "Syntax",
            message: "no server block",
        },
        Invalid {
            name: "unterminated quote",
            input: ". {\n kubernetes \"x\n}",
            line: 2,
            kind: "Syntax",
            message: "unterminated",
        },
        Invalid {
            name: "unclosed",
            input: ". {\n kubernetes {\n",
            line: 2,
            kind: "Syntax",
            message: "never closed",
        },
        Invalid {
            name: "empty key",
            input: "{$NOPE} {\n}",
            line: 1,
            kind: "Syntax",
            message: "has no key",
        },
        // Keys.
        Invalid {
            name: "tls key",
            input: "tls://.:853 {\n}",
            line: 1,
            kind: "Key",
            message: "Corefile:1: invalid server block key 'tls://.:853': transport 'tls://' is not supported",
        },
        Invalid {
            name: "bad zone",
            input: "ex%ample.org {\n}",
            line: 1,
            kind: "Key",
            message: "invalid server block key 'ex%ample.org'",
        },
        Invalid {
            name: "bad port",
            input: ".:99999 {\n}",
            line: 1,
            kind: "Key",
            message: "0..=65535",
        },
        // Duplicates.
        Invalid {
            name: "same zone twice",
            input: ". {\n}\n.:53 {\n}",
            line: 3,
            kind: "Duplicate",
            message: "Corefile:3: cannot serve dns://.:53 - it is already defined",
        },
        Invalid {
            name: "same block twice",
            input: ". . {\n}",
            line: 1,
            kind: "Duplicate",
            message: "already defined",
        },
        Invalid {
            name: "overlapping cidr",
            input: "10.0.0.0/24 0.0.10.in-addr.arpa {\n}",
            line: 1,
            kind: "Duplicate",
            message: "dns://0.0.10.in-addr.arpa.:53 - it is already defined",
        },
        Invalid {
            name: "same bind twice",
            input: ". {\n bind 127.0.0.1\n}\n. {\n bind 127.0.0.1\n}",
            line: 4,
            kind: "Duplicate",
            message: "cannot serve dns://.:53 on 127.0.0.1 - it is already defined",
        },
        Invalid {
            name: "wildcard overlap",
            input: ". {\n bind 127.0.0.1\n}\n. {\n}",
            line: 4,
            kind: "Duplicate",
            message: "cannot serve dns://.:53 - zone overlap listener capacity with dns://.:53 on 127.0.0.1",
        },
        // Directives.
        Invalid {
            name: "unknown directive",
            input: ". {\n kubernetes\n proxy . 8.8.8.8\n}",
            line: 3,
            kind: "UnknownDirective",
            message: "Corefile:3: unknown directive 'proxy'",
        },
        Invalid {
            name: "unknown before unsupported",
            input: ". {\n errors\n}\n. {\n nope\n}",
            line: 5,
            kind: "UnknownDirective",
            message: "'nope'",
        },
        Invalid {
            name: "unsupported",
            input: ". {\n kubernetes\n dnstap /tmp/dnstap.sock {\n  identity x\n }\n}",
            line: 3,
            kind: "Unsupported",
            message: "Corefile:3: directive 'dnstap' is a CoreDNS plugin that clusterdns does not implement yet",
        },
        Invalid {
            name: "unsupported after an implemented error",
            input: ". {\n dnstap /tmp/dnstap.sock\n cache 0\n}",
            line: 3,
            kind: "Invalid",
            message: "cache: TTL '0' must be a positive number",
        },
        Invalid {
            name: "invalid after errors",
            input: ". {\n errors\n kubernetes {\n  ttl x\n }\n}",
            line: 4,
            kind: "Invalid",
            message: "ttl",
        },
        Invalid {
            name: "kubernetes twice",
            input: ". {\n kubernetes\n kubernetes\n}",
            line: 3,
            kind: "Invalid",
            message: "plugin/kubernetes: this plugin can only be used once per Server Block (first at line 2)",
        },
        // import.
        Invalid {
            name: "missing import",
            input: ". {\n import nothing-here\n}",
            line: 2,
            kind: "Import",
            message: "import 'nothing-here': no snippet of that name is defined above",
        },
        Invalid {
            name: "snippet used before definition",
            input: ". {\n import s\n}\n(s) {\n}",
            line: 2,
            kind: "Import",
            message: "no snippet",
        },
    ];
    check_invalid_corefiles(cases);
}

/// kubeadm's Corefile (`coredns-behaviour.md` § 2a), exactly: every directive parses into
/// its typed configuration.
#[test]
fn kubeadm_corefile_parses() {
    let text = "\
.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
";
    let config = parse(text).unwrap();
    let [server] = config.servers.as_slice() else {
        panic!("one server block: {config:?}")
    };
    assert_eq!(
        (names(&server.zones), server.port),
        (vec![".".to_owned()], 53)
    );
    let errors = server.plugins.errors.as_ref().unwrap();
    assert!(errors.consolidate.is_empty() && !errors.stacktrace);
    assert_eq!(
        server.plugins.health,
        Some(HealthConfig {
            addr: "0.0.0.0:8080".parse().unwrap(),
            lameduck: Duration::from_secs(5),
        })
    );
    assert_eq!(
        server.plugins.ready,
        Some(ReadyConfig {
            addr: "0.0.0.0:8181".parse().unwrap(),
            continuously: false,
        })
    );
    let k = server.plugins.kubernetes.as_ref().unwrap();
    assert_eq!((k.pods, k.ttl, k.line), (PodMode::Insecure, 30, 7));
    assert_eq!(
        server.plugins.prometheus,
        Some(PrometheusConfig {
            addr: "0.0.0.0:9153".parse().unwrap(),
            search_path: SearchPathConfig::default(),
        })
    );
    let [forward] = server.plugins.forward.as_slice() else {
        panic!("one forward: {:?}", server.plugins.forward)
    };
    assert_eq!(forward.from, Name::root());
    let upstreams: Vec<(String, Option<PathBuf>)> = forward
        .to
        .iter()
        .map(|u| (u.name.clone(), u.from_file.clone()))
        .collect();
    let resolv_conf = Some(PathBuf::from("/etc/resolv.conf"));
    assert_eq!(
        upstreams,
        [
            ("192.0.2.53:53".to_owned(), resolv_conf.clone()),
            ("[2001:db8::53]:53".to_owned(), resolv_conf),
        ]
    );
    assert_eq!(forward.max_concurrent, Some(1000));
    assert_eq!(
        (forward.expire, forward.max_fails, forward.health_check),
        (Duration::from_secs(10), 2, Duration::from_millis(500))
    );
    assert_eq!(forward.policy, ForwardPolicy::Random);
    let cache = server.plugins.cache.as_ref().unwrap();
    assert_eq!(names(&cache.zones), ["."]);
    assert_eq!(
        (cache.success, cache.denial),
        (
            CacheClass {
                capacity: 9984,
                max_ttl: 30,
                min_ttl: 5
            },
            CacheClass {
                capacity: 9984,
                max_ttl: 30,
                min_ttl: 5
            },
        )
    );
    assert_eq!(names(&cache.disable_success), ["cluster.local."]);
    assert_eq!(names(&cache.disable_denial), ["cluster.local."]);
    assert_eq!(cache.servfail, Duration::from_secs(5));
    assert_eq!(server.plugins.loop_detect, Some(LoopConfig {}));
    assert_eq!(
        server.plugins.reload,
        Some(ReloadConfig {
            interval: Duration::from_secs(30),
            jitter: Duration::from_secs(15),
        })
    );
    assert_eq!(server.plugins.loadbalance, Some(LoadBalanceConfig {}));
    assert!(
        server.plugins.log.is_empty()
            && server.plugins.transfer.is_empty()
            && server.plugins.bind.is_empty()
    );
}

/// Random text and random edits of a real Corefile: any result, never a panic.
#[test]
fn garbage_never_panics() {
    let seed_text = ".:53 {\n  bind 127.0.0.1\n  errors {\n    consolidate 1m ^a(b|c)$ warning show_first\n  }\n  health :8080 {\n    lameduck 5s\n  }\n  ready\n  kubernetes cluster.local 10.0.0.0/23 {\n    pods insecure\n    labels a in (b, c)\n    startup_timeout 1m\n  }\n  prometheus :9153\n  forward . 10.0.0.1:53 /etc/resolv.conf {\n    max_concurrent 1000\n    health_check 1s domain a.b\n    failover SERVFAIL\n  }\n  cache 30 {\n    success 5000 60 1\n    prefetch 2 1m 20%\n    disable denial cluster.local\n  }\n  log . {combined} {\n    class denial\n  }\n  loop\n  reload 10s\n  loadbalance\n  transfer {\n    to * 10.0.0.0/8\n  }\n}\n(s) {\n  ttl 3\n}\n";
    let pieces = [
        "{",
        "}",
        "\"",
        "`",
        "#",
        "\n",
        " ",
        ",",
        ":",
        "/",
        "(",
        ")",
        "$",
        "%",
        "\\",
        ".",
        "import",
        "s",
        "kubernetes",
        "bind",
        "transfer",
        "forward",
        "cache",
        "health",
        "log",
        "errors",
        "consolidate",
        "reload",
        ":8080",
        "[::1]:53",
        "fe80::1",
        "%",
        "{common}",
        "(",
        "99999999999999999999",
        "-1",
        "/etc/resolv.conf",
        "to",
        "*",
        "ttl",
        "53",
        "10.0.0.0/8",
        "fd00::/61",
        "{$X}",
        "dns://",
        "tls://",
        "é",
        "\u{0}",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut random = move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("Corefile");
    for round in 0..3000 {
        let text: String = if round % 2 == 0 {
            (0..random(40))
                .map(|_| pieces[random(pieces.len())])
                .collect()
        } else {
            let mut text: Vec<char> = seed_text.chars().collect();
            for _ in 0..1 + random(4) {
                let at = random(text.len() + 1);
                if random(2) == 0 && at < text.len() {
                    text.remove(at);
                } else {
                    let piece = pieces[random(pieces.len())];
                    for (i, c) in piece.chars().enumerate() {
                        text.insert(at + i, c);
                    }
                }
            }
            text.into_iter().collect()
        };
        let _ = parse_corefile_in(&text, &file, &env()).map_err(|e| e.to_string());
    }
}
