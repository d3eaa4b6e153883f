//! Corefile fixtures: every `tests/fixtures/corefiles/*.Corefile` parses (or, with a sibling
//! `.err`, fails only because a CoreDNS plugin is not implemented yet, with that message);
//! `rewrite.Corefile`, once such a one, now parses;
//! every `invalid/*.Corefile` fails with the message in its sibling `.err`; and a bogus option
//! inserted into any directive's block is always reported as an unknown property of that
//! directive. `/etc/resolv.conf` is fixed (see [`env`]) so that no test depends on the machine's.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clusterdns::config::{
    CacheClass, Config, Environment, Error, ForwardPolicy, LogClasses, LogLevel, NameMatcher,
    PodMode, RewriteAction, ShorthandOptions, TransferPeer, parse_corefile_in, read_corefile_in,
    shorthand_corefile, shorthand_with,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corefiles")
}

/// The `/etc/resolv.conf` the fixtures see.
const RESOLV_CONF: &str = "nameserver 192.0.2.53\nnameserver 192.0.2.54\n";

/// The machine's interfaces and variables, with a fixed `/etc/resolv.conf`.
fn env() -> Environment {
    Environment::system().with_file("/etc/resolv.conf", RESOLV_CONF)
}

fn read_corefile(path: &Path) -> Result<Config, Error> {
    read_corefile_in(path, &env())
}

/// The `*.Corefile` files of `dir`, sorted.
fn corefiles(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "Corefile"))
        .collect();
    files.sort();
    files
}

fn expected_error(corefile: &Path) -> Option<String> {
    let text = std::fs::read_to_string(corefile.with_extension("err")).ok()?;
    Some(text.trim_end().to_owned())
}

fn names(zones: &[hickory_proto::rr::Name]) -> Vec<String> {
    zones.iter().map(ToString::to_string).collect()
}

#[test]
fn valid_fixtures_parse() {
    let files = corefiles(&fixtures());
    assert!(files.len() >= 8, "fixtures missing: {files:?}");
    for file in files {
        let result = read_corefile(&file);
        match expected_error(&file) {
            None => {
                let config = result.unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                assert!(!config.servers.is_empty(), "{}", file.display());
            }
            Some(want) => {
                let error = result
                    .err()
                    .unwrap_or_else(|| panic!("{} parsed", file.display()));
                assert!(
                    matches!(error, Error::Unsupported { .. }),
                    "{}: {error}",
                    file.display()
                );
                assert!(
                    error.to_string().contains(&want),
                    "{}: {error}",
                    file.display()
                );
            }
        }
    }
}

/// kubeadm's Corefile, unchanged, parses into the typed configuration of each directive.
#[test]
fn kubeadm() {
    let config = read_corefile(&fixtures().join("kubeadm.Corefile")).unwrap();
    let [server] = config.servers.as_slice() else {
        panic!("{config:?}")
    };
    assert!(server.plugins.errors.is_some());
    let health = server.plugins.health.as_ref().unwrap();
    assert_eq!(
        (health.addr, health.lameduck),
        (addr("0.0.0.0:8080"), Duration::from_secs(5))
    );
    assert_eq!(
        server.plugins.ready.as_ref().unwrap().addr,
        addr("0.0.0.0:8181")
    );
    assert_eq!(
        server.plugins.prometheus.as_ref().unwrap().addr,
        addr("0.0.0.0:9153")
    );
    let k = server.plugins.kubernetes.as_ref().unwrap();
    assert_eq!((k.pods, k.ttl), (PodMode::Insecure, 30));
    let upstreams: Vec<&str> = server.plugins.forward[0]
        .to
        .iter()
        .map(|u| u.name.as_str())
        .collect();
    assert_eq!(upstreams, ["192.0.2.53:53", "192.0.2.54:53"]);
    assert_eq!(server.plugins.forward[0].max_concurrent, Some(1000));
    let cache = server.plugins.cache.as_ref().unwrap();
    assert_eq!((cache.success.max_ttl, cache.denial.max_ttl), (30, 30));
    assert_eq!(names(&cache.disable_success), ["cluster.local."]);
    assert_eq!(names(&cache.disable_denial), ["cluster.local."]);
    assert!(server.plugins.loop_detect.is_some() && server.plugins.loadbalance.is_some());
    let reload = server.plugins.reload.as_ref().unwrap();
    assert_eq!(
        (reload.interval, reload.jitter),
        (Duration::from_secs(30), Duration::from_secs(15))
    );
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

#[test]
fn all_plugins() {
    let config = read_corefile(&fixtures().join("all-plugins.Corefile")).unwrap();
    let server = &config.servers[0];
    let errors = server.plugins.errors.as_ref().unwrap();
    assert!(errors.stacktrace);
    let rules: Vec<(&str, LogLevel, bool)> = errors
        .consolidate
        .iter()
        .map(|c| (c.pattern.as_str(), c.level, c.show_first))
        .collect();
    assert_eq!(
        rules,
        [
            (".* i/o timeout$", LogLevel::Warning, true),
            ("^Failed to .*", LogLevel::Info, false),
            ("^x$", LogLevel::Error, false),
        ]
    );
    assert_eq!(
        server.plugins.health.as_ref().unwrap().addr,
        addr("127.0.0.1:18080")
    );
    assert!(server.plugins.ready.as_ref().unwrap().continuously);
    assert_eq!(
        server.plugins.prometheus.as_ref().unwrap().addr,
        addr("[::1]:19153")
    );
    assert_eq!(server.plugins.log.len(), 3);
    assert_eq!(
        names(&server.plugins.log[1].names),
        ["example.org.", "shop.svc.cluster.local."]
    );
    assert!(
        server.plugins.log[1]
            .format
            .ends_with("{duration} \"{>opcode}\"")
    );
    assert_eq!(server.plugins.log[1].classes, LogClasses::ALL);
    assert_eq!(
        server.plugins.log[1].min_duration,
        Some(Duration::from_millis(250))
    );
    assert_eq!(server.plugins.log[2].format, "{remote} {name} {rcode}");

    let [special, default] = server.plugins.forward.as_slice() else {
        panic!("two forwards")
    };
    assert_eq!(special.from.to_string(), "example.org.");
    let upstreams: Vec<&str> = special.to.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(upstreams, ["10.0.0.1:53", "10.0.0.2:5353", "[fd00::1]:53"]);
    assert_eq!(
        names(&special.except),
        ["internal.example.org.", "10.in-addr.arpa."]
    );
    assert!(special.force_tcp && special.prefer_udp && special.failfast_all_unhealthy_upstreams);
    assert_eq!(
        (special.expire, special.max_idle_conns, special.max_fails),
        (Duration::from_secs(30), 20, 3)
    );
    assert_eq!(special.max_connect_attempts, 2);
    assert_eq!(special.policy, ForwardPolicy::Sequential);
    assert_eq!(special.health_check, Duration::from_secs(5));
    assert!(special.health_check_no_rec);
    assert_eq!(special.health_check_domain.to_string(), "example.org.");
    assert_eq!(special.max_concurrent, Some(500));
    assert_eq!(
        (special.next.clone(), special.failover.clone()),
        (vec![3], vec![2, 5])
    );
    let upstreams: Vec<(&str, Option<PathBuf>)> = default
        .to
        .iter()
        .map(|u| (u.name.as_str(), u.from_file.clone()))
        .collect();
    let file = Some(fixtures().join("upstream-resolv.conf"));
    assert_eq!(
        upstreams,
        [
            ("192.0.2.10:53", file.clone()),
            ("[2001:db8::10]:53", file),
            ("10.0.0.53:53", None),
        ]
    );
    assert_eq!(default.policy, ForwardPolicy::RoundRobin);

    let cache = server.plugins.cache.as_ref().unwrap();
    assert_eq!(names(&cache.zones), ["example.org.", "cluster.local."]);
    assert_eq!(
        (cache.success, cache.denial),
        (
            CacheClass {
                capacity: 4864,
                max_ttl: 300,
                min_ttl: 10
            },
            CacheClass {
                capacity: 2304,
                max_ttl: 60,
                min_ttl: 1
            }
        )
    );
    assert_eq!(names(&cache.disable_success), ["cluster.local."]);
    assert_eq!(names(&cache.disable_denial), ["."]);
    let prefetch = cache.prefetch.unwrap();
    assert_eq!(
        (prefetch.amount, prefetch.duration, prefetch.percentage),
        (10, Duration::from_secs(60), 20)
    );
    let stale = cache.serve_stale.unwrap();
    assert_eq!(
        (stale.duration, stale.verified),
        (Duration::from_secs(7200), true)
    );
    assert_eq!(cache.servfail, Duration::from_secs(10));
    assert!(cache.keepttl);
    let reload = server.plugins.reload.as_ref().unwrap();
    assert_eq!(
        (reload.interval, reload.jitter),
        (Duration::from_secs(60), Duration::from_secs(10))
    );
    assert!(server.plugins.loop_detect.is_some() && server.plugins.loadbalance.is_some());

    assert_eq!(server.plugins.bufsize.as_ref().map(|b| b.size), Some(1232));
    assert!(server.plugins.any.is_some());
    let chaos = server.plugins.chaos.as_ref().unwrap();
    assert_eq!(
        (chaos.version.as_str(), chaos.authors.clone()),
        (
            "clusterdns-test",
            vec!["alice".to_owned(), "bob".to_owned()]
        )
    );
    let hosts = server.plugins.hosts.as_ref().unwrap();
    assert_eq!(hosts.path, fixtures().join("extra.hosts"));
    assert_eq!(names(&hosts.zones), ["example.org."]);
    assert_eq!(hosts.inline, ["10.0.0.1 a.example.org"]);
    assert_eq!((hosts.ttl, hosts.reload), (60, Duration::ZERO));
    assert!(hosts.no_reverse && hosts.fallthrough == Some(vec![]) && hosts.fallthrough_unsupported);
    let [ip, invalid] = server.plugins.template.as_slice() else {
        panic!("two templates")
    };
    assert_eq!(
        (ip.class, ip.qtype, names(&ip.zones)),
        (1, 1, vec!["example.org.".to_owned()])
    );
    assert_eq!(
        ip.regex[0].as_str(),
        "^ip-(?P<a>[0-9]+)[.]example[.]org[.]$"
    );
    assert_eq!(
        (ip.answer.len(), ip.additional.len(), ip.authority.len()),
        (1, 1, 1)
    );
    assert_eq!(
        ip.answer[0].source(),
        "{{ .Name }} 60 IN A 10.0.0.{{ .Group.a }}"
    );
    assert_eq!(
        (ip.rcode, ip.ederror.clone()),
        (0, Some((15, "Blocked".to_owned())))
    );
    assert_eq!((invalid.class, invalid.qtype, invalid.rcode), (255, 255, 3));
    let rules: Vec<(bool, usize)> = server
        .plugins
        .rewrite
        .iter()
        .map(|r| (r.stop, r.line))
        .collect();
    assert_eq!(rules.len(), 3);
    assert!(!rules[0].0 && rules[1].0 && rules[2].0);
    assert!(matches!(
        &server.plugins.rewrite[1].action,
        RewriteAction::Name { answers, auto: false, .. } if answers.len() == 1
    ));
    assert!(matches!(
        &server.plugins.rewrite[2].action,
        RewriteAction::Ttl {
            min: 30,
            max: 300,
            ..
        }
    ));
}

/// The rewrite fixture (once refused as not implemented) runs.
#[test]
fn rewrite() {
    let config = read_corefile(&fixtures().join("rewrite.Corefile")).unwrap();
    let [rule] = config.servers[0].plugins.rewrite.as_slice() else {
        panic!("one rule")
    };
    assert!(rule.stop);
    match &rule.action {
        RewriteAction::Name {
            matcher: NameMatcher::Exact(from),
            replacement,
            auto: true,
            answers,
        } => {
            assert_eq!(
                (from.as_str(), replacement.as_str()),
                ("old.example.com.", "new.example.com.")
            );
            assert!(answers.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

/// NodeLocal DNSCache's Corefile: four blocks on port 53 bound to the same addresses, sharing
/// one prometheus endpoint.
#[test]
fn nodelocaldns() {
    let config = read_corefile(&fixtures().join("nodelocaldns.Corefile")).unwrap();
    assert_eq!(config.servers.len(), 4);
    for server in &config.servers {
        assert_eq!(
            server.plugins.prometheus.as_ref().unwrap().addr,
            addr("0.0.0.0:9253")
        );
        assert!(server.plugins.reload.is_some() && server.plugins.loop_detect.is_some());
    }
    let cluster = &config.servers[0];
    let cache = cluster.plugins.cache.as_ref().unwrap();
    assert_eq!((cache.success.max_ttl, cache.denial.max_ttl), (30, 5));
    assert!(cluster.plugins.forward[0].force_tcp);
    assert_eq!(
        cluster.plugins.health.as_ref().unwrap().addr,
        addr("169.254.20.10:8080")
    );
    assert_eq!(config.servers[3].plugins.forward[0].to.len(), 2);
}

#[test]
fn invalid_fixtures_fail_with_their_message() {
    let files = corefiles(&fixtures().join("invalid"));
    assert!(files.len() >= 15, "fixtures missing: {files:?}");
    for file in files {
        let want =
            expected_error(&file).unwrap_or_else(|| panic!("{} has no .err file", file.display()));
        let error = match read_corefile(&file) {
            Ok(config) => panic!("{} parsed: {config:?}", file.display()),
            Err(error) => error,
        };
        assert!(
            error.to_string().contains(&want),
            "{}:\n got: {error}\nwant: {want}",
            file.display()
        );
        assert_eq!(error.file(), file, "{}", file.display());
    }
}

/// The directives whose option blocks the mutation test edits.
const BLOCK_DIRECTIVES: &[&str] = &[
    "kubernetes",
    "forward",
    "cache",
    "health",
    "ready",
    "errors",
    "log",
    "transfer",
    "hosts",
    "template",
];

/// Inserting a bogus option line into the block of any directive of any valid fixture must
/// fail with `UnknownProperty` naming that directive and that line.
#[test]
fn bogus_option_in_any_block_is_unknown_property() {
    let mut mutated: Vec<&str> = Vec::new();
    for file in corefiles(&fixtures()) {
        if expected_error(&file).is_some() {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let trimmed = line.trim();
            let Some(&directive) = BLOCK_DIRECTIVES
                .iter()
                .find(|d| trimmed.split_whitespace().next() == Some(**d))
            else {
                continue;
            };
            if !trimmed.ends_with('{') {
                continue;
            }
            let mut edited: Vec<&str> = lines.clone();
            edited.insert(index + 1, "        bogus_option 1 2");
            let error = parse_corefile_in(&edited.join("\n"), &file, &env()).unwrap_err();
            match &error {
                Error::UnknownProperty {
                    directive: got,
                    name,
                    file: at,
                    line,
                    ..
                } => {
                    assert_eq!(
                        (got.as_str(), name.as_str()),
                        (directive, "bogus_option"),
                        "{error}"
                    );
                    assert_eq!(
                        (at.as_path(), *line),
                        (file.as_path(), index + 2),
                        "{error}"
                    );
                }
                other => panic!("{} line {}: {other}", file.display(), index + 2),
            }
            mutated.push(directive);
        }
    }
    for directive in BLOCK_DIRECTIVES {
        assert!(
            mutated.contains(directive),
            "no {directive} block mutated: {mutated:?}"
        );
    }
    assert!(mutated.len() >= 20, "only {} blocks mutated", mutated.len());
}

#[test]
fn multi_block() {
    let config = read_corefile(&fixtures().join("multi-block.Corefile")).unwrap();
    let summary: Vec<(Vec<String>, u16)> = config
        .servers
        .iter()
        .map(|s| (names(&s.zones), s.port))
        .collect();
    let owned = |zones: &[&str], port| (zones.iter().map(|z| (*z).to_owned()).collect(), port);
    assert_eq!(
        summary,
        [
            owned(&["cluster.local.", "96.10.in-addr.arpa."], 53),
            owned(&["example.internal."], 5300),
            owned(&["clusterset.local."], 53),
            owned(&["."], 1053),
        ]
    );
    let first = &config.servers[0];
    let loopback: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()];
    assert_eq!(first.plugins.bind, loopback);
    let k = first.plugins.kubernetes.as_ref().unwrap();
    assert_eq!(names(&k.zones), ["cluster.local.", "96.10.in-addr.arpa."]);
    assert_eq!(
        (k.pods, k.ttl, k.endpoint_pod_names),
        (PodMode::Verified, 10, true)
    );
    assert_eq!(k.namespaces, ["default", "kube-system"]);
    assert_eq!(
        names(k.fallthrough.as_deref().unwrap()),
        ["96.10.in-addr.arpa."]
    );
    assert_eq!(first.plugins.transfer[0].to[0], TransferPeer::Any);
    assert_eq!(
        config.servers[1].plugins.kubernetes, first.plugins.kubernetes,
        "a split block shares directives"
    );
    // The kubernetes zones of a block default to all of its keys.
    let k = config.servers[2].plugins.kubernetes.as_ref().unwrap();
    assert!(k.noendpoints && k.ignore_empty_service);
    assert!(config.servers[3].plugins.kubernetes.is_none());
}

#[test]
fn snippets_and_imports() {
    let config = read_corefile(&fixtures().join("snippets.Corefile")).unwrap();
    let [server] = config.servers.as_slice() else {
        panic!("{config:?}")
    };
    let loopback: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()];
    assert_eq!(
        server.plugins.bind, loopback,
        "glob imports in file-name order"
    );
    let k = server.plugins.kubernetes.as_ref().unwrap();
    assert_eq!((k.pods, k.ttl), (PodMode::Insecure, 30));
    assert_eq!(
        names(k.fallthrough.as_deref().unwrap()),
        ["in-addr.arpa.", "ip6.arpa."]
    );
    assert_eq!(k.labels.as_ref().unwrap().requirements.len(), 2);
}

#[test]
fn cidr_keys() {
    let config = read_corefile(&fixtures().join("cidr-keys.Corefile")).unwrap();
    let zones = names(&config.servers[0].zones);
    let v6 = |nibble: &str| {
        format!("{nibble}.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa.")
    };
    let want = [
        "0.0.10.in-addr.arpa.".to_owned(),
        "0.1.10.in-addr.arpa.".to_owned(),
        "1.1.10.in-addr.arpa.".to_owned(),
        v6("0"),
        v6("1"),
        v6("2"),
        v6("3"),
        "cluster.local.".to_owned(),
    ];
    assert_eq!(zones, want);
    let k = config.servers[0].plugins.kubernetes.as_ref().unwrap();
    assert_eq!(k.zones[k.primary_zone].to_string(), "cluster.local.");
}

#[test]
fn all_options() {
    let config = read_corefile(&fixtures().join("all-options.Corefile")).unwrap();
    let k = config.servers[0].plugins.kubernetes.as_ref().unwrap();
    assert_eq!(k.api.endpoint.as_deref(), Some("https://10.0.0.1:6443"));
    assert_eq!(
        k.api.tls.as_ref().map(|t| t.ca.clone()),
        Some(PathBuf::from("/etc/k8s/ca.crt"))
    );
    assert_eq!(
        k.api.kubeconfig,
        Some((
            PathBuf::from("/etc/k8s/kubeconfig"),
            Some("kind-kind".to_owned())
        ))
    );
    assert_eq!(
        (k.api.qps, k.api.burst, k.api.max_inflight),
        (Some(50.5), Some(100), Some(20))
    );
    assert_eq!(k.startup_timeout, std::time::Duration::from_secs(90));
    assert_eq!(k.fallthrough, Some(vec![]));
    assert!(k.noendpoints && k.ignore_empty_service && k.endpoint_pod_names);
    assert_eq!(k.labels.as_ref().unwrap().requirements.len(), 2);
    assert_eq!(k.namespace_labels.as_ref().unwrap().requirements.len(), 1);

    let k = config.servers[1].plugins.kubernetes.as_ref().unwrap();
    let dir = fixtures();
    assert_eq!(
        k.objects,
        [
            dir.join("dump.json"),
            dir.join("more objects.json"),
            dir.join("extra.json")
        ]
    );
    assert_eq!(k.namespaces, ["shop", "payments"]);
}

#[test]
fn syntax_corners() {
    let config = read_corefile(&fixtures().join("syntax.Corefile")).unwrap();
    assert_eq!(
        names(&config.servers[0].zones),
        ["a.example.", "b.example.", "c.example."]
    );
    let k = config.servers[0].plugins.kubernetes.as_ref().unwrap();
    assert_eq!(
        (names(&k.zones), k.ttl, k.pods),
        (vec!["a.example.".to_owned()], 7, PodMode::Insecure)
    );
    assert_eq!(config.servers[1].port, 1054);
}

/// The `--objects` shorthand is the fixture, and parses to the same configuration.
#[test]
fn shorthand_is_a_corefile() {
    let listen = "127.0.0.1:1053".parse().unwrap();
    let objects = [PathBuf::from("dump.json")];
    let fixture = fixtures().join("objects-shorthand.Corefile");
    assert_eq!(
        shorthand_corefile(&objects, listen),
        std::fs::read_to_string(&fixture).unwrap()
    );
    // Forwarding to a resolv.conf with the fixtures' upstreams, wherever it is.
    let dir = tempfile::tempdir().unwrap();
    let resolv_conf = dir.path().join("resolv.conf");
    std::fs::write(&resolv_conf, RESOLV_CONF).unwrap();
    let options = ShorthandOptions {
        resolv_conf: Some(resolv_conf.clone()),
        ..ShorthandOptions::new(listen)
    };
    let from_shorthand = shorthand_with(&objects, &options).unwrap();
    let from_fixture = read_corefile(&fixture).unwrap();
    let mut expected = from_fixture.clone();
    let server = &mut expected.servers[0];
    // The fixture's objects are relative to its directory; the shorthand's to the working one.
    if let Some(k) = server.plugins.kubernetes.as_mut() {
        k.objects = objects.to_vec();
    }
    for upstream in &mut server.plugins.forward[0].to {
        upstream.from_file = Some(resolv_conf.clone());
    }
    assert_eq!(from_shorthand, expected);
}

/// What the distributions' templates do to a Corefile: tabs and runs of spaces, CRLF line
/// ends, `}` at any indentation, and `import` globs inside a block and at the top level
/// (relative to the Corefile's directory) that may match nothing.
#[test]
fn whitespace_braces_and_optional_imports() {
    let config = read_corefile(&fixtures().join("edge/whitespace.Corefile")).unwrap();
    let [root, internal] = config.servers.as_slice() else {
        panic!("{config:?}")
    };
    assert_eq!(
        (names(&root.zones), root.port),
        (vec![".".to_owned()], 1053)
    );
    assert!(root.plugins.errors.is_some());
    assert_eq!(
        root.plugins.ready.as_ref().unwrap().addr,
        addr("127.0.0.1:18181")
    );
    let k = root.plugins.kubernetes.as_ref().unwrap();
    assert_eq!(
        names(&k.zones),
        ["cluster.local.", "in-addr.arpa.", "ip6.arpa."]
    );
    assert_eq!(k.pods, PodMode::Insecure);
    assert_eq!(
        names(k.fallthrough.as_deref().unwrap()),
        ["in-addr.arpa.", "ip6.arpa."]
    );
    let upstreams: Vec<&str> = root.plugins.forward[0]
        .to
        .iter()
        .map(|u| u.name.as_str())
        .collect();
    assert_eq!(upstreams, ["10.0.0.1:53", "10.0.0.2:53"]);
    assert_eq!(root.plugins.forward[0].max_concurrent, Some(1000));
    assert_eq!(root.plugins.cache.as_ref().unwrap().success.max_ttl, 30);
    // custom/query-log.override, imported inside the block.
    assert_eq!(root.plugins.log.len(), 1);
    // custom/internal.server, imported at the top level.
    assert_eq!(
        (names(&internal.zones), internal.port),
        (vec!["example.internal.".to_owned()], 1053)
    );
    assert_eq!(internal.plugins.forward[0].to[0].name, "10.0.0.53:53");
}

/// An import glob that matches nothing is a warning naming the line and the pattern, and the
/// server starts (k3s and AKS import optional `custom/*.override` and `*.server` files); a
/// plain path that does not exist stays an error.
#[test]
fn an_empty_import_glob_is_a_warning_and_the_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("custom")).unwrap();
    let corefile = dir.path().join("Corefile");
    std::fs::write(
        &corefile,
        ".:0 {\n    bind 127.0.0.1\n    import custom/*.override\n    forward . 127.0.0.1:9\n}\nimport custom/*.server\n",
    )
    .unwrap();
    let server = crate::common::binary::TestServer::start(&[
        "serve",
        "--corefile",
        corefile.to_str().unwrap(),
    ]);
    let log = server.log();
    for (line, pattern) in [(3, "custom/*.override"), (6, "custom/*.server")] {
        let want = format!(
            "{}:{line}: No files matching import glob pattern: {}",
            corefile.display(),
            dir.path().join(pattern).display()
        );
        assert!(log.contains(&want), "{want}\n{log}");
    }
    drop(server);

    std::fs::write(&corefile, ". {\n    import custom/missing.override\n}\n").unwrap();
    let error = read_corefile(&corefile).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!(
            "{}:2: import 'custom/missing.override': file",
            corefile.display()
        )),
        "{error}"
    );
}

/// The same zone twice on one port is CoreDNS's error, however it is spelled, in one key list
/// or two blocks; on another port, or under another name, it is not.
#[test]
fn duplicate_zones() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("Corefile");
    let duplicate = |text: &str| {
        parse_corefile_in(text, &file, &env()).err().map(|e| {
            e.to_string()
                .replace(&file.display().to_string(), "Corefile")
        })
    };
    let cases: &[(&str, Option<&str>)] = &[
        (
            "example.org example.org {\n}\n",
            Some("Corefile:1: cannot serve dns://example.org.:53 - it is already defined"),
        ),
        (
            "example.org {\n}\nEXAMPLE.org.:53 {\n}\n",
            Some("Corefile:3: cannot serve dns://example.org.:53 - it is already defined"),
        ),
        (
            ".:5353 {\n}\ndns://.:5353 {\n}\n",
            Some("Corefile:3: cannot serve dns://.:5353 - it is already defined"),
        ),
        (".:53 {\n}\n.:5353 {\n}\n", None),
        ("example.org {\n}\nsub.example.org {\n}\n", None),
        // OpenShift's two blocks on one port: different zones.
        (".:5353 {\n}\nhostname.bind:5353 {\n}\n", None),
    ];
    for (text, want) in cases {
        assert_eq!(duplicate(text).as_deref(), *want, "{text}");
    }
}

/// A plugin used twice in one server block is CoreDNS's error (`plugin.ErrOnce`), with the
/// line of each.
#[test]
fn a_plugin_used_twice_in_a_block() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("Corefile");
    for plugin in [
        "cache",
        "errors",
        "kubernetes",
        "loop",
        "prometheus",
        "ready",
    ] {
        let text = format!(". {{\n    {plugin}\n    {plugin}\n}}\n");
        let error = parse_corefile_in(&text, &file, &env())
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            format!(
                "{}:3: plugin/{plugin}: this plugin can only be used once per Server Block \
                 (first at line 2)",
                file.display()
            )
        );
    }
    // CoreDNS takes these twice and keeps one; clusterdns refuses, and says so.
    for (plugin, line) in [
        ("health", "health"),
        ("reload", "reload"),
        ("loadbalance", "loadbalance"),
        ("autopath", "autopath @kubernetes"),
    ] {
        let text = format!(". {{\n    {line}\n    {line}\n}}\n");
        let error = parse_corefile_in(&text, &file, &env())
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!(
                "{}:3: {plugin}: may be used only once per server block (first at line 2; \
                 CoreDNS would silently keep only one of them)",
                file.display()
            )),
            "{error}"
        );
    }
    // forward and log may repeat, as in CoreDNS.
    let text = ". {\n    log\n    log . {\n        class error\n    }\n    forward example.org 10.0.0.1\n    forward . 10.0.0.2\n}\n";
    let config = parse_corefile_in(text, &file, &env()).unwrap();
    assert_eq!(
        (
            config.servers[0].plugins.log.len(),
            config.servers[0].plugins.forward.len()
        ),
        (2, 2)
    );
}
