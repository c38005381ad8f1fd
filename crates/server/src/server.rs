//! The listening server: binds, accepts, and shuts down in order.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::config::ServerConfig;
use crate::connection::{self, Shared};
use crate::hook::Hook;
use crate::registry::Registry;
use crate::shutdown::Shutdown;
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
    /// Starts the shutdown.
    trigger: watch::Sender<bool>,
    /// Ends when everything is stored and closed.
    done: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Checks the data directory, starts the hook, binds every listen
    /// address and starts accepting. Must run inside a tokio runtime.
    pub async fn start(config: ServerConfig) -> Result<Server, ServerError> {
        check_data_dir(&config.data_dir)?;
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
        let registry = Registry::new(
            WriterSetup {
                dir: config.data_dir.clone(),
                domain: String::new(),
                sqlite: config.sqlite,
                commit: config.commit,
                hook: Arc::clone(&hook),
            },
            config.queue_batches,
        );
        let shared = Arc::new(Shared {
            registry: Arc::clone(&registry),
            idle_timeout: config.idle_timeout.filter(|d| !d.is_zero()),
            limits: config.limits,
            read_chunk: config.read_chunk,
            batch_rows: config.batch_rows.max(1),
        });
        let (trigger, shutdown) = Shutdown::new();
        // Every connection task holds a clone; recv() returns None once all are done.
        let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
        let mut acceptors = JoinSet::new();
        for listener in listeners {
            acceptors.spawn(accept_loop(
                listener,
                Arc::clone(&shared),
                shutdown.clone(),
                alive_tx.clone(),
            ));
        }
        drop(alive_tx);
        for a in &addrs {
            tracing::info!(addr = %a, "listening");
        }
        let done = tokio::spawn(async move {
            while acceptors.join_next().await.is_some() {}
            let _ = alive_rx.recv().await;
            let registry = Arc::clone(&registry);
            let _ = tokio::task::spawn_blocking(move || {
                registry.join_closed();
                hook.exit();
            })
            .await;
            tracing::info!("server stopped");
        });
        Ok(Server {
            addrs,
            trigger,
            done,
        })
    }

    /// The addresses the server listens on.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Shuts down (see the type's documentation) and waits until every
    /// accepted row is committed and every database closed.
    pub async fn shutdown(self) {
        let _ = self.trigger.send(true);
        let _ = self.done.await;
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: Shutdown,
    alive: mpsc::Sender<()>,
) {
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = shutdown.requested() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
                let _ = stream.set_nodelay(true);
                let shared = Arc::clone(&shared);
                let shutdown = shutdown.clone();
                let alive = alive.clone();
                tokio::spawn(async move {
                    connection::serve(stream, peer, shared, shutdown).await;
                    drop(alive);
                });
            }
            Err(e) => {
                // Out of descriptors and the like: back off instead of spinning.
                tracing::error!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
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
    socket.listen(128)
}
