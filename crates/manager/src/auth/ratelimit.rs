//! Login rate limiting per (client address, user name), with exponential
//! back-off.
//!
//! An attempt is *reserved* before the password is hashed: it counts as a
//! failure from the moment it starts and is forgiven only when it
//! succeeds, so parallel guesses cannot all slip through between the
//! check and the update. The first [`FREE_FAILURES`] failures of a pair
//! cost nothing; each further one doubles the wait (1 s, 2 s, 4 s, … up
//! to [`MAX_BACKOFF`]). The key includes the address, so nobody can lock
//! `admin` out from elsewhere: the owner's own address keeps its
//! allowance. Kept in memory: a restart forgives, which an attacker
//! cannot trigger.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures of one (address, user name) pair before any wait.
pub const FREE_FAILURES: u32 = 4;
/// Longest wait between attempts of one pair.
pub const MAX_BACKOFF: Duration = Duration::from_secs(900);
/// Pairs remembered before stale ones are dropped (bounded memory under
/// a flood of distinct names).
const MAX_PAIRS: usize = 100_000;

/// One pair's record.
#[derive(Debug, Clone, Copy)]
struct Pair {
    /// Attempts counted as failed (a reserved attempt included).
    failures: u32,
    /// No attempt before this.
    next_allowed: Instant,
}

/// The wait after `failures` failures.
fn backoff(failures: u32) -> Duration {
    match failures.checked_sub(FREE_FAILURES) {
        None => Duration::ZERO,
        Some(n) => Duration::from_secs(1u64 << n.min(10)).min(MAX_BACKOFF),
    }
}

/// The pairs' records.
#[derive(Debug, Default)]
pub struct LoginLimiter {
    /// Per `(address, user name)`; the address is `None` when unknown.
    pairs: Mutex<HashMap<(Option<IpAddr>, String), Pair>>,
}

/// A reserved attempt: counted as failed unless [`Attempt::succeeded`].
#[must_use = "an attempt is forgiven only by succeeded()"]
pub struct Attempt<'a> {
    /// The limiter it was reserved in.
    limiter: &'a LoginLimiter,
    /// Its key.
    key: (Option<IpAddr>, String),
}

impl Attempt<'_> {
    /// The password was right: the pair's failures are forgiven.
    pub fn succeeded(self) {
        let mut map = self.limiter.lock();
        map.remove(&self.key);
    }
}

impl Attempt<'_> {
    /// The password was never checked (the server was busy): the
    /// reservation is given back.
    pub fn abandon(self) {
        let mut map = self.limiter.lock();
        if let Some(p) = map.get_mut(&self.key) {
            p.failures = p.failures.saturating_sub(1);
            p.next_allowed = Instant::now() + backoff(p.failures);
        }
    }
}

impl LoginLimiter {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Option<IpAddr>, String), Pair>> {
        self.pairs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reserves an attempt for `username` from `addr`, or `Err(seconds
    /// to wait)`.
    pub fn reserve(&self, username: &str, addr: Option<IpAddr>) -> Result<Attempt<'_>, u64> {
        let now = Instant::now();
        let mut map = self.lock();
        if map.len() >= MAX_PAIRS {
            map.retain(|_, p| p.next_allowed + MAX_BACKOFF > now);
        }
        let key = (addr, username.to_owned());
        let pair = map.entry(key.clone()).or_insert(Pair {
            failures: 0,
            next_allowed: now,
        });
        if pair.next_allowed > now {
            let left = pair.next_allowed - now;
            return Err(left.as_secs() + u64::from(left.subsec_nanos() > 0));
        }
        pair.failures = pair.failures.saturating_add(1);
        pair.next_allowed = now + backoff(pair.failures);
        Ok(Attempt { limiter: self, key })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_per_address_and_name() {
        let l = LoginLimiter::default();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        // Reserved attempts count before they finish: no race.
        let held: Vec<_> = (0..FREE_FAILURES)
            .map(|_| l.reserve("admin", Some(a)).unwrap())
            .collect();
        let wait = l.reserve("admin", Some(a)).err().unwrap();
        assert_eq!(wait, 1);
        // Another address, or another name, is not affected.
        l.reserve("admin", Some(b)).unwrap().succeeded();
        l.reserve("alice", Some(a)).unwrap().succeeded();
        drop(held);
        assert_eq!(backoff(FREE_FAILURES + 3), Duration::from_secs(8));
        assert_eq!(backoff(FREE_FAILURES + 40), MAX_BACKOFF);
    }

    #[test]
    fn success_forgives() {
        let l = LoginLimiter::default();
        for _ in 0..FREE_FAILURES - 1 {
            let _failed = l.reserve("u", None).unwrap();
        }
        l.reserve("u", None).unwrap().succeeded();
        for _ in 0..FREE_FAILURES {
            let _failed = l.reserve("u", None).unwrap();
        }
    }
}
