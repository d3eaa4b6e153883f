//! OCI image archives made without a registry, a daemon or root: one uncompressed layer
//! written entry by entry (owners, modes and extended attributes as given, every time 0, in
//! path order, so the same inputs give the same digests), its config, its manifest, and an
//! index naming the image, in an OCI image layout inside one tar, with Docker's
//! `manifest.json` beside it. `ctr images import`, `docker load`, `podman load` and
//! `kind load image-archive` all take it.
//!
//! A file capability is an extended attribute like any other (`security.capability`, carried
//! in the layer as a PAX `SCHILY.xattr.` record, which containerd sets when it unpacks the
//! layer); [`file_capability`] encodes one as `setcap` would.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry as Slot;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
/// The kinds of a layer's entries, as [`read`] reports them.
pub use tar::EntryType;

/// The user every image here runs as, where it does not run as root: distroless's
/// `nonroot`.
pub const NONROOT: u32 = 65532;

/// Where the bytes of a file come from.
#[derive(Debug, Clone)]
pub enum Content {
    /// These bytes.
    Bytes(Vec<u8>),
    /// A file of this machine, read when the archive is written.
    Host(PathBuf),
}

/// What an entry of the layer is.
#[derive(Debug, Clone)]
pub enum Kind {
    Dir,
    File(Content),
    Symlink(String),
}

/// One entry of the layer.
#[derive(Debug, Clone)]
pub struct Entry {
    pub kind: Kind,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// Extended attributes (name, value), such as `security.capability`.
    pub xattrs: Vec<(String, Vec<u8>)>,
}

/// The runtime part of an image's config: what `docker inspect` shows under `Config`.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub user: String,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub env: Vec<String>,
    /// `53/udp`, `8080/tcp` ...
    pub exposed_ports: Vec<String>,
    pub working_dir: String,
    pub labels: BTreeMap<String, String>,
}

/// An image: its name, its config, and the entries of its one layer by path (relative,
/// without a leading `/`).
#[derive(Debug, Clone)]
pub struct Image {
    /// The full reference it is imported as (`docker.io/library/clusterdns:dev`).
    pub reference: String,
    pub config: Config,
    pub entries: BTreeMap<String, Entry>,
}

/// What [`Image::write`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    pub archive: PathBuf,
    /// The manifest's digest (`sha256:...`), which containerd names the image by.
    pub manifest_digest: String,
    /// The layer as stored unpacked: the size of its tar.
    pub layer_bytes: u64,
    /// The layer gzip-compressed, as a registry would store and send it.
    pub layer_gzip_bytes: u64,
    /// The archive file's size.
    pub archive_bytes: u64,
}

impl Image {
    /// An image called `reference` (a short name like `clusterdns:dev` is made
    /// `docker.io/library/clusterdns:dev`, as containerd and Docker name it), with no entries.
    pub fn new(reference: &str, config: Config) -> Self {
        Self {
            reference: normalize(reference),
            config,
            entries: BTreeMap::new(),
        }
    }

    /// A directory (and every missing parent) owned by root, mode 0755 unless `mode`
    /// says otherwise for the last one.
    pub fn dir(&mut self, path: &str, mode: u32, owner: u32) -> &mut Self {
        let path = clean(path);
        self.parents(&path);
        self.entries.insert(
            path,
            Entry {
                kind: Kind::Dir,
                mode,
                uid: owner,
                gid: owner,
                xattrs: Vec::new(),
            },
        );
        self
    }

    /// A file owned by root with `mode`; its missing parents are made too. Returns the entry,
    /// to add extended attributes to.
    pub fn file(&mut self, path: &str, content: Content, mode: u32) -> &mut Entry {
        let path = clean(path);
        self.parents(&path);
        let entry = Entry {
            kind: Kind::File(content),
            mode,
            uid: 0,
            gid: 0,
            xattrs: Vec::new(),
        };
        match self.entries.entry(path) {
            Slot::Occupied(mut slot) => {
                slot.insert(entry);
                slot.into_mut()
            }
            Slot::Vacant(slot) => slot.insert(entry),
        }
    }

    /// A symbolic link at `path` to `target`.
    pub fn symlink(&mut self, path: &str, target: &str) -> &mut Self {
        let path = clean(path);
        self.parents(&path);
        self.entries.insert(
            path,
            Entry {
                kind: Kind::Symlink(target.to_owned()),
                mode: 0o777,
                uid: 0,
                gid: 0,
                xattrs: Vec::new(),
            },
        );
        self
    }

    /// The program `host` of this machine at `path`, mode 0755, and every shared library it
    /// loads (as `ldd` lists them, under the same paths), so that a dynamically linked
    /// program runs in an image with nothing else.
    pub fn program(&mut self, path: &str, host: &Path) -> Result<&mut Entry> {
        for library in shared_libraries(host)? {
            let in_image = library.display().to_string();
            if !self.entries.contains_key(&clean(&in_image)) {
                let real = std::fs::canonicalize(&library)
                    .with_context(|| format!("{}: {}", host.display(), library.display()))?;
                self.file(&in_image, Content::Host(real), 0o755);
            }
        }
        Ok(self.file(path, Content::Host(host.to_path_buf()), 0o755))
    }

    /// The entry at `path`, if any.
    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.entries.get(&clean(path))
    }

    fn parents(&mut self, path: &str) {
        let mut at = String::new();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            self.entries.entry(at.clone()).or_insert(Entry {
                kind: Kind::Dir,
                mode: 0o755,
                uid: 0,
                gid: 0,
                xattrs: Vec::new(),
            });
        }
    }

    /// The image's config document (OCI image config), for a layer with `diff_id`.
    pub fn config_document(&self, diff_id: &str) -> Value {
        let c = &self.config;
        let ports: serde_json::Map<String, Value> = c
            .exposed_ports
            .iter()
            .map(|p| (p.clone(), json!({})))
            .collect();
        let mut config = json!({
            "User": c.user,
            "ExposedPorts": ports,
            "Env": c.env,
            "Entrypoint": c.entrypoint,
            "Cmd": c.cmd,
            "WorkingDir": c.working_dir,
            "Labels": c.labels,
        });
        if c.cmd.is_empty() {
            config["Cmd"] = Value::Null;
        }
        json!({
            "architecture": "amd64",
            "os": "linux",
            "created": "1970-01-01T00:00:00Z",
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
            "history": [{
                "created": "1970-01-01T00:00:00Z",
                "created_by": "cargo xtask image",
            }],
        })
    }

    /// Writes the image as an archive at `out` (an OCI image layout in a tar, with Docker's
    /// `manifest.json`).
    pub fn write(&self, out: &Path) -> Result<Written> {
        let dir = out.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let mut layer = tempfile::tempfile_in(dir).context("a temporary file for the layer")?;
        let layer_bytes = {
            let mut hashing = Hashing::new(BufWriter::new(&mut layer));
            self.write_layer(&mut hashing)?;
            hashing.count
        };
        layer.seek(SeekFrom::Start(0))?;
        let layer_digest = digest_of(&mut layer)?;
        layer.seek(SeekFrom::Start(0))?;
        let layer_gzip_bytes = gzip_size(&mut layer)?;
        layer.seek(SeekFrom::Start(0))?;

        let config = serde_json::to_vec(&self.config_document(&layer_digest))?;
        let config_digest = sha256(&config);
        let manifest = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": config.len(),
            },
            "layers": [{
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": layer_digest,
                "size": layer_bytes,
            }],
        }))?;
        let manifest_digest = sha256(&manifest);
        let tag = self.reference.rsplit_once(':').map_or("latest", |(_, t)| t);
        let index = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": manifest.len(),
                "annotations": {
                    "io.containerd.image.name": self.reference,
                    "org.opencontainers.image.ref.name": tag,
                },
            }],
        }))?;
        let blob = |digest: &str| format!("blobs/sha256/{}", digest.trim_start_matches("sha256:"));
        let docker = serde_json::to_vec(&json!([{
            "Config": blob(&config_digest),
            "RepoTags": [self.reference],
            "Layers": [blob(&layer_digest)],
        }]))?;

        let file = File::create(out).with_context(|| format!("create {}", out.display()))?;
        let mut archive = tar::Builder::new(BufWriter::new(file));
        for dir in ["blobs", "blobs/sha256"] {
            let mut header = header(tar::EntryType::Directory, 0o755, 0, 0);
            archive.append_data(&mut header, dir, std::io::empty())?;
        }
        let small: [(&str, &[u8]); 5] = [
            ("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#),
            ("index.json", &index),
            ("manifest.json", &docker),
            (&blob(&config_digest), &config),
            (&blob(&manifest_digest), &manifest),
        ];
        for (path, bytes) in small {
            let mut header = header(tar::EntryType::Regular, 0o644, 0, 0);
            header.set_size(bytes.len() as u64);
            archive.append_data(&mut header, path, bytes)?;
        }
        let mut header = header(tar::EntryType::Regular, 0o644, 0, 0);
        header.set_size(layer_bytes);
        archive.append_data(&mut header, blob(&layer_digest), BufReader::new(layer))?;
        archive.into_inner()?.flush()?;
        let archive_bytes = std::fs::metadata(out)?.len();
        Ok(Written {
            archive: out.to_path_buf(),
            manifest_digest,
            layer_bytes,
            layer_gzip_bytes,
            archive_bytes,
        })
    }

    fn write_layer(&self, out: &mut impl Write) -> Result<()> {
        let mut layer = tar::Builder::new(out);
        for (path, entry) in &self.entries {
            let xattrs: Vec<(String, &[u8])> = entry
                .xattrs
                .iter()
                .map(|(name, value)| (format!("SCHILY.xattr.{name}"), value.as_slice()))
                .collect();
            layer.append_pax_extensions(xattrs.iter().map(|(k, v)| (k.as_str(), *v)))?;
            match &entry.kind {
                Kind::Dir => {
                    let mut header =
                        header(tar::EntryType::Directory, entry.mode, entry.uid, entry.gid);
                    layer.append_data(&mut header, format!("{path}/"), std::io::empty())?;
                }
                Kind::Symlink(target) => {
                    let mut header =
                        header(tar::EntryType::Symlink, entry.mode, entry.uid, entry.gid);
                    layer.append_link(&mut header, path, target)?;
                }
                Kind::File(content) => {
                    let mut header =
                        header(tar::EntryType::Regular, entry.mode, entry.uid, entry.gid);
                    match content {
                        Content::Bytes(bytes) => {
                            header.set_size(bytes.len() as u64);
                            layer.append_data(&mut header, path, bytes.as_slice())?;
                        }
                        Content::Host(file) => {
                            let opened = File::open(file)
                                .with_context(|| format!("open {}", file.display()))?;
                            header.set_size(opened.metadata()?.len());
                            layer.append_data(&mut header, path, BufReader::new(opened))?;
                        }
                    }
                }
            }
        }
        layer.into_inner()?.flush()?;
        Ok(())
    }
}

/// A short image name as containerd and Docker store it: `clusterdns:dev` is
/// `docker.io/library/clusterdns:dev`; a name with a registry host is kept.
pub fn normalize(reference: &str) -> String {
    let with_tag = if reference
        .rsplit('/')
        .next()
        .is_some_and(|last| last.contains(':'))
    {
        reference.to_owned()
    } else {
        format!("{reference}:latest")
    };
    let first = with_tag.split('/').next().unwrap_or_default();
    let has_host = with_tag.contains('/')
        && (first.contains('.') || first.contains(':') || first == "localhost");
    if has_host {
        with_tag
    } else if with_tag.contains('/') {
        format!("docker.io/{with_tag}")
    } else {
        format!("docker.io/library/{with_tag}")
    }
}

/// The value of `security.capability` that grants `capabilities` (their numbers, as in
/// linux/capability.h: 10 is CAP_NET_BIND_SERVICE) permitted and effective at exec, as
/// `setcap CAP=+ep` writes it (VFS_CAP_REVISION_2).
pub fn file_capability(capabilities: &[u32]) -> Vec<u8> {
    const REVISION_2: u32 = 0x0200_0000;
    const EFFECTIVE: u32 = 0x0000_0001;
    let mut permitted = [0u32; 2];
    for &cap in capabilities {
        permitted[(cap / 32) as usize] |= 1 << (cap % 32);
    }
    let mut value = Vec::with_capacity(20);
    value.extend_from_slice(&(REVISION_2 | EFFECTIVE).to_le_bytes());
    for word in permitted {
        value.extend_from_slice(&word.to_le_bytes());
        value.extend_from_slice(&0u32.to_le_bytes()); // inheritable
    }
    value
}

/// The capabilities a `security.capability` value grants permitted, and whether they are
/// effective at exec; `None` when it is not a revision 2 value.
pub fn decode_file_capability(value: &[u8]) -> Option<(Vec<u32>, bool)> {
    let word = |i: usize| -> Option<u32> {
        Some(u32::from_le_bytes(
            value.get(i * 4..i * 4 + 4)?.try_into().ok()?,
        ))
    };
    let magic = word(0)?;
    if value.len() != 20 || magic & 0xFF00_0000 != 0x0200_0000 {
        return None;
    }
    let permitted = [word(1)?, word(3)?];
    let caps = (0..64)
        .filter(|cap| permitted[cap / 32] & (1 << (cap % 32)) != 0)
        .map(|cap| cap as u32)
        .collect();
    Some((caps, magic & 1 == 1))
}

/// The shared libraries `program` loads, the dynamic loader first, as `ldd` resolves them on
/// this machine; empty for a static program.
pub fn shared_libraries(program: &Path) -> Result<Vec<PathBuf>> {
    let output = Command::new("ldd")
        .arg(program)
        .output()
        .context("run ldd (glibc's libc-bin)")?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let said = format!("{text}{}", String::from_utf8_lossy(&output.stderr));
        if said.contains("not a dynamic executable") || said.contains("statically linked") {
            return Ok(Vec::new());
        }
        bail!("ldd {}: {}", program.display(), said.trim());
    }
    let mut libraries = Vec::new();
    for line in text.lines() {
        ensure!(
            !line.contains("not found"),
            "{}: a library is missing on this machine: {}",
            program.display(),
            line.trim()
        );
        let path = match line.split_once("=>") {
            Some((_, right)) => right.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(path) = path.filter(|p| p.starts_with('/')) {
            libraries.push(PathBuf::from(path));
        }
    }
    libraries.sort_by_key(|p| !p.display().to_string().contains("ld-linux"));
    Ok(libraries)
}

/// One entry of a written layer, as [`read`] finds it.
#[derive(Debug, Clone)]
pub struct Found {
    pub path: String,
    pub kind: tar::EntryType,
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
    pub size: u64,
    pub link: Option<String>,
    pub xattrs: BTreeMap<String, Vec<u8>>,
}

/// An archive read back: the name it is imported as, its config document and its layer's
/// entries.
#[derive(Debug, Clone)]
pub struct Inspected {
    pub reference: String,
    pub docker_tags: Vec<String>,
    pub config: Value,
    pub entries: Vec<Found>,
}

impl Inspected {
    /// The entry at `path` (without a leading `/`).
    pub fn entry(&self, path: &str) -> Option<&Found> {
        let path = clean(path);
        self.entries.iter().find(|e| e.path == path)
    }
}

/// Reads an archive [`Image::write`] wrote (any OCI layout archive of one single-layer
/// image), checking every digest on the way.
pub fn read(archive: &Path) -> Result<Inspected> {
    let mut blobs: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let file = File::open(archive).with_context(|| format!("open {}", archive.display()))?;
    for entry in tar::Archive::new(BufReader::new(file)).entries()? {
        let mut entry = entry?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let path = entry.path()?.display().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes)?;
        if let Some(hex) = path.strip_prefix("blobs/sha256/") {
            ensure!(
                sha256(&bytes) == format!("sha256:{hex}"),
                "{}: blob {hex} does not match its digest",
                archive.display()
            );
        }
        blobs.insert(path, bytes);
    }
    let json = |path: &str| -> Result<Value> {
        let bytes = blobs
            .get(path)
            .with_context(|| format!("{}: no {path}", archive.display()))?;
        Ok(serde_json::from_slice(bytes)?)
    };
    let blob = |digest: &Value| {
        format!(
            "blobs/sha256/{}",
            digest
                .as_str()
                .unwrap_or_default()
                .trim_start_matches("sha256:")
        )
    };
    let index = json("index.json")?;
    let described = &index["manifests"][0];
    let manifest = json(&blob(&described["digest"]))?;
    let config = json(&blob(&manifest["config"]["digest"]))?;
    let layers = manifest["layers"].as_array().cloned().unwrap_or_default();
    ensure!(
        layers.len() == 1,
        "{}: {} layers, not 1",
        archive.display(),
        layers.len()
    );
    let layer = blobs
        .get(&blob(&layers[0]["digest"]))
        .context("the layer's blob")?;
    ensure!(
        config["rootfs"]["diff_ids"][0] == layers[0]["digest"],
        "the config's diff_id is not the (uncompressed) layer's digest"
    );
    let mut entries = Vec::new();
    for entry in tar::Archive::new(layer.as_slice()).entries()? {
        let mut entry = entry?;
        let mut xattrs = BTreeMap::new();
        if let Some(extensions) = entry.pax_extensions()? {
            for extension in extensions {
                let extension = extension?;
                if let Some(name) = extension.key()?.strip_prefix("SCHILY.xattr.") {
                    xattrs.insert(name.to_owned(), extension.value_bytes().to_vec());
                }
            }
        }
        let header = entry.header();
        entries.push(Found {
            path: clean(&entry.path()?.display().to_string()),
            kind: header.entry_type(),
            mode: header.mode()?,
            uid: header.uid()?,
            gid: header.gid()?,
            size: header.size()?,
            link: entry.link_name()?.map(|l| l.display().to_string()),
            xattrs,
        });
    }
    let docker = json("manifest.json")?;
    Ok(Inspected {
        reference: described["annotations"]["io.containerd.image.name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        docker_tags: docker[0]["RepoTags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        config,
        entries,
    })
}

fn header(kind: tar::EntryType, mode: u32, uid: u32, gid: u32) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_uid(uid.into());
    header.set_gid(gid.into());
    header.set_mtime(0);
    header.set_size(0);
    header
}

/// A path inside the image as the layer holds it: relative, no trailing `/`.
fn clean(path: &str) -> String {
    path.trim_start_matches("./")
        .trim_start_matches('/')
        .trim_end_matches('/')
        .to_owned()
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

fn digest_of(reader: &mut impl Read) -> Result<String> {
    let mut hasher = Sha256::new();
    std::io::copy(reader, &mut hasher)?;
    Ok(format!("sha256:{:x}", hasher.finalize()))
}

fn gzip_size(reader: &mut impl Read) -> Result<u64> {
    let mut counter = Hashing::new(std::io::sink());
    let mut encoder = flate2::write::GzEncoder::new(&mut counter, flate2::Compression::default());
    std::io::copy(reader, &mut encoder)?;
    encoder.finish()?;
    Ok(counter.count)
}

/// A writer that counts what passes through it.
struct Hashing<W> {
    inner: W,
    count: u64,
}

impl<W: Write> Hashing<W> {
    fn new(inner: W) -> Self {
        Self { inner, count: 0 }
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalized_as_containerd_does() {
        assert_eq!(
            normalize("clusterdns:dev"),
            "docker.io/library/clusterdns:dev"
        );
        assert_eq!(
            normalize("clusterdns"),
            "docker.io/library/clusterdns:latest"
        );
        assert_eq!(normalize("me/dns:1"), "docker.io/me/dns:1");
        assert_eq!(
            normalize("registry.k8s.io/pause:3.10"),
            "registry.k8s.io/pause:3.10"
        );
        assert_eq!(normalize("localhost:5000/x"), "localhost:5000/x:latest");
    }

    #[test]
    fn the_capability_is_what_setcap_writes() {
        // `setcap cap_net_bind_service=+ep FILE; getfattr -n security.capability -e hex FILE`
        // prints 0x0100000200040000000000000000000000000000.
        let value = file_capability(&[10]);
        let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "0100000200040000000000000000000000000000");
        assert_eq!(decode_file_capability(&value), Some((vec![10], true)));
        assert_eq!(decode_file_capability(&value[..12]), None);
    }

    #[test]
    fn an_archive_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut image = Image::new(
            "probe:1",
            Config {
                user: "65532:65532".into(),
                entrypoint: vec!["/bin/x".into()],
                exposed_ports: vec!["53/udp".into()],
                ..Config::default()
            },
        );
        image
            .file("/bin/x", Content::Bytes(b"#!x".to_vec()), 0o755)
            .xattrs
            .push(("security.capability".into(), file_capability(&[10])));
        image.dir("/home/nonroot", 0o700, NONROOT);
        image.symlink("/bin/y", "x");
        let written = image.write(&dir.path().join("a.tar")).unwrap();
        let again = image.write(&dir.path().join("b.tar")).unwrap();
        assert_eq!(
            written.manifest_digest, again.manifest_digest,
            "reproducible"
        );
        let read = read(&written.archive).unwrap();
        assert_eq!(read.reference, "docker.io/library/probe:1");
        assert_eq!(read.docker_tags, ["docker.io/library/probe:1"]);
        assert_eq!(read.config["config"]["User"], "65532:65532");
        assert_eq!(read.config["config"]["ExposedPorts"], json!({"53/udp": {}}));
        let x = read.entry("bin/x").unwrap();
        assert_eq!((x.mode, x.size), (0o755, 3));
        assert_eq!(
            decode_file_capability(&x.xattrs["security.capability"]),
            Some((vec![10], true))
        );
        let home = read.entry("home/nonroot").unwrap();
        assert_eq!(
            (home.kind, home.uid, home.mode),
            (tar::EntryType::Directory, 65532, 0o700)
        );
        assert_eq!(read.entry("bin/y").unwrap().link.as_deref(), Some("x"));
        assert!(read.entry("home").is_some(), "parents are made");
    }
}
