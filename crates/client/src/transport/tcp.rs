//! TCP destinations: connect, reconnect, resend.
//!
//! - **Connecting.** The sender connects as soon as the client starts (so
//!   the server learns about the sender early), resolving the host name on
//!   every attempt (IPv4, IPv6 and names via `ToSocketAddrs`, each address
//!   tried in turn with a 2 s connect timeout).
//! - **Reconnecting.** After a failed connection attempt or a write error,
//!   the sender waits 100 ms, then 200 ms, 400 ms … up to 10 s between
//!   attempts (the reference waits 1 … 128 s, too slow for experiments), and
//!   starts again from 100 ms after a successful connection. An idle sender
//!   notices within a second that the server closed the connection (a
//!   server never sends anything, so end-of-file on a read means it is
//!   gone) and reconnects before it has data to lose; a busy sender checks
//!   before each chunk, at most every 2 ms.
//! - **Resending.** Every new connection starts with the full header and
//!   every schema-0 tuple (late stream declarations and metadata) written so
//!   far, then continues with the first tuple not completely written. TCP
//!   confirms nothing, so a tuple counts as written once all its bytes are
//!   in the kernel: the tuple being written when the connection fails is
//!   resent from its first byte on the next connection (the server saw only
//!   part of it on the old one and discarded it), and no tuple is sent
//!   twice. Tuples still in kernel buffers (ours or the server's) when a
//!   server dies are lost; their sequence numbers leave a gap, bounded by the
//!   socket buffer sizes.
//! - **Resumable sessions.** With a back-channel (`--oml-backchannel`,
//!   spec §3.6) that gap closes: the receiver acknowledges what it stored
//!   and says where to resume, and the sender keeps and resends everything
//!   above the last acknowledgement instead of replaying schema-0 tuples
//!   ([`super::session`]).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::doubles::{ExactDoubles, WAIT};
use super::session::{Answer, Broken, Session};
use super::{give_up, mark_written, CloseClock, SenderCtx, IDLE_WAIT};
use crate::queue::dest::{Chunk, Take};

/// First wait after a failure.
pub(crate) const BACKOFF_MIN: Duration = Duration::from_millis(100);
/// Longest wait between attempts.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// Per-address connect timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A blocked write returns this often, so that close can give up.
const WRITE_TIMEOUT: Duration = Duration::from_millis(200);
/// How often an idle connection is checked for a server that went away.
const LIVENESS_EVERY: Duration = Duration::from_secs(1);
/// How often a busy connection is checked, before writing a chunk: bytes
/// written after the server closed are lost, so the check narrows that
/// window to what the server had not read when it closed.
const BUSY_LIVENESS_EVERY: Duration = Duration::from_millis(2);

/// How often a paused (or ack-starved) sender looks at the back-channel.
const PAUSE_POLL: Duration = Duration::from_millis(10);

/// A collection server's address.
#[derive(Debug)]
pub(crate) struct TcpTarget {
    host: String,
    port: u16,
}

impl TcpTarget {
    pub(crate) fn new(host: &str, port: u16) -> TcpTarget {
        TcpTarget {
            host: host.to_owned(),
            port,
        }
    }

    fn connect(&self) -> io::Result<TcpStream> {
        let addrs: Vec<SocketAddr> = (self.host.as_str(), self.port).to_socket_addrs()?.collect();
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        for a in addrs {
            match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
                Ok(s) => {
                    s.set_nodelay(true)?;
                    s.set_write_timeout(Some(WRITE_TIMEOUT))?;
                    return Ok(s);
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// Exponential backoff between connection attempts.
#[derive(Debug)]
struct Backoff {
    /// Waits between attempts.
    delay: omsp::backoff::Backoff,
    /// No attempt before this.
    not_before: Instant,
}

impl Backoff {
    fn new() -> Backoff {
        Backoff {
            delay: omsp::backoff::Backoff::new(BACKOFF_MIN, BACKOFF_MAX),
            not_before: Instant::now(),
        }
    }

    fn failed(&mut self) {
        self.not_before = Instant::now() + self.delay.next_wait();
    }

    fn succeeded(&mut self) {
        self.delay.reset();
    }

    /// Time left before the next attempt.
    fn remaining(&self) -> Duration {
        self.not_before.saturating_duration_since(Instant::now())
    }
}

/// Why writing stopped.
enum WriteEnd {
    /// The connection failed.
    Failed(io::Error),
    /// The client is closing and the server makes no progress.
    GiveUp,
}

/// The sender loop of a TCP destination.
pub(super) fn run(target: TcpTarget, ctx: SenderCtx) {
    let q = &ctx.queue;
    // The header, then every schema-0 tuple written so far (base protocol).
    let mut replay = ctx.header.clone();
    // Or a resumable session (back-channel).
    let mut session = ctx.session.as_ref().map(Session::new);
    // Exact doubles of a base-protocol connection (a session has its own).
    let mut doubles = ExactDoubles::new(ctx.exact_doubles);
    let mut conn: Option<TcpStream> = None;
    let mut backoff = Backoff::new();
    let mut current: Option<Chunk> = None;
    let mut clock = CloseClock::default();
    let mut last_check = Instant::now();
    loop {
        if clock.expired(&ctx) {
            give_up(&ctx, current.take());
            return;
        }
        let Some(stream) = conn.as_mut() else {
            if current.is_none() && q.is_drained() && session.as_ref().is_none_or(Session::settled)
            {
                // Closing with nothing left to send: no need to connect.
                return;
            }
            let wait = backoff.remaining();
            if !wait.is_zero() {
                std::thread::sleep(wait.min(IDLE_WAIT));
                continue;
            }
            conn = match session.as_mut() {
                Some(s) => connect_session(&target, &ctx, s, &mut backoff, &mut clock),
                None => {
                    let c = connect(&target, &ctx, &mut replay, &mut backoff, &mut clock);
                    doubles.connecting();
                    c
                }
            };
            last_check = Instant::now();
            continue;
        };
        if let Some(s) = session.as_mut() {
            if last_check.elapsed() >= BUSY_LIVENESS_EVERY {
                last_check = Instant::now();
                if let Err(b) = s.poll(stream, &ctx) {
                    lost(&ctx, &b);
                    s.disconnected();
                    conn = None;
                    backoff.failed();
                    continue;
                }
            }
            let paused = q.is_paused() && !q.is_closing();
            let full = s.answering() && s.kept() >= q.budget();
            if current.is_none() && (paused || full) {
                // Paused by the receiver, or waiting for acks before taking
                // more: the queue fills and the overload policy decides.
                std::thread::sleep(PAUSE_POLL);
                continue;
            }
        }
        let c = match current.as_mut() {
            Some(c) => c,
            None => match q.take(IDLE_WAIT) {
                Take::Chunk(c) => current.insert(c),
                Take::Finished => {
                    let Some(s) = session.as_mut().filter(|s| s.answering()) else {
                        if session.is_none() && doubles.answer_pending() {
                            doubles.close_base(stream, WAIT);
                        }
                        return;
                    };
                    // The receiver acknowledges once more after our end of
                    // the stream; without that ack, reconnect and resend.
                    let _ = stream.shutdown(std::net::Shutdown::Write);
                    if s.drain_acks(stream, &ctx, ctx.close_timeout) {
                        return;
                    }
                    s.disconnected();
                    conn = None;
                    if clock.expired(&ctx) {
                        tracing::warn!(destination = %ctx.label, unacknowledged_bytes = s.kept(),
                            "closing without the receiver's last acknowledgement");
                        return;
                    }
                    continue;
                }
                Take::Idle => {
                    if session.is_some() {
                        continue;
                    }
                    if last_check.elapsed() >= LIVENESS_EVERY {
                        last_check = Instant::now();
                        if peer_closed(stream, &mut doubles) {
                            tracing::info!(destination = %ctx.label, "server closed the connection; reconnecting");
                            conn = None;
                        }
                    }
                    continue;
                }
            },
        };
        if session.is_none() && last_check.elapsed() >= BUSY_LIVENESS_EVERY {
            last_check = Instant::now();
            if peer_closed(stream, &mut doubles) {
                tracing::info!(destination = %ctx.label, "server closed the connection; reconnecting");
                conn = None;
                continue;
            }
        }
        // Exact doubles (spec §3.8): the first data waits briefly for the
        // receiver's confirmation; without it the chunk is rewritten in the
        // reference encoding.
        match session.as_mut() {
            Some(s) => {
                if s.doubles.waiting() {
                    if let Err(b) = s.wait_exact(stream, &ctx) {
                        lost(&ctx, &b);
                        s.disconnected();
                        conn = None;
                        backoff.failed();
                        continue;
                    }
                }
                s.doubles.prepare(c, &ctx.label);
            }
            None => {
                if doubles.waiting() {
                    doubles.wait_base(stream);
                }
                doubles.prepare(c, &ctx.label);
            }
        }
        let log = match session.as_mut() {
            Some(s) => Log::Session(s),
            None => Log::Replay(&mut replay),
        };
        match write_chunk(stream, c, &ctx, log, &mut clock) {
            Ok(()) => {
                if let Some(done) = current.take() {
                    q.recycle(done);
                }
            }
            Err(WriteEnd::GiveUp) => {
                give_up(&ctx, current.take());
                return;
            }
            Err(WriteEnd::Failed(e)) => {
                tracing::warn!(destination = %ctx.label, error = %e, "connection lost; reconnecting");
                if let Some(s) = session.as_mut() {
                    s.disconnected();
                }
                conn = None;
                backoff.failed();
            }
        }
    }
}

/// Opens a connection, or counts a failed attempt.
fn attempt(target: &TcpTarget, ctx: &SenderCtx, backoff: &mut Backoff) -> Option<TcpStream> {
    match target.connect() {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::debug!(destination = %ctx.label, error = %e, retry_ms = backoff.delay.peek().as_millis() as u64,
                "cannot connect");
            backoff.failed();
            None
        }
    }
}

/// One connection attempt; on success the replay log has been sent.
fn connect(
    target: &TcpTarget,
    ctx: &SenderCtx,
    replay: &mut Vec<u8>,
    backoff: &mut Backoff,
    clock: &mut CloseClock,
) -> Option<TcpStream> {
    let mut s = attempt(target, ctx, backoff)?;
    let log = std::mem::take(replay);
    let sent = write_bytes(&mut s, &log, ctx, clock);
    *replay = log;
    match sent {
        Ok(()) => {
            ctx.queue.connected();
            backoff.succeeded();
            tracing::info!(destination = %ctx.label, replayed = replay.len(), "connected");
            Some(s)
        }
        Err(_) => {
            backoff.failed();
            None
        }
    }
}

/// Writes all of `b` (header and replays).
fn write_bytes(
    s: &mut TcpStream,
    b: &[u8],
    ctx: &SenderCtx,
    clock: &mut CloseClock,
) -> Result<(), WriteEnd> {
    let mut done = 0;
    while done < b.len() {
        match s.write(&b[done..]) {
            Ok(0) => return Err(WriteEnd::Failed(io::ErrorKind::WriteZero.into())),
            Ok(n) => {
                done += n;
                ctx.queue.progress(n);
            }
            Err(e) if is_retry(&e) => {
                if clock.expired(ctx) {
                    return Err(WriteEnd::GiveUp);
                }
            }
            Err(e) => return Err(WriteEnd::Failed(e)),
        }
    }
    Ok(())
}

/// Writes the unwritten tuples of `c`; on failure, the tuples completely
/// written are marked, and `c` resumes at the first unfinished tuple.
fn write_chunk(
    s: &mut TcpStream,
    c: &mut Chunk,
    ctx: &SenderCtx,
    log: Log<'_, '_>,
    clock: &mut CloseClock,
) -> Result<(), WriteEnd> {
    let base = c.offset;
    let total = c.pending_bytes();
    let mut done = 0;
    let end = loop {
        if done == total {
            break None;
        }
        match s.write(&c.bytes[base + done..base + total]) {
            Ok(0) => break Some(WriteEnd::Failed(io::ErrorKind::WriteZero.into())),
            Ok(n) => {
                done += n;
                ctx.queue.progress(n);
            }
            Err(e) if is_retry(&e) => {
                if clock.expired(ctx) {
                    break Some(WriteEnd::GiveUp);
                }
            }
            Err(e) => break Some(WriteEnd::Failed(e)),
        }
    };
    match log {
        Log::Replay(replay) => mark_written(c, done, &ctx.queue, Some(replay)),
        Log::Session(session) => {
            mark_written(c, done, &ctx.queue, None);
            let declares = if c.is_done() {
                c.declares.as_ref()
            } else {
                None
            };
            session.written(&c.bytes[base..c.offset], declares);
        }
    }
    match end {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// Where completely written tuples are remembered for the next connection.
enum Log<'a, 'b> {
    /// Base protocol: schema-0 tuples, replayed after the header.
    Replay(&'a mut Vec<u8>),
    /// Resumable session: every byte until acknowledged.
    Session(&'a mut Session<'b>),
}

/// One connection attempt of a resumable session: the header, the
/// receiver's answer, then the data it lacks.
fn connect_session(
    target: &TcpTarget,
    ctx: &SenderCtx,
    session: &mut Session<'_>,
    backoff: &mut Backoff,
    clock: &mut CloseClock,
) -> Option<TcpStream> {
    let mut s = attempt(target, ctx, backoff)?;
    let header = session.header();
    if write_bytes(&mut s, &header, ctx, clock).is_err() {
        backoff.failed();
        return None;
    }
    session.doubles.connecting();
    match session.handshake(&mut s, ctx) {
        Ok(Answer::ResumeAt(at)) => {
            if write_bytes(&mut s, session.kept_from(at), ctx, clock).is_err() {
                session.disconnected();
                backoff.failed();
                return None;
            }
        }
        Ok(Answer::Silent) => {}
        Ok(Answer::Gap) => {
            backoff.failed();
            return None;
        }
        Err(b) => {
            lost(ctx, &b);
            session.disconnected();
            backoff.failed();
            return None;
        }
    }
    ctx.queue.connected();
    backoff.succeeded();
    tracing::info!(destination = %ctx.label, "connected");
    Some(s)
}

/// Logs why the back-channel ended a connection.
fn lost(ctx: &SenderCtx, b: &Broken) {
    match b {
        Broken::Closed => {
            tracing::info!(destination = %ctx.label, "receiver closed the connection; reconnecting")
        }
        Broken::Error(e) => {
            tracing::warn!(destination = %ctx.label, error = %e, "back-channel failed; reconnecting")
        }
    }
}

fn is_retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// True if the server has closed the connection (end of file or error on a
/// non-blocking read). The only thing a server sends without a
/// back-channel is the exact-doubles confirmation, handed to `doubles`.
fn peer_closed(s: &mut TcpStream, doubles: &mut ExactDoubles) -> bool {
    if s.set_nonblocking(true).is_err() {
        return true;
    }
    let mut b = [0u8; 64];
    let closed = match s.read(&mut b) {
        Ok(0) => true,
        Ok(n) => {
            doubles.feed(&b[..n]);
            false
        }
        Err(e) => e.kind() != io::ErrorKind::WouldBlock,
    };
    closed || s.set_nonblocking(false).is_err()
}
