//! `clusterdns serve`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use tokio::sync::mpsc;

use super::Source;
use crate::config::Config;
use crate::limits;
use crate::metrics::reload::ReloadMetrics;
use crate::server::{self, Check, CorefileWatch, Running, next_wait};

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    source: Source,
    /// The most TCP client connections open at once; past it the longest-idle one is closed.
    /// Default: half of what the file descriptor limit leaves after 128.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_tcp_connections: Option<u64>,
    /// The most queries waiting for an upstream at once, all *forward*s together; past it
    /// they are answered REFUSED. Default: as --max-tcp-connections.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_forwards: Option<u64>,
}

/// Runs the server until SIGINT or SIGTERM, then leaves through lameduck.
pub(super) fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    descriptor_budget(args);
    // What the reload plugin compares with: the Corefile as it was read now, not once the
    // server is up (the start can wait for the API server for startup_timeout, and a change
    // made meanwhile must not become the baseline unapplied).
    let baseline = args
        .source
        .corefile
        .as_ref()
        .map(|path| std::fs::read(path).unwrap_or_default());
    let config = args.source.config()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
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
async fn serve(config: Config, corefile: Option<(PathBuf, Vec<u8>)>) -> anyhow::Result<ExitCode> {
    let mut running = server::start(&config).await.map_err(|error| {
        super::start_error(corefile.as_ref().map(|(path, _)| path.as_path()), error)
    })?;
    let (reloads, mut reloaded) = mpsc::channel::<Box<Config>>(1);
    let (results, results_in) = mpsc::channel::<Applied>(1);
    if let Some((path, text)) = &corefile {
        spawn_reloader(
            path,
            text,
            running.reload_metrics(),
            running.reload_schedule(),
            reloads,
            results_in,
        );
    }
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            Some(config) = reloaded.recv() => {
                let applied = apply(&mut running, &config)
                    .await
                    .then(|| running.reload_schedule());
                let _ = results.send(applied).await;
            }
        }
    }
    tracing::info!("shutting down");
    running.shut_down().await;
    Ok(ExitCode::SUCCESS)
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

/// What became of a reloaded configuration: `None` if it was not applied, else the schedule
/// of the configuration now running.
type Applied = Option<Schedule>;

/// The *reload* plugin: checks the Corefile on its schedule and sends changed configurations
/// to the serving loop, which applies them and answers with the schedule now in force — a
/// reloaded `reload` directive takes effect from the next check, and a Corefile without one
/// stops the checks, as in CoreDNS.
fn spawn_reloader(
    path: &Path,
    text: &[u8],
    metrics: Arc<ReloadMetrics>,
    schedule: Schedule,
    reloads: mpsc::Sender<Box<Config>>,
    mut results: mpsc::Receiver<Applied>,
) {
    let Some((mut interval, mut jitter)) = schedule else {
        return;
    };
    let mut watch = CorefileWatch::new(path, text, metrics);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(next_wait(interval, jitter)).await;
            match watch.check() {
                Check::Unchanged => {}
                Check::Failed(message) => {
                    tracing::error!(
                        "Corefile reload failed, the running configuration stays: {message}"
                    );
                }
                Check::Changed(config) => {
                    if reloads.send(config).await.is_err() {
                        return;
                    }
                    match results.recv().await {
                        Some(Some(schedule)) => {
                            watch.applied();
                            let Some(next) = schedule else {
                                tracing::info!(
                                    "reload: no longer in the Corefile; not checking it"
                                );
                                return;
                            };
                            (interval, jitter) = next;
                        }
                        Some(None) => watch.apply_failed(),
                        None => return,
                    }
                }
            }
        }
    });
}
