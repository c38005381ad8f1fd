//! The agent's HTTP control endpoint (`streamgauge inline source|sink
//! --control ADDR:PORT`): status and counters, capabilities, and settings
//! changed at run time, on the project's HTTP stack (`httpkit`), as the
//! capture daemon's control API. Contract: `spec/inline-control.md`.
//!
//! Who may do what is httpkit's rule: every request needs a bearer token
//! from the token file (`--control-token-file`, the project's format,
//! `httpkit::tokens`), and changes need the `control` scope. The agent
//! runs as root, so it never serves the endpoint open: without a token
//! file it uses `STATE_DIR/control.tokens`, created on first start with
//! one `control` token. The endpoint speaks HTTPS with the operator's
//! certificate or one it makes on first start in `STATE_DIR/tls/` (its
//! SHA-256 fingerprint is logged, for pinning), unless `plain_http` is
//! set for a loopback address.
//!
//! The endpoint reads and writes the program's maps (the same ones `inline
//! ctl` reaches through the interface), so a change applies from the next
//! packet. It runs on its own thread with its own runtime, so the caller
//! need not be async; the listener is bound by the caller (before it moves
//! into the interface's network namespace, so the endpoint stays
//! reachable from where the agent was started).

mod api;
pub mod patch;
mod protect;
mod views;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

pub use views::{AgentCountersView, Capabilities, KeyView, Status};

use crate::error::ProgramError;
use crate::maps::ProgramMaps;
use crate::program::Role;
use crate::settings::Settings;

/// Where the agent keeps the token file and certificate it creates.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/streamgauge/inline";

/// How the endpoint authenticates and encrypts.
#[derive(Debug, Clone, Default)]
pub struct ControlConfig {
    /// Token file (`<domain-or-glob> <token> [read,control]`); `None`:
    /// `state_dir/control.tokens`, created on first start.
    pub token_file: Option<PathBuf>,
    /// Where a created token file and certificate are kept (default
    /// [`DEFAULT_STATE_DIR`]).
    pub state_dir: Option<PathBuf>,
    /// PEM certificate and key of the endpoint; `None`: a self-signed
    /// certificate in `state_dir/tls/`, made on first start.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Serve without TLS (loopback listeners only).
    pub plain_http: bool,
    /// DNS names the endpoint answers to beyond loopback names and IP
    /// literals (`--allow-host`); any other `Host` gets 421 (DNS rebinding).
    pub allowed_hosts: Vec<String>,
}

/// What the endpoint reports about the agent besides its maps.
#[derive(Debug, Clone, Default)]
pub struct AgentInfo {
    /// The interface the program is attached to.
    pub interface: String,
    /// Its network namespace, when not the agent's own.
    pub netns: Option<String>,
    /// Domain of the measurement streams (`None` without `--collect`).
    pub domain: Option<String>,
}

/// Counters the agent keeps itself (shared with its record thread).
#[derive(Debug, Default)]
pub struct AgentCounters {
    /// Records read from the sink's ring buffer.
    pub records_read: AtomicU64,
    /// Rows the client library refused.
    pub inject_errors: AtomicU64,
}

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The token file could not be loaded or created.
    #[error(transparent)]
    Tokens(#[from] httpkit::token_init::TokenInitError),
    /// The certificate could not be loaded or made.
    #[error("control endpoint: {0}")]
    Tls(#[from] httpkit::tls::TlsError),
    /// `plain_http` on a listener other programs on the network reach.
    #[error(
        "control endpoint: plain HTTP is allowed on loopback only, not on {0}; \
         drop --control-plain-http (the endpoint then serves HTTPS)"
    )]
    PlainNotLoopback(SocketAddr),
    /// The listener or the thread failed.
    #[error("control endpoint: {0}")]
    Io(#[from] std::io::Error),
    /// The program's maps could not be opened.
    #[error(transparent)]
    Program(#[from] ProgramError),
}

/// State shared by the handlers.
pub(crate) struct Shared {
    role: Role,
    prog_id: u32,
    info: AgentInfo,
    /// Read-modify-write of the settings happens under this lock.
    maps: Mutex<ProgramMaps>,
    agent: Arc<AgentCounters>,
    started: Instant,
}

pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::Source => "source",
        Role::Sink => "sink",
    }
}

impl Shared {
    fn maps(&self) -> std::sync::MutexGuard<'_, ProgramMaps> {
        self.maps.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn settings(&self) -> Result<Settings, ProgramError> {
        Ok(Settings::from_config(&self.maps().config()?))
    }

    /// Replaces the settings with `f(current)` unless it refuses; the
    /// program uses them from its next packet.
    fn update<E>(
        &self,
        f: impl FnOnce(&Settings) -> Result<Settings, E>,
    ) -> Result<Result<Settings, E>, ProgramError> {
        let maps = self.maps();
        let current = Settings::from_config(&maps.config()?);
        match f(&current) {
            Ok(next) => {
                maps.set_config(&next.to_config())?;
                Ok(Ok(next))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    fn status(&self) -> Result<Status, ProgramError> {
        let (settings, counters) = {
            let maps = self.maps();
            (Settings::from_config(&maps.config()?), maps.counters()?)
        };
        Ok(Status {
            role: role_name(self.role).into(),
            interface: self.info.interface.clone(),
            netns: self.info.netns.clone(),
            prog_id: self.prog_id,
            state: if settings.enabled {
                "running"
            } else {
                "paused"
            }
            .into(),
            uptime_s: self.started.elapsed().as_secs_f64(),
            settings: patch::to_json(&settings),
            counters: counters
                .named(self.role)
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            agent: AgentCountersView {
                records_read: self.agent.records_read.load(Ordering::Relaxed),
                inject_errors: self.agent.inject_errors.load(Ordering::Relaxed),
            },
        })
    }
}

/// A running control endpoint; stops on [`Control::stop`] or drop.
#[derive(Debug)]
pub struct Control {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    tokens: Arc<httpkit::tokens::TokenFile>,
    /// SHA-256 of the certificate served (`None`: plain HTTP).
    fingerprint: Option<httpkit::tls::Fingerprint>,
}

impl Control {
    /// Serves the control API of `agent` on `listener` (bound by the caller).
    pub fn start(
        listener: std::net::TcpListener,
        agent: &crate::Agent,
        info: AgentInfo,
        counters: Arc<AgentCounters>,
        config: &ControlConfig,
    ) -> Result<Control, ControlError> {
        let program = agent.program();
        let shared = Arc::new(Shared {
            role: program.role(),
            prog_id: program.prog_id(),
            info,
            maps: Mutex::new(program.maps().try_clone()?),
            agent: counters,
            started: Instant::now(),
        });
        let addr = listener.local_addr()?;
        if config.plain_http && !addr.ip().is_loopback() {
            return Err(ControlError::PlainNotLoopback(addr));
        }
        let tokens = Arc::new(protect::tokens(config)?);
        let tls = protect::tls(config)?;
        let http = httpkit::HttpConfig {
            access: httpkit::Access {
                authenticator: Some(Arc::clone(&tokens) as Arc<dyn httpkit::Authenticator>),
                public: false,
            },
            allowed_hosts: httpkit::AllowedHosts::new(&config.allowed_hosts),
            ..httpkit::HttpConfig::default()
        };
        let app = http.apply(api::router(shared));
        let fingerprint = tls.as_ref().map(|t| t.fingerprint);
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("sg-inline-control".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            tracing::error!(error = %e, "control endpoint listener");
                            return;
                        }
                    };
                    let shutdown = async {
                        let _ = rx.await;
                    };
                    let budget = httpkit::Budget::default();
                    let served = match tls {
                        Some(t) => httpkit::serve_tls(listener, app, budget, t, shutdown).await,
                        None => httpkit::serve_with(listener, app, budget, shutdown).await,
                    };
                    if let Err(e) = served {
                        tracing::error!(error = %e, "control endpoint stopped");
                    }
                })
            })?;
        tracing::info!(%addr, tls = fingerprint.is_some(), "in-line agent control API listening");
        Ok(Control {
            addr,
            stop: Some(tx),
            thread: Some(thread),
            tokens,
            fingerprint,
        })
    }

    /// The address it serves.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Re-reads the token file (SIGHUP); on error the tokens in force stay.
    pub fn reload_tokens(&self) -> Result<(), httpkit::tokens::TokenFileError> {
        self.tokens.reload()
    }

    /// The SHA-256 of the certificate served (`None`: plain HTTP).
    pub fn fingerprint(&self) -> Option<httpkit::tls::Fingerprint> {
        self.fingerprint
    }

    /// `https://ADDR` (`http://ADDR` with `plain_http`).
    pub fn url(&self) -> String {
        let scheme = if self.fingerprint.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// Stops serving (requests in flight finish).
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        self.halt();
    }
}
