//! Tests of `config`.

use std::path::PathBuf;
use std::time::Duration;

use super::*;

use test_support::{Invalid, check_invalid_corefiles, env, kind, names, parse};

fn ips(texts: &[&str]) -> Vec<IpAddr> {
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

/// `kubernetes cluster.local in-addr.arpa { OPTIONS }` in a `.:53` block; the options
/// start on line 3.
fn kubernetes(options: &str) -> Result<KubernetesConfig, Error> {
    let text = format!(".:53 {{\n kubernetes cluster.local in-addr.arpa {{\n{options}\n }}\n}}\n");
    let config = parse(&text)?;
    Ok(config.servers[0].kubernetes.clone().unwrap())
}

#[test]
fn kubernetes_defaults() {
    let config = parse(". {\n kubernetes\n}").unwrap();
    let k = config.servers[0].kubernetes.as_ref().unwrap();
    assert_eq!(names(&k.zones), ["."]);
    assert_eq!(k.primary_zone, 0);
    assert_eq!(k.ttl, 5);
    assert_eq!(k.pods, PodMode::Disabled);
    assert_eq!(k.startup_timeout, Duration::from_secs(5));
    assert!(!k.endpoint_pod_names && !k.noendpoints && !k.ignore_empty_service);
    assert!(k.namespaces.is_empty() && k.objects.is_empty());
    assert!(k.labels.is_none() && k.namespace_labels.is_none() && k.fallthrough.is_none());
    assert_eq!(k.api, ApiConfig::default());
    assert_eq!(k.line, 2);
}

#[test]
fn kubernetes_options() {
    type Check = fn(&KubernetesConfig) -> bool;
    let cases: &[(&str, &str, Check)] = &[
        ("ttl", "ttl 30", |k| k.ttl == 30),
        ("ttl zero", "ttl 0", |k| k.ttl == 0),
        ("ttl max", "ttl 3600", |k| k.ttl == 3600),
        ("ttl last wins", "ttl 1\nttl 2", |k| k.ttl == 2),
        ("pods insecure", "pods insecure", |k| {
            k.pods == PodMode::Insecure
        }),
        ("pods verified", "pods verified", |k| {
            k.pods == PodMode::Verified
        }),
        ("pods disabled", "pods disabled", |k| {
            k.pods == PodMode::Disabled
        }),
        ("endpoint_pod_names", "endpoint_pod_names", |k| {
            k.endpoint_pod_names
        }),
        ("noendpoints", "noendpoints", |k| k.noendpoints),
        ("ignore", "ignore empty_service", |k| k.ignore_empty_service),
        ("namespaces", "namespaces a b\nnamespaces b c", |k| {
            k.namespaces == ["a", "b", "c"]
        }),
        ("labels", "labels app in (a, b),tier=web", |k| {
            k.labels.as_ref().is_some_and(|l| l.requirements.len() == 2)
        }),
        ("namespace_labels", "namespace_labels team=dns", |k| {
            k.namespace_labels
                .as_ref()
                .is_some_and(|l| l.requirements.len() == 1)
        }),
        ("fallthrough all", "fallthrough", |k| {
            k.fallthrough == Some(vec![])
        }),
        (
            "fallthrough zones",
            "fallthrough in-addr.arpa ip6.arpa",
            |k| {
                k.fallthrough
                    .as_deref()
                    .is_some_and(|z| names(z) == ["in-addr.arpa.", "ip6.arpa."])
            },
        ),
        ("fallthrough cidr", "fallthrough 10.0.0.0/23", |k| {
            k.fallthrough
                .as_deref()
                .is_some_and(|z| names(z) == ["0.0.10.in-addr.arpa.", "1.0.10.in-addr.arpa."])
        }),
        ("endpoint", "endpoint https://a:6443 https://b:6443", |k| {
            k.api.endpoint.as_deref() == Some("https://a:6443")
        }),
        ("tls", "tls c.pem k.pem ca.pem", |k| {
            k.api.tls
                == Some(TlsFiles {
                    cert: "c.pem".into(),
                    key: "k.pem".into(),
                    ca: "ca.pem".into(),
                })
        }),
        ("kubeconfig", "kubeconfig /k.yaml", |k| {
            k.api.kubeconfig == Some(("/k.yaml".into(), None))
        }),
        ("kubeconfig context", "kubeconfig k.yaml kind", |k| {
            k.api.kubeconfig == Some(("k.yaml".into(), Some("kind".into())))
        }),
        ("qps", "apiserver_qps 2.5", |k| k.api.qps == Some(2.5)),
        ("burst", "apiserver_burst 10", |k| k.api.burst == Some(10)),
        ("inflight", "apiserver_max_inflight 50", |k| {
            k.api.max_inflight == Some(50)
        }),
        ("startup_timeout", "startup_timeout 1m30s", |k| {
            k.startup_timeout == Duration::from_secs(90)
        }),
        ("startup_timeout zero", "startup_timeout 0", |k| {
            k.startup_timeout == Duration::ZERO
        }),
        (
            "objects",
            "objects a.json \"b c.json\"\nobjects /abs.json",
            |k| {
                k.objects
                    == [
                        PathBuf::from("a.json"),
                        PathBuf::from("b c.json"),
                        PathBuf::from("/abs.json"),
                    ]
            },
        ),
        ("quoted option name", "\"ttl\" 7", |k| k.ttl == 7),
        ("comment", "ttl 9 # nine", |k| k.ttl == 9),
        ("env", "namespaces {$NOPE}x", |k| k.namespaces == ["x"]),
    ];
    for (name, options, check) in cases {
        let k = kubernetes(options).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(check(&k), "{name}: {k:?}");
    }
}

#[test]
fn kubernetes_multicluster() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "one zone",
            "kubernetes cluster.local clusterset.local {\n  multicluster clusterset.local\n }",
            &["clusterset.local."],
        ),
        (
            "spelling normalized",
            "kubernetes cluster.local clusterset.local {\n  multicluster ClusterSet.Local.\n }",
            &["clusterset.local."],
        ),
        (
            "two zones",
            "kubernetes cluster.local a.example b.example {\n  multicluster b.example a.example\n }",
            &["b.example.", "a.example."],
        ),
        (
            "last line wins",
            "kubernetes cluster.local a.example b.example {\n  multicluster a.example\n  multicluster b.example\n }",
            &["b.example."],
        ),
        (
            "no zones names none",
            "kubernetes cluster.local {\n  multicluster\n }",
            &[],
        ),
        ("absent", "kubernetes cluster.local", &[]),
    ];
    for (name, directive, expected) in cases {
        let text = format!(".:53 {{\n {directive}\n}}\n");
        let config = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let k = config.servers[0].kubernetes.as_ref().unwrap();
        assert_eq!(names(&k.multicluster), *expected, "{name}");
    }
}

#[test]
fn kubernetes_zones() {
    let cases: &[(&str, &str, &[&str], usize)] = &[
        (
            "from args",
            ". {\n kubernetes cluster.local in-addr.arpa ip6.arpa\n}",
            &["cluster.local.", "in-addr.arpa.", "ip6.arpa."],
            0,
        ),
        (
            "from keys",
            "cluster.local 10.0.0.0/24 {\n kubernetes\n}",
            &["cluster.local.", "0.0.10.in-addr.arpa."],
            0,
        ),
        (
            "reverse first",
            ". {\n kubernetes in-addr.arpa Example.ORG\n}",
            &["in-addr.arpa.", "example.org."],
            1,
        ),
        (
            "cidr args",
            ". {\n kubernetes 10.0.0.0/23 cluster.local\n}",
            &[
                "0.0.10.in-addr.arpa.",
                "1.0.10.in-addr.arpa.",
                "cluster.local.",
            ],
            2,
        ),
        (
            "duplicates dropped",
            ". {\n kubernetes a.org a.org.\n}",
            &["a.org."],
            0,
        ),
        (
            "env zone",
            ". {\n kubernetes {$ZONE}\n}",
            &["cluster.local."],
            0,
        ),
        (
            "all keys of the block",
            "10.in-addr.arpa:53 cluster.local:54 {\n kubernetes\n}",
            &["10.in-addr.arpa.", "cluster.local."],
            1,
        ),
    ];
    for (name, text, zones, primary) in cases {
        let config = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        for server in &config.servers {
            let k = server.kubernetes.as_ref().unwrap();
            assert_eq!(names(&k.zones), *zones, "{name}");
            assert_eq!(k.primary_zone, *primary, "{name}");
        }
    }
}

#[test]
fn objects_are_relative_to_the_corefile() {
    let text = ". {\n kubernetes {\n  objects dump.json /abs.json\n }\n}";
    let config = parse_corefile_in(text, Path::new("/etc/coredns/Corefile"), &env()).unwrap();
    let k = config.servers[0].kubernetes.as_ref().unwrap();
    assert_eq!(
        k.objects,
        [
            PathBuf::from("/etc/coredns/dump.json"),
            PathBuf::from("/abs.json")
        ]
    );
}

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
    assert_eq!(config.servers[1].bind, ips(&["127.0.0.1"]));
    assert!(config.servers[2].bind.is_empty() && config.servers[2].kubernetes.is_none());
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
fn bind() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("one", "bind 127.0.0.1", &["127.0.0.1"]),
        (
            "several and v6",
            "bind 127.0.0.1 ::1",
            &["127.0.0.1", "::1"],
        ),
        (
            "duplicates",
            "bind 127.0.0.1 127.0.0.1\nbind 127.0.0.1",
            &["127.0.0.1"],
        ),
        (
            "lines add up",
            "bind 127.0.0.1\nbind 127.0.0.2",
            &["127.0.0.1", "127.0.0.2"],
        ),
        (
            "interface, link-local skipped",
            "bind eth0",
            &["10.1.1.1", "fd00::5"],
        ),
        (
            "except",
            "bind eth0 lo {\n except fd00::5 lo\n}",
            &["10.1.1.1"],
        ),
    ];
    for (name, directives, want) in cases {
        let config =
            parse(&format!(". {{\n{directives}\n}}")).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(config.servers[0].bind, ips(want), "{name}");
    }
}

#[test]
fn transfer() {
    let text = "cluster.local {\n transfer {\n  to * 10.0.0.1:53\n  to 10.0.0.0/8\n }\n transfer example.org 10.0.0.0/24 {\n  to fd00::1\n }\n}";
    let config = parse(text).unwrap();
    let transfers = &config.servers[0].transfer;
    assert_eq!(transfers.len(), 2);
    assert_eq!(names(&transfers[0].zones), ["cluster.local."]);
    assert_eq!(
        transfers[0].to,
        [
            TransferPeer::Any,
            TransferPeer::Net("10.0.0.1/32".parse().unwrap()),
            TransferPeer::Net("10.0.0.0/8".parse().unwrap()),
        ]
    );
    assert_eq!(transfers[0].line, 2);
    assert_eq!(
        names(&transfers[1].zones),
        ["example.org.", "0.0.10.in-addr.arpa."]
    );
    assert!(transfers[1].to[0].allows("fd00::1".parse().unwrap()));
    assert!(!transfers[1].to[0].allows("fd00::2".parse().unwrap()));
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
    let k = config.servers[0].kubernetes.as_ref().unwrap();
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
    assert!(config.servers[0].kubernetes.is_some());
    assert_eq!(config.servers[1].bind, ips(&["127.0.0.1"]));

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
        // kubernetes.
        Invalid {
            name: "unknown property",
            input: ". {\n kubernetes {\n  foo bar\n }\n}",
            line: 3,
            kind: "UnknownProperty",
            message: "Corefile:3: unknown property 'foo' in kubernetes",
        },
        Invalid {
            name: "unknown property with a block",
            input: ". {\n kubernetes {\n  foo {\n  }\n }\n}",
            line: 3,
            kind: "UnknownProperty",
            message: "unknown property 'foo' in kubernetes",
        },
        Invalid {
            name: "removed upstream",
            input: ". {\n kubernetes {\n  upstream\n }\n}",
            line: 3,
            kind: "UnknownProperty",
            message: "'upstream'",
        },
        Invalid {
            name: "multicluster zone not served",
            input: ". {\n kubernetes {\n  multicluster clusterset.local\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "Corefile:3: kubernetes: is not authoritative for the multicluster zone \
                 clusterset.local. (authoritative zones: [.])",
        },
        Invalid {
            name: "multicluster zone not among the directive's",
            input: ". {\n kubernetes cluster.local {\n  multicluster clusterset.local\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "is not authoritative for the multicluster zone clusterset.local. \
                 (authoritative zones: [cluster.local.])",
        },
        Invalid {
            name: "multicluster zone below a served zone",
            input: "clusterset.local cluster.local {\n kubernetes {\n  multicluster a.clusterset.local\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "is not authoritative for the multicluster zone a.clusterset.local. \
                 (authoritative zones: [clusterset.local. cluster.local.])",
        },
        Invalid {
            name: "multicluster zone not a name",
            input: ". {\n kubernetes {\n  multicluster clus..ter\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "multicluster",
        },
        Invalid {
            name: "zonal with noendpoints",
            input: ". {\n kubernetes {\n  noendpoints\n  zonal\n }\n}",
            line: 4,
            kind: "Invalid",
            message: "zonal requires the endpoint cache; remove noendpoints",
        },
        Invalid {
            name: "zonal takes no argument",
            input: ". {\n kubernetes {\n  zonal pin\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "zonal: expected exactly 0 arguments, got 1",
        },
        Invalid {
            name: "reverse only",
            input: ". {\n kubernetes in-addr.arpa 10.0.0.0/8\n}",
            line: 2,
            kind: "Invalid",
            message: "non-reverse zone name must be used",
        },
        Invalid {
            name: "reverse keys only",
            input: "10.0.0.0/8 {\n kubernetes\n}",
            line: 2,
            kind: "Invalid",
            message: "non-reverse zone name must be used",
        },
        Invalid {
            name: "bad zone arg",
            input: ". {\n kubernetes cluster.local:53\n}",
            line: 2,
            kind: "Invalid",
            message: "kubernetes: zone 'cluster.local:53' must not have a port",
        },
        Invalid {
            name: "ttl range",
            input: ". {\n kubernetes {\n  ttl 3601\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "kubernetes: ttl: '3601' must be an integer in range [0, 3600]",
        },
        Invalid {
            name: "ttl negative",
            input: ". {\n kubernetes {\n  ttl -1\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "range [0, 3600]",
        },
        Invalid {
            name: "ttl missing",
            input: ". {\n kubernetes {\n  ttl\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "kubernetes: ttl: expected exactly 1 argument, got 0",
        },
        Invalid {
            name: "ttl two",
            input: ". {\n kubernetes {\n  ttl 1 2\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "expected exactly 1 argument, got 2",
        },
        Invalid {
            name: "pods value",
            input: ". {\n kubernetes {\n  pods yes\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "pods: 'yes' must be one of: disabled, insecure, verified",
        },
        Invalid {
            name: "tls count",
            input: ". {\n kubernetes {\n  tls a b\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "tls: expected exactly 3 arguments, got 2",
        },
        Invalid {
            name: "kubeconfig count",
            input: ". {\n kubernetes {\n  kubeconfig a b c\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "kubeconfig: expected 1 to 2 arguments, got 3",
        },
        Invalid {
            name: "endpoint count",
            input: ". {\n kubernetes {\n  endpoint\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "endpoint: expected at least 1 argument, got 0",
        },
        Invalid {
            name: "flag with argument",
            input: ". {\n kubernetes {\n  noendpoints yes\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "noendpoints: expected exactly 0 arguments, got 1",
        },
        Invalid {
            name: "ignore value",
            input: ". {\n kubernetes {\n  ignore emptyservice\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "'emptyservice' must be 'empty_service'",
        },
        Invalid {
            name: "namespace name",
            input: ". {\n kubernetes {\n  namespaces Default\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "'Default' is not a namespace name",
        },
        Invalid {
            name: "both namespace filters",
            input: ". {\n kubernetes {\n  namespaces a\n  namespace_labels x=y\n }\n}",
            line: 2,
            kind: "Invalid",
            message: "namespaces and namespace_labels cannot both be set",
        },
        Invalid {
            name: "labels",
            input: ". {\n kubernetes {\n  labels a in b\n }\n}",
            line: 3,
            kind: "Selector",
            message: "kubernetes: labels: invalid label selector 'a in b': found 'b', expected: '('",
        },
        Invalid {
            name: "namespace_labels",
            input: ". {\n kubernetes {\n  namespace_labels a>1\n }\n}",
            line: 3,
            kind: "Selector",
            message: "namespace_labels",
        },
        Invalid {
            name: "qps",
            input: ". {\n kubernetes {\n  apiserver_qps 0\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "apiserver_qps: '0' must be a positive number",
        },
        Invalid {
            name: "qps nan",
            input: ". {\n kubernetes {\n  apiserver_qps NaN\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "positive number",
        },
        Invalid {
            name: "burst",
            input: ". {\n kubernetes {\n  apiserver_burst -3\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "apiserver_burst: '-3' must be a positive integer",
        },
        Invalid {
            name: "inflight",
            input: ". {\n kubernetes {\n  apiserver_max_inflight many\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "apiserver_max_inflight",
        },
        Invalid {
            name: "startup_timeout",
            input: ". {\n kubernetes {\n  startup_timeout 5\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "startup_timeout: missing unit in duration '5'",
        },
        Invalid {
            name: "objects empty",
            input: ". {\n kubernetes {\n  objects \"\"\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "objects: empty file name",
        },
        Invalid {
            name: "objects and endpoint",
            input: ". {\n kubernetes {\n  endpoint https://x\n  objects a.json\n }\n}",
            line: 4,
            kind: "Invalid",
            message: "objects (static files) cannot be combined with endpoint (line 3)",
        },
        Invalid {
            name: "snapshot and objects",
            input: ". {\n kubernetes {\n  objects a.json\n  snapshot s.json\n }\n}",
            line: 4,
            kind: "Invalid",
            message: "snapshot persists what the API watch saw; it cannot be combined with objects (line 3)",
        },
        Invalid {
            name: "snapshot twice the argument",
            input: ". {\n kubernetes {\n  snapshot a b\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "snapshot: expected",
        },
        Invalid {
            name: "option block",
            input: ". {\n kubernetes {\n  ttl 5 {\n  }\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "ttl: takes no '{ ... }' block",
        },
        // bind.
        Invalid {
            name: "bind nothing",
            input: ". {\n bind\n}",
            line: 2,
            kind: "Invalid",
            message: "bind: expected at least 1 argument, got 0",
        },
        Invalid {
            name: "bind bad",
            input: ". {\n bind 127.0.0.1 nope0\n}",
            line: 2,
            kind: "Invalid",
            message: "bind: not a valid IP address or interface name: 'nope0'",
        },
        Invalid {
            name: "bind except bad",
            input: ". {\n bind eth0 {\n  except nope0\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "bind: except: not a valid IP address",
        },
        Invalid {
            name: "bind except all",
            input: ". {\n bind lo {\n  except 127.0.0.1\n }\n}",
            line: 2,
            kind: "Invalid",
            message: "every address is excluded",
        },
        Invalid {
            name: "bind option",
            input: ". {\n bind lo {\n  only 127.0.0.1\n }\n}",
            line: 3,
            kind: "UnknownProperty",
            message: "unknown property 'only' in bind",
        },
        Invalid {
            name: "bind except empty",
            input: ". {\n bind lo {\n  except\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "except: expected at least 1 argument",
        },
        // transfer.
        Invalid {
            name: "transfer without to",
            input: ". {\n transfer\n}",
            line: 2,
            kind: "Invalid",
            message: "transfer: 'to' is required",
        },
        Invalid {
            name: "transfer empty block",
            input: ". {\n transfer {\n }\n}",
            line: 2,
            kind: "Invalid",
            message: "'to' is required",
        },
        Invalid {
            name: "transfer bad peer",
            input: ". {\n transfer {\n  to example.org\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "to: 'example.org' is not '*', an IP address",
        },
        Invalid {
            name: "transfer source",
            input: ". {\n transfer {\n  to *\n  source 10.0.0.1\n }\n}",
            line: 4,
            kind: "UnsupportedProperty",
            message: "'source' of transfer",
        },
        Invalid {
            name: "transfer option",
            input: ". {\n transfer {\n  from 10.0.0.1\n }\n}",
            line: 3,
            kind: "UnknownProperty",
            message: "unknown property 'from' in transfer",
        },
        Invalid {
            name: "transfer zone",
            input: ". {\n transfer ex%ample {\n  to *\n }\n}",
            line: 2,
            kind: "Invalid",
            message: "transfer: zone 'ex%ample' has an invalid character",
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
    let errors = server.errors.as_ref().unwrap();
    assert!(errors.consolidate.is_empty() && !errors.stacktrace && errors.line == 2);
    assert_eq!(
        server.health,
        Some(HealthConfig {
            addr: "0.0.0.0:8080".parse().unwrap(),
            lameduck: Duration::from_secs(5),
            line: 3,
        })
    );
    assert_eq!(
        server.ready,
        Some(ReadyConfig {
            addr: "0.0.0.0:8181".parse().unwrap(),
            continuously: false,
            line: 6,
        })
    );
    let k = server.kubernetes.as_ref().unwrap();
    assert_eq!((k.pods, k.ttl, k.line), (PodMode::Insecure, 30, 7));
    assert_eq!(
        server.prometheus,
        Some(PrometheusConfig {
            addr: "0.0.0.0:9153".parse().unwrap(),
            search_path: SearchPathConfig::default(),
            line: 12,
        })
    );
    let [forward] = server.forward.as_slice() else {
        panic!("one forward: {:?}", server.forward)
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
    assert_eq!((forward.policy, forward.line), (ForwardPolicy::Random, 13));
    let cache = server.cache.as_ref().unwrap();
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
    assert_eq!((cache.servfail, cache.line), (Duration::from_secs(5), 16));
    assert_eq!(server.loop_detect, Some(LoopConfig { line: 20 }));
    assert_eq!(
        server.reload,
        Some(ReloadConfig {
            interval: Duration::from_secs(30),
            jitter: Duration::from_secs(15),
            line: 21,
        })
    );
    assert_eq!(server.loadbalance, Some(LoadBalanceConfig { line: 22 }));
    assert!(server.log.is_empty() && server.transfer.is_empty() && server.bind.is_empty());
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
