//! Where long-running subcommands log: a file or standard error.

use std::path::PathBuf;

use anyhow::{Context, Result};

/// Logs to `logfile` (appended, no colours) or to standard error, and
/// raises the open-file limit; shared by the server, the proxy, the capture
/// daemon and the manager.
pub fn init(logfile: Option<&PathBuf>, level: tracing::Level) -> Result<()> {
    let builder = tracing_subscriber::fmt().with_max_level(level);
    match logfile {
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening log file {}", path.display()))?;
            builder
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(f))
                .init();
        }
        None => {
            use std::io::IsTerminal;
            builder
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(std::io::stderr)
                .init();
        }
    }
    // Every long-running component logs through here: descriptor budgets
    // (per-listener caps), not the default soft limit of 1024, decide how
    // many clients it serves.
    if let Err(e) = httpkit::raise_fd_limit() {
        tracing::warn!(error = %e, "could not raise the open-file limit");
    }
    Ok(())
}
