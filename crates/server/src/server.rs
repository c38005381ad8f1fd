//! The listening server: binds, accepts, and shuts down in order.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::admission::Admission;
use crate::auth::{Auth, AuthError};
use crate::config::{Backend, ServerConfig};
use crate::connection::Shared;
use crate::feedback::Feedback;
use crate::hook::Hook;
use crate::http_runtime::HttpRuntime;
use crate::metrics::{self, Metrics};
use crate::registry::Registry;
use crate::shutdown::Shutdown;
use crate::tls::{Tls, TlsError};
use crate::transport;
use crate::writer::WriterSetup;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The data directory is missing or unusable.
    #[error("data directory {path}: {reason}")]
    DataDir {
        /// The directory.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// An address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The system error.
        source: io::Error,
    },
    /// No listen address was given.
    #[error("no address to listen on")]
    NoListener,
    /// An HTTP setting is not usable.
    #[error("HTTP endpoints: {reason}")]
    Http {
        /// What is wrong and what to do.
        reason: String,
    },
    /// The database back end is not usable (PostgreSQL unreachable, or its
    /// role may not create databases).
    #[error("database back end: {0}")]
    Backend(#[source] store::StoreError),
    /// The token file is missing or malformed.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The TLS certificate or key is missing or unusable.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// A running collection server.
///
/// Shutdown order: stop accepting; let each connection decode what it has
/// received (and, briefly, what its client had already sent); hand the rows
/// to the writers; writers commit and close their databases (hook
/// `DBCLOSED`); hook `EXIT`.
#[derive(Debug)]
pub struct Server {
    /// Bound addresses (with the actual port when 0 was asked for).
    addrs: Vec<SocketAddr>,
    /// Where the HTTP endpoints are served under `--metrics`, if they are.
    metrics_addr: Option<SocketAddr>,
    /// Where the HTTP endpoints are served under `--http`, if they are.
    http_addr: Option<SocketAddr>,
    /// Self-measurement counters.
    metrics: Arc<Metrics>,
    /// Token authentication, if configured (re-read by [`Server::reload_auth`]).
    auth: Option<Arc<Auth>>,
    /// Feedback peers and rules.
    feedback: Arc<Feedback>,
    /// Open databases.
    registry: Arc<Registry>,
    /// Starts the shutdown.
    trigger: watch::Sender<bool>,
    /// Ends when everything is stored and closed.
    done: tokio::task::JoinHandle<()>,
    /// Runs the HTTP endpoints, if any, at a lower priority.
    http_rt: Option<HttpRuntime>,
    /// Accepts OMSP connections and reads their headers at a lower
    /// priority (`header_nice` above 0).
    accept_rt: Option<HttpRuntime>,
}

impl Server {
    /// Checks the back end (the data directory, or that PostgreSQL lets
    /// the role create databases), starts the hook, binds every listen
    /// address and starts accepting. Must run inside a tokio runtime.
    pub async fn start(config: ServerConfig) -> Result<Server, ServerError> {
        match &config.backend {
            Backend::Sqlite => check_data_dir(&config.data_dir)?,
            Backend::Postgres(opts) => check_postgres(opts.clone()).await?,
        }
        let auth = match config.auth.clone() {
            Some(settings) => Some(Arc::new(Auth::load(settings)?)),
            None => None,
        };
        let tls = match &config.tls {
            Some(settings) => Some(Arc::new(Tls::load(settings)?)),
            None => None,
        };
        let listeners = bind_all(&config.listen)?;
        let addrs: Vec<SocketAddr> = listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect();
        let hook = Arc::new(match &config.event_hook {
            Some(program) => {
                let program = program.clone();
                tokio::task::spawn_blocking(move || Hook::start(&program))
                    .await
                    .unwrap_or_else(|_| Hook::none())
            }
            None => Hook::none(),
        });
        crate::trim::start();
        let metrics = Metrics::new();
        let metrics_listener = match config.metrics_listen {
            Some(addr) => Some(bind(addr).map_err(|source| ServerError::Bind { addr, source })?),
            None => None,
        };
        let metrics_addr = metrics_listener.as_ref().and_then(|l| l.local_addr().ok());
        let http_listener = match config.http_listen {
            Some(addr) => Some(bind(addr).map_err(|source| ServerError::Bind { addr, source })?),
            None => None,
        };
        let http_addr = http_listener.as_ref().and_then(|l| l.local_addr().ok());
        let commits = Arc::new(crate::commits::Commits::default());
        let registry = Registry::new(
            WriterSetup {
                backend: config.backend.clone(),
                dir: config.data_dir.clone(),
                domain: String::new(),
                sqlite: config.sqlite,
                commit: config.commit,
                hook: Arc::clone(&hook),
                metrics: Arc::clone(&metrics),
                commits: Arc::clone(&commits),
            },
            config.queue_batches,
            config.max_domains,
            config.max_domain_queue_bytes,
        );
        let feedback = Feedback::new(config.feedback_rules.clone());
        // Connections are accepted, and their headers read, on a runtime
        // of their own at low priority, then move to this one (the
        // collection runtime) with their header: a flood of connections
        // that never finish a header then slows no connected sender.
        let accept_rt = match config.header_nice {
            n if n > 0 => {
                Some(
                    HttpRuntime::named("sg-accept", n).map_err(|e| ServerError::Http {
                        reason: format!("cannot start the accepting runtime: {e}"),
                    })?,
                )
            }
            _ => None,
        };
        let shared = Arc::new(Shared {
            registry: Arc::clone(&registry),
            idle_timeout: config.idle_timeout.filter(|d| !d.is_zero()),
            limits: config.limits,
            read_chunk: config.read_chunk,
            batch_rows: config.batch_rows.max(1),
            batch_bytes: config.batch_bytes.max(1),
            admission: Admission::new(config.max_connections, config.max_connections_per_source),
            metrics: Arc::clone(&metrics),
            auth: auth.clone(),
            sessions: Default::default(),
            feedback: Arc::clone(&feedback),
            collection: accept_rt
                .as_ref()
                .map(|_| tokio::runtime::Handle::current()),
            large_headers: Arc::new(tokio::sync::Semaphore::new(
                crate::config::LARGE_HEADERS_AT_ONCE,
            )),
        });
        let (trigger, shutdown) = Shutdown::new();
        // Every connection task holds a clone; recv() returns None once all are done.
        let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
        let mut acceptors = JoinSet::new();
        for listener in listeners {
            let run = accept_loop(
                listener,
                Arc::clone(&shared),
                shutdown.clone(),
                alive_tx.clone(),
                tls.clone(),
            );
            match &accept_rt {
                Some(rt) => acceptors.spawn_on(run, rt.handle()),
                None => acceptors.spawn(run),
            };
        }
        let mut http_rt = None;
        if metrics_listener.is_some() || http_listener.is_some() {
            let app = crate::http::router(
                Arc::clone(&metrics),
                Arc::clone(&feedback),
                api_router(&config, &commits),
            );
            let http = http_config(&config, auth.clone())?;
            let app = http.apply(app);
            let rt = HttpRuntime::new(config.http_nice).map_err(|e| ServerError::Http {
                reason: format!("cannot start the HTTP runtime: {e}"),
            })?;
            for listener in [metrics_listener, http_listener].into_iter().flatten() {
                tracing::info!(addr = ?listener.local_addr().ok(), nice = config.http_nice, "serving HTTP");
                rt.serve(listener, app.clone(), http.budget, shutdown.clone())
                    .map_err(|e| ServerError::Http {
                        reason: format!("cannot hand the listener to the HTTP runtime: {e}"),
                    })?;
            }
            http_rt = Some(rt);
        }
        tokio::spawn(crate::feedback::engine::run(
            Arc::clone(&feedback),
            shutdown.clone(),
        ));
        if let Some(domain) = config.self_domain.clone() {
            let (events_tx, events_rx) = mpsc::channel(metrics::report::EVENT_QUEUE);
            metrics.set_event_sink(events_tx);
            let alive = alive_tx.clone();
            let run = metrics::report::run(
                Arc::clone(&registry),
                domain,
                Arc::clone(&metrics),
                events_rx,
                shutdown.clone(),
            );
            tokio::spawn(async move {
                run.await;
                drop(alive);
            });
        }
        drop(alive_tx);
        for a in &addrs {
            tracing::info!(addr = %a, tls = tls.is_some(),
                tls_required = tls.as_ref().is_some_and(|t| t.required), "listening");
        }
        let closing = Arc::clone(&registry);
        let done = tokio::spawn(async move {
            while acceptors.join_next().await.is_some() {}
            let _ = alive_rx.recv().await;
            let registry = closing;
            let _ = tokio::task::spawn_blocking(move || {
                registry.join_closed();
                hook.exit();
            })
            .await;
            tracing::info!("server stopped");
        });
        Ok(Server {
            addrs,
            metrics_addr,
            http_addr,
            metrics,
            auth,
            feedback,
            registry,
            trigger,
            done,
            http_rt,
            accept_rt,
        })
    }

    /// The addresses the server listens on.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The address of the Prometheus endpoint (`GET /metrics`), if enabled.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Database writer threads running now: one per open database, plus
    /// those of closed databases still finishing their last commit.
    pub fn writer_threads(&self) -> usize {
        self.registry.writer_threads()
    }

    /// The address of the HTTP endpoints given by `--http`, if enabled.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http_addr
    }

    /// The server's self-measurement counters.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Re-reads the token file (on SIGHUP, say). On error the previous
    /// tokens stay in force. Returns the number of listed domains, or
    /// `Ok(None)` if the server runs without token authentication.
    pub fn reload_auth(&self) -> Result<Option<usize>, AuthError> {
        self.auth.as_ref().map(|a| a.reload()).transpose()
    }

    /// Feedback peers and rules: send control messages by hand, replace the
    /// rules (on SIGHUP, say).
    pub fn feedback(&self) -> &Arc<Feedback> {
        &self.feedback
    }

    /// Shuts down (see the type's documentation) and waits until every
    /// accepted row is committed and every database closed.
    pub async fn shutdown(self) {
        let _ = self.trigger.send(true);
        let _ = self.done.await;
        drop(self.http_rt);
        drop(self.accept_rt);
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: Shutdown,
    alive: mpsc::Sender<()>,
    tls: Option<Arc<Tls>>,
) {
    // A tokio listener belongs to the runtime that made it: on another
    // (the accepting runtime) it is registered again.
    let listener = match listener.into_std().and_then(TcpListener::from_std) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "cannot accept on the listener");
            return;
        }
    };
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = shutdown.requested() => break,
        };
        match accepted {
            Ok((stream, peer)) => spawn_connection(stream, peer, &shared, &shutdown, &alive, &tls),
            Err(e) => {
                // Out of descriptors and the like: back off instead of spinning.
                tracing::error!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    // A client that connected, sent its rows and left before shutdown may
    // still sit in the kernel's listen backlog: its rows were accepted by
    // TCP, so serve it (draining) rather than reset it by closing the
    // listener. Only connections already queued are taken.
    while let Ok(Ok((stream, peer))) = tokio::time::timeout(BACKLOG_POLL, listener.accept()).await {
        spawn_connection(stream, peer, &shared, &shutdown, &alive, &tls);
    }
}

/// How long the shutdown waits for one more already-queued connection.
const BACKLOG_POLL: Duration = Duration::from_millis(5);

/// Admits one accepted socket and serves it on its own task.
fn spawn_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    shutdown: &Shutdown,
    alive: &mpsc::Sender<()>,
    tls: &Option<Arc<Tls>>,
) {
    let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
    let admitted = match shared.admission.admit(peer.ip()) {
        Ok(a) => a,
        Err(refusal) => {
            crate::admission::log_refusal(peer.ip(), &refusal);
            shared.metrics.refused(refusal.reason);
            drop(stream);
            return;
        }
    };
    let _ = stream.set_nodelay(true);
    let shared = Arc::clone(shared);
    let shutdown = shutdown.clone();
    let alive = alive.clone();
    let tls = tls.clone();
    // The connection's admission and its part in the shutdown's count go
    // where the connection ends (it may move to the collection runtime).
    tokio::spawn(transport::serve(
        stream,
        peer,
        shared,
        shutdown,
        tls,
        (admitted, alive),
    ));
}

fn check_data_dir(dir: &std::path::Path) -> Result<(), ServerError> {
    let err = |reason: String| ServerError::DataDir {
        path: dir.to_owned(),
        reason,
    };
    let meta = std::fs::metadata(dir).map_err(|e| err(e.to_string()))?;
    if !meta.is_dir() {
        return Err(err("not a directory".into()));
    }
    if meta.permissions().readonly() {
        return Err(err("not writable".into()));
    }
    Ok(())
}

/// Logs in to PostgreSQL and checks that the role may create databases.
/// The client is blocking and drives its own runtime, so it runs on a
/// thread of its own.
async fn check_postgres(opts: store::PgOptions) -> Result<(), ServerError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(opts.check_can_create_databases());
    });
    match rx.await {
        Ok(res) => res.map_err(ServerError::Backend),
        Err(_) => Err(ServerError::Backend(store::StoreError::Io(
            io::Error::other("postgresql check thread died"),
        ))),
    }
}

/// Binds every address. Port 0 is resolved by the first bind and reused for
/// the rest. An IPv4 wildcard already covered by a dual-stack IPv6 wildcard
/// (the usual Linux setting) is skipped.
fn bind_all(addrs: &[SocketAddr]) -> Result<Vec<TcpListener>, ServerError> {
    if addrs.is_empty() {
        return Err(ServerError::NoListener);
    }
    let mut out: Vec<TcpListener> = Vec::new();
    let mut port = None;
    for &requested in addrs {
        let mut addr = requested;
        if addr.port() == 0 {
            if let Some(p) = port {
                addr.set_port(p);
            }
        }
        match bind(addr) {
            Ok(l) => {
                port = port.or_else(|| l.local_addr().ok().map(|a| a.port()));
                out.push(l);
            }
            Err(e) if covered_by_dual_stack(addr, &out, &e) => {
                tracing::debug!(%addr, "already served by the dual-stack IPv6 listener");
            }
            Err(e) if requested.ip().is_unspecified() && requested.is_ipv6() && !out.is_empty() => {
                tracing::warn!(%addr, error = %e, "IPv6 wildcard not available");
            }
            Err(e) if requested.ip().is_unspecified() && requested.is_ipv6() => {
                tracing::warn!(%addr, error = %e, "IPv6 wildcard not available; IPv4 only");
            }
            Err(source) => return Err(ServerError::Bind { addr, source }),
        }
    }
    if out.is_empty() {
        return Err(ServerError::NoListener);
    }
    Ok(out)
}

fn covered_by_dual_stack(addr: SocketAddr, bound: &[TcpListener], e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::AddrInUse
        && addr.is_ipv4()
        && addr.ip().is_unspecified()
        && bound.iter().any(|l| {
            l.local_addr()
                .is_ok_and(|a| a.is_ipv6() && a.ip().is_unspecified() && a.port() == addr.port())
        })
}

fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// The shared HTTP layers, from the server's settings.
fn http_config(
    config: &ServerConfig,
    auth: Option<Arc<Auth>>,
) -> Result<httpkit::HttpConfig, ServerError> {
    let cors_origin = match &config.http_cors_origin {
        Some(o) => Some(o.parse().map_err(|_| ServerError::Http {
            reason: format!("--http-cors-origin {o:?} is not a valid origin (want e.g. https://ui.example:8443)"),
        })?),
        None => None,
    };
    Ok(httpkit::HttpConfig {
        access: httpkit::Access {
            authenticator: auth.map(|a| a as Arc<dyn httpkit::Authenticator>),
            public: config.http_public,
        },
        cors_origin,
        allowed_hosts: httpkit::AllowedHosts::new(&config.http_allowed_hosts),
        budget: config.http_budget,
        ..httpkit::HttpConfig::default()
    })
}

/// The query API, served under `/api/v1` on the HTTP listeners; it reads
/// the same databases through its own connections (SQLite WAL readers,
/// separate PostgreSQL sessions), so readers never block the writers.
fn api_router(
    config: &ServerConfig,
    commits: &Arc<crate::commits::Commits>,
) -> Option<axum::Router> {
    let backend = match &config.backend {
        Backend::Sqlite => query::Backend::Sqlite {
            dir: config.data_dir.clone(),
        },
        Backend::Postgres(opts) => query::Backend::Postgres(opts.clone()),
    };
    let mut state = query::QueryState::new(backend)
        .with_feed(Arc::clone(commits) as Arc<dyn query::CommitFeed>);
    state.budget = Some(config.query_budget);
    state.max_tails = config.query_max_tails;
    Some(query::router(state))
}
