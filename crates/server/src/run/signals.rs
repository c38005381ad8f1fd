//! The signals `streamgauge server` acts on: SIGTERM and SIGINT stop it;
//! with a token file or feedback rules, SIGHUP re-reads them (otherwise
//! SIGHUP keeps its default action, as in the reference).

use super::RunError;
use crate::Server;

/// Wraps a failed handler installation.
#[cfg(unix)]
fn io(context: &str) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        context: context.to_owned(),
        source,
    }
}

/// Signal handlers, installed before the server starts so that no signal
/// sent once it listens can hit the default action.
pub struct Signals {
    /// SIGTERM.
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    /// SIGINT.
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    /// SIGHUP, when a token or rules file is re-readable.
    #[cfg(unix)]
    hup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Installs the handlers (inside the runtime).
    pub fn install(reload: bool) -> Result<Signals, RunError> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let term = signal(SignalKind::terminate()).map_err(io("installing SIGTERM handler"))?;
            let hup = match reload {
                true => {
                    Some(signal(SignalKind::hangup()).map_err(io("installing SIGHUP handler"))?)
                }
                false => None,
            };
            let int = signal(SignalKind::interrupt()).map_err(io("installing SIGINT handler"))?;
            Ok(Signals { term, int, hup })
        }
        #[cfg(not(unix))]
        {
            let _ = reload;
            Ok(Signals {})
        }
    }

    /// Waits for SIGTERM or SIGINT, re-reading the token file and the
    /// feedback rules (`rules`) on SIGHUP.
    pub async fn wait(
        &mut self,
        server: &Server,
        rules: Option<&std::path::Path>,
    ) -> Result<(), RunError> {
        #[cfg(unix)]
        loop {
            let hup = &mut self.hup;
            tokio::select! {
                _ = self.term.recv() => return Ok(()),
                _ = self.int.recv() => return Ok(()),
                Some(_) = async { hup.as_mut()?.recv().await } => {
                    super::security::reload_auth(server);
                    if let Some(path) = rules {
                        reload_rules(server, path);
                    }
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = (server, rules);
            tokio::signal::ctrl_c()
                .await
                .map_err(|source| RunError::Io {
                    context: "waiting for Ctrl-C".into(),
                    source,
                })
        }
    }
}

/// Re-reads the feedback rules; a file that no longer parses leaves the
/// rules in force.
fn reload_rules(server: &Server, path: &std::path::Path) {
    match crate::feedback::rules::load(path) {
        Ok(rules) => {
            tracing::info!(rules = rules.len(), file = %path.display(), "feedback rules reloaded");
            server.feedback().set_rules(rules);
        }
        Err(e) => {
            tracing::error!(error = %e, "feedback rules not reloaded; the previous ones stay")
        }
    }
}
