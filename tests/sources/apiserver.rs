//! The API server stand-in (tests/common/apiserver/), driven by the real kube-rs client
//! and `kube::runtime::watcher`, and on the wire where the protocol's framing matters: it
//! is faithful enough for the end-to-end tests of the watch to mean something.
//!
//! These test the stand-in, not clusterdns: it stays for the faults only it can produce
//! (tests/sources/live.rs says which), and each behaviour asserted here is the real API server's as
//! tests/cluster.rs meets it (paging, bookmarks, 410 after a compaction, the initial-events
//! bookmark, selectors, tokens, TLS client certificates).

use std::fmt::Debug;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ListParams, ResourceExt};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher::{self, Event, watcher};
use kube::{Client, Config, Resource};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::common::apiserver::selector::{FieldSelector, LabelSelector};
use crate::common::apiserver::{ApiServer, Cut, Down, Kind, Request};
use crate::common::fixture;

/// A hang guard for one watch event: a broken stand-in fails instead of hanging.
const HANG: Duration = Duration::from_secs(30);

fn client(server: &ApiServer) -> Client {
    Client::try_from(Config::new(server.url().parse().unwrap())).unwrap()
}

fn service(namespace: &str, name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"clusterIP": "10.96.0.50", "ports": [{"port": 80, "protocol": "TCP"}]},
    })
}

fn pod(namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.244.0.9"},
    })
}

/// `ns/name` of each object, as the events name them.
fn ids(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap();
            match o["metadata"]["namespace"].as_str() {
                Some(ns) => format!("{ns}/{name}"),
                None => name.to_owned(),
            }
        })
        .collect()
}

/// A running `kube::runtime::watcher`, its events as text: `Init`, `InitApply ns/name`,
/// `InitDone`, `Apply ns/name`, `Delete ns/name`, `Error ...`.
struct Watch<K> {
    stream: BoxStream<'static, Result<Event<K>, watcher::Error>>,
}

impl<K> Watch<K>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    fn new(api: Api<K>, config: watcher::Config) -> Self {
        Self {
            stream: watcher(api, config).boxed(),
        }
    }

    async fn next(&mut self) -> String {
        let event = tokio::time::timeout(HANG, self.stream.next())
            .await
            .expect("a watch event within 30 s")
            .expect("the watcher never ends");
        let id = |o: &K| match o.namespace() {
            Some(ns) => format!("{ns}/{}", o.name_any()),
            None => o.name_any(),
        };
        match event {
            Ok(Event::Init) => "Init".to_owned(),
            Ok(Event::InitApply(o)) => format!("InitApply {}", id(&o)),
            Ok(Event::InitDone) => "InitDone".to_owned(),
            Ok(Event::Apply(o)) => format!("Apply {}", id(&o)),
            Ok(Event::Delete(o)) => format!("Delete {}", id(&o)),
            Err(watcher::Error::WatchError(status)) => {
                format!("Error {} {}", status.code, status.reason)
            }
            Err(other) => format!("Error {other}"),
        }
    }

    /// The events up to and including `last`.
    async fn until(&mut self, last: &str) -> Vec<String> {
        let mut events = Vec::new();
        loop {
            let event = self.next().await;
            let done = event == last;
            events.push(event);
            if done {
                return events;
            }
        }
    }
}

/// The events without the errors a dropped connection may or may not surface as.
fn without_errors(events: &[String]) -> Vec<&str> {
    events
        .iter()
        .filter(|e| !e.starts_with("Error"))
        .map(String::as_str)
        .collect()
}

fn lists(requests: &[Request]) -> Vec<&Request> {
    requests.iter().filter(|r| r.is_list()).collect()
}

fn watches(requests: &[Request]) -> Vec<&Request> {
    requests.iter().filter(|r| r.is_watch()).collect()
}

/// The initial events a watcher of every Service of the stand-in should see.
fn initial(server: &ApiServer) -> Vec<String> {
    let mut expected = vec!["Init".to_owned()];
    expected.extend(
        ids(&server.objects(Kind::Service))
            .into_iter()
            .map(|id| format!("InitApply {id}")),
    );
    expected.push("InitDone".to_owned());
    expected
}

/// A services watcher past its initial list, with its watch open (an event came through
/// it).
async fn steady(server: &ApiServer) -> Watch<Service> {
    let mut watch = Watch::new(
        Api::<Service>::all(client(server)),
        watcher::Config::default(),
    );
    assert_eq!(watch.until("InitDone").await, initial(server));
    server.apply(service("shop", "probe", json!({})));
    assert_eq!(watch.next().await, "Apply shop/probe");
    watch
}

#[tokio::test]
async fn the_watcher_lists_in_pages_then_follows_the_watch() {
    let server = ApiServer::start();
    let rv = server.apply_file(fixture("shop.json"));
    let count = server.objects(Kind::Service).len();
    assert!(count >= 3, "the fixture has {count} services");

    let config = watcher::Config::default().page_size(2);
    let mut watch = Watch::new(Api::<Service>::all(client(&server)), config);
    assert_eq!(watch.until("InitDone").await, initial(&server));

    let requests = server.requests();
    let lists = lists(&requests);
    assert_eq!(lists.len(), count.div_ceil(2), "one list request per page");
    for (i, list) in lists.iter().enumerate() {
        assert_eq!(list.path, "/api/v1/services");
        assert_eq!(list.param("limit"), Some("2"));
        assert_eq!(list.param("continue").is_some(), i > 0, "{list:?}");
        assert_eq!(list.status, 200);
    }

    // Written before the watch starts: replayed from the list's resourceVersion.
    server.apply(service("shop", "new", json!({})));
    assert_eq!(watch.next().await, "Apply shop/new");
    let requests = server.requests();
    let watch_request = watches(&requests)[0];
    assert_eq!(
        watch_request.param("resourceVersion"),
        Some(rv.to_string().as_str())
    );
    assert_eq!(watch_request.param("allowWatchBookmarks"), Some("true"));
    assert_eq!(watch_request.param("timeoutSeconds"), Some("290"));

    // Live.
    server.apply(service("shop", "new", json!({"changed": "yes"})));
    assert_eq!(watch.next().await, "Apply shop/new");
    server.delete(Kind::Service, "shop", "new");
    assert_eq!(watch.next().await, "Delete shop/new");
    assert_eq!(
        watches(&server.requests()).len(),
        1,
        "one watch served it all"
    );
}

#[tokio::test]
async fn a_compacted_history_makes_the_watcher_list_again_and_see_a_missed_deletion() {
    let server = ApiServer::start();
    server.apply_file(fixture("shop.json"));
    let mut watch = steady(&server).await;
    let victim = ids(&server.objects(Kind::Service))[0].clone();
    let (ns, name) = victim.split_once('/').unwrap();

    // The client notices the drop only when polled: the deletion falls in the gap, and
    // the history it would resume from is gone.
    server.drop_watches(Cut::Abort);
    server.delete(Kind::Service, ns, name);
    server.compact();
    let lists_before = lists(&server.requests()).len();

    let events = watch.until("InitDone").await;
    assert!(
        events.contains(&"Error 410 Expired".to_owned()),
        "{events:?}"
    );
    let relist = without_errors(&events);
    assert_eq!(relist, initial(&server), "the re-list");
    assert!(!relist.contains(&format!("InitApply {victim}").as_str()));
    assert_eq!(lists(&server.requests()).len(), lists_before + 1);
}

#[tokio::test]
async fn gone_makes_the_watcher_list_again() {
    let server = ApiServer::start();
    server.apply_file(fixture("shop.json"));
    let mut watch = steady(&server).await;

    server.send_gone();
    assert_eq!(server.open_watches(), 0);
    server.delete(Kind::Service, "shop", "probe");
    let events = watch.until("InitDone").await;
    assert_eq!(events[0], "Error 410 Expired");
    assert_eq!(events[1..], initial(&server)[..]);
    assert!(!events.contains(&"InitApply shop/probe".to_owned()));
}

#[tokio::test]
async fn a_watch_cut_mid_line_is_resumed_without_a_relist() {
    let server = ApiServer::start();
    server.apply_file(fixture("shop.json"));
    let mut watch = steady(&server).await;
    let lists_before = lists(&server.requests()).len();

    // Half a bookmark line, then the connection closes.
    let before = server.resource_version();
    server.drop_watches(Cut::MidLine);
    server.apply(service("shop", "x", json!({})));
    let events = watch.until("Apply shop/x").await;
    assert_eq!(without_errors(&events), ["Apply shop/x"]);
    let requests = server.requests();
    let resumed = watches(&requests).last().copied().unwrap();
    assert_eq!(
        resumed.param("resourceVersion"),
        Some(before.to_string().as_str())
    );

    // Half of the next event's line: that event is lost from the stream, and replayed
    // to the watch that resumes.
    let before = server.resource_version();
    server.drop_watches(Cut::NextEvent);
    server.apply(service("shop", "y", json!({})));
    let events = watch.until("Apply shop/y").await;
    assert_eq!(without_errors(&events), ["Apply shop/y"]);
    let requests = server.requests();
    let resumed = watches(&requests).last().copied().unwrap();
    assert_eq!(
        resumed.param("resourceVersion"),
        Some(before.to_string().as_str())
    );
    assert_eq!(watches(&requests).len(), 3);
    assert_eq!(lists(&requests).len(), lists_before, "no re-list");
}

/// The raw watch response: chunked, one event per line and per chunk, and the three ways
/// a stream ends.
#[test]
fn watch_streams_are_chunked_lines_and_end_as_asked() {
    let server = ApiServer::start();
    let start = server.resource_version();
    server.apply(service("shop", "a", json!({})));

    let mut raw = RawWatch::open(
        &server,
        &format!("/api/v1/services?watch=true&resourceVersion={start}"),
    );
    assert!(
        raw.headers.starts_with("HTTP/1.1 200 OK\r\n"),
        "{}",
        raw.headers
    );
    let headers = raw.headers.to_ascii_lowercase();
    assert!(headers.contains("transfer-encoding: chunked"), "{headers}");
    assert!(
        headers.contains("content-type: application/json"),
        "{headers}"
    );
    let added = raw.event();
    assert_eq!(added["type"], "ADDED");
    assert_eq!(added["object"]["kind"], "Service");
    assert_eq!(added["object"]["apiVersion"], "v1");
    assert_eq!(added["object"]["metadata"]["name"], "a");
    server.apply(service("shop", "b", json!({})));
    assert_eq!(raw.event()["object"]["metadata"]["name"], "b");
    server.drop_watches(Cut::MidLine);
    let Chunk::Data(half) = raw.chunk() else {
        panic!("no half line")
    };
    assert!(
        !half.ends_with('\n') && half.starts_with("{\"type\":\"BOOKMARK\""),
        "{half:?}"
    );
    assert_eq!(raw.chunk(), Chunk::Eof, "closed inside the chunked body");

    let mut raw = RawWatch::open(&server, "/api/v1/services?watch=1");
    assert_eq!(raw.event()["type"], "ADDED");
    assert_eq!(raw.event()["type"], "ADDED");
    server.drop_watches(Cut::Abort);
    assert_eq!(raw.chunk(), Chunk::Eof);

    let mut raw = RawWatch::open(
        &server,
        "/api/v1/namespaces/shop/services?watch=true&resourceVersion=0",
    );
    assert_eq!(raw.event()["type"], "ADDED");
    assert_eq!(raw.event()["type"], "ADDED");
    server.drop_watches(Cut::Clean);
    assert_eq!(raw.chunk(), Chunk::End);

    // From a compacted resourceVersion: 200, one ERROR event, the end.
    server.compact();
    let mut raw = RawWatch::open(
        &server,
        &format!("/api/v1/services?watch=true&resourceVersion={start}"),
    );
    assert!(raw.headers.starts_with("HTTP/1.1 200 OK\r\n"));
    let error = raw.event();
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["kind"], "Status");
    assert_eq!(error["object"]["code"], 410);
    assert_eq!(error["object"]["reason"], "Expired");
    assert_eq!(raw.chunk(), Chunk::End);
}

/// One request on a fresh connection: the status and the JSON body.
fn raw_get(server: &ApiServer, target: &str) -> (u16, Value) {
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(HANG)).unwrap();
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap())
}

#[derive(Debug, PartialEq, Eq)]
enum Chunk {
    Data(String),
    /// The last chunk (`0`): the response ended properly.
    End,
    /// The connection closed before the last chunk.
    Eof,
}

struct RawWatch {
    reader: BufReader<TcpStream>,
    headers: String,
}

impl RawWatch {
    fn open(server: &ApiServer, target: &str) -> Self {
        let mut stream = TcpStream::connect(server.addr()).unwrap();
        stream.set_read_timeout(Some(HANG)).unwrap();
        write!(stream, "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut reader = BufReader::new(stream);
        let mut headers = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            headers.push_str(&line);
            if line == "\r\n" || line.is_empty() {
                break;
            }
        }
        Self { reader, headers }
    }

    fn chunk(&mut self) -> Chunk {
        let mut size = String::new();
        if self.reader.read_line(&mut size).unwrap() == 0 {
            return Chunk::Eof;
        }
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        let mut data = vec![0; size + 2];
        self.reader.read_exact(&mut data).unwrap();
        assert_eq!(&data[size..], b"\r\n");
        if size == 0 {
            return Chunk::End;
        }
        Chunk::Data(String::from_utf8(data[..size].to_vec()).unwrap())
    }

    /// The next chunk, which must be exactly one JSON line.
    fn event(&mut self) -> Value {
        match self.chunk() {
            Chunk::Data(line) => {
                assert!(
                    line.ends_with('\n') && line.matches('\n').count() == 1,
                    "{line:?}"
                );
                serde_json::from_str(&line).unwrap()
            }
            other => panic!("expected an event, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_bookmark_moves_the_resume_point() {
    let server = ApiServer::start();
    let mut watch = steady(&server).await;
    // A change the services watch never sees, then a bookmark past it.
    let rv = server.apply(pod("shop", "p"));
    server.bookmark();
    server.drop_watches(Cut::Clean);
    server.apply(service("shop", "after", json!({})));
    assert_eq!(watch.next().await, "Apply shop/after");
    let requests = server.requests();
    let resumed = watches(&requests).last().copied().unwrap();
    assert_eq!(
        resumed.param("resourceVersion"),
        Some(rv.to_string().as_str())
    );
}

#[tokio::test]
async fn watches_end_at_their_timeout_and_are_started_again() {
    let server = ApiServer::start();
    let config = watcher::Config::default().timeout(1);
    let mut watch = Watch::new(Api::<Service>::all(client(&server)), config);
    assert_eq!(watch.until("InitDone").await, ["Init", "InitDone"]);
    let polling = async {
        loop {
            watch.next().await;
        }
    };
    let waiting = server.wait_for_async("a second watch", |s| watches(&s.requests()).len() >= 2);
    tokio::select! {
        () = waiting => {}
        () = polling => {}
    }
    let requests = server.requests();
    assert_eq!(watches(&requests)[1].param("timeoutSeconds"), Some("1"));
    assert_eq!(lists(&requests).len(), 1, "a clean end is not a re-list");
}

#[tokio::test]
async fn streaming_lists_end_with_the_initial_events_bookmark() {
    let server = ApiServer::start();
    server.apply_file(fixture("shop.json"));
    let config = watcher::Config::default().streaming_lists();
    let mut watch = Watch::new(Api::<Service>::all(client(&server)), config);
    assert_eq!(watch.until("InitDone").await, initial(&server));
    server.apply(service("shop", "later", json!({})));
    assert_eq!(watch.next().await, "Apply shop/later");
    let requests = server.requests();
    assert!(lists(&requests).is_empty());
    assert_eq!(
        watches(&requests)[0].param("sendInitialEvents"),
        Some("true")
    );
}

#[tokio::test]
async fn a_token_is_required_and_a_kubeconfig_context_supplies_it() {
    let server = ApiServer::start();
    server.apply_file(fixture("shop.json"));
    server.require_token(Some("sesame"));
    let dir = tempfile::tempdir().unwrap();
    let path = server.kubeconfig(
        dir.path(),
        &[("wrong", Some("nope")), ("right", Some("sesame"))],
    );
    let kubeconfig = Kubeconfig::read_from(&path).unwrap();

    let default = Config::from_custom_kubeconfig(kubeconfig.clone(), &KubeConfigOptions::default())
        .await
        .unwrap();
    let api = Api::<Service>::all(Client::try_from(default).unwrap());
    match api.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"));
        }
        other => panic!("expected 401, got {other:?}"),
    }

    let options = KubeConfigOptions {
        context: Some("right".to_owned()),
        ..KubeConfigOptions::default()
    };
    let right = Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .unwrap();
    let client = Client::try_from(right).unwrap();
    let list = Api::<Service>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(list.items.len(), server.objects(Kind::Service).len());
    let mut watch = Watch::new(Api::<Pod>::all(client), watcher::Config::default());
    assert_eq!(watch.next().await, "Init");

    let auth: Vec<_> = server
        .requests()
        .into_iter()
        .map(|r| (r.authorization, r.status))
        .collect();
    assert_eq!(auth[0], (Some("Bearer nope".to_owned()), 401));
    assert_eq!(auth[1], (Some("Bearer sesame".to_owned()), 200));
}

#[tokio::test]
async fn selectors_filter_lists_and_watches_as_the_watch_cache_does() {
    let server = ApiServer::start();
    server.apply(service("shop", "a", json!({"app": "web", "tier": "front"})));
    server.apply(service("shop", "b", json!({"app": "web", "tier": "db"})));
    server.apply(service("other", "c", json!({"app": "api"})));

    let selector = "app=web,tier in (front,back)";
    let config = watcher::Config::default().labels(selector);
    let mut watch = Watch::new(Api::<Service>::all(client(&server)), config);
    assert_eq!(
        watch.until("InitDone").await,
        ["Init", "InitApply shop/a", "InitDone"]
    );
    // b starts matching: added; a stops: deleted; c never matches.
    server.apply(service("shop", "b", json!({"app": "web", "tier": "back"})));
    assert_eq!(watch.next().await, "Apply shop/b");
    server.apply(service(
        "other",
        "c",
        json!({"app": "api", "tier": "front"}),
    ));
    server.apply(service("shop", "a", json!({"app": "web", "tier": "db"})));
    assert_eq!(watch.next().await, "Delete shop/a");
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.param("labelSelector") == Some(selector))
    );

    let client = client(&server);
    let names = |list: kube::core::ObjectList<Service>| {
        list.items
            .iter()
            .map(ResourceExt::name_any)
            .collect::<Vec<_>>()
    };
    let all = Api::<Service>::all(client.clone());
    let by_name = all
        .list(&ListParams::default().fields("metadata.name=c"))
        .await
        .unwrap();
    assert_eq!(names(by_name), ["c"]);
    let in_shop = Api::<Service>::namespaced(client.clone(), "shop");
    assert_eq!(
        names(in_shop.list(&ListParams::default()).await.unwrap()),
        ["a", "b"]
    );
    let not_web = all
        .list(&ListParams::default().labels("app!=web"))
        .await
        .unwrap();
    assert_eq!(names(not_web), ["c"]);

    for (labels, fields, message) in [
        ("app in web", "", "unable to parse requirement"),
        ("", "spec.foo=x", "field label not supported: spec.foo"),
    ] {
        let mut params = ListParams::default();
        if !labels.is_empty() {
            params = params.labels(labels);
        }
        if !fields.is_empty() {
            params = params.fields(fields);
        }
        match all.list(&params).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
                assert!(status.message.contains(message), "{}", status.message);
            }
            other => panic!("expected 400, got {other:?}"),
        }
    }
}

#[test]
fn label_selectors_parse_and_match_like_kubernetes() {
    let labels = json!({"metadata": {"labels": {"app": "web", "tier": "front", "n": "5"}}});
    for (selector, expected) in [
        ("", true),
        ("app=web", true),
        ("app==web", true),
        ("app = web", true),
        ("app!=web", false),
        ("app!=api", true),
        ("missing!=x", true),
        ("app in (web,api)", true),
        ("app in (api)", false),
        ("app notin (api)", true),
        ("missing notin (api)", true),
        ("app notin (web)", false),
        ("app", true),
        ("!app", false),
        ("!missing", true),
        ("missing", false),
        ("n>4", true),
        ("n<5", false),
        ("app=web,tier=front", true),
        ("app=web,tier=back", false),
        ("app,tier in (front),!missing", true),
        ("example.com/team=x", false),
    ] {
        let parsed = LabelSelector::parse(selector).unwrap_or_else(|e| panic!("{selector}: {e}"));
        assert_eq!(parsed.matches(&labels), expected, "{selector}");
    }
    for bad in [
        "app in web",
        "app in (web",
        "app ~ web",
        "app=web,",
        "=web",
        "app=we b",
        "app in ()",
        "n>x",
        "bad key=x",
        "!app=web",
    ] {
        assert!(LabelSelector::parse(bad).is_err(), "{bad:?} parsed");
    }

    let object = json!({"metadata": {"name": "web", "namespace": "shop"}});
    for (selector, expected) in [
        ("metadata.name=web", true),
        ("metadata.name==web", true),
        ("metadata.name!=web", false),
        ("metadata.namespace=shop,metadata.name=web", true),
        ("metadata.namespace=other", false),
    ] {
        let parsed = FieldSelector::parse(Kind::Service, selector).unwrap();
        assert_eq!(
            parsed.matches(Kind::Service, &object),
            expected,
            "{selector}"
        );
    }
    assert!(FieldSelector::parse(Kind::Service, "spec.nodeName=x").is_err());
    assert!(FieldSelector::parse(Kind::Pod, "spec.nodeName=x").is_ok());
    assert!(FieldSelector::parse(Kind::Service, "metadata.name").is_err());
}

#[tokio::test]
async fn remaining_item_count_counts_down_page_by_page() {
    let server = ApiServer::start();
    for name in ["a", "b", "c", "d", "e"] {
        server.apply(service("shop", name, json!({})));
    }
    // A Service in another namespace after the first page: not in the snapshot listed.
    let client = client(&server);
    let mut target = "/api/v1/services?limit=2".to_owned();
    let mut seen = Vec::new();
    loop {
        let request = hyper::Request::get(&target).body(Vec::new()).unwrap();
        let text = client.request_text(request).await.unwrap();
        let page: Value = serde_json::from_str(&text).unwrap();
        if seen.is_empty() {
            server.apply(service("zoo", "late", json!({})));
        }
        seen.push((
            ids(page["items"].as_array().unwrap()),
            page["metadata"]["remainingItemCount"].as_u64(),
        ));
        let Some(token) = page["metadata"]["continue"].as_str() else {
            break;
        };
        target = format!("/api/v1/services?limit=2&continue={token}");
    }
    assert_eq!(
        seen,
        [
            (vec!["shop/a".to_owned(), "shop/b".to_owned()], Some(3)),
            (vec!["shop/c".to_owned(), "shop/d".to_owned()], Some(1)),
            (vec!["shop/e".to_owned()], None),
        ]
    );
}

#[tokio::test]
async fn lists_page_over_a_consistent_snapshot_and_answer_like_the_real_server() {
    let server = ApiServer::start();
    for name in ["a", "b", "c"] {
        server.apply(service("shop", name, json!({})));
    }
    let client = client(&server);
    let get = |target: &str| {
        let client = client.clone();
        let request = hyper::Request::get(target).body(Vec::new()).unwrap();
        async move {
            client
                .request_text(request)
                .await
                .map(|text| serde_json::from_str::<Value>(&text).unwrap())
        }
    };

    let page = get("/api/v1/services?limit=2").await.unwrap();
    assert_eq!(page["kind"], "ServiceList");
    assert_eq!(page["apiVersion"], "v1");
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let items = page["items"].as_array().unwrap();
    assert_eq!(ids(items), ["shop/a", "shop/b"]);
    assert!(
        items
            .iter()
            .all(|i| i.get("kind").is_none() && i.get("apiVersion").is_none())
    );
    assert!(items.iter().all(|i| i["metadata"]["uid"].is_string()));
    let rv = page["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = page["metadata"]["continue"].as_str().unwrap().to_owned();

    // Changes after the first page do not show on the next one.
    server.delete(Kind::Service, "shop", "c");
    server.apply(service("shop", "d", json!({})));
    let next = get(&format!("/api/v1/services?limit=2&continue={token}"))
        .await
        .unwrap();
    assert_eq!(ids(next["items"].as_array().unwrap()), ["shop/c"]);
    assert_eq!(next["metadata"]["resourceVersion"], rv.as_str());
    assert!(next["metadata"].get("continue").is_none());
    let exact = get(&format!(
        "/api/v1/services?resourceVersion={rv}&resourceVersionMatch=Exact"
    ))
    .await
    .unwrap();
    assert_eq!(
        ids(exact["items"].as_array().unwrap()),
        ["shop/a", "shop/b", "shop/c"]
    );

    let object = get("/api/v1/namespaces/shop/services/d").await.unwrap();
    assert_eq!(
        (object["kind"].as_str(), object["apiVersion"].as_str()),
        (Some("Service"), Some("v1"))
    );

    server.compact();
    let now = server.resource_version();
    for (target, code, reason) in [
        (
            format!("/api/v1/services?limit=2&continue={token}"),
            410,
            "Expired",
        ),
        (
            format!("/api/v1/services?resourceVersion={rv}&resourceVersionMatch=Exact"),
            410,
            "Expired",
        ),
        ("/api/v1/services?continue=zz".to_owned(), 400, "BadRequest"),
        (
            "/api/v1/namespaces/shop/services/gone".to_owned(),
            404,
            "NotFound",
        ),
        ("/api/v1/widgets".to_owned(), 404, "NotFound"),
        (
            "/apis/discovery.k8s.io/v1/services".to_owned(),
            404,
            "NotFound",
        ),
    ] {
        match get(&target).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(
                    (status.code, status.reason.as_str()),
                    (code, reason),
                    "{target}"
                );
            }
            other => panic!("{target}: expected {code}, got {other:?}"),
        }
    }
    // kube's client retries a 504 itself (for minutes): asked directly.
    let (status, body) = raw_get(
        &server,
        &format!("/api/v1/services?resourceVersion={}", now + 5),
    );
    assert_eq!(status, 504);
    assert_eq!(body["reason"], "Timeout");
    let slices = get("/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices")
        .await
        .unwrap();
    assert_eq!(slices["kind"], "EndpointSliceList");
    assert_eq!(slices["apiVersion"], "discovery.k8s.io/v1");
    let version: k8s_openapi::apimachinery::pkg::version::Info =
        serde_json::from_value(get("/version").await.unwrap()).unwrap();
    assert_eq!(version.major, "1");
}

#[test]
fn objects_get_versions_uids_and_timestamps_and_an_unchanged_apply_is_a_no_op() {
    let server = ApiServer::start();
    let first = server.apply(service("shop", "web", json!({})));
    let stored = server.get(Kind::Service, "shop", "web").unwrap();
    assert_eq!(
        stored["metadata"]["resourceVersion"],
        first.to_string().as_str()
    );
    let uid = stored["metadata"]["uid"].clone();
    let created = stored["metadata"]["creationTimestamp"].clone();
    assert!(uid.is_string() && created.is_string());
    assert_eq!(
        server.apply(service("shop", "web", json!({}))),
        first,
        "no change, no write"
    );
    let second = server.apply(service("shop", "web", json!({"v": "2"})));
    assert!(second > first);
    let stored = server.get(Kind::Service, "shop", "web").unwrap();
    assert_eq!(
        (
            &stored["metadata"]["uid"],
            &stored["metadata"]["creationTimestamp"]
        ),
        (&uid, &created)
    );
    let mut no_namespace = service("", "bare", json!({}));
    no_namespace["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    server.apply(no_namespace);
    assert!(server.get(Kind::Service, "default", "bare").is_some());
    assert!(server.delete(Kind::Service, "shop", "web") > second);
    assert!(server.get(Kind::Service, "shop", "web").is_none());
}

#[tokio::test]
async fn the_watcher_rides_out_an_outage_and_latency() {
    let server = ApiServer::start();
    server.apply_file(fixture("shop.json"));
    server.set_latency(Duration::from_millis(100));
    let mut watch = steady(&server).await;
    let lists_before = lists(&server.requests()).len();

    server.set_down(Down::Refuse);
    assert!(
        watch.next().await.starts_with("Error"),
        "the watch fails while down"
    );
    server.set_up();
    server.apply(service("shop", "z", json!({})));
    let events = watch.until("Apply shop/z").await;
    assert_eq!(without_errors(&events), ["Apply shop/z"]);

    // kube's client retries a 503 itself (with backoff): the server comes back while it
    // does.
    server.set_down(Down::Unavailable);
    let recover = async {
        let refused = |s: &ApiServer| s.requests().iter().any(|r| r.status == 503);
        server.wait_for_async("a 503", refused).await;
        server.set_up();
        server.delete(Kind::Service, "shop", "z");
    };
    let (events, ()) = tokio::join!(watch.until("Delete shop/z"), recover);
    assert_eq!(without_errors(&events), ["Delete shop/z"]);
    let requests = server.requests();
    assert!(requests.iter().any(|r| r.status == 503));
    assert_eq!(
        lists(&requests).len(),
        lists_before,
        "resumed, never re-listed"
    );
}

#[test]
fn down_refuses_and_resets_connections_and_up_binds_the_same_port() {
    let server = ApiServer::start();
    let mut open = RawWatch::open(&server, "/api/v1/services?watch=true");
    server.set_down(Down::Refuse);
    let mut buf = [0; 64];
    let reset = open.reader.get_mut().read(&mut buf).unwrap_err();
    assert_eq!(reset.kind(), ErrorKind::ConnectionReset);
    let refused = TcpStream::connect(server.addr()).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);
    server.set_up();
    let mut raw = RawWatch::open(
        &server,
        "/api/v1/services?watch=true&allowWatchBookmarks=true",
    );
    server.wait_for_watches(1);
    server.bookmark();
    assert_eq!(raw.event()["type"], "BOOKMARK");
}

#[tokio::test]
async fn injected_failures_carry_the_real_status_and_run_out() {
    let server = ApiServer::start();
    server.apply(pod("shop", "p"));
    server.fail_requests(|r| r.kind == Some(Kind::Pod) && r.is_list(), 403, 1);
    server.fail_requests(|r| r.kind == Some(Kind::Pod), 500, 1);
    let api = Api::<Pod>::namespaced(client(&server), "shop");
    match api.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
            assert_eq!(
                status.message,
                "pods is forbidden: User \"system:serviceaccount:kube-system:coredns\" cannot \
                 list resource \"pods\" in API group \"\" in the namespace \"shop\""
            );
        }
        other => panic!("expected 403, got {other:?}"),
    }
    match api.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(
                (status.code, status.reason.as_str()),
                (500, "InternalError")
            );
        }
        other => panic!("expected 500, got {other:?}"),
    }
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    let statuses: Vec<u16> = server.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [403, 500, 200]);
}

#[tokio::test]
async fn tls_needs_the_client_certificate_signed_by_the_ca() {
    let server = ApiServer::start_tls();
    assert!(server.url().starts_with("https://127.0.0.1:"));
    server.apply_file(fixture("shop.json"));
    let dir = tempfile::tempdir().unwrap();
    let path = server.kubeconfig(dir.path(), &[("tls", None)]);
    let kubeconfig = Kubeconfig::read_from(&path).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig.clone(), &KubeConfigOptions::default())
        .await
        .unwrap();
    let mut watch = Watch::new(
        Api::<Service>::all(Client::try_from(config).unwrap()),
        watcher::Config::default(),
    );
    assert_eq!(watch.until("InitDone").await, initial(&server));

    // The right CA but another CA's client certificate, then none at all.
    let files = server.tls_files().unwrap();
    let mut stranger = kubeconfig.clone();
    let auth = stranger.auth_infos[0].auth_info.as_mut().unwrap();
    auth.client_certificate = Some(files.stranger_cert.display().to_string());
    auth.client_key = Some(files.stranger_key.display().to_string());
    let mut anonymous = kubeconfig;
    let auth = anonymous.auth_infos[0].auth_info.as_mut().unwrap();
    auth.client_certificate = None;
    auth.client_key = None;
    for kubeconfig in [stranger, anonymous] {
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
        let api = Api::<Service>::all(Client::try_from(config).unwrap());
        assert!(api.list(&ListParams::default()).await.is_err());
    }
    assert_eq!(
        lists(&server.requests()).len(),
        1,
        "refused at the handshake"
    );
}
