//! Tests of the *kubernetes* directive, in whole Corefiles.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::test_support::{Invalid, check_invalid_corefiles, env, names, parse};
use crate::config::*;

/// `kubernetes cluster.local in-addr.arpa { OPTIONS }` in a `.:53` block; the options
/// start on line 3.
fn kubernetes(options: &str) -> Result<KubernetesConfig, Error> {
    let text = format!(".:53 {{\n kubernetes cluster.local in-addr.arpa {{\n{options}\n }}\n}}\n");
    let config = parse(&text)?;
    Ok(config.servers[0].plugins.kubernetes.clone().unwrap())
}

#[test]
fn kubernetes_defaults() {
    let config = parse(". {\n kubernetes\n}").unwrap();
    let k = config.servers[0].plugins.kubernetes.as_ref().unwrap();
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
        ("list_mode default", "", |k| {
            k.api.list_mode == ListMode::Streaming
        }),
        ("list_mode streaming", "list_mode streaming", |k| {
            k.api.list_mode == ListMode::Streaming
        }),
        ("list_mode paginated", "list_mode paginated", |k| {
            k.api.list_mode == ListMode::Paginated
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
        let k = config.servers[0].plugins.kubernetes.as_ref().unwrap();
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
            let k = server.plugins.kubernetes.as_ref().unwrap();
            assert_eq!(names(&k.zones), *zones, "{name}");
            assert_eq!(k.primary_zone, *primary, "{name}");
        }
    }
}

#[test]
fn objects_are_relative_to_the_corefile() {
    let text = ". {\n kubernetes {\n  objects dump.json /abs.json\n }\n}";
    let config = parse_corefile_in(text, Path::new("/etc/coredns/Corefile"), &env()).unwrap();
    let k = config.servers[0].plugins.kubernetes.as_ref().unwrap();
    assert_eq!(
        k.objects,
        [
            PathBuf::from("/etc/coredns/dump.json"),
            PathBuf::from("/abs.json")
        ]
    );
}

/// Errors of the *kubernetes* directive, in whole Corefiles.
#[test]
fn errors() {
    let cases: &[Invalid<'_>] = &[
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
            name: "list_mode",
            input: ". {\n kubernetes {\n  list_mode chunked\n }\n}",
            line: 3,
            kind: "Invalid",
            message: "list_mode: 'chunked' must be 'streaming' or 'paginated'",
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
    ];
    check_invalid_corefiles(cases);
}
