//! The one back-off of the project: every loop that retries something
//! that failed (a sender reconnecting, the proxy's forwarder, the server's
//! writer waiting for storage, PostgreSQL reconnects, archive uploads, the
//! manager's device calls) waits by this rule, so they all behave alike.
//!
//! The waits double from `first` up to `max` and stay there; a success
//! starts them again from `first`.
//!
//! ```
//! use std::time::Duration;
//! use omsp::backoff::Backoff;
//!
//! let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(350));
//! let waits: Vec<u128> = (0..4).map(|_| b.next_wait().as_millis()).collect();
//! assert_eq!(waits, [100, 200, 350, 350]);
//! b.reset();
//! assert_eq!(b.next_wait(), Duration::from_millis(100));
//! ```

use std::time::Duration;

/// Exponential back-off between attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Waits from `first`, doubling up to `max` (`max` below `first` is
    /// read as `first`).
    pub const fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            next: first,
        }
    }

    /// The wait before the next attempt; the one after is twice as long,
    /// at most `max`.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = self.next.saturating_mul(2).min(self.max).max(self.first);
        wait
    }

    /// The wait [`Backoff::next_wait`] will give, without moving on.
    pub fn peek(&self) -> Duration {
        self.next
    }

    /// After a success: the next wait is `first` again.
    pub fn reset(&mut self) {
        self.next = self.first;
    }

    /// The wait after `failures` consecutive failures (1 = the first),
    /// without keeping state: `first · 2^(failures-1)`, at most `max`.
    pub fn after_failures(first: Duration, max: Duration, failures: u32) -> Duration {
        let mut b = Backoff::new(first, max);
        // Once at `max` the wait never changes: at most 64 doublings matter.
        for _ in 1..failures.min(65) {
            b.next_wait();
        }
        b.peek()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn doubles_caps_and_resets() {
        let mut b = Backoff::new(10 * MS, 45 * MS);
        let w: Vec<_> = (0..5).map(|_| b.next_wait()).collect();
        assert_eq!(w, [10 * MS, 20 * MS, 40 * MS, 45 * MS, 45 * MS]);
        assert_eq!(b.peek(), 45 * MS);
        b.reset();
        assert_eq!(b.next_wait(), 10 * MS);
    }

    #[test]
    fn stateless_form_agrees_and_never_overflows() {
        let mut b = Backoff::new(100 * MS, Duration::from_secs(60));
        for n in 1..=40 {
            assert_eq!(
                Backoff::after_failures(100 * MS, Duration::from_secs(60), n),
                b.next_wait()
            );
        }
        assert_eq!(
            Backoff::after_failures(Duration::MAX, Duration::MAX, u32::MAX),
            Duration::MAX
        );
    }
}
