//! The capture daemon: one packet socket per tapped interface, sessions
//! added and removed at run time through an HTTP/JSON control API, each
//! packet read once and demultiplexed to every session on its interface.
//!
//! ```text
//! config file ─► DaemonConfig::validate ─► Daemon::start
//!                                            ├─ control API (httpkit/axum) ─► Shared (registry, ops)
//!                                            └─ per interface, on first start: source thread
//!                                                 AF_PACKET ring ─► Demux ─► Sessions ─► files
//!                                                 every 250 ms: tick, counters ─► registry,
//!                                                 snapshots ─► collection server (capture_counters)
//!                                                 flow records ─► collection server (capture_flow)
//! ```
//!
//! Sessions are saved in `data_dir/.sessions/` on every state change and
//! restored when the daemon starts again, after a clean stop or a crash
//! (see [`recover`]); the token file is re-read on SIGHUP
//! ([`Daemon::reload_tokens`], [`run_until_signal`]).
//!
//! The daemon runs as root, so its control API never runs open: without
//! a `token_file` it creates one on first start, and it serves HTTPS (the
//! operator's certificate, or a self-signed one made on first start whose
//! fingerprint it logs) unless `plain_http` is set on a loopback address.
//!
//! Who may do what: a session belongs to an *experiment* (a domain name,
//! given at creation, default the session name). A token may see and
//! control a session when the token file grants it `read` on that
//! experiment (globs allowed); a `control` token (`*`) may do everything.
//! Sessions a caller may not see answer 404, as if they did not exist.
//! See `spec/capture-api.md`.

mod api;
pub mod archive;
pub mod bench;
pub mod config;
mod control;
pub mod ctl;
pub mod flowrow;
mod metrics;
pub(crate) mod netns;
mod openapi;
mod ops;
pub mod persist;
pub mod recover;
pub mod registry;
mod run;
pub mod streams;
mod sysnet;
pub mod views;
mod worker;

pub use api::router;
pub use config::{DaemonConfig, DaemonConfigError};
pub use openapi::document as openapi_document;
pub use ops::OpError;
pub use registry::State;
pub use run::run_until_signal;

use crate::counters::Counters;
use crate::cryptopan::Key;
use crate::policy::NodePolicy;
use registry::Registry;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use streams::CounterStreams;
use worker::{Command, Worker};

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] DaemonConfigError),
    /// A key file could not be read.
    #[error("key {name} ({path}): {source}")]
    Key {
        /// Key name.
        name: String,
        /// Its file.
        path: String,
        /// What failed.
        source: crate::cryptopan::KeyError,
    },
    /// The token file could not be loaded or created.
    #[error(transparent)]
    Tokens(#[from] httpkit::token_init::TokenInitError),
    /// The control API's certificate could not be loaded or made.
    #[error("control API: {0}")]
    Tls(#[from] httpkit::tls::TlsError),
    /// The archive uploader could not open its queue or targets.
    #[error("archive: {0}")]
    Archive(#[from] ::archive::OpenError),
    /// The data directory or the listener failed.
    #[error("{what}: {source}")]
    Io {
        /// What was attempted.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

/// State shared by the control API and the source threads.
pub struct Shared {
    /// The validated configuration.
    pub config: DaemonConfig,
    /// The policy in force (allowed interfaces filled in).
    pub policy: NodePolicy,
    /// Anonymisation keys by name.
    keys: BTreeMap<String, Key>,
    /// Every session.
    registry: Mutex<Registry>,
    /// Source threads by interface.
    workers: Mutex<HashMap<String, Worker>>,
    /// Counter snapshots and flow records to the collection server, when configured.
    streams: Option<Arc<CounterStreams>>,
    /// Closed files to the archive uploader, when configured.
    archive: Option<archive::ArchiveLink>,
}

impl Shared {
    /// Locks the registry (a poisoned lock is still usable: records are plain data).
    pub fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends a counter snapshot of session `id` to the collection server.
    fn report(&self, id: &str, c: &Counters) {
        let Some(st) = &self.streams else { return };
        let who = self
            .lock()
            .sessions
            .get(id)
            .map(|r| (r.experiment.clone(), r.config.interface.clone()));
        if let Some((exp, iface)) = who {
            st.send(
                &exp,
                id,
                iface.as_deref().unwrap_or(""),
                c,
                self.archived(id),
            );
        }
    }

    /// Files of session `id` handed to the archive uploader.
    pub fn archived(&self, id: &str) -> u64 {
        self.archive.as_ref().map_or(0, |a| a.enqueued(id))
    }

    /// Rows the streams queue dropped (the collection server could not keep up).
    pub fn streams_dropped(&self) -> Option<u64> {
        self.streams.as_ref().map(|s| s.dropped())
    }

    /// Sends the final counters of a stopped session.
    fn report_final(&self, id: &str, c: &Counters) {
        self.report(id, c);
    }
}

/// A running daemon.
pub struct Daemon {
    /// Shared state (also reachable by the API handlers).
    shared: Arc<Shared>,
    /// The control API's address.
    addr: SocketAddr,
    /// Ends the control API.
    stop_api: Option<tokio::sync::oneshot::Sender<()>>,
    /// The control API task.
    api: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    /// The token file, re-read by [`Daemon::reload_tokens`].
    tokens: Arc<httpkit::tokens::TokenFile>,
    /// The control API certificate's SHA-256 (`None`: `plain_http`).
    fingerprint: Option<httpkit::tls::Fingerprint>,
}

impl Daemon {
    /// Loads keys and tokens, creates the data directory, binds the
    /// control API and starts serving it. Source threads start with the
    /// first session of their interface.
    pub async fn start(config: DaemonConfig) -> Result<Daemon, DaemonError> {
        config.validate()?;
        let mut keys = BTreeMap::new();
        for (name, path) in &config.keys {
            let k = Key::from_file(path).map_err(|source| DaemonError::Key {
                name: name.clone(),
                path: path.display().to_string(),
                source,
            })?;
            keys.insert(name.clone(), k);
        }
        std::fs::create_dir_all(&config.data_dir).map_err(|source| DaemonError::Io {
            what: format!("data directory {}", config.data_dir.display()),
            source,
        })?;
        let tokens = Arc::new(control::tokens(&config)?);
        let tls = control::tls(&config)?;
        let authenticator = Some(Arc::clone(&tokens) as Arc<dyn httpkit::Authenticator>);
        let store = persist::Store::open(&config.data_dir).map_err(|source| DaemonError::Io {
            what: format!("session store in {}", config.data_dir.display()),
            source,
        })?;
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| DaemonError::Io {
                what: format!("control API on {}", config.listen),
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| DaemonError::Io {
            what: "control API address".into(),
            source,
        })?;
        let node = hostname();
        let streams = config
            .collect
            .as_deref()
            .and_then(|c| CounterStreams::new(c, &node))
            .map(Arc::new);
        let archive = match &config.archive {
            Some(a) => Some(archive::ArchiveLink::new(
                ::archive::Archiver::open(a.clone()).await?,
            )),
            None => None,
        };
        let shared = Arc::new(Shared {
            archive,
            policy: config.effective_policy(),
            config,
            keys,
            registry: Mutex::new(Registry {
                sessions: BTreeMap::new(),
                store: Some(store),
            }),
            workers: Mutex::new(HashMap::new()),
            streams,
        });
        let http = httpkit::HttpConfig {
            access: httpkit::Access {
                authenticator,
                public: false,
            },
            allowed_hosts: httpkit::AllowedHosts::new(&shared.config.allowed_hosts),
            ..httpkit::HttpConfig::default()
        };
        let again = shared.restore();
        let sh = Arc::clone(&shared);
        let to_pause = tokio::task::spawn_blocking(move || {
            let mut paused = Vec::new();
            for (id, pause) in again {
                match sh.start(&id) {
                    Ok(()) if pause => paused.push(id),
                    Ok(()) => {}
                    Err(e) => tracing::warn!(session = %id, error = %e, "not restarted"),
                }
            }
            paused
        })
        .await
        .unwrap_or_default();
        for id in to_pause {
            let _ = shared.pause(&id, true).await;
        }
        let app = http.apply(router(Arc::clone(&shared)));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let stop = async {
            let _ = rx.await;
        };
        let budget = httpkit::Budget::default();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let api = match tls.clone() {
            Some(t) => tokio::spawn(httpkit::serve_tls(listener, app, budget, t, stop)),
            None => tokio::spawn(httpkit::serve_with(listener, app, budget, stop)),
        };
        tracing::info!(%addr, scheme, "capture daemon control API listening");
        Ok(Daemon {
            shared,
            addr,
            stop_api: Some(tx),
            api: Some(api),
            tokens,
            fingerprint: tls.map(|t| t.fingerprint),
        })
    }

    /// Re-reads the token file (SIGHUP): new tokens apply to the next
    /// request. On error the tokens in force stay and the error is returned.
    pub fn reload_tokens(&self) -> Result<(), httpkit::tokens::TokenFileError> {
        self.tokens.reload()
    }

    /// The SHA-256 of the control API's certificate (`None` with
    /// `plain_http`), as clients pin it.
    pub fn fingerprint(&self) -> Option<httpkit::tls::Fingerprint> {
        self.fingerprint
    }

    /// `https://ADDR` (or `http://ADDR` with `plain_http`).
    pub fn url(&self) -> String {
        let scheme = if self.fingerprint.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// The control API's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The shared state (tests, embedding).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Stops the control API, then every session (files closed with valid
    /// trailers and their metadata), then the counter streams.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.stop_api.take() {
            let _ = tx.send(());
        }
        if let Some(api) = self.api.take() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), api).await;
        }
        let shared = Arc::clone(&self.shared);
        let _ = tokio::task::spawn_blocking(move || {
            let workers: Vec<Worker> = shared
                .workers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain()
                .map(|(_, w)| w)
                .collect();
            for mut w in workers {
                let _ = w.tx.send(Command::Shutdown);
                if let Some(t) = w.thread.take() {
                    let _ = t.join();
                }
            }
            if let Some(s) = &shared.streams {
                s.close();
            }
        })
        .await;
        // Every session let go of its closed-file sender: drain, then stop uploading.
        if let Some(a) = &self.shared.archive {
            a.shutdown().await;
        }
    }
}

/// This node's name, for the counter streams' sender id.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "capture".into())
}
