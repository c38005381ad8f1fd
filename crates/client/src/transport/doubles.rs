//! Exact doubles on a TCP connection (spec/omsp.md §3.8).
//!
//! The writer encodes a binary TCP destination's scalar doubles and
//! timestamps as DOUBLE64_T, and its header offers them
//! (`x-streamgauge-doubles: double64`). A streamgauge server confirms with
//! `streamgauge-doubles double64` right after the header; a stock server
//! never answers. So, per connection:
//!
//! - before its first data the sender waits for the confirmation, at most
//!   [`WAIT`] after the header (our server answers in milliseconds; a stock
//!   server costs that delay once per connection, nothing else);
//! - until the confirmation has arrived, every chunk is rewritten to the
//!   reference encoding as it is written ([`Chunk::rewrite_reference_doubles`]):
//!   a stock server gets byte for byte what it got before;
//! - a confirmation that arrives later switches the rest of the connection
//!   to exact doubles (each value has its own type code, so a stream that
//!   switches decodes as written).

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use omsp::session::Line;

use crate::queue::dest::Chunk;

/// Longest wait for the confirmation before the first data of a connection.
pub(crate) const WAIT: Duration = Duration::from_secs(1);

/// Longest back-channel line kept while looking for the confirmation.
const MAX_LINE: usize = 4096;

/// The exact-doubles state of one TCP destination's current connection.
#[derive(Debug, Default)]
pub(crate) struct ExactDoubles {
    /// The header offers them (binary destination, not switched off).
    offered: bool,
    /// The receiver confirmed on this connection.
    agreed: bool,
    /// Until when the first data waits for the confirmation.
    wait_until: Option<Instant>,
    /// A partial line (base protocol, where nothing else is read).
    line: Vec<u8>,
}

impl ExactDoubles {
    pub(crate) fn new(offered: bool) -> ExactDoubles {
        ExactDoubles {
            offered,
            ..ExactDoubles::default()
        }
    }

    /// A header has been sent on a new connection.
    pub(crate) fn connecting(&mut self) {
        self.agreed = false;
        self.line.clear();
        self.wait_until = self.offered.then(|| Instant::now() + WAIT);
    }

    /// True while the first data should wait for the confirmation.
    pub(crate) fn waiting(&self) -> bool {
        !self.agreed && self.wait_until.is_some_and(|t| Instant::now() < t)
    }

    /// Time left to wait.
    pub(crate) fn left(&self) -> Duration {
        self.wait_until.map_or(Duration::ZERO, |t| {
            t.saturating_duration_since(Instant::now())
        })
    }

    /// Stops waiting (the data goes out in whatever is agreed by now).
    pub(crate) fn stop_waiting(&mut self) {
        self.wait_until = None;
    }

    /// Handles one back-channel line; true if it was the confirmation.
    pub(crate) fn line_in(&mut self, line: &Line) -> bool {
        let yes = self.offered && line.confirms_exact_doubles();
        if yes {
            self.agreed = true;
            self.wait_until = None;
        }
        yes
    }

    /// Bytes the receiver sent on a base-protocol connection (which has no
    /// other back-channel): looks for the confirmation, drops the rest.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                // Only the confirmation matters here: other lines, and
                // malformed ones, are dropped.
                if let Ok(line) = Line::parse(&String::from_utf8_lossy(&line)) {
                    self.line_in(&line);
                }
            } else if self.line.len() < MAX_LINE {
                self.line.push(b);
            }
        }
    }

    /// Base protocol: blocks until the confirmation arrives or the wait is
    /// over. Errors and end of file end the wait (the next write notices).
    pub(crate) fn wait_base(&mut self, stream: &mut TcpStream) {
        if let Some(until) = self.wait_until {
            self.read_until(stream, until, |d| d.agreed);
        }
        self.stop_waiting();
        let _ = stream.set_read_timeout(None);
    }

    /// Ends a base-protocol connection whose receiver may still write the
    /// confirmation: closing with unread input would reset the connection
    /// and discard what the kernel has not sent yet, so the sender shuts
    /// its side down and reads until the server closes (at most `wait`).
    pub(crate) fn close_base(&mut self, stream: &mut TcpStream, wait: Duration) {
        let _ = stream.shutdown(std::net::Shutdown::Write);
        self.read_until(stream, Instant::now() + wait, |_| false);
    }

    /// Reads (looking for the confirmation) until `done`, end of file, an
    /// error or `deadline`.
    fn read_until(
        &mut self,
        stream: &mut TcpStream,
        deadline: Instant,
        done: impl Fn(&ExactDoubles) -> bool,
    ) {
        let mut b = [0u8; 256];
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
                return;
            }
            match stream.read(&mut b) {
                Ok(0) => return,
                Ok(n) => self.feed(&b[..n]),
                Err(e) if is_wait(&e) => {}
                Err(_) => return,
            }
        }
    }

    /// Brings `c` to the encoding of this connection before it is written.
    pub(crate) fn prepare(&self, c: &mut Chunk, label: &str) {
        if !self.offered || self.agreed {
            return;
        }
        if let Err(e) = c.rewrite_reference_doubles() {
            // Our own encoder wrote these bytes: this cannot happen. Send
            // them as they are rather than lose them.
            tracing::error!(destination = %label, error = %e,
                "cannot rewrite exact doubles for a receiver that did not confirm them");
        }
    }

    /// True if the receiver may still write to this connection (it was
    /// offered and has not confirmed): closing with its line unread would
    /// reset the connection, so the sender reads to the end first.
    pub(crate) fn answer_pending(&self) -> bool {
        self.offered && !self.agreed
    }
}

fn is_wait(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_confirmation_agrees_and_only_when_offered() {
        let mut d = ExactDoubles::new(true);
        d.connecting();
        assert!(d.waiting());
        d.feed(b"streamgauge-doubles float128\nstreamgauge-doubles dou");
        assert!(!d.agreed);
        d.feed(b"ble64\n");
        assert!(d.agreed && !d.waiting() && !d.answer_pending());
        d.connecting();
        assert!(!d.agreed, "each connection confirms anew");
        let mut off = ExactDoubles::new(false);
        off.connecting();
        assert!(!off.waiting());
        assert!(!off.line_in(&Line::Doubles("double64".into())));
        assert!(!off.answer_pending());
    }
}
