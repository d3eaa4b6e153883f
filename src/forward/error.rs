//! Why a query could not be forwarded, worded like CoreDNS's (Go's `net.OpError`) so the
//! *errors* plugin logs what an operator used to CoreDNS expects:
//! `read udp 127.0.0.1:40212->10.0.0.1:53: i/o timeout`.

use std::fmt;
use std::io;
use std::net::SocketAddr;

/// Why forwarding failed; the caller answers SERVFAIL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForwardError {
    /// A network operation with one upstream failed.
    Net(NetError),
    /// An upstream's reply matched the query but its records do not parse.
    Malformed {
        /// The upstream.
        upstream: SocketAddr,
    },
    /// Every upstream is down and `failfast_all_unhealthy_upstreams` is set (CoreDNS's
    /// `ErrNoHealthy`).
    NoHealthy,
    /// Every upstream was removed at start because it is this server.
    NoUpstream,
    /// The query has no single question (the server answers those itself).
    BadQuery,
}

/// One failed network operation, as Go's `*net.OpError` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetError {
    /// What was being done.
    pub op: Op,
    /// `udp` or `tcp`.
    pub proto: &'static str,
    /// Our side, once the socket exists.
    pub local: Option<SocketAddr>,
    /// The upstream.
    pub remote: SocketAddr,
    /// What went wrong.
    pub cause: Cause,
}

/// The operation of a [`NetError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Creating the socket or connecting.
    Dial,
    /// Sending the query.
    Write,
    /// Waiting for the reply.
    Read,
}

/// The cause of a [`NetError`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// No reply (or connection) within the read timeout or the query's deadline (our own
    /// timer: the only source of this cause).
    Timeout,
    /// The upstream closed the TCP connection.
    Eof,
    /// An error from the operating system, in Go's words (`connection refused`).
    Os(String),
    /// The TLS handshake with a `tls://` upstream failed: its certificate does not verify
    /// (`invalid peer certificate: ...`), or it refused ours.
    Tls(String),
}

impl NetError {
    pub(super) fn new(
        op: Op,
        proto: &'static str,
        local: Option<SocketAddr>,
        remote: SocketAddr,
        cause: Cause,
    ) -> Self {
        Self {
            op,
            proto,
            local,
            remote,
            cause,
        }
    }

    /// Whether the upstream did not answer in time (which is worth another try in the same
    /// query, unlike a refused connection).
    pub fn is_timeout(&self) -> bool {
        self.cause == Cause::Timeout
    }
}

impl Cause {
    /// The cause of an I/O error.
    pub(super) fn of(error: &io::Error) -> Self {
        match error.kind() {
            io::ErrorKind::UnexpectedEof => Cause::Eof,
            _ => Cause::Os(go_text(error)),
        }
    }
}

/// An I/O error in the words Go's syscall package uses.
fn go_text(error: &io::Error) -> String {
    let text = match error.kind() {
        io::ErrorKind::ConnectionRefused => "connection refused",
        io::ErrorKind::ConnectionReset => "connection reset by peer",
        io::ErrorKind::ConnectionAborted => "software caused connection abort",
        io::ErrorKind::NotConnected => "socket is not connected",
        io::ErrorKind::AddrNotAvailable => "cannot assign requested address",
        io::ErrorKind::AddrInUse => "address already in use",
        io::ErrorKind::BrokenPipe => "broken pipe",
        io::ErrorKind::PermissionDenied => "permission denied",
        io::ErrorKind::NetworkUnreachable => "network is unreachable",
        io::ErrorKind::HostUnreachable => "no route to host",
        io::ErrorKind::NetworkDown => "network is down",
        io::ErrorKind::TimedOut => "connection timed out",
        _ => {
            let text = error.to_string();
            let text = text.split(" (os error").next().unwrap_or_default();
            let mut chars = text.chars();
            return match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => String::new(),
            };
        }
    };
    text.to_owned()
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            Op::Dial => "dial",
            Op::Write => "write",
            Op::Read => "read",
        };
        write!(f, "{op} {} ", self.proto)?;
        match self.local {
            Some(local) if self.op != Op::Dial => write!(f, "{local}->{}", self.remote)?,
            _ => write!(f, "{}", self.remote)?,
        }
        match &self.cause {
            Cause::Timeout => f.write_str(": i/o timeout"),
            Cause::Eof => f.write_str(": EOF"),
            Cause::Os(text) => {
                let syscall = if self.op == Op::Dial { "connect" } else { op };
                write!(f, ": {syscall}: {text}")
            }
            Cause::Tls(text) => write!(f, ": tls: {text}"),
        }
    }
}

impl fmt::Display for ForwardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForwardError::Net(error) => error.fmt(f),
            ForwardError::Malformed { upstream } => {
                write!(f, "dns: bad reply from {upstream}: records do not parse")
            }
            ForwardError::NoHealthy => f.write_str("no healthy proxies"),
            ForwardError::NoUpstream => {
                f.write_str("no upstream to forward to: every configured upstream is this server")
            }
            ForwardError::BadQuery => f.write_str("dns: query without exactly one question"),
        }
    }
}

impl std::error::Error for ForwardError {}

impl From<NetError> for ForwardError {
    fn from(error: NetError) -> Self {
        ForwardError::Net(error)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn errors_read_like_coredns() {
        let timeout = NetError::new(
            Op::Read,
            "udp",
            Some(addr("127.0.0.1:40212")),
            addr("10.0.0.1:53"),
            Cause::Timeout,
        );
        assert_eq!(
            timeout.to_string(),
            "read udp 127.0.0.1:40212->10.0.0.1:53: i/o timeout"
        );
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        let dial = NetError::new(
            Op::Dial,
            "tcp",
            None,
            addr("10.0.0.1:53"),
            Cause::of(&refused),
        );
        assert_eq!(
            dial.to_string(),
            "dial tcp 10.0.0.1:53: connect: connection refused"
        );
        let read = NetError::new(
            Op::Read,
            "udp",
            Some(addr("127.0.0.1:1")),
            addr("127.0.0.1:2"),
            Cause::of(&refused),
        );
        assert_eq!(
            read.to_string(),
            "read udp 127.0.0.1:1->127.0.0.1:2: read: connection refused"
        );
        assert_eq!(ForwardError::NoHealthy.to_string(), "no healthy proxies");
    }

    #[test]
    fn other_os_errors_lose_the_errno_suffix() {
        let error = io::Error::from_raw_os_error(22);
        let Cause::Os(text) = Cause::of(&error) else {
            panic!("not an OS error");
        };
        assert!(!text.contains("os error"), "{text}");
        assert!(text.starts_with(|c: char| c.is_lowercase()), "{text}");
    }
}
