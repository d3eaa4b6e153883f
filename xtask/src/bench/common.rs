//! What the benches' options and JSON documents share: the clusterdns measured (`--clusterdns`,
//! `--profile`), where the results go and whether the work directory stays (`--out`,
//! `--keep`), the inputs and versions each run records of its clusterdns, and the shape of the
//! fixture tests.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{Work, commit, env_set, first_line, knob, out_dir};

/// The clusterdns a bench measures: a binary given, else one built (flattened into the
/// bench's options).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Build {
    /// Measure this clusterdns binary (an older build) instead of building one [env:
    /// CLUSTERDNS].
    #[arg(long)]
    pub clusterdns: Option<PathBuf>,
    /// The Cargo profile clusterdns is built with [env: PROFILE] [default: release].
    #[arg(long)]
    pub profile: Option<String>,
}

impl Build {
    /// The binary to measure: `--clusterdns`, else `CLUSTERDNS` (empty is unset); none when
    /// one is to be built.
    pub fn binary(&self) -> Option<PathBuf> {
        self.clusterdns.clone().or_else(|| {
            std::env::var_os("CLUSTERDNS")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }

    /// The profile to build with: `--profile`, else `PROFILE`, else release.
    pub fn profile(&self) -> Result<String> {
        knob(self.profile.clone(), "PROFILE", "release".to_owned())
    }

    /// What a run records of its clusterdns before it is built: the profile, the binary still
    /// to be named.
    pub fn inputs(&self) -> Result<BuildInputs> {
        Ok(BuildInputs {
            profile: self.profile()?,
            clusterdns: String::new(),
        })
    }
}

/// Where a bench's results go, and whether its work directory stays (flattened into the
/// bench's options). What the work directory holds is the bench's own: its options say it in
/// `--keep`'s help ([`keeps`]).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Output {
    /// Keep the work directory [env: KEEP].
    #[arg(long)]
    pub keep: bool,
    /// Where the report and the JSON go [default: bench/out].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl Output {
    /// Whether the work directory stays: `--keep`, else `KEEP` set.
    pub fn keep(&self) -> bool {
        self.keep || env_set("KEEP")
    }

    /// The work directory of a run of `bench`, kept as [`Output::keep`] says.
    pub fn work(&self, bench: &'static str) -> Result<Work> {
        Work::new(bench, self.keep())
    }

    /// The output directory, made: `--out`, else [`out_dir`].
    pub fn dir(&self) -> Result<PathBuf> {
        let out = self.out.clone().unwrap_or_else(out_dir);
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        Ok(out)
    }
}

/// `--keep`'s help for a bench whose work directory holds `what`, for its options'
/// `#[command(mut_arg("keep", keeps("...")))]`: "Keep the work directory (WHAT) [env: KEEP]".
pub fn keeps(what: &'static str) -> impl FnOnce(clap::Arg) -> clap::Arg {
    move |arg| arg.help(format!("Keep the work directory ({what}) [env: KEEP]"))
}

/// The clusterdns a run measured, as the `inputs` of its JSON record it (flattened into them:
/// the two fields in this order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildInputs {
    /// The Cargo profile of the clusterdns measured (unless `clusterdns` was given).
    pub profile: String,
    /// The clusterdns binary measured.
    pub clusterdns: String,
}

/// The head of a run's `versions` (flattened into them: the two fields first, in this order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnVersion {
    /// `clusterdns --version`.
    pub clusterdns: String,
    /// The repository's commit (`git describe --always --dirty`), when there is one.
    pub commit: Option<String>,
}

impl OwnVersion {
    /// `clusterdns --version` of the binary at `clusterdns`, and the repository's commit.
    pub fn of(clusterdns: &str) -> Self {
        Self {
            clusterdns: first_line(clusterdns, &["--version"]),
            commit: commit(),
        }
    }
}

/// The fixture tests' shape: a run's JSON as a bench wrote it, and the report rendered from
/// it.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub mod fixture {
    use std::fmt::Debug;

    use anyhow::Result;
    use serde::Serialize;
    use serde::de::DeserializeOwned;

    /// The run `json` holds; it reads back as it was written (to JSON and back, the same).
    pub fn read_back<R: DeserializeOwned + Serialize + PartialEq + Debug>(json: &str) -> R {
        let run: R = serde_json::from_str(json).unwrap();
        let again: R = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
        assert_eq!(again, run);
        run
    }

    /// What `render` makes of the run `json` holds is `md`, to the byte.
    pub fn assert_renders<R: DeserializeOwned + Serialize + PartialEq + Debug>(
        json: &str,
        md: &str,
        render: impl Fn(&R) -> Result<String>,
    ) {
        let text = render(&read_back(json)).unwrap();
        assert_eq!(text, md, "{text}");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use clap::{Args, Command};

    use super::super::{
        cache, churn, differential, dnsperf, fixed_rate, list_mode, node_cache, sizing,
        tracker_paired, vs_coredns, watch_memory,
    };

    /// Each bench's command line: its flags, and what its work directory keeps.
    #[test]
    fn every_bench_says_what_its_work_directory_keeps() {
        let commands = [
            cache::Options::augment_args(Command::new("cache")),
            churn::Options::augment_args(Command::new("churn")),
            differential::Options::augment_args(Command::new("differential")),
            dnsperf::Options::augment_args(Command::new("dnsperf")),
            fixed_rate::Options::augment_args(Command::new("fixed-rate")),
            list_mode::Options::augment_args(Command::new("list-mode")),
            node_cache::Options::augment_args(Command::new("node-cache")),
            sizing::Options::augment_args(Command::new("sizing")),
            tracker_paired::Options::augment_args(Command::new("tracker-paired")),
            vs_coredns::Options::augment_args(Command::new("vs-coredns")),
            watch_memory::Options::augment_args(Command::new("watch-memory")),
        ];
        for mut command in commands {
            command.build();
            let name = command.get_name().to_owned();
            let keep = command
                .get_arguments()
                .find(|arg| arg.get_id() == "keep")
                .unwrap();
            let help = keep.get_help().unwrap().to_string();
            assert!(
                help.starts_with("Keep the work directory (") && help.ends_with(") [env: KEEP]"),
                "{name}: {help}"
            );
            assert!(
                command.get_arguments().any(|arg| arg.get_id() == "out"),
                "{name}"
            );
        }
    }
}
