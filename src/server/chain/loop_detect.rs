//! The *loop* plugin: at start, ask our own server a question that only a forwarding loop
//! would bring back to us more than once.
//!
//! CoreDNS sends `HINFO <random>.<random>.<zone>` to itself and exits fatally when it sees
//! the probe three times — which crash-loops the pod (coredns/coredns#2087, kind#1975). Here a
//! detected loop is reported once, with what to do about it, and the block stops forwarding
//! (SERVFAIL for names it would forward) while the cluster zone keeps being answered.
//!
//! All of the plugin is here: its state ([`Loop`]), its step ([`respond`]: the probe coming
//! back is counted; once there is a loop, a name a `forward` would take is SERVFAIL) and its
//! start-up work ([`probe_for_loops`], for each listener of the block once bound).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::lifecycle::{Build, Lifecycle, Serving};
use super::{Ctx, Flow, PluginChain, Query};
use crate::codes::rtype;
use crate::name::WireName;
use crate::plugin::Plugin;
use crate::server::Block;
use crate::server::error::StartError;
use crate::wire::{self, Request, rcode};

/// How many times the probe may be seen before it is a loop (CoreDNS: more than two).
const LOOP_THRESHOLD: u32 = 2;

/// One block's loop probe.
#[derive(Debug)]
pub(crate) struct Loop {
    probe: WireName,
    seen: AtomicU32,
    answered: AtomicBool,
    looping: AtomicBool,
}

impl Loop {
    /// A probe under `zone`, with two random labels.
    pub(crate) fn new(zone: &WireName) -> Self {
        let probe = zone
            .prepend_all([
                fastrand::u64(..).to_string().as_str(),
                fastrand::u64(..).to_string().as_str(),
            ])
            .unwrap_or_else(|_| zone.clone());
        Self {
            probe,
            seen: AtomicU32::new(0),
            answered: AtomicBool::new(false),
            looping: AtomicBool::new(false),
        }
    }

    /// The probe name (lower-case wire format), asked with type HINFO.
    pub(crate) fn probe(&self) -> &WireName {
        &self.probe
    }

    /// Called for every query the block sees; `true` when this query is what reveals a loop
    /// (so it is reported exactly once).
    pub(crate) fn observe(&self, qname: &[u8], qtype: u16) -> bool {
        if qtype != rtype::HINFO
            || qname != self.probe.as_bytes()
            || self.answered.load(Ordering::Relaxed)
        {
            return false;
        }
        let seen = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        seen > LOOP_THRESHOLD && !self.looping.swap(true, Ordering::Relaxed)
    }

    /// The probe came back answered: no loop, stop probing.
    pub(crate) fn answered(&self) {
        self.answered.store(true, Ordering::Relaxed);
    }

    /// Whether probing is still going.
    pub(crate) fn probing(&self) -> bool {
        !self.answered.load(Ordering::Relaxed) && !self.looping.load(Ordering::Relaxed)
    }

    /// Whether a loop was found.
    pub(crate) fn looping(&self) -> bool {
        self.looping.load(Ordering::Relaxed)
    }
}

/// *loop*'s step: its probe coming back is counted (a third sighting is a loop, reported
/// once); once there is a loop, a name a `forward` would take is SERVFAIL. Anything else
/// passes on.
fn respond(
    probe: &Loop,
    chain: &PluginChain,
    ctx: &Ctx<'_>,
    request: &Request<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    let qname = request.question.name();
    if !ctx.dry && probe.observe(qname, request.question.qtype) {
        tracing::error!(
            "loop detected for zone {}: a query this server sent to itself came back through \
             forward three times; the upstream forwards back to this server. Forwarding is \
             off for this block (SERVFAIL for names it would forward); the cluster zone is \
             still answered. Point forward at resolvers that do not send queries back here.",
            ctx.block
                .zones
                .first()
                .map(ToString::to_string)
                .unwrap_or_default()
        );
    }
    if probe.looping()
        && chain
            .forward()
            .is_some_and(|forward| forward.first_for(qname).is_some())
    {
        wire::write_rcode(request, rcode::SERVFAIL, out);
        return Flow::reply(Plugin::Loop);
    }
    Flow::Pass
}

impl Lifecycle for Loop {
    const INTERNET_ONLY: bool = true;

    /// A probe under the block's first zone.
    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        Ok(at.config.plugins.loop_detect.as_ref().map(|_| {
            let zone = at.zones.first().cloned().unwrap_or_else(WireName::root);
            Self::new(&zone)
        }))
    }

    /// Probes the listener (its family as configured: a `0.0.0.0` bound as `[::]` is probed
    /// on 127.0.0.1).
    fn serving(&self, at: &Serving<'_>) {
        tokio::spawn(probe_for_loops(
            Arc::clone(at.block),
            at.addr,
            at.token.clone(),
        ));
    }

    #[inline]
    fn answer(
        &self,
        chain: &PluginChain,
        ctx: &Ctx<'_>,
        _index: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        respond(self, chain, ctx, q.request, out)
    }
}

/// The *loop* plugin's probe: ask this server `HINFO <random>.<random>.<zone>` on
/// `listener` until some answer comes back (then there is no loop) or the handler sees the
/// probe come round three times, for at most 30 s (CoreDNS's schedule).
async fn probe_for_loops(block: Arc<Block>, listener: SocketAddr, shutdown: CancellationToken) {
    let Some(probe) = block.chain.get::<Loop>() else {
        return;
    };
    let target = match listener.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => {
            SocketAddr::from((Ipv4Addr::LOCALHOST, listener.port()))
        }
        ip if ip.is_unspecified() => SocketAddr::from((Ipv6Addr::LOCALHOST, listener.port())),
        _ => listener,
    };
    let bind = if target.is_ipv4() {
        SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
    } else {
        SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))
    };
    let Ok(socket) = tokio::net::UdpSocket::bind(bind).await else {
        return;
    };
    let query = probe_query(probe.probe());
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut buf = [0u8; 512];
    while probe.probing() && Instant::now() < deadline && !shutdown.is_cancelled() {
        if socket.send_to(&query, target).await.is_err() {
            return;
        }
        if let Ok(Ok((_, from))) =
            tokio::time::timeout(Duration::from_secs(2), socket.recv_from(&mut buf)).await
            && from == target
        {
            probe.answered();
            return;
        }
    }
}

/// The probe: `name` HINFO, recursion desired.
fn probe_query(name: &crate::name::WireName) -> Vec<u8> {
    crate::wire::write_query(0x4c50, 0x0100, name.as_bytes(), crate::codes::rtype::HINFO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_third_sighting_is_a_loop_reported_once() {
        let zone = WireName::root();
        let detect = Loop::new(&zone);
        let probe = detect.probe().as_bytes().to_vec();
        assert_eq!(detect.probe().label_count(), 2);
        assert!(
            !detect.observe(&probe, rtype::A),
            "other types do not count"
        );
        assert!(
            !detect.observe(b"\x01x\x00", rtype::HINFO),
            "other names do not count"
        );
        assert!(!detect.observe(&probe, rtype::HINFO));
        assert!(!detect.observe(&probe, rtype::HINFO));
        assert!(detect.observe(&probe, rtype::HINFO), "third time");
        assert!(!detect.observe(&probe, rtype::HINFO), "reported once");
        assert!(detect.looping() && !detect.probing());
    }

    #[test]
    fn an_answered_probe_ends_probing() {
        let detect = Loop::new(
            &WireName::from_dotted("cluster.local.").unwrap_or_else(|_| WireName::root()),
        );
        detect.answered();
        let probe = detect.probe().as_bytes().to_vec();
        for _ in 0..5 {
            assert!(!detect.observe(&probe, rtype::HINFO));
        }
        assert!(!detect.probing() && !detect.looping());
    }
}
