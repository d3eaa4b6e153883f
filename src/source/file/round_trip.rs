//! The objects files written by `model::export` (the snapshot file, `proxy`'s and the
//! tools' listings) read back by this loader as they were: the round trip of every fixture
//! and of every field of the model. (They live here, not in the model's crate, because the
//! loader is this crate's.)

use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

use super::{Loader, parse_objects};
use crate::model::Cluster;
use crate::model::export::write_list;

/// Reads `text` as the objects loader does, without computing slices, so that the
/// round trip compares what was written with what is read back.
fn read(text: &str) -> Cluster {
    let mut loader = Loader::new();
    loader
        .add_text(text, Path::new("test.json"))
        .expect("parses");
    loader.finish_as_given().cluster
}

#[test]
fn every_fixture_survives_the_round_trip() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut checked = 0;
    for entry in std::fs::read_dir(&fixtures).expect("fixtures") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("fixture");
        // The loader's view, with computed slices: the state a snapshot persists.
        let Ok(loaded) = parse_objects(&text, &path) else {
            continue;
        };
        let cluster = loaded.cluster;
        let written = to_list(&cluster, SystemTime::now());
        let back = read(&written.to_string());
        assert_eq!(
            back,
            cluster,
            "{} changed in the round trip",
            path.display()
        );
        checked += 1;
    }
    assert!(checked > 0, "no fixture was checked");
}

#[test]
fn every_field_of_the_model_is_written() {
    let text = r#"{"apiVersion":"v1","kind":"List","items":[
      {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","labels":{"team":"a"}}},
      {"apiVersion":"v1","kind":"Service","metadata":{"name":"lb","namespace":"shop","labels":{"app":"lb"}},
       "spec":{"type":"LoadBalancer","selector":{"app":"lb"},"clusterIPs":["10.96.0.9","fd00::9"],
         "ipFamilies":["IPv4","IPv6"],"externalTrafficPolicy":"Local","internalTrafficPolicy":"Local",
         "sessionAffinity":"ClientIP","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":60}},
         "externalIPs":["192.0.2.1"],"loadBalancerSourceRanges":["203.0.113.0/24"],
         "publishNotReadyAddresses":true,"healthCheckNodePort":32001,
         "ports":[{"name":"http","port":80,"targetPort":"web","nodePort":30080,"protocol":"TCP"}]},
       "status":{"loadBalancer":{"ingress":[{"ip":"198.51.100.7"}]}}},
      {"apiVersion":"v1","kind":"Service","metadata":{"name":"db","namespace":"shop"},
       "spec":{"clusterIP":"None","ports":[{"port":5432,"protocol":"UDP"}]}},
      {"apiVersion":"v1","kind":"Service","metadata":{"name":"ext","namespace":"shop"},
       "spec":{"type":"ExternalName","externalName":"db.example.com"}},
      {"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
       "metadata":{"name":"lb-1","namespace":"shop","labels":{"kubernetes.io/service-name":"lb"},
         "annotations":{"endpoints.kubernetes.io/last-change-trigger-time":"2026-11-29T10:00:00Z"}},
       "addressType":"IPv4",
       "endpoints":[{"addresses":["10.244.1.5"],"conditions":{"ready":false,"serving":true,"terminating":true},
         "hostname":"h","nodeName":"n1","zone":"z","targetRef":{"kind":"Pod","name":"lb-0","namespace":"shop"}}],
       "ports":[{"name":"http","port":8080,"protocol":"TCP"}]},
      {"apiVersion":"v1","kind":"Pod","metadata":{"name":"lb-0","namespace":"shop","labels":{"app":"lb"},
         "deletionTimestamp":"2026-11-29T10:00:00Z"},
       "spec":{"hostname":"h","subdomain":"lb","nodeName":"n1","hostNetwork":true,
         "containers":[{"name":"c","ports":[{"name":"web","containerPort":8080}]}]},
       "status":{"phase":"Running","podIPs":[{"ip":"10.244.1.5"},{"ip":"fd00::5"}],
         "conditions":[{"type":"Ready","status":"True"}]}}
    ]}"#;
    let cluster = read(text);
    assert_eq!(cluster.services.len(), 3);
    let written = to_list(&cluster, SystemTime::now());
    assert_eq!(read(&written.to_string()), cluster);
}

/// `cluster` as [`write_list`] writes it, parsed.
fn to_list(cluster: &Cluster, now: SystemTime) -> Value {
    let mut bytes = Vec::new();
    // Writing into a Vec does not fail, and what is written is JSON.
    match write_list(cluster, now, &mut bytes) {
        Ok(()) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}
