//! Tests of `api`.

use std::path::Path;
use std::time::{Duration, SystemTime};

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

fn names(watched: &Watched) -> Vec<String> {
    watched
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
    let mut watched = Watched::new(vec![Resource::Namespaces, Resource::Services], publisher());
    assert!(!watched.complete());
    watched.apply(Change::Init(Resource::Namespaces), &status);
    watched.apply(Change::Upsert(namespace("shop")), &status);
    watched.apply(Change::InitDone(Resource::Namespaces), &status);
    assert!(!watched.complete(), "services not listed yet");
    watched.apply(Change::Init(Resource::Services), &status);
    watched.apply(Change::Upsert(service("shop", "web")), &status);
    assert!(!watched.complete(), "services mid-list");
    watched.apply(Change::InitDone(Resource::Services), &status);
    assert!(watched.complete());
    assert_eq!(names(&watched), ["shop/web"]);
}

#[test]
fn a_relist_updates_in_place_and_removes_what_it_did_not_see() {
    let status = ApiStatus::new("cluster.local.");
    let mut watched = Watched::new(vec![Resource::Services], publisher());
    for change in [
        Change::Init(Resource::Services),
        Change::Upsert(service("shop", "web")),
        Change::Upsert(service("shop", "db")),
        Change::InitDone(Resource::Services),
    ] {
        watched.apply(change, &status);
    }
    assert_eq!(names(&watched), ["shop/db", "shop/web"]);
    // 410 Gone: the watcher lists again; db was deleted while the watch was down.
    watched.apply(Change::Init(Resource::Services), &status);
    watched.apply(Change::Upsert(service("shop", "web")), &status);
    watched.apply(Change::Upsert(service("shop", "cart")), &status);
    assert!(!watched.complete(), "never publish half a re-list");
    assert_eq!(
        names(&watched),
        ["shop/cart", "shop/db", "shop/web"],
        "in place: no second copy"
    );
    watched.apply(Change::InitDone(Resource::Services), &status);
    assert!(watched.complete());
    assert_eq!(names(&watched), ["shop/cart", "shop/web"]);
    assert_eq!(status.state().relists.get("services"), Some(&1));
}

#[test]
fn a_relist_after_the_first_sync_is_published_as_an_update_not_a_whole_build() {
    let status = ApiStatus::new("cluster.local.");
    let mut watched = Watched::new(vec![Resource::Namespaces, Resource::Services], publisher());
    for change in [
        Change::Init(Resource::Namespaces),
        Change::Upsert(namespace("shop")),
        Change::InitDone(Resource::Namespaces),
        Change::Init(Resource::Services),
        Change::Upsert(service("shop", "web")),
        Change::Upsert(service("shop", "db")),
        Change::InitDone(Resource::Services),
    ] {
        watched.apply(change, &status);
    }
    let first = watched
        .publisher
        .publish(SystemTime::now())
        .expect("first sync");
    assert!(first.whole);
    // 410 Gone: the services are listed again; db went and cart came while the watch was
    // down, web is as it was. Meanwhile a namespace's watch reports one added and deleted.
    for change in [
        Change::Init(Resource::Services),
        Change::Upsert(service("shop", "web")),
        Change::Upsert(namespace("gone-soon")),
        Change::Upsert(service("shop", "cart")),
        Change::Delete(Resource::Namespaces, ObjectKey::new("", "gone-soon")),
    ] {
        watched.apply(change, &status);
    }
    assert!(!watched.complete(), "never publish half a re-list");
    assert_eq!(names(&watched), ["shop/db", "shop/web"], "served as it was");
    watched.apply(Change::InitDone(Resource::Services), &status);
    assert!(watched.complete());
    let published = watched
        .publisher
        .publish(SystemTime::now())
        .expect("changed");
    assert!(!published.whole, "a diff against what is held");
    assert_eq!(names(&watched), ["shop/cart", "shop/web"]);
    assert!(
        !watched
            .publisher
            .cluster()
            .namespaces
            .contains_key("gone-soon")
    );
    let store = watched.publisher.store().load();
    let lookup = |name: &str| {
        let wire = crate::zone::name::WireName::from_dotted(name).expect("name");
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
        Change::Init(Resource::Services),
        Change::Upsert(service("shop", "web")),
        Change::Upsert(service("shop", "cart")),
        Change::InitDone(Resource::Services),
    ] {
        watched.apply(change, &status);
    }
    assert!(watched.publisher.publish(SystemTime::now()).is_none());
    assert_eq!(status.state().relists.get("services"), Some(&2));
}

#[test]
fn deletes_and_failures() {
    let status = ApiStatus::new("cluster.local.");
    let mut watched = Watched::new(vec![Resource::Services], publisher());
    watched.apply(Change::Init(Resource::Services), &status);
    watched.apply(Change::InitDone(Resource::Services), &status);
    assert!(watched.apply(Change::Upsert(service("shop", "web")), &status));
    assert!(watched.apply(
        Change::Delete(Resource::Services, ObjectKey::new("shop", "web")),
        &status
    ));
    assert!(!watched.apply(
        Change::Delete(Resource::Services, ObjectKey::new("shop", "web")),
        &status
    ));
    assert!(!watched.apply(Change::Failed(Resource::Services, "boom".into()), &status));
    assert_eq!(status.state().watch_errors.get("services"), Some(&1));
    assert!(watched.complete(), "a failure keeps the last state");
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
    status.answered(200, Some(Resource::Services));
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
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
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
        Publishing {
            status: Arc::clone(&status),
            snapshot: None,
        }
        .run(
            Watched::new(vec![Resource::Services], publisher),
            rx,
            questions,
            watch.stop.clone(),
        ),
    );
    // A listing under way: the objects so far, not a whole state.
    tx.send(Change::Init(Resource::Services)).expect("send");
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
    tx.send(Change::InitDone(Resource::Services)).expect("send");
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
        ("/api/v1/services", Some(Resource::Services)),
        ("/api/v1/namespaces/shop/services", Some(Resource::Services)),
        ("/api/v1/namespaces", Some(Resource::Namespaces)),
        (
            "/apis/discovery.k8s.io/v1/endpointslices",
            Some(Resource::EndpointSlices),
        ),
        (
            "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/a/serviceimports",
            Some(Resource::ServiceImports),
        ),
        ("/api/v1/namespaces/shop", None),
        ("/version", None),
    ] {
        assert_eq!(Resource::of_path(path), resource, "{path}");
    }
}

#[test]
fn a_refused_resource_stays_failing_while_the_others_answer() {
    let status = ApiStatus::new("cluster.local.");
    let now = SystemTime::now();
    status.answered(403, Some(Resource::EndpointSlices));
    status.watch_failed(
        Resource::EndpointSlices,
        "forbidden to watch endpointslices",
    );
    status.answered(200, Some(Resource::Services));
    let notes = status.notes(now);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("failing for endpointslices") && n.contains("forbidden to watch")),
        "{notes:?}"
    );
    // No answer at all is every resource's failure, and any answer ends it.
    status.unreachable("connection refused");
    status.answered(200, Some(Resource::Services));
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
    status.answered(200, Some(Resource::EndpointSlices));
    assert_eq!(status.state().failing.len(), 0);
}
