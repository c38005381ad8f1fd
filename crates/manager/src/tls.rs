//! Optional TLS for the API and the front end (`--tls-cert`, `--tls-key`).
//!
//! The certificate and key are loaded by the collection server's TLS
//! module (one PEM loader in the project: rustls with ring, TLS 1.2/1.3);
//! each accepted connection (within httpkit's connection cap) completes its
//! handshake (bounded) and is then served by httpkit with the same router
//! and the same header and idle timeouts as plain listeners, the peer
//! address attached for the login rate limit. With TLS the session cookie carries `Secure`.

use std::future::Future;
use std::net::SocketAddr;

use axum::extract::ConnectInfo;
use axum::Router;
use server::tls::Tls;
use tokio::net::TcpListener;

/// Serves `app` over TLS on `listener` until `shutdown` completes;
/// connections in flight are then cut when the runtime ends.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Tls,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    // The same budget as every plain listener (httpkit::serve).
    let budget = httpkit::Budget::default();
    let gate = httpkit::Gate::new(budget.max_connections);
    loop {
        let (tcp, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return Ok(()),
        };
        let Some(permit) = gate.admit(&tcp) else {
            continue;
        };
        let acceptor = tls.acceptor.clone();
        let limit = tls.handshake_timeout;
        let app = app.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let stream = match tokio::time::timeout(limit, acceptor.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => return,
            };
            let app = app.layer(axum::Extension(ConnectInfo::<SocketAddr>(peer)));
            let _ = httpkit::serve_io(stream, app, budget, None).await;
        });
    }
}
