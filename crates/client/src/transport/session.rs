//! The sender's side of a resumable session (spec/omsp.md §3.6) and of
//! feedback (§3.7).
//!
//! - **Data kept until acknowledged.** Every tuple completely written is
//!   appended to `unacked`; a `streamgauge-ack N` line frees the bytes
//!   below data offset N. At most the destination's byte budget is kept:
//!   beyond it the sender stops taking chunks until acks arrive, so the
//!   queue fills and the overload policy decides, as for a slow server.
//! - **Reconnecting.** The header of every connection carries the session
//!   id, the offset produced so far, and every stream declared so far as
//!   ordinary `schema:` lines (late declarations included). The receiver
//!   answers `streamgauge-resume N`; the sender resends its kept bytes from
//!   N and continues. Nothing is lost or sent twice, whatever the moment
//!   the connection or the receiver failed.
//! - **A receiver that does not answer** within the timeout (a stock
//!   oml2-server) is used as in the base protocol: data continues from the
//!   announced offset, nothing is kept.
//! - **Control lines** are handed to the writer through the destination's
//!   queue; the writer applies them and answers on the forward path.

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use omsp::session::{is_id_byte, Line, Offer, SessionRequest};
use omsp::Schema;

use super::doubles::ExactDoubles;
use super::{SenderCtx, SessionSpec};
use crate::header::{exact_doubles_key, header_with_keys};
use crate::queue::dest::ControlMsg;
use crate::spec::Backchannel;

/// Longest back-channel line accepted (a control message's JSON included).
const MAX_LINE: usize = 64 << 10;

/// Why the back-channel ended a connection.
#[derive(Debug)]
pub(super) enum Broken {
    /// The receiver closed the connection.
    Closed,
    /// Reading failed, or the receiver broke the protocol.
    Error(String),
}

/// What the receiver answered to a header.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// Send the kept data from this position of `unacked`, then continue.
    ResumeAt(usize),
    /// The receiver does not speak the extension: continue, keep nothing.
    Silent,
    /// The receiver lacks data this sender no longer has: a new session
    /// was started; connect again.
    Gap,
}

/// A resumable session of one TCP destination.
#[derive(Debug)]
pub(super) struct Session<'a> {
    spec: &'a SessionSpec,
    /// Session id.
    id: String,
    /// Data offset of `unacked[head]`.
    acked: u64,
    /// Data bytes from `acked` on, complete tuples only, from `head`.
    unacked: Vec<u8>,
    head: usize,
    /// Streams declared through schema 0, for the headers.
    declared: Vec<Schema>,
    /// The receiver answered on this connection (acks expected).
    answering: bool,
    /// The receiver has answered on some connection.
    ever_answered: bool,
    /// A partial back-channel line.
    line: Vec<u8>,
    /// Exact doubles on this connection (spec §3.8).
    pub(super) doubles: ExactDoubles,
}

impl<'a> Session<'a> {
    pub(super) fn new(spec: &'a SessionSpec) -> Session<'a> {
        Session {
            spec,
            id: new_id(spec),
            acked: 0,
            unacked: Vec::new(),
            head: 0,
            declared: Vec::new(),
            answering: false,
            ever_answered: false,
            line: Vec::new(),
            doubles: ExactDoubles::new(spec.exact_doubles),
        }
    }

    /// Data bytes kept for the receiver.
    pub(super) fn kept(&self) -> usize {
        self.unacked.len() - self.head
    }

    /// Data offset after the last tuple written.
    fn produced(&self) -> u64 {
        self.acked + self.kept() as u64
    }

    /// True when closing may end without reconnecting: everything was
    /// acknowledged, or the receiver never spoke the extension.
    pub(super) fn settled(&self) -> bool {
        self.kept() == 0 || !self.ever_answered
    }

    /// True if the receiver answers on this connection.
    pub(super) fn answering(&self) -> bool {
        self.answering
    }

    /// The connection ended.
    pub(super) fn disconnected(&mut self) {
        self.answering = false;
        self.line.clear();
    }

    /// A tuple (or several) completely written.
    pub(super) fn written(&mut self, bytes: &[u8], declares: Option<&Schema>) {
        if self.answering {
            self.unacked.extend_from_slice(bytes);
        } else {
            self.acked += bytes.len() as u64;
        }
        if let Some(s) = declares {
            self.declared.push(s.clone());
        }
    }

    /// This connection's header.
    pub(super) fn header(&self) -> Vec<u8> {
        let s = self.spec;
        let offer = Offer {
            session: Some(SessionRequest {
                id: self.id.clone(),
                offset: self.produced(),
            }),
            feedback: s.mode == Backchannel::Feedback,
        };
        let mut keys = offer.keys();
        if s.exact_doubles {
            keys.push(exact_doubles_key());
        }
        let schemas: Vec<&Schema> = s.schemas.iter().chain(&self.declared).collect();
        header_with_keys(
            &s.identity,
            s.encoding,
            s.instrumentation.as_ref(),
            &schemas,
            keys,
        )
    }

    /// Reads the receiver's answer to the header just sent.
    pub(super) fn handshake(
        &mut self,
        stream: &mut TcpStream,
        ctx: &SenderCtx,
    ) -> Result<Answer, Broken> {
        let deadline = Instant::now() + self.spec.answer_timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!(destination = %ctx.label, timeout_ms = self.spec.answer_timeout.as_millis() as u64,
                    "the receiver did not answer the resumable-session request; continuing without acknowledgements");
                self.acked = self.produced();
                self.unacked.clear();
                self.head = 0;
                return Ok(Answer::Silent);
            }
            stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .map_err(|e| Broken::Error(e.to_string()))?;
            let mut b = [0u8; 512];
            let n = match stream.read(&mut b) {
                Ok(0) => return Err(Broken::Closed),
                Ok(n) => n,
                Err(e) if is_wait(&e) => continue,
                Err(e) => return Err(Broken::Error(e.to_string())),
            };
            // Only the resume line may come first; later lines (acks,
            // control) stay buffered for `poll`.
            self.line.extend_from_slice(&b[..n]);
            while let Some(nl) = self.line.iter().position(|&c| c == b'\n') {
                let line: Vec<u8> = self.line.drain(..=nl).collect();
                let text = String::from_utf8_lossy(&line[..nl]);
                let offset = match Line::parse(&text) {
                    Ok(Line::Resume(offset)) => offset,
                    Ok(_) => {
                        tracing::debug!(destination = %ctx.label, line = %text, "back-channel line before the resume line ignored");
                        continue;
                    }
                    Err(e) => return Err(Broken::Error(e.to_string())),
                };
                stream
                    .set_read_timeout(None)
                    .map_err(|e| Broken::Error(e.to_string()))?;
                return self.resume_at(offset, ctx);
            }
            if self.line.len() > MAX_LINE {
                return Err(Broken::Error("back-channel line too long".into()));
            }
        }
    }

    fn resume_at(&mut self, offset: u64, ctx: &SenderCtx) -> Result<Answer, Broken> {
        if offset > self.produced() {
            return Err(Broken::Error(format!(
                "the receiver resumes at {offset}, beyond the {} bytes produced",
                self.produced()
            )));
        }
        if offset < self.acked {
            tracing::error!(destination = %ctx.label, session = %self.id, resume = offset, kept_from = self.acked,
                lost_bytes = self.acked - offset,
                "the receiver lost data this sender no longer has; starting a new session for the rest");
            self.id = new_id(self.spec);
            // The new session's data starts with what is still kept.
            self.acked = 0;
            return Ok(Answer::Gap);
        }
        self.answering = true;
        self.ever_answered = true;
        self.ack(offset);
        tracing::info!(destination = %ctx.label, session = %self.id, offset, resend = self.kept(), "session resumed");
        Ok(Answer::ResumeAt(self.head))
    }

    /// The kept bytes from `at` (a position returned by [`Answer::ResumeAt`]).
    pub(super) fn kept_from(&self, at: usize) -> &[u8] {
        &self.unacked[at..]
    }

    /// Frees the data below `offset`.
    fn ack(&mut self, offset: u64) {
        if offset <= self.acked {
            return;
        }
        let n = (offset - self.acked) as usize;
        self.head += n.min(self.kept());
        self.acked = offset;
        if self.head == self.unacked.len() {
            self.unacked.clear();
            self.head = 0;
        } else if self.head > self.unacked.len() / 2 {
            self.unacked.drain(..self.head);
            self.head = 0;
        }
    }

    /// Reads whatever the receiver sent, without waiting.
    pub(super) fn poll(&mut self, stream: &mut TcpStream, ctx: &SenderCtx) -> Result<(), Broken> {
        stream
            .set_nonblocking(true)
            .map_err(|e| Broken::Error(e.to_string()))?;
        let res = self.read_available(stream, ctx);
        stream
            .set_nonblocking(false)
            .map_err(|e| Broken::Error(e.to_string()))?;
        res
    }

    fn read_available(&mut self, stream: &mut TcpStream, ctx: &SenderCtx) -> Result<(), Broken> {
        self.lines(ctx)?;
        let mut b = [0u8; 4096];
        loop {
            match stream.read(&mut b) {
                Ok(0) => return Err(Broken::Closed),
                Ok(n) => {
                    self.line.extend_from_slice(&b[..n]);
                    self.lines(ctx)?;
                }
                Err(e) if is_wait(&e) => return Ok(()),
                Err(e) => return Err(Broken::Error(e.to_string())),
            }
        }
    }

    /// Before the first data of a connection: handles the lines buffered
    /// with the resume line, then reads until the receiver confirms exact
    /// doubles or the wait is over (spec §3.8).
    pub(super) fn wait_exact(
        &mut self,
        stream: &mut TcpStream,
        ctx: &SenderCtx,
    ) -> Result<(), Broken> {
        self.lines(ctx)?;
        let mut b = [0u8; 4096];
        while self.doubles.waiting() {
            let left = self.doubles.left().max(Duration::from_millis(1));
            stream
                .set_read_timeout(Some(left))
                .map_err(|e| Broken::Error(e.to_string()))?;
            match stream.read(&mut b) {
                Ok(0) => return Err(Broken::Closed),
                Ok(n) => {
                    self.line.extend_from_slice(&b[..n]);
                    self.lines(ctx)?;
                }
                Err(e) if is_wait(&e) => {}
                Err(e) => return Err(Broken::Error(e.to_string())),
            }
        }
        self.doubles.stop_waiting();
        stream
            .set_read_timeout(None)
            .map_err(|e| Broken::Error(e.to_string()))
    }

    /// Waits up to `wait` for the receiver's last acks after the sender
    /// shut its side down; true if everything was acknowledged.
    pub(super) fn drain_acks(
        &mut self,
        stream: &mut TcpStream,
        ctx: &SenderCtx,
        wait: Duration,
    ) -> bool {
        let deadline = Instant::now() + wait;
        let mut b = [0u8; 4096];
        while self.kept() > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
                break;
            }
            match stream.read(&mut b) {
                Ok(0) => break,
                Ok(n) => {
                    self.line.extend_from_slice(&b[..n]);
                    if self.lines(ctx).is_err() {
                        break;
                    }
                }
                Err(e) if is_wait(&e) => continue,
                Err(_) => break,
            }
        }
        self.kept() == 0
    }

    /// Handles every complete line buffered.
    fn lines(&mut self, ctx: &SenderCtx) -> Result<(), Broken> {
        while let Some(nl) = self.line.iter().position(|&c| c == b'\n') {
            let line: Vec<u8> = self.line.drain(..=nl).collect();
            let text = String::from_utf8_lossy(&line[..nl]).into_owned();
            self.line_in(&text, ctx)?;
        }
        if self.line.len() > MAX_LINE {
            return Err(Broken::Error("back-channel line too long".into()));
        }
        Ok(())
    }

    fn line_in(&mut self, text: &str, ctx: &SenderCtx) -> Result<(), Broken> {
        let line = Line::parse(text).map_err(|e| Broken::Error(e.to_string()))?;
        if self.doubles.line_in(&line) {
            tracing::debug!(destination = %ctx.label, "receiver confirmed exact doubles");
            return Ok(());
        }
        match line {
            Line::Ack(offset) => {
                if offset > self.produced() {
                    return Err(Broken::Error(format!(
                        "ack {offset} beyond the {} bytes produced",
                        self.produced()
                    )));
                }
                self.ack(offset);
            }
            Line::Control { id, json } => {
                if self.spec.mode != Backchannel::Feedback {
                    tracing::warn!(destination = %ctx.label, id, "control message without feedback enabled; ignored");
                    return Ok(());
                }
                ctx.queue.push_control(ControlMsg { id, json });
                ctx.shared.rings.wake_writer();
            }
            Line::Resume(_) | Line::Doubles(_) | Line::Unknown(_) => {
                tracing::debug!(destination = %ctx.label, line = %text, "back-channel line ignored")
            }
        }
        Ok(())
    }
}

fn is_wait(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// `<app>-<sender-id>-<random 64-bit hex>` (spec §3.6), with characters
/// outside the session-id alphabet replaced by `_`. The random part comes
/// from the operating system's generator: two senders with the same names
/// started in the same instant (containers, cloned VMs) still differ.
/// See [`crate::random::u64`] for what happens should the generator fail.
fn new_id(spec: &SessionSpec) -> String {
    let random = crate::random::u64();
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii() && is_id_byte(c as u8) {
                    c
                } else {
                    '_'
                }
            })
            .take(48)
            .collect()
    };
    format!(
        "{}-{}-{random:016x}",
        clean(&spec.identity.app),
        clean(&spec.identity.sender_id),
    )
}
