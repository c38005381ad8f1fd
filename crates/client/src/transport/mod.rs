//! Sender threads: one per destination, doing that destination's I/O.
//!
//! A sender takes chunks of encoded tuples from its [`DestQueue`] and writes
//! them; it never encodes. A slow or dead destination therefore only fills
//! its own queue, where its overload policy applies.

mod doubles;
mod file;
mod session;
mod tcp;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use omsp::Schema;

use crate::client::Shared;
use crate::error::ClientError;
use crate::header::Identity;
use crate::queue::dest::{Chunk, DestQueue, SLOT_SCHEMA0};
use crate::spec::Uri;
use crate::spec::{Backchannel, Encoding};

/// How long a sender waits for data before doing housekeeping (flushing a
/// buffered file, checking that a server is still there).
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// Where a destination's bytes go, opened at start.
#[derive(Debug)]
pub(crate) enum Sink {
    /// A file (appended to) or standard output.
    File(file::FileSink),
    /// A collection server, connected by the sender thread.
    Tcp(tcp::TcpTarget),
}

/// Opens a destination: files are opened (append) now so that `start`
/// reports a bad path; TCP destinations connect from their sender thread.
pub(crate) fn open(uri: &Uri) -> Result<Sink, ClientError> {
    let err = |source| ClientError::Destination {
        uri: crate::destination::label(uri),
        source,
    };
    Ok(match uri {
        Uri::File(p) => Sink::File(file::FileSink::open(p, false).map_err(err)?),
        Uri::FlushFile(p) => Sink::File(file::FileSink::open(p, true).map_err(err)?),
        Uri::Stdout => Sink::File(file::FileSink::stdout()),
        Uri::Tcp { host, port } => Sink::Tcp(tcp::TcpTarget::new(host, *port)),
    })
}

/// What every sender needs.
#[derive(Debug)]
pub(crate) struct SenderCtx {
    /// The destination's queue.
    pub(crate) queue: Arc<DestQueue>,
    /// The header (and, for TCP, the start of the replay log).
    pub(crate) header: Vec<u8>,
    /// For logs.
    pub(crate) label: String,
    /// Give up on a destination that makes no progress for this long once
    /// the client is closing.
    pub(crate) close_timeout: Duration,
    /// The back-channel asked for (TCP), with what a resumed header needs.
    pub(crate) session: Option<SessionSpec>,
    /// Wakes the writer (a control message arrived).
    pub(crate) shared: Arc<Shared>,
    /// The header offers exact doubles (spec §3.8) and the writer encodes
    /// them: chunks are rewritten for a receiver that does not confirm.
    pub(crate) exact_doubles: bool,
}

/// What a resumable session (spec §3.6) needs to rebuild its header.
#[derive(Debug)]
pub(crate) struct SessionSpec {
    /// `resume` or `feedback`.
    pub(crate) mode: Backchannel,
    /// Header fields of the first connection.
    pub(crate) identity: Identity,
    /// The destination's encoding.
    pub(crate) encoding: Encoding,
    /// `_client_instrumentation`'s schema, if it is declared.
    pub(crate) instrumentation: Option<Schema>,
    /// Streams declared in the first header.
    pub(crate) schemas: Vec<Schema>,
    /// How long to wait for the resume line before treating the receiver
    /// as one that does not speak the extension.
    pub(crate) answer_timeout: Duration,
    /// Offer exact doubles in every header (spec §3.8).
    pub(crate) exact_doubles: bool,
}

/// Starts the sender thread of one destination.
pub(crate) fn spawn(sink: Sink, ctx: SenderCtx) -> Result<JoinHandle<()>, ClientError> {
    let name = format!("sg-send {}", ctx.label);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || match sink {
            Sink::File(f) => file::run(f, ctx),
            Sink::Tcp(t) => tcp::run(t, ctx),
        })
        .map_err(|source| ClientError::Spawn {
            what: "sender",
            source,
        })
}

/// Tracks when a closing client should give up on a destination.
#[derive(Debug, Default)]
struct CloseClock {
    /// When the sender first saw the queue closing.
    since: Option<Instant>,
}

impl CloseClock {
    /// True once the client is closing and the destination has made no
    /// progress for `ctx.close_timeout` since then.
    fn expired(&mut self, ctx: &SenderCtx) -> bool {
        if !ctx.queue.is_closing() {
            return false;
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        let quiet = Instant::now() - ctx.queue.last_progress().max(since);
        quiet >= ctx.close_timeout
    }
}

/// Marks the tuples of `c` that lie entirely within its next `done` bytes
/// as written; schema-0 tuples among them are appended to `replay`.
fn mark_written(c: &mut Chunk, done: usize, queue: &DestQueue, replay: Option<&mut Vec<u8>>) {
    let mut upto = c.first;
    let mut bytes = 0;
    let mut replay = replay;
    while upto < c.tuples.len() && bytes + c.tuples[upto].len as usize <= done {
        let t = c.tuples[upto];
        if t.slot as usize == SLOT_SCHEMA0 {
            if let Some(r) = replay.as_deref_mut() {
                let at = c.offset + bytes;
                r.extend_from_slice(&c.bytes[at..at + t.len as usize]);
            }
        }
        bytes += t.len as usize;
        upto += 1;
    }
    queue.written(c, upto);
}

/// Gives up at close: counts what is left as dropped and logs it.
fn give_up(ctx: &SenderCtx, current: Option<Chunk>) {
    let n = ctx.queue.abandon(current);
    tracing::warn!(destination = %ctx.label, dropped = n,
        timeout_ms = ctx.close_timeout.as_millis() as u64,
        "destination made no progress while closing; giving up");
}
