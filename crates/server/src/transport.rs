//! One accepted socket → plain OMSP or TLS, on the same port.
//!
//! Every OMSP session starts with a text header (`protocol: …`), while a TLS
//! client starts with a handshake record, whose first byte is 0x16. So the
//! server peeks at the first byte without consuming it: 0x16 goes to the TLS
//! acceptor, anything else to the plain path (or, with TLS required, is
//! refused). Without TLS configured nothing is peeked at.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpStream;

use crate::connection::{self, Shared};
use crate::shutdown::Shutdown;
use crate::socket::Socket;
use crate::tls::Tls;

/// First byte of a TLS record of type handshake.
const TLS_HANDSHAKE: u8 = 0x16;

/// What the first byte said.
enum Sniffed {
    /// A TLS handshake record.
    Tls,
    /// Anything else, including a client that closed without sending.
    Plain,
    /// Nothing within the idle timeout, or the server is shutting down.
    Silent,
}

/// Serves one accepted socket until its session ends; `lease` is dropped
/// when it does (see [`connection::serve`]).
pub async fn serve<L: Send + 'static>(
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut shutdown: Shutdown,
    tls: Option<Arc<Tls>>,
    lease: L,
) {
    let stream = Socket::Live(stream);
    let Some(tls) = tls else {
        return connection::serve(stream, peer, shared, shutdown, lease).await;
    };
    let sniffed = tokio::select! {
        s = sniff(&stream, shared.idle_timeout) => s,
        () = shutdown.requested() => Sniffed::Silent,
    };
    match sniffed {
        // Boxed: the handshake and a session over TLS are larger futures
        // than a plain session, and a plain connection need not hold room
        // for them.
        Sniffed::Tls => Box::pin(serve_tls(stream, peer, shared, shutdown, tls, lease)).await,
        Sniffed::Plain | Sniffed::Silent if tls.required => {
            tracing::warn!(client = %peer, "plaintext connection refused (TLS is required)");
        }
        Sniffed::Plain | Sniffed::Silent => {
            connection::serve(stream, peer, shared, shutdown, lease).await
        }
    }
}

/// Completes the TLS handshake, then serves the session over it.
async fn serve_tls<L: Send + 'static>(
    stream: Socket,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut shutdown: Shutdown,
    tls: Arc<Tls>,
    lease: L,
) {
    let handshake = tokio::time::timeout(tls.handshake_timeout, tls.acceptor.accept(stream));
    let result = tokio::select! {
        r = handshake => r,
        () = shutdown.requested() => return,
    };
    match result {
        Ok(Ok(stream)) => {
            let (_, session) = stream.get_ref();
            tracing::debug!(client = %peer, version = ?session.protocol_version(),
                suite = ?session.negotiated_cipher_suite().map(|s| s.suite()),
                "TLS established");
            connection::serve(stream, peer, shared, shutdown, lease).await;
        }
        Ok(Err(e)) => {
            tracing::warn!(client = %peer, error = %e, "TLS handshake failed; connection closed");
        }
        Err(_) => {
            tracing::warn!(client = %peer, timeout = ?tls.handshake_timeout,
                "TLS handshake timed out; connection closed");
        }
    }
}

/// Waits for the first byte (without consuming it).
async fn sniff(stream: &Socket, limit: Option<std::time::Duration>) -> Sniffed {
    let mut first = [0u8; 1];
    let peeked = match limit {
        Some(d) => match tokio::time::timeout(d, stream.peek(&mut first)).await {
            Ok(r) => r,
            Err(_) => return Sniffed::Silent,
        },
        None => stream.peek(&mut first).await,
    };
    match peeked {
        Ok(1..) if first[0] == TLS_HANDSHAKE => Sniffed::Tls,
        // End of stream and errors: the plain path reports them as usual.
        _ => Sniffed::Plain,
    }
}
