//! `clusterdns records`: the whole zone, from the live cluster's objects or objects files.

use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};

use super::Source;
use super::cluster::ClusterArgs;
use super::output::Data;
use crate::name::WireName;
use crate::zone::zonefile;

/// Arguments of `records`.
#[derive(Debug, Args)]
pub(super) struct RecordsArgs {
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Output format (`--output` is the same flag, as in the other commands).
    #[arg(short = 'o', long, visible_alias = "output", value_enum, default_value_t = Format::Zone)]
    format: Format,
    /// Only this zone (for example `cluster.local` or `in-addr.arpa`); default: every zone.
    #[arg(long, value_name = "ZONE")]
    zone: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// RFC 1035 zone file (loadable by knotd, BIND, hickory).
    Zone,
    /// JSON: one object per zone with its records.
    Json,
    /// YAML: the same data as the JSON.
    Yaml,
}

pub(super) fn run(args: &RecordsArgs) -> anyhow::Result<ExitCode> {
    let (config, _objects) = args.source.config_and_objects(&args.cluster)?;
    let blocks = args.source.load(&config)?;
    let Some(kubernetes) = blocks.iter().find_map(|loaded| loaded.block.kubernetes()) else {
        bail!("the configuration has no kubernetes block");
    };
    let snapshot = kubernetes.store.snapshot();
    let only =
        match &args.zone {
            None => None,
            Some(text) => {
                let wanted = WireName::from_dotted(text)
                    .with_context(|| format!("--zone {text}"))?
                    .to_lowercase();
                let index = snapshot
                    .zones()
                    .iter()
                    .position(|zone| *zone.origin() == wanted);
                Some(index.with_context(|| {
                    format!("--zone {text}: not a zone this configuration serves")
                })?)
            }
        };
    match args.format {
        Format::Zone => out!("{}", zonefile::zone_file(&snapshot, only)),
        Format::Json => out!(
            "{}",
            Data::Json.render(&zonefile::zone_json(&snapshot, only))?
        ),
        Format::Yaml => out!(
            "{}",
            Data::Yaml.render(&zonefile::zone_json(&snapshot, only))?
        ),
    }
    Ok(ExitCode::SUCCESS)
}
