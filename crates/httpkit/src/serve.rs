//! Serving a router on a listener until shutdown, within the listener's
//! [`Budget`].

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use tokio::net::TcpListener;

use crate::budget::{Budget, Gate, Watched};
use crate::tls::ServerTls;

/// Serves `app` (already wrapped by [`crate::HttpConfig::apply`]) on
/// `listener` with the default [`Budget`] until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, app, Budget::default(), shutdown).await
}

/// Serves `app` on `listener` within `budget` until `shutdown` completes;
/// then stops accepting, closes idle connections and returns once the
/// requests in flight have finished. The peer address is available to the
/// authentication layer (loopback trust).
pub async fn serve_with(
    listener: TcpListener,
    app: Router,
    budget: Budget,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    accept_loop(listener, app, budget, None, shutdown).await
}

/// Serves `app` over TLS on `listener` within `budget` until `shutdown`
/// completes, as [`serve_with`] does in clear: the same connection cap
/// (a connection holds its slot from accept, through its handshake, to
/// close), the same timeouts, the same graceful stop. A handshake must
/// complete within the certificate's handshake timeout.
pub async fn serve_tls(
    listener: TcpListener,
    app: Router,
    budget: Budget,
    tls: ServerTls,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    accept_loop(listener, app, budget, Some(tls), shutdown).await
}

async fn accept_loop(
    listener: TcpListener,
    app: Router,
    budget: Budget,
    tls: Option<ServerTls>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let gate = Gate::new(budget.max_connections);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    let mut failures = 0u64;
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of descriptors (EMFILE) and the like: back off
                    // instead of spinning; logged once per run of failures.
                    failures += 1;
                    if failures == 1 {
                        tracing::warn!(error = %e, "HTTP accept failed; retrying");
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        if failures > 1 {
            tracing::warn!(failures, "HTTP accept recovered after failures");
        }
        failures = 0;
        while tasks.try_join_next().is_some() {}
        let Some(permit) = gate.admit(&stream) else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let stop = stop_rx.clone();
        let tls = tls.clone();
        tasks.spawn(async move {
            let _permit = permit;
            let app = app.layer(axum::Extension(ConnectInfo(peer)));
            let served = match tls {
                None => serve_io(stream, app, budget, Some(stop)).await,
                Some(tls) => {
                    let limit = tls.handshake_timeout;
                    match tokio::time::timeout(limit, tls.acceptor.accept(stream)).await {
                        Ok(Ok(s)) => serve_io(s, app, budget, Some(stop)).await,
                        Ok(Err(e)) => Err(format!("TLS handshake failed: {e}")),
                        Err(_) => Err(format!("TLS handshake not done within {limit:?}")),
                    }
                }
            };
            if let Err(e) = served {
                tracing::debug!(client = %peer, error = %e, "HTTP connection ended");
            }
        });
    }
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Serves one already-accepted connection with `app` within the default
/// [`Budget`]'s timeouts (for listeners that look at a connection's first
/// bytes before deciding it is HTTP, like the proxy's control port, which
/// also speaks the reference's line protocol; such a listener caps its
/// connections with a [`Gate`]).
pub async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
) -> Result<(), String> {
    let app = app.layer(axum::Extension(ConnectInfo(peer)));
    serve_io(stream, app, Budget::default(), None).await
}

/// Serves one connection (plain TCP, or TLS after its handshake) with
/// `app`, which must already carry the peer's `ConnectInfo`: request heads
/// must arrive within the budget's header timeout, and the connection is
/// closed once no byte moved for its idle timeout. When `stop` turns true
/// the connection finishes its request in flight and closes.
pub async fn serve_io<S>(
    io: S,
    app: Router,
    budget: Budget,
    mut stop: Option<tokio::sync::watch::Receiver<bool>>,
) -> Result<(), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    let (io, quiet) = Watched::new(io);
    let service = hyper_util::service::TowerToHyperService::new(app);
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(budget.header_timeout);
    builder.http2().timer(TokioTimer::new());
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::pin!(conn);
    let idle = budget.idle_timeout;
    let stop_signal = async move {
        match stop.as_mut() {
            // A dropped sender means the listener is gone: stop as well.
            Some(s) => drop(s.wait_for(|stopped| *stopped).await),
            None => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(stop_signal);
    let mut stopping = false;
    loop {
        let check = idle
            .saturating_sub(quiet.since())
            .max(Duration::from_millis(10));
        tokio::select! {
            r = conn.as_mut() => return r.map_err(|e| e.to_string()),
            _ = tokio::time::sleep(check) => {
                if quiet.since() >= idle {
                    return Err(format!("closed: no byte moved for {idle:?}"));
                }
            }
            _ = &mut stop_signal, if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Whether the first bytes of a connection (at least 8 when the client
/// sent that many) start with an HTTP method and a space.
pub fn looks_like_http(first: &[u8]) -> bool {
    const METHODS: [&[u8]; 7] = [
        b"GET ",
        b"POST ",
        b"HEAD ",
        b"PUT ",
        b"DELETE ",
        b"OPTIONS ",
        b"PATCH ",
    ];
    METHODS.iter().any(|m| first.starts_with(m))
}
