//! Tests of `api`.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::connect::kind_of_path;
use super::feed::display_key;
use super::*;
use crate::metrics::{Collect, Exposition};
use crate::model::{self, Cluster, ObjectKey};
use crate::model::{Namespace, Service};

fn service(namespace: &str, name: &str) -> Box<Object> {
    let json = serde_json::json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 80}]},
    });
    let object: core::Service = serde_json::from_value(json).expect("service");
    Box::new(Object::Service(
        convert::service(&object).expect("converts"),
    ))
}

fn namespace(name: &str) -> Box<Object> {
    Box::new(Object::Namespace(Namespace {
        name: name.to_owned(),
        labels: model::Labels::new(),
    }))
}

fn publisher() -> Publisher {
    let config = KubernetesConfig::new(vec!["cluster.local.".parse().expect("zone")], 0, 1);
    let store = Arc::new(Store::new(super::super::publish::standalone(
        &Cluster::default(),
        &config,
        &[],
        SystemTime::now(),
    )));
    Publisher::new(config, Vec::new(), store, None)
}

fn names(state: &WatchState) -> Vec<String> {
    state
        .publisher
        .cluster()
        .services
        .values()
        .map(|svc: &Service| display_key(&svc.key))
        .collect()
}

#[test]
fn the_state_is_complete_only_when_every_resource_is_listed_and_none_relisting() {
    let status = ApiStatus::new("cluster.local.");
    let mut state = WatchState::new(vec![Kind::Namespace, Kind::Service], publisher());
    assert!(!state.complete());
    state.apply(Change::Init(Kind::Namespace), &status);
    state.apply(Change::Upsert(namespace("shop")), &status);
    state.apply(Change::InitDone(Kind::Namespace), &status);
    assert!(!state.complete(), "services not listed yet");
    state.apply(Change::Init(Kind::Service), &status);
    state.apply(Change::Upsert(service("shop", "web")), &status);
    assert!(!state.complete(), "services mid-list");
    state.apply(Change::InitDone(Kind::Service), &status);
    assert!(state.complete());
    assert_eq!(names(&state), ["shop/web"]);
}

#[test]
fn a_relist_updates_in_place_and_removes_what_it_did_not_see() {
    let status = ApiStatus::new("cluster.local.");
    let mut state = WatchState::new(vec![Kind::Service], publisher());
    for change in [
        Change::Init(Kind::Service),
        Change::Upsert(service("shop", "web")),
        Change::Upsert(service("shop", "db")),
        Change::InitDone(Kind::Service),
    ] {
        state.apply(change, &status);
    }
    assert_eq!(names(&state), ["shop/db", "shop/web"]);
    // 410 Gone: the watcher lists again; db was deleted while the watch was down.
    state.apply(Change::Init(Kind::Service), &status);
    state.apply(Change::Upsert(service("shop", "web")), &status);
    state.apply(Change::Upsert(service("shop", "cart")), &status);
    assert!(!state.complete(), "never publish half a re-list");
    assert_eq!(
        names(&state),
        ["shop/cart", "shop/db", "shop/web"],
        "in place: no second copy"
    );
    state.apply(Change::InitDone(Kind::Service), &status);
    assert!(state.complete());
    assert_eq!(names(&state), ["shop/cart", "shop/web"]);
    assert_eq!(status.state().relists.get("services"), Some(&1));
}

#[test]
fn a_first_list_removes_what_was_held_before_it_and_not_listed() {
    let status = ApiStatus::new("cluster.local.");
    let mut state = WatchState::new(vec![Kind::Service], publisher());
    // Held before the first list: read from a snapshot file at the start.
    state
        .publisher
        .change(crate::zone::Change::Upsert(service("shop", "old")));
    state
        .publisher
        .change(crate::zone::Change::Upsert(service("shop", "web")));
    for change in [
        Change::Init(Kind::Service),
        Change::Upsert(service("shop", "web")),
        Change::Upsert(service("shop", "cart")),
        Change::InitDone(Kind::Service),
    ] {
        state.apply(change, &status);
    }
    assert!(state.complete());
    assert_eq!(names(&state), ["shop/cart", "shop/web"]);
}

#[test]
fn a_list_that_began_with_nothing_held_keeps_all_it_listed() {
    let status = ApiStatus::new("cluster.local.");
    let mut state = WatchState::new(vec![Kind::Namespace, Kind::Service], publisher());
    for change in [
        Change::Init(Kind::Service),
        Change::Upsert(service("shop", "web")),
        Change::Upsert(service("shop", "db")),
        Change::InitDone(Kind::Service),
        // Every Service deleted, then listed again: nothing held as that list begins.
        Change::Delete(Kind::Service, ObjectKey::new("shop", "web")),
        Change::Delete(Kind::Service, ObjectKey::new("shop", "db")),
        Change::Init(Kind::Service),
        Change::Upsert(service("shop", "cart")),
        Change::InitDone(Kind::Service),
    ] {
        state.apply(change, &status);
    }
    assert_eq!(names(&state), ["shop/cart"]);
    assert!(state.listing.is_empty());
}

#[test]
fn a_relist_after_the_first_sync_is_published_as_an_update_not_a_whole_build() {
    let status = ApiStatus::new("cluster.local.");
    let mut state = WatchState::new(vec![Kind::Namespace, Kind::Service], publisher());
    for change in [
        Change::Init(Kind::Namespace),
        Change::Upsert(namespace("shop")),
        Change::InitDone(Kind::Namespace),
        Change::Init(Kind::Service),
        Change::Upsert(service("shop", "web")),
        Change::Upsert(service("shop", "db")),
        Change::InitDone(Kind::Service),
    ] {
        state.apply(change, &status);
    }
    let first = state
        .publisher
        .publish(SystemTime::now())
        .expect("first sync");
    assert!(first.whole);
    // 410 Gone: the services are listed again; db went and cart came while the watch was
    // down, web is as it was. Meanwhile a namespace's watch reports one added and deleted.
    for change in [
        Change::Init(Kind::Service),
        Change::Upsert(service("shop", "web")),
        Change::Upsert(namespace("gone-soon")),
        Change::Upsert(service("shop", "cart")),
        Change::Delete(Kind::Namespace, ObjectKey::new("", "gone-soon")),
    ] {
        state.apply(change, &status);
    }
    assert!(!state.complete(), "never publish half a re-list");
    assert_eq!(names(&state), ["shop/db", "shop/web"], "served as it was");
    state.apply(Change::InitDone(Kind::Service), &status);
    assert!(state.complete());
    let published = state.publisher.publish(SystemTime::now()).expect("changed");
    assert!(!published.whole, "a diff against what is held");
    assert_eq!(names(&state), ["shop/cart", "shop/web"]);
    assert!(
        !state
            .publisher
            .cluster()
            .namespaces
            .contains_key("gone-soon")
    );
    let store = state.publisher.store().load();
    let lookup = |name: &str| {
        let wire = crate::name::WireName::from_dotted(name).expect("name");
        store
            .lookup(wire.as_bytes(), crate::codes::rtype::A)
            .map(|answer| answer.rcode)
    };
    assert_eq!(
        lookup("cart.shop.svc.cluster.local."),
        Some(crate::zone::Rcode::NoError)
    );
    assert_eq!(
        lookup("db.shop.svc.cluster.local."),
        Some(crate::zone::Rcode::NxDomain)
    );
    // A re-list that finds nothing changed publishes nothing.
    for change in [
        Change::Init(Kind::Service),
        Change::Upsert(service("shop", "web")),
        Change::Upsert(service("shop", "cart")),
        Change::InitDone(Kind::Service),
    ] {
        state.apply(change, &status);
    }
    assert!(state.publisher.publish(SystemTime::now()).is_none());
    assert_eq!(status.state().relists.get("services"), Some(&2));
}

#[test]
fn deletes_and_failures() {
    let status = ApiStatus::new("cluster.local.");
    let mut state = WatchState::new(vec![Kind::Service], publisher());
    state.apply(Change::Init(Kind::Service), &status);
    state.apply(Change::InitDone(Kind::Service), &status);
    assert!(state.apply(Change::Upsert(service("shop", "web")), &status));
    assert!(state.apply(
        Change::Delete(Kind::Service, ObjectKey::new("shop", "web")),
        &status
    ));
    assert!(!state.apply(
        Change::Delete(Kind::Service, ObjectKey::new("shop", "web")),
        &status
    ));
    assert!(!state.apply(Change::Failed(Kind::Service, "boom".into()), &status));
    assert_eq!(status.state().watch_errors.get("services"), Some(&1));
    assert!(state.complete(), "a failure keeps the last state");
}

#[test]
fn status_tells_ready_notes_and_metrics() {
    let status = ApiStatus::new("cluster.local.");
    assert!(!status.is_ready());
    let now = SystemTime::now();
    status.restored(now - Duration::from_secs(30));
    assert!(status.is_ready() && !status.is_synced());
    let notes = status.notes(now);
    assert!(
        notes[0].contains("serving the snapshot file (age 30 s)"),
        "{notes:?}"
    );
    status.unreachable("connection refused");
    let notes = status.notes(now);
    assert!(
        notes.iter().any(|n| n.contains("connection refused")),
        "{notes:?}"
    );
    status.answered(200, Some(Kind::Service));
    status.mark_synced(now);
    assert!(status.is_synced());
    assert!(status.notes(now).is_empty(), "{:?}", status.notes(now));
    let mut out = Exposition::new();
    status.collect(&mut out);
    let text = out.finish();
    assert!(
        text.contains("clusterdns_kubernetes_synced{zone=\"cluster.local.\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("clusterdns_kubernetes_api_up{zone=\"cluster.local.\"} 1"),
        "{text}"
    );
    assert!(
        text.contains(
            "clusterdns_kubernetes_api_requests_total{code=\"error\",zone=\"cluster.local.\"} 1"
        ),
        "{text}"
    );
    assert!(!text.contains("snapshot_age"), "{text}");
}

#[test]
fn snapshot_files_are_replaced_whole_and_read_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("snapshot.json");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/shop.json");
    let cluster = crate::source::read_objects(&[fixture])
        .expect("fixture")
        .cluster;
    write_snapshot(&path, &cluster).expect("written");
    let (back, _) = read_snapshot(&path).expect("read");
    assert_eq!(back, cluster);
    // A directory not made yet is made.
    let nested = dir.path().join("var/lib/clusterdns/snapshot.json");
    write_snapshot(&nested, &cluster).expect("written with its directory");
    assert_eq!(read_snapshot(&nested).expect("read").0, cluster);
    std::fs::remove_dir_all(dir.path().join("var")).expect("removed");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
}

#[test]
fn the_changes_since_a_snapshot_are_appended_and_read_back_in_order() {
    use super::snapshot_file::{append_changes, change_lines};
    use crate::model::{Kind, Object};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("snapshot.json");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/shop.json");
    let original = crate::source::read_objects(&[fixture])
        .expect("fixture")
        .cluster;
    let mut cluster = original.clone();
    write_snapshot(&path, &cluster).expect("written");
    let base = std::fs::read(&path).expect("snapshot");
    let now = SystemTime::now();
    let web = ObjectKey::new("shop", "web");
    let db = ObjectKey::new("shop", "db");

    // A Service deleted, another modified, then the deleted one back and a namespace gone,
    // in three appends: each line is the object as it is when the lines are written.
    let Some(Object::Service(mut changed)) = cluster.remove(Kind::Service, &web) else {
        panic!("no shop/web")
    };
    changed.ports[0].port = 10_080;
    cluster.remove(Kind::Service, &db);
    let first = [(Kind::Service, db.clone()), (Kind::Service, web.clone())];
    cluster.insert(Object::Service(changed));
    append_changes(&path, &change_lines(&cluster, first, now)).expect("appended");
    let mut db_again = original.services[&db].clone();
    db_again.ports[0].port = 5433;
    cluster.insert(Object::Service(db_again));
    append_changes(
        &path,
        &change_lines(&cluster, [(Kind::Service, db.clone())], now),
    )
    .expect("appended");
    let gone = ObjectKey::new("", "kube-system");
    cluster.remove(Kind::Namespace, &gone);
    append_changes(
        &path,
        &change_lines(&cluster, [(Kind::Namespace, gone)], now),
    )
    .expect("appended");

    let text = std::fs::read_to_string(changes_path(&path)).expect("changes");
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(
        text.lines().next().is_some_and(|line| line
            == r#"{"type":"DELETED","object":{"apiVersion":"v1","kind":"Service","metadata":{"name":"db","namespace":"shop"}}}"#),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&path).expect("snapshot"),
        base,
        "appending left FILE alone"
    );
    let (back, _) = read_snapshot(&path).expect("read");
    assert_eq!(back, cluster);

    // A line cut short by a crash ends the changes; what came before it stands.
    append_changes(
        &path,
        br#"{"type":"MODIFIED","object":{"apiVersion":"v1","kin"#,
    )
    .expect("appended");
    let (back, _) = read_snapshot(&path).expect("read");
    assert_eq!(back, cluster);

    // Written whole again, FILE holds everything and the changes file is gone.
    write_snapshot(&path, &cluster).expect("written");
    assert!(!changes_path(&path).exists());
    let (back, _) = read_snapshot(&path).expect("read");
    assert_eq!(back, cluster);
}

#[tokio::test]
async fn questions_about_the_objects_are_answered_by_the_publishing_task() {
    let config = KubernetesConfig::new(vec!["cluster.local.".parse().expect("zone")], 0, 1);
    let publisher = publisher();
    let store = Arc::clone(publisher.store());
    let status = Arc::new(ApiStatus::new("cluster.local."));
    let watch = ApiWatch::new(
        config,
        store,
        Arc::clone(&status),
        Arc::new(StoreMetrics::new("cluster.local.")),
    );
    let services = |cluster: &Cluster, complete: bool| {
        let mut names: Vec<String> = cluster
            .services
            .values()
            .map(|s| display_key(&s.key))
            .collect();
        names.push(format!("complete={complete}"));
        names
    };
    // Not started: nothing to ask.
    assert_eq!(
        watch.inspect(services).await.expect_err("no answer"),
        InspectError::NotStarted
    );
    let (tx, rx) = mpsc::unbounded_channel();
    let (inquiries, questions) = mpsc::channel(INQUIRIES);
    *watch.inquiries.lock().expect("lock") = Some(inquiries);
    let task = tokio::spawn(
        WatchTask {
            status: Arc::clone(&status),
            snapshot: None,
        }
        .run(
            WatchState::new(vec![Kind::Service], publisher),
            rx,
            questions,
            watch.stop.clone(),
        ),
    );
    // A listing under way: the objects so far, not a whole state.
    tx.send(Change::Init(Kind::Service)).expect("send");
    tx.send(Change::Upsert(service("shop", "web")))
        .expect("send");
    let answer = loop {
        let answer = watch.inspect(services).await.expect("answered");
        if answer.len() > 1 {
            break answer;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(answer, ["shop/web", "complete=false"]);
    tx.send(Change::InitDone(Kind::Service)).expect("send");
    let answer = loop {
        let answer = watch.inspect(services).await.expect("answered");
        if answer.last().is_some_and(|last| last == "complete=true") {
            break answer;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(answer, ["shop/web", "complete=true"]);
    // Stopped: said so.
    watch.stop.cancel();
    task.await.expect("task");
    assert_eq!(
        watch.inspect(services).await.expect_err("no answer"),
        InspectError::Stopped
    );
}

#[test]
fn requests_are_told_apart_by_the_resource_of_their_path() {
    for (path, resource) in [
        ("/api/v1/services", Some(Kind::Service)),
        ("/api/v1/namespaces/shop/services", Some(Kind::Service)),
        ("/api/v1/namespaces", Some(Kind::Namespace)),
        (
            "/apis/discovery.k8s.io/v1/endpointslices",
            Some(Kind::EndpointSlice),
        ),
        (
            "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/a/serviceimports",
            Some(Kind::ServiceImport),
        ),
        ("/api/v1/namespaces/shop", None),
        ("/version", None),
    ] {
        assert_eq!(kind_of_path(path), resource, "{path}");
    }
}

#[test]
fn a_refused_resource_stays_failing_while_the_others_answer() {
    let status = ApiStatus::new("cluster.local.");
    let now = SystemTime::now();
    status.answered(403, Some(Kind::EndpointSlice));
    status.watch_failed(Kind::EndpointSlice, "forbidden to watch endpointslices");
    status.answered(200, Some(Kind::Service));
    let notes = status.notes(now);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("failing for endpointslices") && n.contains("forbidden to watch")),
        "{notes:?}"
    );
    // No answer at all is every resource's failure, and any answer ends it.
    status.unreachable("connection refused");
    status.answered(200, Some(Kind::Service));
    let notes = status.notes(now);
    assert!(
        !notes.iter().any(|n| n.contains("connection refused")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("failing for endpointslices")),
        "{notes:?}"
    );
    status.answered(200, Some(Kind::EndpointSlice));
    assert_eq!(status.state().failing.len(), 0);
}
