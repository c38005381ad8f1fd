//! Streamed answers: a blocking query writes into a [`ChannelWriter`];
//! its bytes go to the client as a chunked body while the query runs. The
//! status is decided by the first chunk: an error before any byte left
//! becomes a JSON error answer; one after aborts the body (the client sees
//! an incomplete transfer, never a silently short one).

use std::io::{self, Write};

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::error::QueryError;

/// Bytes per chunk.
const CHUNK: usize = 64 * 1024;
/// Chunks queued towards a slow client before the query waits.
const QUEUE: usize = 8;

/// The writing end, used on a blocking thread.
pub struct ChannelWriter {
    /// Bytes not yet sent.
    buf: Vec<u8>,
    /// Chunks to the client.
    tx: mpsc::Sender<Result<Bytes, io::Error>>,
    /// Tells the handler to answer 200 (first chunk) or with an error.
    head: Option<oneshot::Sender<Result<(), QueryError>>>,
}

/// The handler's end: becomes the response.
pub struct Pending {
    /// Receives the outcome before the first byte.
    head: oneshot::Receiver<Result<(), QueryError>>,
    /// The body's chunks.
    rx: mpsc::Receiver<Result<Bytes, io::Error>>,
}

/// A connected pair.
pub fn channel() -> (ChannelWriter, Pending) {
    let (tx, rx) = mpsc::channel(QUEUE);
    let (htx, hrx) = oneshot::channel();
    (
        ChannelWriter {
            buf: Vec::with_capacity(CHUNK),
            tx,
            head: Some(htx),
        },
        Pending { head: hrx, rx },
    )
}

impl ChannelWriter {
    fn send_head(&mut self) {
        if let Some(h) = self.head.take() {
            let _ = h.send(Ok(()));
        }
    }

    fn send(&mut self) -> io::Result<()> {
        self.send_head();
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }

    /// Ends the answer: with what is buffered, or with `err` (a JSON error
    /// answer if nothing was sent yet, else an aborted body).
    pub fn finish(mut self, result: Result<(), QueryError>) {
        match result {
            Ok(()) => {
                let _ = self.send();
            }
            Err(e) => match self.head.take() {
                Some(h) => {
                    let _ = h.send(Err(e));
                }
                None => {
                    tracing::warn!(error = %e, "query failed while streaming its answer");
                    let _ = self.tx.blocking_send(Err(io::Error::other(e.to_string())));
                }
            },
        }
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Pending {
    /// Waits for the first chunk (or the error) and answers.
    pub async fn respond(self, content_type: &'static str) -> Response {
        match self.head.await {
            Ok(Ok(())) => {
                let stream = futures_util::stream::unfold(self.rx, |mut rx| async move {
                    rx.recv().await.map(|item| (item, rx))
                });
                ([(CONTENT_TYPE, content_type)], Body::from_stream(stream)).into_response()
            }
            Ok(Err(e)) => e.into_response(),
            Err(_) => crate::auth::ApiError::internal("the query stopped without an answer")
                .into_response(),
        }
    }
}
