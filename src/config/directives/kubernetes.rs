//! `kubernetes [ZONES...] { ... }`, with CoreDNS's options plus `objects FILE...`.
//!
//! Zones default to the server block's; CIDR arguments stand for their reverse zones. The
//! first forward zone is the primary zone (PTR targets live there); a directive with only
//! reverse zones is refused as CoreDNS refuses it. Options that CoreDNS accepts more than once
//! behave as there: `namespaces` (and our `objects`) add up, the others keep the last value.

use super::k8s_external::K8sExternalConfig;
use hickory_proto::rr::Name;

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{
    Context, arguments, invalid, no_block, prefix, unknown_property, unknown_property_of, zones,
};
use crate::config::duration::parse_go_duration;
use crate::config::error::Error;
use crate::config::lexer::Token;
use crate::config::syntax::Line;
use crate::config::zone;
use crate::selector::LabelSelector;

/// The *kubernetes* directive.
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesConfig {
    /// Zones served (from the directive's arguments, else the server block's), lower-case
    /// and fully qualified; reverse zones from CIDR arguments are already expanded.
    pub zones: Vec<Name>,
    /// Index in `zones` of the first forward (non-reverse) zone: PTR targets live there.
    pub primary_zone: usize,
    /// `ttl` (default 5, range 0..=3600).
    pub ttl: u32,
    /// `pods`.
    pub pods: PodMode,
    /// `endpoint_pod_names`.
    pub endpoint_pod_names: bool,
    /// `namespaces` (empty: all namespaces).
    pub namespaces: Vec<String>,
    /// `namespace_labels`.
    pub namespace_labels: Option<LabelSelector>,
    /// `labels`.
    pub labels: Option<LabelSelector>,
    /// `noendpoints`.
    pub noendpoints: bool,
    /// `ignore empty_service`.
    pub ignore_empty_service: bool,
    /// `zonal`: headless Services also answer `<topology-zone>.pin._zone.<svc>.<ns>.svc.<zone>`
    /// (that zone's endpoints only) and `<topology-zone>.prefer._zone.…` (those, or every
    /// endpoint when the zone has none).
    pub zonal: bool,
    /// `fallthrough [ZONES...]`: `None` when absent; an empty list means every zone.
    pub fallthrough: Option<Vec<Name>>,
    /// `multicluster ZONES...`: zones among `zones` answered from ServiceImports (the
    /// Multi-Cluster Services API) instead of Services; empty when absent.
    pub multicluster: Vec<Name>,
    /// `objects FILE...` (clusterdns extension): static objects instead of the API watch.
    pub objects: Vec<PathBuf>,
    /// How to reach the API server when `objects` is not given.
    pub api: ApiConfig,
    /// `snapshot FILE` (clusterdns extension, API watch only): the last known objects are
    /// persisted here and served at start-up before the API server answers.
    pub snapshot: Option<PathBuf>,
    /// `startup_timeout` (default 5 s).
    pub startup_timeout: Duration,
    /// The block's *k8s_external* directive, when it has one: the zone built from these
    /// objects then also holds the external zones' names.
    pub external: Option<K8sExternalConfig>,
    /// Whether the zone keeps the namespace of every running pod's address: set when the
    /// block's *autopath* `@kubernetes` finds a client's namespace from its pod (`pods
    /// verified`); nothing else reads it, and at 150,000 pods it costs about 10 MB.
    pub client_namespaces: bool,
    /// Line of the directive, for messages.
    pub line: usize,
}

impl KubernetesConfig {
    /// The directive with CoreDNS's defaults (ttl 5, pods disabled, startup_timeout 5 s, no
    /// filters) for `zones`, whose first forward zone is at `primary_zone`.
    pub fn new(zones: Vec<Name>, primary_zone: usize, line: usize) -> Self {
        Self {
            zones,
            primary_zone,
            ttl: DEFAULT_TTL,
            pods: PodMode::Disabled,
            endpoint_pod_names: false,
            namespaces: Vec::new(),
            namespace_labels: None,
            labels: None,
            noendpoints: false,
            zonal: false,
            ignore_empty_service: false,
            fallthrough: None,
            multicluster: Vec::new(),
            objects: Vec::new(),
            api: ApiConfig::default(),
            snapshot: None,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            external: None,
            client_namespaces: false,
            line,
        }
    }
}

/// `pods disabled|insecure|verified`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodMode {
    /// No pod records (the default).
    #[default]
    Disabled,
    /// A record from the name itself, without checking that the pod exists.
    Insecure,
    /// A record only if a pod with that IP exists in that namespace.
    Verified,
}

/// The API-server connection options of the *kubernetes* directive.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ApiConfig {
    /// `endpoint URL` (only the first URL is used, as in CoreDNS).
    pub endpoint: Option<String>,
    /// `tls CERT KEY CACERT`.
    pub tls: Option<TlsFiles>,
    /// `kubeconfig KUBECONFIG [CONTEXT]`.
    pub kubeconfig: Option<(PathBuf, Option<String>)>,
    /// `apiserver_qps`.
    pub qps: Option<f64>,
    /// `apiserver_burst`.
    pub burst: Option<u32>,
    /// `apiserver_max_inflight`.
    pub max_inflight: Option<u32>,
    /// `list_mode streaming|paginated`: how a watch gets its initial state.
    pub list_mode: ListMode,
}

/// `list_mode`: how each resource's initial state (and a re-list's) is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListMode {
    /// A paginated LIST (`limit=500` pages), then a watch from its resourceVersion.
    Paginated,
    /// One watch with `sendInitialEvents=true` (WatchList, KEP-3157): the API server streams
    /// the objects from its watch cache and marks the end with a bookmark. The default, as in
    /// client-go: a resource whose streaming list the API server refuses (before 1.27, the
    /// `WatchList` feature gate off) is listed in pages from then on.
    #[default]
    Streaming,
}

/// `tls CERT KEY CACERT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// Client certificate.
    pub cert: PathBuf,
    /// Client key.
    pub key: PathBuf,
    /// CA certificate.
    pub ca: PathBuf,
}

const DIRECTIVE: &str = "kubernetes";

/// CoreDNS's default `ttl`.
pub(crate) const DEFAULT_TTL: u32 = 5;
/// CoreDNS's default `startup_timeout`.
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The options CoreDNS's *kubernetes* has (as of 1.14), plus `objects`, `snapshot` and
/// `list_mode`; any other name is an unknown property.
const OPTIONS: &[&str] = &[
    "endpoint",
    "tls",
    "kubeconfig",
    "namespaces",
    "namespace_labels",
    "labels",
    "pods",
    "endpoint_pod_names",
    "ttl",
    "noendpoints",
    "fallthrough",
    "ignore",
    "apiserver_qps",
    "apiserver_burst",
    "apiserver_max_inflight",
    "list_mode",
    "startup_timeout",
    "multicluster",
    "zonal",
    "objects",
    "snapshot",
];

/// Parses the `kubernetes` directive.
pub(crate) fn parse(line: &Line, context: &Context<'_>) -> Result<KubernetesConfig, Error> {
    let served = zones(DIRECTIVE, line, &line.args, context.block_zones)?;
    let Some(primary_zone) = served.iter().position(|zone| !zone::is_reverse(zone)) else {
        return Err(invalid(
            &line.name,
            DIRECTIVE,
            "non-reverse zone name must be used (every zone given is a reverse zone)",
        ));
    };
    let mut config = KubernetesConfig::new(served, primary_zone, line.name.line);
    let mut connection_option: Option<&Token> = None;
    let mut objects_option: Option<&Token> = None;
    let mut snapshot_option: Option<&Token> = None;
    let mut zonal_option: Option<&Token> = None;
    let mut multicluster_option: Option<&Token> = None;
    for option in line.options() {
        if !OPTIONS.contains(&option.name()) {
            return Err(unknown_property_of(DIRECTIVE, option, OPTIONS));
        }
        no_block(DIRECTIVE, option)?;
        let one = || -> Result<&Token, Error> {
            let args = arguments(DIRECTIVE, option, 1, Some(1))?;
            args.first()
                .ok_or_else(|| invalid(&option.name, DIRECTIVE, "missing argument"))
        };
        let bad = |arg: &Token, message: String| {
            invalid(
                arg,
                DIRECTIVE,
                format!("{}{message}", prefix(DIRECTIVE, option)),
            )
        };
        match option.name() {
            "endpoint" => {
                let args = arguments(DIRECTIVE, option, 1, None)?;
                // As CoreDNS: several URLs are accepted, only the first is used.
                config.api.endpoint = args.first().map(|arg| arg.text.clone());
                connection_option.get_or_insert(&option.name);
            }
            "tls" => {
                if let [cert, key, ca] = arguments(DIRECTIVE, option, 3, Some(3))? {
                    config.api.tls = Some(TlsFiles {
                        cert: PathBuf::from(&cert.text),
                        key: PathBuf::from(&key.text),
                        ca: PathBuf::from(&ca.text),
                    });
                }
                connection_option.get_or_insert(&option.name);
            }
            "kubeconfig" => {
                let args = arguments(DIRECTIVE, option, 1, Some(2))?;
                if let Some(path) = args.first() {
                    let context = args.get(1).map(|arg| arg.text.clone());
                    config.api.kubeconfig = Some((PathBuf::from(&path.text), context));
                }
                connection_option.get_or_insert(&option.name);
            }
            "namespaces" => {
                for arg in arguments(DIRECTIVE, option, 1, None)? {
                    if !is_dns_label(&arg.text) {
                        return Err(bad(
                            arg,
                            format!(
                                "'{}' is not a namespace name (a DNS-1123 label: at most 63 \
                                 lower-case letters, digits and '-')",
                                arg.text
                            ),
                        ));
                    }
                    if !config.namespaces.contains(&arg.text) {
                        config.namespaces.push(arg.text.clone());
                    }
                }
            }
            "namespace_labels" => {
                config.namespace_labels = Some(selector(option)?);
            }
            "labels" => {
                config.labels = Some(selector(option)?);
            }
            "pods" => {
                let arg = one()?;
                config.pods = match arg.text.as_str() {
                    "disabled" => PodMode::Disabled,
                    "insecure" => PodMode::Insecure,
                    "verified" => PodMode::Verified,
                    other => {
                        return Err(bad(
                            arg,
                            format!("'{other}' must be one of: disabled, insecure, verified"),
                        ));
                    }
                };
            }
            "endpoint_pod_names" => {
                arguments(DIRECTIVE, option, 0, Some(0))?;
                config.endpoint_pod_names = true;
            }
            "ttl" => {
                let arg = one()?;
                config.ttl = arg
                    .text
                    .parse::<u32>()
                    .ok()
                    .filter(|ttl| *ttl <= 3600)
                    .ok_or_else(|| {
                        bad(
                            arg,
                            format!("'{}' must be an integer in range [0, 3600]", arg.text),
                        )
                    })?;
            }
            "noendpoints" => {
                arguments(DIRECTIVE, option, 0, Some(0))?;
                config.noendpoints = true;
            }
            "fallthrough" => {
                config.fallthrough = Some(zones(DIRECTIVE, option, &option.args, &[])?);
            }
            "ignore" => {
                let arg = one()?;
                if arg.text != "empty_service" {
                    return Err(bad(arg, format!("'{}' must be 'empty_service'", arg.text)));
                }
                config.ignore_empty_service = true;
            }
            "apiserver_qps" => {
                let arg = one()?;
                let qps = arg
                    .text
                    .parse::<f64>()
                    .ok()
                    .filter(|qps| qps.is_finite() && *qps > 0.0);
                config.api.qps = Some(qps.ok_or_else(|| {
                    bad(arg, format!("'{}' must be a positive number", arg.text))
                })?);
            }
            "apiserver_burst" => {
                config.api.burst = Some(positive(one()?, &bad)?);
            }
            "apiserver_max_inflight" => {
                config.api.max_inflight = Some(positive(one()?, &bad)?);
            }
            "list_mode" => {
                let arg = one()?;
                config.api.list_mode = match arg.text.as_str() {
                    "paginated" => ListMode::Paginated,
                    "streaming" => ListMode::Streaming,
                    other => {
                        return Err(bad(
                            arg,
                            format!("'{other}' must be 'streaming' or 'paginated'"),
                        ));
                    }
                };
                connection_option.get_or_insert(&option.name);
            }
            "startup_timeout" => {
                let arg = one()?;
                config.startup_timeout =
                    parse_go_duration(&arg.text).map_err(|message| bad(arg, message))?;
            }
            "objects" => {
                for arg in arguments(DIRECTIVE, option, 1, None)? {
                    if arg.text.is_empty() {
                        return Err(bad(arg, "empty file name".into()));
                    }
                    let base = arg.file.parent().unwrap_or(Path::new(""));
                    let path = base.join(&arg.text);
                    if !config.objects.contains(&path) {
                        config.objects.push(path);
                    }
                }
                objects_option.get_or_insert(&option.name);
            }
            "snapshot" => {
                let arg = one()?;
                if arg.text.is_empty() {
                    return Err(bad(arg, "empty file name".into()));
                }
                let base = arg.file.parent().unwrap_or(Path::new(""));
                config.snapshot = Some(base.join(&arg.text));
                snapshot_option.get_or_insert(&option.name);
            }
            "multicluster" => {
                // As CoreDNS: the last line wins, and without zones it names none.
                config.multicluster = zones(DIRECTIVE, option, &option.args, &[])?;
                multicluster_option = Some(&option.name);
            }
            "zonal" => {
                arguments(DIRECTIVE, option, 0, Some(0))?;
                config.zonal = true;
                zonal_option.get_or_insert(&option.name);
            }
            _ => return Err(unknown_property(DIRECTIVE, option)),
        }
    }
    if let Some(zonal) = zonal_option
        && config.noendpoints
    {
        // CoreDNS: every zonal name would contradict its documented answer.
        return Err(invalid(
            zonal,
            DIRECTIVE,
            "zonal requires the endpoint cache; remove noendpoints",
        ));
    }
    if !config.namespaces.is_empty() && config.namespace_labels.is_some() {
        return Err(invalid(
            &line.name,
            DIRECTIVE,
            "namespaces and namespace_labels cannot both be set",
        ));
    }
    if let Some(option) = multicluster_option {
        authoritative_for_multicluster(&config, option)?;
    }
    if let (Some(objects), Some(connection)) = (objects_option, connection_option) {
        return Err(invalid(
            objects,
            DIRECTIVE,
            format!(
                "objects (static files) cannot be combined with {} (line {}), which configures \
                 the API server connection",
                connection.text, connection.line
            ),
        ));
    }
    if let (Some(objects), Some(snapshot)) = (objects_option, snapshot_option) {
        return Err(invalid(
            snapshot,
            DIRECTIVE,
            format!(
                "snapshot persists what the API watch saw; it cannot be combined with objects \
                 (line {}), which are static files",
                objects.line
            ),
        ));
    }
    Ok(config)
}

/// CoreDNS: every `multicluster` zone must be one of the zones the directive serves (the
/// same zone, not one below it), with its message listing them as Go prints a slice.
fn authoritative_for_multicluster(config: &KubernetesConfig, option: &Token) -> Result<(), Error> {
    let Some(missing) = config
        .multicluster
        .iter()
        .find(|zone| !config.zones.contains(zone))
    else {
        return Ok(());
    };
    let served: Vec<String> = config.zones.iter().map(ToString::to_string).collect();
    Err(invalid(
        option,
        DIRECTIVE,
        format!(
            "is not authoritative for the multicluster zone {missing} (authoritative zones: [{}])",
            served.join(" ")
        ),
    ))
}

/// A `labels` or `namespace_labels` expression: the arguments joined by spaces, as CoreDNS
/// joins them.
fn selector(option: &Line) -> Result<LabelSelector, Error> {
    let args = arguments(DIRECTIVE, option, 1, None)?;
    let input = args
        .iter()
        .map(|arg| arg.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    LabelSelector::parse(&input).map_err(|source| Error::Selector {
        directive: DIRECTIVE.to_owned(),
        option: option.name().to_owned(),
        input,
        error: Box::new(source),
        file: option.name.file.to_path_buf(),
        line: option.name.line,
    })
}

fn positive(arg: &Token, bad: &dyn Fn(&Token, String) -> Error) -> Result<u32, Error> {
    arg.text
        .parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| bad(arg, format!("'{}' must be a positive integer", arg.text)))
}

/// A DNS-1123 label (what a namespace name is).
pub(crate) fn is_dns_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            bytes.len() <= 63
                && first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        }
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
