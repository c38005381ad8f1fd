//! Device answers whose bodies are relayed as they come (file downloads,
//! the live-data relay), over the same blocking client as every other
//! device request ([`super::client`]).
//!
//! The request runs on tokio's blocking pool; a reader thread of its own
//! then feeds the body to axum through a bounded channel (its own thread:
//! a live tail lasts for hours, and must neither hold one of the pool's
//! threads nor keep the runtime from shutting down). When the browser
//! goes away, axum drops the receiving end, the reader's next send fails
//! and it drops the upstream body, which closes the upstream connection:
//! an abandoned live tail ends at the collector's next heartbeat (at most
//! a second away).

use std::io::Read;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Bytes;
use axum::http::{HeaderName, HeaderValue, Response};
use httpkit::client::{Body, Client};
use tokio::sync::mpsc;

use super::DeviceError;

/// The most bytes one read of the upstream body hands on.
const CHUNK: usize = 16 * 1024;

/// Chunks read ahead of a browser that is slower than the device.
const QUEUE: usize = 4;

/// `GET path` with `headers` through `client`, off the async threads: the
/// answer whatever its status, its body not read yet.
pub async fn get(
    client: Client,
    path: String,
    headers: Vec<(HeaderName, HeaderValue)>,
) -> Result<Response<Body>, DeviceError> {
    super::blocking(move || client.open(&path, &headers).map_err(DeviceError::from)).await
}

/// The upstream body as an axum body, read as it comes. A read error
/// ends the body with that error (the browser sees a cut answer, not a
/// short one).
pub fn relay_body(upstream: Body) -> axum::body::Body {
    let (tx, rx) = mpsc::channel(QUEUE);
    let (reader, feeder) = (upstream.into_reader(), tx.clone());
    let spawned = std::thread::Builder::new()
        .name("relay-body".into())
        .spawn(move || feed(reader, &feeder));
    if let Err(e) = spawned {
        // Without a reader the body ends at once, cut with the reason.
        let _ = tx.try_send(Err(e));
    }
    axum::body::Body::from_stream(Chunks(rx))
}

/// At most `max + 1` bytes of the upstream body (more than `max` says it
/// was longer), whatever could be read before an error.
pub async fn read_up_to(upstream: Body, max: usize) -> Vec<u8> {
    tokio::task::spawn_blocking(move || {
        let mut body = Vec::new();
        let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
        // What arrived before an error is kept: it is all there is.
        let _ = upstream.into_reader().take(limit).read_to_end(&mut body);
        body
    })
    .await
    .unwrap_or_default()
}

/// Reads `reader` into `tx` until the body ends, a read fails, or nobody
/// listens any more; dropping `reader` then closes the upstream connection.
fn feed(mut reader: impl Read, tx: &mpsc::Sender<std::io::Result<Bytes>>) {
    let mut buf = vec![0; CHUNK];
    loop {
        let chunk = match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => Ok(Bytes::copy_from_slice(&buf[..n])),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
        let failed = chunk.is_err();
        if tx.blocking_send(chunk).is_err() || failed {
            return;
        }
    }
}

/// The receiving end of [`feed`] as a stream of body chunks.
struct Chunks(mpsc::Receiver<std::io::Result<Bytes>>);

impl futures_core::Stream for Chunks {
    type Item = std::io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}
