//! What one HTTP listener may hold: its connection budget.
//!
//! A client that opens connections and never finishes a request
//! (slowloris) costs the server a descriptor each; without limits a few
//! thousand of them exhaust the process's descriptors and the collection
//! server can no longer accept its measurement clients. So every listener
//! has:
//!
//! - a **connection cap** ([`Budget::max_connections`]): a connection beyond
//!   it is answered `503` without waiting and closed at once, so it never
//!   holds a descriptor for longer than the accept;
//! - a **header timeout** ([`Budget::header_timeout`]): a request head must
//!   arrive whole within it, counted from when the server starts waiting
//!   for it — on a new connection and between the requests of a kept-alive
//!   one, so it also bounds how long an idle kept-alive connection stays;
//! - an **idle timeout** ([`Budget::idle_timeout`]): a connection on which
//!   no byte moved either way for that long is closed, whatever it was
//!   doing (a client that stopped reading a streamed answer; live tails
//!   send a keep-alive every 15 s, so they never go that quiet).
//!
//! The cap is per listener, well below the descriptor limit that
//! [`raise_fd_limit`] sets at start, so HTTP clients can never take the
//! descriptors that the collection server's measurement clients need.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Limits of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Longest wait for a whole request head (new or kept-alive connection).
    pub header_timeout: Duration,
    /// Longest time a connection may move no byte in either direction.
    pub idle_timeout: Duration,
    /// Most connections open at once on this listener.
    pub max_connections: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_connections: 512,
        }
    }
}

/// Admits connections up to a listener's cap. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Gate {
    /// One permit per connection the listener may hold.
    slots: Arc<Semaphore>,
    /// Connections refused since the last warning.
    refused: Arc<AtomicU64>,
    /// When the last line about refusals was written: at most one per
    /// [`LOG_PERIOD`], however often the listener fills and drains.
    logged: Arc<std::sync::Mutex<Option<Instant>>>,
    /// The cap, for the log.
    cap: usize,
}

/// Shortest time between two log lines about refused connections.
const LOG_PERIOD: Duration = Duration::from_secs(10);

/// The "full" answer: sent without waiting (a non-blocking write into the
/// socket's empty send buffer) so a refused connection costs nothing.
const FULL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
connection: close\r\ncontent-length: 125\r\n\r\n\
{\"error\":{\"status\":503,\"code\":\"too_many_connections\",\
\"message\":\"this endpoint has as many connections as it serves: retry\"}}\n";

impl Gate {
    /// A gate letting `cap` connections in (at least one).
    pub fn new(cap: usize) -> Gate {
        Gate {
            slots: Arc::new(Semaphore::new(cap.max(1))),
            refused: Arc::new(AtomicU64::new(0)),
            logged: Arc::default(),
            cap: cap.max(1),
        }
    }

    /// A slot for `stream`, held until the returned permit is dropped; or
    /// `None` when the listener is full, after answering 503 (best effort,
    /// never waiting) — the caller then drops the stream.
    pub fn admit(&self, stream: &tokio::net::TcpStream) -> Option<OwnedSemaphorePermit> {
        match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(p) => {
                if self.refused.load(Ordering::Relaxed) > 0 && self.may_log() {
                    let refused = self.refused.swap(0, Ordering::Relaxed);
                    tracing::warn!(
                        refused,
                        cap = self.cap,
                        "HTTP connections refused: the listener was full"
                    );
                }
                Some(p)
            }
            Err(_) => {
                if self.refused.fetch_add(1, Ordering::Relaxed) == 0 && self.may_log() {
                    tracing::warn!(
                        cap = self.cap,
                        "HTTP listener full: refusing connections (counted; at most one line per 10 s)"
                    );
                }
                let _ = stream.try_write(FULL);
                None
            }
        }
    }

    /// True if no line about refusals was written in the last
    /// [`LOG_PERIOD`] (and this one is then counted as written).
    fn may_log(&self) -> bool {
        let mut logged = self
            .logged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        if logged.is_some_and(|t| now.duration_since(t) < LOG_PERIOD) {
            return false;
        }
        *logged = Some(now);
        true
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.cap - self.slots.available_permits()
    }
}

/// A connection's byte stream that remembers when a byte last moved, for
/// the idle timeout.
pub(crate) struct Watched<S> {
    /// The stream.
    inner: S,
    /// Milliseconds since `start` at the last read or write.
    last: Arc<AtomicU64>,
    /// The clock's origin.
    start: Instant,
}

/// The reading side of [`Watched`]: how long since a byte moved.
#[derive(Clone)]
pub(crate) struct Quiet {
    /// Shared with the stream.
    last: Arc<AtomicU64>,
    /// The clock's origin.
    start: Instant,
}

impl Quiet {
    /// Time since the last byte moved.
    pub(crate) fn since(&self) -> Duration {
        let now = self.start.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last.load(Ordering::Relaxed)))
    }
}

impl<S> Watched<S> {
    /// Wraps `inner`; the returned [`Quiet`] reads its idle time.
    pub(crate) fn new(inner: S) -> (Watched<S>, Quiet) {
        let last = Arc::new(AtomicU64::new(0));
        let start = Instant::now();
        let quiet = Quiet {
            last: Arc::clone(&last),
            start,
        };
        (Watched { inner, last, start }, quiet)
    }

    fn touch(&self) {
        let now = self.start.elapsed().as_millis() as u64;
        self.last.store(now, Ordering::Relaxed);
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.touch();
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Raises this process's open-file soft limit to its hard limit, so that
/// descriptor budgets, not the default 1024, decide how many clients a
/// component serves; logs and returns the limit in force.
pub fn raise_fd_limit() -> std::io::Result<u64> {
    let (_, hard) = rlimit::Resource::NOFILE.get()?;
    let got = rlimit::increase_nofile_limit(hard)?;
    tracing::info!(
        open_files = got,
        hard_limit = hard,
        "open-file limit raised to the hard limit"
    );
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_answer_is_well_formed() {
        let text = std::str::from_utf8(FULL).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "too_many_connections");
    }

    #[test]
    fn refusals_are_logged_at_most_once_per_period() {
        // A listener that fills and drains many times a second (abandoned
        // live tails) wrote two lines per burst: 385 in 20 s.
        let gate = Gate::new(1);
        assert!(gate.may_log());
        assert!((0..1000).all(|_| !gate.may_log()));
        *gate.logged.lock().unwrap() = Some(Instant::now() - LOG_PERIOD);
        assert!(gate.may_log(), "the next period writes again");
    }

    #[test]
    fn fd_limit_reaches_the_hard_limit() {
        let got = raise_fd_limit().unwrap();
        let (soft, hard) = rlimit::Resource::NOFILE.get().unwrap();
        assert_eq!(got, soft);
        assert!(soft == hard || hard == rlimit::INFINITY);
    }
}
