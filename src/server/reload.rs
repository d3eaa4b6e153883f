//! The *reload* plugin's watch: read the Corefile every interval (plus jitter), and when its
//! SHA-512 changes parse it; the server applies a good one and keeps running the old one when
//! the new one is bad.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha512};

use crate::config::{self, Config};
use crate::metrics::reload::ReloadMetrics;

/// What one check of the Corefile found.
#[derive(Debug)]
pub enum Check {
    /// Same bytes as the running configuration.
    Unchanged,
    /// A new configuration that parses.
    Changed(Box<Config>),
    /// New bytes that do not parse (or a file that cannot be read): keep the running one.
    Failed(String),
}

/// Watches one Corefile.
#[derive(Debug)]
pub struct CorefileWatch {
    path: PathBuf,
    hash: String,
    metrics: Arc<ReloadMetrics>,
}

impl CorefileWatch {
    /// Watches `path`, whose running configuration was read from `text`.
    pub fn new(path: &Path, text: &[u8], metrics: Arc<ReloadMetrics>) -> Self {
        let hash = sha512(text);
        metrics.loaded(&hash);
        Self {
            path: path.to_owned(),
            hash,
            metrics,
        }
    }

    /// Reads the file again.
    pub fn check(&mut self) -> Check {
        let text = match config::read_regular(&self.path, config::MAX_FILE_BYTES) {
            Ok(text) => text,
            Err(error) => return self.failed(format!("{}: {error}", self.path.display())),
        };
        let hash = sha512(&text);
        if hash == self.hash {
            return Check::Unchanged;
        }
        // The same bytes are not tried twice: a bad file is reported once per change.
        self.hash.clone_from(&hash);
        let text = String::from_utf8_lossy(&text);
        match config::parse_corefile(&text, &self.path) {
            Ok(config) => Check::Changed(Box::new(config)),
            Err(error) => self.failed(error.to_string()),
        }
    }

    /// Reads and parses the file again even if its bytes are those running (SIGUSR1).
    pub fn reread(&mut self) -> Check {
        let text = match config::read_regular(&self.path, config::MAX_FILE_BYTES) {
            Ok(text) => text,
            Err(error) => return self.failed(format!("{}: {error}", self.path.display())),
        };
        self.hash = sha512(&text);
        let text = String::from_utf8_lossy(&text);
        match config::parse_corefile(&text, &self.path) {
            Ok(config) => Check::Changed(Box::new(config)),
            Err(error) => self.failed(error.to_string()),
        }
    }

    /// Records that the configuration read last is now running.
    pub fn applied(&self) {
        self.metrics.loaded(&self.hash);
    }

    /// Records that applying the configuration read last failed.
    pub fn apply_failed(&self) {
        self.metrics.failed();
    }

    fn failed(&self, message: String) -> Check {
        self.metrics.failed();
        Check::Failed(message)
    }
}

/// The wait before the next check: `interval` plus a random part of `jitter`.
pub fn next_wait(interval: Duration, jitter: Duration) -> Duration {
    let jitter_ms = u64::try_from(jitter.as_millis()).unwrap_or(u64::MAX);
    interval + Duration::from_millis(fastrand::u64(0..=jitter_ms))
}

fn sha512(bytes: &[u8]) -> String {
    let digest = Sha512::digest(bytes);
    let mut hex = String::with_capacity(128);
    for byte in digest {
        use std::fmt::Write as _;
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn changes_are_parsed_once_and_bad_ones_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Corefile");
        let good = b".:53 {\n bind 127.0.0.1\n}\n";
        std::fs::write(&path, good).unwrap();
        let metrics = Arc::new(ReloadMetrics::new());
        let mut watch = CorefileWatch::new(&path, good, Arc::clone(&metrics));
        assert!(matches!(watch.check(), Check::Unchanged));
        std::fs::write(&path, ".:53 {\n bind 127.0.0.2\n}\n").unwrap();
        assert!(matches!(watch.check(), Check::Changed(_)));
        watch.applied();
        assert!(matches!(watch.check(), Check::Unchanged));
        std::fs::write(&path, ".:53 {\n nope\n}\n").unwrap();
        assert!(matches!(watch.check(), Check::Failed(message) if message.contains("nope")));
        assert!(
            matches!(watch.check(), Check::Unchanged),
            "a bad file is reported once"
        );
        let mut out = crate::metrics::Exposition::new();
        crate::metrics::Collect::collect(&*metrics, &mut out);
        let text = out.finish();
        assert!(text.contains("coredns_reload_failed_total 1"), "{text}");
        assert!(
            text.contains("coredns_reload_version_info{hash=\"sha512\",value=\""),
            "{text}"
        );
    }

    #[test]
    fn waits_stay_within_interval_and_jitter() {
        for _ in 0..100 {
            let wait = next_wait(Duration::from_secs(30), Duration::from_secs(15));
            assert!(wait >= Duration::from_secs(30) && wait <= Duration::from_secs(45));
        }
    }
}
