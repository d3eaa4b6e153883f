//! *kubernetes*: the cluster zone, answered from the block's published snapshot (built from
//! the objects files, or kept by the API watch): its state, and its step.

use std::sync::Arc;

use super::chase::Chase;
use super::{Ctx, End, Flow, Query};
use crate::config::KubernetesConfig;
use crate::name::{WireName, wire_zones};
use crate::plugin::Plugin;
use crate::source::api::ApiWatch;
use crate::store::Store;
use crate::wire::{self, rcode};
use crate::zone::Rcode;

/// The *kubernetes* plugin of a block: its options and its published snapshot.
#[derive(Debug)]
pub struct Kubernetes {
    /// The directive's options.
    pub config: KubernetesConfig,
    /// The current zone.
    pub store: Arc<Store>,
    fallthrough: Option<Vec<WireName>>,
    /// On-disk fingerprint of the objects files the store was built from.
    pub(crate) fingerprint: u64,
    /// The API watch feeding the store (a block without `objects`).
    api: Option<Arc<ApiWatch>>,
}

impl Kubernetes {
    /// The plugin with its options and store.
    pub fn new(config: KubernetesConfig, store: Arc<Store>, fingerprint: u64) -> Self {
        let fallthrough = config.fallthrough.as_ref().map(|zones| wire_zones(zones));
        Self {
            config,
            store,
            fallthrough,
            fingerprint,
            api: None,
        }
    }

    /// The plugin fed by the API watch `api`.
    pub fn watching(config: KubernetesConfig, api: Arc<ApiWatch>) -> Self {
        let mut plugin = Self::new(config, Arc::clone(&api.store), 0);
        plugin.api = Some(api);
        plugin
    }

    /// The API watch, for a block without `objects`.
    pub fn api(&self) -> Option<&Arc<ApiWatch>> {
        self.api.as_ref()
    }

    /// Whether the zone is not yet the API server's (not synced): an NXDOMAIN is then a
    /// SERVFAIL, as CoreDNS answers before its informers have synced — the name may well
    /// exist.
    pub(crate) fn provisional(&self) -> bool {
        self.api.as_ref().is_some_and(|api| !api.status.is_synced())
    }

    /// Whether an NXDOMAIN for `qname` passes to the next plugin (`fallthrough [ZONES]`).
    fn falls_through(&self, qname: &[u8]) -> bool {
        crate::name::falls_through(self.fallthrough.as_deref(), qname)
    }

    /// The step: the cluster zone's answer, or the name passed on (outside the zone, or
    /// NXDOMAIN with `fallthrough`). Before the API watch's first sync an NXDOMAIN is
    /// SERVFAIL ([`provisional`](Self::provisional)).
    #[inline]
    pub(crate) fn answer(&self, ctx: &Ctx<'_>, q: &Query<'_>, out: &mut Vec<u8>) -> Flow {
        let block = ctx.block;
        let request = q.request;
        let qname = request.question.name();
        let snapshot = self.store.load();
        let Some(answer) = snapshot.lookup(qname, request.question.qtype) else {
            return Flow::Pass;
        };
        // `fallthrough` hands an NXDOMAIN on to the rest of the block's chain.
        let nxdomain = answer.rcode == Rcode::NxDomain;
        let passes = nxdomain && self.falls_through(qname);
        if nxdomain && !passes && self.provisional() {
            wire::write_rcode(request, rcode::SERVFAIL, out);
            return Flow::reply(Plugin::Kubernetes);
        }
        if passes {
            return Flow::Pass;
        }
        let zone = &snapshot.zones()[answer.zone];
        if let Some(target) = answer.chase {
            return End::Chase(Chase::new(block, ctx.zone, request, &answer, zone, target)).into();
        }
        wire::write_answer(request, &answer, zone, q.limit, block.chain.shuffles(), out);
        Flow::reply(Plugin::Kubernetes)
    }
}
