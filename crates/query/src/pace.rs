//! Readers' share of the time while collection is busy.
//!
//! Priority ([`crate::priority`]) makes readers run only where collection
//! leaves a core idle, but a reader that always has work (a dashboard
//! reloading a plot as fast as it is answered, a script polling in a loop)
//! then fills every idle moment, and ingestion pays for it anyway: caches
//! and the database's shared buffers turned over by the reads, locks on
//! the pages being filled, a wake-up that finds the core busy. Measured
//! with `streamgauge bench readers --pg`: ten live tails cost ingestion
//! next to nothing, a `points=` query a second a few percent, a query
//! loop with no pause 10 to 25 percent.
//!
//! So, as PostgreSQL's cost-based vacuum delay does for its own
//! background work, a request that follows others at once waits in
//! proportion to the time they took: with a share of 25 %, a query that
//! took 40 ms holds the next one back 120 ms. Nothing waits while no
//! domain has committed for a second (readers then get everything), a
//! lone request never waits (the debt is paid by the time it comes), and
//! no request waits more than [`MAX_WAIT`].

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The longest a request is held back, however much time came before it.
pub const MAX_WAIT: Duration = Duration::from_secs(1);

/// When the next request may start.
#[derive(Debug)]
pub struct Pacer {
    /// Readers' share of the time, in (0, 1]; 1: never wait.
    share: f64,
    /// The earliest start of the next request.
    next: Mutex<Instant>,
}

impl Pacer {
    /// A pacer giving readers `share` (0 to 1) of the time while busy.
    pub fn new(share: f64) -> Pacer {
        Pacer {
            share: share.clamp(0.01, 1.0),
            next: Mutex::new(Instant::now()),
        }
    }

    /// The readers' share of the time.
    pub fn share(&self) -> f64 {
        self.share
    }

    /// Waits until a request may start, if collection is `busy`.
    pub async fn wait(&self, busy: bool) {
        if !busy || self.share >= 1.0 {
            return;
        }
        let next = *self.lock();
        let now = Instant::now();
        if next > now {
            tokio::time::sleep_until(next.min(now + MAX_WAIT)).await;
        }
    }

    /// Counts `spent` of reader time: the next request may start once the
    /// readers' share of the time since is back to `share`.
    pub fn charge(&self, spent: Duration) {
        if self.share >= 1.0 {
            return;
        }
        let rest = spent.mul_f64(1.0 / self.share - 1.0);
        let now = Instant::now();
        let mut next = self.lock();
        *next = ((*next).max(now) + rest).min(now + MAX_WAIT);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Instant> {
        self.next.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_request_after_others_waits_for_their_share() {
        let p = Pacer::new(0.25);
        let t0 = Instant::now();
        p.wait(true).await;
        assert_eq!(Instant::now(), t0, "the first request starts at once");
        p.charge(Duration::from_millis(40));
        p.wait(true).await;
        assert_eq!(Instant::now() - t0, Duration::from_millis(120));
        // Not busy: no wait, whatever the debt.
        p.charge(Duration::from_millis(40));
        let t1 = Instant::now();
        p.wait(false).await;
        assert_eq!(Instant::now(), t1);
        // Paid by the time it comes: no wait.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let t2 = Instant::now();
        p.wait(true).await;
        assert_eq!(Instant::now(), t2);
        // A long export holds the next request back at most MAX_WAIT.
        p.charge(Duration::from_secs(60));
        let t3 = Instant::now();
        p.wait(true).await;
        assert_eq!(Instant::now() - t3, MAX_WAIT);
        // A share of 1: never.
        let all = Pacer::new(1.0);
        all.charge(Duration::from_secs(5));
        let t4 = Instant::now();
        all.wait(true).await;
        assert_eq!(Instant::now(), t4);
    }
}
