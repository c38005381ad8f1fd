//! The daemon's life as a process: started, then driven by signals until
//! asked to stop. `streamgauge capture --config` is this function.
//!
//! | signal | effect |
//! |---|---|
//! | SIGTERM, SIGINT | every session stopped: files closed with valid trailers and metadata, final counters sent; sessions that were running start again at the next start |
//! | SIGHUP | the token file is re-read; a file that does not parse is refused (logged) and the tokens in force stay |

use super::{Daemon, DaemonConfig, DaemonError};
use std::net::SocketAddr;
use tokio::signal::unix::{signal, SignalKind};

/// Starts the daemon, calls `ready` with the control API's address, then
/// serves until SIGTERM or SIGINT (re-reading the token file on SIGHUP)
/// and shuts down cleanly. Needs a tokio runtime with I/O and time.
pub async fn run_until_signal(
    config: DaemonConfig,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), DaemonError> {
    let io = |what: &str| {
        let what = what.to_string();
        move |source| DaemonError::Io { what, source }
    };
    // Installed before the API listens, so no signal hits the default action.
    let mut term = signal(SignalKind::terminate()).map_err(io("SIGTERM handler"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(io("SIGINT handler"))?;
    let mut hup = signal(SignalKind::hangup()).map_err(io("SIGHUP handler"))?;
    let daemon = Daemon::start(config).await?;
    ready(daemon.local_addr());
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = hup.recv() => match daemon.reload_tokens() {
                Ok(()) => tracing::info!("SIGHUP: token file re-read"),
                Err(e) => tracing::error!(error = %e, "SIGHUP: token file refused, the previous tokens stay in force"),
            },
        }
    }
    tracing::info!("shutting down: closing every session's files");
    daemon.shutdown().await;
    Ok(())
}
