//! `cargo xtask bench differential`: the differential check at a larger scale
//! (bench/differential.sh until 2026-12-07). clusterdns and the real CoreDNS (v1.14.7, from
//! bench/peers/build.sh) side by side with kubeadm's Corefile on a local control plane, every
//! answer compared: the ignored test `cluster::differential::differential_at_scale`
//! (tests/cluster/differential.rs; the CI test runs the same check on a smaller corpus), run
//! with the sizes asked. Its report goes to bench/out/differential-TIME.md and is printed; the
//! figures in it are parsed into [`Report`], and the run's JSON ([`Run`]) goes beside it.
//!
//! Each round asks the whole corpus once more, each question in the next of its six ways
//! (UDP or TCP, with or without EDNS, DO set or not), idle in each `pods` mode and then during
//! churn. The run fails if any difference is neither fixed nor listed in docs/differences.md.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{Machine, Output, commit, ignored_test, keeps, knob, log, number_after, write_json};

/// The `bench` of this bench's JSON documents.
pub const KIND: &str = "differential";

/// The test the bench runs, its path in tests/main.rs.
pub const TEST: &str = "cluster::differential::differential_at_scale";

/// The knobs, each a flag or the environment variable bench/differential.sh read (in
/// capitals).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_arg("keep", keeps("the test's output")))]
pub struct Options {
    /// Services of every kind the zone answers for [env: SERVICES] [default: 600].
    #[arg(long)]
    pub services: Option<u32>,
    /// Namespaces they are spread over [env: NAMESPACES] [default: 12].
    #[arg(long)]
    pub namespaces: Option<u32>,
    /// Times the whole corpus is asked [env: ROUNDS] [default: 3].
    #[arg(long)]
    pub rounds: Option<u32>,
    #[command(flatten)]
    pub output: Output,
}

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    pub services: u32,
    pub namespaces: u32,
    pub rounds: u32,
    /// bench/peers/build.sh's directory.
    pub peers: String,
}

/// One pass of the check: a `pods` mode, idle or under churn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pass {
    pub name: String,
    pub queries: u64,
    pub differences: u64,
    /// Differences gone when asked again within a second.
    pub transient: u64,
}

/// One entry of docs/differences.md, and how often the run met it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Documented {
    pub what: String,
    pub count: u64,
    /// The words of docs/differences.md the test recognises it by.
    pub doc: String,
}

/// The figures of the test's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// CoreDNS's and clusterdns's versions, as the report names them.
    pub versions: String,
    pub services: u64,
    pub namespaces: u64,
    pub pods: u64,
    /// Distinct questions of the corpus.
    pub questions: u64,
    /// Queries asked of each server.
    pub queries: u64,
    pub populated_s: f64,
    pub whole_check_s: f64,
    pub passes: Vec<Pass>,
    /// Differences docs/differences.md does not list: the run fails unless none.
    pub undocumented: u64,
    pub documented: Vec<Documented>,
}

/// One run of the bench: the JSON document it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always "differential".
    pub bench: String,
    /// When it started, RFC 3339.
    pub started: String,
    pub inputs: Inputs,
    pub machine: Machine,
    /// The repository's commit (`git describe --always --dirty`).
    pub commit: Option<String>,
    /// Whether the test passed.
    pub passed: bool,
    pub report: Report,
}

impl Options {
    /// The inputs these options and the environment ask for (the peers still to be found).
    pub fn inputs(&self) -> Result<Inputs> {
        Ok(Inputs {
            services: knob(self.services, "SERVICES", 600)?,
            namespaces: knob(self.namespaces, "NAMESPACES", 12)?,
            rounds: knob(self.rounds, "ROUNDS", 3)?,
            peers: String::new(),
        })
    }
}

/// The test's report (Markdown) as figures.
pub fn parse(report: &str) -> Result<Report> {
    let number = |text: &str, marker: &str| -> Result<f64> {
        number_after(text, marker)
            .with_context(|| format!("no number after {marker:?} in {text:?}"))
    };
    let summary = report
        .lines()
        .find(|line| line.contains(" Services in ") && line.contains("distinct questions"))
        .context("no summary line (\"... Services in ... namespaces ...\") in the report")?;
    let (versions, figures) = summary
        .split_once("; ")
        .with_context(|| format!("{summary:?}"))?;
    let mut passes = Vec::new();
    let mut in_table = false;
    for line in report.lines() {
        if line.starts_with("| pass |") {
            in_table = true;
            continue;
        }
        if !in_table || line.starts_with("| ---") {
            continue;
        }
        let Some(row) = line.strip_prefix('|') else {
            break;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let [name, queries, differences, transient, ..] = cells.as_slice() else {
            bail!("a pass row of four cells: {line:?}");
        };
        let count = |cell: &str| -> Result<u64> {
            cell.parse()
                .with_context(|| format!("{cell:?} in {line:?} is not a count"))
        };
        passes.push(Pass {
            name: (*name).to_owned(),
            queries: count(queries)?,
            differences: count(differences)?,
            transient: count(transient)?,
        });
    }
    let undocumented = report
        .lines()
        .find_map(|line| line.strip_prefix("## Not documented: "))
        .context("no \"## Not documented: N\" line in the report")?;
    let mut documented = Vec::new();
    for line in report.lines() {
        let Some(heading) = line.strip_prefix("### ") else {
            continue;
        };
        // `WHAT (N ×; docs/differences.md: "DOC")`: the doc's words may hold parentheses.
        let Some((what_count, doc)) = heading.split_once(" ×; docs/differences.md: \"") else {
            continue;
        };
        let Some((what, count)) = what_count.rsplit_once(" (") else {
            continue;
        };
        documented.push(Documented {
            what: what.to_owned(),
            count: count
                .parse()
                .with_context(|| format!("{count:?} in {line:?} is not a count"))?,
            doc: doc.strip_suffix("\")").unwrap_or(doc).to_owned(),
        });
    }
    Ok(Report {
        versions: versions.to_owned(),
        services: number(figures, "")? as u64,
        namespaces: number(figures, "Services in ")? as u64,
        pods: number(figures, "namespaces, ")? as u64,
        questions: number(figures, "(kwok); ")? as u64,
        queries: number(figures, "distinct questions; ")? as u64,
        populated_s: number(figures, "populated in ")?,
        whole_check_s: number(figures, "whole check ")?,
        passes,
        undocumented: undocumented
            .trim()
            .parse()
            .with_context(|| format!("## Not documented: {undocumented}"))?,
        documented,
    })
}

/// bench/peers/build.sh's directory, with CoreDNS and the control plane built in it.
fn peers() -> Result<PathBuf> {
    let script = crate::root().join("bench/peers/build.sh");
    let output = Command::new(&script)
        .arg("--dir")
        .output()
        .with_context(|| format!("running {} --dir", script.display()))?;
    let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let built = |name: &str| super::is_executable(&dir.join(name));
    if !output.status.success() || !built("coredns") || !built("kube-apiserver") {
        bail!("the peers are not built: run bench/peers/build.sh");
    }
    Ok(dir)
}

/// Runs the check as `options` and the environment ask; prints the test's report, writes it
/// and its figures as JSON into the output directory; fails if the test did.
pub fn run(options: &Options) -> Result<(PathBuf, Run)> {
    let mut inputs = options.inputs()?;
    let peers = peers()?;
    inputs.peers = peers.display().to_string();
    let work = options.output.work(KIND)?;
    let out = options.output.dir()?;
    let started = super::now();
    let stamp = super::stamp(started);
    let markdown = out.join(format!("differential-{stamp}.md"));
    log(
        KIND,
        format!(
            "{} Services in {} namespaces, {} rounds; report: {}",
            inputs.services,
            inputs.namespaces,
            inputs.rounds,
            markdown.display()
        ),
    );
    let (services, namespaces, rounds) = (
        inputs.services.to_string(),
        inputs.namespaces.to_string(),
        inputs.rounds.to_string(),
    );
    let test = ignored_test(
        TEST,
        false,
        &[
            ("CLUSTERDNS_PEERS", peers.as_os_str()),
            ("CLUSTERDNS_REQUIRE_PEERS", "1".as_ref()),
            ("DIFF_SERVICES", services.as_ref()),
            ("DIFF_NAMESPACES", namespaces.as_ref()),
            ("DIFF_ROUNDS", rounds.as_ref()),
            ("DIFF_REPORT", markdown.as_os_str()),
        ],
        &work.path().join("test.log"),
    )?;
    let Ok(text) = std::fs::read_to_string(&markdown) else {
        eprintln!("{}", test.tail(50));
        bail!("{TEST} wrote no report ({}): see above", markdown.display());
    };
    print!("{text}");
    let run = Run {
        bench: KIND.to_owned(),
        started: started.to_string(),
        inputs,
        machine: Machine::here(),
        commit: commit(),
        passed: test.passed,
        report: parse(&text).with_context(|| markdown.display().to_string())?,
    };
    let json = out.join(format!("differential-{stamp}.json"));
    write_json(&json, &run)?;
    log(KIND, format!("results: {}", json.display()));
    if !test.passed {
        bail!(
            "the check failed (differences not documented, or the run broke): see above, and {}",
            Path::new(&json).display()
        );
    }
    Ok((json, run))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A report as the test writes it (the examples shortened).
    const REPORT: &str = "# clusterdns beside CoreDNS: the differential check\n\nCoreDNS-1.14.7 clusterdns 0.1.0; 60 Services in 3 namespaces, 212 pods (kwok); 4321 distinct questions; 9876 queries asked of each server; populated in 41 s, whole check 180 s.\n\n| pass | queries | differences | transient |\n| --- | ---: | ---: | ---: |\n| idle, pods insecure | 4321 | 12 | 0 |\n| during churn (40 scalings of 6 Deployments), pods insecure | 4321 | 14 | 2 |\n| idle, pods disabled | 617 | 3 | 0 |\n\n## Not documented: 0\n\n\n## Documented in docs/differences.md\n\n### ANY is refused (10 ×; docs/differences.md: \"ANY (RFC 8482)\")\n\n- web.shop.svc.cluster.local. ANY\n\n### TXT at the apex (2 ×; docs/differences.md: \"dns-version\")\n\n- example\n";

    #[test]
    fn the_reports_figures_are_parsed() {
        let report = parse(REPORT).unwrap();
        assert_eq!(report.versions, "CoreDNS-1.14.7 clusterdns 0.1.0");
        assert_eq!(
            (
                report.services,
                report.namespaces,
                report.pods,
                report.questions,
                report.queries
            ),
            (60, 3, 212, 4321, 9876)
        );
        assert_eq!((report.populated_s, report.whole_check_s), (41.0, 180.0));
        assert_eq!(report.passes.len(), 3);
        assert_eq!(
            report.passes[1],
            Pass {
                name: "during churn (40 scalings of 6 Deployments), pods insecure".to_owned(),
                queries: 4321,
                differences: 14,
                transient: 2
            }
        );
        assert_eq!(report.undocumented, 0);
        assert_eq!(
            report.documented,
            vec![
                Documented {
                    what: "ANY is refused".to_owned(),
                    count: 10,
                    doc: "ANY (RFC 8482)".to_owned()
                },
                Documented {
                    what: "TXT at the apex".to_owned(),
                    count: 2,
                    doc: "dns-version".to_owned()
                },
            ]
        );
    }

    #[test]
    fn a_report_without_its_figures_is_refused() {
        let error = parse("# nothing\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "no summary line (\"... Services in ... namespaces ...\") in the report"
        );
        let error = parse(&REPORT.replace("## Not documented: 0", "## Other")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no \"## Not documented: N\" line in the report"
        );
        let error = parse(&REPORT.replace("| 617 |", "| many |")).unwrap_err();
        assert!(error.to_string().starts_with("\"many\" in "), "{error}");
    }
}
