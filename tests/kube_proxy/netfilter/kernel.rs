//! `proxy trace` against the kernel: each ruleset of a table is loaded into a network
//! namespace that stands for a node (`topology`), real connections are sent through it from a
//! client outside and from the node itself (`probes`: every ClusterIP, NodePort, external IP
//! and load-balancer IP of the ruleset's objects), and what the kernel did with each (the
//! conntrack entry's DNAT and SNAT, or the sender's error, or silence) must be what
//! `proxy trace` says, with each endpoint's share of many connections where a Service has
//! several (`compare`).
//!
//! The table is kube-proxy's own dumps in the repository and our renders of every fixture
//! in both modes. A new dump is one [`DUMPS`] entry: the file, its form, the objects it was
//! made for and the node's address.

mod compare;
mod probes;
mod topology;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::cli::ok;
use crate::common::netns::{self, Conn, parse_event};
use crate::common::root;
use compare::Trace;
use topology::{Format, Kernel, Spec, Topology};

/// Rulesets run at once. Most of a run is waiting (for processes to start, for silence to
/// last out a probe's timeout), so three share two cores well.
const WORKERS: usize = 3;

/// A ruleset file kept in the repository, and what it was made for.
struct Dump {
    /// The file, from the repository root.
    ruleset: &'static str,
    format: Format,
    /// The objects the node's kube-proxy had (`kubectl get -o json`).
    objects: &'static str,
    /// The node's address: NodePorts are probed there.
    node_ip: Ipv4Addr,
}

/// kube-proxy's rules as nodes printed them.
const DUMPS: &[Dump] = &[
    // A kind node's `iptables-save -t nat` for shop.json: kind-control-plane (its
    // NodePort has no local endpoint; node.nft, the same node, names 172.18.0.2).
    Dump {
        ruleset: "fixtures/node-nat.txt",
        format: Format::Iptables,
        objects: "fixtures/shop.json",
        node_ip: Ipv4Addr::new(172, 18, 0, 2),
    },
    // The same node in nftables mode: `nft list table ip kube-proxy`.
    Dump {
        ruleset: "fixtures/node.nft",
        format: Format::Nft,
        objects: "fixtures/shop.json",
        node_ip: Ipv4Addr::new(172, 18, 0, 2),
    },
    // kind-worker's rules for shop.json in the order kube-proxy writes them for
    // iptables-restore (`-m tcp -p tcp -d IP --dport 80`, addresses without /32).
    Dump {
        ruleset: "tests/fixtures/kube-proxy-restore-shop.txt",
        format: Format::Iptables,
        objects: "fixtures/shop.json",
        node_ip: Ipv4Addr::new(172, 18, 0, 3),
    },
    // The real kube-proxy v1.36.3 on kwok-node-0 (10.0.0.10), tests/fixtures/kube-proxy/
    // README.md; its `iptables-restore` input holds no jump from the built-in chains, which
    // kube-proxy installs apart (the harness does as it does; trace assumes them).
    kube_proxy(
        "tests/fixtures/kube-proxy/iptables-save.txt",
        Format::Iptables,
    ),
    kube_proxy(
        "tests/fixtures/kube-proxy/iptables-restore.txt",
        Format::IptablesRestore,
    ),
    kube_proxy("tests/fixtures/kube-proxy/nft-list.nft", Format::Nft),
    kube_proxy("tests/fixtures/kube-proxy/nft-transaction.nft", Format::Nft),
];

/// A dump of the real kube-proxy on kwok-node-0, for tests/fixtures/kube-proxy/objects.json.
const fn kube_proxy(ruleset: &'static str, format: Format) -> Dump {
    Dump {
        ruleset,
        format,
        objects: "tests/fixtures/kube-proxy/objects.json",
        node_ip: Ipv4Addr::new(10, 0, 0, 10),
    }
}

/// A fixture rendered for the table, for the node `node` at `node_ip`.
struct Fixture {
    objects: &'static str,
    /// `--node`: its endpoints are the local ones (externalTrafficPolicy Local).
    node: Option<&'static str>,
    node_ip: Ipv4Addr,
}

/// kind-worker's address in the fixtures (its pods' hostIP); fixtures without nodes are
/// probed at the same address.
const KIND_WORKER: Ipv4Addr = Ipv4Addr::new(172, 18, 0, 3);

/// Every fixture with Services that have ports; those whose pods or endpoints are on nodes
/// are rendered for kind-worker.
const FIXTURES: &[Fixture] = &[
    fixture("fixtures/shop.json", Some("kind-worker")),
    fixture("fixtures/proxy.json", Some("kind-worker")),
    fixture("fixtures/dualstack.json", Some("kind-worker")),
    fixture("fixtures/external.json", None),
    fixture("fixtures/zonal.json", None),
    fixture("fixtures/rules.json", Some("kind-worker")),
    fixture("fixtures/mcs.json", None),
];

/// The [`Fixture`] of `objects` for `node`, at kind-worker's address.
const fn fixture(objects: &'static str, node: Option<&'static str>) -> Fixture {
    Fixture {
        objects,
        node,
        node_ip: KIND_WORKER,
    }
}

/// `proxy render`'s modes and forms, with the arguments that choose them.
const RENDER_MODES: &[(&str, Format, &[&str])] = &[
    ("iptables", Format::Iptables, &["--mode", "iptables"]),
    (
        "nft-transaction",
        Format::Nft,
        &["--mode", "nftables", "--nft-format", "transaction"],
    ),
    (
        "nft-list",
        Format::Nft,
        &["--mode", "nftables", "--nft-format", "list"],
    ),
    (
        "nft-list-endpoint-chains",
        Format::Nft,
        &[
            "--mode",
            "nftables",
            "--nft-format",
            "list",
            "--nft-layout",
            "endpoint-chains",
        ],
    ),
];

/// Disagreements that cannot be helped, as (case, probe label) with the reason. Empty: every
/// probe of every ruleset agrees.
const KNOWN: &[(&str, &str)] = &[];

/// One ruleset to run: its file, its form, its objects and node.
struct Case {
    name: String,
    ruleset: PathBuf,
    format: Format,
    objects: PathBuf,
    node_ip: Ipv4Addr,
}

/// One probe's line in the summary.
struct Row {
    label: String,
    /// trace's verdict (`dnat`, `reject`, `drop`, `no-match`).
    verdict: String,
    trace: String,
    kernel: String,
    agreed: bool,
    /// Connections sent for it.
    connections: usize,
}

/// What one ruleset's run found: its rows, or why it could not run.
struct Report {
    case: String,
    rows: Result<Vec<Row>, String>,
}

#[test]
fn kube_proxy_dumps_trace_as_the_kernel_runs_them() {
    if netns::skip("kube_proxy_dumps_trace_as_the_kernel_runs_them") {
        return;
    }
    let cases: Vec<Case> = DUMPS
        .iter()
        .map(|d| Case {
            name: d.ruleset.to_owned(),
            ruleset: root().join(d.ruleset),
            format: d.format,
            objects: root().join(d.objects),
            node_ip: d.node_ip,
        })
        .collect();
    check("kube-proxy's dumps", &cases);
}

#[test]
fn renders_trace_as_the_kernel_runs_them() {
    if netns::skip("renders_trace_as_the_kernel_runs_them") {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut cases = Vec::new();
    for fixture in FIXTURES {
        for (mode, format, args) in RENDER_MODES {
            cases.push(render(fixture, mode, *format, args, dir.path()));
        }
    }
    check("renders", &cases);
}

#[test]
fn conntrack_events_are_read_with_both_tuples() {
    let line = "tcp 172.18.0.100 10.96.0.20 41001 80 10.244.2.7 169.254.1.1 8080 40705";
    let entry = parse_event(line).expect("an entry");
    assert_eq!(entry.dnat(), Some(("10.244.2.7".parse().unwrap(), 8080)));
    assert!(entry.snat());
    let udp = "udp 10.0.0.1 10.0.0.2 1 2 10.0.0.2 10.0.0.1 2 1";
    let entry = parse_event(udp).expect("an entry");
    assert_eq!((entry.dnat(), entry.snat()), (None, false));
    assert!(parse_event("lost 105").is_none());
}

/// `proxy render` of `fixture` in `mode`, written under `dir`, as a case.
fn render(fixture: &Fixture, mode: &str, format: Format, args: &[&str], dir: &Path) -> Case {
    let objects = fixture.objects;
    let mut argv = vec!["proxy", "render", "--objects", objects];
    argv.extend(["--cluster-cidr", "10.244.0.0/16"]);
    argv.extend_from_slice(args);
    if let Some(node) = fixture.node {
        argv.extend(["--node", node]);
    }
    let stem = Path::new(objects).file_stem().and_then(|s| s.to_str());
    let name = format!("{} {mode}", stem.expect("a fixture's name"));
    let ruleset = dir.join(name.replace(' ', "-"));
    std::fs::write(&ruleset, ok(&argv)).expect("write the render");
    Case {
        name: format!("{name} (render {})", argv[2..].join(" ")),
        ruleset,
        format,
        objects: root().join(objects),
        node_ip: fixture.node_ip,
    }
}

/// Runs every case, prints the summary, and fails on a disagreement not in [`KNOWN`] or a
/// ruleset that did not load.
fn check(what: &str, cases: &[Case]) {
    let started = std::time::Instant::now();
    let reports = run_all(cases);
    eprintln!(
        "{what}: {} rulesets in {:.1?}",
        cases.len(),
        started.elapsed()
    );
    eprintln!("{}", summary(what, &reports));
    let mut failures = Vec::new();
    for report in &reports {
        match &report.rows {
            Err(e) => failures.push(format!("{}: did not load: {e}", report.case)),
            Ok(rows) => failures.extend(rows.iter().filter(|r| !r.agreed).filter_map(|r| {
                let known = KNOWN.contains(&(report.case.as_str(), r.label.as_str()));
                (!known).then(|| format!("{}: {}", report.case, r.label))
            })),
        }
    }
    assert!(
        failures.is_empty(),
        "trace disagrees with the kernel:\n{}",
        failures.join("\n")
    );
}

/// Runs the cases on [`WORKERS`] threads (each case has namespaces of its own): their
/// reports, in the cases' order.
fn run_all(cases: &[Case]) -> Vec<Report> {
    let next = AtomicUsize::new(0);
    let reports = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..WORKERS.min(cases.len()) {
            s.spawn(|| {
                while let Some(case) = cases.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let report = run_case(case);
                    reports.lock().expect("the reports").push(report);
                }
            });
        }
    });
    let mut reports = reports.into_inner().expect("the reports");
    let position = |r: &Report| cases.iter().position(|c| c.name == r.case);
    reports.sort_by_key(position);
    reports
}

/// The summary table: per ruleset, probes checked (by trace's verdict), agreed and
/// disagreed, then each disagreement with both outcomes.
fn summary(what: &str, reports: &[Report]) -> String {
    let mut out = format!("trace against the kernel, {what}:\n");
    let mut totals = [0usize; 4];
    for report in reports {
        let Ok(rows) = &report.rows else {
            out += &format!("  {}: DID NOT LOAD\n", report.case);
            continue;
        };
        let agreed = rows.iter().filter(|r| r.agreed).count();
        let connections: usize = rows.iter().map(|r| r.connections).sum();
        let counts = [rows.len(), agreed, rows.len() - agreed, connections];
        out += &format!(
            "  {}: {} probes ({}; {connections} connections), {} agree, {} disagree\n",
            report.case,
            counts[0],
            verdicts(rows),
            counts[1],
            counts[2]
        );
        for (total, n) in totals.iter_mut().zip(counts) {
            *total += n;
        }
        for row in rows.iter().filter(|r| !r.agreed) {
            out += &format!(
                "    DISAGREE {}\n      trace:  {}\n      kernel: {}\n",
                row.label, row.trace, row.kernel
            );
        }
    }
    out += &format!(
        "  total: {} rulesets, {} probes ({} connections), {} agree, {} disagree",
        reports.len(),
        totals[0],
        totals[3],
        totals[1],
        totals[2]
    );
    out
}

/// How many probes trace gave each verdict, as `dnat 12, reject 2`.
fn verdicts(rows: &[Row]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for row in rows {
        match counts.iter_mut().find(|(v, _)| *v == row.verdict) {
            Some((_, n)) => *n += 1,
            None => counts.push((&row.verdict, 1)),
        }
    }
    counts.sort();
    let parts: Vec<String> = counts.iter().map(|(v, n)| format!("{v} {n}")).collect();
    parts.join(", ")
}

/// Runs one ruleset: traces every probe, sends its connections, and compares.
fn run_case(case: &Case) -> Report {
    let octet = if case.node_ip.octets()[3] == 100 {
        101
    } else {
        100
    };
    let [a, b, c, _] = case.node_ip.octets();
    let client_ip = Ipv4Addr::new(a, b, c, octet);
    let plan = probes::plan(&case.objects, case.node_ip, client_ip);
    let traces: Vec<Trace> = plan
        .probes
        .iter()
        .map(|p| compare::trace(&case.ruleset, p, case.node_ip))
        .collect();
    let spec = Spec {
        node_ip: case.node_ip,
        client_ip,
        extra_sources: plan.extra_sources.clone(),
        endpoints: plan.endpoints.clone(),
        route_localnet: matches!(case.format, Format::Iptables | Format::IptablesRestore),
    };
    let rows = Topology::build(spec, &case.ruleset, case.format)
        .map(|mut topology| probe_all(&mut topology, &plan.probes, &traces));
    Report {
        case: case.name.clone(),
        rows,
    }
}

/// Sends every probe's connections and makes the rows. Probes of one connection go first,
/// so that those that meet silence (and keep a batch waiting) share the first batch.
fn probe_all(topology: &mut Topology, probes: &[probes::Probe], traces: &[Trace]) -> Vec<Row> {
    let (mut from_client, mut from_node) = (Vec::new(), Vec::new());
    // Per probe: whether it is sent from the node, and where its connections start.
    let mut spans = vec![(false, 0, 0); probes.len()];
    let mut order: Vec<usize> = (0..probes.len()).collect();
    order.sort_by_key(|&i| traces[i].connections(&probes[i]));
    for i in order {
        let (probe, n) = (&probes[i], traces[i].connections(&probes[i]));
        let list = if probe.local {
            &mut from_node
        } else {
            &mut from_client
        };
        spans[i] = (probe.local, list.len(), n);
        let conn = Conn {
            proto: probe.proto,
            src: probe.src.into(),
            sport: 0,
            dst: probe.dst.into(),
            dport: probe.dport,
        };
        list.extend(std::iter::repeat_n(conn, n));
    }
    let (client, node) = topology.run(&from_client, &from_node);
    let rows = probes.iter().zip(traces).zip(spans);
    rows.map(|((probe, trace), (local, start, n))| {
        let outcomes: &[Kernel] = if local { &node } else { &client };
        let verdict = compare::judge(trace, &outcomes[start..start + n]);
        let agreed = verdict.is_ok();
        Row {
            label: probe.label.clone(),
            verdict: trace.verdict.clone(),
            trace: trace.describe(),
            kernel: verdict.unwrap_or_else(|e| e),
            agreed,
            connections: n,
        }
    })
    .collect()
}
