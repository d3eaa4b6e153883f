//! The snapshot file: the watched objects written as a kubectl List (atomically), the
//! changes since appended to a second file beside it, and both read back at start-up.
//!
//! Writing every object costs a CPU-second or so at 10,000 Services and 30,000 pods; under
//! churn only the objects that changed are written, as watch events (one JSON line each) in
//! `FILE.changes`, and FILE is written whole again when that file has grown to half of it.
//! The cost of keeping the file follows the churn, not the size of the cluster.

use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::model::{self, Cluster, Kind, ObjectKey};

/// Writes `cluster` to `path` as a kubectl List ([`model::export::write_list`], object by
/// object), replacing the file atomically (a temporary file beside it, synced, then renamed
/// over it): a crash never leaves half a snapshot. Its directory is made when missing. The
/// changes file beside it is removed
/// first: a crash between the two leaves the older snapshot alone, never the older changes
/// applied to the newer snapshot.
pub fn write_snapshot(path: &Path, cluster: &Cluster) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut temp = match tempfile_in(dir, path) {
        // Its directory is made as the file is (a path on an emptyDir, or on a laptop).
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|error| {
                std::io::Error::new(
                    error.kind(),
                    format!("making its directory {}: {error}", dir.display()),
                )
            })?;
            tempfile_in(dir, path)?
        }
        made => made?,
    };
    let mut out = std::io::BufWriter::new(&mut temp.1);
    model::export::write_list(cluster, SystemTime::now(), &mut out)?;
    out.flush()?;
    drop(out);
    temp.1.sync_all()?;
    match std::fs::remove_file(changes_path(path)) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    std::fs::rename(&temp.0, path)?;
    Ok(())
}

pub(super) fn tempfile_in(dir: &Path, path: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "snapshot".to_owned());
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let file = std::fs::File::create(&temp)?;
    Ok((temp, file))
}

/// The file the changes since the snapshot `path` are appended to: `path` + `.changes`.
pub fn changes_path(path: &Path) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(".changes");
    PathBuf::from(name)
}

/// The lines that record the objects of `keys` as `cluster` holds them: a watch event each,
/// `MODIFIED` with the object as the snapshot writes it, or `DELETED` with its kind and name
/// when `cluster` no longer holds it. In kind and key order.
pub(super) fn change_lines(
    cluster: &Cluster,
    keys: impl IntoIterator<Item = (Kind, ObjectKey)>,
    now: SystemTime,
) -> Vec<u8> {
    let mut keys: Vec<(Kind, ObjectKey)> = keys.into_iter().collect();
    keys.sort_unstable();
    let mut out = Vec::new();
    for (kind, key) in keys {
        // Writing into a Vec fails only if an object cannot be serialised, which ours can.
        let _ = match cluster.get(kind, &key) {
            Some(object) => out
                .write_all(br#"{"type":"MODIFIED","object":"#)
                .and_then(|()| model::export::write_object(object, now, &mut out)),
            None => out
                .write_all(br#"{"type":"DELETED","object":"#)
                .and_then(|()| model::export::write_reference(kind, &key, &mut out)),
        };
        out.extend_from_slice(b"}\n");
    }
    out
}

/// Appends `lines` ([`change_lines`]) to the changes file of the snapshot `path` and syncs
/// it.
pub(super) fn append_changes(path: &Path, lines: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(changes_path(path))?;
    file.write_all(lines)?;
    file.sync_data()
}

/// The lengths in bytes of the snapshot `path` and of its changes file (0 when absent);
/// `None` when there is no snapshot.
pub(super) fn lengths(path: &Path) -> Option<(u64, u64)> {
    let snapshot = std::fs::metadata(path).ok()?.len();
    let changes = std::fs::metadata(changes_path(path)).map_or(0, |meta| meta.len());
    Some((snapshot, changes))
}

/// Reads a snapshot file written by [`write_snapshot`] and the changes appended since: the
/// objects exactly as the API server had them, and when they were last written.
///
/// A line of the changes file that cannot be read ends them there, with a warning: a line
/// cut short by a crash as it was appended is the only such line a server writes.
pub fn read_snapshot(path: &Path) -> Result<(Cluster, SystemTime), crate::source::file::Error> {
    let mut loader = crate::source::file::Loader::new();
    loader.read_file(path)?;
    let mut cluster = loader.finish_as_given().cluster;
    let modified = |path: &Path| std::fs::metadata(path).and_then(|meta| meta.modified());
    let mut written = modified(path).unwrap_or_else(|_| SystemTime::now());
    let changes = changes_path(path);
    if let Ok(file) = std::fs::File::open(&changes) {
        for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
            let applied = line
                .map_err(|error| error.to_string())
                .and_then(|line| apply_change(&mut cluster, &line, &changes));
            if let Err(error) = applied {
                tracing::warn!(
                    "{}:{}: {error}; the changes after it are not read",
                    changes.display(),
                    number + 1
                );
                break;
            }
        }
        written = written.max(modified(&changes).unwrap_or(written));
    }
    Ok((cluster, written))
}

/// One line of a changes file, as [`change_lines`] writes it.
#[derive(serde::Deserialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: &'a serde_json::value::RawValue,
}

/// The identity of a `DELETED` event's object.
#[derive(serde::Deserialize)]
struct Reference {
    kind: String,
    metadata: Name,
}

#[derive(serde::Deserialize)]
struct Name {
    name: String,
    #[serde(default)]
    namespace: String,
}

/// Applies one line of the changes file `file` to `cluster`.
fn apply_change(cluster: &mut Cluster, line: &str, file: &Path) -> Result<(), String> {
    let event: Event<'_> = serde_json::from_str(line).map_err(|error| error.to_string())?;
    match event.kind {
        "MODIFIED" => {
            let mut loader = crate::source::file::Loader::new();
            loader
                .add_text(event.object.get(), file)
                .map_err(|error| error.to_string())?;
            cluster.append(&mut loader.finish_as_given().cluster);
            Ok(())
        }
        "DELETED" => {
            let reference: Reference =
                serde_json::from_str(event.object.get()).map_err(|error| error.to_string())?;
            let kind = Kind::ALL
                .into_iter()
                .find(|kind| kind.name() == reference.kind)
                .ok_or_else(|| {
                    format!(
                        "a DELETED {} is of no kind the snapshot keeps",
                        reference.kind
                    )
                })?;
            let key = ObjectKey::new(&reference.metadata.namespace, &reference.metadata.name);
            cluster.remove(kind, &key);
            Ok(())
        }
        other => Err(format!(
            "event type {other:?}, expected MODIFIED or DELETED"
        )),
    }
}
