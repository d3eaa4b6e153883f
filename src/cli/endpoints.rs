//! `clusterdns endpoints`: the EndpointSlice controller's view and kube-proxy's choice.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::output::Output;

use crate::model::ObjectKey;
use crate::proxy::endpoints::{SliceSource, report_json, report_text, with_slices};

/// Arguments of `endpoints`.
#[derive(Debug, Args)]
pub(super) struct EndpointsArgs {
    /// Objects files (`kubectl get svc,pods,endpointslices -o json` output).
    #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
    objects: Vec<PathBuf>,
    /// `input`: the slices in the files (computed for a Service that has none there);
    /// `computed`: the EndpointSlice controller's, from the pods.
    #[arg(long, value_enum, default_value_t = Slices::Input)]
    slices: Slices,
    /// The node kube-proxy runs on: its endpoints make the node-local sets of Services with
    /// a Local traffic policy.
    #[arg(long, value_name = "NODE")]
    node: Option<String>,
    /// Only these Services (NAMESPACE/NAME, repeatable or comma-separated).
    #[arg(long, value_name = "NS/NAME", value_delimiter = ',')]
    service: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

/// `--slices`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum Slices {
    /// The slices in the input.
    Input,
    /// Computed by the EndpointSlice controller from the pods.
    Computed,
}

impl From<Slices> for SliceSource {
    fn from(slices: Slices) -> Self {
        match slices {
            Slices::Input => Self::Input,
            Slices::Computed => Self::Computed,
        }
    }
}

pub(super) fn run(args: &EndpointsArgs) -> anyhow::Result<ExitCode> {
    let loaded = super::read_objects_flag(&args.objects)?;
    let source = SliceSource::from(args.slices);
    let mut cluster = with_slices(&loaded.cluster, source);
    super::warn_unknown_node(&cluster, args.node.as_deref());
    if !args.service.is_empty() {
        let mut wanted = Vec::new();
        for text in &args.service {
            let Some((namespace, name)) = text.split_once('/') else {
                anyhow::bail!("--service: expected NAMESPACE/NAME, found {text:?}");
            };
            let key = ObjectKey::new(namespace, name);
            if !cluster.services.contains_key(&key) {
                anyhow::bail!("--service {text}: no such Service in the objects");
            }
            wanted.push(key);
        }
        cluster.services.retain(|key, _| wanted.contains(key));
    }
    match args.output.data() {
        None => out!("{}", report_text(&cluster, args.node.as_deref(), &[])),
        Some(data) => out!(
            "{}",
            data.render(&report_json(&cluster, source, args.node.as_deref(), &[]))?
        ),
    }
    Ok(ExitCode::SUCCESS)
}
