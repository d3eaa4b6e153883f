//! One resource's list and watch, as client-go's reflector does them: a streaming list
//! (`sendInitialEvents=true`, ended by the bookmark annotated `k8s.io/initial-events-end`)
//! or pages of 500, then a watch from the list's resourceVersion, resumed from the last
//! version seen when it ends and re-listed when the server says that version is gone (410).
//!
//! Every request asks for protobuf first and JSON second; each response is decoded as its
//! `Content-Type` says (a custom resource, such as ServiceImport, is served in JSON only).
//! Protobuf is decoded by [`super::protobuf`] straight into the fields the zone reads. Every
//! request takes gzip too, as client-go's do: the API server sends it for a list over 128 KiB
//! and, from 1.37 (`WatchListCompression`), for a streaming list's whole watch, one gzip
//! member per flush; it is inflated as it arrives.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use kube::Client;
use kube::api::{ListParams, WatchParams};
use kube::client::Body;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::protobuf::{self, INITIAL_EVENTS_END, MEDIA_TYPE, ProtoError, Status};
use crate::source::decode::{PodObject, SliceObject};
use crate::source::mcs::ServiceImportResource;

/// What is asked for: protobuf, else JSON.
const ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

/// The content coding taken besides none.
const ACCEPT_ENCODING: &str = "gzip";

/// The page size of a paginated list (client-go's).
const PAGE_SIZE: u32 = 500;

/// How long a watch may be silent before it is taken for dead: the server ends it after
/// `timeoutSeconds` (290), bookmarks come about every minute.
const IDLE: Duration = Duration::from_secs(295);

/// A protobuf decoder of a kind.
pub(super) type Decoder<K> = fn(&[u8]) -> Result<K, ProtoError>;

/// A kind the watch reads: its JSON form (reduced where [`crate::source::decode`] has a
/// reduced one) and, when the API server serves it in protobuf, the protobuf decoder.
pub(super) trait Watched: kube::Resource<DynamicType = ()> + Send + Sized + 'static {
    /// What JSON is decoded into.
    type Json: DeserializeOwned;
    /// The object from its JSON form.
    fn from_json(json: Self::Json) -> Self;
    /// The object from its protobuf bytes (`None`: the kind is never sent in protobuf).
    const PROTOBUF: Option<Decoder<Self>>;
}

impl Watched for core::Namespace {
    type Json = Self;
    fn from_json(json: Self) -> Self {
        json
    }
    const PROTOBUF: Option<Decoder<Self>> = Some(protobuf::namespace);
}

impl Watched for core::Service {
    type Json = Self;
    fn from_json(json: Self) -> Self {
        json
    }
    const PROTOBUF: Option<Decoder<Self>> = Some(protobuf::service);
}

impl Watched for discovery::EndpointSlice {
    type Json = SliceObject;
    fn from_json(json: SliceObject) -> Self {
        json.into_slice()
    }
    const PROTOBUF: Option<Decoder<Self>> = Some(protobuf::endpoint_slice);
}

impl Watched for core::Pod {
    type Json = PodObject;
    fn from_json(json: PodObject) -> Self {
        json.into_pod()
    }
    const PROTOBUF: Option<Decoder<Self>> = Some(protobuf::pod);
}

impl Watched for ServiceImportResource {
    type Json = Self;
    fn from_json(json: Self) -> Self {
        json
    }
    const PROTOBUF: Option<Decoder<Self>> = None;
}

/// What the watch of a resource saw.
#[derive(Debug)]
pub(super) enum Event<K> {
    /// A (re-)list starts.
    Init,
    /// An object of the list.
    InitApply(K),
    /// The list is complete.
    InitDone,
    /// An object added or modified.
    Apply(K),
    /// An object deleted.
    Delete(K),
}

/// Why a request failed: the API server's Status, or no answer (or not a Status).
#[derive(Debug, Clone)]
pub(super) enum Failure {
    Api(Status),
    Other(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Api(status) => write!(f, "{} {}: {}", status.code, status.reason, status.message),
            Self::Other(why) => f.write_str(why),
        }
    }
}

/// Why the watch of a resource stopped for a moment (it carries on at the next call).
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum Error {
    #[error("failed to perform initial object list: {0}")]
    ListFailed(Failure),
    #[error("failed to start watching object: {0}")]
    WatchStartFailed(Failure),
    #[error("error returned by apiserver during watch: {0}")]
    Event(Status),
    #[error("watch stream failed: {0}")]
    WatchFailed(Failure),
}

impl Error {
    /// The API server's Status, if it answered with one.
    pub(super) fn status(&self) -> Option<&Status> {
        match self {
            Self::ListFailed(Failure::Api(status))
            | Self::WatchStartFailed(Failure::Api(status))
            | Self::WatchFailed(Failure::Api(status))
            | Self::Event(status) => Some(status),
            _ => None,
        }
    }
}

/// What is asked of the API server: the selectors, and whether lists stream.
#[derive(Debug, Clone, Default)]
pub(super) struct Params {
    pub(super) labels: Option<String>,
    pub(super) fields: Option<String>,
    /// The next list streams (else it is paged).
    pub(super) streaming: bool,
}

enum State {
    /// Nothing listed yet, or a re-list is due.
    Empty,
    /// A paged list under way: the objects of the page not yet handed out, the next page's
    /// token, the list's resourceVersion.
    Paging {
        continue_token: Option<String>,
        resource_version: String,
    },
    /// A streaming list under way.
    InitialWatch(Frames),
    /// Listed (or a watch ended): watch from this version.
    Listed(String),
    /// Watching, at this version.
    Watching(String, Frames),
}

/// The list and watch of one resource.
pub(super) struct Reflector<K: Watched> {
    target: Target<K>,
    pub(super) params: Params,
    state: State,
    pending: VecDeque<K>,
}

impl<K: Watched> Reflector<K> {
    /// The reflector of the kind `K`, in `namespace` or all of them.
    pub(super) fn new(client: Client, namespace: Option<&str>, params: Params) -> Self {
        Self {
            target: Target {
                client,
                url_path: K::url_path(&(), namespace),
                kind: std::marker::PhantomData,
            },
            params,
            state: State::Empty,
            pending: VecDeque::new(),
        }
    }

    /// The next event; after an error, the next call carries on (the caller backs off).
    pub(super) async fn next(&mut self) -> Result<Event<K>, Error> {
        loop {
            if let Some(object) = self.pending.pop_front() {
                return Ok(Event::InitApply(object));
            }
            match std::mem::replace(&mut self.state, State::Empty) {
                State::Empty if self.params.streaming => {
                    let params = self.watch_params(true);
                    let frames = self
                        .target
                        .watch(&params, "0")
                        .await
                        .map_err(Error::WatchStartFailed)?;
                    self.state = State::InitialWatch(frames);
                    return Ok(Event::Init);
                }
                State::Empty => {
                    self.state = State::Paging {
                        continue_token: None,
                        resource_version: String::new(),
                    };
                    return Ok(Event::Init);
                }
                State::Paging {
                    continue_token: None,
                    resource_version,
                } if !resource_version.is_empty() => {
                    self.state = State::Listed(resource_version);
                    return Ok(Event::InitDone);
                }
                State::Paging { continue_token, .. } => {
                    let page = self
                        .target
                        .page(&self.params, continue_token)
                        .await
                        .map_err(Error::ListFailed)?;
                    if page.resource_version.is_empty() && page.continue_token.is_none() {
                        return Err(Error::ListFailed(Failure::Other(
                            "the list has no resourceVersion".into(),
                        )));
                    }
                    self.pending = page.items.into();
                    self.state = State::Paging {
                        continue_token: page.continue_token,
                        resource_version: page.resource_version,
                    };
                }
                State::InitialWatch(mut frames) => match frames.next::<K>().await {
                    Some(Ok(WatchEvent::Added(object) | WatchEvent::Modified(object))) => {
                        self.state = State::InitialWatch(frames);
                        return Ok(Event::InitApply(object));
                    }
                    Some(Ok(WatchEvent::Deleted(_))) => self.state = State::InitialWatch(frames),
                    Some(Ok(WatchEvent::Bookmark {
                        resource_version,
                        initial_events_end,
                    })) => {
                        if initial_events_end {
                            self.state = State::Watching(resource_version, frames);
                            return Ok(Event::InitDone);
                        }
                        self.state = State::InitialWatch(frames);
                    }
                    Some(Ok(WatchEvent::Error(status))) => {
                        if status.code != 410 {
                            self.state = State::InitialWatch(frames);
                        }
                        return Err(Error::Event(status));
                    }
                    Some(Err(failure)) => {
                        self.state = State::InitialWatch(frames);
                        return Err(Error::WatchFailed(failure));
                    }
                    None => {}
                },
                State::Listed(version) => {
                    let params = self.watch_params(false);
                    match self.target.watch(&params, &version).await {
                        Ok(frames) => self.state = State::Watching(version, frames),
                        Err(failure) => {
                            self.state = State::Listed(version);
                            return Err(Error::WatchStartFailed(failure));
                        }
                    }
                }
                State::Watching(version, mut frames) => match frames.next::<K>().await {
                    Some(Ok(WatchEvent::Added(object) | WatchEvent::Modified(object))) => {
                        let Some(version) = object.meta().resource_version.clone() else {
                            return Err(no_version());
                        };
                        self.state = State::Watching(version, frames);
                        return Ok(Event::Apply(object));
                    }
                    Some(Ok(WatchEvent::Deleted(object))) => {
                        let Some(version) = object.meta().resource_version.clone() else {
                            return Err(no_version());
                        };
                        self.state = State::Watching(version, frames);
                        return Ok(Event::Delete(object));
                    }
                    Some(Ok(WatchEvent::Bookmark {
                        resource_version, ..
                    })) => self.state = State::Watching(resource_version, frames),
                    Some(Ok(WatchEvent::Error(status))) => {
                        if status.code != 410 {
                            self.state = State::Watching(version, frames);
                        }
                        return Err(Error::Event(status));
                    }
                    Some(Err(failure)) => {
                        self.state = State::Watching(version, frames);
                        return Err(Error::WatchFailed(failure));
                    }
                    None => self.state = State::Listed(version),
                },
            }
        }
    }

    fn watch_params(&self, initial: bool) -> WatchParams {
        WatchParams {
            label_selector: self.params.labels.clone(),
            field_selector: self.params.fields.clone(),
            timeout: None,
            bookmarks: true,
            send_initial_events: initial,
        }
    }
}

/// Where a resource's requests go.
struct Target<K> {
    client: Client,
    url_path: String,
    kind: std::marker::PhantomData<fn() -> K>,
}

impl<K: Watched> Target<K> {
    async fn watch(&self, params: &WatchParams, version: &str) -> Result<Frames, Failure> {
        let request = kube::core::Request::new(&self.url_path)
            .watch(params, version)
            .map_err(|error| Failure::Other(error.to_string()))?;
        let response = self.send(request).await?;
        Ok(Frames {
            body: response.body,
            encoding: response.encoding,
            inflate: response.gzip.then(Inflate::new),
            buffer: BytesMut::new(),
            scanned: 0,
            ended: false,
        })
    }

    async fn page(
        &self,
        params: &Params,
        continue_token: Option<String>,
    ) -> Result<Page<K>, Failure> {
        let params = ListParams {
            label_selector: params.labels.clone(),
            field_selector: params.fields.clone(),
            limit: Some(PAGE_SIZE),
            continue_token,
            ..ListParams::default()
        };
        let request = kube::core::Request::new(&self.url_path)
            .list(&params)
            .map_err(|error| Failure::Other(error.to_string()))?;
        let response = self.send(request).await?;
        let encoding = response.encoding;
        let body = response.collect().await?;
        decode_page::<K>(encoding, &body).map_err(Failure::Other)
    }

    /// Sends `request` asking for protobuf and taking gzip; a response that is not a
    /// success is the Status it holds.
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<Response, Failure> {
        let (mut parts, body) = request.into_parts();
        let accept = if K::PROTOBUF.is_some() {
            ACCEPT
        } else {
            "application/json"
        };
        parts
            .headers
            .insert(http::header::ACCEPT, http::HeaderValue::from_static(accept));
        parts.headers.insert(
            http::header::ACCEPT_ENCODING,
            http::HeaderValue::from_static(ACCEPT_ENCODING),
        );
        let request = http::Request::from_parts(parts, Body::from(body));
        let response = self
            .client
            .send(request)
            .await
            .map_err(|error| Failure::Other(error.to_string()))?;
        let code = response.status();
        let response = Response::of(response)?;
        if code.is_client_error() || code.is_server_error() {
            let encoding = response.encoding;
            let bytes = response.collect().await?;
            return Err(Failure::Api(error_status(encoding, code.as_u16(), &bytes)));
        }
        Ok(response)
    }
}

/// A response's body and how it is encoded.
struct Response {
    encoding: Encoding,
    /// The body is gzip (`Content-Encoding: gzip`).
    gzip: bool,
    body: Body,
}

impl Response {
    fn of(response: http::Response<Body>) -> Result<Self, Failure> {
        Ok(Self {
            encoding: Encoding::of(&response),
            gzip: gzipped(response.headers()).map_err(Failure::Other)?,
            body: response.into_body(),
        })
    }

    /// The whole body, inflated.
    async fn collect(self) -> Result<Bytes, Failure> {
        let body = collect(self.body).await?;
        if !self.gzip {
            return Ok(body);
        }
        let mut inflate = Inflate::new();
        let mut out = BytesMut::new();
        inflate.push(&body, &mut out).map_err(Failure::Other)?;
        inflate.finish().map_err(Failure::Other)?;
        Ok(out.freeze())
    }
}

/// Whether a response's body is gzip, as its `Content-Encoding` says; an error naming any
/// other coding (only gzip and none are asked for).
pub(super) fn gzipped(headers: &http::HeaderMap) -> Result<bool, String> {
    let Some(value) = headers.get(http::header::CONTENT_ENCODING) else {
        return Ok(false);
    };
    let coding = value
        .to_str()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match coding.as_str() {
        "" | "identity" => Ok(false),
        "gzip" | "x-gzip" => Ok(true),
        other => Err(format!(
            "a response in the content coding {other:?} (asked for gzip or none)"
        )),
    }
}

/// A gzip body inflated as it arrives, member after member.
struct Inflate(flate2::write::MultiGzDecoder<Vec<u8>>);

impl Inflate {
    fn new() -> Self {
        Self(flate2::write::MultiGzDecoder::new(Vec::new()))
    }

    /// Takes the next bytes of the body, appending what they inflate to `out`.
    fn push(&mut self, data: &[u8], out: &mut BytesMut) -> Result<(), String> {
        use std::io::Write;
        self.0
            .write_all(data)
            .and_then(|()| self.0.flush())
            .map_err(|error| format!("the response's gzip: {error}"))?;
        let inflated = self.0.get_mut();
        out.extend_from_slice(inflated);
        inflated.clear();
        Ok(())
    }

    /// The body ended: an error if it ended inside a member.
    fn finish(mut self) -> Result<(), String> {
        self.0
            .try_finish()
            .map_err(|error| format!("the response's gzip ended early: {error}"))
    }
}

fn no_version() -> Error {
    Error::WatchFailed(Failure::Other(
        "no metadata.resourceVersion in watch result".into(),
    ))
}

async fn collect(body: Body) -> Result<Bytes, Failure> {
    body.collect()
        .await
        .map(http_body_util::Collected::to_bytes)
        .map_err(|error| Failure::Other(error.to_string()))
}

/// How a response is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Json,
    Protobuf,
}

impl Encoding {
    fn of<B>(response: &http::Response<B>) -> Self {
        let media = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        if media.starts_with(MEDIA_TYPE) {
            Self::Protobuf
        } else {
            Self::Json
        }
    }
}

/// The Status of a response that is not a success (a body that is not one: its text).
fn error_status(encoding: Encoding, code: u16, body: &[u8]) -> Status {
    let decoded = match encoding {
        Encoding::Protobuf => protobuf::envelope(body)
            .ok()
            .filter(|envelope| envelope.kind == "Status")
            .and_then(|envelope| protobuf::status(envelope.raw).ok()),
        Encoding::Json => serde_json::from_slice::<JsonStatus>(body)
            .ok()
            .map(JsonStatus::into_status),
    };
    let mut status = decoded.unwrap_or_else(|| Status {
        code,
        reason: String::new(),
        message: String::from_utf8_lossy(body).trim().to_owned(),
    });
    if status.code == 0 {
        status.code = code;
    }
    status
}

/// One page of a list.
struct Page<K> {
    resource_version: String,
    continue_token: Option<String>,
    items: Vec<K>,
}

#[derive(Deserialize)]
struct JsonList<T> {
    #[serde(default)]
    metadata: JsonListMeta,
    #[serde(default = "Option::default")]
    items: Option<Vec<T>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct JsonListMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

#[derive(Deserialize)]
struct JsonStatus {
    #[serde(default)]
    code: u16,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    message: String,
}

impl JsonStatus {
    fn into_status(self) -> Status {
        Status {
            code: self.code,
            reason: self.reason,
            message: self.message,
        }
    }
}

fn decode_page<K: Watched>(encoding: Encoding, body: &[u8]) -> Result<Page<K>, String> {
    match (encoding, K::PROTOBUF) {
        (Encoding::Protobuf, Some(decode)) => {
            let envelope = protobuf::envelope(body).map_err(|e| e.to_string())?;
            let list = protobuf::list(envelope.raw).map_err(|e| e.to_string())?;
            let items = list
                .items
                .iter()
                .map(|item| decode(item))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            Ok(Page {
                resource_version: list.resource_version,
                continue_token: Some(list.continue_token).filter(|token| !token.is_empty()),
                items,
            })
        }
        (Encoding::Protobuf, None) => Err("a protobuf list of a kind read only as JSON".into()),
        (Encoding::Json, _) => {
            let list: JsonList<K::Json> = serde_json::from_slice(body)
                .map_err(|error| format!("the list's JSON: {error}"))?;
            Ok(Page {
                resource_version: list.metadata.resource_version.unwrap_or_default(),
                continue_token: list
                    .metadata
                    .continue_token
                    .filter(|token| !token.is_empty()),
                items: list.items.into_iter().flatten().map(K::from_json).collect(),
            })
        }
    }
}

/// A watch event.
enum WatchEvent<K> {
    Added(K),
    Modified(K),
    Deleted(K),
    Bookmark {
        resource_version: String,
        initial_events_end: bool,
    },
    Error(Status),
}

/// A watch response's events, framed as its encoding frames them: a JSON document per line,
/// or a protobuf message after its four-byte big-endian length.
struct Frames {
    body: Body,
    encoding: Encoding,
    /// The body's gzip, when it is gzip.
    inflate: Option<Inflate>,
    buffer: BytesMut,
    /// How much of the buffer is known to hold no line end (JSON).
    scanned: usize,
    ended: bool,
}

/// The largest watch frame taken (an object is at most 1.5 MB in etcd).
const MAX_FRAME: usize = 16 << 20;

impl Frames {
    /// The next event; `None` when the watch ended (or was silent for [`IDLE`]).
    async fn next<K: Watched>(&mut self) -> Option<Result<WatchEvent<K>, Failure>> {
        let frame = match self.frame().await? {
            Ok(frame) => frame,
            Err(failure) => return Some(Err(failure)),
        };
        Some(decode_event::<K>(self.encoding, &frame).map_err(Failure::Other))
    }

    async fn frame(&mut self) -> Option<Result<Bytes, Failure>> {
        loop {
            if let Some(frame) = self.split() {
                return Some(frame);
            }
            if self.ended {
                return None;
            }
            let chunk = match tokio::time::timeout(IDLE, self.body.frame()).await {
                Err(_) | Ok(None) => {
                    self.ended = true;
                    continue;
                }
                Ok(Some(Err(error))) => {
                    self.ended = true;
                    // A connection cut mid-stream is the end of this watch: it is resumed.
                    tracing::debug!("watch stream: {error}");
                    continue;
                }
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = chunk.into_data() {
                match &mut self.inflate {
                    None => self.buffer.extend_from_slice(&data),
                    Some(inflate) => {
                        if let Err(why) = inflate.push(&data, &mut self.buffer) {
                            self.ended = true;
                            self.buffer.clear();
                            return Some(Err(Failure::Other(why)));
                        }
                    }
                }
            }
        }
    }

    /// A whole frame from the buffer, if one is there.
    fn split(&mut self) -> Option<Result<Bytes, Failure>> {
        match self.encoding {
            Encoding::Json => loop {
                // Where the last look for the line's end stopped: a long line arriving in
                // many chunks is scanned once, not once per chunk.
                let Some(end) = self.buffer[self.scanned..]
                    .iter()
                    .position(|byte| *byte == b'\n')
                else {
                    self.scanned = self.buffer.len();
                    if self.scanned > MAX_FRAME {
                        self.ended = true;
                        self.buffer.clear();
                        self.scanned = 0;
                        return Some(Err(Failure::Other(format!(
                            "a watch event of more than {MAX_FRAME} bytes"
                        ))));
                    }
                    return None;
                };
                let end = self.scanned + end;
                self.scanned = 0;
                let line = self.buffer.split_to(end + 1).freeze();
                let line = line.slice(..end);
                if !line.iter().all(u8::is_ascii_whitespace) {
                    return Some(Ok(line));
                }
            },
            Encoding::Protobuf => {
                let length = u32::from_be_bytes(self.buffer.get(..4)?.try_into().ok()?) as usize;
                if length > MAX_FRAME {
                    self.ended = true;
                    self.buffer.clear();
                    return Some(Err(Failure::Other(format!(
                        "a watch frame of {length} bytes"
                    ))));
                }
                if self.buffer.len() < 4 + length {
                    return None;
                }
                self.buffer.advance(4);
                Some(Ok(self.buffer.split_to(length).freeze()))
            }
        }
    }
}

#[derive(Deserialize)]
struct JsonEvent<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: &'a serde_json::value::RawValue,
}

#[derive(Deserialize, Default)]
struct JsonBookmark {
    #[serde(default)]
    metadata: JsonBookmarkMeta,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct JsonBookmarkMeta {
    #[serde(default)]
    resource_version: String,
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
}

fn decode_event<K: Watched>(encoding: Encoding, frame: &[u8]) -> Result<WatchEvent<K>, String> {
    match (encoding, K::PROTOBUF) {
        (Encoding::Protobuf, Some(decode)) => {
            let (kind, object) = protobuf::watch_event(frame).map_err(|e| e.to_string())?;
            let envelope = protobuf::envelope(object).map_err(|e| e.to_string())?;
            let object = |decoded: Result<K, ProtoError>| decoded.map_err(|e| e.to_string());
            Ok(match kind {
                "ADDED" => WatchEvent::Added(object(decode(envelope.raw))?),
                "MODIFIED" => WatchEvent::Modified(object(decode(envelope.raw))?),
                "DELETED" => WatchEvent::Deleted(object(decode(envelope.raw))?),
                "BOOKMARK" => {
                    let meta = protobuf::metadata_of(envelope.raw).map_err(|e| e.to_string())?;
                    WatchEvent::Bookmark {
                        initial_events_end: initial_events_end(meta.annotations.as_ref()),
                        resource_version: meta.resource_version.unwrap_or_default(),
                    }
                }
                "ERROR" => {
                    WatchEvent::Error(protobuf::status(envelope.raw).map_err(|e| e.to_string())?)
                }
                other => return Err(format!("a watch event of type {other:?}")),
            })
        }
        (Encoding::Protobuf, None) => Err("a protobuf event of a kind read only as JSON".into()),
        (Encoding::Json, _) => {
            let event: JsonEvent<'_> =
                serde_json::from_slice(frame).map_err(|error| format!("a watch event: {error}"))?;
            let object = || {
                serde_json::from_str::<K::Json>(event.object.get())
                    .map(K::from_json)
                    .map_err(|error| format!("the {} event's object: {error}", event.kind))
            };
            Ok(match event.kind {
                "ADDED" => WatchEvent::Added(object()?),
                "MODIFIED" => WatchEvent::Modified(object()?),
                "DELETED" => WatchEvent::Deleted(object()?),
                "BOOKMARK" => {
                    let bookmark: JsonBookmark = serde_json::from_str(event.object.get())
                        .map_err(|error| format!("a bookmark: {error}"))?;
                    let annotations = bookmark.metadata.annotations;
                    WatchEvent::Bookmark {
                        initial_events_end: initial_events_end(Some(&annotations)),
                        resource_version: bookmark.metadata.resource_version,
                    }
                }
                "ERROR" => {
                    let status: JsonStatus = serde_json::from_str(event.object.get())
                        .map_err(|error| format!("an ERROR event: {error}"))?;
                    WatchEvent::Error(status.into_status())
                }
                other => return Err(format!("a watch event of type {other:?}")),
            })
        }
    }
}

fn initial_events_end(annotations: Option<&std::collections::BTreeMap<String, String>>) -> bool {
    annotations.is_some_and(|annotations| annotations.contains_key(INITIAL_EVENTS_END))
}

#[cfg(test)]
mod tests;
