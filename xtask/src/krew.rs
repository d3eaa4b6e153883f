//! `cargo xtask krew-manifest`: the krew manifest of a release, deploy/krew/clusterdns.yaml
//! with its `@...@` placeholders filled from the release's archives (deploy/krew/README.md).
//!
//! For each platform the template names (its `@URI_OS_ARCH@` placeholders: linux amd64 and
//! arm64), the archives' directory must hold `clusterdns-VERSION-OS-ARCH.tar.gz` with the
//! binary `clusterdns` at its top; the platform's `uri` becomes
//! `URL/clusterdns-VERSION-OS-ARCH.tar.gz` and its `sha256` the archive's. Anything krew would
//! refuse is one line naming what is wrong, and status 1.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use sha2::{Digest as _, Sha256};

/// What the command says on each of its error lines.
pub const NAME: &str = "krew-manifest";

/// A release, as `cargo xtask krew-manifest` takes it.
#[derive(Debug, Clone, clap::Args)]
pub struct Release {
    /// The release's version, krew's form: vMAJOR.MINOR.PATCH, such as v0.2.0.
    #[arg(long)]
    pub version: String,
    /// Where the archives are published: each platform's uri is URL/ARCHIVE.
    #[arg(long)]
    pub url: String,
    /// The plugin's homepage.
    #[arg(long)]
    pub homepage: String,
    /// The directory of the release's archives, clusterdns-VERSION-OS-ARCH.tar.gz.
    #[arg(long, value_name = "DIR")]
    pub archives: PathBuf,
}

#[derive(clap::Parser)]
#[command(name = "cargo xtask krew-manifest")]
struct ReleaseOnly {
    #[command(flatten)]
    release: Release,
}

impl Release {
    /// The release from the command's flags (`["--version", "v0.2.0", ...]`).
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<Self> {
        use clap::Parser as _;
        let parsed = ReleaseOnly::try_parse_from(
            std::iter::once(NAME).chain(args.iter().map(AsRef::as_ref)),
        )
        .map_err(|e| anyhow!("{}", e.to_string().trim()))?;
        Ok(parsed.release)
    }
}

/// The template the release process fills: deploy/krew/clusterdns.yaml.
pub fn template() -> PathBuf {
    crate::root().join("deploy/krew/clusterdns.yaml")
}

/// The command as a user runs it, on the repository's template: the manifest on `stdout` and
/// status 0, or one line `krew-manifest: WHAT` on `stderr` and status 1.
pub fn run(release: &Release, stdout: &mut dyn Write, stderr: &mut dyn Write) -> i32 {
    let written = manifest(&template(), release).and_then(|text| {
        stdout
            .write_all(text.as_bytes())
            .context("writing the manifest")
    });
    match written {
        Ok(()) => 0,
        Err(error) => {
            // Nothing more can be said if stderr is gone too.
            let _ = writeln!(stderr, "{NAME}: {error:#}");
            1
        }
    }
}

/// The manifest of `release`: the template at `template` with every placeholder filled.
pub fn manifest(template: &Path, release: &Release) -> Result<String> {
    // krew reads the version as semantic versioning with a leading v.
    if !is_krew_version(&release.version) {
        bail!(
            "--version {}: expected vMAJOR.MINOR.PATCH (krew's form), such as v0.2.0",
            release.version
        );
    }
    if !release.archives.is_dir() {
        bail!("--archives {}: not a directory", release.archives.display());
    }
    let url = release.url.strip_suffix('/').unwrap_or(&release.url);
    // The values go into double-quoted YAML strings.
    for value in [url, release.homepage.as_str()] {
        if value.contains(['"', '\\', '\n']) {
            bail!("{value}: a quote, backslash or newline in a URL");
        }
    }
    let source = std::fs::read_to_string(template)
        .with_context(|| format!("reading {}", template.display()))?;
    let mut text = source.trim_end_matches('\n').to_owned();
    text = text.replace("@VERSION@", &release.version);
    text = text.replace("@HOMEPAGE@", &release.homepage);

    let platforms = platforms(&source);
    if platforms.is_empty() {
        bail!("{}: no @URI_OS_ARCH@ placeholder", template.display());
    }
    for (os, arch) in &platforms {
        let name = format!("clusterdns-{}-{os}-{arch}.tar.gz", release.version);
        let archive = release.archives.join(&name);
        if !archive.is_file() {
            bail!("{}: no archive for {os}/{arch}", archive.display());
        }
        let bytes =
            std::fs::read(&archive).with_context(|| format!("reading {}", archive.display()))?;
        // krew runs the platform's bin from the unpacked archive: it must be there.
        let found = has_top_level(&bytes, "clusterdns")
            .with_context(|| format!("{}: not a gzip-compressed tar archive", archive.display()))?;
        if !found {
            bail!(
                "{}: no file clusterdns at the top of the archive",
                archive.display()
            );
        }
        let sha = format!("{:x}", Sha256::digest(&bytes));
        text = text.replace(&format!("@URI_{os}_{arch}@"), &format!("{url}/{name}"));
        text = text.replace(&format!("@SHA256_{os}_{arch}@"), &sha);
    }

    let left = placeholders(&text);
    if !left.is_empty() {
        bail!(
            "placeholders left unfilled: {}",
            left.into_iter().collect::<Vec<_>>().join(" ")
        );
    }
    text.push('\n');
    Ok(text)
}

/// Whether `version` is krew's: `vMAJOR.MINOR.PATCH`, then optionally `-PRERELEASE` and
/// `+BUILD` of letters, digits, dots and dashes.
fn is_krew_version(version: &str) -> bool {
    let tail = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    };
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let (rest, build) = match rest.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (rest, None),
    };
    if build.is_some_and(|build| !tail(build)) {
        return false;
    }
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    if pre.is_some_and(|pre| !tail(pre)) {
        return false;
    }
    let numbers: Vec<&str> = core.split('.').collect();
    numbers.len() == 3
        && numbers
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The platforms a template names by its uri placeholders, `@URI_OS_ARCH@`: (os, arch), sorted.
fn platforms(template: &str) -> BTreeSet<(String, String)> {
    let part = |s: &str| -> usize {
        s.find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
            .unwrap_or(s.len())
    };
    let mut found = BTreeSet::new();
    let mut rest = template;
    while let Some(at) = rest.find("@URI_") {
        rest = &rest[at + "@URI_".len()..];
        let os_end = part(rest);
        let (os, after) = rest.split_at(os_end);
        let Some(after) = after.strip_prefix('_') else {
            continue;
        };
        let arch_end = part(after);
        let (arch, after) = after.split_at(arch_end);
        if let Some(after) = after.strip_prefix('@') {
            found.insert((os.to_owned(), arch.to_owned()));
            rest = after;
        }
    }
    found
}

/// The placeholders left in `text`: `@` then letters, digits and underscores, then `@`.
fn placeholders(text: &str) -> BTreeSet<&str> {
    let mut found = BTreeSet::new();
    let mut from = 0;
    while let Some(at) = text[from..].find('@').map(|at| from + at) {
        let inner = &text[at + 1..];
        let end = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(inner.len());
        if inner[end..].starts_with('@') {
            found.insert(&text[at..at + 1 + end + 1]);
            from = at + end + 2;
        } else {
            from = at + 1;
        }
    }
    found
}

/// Whether the gzip-compressed tar archive `bytes` has an entry `name` at its top (`name` or
/// `./name`) that is not a directory.
fn has_top_level(bytes: &[u8], name: &str) -> Result<bool> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    for entry in archive.entries()? {
        let entry = entry?;
        if entry.header().entry_type().is_dir() {
            continue;
        }
        let path = entry.path_bytes();
        let path = path.strip_prefix(b"./").unwrap_or(&path);
        if path == name.as_bytes() {
            return Ok(true);
        }
    }
    // Read to the end, so that a truncated archive is an error rather than "not found".
    let mut rest = Vec::new();
    archive.into_inner().read_to_end(&mut rest)?;
    Ok(false)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const TEMPLATE: &str = "spec:\n  version: \"@VERSION@\"\n  homepage: \"@HOMEPAGE@\"\n  platforms:\n  - uri: \"@URI_linux_amd64@\"\n    sha256: \"@SHA256_linux_amd64@\"\n  - uri: \"@URI_linux_arm64@\"\n    sha256: \"@SHA256_linux_arm64@\"\n\n";

    /// A release archive in `dir` holding `members`, each a stand-in file (a directory when
    /// its name ends in a slash), named in the archive exactly as given (as GNU tar writes
    /// them: `./clusterdns` from `tar -C DIR .`, `clusterdns/` for a directory).
    fn archive(dir: &Path, version: &str, arch: &str, members: &[&str]) -> PathBuf {
        let path = dir.join(format!("clusterdns-{version}-linux-{arch}.tar.gz"));
        let file = std::fs::File::create(&path).unwrap();
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            file,
            flate2::Compression::fast(),
        ));
        for member in members {
            let directory = member.ends_with('/');
            let body = if directory {
                String::new()
            } else {
                format!("a {arch} binary")
            };
            let mut header = tar::Header::new_gnu();
            let name = &mut header.as_gnu_mut().unwrap().name;
            name[..member.len()].copy_from_slice(member.as_bytes());
            header.set_entry_type(if directory {
                tar::EntryType::Directory
            } else {
                tar::EntryType::Regular
            });
            header.set_size(body.len() as u64);
            header.set_mode(0o755);
            header.set_cksum();
            builder.append(&header, body.as_bytes()).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap();
        path
    }

    struct Setup {
        dir: tempfile::TempDir,
        template: PathBuf,
    }

    impl Setup {
        fn new(template: &str) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("clusterdns.yaml");
            std::fs::write(&path, template).unwrap();
            std::fs::create_dir(dir.path().join("dist")).unwrap();
            Self {
                dir,
                template: path,
            }
        }

        fn dist(&self) -> PathBuf {
            self.dir.path().join("dist")
        }

        fn release(&self, version: &str) -> Release {
            Release::from_args(&[
                "--version",
                version,
                "--url",
                "https://releases.example/v0.3.1/",
                "--homepage",
                "https://example.org/clusterdns",
                "--archives",
                self.dist().to_str().unwrap(),
            ])
            .unwrap()
        }

        /// The one line the command would print, without its name.
        fn refused(&self, release: &Release) -> String {
            let error = manifest(&self.template, release).unwrap_err();
            format!("{error:#}")
        }
    }

    #[test]
    fn fills_every_placeholder_from_the_archives() {
        let setup = Setup::new(TEMPLATE);
        let amd64 = archive(&setup.dist(), "v0.3.1", "amd64", &["clusterdns"]);
        // tar's `-C DIR .` form: the binary as ./clusterdns.
        let arm64 = archive(&setup.dist(), "v0.3.1", "arm64", &["./clusterdns"]);
        let text = manifest(&setup.template, &setup.release("v0.3.1")).unwrap();
        let sha = |path: &Path| format!("{:x}", Sha256::digest(std::fs::read(path).unwrap()));
        assert_eq!(
            text,
            format!(
                "spec:\n  version: \"v0.3.1\"\n  homepage: \"https://example.org/clusterdns\"\n  platforms:\n  - uri: \"https://releases.example/v0.3.1/clusterdns-v0.3.1-linux-amd64.tar.gz\"\n    sha256: \"{}\"\n  - uri: \"https://releases.example/v0.3.1/clusterdns-v0.3.1-linux-arm64.tar.gz\"\n    sha256: \"{}\"\n",
                sha(&amd64),
                sha(&arm64)
            )
        );
    }

    #[test]
    fn refuses_a_version_krew_would_not_read() {
        let setup = Setup::new(TEMPLATE);
        for bad in [
            "0.3.1",
            "v0.3",
            "v0.3.1.2",
            "v0.3.x",
            "v0.3.1-",
            "v0.3.1+",
            "v0.3.1-a_b",
        ] {
            assert_eq!(
                setup.refused(&setup.release(bad)),
                format!(
                    "--version {bad}: expected vMAJOR.MINOR.PATCH (krew's form), such as v0.2.0"
                )
            );
        }
        for good in [
            "v0.3.1",
            "v10.0.22",
            "v1.2.3-rc.1",
            "v1.2.3+build.5",
            "v1.2.3-rc-1+b",
        ] {
            assert!(is_krew_version(good), "{good}");
        }
    }

    #[test]
    fn refuses_archives_that_are_not_a_directory() {
        let setup = Setup::new(TEMPLATE);
        let mut release = setup.release("v0.3.1");
        release.archives = setup.dir.path().join("nowhere");
        assert_eq!(
            setup.refused(&release),
            format!("--archives {}: not a directory", release.archives.display())
        );
    }

    #[test]
    fn refuses_a_quote_or_a_backslash_in_a_url() {
        let setup = Setup::new(TEMPLATE);
        let mut release = setup.release("v0.3.1");
        release.homepage = "https://example.org/\"x".into();
        assert_eq!(
            setup.refused(&release),
            "https://example.org/\"x: a quote, backslash or newline in a URL"
        );
        let mut release = setup.release("v0.3.1");
        release.url = "https://releases.example\\v0.3.1/".into();
        assert_eq!(
            setup.refused(&release),
            "https://releases.example\\v0.3.1: a quote, backslash or newline in a URL"
        );
    }

    #[test]
    fn refuses_a_missing_archive_naming_it() {
        let setup = Setup::new(TEMPLATE);
        archive(&setup.dist(), "v0.3.1", "amd64", &["clusterdns"]);
        let missing = setup.dist().join("clusterdns-v0.3.1-linux-arm64.tar.gz");
        assert_eq!(
            setup.refused(&setup.release("v0.3.1")),
            format!("{}: no archive for linux/arm64", missing.display())
        );
    }

    #[test]
    fn refuses_an_archive_without_the_binary_at_its_top() {
        let setup = Setup::new(TEMPLATE);
        for members in [
            &["kubectl-clusterdns"][..],
            &["bin/clusterdns"],
            &["clusterdns/"],
        ] {
            archive(&setup.dist(), "v0.3.1", "amd64", &["clusterdns"]);
            let bad = archive(&setup.dist(), "v0.3.1", "arm64", members);
            assert_eq!(
                setup.refused(&setup.release("v0.3.1")),
                format!(
                    "{}: no file clusterdns at the top of the archive",
                    bad.display()
                ),
                "{members:?}"
            );
        }
    }

    #[test]
    fn refuses_an_archive_that_is_not_one() {
        let setup = Setup::new(TEMPLATE);
        archive(&setup.dist(), "v0.3.1", "amd64", &["clusterdns"]);
        let bad = setup.dist().join("clusterdns-v0.3.1-linux-arm64.tar.gz");
        std::fs::write(&bad, "not gzip").unwrap();
        let refused = setup.refused(&setup.release("v0.3.1"));
        assert!(
            refused.starts_with(&format!(
                "{}: not a gzip-compressed tar archive: ",
                bad.display()
            )),
            "{refused}"
        );
    }

    #[test]
    fn refuses_a_template_without_platforms_or_with_unknown_placeholders() {
        let setup = Setup::new("spec:\n  version: \"@VERSION@\"\n");
        assert_eq!(
            setup.refused(&setup.release("v0.3.1")),
            format!("{}: no @URI_OS_ARCH@ placeholder", setup.template.display())
        );
        let setup = Setup::new(&format!("{TEMPLATE}  license: \"@LICENSE@\" @X_1@ @@\n"));
        archive(&setup.dist(), "v0.3.1", "amd64", &["clusterdns"]);
        archive(&setup.dist(), "v0.3.1", "arm64", &["clusterdns"]);
        assert_eq!(
            setup.refused(&setup.release("v0.3.1")),
            "placeholders left unfilled: @@ @LICENSE@ @X_1@"
        );
    }

    #[test]
    fn the_command_prints_the_manifest_or_one_line_and_status_1() {
        // The repository's own template, as `cargo xtask krew-manifest` fills it.
        let setup = Setup::new(TEMPLATE);
        archive(&setup.dist(), "v0.3.1", "amd64", &["clusterdns"]);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert_eq!(run(&setup.release("v0.3.1"), &mut out, &mut err), 1);
        let missing = setup.dist().join("clusterdns-v0.3.1-linux-arm64.tar.gz");
        assert_eq!(
            String::from_utf8(err).unwrap(),
            format!(
                "krew-manifest: {}: no archive for linux/arm64\n",
                missing.display()
            )
        );
        assert!(out.is_empty());
        archive(&setup.dist(), "v0.3.1", "arm64", &["clusterdns"]);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert_eq!(run(&setup.release("v0.3.1"), &mut out, &mut err), 0);
        assert!(err.is_empty());
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("version: \"v0.3.1\""), "{text}");
        assert!(placeholders(&text).is_empty(), "{text}");
    }

    #[test]
    fn the_flags_are_all_required() {
        let error = Release::from_args(&["--version", "v0.3.1"]).unwrap_err();
        let error = error.to_string();
        for flag in ["--url", "--homepage", "--archives"] {
            assert!(error.contains(flag), "{error}");
        }
    }
}
