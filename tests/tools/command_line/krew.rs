//! deploy/krew/: the plugin manifest has what krew requires of one, and `cargo xtask
//! krew-manifest` (xtask/src/krew.rs) makes a release's manifest from its archives (their URI
//! and sha256 in each platform).

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::run_with;

fn parse(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("not YAML: {e}\n{text}"))
}

fn string<'a>(value: &'a Value, path: &str) -> &'a str {
    value
        .pointer(path)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {path}"))
}

/// The checks krew makes of a plugin manifest before it installs it (its index validation),
/// and the index's own expectations (a homepage, one platform per supported os/arch),
/// against a manifest whose release values are `release` (placeholders in the template).
fn check_manifest(manifest: &Value, release: bool) {
    assert_eq!(
        string(manifest, "/apiVersion"),
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(string(manifest, "/kind"), "Plugin");
    // The name is the file's, and the one kubectl runs: kubectl-<name>.
    assert_eq!(string(manifest, "/metadata/name"), "clusterdns");
    let short = string(manifest, "/spec/shortDescription");
    assert!(
        !short.is_empty() && !short.contains(['\r', '\n']),
        "{short:?}"
    );
    assert!(!string(manifest, "/spec/description").is_empty());
    let version = string(manifest, "/spec/version");
    let homepage = string(manifest, "/spec/homepage");
    if release {
        let semver = regex::Regex::new(r"^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$").unwrap();
        assert!(semver.is_match(version), "{version}");
        assert!(homepage.starts_with("https://"), "{homepage}");
    } else {
        assert_eq!((version, homepage), ("@VERSION@", "@HOMEPAGE@"));
    }
    let platforms = manifest
        .pointer("/spec/platforms")
        .and_then(Value::as_array)
        .expect("spec.platforms");
    let mut targets = Vec::new();
    let sha256 = regex::Regex::new("^[a-f0-9]{64}$").unwrap();
    for platform in platforms {
        let labels = platform
            .pointer("/selector/matchLabels")
            .and_then(Value::as_object)
            .expect("a selector with matchLabels");
        assert!(
            labels.keys().all(|key| key == "os" || key == "arch"),
            "krew selects on os and arch only: {labels:?}"
        );
        let target = (
            string(platform, "/selector/matchLabels/os").to_owned(),
            string(platform, "/selector/matchLabels/arch").to_owned(),
        );
        let (uri, sha) = (string(platform, "/uri"), string(platform, "/sha256"));
        if release {
            assert!(uri.starts_with("https://"), "{uri}");
            assert!(sha256.is_match(sha), "{sha}");
        } else {
            let tag = format!("{}_{}", target.0, target.1);
            assert_eq!(
                (uri, sha),
                (&*format!("@URI_{tag}@"), &*format!("@SHA256_{tag}@"))
            );
        }
        assert_eq!(string(platform, "/bin"), "clusterdns");
        let files = platform
            .pointer("/files")
            .and_then(Value::as_array)
            .expect("files");
        assert!(!files.is_empty());
        for file in files {
            assert!(!string(file, "/from").is_empty() && !string(file, "/to").is_empty());
        }
        targets.push(target);
    }
    targets.sort();
    let wanted =
        [("linux", "amd64"), ("linux", "arm64")].map(|(o, a)| (o.to_owned(), a.to_owned()));
    assert_eq!(targets, wanted);
}

#[test]
fn the_manifest_has_what_krew_requires() {
    let text = crate::common::read("deploy/krew/clusterdns.yaml");
    check_manifest(&parse(&text), false);
}

/// A release archive for `arch`: `clusterdns` (here a stand-in, different per arch) at its top.
fn archive(dir: &Path, version: &str, arch: &str, member: &str) {
    let stage = tempfile::tempdir().unwrap();
    std::fs::write(stage.path().join(member), format!("a {arch} binary")).unwrap();
    let name = format!("clusterdns-{version}-linux-{arch}.tar.gz");
    let tar = run_with(
        Command::new("tar")
            .args(["-czf", dir.join(&name).to_str().unwrap(), "-C"])
            .arg(stage.path())
            .arg(member),
    );
    assert_eq!(tar.code, 0, "{}", tar.stderr);
}

/// `cargo xtask krew-manifest` with these flags: the same code as the command, its output
/// and status.
fn fill(archives: &Path, version: &str) -> super::Ran {
    let release = xtask::krew::Release::from_args(&[
        "--version",
        version,
        "--url",
        "https://releases.example/clusterdns/v0.3.1/",
        "--homepage",
        "https://example.org/clusterdns",
        "--archives",
        archives.to_str().unwrap(),
    ])
    .unwrap();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let code = xtask::krew::run(&release, &mut stdout, &mut stderr);
    super::Ran {
        code,
        stdout: String::from_utf8(stdout).unwrap(),
        stderr: String::from_utf8(stderr).unwrap(),
    }
}

#[test]
fn fill_makes_a_release_manifest_from_its_archives() {
    let dir = tempfile::tempdir().unwrap();
    for arch in ["amd64", "arm64"] {
        archive(dir.path(), "v0.3.1", arch, "clusterdns");
    }
    let ran = fill(dir.path(), "v0.3.1");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let manifest = parse(&ran.stdout);
    check_manifest(&manifest, true);
    assert_eq!(string(&manifest, "/spec/version"), "v0.3.1");
    for platform in manifest
        .pointer("/spec/platforms")
        .unwrap()
        .as_array()
        .unwrap()
    {
        let arch = string(platform, "/selector/matchLabels/arch");
        let name = format!("clusterdns-v0.3.1-linux-{arch}.tar.gz");
        assert_eq!(
            string(platform, "/uri"),
            format!("https://releases.example/clusterdns/v0.3.1/{name}")
        );
        let bytes = std::fs::read(dir.path().join(&name)).unwrap();
        let sha = format!("{:x}", Sha256::digest(&bytes));
        assert_eq!(string(platform, "/sha256"), sha, "{arch}");
    }
    // Nothing else of the template changed.
    let template = parse(&crate::common::read("deploy/krew/clusterdns.yaml"));
    assert_eq!(
        manifest["spec"]["description"],
        template["spec"]["description"]
    );
}

#[test]
fn fill_refuses_what_krew_would_not_install() {
    let dir = tempfile::tempdir().unwrap();
    archive(dir.path(), "v0.3.1", "amd64", "clusterdns");
    // No arm64 archive.
    let ran = fill(dir.path(), "v0.3.1");
    assert_eq!(ran.code, 1);
    let missing = dir.path().join("clusterdns-v0.3.1-linux-arm64.tar.gz");
    assert!(
        ran.stderr.contains(&format!(
            "krew-manifest: {}: no archive for linux/arm64",
            missing.display()
        )),
        "{}",
        ran.stderr
    );
    assert_eq!(ran.stdout, "");
    // An archive without the binary at its top.
    archive(dir.path(), "v0.3.1", "arm64", "kubectl-clusterdns");
    let ran = fill(dir.path(), "v0.3.1");
    assert_eq!(ran.code, 1);
    assert!(
        ran.stderr
            .contains("no file clusterdns at the top of the archive"),
        "{}",
        ran.stderr
    );
    // krew's versions are vMAJOR.MINOR.PATCH.
    let ran = fill(dir.path(), "0.3.1");
    assert_eq!(ran.code, 1);
    assert!(
        ran.stderr
            .contains("--version 0.3.1: expected vMAJOR.MINOR.PATCH"),
        "{}",
        ran.stderr
    );
}
