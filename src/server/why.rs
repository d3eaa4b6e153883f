//! `/debug/why` and `query --why`: why a name answers what it does.

use std::sync::Arc;

use super::Block;
use crate::http::Page;

/// `/debug/why?name=N&type=T`.
pub(crate) fn page(_blocks: &[Arc<Block>], _params: &[(String, String)]) -> Page {
    Page::bad_request("not yet")
}
