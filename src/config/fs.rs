//! Files read whole (a Corefile, an imported file, an objects file, a resolv.conf): regular
//! files only, each kind capped in size.

use std::io::Read;
use std::path::Path;

/// A resolv.conf larger than this is refused (a real one is a few hundred bytes).
const MAX_RESOLV_CONF_BYTES: u64 = 1 << 20;

/// Reads a small text file; bytes that are not UTF-8 (a comment in Latin-1) become U+FFFD
/// rather than an error.
pub(crate) fn read_text_lossy(path: &Path) -> std::io::Result<String> {
    let bytes = read_regular(path, MAX_RESOLV_CONF_BYTES)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Reads a file read whole — a Corefile, an objects file, a resolv.conf — refusing what is
/// not a regular file (a FIFO would block the start, a device may never end) and anything
/// longer than `max` bytes.
pub(crate) fn read_regular(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error as IoError, ErrorKind};
    let (file, len) = open_regular(path, max)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(IoError::new(
            ErrorKind::InvalidData,
            format!("larger than {max} bytes"),
        ));
    }
    Ok(bytes)
}

/// Opens a file that is read through (an objects file, streamed), with the checks of
/// [`read_regular`]: a regular file, at most `max` bytes long (its length is returned; read it
/// through `take(max + 1)` and refuse more, as it may grow).
pub(crate) fn open_regular(path: &Path, max: u64) -> std::io::Result<(std::fs::File, u64)> {
    use std::io::{Error as IoError, ErrorKind};
    // Checked before opening: opening a FIFO blocks until a writer comes.
    check_regular(&std::fs::metadata(path)?)?;
    let file = std::fs::File::open(path)?;
    // And again on what was opened, in case the path changed in between.
    let metadata = file.metadata()?;
    check_regular(&metadata)?;
    if metadata.len() > max {
        return Err(IoError::new(
            ErrorKind::InvalidData,
            format!("larger than {max} bytes"),
        ));
    }
    Ok((file, metadata.len()))
}

fn check_regular(metadata: &std::fs::Metadata) -> std::io::Result<()> {
    use std::io::{Error as IoError, ErrorKind};
    if metadata.is_dir() {
        return Err(IoError::new(ErrorKind::InvalidInput, "is a directory"));
    }
    if !metadata.is_file() {
        return Err(IoError::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok(())
}
