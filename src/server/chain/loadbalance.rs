//! *loadbalance*: the A, AAAA and MX records of the replies below it shuffled. CoreDNS's
//! wraps the reply writer; ours works where replies are written — the cluster zone's writer,
//! a cache hit and a whole reply's delivery read [`super::PluginChain::shuffles`] — so the
//! step itself passes every query on.

use super::lifecycle::{Build, Lifecycle};
use super::{Ctx, Flow, PluginChain, Query};
use crate::server::error::StartError;

/// *loadbalance* of a block.
#[derive(Debug)]
pub(crate) struct Loadbalance;

impl Lifecycle for Loadbalance {
    const INTERNET_ONLY: bool = false;

    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        Ok(at.config.plugins.loadbalance.as_ref().map(|_| Self))
    }

    #[inline]
    fn answer(
        &self,
        _chain: &PluginChain,
        _ctx: &Ctx<'_>,
        _index: usize,
        _q: &mut Query<'_>,
        _out: &mut Vec<u8>,
    ) -> Flow {
        Flow::Pass
    }
}
