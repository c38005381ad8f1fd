//! `streamgauge capture --config FILE`: the daemon until SIGTERM/SIGINT.

use std::path::Path;

use ::capture::daemon::{Daemon, DaemonConfig};
use anyhow::{Context, Result};

/// Validates the configuration, starts the daemon, stops it on a signal.
pub fn run(config: &Path, level: tracing::Level) -> Result<bool> {
    let text =
        std::fs::read_to_string(config).with_context(|| format!("reading {}", config.display()))?;
    let cfg = DaemonConfig::from_toml(&text).with_context(|| format!("{}", config.display()))?;
    crate::server::init_logging(None, level)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        // Installed before the API listens, so no signal hits the default action.
        let mut term = signal(SignalKind::terminate()).context("installing SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("installing SIGINT handler")?;
        let daemon = Daemon::start(cfg).await?;
        println!(
            "capture daemon: control API on http://{}",
            daemon.local_addr()
        );
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("shutting down: closing every session's files");
        daemon.shutdown().await;
        Ok(true)
    })
}
