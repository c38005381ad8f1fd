//! `streamgauge capture --config FILE`: the daemon until SIGTERM/SIGINT
//! (SIGHUP re-reads the token file).

use std::path::Path;

use ::capture::daemon::{run_until_signal, DaemonConfig};
use anyhow::{Context, Result};

/// Validates the configuration, starts the daemon, stops it on a signal.
pub fn run(config: &Path, level: tracing::Level) -> Result<bool> {
    let text =
        std::fs::read_to_string(config).with_context(|| format!("reading {}", config.display()))?;
    let cfg = DaemonConfig::from_toml(&text).with_context(|| format!("{}", config.display()))?;
    crate::logging::init(None, level)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // HTTPS unless plain_http (the certificate's fingerprint is logged).
    let scheme = if cfg.plain_http { "http" } else { "https" };
    runtime.block_on(run_until_signal(cfg, move |addr| {
        println!("capture daemon: control API on {scheme}://{addr}");
    }))?;
    Ok(true)
}
