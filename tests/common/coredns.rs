//! The real CoreDNS (built by bench/peers/build.sh beside the control plane's binaries), run
//! from a Corefile on ports the test chose, for side-by-side tests (tests/cluster/differential.rs).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::binary::http_get;

/// The CoreDNS binary among the peers, if it is built.
pub fn binary() -> Option<PathBuf> {
    let path = super::cluster::peers()?.join("coredns");
    path.is_file().then_some(path)
}

/// `coredns -version`'s first line (`CoreDNS-1.14.7`).
pub fn version() -> String {
    let output = Command::new(binary().expect("CoreDNS is built"))
        .arg("-version")
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// A running CoreDNS; killed on drop, its log printed if the test failed.
pub struct CoreDns {
    child: Child,
    /// Where it answers DNS (UDP and TCP).
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl CoreDns {
    /// Starts `coredns -conf` on `corefile`, which serves DNS on `dns` and has `ready` on
    /// `ready`; waits until `/ready` says 200 (every plugin, *kubernetes* included, synced).
    pub fn start(corefile: &str, dns: u16, ready: u16) -> Self {
        Self::try_start(corefile, dns, ready).unwrap_or_else(|log| panic!("{log}"))
    }

    /// [`CoreDns::start`], giving back what it printed if it exited before it was ready.
    pub fn try_start(corefile: &str, dns: u16, ready: u16) -> Result<Self, String> {
        let binary = binary().expect("CoreDNS is built (bench/peers/build.sh)");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Corefile");
        std::fs::write(&path, corefile).unwrap();
        let mut child = Command::new(binary)
            .arg("-conf")
            .arg(&path)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start coredns");
        let log = Arc::new(Mutex::new(String::new()));
        let mut readers = Vec::new();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let sink = Arc::clone(&log);
            readers.push(std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    let mut log = sink.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
            }));
        }
        let mut coredns = Self {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], dns)),
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let ready = SocketAddr::from(([127, 0, 0, 1], ready));
        loop {
            if let Ok(Some(status)) = coredns.child.try_wait() {
                // Its output read to the end, for the error it exited with.
                for reader in readers {
                    let _ = reader.join();
                }
                return Err(format!("coredns exited ({status}):\n{}", coredns.log()));
            }
            if std::net::TcpStream::connect(ready).is_ok() && http_get(ready, "/ready").0 == 200 {
                return Ok(coredns);
            }
            assert!(
                Instant::now() < deadline,
                "coredns not ready within 60 s:\n{}",
                coredns.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What CoreDNS logged so far (stdout and stderr).
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for CoreDns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- coredns log ---\n{}", self.log());
        }
    }
}
