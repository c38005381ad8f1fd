//! Clock awareness on a connection: the server's estimate of the offset
//! between a sender's clock and its own, and the sender's own reports of
//! its clock's state (the `_client_clock` stream). Both end up in the
//! database's `_streamgauge_clock` table ([`store::clock`]); the reference
//! for readers is `docs/clock.md`.
//!
//! A tuple stamped `ts` seconds after the header's `start-time` was stamped
//! at `start-time + ts` on the sender's clock and read at `now` on the
//! server's, after a network and queueing delay `d ≥ 0`. So
//! `start-time + ts − now = offset − d`: every tuple gives a lower bound of
//! the offset (sender minus server), and the best of the first few tuples
//! of a connection is the estimate. Its error is the delay of that tuple:
//! milliseconds on a LAN for a client that sends as soon as it connects
//! (the streamgauge client sends its `_client_clock` report first), but as
//! long as the sender buffered data for a sender that connects late or
//! resends after a reconnection.

use store::ClockEstimate;

/// Name of the stream streamgauge clients report their clock's state in
/// (the client library's `client::CLOCK_STREAM`; the server does not
/// depend on the client).
pub const CLOCK_STREAM: &str = "_client_clock";

/// Tuples of a connection that may improve the estimate.
const ESTIMATE_TUPLES: u32 = 64;

/// Seconds after the first tuple during which tuples may improve it.
const ESTIMATE_WINDOW: f64 = 10.0;

/// An improvement smaller than this (seconds) is not worth a write.
const MIN_GAIN: f64 = 1e-3;

/// The estimate of one connection, as its tuples arrive.
#[derive(Debug)]
pub struct ClockTracker {
    /// The sender's `oml_sender_id`.
    sender: i64,
    /// Its `sender-id`.
    name: String,
    /// The header's `start-time`.
    start_time: i64,
    /// Server time of the first tuple.
    first_at: Option<f64>,
    /// Tuples seen while estimating.
    seen: u32,
    /// Best (largest) lower bound so far, and what was last stored.
    best: Option<f64>,
    /// The value last handed to the database.
    stored: Option<f64>,
}

impl ClockTracker {
    /// A tracker for a connection whose header said `start_time`.
    pub fn new(sender: i64, name: &str, start_time: i64) -> ClockTracker {
        ClockTracker {
            sender,
            name: name.to_owned(),
            start_time,
            first_at: None,
            seen: 0,
            best: None,
            stored: None,
        }
    }

    /// A tuple stamped `ts` was read at server Unix time `now`. Returns the
    /// estimate to store when it is the first or improved on the stored one.
    pub fn observe(&mut self, ts: f64, now: f64) -> Option<ClockEstimate> {
        if !ts.is_finite() || self.seen >= ESTIMATE_TUPLES {
            return None;
        }
        let first_at = *self.first_at.get_or_insert(now);
        if now - first_at > ESTIMATE_WINDOW {
            self.seen = ESTIMATE_TUPLES;
            return None;
        }
        self.seen += 1;
        let bound = self.start_time as f64 + ts - now;
        if self.best.is_some_and(|b| b >= bound) {
            return None;
        }
        self.best = Some(bound);
        if self.stored.is_some_and(|s| bound - s < MIN_GAIN) {
            return None;
        }
        self.stored = Some(bound);
        Some(ClockEstimate {
            sender: self.sender,
            name: self.name.clone(),
            start_time: self.start_time,
            connected_at: first_at,
            offset: bound,
            samples: self.seen,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_largest_lower_bound() {
        let mut t = ClockTracker::new(1, "n", 1000);
        // Sender 2.5 s ahead; delays 0.3 s, then 0.01 s, then 0.2 s.
        let e = t.observe(0.0, 1000.0 - 2.5 + 0.3).unwrap();
        assert!((e.offset - 2.2).abs() < 1e-9);
        let e = t.observe(1.0, 1001.0 - 2.5 + 0.01).unwrap();
        assert!((e.offset - 2.49).abs() < 1e-9);
        assert_eq!(e.samples, 2);
        assert!(t.observe(2.0, 1002.0 - 2.5 + 0.2).is_none());
        // Tiny gains are not written.
        assert!(t.observe(3.0, 1003.0 - 2.5 + 0.0095).is_none());
    }

    #[test]
    fn stops_after_the_window() {
        let mut t = ClockTracker::new(1, "n", 0);
        assert!(t.observe(0.0, 1.0).is_some());
        assert!(t.observe(20.0, 20.0).is_none());
        assert!(t.observe(f64::NAN, 1.0).is_none());
    }
}
