//! The Markdown report, rendered from a run's JSON ([`Run`]): one table per group of figures,
//! CoreDNS and clusterdns side by side with the ratio clusterdns / CoreDNS.

use std::fmt::Write as _;

use anyhow::Result;

use super::parse::{Percentiles, sample_percentiles};
use super::{Load, Measured, Ratios, Run, Which};
use crate::bench::{fixed, ratio, stamp_of};

/// kB as MB, to one place.
fn mb(kb: u64) -> String {
    format!("{:.1}", kb as f64 / 1024.0)
}

/// A ratio to two places, a dash for none.
fn times(value: Option<f64>) -> String {
    fixed(value, 2)
}

/// The line saying how a scale was loaded.
pub fn loading(services: u32, load: &Load) -> String {
    let l = &load.lines;
    let mut text = format!(
        "{services} Services and {} pods created and running in {:.0} s ({:.0} objects/s); the EndpointSlice controller writing {} endpoints took until {:.0} s",
        l.pods,
        l.created_s,
        (f64::from(services) + l.pods as f64) / l.created_s,
        l.endpoints,
        l.loaded_s
    );
    if let Some(peak) = &load.peak {
        let _ = write!(
            text,
            " (peak RSS: kube-apiserver {} MB, etcd {} MB; etcd's data {} MB)",
            mb(peak.apiserver_hwm_kb),
            mb(peak.etcd_hwm_kb),
            peak.etcd_data_mb
        );
    }
    text
}

/// The label of a scale's rows: Services / pods in the cluster's dump.
fn label(m: &Measured) -> String {
    format!("{} / {}", m.total_services, m.total_pods)
}

/// `p50 / p99` of a column, each to two places.
fn pair(p: &Percentiles) -> String {
    format!("{} / {}", fixed(p.p50, 2), fixed(p.p99, 2))
}

/// The ratios of two columns' p50 and p99 (none where CoreDNS's is not above zero).
fn pair_ratio(c: &Percentiles, d: &Percentiles) -> String {
    let r = |a: Option<f64>, b: Option<f64>| times(a.zip(b).and_then(|(a, b)| ratio(a, b)));
    format!("{} / {}", r(d.p50, c.p50), r(d.p99, c.p99))
}

/// The rows of each table, over every scale.
#[derive(Default)]
struct Tables {
    qps: String,
    fixed: String,
    memory: String,
    ready: String,
    latency: String,
    churn: String,
    api: String,
    checks: Vec<String>,
}

impl Tables {
    fn add(&mut self, run: &Run, m: &Measured) {
        let inputs = &run.inputs;
        let label = label(m);
        let ratios = Ratios::of(m, inputs.replicas);
        let group = |which: Which, pods: &str, n: u32| m.group(which, pods, n);
        let lookup = |list: &[(String, Option<f64>)], mode: &str| {
            list.iter().find(|(m, _)| m == mode).and_then(|(_, r)| *r)
        };
        for mode in ["insecure", "verified"] {
            let (Some(c), Some(d)) = (
                group(Which::Coredns, mode, 1),
                group(Which::Clusterdns, mode, 1),
            ) else {
                continue;
            };
            let _ = writeln!(
                self.ready,
                "| {label} | {mode} | {:.2} | {:.2} | {} |",
                c.ready_s,
                d.ready_s,
                times(lookup(&ratios.ready, mode))
            );
            let _ = writeln!(
                self.memory,
                "| {label} | after sync, pods {mode} | {} | {} | {} |",
                mb(c.rss_sync_kb),
                mb(d.rss_sync_kb),
                times(lookup(&ratios.rss_sync, mode))
            );
            let _ = writeln!(
                self.memory,
                "| {label} | steady ({} s later), pods {mode} | {} | {} | {} |",
                inputs.steady_s,
                mb(c.rss_steady_kb),
                mb(d.rss_steady_kb),
                times(lookup(&ratios.rss_steady, mode))
            );
        }
        for api in &ratios.api {
            let n = api.replicas;
            for which in Which::BOTH {
                let Some(g) = group(which, "insecure", n) else {
                    continue;
                };
                let _ = writeln!(
                    self.api,
                    "| {label} | {n} | {} | {} / {} / {} | {} / {} | {:.2} | {:.2} | {} |",
                    which.as_str(),
                    g.requests.lists,
                    g.requests.watches,
                    g.requests.others,
                    mb(g.received_bytes / 1024),
                    mb(g.sent_bytes / 1024),
                    g.api_cpu_sync_s,
                    g.api_cpu_steady_s,
                    mb(g.api_rss_growth_kb)
                );
            }
            let _ = writeln!(
                self.api,
                "| {label} | {n} | clusterdns / CoreDNS | {} | {} | {} | {} | {} |",
                times(api.requests),
                times(api.received),
                times(api.api_cpu_sync),
                times(api.api_cpu_steady),
                times(api.api_rss_growth)
            );
        }

        let (c, d) = (&m.dnsperf.coredns, &m.dnsperf.clusterdns);
        for (transport, cr, dr, r) in [
            ("UDP", &c.udp, &d.udp, ratios.queries_per_cpu_s_udp),
            ("TCP", &c.tcp, &d.tcp, ratios.queries_per_cpu_s_tcp),
        ] {
            let _ = writeln!(
                self.qps,
                "| {label} | {transport} | {:.0} | {:.0} | {} | {} | {} |",
                cr.qps,
                dr.qps,
                fixed(cr.queries_per_cpu_s(), 0),
                fixed(dr.queries_per_cpu_s(), 0),
                times(r)
            );
        }
        let duration = f64::from(inputs.duration_s.max(1));
        let millicores = |cpu_s: f64| cpu_s / duration * 1000.0;
        let per_kqps =
            |r: &super::DnsperfRun| ratio(millicores(r.cpu_s), r.qps).map(|v| v * 1000.0);
        let _ = writeln!(
            self.fixed,
            "| {label} | {:.0} ({} lost) | {:.0} ({} lost) | {:.0} | {:.0} | {} | {} | {} |",
            c.fixed.qps,
            c.fixed.lost,
            d.fixed.qps,
            d.fixed.lost,
            millicores(c.fixed.cpu_s),
            millicores(d.fixed.cpu_s),
            fixed(per_kqps(&c.fixed), 1),
            fixed(per_kqps(&d.fixed), 1),
            times(ratios.millicores_per_kqps)
        );

        let relist = &m.relist;
        let (cr, dr) = (&relist.coredns.requests, &relist.clusterdns.requests);
        let _ = writeln!(
            self.memory,
            "| {label} | peak during a re-list (API server restarted; after it lists / watches / of them with the whole state: CoreDNS {} / {} / {}, clusterdns {} / {} / {}) | {} | {} | {} |",
            cr.lists,
            cr.watches,
            cr.initial,
            dr.lists,
            dr.watches,
            dr.initial,
            mb(relist.coredns.hwm_kb),
            mb(relist.clusterdns.hwm_kb),
            times(ratios.rss_relist)
        );

        for phase in &m.latency {
            let p = &phase.phase;
            let n = phase.new_service.len();
            let c = sample_percentiles(phase.new_service.iter().map(|s| s.coredns_ms));
            let d = sample_percentiles(phase.new_service.iter().map(|s| s.clusterdns_ms));
            let _ = writeln!(
                self.latency,
                "| {label} | new Service, {p} | {} | {} | {} | {n} ({} / {} timed out) |",
                pair(&c),
                pair(&d),
                pair_ratio(&c, &d),
                c.timeouts,
                d.timeouts
            );
            let n = phase.scale_up.len();
            let c = sample_percentiles(phase.scale_up.iter().map(|s| s.coredns_ms));
            let d = sample_percentiles(phase.scale_up.iter().map(|s| s.clusterdns_ms));
            let _ = writeln!(
                self.latency,
                "| {label} | Deployment scaled up, {p} | {} | {} | {} | {n} ({} / {} timed out) |",
                pair(&c),
                pair(&d),
                pair_ratio(&c, &d),
                c.timeouts,
                d.timeouts
            );
            let c = sample_percentiles(phase.scale_up.iter().map(|s| s.coredns_from_slice_ms));
            let d = sample_percentiles(phase.scale_up.iter().map(|s| s.clusterdns_from_slice_ms));
            let _ = writeln!(
                self.latency,
                "| {label} | Deployment scaled up, {p}, from the slice event | {} | {} | {} | {n} |",
                pair(&c),
                pair(&d),
                pair_ratio(&c, &d)
            );
        }

        let churn = &m.churn;
        let _ = writeln!(
            self.churn,
            "| {label} | {:.1} | {:.1} | {:.1} | {} |",
            churn.scalings_per_s(inputs.churn_deployments),
            churn.millicores(Which::Coredns),
            churn.millicores(Which::Clusterdns),
            times(ratios.churn_cpu)
        );

        let check = &m.check;
        let mut line = format!(
            "{label}: {} distinct questions of the query file asked of both with dig; {} with a different rcode or answer RRset",
            check.asked, check.mismatches
        );
        if let Some(first) = &check.first {
            let _ = write!(line, " (the first: {first})");
        }
        self.checks.push(line);
    }
}

/// The report the bench prints and writes as Markdown.
pub fn report(run: &Run) -> Result<String> {
    let stamp = stamp_of(&run.started)?;
    let inputs = &run.inputs;
    let v = &run.versions;
    let mut text = String::new();
    writeln!(
        text,
        "# clusterdns beside CoreDNS, on a local control plane ({stamp})\n"
    )?;
    writeln!(
        text,
        "{}; {} CPUs ({}); {}; {} ({}); {}; {}\n",
        run.machine.kernel,
        run.machine.cpus,
        run.machine.cpu_model,
        v.coredns,
        v.own.clusterdns,
        v.own.commit.as_deref().unwrap_or("an unknown commit"),
        v.kube_apiserver,
        v.dnsperf
    )?;
    writeln!(
        text,
        "Method: cargo xtask cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok). gencluster's Namespaces, Services (with selectors) and Pods ({} per Service, bound to kwok nodes) created through the API server, Pods first, each given its status (Running, Ready, an address) by the loader; the EndpointSlice controller writes the slices. Both servers run kubeadm's Corefile (deploy/configmap.yaml) on loopback, `forward` to a knotd that refuses, each as its own ServiceAccount (kube-system/coredns for CoreDNS, kube-system/clusterdns for clusterdns) bound to ClusterRole system:coredns with a TokenRequest token; clusterdns keeps the ConfigMap's `snapshot` line (SNAPSHOT={}), CoreDNS has none; every start is cold (no snapshot file). Servers pinned to CPU {}, dnsperf to CPU {}. Details: bench/README.md, \"clusterdns beside CoreDNS\".\n",
        inputs.pods_per_service,
        u8::from(inputs.snapshot),
        inputs.server_cpu,
        inputs.client_cpu
    )?;
    for scale in &run.scales {
        writeln!(text, "- Loading: {}.", loading(scale.services, &scale.load))?;
    }
    let mut tables = Tables::default();
    for scale in &run.scales {
        if let Some(m) = &scale.measured {
            tables.add(run, m);
        }
    }
    if inputs.load_only {
        return Ok(text);
    }
    let duration = inputs.duration_s;
    writeln!(text, "\n## Queries per server CPU-second\n")?;
    writeln!(
        text,
        "`dnsperf -T 4 -c 8 -q 200 -l {duration}` (UDP) and `-m tcp -T 4 -c 128 -q 2000` (TCP) after a {} s warm-up, {}-line querymix file from the cluster's dump; completed queries / the server's utime+stime over the run.\n",
        inputs.warmup_s, inputs.queries
    )?;
    text.push_str("| Services / pods | transport | CoreDNS qps | clusterdns qps | CoreDNS queries / CPU s | clusterdns queries / CPU s | clusterdns / CoreDNS |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    text.push_str(&tables.qps);
    writeln!(text, "\n## CPU at a fixed {} qps\n", inputs.fixed_qps)?;
    writeln!(
        text,
        "`dnsperf -Q {}` over UDP for {duration} s; the server's CPU over the run. A server that cannot carry the rate is saturated there: the ratio is per 1,000 achieved qps.\n",
        inputs.fixed_qps
    )?;
    text.push_str("| Services / pods | CoreDNS achieved qps | clusterdns achieved qps | CoreDNS millicores | clusterdns millicores | CoreDNS millicores / 1,000 qps | clusterdns millicores / 1,000 qps | clusterdns / CoreDNS |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    text.push_str(&tables.fixed);
    writeln!(text, "\n## Memory (RSS, MB)\n")?;
    writeln!(
        text,
        "Each started alone (after sync: at /ready 200; steady: {} s later). The re-list peak: VmHWM reset (clear_refs 5) before the API server restart, read once both have listed again and 5 s more.\n",
        inputs.steady_s
    )?;
    text.push_str("| Services / pods | when | CoreDNS | clusterdns | clusterdns / CoreDNS |\n| --- | --- | ---: | ---: | ---: |\n");
    text.push_str(&tables.memory);
    writeln!(text, "\n## Start to ready\n")?;
    writeln!(
        text,
        "Seconds from the exec to /ready 200 on the ready plugin's port, each started alone, cold.\n"
    )?;
    text.push_str("| Services / pods | pods | CoreDNS s | clusterdns s | clusterdns / CoreDNS |\n| --- | --- | ---: | ---: | ---: |\n");
    text.push_str(&tables.ready);
    writeln!(text, "\n## Programming latency (ms, p50 / p99)\n")?;
    writeln!(
        text,
        "Both running, unpinned (CPUs 0-1). The prober writes through the API server itself and polls both servers over UDP about every 0.5 ms. New Service: from the POST's response (the write committed) to the first answer with its ClusterIP. Deployment scaled up (a headless Service, 1 -> 2 replicas, back to 1 between samples): from the scale PATCH's response to the first A RRset with the new address (the controllers' chain included, the same for both), and from the moment a watch of the prober's own received the slice with it (what the server itself adds). Churn: {} headless Deployments scaled 1 <-> {} every {} s by kubectl.\n",
        inputs.churn_deployments, inputs.churn_high, inputs.churn_period_s
    )?;
    text.push_str("| Services / pods | case | CoreDNS | clusterdns | clusterdns / CoreDNS | samples |\n| --- | --- | ---: | ---: | ---: | ---: |\n");
    text.push_str(&tables.latency);
    writeln!(text, "\n## Server CPU during churn\n")?;
    writeln!(
        text,
        "Both running, unpinned, no queries; utime+stime over {} s of churn.\n",
        inputs.churn_window_s
    )?;
    text.push_str("| Services / pods | scalings / s | CoreDNS millicores | clusterdns millicores | clusterdns / CoreDNS |\n| --- | ---: | ---: | ---: | ---: |\n");
    text.push_str(&tables.churn);
    writeln!(text, "\n## What the replicas cost the API server\n")?;
    writeln!(
        text,
        "Each server's group started alone (1 replica, then {} started together). Requests: the service account's lists / watches / other requests in the audit log from the start to the end of the steady window. Bytes: bytes_received / bytes_sent (ss -ti, TLS included) of the servers' connections to the API server, sampled every 50 ms during the sync and every second after it, the largest reading of each connection, summed over connections and replicas. API server: its heap collected before each group starts (`/debug/pprof/heap?gc=1`), then its CPU seconds from the start to the last /ready 200 (sync) and over the {} s steady window, its RSS growth (peak sampled every 50 ms, against before the start).\n",
        inputs.replicas, inputs.steady_s
    )?;
    text.push_str("| Services / pods | replicas | server | lists / watches / other | received / sent MB | API server CPU s, sync | API server CPU s, steady | API server RSS growth MB |\n| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
    text.push_str(&tables.api);
    writeln!(text, "\n## Answers\n")?;
    for line in &tables.checks {
        writeln!(text, "- {line}")?;
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::bench::common::fixture::{assert_renders, read_back};

    /// A run's JSON as the bench writes it (SCALES=100 DURATION=5 STEADY=5 SAMPLES=10).
    const FIXTURE: &str = include_str!("../../../fixtures/vs-coredns.json");

    /// The fixture, read back as it was written.
    fn fixture() -> Run {
        read_back(FIXTURE)
    }

    #[test]
    fn the_report_is_rendered_from_the_json() {
        assert_eq!(fixture().bench, KIND);
        assert_renders(
            FIXTURE,
            include_str!("../../../fixtures/vs-coredns.md"),
            report,
        );
    }

    #[test]
    fn the_ratios_are_clusterdns_over_coredns() {
        let run = fixture();
        let m = run.scales[0].measured.as_ref().unwrap();
        let r = Ratios::of(m, run.inputs.replicas);
        let c = m.group(Which::Coredns, "insecure", 1).unwrap();
        let d = m.group(Which::Clusterdns, "insecure", 1).unwrap();
        assert_eq!(
            r.ready[0],
            ("insecure".to_owned(), Some(d.ready_s / c.ready_s))
        );
        assert_eq!(
            r.rss_steady[0].1,
            Some(d.rss_steady_kb as f64 / c.rss_steady_kb as f64)
        );
        assert_eq!(
            r.rss_relist,
            Some(m.relist.clusterdns.hwm_kb as f64 / m.relist.coredns.hwm_kb as f64)
        );
        let (dc, dd) = (&m.dnsperf.coredns.udp, &m.dnsperf.clusterdns.udp);
        let qpcs = |r: &DnsperfRun| r.completed as f64 / r.cpu_s;
        assert_eq!(r.queries_per_cpu_s_udp, Some(qpcs(dd) / qpcs(dc)));
        let (fc, fd) = (&m.dnsperf.coredns.fixed, &m.dnsperf.clusterdns.fixed);
        let per_query = |r: &DnsperfRun| r.cpu_s / r.qps;
        let want = per_query(fd) / per_query(fc);
        assert!((r.millicores_per_kqps.unwrap() - want).abs() < 1e-12 * want);
        assert_eq!(
            r.churn_cpu,
            Some(m.churn.cpu_s.clusterdns / m.churn.cpu_s.coredns)
        );
        assert_eq!(r.api.len(), 2);
        assert_eq!(r.api[1].replicas, run.inputs.replicas);
        assert_eq!(
            r.api[0].requests,
            Some(d.requests.total() as f64 / c.requests.total() as f64)
        );
    }

    #[test]
    fn a_missing_or_zero_denominator_is_a_dash() {
        let mut run = fixture();
        let m = run.scales[0].measured.as_mut().unwrap();
        m.churn.cpu_s.coredns = 0.0;
        m.relist.coredns.hwm_kb = 0;
        let r = Ratios::of(m, run.inputs.replicas);
        assert_eq!((r.churn_cpu, r.rss_relist), (None, None));
        let report = report(&run).unwrap();
        let churn_row = report
            .lines()
            .find(|l| l.starts_with("| ") && l.ends_with("| — |") && l.contains("0.0 |"))
            .unwrap_or_default();
        assert!(!churn_row.is_empty(), "{report}");
        // Load only: the loading lines, no tables.
        run.inputs.load_only = true;
        for scale in &mut run.scales {
            scale.measured = None;
        }
        let report = report_of(&run);
        assert!(report.contains("- Loading: 100 Services and "), "{report}");
        assert!(!report.contains("## "), "{report}");
    }

    fn report_of(run: &Run) -> String {
        report(run).unwrap()
    }

    #[test]
    fn the_loading_line_says_how_long_and_with_load_only_the_peaks() {
        let mut load = Load {
            lines: super::super::parse::LoadLines {
                namespaces: 12,
                services: 100,
                pods: 1500,
                failures: 0,
                created_s: 8.0,
                loaded_s: 11.4,
                endpoints: 1500,
            },
            peak: None,
        };
        assert_eq!(
            loading(100, &load),
            "100 Services and 1500 pods created and running in 8 s (200 objects/s); the EndpointSlice controller writing 1500 endpoints took until 11 s"
        );
        load.peak = Some(LoadPeak {
            apiserver_hwm_kb: 1024 * 700,
            etcd_hwm_kb: 1536,
            etcd_data_mb: 80,
        });
        assert!(
            loading(100, &load)
                .ends_with(" (peak RSS: kube-apiserver 700.0 MB, etcd 1.5 MB; etcd's data 80 MB)")
        );
    }
}
