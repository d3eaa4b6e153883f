//! Golden files: expected output kept under `tests/golden/`.
//!
//! `CLUSTERDNS_BLESS=1 cargo test` rewrites the goldens from the current output (then read
//! the diff before committing it).

use super::{read, root};

/// Compares `got` with the golden file at `path` (relative to the repository root), or
/// rewrites it under `CLUSTERDNS_BLESS`.
pub fn assert_golden(path: &str, got: &str) {
    if std::env::var_os("CLUSTERDNS_BLESS").is_some() {
        let file = root().join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(file, got).unwrap();
        return;
    }
    let want = read(path);
    assert!(
        want == got,
        "{path} differs (CLUSTERDNS_BLESS=1 to accept)\n~~~ want\n{want}~~~ got\n{got}~~~"
    );
}
