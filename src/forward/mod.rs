//! The *forward* plugin's engine: a DNS proxy to upstream resolvers, as CoreDNS's
//! `plugin/forward` with `plugin/pkg/proxy`.
//!
//! The server owns the sockets to clients and hands each query for a name under FROM to
//! [`Forwarder::forward`]; the forwarder owns the sockets to the upstreams. Per query:
//!
//! - past `max_concurrent` queries in flight: [`Forwarded::Refused`] at once, no upstream
//!   touched;
//! - the upstreams are tried in the order of `policy` (random, round_robin, sequential),
//!   skipping those that are down; when every upstream is down, one picked at random is
//!   tried anyway (`coredns_forward_healthcheck_broken_total`), or none with
//!   `failfast_all_unhealthy_upstreams`;
//! - the client's message goes out unchanged (EDNS, DO, cookies...) but for a fresh random
//!   ID per attempt, over the client's transport, or TCP with `force_tcp`, or UDP with
//!   `prefer_udp`, or always over TLS to a `tls://` upstream (DNS over TLS, RFC 7858, with
//!   the certificate verified for its server name); a truncated UDP reply is asked again over
//!   TCP;
//! - only a reply with the attempt's ID and the query's question is taken; anything else
//!   read from the socket is dropped and the wait goes on, so no client ever gets someone
//!   else's answer;
//! - a network error or no reply within 2 s moves on to the next upstream (and starts
//!   health checks of the one that failed), as does a reply whose rcode is in `failover`;
//!   an upstream that refused the connection is not asked again for the same query; after
//!   [`Timeouts::deadline`] (4 s, so that the client gets SERVFAIL before its own 5 s
//!   timeout) or `max_connect_attempts` failed attempts, [`Forwarded::Failed`];
//! - a reply whose rcode is in `next` is [`Forwarded::Next`]: the caller tries the next
//!   *forward*.
//!
//! Upstream health is CoreDNS's in-band check: a failed exchange starts a loop that sends
//! `<domain> IN NS` (RD unless `no_rec`) every `health_check` interval until any reply
//! comes back; `max_fails` failed checks in a row mark the upstream down, one reply marks it
//! up (a `tls://` upstream is checked over TLS). Connections are reused: connected UDP sockets
//! and open TCP and TLS connections are kept per upstream while idle for at most `expire`, at
//! most `max_idle_conns` of each, so that one TLS handshake serves many queries.
//!
//! An upstream that is this server itself (its port and an address this server listens on,
//! typically systemd-resolved's `127.0.0.53` in a node's resolv.conf while listening on
//! `0.0.0.0:53`) is dropped at start with a warning instead of looping every query.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use clusterdns::config::ForwardConfig;
//! use clusterdns::forward::{Forwarded, Forwarder};
//! use clusterdns::wire::Transport;
//! use tokio_util::sync::CancellationToken;
//!
//! async fn serve(config: &ForwardConfig, query: &[u8], shutdown: CancellationToken) {
//!     let listening = ["0.0.0.0:53".parse().expect("an address")];
//!     let forwarder = Arc::new(Forwarder::new(config, &listening));
//!     for warning in forwarder.warnings() {
//!         eprintln!("{warning}");
//!     }
//!     forwarder.start(shutdown);
//!     match forwarder.forward(query, Transport::Udp).await {
//!         Forwarded::Reply(reply) => { /* send it */ }
//!         Forwarded::Refused => { /* answer REFUSED */ }
//!         Forwarded::Failed(error) => { /* answer SERVFAIL; the errors plugin logs `error` */ }
//!         Forwarded::Next(reply) => { /* the next forward, or send `reply` if none */ }
//!     }
//! }
//! ```

mod error;
mod looped;
mod message;
mod metrics;
mod policy;
mod upstream;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hickory_proto::rr::Name;
use smallvec::SmallVec;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_util::sync::CancellationToken;

pub use error::{Cause, ForwardError, NetError, Op};
pub use looped::is_looping;
pub use metrics::{ForwardMetrics, forward_metrics};

use crate::config::{ForwardConfig, ForwardTls, Upstream as UpstreamConfig, UpstreamTransport};
use crate::metrics::{Collect, Exposition};
use crate::name::suffix_offset;
use crate::wire::{Request, Transport};
use message::QueryInfo;
use metrics::Proto;
use policy::Policy;
use upstream::{HealthCheck, Limits, Peer, Reply};

/// The timeouts of forwarding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// How long one attempt waits for a reply, or for a TCP connection: CoreDNS's fixed
    /// read timeout, 2 s.
    pub read: Duration,
    /// How long one query may take over all its attempts, 4 s. CoreDNS allows 5 s (and an
    /// attempt begun just before may run on past it), which is exactly when a glibc or musl
    /// client gives up and asks again; we answer SERVFAIL before.
    pub deadline: Duration,
    /// How long a health check waits for its reply: CoreDNS's 1 s.
    pub health_check: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            read: Duration::from_secs(2),
            deadline: Duration::from_secs(4),
            health_check: Duration::from_secs(1),
        }
    }
}

/// What became of one forwarded query.
#[derive(Debug)]
pub enum Forwarded {
    /// The upstream's reply, with the client's ID restored.
    Reply(Vec<u8>),
    /// `max_concurrent` queries were already in flight: answer REFUSED.
    Refused,
    /// No upstream answered: answer SERVFAIL; the error is for the *errors* plugin.
    Failed(ForwardError),
    /// The reply's rcode is listed in `next`: try the next *forward* of the server block.
    /// The reply (client ID restored) is what to send if there is none, as CoreDNS then
    /// ignores `next`.
    Next(Vec<u8>),
}

/// The health of one upstream, for status pages and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamHealth {
    /// The upstream as configured (`10.0.0.1:53`), the `to` label of its metrics.
    pub name: String,
    /// The upstream's address.
    pub addr: SocketAddr,
    /// Consecutive failed health checks.
    pub fails: u32,
    /// Whether it is skipped (`fails` reached `max_fails`).
    pub down: bool,
}

/// One *forward* directive, ready to forward queries.
#[derive(Debug)]
pub struct Forwarder {
    /// FROM, lower-case wire format.
    from: Vec<u8>,
    /// `except` names, lower-case wire format.
    except: Vec<Vec<u8>>,
    upstreams: Vec<Arc<Peer>>,
    policy: Policy,
    force_tcp: bool,
    prefer_udp: bool,
    max_fails: u32,
    max_connect_attempts: u32,
    /// 0: no limit.
    max_concurrent: usize,
    in_flight: AtomicUsize,
    next: Vec<u16>,
    failover: Vec<u16>,
    failfast: bool,
    timeouts: Timeouts,
    expire: Duration,
    health: Arc<HealthCheck>,
    warnings: Vec<String>,
}

impl Forwarder {
    /// Builds a forwarder from its directive; `local` holds the addresses this server
    /// listens on, so that an upstream that is this server is dropped (see
    /// [`Forwarder::warnings`]).
    pub fn new(config: &ForwardConfig, local: &[SocketAddr]) -> Self {
        Self::with_timeouts(config, local, Timeouts::default())
    }

    /// [`Forwarder::new`] with other timeouts (tests use short ones).
    pub fn with_timeouts(config: &ForwardConfig, local: &[SocketAddr], timeouts: Timeouts) -> Self {
        let mut warnings = Vec::new();
        let host_ips = host_addresses(local);
        let mut upstreams = Vec::new();
        let mut connector = None;
        for upstream in &config.to {
            if let Some(listen) = local
                .iter()
                .find(|listen| is_self(upstream.addr, **listen, &host_ips))
            {
                warnings.push(loop_warning(upstream, *listen));
                continue;
            }
            let tls = match &upstream.transport {
                UpstreamTransport::Dns => None,
                UpstreamTransport::Tls { server_name } => {
                    match tls_target(config, &mut connector, server_name) {
                        Ok(tls) => Some(tls),
                        Err(why) => {
                            warnings.push(format!(
                                "forward: upstream tls://{} is not used: {why}",
                                upstream.name
                            ));
                            continue;
                        }
                    }
                }
            };
            upstreams.push(Arc::new(Peer::new(
                upstream.addr,
                &upstream.name,
                config.expire,
                config.max_idle_conns,
                tls,
            )));
        }
        if upstreams.is_empty() {
            warnings.push(format!(
                "forward {}: no upstream left to forward to: every query for it will be \
                 answered SERVFAIL",
                config.from
            ));
        }
        let health = Arc::new(HealthCheck {
            query: message::health_check_query(
                &wire_name(&config.health_check_domain),
                !config.health_check_no_rec,
            ),
            tcp: config.force_tcp,
            // A zero interval would check in a busy loop.
            interval: config.health_check.max(Duration::from_millis(10)),
            timeout: timeouts.health_check.min(timeouts.read),
            max_fails: config.max_fails,
            stop: CancellationToken::new(),
        });
        Self {
            from: wire_name(&config.from),
            except: config.except.iter().map(wire_name).collect(),
            upstreams,
            policy: Policy::new(config.policy),
            force_tcp: config.force_tcp,
            prefer_udp: config.prefer_udp,
            max_fails: config.max_fails,
            max_connect_attempts: config.max_connect_attempts,
            max_concurrent: config.max_concurrent.unwrap_or(0),
            in_flight: AtomicUsize::new(0),
            next: config.next.clone(),
            failover: config.failover.clone(),
            failfast: config.failfast_all_unhealthy_upstreams,
            timeouts,
            expire: config.expire,
            health,
            warnings,
        }
    }

    /// Starts the background work until `shutdown` is cancelled: closing connections idle
    /// for longer than `expire`. (Health checks start by themselves after a failure, and
    /// stop with `shutdown` too.) Needs a Tokio runtime.
    pub fn start(self: &Arc<Self>, shutdown: CancellationToken) {
        let stop = self.health.stop.clone();
        let upstreams = self.upstreams.clone();
        // As CoreDNS's connection manager: sweep every `expire`, at most every 10 s.
        let every = self
            .expire
            .clamp(Duration::from_millis(100), Duration::from_secs(10));
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(every);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = stop.cancelled() => break,
                    _ = ticker.tick() => upstreams.iter().for_each(|upstream| upstream.sweep()),
                }
            }
            stop.cancel();
            upstreams.iter().for_each(|upstream| upstream.close_idle());
        });
    }

    /// Whether this forwarder handles `qname` (lower-case wire format): FROM or below, and
    /// not an `except` name or below one (FROM itself is always forwarded, as in CoreDNS).
    pub fn matches(&self, qname: &[u8]) -> bool {
        if suffix_offset(qname, &self.from).is_none() {
            return false;
        }
        qname.eq_ignore_ascii_case(&self.from)
            || !self
                .except
                .iter()
                .any(|except| suffix_offset(qname, except).is_some())
    }

    /// Problems found at start (upstreams dropped because they are this server, no
    /// upstream left), for the server to log once.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The upstreams (after loop removal) and their health, in configuration order.
    pub fn health(&self) -> Vec<UpstreamHealth> {
        self.upstreams
            .iter()
            .map(|upstream| UpstreamHealth {
                name: upstream.name.clone(),
                addr: upstream.addr,
                fails: upstream.fails(),
                down: upstream.down(self.max_fails),
            })
            .collect()
    }

    /// Forwards one query — the client's message, any ID — that came over `client`, and
    /// returns the upstream's reply with the client's ID, or why there is none.
    pub async fn forward(&self, query: &[u8], client: Transport) -> Forwarded {
        let Some(info) = message::parse_query(query) else {
            return Forwarded::Failed(ForwardError::BadQuery);
        };
        self.forward_with(query, info, client).await
    }

    /// [`forward`](Self::forward) of a query the server has parsed already: `request` (the
    /// client's message, *rewrite*'s or *autopath*'s, its payload as *bufsize* left it) is
    /// not read again.
    pub async fn forward_request(&self, request: &Request<'_>, client: Transport) -> Forwarded {
        self.forward_with(request.bytes, QueryInfo::of(request), client)
            .await
    }

    async fn forward_with(&self, query: &[u8], info: QueryInfo, client: Transport) -> Forwarded {
        let Some(_slot) = self.admit() else {
            metrics::forward_metrics().max_concurrent_rejects.inc();
            return Forwarded::Refused;
        };
        // The process-wide bound: each forward in flight holds an upstream socket.
        let Some(_budget) = crate::limits::forward_slot() else {
            return Forwarded::Refused;
        };
        if self.upstreams.is_empty() {
            return Forwarded::Failed(ForwardError::NoUpstream);
        }
        let Ok(length) = u16::try_from(query.len()) else {
            return Forwarded::Failed(ForwardError::BadQuery);
        };
        // The query behind its TCP length prefix; UDP sends the part after it.
        let mut framed = Vec::with_capacity(query.len() + 2);
        framed.extend_from_slice(&length.to_be_bytes());
        framed.extend_from_slice(query);

        let proto = if self.force_tcp {
            Proto::Tcp
        } else if self.prefer_udp {
            Proto::Udp
        } else {
            match client {
                Transport::Udp => Proto::Udp,
                Transport::Tcp => Proto::Tcp,
            }
        };
        let limits = Limits {
            read: self.timeouts.read,
            deadline: Instant::now() + self.timeouts.deadline,
        };
        let n = self.upstreams.len();
        let order = self.policy.order(n);
        // Upstreams that failed this query other than by a timeout: asking again at once
        // would fail the same way (and spin until the deadline).
        let mut exhausted: SmallVec<[bool; 16]> = SmallVec::from_elem(false, n);
        let mut failed_attempts = 0u32;
        let mut failovers = 0usize;
        let mut broken_tried = false;
        let mut last_error = None;
        let mut last_failover: Option<Reply> = None;

        'passes: loop {
            let mut down = 0;
            let mut candidates: SmallVec<[usize; 16]> = SmallVec::new();
            for &index in &order {
                if exhausted[index] {
                    continue;
                }
                if self.upstreams[index].down(self.max_fails) {
                    down += 1;
                    continue;
                }
                candidates.push(index);
            }
            if candidates.is_empty() {
                if down < n || broken_tried {
                    break;
                }
                // Every upstream is down: CoreDNS assumes the health checking itself is
                // broken and tries one at random.
                metrics::forward_metrics().healthcheck_broken.inc();
                if self.failfast {
                    last_error.get_or_insert(ForwardError::NoHealthy);
                    break;
                }
                broken_tried = true;
                candidates.push(policy::below(n as u64) as usize);
            }
            for index in candidates {
                if Instant::now() >= limits.deadline
                    || (self.max_connect_attempts != 0
                        && failed_attempts >= self.max_connect_attempts)
                {
                    break 'passes;
                }
                let upstream = &self.upstreams[index];
                match self
                    .attempt(upstream, &mut framed, &info, proto, client, limits)
                    .await
                {
                    Err(error) => {
                        upstream.start_health_checks(&self.health);
                        failed_attempts += 1;
                        if !matches!(&error, ForwardError::Net(net) if net.is_timeout()) {
                            exhausted[index] = true;
                        }
                        last_error = Some(error);
                    }
                    Ok(reply) => {
                        if self.failover.contains(&reply.info.rcode) {
                            failovers += 1;
                            if failovers < n {
                                last_failover = Some(reply);
                                continue;
                            }
                        }
                        return self.finish(reply, &info, client);
                    }
                }
            }
            if broken_tried {
                break;
            }
        }
        match last_failover {
            // Every upstream was tried: CoreDNS returns the last reply.
            Some(reply) => self.finish(reply, &info, client),
            None => Forwarded::Failed(last_error.unwrap_or(ForwardError::NoHealthy)),
        }
    }

    /// One attempt with one upstream: an exchange over `proto`, and when a UDP reply is
    /// truncated, the same over TCP. A UDP client gets the TCP reply only if it fits its
    /// payload size; otherwise the truncated one, so it retries over TCP itself.
    async fn attempt(
        &self,
        upstream: &Peer,
        framed: &mut [u8],
        info: &QueryInfo,
        proto: Proto,
        client: Transport,
        limits: Limits,
    ) -> Result<Reply, ForwardError> {
        let _in_flight = looped::note(upstream.addr.ip(), &framed[2..], info.question_end);
        let proto = upstream.transport(proto);
        let reply = upstream.exchange(framed, info, proto, limits).await?;
        if !(reply.info.truncated && proto == Proto::Udp) {
            return Ok(reply);
        }
        match upstream.exchange(framed, info, Proto::Tcp, limits).await {
            Ok(full) if client == Transport::Tcp || full.bytes.len() <= info.udp_limit => Ok(full),
            Ok(_) => Ok(reply),
            Err(error) if client == Transport::Tcp => Err(error),
            Err(_) => Ok(reply),
        }
    }

    /// The outcome for a reply taken from an upstream.
    fn finish(&self, reply: Reply, info: &QueryInfo, client: Transport) -> Forwarded {
        let mut bytes = reply.bytes;
        if client == Transport::Udp && bytes.len() > info.udp_limit {
            // The upstream ignored the client's payload size.
            message::truncate(&mut bytes, info);
        }
        message::set_id(&mut bytes, info.id);
        if self.next.contains(&reply.info.rcode) {
            Forwarded::Next(bytes)
        } else {
            Forwarded::Reply(bytes)
        }
    }

    /// A slot under `max_concurrent`, released on drop; `None` past the limit.
    fn admit(&self) -> Option<Slot<'_>> {
        if self.max_concurrent == 0 {
            return Some(Slot(None));
        }
        let before = self.in_flight.fetch_add(1, Ordering::AcqRel);
        let slot = Slot(Some(&self.in_flight));
        (before < self.max_concurrent).then_some(slot)
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.health.stop.cancel();
    }
}

/// The forward metrics are process-wide (see [`ForwardMetrics`]): every forwarder writes
/// the same series, so register one of them — or [`forward_metrics`] — not each.
impl Collect for Forwarder {
    fn collect(&self, out: &mut Exposition) {
        forward_metrics().collect(out);
    }
}

/// A query counted against `max_concurrent`.
struct Slot<'a>(Option<&'a AtomicUsize>);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Some(in_flight) = self.0 {
            in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The TLS session settings of one `tls://` upstream; the *forward*'s connector is built
/// once, on its first `tls://` upstream, from its `tls` settings (the system's trust anchors
/// when it has none, as for a configuration not read from a Corefile).
fn tls_target(
    config: &ForwardConfig,
    connector: &mut Option<TlsConnector>,
    server_name: &str,
) -> Result<upstream::Tls, String> {
    let server_name = ServerName::try_from(server_name.to_owned())
        .map_err(|_| format!("'{server_name}' is not a host name or IP address"))?;
    let connector = match connector {
        Some(connector) => connector.clone(),
        None => {
            let settings = match &config.tls {
                Some(settings) => settings.clone(),
                None => ForwardTls::system_roots().map_err(|e| e.to_string())?,
            };
            let built = TlsConnector::from(Arc::new(
                settings.client_config().map_err(|e| e.to_string())?,
            ));
            *connector = Some(built.clone());
            built
        }
    };
    Ok(upstream::Tls {
        connector,
        server_name,
    })
}

/// A name in lower-case wire format.
fn wire_name(name: &Name) -> Vec<u8> {
    let mut wire = Vec::with_capacity(name.len() + 1);
    for label in name.iter() {
        wire.push(label.len() as u8);
        wire.extend(label.iter().map(u8::to_ascii_lowercase));
    }
    wire.push(0);
    wire
}

/// This host's addresses, when some listen address is a wildcard.
fn host_addresses(local: &[SocketAddr]) -> Vec<IpAddr> {
    if !local.iter().any(|listen| listen.ip().is_unspecified()) {
        return Vec::new();
    }
    if_addrs::get_if_addrs()
        .unwrap_or_default()
        .iter()
        .map(if_addrs::Interface::ip)
        .collect()
}

/// Whether sending to `upstream` reaches the socket listening on `listen`: the same port,
/// and the same address, or `listen` is a wildcard and `upstream` is a loopback address or
/// one of this host's (`::` takes IPv4 too, as Linux's dual-stack sockets do).
fn is_self(upstream: SocketAddr, listen: SocketAddr, host_ips: &[IpAddr]) -> bool {
    if upstream.port() != listen.port() {
        return false;
    }
    let target = canonical(upstream.ip());
    let listen_ip = canonical(listen.ip());
    if target == listen_ip {
        return true;
    }
    if !listen_ip.is_unspecified() {
        return false;
    }
    let same_family = target.is_ipv4() == listen_ip.is_ipv4() || listen_ip.is_ipv6();
    same_family
        && (target.is_loopback()
            || target.is_unspecified()
            || host_ips.iter().any(|ip| canonical(*ip) == target))
}

/// IPv4-mapped IPv6 addresses as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// What to tell the operator about an upstream that is this server.
fn loop_warning(upstream: &UpstreamConfig, listen: SocketAddr) -> String {
    let from = upstream
        .from_file
        .as_ref()
        .map(|file| format!(" (from {})", file.display()))
        .unwrap_or_default();
    let mut warning = format!(
        "forward: upstream {}{from} is this server (listening on {listen}): forwarding there \
         would loop, so it is not used",
        upstream.name
    );
    let stub = std::net::Ipv4Addr::new(127, 0, 0, 53);
    if upstream.addr.ip() == IpAddr::V4(stub) {
        warning.push_str(
            "; this resolv.conf likely comes from a node running systemd-resolved — point \
             forward at the real resolvers, e.g. /run/systemd/resolve/resolv.conf",
        );
    } else {
        warning.push_str("; point forward at resolvers other than this server");
    }
    warning
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    pub(super) fn config(from: &str, to: &[&str]) -> ForwardConfig {
        let to = to.iter().map(|to| UpstreamConfig::dns(addr(to))).collect();
        ForwardConfig::new(Name::from_ascii(from).unwrap(), to)
    }

    fn wire(name: &str) -> Vec<u8> {
        wire_name(&Name::from_ascii(name).unwrap())
    }

    #[test]
    fn matches_from_and_below_but_not_except() {
        let mut config = config("example.org.", &["10.0.0.1:53"]);
        config.except = vec![
            Name::from_ascii("internal.example.org.").unwrap(),
            Name::from_ascii("example.org.").unwrap(),
        ];
        let forwarder = Forwarder::new(&config, &[]);
        assert!(forwarder.matches(&wire("example.org.")));
        assert!(!forwarder.matches(&wire("www.example.org.")));
        assert!(!forwarder.matches(&wire("a.internal.example.org.")));
        assert!(!forwarder.matches(&wire("example.com.")));
        assert!(!forwarder.matches(&wire("org.")));

        let mut root = self::config(".", &["10.0.0.1:53"]);
        root.except = vec![Name::from_ascii("Internal.Example.org.").unwrap()];
        let forwarder = Forwarder::new(&root, &[]);
        assert!(forwarder.matches(&wire(".")));
        assert!(forwarder.matches(&wire("www.example.org.")));
        assert!(forwarder.matches(&wire("xinternal.example.org.")));
        assert!(!forwarder.matches(&wire("internal.example.org.")));
        assert!(!forwarder.matches(&wire("a.b.internal.example.org.")));
    }

    #[test]
    fn wire_names_are_lower_case() {
        assert_eq!(wire("WWW.Example.ORG."), b"\x03www\x07example\x03org\x00");
        assert_eq!(wire("."), b"\x00");
    }

    #[test]
    fn an_upstream_is_this_server_only_on_its_port_and_addresses() {
        let host = [IpAddr::from([10, 1, 2, 3])];
        let any4 = addr("0.0.0.0:53");
        let any6 = addr("[::]:53");
        assert!(is_self(addr("127.0.0.53:53"), any4, &host));
        assert!(is_self(addr("127.0.0.1:53"), any4, &host));
        assert!(is_self(addr("10.1.2.3:53"), any4, &host));
        assert!(is_self(addr("0.0.0.0:53"), any4, &host));
        assert!(!is_self(addr("10.1.2.4:53"), any4, &host));
        assert!(!is_self(addr("127.0.0.1:5353"), any4, &host));
        assert!(!is_self(addr("[::1]:53"), any4, &host));
        assert!(is_self(addr("[::1]:53"), any6, &host));
        assert!(is_self(addr("127.0.0.53:53"), any6, &host));
        assert!(is_self(addr("[::ffff:127.0.0.1]:53"), any4, &host));
        let lo = addr("127.0.0.1:53");
        assert!(is_self(addr("127.0.0.1:53"), lo, &host));
        assert!(!is_self(addr("127.0.0.53:53"), lo, &host));
        assert!(!is_self(addr("10.1.2.3:53"), lo, &host));
    }

    #[test]
    fn loops_are_dropped_with_an_actionable_warning() {
        let mut config = config(".", &["127.0.0.53:53", "127.0.0.1:1053", "10.0.0.1:53"]);
        config.to[0].from_file = Some("/etc/resolv.conf".into());
        let forwarder = Forwarder::new(&config, &[addr("0.0.0.0:53")]);
        let kept: Vec<SocketAddr> = forwarder.health().iter().map(|h| h.addr).collect();
        assert_eq!(kept, [addr("127.0.0.1:1053"), addr("10.0.0.1:53")]);
        assert_eq!(forwarder.warnings().len(), 1, "{:?}", forwarder.warnings());
        let warning = &forwarder.warnings()[0];
        for part in [
            "127.0.0.53:53",
            "(from /etc/resolv.conf)",
            "0.0.0.0:53",
            "loop",
            "systemd-resolved",
            "/run/systemd/resolve/resolv.conf",
        ] {
            assert!(warning.contains(part), "{part} not in {warning}");
        }
    }

    #[test]
    fn no_upstream_left_is_said_once() {
        let config = config(".", &["127.0.0.1:1053"]);
        let forwarder = Forwarder::new(&config, &[addr("127.0.0.1:1053")]);
        assert!(forwarder.health().is_empty());
        assert_eq!(forwarder.warnings().len(), 2);
        assert!(forwarder.warnings()[1].contains("SERVFAIL"));
    }

    #[test]
    fn max_concurrent_slots_are_released() {
        let mut config = config(".", &["10.0.0.1:53"]);
        config.max_concurrent = Some(2);
        let forwarder = Forwarder::new(&config, &[]);
        let a = forwarder.admit();
        let b = forwarder.admit();
        assert!(a.is_some() && b.is_some());
        assert!(forwarder.admit().is_none());
        drop(a);
        assert!(forwarder.admit().is_some());
        drop(b);
        assert_eq!(forwarder.in_flight.load(Ordering::Relaxed), 0);
    }
}
