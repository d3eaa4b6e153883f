//! The command line: argument parsing and dispatch. The only module that prints to stdout
//! or chooses an exit code.

/// `print!` that returns an error instead of panicking when stdout is closed (`| head`).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))?
    };
}

/// [`out!`] with a newline.
macro_rules! outln {
    ($($arg:tt)*) => {{
        $crate::cli::write_stdout(format_args!($($arg)*))?;
        $crate::cli::write_stdout(format_args!("\n"))?;
    }};
}

mod cluster;
mod complete;
mod endpoints;
mod explain;
mod generate;
pub mod manual;
mod node_cache;
mod output;
mod proxy;
mod query;
mod records;
mod resolv_conf;
mod resolve_cost;
mod serve;
mod thread_cache;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

use crate::config::{self, Config};

/// The default listen address of the `--objects` shorthand.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::LOCALHOST,
    1053,
));

/// clusterdns: the cluster zone, served — a drop-in for CoreDNS with its kubernetes plugin.
#[derive(Debug, Parser)]
#[command(name = "clusterdns", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve DNS: from a Corefile, from objects files, or else watching the cluster of the
    /// current kubeconfig context.
    Serve(serve::ServeArgs),
    /// Print the whole zone as an RFC 1035 zone file, JSON or YAML.
    Records(records::RecordsArgs),
    /// Answer one question through the server's plugin chain, from the cluster's objects
    /// (live or files), and print it like dig.
    Query(query::QueryArgs),
    /// EndpointSlices as the controller computes them, and the endpoints kube-proxy uses.
    Endpoints(endpoints::EndpointsArgs),
    /// kube-proxy's rules for the objects, and a tracer for a node's ruleset.
    Proxy(proxy::ProxyArgs),
    /// One Service across pods, slices, kube-proxy, a node's rules and DNS, with the drift
    /// between them (exit 1 when there is any).
    Explain(explain::ExplainArgs),
    /// NodeLocal DNSCache's node-cache: the cache on a link-local address of the node, its
    /// interface and NOTRACK rules kept up, with node-cache's flags.
    NodeCache(node_cache::NodeCacheArgs),
    /// Print the resolv.conf the kubelet writes for a pod.
    ResolvConf(resolv_conf::ResolvConfArgs),
    /// Show every query the stub resolver's search walk makes for a name, and what the fixes
    /// save.
    ResolveCost(resolve_cost::ResolveCostArgs),
    /// Print a shell's completion script: `source <(clusterdns completion bash)`.
    Completion(generate::CompletionArgs),
    /// Print a command's manual page, or write every command's page into a directory.
    Man(generate::ManArgs),
    /// Print the version (as `--version` does).
    Version,
}

/// The name kubectl runs the binary by as its plugin: `kubectl clusterdns ...` runs
/// `kubectl-clusterdns ...` from `PATH`.
const PLUGIN_NAME: &str = "kubectl-clusterdns";

/// Whether the binary was run as kubectl's plugin: by a name (a link or a copy) whose file
/// name is [`PLUGIN_NAME`].
fn run_as_plugin(argv0: Option<&std::ffi::OsStr>) -> bool {
    argv0
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_name)
        .is_some_and(|name| name == PLUGIN_NAME)
}

/// The command line's definition; run as kubectl's plugin, its usage and help say
/// `kubectl clusterdns ...`, as the user typed it.
fn command_for(plugin: bool) -> clap::Command {
    let command = with_manual(Cli::command(), &[]);
    if plugin {
        command.bin_name("kubectl clusterdns")
    } else {
        command
    }
}

/// `command` (at `path` in the tree) and its subcommands, each with its examples and exit
/// statuses ([`manual`]) after the flags of its `--help` (not `-h`).
fn with_manual(command: clap::Command, path: &[&str]) -> clap::Command {
    let mut command = match manual::of(path) {
        Some(manual) => command.after_long_help(manual.help_text()),
        None => command,
    };
    let names: Vec<String> = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_owned())
        .collect();
    for name in names {
        let mut sub_path = path.to_vec();
        sub_path.push(&name);
        command = command.mut_subcommand(&name, |sub| with_manual(sub, &sub_path));
    }
    command
}

/// Where the configuration comes from: a Corefile, or objects files with kubeadm's defaults.
#[derive(Debug, Args)]
struct Source {
    /// A CoreDNS Corefile (`-conf PATH` works too, as in kubeadm's Deployment).
    #[arg(long, value_name = "PATH", conflicts_with = "objects")]
    corefile: Option<PathBuf>,
    /// Objects files (`kubectl get ... -o json` output), served with kubeadm's Corefile.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    objects: Vec<PathBuf>,
    /// Without a Corefile: the resolv.conf whose nameservers *forward* sends other names to
    /// (default /etc/resolv.conf); `none` forwards nothing.
    #[arg(long, value_name = "FILE", conflicts_with = "corefile")]
    upstream: Option<PathBuf>,
}

/// Where the server listens without a Corefile: `serve`'s alone (the tools answer without
/// a socket).
#[derive(Debug, Clone, Args)]
struct Listeners {
    /// Where the server listens without a Corefile (over `--objects` or the cluster).
    #[arg(long, value_name = "ADDR", default_value_t = DEFAULT_LISTEN, conflicts_with = "corefile")]
    listen: SocketAddr,
    /// Without a Corefile: serve `/health` here (the *health* plugin).
    #[arg(long, value_name = "ADDR", conflicts_with = "corefile")]
    health: Option<SocketAddr>,
    /// Without a Corefile: serve `/ready` here (the *ready* plugin).
    #[arg(long, value_name = "ADDR", conflicts_with = "corefile")]
    ready: Option<SocketAddr>,
    /// Without a Corefile: serve `/metrics` here (the *prometheus* plugin).
    #[arg(long, value_name = "ADDR", conflicts_with = "corefile")]
    metrics: Option<SocketAddr>,
}

impl Default for Listeners {
    /// The tools': kubeadm's Corefile on the default address, no HTTP endpoint.
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN,
            health: None,
            ready: None,
            metrics: None,
        }
    }
}

impl Source {
    /// The configuration: the Corefile, or kubeadm's with the `--objects` files on
    /// `listeners`.
    fn config(&self, listeners: &Listeners) -> anyhow::Result<Config> {
        self.shorthand_config(&self.objects, None, listeners)
    }

    /// Kubeadm's Corefile on `listeners` watching the API server of `kubeconfig` (a file and
    /// context; `None`: the pod's service account) instead of reading objects files.
    fn config_watching(
        &self,
        kubeconfig: Option<(PathBuf, String)>,
        listeners: &Listeners,
    ) -> anyhow::Result<Config> {
        let kubeconfig = kubeconfig.map(|(path, context)| (path, Some(context)));
        self.shorthand_config(&[], kubeconfig, listeners)
    }

    fn shorthand_config(
        &self,
        objects: &[PathBuf],
        kubeconfig: Option<(PathBuf, Option<String>)>,
        listeners: &Listeners,
    ) -> anyhow::Result<Config> {
        match &self.corefile {
            // Its errors begin with the file (and line): said once.
            Some(path) => Ok(config::read_corefile(path)?),
            None => {
                let mut options = config::ShorthandOptions::new(listeners.listen);
                options.health = listeners.health;
                options.ready = listeners.ready;
                options.metrics = listeners.metrics;
                if let Some(upstream) = &self.upstream {
                    options.resolv_conf =
                        (upstream.as_os_str() != "none").then(|| upstream.clone());
                    // Asked for by name: a file that cannot serve is an error, as in a Corefile.
                    options.resolv_conf_required = options.resolv_conf.is_some();
                }
                options.kubeconfig = kubeconfig;
                config::shorthand_with(objects, &options)
                    .context("building the --objects configuration")
            }
        }
    }
}

impl Source {
    /// The configuration and the objects it reads: the Corefile's, the `--objects` files,
    /// or else the live cluster's objects the zone is built from (kubeadm's Corefile, `pods
    /// insecure`: namespaces, Services and EndpointSlices).
    fn config_and_objects(
        &self,
        cluster: &cluster::ClusterArgs,
    ) -> anyhow::Result<(Config, cluster::Objects)> {
        let listeners = Listeners::default();
        if self.corefile.is_some() {
            return Ok((self.config(&listeners)?, cluster::Objects::files(&[])));
        }
        let objects =
            cluster::Objects::read(&self.objects, cluster, |_| cluster::zone_kinds(false))?;
        let config = self.shorthand_config(&objects.paths, None, &listeners)?;
        Ok((config, objects))
    }

    /// The blocks of `config`, loaded offline; an objects error says where the files were
    /// given.
    fn load(&self, config: &Config) -> anyhow::Result<Vec<crate::server::LoadedBlock>> {
        crate::server::load(config).map_err(|error| start_error(self.corefile.as_deref(), error))
    }
}

/// A start error with where its files were given: the Corefile (and its line), or the
/// `--objects` flag of the shorthand, whose Corefile the user never wrote.
fn start_error(
    corefile: Option<&std::path::Path>,
    error: crate::server::StartError,
) -> anyhow::Error {
    use crate::server::StartError;
    match (corefile, error) {
        (None, StartError::Objects { error, .. }) => anyhow::anyhow!("--objects {error}"),
        (Some(path), StartError::Objects { line, error }) => {
            anyhow::anyhow!("{}:{line}: kubernetes: objects {error}", path.display())
        }
        (Some(path), error @ (StartError::NoObjects { .. } | StartError::Api { .. })) => {
            anyhow::anyhow!("{}: {error}", path.display())
        }
        (_, error) => error.into(),
    }
}

/// `read_objects` for an `--objects` flag: errors name the flag.
fn read_objects_flag(paths: &[PathBuf]) -> anyhow::Result<crate::source::file::Loaded> {
    crate::source::file::read_objects(paths).map_err(|error| anyhow::anyhow!("--objects {error}"))
}

/// Fails when `namespace` is nowhere in the objects (no Namespace object of that name, and
/// no Service or Pod in it), naming the namespace meant, or those there are.
fn check_namespace(cluster: &crate::model::Cluster, namespace: &str) -> anyhow::Result<()> {
    let known: std::collections::BTreeSet<&str> = cluster
        .namespaces
        .keys()
        .map(String::as_str)
        .chain(cluster.services.keys().map(|key| &*key.namespace))
        .chain(cluster.pods.keys().map(|key| &*key.namespace))
        .collect();
    if known.contains(namespace) {
        return Ok(());
    }
    let hint = match crate::suggest::closest(namespace, known.iter().copied()) {
        Some(close) => format!("; did you mean {close}?"),
        None if known.is_empty() => " (they have none)".to_owned(),
        None => format!(
            " (they have {})",
            known.iter().copied().collect::<Vec<_>>().join(", ")
        ),
    };
    anyhow::bail!("no namespace {namespace} in the objects{hint}")
}

/// `--node NODE` names a node no pod or endpoint in the objects is on: say so (a typo, or
/// the wrong dump), since no endpoint is then local to it.
fn warn_unknown_node(cluster: &crate::model::Cluster, node: Option<&str>) {
    let Some(node) = node else { return };
    let mut nodes: std::collections::BTreeSet<&str> = cluster
        .pods
        .values()
        .filter_map(|pod| pod.details().node_name.as_deref())
        .collect();
    nodes.extend(
        cluster
            .endpoint_slices
            .values()
            .flat_map(|slice| &slice.endpoints)
            .filter_map(|endpoint| endpoint.node_name()),
    );
    if nodes.contains(node) {
        return;
    }
    let known = if nodes.is_empty() {
        "none has a node".to_owned()
    } else {
        format!(
            "the nodes in them: {}",
            nodes.into_iter().collect::<Vec<_>>().join(", ")
        )
    };
    eprintln!(
        "clusterdns: warning: --node {node}: no pod or endpoint in the objects is on that node \
         ({known}); no endpoint is local to it"
    );
}

/// Parse the arguments, run the command, and turn its result into an exit code: 0 on
/// success, 2 on an error (printed to stderr with its causes).
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    // A shell's or kubectl's completion request, answered before anything else is said.
    if let Some(code) = complete::answer(&args) {
        return code;
    }
    let args = node_cache::go_flags(dig_words(coredns_args(args)));
    let plugin = run_as_plugin(args.first().map(OsString::as_os_str));
    let cli = command_for(plugin)
        .try_get_matches_from(args)
        .and_then(|matches| Cli::from_arg_matches(&matches))
        .unwrap_or_else(|error| error.exit());
    // The server logs what it does; the tools print what they were asked, and only
    // warnings beside it.
    let serves = matches!(cli.command, Command::Serve(_) | Command::NodeCache(_));
    init_logging(if serves { "info" } else { "warn" });
    let result = match cli.command {
        Command::Serve(args) => serve::run(&args),
        Command::Records(args) => records::run(&args),
        Command::Query(args) => query::run(&args),
        Command::Endpoints(args) => endpoints::run(&args),
        Command::Proxy(args) => proxy::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::NodeCache(args) => node_cache::run(&args),
        Command::ResolvConf(args) => resolv_conf::run(&args),
        Command::ResolveCost(args) => resolve_cost::run(&args),
        Command::Completion(args) => generate::completion(&args, plugin),
        Command::Man(args) => generate::man(&args),
        Command::Version => generate::version(),
    };
    match result {
        Ok(code) => code,
        // The reader of a pipe went away (`records | head`): nothing more to say, as `cat`.
        Err(error)
            if error.chain().any(|cause| {
                cause
                    .downcast_ref::<StdoutError>()
                    .is_some_and(|StdoutError(io)| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("clusterdns: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// Writing to stdout failed.
#[derive(Debug, thiserror::Error)]
#[error("writing to stdout: {0}")]
pub(crate) struct StdoutError(std::io::Error);

/// Writes to stdout, flushed; what [`out!`] expands to.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) -> Result<(), StdoutError> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_fmt(args)
        .and_then(|()| stdout.flush())
        .map_err(StdoutError)
}

/// CoreDNS is started as `coredns -conf FILE` (kubeadm's Deployment): accept that, and
/// `-conf`/`--conf`/`-conf=FILE` anywhere, as `serve --corefile FILE`.
fn coredns_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    for arg in args {
        match arg.to_str() {
            Some("-conf" | "--conf") => out.push("--corefile".into()),
            Some(text) if text.starts_with("-conf=") || text.starts_with("--conf=") => {
                let value = text.split_once('=').map_or("", |(_, v)| v);
                out.push(format!("--corefile={value}").into());
            }
            _ => out.push(arg),
        }
    }
    if out
        .get(1)
        .and_then(|arg| arg.to_str())
        .is_some_and(|first| first.starts_with("--corefile"))
    {
        out.insert(1, "serve".into());
    }
    out
}

/// dig's options are `+WORD`s, anywhere on the line (`clusterdns query web.shop +short`): for
/// `query`, each becomes its hidden `--dig-word=WORD` right after the command's name, where
/// clap takes it whatever precedes it (even after `--objects FILE...`), and `query` checks it
/// (naming the words it takes). Other commands' arguments, and those after `--`, are left as
/// they are.
fn dig_words(args: Vec<OsString>) -> Vec<OsString> {
    let is_word = |arg: &OsString| {
        arg.to_str().is_some_and(|text| {
            text.strip_prefix('+')
                .is_some_and(|word| word.starts_with(|c: char| c.is_ascii_alphabetic()))
        })
    };
    let end = args
        .iter()
        .position(|arg| arg == "--")
        .unwrap_or(args.len());
    let command = args[..end].iter().enumerate().skip(1).find(|(_, arg)| {
        !arg.to_str()
            .is_some_and(|text| text.starts_with('-') || text.starts_with('+'))
    });
    let Some((at, "query")) = command.map(|(at, arg)| (at, arg.to_str().unwrap_or_default()))
    else {
        return args;
    };
    let mut out = Vec::with_capacity(args.len());
    let mut words = Vec::new();
    let mut command_at = at;
    for (index, arg) in args.into_iter().enumerate() {
        if index < end && is_word(&arg) {
            let word = arg.to_string_lossy()[1..].to_owned();
            words.push(OsString::from(format!("--{}={word}", query::DIG_WORD_FLAG)));
            if index < at {
                command_at -= 1;
            }
        } else {
            out.push(arg);
        }
    }
    out.splice(command_at + 1..command_at + 1, words);
    out
}

/// Whether to colour what goes to a stream: only to a terminal, and never when `NO_COLOR` is
/// set to anything but the empty string (<https://no-color.org>). clap's help and errors follow
/// the same rule (anstream).
fn colour(to_terminal: bool) -> bool {
    to_terminal && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// Logs go to stderr, coloured as [`colour`] says; `RUST_LOG` overrides the default (`level`, with hickory-proto's warnings
/// only, and kube-rs's client errors off: the API watch reports those
/// itself, naming the resource and what was refused, once per outage rather than once per
/// retry).
fn init_logging(level: &str) {
    let quiet_kube = "kube_client=off";
    let filter = match std::env::var("RUST_LOG") {
        // kube-rs's own errors only where asked for by name: the tools and the watch say
        // what failed themselves, in one line.
        Ok(wanted) if !wanted.contains("kube") => {
            tracing_subscriber::EnvFilter::new(format!("{wanted},{quiet_kube}"))
        }
        Ok(wanted) => tracing_subscriber::EnvFilter::new(wanted),
        Err(_) => {
            tracing_subscriber::EnvFilter::new(format!("{level},hickory_proto=warn,{quiet_kube}"))
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour(std::io::IsTerminal::is_terminal(&std::io::stderr())))
        .with_target(false)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        coredns_args(list.iter().map(OsString::from))
            .into_iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn coredns_conf_flag_means_serve() {
        assert_eq!(
            args(&["coredns", "-conf", "/etc/coredns/Corefile"]),
            ["coredns", "serve", "--corefile", "/etc/coredns/Corefile"]
        );
        assert_eq!(args(&["x", "-conf=/c"]), ["x", "serve", "--corefile=/c"]);
        assert_eq!(
            args(&["x", "serve", "-conf", "/c"]),
            ["x", "serve", "--corefile", "/c"]
        );
        assert_eq!(
            args(&["x", "records", "--objects", "f"]),
            ["x", "records", "--objects", "f"]
        );
    }

    #[test]
    fn digs_plus_words_become_querys_flag() {
        let dig = |list: &[&str]| -> Vec<String> {
            dig_words(list.iter().map(OsString::from).collect())
                .into_iter()
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            dig(&["c", "query", "web.shop", "+short"]),
            ["c", "query", "--dig-word=short", "web.shop"]
        );
        assert_eq!(
            dig(&["c", "+short", "query", "--objects", "f", "+nope", "x"]),
            [
                "c",
                "query",
                "--dig-word=short",
                "--dig-word=nope",
                "--objects",
                "f",
                "x"
            ]
        );
        // Other commands, a `+` alone or before a digit, and what follows `--` are left.
        for line in [
            &["c", "records", "+short"][..],
            &["c", "query", "+", "+1"],
            &["c", "query", "--", "+short"],
            &["c", "--help"],
            &["c"],
        ] {
            assert_eq!(dig(line), *line);
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
