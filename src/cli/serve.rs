//! `clusterdns serve`.

use std::process::ExitCode;

use clap::Args;

use super::Source;
use crate::server;

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    source: Source,
}

/// Runs the server until SIGINT or SIGTERM.
pub(super) fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let config = args.source.config()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let running = server::start(&config).await?;
        wait_for_signal().await;
        tracing::info!("shutting down");
        running.stop().await;
        anyhow::Ok(ExitCode::SUCCESS)
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
