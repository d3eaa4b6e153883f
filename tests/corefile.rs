//! Corefile fixtures: every `tests/fixtures/corefiles/*.Corefile` parses (or, with a sibling
//! `.err`, fails only because a CoreDNS plugin is not implemented yet, with that message);
//! every `invalid/*.Corefile` fails with the message in its sibling `.err`; and a bogus option
//! inserted into any kubernetes block is always reported as an unknown property.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use clusterdns::config::{
    Error, PodMode, TransferPeer, parse_corefile, read_corefile, shorthand, shorthand_corefile,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corefiles")
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

#[test]
fn kubeadm_fails_only_on_errors() {
    let error = read_corefile(&fixtures().join("kubeadm.Corefile")).unwrap_err();
    assert!(
        matches!(&error, Error::Unsupported { directive, line: 2, .. } if directive == "errors"),
        "{error}"
    );
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

/// Inserting a bogus option line into the kubernetes block of every valid fixture must fail
/// with `UnknownProperty` naming that line.
#[test]
fn bogus_option_in_any_kubernetes_block_is_unknown_property() {
    let mut mutated = 0;
    for file in corefiles(&fixtures()) {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let trimmed = line.trim();
            if !(trimmed.starts_with("kubernetes") && trimmed.ends_with('{')) {
                continue;
            }
            let mut edited: Vec<&str> = lines.clone();
            edited.insert(index + 1, "        bogus_option 1 2");
            let error = parse_corefile(&edited.join("\n"), &file).unwrap_err();
            match &error {
                Error::UnknownProperty {
                    directive,
                    name,
                    file: at,
                    line,
                } => {
                    assert_eq!(
                        (directive.as_str(), name.as_str()),
                        ("kubernetes", "bogus_option")
                    );
                    assert_eq!(
                        (at.as_path(), *line),
                        (file.as_path(), index + 2),
                        "{error}"
                    );
                }
                other => panic!("{} line {}: {other}", file.display(), index + 2),
            }
            mutated += 1;
        }
    }
    assert!(mutated >= 5, "only {mutated} kubernetes blocks mutated");
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
    assert_eq!(first.bind, loopback);
    let k = first.kubernetes.as_ref().unwrap();
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
    assert_eq!(first.transfer[0].to[0], TransferPeer::Any);
    assert_eq!(
        config.servers[1].kubernetes, first.kubernetes,
        "a split block shares directives"
    );
    // The kubernetes zones of a block default to all of its keys.
    let k = config.servers[2].kubernetes.as_ref().unwrap();
    assert!(k.noendpoints && k.ignore_empty_service);
    assert!(config.servers[3].kubernetes.is_none());
}

#[test]
fn snippets_and_imports() {
    let config = read_corefile(&fixtures().join("snippets.Corefile")).unwrap();
    let [server] = config.servers.as_slice() else {
        panic!("{config:?}")
    };
    let loopback: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()];
    assert_eq!(server.bind, loopback, "glob imports in file-name order");
    let k = server.kubernetes.as_ref().unwrap();
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
    let k = config.servers[0].kubernetes.as_ref().unwrap();
    assert_eq!(k.zones[k.primary_zone].to_string(), "cluster.local.");
}

#[test]
fn all_options() {
    let config = read_corefile(&fixtures().join("all-options.Corefile")).unwrap();
    let k = config.servers[0].kubernetes.as_ref().unwrap();
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

    let k = config.servers[1].kubernetes.as_ref().unwrap();
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
    let k = config.servers[0].kubernetes.as_ref().unwrap();
    assert_eq!(
        (names(&k.zones), k.ttl, k.pods),
        (vec!["a.example.".to_owned()], 7, PodMode::Insecure)
    );
    assert_eq!(config.servers[1].port, 1054);
}

#[test]
fn shorthand_is_a_corefile() {
    let listen = "127.0.0.1:1053".parse().unwrap();
    let objects = [PathBuf::from("dump.json")];
    let fixture = fixtures().join("objects-shorthand.Corefile");
    assert_eq!(
        shorthand_corefile(&objects, listen),
        std::fs::read_to_string(&fixture).unwrap()
    );
    let from_shorthand = shorthand(&objects, listen).unwrap();
    let from_fixture = read_corefile(&fixture).unwrap();
    let mut expected = from_fixture.clone();
    // The fixture's objects are relative to its directory; the shorthand's to the working one.
    if let Some(k) = expected.servers[0].kubernetes.as_mut() {
        k.objects = objects.to_vec();
    }
    assert_eq!(from_shorthand, expected);
}
