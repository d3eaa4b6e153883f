//! *k8s_external* on the request path (CoreDNS `plugin/k8s_external`): the external zones'
//! answers, from the names the block's *kubernetes* snapshot holds for them
//! ([`crate::zone::External`]).
//!
//! As CoreDNS: a name outside the plugin's zones passes on; every answer in them is
//! authoritative, a negative one with the zone's SOA (`ns1.<apex>.<zone>`,
//! `hostmaster.<apex>.<zone>`); an NXDOMAIN for a Service name passes on under `fallthrough`
//! (one at the apex's names does not). A load balancer's hostname is a CNAME, whose target is
//! asked through the server again for A and AAAA (CoreDNS's `upstream.Lookup`), its answers
//! appended after the CNAME. Before the API watch has synced, an NXDOMAIN is a SERVFAIL, as
//! the *kubernetes* step answers.

use super::chase::Chase;
use super::{Ctx, End, Flow, Query};
use crate::config::K8sExternalConfig;
use crate::name::WireName;
use crate::name::wire_zones;
use crate::plugin::Plugin;
use crate::wire::{self, rcode};
use crate::zone::Rcode;
use super::lifecycle::{Build, Lifecycle};
use super::PluginChain;
use crate::server::error::StartError;

/// The plugin's options the request path needs.
#[derive(Debug)]
pub(crate) struct K8sExternal {
    /// `fallthrough [ZONES]`: `None` when absent; empty for every zone.
    fallthrough: Option<Vec<WireName>>,
}

impl K8sExternal {
    /// The step of `config`.
    pub(crate) fn new(config: &K8sExternalConfig) -> Self {
        Self {
            fallthrough: config.fallthrough.as_deref().map(wire_zones),
        }
    }

    /// Whether an NXDOMAIN for `qname` passes on (`fallthrough [ZONES]`).
    fn falls_through(&self, qname: &[u8]) -> bool {
        crate::name::falls_through(self.fallthrough.as_deref(), qname)
    }

    /// The answer for `q`, or `q` passed on.
    pub(crate) fn respond(&self, ctx: &Ctx<'_>, q: &Query<'_>, out: &mut Vec<u8>) -> Flow {
        let block = ctx.block;
        let request = q.request;
        let qname = request.question.name();
        let Some(kubernetes) = block.chain.kubernetes() else {
            return Flow::Pass;
        };
        let snapshot = kubernetes.store.load();
        let Some(external) = snapshot.external() else {
            return Flow::Pass;
        };
        let Some(answer) = external.lookup(qname, request.question.qtype) else {
            return Flow::Pass;
        };
        if answer.rcode == Rcode::NxDomain {
            if external.may_fall_through(answer.zone, qname) && self.falls_through(qname) {
                return Flow::Pass;
            }
            if kubernetes.provisional() {
                wire::write_rcode(request, rcode::SERVFAIL, out);
                return Flow::reply(Plugin::K8sExternal);
            }
        }
        let zone = &external.zones()[answer.zone];
        if let Some(target) = answer.chase {
            let mut chase = Chase::new(block, ctx.zone, request, &answer, zone, target);
            chase.plugin = Plugin::K8sExternal.into();
            // CoreDNS appends the target's answers; the CNAME's NOERROR stands.
            chase.keep_rcode = true;
            return End::Chase(chase).into();
        }
        wire::write_answer(request, &answer, zone, q.limit, block.chain.shuffles(), out);
        Flow::reply(Plugin::K8sExternal)
    }
}

impl Lifecycle for K8sExternal {
    const INTERNET_ONLY: bool = true;

    /// Built with the block's *kubernetes*, whose snapshot holds the external zones' names.
    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        Ok(at
            .config
            .plugins
            .kubernetes
            .as_ref()
            .and_then(|kubernetes| kubernetes.external.as_ref())
            .map(Self::new))
    }

    #[inline]
    fn answer(
        &self,
        _chain: &PluginChain,
        ctx: &Ctx<'_>,
        _index: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        self.respond(ctx, q, out)
    }
}
