//! The snapshot file: the watched objects written as a kubectl List (atomically), and read
//! back at start-up.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::model::{self, Cluster};

/// Writes `cluster` to `path` as a kubectl List ([`model::export::write_list`], object by
/// object), replacing the file atomically (a temporary file beside it, synced, then renamed
/// over it): a crash never leaves half a snapshot.
pub fn write_snapshot(path: &Path, cluster: &Cluster) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut temp = tempfile_in(dir, path)?;
    let mut out = std::io::BufWriter::new(&mut temp.1);
    model::export::write_list(cluster, SystemTime::now(), &mut out)?;
    out.flush()?;
    drop(out);
    temp.1.sync_all()?;
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

/// Reads a snapshot file written by [`write_snapshot`]: the objects exactly as the API
/// server had them, and when the file was written.
pub fn read_snapshot(path: &Path) -> Result<(Cluster, SystemTime), crate::source::file::Error> {
    let mut loader = crate::source::file::Loader::new();
    loader.read_file(path)?;
    let written = std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .unwrap_or_else(|_| SystemTime::now());
    Ok((loader.finish_as_given().cluster, written))
}
