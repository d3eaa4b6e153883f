//! A list: `limit`/`continue` paging over a consistent snapshot, `resourceVersion` with
//! `resourceVersionMatch`, the selectors.

use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use super::serve::bad;
use super::status::status_body;
use super::{Filter, Kind, Request, Shared};

/// A continue token: the snapshot's resourceVersion, how many of the kind's objects follow
/// (the next page's `remainingItemCount` without counting them again: at 150,000 pods,
/// counting on every page made the stand-in, not the client, the bound of a sync) and the
/// last key returned, hex-coded (opaque to clients, as the real one is).
fn continue_token(rv: u64, remaining: usize, namespace: &str, name: &str) -> String {
    format!("{rv}\n{remaining}\n{namespace}\n{name}")
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn parse_continue(token: &str) -> Option<(u64, usize, String, String)> {
    if !token.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2)?, 16).ok())
        .collect();
    let text = String::from_utf8(bytes?).ok()?;
    let mut parts = text.splitn(4, '\n');
    let rv = parts.next()?.parse().ok()?;
    let remaining = parts.next()?.parse().ok()?;
    Some((
        rv,
        remaining,
        parts.next()?.to_owned(),
        parts.next()?.to_owned(),
    ))
}

pub(super) fn list(
    shared: &Shared,
    kind: Kind,
    filter: &Filter,
    request: &Request,
) -> Result<Vec<u8>, (u16, Value)> {
    let state = shared.state.lock().unwrap();
    let limit = match request.param("limit").filter(|l| !l.is_empty()) {
        None => None,
        Some(limit) => match limit.parse::<i64>() {
            Ok(n) if n > 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Ok(_) => None,
            Err(_) => return Err((400, bad(&format!("invalid limit: {limit:?}")))),
        },
    };
    let version = request.param("resourceVersion").unwrap_or("");
    let version_match = request.param("resourceVersionMatch").unwrap_or("");
    let (rv, start) = match request.param("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            if !version.is_empty() && version != "0" {
                return Err((
                    400,
                    bad("specifying resource version is not allowed when using continue"),
                ));
            }
            let Some((rv, before, namespace, name)) = parse_continue(token) else {
                return Err((400, bad("continue key is not valid")));
            };
            if rv < state.base_rv {
                return Err((
                    410,
                    status_body(
                        410,
                        "Expired",
                        "The provided continue parameter is too old to display a consistent \
                         list result. You can start a new list without the continue parameter, \
                         or use the continue value from the response to get an inconsistent list.",
                        None,
                    ),
                ));
            }
            (rv, Some(((kind, namespace, name), before)))
        }
        None => {
            if version.is_empty() {
                if !version_match.is_empty() {
                    return Err((
                        400,
                        bad("resourceVersionMatch is forbidden unless resourceVersion is provided"),
                    ));
                }
                (state.rv, None)
            } else {
                let Ok(asked) = version.parse::<u64>() else {
                    return Err((400, bad(&format!("invalid resource version: {version:?}"))));
                };
                match version_match {
                    "Exact" if asked == 0 => {
                        return Err((
                            400,
                            bad(
                                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                            ),
                        ));
                    }
                    "Exact" if asked < state.base_rv => {
                        return Err((
                            410,
                            status_body(
                                410,
                                "Expired",
                                &format!("too old resource version: {asked} ({})", state.base_rv),
                                None,
                            ),
                        ));
                    }
                    "Exact" | "NotOlderThan" | "" if asked > state.rv => {
                        return Err((
                            504,
                            status_body(
                                504,
                                "Timeout",
                                &format!(
                                    "Too large resource version: {asked}, current resource version: {}",
                                    state.rv
                                ),
                                None,
                            ),
                        ));
                    }
                    "Exact" => (asked, None),
                    "NotOlderThan" | "" => (state.rv, None),
                    other => {
                        return Err((
                            400,
                            bad(&format!("invalid resourceVersionMatch: {other:?}")),
                        ));
                    }
                }
            }
        }
    };
    let objects = state.objects_at(rv);
    // From the continue key on (or the kind's first key), as etcd ranges: a page costs its
    // own size, not the whole store's.
    let from = match &start {
        Some((start, _)) => std::ops::Bound::Excluded(start.clone()),
        None => std::ops::Bound::Included((kind, String::new(), String::new())),
    };
    let in_kind = objects
        .range((from, std::ops::Bound::Unbounded))
        .take_while(|(key, _)| key.0 == kind);
    let mut matching = in_kind.filter(|(_, object)| filter.matches(object));
    let mut items = Vec::new();
    let mut last = None;
    for (key, object) in matching.by_ref() {
        items.push(Item(object));
        last = Some(key);
        if limit.is_some_and(|limit| items.len() >= limit) {
            break;
        }
    }
    // Whether more follow, and (without selectors, as the real server says) how many; a
    // filter with nothing to evaluate is not evaluated for the count.
    let remaining = if !filter.labels.is_empty() || !filter.fields.is_empty() {
        usize::from(matching.next().is_some())
    } else if filter.namespace.is_none() {
        match (last, &start) {
            (None, _) => 0,
            // The snapshot is the one the first page counted.
            (Some(_), Some((_, before))) => before.saturating_sub(items.len()),
            (Some(key), None) => objects
                .range((
                    std::ops::Bound::Excluded(key.clone()),
                    std::ops::Bound::Unbounded,
                ))
                .take_while(|(key, _)| key.0 == kind)
                .count(),
        }
    } else {
        matching.count()
    };
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if remaining > 0
        && let Some((_, namespace, name)) = last
    {
        metadata["continue"] = Value::String(continue_token(rv, remaining, namespace, name));
        if filter.labels.is_empty() && filter.fields.is_empty() {
            metadata["remainingItemCount"] = json!(remaining);
        }
    }
    let page = Page {
        kind: format!("{}List", kind.name()),
        api_version: kind.api_version(),
        metadata,
        items,
    };
    Ok(serde_json::to_vec(&page).expect("a page serialises"))
}

/// A page of a list, encoded as it is written: from the stored objects, as the real server
/// encodes from its cache (copying each object first was most of the stand-in's work in a
/// 150,000-pod list, and the stand-in shares the machine with the client it measures).
#[derive(Serialize)]
struct Page<'a> {
    kind: String,
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    metadata: Value,
    items: Vec<Item<'a>>,
}

/// A list item: the object without its `kind` and `apiVersion`, which the real server
/// leaves out of list items.
struct Item<'a>(&'a Value);

impl Serialize for Item<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0.as_object() {
            Some(fields) => serializer.collect_map(
                fields
                    .iter()
                    .filter(|(field, _)| !matches!(field.as_str(), "kind" | "apiVersion")),
            ),
            None => self.0.serialize(serializer),
        }
    }
}
