//! Resumable sessions (spec §3.6): one live connection per session, and
//! the task that writes the back-channel (its keys and lines are
//! [`omsp::session`]'s).
//!
//! A sender that announces `x-streamgauge-session` gets, after its header,
//! `streamgauge-resume <offset>` (where to continue), then
//! `streamgauge-ack <offset>` lines as the database commits its rows. The
//! offsets are committed in the same transaction as the rows (see
//! [`store::Sink::set_session_offset`]), so after any crash the resume
//! offset names exactly the data that is stored: nothing lost, nothing twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use omsp::session::Line;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

pub use omsp::session::claim::Claim;
use omsp::session::claim::Slot;

/// Sessions being served, so that a reconnecting sender's new connection
/// waits for its old one to hand over what it decoded.
#[derive(Debug, Default)]
pub struct Sessions {
    slots: Mutex<HashMap<(String, String), Arc<Slot>>>,
}

impl Sessions {
    /// Claims session `id` of `domain`, asking a connection that still holds
    /// it to finish first.
    pub async fn claim(&self, domain: &str, id: &str) -> Result<Claim, String> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(slots.entry((domain.to_owned(), id.to_owned())).or_default())
        };
        slot.claim().await.map_err(|e| format!("session {id}: {e}"))
    }
}

/// Writes `streamgauge-resume <offset>`.
pub async fn send_resume<W: AsyncWrite + Unpin>(w: &mut W, offset: u64) -> std::io::Result<()> {
    write_line(w, &Line::Resume(offset).to_string()).await
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
                if write_line(&mut w, &Line::Ack(now).to_string())
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
