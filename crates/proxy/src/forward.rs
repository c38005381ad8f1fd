//! The upstream side: one forwarder per journal sends its data upstream
//! as a resumable session (spec §3.6, the proxy being the sender), frees
//! what the upstream acknowledges, reconnects with exponential backoff,
//! and deletes the journal once everything is delivered.
//!
//! Upstream session id: `<proxy-id>-<journal number>` (with `-e<n>` after
//! data was given up, see [`crate::journal::Journal::new_epoch`]), stable
//! across proxy restarts. An upstream that does not answer the resume line
//! (a stock oml2-server) gets plain forwarding: data counts as delivered
//! once written to the socket, so what is in flight when that connection
//! breaks can be lost (never duplicated).

use omsp::backoff::Backoff;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::framer::{Framer, Frames};
use crate::proxy::Shared;
use crate::registry::{Entry, UpstreamState};
use omsp::session::Line;

/// Bytes read from the journal and written upstream at a time.
const CHUNK: usize = 256 << 10;

/// How long the forwarder waits for the last acknowledgement (or, in
/// plain mode, for the upstream to close) after the end of a stream.
const FINAL_WAIT: Duration = Duration::from_secs(30);

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How a connection to the upstream ended.
#[derive(Debug)]
enum Outcome {
    /// Everything delivered and the client gone: delete the journal.
    Complete,
    /// Reconnect at once (new epoch, or a better header is known).
    Reconnect,
    /// The connection failed: back off, then reconnect.
    Lost(String),
    /// The upstream closed a connection that had nothing left to carry
    /// (its idle timeout): reconnect when there is data.
    Idle,
    /// Forwarding was paused.
    Paused,
    /// The proxy is shutting down.
    Shutdown,
}

/// What the back-channel reader reports.
#[derive(Debug)]
enum Back {
    /// A line.
    Line(Line),
    /// The upstream closed its side, or the read failed.
    End(String),
}

/// Forwards one journal until it is delivered or the proxy stops.
pub async fn run(entry: Arc<Entry>, shared: Arc<Shared>) {
    let (min, max) = shared.config.backoff;
    let mut backoff = Backoff::new(min, max);
    let mut announce: Option<u64> = None;
    let mut warned = false;
    let mut expired = false;
    loop {
        match wait_for_work(&entry, &shared).await {
            Work::Shutdown => return,
            Work::Complete => {
                let resumable = entry.lock().client_session().is_some();
                if resumable && !expired {
                    match retire(&entry, &shared).await {
                        Retired::Expired => expired = true,
                        Retired::Reopened => {}
                        Retired::Shutdown => return,
                    }
                    continue;
                }
                if shared.registry.complete(&entry) {
                    tracing::info!(journal = entry.id, "stream delivered: journal deleted");
                    return;
                }
                continue;
            }
            Work::Send => expired = false,
        }
        entry.set_upstream(UpstreamState::Connecting);
        let upstream = shared.config.upstream.clone();
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&upstream)).await;
        let outcome = match stream {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                session(&entry, &shared, s, &mut announce, &mut backoff, &mut warned).await
            }
            Ok(Err(e)) => Outcome::Lost(format!("connecting to {upstream}: {e}")),
            Err(_) => Outcome::Lost(format!("connecting to {upstream}: timed out")),
        };
        match outcome {
            Outcome::Complete => {}
            Outcome::Shutdown => return,
            Outcome::Paused | Outcome::Reconnect => {}
            Outcome::Idle => {
                tracing::debug!(journal = entry.id, "upstream closed the idle connection");
            }
            Outcome::Lost(reason) => {
                if !warned {
                    tracing::warn!(journal = entry.id, %reason, "upstream unavailable; retrying with backoff (data stays in the journal)");
                    warned = true;
                } else {
                    tracing::debug!(journal = entry.id, %reason, "upstream unavailable");
                }
                entry.set_upstream(UpstreamState::Backoff(reason));
                let mut shutdown = shared.shutdown.subscribe();
                tokio::select! {
                    () = tokio::time::sleep(backoff.next_wait()) => {}
                    _ = shutdown.wait_for(|s| *s) => return,
                }
                continue;
            }
        }
        warned = false;
    }
}

/// How keeping a delivered stream ended.
enum Retired {
    /// The window passed: delete it.
    Expired,
    /// The client came back.
    Reopened,
    /// The proxy stops.
    Shutdown,
}

/// Keeps a delivered stream of a resumable client (its data deleted) for
/// the resume window, so that a client that missed the last
/// acknowledgement learns from the resume line that everything arrived.
async fn retire(entry: &Entry, shared: &Shared) -> Retired {
    let mut changed = entry.changed.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    match entry.lock().free_all() {
        Ok(freed) if freed > 0 => shared.registry.space_freed(),
        Ok(_) => {}
        Err(e) => tracing::warn!(journal = entry.id, error = %e, "cannot free delivered segments"),
    }
    entry.set_upstream(UpstreamState::Delivered);
    tracing::info!(
        journal = entry.id,
        keep_s = shared.config.resume_window.as_secs(),
        "stream delivered; kept (without data) for the client's resume window"
    );
    let deadline = tokio::time::Instant::now() + shared.config.resume_window;
    loop {
        changed.borrow_and_update();
        if !entry.lock().closed() {
            return Retired::Reopened;
        }
        tokio::select! {
            _ = changed.changed() => {}
            _ = shutdown.wait_for(|s| *s) => return Retired::Shutdown,
            () = tokio::time::sleep_until(deadline) => return Retired::Expired,
        }
    }
}

/// What the forwarder should do next.
enum Work {
    /// Connect and send.
    Send,
    /// Delivered and closed.
    Complete,
    /// Stop.
    Shutdown,
}

async fn wait_for_work(entry: &Entry, shared: &Shared) -> Work {
    let mut changed = entry.changed.subscribe();
    let mut paused = shared.control.watch();
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        changed.borrow_and_update();
        let is_paused = *paused.borrow_and_update();
        if *shutdown.borrow_and_update() {
            return Work::Shutdown;
        }
        let (end, acked, closed) = {
            let j = entry.lock();
            (j.end(), j.acked(), j.closed())
        };
        if closed && acked >= end {
            return Work::Complete;
        }
        if !is_paused && (end > acked || closed) {
            return Work::Send;
        }
        entry.set_upstream(if is_paused {
            UpstreamState::Paused
        } else {
            UpstreamState::Idle
        });
        tokio::select! {
            _ = changed.changed() => {}
            _ = paused.changed() => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// Reads back-channel lines into a channel.
async fn read_back(rd: OwnedReadHalf, tx: mpsc::UnboundedSender<Back>) {
    let mut lines = BufReader::new(rd).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(l)) => match Line::parse(&l) {
                Ok(line) => {
                    if tx.send(Back::Line(line)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Back::End(e.to_string()));
                    return;
                }
            },
            Ok(None) => {
                let _ = tx.send(Back::End("upstream closed the connection".into()));
                return;
            }
            Err(e) => {
                let _ = tx.send(Back::End(format!("reading from upstream: {e}")));
                return;
            }
        }
    }
}

/// How this connection delivers.
enum Mode {
    /// Acknowledged by the upstream (spec §3.6).
    Resumable,
    /// Plain forwarding: written counts as delivered, at tuple boundaries.
    Plain(Box<Framer>, Frames),
}

/// One upstream connection.
async fn session(
    entry: &Entry,
    shared: &Shared,
    stream: TcpStream,
    announce: &mut Option<u64>,
    backoff: &mut Backoff,
    warned: &mut bool,
) -> Outcome {
    let (epoch, base, offset, header, session) = {
        let j = entry.lock();
        let offset = announce.take().unwrap_or(j.acked() - j.epoch_base());
        let session = entry.session_id(j.epoch());
        let header = j.upstream_header(&session, offset);
        (j.epoch(), j.epoch_base(), offset, header, session)
    };
    let (rd, mut wr) = stream.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let reader = tokio::spawn(read_back(rd, tx));
    let _abort = AbortOnDrop(reader);
    if let Err(e) = wr.write_all(&header).await {
        return Outcome::Lost(format!("writing the header: {e}"));
    }
    entry.set_upstream(UpstreamState::Resuming);
    let mut paused = shared.control.watch();
    let mut shutdown = shared.shutdown.subscribe();
    let deadline = tokio::time::Instant::now() + shared.config.resume_timeout;
    let resume = loop {
        tokio::select! {
            m = rx.recv() => match m {
                Some(Back::Line(Line::Resume(r))) => break Some(r),
                Some(Back::Line(Line::Unknown(_) | Line::Doubles(_))) => continue,
                Some(Back::Line(Line::Control { .. })) => return Outcome::Lost("upstream sent a control message before the resume line".into()),
                Some(Back::Line(Line::Ack(_))) => return Outcome::Lost("upstream acknowledged before the resume line".into()),
                Some(Back::End(reason)) => return Outcome::Lost(reason),
                None => return Outcome::Lost("back-channel reader ended".into()),
            },
            () = tokio::time::sleep_until(deadline) => break None,
            _ = paused.wait_for(|p| *p) => return Outcome::Paused,
            _ = shutdown.wait_for(|s| *s) => return Outcome::Shutdown,
        }
    };
    let announced = base.saturating_add(offset);
    let (mut mode, mut pos) = match resume {
        Some(r) => {
            let mut j = entry.lock();
            if j.epoch() != epoch {
                return Outcome::Reconnect;
            }
            // The offset comes from the network: it must name data this
            // journal has sent (an upstream that holds more than we ever
            // had kept state of another journal: start a fresh session).
            let Some(r_abs) = base.checked_add(r).filter(|&a| a <= j.end()) else {
                let start = j.start();
                tracing::error!(journal = entry.id, session, resume = r, journal_end = j.end() - base,
                    "upstream resumes beyond the data this journal has sent (it kept another journal's state?): continuing in a new upstream session");
                if let Err(e) = j.new_epoch(start) {
                    return Outcome::Lost(format!("journal: {e}"));
                }
                return Outcome::Reconnect;
            };
            if r_abs < j.start() {
                let lost = j.start() - r_abs;
                let start = j.start();
                j.record_loss(lost);
                if let Err(e) = j.new_epoch(start) {
                    return Outcome::Lost(format!("journal: {e}"));
                }
                tracing::error!(journal = entry.id, session, resume = r, lost_bytes = lost,
                    "upstream wants data the journal no longer holds (it lost its state?): gap; continuing in a new upstream session");
                return Outcome::Reconnect;
            }
            if r_abs != announced && j.declares_between(r_abs, announced) {
                // The header declared the streams of the wrong point.
                if r_abs > announced {
                    let _ = j.ack(r_abs);
                } else {
                    *announce = Some(r);
                }
                return Outcome::Reconnect;
            }
            if r_abs > j.acked() {
                let _ = j.ack(r_abs);
            }
            tracing::info!(
                journal = entry.id,
                session,
                offset = r,
                "upstream session resumed"
            );
            entry.set_upstream(UpstreamState::Streaming);
            (Mode::Resumable, r_abs)
        }
        None => {
            tracing::warn!(journal = entry.id, session,
                timeout_s = shared.config.resume_timeout.as_secs_f64(),
                "upstream did not answer the resume line (a stock oml2-server?): plain forwarding, without acknowledgements; data in flight when this connection breaks may be lost");
            let framer = match Framer::with_header(shared.config.limits, &header, announced, true) {
                Ok(f) => f,
                Err(e) => return Outcome::Lost(format!("re-reading our own header: {e}")),
            };
            let frames = Frames {
                boundary: announced,
                ..Frames::default()
            };
            entry.set_upstream(UpstreamState::Plain);
            (Mode::Plain(Box::new(framer), frames), announced)
        }
    };
    backoff.reset();
    *warned = false;
    let mut changed = entry.changed.subscribe();
    let mut buf = vec![0u8; CHUNK];
    loop {
        changed.borrow_and_update();
        while let Ok(m) = rx.try_recv() {
            if let Some(o) = handle(entry, shared, &mode, base, m) {
                return o;
            }
        }
        if *shutdown.borrow_and_update() {
            return Outcome::Shutdown;
        }
        if *paused.borrow_and_update() {
            return Outcome::Paused;
        }
        let (n, end, closed) = {
            let mut j = entry.lock();
            if j.epoch() != epoch || pos < j.start() {
                return Outcome::Reconnect;
            }
            let n = match j.read_at(pos, &mut buf) {
                Ok(n) => n,
                Err(e) => return Outcome::Lost(format!("reading the journal: {e}")),
            };
            (n, j.end(), j.closed())
        };
        if n > 0 {
            tokio::select! {
                r = wr.write_all(&buf[..n]) => if let Err(e) = r {
                    return Outcome::Lost(format!("writing upstream: {e}"));
                },
                _ = shutdown.wait_for(|s| *s) => return Outcome::Shutdown,
            }
            pos += n as u64;
            if let Mode::Plain(framer, frames) = &mut mode {
                framer.feed(&buf[..n]);
                let _ = framer.drain(frames);
                frames.declarations.clear();
                let r = entry.lock().ack_now(frames.boundary);
                match r {
                    Ok(freed) if freed > 0 => shared.registry.space_freed(),
                    Ok(_) => {}
                    Err(e) => return Outcome::Lost(format!("journal: {e}")),
                }
            }
            continue;
        }
        if closed && pos >= end {
            return finish(entry, shared, wr, &mut rx, &mode, base, end).await;
        }
        tokio::select! {
            _ = changed.changed() => {}
            m = rx.recv() => match m {
                Some(Back::End(_)) if pos >= end && entry.lock().acked() >= end => return Outcome::Idle,
                Some(m) => if let Some(o) = handle(entry, shared, &mode, base, m) { return o },
                None => return Outcome::Lost("back-channel reader ended".into()),
            },
            _ = paused.changed() => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// Applies one back-channel message; `Some` ends the connection.
fn handle(entry: &Entry, shared: &Shared, mode: &Mode, base: u64, m: Back) -> Option<Outcome> {
    match m {
        Back::Line(Line::Ack(a)) => {
            if let Mode::Resumable = mode {
                let mut j = entry.lock();
                // An acknowledgement of bytes never sent is a broken
                // upstream: trusting it would free data not delivered.
                let Some(abs) = base.checked_add(a).filter(|&x| x <= j.end()) else {
                    return Some(Outcome::Lost(format!(
                        "upstream acknowledged offset {a}, beyond the {} bytes sent in this session",
                        j.end().saturating_sub(base)
                    )));
                };
                let r = j.ack(abs);
                drop(j);
                match r {
                    Ok(freed) => {
                        if freed > 0 {
                            shared.registry.space_freed();
                        }
                        entry.bump();
                    }
                    Err(e) => return Some(Outcome::Lost(format!("journal: {e}"))),
                }
            }
            None
        }
        Back::Line(Line::Resume(_)) => {
            Some(Outcome::Lost("upstream sent a second resume line".into()))
        }
        Back::Line(line @ Line::Control { .. }) => {
            // Relayed unchanged (spec §3.7): the same id, the same JSON.
            entry.relay_control(line.to_string());
            None
        }
        // An exact-doubles confirmation changes nothing here: the
        // client's tuples are forwarded as it wrote them (spec §3.8).
        Back::Line(Line::Unknown(_) | Line::Doubles(_)) => None,
        Back::End(reason) => Some(Outcome::Lost(reason)),
    }
}

/// The client has ended and everything is sent: ends the upstream session
/// and waits until the upstream has it all.
async fn finish(
    entry: &Entry,
    shared: &Shared,
    mut wr: tokio::net::tcp::OwnedWriteHalf,
    rx: &mut mpsc::UnboundedReceiver<Back>,
    mode: &Mode,
    base: u64,
    end: u64,
) -> Outcome {
    let _ = wr.shutdown().await;
    let deadline = tokio::time::Instant::now() + FINAL_WAIT;
    loop {
        if let Mode::Resumable = mode {
            if entry.lock().acked() >= end {
                return Outcome::Complete;
            }
        }
        let m = tokio::select! {
            m = rx.recv() => m,
            () = tokio::time::sleep_until(deadline) => return Outcome::Lost("no final acknowledgement in time".into()),
        };
        match (m, mode) {
            (Some(Back::End(_)) | None, Mode::Plain(..)) => {
                // The stock server closes once it has read everything.
                let r = entry.lock().ack_now(end);
                if r.is_ok() {
                    shared.registry.space_freed();
                }
                return Outcome::Complete;
            }
            (Some(m), _) => {
                if let Some(o) = handle(entry, shared, mode, base, m) {
                    return o;
                }
            }
            (None, _) => return Outcome::Lost("back-channel reader ended".into()),
        }
    }
}

/// Aborts the back-channel reader when the connection is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
