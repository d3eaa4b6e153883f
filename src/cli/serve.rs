//! `clusterdns serve`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::cluster::ClusterArgs;
use super::{Listeners, Source};
use crate::config::Config;
use crate::limits;
use crate::server::{self, Check, CorefileWatch, Running, next_wait};

/// Arguments of `serve`: a Corefile; or kubeadm's Corefile on `--listen` over objects files;
/// or, with neither, over the cluster of the kubeconfig context kubectl would use.
#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    listeners: Listeners,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The most TCP client connections open at once; past it the longest-idle one is closed.
    /// Default: half of what the file descriptor limit leaves after 128.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_tcp_connections: Option<u64>,
    /// The most queries waiting for an upstream at once, all *forward*s together; past it
    /// they are answered REFUSED. Default: as --max-tcp-connections.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_forwards: Option<u64>,
}

/// Runs the server until SIGINT or SIGTERM, then leaves through lameduck (see [`serve`]).
pub(super) fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    // What the reload plugin compares with: the Corefile as it was read now, not once the
    // server is up (the start can wait for the API server for startup_timeout, and a change
    // made meanwhile must not become the baseline unapplied).
    let baseline = args.source.corefile.as_ref().map(|path| {
        crate::config::read_regular(path, crate::config::MAX_FILE_BYTES).unwrap_or_default()
    });
    let config = if args.source.corefile.is_some() || !args.source.objects.is_empty() {
        if args.source.corefile.is_some() && args.cluster.given() {
            anyhow::bail!(
                "--kubeconfig and --context choose the cluster served without a Corefile; a \
                 Corefile names its own in the kubernetes block (kubeconfig FILE CONTEXT)"
            );
        }
        args.source.config(&args.listeners)?
    } else {
        let kubeconfig = args.cluster.for_corefile()?;
        match &kubeconfig {
            Some((path, context)) => tracing::info!(
                "serving the cluster of context {context} ({}); --corefile or --objects to \
                 serve something else",
                path.display()
            ),
            None => tracing::info!("serving the cluster of this pod's service account"),
        }
        args.source.config_watching(kubeconfig, &args.listeners)?
    };
    descriptor_budget(args);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(super::thread_cache::on_thread_start)
        .on_thread_park(super::thread_cache::on_thread_park)
        .build()?;
    let corefile = args.source.corefile.clone().zip(baseline);
    runtime.block_on(serve(config, corefile))
}

/// Raises the descriptor limit to the hard one and sets the caps that share it out.
fn descriptor_budget(args: &ServeArgs) {
    match limits::raise_nofile() {
        Ok(limit) if limit.soft > limit.before => tracing::info!(
            "file descriptor limit raised from {} to {} (the hard limit)",
            limit.before,
            limit.soft
        ),
        Ok(limit) => tracing::info!("file descriptor limit {} (the hard limit)", limit.soft),
        Err(error) => tracing::warn!(
            "file descriptor limit {} not raised to the hard limit: {error}",
            limits::soft_nofile()
        ),
    }
    let cap = |n: Option<u64>| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    limits::configure(cap(args.max_tcp_connections), cap(args.max_forwards));
    let state = limits::limits();
    tracing::info!(
        "at most {} TCP connections (the longest-idle is closed past it) and {} forwards in flight",
        state.tcp.max(),
        state.forwards.max()
    );
}

/// `corefile`: the Corefile's path and the text the configuration was read from.
///
/// Signals as CoreDNS takes them: SIGTERM and SIGINT leave through lameduck, SIGQUIT at
/// once; SIGUSR1 reloads the Corefile (a broken one keeps the running configuration, as
/// *reload* does); SIGHUP and SIGUSR2 are logged and ignored. All are taken before the
/// server starts, so that none kills the process by its default action.
async fn serve(config: Config, corefile: Option<(PathBuf, Vec<u8>)>) -> anyhow::Result<ExitCode> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut reload = signal(SignalKind::user_defined1())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let mut upgrade = signal(SignalKind::user_defined2())?;
    let mut quit = signal(SignalKind::quit())?;
    tokio::spawn(async move {
        if quit.recv().await.is_some() {
            tracing::info!("SIGQUIT: exiting at once, without lameduck");
            std::process::exit(0);
        }
    });
    let mut running = server::start(&config).await.map_err(|error| {
        super::start_error(corefile.as_ref().map(|(path, _)| path.as_path()), error)
    })?;
    super::thread_cache::started();
    let mut watch = corefile
        .as_ref()
        .map(|(path, text)| CorefileWatch::new(path, text, running.reload_metrics()));
    let mut next_check = next_check(running.reload_schedule());
    loop {
        let due = async {
            match next_check {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let forced = tokio::select! {
            _ = terminate.recv() => {
                tracing::info!("SIGTERM: shutting down");
                break;
            }
            _ = interrupt.recv() => {
                tracing::info!("SIGINT: shutting down");
                break;
            }
            _ = hangup.recv() => {
                tracing::info!("SIGHUP: ignored (SIGUSR1 reloads the Corefile)");
                continue;
            }
            _ = upgrade.recv() => {
                tracing::info!("SIGUSR2: ignored (no in-place upgrade; SIGUSR1 reloads the Corefile)");
                continue;
            }
            _ = reload.recv() => true,
            () = due => false,
        };
        let Some(watch) = watch.as_mut() else {
            tracing::info!(
                "SIGUSR1: no Corefile to reload (the objects files are watched by themselves)"
            );
            continue;
        };
        if forced {
            tracing::info!("SIGUSR1: reloading the Corefile");
        }
        let had_schedule = running.reload_schedule().is_some();
        reread(&mut running, watch, forced).await;
        let schedule = running.reload_schedule();
        if had_schedule && schedule.is_none() {
            tracing::info!("reload: no longer in the Corefile; not checking it");
        }
        next_check = next_check_after(schedule, next_check, forced);
    }
    running.shut_down().await;
    Ok(ExitCode::SUCCESS)
}

/// When the *reload* plugin checks next, with `schedule` (interval, jitter).
fn next_check(schedule: Schedule) -> Option<tokio::time::Instant> {
    schedule.map(|(interval, jitter)| tokio::time::Instant::now() + next_wait(interval, jitter))
}

/// The next check after one: a new wait after a scheduled check, the one already set after a
/// signal (unless the schedule came or went with the reloaded file).
fn next_check_after(
    schedule: Schedule,
    pending: Option<tokio::time::Instant>,
    forced: bool,
) -> Option<tokio::time::Instant> {
    match (forced, pending, schedule) {
        (true, Some(at), Some(_)) => Some(at),
        _ => next_check(schedule),
    }
}

/// Reads the Corefile again (`forced`: even if its bytes are unchanged) and applies it if
/// it parses; the running configuration stays otherwise.
async fn reread(running: &mut Running, watch: &mut CorefileWatch, forced: bool) {
    let check = if forced {
        watch.reread()
    } else {
        watch.check()
    };
    match check {
        Check::Unchanged => {}
        Check::Failed(message) => {
            tracing::error!("Corefile reload failed, the running configuration stays: {message}");
        }
        Check::Changed(config) => {
            if apply(running, &config).await {
                watch.applied();
            } else {
                watch.apply_failed();
            }
        }
    }
}

async fn apply(running: &mut Running, config: &Config) -> bool {
    match running.apply(config).await {
        Ok(()) => {
            tracing::info!("Corefile reloaded");
            true
        }
        Err(error) => {
            tracing::error!("Corefile reload failed, the running configuration stays: {error}");
            false
        }
    }
}

/// The *reload* schedule (interval, jitter), if the Corefile has one.
type Schedule = Option<(std::time::Duration, std::time::Duration)>;
