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
