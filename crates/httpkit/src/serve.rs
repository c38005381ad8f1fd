//! Serving a router on a listener until shutdown.

use std::future::Future;
use std::net::SocketAddr;

use axum::Router;
use tokio::net::TcpListener;

/// Serves `app` (already wrapped by [`crate::HttpConfig::apply`]) on
/// `listener` until `shutdown` completes; then stops accepting and lets
/// requests in flight finish. The peer address is available to the
/// authentication layer (loopback trust).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

/// Serves one already-accepted connection with `app` (for listeners that
/// look at a connection's first bytes before deciding it is HTTP, like the
/// proxy's control port, which also speaks the reference's line protocol).
pub async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
) -> Result<(), String> {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let app = app.layer(axum::Extension(axum::extract::ConnectInfo(peer)));
    let service = hyper_util::service::TowerToHyperService::new(app);
    hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), service)
        .await
        .map_err(|e| e.to_string())
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
