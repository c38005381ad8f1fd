//! Resumable sessions (spec §3.6): the header keys that ask for them, one
//! live connection per session, and the back-channel lines.
//!
//! A sender that announces `x-streamgauge-session` gets, after its header,
//! `streamgauge-resume <offset>` (where to continue), then
//! `streamgauge-ack <offset>` lines as the database commits its rows. The
//! offsets are committed in the same transaction as the rows (see
//! [`store::Sink::set_session_offset`]), so after any crash the resume
//! offset names exactly the data that is stored: nothing lost, nothing twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use omsp::Header;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{watch, OwnedMutexGuard};

/// Header key naming the session.
pub const KEY_SESSION: &str = "x-streamgauge-session";
/// Header key: data offset of this connection's first byte, as the sender sees it.
pub const KEY_OFFSET: &str = "x-streamgauge-offset";
/// Header key: back-channel version the sender speaks.
pub const KEY_BACKCHANNEL: &str = "x-streamgauge-backchannel";

/// Longest session id.
const MAX_ID: usize = 128;

/// How long a new connection of a session waits for the previous one to
/// hand over its rows.
const TAKEOVER: Duration = Duration::from_secs(10);

/// What a header asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Session id.
    pub id: String,
    /// The sender's announced offset.
    pub offset: u64,
}

/// The back-channel a header asked for (spec §3.6, §3.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackRequest {
    /// A resumable session, if asked for.
    pub session: Option<Request>,
    /// The sender accepts control messages.
    pub feedback: bool,
}

impl BackRequest {
    /// The back-channel a header asks for: `Ok(None)` without the keys (a
    /// stock client), an error for malformed or inconsistent values.
    pub fn from_header(h: &Header) -> Result<Option<BackRequest>, String> {
        let get = |key: &str| {
            h.extra
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let id = get(KEY_SESSION);
        let feedback = match get(crate::feedback::KEY_FEEDBACK) {
            None | Some("0") => false,
            Some("1") => true,
            Some(v) => return Err(format!("{}: {v:?} (want 1)", crate::feedback::KEY_FEEDBACK)),
        };
        match get(KEY_BACKCHANNEL) {
            Some("1") => {}
            Some(v) => {
                return Err(format!(
                    "{KEY_BACKCHANNEL}: version {v:?} unknown (this server speaks 1)"
                ))
            }
            None if id.is_some() || feedback => {
                return Err(format!(
                    "{KEY_SESSION} and {} need {KEY_BACKCHANNEL}: 1",
                    crate::feedback::KEY_FEEDBACK
                ))
            }
            None => return Ok(None),
        }
        let session = match id {
            None => None,
            Some(id) => Some(Request::parse(id, get(KEY_OFFSET))?),
        };
        Ok(Some(BackRequest { session, feedback }))
    }
}

impl Request {
    fn parse(id: &str, offset: Option<&str>) -> Result<Request, String> {
        let valid = !id.is_empty()
            && id.len() <= MAX_ID
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b));
        if !valid {
            return Err(format!(
                "{KEY_SESSION}: {id:?} is not 1-{MAX_ID} bytes of [A-Za-z0-9_.:-]"
            ));
        }
        let offset = match offset {
            None => 0,
            Some(v) => v
                .parse()
                .map_err(|_| format!("{KEY_OFFSET}: {v:?} is not a decimal byte offset"))?,
        };
        Ok(Request {
            id: id.to_owned(),
            offset,
        })
    }
}

/// One session's slot: held by its live connection.
#[derive(Debug)]
struct Slot {
    /// Held for the lifetime of the connection that serves the session.
    busy: Arc<tokio::sync::Mutex<()>>,
    /// Bumped by every connection that claims the session; the holder
    /// stops when it moves past its own number (no wake-up can be missed).
    generation: watch::Sender<u64>,
}

/// Sessions being served, so that a reconnecting sender's new connection
/// waits for its old one to hand over what it decoded.
#[derive(Debug, Default)]
pub struct Sessions {
    slots: Mutex<HashMap<(String, String), Slot>>,
}

/// Proof that this connection serves its session.
#[derive(Debug)]
pub struct Claim {
    _guard: OwnedMutexGuard<()>,
    /// The slot's generation counter.
    generation: watch::Receiver<u64>,
    /// This connection's number.
    mine: u64,
}

impl Claim {
    /// Resolves when a newer connection of the session has arrived.
    pub async fn superseded(&self) {
        let mut rx = self.generation.clone();
        let mine = self.mine;
        let _ = rx.wait_for(|g| *g != mine).await;
    }
}

impl Sessions {
    /// Claims session `id` of `domain`, asking a connection that still holds
    /// it to finish first.
    pub async fn claim(&self, domain: &str, id: &str) -> Result<Claim, String> {
        let (busy, generation, mine) = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            let slot = slots
                .entry((domain.to_owned(), id.to_owned()))
                .or_insert_with(|| Slot {
                    busy: Arc::default(),
                    generation: watch::Sender::new(0),
                });
            let mut mine = 0;
            slot.generation.send_modify(|g| {
                *g += 1;
                mine = *g;
            });
            (Arc::clone(&slot.busy), slot.generation.subscribe(), mine)
        };
        let guard = tokio::time::timeout(TAKEOVER, busy.lock_owned())
            .await
            .map_err(|_| format!("session {id}: the previous connection did not finish in time"))?;
        Ok(Claim {
            _guard: guard,
            generation,
            mine,
        })
    }
}

/// Writes `streamgauge-resume <offset>`.
pub async fn send_resume<W: AsyncWrite + Unpin>(w: &mut W, offset: u64) -> std::io::Result<()> {
    w.write_all(format!("streamgauge-resume {offset}\n").as_bytes())
        .await?;
    w.flush().await
}

/// Confirms exact doubles (spec §3.8): the sender may write scalar doubles
/// as DOUBLE64_T, which this server's decoder reads. Written right after
/// the header (after the resume line, if any), before any data is read.
pub async fn confirm_exact_doubles<W: AsyncWrite + Unpin>(w: &mut W) -> Result<(), String> {
    write_line(w, omsp::exact_doubles::CONFIRMATION)
        .await
        .map_err(|e| format!("writing the exact-doubles confirmation: {e}"))
}

/// What the back-channel task writes besides the resume line.
#[derive(Debug)]
pub struct Feeds {
    /// Where the acknowledgements start (the resume offset).
    pub resumed: u64,
    /// The session's committed offset (resumable sessions only).
    pub acks: Option<watch::Receiver<u64>>,
    /// Control lines (feedback peers only).
    pub control: Option<tokio::sync::mpsc::Receiver<String>>,
    /// End of this connection's data, once known, for the last ack.
    pub last: watch::Receiver<Option<u64>>,
}

/// Writes the back-channel: `streamgauge-ack <offset>` each time the
/// committed offset moves past what the sender knows, and control lines as
/// they come, until the connection's data is acknowledged to its end (or it
/// had no session), the writer forgets the session, or the socket fails.
pub async fn back_channel<W: AsyncWrite + Unpin>(mut w: W, mut feeds: Feeds) {
    let mut sent = feeds.resumed;
    loop {
        if let Some(acks) = &mut feeds.acks {
            let now = *acks.borrow_and_update();
            if now > sent {
                if write_line(&mut w, &format!("streamgauge-ack {now}\n"))
                    .await
                    .is_err()
                {
                    return;
                }
                sent = now;
            }
        }
        let done = match *feeds.last.borrow() {
            Some(end) => feeds.acks.is_none() || sent >= end,
            None => false,
        };
        if done {
            return;
        }
        tokio::select! {
            r = changed(&mut feeds.acks) => if r.is_err() { return },
            line = recv(&mut feeds.control) => match line {
                Some(line) => if write_line(&mut w, &line).await.is_err() { return },
                None => feeds.control = None,
            },
            r = feeds.last.changed() => if r.is_err() { return },
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin>(w: &mut W, line: &str) -> std::io::Result<()> {
    w.write_all(line.as_bytes()).await?;
    w.flush().await
}

async fn changed(acks: &mut Option<watch::Receiver<u64>>) -> Result<(), watch::error::RecvError> {
    match acks {
        Some(rx) => rx.changed().await,
        None => std::future::pending().await,
    }
}

async fn recv(control: &mut Option<tokio::sync::mpsc::Receiver<String>>) -> Option<String> {
    match control {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
