//! *cache*: what *forward* brings back, looked up and stored where the query goes upstream
//! ([`super::forward`]). It holds nothing else (the cluster zone is never cached,
//! docs/differences.md), so its step at its place in `plugin.cfg` passes every query on.

use std::sync::Arc;

use super::lifecycle::{Build, Lifecycle};
use super::{Ctx, Flow, PluginChain, Query};
use crate::metrics::Collect;
use crate::server::error::StartError;

/// *cache* of a block (shared with the queries in flight upstream).
pub(crate) type Cache = Arc<crate::cache::Cache>;

impl Lifecycle for Cache {
    const INTERNET_ONLY: bool = false;

    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        Ok(at
            .config
            .plugins
            .cache
            .as_ref()
            .map(|config| Arc::new(crate::cache::Cache::new(config, at.server))))
    }

    fn collectors(&self, out: &mut Vec<Arc<dyn Collect>>) {
        out.push(Arc::clone(self) as Arc<dyn Collect>);
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
