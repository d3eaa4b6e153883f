//! The server's `/debug/` pages: `/debug/search-path` (the live search-path tracker) and
//! `/debug/why` (why a name answers what it does, from the running configuration).

use std::sync::Arc;

use arc_swap::{ArcSwap, ArcSwapOption};

use super::Block;
use crate::http::debug::{parameters, wants_json};
use crate::http::{DebugPages, Page, PageFuture};
use crate::name::WireName;
use crate::search_tracker::live::{Tracker, Watch};
use crate::search_tracker::page;

/// What the pages read: the tracker as the current handlers see it, and the current blocks.
#[derive(Debug, Default)]
pub(crate) struct Pages {
    watch: ArcSwapOption<Watch>,
    blocks: ArcSwap<Vec<Arc<Block>>>,
}

impl Pages {
    /// After a (re)load: the tracker's view and the blocks of the running configuration.
    pub(crate) fn update(&self, watch: Option<Watch>, blocks: Vec<Arc<Block>>) {
        self.watch.store(watch.map(Arc::new));
        self.blocks.store(Arc::new(blocks));
    }
}

impl DebugPages for Pages {
    fn page<'a>(&'a self, path: &'a str, query: &'a str) -> PageFuture<'a> {
        Box::pin(async move {
            let params = match parameters(query) {
                Ok(params) => params,
                Err(error) => return Some(Page::bad_request(&error.to_string())),
            };
            match path {
                "search-path" => Some(self.search_path(&params)),
                // The blocks as they are now: a reload meanwhile does not change them under it.
                "why" => Some(super::why::page(&self.blocks.load_full(), &params).await),
                _ => None,
            }
        })
    }
}

impl Pages {
    /// `/debug/search-path[?format=json|text]`.
    fn search_path(&self, params: &[(String, String)]) -> Page {
        let json = match wants_json(params) {
            Ok(json) => json,
            Err(page) => return page,
        };
        let Some(watch) = self.watch.load_full() else {
            return Page {
                status: 404,
                content_type: "text/plain; charset=utf-8",
                body: "the search-path tracker is off (no block has both kubernetes and \
                       prometheus, or prometheus says search_path off)\n"
                    .to_owned(),
            };
        };
        let page = page::Page::of(&watch);
        if json {
            match serde_json::to_string_pretty(&page) {
                Ok(body) => Page::json(body + "\n"),
                Err(error) => Page::bad_request(&error.to_string()),
            }
        } else {
            Page::text(page.text())
        }
    }
}

/// The search-path tracker as `blocks` see it: under the cluster zone of their first
/// *kubernetes* block, with the options of their first *prometheus*; `None` when no block
/// has both or the tracker is turned off.
pub(crate) fn search_path_watch(blocks: &[Arc<Block>], tracker: &Arc<Tracker>) -> Option<Watch> {
    let options = blocks.iter().find_map(|block| block.search_path.as_ref())?;
    if !options.enabled {
        return None;
    }
    let zone = blocks.iter().find_map(|block| {
        let config = &block.kubernetes()?.config;
        config.zones.get(config.primary_zone)
    })?;
    let zone = WireName::from_dotted(&zone.to_string()).ok()?;
    let domains: Vec<WireName> = options
        .domains
        .iter()
        .filter_map(|domain| WireName::from_dotted(domain).ok())
        .collect();
    let domains: Vec<&[u8]> = domains.iter().map(WireName::as_bytes).collect();
    tracker.set_limit(options.namespaces);
    Some(Watch::new(Arc::clone(tracker), zone.as_bytes(), &domains))
}
