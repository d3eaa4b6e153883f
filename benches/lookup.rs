//! The query path, per query, at 100 and at 10,000 Services; the search-path tracker on
//! it; one update of the zone; and the snapshot built whole.
//!
//! Each query is what `Handler::respond` does for a UDP packet: `wire::Request::parse` →
//! `Snapshot::lookup` → `wire::write_answer` into a reused buffer. `respond/*` benches
//! `Handler::respond` itself (block match, store guard, fallthrough check on top). The
//! clusters are made by the generator of `examples/gencluster.rs` into a temporary
//! directory and loaded exactly as `clusterdns serve --objects` loads them; that setup is
//! outside every measured loop.
//!
//! ```text
//! cargo bench --bench lookup                    # everything (about 4 minutes)
//! cargo bench --bench lookup -- 'query/10000'   # one group
//! ```

#[allow(dead_code)] // shared with the examples, which use other parts of it
mod support;

use std::fs::File;
use std::hint::black_box;
use std::io::{BufWriter, Write as _};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clusterdns::config::KubernetesConfig;
use clusterdns::model::Cluster;
use clusterdns::search_tracker::live::{Tracker, Watch};
use clusterdns::server::{Handler, Outcome, Transport};
use clusterdns::wire::{self, Request};
use clusterdns::zone::{BuildContext, Snapshot};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

use support::queries::{Candidates, Category, Query};
use support::synth::{self, Rng};

/// Questions in the `mix` benches (per-query time = reported time / this).
const MIX_LEN: usize = 1000;

/// One loaded cluster and its questions as UDP payloads.
struct Fixture {
    services: usize,
    /// Keeps the objects file alive for the store's lifetime.
    _dir: tempfile::TempDir,
    handler: Handler,
    snapshot: Arc<Snapshot>,
    cluster: Cluster,
    config: KubernetesConfig,
    /// One question per category.
    singles: Vec<(Category, Query, Vec<u8>)>,
    /// [`MIX_LEN`] questions of the dnsperf mix.
    mix: Vec<Vec<u8>>,
}

fn fixture(services: usize) -> Fixture {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("temporary directory");
    let path: PathBuf = dir.path().join("cluster.json");
    let params = synth::Params::for_services(services);
    params.check().expect("generator parameters");
    let file = File::create(&path).expect("objects file");
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let summary = synth::plan(&params)
        .write_json(&mut out)
        .expect("write objects");
    out.flush().expect("flush objects");
    drop(out);

    let listen = "127.0.0.1:1053".parse().expect("address");
    let config = clusterdns::config::shorthand(std::slice::from_ref(&path), listen)
        .expect("shorthand configuration");
    let blocks = clusterdns::server::load(&config).expect("load objects");
    let kubernetes = blocks
        .iter()
        .find_map(|loaded| loaded.block.kubernetes())
        .expect("a kubernetes block");
    let snapshot = kubernetes.store.snapshot();
    let kconfig = kubernetes.config.clone();
    let handler = Handler::new(
        blocks
            .iter()
            .map(|loaded| Arc::clone(&loaded.block))
            .collect(),
    );
    let cluster = clusterdns::source::file::read_objects(std::slice::from_ref(&path))
        .expect("objects")
        .cluster;

    let candidates = Candidates::new(&cluster, "cluster.local");
    let mut rng = Rng::new(7);
    let singles = Category::ALL
        .into_iter()
        .map(|category| {
            let query = match candidates.of(category) {
                [] => candidates.draw(category, &mut rng),
                // The middle one: not the first Service of the first namespace.
                names => names[names.len() / 2].clone(),
            };
            let packet = packet(&query);
            (category, query, packet)
        })
        .collect();
    let mix = candidates.mix(MIX_LEN, 1).iter().map(packet).collect();
    eprintln!(
        "lookup bench: {services} services, {} pods, {} names, {:.1} MB of JSON; set up in {:.1} s",
        summary.pods,
        snapshot.name_count(),
        summary.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Fixture {
        services,
        _dir: dir,
        handler,
        snapshot,
        cluster,
        config: *kconfig,
        singles,
        mix,
    }
}

/// A query as dnsperf sends it by default: RD set, no EDNS.
fn packet(query: &Query) -> Vec<u8> {
    let qtype: u16 = match query.qtype {
        "A" => 1,
        "PTR" => 12,
        "AAAA" => 28,
        "SRV" => 33,
        other => panic!("no code for type {other}"),
    };
    let mut out = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in query.name.split('.').filter(|label| !label.is_empty()) {
        out.push(u8::try_from(label.len()).expect("label length"));
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out
}

/// The UDP path of `Handler::respond` without the block match: parse, look up, write.
fn answer(snapshot: &Snapshot, packet: &[u8], out: &mut Vec<u8>) -> usize {
    let Ok(request) = Request::parse(packet) else {
        return 0;
    };
    let question = &request.question;
    if let Some(answer) = snapshot.lookup(question.name(), question.qtype) {
        let zone = &snapshot.zones()[answer.zone];
        wire::write_answer(&request, &answer, zone, request.udp_limit(), false, out);
    }
    out.len()
}

fn rcode(reply: &[u8]) -> u8 {
    reply.get(3).map_or(255, |flags| flags & 0x0f)
}

fn bench_queries(c: &mut Criterion, fixture: &Fixture) {
    let mut out = Vec::with_capacity(4096);
    let client = std::net::SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 5353);
    for (category, query, packet) in &fixture.singles {
        // Sanity: the answer is the one the category promises.
        answer(&fixture.snapshot, packet, &mut out);
        let expected = if *category == Category::NxDomain {
            3
        } else {
            0
        };
        assert_eq!(rcode(&out), expected, "{} {}", query.name, query.qtype);
        assert!(
            *category == Category::NxDomain || out[6..8] != [0, 0],
            "{} {}: no answer",
            query.name,
            query.qtype
        );
    }

    let mut group = c.benchmark_group(format!("query/{}", fixture.services));
    group.throughput(Throughput::Elements(1));
    for (category, query, packet) in &fixture.singles {
        let id = format!("{} ({} {})", slug(*category), query.name, query.qtype);
        group.bench_function(id, |b| {
            b.iter(|| answer(&fixture.snapshot, black_box(packet), &mut out));
        });
    }
    group.throughput(Throughput::Elements(MIX_LEN as u64));
    group.bench_function(format!("mix of {MIX_LEN}"), |b| {
        b.iter(|| {
            for packet in &fixture.mix {
                answer(&fixture.snapshot, black_box(packet), &mut out);
            }
        });
    });
    group.finish();

    let mut group = c.benchmark_group(format!("respond/{}", fixture.services));
    for (category, _, packet) in &fixture.singles {
        group.throughput(Throughput::Elements(1));
        group.bench_function(slug(*category), |b| {
            b.iter(|| {
                let outcome =
                    fixture
                        .handler
                        .respond(black_box(packet), client, Transport::Udp, &mut out);
                matches!(outcome, Outcome::Reply)
            });
        });
    }
    group.throughput(Throughput::Elements(MIX_LEN as u64));
    group.bench_function(format!("mix of {MIX_LEN}"), |b| {
        b.iter(|| {
            for packet in &fixture.mix {
                fixture
                    .handler
                    .respond(black_box(packet), client, Transport::Udp, &mut out);
            }
        });
    });
    group.finish();
}

/// The search-path tracker (on wherever *prometheus* is) over the dnsperf mix: alone, and
/// after each answer as the handler calls it, to set beside `query/N/mix`.
fn bench_tracker(c: &mut Criterion, fixture: &Fixture) {
    let mut out = Vec::with_capacity(4096);
    // Each question as the tracker sees it: its name (read in the packet, as the handler
    // reads it), its type, the answer's rcode.
    let seen: Vec<(&[u8], u16, u16)> = fixture
        .mix
        .iter()
        .map(|packet| {
            let request = Request::parse(packet).expect("a mix question parses");
            answer(&fixture.snapshot, packet, &mut out);
            let question = &request.question;
            let name = &packet[12..12 + question.name().len()];
            assert_eq!(name, question.name(), "the question's name, uncompressed");
            (name, question.qtype, u16::from(rcode(&out)))
        })
        .collect();
    let watch = Watch::new(Arc::new(Tracker::new()), b"\x07cluster\x05local\x00", &[]);
    let client = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut group = c.benchmark_group(format!("tracker/{}", fixture.services));
    group.throughput(Throughput::Elements(MIX_LEN as u64));
    group.bench_function(format!("observe, mix of {MIX_LEN}"), |b| {
        b.iter(|| {
            let now = Instant::now();
            for (name, qtype, rcode) in &seen {
                watch.observe(client, black_box(name), *qtype, *rcode, now);
            }
        });
    });
    group.bench_function(format!("answer and observe, mix of {MIX_LEN}"), |b| {
        b.iter(|| {
            let now = Instant::now();
            for (packet, (name, qtype, _)) in fixture.mix.iter().zip(&seen) {
                answer(&fixture.snapshot, black_box(packet), &mut out);
                let rcode = u16::from(rcode(&out));
                watch.observe(client, name, *qtype, rcode, now);
            }
        });
    });
    group.finish();
}

fn bench_build(c: &mut Criterion, fixture: &Fixture) {
    let ctx = BuildContext {
        local_ips: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        serial: 1,
    };
    let mut group = c.benchmark_group("build");
    if fixture.services >= 1000 {
        // About 7 s a build on the 2-core machine: 10 samples.
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(80));
    }
    group.bench_function(format!("{} services", fixture.services), |b| {
        b.iter_batched(
            || (),
            |()| clusterdns::zone::build(&fixture.cluster, &fixture.config, &ctx),
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

/// One change applied as an update, next to the full build above: an EndpointSlice whose
/// first endpoint turns unready and ready again (two updates an iteration), and a Service
/// added and deleted again.
fn bench_update(c: &mut Criterion, fixture: &Fixture) {
    use clusterdns::model::{Kind, Object};
    use clusterdns::zone::{Change, Incremental};
    let ctx = BuildContext {
        local_ips: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        serial: 1,
    };
    let mut cluster = fixture.cluster.clone();
    let (mut snapshot, mut incremental) = Incremental::build(&cluster, &fixture.config, &ctx);
    let mut group = c.benchmark_group("update");
    let slice = cluster
        .endpoint_slices
        .values()
        .filter(|slice| !slice.endpoints.is_empty())
        .nth(cluster.endpoint_slices.len() / 3)
        .expect("a slice with endpoints")
        .clone();
    // A headless Service with one slice of three endpoints, added: what a Deployment scaling
    // up and down changes (the churn of `cargo xtask bench vs-coredns`), where an update's
    // cost is the update's own, not the Service's names.
    let small = {
        let mut service = cluster
            .services
            .values()
            .find(|service| service.headless && cluster.slices_of(&service.key).next().is_some())
            .expect("a headless Service with a slice")
            .clone();
        let mut slice = cluster
            .slices_of(&service.key)
            .find(|slice| slice.endpoints.len() >= 3)
            .expect("a slice of three endpoints")
            .clone();
        service.key.name = "bench-churn".into();
        slice.key.name = "bench-churn-x7k2p".into();
        slice.service_name = Some("bench-churn".into());
        slice.endpoints.truncate(3);
        let changes = vec![
            Change::Upsert(Box::new(Object::Service(service))),
            Change::Upsert(Box::new(Object::EndpointSlice(slice.clone()))),
        ];
        let (next, _) = incremental.apply(&mut cluster, changes, &snapshot, 1);
        snapshot = next;
        slice
    };
    for (label, slice) in [
        ("slice readiness", slice),
        ("small headless slice readiness", small),
    ] {
        group.bench_function(format!("{} services/{label}", fixture.services), |b| {
            b.iter(|| {
                for ready in [false, true] {
                    let mut changed = slice.clone();
                    changed.endpoints[0].conditions.ready = Some(ready);
                    let change = Change::Upsert(Box::new(Object::EndpointSlice(changed)));
                    let (next, _) = incremental.apply(&mut cluster, vec![change], &snapshot, 1);
                    snapshot = next;
                }
            });
        });
    }
    let mut service = cluster
        .services
        .values()
        .find(|service| !service.headless && !service.cluster_ips.is_empty())
        .expect("a ClusterIP Service")
        .clone();
    service.key.name = "bench-added".into();
    service.cluster_ips = vec!["10.111.0.1".parse().expect("address")];
    let key = service.key.clone();
    group.bench_function(
        format!("{} services/service add+delete", fixture.services),
        |b| {
            b.iter(|| {
                let add = Change::Upsert(Box::new(Object::Service(service.clone())));
                let (next, _) = incremental.apply(&mut cluster, vec![add], &snapshot, 1);
                let delete = Change::Delete(Kind::Service, key.clone());
                let (next, _) = incremental.apply(&mut cluster, vec![delete], &next, 1);
                snapshot = next;
            });
        },
    );
    group.finish();
}

fn slug(category: Category) -> &'static str {
    match category {
        Category::ClusterIp => "clusterip_a",
        Category::Headless => "headless_a",
        Category::Srv => "srv",
        Category::Endpoint => "endpoint_a",
        Category::Ptr => "ptr",
        Category::NxDomain => "nxdomain",
    }
}

fn benches(c: &mut Criterion) {
    for services in [100, 10_000] {
        let fixture = fixture(services);
        bench_queries(c, &fixture);
        bench_tracker(c, &fixture);
        bench_update(c, &fixture);
        bench_build(c, &fixture);
    }
}

criterion_group! {
    name = lookup;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(lookup);
