//! Starting and stopping a proxy: listeners, forwarders, the sync ticker
//! and the control endpoint.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use omsp::admission::Admission;

use crate::config::{ForwardMode, FsyncPolicy, ProxyConfig};
use crate::control::{Command, Control};
use crate::registry::{Entry, Registry, RegistryError};

/// What every task of a proxy shares.
#[derive(Debug)]
pub struct Shared {
    /// Settings.
    pub config: ProxyConfig,
    /// The journals.
    pub registry: Registry,
    /// The pause switch.
    pub control: Control,
    /// Set once to stop every task.
    pub shutdown: watch::Sender<bool>,
    /// Forwarder tasks, joined at shutdown.
    forwarders: std::sync::Mutex<Vec<JoinHandle<()>>>,
    /// Client connection tasks, joined at shutdown.
    clients: std::sync::Mutex<Vec<JoinHandle<()>>>,
    /// Client connection counts and limits.
    pub admission: Arc<Admission>,
    /// Connections refused, per [`Refused::ALL`] reason.
    pub refused: [AtomicU64; 2],
}

impl Shared {
    /// Starts the forwarder of a journal.
    pub fn spawn_forwarder(self: &Arc<Shared>, entry: Arc<Entry>) {
        let task = tokio::spawn(crate::forward::run(entry, Arc::clone(self)));
        let mut f = self.forwarders.lock().unwrap_or_else(|p| p.into_inner());
        f.retain(|t| !t.is_finished());
        f.push(task);
    }
}

/// Why a proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The settings are inconsistent.
    #[error("invalid settings: {0}")]
    Config(String),
    /// The journal directory cannot be used.
    #[error(transparent)]
    Journal(#[from] RegistryError),
    /// A listening socket could not be opened.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        source: std::io::Error,
    },
}

/// A running proxy.
#[derive(Debug)]
pub struct Proxy {
    /// Shared state.
    shared: Arc<Shared>,
    /// Addresses clients connect to.
    local: Vec<SocketAddr>,
    /// The control endpoint's address.
    control: Option<SocketAddr>,
    /// Accept loops; at shutdown they serve the connections already queued.
    accepting: Vec<JoinHandle<()>>,
    /// The ticker and the control endpoint.
    tasks: Vec<JoinHandle<()>>,
}

impl Proxy {
    /// Loads the journals, binds, and starts forwarding (unless the
    /// configuration says to start paused).
    pub async fn start(config: ProxyConfig) -> Result<Proxy, ProxyError> {
        config.validate().map_err(ProxyError::Config)?;
        let registry = Registry::open(
            &config.journal_dir,
            config.proxy_id.as_deref(),
            config.fsync,
            config.segment_size,
            config.quota,
            config.quota_policy,
        )?;
        let mut listeners = Vec::new();
        let mut port = 0;
        for addr in &config.listen {
            let mut addr = *addr;
            if addr.port() == 0 && port != 0 {
                addr.set_port(port);
            }
            let l = match bind(addr) {
                Ok(l) => l,
                // Linux's IPv6 wildcard usually serves IPv4 too.
                Err(e)
                    if e.kind() == std::io::ErrorKind::AddrInUse
                        && addr.is_ipv4()
                        && addr.ip().is_unspecified()
                        && listeners.iter().any(|l: &TcpListener| {
                            l.local_addr().is_ok_and(|a| {
                                a.is_ipv6() && a.ip().is_unspecified() && a.port() == addr.port()
                            })
                        }) =>
                {
                    continue
                }
                Err(source) => return Err(ProxyError::Bind { addr, source }),
            };
            if let Ok(a) = l.local_addr() {
                port = a.port();
            }
            listeners.push(l);
        }
        let access = httpkit::Access {
            authenticator: match &config.auth_file {
                Some(path) => Some(Arc::new(
                    httpkit::tokens::TokenFile::load(path)
                        .map_err(|e| ProxyError::Config(e.to_string()))?,
                ) as Arc<dyn httpkit::Authenticator>),
                None => None,
            },
            public: false,
        };
        let control_http = httpkit::HttpConfig {
            access,
            allowed_hosts: httpkit::AllowedHosts::new(&config.control_allowed_hosts),
            ..httpkit::HttpConfig::default()
        };
        let control_listener = match config.control {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .map_err(|source| ProxyError::Bind { addr, source })?,
            ),
            None => None,
        };
        let shared = Arc::new(Shared {
            control: Control::new(config.forward == ForwardMode::Manual),
            registry,
            shutdown: watch::Sender::new(false),
            forwarders: Default::default(),
            clients: Default::default(),
            admission: Admission::new(config.max_connections, config.max_connections_per_source),
            refused: Default::default(),
            config,
        });
        tracing::info!(proxy_id = %shared.registry.proxy_id, upstream = %shared.config.upstream,
            journal = %shared.config.journal_dir.display(), fsync = %shared.config.fsync,
            quota = shared.config.quota, quota_policy = %shared.config.quota_policy,
            paused = shared.control.is_paused(), "proxy starting");
        let local: Vec<SocketAddr> = listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect();
        let control = control_listener.as_ref().and_then(|l| l.local_addr().ok());
        let mut tasks = Vec::new();
        for entry in shared.registry.all() {
            shared.spawn_forwarder(entry);
        }
        let accepting = listeners
            .into_iter()
            .map(|l| tokio::spawn(accept_loop(l, Arc::clone(&shared))))
            .collect();
        tasks.push(tokio::spawn(ticker(Arc::clone(&shared))));
        if let Some(l) = control_listener {
            tasks.push(tokio::spawn(crate::control::http::serve(
                l,
                Arc::clone(&shared),
                control_http,
            )));
        }
        for a in &local {
            tracing::info!(address = %a, "listening for clients");
        }
        if let Some(c) = control {
            tracing::info!(address = %c, "control endpoint (GET /status, POST /pause, POST /resume)");
        }
        Ok(Proxy {
            shared,
            local,
            control,
            accepting,
            tasks,
        })
    }

    /// Addresses clients connect to.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local
    }

    /// The control endpoint's address.
    pub fn control_addr(&self) -> Option<SocketAddr> {
        self.control
    }

    /// Pauses, resumes (or stops, which pauses) forwarding.
    pub fn command(&self, cmd: Command) {
        self.shared.control.apply(cmd);
    }

    /// A handle for pausing, resuming and status from other tasks or threads.
    pub fn handle(&self) -> ProxyHandle {
        ProxyHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// The status document served on `GET /status`.
    pub fn status(&self) -> serde_json::Value {
        crate::status::status(&self.shared)
    }

    /// Stops accepting, journals and syncs what clients sent, and stops
    /// forwarding. The journals are kept: the next start resumes them.
    pub async fn shutdown(self) {
        let _ = self.shared.shutdown.send(true);
        for t in self.accepting {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
        for t in &self.tasks {
            t.abort();
        }
        let clients = std::mem::take(
            &mut *self
                .shared
                .clients
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for c in clients {
            let _ = tokio::time::timeout(Duration::from_secs(5), c).await;
        }
        let fwd = std::mem::take(
            &mut *self
                .shared
                .forwarders
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for f in fwd {
            let _ = tokio::time::timeout(Duration::from_secs(5), f).await;
        }
        self.shared.registry.sync_all().await;
        tracing::info!("proxy stopped");
    }
}

/// Controls a running proxy from elsewhere (the standard input reader).
#[derive(Debug, Clone)]
pub struct ProxyHandle {
    /// Shared state.
    shared: Arc<Shared>,
}

impl ProxyHandle {
    /// Pauses, resumes (or stops, which pauses) forwarding.
    pub fn command(&self, cmd: Command) {
        self.shared.control.apply(cmd);
    }

    /// The status document.
    pub fn status(&self) -> serde_json::Value {
        crate::status::status(&self.shared)
    }
}

fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = shutdown.wait_for(|&stop| stop) => break,
        };
        match accepted {
            Ok((stream, peer)) => spawn_client(stream, peer, &shared),
            Err(e) => {
                // Out of descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    // A client that connected, sent its rows and left just before shutdown
    // may still sit in the kernel's listen backlog: TCP accepted its rows,
    // so journal them (the connection drains) rather than reset it by
    // closing the listener. Only connections already queued are taken.
    while let Ok(Ok((stream, peer))) = tokio::time::timeout(BACKLOG_POLL, listener.accept()).await {
        spawn_client(stream, peer, &shared);
    }
}

/// How long the shutdown waits for one more already-queued connection.
const BACKLOG_POLL: Duration = Duration::from_millis(5);

/// Admits one accepted client and serves it on its own task; a refused one
/// is closed unread, counted, and logged at most every 10 s.
fn spawn_client(stream: tokio::net::TcpStream, peer: SocketAddr, shared: &Arc<Shared>) {
    let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
    let admitted = match shared.admission.admit(peer.ip()) {
        Ok(a) => a,
        Err(refusal) => {
            shared.refused[refusal.reason as usize].fetch_add(1, Ordering::Relaxed);
            if let Some(report) = &refusal.report {
                tracing::warn!(client = %peer.ip(), reason = refusal.reason.label(),
                    refused = report.refused, open = report.open, "{report}");
            }
            drop(stream);
            return;
        }
    };
    let task = tokio::spawn({
        let shared = Arc::clone(shared);
        async move {
            crate::accept::serve(stream, peer, shared).await;
            drop(admitted);
        }
    });
    let mut c = shared.clients.lock().unwrap_or_else(|p| p.into_inner());
    c.retain(|t| !t.is_finished());
    c.push(task);
}

/// Syncs journals per the fsync policy and stores their metadata.
async fn ticker(shared: Arc<Shared>) {
    let period = match shared.config.fsync {
        FsyncPolicy::Interval(d) => d,
        FsyncPolicy::Always | FsyncPolicy::Never => Duration::from_millis(100),
    };
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        shared.registry.sync_all().await;
    }
}
