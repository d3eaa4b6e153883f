//! The HTTP/1.1 side: answering a request — authorization, the faults, routing to get, list or
//! watch — and the query string. Accepting connections is in `connection`, lists in `list`,
//! watch streams in `stream`.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::connection::Flushes;
use super::list::list;
use super::selector::{FieldSelector, LabelSelector};
use super::status::{injected_status, status_body};
use super::stream::{WatchBody, watch};
use super::{Down, Filter, Kind, Request, Shared, Verb};

pub(super) type ResponseBody = BoxBody<Bytes, io::Error>;

/// What a request gets.
pub(super) enum Outcome {
    Json(u16, Value),
    /// JSON already encoded (a list page).
    Encoded(u16, Vec<u8>),
    Text(u16, &'static str),
    Watch(WatchBody),
}

impl Outcome {
    fn status(&self) -> u16 {
        match self {
            Self::Json(status, _) | Self::Encoded(status, _) | Self::Text(status, _) => *status,
            Self::Watch(_) => 200,
        }
    }
}

/// A JSON response; a 429 says when to retry.
fn json_response(status: u16, body: Vec<u8>) -> Response<ResponseBody> {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if status == 429 {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

pub(super) async fn respond(
    shared: &Arc<Shared>,
    flushes: Arc<Flushes>,
    request: hyper::Request<Incoming>,
) -> Response<ResponseBody> {
    let target = Target::parse(request.uri().path());
    let query = parse_query(request.uri().query().unwrap_or(""));
    let watch = query
        .iter()
        .find(|(k, _)| k == "watch")
        .map(|(_, v)| parse_bool(v));
    let verb = match &target {
        Target::Collection { .. } if watch == Some(Some(true)) => Verb::Watch,
        Target::Collection { .. } => Verb::List,
        Target::Object { .. } => Verb::Get,
        _ => Verb::Other,
    };
    let (kind, namespace, name) = match &target {
        Target::Collection { kind, namespace } => (Some(*kind), namespace.clone(), None),
        Target::Object {
            kind,
            namespace,
            name,
        } => (Some(*kind), namespace.clone(), Some(name.clone())),
        _ => (None, None, None),
    };
    let mut record = Request {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
        query,
        verb,
        kind,
        namespace,
        name,
        authorization: request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        status: 0,
    };
    let (fault, latency, watch_limit) = {
        let mut control = shared.control.lock().unwrap();
        let fault = if control.down == Some(Down::Unavailable) {
            Some(injected_status(503, &record))
        } else if let Some(token) = &control.token
            && record.authorization.as_deref() != Some(&format!("Bearer {token}"))
        {
            Some(injected_status(401, &record))
        } else if let Some(failure) = control
            .failures
            .iter_mut()
            .find(|f| f.remaining > 0 && (f.matcher)(&record))
        {
            failure.remaining = failure.remaining.saturating_sub(1);
            Some(injected_status(failure.status, &record))
        } else {
            None
        };
        (fault, control.latency, control.watch_timeout)
    };
    let outcome = match fault {
        Some(status) => Outcome::Json(status["code"].as_u64().unwrap_or(500) as u16, status),
        None if watch == Some(None) => {
            let value = record.param("watch").unwrap_or("");
            Outcome::Json(400, bad(&format!("invalid value for watch: {value:?}")))
        }
        None => route(shared, &target, &record, watch_limit, flushes),
    };
    record.status = outcome.status();
    shared.control.lock().unwrap().requests.push(record);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match outcome {
        Outcome::Json(status, body) => json_response(status, serde_json::to_vec(&body).unwrap()),
        Outcome::Encoded(status, body) => json_response(status, body),
        Outcome::Text(status, text) => {
            let mut response = Response::new(
                Full::new(Bytes::from_static(text.as_bytes()))
                    .map_err(|never| match never {})
                    .boxed(),
            );
            *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            response
        }
        Outcome::Watch(body) => {
            let mut response = Response::new(body.boxed());
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
    }
}

/// What a path names.
enum Target {
    Version,
    Health,
    Collection {
        kind: Kind,
        namespace: Option<String>,
    },
    Object {
        kind: Kind,
        namespace: Option<String>,
        name: String,
    },
    Unknown,
}

impl Target {
    fn parse(path: &str) -> Self {
        match path {
            "/version" | "/version/" => return Self::Version,
            "/healthz" | "/livez" | "/readyz" => return Self::Health,
            _ => {}
        }
        let (group, rest) = if let Some(rest) = path.strip_prefix("/api/v1") {
            ("", rest)
        } else if let Some(rest) = path.strip_prefix("/apis/discovery.k8s.io/v1") {
            ("discovery.k8s.io", rest)
        } else if let Some(rest) = path.strip_prefix("/apis/multicluster.x-k8s.io/v1alpha1") {
            ("multicluster.x-k8s.io", rest)
        } else {
            return Self::Unknown;
        };
        if !(rest.is_empty() || rest.starts_with('/')) {
            return Self::Unknown;
        }
        let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
        let kind = |plural: &str, namespaced: bool| {
            Kind::ALL
                .into_iter()
                .find(|k| k.group() == group && k.plural() == plural)
                .filter(|k| k.namespaced() == namespaced || !namespaced)
        };
        match segments.as_slice() {
            [plural] => match kind(plural, false) {
                Some(kind) => Self::Collection {
                    kind,
                    namespace: None,
                },
                None => Self::Unknown,
            },
            [plural, name] => match kind(plural, false) {
                Some(kind) if !kind.namespaced() => Self::Object {
                    kind,
                    namespace: None,
                    name: (*name).to_owned(),
                },
                _ => Self::Unknown,
            },
            ["namespaces", namespace, plural] => match kind(plural, true) {
                Some(kind) => Self::Collection {
                    kind,
                    namespace: Some((*namespace).to_owned()),
                },
                None => Self::Unknown,
            },
            ["namespaces", namespace, plural, name] => match kind(plural, true) {
                Some(kind) => Self::Object {
                    kind,
                    namespace: Some((*namespace).to_owned()),
                    name: (*name).to_owned(),
                },
                None => Self::Unknown,
            },
            _ => Self::Unknown,
        }
    }
}

pub(super) fn bad(message: &str) -> Value {
    status_body(400, "BadRequest", message, None)
}

fn route(
    shared: &Arc<Shared>,
    target: &Target,
    request: &Request,
    watch_limit: Option<Duration>,
    flushes: Arc<Flushes>,
) -> Outcome {
    if request.method != "GET" {
        return Outcome::Json(
            405,
            status_body(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                None,
            ),
        );
    }
    match target {
        Target::Version => Outcome::Json(
            200,
            json!({
                "major": "1",
                "minor": "34",
                "gitVersion": "v1.34.0",
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean",
                "buildDate": "2025-08-27T00:00:00Z",
                "goVersion": "go1.24.6",
                "compiler": "gc",
                "platform": "linux/amd64",
            }),
        ),
        Target::Health => Outcome::Text(200, "ok"),
        Target::Unknown => Outcome::Json(
            404,
            status_body(
                404,
                "NotFound",
                "the server could not find the requested resource",
                Some(json!({})),
            ),
        ),
        Target::Object {
            kind,
            namespace,
            name,
        } => get(shared, *kind, namespace.as_deref(), name),
        Target::Collection { kind, namespace } => {
            let filter = match filter(*kind, namespace.as_deref(), request) {
                Ok(filter) => filter,
                Err(message) => return Outcome::Json(400, bad(&message)),
            };
            if request.verb == Verb::Watch {
                watch(shared, *kind, filter, request, watch_limit, flushes)
            } else {
                match list(shared, *kind, &filter, request) {
                    Ok(list) => Outcome::Encoded(200, list),
                    Err((status, body)) => Outcome::Json(status, body),
                }
            }
        }
    }
}

fn filter(kind: Kind, namespace: Option<&str>, request: &Request) -> Result<Filter, String> {
    let labels = LabelSelector::parse(request.param("labelSelector").unwrap_or(""))?;
    let fields = FieldSelector::parse(kind, request.param("fieldSelector").unwrap_or(""))?;
    Ok(Filter {
        kind,
        namespace: namespace.map(str::to_owned),
        labels,
        fields,
    })
}

fn get(shared: &Shared, kind: Kind, namespace: Option<&str>, name: &str) -> Outcome {
    let state = shared.state.lock().unwrap();
    match state
        .objects
        .get(&super::key(kind, namespace.unwrap_or(""), name))
    {
        Some(object) => Outcome::Json(200, (**object).clone()),
        None => Outcome::Json(
            404,
            status_body(
                404,
                "NotFound",
                &format!("{} \"{name}\" not found", kind.plural()),
                Some(json!({"name": name, "group": kind.group(), "kind": kind.plural()})),
            ),
        ),
    }
}

/// Go's `strconv.ParseBool`, as the server reads boolean parameters.
pub(super) fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `a=b&c=d`, percent- and `+`-decoded.
fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                match text
                    .get(i + 1..i + 3)
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                {
                    Some(byte) => {
                        out.push(byte);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
