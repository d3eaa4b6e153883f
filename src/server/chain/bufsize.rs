//! *bufsize*: the EDNS payload size offered to the upstream is at most the configured size,
//! and so is a UDP reply. The chain reads the size ([`super::PluginChain::limit`],
//! [`super::PluginChain::clamp`]); the step itself passes every query on.

use super::lifecycle::{Build, Lifecycle};
use super::{Ctx, Flow, PluginChain, Query};
use crate::server::error::StartError;

/// *bufsize* of a block: its size.
#[derive(Debug)]
pub(crate) struct Bufsize(u16);

impl Bufsize {
    /// The size.
    pub(crate) fn size(&self) -> u16 {
        self.0
    }
}

impl Lifecycle for Bufsize {
    const INTERNET_ONLY: bool = false;

    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        Ok(at.config.plugins.bufsize.as_ref().map(|b| Self(b.size)))
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
