//! `clusterdns endpoints`: the EndpointSlice controller's view and kube-proxy's choice.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use clap_complete::engine::ArgValueCompleter;

use super::cluster::{ClusterArgs, Objects, Scope, service_kinds};
use super::output::Output;
use crate::kube_proxy::endpoints::{SliceSource, report_json, report_text, with_slices};
use crate::model::ObjectKey;

/// Arguments of `endpoints`.
#[derive(Debug, Args)]
pub(super) struct EndpointsArgs {
    /// Objects files (`kubectl get svc,pods,endpointslices -o json` output); without them,
    /// the live cluster's objects.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    objects: Vec<PathBuf>,
    #[command(flatten)]
    cluster: ClusterArgs,
    #[command(flatten)]
    scope: Scope,
    /// `input`: the slices in the files (computed for a Service that has none there);
    /// `computed`: the EndpointSlice controller's, from the pods.
    #[arg(long, value_enum, default_value_t = Slices::Input)]
    slices: Slices,
    /// The node kube-proxy runs on: its endpoints make the node-local sets of Services with
    /// a Local traffic policy.
    #[arg(long, value_name = "NODE")]
    node: Option<String>,
    /// Only these Services (NAMESPACE/NAME, repeatable or comma-separated).
    #[arg(long, value_name = "NS/NAME", value_delimiter = ',', add = ArgValueCompleter::new(super::complete::services))]
    service: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
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
    let objects = Objects::read(&args.objects, &args.cluster, |context| {
        let default = args.scope.namespace.as_deref().unwrap_or(context);
        let named = service_keys(&args.service, Some(default)).unwrap_or_default();
        service_kinds(args.scope.live_namespace(&named, context))
    })?;
    let default = args.scope.default_namespace(&objects);
    let keys = service_keys(&args.service, default.as_deref())?;
    let loaded = super::read_objects_flag(&objects.paths)?;
    let source = SliceSource::from(args.slices);
    let mut cluster = with_slices(&loaded.cluster, source);
    super::warn_unknown_node(&cluster, args.node.as_deref());
    if keys.is_empty() {
        if let Some(namespace) = args.scope.shown_namespace(&objects) {
            super::check_namespace(&cluster, &namespace)?;
            cluster
                .services
                .retain(|key, _| *key.namespace == *namespace);
        }
    } else {
        for (key, text) in keys.iter().zip(&args.service) {
            if !cluster.services.contains_key(key) {
                let hint = super::explain::elsewhere(&cluster, &key.namespace, &key.name)
                    .with_context(|| format!("--service {text}"))?;
                anyhow::bail!("--service {text}: no such Service in the objects{hint}");
            }
        }
        cluster.services.retain(|key, _| keys.contains(key));
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

/// `--service` values: `NAMESPACE/NAME`, or `NAME` in `default` (`-n`, or the context's).
fn service_keys(texts: &[String], default: Option<&str>) -> anyhow::Result<Vec<ObjectKey>> {
    texts
        .iter()
        .map(|text| match (text.split_once('/'), default) {
            (Some((namespace, name)), _) => Ok(ObjectKey::new(namespace, name)),
            (None, Some(namespace)) => Ok(ObjectKey::new(namespace, text)),
            (None, None) => {
                anyhow::bail!(
                    "--service: expected NAMESPACE/NAME (or -n NAMESPACE), found {text:?}"
                )
            }
        })
        .collect()
}
