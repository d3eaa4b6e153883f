//! `clusterdns node-cache`: NodeLocal DNSCache's node-cache (kubernetes/dns `cmd/node-cache`)
//! with node-cache's flags, single-dash as Go writes them (`-localip 169.254.20.10,10.96.0.10
//! -conf /etc/Corefile -upstreamsvc kube-dns-upstream`) or double-dash. The Corefile is made
//! from the template and the kube-dns ConfigMap ([`crate::node_cache::template`]) and served
//! by the server `serve` runs; the interface and the rules around it are
//! [`crate::node_cache::Networking`]'s.

use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;

use crate::config::{self, Config};
use crate::node_cache::netfilter::Choice;
use crate::node_cache::template::{self, Pillars};
use crate::node_cache::{
    Interface, KubeDnsConfig, LinkKind, Netfilter, Networking, SetupErrors, kube_dns_config, rules,
    service_env,
};
use crate::server::{self, Running};

/// The directory node-cache reads the kube-dns ConfigMap from when `-kubednscm` is not given
/// and it exists.
const DEFAULT_KUBE_DNS_DIR: &str = "/etc/kube-dns";
/// How often the template and the ConfigMap are read again (node-cache's 10 s for both).
const CONFIG_PERIOD: Duration = Duration::from_secs(10);

/// node-cache's flags (its names and defaults; `-conf` is `--corefile`).
#[derive(Debug, Args)]
pub(super) struct NodeCacheArgs {
    /// The addresses to serve on, comma-separated, all of one family (169.254.20.10, and the
    /// kube-dns ClusterIP in the transparent set-up).
    #[arg(long, value_name = "IPS")]
    localip: String,
    /// Make the interface with the local addresses (`-setupinterface=false` not to).
    #[arg(long, value_name = "BOOL", default_value_t = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    setupinterface: bool,
    /// The interface's name.
    #[arg(long, value_name = "NAME", default_value = "nodelocaldns")]
    interfacename: String,
    /// How often the rules and the interface are checked and put back: seconds (node-cache
    /// multiplies its value by a second), or a duration with a unit (`5s`, `1m`).
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = parse_interval)]
    syncinterval: Duration,
    /// Where `coredns_nodecache_setup_errors_total` is served (`/metrics`).
    #[arg(
        long = "metrics-listen-address",
        value_name = "ADDR",
        default_value = "0.0.0.0:9353"
    )]
    metrics_listen_address: SocketAddr,
    /// Write the NOTRACK and ACCEPT rules (`-setupiptables=false` not to).
    #[arg(long, value_name = "BOOL", default_value_t = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    setupiptables: bool,
    /// The Corefile template (the node-local-dns ConfigMap's `Corefile`).
    #[arg(
        long,
        value_name = "PATH",
        default_value = "/etc/coredns/Corefile.base"
    )]
    basecorefile: PathBuf,
    /// Where the Corefile made from the template is written and served from (`-conf`).
    #[arg(long, value_name = "PATH", default_value = "/etc/Corefile")]
    corefile: PathBuf,
    /// The kube-dns ConfigMap's directory (stubDomains, upstreamNameservers); default
    /// /etc/kube-dns when it exists.
    #[arg(long, value_name = "DIR")]
    kubednscm: Option<PathBuf>,
    /// The Service whose ClusterIP is `__PILLAR__CLUSTER__DNS__`, read from
    /// `$<NAME>_SERVICE_HOST`.
    #[arg(long, value_name = "NAME", default_value = "kube-dns")]
    upstreamsvc: String,
    /// The port of the Corefile's *health* listener, for its NOTRACK rules.
    #[arg(long = "health-port", value_name = "PORT", default_value_t = 8080)]
    health_port: u16,
    /// Leave the rules and the interface at exit.
    #[arg(long, value_name = "BOOL", default_value_t = false, num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    skipteardown: bool,
    /// Accepted for node-cache's manifests: the Corefile is applied in-process whenever it
    /// is made anew, with or without it.
    #[arg(long, value_name = "BOOL", default_value_t = false, num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    reloadwithsignal: bool,
    /// CoreDNS's `-pidfile`: written with the process id once the server serves.
    #[arg(long, value_name = "PATH")]
    pidfile: Option<PathBuf>,
    /// CoreDNS's `-dns.port`: the DNS port of the rules and the stub domains' blocks.
    #[arg(long = "dns.port", value_name = "PORT", default_value_t = 53)]
    dns_port: u16,
    /// Which tool writes the rules: iptables in the mode of the kubelet's chains where the
    /// node has it, else nftables (`auto`).
    #[arg(long, value_enum, value_name = "BACKEND", default_value = "auto")]
    netfilter: Choice,
    /// Test-only: the kind of link made (`dummy` on real nodes; `bridge` where the kernel
    /// has no dummy module).
    #[arg(long = "link-kind", value_enum, default_value = "dummy", hide = true)]
    link_kind: LinkKind,
}

/// node-cache's flag names that take one dash in Go: each `-NAME` or `-NAME=VALUE` after the
/// `node-cache` command gets its second dash. (`-conf` is rewritten for every command, as
/// CoreDNS's flag, by `coredns_args`.)
const GO_FLAGS: &[&str] = &[
    "localip",
    "setupinterface",
    "interfacename",
    "syncinterval",
    "metrics-listen-address",
    "setupiptables",
    "basecorefile",
    "corefile",
    "kubednscm",
    "upstreamsvc",
    "health-port",
    "skipteardown",
    "reloadwithsignal",
    "pidfile",
    "dns.port",
    "netfilter",
];

/// `args` with node-cache's single-dash flags written with two, when the command is
/// `node-cache`; other commands' arguments as they are.
pub(super) fn go_flags(args: Vec<OsString>) -> Vec<OsString> {
    let command = args
        .iter()
        .skip(1)
        .position(|arg| !arg.to_str().is_some_and(|text| text.starts_with('-')));
    let Some(at) = command.map(|at| at + 1) else {
        return args;
    };
    if args[at] != "node-cache" {
        return args;
    }
    let end = args
        .iter()
        .position(|arg| arg == "--")
        .unwrap_or(args.len());
    args.into_iter()
        .enumerate()
        .map(|(index, arg)| {
            let Some(text) = arg.to_str().filter(|_| index > at && index < end) else {
                return arg;
            };
            let Some(rest) = text.strip_prefix('-').filter(|rest| !rest.starts_with('-')) else {
                return arg;
            };
            let name = rest.split_once('=').map_or(rest, |(name, _)| name);
            if GO_FLAGS.contains(&name) {
                OsString::from(format!("--{rest}"))
            } else {
                arg
            }
        })
        .collect()
}

/// `-syncinterval`: a number of seconds, or a duration with a unit (`ms`, `s`, `m`, `h`).
fn parse_interval(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds or a duration like 5s"))?;
    let interval = match unit {
        "" | "s" => Duration::from_secs(number),
        "ms" => Duration::from_millis(number),
        "m" => Duration::from_secs(number * 60),
        "h" => Duration::from_secs(number * 3600),
        _ => return Err(format!("{text:?}: unknown unit {unit:?} (ms, s, m or h)")),
    };
    if interval.is_zero() {
        return Err("the interval must be more than zero".to_owned());
    }
    Ok(interval)
}

/// node-cache's `-localip` check: every address parses, all of one family.
fn parse_local_ips(text: &str) -> anyhow::Result<Vec<IpAddr>> {
    let mut ips: Vec<IpAddr> = Vec::new();
    for part in text.split(',') {
        let ip: IpAddr = part.trim().parse().map_err(|_| {
            anyhow::anyhow!(
                "-localip: {part:?} is not an IP address (expected addresses separated by \
                 commas, e.g. 169.254.20.10,10.96.0.10)"
            )
        })?;
        if let Some(first) = ips.first()
            && first.is_ipv6() != ip.is_ipv6()
        {
            anyhow::bail!(
                "-localip: {ip} is not of the family of {first}; the local addresses must all \
                 be IPv4 or all IPv6"
            );
        }
        ips.push(ip);
    }
    Ok(ips)
}

/// Everything the Corefile is made from, read again every [`CONFIG_PERIOD`].
struct Maker<'a> {
    args: &'a NodeCacheArgs,
    local_ips: &'a [IpAddr],
    kube_dns_dir: Option<PathBuf>,
}

impl Maker<'_> {
    /// The Corefile's text and its configuration; an error says which input was wrong.
    fn make(&self) -> anyhow::Result<(String, Config)> {
        let base = &self.args.basecorefile;
        let template_text = std::fs::read_to_string(base)
            .with_context(|| format!("-basecorefile {}: reading the template", base.display()))?;
        let kube_dns = match &self.kube_dns_dir {
            Some(dir) => kube_dns_config::read_dir(dir)?,
            None => KubeDnsConfig::default(),
        };
        let cluster_dns =
            service_env::cluster_ip(&self.args.upstreamsvc, |name| std::env::var(name).ok());
        let why = cluster_dns.as_ref().err().map(ToString::to_string);
        let pillars = Pillars {
            local_ips: self.local_ips,
            port: self.args.dns_port,
            cluster_dns: cluster_dns.map_err(|_| why.as_deref().unwrap_or_default()),
            kube_dns: &kube_dns,
        };
        let text = template::fill(&template_text, &base.display().to_string(), &pillars)?;
        let config = config::parse_corefile(&text, &self.args.corefile).with_context(|| {
            format!(
                "the Corefile made from -basecorefile {} (written to {})",
                base.display(),
                self.args.corefile.display()
            )
        })?;
        Ok((text, config))
    }

    /// Writes the Corefile where `-conf` says, as node-cache does.
    fn write(&self, text: &str) -> anyhow::Result<()> {
        std::fs::write(&self.args.corefile, text).with_context(|| {
            format!(
                "-conf {}: writing the Corefile",
                self.args.corefile.display()
            )
        })
    }
}

/// Runs node-cache until SIGTERM or SIGINT.
pub(super) fn run(args: &NodeCacheArgs) -> anyhow::Result<ExitCode> {
    let local_ips = parse_local_ips(&args.localip)?;
    if args.reloadwithsignal {
        tracing::info!("-reloadwithsignal: the Corefile is applied in-process whenever it changes");
    }
    let kube_dns_dir = args.kubednscm.clone().or_else(|| {
        Path::new(DEFAULT_KUBE_DNS_DIR)
            .is_dir()
            .then(|| PathBuf::from(DEFAULT_KUBE_DNS_DIR))
    });
    if kube_dns_dir.is_none() {
        tracing::info!("Skipping kube-dns configmap sync as no directory was specified");
    }
    let maker = Maker {
        args,
        local_ips: &local_ips,
        kube_dns_dir,
    };
    // Everything read and checked before the node is touched: a bad input leaves nothing.
    let (text, config) = maker.make()?;
    let netfilter = if args.setupiptables {
        let backend = args.netfilter.backend(local_ips[0].is_ipv6())?;
        let rules = rules::rules(&local_ips, args.dns_port, args.health_port);
        Some(Netfilter::new(backend, rules))
    } else {
        None
    };
    let interface = args.setupinterface.then(|| Interface {
        name: args.interfacename.clone(),
        kind: args.link_kind,
        addresses: local_ips.clone(),
    });
    maker.write(&text)?;
    tracing::info!("Using config file:\n{text}");
    let networking = Networking {
        interface,
        netfilter,
    };
    if let Err(error) = crate::limits::raise_nofile() {
        tracing::warn!("file descriptor limit not raised: {error}");
    }
    crate::limits::configure(None, None);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(super::thread_cache::on_thread_start)
        .on_thread_park(super::thread_cache::on_thread_park)
        .build()?;
    runtime.block_on(node_cache(&maker, text, config, networking))
}

/// Sets up, serves, keeps up and tears down (module docs).
async fn node_cache(
    maker: &Maker<'_>,
    mut text: String,
    config: Config,
    mut networking: Networking,
) -> anyhow::Result<ExitCode> {
    use tokio::signal::unix::{SignalKind, signal};
    let args = maker.args;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut reload = signal(SignalKind::user_defined1())?;
    let errors = Arc::new(SetupErrors::default());

    // A failed start leaves what it made removed, whatever -skipteardown says.
    let fail = |networking: &mut Networking, error: anyhow::Error| {
        if let Err(teardown) = tokio::task::block_in_place(|| networking.teardown()) {
            tracing::error!("tearing down after a failed start: {teardown}");
        }
        Err(error)
    };
    if let Err(error) = tokio::task::block_in_place(|| networking.setup_interface()) {
        return fail(&mut networking, error.into());
    }
    let mut running = match server::start(&config).await {
        Ok(running) => running,
        Err(error) => {
            let error = super::start_error(Some(&args.corefile), error);
            return fail(&mut networking, error);
        }
    };
    super::thread_cache::started();
    if let Err(error) = tokio::task::block_in_place(|| networking.setup_rules()) {
        running.shut_down().await;
        return fail(&mut networking, error.into());
    }
    if let Some(path) = &args.pidfile
        && let Err(error) = std::fs::write(path, format!("{}\n", std::process::id()))
    {
        tracing::error!("-pidfile {}: {error}", path.display());
    }
    serve_metrics(args.metrics_listen_address, Arc::clone(&errors)).await;

    let mut sync = tokio::time::interval(args.syncinterval);
    sync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    sync.tick().await;
    let mut config_check = tokio::time::interval(CONFIG_PERIOD);
    config_check.tick().await;
    loop {
        tokio::select! {
            _ = terminate.recv() => {
                tracing::info!("SIGTERM: shutting down");
                break;
            }
            _ = interrupt.recv() => {
                tracing::info!("SIGINT: shutting down");
                break;
            }
            _ = sync.tick() => {
                tokio::task::block_in_place(|| networking.check(&errors));
            }
            _ = config_check.tick() => {
                remake(maker, &mut text, &mut running, &errors).await;
            }
            _ = reload.recv() => {
                tracing::info!("SIGUSR1: making the Corefile again");
                remake(maker, &mut text, &mut running, &errors).await;
            }
        }
    }
    // The rules and the interface go first, while the server still answers, as node-cache's
    // teardown runs at SIGTERM before CoreDNS's servers stop: a query that reached the local
    // address before the rules went is answered, and the ones after them go to kube-dns
    // through kube-proxy. Stopping the server first would refuse every query sent to the
    // local addresses in between.
    let torn_down = if args.skipteardown {
        tracing::info!("-skipteardown: leaving the interface and the rules");
        Ok(())
    } else {
        tokio::task::block_in_place(|| networking.teardown())
    };
    running.shut_down().await;
    torn_down?;
    Ok(ExitCode::SUCCESS)
}

/// Makes the Corefile again from the template and the ConfigMap; a changed one is written and
/// applied. A failure keeps the running configuration and counts a `configmap` error, as
/// node-cache does.
async fn remake(maker: &Maker<'_>, text: &mut String, running: &mut Running, errors: &SetupErrors) {
    let (new_text, config) = match maker.make() {
        Ok(made) => made,
        Err(error) => {
            tracing::error!("Invalid config, the running one stays: {error:#}");
            errors.count("configmap");
            return;
        }
    };
    if new_text == *text {
        return;
    }
    if let Err(error) = maker.write(&new_text) {
        tracing::error!("{error:#}");
        errors.count("configmap");
        return;
    }
    match running.apply(&config).await {
        Ok(()) => {
            tracing::info!("Updated Corefile, reloaded:\n{new_text}");
            *text = new_text;
        }
        Err(error) => {
            tracing::error!("Corefile reload failed, the running configuration stays: {error}");
            errors.count("configmap");
        }
    }
}

/// Serves node-cache's own metric on `addr` (`/metrics`); a listener that cannot bind is
/// logged, as node-cache logs it, and the cache runs on.
async fn serve_metrics(addr: SocketAddr, errors: Arc<SetupErrors>) {
    use http_body_util::Full;
    use hyper::body::Bytes;
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!("Failed to start metrics handler on {addr}: {error}");
            return;
        }
    };
    if let Ok(bound) = listener.local_addr() {
        tracing::info!("listening for node-cache metrics on http://{bound}/metrics");
    }
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let errors = Arc::clone(&errors);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
                    let errors = Arc::clone(&errors);
                    async move {
                        let mut response = if request.uri().path() == "/metrics" {
                            hyper::Response::new(Full::new(Bytes::from(errors.exposition())))
                        } else {
                            let mut response = hyper::Response::new(Full::new(Bytes::from(
                                "404 page not found\n",
                            )));
                            *response.status_mut() = hyper::StatusCode::NOT_FOUND;
                            response
                        };
                        response.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static(
                                "text/plain; version=0.0.4; charset=utf-8",
                            ),
                        );
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rewrite(list: &[&str]) -> Vec<String> {
        go_flags(list.iter().map(OsString::from).collect())
            .into_iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn single_dash_flags_get_two_after_node_cache_only() {
        assert_eq!(
            rewrite(&[
                "c",
                "node-cache",
                "-localip",
                "169.254.20.10",
                "-setupiptables=false",
                "--upstreamsvc",
                "x",
                "-health-port",
                "9",
                "-unknown",
            ]),
            [
                "c",
                "node-cache",
                "--localip",
                "169.254.20.10",
                "--setupiptables=false",
                "--upstreamsvc",
                "x",
                "--health-port",
                "9",
                "-unknown",
            ]
        );
        assert_eq!(
            rewrite(&["c", "serve", "-localip"]),
            ["c", "serve", "-localip"]
        );
    }

    #[test]
    fn intervals_are_seconds_or_durations() {
        assert_eq!(parse_interval("60"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_interval("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_interval("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("5d").unwrap_err().contains("unknown unit"));
        assert!(parse_interval("x").is_err());
    }

    #[test]
    fn local_ips_parse_and_share_a_family() {
        assert_eq!(
            parse_local_ips("169.254.20.10,10.96.0.10").unwrap().len(),
            2
        );
        let error = parse_local_ips("169.254.20.10,fd00::a").unwrap_err();
        assert!(error.to_string().contains("all be IPv4 or all IPv6"));
        let error = parse_local_ips("").unwrap_err();
        assert!(error.to_string().contains("\"\" is not an IP address"));
    }
}
