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
}

impl TestServer {
    /// Starts `clusterdns ARGS...` and waits for it to listen on UDP and TCP.
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start clusterdns");
        let stderr = child.stderr.take().unwrap();
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
            Ok(addr) => addr.parse().expect("listen address"),
            Err(_) => {
                let _ = child.kill();
                panic!("server did not start:\n{}", log.lock().unwrap());
            }
        };
        // TCP is bound before the log line; give the accept loop a moment to run.
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, addr, log }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
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

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- clusterdns log ---\n{}", self.log());
        }
    }
}
