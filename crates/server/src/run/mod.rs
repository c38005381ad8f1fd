//! Running the server as a program: what `streamgauge server` does
//! between parsing its flags and exiting.
//!
//! - [`config`]: the command line's settings ([`Options`]) over the
//!   configuration file's keys ([`file`]) over the defaults, validated
//!   without I/O besides reading that file, into a [`Resolved`];
//! - [`privileges`]: `--user`/`--group`, giving up root once bound;
//! - [`signals`]: SIGTERM/SIGINT stop, SIGHUP re-reads tokens and rules;
//! - [`serve`]: all of it in order, until a stop signal.
//!
//! ```no_run
//! # fn demo() -> Result<(), server::run::RunError> {
//! let options = server::run::Options {
//!     listen: Some(0),
//!     ..Default::default()
//! };
//! let resolved = options.resolve()?;
//! server::run::serve(resolved)?; // until SIGTERM or SIGINT
//! # Ok(()) }
//! ```

/// Returns early with [`RunError::Invalid`] built like `format!`.
macro_rules! bail {
    ($($t:tt)*) => {
        return Err($crate::run::RunError::Invalid(format!($($t)*)))
    };
}

pub mod config;
pub mod control;
pub mod file;
pub mod http;
pub mod limits;
pub mod privileges;
pub mod security;
pub mod signals;

use std::path::PathBuf;

pub use config::{BackendKind, Options, Resolved};

use crate::{Server, ServerError};

/// Why the server could not be configured, started or run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The configuration file could not be read.
    #[error("reading {}", path.display())]
    ReadConfig {
        /// The file.
        path: PathBuf,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// A setting is invalid, or settings contradict each other; the
    /// message names the setting and what it wants.
    #[error("{0}")]
    Invalid(String),
    /// A system call failed (signal handlers, the async runtime).
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// A user or group lookup, or the switch to them, failed.
    #[error("{context}")]
    Os {
        /// What was being done, and what to do about it.
        context: String,
        /// The system error.
        #[source]
        source: nix::errno::Errno,
    },
    /// The server did not start.
    #[error(transparent)]
    Start(#[from] ServerError),
}

/// Parses a file value, naming the key in the error.
fn parse<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, RunError>
where
    T::Err: std::fmt::Display,
{
    v.parse()
        .map_err(|e| RunError::Invalid(format!("{key} = {v:?}: {e}")))
}

/// Runs the server until SIGTERM or SIGINT: installs the signal handlers,
/// starts it, drops privileges, re-reads the token file and the feedback
/// rules on SIGHUP, and shuts it down (every accepted row committed).
pub fn serve(resolved: Resolved) -> Result<(), RunError> {
    // Every file and directory created from here on is owner-only.
    httpkit::secret::owner_only_from_now();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    // A connection thread that runs out of work hands back what its
    // connections freed (see crate::trim): after a burst of connections
    // every thread is idle, and nothing else would.
    let idle = crate::trim::IdleCollect::install(&mut builder);
    let runtime = builder.build().map_err(|source| RunError::Io {
        context: "starting the async runtime".into(),
        source,
    })?;
    idle.start(&runtime);
    runtime.block_on(async move {
        let reload = resolved.server.auth.is_some() || resolved.rules_file.is_some();
        let mut signals = signals::Signals::install(reload)?;
        let data_dir = match resolved.server.backend {
            crate::Backend::Sqlite => Some(resolved.server.data_dir.clone()),
            crate::Backend::Postgres(_) => None,
        };
        let server = Server::start(resolved.server).await?;
        if let Some(identity) = &resolved.identity {
            if let Err(e) = identity.assume(data_dir.as_deref()) {
                server.shutdown().await;
                return Err(e);
            }
        }
        signals
            .wait(&server, resolved.rules_file.as_deref())
            .await?;
        tracing::info!("shutting down");
        server.shutdown().await;
        Ok(())
    })
}
