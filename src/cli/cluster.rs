//! Where a tool's objects come from: `--objects FILE...` (kubectl's JSON, offline), or else
//! the live cluster of a kubeconfig context, listed into a private directory as the same
//! JSON so that both are read by one loader and give one result.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use clap_complete::engine::ArgValueCompleter;

use crate::model::ObjectKey;
use crate::source::live::{self, Connection, ListKind, Wanted};

/// How long a read may run before a terminal is shown its progress.
const QUIET_FOR: Duration = Duration::from_secs(1);

/// kubectl's flags for choosing the cluster.
#[derive(Debug, Clone, Default, Args)]
pub(super) struct ClusterArgs {
    /// The kubeconfig file to read the cluster from (default: `KUBECONFIG`, else
    /// `~/.kube/config`; in a pod without one, its service account). Not with `--objects`.
    #[arg(long, value_name = "FILE", conflicts_with = "objects")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: the current context). Not with `--objects`.
    #[arg(long, value_name = "NAME", conflicts_with = "objects", add = ArgValueCompleter::new(super::complete::contexts))]
    context: Option<String>,
}

impl ClusterArgs {
    /// Whether `--kubeconfig` or `--context` was given.
    pub(super) fn given(&self) -> bool {
        self.kubeconfig.is_some() || self.context.is_some()
    }

    /// The kubeconfig file and context a server watching this cluster names in its
    /// Corefile (`None`: the pod's service account), chosen as the tools choose them.
    pub(super) fn for_corefile(&self) -> anyhow::Result<Option<(PathBuf, String)>> {
        Ok(live::choose_kubeconfig(
            self.kubeconfig.as_deref(),
            self.context.as_deref(),
        )?)
    }

    /// Whether a cluster is there to read without being asked for: a flag of ours, a
    /// kubeconfig where kubectl looks, or a pod's service account.
    pub(super) fn cluster_available(&self) -> bool {
        if self.kubeconfig.is_some() || self.context.is_some() {
            return true;
        }
        if let Some(paths) = std::env::var_os("KUBECONFIG").filter(|paths| !paths.is_empty()) {
            return std::env::split_paths(&paths).any(|path| path.is_file());
        }
        let home = std::env::var_os("HOME").map(|home| Path::new(&home).join(".kube/config"));
        home.is_some_and(|path| path.is_file())
            || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
    }
}

/// kubectl's namespace flags.
#[derive(Debug, Clone, Default, Args)]
pub(super) struct Scope {
    /// The namespace: of the Services shown, and of those read from the cluster (default:
    /// the context's namespace when reading the cluster; every namespace in `--objects`).
    #[arg(short = 'n', long, value_name = "NS", add = ArgValueCompleter::new(super::complete::namespaces))]
    pub(super) namespace: Option<String>,
    /// Every namespace, when reading the cluster.
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    pub(super) all_namespaces: bool,
}

impl Scope {
    /// The namespace to list from the cluster (`None`: all of them): `-n`'s; else the one
    /// the `named` Services share; else, with none named, the context's `current`.
    pub(super) fn live_namespace<'a>(
        &'a self,
        named: &'a [ObjectKey],
        current: &'a str,
    ) -> Option<&'a str> {
        if self.all_namespaces {
            return None;
        }
        if let Some(namespace) = &self.namespace {
            return Some(namespace);
        }
        match named.split_first() {
            None => Some(current),
            Some((first, rest)) => rest
                .iter()
                .all(|key| key.namespace == first.namespace)
                .then_some(&*first.namespace),
        }
    }

    /// The namespace of a Service named without one: `-n`'s, else the context's.
    pub(super) fn default_namespace(&self, objects: &Objects) -> Option<String> {
        self.namespace
            .clone()
            .or_else(|| objects.live.as_ref().map(|live| live.namespace.clone()))
    }

    /// The namespace whose Services are shown when none is named (`None`: all): `-n`'s, else
    /// the context's when reading the cluster without `-A`.
    pub(super) fn shown_namespace(&self, objects: &Objects) -> Option<String> {
        if self.all_namespaces {
            return None;
        }
        self.default_namespace(objects)
    }
}

/// The objects a command reads, as files: those given, or the live cluster's, listed into a
/// directory removed when this is dropped.
#[derive(Debug)]
pub(super) struct Objects {
    /// The files to load.
    pub(super) paths: Vec<PathBuf>,
    /// Read from a cluster: that context's namespace.
    pub(super) live: Option<Live>,
    _dir: Option<tempfile::TempDir>,
}

/// The cluster the objects were read from.
#[derive(Debug, Clone)]
pub(super) struct Live {
    /// The context's namespace (`default` when it names none).
    pub(super) namespace: String,
}

impl Objects {
    /// `files`, as given.
    pub(super) fn files(files: &[PathBuf]) -> Self {
        Self {
            paths: files.to_vec(),
            live: None,
            _dir: None,
        }
    }

    /// The files given, or else the live cluster's objects: `wanted` says which, given the
    /// context's namespace.
    pub(super) fn read(
        files: &[PathBuf],
        cluster: &ClusterArgs,
        wanted: impl FnOnce(&str) -> Vec<Wanted>,
    ) -> anyhow::Result<Self> {
        if !files.is_empty() {
            return Ok(Self::files(files));
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the client's runtime")?;
        runtime.block_on(async {
            let connection =
                live::connect(cluster.kubeconfig.as_deref(), cluster.context.as_deref()).await?;
            let wanted = wanted(&connection.namespace);
            let dir = tempfile::Builder::new()
                .prefix("clusterdns-live.")
                .tempdir()
                .context("making a directory for the cluster's objects")?;
            let paths = list_into(&connection, &wanted, dir.path()).await?;
            Ok(Self {
                paths,
                live: Some(Live {
                    namespace: connection.namespace.clone(),
                }),
                _dir: Some(dir),
            })
        })
    }
}

/// Lists each of `wanted` page by page into `dir`, one file a page; the files. Says what it
/// reads on a terminal's standard error once that takes more than a moment.
async fn list_into(
    connection: &Connection,
    wanted: &[Wanted],
    dir: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut progress = Progress::new(&connection.context);
    let mut paths = Vec::new();
    for what in wanted {
        let mut count = 0;
        let mut failed = None;
        connection
            .list(what, |text, items| {
                let path = dir.join(format!("{:03}-{}.json", paths.len(), what.kind.resource()));
                if let Err(error) = std::fs::write(&path, text) {
                    failed.get_or_insert((path.clone(), error));
                }
                paths.push(path);
                count += items;
                progress.show(&what.describe(), count);
            })
            .await?;
        if let Some((path, error)) = failed {
            progress.clear();
            return Err(error).with_context(|| format!("writing {}", path.display()));
        }
    }
    progress.clear();
    Ok(paths)
}

/// A single line on a terminal's standard error, rewritten as pages arrive; nothing when
/// standard error is not a terminal, or before [`QUIET_FOR`] has passed.
struct Progress {
    context: String,
    started: Instant,
    terminal: bool,
    shown: bool,
}

impl Progress {
    fn new(context: &str) -> Self {
        Self {
            context: context.to_owned(),
            started: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    /// [`QUIET_FOR`], or `CLUSTERDNS_PROGRESS_AFTER_MS` (for tests, whose reads are quick).
    fn quiet_for() -> Duration {
        std::env::var("CLUSTERDNS_PROGRESS_AFTER_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(QUIET_FOR, Duration::from_millis)
    }

    fn show(&mut self, what: &str, count: usize) {
        if !self.terminal || self.started.elapsed() < Self::quiet_for() {
            return;
        }
        let mut stderr = std::io::stderr().lock();
        let _ = write!(
            stderr,
            "\r\x1b[2Kreading {what} from context {}: {count}",
            self.context
        );
        let _ = stderr.flush();
        self.shown = true;
    }

    fn clear(&mut self) {
        if self.shown {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[2K");
            let _ = stderr.flush();
            self.shown = false;
        }
    }
}

/// What the DNS zone needs, cluster-wide: namespaces, Services, EndpointSlices and, with
/// `pods`, Pods.
pub(super) fn zone_kinds(pods: bool) -> Vec<Wanted> {
    let mut kinds = vec![
        Wanted::all(ListKind::Namespaces),
        Wanted::all(ListKind::Services),
        Wanted::all(ListKind::EndpointSlices),
    ];
    if pods {
        kinds.push(Wanted::all(ListKind::Pods));
    }
    kinds
}

/// Everything the tools read about Services, in `namespace` or in all namespaces: the
/// Services, EndpointSlices and Pods, and every Namespace object (cluster-scoped: as
/// `kubectl get ns,svc,endpointslices,pods -n NS` lists them).
pub(super) fn service_kinds(namespace: Option<&str>) -> Vec<Wanted> {
    vec![
        Wanted::all(ListKind::Namespaces),
        Wanted::in_namespace(ListKind::Services, namespace),
        Wanted::in_namespace(ListKind::EndpointSlices, namespace),
        Wanted::in_namespace(ListKind::Pods, namespace),
    ]
}
