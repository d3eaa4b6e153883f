//! The real `clusterdns` binary, started on port 0 and asked over real sockets.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Reply;

/// A running `clusterdns serve`. Killed on drop; its log is printed if the test failed.
pub struct TestServer {
    child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
    stdout: Arc<Mutex<String>>,
}

impl TestServer {
    /// Starts `clusterdns ARGS...` and waits for it to listen on UDP and TCP.
    pub fn start(args: &[&str]) -> Self {
        Self::start_with(Command::new(env!("CARGO_BIN_EXE_clusterdns")), args)
    }

    /// Starts `clusterdns ARGS...` under `prlimit --nofile=NOFILE` (`SOFT:HARD`): the
    /// process id is the server's, as prlimit execs it.
    pub fn start_limited(nofile: &str, args: &[&str]) -> Self {
        let mut command = Command::new("prlimit");
        command
            .arg(format!("--nofile={nofile}"))
            .arg(env!("CARGO_BIN_EXE_clusterdns"));
        Self::start_with(command, args)
    }

    /// Starts `COMMAND ARGS...` (clusterdns behind a wrapper that execs it, such as
    /// taskset) and waits for it to listen on UDP and TCP.
    pub fn start_with(command: Command, args: &[&str]) -> Self {
        Self::try_start_with(command, args)
            .unwrap_or_else(|log| panic!("server did not start:\n{log}"))
    }

    /// Starts `clusterdns ARGS...`, or gives back its log if it did not come to listen (it
    /// exited, or said nothing within a minute).
    pub fn try_start(args: &[&str]) -> Result<Self, String> {
        Self::try_start_with(Command::new(env!("CARGO_BIN_EXE_clusterdns")), args)
    }

    /// [`TestServer::start_with`], giving back the log if the server did not come to listen.
    pub fn try_start_with(mut command: Command, args: &[&str]) -> Result<Self, String> {
        let mut child = command
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start clusterdns");
        let stderr = child.stderr.take().unwrap();
        let stdout = Arc::new(Mutex::new(String::new()));
        let out_sink = Arc::clone(&stdout);
        let child_stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(child_stdout).lines() {
                let Ok(line) = line else { break };
                let mut out = out_sink.lock().unwrap();
                out.push_str(&line);
                out.push('\n');
            }
        });
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push_str(&line);
                sink.lock().unwrap().push('\n');
                if let Some(rest) = line.split("listening on udp ").nth(1) {
                    let _ = tx.send(rest.trim().to_owned());
                }
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(addr) => {
                let addr: SocketAddr = addr.parse().expect("listen address");
                // A wildcard (`[::]` takes IPv4 too) is asked on IPv4 loopback.
                if addr.ip().is_unspecified() {
                    SocketAddr::from(([127, 0, 0, 1], addr.port()))
                } else {
                    addr
                }
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let log = log.lock().unwrap().clone();
                return Err(log);
            }
        };
        // TCP is bound before the log line; give the accept loop a moment to run.
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Self {
            child,
            addr,
            log,
            stdout,
        })
    }

    /// What the server wrote to stdout so far (the *log* and *errors* plugins).
    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// The address an HTTP route was logged at (`listening for health on http://A/health`).
    pub fn http_addr(&self, route: &str) -> SocketAddr {
        let needle = format!("listening for {route} on http://");
        self.wait_log(&needle, Duration::from_secs(10));
        let log = self.log();
        let line = log
            .lines()
            .find(|l| l.contains(&needle))
            .unwrap_or_else(|| panic!("no {route} endpoint in:\n{log}"));
        let rest = line.split(&needle).nth(1).unwrap();
        rest.split('/').next().unwrap().parse().unwrap()
    }

    /// `GET path` on the route's address: (status, body).
    pub fn http_get(&self, route: &str, path: &str) -> (u16, String) {
        http_get(self.http_addr(route), path)
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        self.signal("TERM");
    }

    /// Sends the signal `name` (`TERM`, `USR1`, ...) with kill(1).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// CPU time (user + system) the process has used so far, from /proc/PID/stat.
    pub fn cpu_time(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        // The fields after the command name, which is in parentheses and may hold spaces.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = rest.split(' ').collect();
        // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after `(comm)`.
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        Duration::from_millis(ticks * 10)
    }

    /// Waits up to `timeout` for the process to exit; its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Waits until the log contains `text`.
    pub fn wait_log(&self, text: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.log().contains(text) {
            assert!(
                Instant::now() < deadline,
                "no {text:?} in the log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `packet` over UDP and returns the reply bytes.
    pub fn udp(&self, packet: &[u8]) -> Vec<u8> {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        socket.send_to(packet, self.addr).unwrap();
        let mut buf = vec![0u8; 65535];
        let (len, _) = socket.recv_from(&mut buf).expect("udp reply");
        buf.truncate(len);
        buf
    }

    /// Sends `packet` over TCP and returns every reply message until `count` arrived.
    pub fn tcp_messages(
        &self,
        packet: &[u8],
        until_done: impl Fn(&[Vec<u8>]) -> bool,
    ) -> Vec<Vec<u8>> {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut framed = (packet.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(packet);
        stream.write_all(&framed).unwrap();
        let mut messages = Vec::new();
        while !until_done(&messages) {
            let mut len = [0u8; 2];
            stream.read_exact(&mut len).expect("tcp reply length");
            let mut message = vec![0u8; u16::from_be_bytes(len) as usize];
            stream.read_exact(&mut message).unwrap();
            messages.push(message);
        }
        messages
    }

    /// Writes `bytes` as they are (already framed) and reads `count` framed replies.
    pub fn tcp_messages_raw(&self, bytes: &[u8], count: usize) -> Vec<Vec<u8>> {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream.write_all(bytes).unwrap();
        (0..count)
            .map(|_| {
                let mut len = [0u8; 2];
                stream.read_exact(&mut len).expect("tcp reply length");
                let mut message = vec![0u8; u16::from_be_bytes(len) as usize];
                stream.read_exact(&mut message).unwrap();
                message
            })
            .collect()
    }

    pub fn ask_udp(&self, name: &str, qtype: &str) -> Reply {
        Reply::decode(&self.udp(&super::query(name, qtype, Some(1232))))
    }

    pub fn ask_tcp(&self, name: &str, qtype: &str) -> Reply {
        let messages = self.tcp_messages(&super::query(name, qtype, Some(1232)), |m| !m.is_empty());
        Reply::decode(&messages[0])
    }
}

/// A minimal HTTP/1.1 GET: (status, body).
pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let chunked = head.lines().any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.eq_ignore_ascii_case("transfer-encoding")
                && value.trim().eq_ignore_ascii_case("chunked")
        })
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, body)
}

/// The body of a `Transfer-Encoding: chunked` response (Go's HTTP server chunks a body
/// larger than its buffer, as CoreDNS's /metrics): each chunk's size line and CRLF removed.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = size.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16)
            .unwrap_or_else(|_| panic!("a chunk size, not {size:?}, in a chunked body"));
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].strip_prefix("\r\n").unwrap_or(&rest[size..]);
    }
    out
}

#[test]
fn chunked_bodies_are_joined() {
    let body = "5\r\nhello\r\nc\r\n\ncoredns_plu\r\n7\r\ngin x 1\r\n0\r\n\r\n";
    assert_eq!(dechunk(body), "hello\ncoredns_plugin x 1");
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- clusterdns log ---\n{}", self.log());
        }
    }
}
